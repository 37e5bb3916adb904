/*
 * Labelled job lives for `cutrace goodput` (tests/labelled/check_goodput.py
 * holds the checks): a job launched like torchrun, killed and restarted
 * from its checkpoint, hung, or run to its end. `w_restart launch CASE`
 * is the launcher (the agent); it starts each attempt's 2 rank processes
 * as `w_restart rank R N IDHEX CASE ATTEMPT` (RANK/LOCAL_RANK/WORLD_SIZE
 * and TORCHELASTIC_RESTART_COUNT=ATTEMPT set (or the variable named by
 * W_RESTART_COUNT_VAR, none for "none"), a fresh NCCL unique id per
 * attempt) and waits for them. The launcher sets TORCHELASTIC_RUN_ID=
 * goodput-<its pid> (the job's id in every trace) and makes one recorded
 * call, a cutrace mark: its process, the job's first to start and last to
 * end, is in the traces as well (it has no rank).
 *
 * Every rank: RANK_START, sleeps 50 ms (imports, compilation), then
 * cuInit, context, module, stream, 2 x 4 MiB device buffers (the model's
 * set to its initial values) and ncclCommInitRank. A step is a `ProfilerStep#k` range (k: the job's
 * global step number, 1..20, going on after a restart) holding 4 kernels
 * of 5 ms (`train__5000us`) and a 1 MB all-reduce (1 ms at
 * FAKEGPU_NET_GBPS=1) on the compute stream, closed after cuCtxSynchronize:
 * about 21 ms. A checkpoint (after the step's range has closed, every 5th
 * step) copies 4 MiB device-to-host (cuMemcpyDtoH), writes it and the step
 * number to $W_JOB_DIR/ckpt-r<R>.bin (W_JOB_DIR defaults to "."), fsyncs
 * and closes it. A restore (attempts after the first, after the NCCL init)
 * opens that file, reads all of it, closes it and copies the 4 MiB
 * host-to-device in 4 pieces of 1 MiB (cuMemcpyHtoD, as a state dict is
 * loaded tensor by tensor): that is the RESTORE; the next step is the one
 * after the step number it read.
 *
 * Ranks tell the launcher about a moment with a byte written to a pipe
 * whose write end's number is in W_RESTART_FD (kept open across exec).
 *
 * Cases:
 *   restart  attempt 0 runs steps 1.., checkpoints after 5 and 10; right
 *            after opening step 13's range each rank tells the launcher,
 *            which, once both have, sleeps 10 ms and SIGKILLs both, waits
 *            for them and sleeps 100 ms (down time). Attempt 1
 *            (TORCHELASTIC_RESTART_COUNT=1) restores step 10 and runs steps
 *            11..20, checkpoints after 15 and 20, destroys its communicator
 *            and exits 0. Steps 11, 12 (completed after the last
 *            checkpoint, run again) and 13 (in progress at the kill) are
 *            lost work. Step 13 runs kernels (and synchronises after each)
 *            until the SIGKILL, so a launcher that wakes late still kills
 *            it inside step 13.
 *   hang     attempt 0 only: steps 1..7 complete; at step 8 (its range
 *            open on both ranks) rank 1 stops issuing collectives (HANG,
 *            tells the launcher, then sleeps forever in sleep(1)), rank 0
 *            launches its kernels, issues the all-reduce that never
 *            completes (HANG just before) and blocks in cuCtxSynchronize.
 *            The launcher sleeps 2500 ms after rank 1 stopped, then sends
 *            SIGTERM to both (as torchrun does), waits and exits 0. Hang
 *            time: rank 0's HANG to the end.
 *   clean    steps 1..10, checkpoints after 5 and 10, exit 0.
 *   paused   run under CUTRACE_START=paused: steps 1..20, checkpoints after
 *            5, 10, 15 and 20. After step 4 each rank tells the launcher,
 *            which, once both have, opens a capture window in both ranks
 *            (`$W_CUTRACE start -o $W_TRACES PID`); after step 14 it closes
 *            it (`stop`). The window holds some 8 whole steps and the
 *            checkpoint after 10; the start-up, steps 1..5 and 15..20 and
 *            the shutdown are not recorded.
 *
 * Truth: lines on stdout (line-buffered), times CLOCK_REALTIME in integer
 * nanoseconds, launcher and ranks writing to the same stdout:
 *   JOB_START t            launcher, first thing in main
 *   ATTEMPT a t            launcher, just before forking attempt a's ranks
 *   KILL a t               launcher, just before signalling attempt a (printed
 *                          after the signals went)
 *   JOB_END t              launcher, last thing
 *   RANK_START a r t       rank r of attempt a, first thing in main
 *   STEP a r k s e         step k's range: push (s) and pop (e)
 *   CKPT a r k s e         checkpoint after step k: before the D2H copy (s),
 *                          after close (e)
 *   RESTORE a r s e        the restore: before the checkpoint's first read()
 *                          (s), after its last copy to the GPU (e)
 *   HANG a r t             rank 0: just before issuing the all-reduce that
 *                          never completes; rank 1: when it stops
 *   RANK_END a r t         just before returning from main
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, kill, setenv under -std=c11 too */
#include <cuda.h>
#include <errno.h>
#include <fcntl.h>
#include <nccl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cutrace/cutrace.h"

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        int rc_ = (int)(x);                                                                        \
        if (rc_ != 0) {                                                                            \
            fprintf(stderr, "w_restart: %s failed: %d\n", #x, rc_);                                \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

#define NRANKS     2
#define CKPT_BYTES (4u << 20)
#define AR_COUNT   250000 /* floats: 1 MB */

struct rank {
    int r, n, attempt;
    const char *c;
    CUmodule mod;
    CUfunction train;
    CUstream s;
    CUdeviceptr a, b; /* 4 MiB each: the model (checkpointed), the gradients */
    ncclComm_t comm;
    char *host; /* CKPT_BYTES + the step number */
    char path[4096];
};

/* CLOCK_REALTIME, ns: the truth lines' clock. */
static long long rt_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

/* Tells the launcher (one byte on the pipe of W_RESTART_FD). */
static void notify(int r)
{
    const char *s = getenv("W_RESTART_FD");
    char c = (char)r;
    if (!s || write(atoi(s), &c, 1) != 1)
        exit(2);
}

static void checkpoint(struct rank *k, int step)
{
    long long s = rt_ns();
    CHECK(cuMemcpyDtoH(k->host, k->a, CKPT_BYTES));
    int64_t st = step;
    memcpy(k->host + CKPT_BYTES, &st, sizeof(st));
    size_t bytes = CKPT_BYTES + sizeof(st);
    int fd = open(k->path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, k->host, bytes) != (ssize_t)bytes || fsync(fd) != 0)
        exit(2);
    close(fd);
    printf("CKPT %d %d %d %lld %lld\n", k->attempt, k->r, step, s, rt_ns());
}

/* The step number of the checkpoint it loaded. */
static int restore(struct rank *k)
{
    int fd = open(k->path, O_RDONLY);
    if (fd < 0)
        exit(2);
    size_t bytes = CKPT_BYTES + sizeof(int64_t), got = 0;
    /* what goodput's restore is: the reading and the copies of the state it
     * read to the GPU (docs/goodput.md) */
    long long s = rt_ns();
    while (got < bytes) {
        ssize_t n = read(fd, k->host + got, bytes - got);
        if (n <= 0)
            exit(2);
        got += (size_t)n;
    }
    close(fd);
    /* tensor by tensor, as a state dict is loaded: 4 copies of 1 MiB */
    for (size_t off = 0; off < CKPT_BYTES; off += CKPT_BYTES / 4)
        CHECK(cuMemcpyHtoD(k->a + off, k->host + off, CKPT_BYTES / 4));
    long long e = rt_ns();
    int64_t st;
    memcpy(&st, k->host + CKPT_BYTES, sizeof(st));
    printf("RESTORE %d %d %lld %lld\n", k->attempt, k->r, s, e);
    return (int)st;
}

/* W_JOB_NO_STEPS=1: no step ranges, as a job nobody annotated: goodput
 * takes the steps the report finds from the work that repeats. */
static int annotated(void)
{
    const char *v = getenv("W_JOB_NO_STEPS");
    return !v || strcmp(v, "1") != 0;
}

/* Step i (restart's step 13 in attempt 0 runs kernels until the launcher's
 * SIGKILL; on rank 1, hang's step 8 never returns; on rank 0 it blocks
 * until the launcher's SIGTERM). */
static void step(struct rank *k, int i)
{
    char name[32];
    snprintf(name, sizeof(name), "ProfilerStep#%d", i);
    long long s = rt_ns();
    if (annotated())
        cutrace_range_push(name);
    if (!strcmp(k->c, "restart") && k->attempt == 0 && i == 13) {
        notify(k->r); /* the launcher kills us 10 ms later */
        for (;;) {    /* the step's work goes on until then, however late it comes */
            CHECK(cuLaunchKernel(k->train, 1, 1, 1, 128, 1, 1, 0, k->s, NULL, NULL));
            CHECK(cuCtxSynchronize());
        }
    }
    int hang = !strcmp(k->c, "hang") && i == 8;
    int paused = !strcmp(k->c, "paused");
    if (hang && k->r == 1) { /* stops issuing collectives */
        printf("HANG %d %d %lld\n", k->attempt, k->r, rt_ns());
        notify(k->r);
        for (;;)
            sleep(1);
    }
    for (int j = 0; j < 4; j++)
        CHECK(cuLaunchKernel(k->train, 1, 1, 1, 128, 1, 1, 0, k->s, NULL, NULL));
    if (hang) /* rank 0: its peer never joins this one */
        printf("HANG %d %d %lld\n", k->attempt, k->r, rt_ns());
    CHECK(ncclAllReduce((void *)(uintptr_t)k->b, (void *)(uintptr_t)k->b, AR_COUNT, ncclFloat32,
                        ncclSum, k->comm, (cudaStream_t)k->s));
    CHECK(cuCtxSynchronize());
    if (annotated())
        cutrace_range_pop();
    printf("STEP %d %d %d %lld %lld\n", k->attempt, k->r, i, s, rt_ns());
    if (paused && (i == 4 || i == 14)) /* the launcher opens, then closes, a window */
        notify(k->r);
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

static void hex(const ncclUniqueId *id, char *out)
{
    for (size_t i = 0; i < sizeof(id->internal); i++)
        sprintf(out + 2 * i, "%02x", (unsigned char)id->internal[i]);
}

static int rank_main(long long t0, int r, int n, const char *idhex, const char *c, int attempt)
{
    printf("RANK_START %d %d %lld\n", attempt, r, t0);
    struct rank k = {.r = r, .n = n, .attempt = attempt, .c = c};
    const char *dir = getenv("W_JOB_DIR");
    snprintf(k.path, sizeof(k.path), "%s/ckpt-r%d.bin", dir && *dir ? dir : ".", r);
    int last;
    if (!strcmp(c, "restart") || !strcmp(c, "hang") || !strcmp(c, "paused"))
        last = 20;
    else if (!strcmp(c, "clean"))
        last = 10;
    else
        return 2;
    sleep_ms(50); /* imports, compilation */
    CUdevice d;
    CUcontext ctx;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&d, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, d));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoadData(&k.mod, "labelled"));
    CHECK(cuModuleGetFunction(&k.train, k.mod, "train__5000us"));
    CHECK(cuStreamCreate(&k.s, CU_STREAM_NON_BLOCKING));
    CHECK(cuMemAlloc(&k.a, CKPT_BYTES));
    CHECK(cuMemAlloc(&k.b, CKPT_BYTES));
    /* The model's initial values, and the checkpoint's host buffer touched
     * now (not zeros, which the compiler may turn into a calloc that leaves
     * it untouched): a first copy into fresh pages spends its time in page
     * faults (100 ms on a slow VM), not in what it stands for. */
    CHECK(cuMemsetD8(k.a, 1, CKPT_BYTES));
    if (!(k.host = malloc(CKPT_BYTES + sizeof(int64_t))))
        return 2;
    memset(k.host, 1, CKPT_BYTES + sizeof(int64_t));
    ncclUniqueId id;
    unhex(idhex, &id);
    CHECK(ncclCommInitRank(&k.comm, n, id, r));
    int first = attempt > 0 ? restore(&k) + 1 : 1;
    for (int i = first; i <= last; i++) {
        step(&k, i);
        if (i % 5 == 0)
            checkpoint(&k, i);
    }
    CHECK(ncclCommDestroy(k.comm));
    free(k.host);
    printf("RANK_END %d %d %lld\n", attempt, r, rt_ns());
    fflush(stdout);
    return 0;
}

