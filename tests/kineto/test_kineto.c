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
    ck_assert_int_eq(p.kin->hta.kernel_time, 9000);
    ck_assert_int_eq(p.kin->hta.compute, 9000);
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
