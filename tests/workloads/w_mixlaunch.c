/* Linked with -lcuda: the launch fast path's cases in one program. Each of
 * T threads makes N launches through cuLaunchKernel and cuLaunchKernel_ptsz,
 * cycling over three kernels and over its own streams, the legacy stream
 * and the per-thread default stream; a new stream appears every 1000
 * launches (a first sight in the steady state). Every launch's arguments
 * encode what it is, so a test can check each record on its own:
 *   grid  = (i + 1, thread + 1, kernel + 1)   shmem = 16 * kernel
 *   block = (1, B, 1): B = own stream index + 1, 65 the legacy stream,
 *           66 the per-thread default stream (through cuLaunchKernel_ptsz)
 * Prints "STREAM thread B id" for each stream a thread launches on (the
 * id from cuStreamGetId; on a driver without it, before CUDA 12.0, the id
 * the shim gives: the handle's low 48 bits, 1 the legacy stream, 2 the
 * per-thread one) and "launched TOTAL".
 * usage: w_mixlaunch N [THREADS] */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

CUresult cuLaunchKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void **, void **);
typedef CUresult (*get_id_fn)(CUstream, unsigned long long *);
static get_id_fn g_get_id, g_get_id_ptsz; /* NULL where the driver lacks them */

static unsigned long long stream_id(CUstream s, int per_thread)
{
    get_id_fn f = per_thread ? g_get_id_ptsz : g_get_id;
    unsigned long long id = 0;
    if (f) {
        if (f(s, &id))
            exit(4);
        return id;
    }
    if (s == NULL || s == CU_STREAM_LEGACY)
        return per_thread ? 2 : 1;
    return (unsigned long long)(uintptr_t)s & ((1ull << 48) - 1);
}

#define MAX_STREAMS 64

static CUfunction g_f[3];
static CUcontext g_ctx;
static int g_n;
static pthread_mutex_t g_print = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg)
{
    unsigned t = (unsigned)(uintptr_t)arg;
    CUstream st[MAX_STREAMS];
    int ns = 0;
    cuCtxSetCurrent(g_ctx);
    unsigned long long legacy = stream_id(CU_STREAM_LEGACY, 0), pt = stream_id(NULL, 1);
    pthread_mutex_lock(&g_print);
    printf("STREAM %u %d %llu\nSTREAM %u %d %llu\n", t, MAX_STREAMS + 1, legacy, t, MAX_STREAMS + 2,
           pt);
    pthread_mutex_unlock(&g_print);
    for (int i = 0; i < g_n; i++) {
        if (i % 1000 == 0 && ns < MAX_STREAMS) {
            if (cuStreamCreate(&st[ns], CU_STREAM_NON_BLOCKING))
                exit(4);
            unsigned long long id = stream_id(st[ns], 0);
            pthread_mutex_lock(&g_print);
            printf("STREAM %u %d %llu\n", t, ns + 1, id);
            pthread_mutex_unlock(&g_print);
            ns++;
        }
        unsigned k = (unsigned)i % 3, which = (unsigned)(i / 3) % (unsigned)(ns + 2);
        CUstream s = which < (unsigned)ns ? st[which] : NULL;
        unsigned sidx = which;
        CUresult r;
        if (which == (unsigned)ns + 1) /* the per-thread default stream */
            r = cuLaunchKernel_ptsz(g_f[k], (unsigned)i + 1, t + 1, k + 1, 1, MAX_STREAMS + 2, 1,
                                    16 * k, NULL, NULL, NULL);
        else
            r = cuLaunchKernel(g_f[k], (unsigned)i + 1, t + 1, k + 1, 1,
                               which == (unsigned)ns ? MAX_STREAMS + 1 : sidx + 1, 1, 16 * k, s,
                               NULL, NULL);
        if (r != CUDA_SUCCESS)
            exit(3);
    }
    cuCtxSynchronize();
    return NULL;
}

int main(int argc, char **argv)
{
    g_n = argc > 1 ? atoi(argv[1]) : 5;
    int threads = argc > 2 ? atoi(argv[2]) : 1;
    CUdevice d;
    CUmodule m;
    *(void **)&g_get_id = dlsym(RTLD_DEFAULT, "cuStreamGetId");
    *(void **)&g_get_id_ptsz = dlsym(RTLD_DEFAULT, "cuStreamGetId_ptsz");
    if (cuInit(0) || cuDeviceGet(&d, 0) || cuDevicePrimaryCtxRetain(&g_ctx, d) ||
        cuCtxSetCurrent(g_ctx) || cuModuleLoadData(&m, "x") ||
        cuModuleGetFunction(&g_f[0], m, "k0__1us") || cuModuleGetFunction(&g_f[1], m, "k1__1us") ||
        cuModuleGetFunction(&g_f[2], m, "k2__1us"))
        return 2;
    pthread_t th[16];
    if (threads > 16)
        threads = 16;
    for (int i = 0; i < threads; i++)
        pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i);
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    printf("launched %d\n", g_n * threads);
    return 0;
}
