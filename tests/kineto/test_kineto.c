/*
 * Kineto reader suites: the streaming JSON tokenizer (kineto_json.c) and the
 * reader's handling of small, hand-made traces (kineto.c, kineto_model.c).
 * HTA's numbers on real traces are checked by check_hta.py.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/kineto/kineto.h"
#include "decoder/kineto/kineto_int.h"
#include "decoder/kineto/kineto_json.h"

struct mem {
    const char *s;
    size_t n, pos, step;
};

/* Hands out at most `step` bytes a call: tokens straddle every refill. */
static ssize_t mem_read(void *ctx, char *dst, size_t n)
{
    struct mem *m = ctx;
    size_t k = m->n - m->pos;
    if (k > n)
        k = n;
    if (k > m->step)
        k = m->step;
    memcpy(dst, m->s + m->pos, k);
    m->pos += k;
    return (ssize_t)k;
}

START_TEST(tokenizes_across_one_byte_reads)
{
    const char *doc = "{\"a\\\"b\\u00e9\\ud83d\\ude00\": [1, -2.5e3, true, false, null, \"x\"]}";
    struct mem m = {doc, strlen(doc), 0, 1};
    struct ct_jlex lx;
    ck_assert_int_eq(ct_jlex_init(&lx, mem_read, &m), 0);
    ck_assert_int_eq(ct_jlex_next(&lx), CT_JT_OBJ);
    ck_assert_int_eq(ct_jlex_next(&lx), CT_JT_STR);
    ck_assert_str_eq(lx.s, "a\"b\xc3\xa9\xf0\x9f\x98\x80");
    ck_assert_int_eq(ct_jlex_next(&lx), CT_JT_COLON);
    ck_assert_int_eq(ct_jlex_next(&lx), CT_JT_ARR);
    ck_assert_int_eq(ct_jlex_next(&lx), CT_JT_NUM);
    ck_assert_int_eq(ct_jnum_i64(lx.s, lx.n), 1);
    ck_assert_int_eq(ct_jlex_next(&lx), CT_JT_COMMA);
    ck_assert_int_eq(ct_jlex_next(&lx), CT_JT_NUM);
    ck_assert(ct_jnum_double(lx.s, lx.n) == -2500.0);
    ck_assert(!ct_jnum_is_int(lx.s, lx.n));
    int want[] = {CT_JT_COMMA, CT_JT_TRUE, CT_JT_COMMA,   CT_JT_FALSE,   CT_JT_COMMA, CT_JT_NULL,
                  CT_JT_COMMA, CT_JT_STR,  CT_JT_ARR_END, CT_JT_OBJ_END, CT_JT_EOF};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        ck_assert_int_eq(ct_jlex_next(&lx), want[i]);
    ct_jlex_free(&lx);
}
END_TEST

START_TEST(reports_the_offset_of_damage)
{
    const char *doc = "[1, 2, @]";
    struct mem m = {doc, strlen(doc), 0, 3};
    struct ct_jlex lx;
    ck_assert_int_eq(ct_jlex_init(&lx, mem_read, &m), 0);
    int t;
    while ((t = ct_jlex_next(&lx)) > 0)
        ;
    ck_assert_int_eq(t, CT_JT_ERR);
    ck_assert_int_eq(lx.off, 7);
    ck_assert_int_eq(ct_jlex_next(&lx), CT_JT_ERR);
    ct_jlex_free(&lx);
}
END_TEST

START_TEST(converts_fractional_microseconds_exactly)
{
    int64_t ns;
    ck_assert_int_eq(ct_jnum_ns("4458676522690.655", 17, &ns), 0);
    ck_assert_int_eq(ns, 4458676522690655LL);
    ck_assert_int_eq(ct_jnum_ns("1.2345", 6, &ns), 0);
    ck_assert_int_eq(ns, 1235);
    ck_assert_int_eq(ct_jnum_ns("-3", 2, &ns), 0);
    ck_assert_int_eq(ns, -3000);
    ck_assert_int_eq(ct_jnum_ns("1e3", 3, &ns), 0);
    ck_assert_int_eq(ns, 1000000);
    ck_assert_int_eq(ct_jnum_ns("99999999999999999999", 20, &ns), -1);
}
END_TEST

