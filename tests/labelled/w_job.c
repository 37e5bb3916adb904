/*
 * Labelled training jobs on the simulated device: each case states its
 * schedule here, and tests/labelled/check_case.py holds the metrics that
 * schedule implies. Launched like torchrun: `w_job launch N CASE` starts N
 * rank processes (`w_job rank R N IDHEX CASE`, RANK/LOCAL_RANK/WORLD_SIZE
 * set) and waits for them. Every iteration is a `ProfilerStep#k` range
 * (cutrace.h) ending with a synchronisation, as a training loop's
 * loss.item() does. Kernel durations come from their names (`__<N>us`,
 * tests/fakegpu/README.md); collectives last bytes x factor / GBPS after
 * the last rank arrives (FAKEGPU_NET_GBPS=1 is set by the tests: 1 MB
 * all-reduced between 2 ranks takes 1 ms).
 *
 * W_JOB_RANK1_CLOCK_OFFSET_NS=X makes rank 1 record its realtime clock X ns
 * off (CUTRACE_TEST_CLOCK_OFFSET_NS), as a host with a skewed clock would.
 *
 * Cases (ms; f = forward kernel, b = backward kernel; serve and graph, which
 * replay CUDA graphs, are in w_job_graphs.c):
 *   dp       2 ranks, 10 steps: 4 f (1) then 4 b (1.5) on the compute
 *            stream; after backward kernel j its gradient bucket (1 MB)
 *            is all-reduced on a communication stream (1 ms), waiting
 *            for that kernel. Buckets 0-2 run under the next backward
 *            kernel, bucket 3 is exposed: per step comm 4, exposed 1,
 *            overlap 75 %, compute 10.
 *   dp_seq   the same, but all four buckets wait for the last backward
 *            kernel: overlap 0 %, exposed = comm = 4 per step.
 *   dp_sizes dp_seq with buckets of 0.25, 0.5, 1 and 2 MB.
 *   pipe     4 ranks = 4 pipeline stages, 4 iterations of 1F1B with 8
 *            micro-batches (f 1, b 2 per micro-batch and stage), the
 *            activations and gradients (4 KiB) sent with Send/Recv as
 *            Megatron-LM's schedule does (paired sends and receives in
 *            one group). Every stage idles (p-1)(f+b) = 9 of the
 *            (m+p-1)(f+b) = 33 of an iteration: bubble 27.3 %. The stages
 *            meet at a host barrier before each iteration ends (as the
 *            optimizer step of a real job lines them up), so iterations
 *            have the same boundaries on every stage.
 *   loader   1 rank and a forked loader worker: each of 12 steps asks the
 *            worker for a batch over a pipe and reads it (blocking); the
 *            worker answers at once except every third step (k % 3 == 2),
 *            when it first sleeps 20 ms; then 2 ms of compute. The rank
 *            prints the time it spent in those reads: DATA_WAIT_US.
 *   ckpt     1 rank, 15 steps of 3 ms compute; after steps 4, 9 and 14 a
 *            checkpoint: 32 MiB copied device-to-host, written to a file
 *            and fsync'ed. Prints its duration: CKPT_US (the sum).
 *   slow     4 ranks, 8 steps of 5 compute kernels (1 ms) and an
 *            all-reduce; rank 2 runs with FAKEGPU_KERNEL_SCALE=1.3, so
 *            its kernels last 1.3 ms: the compute straggler.
 *            W_JOB_SLOW_SCALE=F gives rank 2 the factor F instead (1:
 *            the same job at normal speed, check_whatif.py's truth).
 *   tiny     1 rank, 10 steps of 500 kernels of 200 ns: launch-bound (the
 *            host needs longer per launch than the GPU per kernel):
 *            compute 100 us per step, the rest of the step is GPU idle
 *            between launches.
 *   drain    1 rank, 10 steps: 2 ms kernel on the legacy stream, a
 *            synchronous 4 KiB device-to-host copy (which waits for it),
 *            then 3 ms of host work before the next launch: GPU idle that
 *            only the sync explains. Prints the host work's duration:
 *            HOST_US (the sum).
 *   pipe_slow  pipe with the last stage's kernels 1.5x slower (f 1.5, b 3):
 *            stage imbalance. The last stage sets the pace: an iteration
 *            is 3 (warm-up forwards) + 8 x 4.5 + 6 (backward drain) = 45;
 *            it computes 36, the others 24 and wait 21 (46.7 % bubble),
 *            of which (p-1)/m x 24 = 9 is the schedule's and 36 - 24 = 12
 *            the imbalance's: no excess beyond the imbalance.
 *   multigpu   1 process driving 2 devices (FAKEGPU_DEVICES=2), as JAX and
 *            XLA do: communicators from ncclCommInitAll; each of 10 steps
 *            launches 8 compute kernels (1) on device 0 and 2 on device
 *            1, then one grouped all-reduce of 1 MB across both (1 after
 *            the later arrival). Device 0: compute 8, exposed comm 1, a
 *            step of 9; device 1: compute 2, then it waits 6 in the
 *            all-reduce (comm 7, exposed 7), idle or waiting 7/9 = 78 %
 *            of every step.
 *   serve    2 tensor-parallel ranks serving (as vLLM does): 60 steps,
 *            each a replay of a CUDA graph captured once (6 decode kernels
 *            of 0.3) and a 64 KiB all-reduce (0.0655 after the later
 *            arrival) on the same stream, then a sync; every 10th step
 *            (k % 10 == 0) first runs a prefill outside the graph:
 *            1 + (k / 10) % 3 kernels of 2. Between steps the host
 *            schedules for 0.2-0.5 (HOST r k US, measured): GPU idle that
 *            only the host explains. Graph replays launch 60 x 1.8 = 108
 *            of the busy time; decode steps are 1.8 of compute, prefill
 *            steps 2, 4 or 6 more.
 *   pipe_half  pipe with stage 1's kernels half as long (f 0.5, b 1): the
 *            real run of check_whatif.py's "one stage's compute halved".
 *   pipe_stall pipe where stage 1, before sending the activations of
 *            micro-batches 0, 2, 4 and 6, synchronises its stream and does
 *            2 ms of host work (as a host-side check of each micro-batch
 *            would): its GPU idles 2 ms four times per iteration and every
 *            other stage waits for it. Balanced 1F1B has no slack, so each
 *            stall lengthens the iteration: about 33 + 8 = 41, the other
 *            stages wait about 9 + 8 (8 beyond the schedule's share).
 *   graph    2 ranks, 20 steps: each replays a CUDA graph captured once
 *            on two streams, forked and joined through events (as
 *            torch.cuda.graph captures a side stream):
 *              c: A (1) -+- B (3) -- D (3) -+- E (1)
 *              m:        +- C (4.5) --------+
 *            edges A->B, A->C, B->D, C->E, D->E; then a 1 MB all-reduce
 *            (1) on c and a sync. Replayed, A [0,1) B [1,4) C [1,5.5)
 *            D [4,7) E [7,8): the path is A B D E, and C, which overlaps
 *            B and D on the launch stream (CUPTI reports every node on it),
 *            has 1.5 of slack. A step is 8 + 1 and the host's part.
 *            W_JOB_GRAPH_B_US=N gives B N us instead (1000: the real run of
 *            check_whatif.py's "graph": B [1,2) D [2,5) C [1,5.5) E
 *            [5.5,6.5), the path moves onto C, a step of 6.5 + 1).
 */
