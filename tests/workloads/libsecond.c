/*
 * A second interposer, preloaded after libcutrace.so: it wraps
 * cuLaunchKernel and finds the next definition with dlsym(RTLD_NEXT), as
 * other tools do. With a correct dlsym override the chain is
 * app -> libcutrace -> libsecond -> libcuda, with no recursion.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static int g_calls;

static void report(void)
{
    fprintf(stdout, "SECOND calls=%d\n", g_calls);
}

__attribute__((constructor)) static void init(void)
{
    atexit(report);
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shmem, CUstream s, void **p, void **e)
{
    typedef CUresult (*fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, CUstream, void **, void **);
    static fn next;
    if (!next)
        *(void **)&next = dlsym(RTLD_NEXT, "cuLaunchKernel");
    g_calls++;
    return next(f, gx, gy, gz, bx, by, bz, shmem, s, p, e);
}
