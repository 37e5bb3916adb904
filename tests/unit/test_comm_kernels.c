/*
 * Suite "comm_kernels": communication outside NCCL's host API
 * (decoder/util/comm_kernels.h, docs/nccl.md "Communication kernels"): the
 * built-in table against kernel names as real libraries compile them
 * (mangled, from their sources), a file that extends or replaces it, bad
 * files refused, and a hand-built rank whose custom all-reduce kernel
 * counts as communication in the breakdown (overlap, exposed
 * communication) while a compute kernel with a similar name does not.
 * Also the copy-engine collective of the reader (decoder/read/extract_join.c):
 * the copies NCCL enqueued inside an op's call are the op's GPU time, one
 * interval of communication, not memory traffic.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decoder/read/extract.h"
#include "decoder/read/job.h"
#include "decoder/util/comm_kernels.h"
#include "tests/unit/helpers.h"
#include "tests/unit/timeline_builder.h"

/* vllm::cross_device_reduce_1stage<float, 8> and DeepEP's kernels, mangled */
#define VLLM_AR                                                                                    \
    "_ZN4vllm26cross_device_reduce_1stageIfLi8EEEvPNS_8RankDataENS_11RankSignalsEPNS_6SignalEPT_"  \
    "ii"
#define DEEPEP_D                                                                                   \
    "_ZN7deep_ep9intranode8dispatchILi8EEEvP6int4_tPfPiPlS3_S3_PKS1_PKfPKlS3_PKbPKiiiiiiiiiPPvii"
#define DEEPEP_L "_ZN7deep_ep6layout19get_dispatch_layoutEPKliiiPiS2_S2_Pb"