/* Starts attempt a's ranks; *rfd: the read end of their pipe. */
static void start_attempt(const char *self, const char *c, int a, pid_t *pids, int *rfd)
{
    ncclUniqueId id;
    CHECK(ncclGetUniqueId(&id));
    char idhex[2 * sizeof(id.internal) + 1];
    hex(&id, idhex);
    int p[2];
    if (pipe(p) != 0)
        exit(2);
    printf("ATTEMPT %d %lld\n", a, rt_ns());
    fflush(stdout); /* before fork: the children must not print it again */
    for (int r = 0; r < NRANKS; r++) {
        pids[r] = fork();
        if (pids[r] < 0)
            exit(2);
        if (pids[r] == 0) {
            char rs[16], ns[16], as[16], fs[16];
            snprintf(rs, sizeof(rs), "%d", r);
            snprintf(ns, sizeof(ns), "%d", NRANKS);
            snprintf(as, sizeof(as), "%d", a);
            snprintf(fs, sizeof(fs), "%d", p[1]);
            setenv("RANK", rs, 1);
            setenv("LOCAL_RANK", rs, 1);
            setenv("WORLD_SIZE", ns, 1);
            /* W_RESTART_COUNT_VAR: which launcher states the attempt
             * (Slurm's requeue count), or "none" (cutrace goodput groups
             * attempts by time) */
            const char *var = getenv("W_RESTART_COUNT_VAR");
            if (!var || !*var)
                var = "TORCHELASTIC_RESTART_COUNT";
            if (strcmp(var, "none"))
                setenv(var, as, 1);
            setenv("W_RESTART_FD", fs, 1);
            close(p[0]);
            execl(self, self, "rank", rs, ns, idhex, c, as, (char *)NULL);
            _exit(127);
        }
    }
    close(p[1]); /* a rank that dies before telling us gives EOF */
    *rfd = p[0];
}

