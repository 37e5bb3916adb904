/*
 * Suite "extract": the reader of cutrace traces (ct_proc_extract_file)
 * against what the trace's schedule says, on traces whose records are out
 * of time order: several recording threads, GPU records written in
 * shuffled order by another thread than their launches, equal start
 * times, NCCL ops timed by a GPU record, by their own interval or not at
 * all. The GPU intervals must come out in start order whatever the file's
 * order (equal starts: file order), each with its record's times.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decoder/read/summary.h"
#include "decoder/read/timeline.h"
#include "tests/unit/helpers.h"
#include "decoder/read/extract.h"

#define NLAUNCH 3000
#define NNCCL   200
#define T0      1000000000ull

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(uint64_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng % n;
}

static void emit(unsigned kind, const uint64_t *f, unsigned n)
{
    while (ct_emit(kind, CT_RF_NS, f, n) != 0)
        usleep(100);
}

/* Launch i has correlation id i + 1 and starts at T0 + 1000 i; NCCL op k
 * has id NLAUNCH + 1 + k. */
static void *launcher(void *arg)
{
    (void)arg;
    uint32_t launch = ct_intern("cuLaunchKernel"), copy = ct_intern("cuMemcpyDtoH_v2"),
             sync = ct_intern("cuStreamSynchronize"), step = ct_intern("ProfilerStep#1"),
             step2 = ct_intern("ProfilerStep#2"), other = ct_intern("forward");
    for (uint64_t i = 0; i < NLAUNCH; i++) {
        uint64_t a[CT_API_NFIELDS] = {0};
        a[CT_API_START] = T0 + 1000 * i;
        a[CT_API_END] = a[CT_API_START] + 400;
        a[CT_API_CORR] = i + 1;
        a[CT_API_FAMILY] = i % 10 == 3 ? CT_FAM_MEMCPY : i % 50 == 7 ? CT_FAM_SYNC : CT_FAM_LAUNCH;
        a[CT_API_NAME] = a[CT_API_FAMILY] == CT_FAM_MEMCPY ? copy
                         : a[CT_API_FAMILY] == CT_FAM_SYNC ? sync
                                                           : launch;
        a[CT_API_COPY_KIND] = CT_COPY_DTOH;
        a[CT_API_BYTES] = i % 20 == 3 ? 32ull << 20 : 4096;
        a[CT_API_FLAGS] = i % 97 == 5 ? CT_APIF_CAPTURED : 0;
        emit(CT_REC_API, a, CT_API_NFIELDS);
        if (i % 500 == 42) { /* an allocation that blocked: a blocking call */
            uint64_t b[CT_API_NFIELDS] = {0};
            b[CT_API_START] = a[CT_API_START] + 500;
            b[CT_API_END] = b[CT_API_START] + 150000;
            b[CT_API_CORR] = 0;
            b[CT_API_FAMILY] = CT_FAM_ALLOC;
            b[CT_API_NAME] = ct_intern("cuMemAlloc_v2");
            emit(CT_REC_API, b, CT_API_NFIELDS);
        }
        if (i % 300 == 0) {
            uint64_t r[CT_NVTX_NFIELDS] = {0};
            r[CT_NVTX_START] = a[CT_API_START];
            r[CT_NVTX_END] = a[CT_API_START] + 250000;
            r[CT_NVTX_MESSAGE] = i % 600 ? other : i ? step2 : step;
            emit(CT_REC_NVTX_RANGE, r, CT_NVTX_NFIELDS);
        }
        if (i % 15 == 0 && i / 15 < NNCCL) {
            uint64_t k = i / 15, n[CT_NCCL_NFIELDS] = {0};
            n[CT_NCCL_START] = a[CT_API_START] + 450;
            n[CT_NCCL_END] = n[CT_NCCL_START] + 300;
            n[CT_NCCL_OP] = k % 3 == 0 ? CT_NCCL_OP_SEND : CT_NCCL_OP_ALLREDUCE;
            n[CT_NCCL_COMM] = 0xabc;
            n[CT_NCCL_SEQ] = k;
            n[CT_NCCL_BYTES] = 1 << 20;
            n[CT_NCCL_PEER] = 1;
            n[CT_NCCL_STREAM] = 9;
            n[CT_NCCL_CORR] = NLAUNCH + 1 + k;
            n[CT_NCCL_NRANKS] = 2;
            if (k % 4 != 3) { /* own interval; k % 4 == 1 also gets a GPU record */
                n[CT_NCCL_GPU_START] = n[CT_NCCL_START] + 5000;
                n[CT_NCCL_GPU_END] = n[CT_NCCL_GPU_START] + 7000;
            }
            emit(CT_REC_NCCL, n, CT_NCCL_NFIELDS);
        }
        if (i % 500 == 499)
            usleep(2000); /* let the writer cut chunks */
    }
    return NULL;
}