START_TEST(builtin_table_names_real_communication_kernels)
{
    ct_comm_kernels_reset();
    static const struct {
        const char *name;
        int op;
    } want[] = {
        {VLLM_AR, CT_NCCL_OP_ALLREDUCE},
        {"vllm::cross_device_reduce_2stage<__nv_bfloat16, 4>", CT_NCCL_OP_ALLREDUCE},
        {DEEPEP_D, CT_NCCL_OP_ALLTOALL},
        {"void deep_ep::internode_ll::combine<8, 7168>(void*, ...)", CT_NCCL_OP_ALLTOALL},
        {"ncclSymk_AllReduce_AGxLLMC_R_sum_bf16", CT_NCCL_OP_ALLREDUCE},
        {"ncclSymk_AllGather_LL", CT_NCCL_OP_ALLGATHER},
        {"alltoall_on_stream_kernel<float>", CT_NCCL_OP_ALLTOALL},
        {"barrier_on_stream_kernel_threadgroup<(threadgroup_t)2>", CT_NCCL_OP_COUNT},
        {"_ZN12tensorrt_llm7kernels22oneShotAllReduceKernelIfLi8ELb1ELb0EEEvNS0_15AllReduceParamsE",
         CT_NCCL_OP_ALLREDUCE},
        {"c10d::symmetric_memory::two_shot_all_reduce_kernel<float, 16, 8>", CT_NCCL_OP_ALLREDUCE},
        {"_Z39userbuffers_fp16_sum_inplace_gpu_rr_rsILi8EEviiiiiPPvi", CT_NCCL_OP_REDUCESCATTER},
        /* NCCL's own kernels keep their rule */
        {"ncclDevKernel_AllGather_RING_LL", CT_NCCL_OP_ALLGATHER},
        /* compute, however close the name */
        {DEEPEP_L, 0},
        {"ampere_sgemm_128x64_nn", 0},
        {"void at::native::reduce_kernel<512, 1>(...)", 0},
        {"custom_all_reduce_helper_norm", 0},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        ck_assert_msg(ct_nccl_op_from_kernel(want[i].name) == want[i].op, "%s: %d, want %d",
                      want[i].name, ct_nccl_op_from_kernel(want[i].name), want[i].op);
}
END_TEST

static const char *write_table(const char *name, const char *text)
{
    static char path[512];
    th_path(path, sizeof(path), th_tmpdir(), name);
    ck_assert_int_eq(th_write_file(path, (const uint8_t *)text, strlen(text)), 0);
    return path;
}

START_TEST(a_file_extends_the_table_and_its_entries_win)
{
    ct_comm_kernels_reset();
    const char *path = write_table("ext.txt", "# ours\n"
                                              "  my_allgather_*   AllGather   # a comment\n"
                                              "*cross_device_reduce_1stage* Other\n\n");
    char err[512] = "";
    ck_assert_msg(ct_comm_kernels_load(path, err, sizeof(err)) == 0, "%s", err);
    ck_assert_int_eq(ct_nccl_op_from_kernel("my_allgather_v2"), CT_NCCL_OP_ALLGATHER);
    ck_assert_int_eq(ct_nccl_op_from_kernel(VLLM_AR),
                     CT_NCCL_OP_COUNT); /* the file's entry first */
    ck_assert_int_eq(ct_nccl_op_from_kernel(DEEPEP_D), CT_NCCL_OP_ALLTOALL); /* built-in kept */
    const char *pat, *op;
    ck_assert(ct_comm_kernel_entry(0, &pat, &op));
    ck_assert_str_eq(pat, "my_allgather_*");
    ck_assert_str_eq(op, "AllGather");
    /* the option given again: a second file adds its entries after the first's */
    path = write_table("ext2.txt", "halo_* SendRecv\nmy_allgather_v2 Other\n");
    ck_assert_msg(ct_comm_kernels_load(path, err, sizeof(err)) == 0, "%s", err);
    ck_assert_int_eq(ct_nccl_op_from_kernel("halo_x"), CT_NCCL_OP_SEND);
    ck_assert_int_eq(ct_nccl_op_from_kernel("my_allgather_v2"), CT_NCCL_OP_ALLGATHER);
    ct_comm_kernels_reset();
    ck_assert_int_eq(ct_nccl_op_from_kernel("my_allgather_v2"), 0);
}
END_TEST

START_TEST(no_builtin_replaces_the_table)
{
    ct_comm_kernels_reset();
    const char *path = write_table("only.txt", "no-builtin\nmy_ar SendRecv\n");
    char err[512] = "";
    ck_assert_msg(ct_comm_kernels_load(path, err, sizeof(err)) == 0, "%s", err);
    ck_assert_int_eq(ct_nccl_op_from_kernel("my_ar"), CT_NCCL_OP_SEND);
    ck_assert_int_eq(ct_nccl_op_from_kernel(VLLM_AR), 0);
    ck_assert_int_eq(ct_nccl_op_from_kernel(DEEPEP_D), 0);
    const char *pat, *op;
    ck_assert(ct_comm_kernel_entry(0, &pat, &op));
    ck_assert(!ct_comm_kernel_entry(1, &pat, &op));
    ct_comm_kernels_reset();
}
END_TEST

START_TEST(a_bad_file_is_refused_naming_the_file_line_and_allowed_ops)
{
    ct_comm_kernels_reset();
    char err[512] = "";
    const char *path = write_table("bad.txt", "ok_* AllReduce\nfoo_* Allreduce\n");
    ck_assert_int_eq(ct_comm_kernels_load(path, err, sizeof(err)), -1);
    ck_assert_msg(strstr(err, "bad.txt:2: unknown op 'Allreduce'; allowed: AllReduce,") != NULL,
                  "%s", err);
    ck_assert_msg(strstr(err, "Other") != NULL, "%s", err);
    ck_assert_int_eq(ct_nccl_op_from_kernel("ok_1"), 0); /* nothing of a refused file is kept */
    path = write_table("short.txt", "lonely\n");
    ck_assert_int_eq(ct_comm_kernels_load(path, err, sizeof(err)), -1);
    ck_assert_msg(strstr(err, "short.txt:1: 'lonely': expected PATTERN OP") != NULL, "%s", err);
    path = write_table("long.txt", "a AllReduce b\n");
    ck_assert_int_eq(ct_comm_kernels_load(path, err, sizeof(err)), -1);
    ck_assert_msg(strstr(err, "long.txt:1: 'b' after the op") != NULL, "%s", err);
    ck_assert_int_eq(ct_comm_kernels_load("/nonexistent/table", err, sizeof(err)), -1);
    ck_assert_msg(strstr(err, "/nonexistent/table: No such file") != NULL, "%s", err);
    ct_comm_kernels_reset();
}
END_TEST

/*
 * One rank (µs): compute K [100,300) on stream 1; vLLM's custom all-reduce
 * [250,400) on stream 2 (no NCCL call: a kernel of its own); DeepEP's
 * layout kernel [400,450) on stream 1 (compute). Communication = [250,400)
 * = 150, of it [250,300) under compute: overlap 50, exposed 100; compute
 * = 200 + 50 = 250; no memory.
 */
START_TEST(a_custom_allreduce_kernel_counts_as_communication)
{
    ct_comm_kernels_reset();
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    tb_kernel(p, "gemm", 1, 100, 300, 90);
    tb_kernel(p, VLLM_AR, 2, 250, 400, 240);
    tb_kernel(p, DEEPEP_L, 1, 400, 450, 390);
    struct ct_job job;
    tb_build(&b, &job);
    struct ct_rank_result res;
    tb_metrics(&job, 0, NULL, 0, &res);
    ck_assert_int_eq(res.comm, TB_US(150));
    ck_assert_int_eq(res.overlap, TB_US(50));
    ck_assert_int_eq(res.exposed_comm, TB_US(100));
    ck_assert_int_eq(res.compute, TB_US(250));
    ck_assert_int_eq(res.memory, 0);
    /* an all-reduce without a call record: data-parallel (rule 5, timeline.h) */
    ck_assert_int_eq(res.cls_len[CT_CL_DP], TB_US(150));
    /* one kernel without a call: its bytes unknown, and said so */
    ck_assert_uint_eq(res.comm_kernels, 1);
    ck_assert_int_eq(res.comm_kernels_time, TB_US(150));
    ck_assert(ct_figure_unavailable(&res, "comm_kernels.bytes"));
    tb_result_free(&res);
    ct_job_free(&job);
}
END_TEST

/* The same rank with the table replaced by one that does not name the
 * kernel: all compute, no communication. */
START_TEST(without_a_table_entry_the_kernel_is_compute)
{
    ct_comm_kernels_reset();
    const char *path = write_table("none.txt", "no-builtin\n");
    char err[512] = "";
    ck_assert_msg(ct_comm_kernels_load(path, err, sizeof(err)) == 0, "%s", err);
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    tb_kernel(p, "gemm", 1, 100, 300, 90);
    tb_kernel(p, VLLM_AR, 2, 250, 400, 240);
    struct ct_job job;
    tb_build(&b, &job);
    struct ct_rank_result res;
    tb_metrics(&job, 0, NULL, 0, &res);
    ck_assert_int_eq(res.comm, 0);
    ck_assert_int_eq(res.compute, TB_US(300));
    ck_assert_uint_eq(res.comm_kernels, 0);
    ck_assert(!ct_figure_unavailable(&res, "comm_kernels.bytes"));
    tb_result_free(&res);
    ct_job_free(&job);
    ct_comm_kernels_reset();
}
END_TEST

#define T0 1000000000ull

static void emit(unsigned kind, const uint64_t *f, unsigned n)
{
    while (ct_emit(kind, CT_RF_NS, f, n) != 0)
        usleep(100);
}

/* A DtoD cuMemcpyDtoDAsync_v2 call [s, e) µs after T0 with correlation id
 * corr on stream 9, and its GPU copy [gs, ge). */
static void dtod(uint64_t corr, uint64_t s, uint64_t e, uint64_t gs, uint64_t ge)
{
    uint64_t a[CT_API_NFIELDS] = {0};
    a[CT_API_START] = T0 + 1000 * s;
    a[CT_API_END] = T0 + 1000 * e;
    a[CT_API_CORR] = corr;
    a[CT_API_FAMILY] = CT_FAM_MEMCPY;
    a[CT_API_COPY_KIND] = CT_COPY_DTOD;
    a[CT_API_FLAGS] = CT_APIF_ASYNC;
    a[CT_API_STREAM] = 9;
    a[CT_API_BYTES] = 1 << 20;
    a[CT_API_NAME] = ct_intern("cuMemcpyDtoDAsync_v2");
    emit(CT_REC_API, a, CT_API_NFIELDS);
    uint64_t g[CT_GPU_NFIELDS] = {0};
    g[CT_GPU_START] = T0 + 1000 * gs;
    g[CT_GPU_END] = T0 + 1000 * ge;
    g[CT_GPU_CORR] = corr;
    g[CT_GPU_TYPE] = CT_GPU_MEMCPY;
    g[CT_GPU_COPY_KIND] = CT_COPY_DTOD;
    g[CT_GPU_STREAM] = 9;
    g[CT_GPU_BYTES] = 1 << 20;
    g[CT_GPU_SOURCE] = CT_SRC_CUPTI;
    emit(CT_REC_GPU, g, CT_GPU_NFIELDS);
}

/* An ncclAllReduce call [s, e) µs after T0 (correlation id corr, stream 9,
 * 8 MiB over 2 ranks, sequence seq), and NCCL's descriptor saying
 * copy-engine (what the plugin records of a CeColl event). */
static void allreduce(uint64_t corr, uint64_t seq, uint64_t s, uint64_t e)
{
    uint64_t n[CT_NCCL_NFIELDS] = {0};
    n[CT_NCCL_START] = T0 + 1000 * s;
    n[CT_NCCL_END] = T0 + 1000 * e;
    n[CT_NCCL_OP] = CT_NCCL_OP_ALLREDUCE;
    n[CT_NCCL_COMM] = 0xc0ffee;
    n[CT_NCCL_SEQ] = seq;
    n[CT_NCCL_COUNT] = 2 << 20;
    n[CT_NCCL_DTYPE] = 7;
    n[CT_NCCL_BYTES] = 8 << 20;
    n[CT_NCCL_ROOT] = (uint64_t)-1;
    n[CT_NCCL_PEER] = (uint64_t)-1;
    n[CT_NCCL_STREAM] = 9;
    n[CT_NCCL_CORR] = corr;
    n[CT_NCCL_NRANKS] = 2;
    emit(CT_REC_NCCL, n, CT_NCCL_NFIELDS);
    uint64_t i[CT_NINFO_NFIELDS] = {0};
    i[CT_NINFO_TIME] = T0 + 1000 * s + 1;
    i[CT_NINFO_CORR] = corr;
    i[CT_NINFO_ALGO] = ct_intern("CE");
    i[CT_NINFO_PROTO] = ct_intern("");
    i[CT_NINFO_FLAGS] = CT_NINFO_F_CE;
    emit(CT_REC_NCCL_INFO, i, CT_NINFO_NFIELDS);
}

/*
 * A copy-engine all-reduce: its call [100,110) enqueues two copies
 * (calls [102,103) and [104,105), on its thread and stream), which run on
 * the GPU [200,260) and [270,300): the op's GPU time is their hull
 * [200,300), one interval of type nccl. A copy of the job's own outside
 * any NCCL call ([500,501), GPU [510,530)) stays a memory copy.
 */
START_TEST(copies_inside_an_nccl_call_are_its_gpu_time)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "ce.cutrace");
    ck_assert_int_eq(th_start(path, 1 << 16, 1), 0);
    dtod(1, 102, 103, 200, 260);
    dtod(2, 104, 105, 270, 300);
    allreduce(3, 0, 100, 110);
    dtod(4, 500, 501, 510, 530);
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
    struct ct_proc p;
    char err[512];
    ck_assert_msg(ct_proc_extract_file(path, NULL, &p, err, sizeof(err)) == 0, "%s", err);
    const int64_t off = p.clock_offset;
    ck_assert_uint_eq(p.nops, 2);
    ck_assert_uint_eq(p.nnccl, 1);
    const struct ct_gpu_op *ce = &p.ops[0], *mine = &p.ops[1];
    ck_assert_int_eq(ce->s, (int64_t)T0 + 200000 + off);
    ck_assert_int_eq(ce->e, (int64_t)T0 + 300000 + off);
    ck_assert_int_eq(ce->type, CT_GPU_NCCL);
    ck_assert_int_eq(ce->nccl, 0);
    ck_assert_int_eq(ce->nested, 0);
    ck_assert_int_eq(ce->op, CT_NCCL_OP_ALLREDUCE);
    ck_assert_int_eq(mine->type, CT_GPU_MEMCPY);
    ck_assert_int_eq(mine->cls, CT_CL_MEMORY);
    ck_assert_int_eq(mine->nccl, -1);
    ct_proc_free(&p);
}
END_TEST

