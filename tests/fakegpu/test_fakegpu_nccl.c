/*
 * test_fakegpu_nccl.c - the fake NCCL (libnccl.so.2) against its contract
 * (README.md, "Fake NCCL"): API and validation, rendezvous of ranks as
 * processes (2, 4, 8) and as threads, the timing rule of every collective,
 * late ranks, a slow link, send/recv pairing, group fusion and split; the
 * profiler plugin interface is in test_fakegpu_nccl_profiler.c.
 *
 * Tolerances.  FAKEGPU_NET_GBPS=1 (1e9 B/s) makes transfers a few ms.
 * Times read from events are virtual and exact when both ends are decided
 * by the rule alone (checked to 1 us, EXACT_MS).  Where another process's
 * host-side enqueue time enters (how late a peer arrived), the check is a
 * window: the planned lateness minus 10 ms and plus 40 ms, enough for a
 * loaded 2-CPU machine and far from the value a wrong rule would give.
 */
#include "test_fakegpu_nccl.h"

#include <check.h>
#include <cuda.h>
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Transfer times at 1 GB/s, in ms, of the ops used below. */
static double xfer_ms(double bytes, double factor)
{
    return bytes * factor / 1e6;
}

/* ------------------------------------------------------------- helpers */

static CUfunction kernel(const char *name)
{
    static CUmodule mod;
    CUfunction f;
    if (!mod && cuModuleLoadData(&mod, "x") != CUDA_SUCCESS)
        return NULL;
    if (cuModuleGetFunction(&f, mod, name) != CUDA_SUCCESS)
        return NULL;
    return f;
}

int tn_launch(const char *name, CUstream s)
{
    CUfunction f = kernel(name);
    return f ? (int)cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL) : -1;
}

CUevent tn_record(CUstream s)
{
    CUevent e = NULL;
    if (cuEventCreate(&e, 0) == CUDA_SUCCESS)
        cuEventRecord(e, s);
    return e;
}

double tn_elapsed(CUevent a, CUevent b)
{
    float ms = -1;
    cuEventSynchronize(b);
    cuEventSynchronize(a);
    if (cuEventElapsedTime(&ms, a, b) != CUDA_SUCCESS)
        return -1;
    return ms;
}

/* In one process the ranks' streams reach the collective a few us apart
 * (host enqueue order): how much later than rank r's the latest start is. */
double tn_wait_for_latest(CUevent *e0, int n, int r)
{
    double w = 0;
    for (int k = 0; k < n; k++) {
        double d = tn_elapsed(e0[r], e0[k]);
        w = d > w ? d : w;
    }
    return w;
}

CUstream tn_setup_device(int dev)
{
    CUcontext ctx;
    CUstream s = NULL;
    if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx) ||
        cuStreamCreate(&s, CU_STREAM_NON_BLOCKING))
        return NULL;
    return s;
}

/* Two simulated devices, each with a stream, and a communicator of two
 * ranks over them in this thread. */
void tn_two_ranks(CUstream s[2], ncclComm_t c[2])
{
    setenv("FAKEGPU_DEVICES", "2", 1);
    for (int r = 0; r < 2; r++)
        ck_assert_ptr_nonnull(s[r] = tn_setup_device(r));
    NC_OK(ncclCommInitAll(c, 2, NULL));
}