/* GPU records of every launch and some NCCL ops, in shuffled order. */
static void *activity(void *arg)
{
    (void)arg;
    static uint64_t order[NLAUNCH + NNCCL];
    size_t n = 0;
    for (uint64_t i = 0; i < NLAUNCH; i++)
        order[n++] = i + 1;
    for (uint64_t k = 0; k < NNCCL; k++)
        if (k % 4 == 1 || k % 4 == 2)
            order[n++] = NLAUNCH + 1 + k;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = rnd(i + 1);
        uint64_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    const char *names[] = {"_Z4gemmILi128EEvPf", "ncclDevKernel_AllReduce_Sum_f32", "relu",
                           "ncclKernel_SendRecv", "layernorm"};
    for (size_t i = 0; i < n; i++) {
        uint64_t c = order[i], g[CT_GPU_NFIELDS] = {0};
        g[CT_GPU_CORR] = c;
        g[CT_GPU_SOURCE] = c % 3 ? CT_SRC_CUPTI : CT_SRC_EVENTS;
        if (c > NLAUNCH) {
            uint64_t k = c - NLAUNCH - 1;
            g[CT_GPU_START] = T0 + 15000 * k + 6000;
            g[CT_GPU_END] = g[CT_GPU_START] + 6000;
            g[CT_GPU_TYPE] = CT_GPU_NCCL;
            g[CT_GPU_SOURCE] = CT_SRC_NCCL_PLUGIN;
            g[CT_GPU_NAME] = ct_intern("AllReduce");
        } else {
            /* pairs of launches share a start time: ties keep file order */
            g[CT_GPU_START] = T0 + 2000 + 1000 * ((c - 1) & ~1ull);
            g[CT_GPU_END] = g[CT_GPU_START] + (c % 7 == 0 ? 0 : 700 + c % 5);
            g[CT_GPU_TYPE] = (c - 1) % 10 == 3 ? CT_GPU_MEMCPY
                             : c % 50 == 8     ? CT_GPU_SYNC
                                               : CT_GPU_KERNEL;
            g[CT_GPU_NAME] = ct_intern(names[c % 5]);
            g[CT_GPU_STREAM] = 7 + c % 2;
        }
        if (c % 211 == 0)
            g[CT_GPU_CORR] = 0; /* unattributed */
        if (c % 13 == 0 && c <= NLAUNCH)
            continue; /* an untimed launch */
        emit(CT_REC_GPU, g, CT_GPU_NFIELDS);
        if (i % 400 == 399)
            usleep(2000);
    }
    return NULL;
}