static const char *trace =
    "{\"distributedInfo\": {\"rank\": 2, \"world_size\": 4}, \"traceEvents\": ["
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"ts\":100,\"dur\":"
    "100},"
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#2\",\"ts\":200,\"dur\":"
    "100},"
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"ts\":110.2,\"dur\":5,"
    "\"args\":{\"correlation\":1}},"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"ts\":120.4,\"dur\":10.3,"
    "\"args\":{\"stream\":7,\"correlation\":1,\"grid\":[1,2,3]}},"
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"ts\":210,\"dur\":5,"
    "\"args\":{\"correlation\":2}},"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_AllReduce_Sum_f32\",\"ts\":220,"
    "\"dur\":10,\"args\":{\"stream\":9,\"correlation\":2,\"Collective name\":\"allreduce\"}},"
    "{\"ph\":\"s\",\"cat\":\"ac2g\",\"id\":1,\"ts\":110}"
    "]}";

START_TEST(hta_mode_rounds_and_drops_the_last_step)
{
    struct ct_proc p;
    char err[256];
    ck_assert_int_eq(ct_kineto_load_mem(trace, strlen(trace), "t.json", &p, err, sizeof(err)), 0);
    ck_assert_int_eq(p.rank, 2);
    ck_assert_int_eq(ct_kineto_finish(&p, 1, 1), 0);
    /* the NCCL kernel was launched in the last step: dropped */
    ck_assert_int_eq(p.nops, 1);
    /* ts = ceil(120.4) = 121, end = floor(130.7) = 130 */
    ck_assert_int_eq(p.ops[0].s, 121000);
    ck_assert_int_eq(p.ops[0].e, 130000);
    ck_assert_int_eq(p.hta->kernel_time, 9000);
    ck_assert_int_eq(p.hta->compute, 9000);
    ck_assert_int_eq(p.nsteps, 1);
    ct_proc_free(&p);
}
END_TEST

START_TEST(normal_mode_keeps_exact_times_and_every_step)
{
    struct ct_proc p;
    char err[256];
    ck_assert_int_eq(ct_kineto_load_mem(trace, strlen(trace), "t.json", &p, err, sizeof(err)), 0);
    ck_assert_int_eq(ct_kineto_finish(&p, 1, 0), 0);
    ck_assert_int_eq(p.nops, 2);
    ck_assert_int_eq(p.ops[0].s, 120400);
    ck_assert_int_eq(p.ops[0].e, 130700);
    ck_assert_int_eq(p.ops[0].launch, 110200);
    ck_assert_int_eq(p.ops[1].cls, CT_CL_OTHER); /* communication */
    ck_assert_int_eq(p.nnccl, 1);
    ck_assert_int_eq(p.nsteps, 2);
    ck_assert_int_eq(p.nlaunches, 2);
    ct_proc_free(&p);
}
END_TEST

START_TEST(truncated_trace_decodes_up_to_the_damage)
{
    size_t cut = strlen(trace) - 60;
    struct ct_proc p;
    char err[256];
    ck_assert_int_eq(ct_kineto_load_mem(trace, cut, "t.json", &p, err, sizeof(err)), 0);
    ck_assert_ptr_nonnull(ct_kineto_warning(&p));
    ck_assert_ptr_nonnull(strstr(ct_kineto_warning(&p), "damaged at byte"));
    ck_assert_int_eq(p.cov.truncated, 1);
    ck_assert_int_eq(ct_kineto_finish(&p, 1, 0), 0);
    ck_assert_int_ge(p.nops, 1);
    ct_proc_free(&p);
}
END_TEST

START_TEST(garbage_fails_naming_the_offset)
{
    const char *bad[] = {"", "[1,2]", "{\"x\": 1}", "{\"traceEvents\": 3}", "\x1f\x8b\x08"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct ct_proc p;
        char err[256] = "";
        int rc = ct_kineto_load_mem(bad[i], strlen(bad[i]), "bad.json", &p, err, sizeof(err));
        ck_assert_int_ne(rc, 0);
        ck_assert_ptr_nonnull(strstr(err, "bad.json"));
        ct_proc_free(&p);
    }
}
END_TEST

