/*
 * One round of the shim launch benchmark: N cuLaunchKernel calls of a 1 ns
 * kernel on one stream of the simulated driver, timed on the host. The
 * script runs it alternately with and without libcutrace.so preloaded and
 * compares medians (scripts/bench); this program only measures.
 * usage: bench_launch N [BATCH PAUSE_MS]  -> prints "launch_ns <mean ns per call>"
 *   With BATCH, only batches of BATCH launches are timed and the program
 *   sleeps PAUSE_MS between them (untimed), so the recorder's writer drains
 *   while nothing is measured: the figure is then the cost on the calling
 *   thread, as the core benchmark (a) measures it. Without, it is a tight
 *   loop in which the writer competes for the same (virtual) cores.
 * usage: bench_launch calibrate        -> "work_k K": K units of host work
 *                                         take about 9.5 us here
 *        bench_launch job K N          -> "job_ns T": N iterations of K units
 *   of host work and one launch: a launch-bound job at about 100k launches/s
 *   (light-mode overhead, scripts/bench (j)).
 */
#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* N cuStreamSynchronize calls on an idle stream: the cost of a blocking
 * call's recording, host call stack included when CUTRACE_STACKS asks. */
static int sync_loop(long n)
{
    CUdevice d;
    CUcontext ctx;
    CUstream s;
    if (cuInit(0) || cuDeviceGet(&d, 0) || cuDevicePrimaryCtxRetain(&ctx, d) ||
        cuCtxSetCurrent(ctx) || cuStreamCreate(&s, CU_STREAM_NON_BLOCKING))
        return 2;
    for (int i = 0; i < 100; i++)
        cuStreamSynchronize(s);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; i++)
        cuStreamSynchronize(s);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
    printf("sync_ns %.2f\n", ns / (double)n);
    return 0;
}

/* Host work that costs the same with or without the shim: integer
 * arithmetic the compiler cannot fold away. */
static volatile uint64_t g_sink;
static void work(long k)
{
    uint64_t x = g_sink | 1;
    for (long i = 0; i < k; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    g_sink = x;
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int calibrate(void)
{
    long k = 1000;
    for (int round = 0; round < 20; round++) {
        double t0 = now_ns();
        for (int i = 0; i < 100; i++)
            work(k);
        double per = (now_ns() - t0) / 100;
        if (per > 9000 && per < 10000)
            break;
        k = (long)((double)k * 9500.0 / (per > 1 ? per : 1));
    }
    printf("work_k %ld\n", k);
    return 0;
}

static int job(long k, long n, CUfunction f, CUstream s)
{
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        work(k);
        if (cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL) != CUDA_SUCCESS)
            return 3;
    }
    cuStreamSynchronize(s);
    printf("job_ns %.0f\n", now_ns() - t0);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void *idle_thread(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

int main(int argc, char **argv)
{
    /* Real jobs are multi-threaded; a single-threaded process would be made
     * multi-threaded by the shim's writer, which alone switches glibc's
     * malloc (used per launch by the simulated driver) to its locked paths
     * and would be charged to the shim. So the baseline has a thread too. */
    pthread_t idle;
    pthread_create(&idle, NULL, idle_thread, NULL);
    if (argc > 1 && !strcmp(argv[1], "sync"))
        return sync_loop(argc > 2 ? atol(argv[2]) : 20000);
    if (argc > 1 && !strcmp(argv[1], "calibrate"))
        return calibrate();
    int is_job = argc > 3 && !strcmp(argv[1], "job");
    long n = argc > 1 ? atol(argv[1]) : 200000;
    long batch = argc > 2 ? atol(argv[2]) : n;
    long pause_ms = argc > 3 ? atol(argv[3]) : 0;
    if (batch <= 0 || batch > n)
        batch = n;
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
    if (is_job)
        return job(atol(argv[2]), atol(argv[3]), f, s);
    double ns = 0;
    double per[4096];
    int nb = 0;
    for (long done = 0; done < n; done += batch) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (long i = 0; i < batch; i++)
            if (cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL) != CUDA_SUCCESS)
                return 3;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double b = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
        ns += b;
        if (nb < 4096)
            per[nb++] = b / (double)batch;
        cuStreamSynchronize(s);
        if (pause_ms > 0) {
            struct timespec p = {pause_ms / 1000, (pause_ms % 1000) * 1000000L};
            nanosleep(&p, NULL);
        }
    }
    /* the median batch: one descheduled batch on a shared VM moves the mean */
    qsort(per, (size_t)nb, sizeof(double), cmp_double);
    printf("launch_ns %.2f\n", nb > 1 ? per[nb / 2] : ns / (double)n);
    return 0;
}