#include <cuda.h>
#include <fcntl.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cutrace/cutrace.h"

#include "tests/labelled/w_job.h"

/* A barrier shared by the rank processes (shm named after the launcher). */
static pthread_barrier_t *shared_barrier(int n, int create)
{
    char name[64];
    snprintf(name, sizeof(name), "/w_job_%s",
             getenv("W_JOB_BARRIER") ? getenv("W_JOB_BARRIER") : "x");
    int fd = shm_open(name, create ? O_CREAT | O_RDWR | O_TRUNC : O_RDWR, 0600);
    if (fd < 0 || (create && ftruncate(fd, sizeof(pthread_barrier_t)) != 0))
        exit(2);
    pthread_barrier_t *b = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (b == MAP_FAILED)
        exit(2);
    if (create) {
        pthread_barrierattr_t a;
        pthread_barrierattr_init(&a);
        pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
        pthread_barrier_init(b, &a, (unsigned)n);
    }
    return b;
}

int64_t wj_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void wj_kernel(struct rank *k, CUstream s, const char *name)
{
    CUfunction f;
    CHECK(cuModuleGetFunction(&f, k->mod, name));
    CHECK(cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, s, NULL, NULL));
}

/* W_JOB_NO_STEPS=1: no step ranges, as a job nobody annotated
 * (tests/labelled/check_unannotated.py): the report finds the steps from
 * the work that repeats. */