static void *io(void *arg)
{
    (void)arg;
    const char *ops[] = {"pread64", "write", "fsync", "poll", "read"};
    for (uint64_t i = 0; i < 300; i++) {
        uint64_t f[CT_IO_NFIELDS] = {0};
        f[CT_IO_START] = T0 + 10000 * i + 3;
        f[CT_IO_END] = f[CT_IO_START] + 2500;
        f[CT_IO_OP] = ct_intern(ops[i % 5]);
        f[CT_IO_FD_TYPE] = i % 3 ? CT_FD_FILE : CT_FD_SOCKET;
        emit(CT_REC_IO, f, CT_IO_NFIELDS);
        if (i % 60 == 7) { /* a thread that launches nothing: not a blocking call of the GPU's */
            uint64_t b[CT_API_NFIELDS] = {0};
            b[CT_API_START] = f[CT_IO_START] + 7;
            b[CT_API_END] = b[CT_API_START] + 200000;
            b[CT_API_FAMILY] = CT_FAM_ALLOC;
            b[CT_API_NAME] = ct_intern("cuMemHostAlloc");
            emit(CT_REC_API, b, CT_API_NFIELDS);
        }
        if (i % 50 == 0) {
            uint64_t m[CT_MARK_NFIELDS] = {0};
            m[CT_MARK_TIME] = f[CT_IO_START];
            m[CT_MARK_MESSAGE] = ct_intern("ProfilerStep#9");
            emit(CT_REC_NVTX_MARK, m, CT_MARK_NFIELDS);
        }
        if (i % 100 == 99)
            usleep(2000);
        if (i % 120 == 0) { /* capture windows: start, stop, ... the last left open */
            uint64_t c[CT_META_NFIELDS] = {f[CT_IO_START], CT_SCOPE_RECORDER, 0,
                                           ct_intern("capture"),
                                           ct_intern(i % 240 ? "stop" : "start")};
            emit(CT_REC_META, c, CT_META_NFIELDS);
        }
    }
    uint64_t m[CT_META_NFIELDS] = {0, CT_SCOPE_PROCESS, 0, ct_intern("mode"), ct_intern("light")};
    emit(CT_REC_META, m, CT_META_NFIELDS);
    uint64_t w[CT_META_NFIELDS] = {0, CT_SCOPE_PROCESS, 0, ct_intern("light_window_ms"),
                                   ct_intern("200")};
    emit(CT_REC_META, w, CT_META_NFIELDS);
    return NULL;
}

static void write_trace(const char *path)
{
    ck_assert_int_eq(th_start(path, 1 << 16, 1), 0);
    pthread_t th[3];
    void *(*fn[3])(void *) = {launcher, activity, io};
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, fn[i], NULL), 0);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
}

/* What the schedule above implies, counted from the generators' rules
 * (not from any extraction): a GPU record makes an op unless it is a
 * sync record or has no length; an NCCL op with its own interval and no
 * GPU record of its correlation id makes one from that interval; launch,
 * copy and memset calls and NCCL calls are launches; a launch or copy
 * with no GPU record of its id (not emitted, or emitted with id 0) and
 * not under capture is untimed; a synchronous copy or a synchronize is a
 * host sync (disjoint here: one per call). */
struct want {
    size_t nops, nlaunches, untimed, nccl_own, syncs;
};

static struct want schedule(void)
{
    struct want w = {0};
    for (uint64_t i = 0; i < NLAUNCH; i++) {
        uint64_t c = i + 1;
        int sync_call = i % 50 == 7, copy = i % 10 == 3;
        int emitted = c % 13 != 0, attributed = c % 211 != 0;
        int sync_rec = c % 50 == 8, empty = c % 7 == 0;
        w.nops += emitted && !sync_rec && !empty;
        w.nlaunches += !sync_call;
        w.untimed += !sync_call && (!emitted || !attributed) && i % 97 != 5;
        w.syncs += sync_call || copy;
    }
    for (uint64_t k = 0; k < NNCCL; k++) {
        uint64_t c = NLAUNCH + 1 + k;
        int gpu_rec = k % 4 == 1 || k % 4 == 2, own = k % 4 != 3;
        w.nops += gpu_rec; /* 6 us each, never empty */
        if (own && !(gpu_rec && c % 211 != 0)) {
            w.nops++;
            w.nccl_own++;
        }
        w.nlaunches++;
    }
    return w;
}

/* One expected op: its order key (a GPU record's start, an NCCL record's
 * host start for an op made from it), file order, and its times. */
struct xop {
    int64_t key, s, e;
    size_t at;
    uint32_t stream;
    uint8_t type;
    const char *name; /* NULL: made from an NCCL record */
};

static int cmp_xop(const void *a, const void *b)
{
    const struct xop *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->at > y->at) - (x->at < y->at);
}

/* The ops the records of the file imply, in the order the report needs
 * (start order, file order for equal starts), raw times; a GPU record of
 * an NCCL call that names no stream (the profiler plugin's) runs on its
 * call's. */
