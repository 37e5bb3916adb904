/*
 * A job killed while the GPU runs work whose GPU time is still in CUPTI's
 * buffers (tests/labelled/check_undelivered.py holds the checks).
 *
 * Warm-up: WARM steps `ProfilerStep#k` (k = 1..WARM, at most 64), each 5
 * kernels of 4 ms back to back on stream A (`train__4000us`) and one of
 * 1 ms on stream B (an all-reduce's kernel, `ncclDevKernel_..__1000us`:
 * communication, launched after A's first, so it runs inside it), then
 * cuCtxSynchronize and the range's end: compute 20 ms a step; the GPU
 * idles only between a step's end and the next one's first launch (the
 * sync's wake-up and the host's gap).
 *
 * Then stream B starts a collective that does not end (`hang__5000000us`,
 * 5 s: a peer that never comes), and stream A goes on with short kernels
 * (`k__1000us`, each followed by 1 ms of host sleep, 10 to a step) until
 * the SIGKILL. The GPU is never idle from B's launch on (its kernel runs
 * past the kill), but the hung kernel never completes, so its GPU time is
 * never delivered, while A's short kernels are.
 *
 * It writes to SIDE, once B's kernel is launched: "hang_launch_ns T0 T1"
 * (CLOCK_REALTIME around the launch call), "idle_ns LO HI" (bounds of the
 * GPU's idle time from the first step's start to B's launch, from the
 * times around each step's first launch: below), "launch_span_ns S" (the
 * longest a step's launches took, first call's entry to last call's return:
 * over 3 ms the host was preempted among them, and a step's kernels may
 * not have run back to back), "warm WARM"; and its pid to PIDFILE (the
 * driver kills that pid).
 * usage: w_undelivered WARM SIDE PIDFILE
 */
#define _POSIX_C_SOURCE 200809L
#include <cuda.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void launch(CUfunction f, CUstream s)
{
    if (cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL) != CUDA_SUCCESS)
        exit(2);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: w_undelivered WARM SIDE PIDFILE\n");
        return 2;
    }
    int warm = atoi(argv[1]);
    CUdevice d;
    CUcontext c;
    CUmodule m;
    CUfunction train, comm, hang, k;
    CUstream a, b;
    if (warm < 1 || warm > 64 || cuInit(0) || cuDeviceGet(&d, 0) ||
        cuDevicePrimaryCtxRetain(&c, d) || cuCtxSetCurrent(c) || cuModuleLoadData(&m, "x") ||
        cuModuleGetFunction(&train, m, "train__4000us") ||
        cuModuleGetFunction(&comm, m, "ncclDevKernel_AllReduce_Sum_f32_RING_LL__1000us") ||
        cuModuleGetFunction(&hang, m, "hang__5000000us") ||
        cuModuleGetFunction(&k, m, "k__1000us") || cuStreamCreate(&a, CU_STREAM_NON_BLOCKING) ||
        cuStreamCreate(&b, CU_STREAM_NON_BLOCKING))
        return 2;
    /* each step's first launch call: entry and return */
    long long in[64], out[64], span = 0;
    char msg[64];
    for (int s = 0; s < warm; s++) {
        snprintf(msg, sizeof(msg), "ProfilerStep#%d", s + 1);
        nvtxRangePushA(msg);
        in[s] = now_ns();
        launch(train, a);
        out[s] = now_ns();
        launch(comm, b);
        for (int i = 1; i < 5; i++)
            launch(train, a);
        if (now_ns() - in[s] > span)
            span = now_ns() - in[s];
        if (cuCtxSynchronize())
            return 2;
        nvtxRangePop();
    }
    long long t0 = now_ns();
    launch(hang, b);
    long long t1 = now_ns();
    /* step s's GPU work starts when its first launch enqueues it (the GPU
     * was idle: the sync before waited for it), in [in, out], and ends
     * 20 ms later: the idle before the next step's start (or B's launch)
     * lies in [next in - (out + 20 ms), next out - (in + 20 ms)] */
    long long lo = 0, hi = 0;
    for (int s = 0; s < warm; s++) {
        long long nin = s + 1 < warm ? in[s + 1] : t0, nout = s + 1 < warm ? out[s + 1] : t1;
        lo += nin - (out[s] + 20000000LL);
        hi += nout - (in[s] + 20000000LL);
    }
    FILE *f = fopen(argv[2], "w");
    if (!f ||
        fprintf(f, "hang_launch_ns %lld %lld\nidle_ns %lld %lld\nlaunch_span_ns %lld\nwarm %d\n",
                t0, t1, lo, hi, span, warm) < 0 ||
        fclose(f))
        return 2;
    f = fopen(argv[3], "w");
    if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f))
        return 2;
    for (int s = warm + 1;; s++) {
        snprintf(msg, sizeof(msg), "ProfilerStep#%d", s);
        nvtxRangePushA(msg);
        for (int i = 0; i < 10; i++) {
            launch(k, a);
            struct timespec ts = {0, 1000000L};
            nanosleep(&ts, NULL);
        }
        nvtxRangePop();
    }
}