/* Checks inside rank processes and threads: report and fail the rank. */
#define RK(cond)                                                                                   \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "rank %d: %s:%d: %s\n", rank, __FILE__, __LINE__, #cond);              \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)
#define RK_NEAR(v, want, tol)                                                                      \
    do {                                                                                           \
        double v_ = (v), w_ = (want);                                                              \
        if (!(v_ >= w_ - (tol) && v_ <= w_ + (tol))) {                                             \
            fprintf(stderr, "rank %d: %s:%d: %s = %.6f, want %.6f +- %g\n", rank, __FILE__,        \
                    __LINE__, #v, v_, w_, (double)(tol));                                          \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)
/* What each rank (process or thread) queues first: a kernel long enough that every
 * rank has queued all of its timed work before the GPU reaches it, so the
 * exact timings below measure the simulated device, not the host. 20 ms
 * was not enough for 8 rank processes under ASan on 2 vCPUs (a host
 * descheduled past it queued its next collective late: 5.8 ms instead of
 * the 4 ms transfer, in about half the runs). */
#define HOST_SLACK "blocker__200000us"

#define RK_WITHIN(v, lo, hi)                                                                       \
    do {                                                                                           \
        double v_ = (v);                                                                           \
        if (!(v_ >= (lo) && v_ <= (hi))) {                                                         \
            fprintf(stderr, "rank %d: %s:%d: %s = %.3f not in [%g, %g]\n", rank, __FILE__,         \
                    __LINE__, #v, v_, (double)(lo), (double)(hi));                                 \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

typedef int (*rank_fn)(int rank, int nranks, const ncclUniqueId *id);

/* Run fn as nranks processes forked from this (CUDA-free) test process. */
static void run_rank_processes(int nranks, rank_fn fn)
{
    ncclUniqueId id;
    NC_OK(ncclGetUniqueId(&id));
    pid_t pids[16];
    for (int r = 0; r < nranks; r++) {
        pids[r] = fork();
        ck_assert_int_ge(pids[r], 0);
        if (pids[r] == 0)
            _exit(fn(r, nranks, &id));
    }
    int failed = 0;
    for (int r = 0; r < nranks; r++) {
        int st = 0;
        waitpid(pids[r], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "rank %d exited with status 0x%x\n", r, st);
            failed++;
        }
    }
    ck_assert_int_eq(failed, 0);
}

/* ---------------------------------------------------- API and validation */

START_TEST(api_reports_version_errors_and_rejects_bad_arguments)
{
    setenv("FAKEGPU_DEVICES", "2", 1);
    int v = 0;
    NC_OK(ncclGetVersion(&v));
    ck_assert_int_eq(v, NCCL_VERSION_CODE);
    ck_assert_str_eq(ncclGetErrorString(ncclSuccess), "no error");
    ck_assert_ptr_nonnull(strstr(ncclGetErrorString(ncclInvalidArgument), "invalid argument"));
    ncclComm_t c[2];
    NC_OK(ncclCommInitAll(c, 2, NULL));
    int n, r, d;
    NC_OK(ncclCommCount(c[1], &n));
    NC_OK(ncclCommUserRank(c[1], &r));
    NC_OK(ncclCommCuDevice(c[1], &d));
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(r, 1);
    ck_assert_int_eq(d, 1);
    ncclResult_t async = ncclInternalError;
    NC_OK(ncclCommGetAsyncError(c[0], &async));
    ck_assert_int_eq(async, ncclSuccess);
    char buf[64];
    ck_assert_int_eq(ncclAllReduce(buf, buf, 4, ncclNumTypes, ncclSum, c[0], NULL),
                     ncclInvalidArgument);
    ck_assert_int_eq(ncclAllReduce(buf, buf, 4, ncclFloat, ncclNumOps, c[0], NULL),
                     ncclInvalidArgument);
    ck_assert_int_eq(ncclAllReduce(buf, buf, 4, ncclFloat, ncclSum, NULL, NULL),
                     ncclInvalidArgument);
    ck_assert_int_eq(ncclAllReduce(buf, buf, 4, ncclFloat, ncclSum, (ncclComm_t)buf, NULL),
                     ncclInvalidArgument);
    ck_assert_int_eq(ncclAllReduce(NULL, buf, 4, ncclFloat, ncclSum, c[0], NULL),
                     ncclInvalidArgument);
    ck_assert_int_eq(ncclBroadcast(buf, buf, 4, ncclFloat, 2, c[0], NULL), ncclInvalidArgument);
    ck_assert_int_eq(ncclReduce(buf, buf, 4, ncclFloat, ncclSum, -1, c[0], NULL),
                     ncclInvalidArgument);
    ck_assert_int_eq(ncclSend(buf, 4, ncclFloat, 2, c[0], NULL), ncclInvalidArgument);
    ck_assert_int_eq(ncclRecv(NULL, 4, ncclFloat, 1, c[0], NULL), ncclInvalidArgument);
    ck_assert_int_eq(ncclGroupEnd(), ncclInvalidUsage);
    ck_assert_int_eq(ncclCommCount(NULL, &n), ncclInvalidArgument);
    ck_assert_int_eq(ncclCommInitRank(NULL, 2, (ncclUniqueId){{0}}, 0), ncclInvalidArgument);
    ncclComm_t bad;
    ck_assert_int_eq(ncclCommInitRank(&bad, 2, (ncclUniqueId){{0}}, 0), ncclInvalidArgument);
    ck_assert_int_eq(ncclCommInitRank(&bad, 2, (ncclUniqueId){{0}}, 5), ncclInvalidArgument);
    ck_assert_str_ne(ncclGetLastError(NULL), "");
    NC_OK(ncclCommFinalize(c[0]));
    NC_OK(ncclCommDestroy(c[0]));
    NC_OK(ncclCommAbort(c[1]));
    NC_OK(ncclCommDestroy(NULL));
}
END_TEST

START_TEST(init_rank_times_out_with_system_error)
{
    setenv("FAKEGPU_NCCL_TIMEOUT_S", "0.2", 1);
    ncclUniqueId id;
    NC_OK(ncclGetUniqueId(&id));
    ncclComm_t c = (ncclComm_t)&id;
    ck_assert_int_eq(ncclCommInitRank(&c, 2, id, 0), ncclSystemError);
    ck_assert_ptr_null(c);
    /* The rendezvous left nothing that blocks a later use of a new id. */
    NC_OK(ncclGetUniqueId(&id));
    NC_OK(ncclCommInitRank(&c, 1, id, 0));
    NC_OK(ncclCommDestroy(c));
}
END_TEST

/* ---------------------------------------- the rule, exactly, in-process */

/* Four ranks in one thread (ncclCommInitAll): every collective ends on
 * every rank at (latest start) + S x F / GBPS. */
START_TEST(collectives_end_at_latest_start_plus_transfer)
{
    setenv("FAKEGPU_DEVICES", "4", 1);
    setenv("FAKEGPU_NET_GBPS", "1", 1);
    enum { N = 4 };
    CUstream s[N];
    for (int r = 0; r < N; r++)
        ck_assert_ptr_nonnull(s[r] = tn_setup_device(r));
    ncclComm_t c[N];
    NC_OK(ncclCommInitAll(c, N, NULL));
    static char buf[16];
    const double q = MB / 4; /* per-rank count of the *-gather/scatter ops */
    struct {
        const char *what;
        double ms;
    } plan[] = {
        {"AllReduce", xfer_ms(4.0 * MB, 2.0 * (N - 1) / N)},
        {"AllGather", xfer_ms(4.0 * q * N, (N - 1.0) / N)},
        {"ReduceScatter", xfer_ms(4.0 * q * N, (N - 1.0) / N)},
        {"Broadcast", xfer_ms(4.0 * MB, 1)},
        {"Reduce", xfer_ms(4.0 * MB, 1)},
        {"AlltoAll", xfer_ms(4.0 * q * N, (N - 1.0) / N)},
        {"Gather", xfer_ms(4.0 * q * N, (N - 1.0) / N)},
        {"Scatter", xfer_ms(4.0 * q * N, (N - 1.0) / N)},
    };
    enum { NOPS = sizeof plan / sizeof plan[0] };
    CUevent ev[N][NOPS + 1];
    for (int r = 0; r < N; r++) {
        ck_assert_int_eq(tn_launch("blocker__50000us", s[r]), 0);
        char late[32];
        snprintf(late, sizeof late, "late__%dus", 1000 * r); /* rank 3 arrives last */
        ck_assert_int_eq(tn_launch(late, s[r]), 0);
        ev[r][0] = tn_record(s[r]);
        size_t q_ = (size_t)q;
        NC_OK(ncclAllReduce(buf, buf, MB, ncclFloat32, ncclSum, c[r], s[r]));
        ev[r][1] = tn_record(s[r]);
        NC_OK(ncclAllGather(buf, buf, q_, ncclFloat32, c[r], s[r]));
        ev[r][2] = tn_record(s[r]);
        NC_OK(ncclReduceScatter(buf, buf, q_, ncclFloat32, ncclMax, c[r], s[r]));
        ev[r][3] = tn_record(s[r]);
        NC_OK(ncclBroadcast(buf, buf, MB, ncclFloat32, 0, c[r], s[r]));
        ev[r][4] = tn_record(s[r]);
        NC_OK(ncclReduce(buf, buf, MB, ncclFloat32, ncclProd, 1, c[r], s[r]));
        ev[r][5] = tn_record(s[r]);
        NC_OK(ncclAlltoAll(buf, buf, q_, ncclFloat32, c[r], s[r]));
        ev[r][6] = tn_record(s[r]);
        NC_OK(ncclGather(buf, buf, q_, ncclFloat32, 2, c[r], s[r]));
        ev[r][7] = tn_record(s[r]);
        NC_OK(ncclScatter(buf, buf, q_, ncclFloat32, 3, c[r], s[r]));
        ev[r][8] = tn_record(s[r]);
    }
    /* First op: the last rank to start sees only the transfer; the others
     * also wait for it; every rank ends at the same instant. */
    ck_assert_double_eq_tol(tn_elapsed(ev[3][0], ev[3][1]), plan[0].ms, EXACT_MS);
    for (int r = 0; r < N; r++) {
        ck_assert_double_eq_tol(tn_elapsed(ev[r][1], ev[3][1]), 0, EXACT_MS);
        ck_assert_double_eq_tol(tn_elapsed(ev[r][0], ev[r][1]),
                                tn_elapsed(ev[r][0], ev[3][0]) + plan[0].ms, EXACT_MS);
    }
    for (int k = 1; k < NOPS; k++)
        for (int r = 0; r < N; r++)
            ck_assert_msg(tn_elapsed(ev[r][k], ev[r][k + 1]) - plan[k].ms < EXACT_MS &&
                              plan[k].ms - tn_elapsed(ev[r][k], ev[r][k + 1]) < EXACT_MS,
                          "%s on rank %d took %.6f ms, want %.6f", plan[k].what, r,
                          tn_elapsed(ev[r][k], ev[r][k + 1]), plan[k].ms);
    for (int r = 0; r < N; r++)
        NC_OK(ncclCommDestroy(c[r]));
}
END_TEST

/* Ops of one stream in a group are one kernel, which ends with its
 * longest member; ops of two streams are two kernels. */
START_TEST(group_fuses_ops_per_stream_and_ends_with_last_member)
{
    setenv("FAKEGPU_NET_GBPS", "1", 1);
    CUstream s[2];
    ncclComm_t c[2];
    tn_two_ranks(s, c);
    static char buf[16];
    CUevent e0[2], e1[2];
    for (int r = 0; r < 2; r++) {
        ck_assert_int_eq(tn_launch("blocker__50000us", s[r]), 0);
        e0[r] = tn_record(s[r]);
    }
    NC_OK(ncclGroupStart());
    for (int r = 0; r < 2; r++) {
        NC_OK(ncclAllReduce(buf, buf, MB, ncclFloat32, ncclSum, c[r], s[r])); /* 4 ms */
        NC_OK(ncclAllGather(buf, buf, MB, ncclFloat32, c[r], s[r]));          /* 4 ms */
        NC_OK(ncclBroadcast(buf, buf, 2 * MB, ncclFloat32, 0, c[r], s[r]));   /* 8 ms */
    }
    NC_OK(ncclGroupEnd());
    for (int r = 0; r < 2; r++)
        e1[r] = tn_record(s[r]);
    /* Members run together: max(4, 4, 8) = 8 ms, not the sum. */
    for (int r = 0; r < 2; r++)
        ck_assert_double_eq_tol(tn_elapsed(e0[r], e1[r]),
                                tn_wait_for_latest(e0, 2, r) + xfer_ms(8.0 * MB, 1), EXACT_MS);
    for (int r = 0; r < 2; r++)
        NC_OK(ncclCommDestroy(c[r]));
}
END_TEST

/* -------------------------------------------------------------- threads */

static ncclUniqueId thread_id;
static int thread_fail[4];

static int thread_rank_body(int rank)
{
    CUstream s = tn_setup_device(rank);
    RK(s);
    ncclComm_t c;
    RK(ncclCommInitRank(&c, 4, thread_id, rank) == ncclSuccess);
    static char buf[16];
    RK(tn_launch(HOST_SLACK, s) == 0);
    if (rank == 2)
        RK(tn_launch("late__20000us", s) == 0);
    CUevent e0 = tn_record(s);
    RK(ncclAllReduce(buf, buf, MB, ncclFloat32, ncclSum, c, s) == ncclSuccess);
    CUevent e1 = tn_record(s);
    RK(ncclAllReduce(buf, buf, MB, ncclFloat32, ncclSum, c, s) == ncclSuccess);
    CUevent e2 = tn_record(s);
    double t = xfer_ms(4.0 * MB, 2.0 * 3 / 4);
    if (rank == 2)
        RK_NEAR(tn_elapsed(e0, e1), t, EXACT_MS);
    else
        RK_WITHIN(tn_elapsed(e0, e1), 20 + t - 10, 20 + t + 40);
    RK_NEAR(tn_elapsed(e1, e2), t, EXACT_MS); /* everyone starts together now */
    RK(ncclCommDestroy(c) == ncclSuccess);
    return 0;
}

static void *thread_rank(void *arg)
{
    int r = (int)(intptr_t)arg;
    thread_fail[r] = thread_rank_body(r);
    return NULL;
}

START_TEST(ranks_as_threads_of_one_process)
{
    setenv("FAKEGPU_DEVICES", "4", 1);
    setenv("FAKEGPU_NET_GBPS", "1", 1);
    NC_OK(ncclGetUniqueId(&thread_id));
    pthread_t t[4];
    for (int r = 0; r < 4; r++)
        ck_assert_int_eq(pthread_create(&t[r], NULL, thread_rank, (void *)(intptr_t)r), 0);
    for (int r = 0; r < 4; r++)
        pthread_join(t[r], NULL);
    for (int r = 0; r < 4; r++)
        ck_assert_int_eq(thread_fail[r], 0);
}
END_TEST

/* ------------------------------------------------------------ processes */

/* The last rank is 30 ms late: its AllReduce lasts exactly the transfer,
 * the others' 30 ms more; the next AllReduce starts together everywhere. */
static int late_rank(int rank, int nranks, const ncclUniqueId *id)
{
    CUstream s = tn_setup_device(0);
    RK(s);
    ncclComm_t c;
    RK(ncclCommInitRank(&c, nranks, *id, rank) == ncclSuccess);
    int n = 0;
    RK(ncclCommCount(c, &n) == ncclSuccess && n == nranks);
    static char buf[16];
    RK(tn_launch(HOST_SLACK, s) == 0);
    if (rank == nranks - 1)
        RK(tn_launch("late__30000us", s) == 0);
    CUevent e0 = tn_record(s);
    RK(ncclAllReduce(buf, buf, MB, ncclFloat32, ncclSum, c, s) == ncclSuccess);
    CUevent e1 = tn_record(s);
    RK(ncclAllReduce(buf, buf, MB / 2, ncclBfloat16, ncclSum, c, s) == ncclSuccess);
    CUevent e2 = tn_record(s);
    double t1 = xfer_ms(4.0 * MB, 2.0 * (nranks - 1) / nranks);
    double t2 = xfer_ms(1.0 * MB, 2.0 * (nranks - 1) / nranks);
    /* The others wait for the late rank: 30 ms, less how much later than
     * the late rank they themselves left the init barrier and queued their
     * blocker (processes start apart: up to 9.4 ms measured with 8 rank
     * processes under ASan on 2 vCPUs; 20 ms allowed). */
    if (rank == nranks - 1)
        RK_NEAR(tn_elapsed(e0, e1), t1, EXACT_MS);
    else
        RK_WITHIN(tn_elapsed(e0, e1), 30 + t1 - 20, 30 + t1 + 40);
    RK_NEAR(tn_elapsed(e1, e2), t2, EXACT_MS);
    RK(ncclCommDestroy(c) == ncclSuccess);
    return 0;
}

START_TEST(two_rank_processes_late_rank_makes_others_long)
{
    setenv("FAKEGPU_NET_GBPS", "1", 1);
    run_rank_processes(2, late_rank);
}
END_TEST

START_TEST(four_rank_processes_late_rank_makes_others_long)
{
    setenv("FAKEGPU_NET_GBPS", "1", 1);
    run_rank_processes(4, late_rank);
}
END_TEST

START_TEST(eight_rank_processes_late_rank_makes_others_long)
{
    setenv("FAKEGPU_NET_GBPS", "1", 1);
    run_rank_processes(8, late_rank);
}
END_TEST

/* Rank 1 sets a 0.25 GB/s link: every rank's collective uses it. */
static int slow_link(int rank, int nranks, const ncclUniqueId *id)
{
    if (rank == 1)
        setenv("FAKEGPU_NET_GBPS", "0.25", 1);
    CUstream s = tn_setup_device(0);
    RK(s);
    ncclComm_t c;
    RK(ncclCommInitRank(&c, nranks, *id, rank) == ncclSuccess);
    static char buf[16];
    RK(ncclAllGather(buf, buf, MB / 4, ncclFloat32, c, s) == ncclSuccess); /* aligns the ranks */
    CUevent e0 = tn_record(s);
    RK(ncclAllGather(buf, buf, MB / 4, ncclFloat32, c, s) == ncclSuccess);
    CUevent e1 = tn_record(s);
    RK_NEAR(tn_elapsed(e0, e1), xfer_ms(1.0 * MB * nranks, (nranks - 1.0) / nranks) * 4, EXACT_MS);
    RK(ncclCommDestroy(c) == ncclSuccess);
    return 0;
}

START_TEST(slow_link_on_one_rank_slows_every_rank)
{
    setenv("FAKEGPU_NET_GBPS", "1", 1);
    run_rank_processes(3, slow_link);
}
END_TEST

/* The k-th Send of 0 to 1 pairs with the k-th Recv of 1 from 0; a pair
 * ends at max(both starts) + bytes / GBPS. */
static int send_recv(int rank, int nranks, const ncclUniqueId *id)
{
    (void)nranks;
    CUstream s = tn_setup_device(0);
    RK(s);
    ncclComm_t c;
    RK(ncclCommInitRank(&c, 2, *id, rank) == ncclSuccess);
    static char buf[16];
    RK(tn_launch(HOST_SLACK, s) == 0);
    if (rank == 1)
        RK(tn_launch("late__25000us", s) == 0);
    CUevent e0 = tn_record(s);
    if (rank == 0)
        RK(ncclSend(buf, MB, ncclFloat32, 1, c, s) == ncclSuccess); /* 4 ms */
    else
        RK(ncclRecv(buf, MB, ncclFloat32, 0, c, s) == ncclSuccess);
    CUevent e1 = tn_record(s);
    if (rank == 0)
        RK(ncclSend(buf, MB / 2, ncclFloat32, 1, c, s) == ncclSuccess); /* 2 ms */
    else
        RK(ncclRecv(buf, MB / 2, ncclFloat32, 0, c, s) == ncclSuccess);
    CUevent e2 = tn_record(s);
    /* An exchange in one group (one kernel per rank), queued right behind:
     * it starts at the same instant on both ranks. */
    RK(ncclGroupStart() == ncclSuccess);
    RK(ncclSend(buf, MB, ncclFloat32, 1 - rank, c, s) == ncclSuccess);
    RK(ncclRecv(buf, MB, ncclFloat32, 1 - rank, c, s) == ncclSuccess);
    RK(ncclGroupEnd() == ncclSuccess);
    CUevent e3 = tn_record(s);
    if (rank == 1)
        RK_NEAR(tn_elapsed(e0, e1), 4, EXACT_MS);
    else
        RK_WITHIN(tn_elapsed(e0, e1), 25 + 4 - 10, 25 + 4 + 40);
    RK_NEAR(tn_elapsed(e1, e2), 2, EXACT_MS);
    RK_NEAR(tn_elapsed(e2, e3), 4, EXACT_MS);
    RK(ncclCommDestroy(c) == ncclSuccess);
    return 0;
}

START_TEST(send_recv_pair_by_peer_and_order)
{
    setenv("FAKEGPU_NET_GBPS", "1", 1);
    run_rank_processes(2, send_recv);
}
END_TEST

/* Colors r % 2, keys -r: two comms of 2, ranked by (key, old rank); then
 * rank 3 opts out with NCCL_SPLIT_NOCOLOR. */
static int split(int rank, int nranks, const ncclUniqueId *id)
{
    CUstream s = tn_setup_device(0);
    RK(s);
    ncclComm_t c, sub, sub2;
    RK(ncclCommInitRank(&c, nranks, *id, rank) == ncclSuccess);
    RK(ncclCommSplit(c, rank % 2, -rank, &sub, NULL) == ncclSuccess);
    int n = 0, me = -1;
    RK(ncclCommCount(sub, &n) == ncclSuccess && n == 2);
    RK(ncclCommUserRank(sub, &me) == ncclSuccess);
    RK(me == (rank < 2 ? 1 : 0));
    static char buf[16];
    RK(tn_launch(HOST_SLACK, s) == 0); /* every rank queues both before the first runs */
    RK(ncclAllReduce(buf, buf, MB, ncclFloat32, ncclSum, sub, s) == ncclSuccess);
    CUevent e0 = tn_record(s);
    RK(ncclAllReduce(buf, buf, MB, ncclFloat32, ncclSum, sub, s) == ncclSuccess);
    CUevent e1 = tn_record(s);
    RK_NEAR(tn_elapsed(e0, e1), xfer_ms(4.0 * MB, 1), EXACT_MS); /* n = 2: F = 1 */
    RK(ncclCommSplit(c, rank == 3 ? NCCL_SPLIT_NOCOLOR : 7, 0, &sub2, NULL) == ncclSuccess);
    if (rank == 3) {
        RK(sub2 == NULL);
    } else {
        RK(ncclCommCount(sub2, &n) == ncclSuccess && n == 3);
        RK(ncclCommUserRank(sub2, &me) == ncclSuccess && me == rank);
        RK(ncclCommDestroy(sub2) == ncclSuccess);
    }
    RK(ncclCommDestroy(sub) == ncclSuccess);
    RK(ncclCommDestroy(c) == ncclSuccess);
    return 0;
}

START_TEST(split_orders_by_key_then_rank)
{
    setenv("FAKEGPU_NET_GBPS", "1", 1);
    run_rank_processes(4, split);
}
END_TEST

int main(void)
{
    static const char *const vars[] = {"FAKEGPU_DEVICES",
                                       "FAKEGPU_KERNEL_SCALE",
                                       "FAKEGPU_NET_GBPS",
                                       "FAKEGPU_NCCL_TIMEOUT_S",
                                       "FAKEGPU_NCCL_PROFILER_VERSION",
                                       "FAKEGPU_NCCL_NCHANNELS",
                                       "NCCL_PROFILER_PLUGIN",
                                       "NCCL_DEBUG",
                                       "FGTP_MASK",
                                       "FAKEGPU_NCCL_ALGOS",
                                       "FAKEGPU_NCCL_RANKS_PER_NODE",
                                       "FAKEGPU_NCCL_NVLS_GBPS",
                                       "FAKEGPU_NCCL_NVLS_LAT_US",
                                       "FAKEGPU_NCCL_LINK_LAT_US"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    Suite *su = suite_create("fakegpu-nccl");
    TCase *api = tcase_create("api");
    tcase_set_timeout(api, 30);
    tcase_add_test(api, api_reports_version_errors_and_rejects_bad_arguments);
    tcase_add_test(api, init_rank_times_out_with_system_error);
    suite_add_tcase(su, api);
    TCase *timing = tcase_create("timing");
    tcase_set_timeout(timing, 60);
    tcase_add_test(timing, collectives_end_at_latest_start_plus_transfer);
    tcase_add_test(timing, group_fuses_ops_per_stream_and_ends_with_last_member);
    tcase_add_test(timing, ranks_as_threads_of_one_process);
    tcase_add_test(timing, two_rank_processes_late_rank_makes_others_long);
    tcase_add_test(timing, four_rank_processes_late_rank_makes_others_long);
    tcase_add_test(timing, eight_rank_processes_late_rank_makes_others_long);
    tcase_add_test(timing, slow_link_on_one_rank_slows_every_rank);
    tcase_add_test(timing, send_recv_pair_by_peer_and_order);
    tcase_add_test(timing, split_orders_by_key_then_rank);
    suite_add_tcase(su, timing);
    suite_add_tcase(su, tn_plugin_tcase());
    suite_add_tcase(su, tn_algos_tcase());
    SRunner *sr = srunner_create(su);
    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