static int annotated(void)
{
    const char *s = getenv("W_JOB_NO_STEPS");
    return !s || strcmp(s, "1") != 0;
}

void wj_step_begin(int i)
{
    char name[32];
    snprintf(name, sizeof(name), "ProfilerStep#%d", i);
    if (annotated())
        cutrace_range_push(name);
}

void wj_step_pop(void)
{
    if (annotated())
        cutrace_range_pop();
}

/* W_JOB_STEPS=N runs N steps (N iterations of pipe) instead of the case's
 * own count: tests/labelled/check_light.py needs jobs long enough for
 * several capture windows. */
int wj_steps(int dflt)
{
    const char *s = getenv("W_JOB_STEPS");
    int n = s ? atoi(s) : 0;
    return n > 0 ? n : dflt;
}

static void step_end(struct rank *k)
{
    CHECK(cuCtxSynchronize());
    wj_step_pop();
    (void)k;
}

/* ------------------------------------------------------------ dp */

/* Case dp_log: dp whose rank 0 alone reads its loss after the forward
 * pass (a 4-byte copy on the compute stream and a sync: loss.item()), as
 * a job that logs on rank 0 does. Its own mid-step sync must not give it
 * another phase than its peers' (tests/labelled/check_unannotated.py). */
static int log_rank0;
/* Case dp_sizes: dp_seq with buckets of 0.25, 0.5, 1 and 2 MB (62500 << j
 * floats), so that a fit over the job's sizes tells the all-reduce's
 * latency from its bandwidth (`whatif --scale net=F`). */
static int dp_sizes;

static void dp(struct rank *k, int overlap)
{
    CUevent ev[4];
    for (int j = 0; j < 4; j++)
        CHECK(cuEventCreate(&ev[j], CU_EVENT_DISABLE_TIMING));
    for (int i = 0, n = wj_steps(10); i < n; i++) {
        wj_step_begin(i);
        for (int j = 0; j < 4; j++)
            wj_kernel(k, k->c, "forward__1000us");
        if (k->r == 0 && log_rank0) {
            float loss;
            CHECK(cuMemcpyDtoHAsync(&loss, k->a, sizeof(loss), k->c));
            CHECK(cuStreamSynchronize(k->c));
        }
        for (int j = 0; j < 4; j++) {
            wj_kernel(k, k->c, "backward__1500us");
            if (overlap || j == 3) {
                CHECK(cuEventRecord(ev[j], k->c));
                CHECK(cuStreamWaitEvent(k->m, ev[j], 0));
            }
            if (overlap)
                CHECK(ncclAllReduce((void *)(uintptr_t)k->a, (void *)(uintptr_t)k->b, 250000,
                                    ncclFloat32, ncclSum, k->comm, (cudaStream_t)k->m));
        }
        if (!overlap)
            for (int j = 0; j < 4; j++)
                CHECK(ncclAllReduce((void *)(uintptr_t)k->a, (void *)(uintptr_t)k->b,
                                    dp_sizes ? (size_t)62500 << j : 250000, ncclFloat32, ncclSum,
                                    k->comm, (cudaStream_t)k->m));
        step_end(k);
    }
}