START_TEST(classifies_kernels_like_hta)
{
    ck_assert_int_eq(ct_hta_kernel_type("ncclDevKernel_AllGather_RING_LL"), CT_HTA_COMM);
    ck_assert_int_eq(ct_hta_kernel_type("void x::ncclKernel_foo"), CT_HTA_COMM);
    ck_assert_int_eq(ct_hta_kernel_type("Memcpy DtoH (Device -> Pinned)"), CT_HTA_MEM);
    ck_assert_int_eq(ct_hta_kernel_type("Memset (Device)"), CT_HTA_MEM);
    ck_assert_int_eq(ct_hta_kernel_type("Context Sync"), CT_HTA_OTHER);
    ck_assert_int_eq(ct_hta_kernel_type("Stream Wait Event"), CT_HTA_OTHER);
    ck_assert_int_eq(ct_hta_kernel_type("cudaLaunchKernel"), CT_HTA_OTHER);
    ck_assert_int_eq(ct_hta_kernel_type("triton_poi_fused_add_0"), CT_HTA_COMP);
    ck_assert_int_eq(ct_hta_kernel_type("custom_all_reduce_kernel"), CT_HTA_COMP);
}
END_TEST

/* Two records of event 9 (the later one, corr 5, is the one waited for),
 * a wait that names it, and a wait whose record is not in the trace. */
static const char *waits =
    "{\"traceEvents\": ["
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaEventRecord\",\"ts\":100,"
    "\"dur\":2,\"args\":{\"correlation\":4}},"
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaEventRecord\",\"ts\":150,"
    "\"dur\":2,\"args\":{\"correlation\":5}},"
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaStreamWaitEvent\",\"ts\":160,"
    "\"dur\":3,\"args\":{\"correlation\":6}},"
    "{\"ph\":\"X\",\"cat\":\"cuda_sync\",\"name\":\"Stream Wait Event\",\"ts\":161.5,"
    "\"dur\":1,\"args\":{\"cuda_sync_kind\":\"Stream Wait Event\",\"wait_on_stream\":20,"
    "\"wait_on_cuda_event_record_corr_id\":5,\"stream\":24,\"correlation\":6}},"
    "{\"ph\":\"X\",\"cat\":\"cuda_sync\",\"name\":\"Stream Wait Event\",\"ts\":170,"
    "\"dur\":1,\"args\":{\"cuda_sync_kind\":\"Stream Wait Event\",\"wait_on_stream\":20,"
    "\"wait_on_cuda_event_record_corr_id\":99,\"stream\":28,\"correlation\":7}},"
    "{\"ph\":\"X\",\"cat\":\"cuda_sync\",\"name\":\"Event Sync\",\"ts\":180,"
    "\"dur\":1,\"args\":{\"cuda_sync_kind\":\"Event Sync\",\"wait_on_stream\":20,"
    "\"wait_on_cuda_event_record_corr_id\":5,\"stream\":-1,\"correlation\":8}}"
    "]}";

START_TEST(stream_waits_become_event_edges)
{
    struct ct_proc p;
    char err[256];
    ck_assert_int_eq(ct_kineto_load_mem(waits, strlen(waits), "w.json", &p, err, sizeof(err)), 0);
    ck_assert_int_eq(ct_kineto_finish(&p, 1, 0), 0);
    /* the Event Sync is a host wait, not a stream's; the wait on record
     * 99 has no record in the trace */
    ck_assert_uint_eq(p.nedges, 1);
    ck_assert_int_eq(p.edges[0].rec, 150000);
    ck_assert_int_eq(p.edges[0].wait, 161500);
    ck_assert_uint_eq(p.edges[0].from, 20);
    ck_assert_uint_eq(p.edges[0].to, 24);
    ct_proc_free(&p);
}
END_TEST

/* A CPU row (cuda_runtime launch of correlation corr) and a kernel. */
#define LAUNCH(ts, corr)                                                                           \
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"ts\":" #ts             \
    ",\"dur\":2,\"args\":{\"correlation\":" #corr "}},"
#define KERNEL(name, ts, dur, corr)                                                                \
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"" name "\",\"ts\":" #ts ",\"dur\":" #dur          \
    ",\"args\":{\"stream\":7,\"correlation\":" #corr "}},"

