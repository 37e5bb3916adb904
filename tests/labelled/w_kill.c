/*
 * A job killed at a random moment (tests/labelled/check_kill.py holds the
 * checks). THREADS threads each run steps until the process is killed: step
 * k of thread t launches a kernel on the simulated device, marks
 * "kill t:k" with NVTX (the shim records it through NVTX's injection), and,
 * once the mark has returned, appends the line "t:k" to SIDEFILE with one
 * write(). So whatever line is in the side file was recorded before it:
 * after a SIGKILL, every line there must be in the trace the salvage
 * completes. Each thread sleeps a pseudo-random 0..400 us between steps, so
 * that a kill lands anywhere in a step, on any thread.
 *
 * It writes its pid to PIDFILE once every thread has made a step (the
 * driver kills that pid).
 * usage: w_kill THREADS SIDEFILE PIDFILE
 */
#define _POSIX_C_SOURCE 200809L
#include <cuda.h>
#include <fcntl.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int g_side;
static CUcontext g_ctx;
static CUfunction g_fn;
static atomic_int g_started;

static void *steps(void *arg)
{
    int t = (int)(intptr_t)arg;
    if (cuCtxSetCurrent(g_ctx) != CUDA_SUCCESS)
        exit(2);
    unsigned seed = (unsigned)getpid() * 2654435761u + (unsigned)t;
    for (long k = 0;; k++) {
        cuLaunchKernel(g_fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
        char msg[48];
        snprintf(msg, sizeof(msg), "kill %d:%ld", t, k);
        nvtxMarkA(msg);
        /* the mark returned: now the side file may say so */
        int n = snprintf(msg, sizeof(msg), "%d:%ld\n", t, k);
        if (write(g_side, msg, (size_t)n) != n)
            exit(3);
        if (k == 0)
            atomic_fetch_add(&g_started, 1);
        seed = seed * 1103515245u + 12345u;
        struct timespec ts = {0, (long)((seed >> 8) % 400) * 1000L};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: w_kill THREADS SIDEFILE PIDFILE\n");
        return 2;
    }
    int threads = atoi(argv[1]);
    if (threads < 1 || threads > 64)
        return 2;
    g_side = open(argv[2], O_WRONLY | O_CREAT | O_APPEND | O_TRUNC, 0600);
    CUdevice d;
    CUmodule m;
    if (g_side < 0 || cuInit(0) || cuDeviceGet(&d, 0) || cuDevicePrimaryCtxRetain(&g_ctx, d) ||
        cuCtxSetCurrent(g_ctx) || cuModuleLoadData(&m, "x") ||
        cuModuleGetFunction(&g_fn, m, "step__20us"))
        return 2;
    pthread_t th[64];
    for (int t = 0; t < threads; t++)
        if (pthread_create(&th[t], NULL, steps, (void *)(intptr_t)t) != 0)
            return 2;
    while (atomic_load(&g_started) < threads) {
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    FILE *f = fopen(argv[3], "w");
    if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0)
        return 2;
    for (int t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    return 0;
}