/* ------------------------------------------------------------ pipe */

/* One p2p step of Megatron-LM's schedule: the given sends and receives in
 * one group (peer -1: none). */
static void p2p(struct rank *k, int send_to, int recv_from)
{
    if (send_to < 0 && recv_from < 0)
        return;
    char *a = (char *)(uintptr_t)k->a, *b = (char *)(uintptr_t)k->b;
    cudaStream_t s = (cudaStream_t)k->c;
    CHECK(ncclGroupStart());
    if (send_to >= 0)
        CHECK(ncclSend(a, 1024, ncclFloat32, send_to, k->comm, s));
    if (recv_from >= 0)
        CHECK(ncclRecv(b, 1024, ncclFloat32, recv_from, k->comm, s));
    CHECK(ncclGroupEnd());
}

static void pipe_1f1b(struct rank *k)
{
    const int p = k->n, m = 8, st = k->r;
    const int prev = st > 0 ? st - 1 : -1, next = st < p - 1 ? st + 1 : -1;
    int warmup = p - st - 1 < m ? p - st - 1 : m;
    int steady = m - warmup;
    /* rank 0 made it before ncclCommInitRank, which the others passed */
    pthread_barrier_t *barrier = shared_barrier(p, 0);
    for (int i = 0, n = wj_steps(4); i < n; i++) {
        wj_step_begin(i);
        for (int w = 0; w < warmup; w++) {
            p2p(k, -1, prev); /* recv_forward */
            wj_kernel(k, k->c, "stage_forward__1000us");
            p2p(k, next, -1); /* send_forward */
        }
        if (steady > 0)
            p2p(k, -1, prev); /* recv_forward */
        for (int j = 0; j < steady; j++) {
            wj_kernel(k, k->c, "stage_forward__1000us");
            p2p(k, next, next); /* send_forward_recv_backward */
            wj_kernel(k, k->c, "stage_backward__2000us");
            if (j == steady - 1)
                p2p(k, prev, -1); /* send_backward */
            else
                p2p(k, prev, prev); /* send_backward_recv_forward */
        }
        for (int w = 0; w < warmup; w++) {
            p2p(k, -1, next); /* recv_backward */
            wj_kernel(k, k->c, "stage_backward__2000us");
            p2p(k, prev, -1); /* send_backward */
        }
        CHECK(cuCtxSynchronize());
        pthread_barrier_wait(barrier);
        step_end(k);
    }
    if (st == 0) { /* everyone has opened it: they passed the barrier */
        char name[64];
        snprintf(name, sizeof(name), "/w_job_%s", getenv("W_JOB_BARRIER"));
        shm_unlink(name);
    }
}

/* ------------------------------------------------------------ loader */

static void loader(struct rank *k, int req, int data)
{
    char batch[4096], train[64];
    /* W_JOB_LOADER_COMPUTE_US: the step's compute (default 2000) */
    const char *cu = getenv("W_JOB_LOADER_COMPUTE_US");
    snprintf(train, sizeof(train), "train__%sus", cu ? cu : "2000");
    int64_t waited = 0;
    for (int i = 0, n = wj_steps(12); i < n; i++) {
        wj_step_begin(i);
        char c = (char)i;
        CHECK(write(req, &c, 1) != 1);
        int64_t t0 = wj_now_ns();
        size_t got = 0;
        while (got < sizeof(batch)) {
            ssize_t r = read(data, batch + got, sizeof(batch) - got);
            if (r <= 0)
                exit(2);
            got += (size_t)r;
        }
        int64_t w = wj_now_ns() - t0;
        waited += w;
        printf("WAIT %d %.3f\n", i, (double)w / 1000.0);
        wj_kernel(k, k->c, train);
        step_end(k);
    }
    printf("DATA_WAIT_US %.3f\n", (double)waited / 1000.0);
}

