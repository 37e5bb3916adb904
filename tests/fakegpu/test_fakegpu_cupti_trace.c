/*
 * test_fakegpu_cupti_trace.c - records of a known schedule: one record per
 * op with the fake driver's own start/end, ids, names, bytes and copy
 * kinds; external correlation around every call; graph replay carrying the
 * graph launch's correlation; synchronization records; ops resolved late
 * (behind a host function); delivery timing with and without flushes.
 *
 * Tolerances (busy 2-core VMs, where a thread can lose the CPU for ms):
 *  - op start/end are compared with events recorded around each op on the
 *    same stream while the stream is held busy by a blocker kernel, so both
 *    are exact virtual times; they are compared relative to an anchor
 *    (blocker end) to 1 us (EXACT_NS).  The only host noise is the fake
 *    CUPTI's clock-offset sample (best of a few paired clock reads, each
 *    normally well under 1 us apart).
 *  - host-time bounds (sync records, timestamp offset) use strict lower
 *    bounds and upper bounds taken from the host clock after the fact.
 *  - delivery without a flush must happen within 100 ms of the op's end:
 *    the fake's period is 10 ms, so 100 ms tolerates 90 ms of preemption.
 */
#include "test_fakegpu_cupti.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXACT_NS 1000
/* Long enough that every enqueue of the schedule happens while it runs,
 * even on a loaded machine (checked: the test aborts if not). */
#define BLOCKER_LONG "blocker__300000us"

static const uint64_t NA = CUPTI_SYNCHRONIZATION_INVALID_VALUE;

/* Exported by the fake (as by the real driver); cuda.h declares them only
 * in per-thread-default-stream builds. */
CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                     unsigned int gridDimZ, unsigned int blockDimX,
                                     unsigned int blockDimY, unsigned int blockDimZ,
                                     unsigned int sharedMemBytes, CUstream hStream,
                                     void **kernelParams, void **extra);
CUresult CUDAAPI cuStreamGetId_ptsz(CUstream hStream, unsigned long long *streamId);
CUresult CUDAAPI cuEventRecord_ptsz(CUevent hEvent, CUstream hStream);
CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream);

/* Push an external id around one driver call, as the profiler shim does. */
#define EXT(id, call)                                                                              \
    do {                                                                                           \
        CUPTI_OK(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,   \
                                                        (id)));                                    \
        CU_OK(call);                                                                               \
        uint64_t popped_ = 0;                                                                      \
        CUPTI_OK(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,    \
                                                       &popped_));                                 \
        ck_assert_uint_eq(popped_, (id));                                                          \
    } while (0)

static CUresult launch(const char *name, CUstream s)
{
    return cuLaunchKernel(tc_kernel_fn(name), 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL);
}

