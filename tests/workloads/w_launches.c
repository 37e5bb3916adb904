/* Linked with -lcuda: N launches on one stream from each of T threads.
 * usage: w_launches N [THREADS] */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static CUfunction g_f;
static CUcontext g_ctx;
static int g_n;

static void *worker(void *arg)
{
    (void)arg;
    CUstream s;
    cuCtxSetCurrent(g_ctx);
    cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    for (int i = 0; i < g_n; i++)
        if (cuLaunchKernel(g_f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL) != CUDA_SUCCESS)
            exit(3);
    cuStreamSynchronize(s);
    return NULL;
}

int main(int argc, char **argv)
{
    g_n = argc > 1 ? atoi(argv[1]) : 5;
    int threads = argc > 2 ? atoi(argv[2]) : 1;
    CUdevice d;
    CUmodule m;
    if (cuInit(0) || cuDeviceGet(&d, 0) || cuDevicePrimaryCtxRetain(&g_ctx, d) ||
        cuCtxSetCurrent(g_ctx) || cuModuleLoadData(&m, "x") ||
        cuModuleGetFunction(&g_f, m, "tiny__1us"))
        return 2;
    pthread_t th[64];
    if (threads > 64)
        threads = 64;
    for (int i = 0; i < threads; i++)
        pthread_create(&th[i], NULL, worker, NULL);
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    printf("launched %d\n", g_n * threads);
    return 0;
}