/* The worker: answers each request with a batch, late every third (by
 * W_JOB_LOADER_LATE_MS, default 20; 0: an instant loader, check_whatif.py's
 * truth). */
static void loader_worker(int req, int data)
{
    char batch[4096];
    memset(batch, 7, sizeof(batch));
    const char *late = getenv("W_JOB_LOADER_LATE_MS");
    long ms = late ? atol(late) : 20;
    char c;
    while (read(req, &c, 1) == 1) {
        if (c % 3 == 2 && ms > 0) {
            struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
            nanosleep(&t, NULL);
        }
        if (write(data, batch, sizeof(batch)) != (ssize_t)sizeof(batch))
            _exit(2);
    }
    _exit(0);
}

/* ------------------------------------------------------------ ckpt */

/* When the last step of ckpt ended: rank_main prints TAIL_US, the time
 * from there to the end of its last CUDA call (removing a 32 MiB file, the
 * final synchronize), which a report without step ranges cannot tell from
 * the last step (tests/labelled/check_unannotated.py). */
static int64_t tail_from;

static void ckpt(struct rank *k, const char *dir)
{
    size_t bytes = 32u << 20;
    char *host = malloc(bytes);
    char path[4096];
    snprintf(path, sizeof(path), "%s/ckpt.bin", dir);
    int64_t total = 0;
    for (int i = 0, n = wj_steps(15); i < n; i++) {
        wj_step_begin(i);
        wj_kernel(k, k->c, "train__3000us");
        CHECK(cuStreamSynchronize(k->c));
        if (i % 5 == 4) {
            int64_t t0 = wj_now_ns();
            CHECK(cuMemcpyDtoH(host, k->a, 16u << 20));
            CHECK(cuMemcpyDtoH(host + (16u << 20), k->b, 16u << 20));
            int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
            if (fd < 0 || write(fd, host, bytes) != (ssize_t)bytes || fsync(fd) != 0)
                exit(2);
            close(fd);
            total += wj_now_ns() - t0;
        }
        step_end(k);
    }
    tail_from = wj_now_ns();
    unlink(path);
    free(host);
    printf("CKPT_US %.3f\n", (double)total / 1000.0);
}

/* ------------------------------------------------------------ others */

static void slow(struct rank *k)
{
    for (int i = 0, n = wj_steps(8); i < n; i++) {
        wj_step_begin(i);
        for (int j = 0; j < 5; j++)
            wj_kernel(k, k->c, "layer__1000us");
        CHECK(ncclAllReduce((void *)(uintptr_t)k->a, (void *)(uintptr_t)k->b, 25000, ncclFloat32,
                            ncclSum, k->comm, (cudaStream_t)k->c));
        step_end(k);
    }
}

static void throttle(struct rank *k)
{
    for (int i = 0; i < 40; i++) {
        wj_step_begin(i);
        for (int j = 0; j < 5; j++)
            wj_kernel(k, k->c, "layer__2000us");
        CHECK(ncclAllReduce((void *)(uintptr_t)k->a, (void *)(uintptr_t)k->b, 25000, ncclFloat32,
                            ncclSum, k->comm, (cudaStream_t)k->c));
        step_end(k);
    }
}

/* Nanoseconds of CPU time the calling thread has used. */
static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void tiny(struct rank *k)
{
    /* Time the host was not launching for reasons the trace cannot see:
     * the launching thread off its CPU inside the launch loop (preempted by
     * other tests on a shared machine), and each step's synchronize, whose
     * wall time here is waking up (the 200 ns kernels keep the GPU caught
     * up, so there is next to nothing to drain). */
    int64_t off = 0, sync = 0;
    for (int i = 0, n = wj_steps(10); i < n; i++) {
        wj_step_begin(i);
        int64_t w0 = wj_now_ns(), c0 = thread_cpu_ns();
        for (int j = 0; j < 500; j++)
            wj_kernel(k, k->c, "tiny__200ns");
        int64_t w1 = wj_now_ns();
        off += (w1 - w0) - (thread_cpu_ns() - c0);
        step_end(k);
        sync += wj_now_ns() - w1;
    }
    printf("OFFCPU_US %.3f\nSYNC_US %.3f\n", (double)off / 1000.0, (double)sync / 1000.0);
}