static struct xop *expected_ops(const struct th_trace *raw, size_t *n)
{
    struct xop *v = calloc(raw->n + 1, sizeof(*v));
    ck_assert_ptr_nonnull(v);
    size_t k = 0;
    for (size_t i = 0; i < raw->n; i++) {
        const struct ct_record *r = &raw->recs[i];
        const uint64_t *f = r->f;
        if (r->kind != CT_REC_GPU || f[CT_GPU_TYPE] == CT_GPU_SYNC ||
            f[CT_GPU_END] <= f[CT_GPU_START])
            continue;
        uint32_t stream = (uint32_t)f[CT_GPU_STREAM];
        for (size_t j = 0; j < raw->n && !stream && f[CT_GPU_CORR]; j++)
            if (raw->recs[j].kind == CT_REC_NCCL && raw->recs[j].f[CT_NCCL_CORR] == f[CT_GPU_CORR])
                stream = (uint32_t)raw->recs[j].f[CT_NCCL_STREAM]; /* the plugin's: its op's */
        v[k++] = (struct xop){(int64_t)f[CT_GPU_START],
                              (int64_t)f[CT_GPU_START],
                              (int64_t)f[CT_GPU_END],
                              i,
                              stream,
                              (uint8_t)f[CT_GPU_TYPE],
                              ct_reader_string((struct ct_reader *)&raw->rd, f[CT_GPU_NAME])};
    }
    for (size_t i = 0; i < raw->n; i++) {
        const struct ct_record *r = &raw->recs[i];
        const uint64_t *f = r->f;
        if (r->kind != CT_REC_NCCL || !f[CT_NCCL_GPU_START])
            continue;
        int timed = 0; /* a GPU record of its id */
        for (size_t j = 0; j < raw->n && !timed; j++)
            timed =
                raw->recs[j].kind == CT_REC_GPU && raw->recs[j].f[CT_GPU_CORR] == f[CT_NCCL_CORR];
        if (!timed)
            v[k++] = (struct xop){(int64_t)f[CT_NCCL_START],
                                  (int64_t)f[CT_NCCL_GPU_START],
                                  (int64_t)f[CT_NCCL_GPU_END],
                                  i,
                                  (uint32_t)f[CT_NCCL_STREAM],
                                  CT_GPU_NCCL,
                                  NULL};
    }
    qsort(v, k, sizeof(*v), cmp_xop);
    *n = k;
    return v;
}

START_TEST(extraction_follows_the_schedule_on_a_shuffled_trace)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "shuffled.cutrace");
    write_trace(path);
    struct th_trace raw;
    th_trace_read_file(&raw, path);
    int unsorted = 0; /* the file really is out of time order */
    for (size_t i = 1; i < raw.n; i++)
        unsorted |= raw.recs[i].f[0] < raw.recs[i - 1].f[0];
    ck_assert(unsorted);

    struct ct_proc got;
    char err[512];
    ck_assert_msg(ct_proc_extract_file(path, NULL, &got, err, sizeof(err)) == 0, "%s", err);
    const int64_t off = got.clock_offset;
    struct want w = schedule();
    ck_assert_uint_eq(got.nops, w.nops);
    ck_assert_uint_eq(got.nnccl, NNCCL);
    ck_assert_uint_eq(got.nlaunches, w.nlaunches);
    ck_assert_uint_eq(got.cov.untimed, w.untimed);
    ck_assert_uint_eq(got.cov.gpu_nccl_record, w.nccl_own);
    ck_assert_uint_eq(got.sync.n, w.syncs);
    ck_assert_uint_eq(got.cuda_call.n, NLAUNCH / 500); /* the launcher's, not the I/O thread's */

    size_t nx;
    struct xop *x = expected_ops(&raw, &nx);
    ck_assert_uint_eq(nx, got.nops);
    for (size_t i = 0; i < nx; i++) {
        const struct ct_gpu_op *g = &got.ops[i];
        ck_assert_msg(g->s == x[i].s + off && g->e == x[i].e + off && g->stream == x[i].stream &&
                          g->type == x[i].type,
                      "op %zu: [%lld, %lld) stream %u type %u, want [%lld, %lld) stream %u type %u",
                      i, (long long)(g->s - off), (long long)(g->e - off), g->stream, g->type,
                      (long long)x[i].s, (long long)x[i].e, x[i].stream, x[i].type);
        if (x[i].name)
            ck_assert_str_eq(got.names[g->name], x[i].name);
        else /* linked to the NCCL op it was made from */
            ck_assert(g->nccl >= 0 && got.nccl[g->nccl].host_s == x[i].key + off);
    }
    free(x);
    /* launches: every launch, copy, memset and NCCL call's start, sorted */
    for (size_t i = 1; i < got.nlaunches; i++)
        ck_assert_int_le(got.launches[i - 1], got.launches[i]);
    /* steps: 5 "ProfilerStep#1"/"#2" ranges and 6 "ProfilerStep#9" marks */
    ck_assert_uint_eq(got.nsteps, 11);
    for (size_t i = 1; i < got.nsteps; i++)
        ck_assert_int_le(got.steps[i - 1].s, got.steps[i].s);
    ck_assert_uint_gt(got.capture.n, 1); /* windows, the last one open to the end */
    ck_assert_int_eq(got.capture.v[got.capture.n - 1].e, CT_OPEN_END);
    ck_assert(got.windowed && got.light && got.light_window_ms == 200);
    ct_proc_free(&got);
    /* another step name: the marks only, at their times */
    ck_assert_int_eq(ct_proc_extract_file(path, "ProfilerStep#9", &got, err, sizeof(err)), 0);
    ck_assert_uint_eq(got.nsteps, 6);
    for (size_t i = 0; i < got.nsteps; i++) {
        ck_assert_int_eq(got.steps[i].s, got.steps[i].e);
        ck_assert_int_eq(got.steps[i].s, (int64_t)(T0 + 10000 * 50 * i + 3) + off);
        ck_assert_int_eq(got.steps[i].num, 9);
    }
    ct_proc_free(&got);
    th_trace_free(&raw);
}
END_TEST

