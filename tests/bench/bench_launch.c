/*
 * One round of the shim launch benchmark: N cuLaunchKernel calls of a 1 ns
 * kernel on one stream of the simulated driver, timed on the host. The
 * script runs it alternately with and without libcutrace.so preloaded and
 * compares medians (scripts/bench); this program only measures.
 * usage: bench_launch N   -> prints "launch_ns <mean ns per call>"
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000;
    CUdevice d;
    CUcontext ctx;
    CUmodule m;
    CUfunction f;
    CUstream s;
    if (cuInit(0) || cuDeviceGet(&d, 0) || cuDevicePrimaryCtxRetain(&ctx, d) ||
        cuCtxSetCurrent(ctx) || cuModuleLoadData(&m, "x") ||
        cuModuleGetFunction(&f, m, "bench__1ns") || cuStreamCreate(&s, CU_STREAM_NON_BLOCKING))
        return 2;
    /* warm-up: first-use paths (the shim's init, caches) are not the steady state */
    for (int i = 0; i < 1000; i++)
        cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL);
    cuStreamSynchronize(s);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; i++)
        if (cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL) != CUDA_SUCCESS)
            return 3;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cuStreamSynchronize(s);
    double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
    printf("launch_ns %.2f\n", ns / (double)n);
    return 0;
}