static void drain(struct rank *k)
{
    char small[4096];
    int64_t host = 0;
    for (int i = 0, n = wj_steps(10); i < n; i++) {
        wj_step_begin(i);
        wj_kernel(k, NULL, "train__2000us");
        CHECK(cuMemcpyDtoH(small, k->a, sizeof(small)));
        int64_t t0 = wj_now_ns();
        volatile uint64_t x = 0;
        while (wj_now_ns() - t0 < 3000000) /* host work: no syscall, no CUDA */
            x = x + 1;
        host += wj_now_ns() - t0;
        step_end(k);
    }
    printf("HOST_US %.3f\n", (double)host / 1000.0);
}

/* ------------------------------------------------------------ pipe variants */

/* Waits for the stream, then ns of host work (no syscall, no CUDA). */
static void host_stall(struct rank *k, int64_t ns)
{
    CHECK(cuStreamSynchronize(k->c));
    int64_t t0 = wj_now_ns();
    volatile uint64_t x = 0;
    while (wj_now_ns() - t0 < ns)
        x = x + 1;
}

/* ------------------------------------------------------------ multigpu */

static int multigpu(void)
{
    CUdevice dev[2];
    CUcontext ctx[2];
    CUmodule mod[2];
    CUstream st[2];
    CUdeviceptr buf[2];
    CUfunction f[2];
    CHECK(cuInit(0));
    for (int d = 0; d < 2; d++) {
        CHECK(cuDeviceGet(&dev[d], d));
        CHECK(cuDevicePrimaryCtxRetain(&ctx[d], dev[d]));
        CHECK(cuCtxSetCurrent(ctx[d]));
        CHECK(cuModuleLoadData(&mod[d], "labelled"));
        CHECK(cuModuleGetFunction(&f[d], mod[d], "compute__1000us"));
        CHECK(cuStreamCreate(&st[d], CU_STREAM_NON_BLOCKING));
        CHECK(cuMemAlloc(&buf[d], 1u << 20));
    }
    ncclComm_t comm[2];
    int devs[2] = {0, 1};
    CHECK(ncclCommInitAll(comm, 2, devs));
    for (int i = 0, n = wj_steps(10); i < n; i++) {
        wj_step_begin(i);
        for (int d = 0; d < 2; d++) {
            CHECK(cuCtxSetCurrent(ctx[d]));
            for (int j = 0; j < (d == 0 ? 8 : 2); j++)
                CHECK(cuLaunchKernel(f[d], 1, 1, 1, 128, 1, 1, 0, st[d], NULL, NULL));
        }
        CHECK(ncclGroupStart());
        for (int d = 0; d < 2; d++) {
            CHECK(cuCtxSetCurrent(ctx[d]));
            CHECK(ncclAllReduce((void *)buf[d], (void *)buf[d], 1u << 18, ncclFloat32, ncclSum,
                                comm[d], (cudaStream_t)st[d]));
        }
        CHECK(ncclGroupEnd());
        for (int d = 0; d < 2; d++) {
            CHECK(cuCtxSetCurrent(ctx[d]));
            CHECK(cuStreamSynchronize(st[d]));
        }
        wj_step_pop();
    }
    for (int d = 0; d < 2; d++)
        CHECK(ncclCommDestroy(comm[d]));
    fflush(stdout);
    return 0;
}

/* The pipe schedule (pipe_1f1b, which keeps its own copy so its stated
 * truth never moves) with stage odd_stage's kernels (-1: the last stage's)
 * named odd_f/odd_b, and on stage stall_stage a stream sync plus stall_ns
 * of host work before sending the activations of every second
 * micro-batch. */