static CUresult launch_ptsz(const char *name)
{
    return cuLaunchKernel_ptsz(tc_kernel_fn(name), 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
}

/* The one record of a kind matching pred. */
typedef bool (*tc_pred)(const tc_rec *r, const void *arg);

static tc_rec find_one(CUpti_ActivityKind kind, tc_pred pred, const void *arg, const char *what)
{
    size_t n = 0;
    tc_rec found = {0};
    for (size_t i = 0; i < tc_total(); i++) {
        tc_rec r = tc_get(i);
        if (r.r.any.kind == kind && pred(&r, arg)) {
            found = r;
            n++;
        }
    }
    ck_assert_msg(n == 1, "%zu records for %s", n, what);
    return found;
}

typedef struct {
    uint8_t copy_kind;
    uint64_t bytes;
} copy_key;

static bool is_copy(const tc_rec *r, const void *arg)
{
    const copy_key *k = arg;
    return r->r.memcpy.copyKind == k->copy_kind && r->r.memcpy.bytes == k->bytes;
}

static bool is_memset(const tc_rec *r, const void *arg)
{
    return r->r.memset.bytes == *(const uint64_t *)arg;
}

static bool is_sync(const tc_rec *r, const void *arg)
{
    return r->r.sync.type == *(const CUpti_ActivitySynchronizationType *)arg;
}

/* The record's correlation has exactly one external record: the id pushed. */
static void check_ext(uint32_t corr, uint64_t want, const char *what)
{
    uint64_t got = 0;
    ck_assert_msg(corr != 0, "%s: no correlation id", what);
    ck_assert_msg(tc_ext_for(corr, &got) == 1, "%s: not exactly one external record", what);
    ck_assert_msg(got == want, "%s: external id %llu, want %llu", what, (unsigned long long)got,
                  (unsigned long long)want);
}

static void check_times(uint64_t start, uint64_t end, int64_t anchor, int64_t want_start,
                        int64_t want_end, const char *what)
{
    int64_t s = (int64_t)start - anchor, e = (int64_t)end - anchor;
    ck_assert_msg(llabs(s - want_start) <= EXACT_NS, "%s: start %lld ns, want %lld", what,
                  (long long)s, (long long)want_start);
    ck_assert_msg(llabs(e - want_end) <= EXACT_NS, "%s: end %lld ns, want %lld", what, (long long)e,
                  (long long)want_end);
}

static void host_fn(void *arg)
{
    (void)arg;
}

START_TEST(schedule_records_match_fake_timeline)
{
    CUcontext ctx;
    tc_init_cuda(&ctx);
    unsigned long long ctx_id = 0, s1_id = 0, legacy_id = 0, pts_id = 0;
    CU_OK(cuCtxGetId(ctx, &ctx_id));
    CUstream s1, scap;
    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&scap, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamGetId(s1, &s1_id));
    CU_OK(cuStreamGetId(NULL, &legacy_id));
    CU_OK(cuStreamGetId_ptsz(NULL, &pts_id));
    ck_assert_uint_ne(legacy_id, pts_id);

    const size_t MB = 1 << 20;
    void *pinned;
    CU_OK(cuMemAllocHost(&pinned, MB));
    char *pageable = malloc(65536);
    CUdeviceptr d1, d2;
    CU_OK(cuMemAlloc(&d1, MB));
    CU_OK(cuMemAlloc(&d2, MB));
    CUfunction fex = tc_kernel_fn("ex__50us");

    /* A graph, captured before CUPTI starts: two kernels and a memset. */
    CUgraph g;
    CUgraphExec gx;
    CU_OK(cuStreamBeginCapture(scap, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuLaunchKernel(tc_kernel_fn("g1__20us"), 2, 1, 1, 32, 1, 1, 0, scap, NULL, NULL));
    CU_OK(launch("g2__30us", scap));
    CU_OK(cuMemsetD8Async(d2, 7, 4096, scap));
    CU_OK(cuStreamEndCapture(scap, &g));
    CU_OK(cuGraphInstantiateWithFlags(&gx, g, 0));

    tc_cupti_start(true);
    int64_t host0 = tc_now_ns();

    /* Stream s1, held busy by the blocker; e[i] bracket the ops. */
    CUevent e[8];
    EXT(101, launch(BLOCKER_LONG, s1));
    e[0] = tc_record(s1);
    EXT(102, cuLaunchKernel(tc_kernel_fn("gemm__300us"), 4, 2, 1, 128, 1, 1, 1024, s1, NULL, NULL));
    e[1] = tc_record(s1);
    EXT(103, cuMemcpyHtoDAsync(d1, pinned, MB, s1));
    e[2] = tc_record(s1);
    EXT(104, cuMemsetD32Async(d1, 0xdeadbeefu, 65536, s1));
    e[3] = tc_record(s1);
    EXT(105, cuMemcpyDtoDAsync(d2, d1, MB, s1));
    e[4] = tc_record(s1);
    EXT(106, cuMemcpyDtoHAsync(pinned, d2, MB / 2, s1));
    e[5] = tc_record(s1);
    CUlaunchAttribute coop = {.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE, .value.cooperative = 1};
    CUlaunchConfig cfg = {.gridDimX = 8,
                          .gridDimY = 1,
                          .gridDimZ = 1,
                          .blockDimX = 256,
                          .blockDimY = 1,
                          .blockDimZ = 1,
                          .sharedMemBytes = 0,
                          .hStream = s1,
                          .attrs = &coop,
                          .numAttrs = 1};
    EXT(107, cuLaunchKernelEx(&cfg, fex, NULL, NULL));
    e[6] = tc_record(s1);
    EXT(108, cuGraphLaunch(gx, s1));
    e[7] = tc_record(s1);
    CU_OK(cuLaunchHostFunc(s1, host_fn, NULL)); /* no record */

    /* Legacy stream (handle 0), then the per-thread stream (_ptsz), which
     * waits for the legacy stream's work. */
    CUevent l[2], p1;
    EXT(201, launch(BLOCKER_LONG, NULL));
    l[0] = tc_record(NULL);
    EXT(202, launch("legacy__200us", NULL));
    l[1] = tc_record(NULL);
    EXT(203, launch_ptsz("perthread__100us"));
    CU_OK(cuEventCreate(&p1, CU_EVENT_DEFAULT));
    CU_OK(cuEventRecord_ptsz(p1, NULL));
    int64_t enqueued = tc_now_ns();
    ck_assert_msg(enqueued - host0 < 250000000, "enqueueing took %lld ms: machine too loaded",
                  (long long)(enqueued - host0) / 1000000);

    /* Synchronising calls. */
    int64_t h[10];
    h[0] = tc_now_ns();
    EXT(301, cuStreamSynchronize(s1));
    h[1] = tc_now_ns();
    EXT(302, cuEventSynchronize(l[1]));
    h[2] = tc_now_ns();
    EXT(303, cuStreamWaitEvent(s1, p1, 0));
    h[3] = tc_now_ns();
    /* A synchronous pageable copy on the legacy stream. */
    CUevent l2;
    EXT(204, launch("short_blocker__50000us", NULL));
    l2 = tc_record(NULL);
    EXT(205, cuMemcpyDtoH(pageable, d1, 65536));
    h[4] = tc_now_ns();
    EXT(304, cuCtxSynchronize());
    h[5] = tc_now_ns();

    CUPTI_OK(cuptiActivityFlushAll(0));
    /* Ground truth from events: no more records wanted. */
    CUPTI_OK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION));
    int64_t te[8], tl1, tp1, tl2;
    for (int i = 0; i < 8; i++)
        te[i] = tc_event_ns(e[0], e[i]);
    tl1 = tc_event_ns(l[0], l[1]);
    tp1 = tc_event_ns(l[0], p1);
    tl2 = tc_event_ns(l[0], l2);

    /* One record per op, nothing for events, host functions or capture. */
    ck_assert_uint_eq(tc_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), 9);
    ck_assert_uint_eq(tc_count(CUPTI_ACTIVITY_KIND_KERNEL), 0);
    ck_assert_uint_eq(tc_count(CUPTI_ACTIVITY_KIND_MEMCPY), 4);
    ck_assert_uint_eq(tc_count(CUPTI_ACTIVITY_KIND_MEMSET), 2);
    ck_assert_uint_eq(tc_count(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION), 4);
    /* One external record per API call that made records (the graph
     * launch's three records share one), no other. */
    ck_assert_uint_eq(tc_count(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION),
                      17); /* 101-108, 201-205, 301-304 */

    /* s1: anchor = blocker end = e[0]. */
    /* Two blockers share a name: tell them apart by stream. */
    tc_rec b1 = {0}, bl = {0};
    for (size_t i = 0; i < tc_total(); i++) {
        tc_rec r = tc_get(i);
        if (r.r.any.kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
            strcmp(r.r.kernel.name, BLOCKER_LONG) == 0) {
            if (r.r.kernel.streamId == s1_id)
                b1 = r;
            else if (r.r.kernel.streamId == legacy_id)
                bl = r;
        }
    }
    ck_assert_uint_ne(b1.r.kernel.correlationId, 0);
    ck_assert_uint_ne(bl.r.kernel.correlationId, 0);
    int64_t a1 = (int64_t)b1.r.kernel.end, al = (int64_t)bl.r.kernel.end;
    ck_assert_int_eq((int64_t)(b1.r.kernel.end - b1.r.kernel.start), 300000000);
    /* The timestamp callback's clock: monotonic + TC_TS_OFFSET. */
    ck_assert_int_ge((int64_t)b1.r.kernel.start, host0 + TC_TS_OFFSET - EXACT_NS);
    ck_assert_int_le((int64_t)b1.r.kernel.start, enqueued + TC_TS_OFFSET + EXACT_NS);
    check_ext(b1.r.kernel.correlationId, 101, "blocker s1");
    check_ext(bl.r.kernel.correlationId, 201, "blocker legacy");

    tc_rec k = *tc_kernel("gemm__300us");
    check_times(k.r.kernel.start, k.r.kernel.end, a1, te[0], te[1], "gemm");
    ck_assert_int_eq(k.r.kernel.end - k.r.kernel.start, 300000);
    ck_assert_uint_eq(k.r.kernel.streamId, s1_id);
    ck_assert_uint_eq(k.r.kernel.deviceId, 0);
    ck_assert_uint_eq(k.r.kernel.contextId, ctx_id);
    ck_assert_int_eq(k.r.kernel.gridX, 4);
    ck_assert_int_eq(k.r.kernel.gridY, 2);
    ck_assert_int_eq(k.r.kernel.gridZ, 1);
    ck_assert_int_eq(k.r.kernel.blockX, 128);
    ck_assert_int_eq(k.r.kernel.blockY, 1);
    ck_assert_int_eq(k.r.kernel.blockZ, 1);
    ck_assert_int_eq(k.r.kernel.dynamicSharedMemory, 1024);
    ck_assert_uint_eq(k.r.kernel.graphId, 0);
    check_ext(k.r.kernel.correlationId, 102, "gemm");
    ck_assert_uint_gt(k.r.kernel.correlationId, b1.r.kernel.correlationId);

    copy_key htod = {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, MB};
    tc_rec c = find_one(CUPTI_ACTIVITY_KIND_MEMCPY, is_copy, &htod, "HtoD");
    check_times(c.r.memcpy.start, c.r.memcpy.end, a1, te[1], te[2], "HtoD");
    ck_assert_uint_eq(c.r.memcpy.srcKind, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
    ck_assert_uint_eq(c.r.memcpy.dstKind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
    ck_assert_uint_eq(c.r.memcpy.streamId, s1_id);
    ck_assert_uint_eq(c.r.memcpy.contextId, ctx_id);
    check_ext(c.r.memcpy.correlationId, 103, "HtoD");

    uint64_t msz = 65536 * 4;
    tc_rec m = find_one(CUPTI_ACTIVITY_KIND_MEMSET, is_memset, &msz, "memset");
    check_times(m.r.memset.start, m.r.memset.end, a1, te[2], te[3], "memset");
    ck_assert_uint_eq(m.r.memset.value, 0xdeadbeefu);
    ck_assert_uint_eq(m.r.memset.streamId, s1_id);
    check_ext(m.r.memset.correlationId, 104, "memset");

    copy_key dtod = {CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, MB};
    c = find_one(CUPTI_ACTIVITY_KIND_MEMCPY, is_copy, &dtod, "DtoD");
    check_times(c.r.memcpy.start, c.r.memcpy.end, a1, te[3], te[4], "DtoD");
    ck_assert_uint_eq(c.r.memcpy.srcKind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
    check_ext(c.r.memcpy.correlationId, 105, "DtoD");

    copy_key dtoh = {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, MB / 2};
    c = find_one(CUPTI_ACTIVITY_KIND_MEMCPY, is_copy, &dtoh, "DtoH");
    check_times(c.r.memcpy.start, c.r.memcpy.end, a1, te[4], te[5], "DtoH");
    ck_assert_uint_eq(c.r.memcpy.dstKind, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
    check_ext(c.r.memcpy.correlationId, 106, "DtoH");

    k = *tc_kernel("ex__50us");
    check_times(k.r.kernel.start, k.r.kernel.end, a1, te[5], te[6], "launchEx");
    ck_assert_int_eq(k.r.kernel.gridX, 8);
    ck_assert_int_eq(k.r.kernel.blockX, 256);
    ck_assert_uint_eq(k.r.kernel.launchType, CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE);
    check_ext(k.r.kernel.correlationId, 107, "launchEx");

    /* Graph replay: every node carries the cuGraphLaunch correlation. */
    tc_rec g1 = *tc_kernel("g1__20us"), g2 = *tc_kernel("g2__30us");
    uint64_t gsz = 4096;
    tc_rec gm = find_one(CUPTI_ACTIVITY_KIND_MEMSET, is_memset, &gsz, "graph memset");
    check_times(g1.r.kernel.start, g1.r.kernel.end, a1, te[6], te[6] + 20000, "graph g1");
    check_times(g2.r.kernel.start, g2.r.kernel.end, a1, te[6] + 20000, te[6] + 50000, "graph g2");
    check_times(gm.r.memset.start, gm.r.memset.end, a1, te[6] + 50000, te[7], "graph memset");
    ck_assert_int_eq(g1.r.kernel.gridX, 2);
    ck_assert_int_eq(g1.r.kernel.blockX, 32);
    ck_assert_uint_eq(g1.r.kernel.correlationId, g2.r.kernel.correlationId);
    ck_assert_uint_eq(g1.r.kernel.correlationId, gm.r.memset.correlationId);
    ck_assert_uint_eq(g1.r.kernel.streamId, s1_id);
    ck_assert_uint_ne(g1.r.kernel.graphId, 0);
    ck_assert_uint_eq(g1.r.kernel.graphId, g2.r.kernel.graphId);
    ck_assert_uint_eq(g1.r.kernel.graphId, gm.r.memset.graphId);
    ck_assert_uint_ne(g1.r.kernel.graphNodeId, g2.r.kernel.graphNodeId);
    check_ext(g1.r.kernel.correlationId, 108, "graph launch");

    /* Legacy and per-thread streams: anchor = legacy blocker end = l[0]. */
    k = *tc_kernel("legacy__200us");
    check_times(k.r.kernel.start, k.r.kernel.end, al, 0, tl1, "legacy");
    ck_assert_uint_eq(k.r.kernel.streamId, legacy_id);
    check_ext(k.r.kernel.correlationId, 202, "legacy");
    k = *tc_kernel("perthread__100us");
    check_times(k.r.kernel.start, k.r.kernel.end, al, tl1, tp1, "per-thread");
    ck_assert_uint_eq(k.r.kernel.streamId, pts_id);
    check_ext(k.r.kernel.correlationId, 203, "per-thread");
    k = *tc_kernel("short_blocker__50000us");
    ck_assert_uint_eq(k.r.kernel.streamId, legacy_id);
    check_ext(k.r.kernel.correlationId, 204, "short blocker");
    copy_key sync_dtoh = {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 65536};
    c = find_one(CUPTI_ACTIVITY_KIND_MEMCPY, is_copy, &sync_dtoh, "sync DtoH");
    /* 65536 B at 25 GB/s = 2621 ns, starting when the legacy stream frees. */
    check_times(c.r.memcpy.start, c.r.memcpy.end, al, tl2, tl2 + 2621, "sync DtoH");
    ck_assert_uint_eq(c.r.memcpy.dstKind, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE);
    ck_assert_uint_eq(c.r.memcpy.streamId, legacy_id);
    check_ext(c.r.memcpy.correlationId, 205, "sync DtoH");

    /* Synchronization records: host enter/exit on the callback's clock. */
    struct {
        CUpti_ActivitySynchronizationType type;
        uint64_t stream, event_valid;
        int64_t lo, hi;
        uint64_t ext;
    } sy[] = {
        {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, s1_id, 0, h[0], h[1], 301},
        {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, NA, 1, h[1], h[2], 302},
        {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, s1_id, 1, h[2], h[3], 303},
        {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, NA, 0, h[4], h[5], 304},
    };
    for (size_t i = 0; i < sizeof sy / sizeof sy[0]; i++) {
        tc_rec y = find_one(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, is_sync, &sy[i].type, "sync");
        ck_assert_uint_eq(y.r.sync.contextId, ctx_id);
        ck_assert_uint_eq(y.r.sync.streamId, (uint32_t)sy[i].stream);
        if (sy[i].event_valid)
            ck_assert_uint_ne(y.r.sync.cudaEventId, (uint32_t)NA);
        else
            ck_assert_uint_eq(y.r.sync.cudaEventId, (uint32_t)NA);
        ck_assert_uint_le(y.r.sync.start, y.r.sync.end);
        ck_assert_int_ge((int64_t)y.r.sync.start, sy[i].lo + TC_TS_OFFSET - EXACT_NS);
        ck_assert_int_le((int64_t)y.r.sync.end, sy[i].hi + TC_TS_OFFSET + EXACT_NS);
        check_ext(y.r.sync.correlationId, sy[i].ext, "sync");
    }
    /* The stream sync waited for s1's work (graph end and the host function). */
    tc_rec ys = find_one(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, is_sync, &sy[0].type, "stream sync");
    ck_assert_int_ge((int64_t)ys.r.sync.end, a1 + te[7] - EXACT_NS);

    free(pageable);
}
END_TEST

/* ----------------------------------------------- ops resolved late, delivery */

static void slow_host_fn(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 30 * 1000000};
    nanosleep(&ts, NULL);
}

START_TEST(op_behind_host_function_is_delivered_once_resolved)
{
    CUcontext ctx;
    tc_init_cuda(&ctx);
    tc_cupti_start(false);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuLaunchHostFunc(s, slow_host_fn, NULL));
    CUevent e0 = tc_record(s);
    tc_launch("after_host__1000us", s);
    CUevent e1 = tc_record(s);
    /* Its start is unknown until the host function returns. */
    CUPTI_OK(cuptiActivityFlushAll(0));
    CUPTI_OK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    ck_assert_ptr_null(tc_kernel("after_host__1000us"));
    CU_OK(cuStreamSynchronize(s));
    CUPTI_OK(cuptiActivityFlushAll(0));
    const tc_rec *k = tc_kernel("after_host__1000us");
    ck_assert_ptr_nonnull(k);
    tc_rec r = *k;
    /* Without a timestamp callback the records are on CLOCK_MONOTONIC. */
    ck_assert_int_eq((int64_t)(r.r.kernel.end - r.r.kernel.start), 1000000);
    int64_t d = tc_event_ns(e0, e1);
    ck_assert_int_le(llabs(d - 1000000), EXACT_NS);
    ck_assert_uint_eq(tc_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), 1);
}
END_TEST