/*
 * One step name: HTA filters nothing (trace.py _filter_irrelevant_gpu_kernels
 * skips with fewer than 2 ProfilerStep names). Kernel corr 99 ran at
 * [10, 60) but was launched before the capture (no launch row); corr 2 was
 * launched at 1100, after the step's end, and ran [1120, 1150). HTA keeps
 * all three: kernel time 1150 - 10 = 1140, union 50 + 100 + 30 = 180, idle
 * 960, compute 180, non-compute 0. The rule this replaces kept only corr 1
 * (kernel time 100) and counted the rest as idle.
 */
static const char *one_step =
    "{\"traceEvents\": ["
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"ts\":0,\"dur\":1000}"
    "," KERNEL("early", 10, 50, 99) LAUNCH(100, 1) KERNEL("gemm", 120, 100, 1) LAUNCH(1100, 2)
        KERNEL("late", 1120, 30,
               2) "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"ts\":99,\"dur\":5}"
                  "]}";

START_TEST(one_step_name_keeps_every_row_as_hta_does)
{
    struct ct_proc p;
    char err[256];
    ck_assert_int_eq(ct_kineto_load_mem(one_step, strlen(one_step), "o.json", &p, err, sizeof(err)),
                     0);
    ck_assert_int_eq(ct_kineto_finish(&p, 1, 1), 0);
    const struct ct_hta *h = p.hta;
    ck_assert_int_eq(h->filtered, 0);
    ck_assert_int_eq(h->gpu_events, 3);
    ck_assert_int_eq(h->gpu_rows, 3);
    ck_assert_int_eq(h->drop_last_step + h->drop_no_launch, 0);
    ck_assert_int_eq(h->kernel_time, 1140000);
    ck_assert_int_eq(h->union_all, 180000);
    ck_assert_int_eq(h->idle, 960000);
    ck_assert_int_eq(h->compute, 180000);
    ck_assert_int_eq(h->non_compute, 0);
    ck_assert_uint_eq(h->bad & ~(unsigned)CT_HB_OVERLAP, 0); /* no communication: no overlap */
    /* the timeline holds them too; the early one has no launch */
    ck_assert_uint_eq(p.nops, 3);
    ck_assert_int_eq(p.ops[0].s, 10000);
    ck_assert_int_eq(p.ops[0].launch, INT64_MIN);
    ck_assert_ptr_null(ct_kineto_note(&p));
    ct_proc_free(&p);
}
END_TEST

/*
 * Two step names: HTA keeps the CPU rows that start before the last step
 * (#2 at 200) and the GPU rows whose correlation one of them has. Corr 1
 * (launched at 110) stays; corr 2 (launched at 210, in the last step) and
 * corr 99 (no launch row: before the capture) go. The note counts each.
 */
static const char *two_steps =
    "{\"traceEvents\": ["
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"ts\":100,\"dur\":100},"
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#2\",\"ts\":200,\"dur\":100}"
    "," KERNEL("early", 10, 50, 99) LAUNCH(110, 1) KERNEL("gemm", 120, 10, 1) LAUNCH(210, 2)
        KERNEL("gemm", 220, 10,
               2) "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"ts\":109,\"dur\":5}"
                  "]}";

START_TEST(the_last_step_filter_says_what_it_dropped)
{
    struct ct_proc p;
    char err[256];
    ck_assert_int_eq(
        ct_kineto_load_mem(two_steps, strlen(two_steps), "t.json", &p, err, sizeof(err)), 0);
    ck_assert_int_eq(ct_kineto_finish(&p, 1, 1), 0);
    const struct ct_hta *h = p.hta;
    ck_assert_int_eq(h->filtered, 1);
    ck_assert_int_eq(h->gpu_events, 1);
    ck_assert_int_eq(h->gpu_rows, 3);
    ck_assert_int_eq(h->drop_last_step, 1);
    ck_assert_int_eq(h->drop_no_launch, 1);
    ck_assert_uint_eq(p.nops, 1);
    const char *note = ct_kineto_note(&p);
    ck_assert_ptr_nonnull(note);
    ck_assert_str_eq(note, "t.json: kineto: HTA's last-step rule dropped 2 of 3 GPU rows (1 "
                           "launched at or after the start of the last step, ProfilerStep#2; 1 "
                           "whose launch is not in the trace: before the capture)");
    ct_proc_free(&p);
}
END_TEST