static void pipe_variant(struct rank *k, int odd_stage, const char *odd_f, const char *odd_b,
                         int stall_stage, int64_t stall_ns)
{
    const int p = k->n, m = 8, st = k->r;
    const int prev = st > 0 ? st - 1 : -1, next = st < p - 1 ? st + 1 : -1;
    const int odd = st == (odd_stage < 0 ? p - 1 : odd_stage);
    const char *fwd = odd && odd_f ? odd_f : "stage_forward__1000us";
    const char *bwd = odd && odd_b ? odd_b : "stage_backward__2000us";
    int warmup = p - st - 1 < m ? p - st - 1 : m;
    int steady = m - warmup;
    pthread_barrier_t *barrier = shared_barrier(p, 0);
    for (int i = 0, n = wj_steps(4); i < n; i++) {
        int mb = 0; /* the micro-batch whose activations go next */
        wj_step_begin(i);
        for (int w = 0; w < warmup; w++) {
            p2p(k, -1, prev);
            wj_kernel(k, k->c, fwd);
            if (st == stall_stage && mb++ % 2 == 0)
                host_stall(k, stall_ns);
            p2p(k, next, -1);
        }
        if (steady > 0)
            p2p(k, -1, prev);
        for (int j = 0; j < steady; j++) {
            wj_kernel(k, k->c, fwd);
            if (st == stall_stage && mb++ % 2 == 0)
                host_stall(k, stall_ns);
            p2p(k, next, next);
            wj_kernel(k, k->c, bwd);
            if (j == steady - 1)
                p2p(k, prev, -1);
            else
                p2p(k, prev, prev);
        }
        for (int w = 0; w < warmup; w++) {
            p2p(k, -1, next);
            wj_kernel(k, k->c, bwd);
            p2p(k, prev, -1);
        }
        CHECK(cuCtxSynchronize());
        pthread_barrier_wait(barrier);
        step_end(k);
    }
    if (st == 0) {
        char name[64];
        snprintf(name, sizeof(name), "/w_job_%s", getenv("W_JOB_BARRIER"));
        shm_unlink(name);
    }
}

/* ------------------------------------------------------------ ranks */

static void hex(const ncclUniqueId *id, char *out)
{
    for (size_t i = 0; i < sizeof(id->internal); i++)
        sprintf(out + 2 * i, "%02x", (unsigned char)id->internal[i]);
}

static void unhex(const char *s, ncclUniqueId *id)
{
    for (size_t i = 0; i < sizeof(id->internal); i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1)
            exit(2);
        id->internal[i] = (char)v;
    }
}