/* The same op timed by a GPU record of its own (an event pair, or an
 * older plugin's): the copies inside its call are still its work,
 * communication linked for their class (nested), not memory. */
START_TEST(copies_inside_a_timed_nccl_call_are_communication)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "ce-timed.cutrace");
    ck_assert_int_eq(th_start(path, 1 << 16, 1), 0);
    dtod(1, 102, 103, 200, 260);
    allreduce(3, 0, 100, 110);
    uint64_t g[CT_GPU_NFIELDS] = {0};
    g[CT_GPU_START] = T0 + 190000;
    g[CT_GPU_END] = T0 + 265000;
    g[CT_GPU_CORR] = 3;
    g[CT_GPU_TYPE] = CT_GPU_NCCL;
    g[CT_GPU_STREAM] = 9;
    g[CT_GPU_SOURCE] = CT_SRC_EVENTS;
    emit(CT_REC_GPU, g, CT_GPU_NFIELDS);
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
    struct ct_proc p;
    char err[512];
    ck_assert_msg(ct_proc_extract_file(path, NULL, &p, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(p.nops, 2);
    ck_assert_int_eq(p.ops[0].type, CT_GPU_NCCL); /* the event pair [190,265) */
    ck_assert_int_eq(p.ops[0].nested, 0);
    ck_assert_int_eq(p.ops[1].type, CT_GPU_MEMCPY);
    ck_assert_int_eq(p.ops[1].nccl, 0);
    ck_assert_int_eq(p.ops[1].nested, 1);
    ct_proc_free(&p);
}
END_TEST

Suite *comm_kernels_suite(void)
{
    Suite *s = suite_create("comm_kernels");
    TCase *tc = tcase_create("comm_kernels");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, builtin_table_names_real_communication_kernels);
    tcase_add_test(tc, a_file_extends_the_table_and_its_entries_win);
    tcase_add_test(tc, no_builtin_replaces_the_table);
    tcase_add_test(tc, a_bad_file_is_refused_naming_the_file_line_and_allowed_ops);
    tcase_add_test(tc, a_custom_allreduce_kernel_counts_as_communication);
    tcase_add_test(tc, without_a_table_entry_the_kernel_is_compute);
    tcase_add_test(tc, copies_inside_an_nccl_call_are_its_gpu_time);
    tcase_add_test(tc, copies_inside_a_timed_nccl_call_are_communication);
    suite_add_tcase(s, tc);
    return s;
}