/* Graph node records name the GPU record just before them on their thread
 * (at its start); another thread's record between them, or a node record
 * whose time is not the op's start, names nothing. Edge records parse into
 * gedges sorted by (to, from); text that does not parse ends its list. */
START_TEST(graph_node_and_edge_records_reach_the_ops)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "graph.cutrace");
    ck_assert_int_eq(th_start(path, 1 << 16, 1), 0);
    uint32_t node = ct_intern("node"), edges = ct_intern("edges");
    for (uint64_t i = 0; i < 4; i++) {
        uint64_t g[CT_GPU_NFIELDS] = {0};
        g[CT_GPU_START] = T0 + 1000 * i;
        g[CT_GPU_END] = g[CT_GPU_START] + 500;
        g[CT_GPU_TYPE] = CT_GPU_KERNEL;
        g[CT_GPU_STREAM] = 7;
        g[CT_GPU_SOURCE] = CT_SRC_CUPTI;
        g[CT_GPU_NAME] = ct_intern("k");
        emit(CT_REC_GPU, g, CT_GPU_NFIELDS);
        /* op 2's record is a microsecond late: it names nothing */
        uint64_t m[CT_META_NFIELDS] = {g[CT_GPU_START] + (i == 2 ? 1000 : 0), CT_SCOPE_GRAPH_NODE,
                                       0x500000001ull + i, node, 0};
        if (i != 3)
            emit(CT_REC_META, m, CT_META_NFIELDS);
    }
    uint64_t e[CT_META_NFIELDS] = {
        T0, CT_SCOPE_GRAPH, 0, edges,
        ct_intern("500000001>500000003 ?>500000002 500000001>500000002")};
    emit(CT_REC_META, e, CT_META_NFIELDS);
    e[CT_META_VALUE] = ct_intern("500000002>500000004 zz>1 7>8");
    emit(CT_REC_META, e, CT_META_NFIELDS);
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
    struct ct_proc p;
    char err[512];
    ck_assert_msg(ct_proc_extract_file(path, NULL, &p, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(p.nops, 4);
    ck_assert_uint_eq(p.ops[0].gnode, 0x500000001ull);
    ck_assert_uint_eq(p.ops[1].gnode, 0x500000002ull);
    ck_assert_uint_eq(p.ops[2].gnode, 0);
    ck_assert_uint_eq(p.ops[3].gnode, 0);
    ck_assert_uint_eq(p.ngedges, 4);
    static const struct ct_gedge want[] = {{0x500000002ull, 0},
                                           {0x500000002ull, 0x500000001ull},
                                           {0x500000003ull, 0x500000001ull},
                                           {0x500000004ull, 0x500000002ull}};
    for (size_t i = 0; i < 4; i++) {
        ck_assert_uint_eq(p.gedges[i].to, want[i].to);
        ck_assert_uint_eq(p.gedges[i].from, want[i].from);
    }
    /* a summary keeps both: the critical path of summaries and of a
     * spilled job follows the same edges */
    char sum[520];
    snprintf(sum, sizeof(sum), "%s.ctsum", path);
    struct ct_proc q;
    ck_assert_msg(!ct_summary_write(sum, &p, NULL, err, sizeof(err)), "%s", err);
    ck_assert_msg(!ct_summary_read(sum, NULL, &q, err, sizeof(err)), "%s", err);
    unlink(sum);
    ck_assert_uint_eq(q.nops, p.nops);
    for (size_t i = 0; i < p.nops; i++)
        ck_assert_uint_eq(q.ops[i].gnode, p.ops[i].gnode);
    ck_assert_uint_eq(q.ngedges, p.ngedges);
    ck_assert(!memcmp(q.gedges, p.gedges, p.ngedges * sizeof(*p.gedges)));
    ct_proc_free(&q);
    ct_proc_free(&p);
}
END_TEST

/* An API record of family fam, flags fl, [T0 + s, T0 + e) in µs. */
static void call(uint64_t fam, uint64_t fl, uint64_t s, uint64_t e)
{
    uint64_t a[CT_API_NFIELDS] = {0};
    a[CT_API_START] = T0 + 1000 * s;
    a[CT_API_END] = T0 + 1000 * e;
    a[CT_API_FAMILY] = fam;
    a[CT_API_FLAGS] = fl;
    a[CT_API_NAME] = ct_intern("call");
    emit(CT_REC_API, a, CT_API_NFIELDS);
}

/* A thread that never launches GPU work, in a call of 300 us (a pinned
 * memory thread's allocation). */
static void *bystander(void *arg)
{
    (void)arg;
    call(CT_FAM_ALLOC, 0, 5000, 5300);
    return NULL;
}

/*
 * The blocking calls a process keeps: a launching
 * thread's allocation [1000,1200) and synchronous copy [2000,2150) (100 us
 * or more, no synchronize); not its Async copy of 99 us [3000,3099), nor
 * its synchronize [4000,4500), nor a call of a thread that launches
 * nothing [5000,5300).
 */
START_TEST(blocking_calls_are_those_of_the_threads_that_launch)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "calls.cutrace");
    ck_assert_int_eq(th_start(path, 1 << 16, 1), 0);
    call(CT_FAM_LAUNCH, 0, 10, 15);
    call(CT_FAM_ALLOC, 0, 1000, 1200);
    call(CT_FAM_MEMCPY, 0, 2000, 2150);
    call(CT_FAM_MEMCPY, CT_APIF_ASYNC, 3000, 3099);
    call(CT_FAM_SYNC, 0, 4000, 4500);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, bystander, NULL), 0);
    pthread_join(th, NULL);
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
    struct ct_proc got;
    char err[512];
    ck_assert_msg(ct_proc_extract_file(path, NULL, &got, err, sizeof(err)) == 0, "%s", err);
    const int64_t off = got.clock_offset;
    ck_assert_uint_eq(got.cuda_call.n, 2);
    ck_assert_int_eq(got.cuda_call.v[0].s, (int64_t)T0 + 1000000 + off);
    ck_assert_int_eq(got.cuda_call.v[0].e, (int64_t)T0 + 1200000 + off);
    ck_assert_int_eq(got.cuda_call.v[1].s, (int64_t)T0 + 2000000 + off);
    ck_assert_int_eq(got.cuda_call.v[1].e, (int64_t)T0 + 2150000 + off);
    ct_proc_free(&got);
}
END_TEST

START_TEST(missing_file_names_it_and_leaves_proc_empty)
{
    struct ct_proc p;
    char err[512];
    ck_assert_int_lt(ct_proc_extract_file("/nonexistent/x.cutrace", NULL, &p, err, sizeof(err)), 0);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/x.cutrace"));
    ck_assert_ptr_null(p.ops);
    ck_assert_ptr_null(p.path);
    ct_proc_free(&p);
}
END_TEST

Suite *extract_suite(void)
{
    Suite *s = suite_create("extract");
    TCase *tc = tcase_create("extract");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, extraction_follows_the_schedule_on_a_shuffled_trace);
    tcase_add_test(tc, graph_node_and_edge_records_reach_the_ops);
    tcase_add_test(tc, missing_file_names_it_and_leaves_proc_empty);
    tcase_add_test(tc, blocking_calls_are_those_of_the_threads_that_launch);
    suite_add_tcase(s, tc);
    return s;
}