/*
 * HTA's µs rounding of sub-µs memsets: 16 memsets at 300.3 + 10 i lasting
 * 0.5 µs become [301 + 10 i, 300 + 10 i): length -1 each, outside every
 * other row. Kernels [100, 200) and [500, 600). Kernel time 500, union
 * 100 + 100 - 16 = 184, idle 316, compute 200: non-compute 500 - 200 - 316
 * = -16 µs, on which HTA fails its assertion non_compute_time >= 0. The
 * figure is null with the reason, and so is the memory union (-16); idle
 * and compute pass HTA's assertions and stay.
 */
#define MEMSET(ts, corr)                                                                           \
    "{\"ph\":\"X\",\"cat\":\"gpu_memset\",\"name\":\"Memset (Device)\",\"ts\":" #ts                \
    ",\"dur\":0.5,\"args\":{\"stream\":7,\"correlation\":" #corr "}},"                             \
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaMemsetAsync\",\"ts\":" #ts              \
    ",\"dur\":0.1,\"args\":{\"correlation\":" #corr "}},"
static const char *memsets = "{\"traceEvents\": [" LAUNCH(90, 1) KERNEL("gemm", 100.0, 100, 1)
    MEMSET(300.3, 10) MEMSET(310.3, 11) MEMSET(320.3, 12) MEMSET(330.3, 13) MEMSET(340.3, 14)
        MEMSET(350.3, 15) MEMSET(360.3, 16) MEMSET(370.3, 17) MEMSET(380.3, 18) MEMSET(390.3, 19)
            MEMSET(400.3, 20) MEMSET(410.3, 21) MEMSET(420.3, 22) MEMSET(430.3, 23)
                MEMSET(440.3, 24) MEMSET(450.3, 25) LAUNCH(490, 2) KERNEL(
                    "gemm", 500, 100,
                    2) "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"ts\":89,\"dur\":5}"
                       "]}";

START_TEST(negative_non_compute_from_rounding_is_null_with_the_reason)
{
    struct ct_proc p;
    char err[256];
    ck_assert_int_eq(ct_kineto_load_mem(memsets, strlen(memsets), "m.json", &p, err, sizeof(err)),
                     0);
    ck_assert_int_eq(ct_kineto_finish(&p, 1, 1), 0);
    const struct ct_hta *h = p.hta;
    ck_assert_int_eq(h->rounded, 1);
    ck_assert_int_eq(h->gpu_events, 18);
    ck_assert_int_eq(h->negative_rows, 16);
    ck_assert_int_eq(h->kernel_time, 500000);
    ck_assert_int_eq(h->union_all, 184000);
    ck_assert_int_eq(h->idle, 316000);
    ck_assert_int_eq(h->compute, 200000);
    ck_assert_int_eq(h->non_compute, -16000);
    /* the memory union is -16 too */
    ck_assert_int_eq(h->union_mem, -16000);
    ck_assert_uint_eq(h->bad & ~(unsigned)CT_HB_OVERLAP, CT_HB_NON_COMPUTE | CT_HB_MEMORY);
    const char *fig = NULL, *why = NULL;
    ck_assert_int_eq(ct_hta_unavailable(p.hta, 0, &fig, &why), 1);
    ck_assert_str_eq(fig, "hta.temporal.non_compute_us");
    ck_assert_ptr_nonnull(strstr(why, "would be -16 µs"));
    ck_assert_ptr_nonnull(strstr(why, "16 sub-µs GPU rows"));
    ck_assert_ptr_nonnull(strstr(why, "non_compute_time >= 0"));
    /* the timeline cannot hold a row of no length: 16 of 18 left out */
    ck_assert_uint_eq(p.nops, 2);
    ck_assert_ptr_nonnull(strstr(ct_kineto_note(&p), "16 of 18 GPU rows last no time after HTA's "
                                                     "µs rounding"));
    ct_proc_free(&p);
}
END_TEST

/* A runtime row named `name` at ts lasting dur us, of correlation corr. */
#define CALL(name, ts, dur, corr)                                                                  \
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"" name "\",\"ts\":" #ts ",\"dur\":" #dur    \
    ",\"args\":{\"correlation\":" #corr "}},"