/* Waits until `want` ranks told us; 0 when they did. */
static int await_ranks(int fd, int want)
{
    for (int got = 0; got < want;) {
        char c;
        ssize_t n = read(fd, &c, 1);
        if (n == 1)
            got++;
        else if (n == 0 || errno != EINTR)
            return -1;
    }
    return 0;
}

/* Signals the attempt's ranks and reaps them. The line is printed after
 * the signals went: printing first would delay them. */
static void end_attempt(int a, pid_t *pids, int sig)
{
    long long t = rt_ns();
    for (int r = 0; r < NRANKS; r++)
        kill(pids[r], sig);
    printf("KILL %d %lld\n", a, t);
    for (int r = 0; r < NRANKS; r++) {
        int st;
        waitpid(pids[r], &st, 0);
    }
}

/* `$W_CUTRACE CMD -o $W_TRACES PID` for every rank (CMD start or stop),
 * unrecorded itself; 0 when each exited 0. */
static int cutrace_all(const char *cmd, const pid_t *pids)
{
    const char *exe = getenv("W_CUTRACE"), *dir = getenv("W_TRACES");
    if (!exe || !dir)
        return -1;
    /* one call for every rank, as a launcher asks them all at once: their
     * windows open (and close) together */
    char pid[NRANKS][16];
    const char *args[NRANKS + 5] = {exe, cmd, "-o", dir};
    for (int r = 0; r < NRANKS; r++) {
        snprintf(pid[r], sizeof(pid[r]), "%d", (int)pids[r]);
        args[4 + r] = pid[r];
    }
    args[4 + NRANKS] = NULL;
    pid_t c = fork();
    if (c < 0)
        return -1;
    if (c == 0) {
        unsetenv("LD_PRELOAD");
        execv(exe, (char *const *)args);
        _exit(127);
    }
    int st;
    if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return -1;
    return 0;
}