START_TEST(incomplete_ops_are_not_delivered_even_forced)
{
    CUcontext ctx;
    tc_init_cuda(&ctx);
    tc_cupti_start(false);
    CUstream s;
    CU_OK(cuStreamCreate(&s, 0));
    tc_launch("long__200000us", s);
    CUPTI_OK(cuptiActivityFlushAll(0));
    CUPTI_OK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    ck_assert_uint_eq(tc_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), 0);
    CU_OK(cuStreamSynchronize(s));
    CUPTI_OK(cuptiActivityFlushAll(0));
    ck_assert_uint_eq(tc_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), 1);
    ck_assert_uint_eq(tc_count(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION), 1);
}
END_TEST

START_TEST(records_arrive_without_flush)
{
    CUcontext ctx;
    tc_init_cuda(&ctx);
    tc_cupti_start(false);
    CUstream s;
    CU_OK(cuStreamCreate(&s, 0));
    tc_launch("quick__2000us", s);
    /* No flush, no synchronisation: the background thread must deliver. */
    int64_t deadline = tc_now_ns() + 2000000000LL;
    while (!tc_kernel("quick__2000us") && tc_now_ns() < deadline) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    const tc_rec *k = tc_kernel("quick__2000us");
    ck_assert_msg(k != NULL, "not delivered within 2 s");
    int64_t late = k->delivered_ns - (int64_t)k->r.kernel.end;
    ck_assert_int_ge(late, 0); /* never before the op has ended */
    ck_assert_msg(late < 100000000, "delivered %lld ms after the op ended",
                  (long long)late / 1000000);
}
END_TEST