/*
 * Which long calls blocked (cutrace traces' rule, host_classes.h): kernel
 * "gemm" launched three times by calls of 300 us each, the first its module
 * load; a graph launched twice (400 us each: its upload, then a launch held
 * back); a 200 us cudaMalloc; a 250 us cudaMemcpyAsync (a pageable copy);
 * a 500 us cudaDeviceSynchronize (waits for the GPU). Blocking: the first
 * gemm launch [0, 300), the first graph launch [2000, 2400), the malloc
 * [3000, 3200) and the copy [3500, 3750); not the later launches [1000,
 * 1300) and [1500, 1800) (the host was held, or a full launch queue waited
 * for the GPU) nor the second graph launch [2500, 2900) nor the sync.
 */
static const char *long_calls =
    "{\"traceEvents\": ["
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"ts\":0,\"dur\":6000}"
    "," CALL("cudaLaunchKernel", 0, 300, 1) KERNEL("gemm", 310, 50, 1)
        CALL("cudaLaunchKernel", 1000, 300, 2) KERNEL("gemm", 1310, 50, 2)
            CALL("cudaLaunchKernel", 1500, 300, 3) KERNEL("gemm", 1810, 50, 3) CALL(
                "cudaGraphLaunch", 2000, 400, 4) KERNEL("g1", 2410, 20, 4) KERNEL("g2", 2440, 20, 4)
                CALL("cudaGraphLaunch", 2500, 400, 5) KERNEL("g1", 2910, 20, 5)
                    KERNEL("g2", 2940, 20, 5) CALL("cudaMalloc", 3000, 200, 6)
                        CALL("cudaMemcpyAsync", 3500, 250,
                             7) "{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy HtoD "
                                "(Pageable -> Device)\",\"ts\":3510,"
                                "\"dur\":200,\"args\":{\"stream\":7,\"correlation\":7}}," CALL(
                                    "cudaDeviceSynchronize", 4000, 500,
                                    8) "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\","
                                       "\"ts\":1,\"dur\":5}"
                                       "]}";

START_TEST(a_long_launch_blocks_only_as_the_first_of_its_kernel)
{
    for (int hta = 0; hta <= 1; hta++) {
        struct ct_proc p;
        char err[256];
        ck_assert_int_eq(
            ct_kineto_load_mem(long_calls, strlen(long_calls), "l.json", &p, err, sizeof(err)), 0);
        ck_assert_int_eq(ct_kineto_finish(&p, 1, hta), 0);
        const int64_t want[][2] = {{0, 300}, {2000, 2400}, {3000, 3200}, {3500, 3750}};
        ck_assert_uint_eq(p.cuda_call.n, 4);
        for (size_t i = 0; i < 4; i++) {
            ck_assert_int_eq(p.cuda_call.v[i].s, want[i][0] * 1000);
            ck_assert_int_eq(p.cuda_call.v[i].e, want[i][1] * 1000);
        }
        ct_proc_free(&p);
    }
}
END_TEST

static Suite *kineto_suite(void)
{
    Suite *s = suite_create("kineto");
    TCase *tc = tcase_create("reader");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, tokenizes_across_one_byte_reads);
    tcase_add_test(tc, reports_the_offset_of_damage);
    tcase_add_test(tc, converts_fractional_microseconds_exactly);
    tcase_add_test(tc, hta_mode_rounds_and_drops_the_last_step);
    tcase_add_test(tc, normal_mode_keeps_exact_times_and_every_step);
    tcase_add_test(tc, truncated_trace_decodes_up_to_the_damage);
    tcase_add_test(tc, garbage_fails_naming_the_offset);
    tcase_add_test(tc, classifies_kernels_like_hta);
    tcase_add_test(tc, stream_waits_become_event_edges);
    tcase_add_test(tc, one_step_name_keeps_every_row_as_hta_does);
    tcase_add_test(tc, the_last_step_filter_says_what_it_dropped);
    tcase_add_test(tc, negative_non_compute_from_rounding_is_null_with_the_reason);
    tcase_add_test(tc, a_long_launch_blocks_only_as_the_first_of_its_kernel);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(kineto_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