/* Reaps the attempt's ranks: 0 when all exited 0. */
static int wait_attempt(pid_t *pids)
{
    int bad = 0;
    for (int r = 0; r < NRANKS; r++) {
        int st;
        waitpid(pids[r], &st, 0);
        bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
    return bad;
}

static int launch(const char *self, const char *c)
{
    if (strcmp(c, "restart") && strcmp(c, "hang") && strcmp(c, "clean") && strcmp(c, "paused"))
        return 2;
    char run_id[64];
    snprintf(run_id, sizeof(run_id), "goodput-%d", (int)getpid());
    /* The launcher is the job's first process and its last: one recorded
     * call (a mark) puts it in the traces, with the job's id. */
    setenv("TORCHELASTIC_RUN_ID", run_id, 1);
    cutrace_mark("launcher");
    pid_t pids[NRANKS];
    int fd, bad = 0;
    start_attempt(self, c, 0, pids, &fd);
    if (!strcmp(c, "restart")) {
        if (await_ranks(fd, NRANKS) != 0) {
            fprintf(stderr, "w_restart: attempt 0 ended before step 13\n");
            end_attempt(0, pids, SIGKILL);
            return 2;
        }
        close(fd);
        sleep_ms(10);
        end_attempt(0, pids, SIGKILL);
        sleep_ms(100); /* down time */
        start_attempt(self, c, 1, pids, &fd);
        bad = wait_attempt(pids);
    } else if (!strcmp(c, "hang")) {
        if (await_ranks(fd, 1) != 0) {
            fprintf(stderr, "w_restart: attempt 0 ended before its hang\n");
            end_attempt(0, pids, SIGKILL);
            return 2;
        }
        sleep_ms(2500);
        end_attempt(0, pids, SIGTERM);
    } else if (!strcmp(c, "paused")) {
        /* a window from after step 4 to after step 14 */
        if (await_ranks(fd, NRANKS) != 0 || cutrace_all("start", pids) != 0 ||
            await_ranks(fd, NRANKS) != 0 || cutrace_all("stop", pids) != 0) {
            fprintf(stderr, "w_restart: could not open and close the window\n");
            end_attempt(0, pids, SIGKILL);
            return 2;
        }
        bad = wait_attempt(pids);
    } else {
        bad = wait_attempt(pids);
    }
    close(fd);
    return bad;
}

int main(int argc, char **argv)
{
    long long t0 = rt_ns();
    setvbuf(stdout, NULL, _IOLBF, 0);
    int rc = 2;
    if (argc == 3 && !strcmp(argv[1], "launch")) {
        printf("JOB_START %lld\n", t0);
        rc = launch(argv[0], argv[2]);
        printf("JOB_END %lld\n", rt_ns());
        return rc;
    }
    if (argc == 7 && !strcmp(argv[1], "rank"))
        return rank_main(t0, atoi(argv[2]), atoi(argv[3]), argv[4], argv[5], atoi(argv[6]));
    fprintf(stderr, "usage: w_restart launch CASE | rank R N IDHEX CASE ATTEMPT\n");
    return rc;
}