static int rank_main(int r, int n, const char *idhex, const char *c)
{
    if (!strcmp(c, "multigpu"))
        return multigpu(); /* its one process drives both devices */
    int req[2] = {-1, -1}, data[2] = {-1, -1};
    if (!strcmp(c, "loader")) { /* the worker is forked before CUDA, like DataLoader's */
        if (pipe(req) || pipe(data))
            return 2;
        pid_t w = fork();
        if (w == 0) {
            close(req[1]);
            close(data[0]);
            loader_worker(req[0], data[1]);
        }
        close(req[0]);
        close(data[1]);
    }
    struct rank k = {.r = r, .n = n};
    CUdevice d;
    CUcontext ctx;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&d, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, d));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoadData(&k.mod, "labelled"));
    CHECK(cuStreamCreate(&k.c, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamCreate(&k.m, CU_STREAM_NON_BLOCKING));
    CHECK(cuMemAlloc(&k.a, 16u << 20));
    CHECK(cuMemAlloc(&k.b, 16u << 20));
    if (!strncmp(c, "pipe", 4) && r == 0)
        shared_barrier(n, 1);
    if (n > 1) {
        ncclUniqueId id;
        unhex(idhex, &id);
        CHECK(ncclCommInitRank(&k.comm, n, id, r));
    }
    log_rank0 = !strcmp(c, "dp_log");
    if (!strcmp(c, "dp") || log_rank0)
        dp(&k, 1);
    else if (!strcmp(c, "dp_seq") || (dp_sizes = !strcmp(c, "dp_sizes")))
        dp(&k, 0);
    else if (!strcmp(c, "pipe"))
        pipe_1f1b(&k);
    else if (!strcmp(c, "loader"))
        loader(&k, req[1], data[0]);
    else if (!strcmp(c, "ckpt"))
        ckpt(&k, getenv("W_JOB_DIR") ? getenv("W_JOB_DIR") : ".");
    else if (!strcmp(c, "slow"))
        slow(&k);
    else if (!strcmp(c, "throttle"))
        throttle(&k);
    else if (!strcmp(c, "tiny"))
        tiny(&k);
    else if (!strcmp(c, "drain"))
        drain(&k);
    else if (!strcmp(c, "serve"))
        wj_serve(&k);
    else if (!strcmp(c, "graph"))
        wj_graph(&k);
    else if (!strcmp(c, "pipe_slow"))
        pipe_variant(&k, -1, "stage_forward__1500us", "stage_backward__3000us", -1, 0);
    else if (!strcmp(c, "pipe_half"))
        pipe_variant(&k, 1, "stage_forward__500us", "stage_backward__1000us", -1, 0);
    else if (!strcmp(c, "pipe_stall"))
        pipe_variant(&k, -1, NULL, NULL, 1, 2000000);
    else
        return 2;
    CHECK(cuCtxSynchronize());
    if (tail_from)
        printf("TAIL_US %.3f\n", (double)(wj_now_ns() - tail_from) / 1000.0);
    if (k.comm)
        CHECK(ncclCommDestroy(k.comm));
    if (req[1] >= 0) {
        close(req[1]);
        int st;
        wait(&st);
    }
    fflush(stdout);
    return 0;
}

static int launch(const char *self, int n, const char *c)
{
    ncclUniqueId id;
    memset(&id, 0, sizeof(id));
    if (n > 1)
        CHECK(ncclGetUniqueId(&id));
    char idhex[2 * sizeof(id.internal) + 1];
    hex(&id, idhex);
    char tag[32];
    snprintf(tag, sizeof(tag), "%d", (int)getpid());
    setenv("W_JOB_BARRIER", tag, 1);
    pid_t pids[16];
    for (int r = 0; r < n && r < 16; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            char rs[16], ns[16];
            snprintf(rs, sizeof(rs), "%d", r);
            snprintf(ns, sizeof(ns), "%d", n);
            setenv("RANK", rs, 1);
            setenv("LOCAL_RANK", rs, 1);
            setenv("WORLD_SIZE", ns, 1);
            if (!strcmp(c, "slow") && r == 2) {
                const char *sc = getenv("W_JOB_SLOW_SCALE");
                setenv("FAKEGPU_KERNEL_SCALE", sc && *sc ? sc : "1.3", 1);
            }
            if (!strcmp(c, "throttle") && r == 1) {
                const char *t = getenv("W_JOB_CAP_S");
                char cap[64];
                snprintf(cap, sizeof(cap), "0:%s", t && *t ? t : "0.36");
                setenv("FAKEGPU_NVML_CAP", cap, 1);
            }
            /* a host whose realtime clock is off: the report must undo it */
            const char *off = getenv("W_JOB_RANK1_CLOCK_OFFSET_NS");
            if (off && r == 1)
                setenv("CUTRACE_TEST_CLOCK_OFFSET_NS", off, 1);
            execl(self, self, "rank", rs, ns, idhex, c, (char *)NULL);
            _exit(127);
        }
    }
    int bad = 0;
    for (int r = 0; r < n && r < 16; r++) {
        int st;
        waitpid(pids[r], &st, 0);
        bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
    return bad;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 4 && !strcmp(argv[1], "launch"))
        return launch(argv[0], atoi(argv[2]), argv[3]);
    if (argc == 6 && !strcmp(argv[1], "rank"))
        return rank_main(atoi(argv[2]), atoi(argv[3]), argv[4], argv[5]);
    fprintf(stderr, "usage: w_job launch N CASE | rank R N IDHEX CASE\n");
    return 2;
}