/* Two threads launch with their own external ids while a third flushes. */
#define THREAD_LAUNCHES 200

static void *launcher(void *arg)
{
    uint64_t base = (uint64_t)(uintptr_t)arg;
    CUcontext ctx;
    CU_OK(cuDevicePrimaryCtxRetain(&ctx, 0));
    CU_OK(cuCtxSetCurrent(ctx));
    CUfunction f = tc_kernel_fn(base == 1000 ? "tA__1us" : "tB__1us");
    for (uint64_t i = 0; i < THREAD_LAUNCHES; i++) {
        CUPTI_OK(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1,
                                                        base + i));
        CU_OK(cuLaunchKernel_ptsz(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
        CUPTI_OK(
            cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, NULL));
    }
    CU_OK(cuStreamSynchronize_ptsz(NULL));
    return NULL;
}

static int flusher_stop;

static void *flusher(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&flusher_stop, __ATOMIC_SEQ_CST))
        CUPTI_OK(cuptiActivityFlushAll(0));
    return NULL;
}

START_TEST(concurrent_launches_and_flushes)
{
    CUcontext ctx;
    tc_init_cuda(&ctx);
    tc_cupti_start(false);
    CUPTI_OK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION));
    pthread_t a, b, f;
    ck_assert_int_eq(pthread_create(&f, NULL, flusher, NULL), 0);
    ck_assert_int_eq(pthread_create(&a, NULL, launcher, (void *)(uintptr_t)1000), 0);
    ck_assert_int_eq(pthread_create(&b, NULL, launcher, (void *)(uintptr_t)5000), 0);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    __atomic_store_n(&flusher_stop, 1, __ATOMIC_SEQ_CST);
    pthread_join(f, NULL);
    CUPTI_OK(cuptiActivityFlushAll(0));
    ck_assert_uint_eq(tc_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), 2 * THREAD_LAUNCHES);
    ck_assert_uint_eq(tc_count(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION), 2 * THREAD_LAUNCHES);
    /* Each kernel's external id came from its own thread's stack. */
    for (size_t i = 0; i < tc_total(); i++) {
        tc_rec r = tc_get(i);
        if (r.r.any.kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
            continue;
        uint64_t id = 0;
        ck_assert_uint_eq(tc_ext_for(r.r.kernel.correlationId, &id), 1);
        bool is_a = strcmp(r.r.kernel.name, "tA__1us") == 0;
        ck_assert_uint_ge(id, is_a ? 1000 : 5000);
        ck_assert_uint_lt(id, (is_a ? 1000 : 5000) + THREAD_LAUNCHES);
    }
}
END_TEST

TCase *tc_trace_schedule(void)
{
    TCase *tc = tcase_create("schedule");
    /* ~0.4 s of virtual time plus event synchronisation. */
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, schedule_records_match_fake_timeline);
    tcase_add_test(tc, op_behind_host_function_is_delivered_once_resolved);
    tcase_add_test(tc, incomplete_ops_are_not_delivered_even_forced);
    return tc;
}

TCase *tc_trace_delivery(void)
{
    TCase *tc = tcase_create("delivery");
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, records_arrive_without_flush);
    tcase_add_test(tc, concurrent_launches_and_flushes);
    return tc;
}
