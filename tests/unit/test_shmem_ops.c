/*
 * NVSHMEM's collectives as the extraction reads them (format v7,
 * docs/nccl.md "NVSHMEM's host collectives"), on written traces: the
 * kernels NVSHMEM launched inside a recorded call are the op's GPU time
 * (their hull on its stream), and its kernels outside any recorded call
 * stay communication kernels of no op.
 */
#include <check.h>
#include <stdint.h>
#include <unistd.h>

#include "cutrace/format.h"
#include "cutrace/shmem_types.h"
#include "decoder/read/extract.h"
#include "decoder/read/timeline.h"
#include "decoder/read/tracefile.h"
#include "src/recorder.h"
#include "tests/unit/helpers.h"

#define T0 1000000000ull

static void emit(unsigned kind, const uint64_t *f, unsigned n)
{
    while (ct_emit(kind, CT_RF_NS, f, n) != 0)
        usleep(100);
}

/* A cuLaunchKernel of `name` [s, e) µs after T0 on stream `stream`
 * (correlation id corr), and its GPU kernel [gs, ge). */
static void launch(uint64_t corr, const char *name, uint64_t stream, uint64_t s, uint64_t e,
                   uint64_t gs, uint64_t ge)
{
    uint64_t a[CT_API_NFIELDS] = {0};
    a[CT_API_START] = T0 + 1000 * s;
    a[CT_API_END] = T0 + 1000 * e;
    a[CT_API_CORR] = corr;
    a[CT_API_FAMILY] = CT_FAM_LAUNCH;
    a[CT_API_FLAGS] = CT_APIF_ASYNC;
    a[CT_API_STREAM] = stream;
    a[CT_API_KERNEL] = ct_intern(name);
    a[CT_API_NAME] = ct_intern("cuLaunchKernel");
    emit(CT_REC_API, a, CT_API_NFIELDS);
    uint64_t g[CT_GPU_NFIELDS] = {0};
    g[CT_GPU_START] = T0 + 1000 * gs;
    g[CT_GPU_END] = T0 + 1000 * ge;
    g[CT_GPU_CORR] = corr;
    g[CT_GPU_TYPE] = CT_GPU_KERNEL;
    g[CT_GPU_STREAM] = stream;
    g[CT_GPU_NAME] = ct_intern(name);
    g[CT_GPU_SOURCE] = CT_SRC_CUPTI;
    emit(CT_REC_GPU, g, CT_GPU_NFIELDS);
}

/* nvshmemx_float_sum_reduce_on_stream of 1 Mi floats over 4 PEs, called
 * [s, e) µs after T0 on stream 9 (correlation id corr). */
static void shmem_reduce(uint64_t corr, uint64_t s, uint64_t e)
{
    uint64_t n[CT_NCCL_NFIELDS] = {0};
    n[CT_NCCL_START] = T0 + 1000 * s;
    n[CT_NCCL_END] = T0 + 1000 * e;
    n[CT_NCCL_OP] = CT_NCCL_OP_ALLREDUCE;
    n[CT_NCCL_COMM] = 0x5e3e;
    n[CT_NCCL_COUNT] = 1 << 20;
    n[CT_NCCL_DTYPE] = CT_NCCL_DTYPE_NVSHMEM | CT_SHMEM_T_float;
    n[CT_NCCL_BYTES] = 4 << 20;
    n[CT_NCCL_REDOP] = CT_SHMEM_OP_sum;
    n[CT_NCCL_ROOT] = (uint64_t)-1;
    n[CT_NCCL_PEER] = (uint64_t)-1;
    n[CT_NCCL_STREAM] = 9;
    n[CT_NCCL_CORR] = corr;
    n[CT_NCCL_NRANKS] = 4;
    emit(CT_REC_NCCL, n, CT_NCCL_NFIELDS);
}

/*
 * The reduce's call [100,110) launches its reduction kernel ([102,103),
 * GPU [200,260)) and a barrier kernel ([104,105), GPU [260,270)) on its
 * stream: the op's GPU time is their hull [200,270), one interval, of the
 * op, not a communication kernel of its own. A kernel of the job's on
 * another stream inside the call ([106,107), stream 10, GPU [200,230)) is
 * not the op's. NVSHMEM's kernel launched outside any recorded call
 * ([500,501), GPU [510,530)) is a communication kernel of no op. `dump`
 * and the exports (ct_trace_nccl_gpu) give the record the same hull.
 */
START_TEST(nvshmem_kernels_inside_its_call_are_the_ops_gpu_time)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "shmem.cutrace");
    ck_assert_int_eq(th_start(path, 1 << 16, 1), 0);
    launch(1, "nvshmemi_float_sum_rdxn_on_stream_kernel", 9, 102, 103, 200, 260);
    launch(2, "nvshmemi_barrier_on_stream_kernel", 9, 104, 105, 260, 270);
    launch(3, "model_layer__30us", 10, 106, 107, 200, 230);
    shmem_reduce(4, 100, 110);
    launch(5, "nvshmemi_alltoall_float_on_stream_kernel", 9, 500, 501, 510, 530);
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
    struct ct_proc p;
    char err[512];
    ck_assert_msg(ct_proc_extract_file(path, NULL, &p, err, sizeof(err)) == 0, "%s", err);
    const int64_t off = p.clock_offset;
    ck_assert_uint_eq(p.nnccl, 1);
    ck_assert_int_eq(p.nccl[0].lib, CT_LIB_NVSHMEM);
    ck_assert_uint_eq(p.nccl[0].bytes, 4 << 20);
    ck_assert_uint_eq(p.nops, 3); /* the hull, the job's kernel, the lone alltoall kernel */
    int hull = 0, mine = 0, lone = 0;
    for (size_t i = 0; i < p.nops; i++) {
        const struct ct_gpu_op *o = &p.ops[i];
        if (o->nccl == 0) {
            hull++;
            ck_assert_int_eq(o->s, (int64_t)T0 + 200000 + off);
            ck_assert_int_eq(o->e, (int64_t)T0 + 270000 + off);
            ck_assert_int_eq(o->nested, 0);
            ck_assert_int_eq(o->op, CT_NCCL_OP_ALLREDUCE);
        } else if (o->s == (int64_t)T0 + 510000 + off) {
            lone++;
            ck_assert_int_eq(o->nccl, -1);
            ck_assert_int_eq(o->op, CT_NCCL_OP_ALLTOALL); /* by the table: communication */
        } else {
            mine++;
            ck_assert_int_eq(o->nccl, -1);
            ck_assert_int_eq(o->cls, CT_CL_COMPUTE);
        }
    }
    ck_assert_int_eq(hull, 1);
    ck_assert_int_eq(mine, 1);
    ck_assert_int_eq(lone, 1);
    ct_proc_free(&p);
    /* dump's and the exports' view of the record: the same hull */
    struct ct_trace t;
    ck_assert_int_eq(ct_trace_load(&t, path, 1, err, sizeof(err)), 0);
    const struct ct_record *op = NULL;
    for (size_t i = 0; i < t.n; i++)
        if (t.recs[i].kind == CT_REC_NCCL)
            op = &t.recs[i];
    ck_assert_ptr_nonnull(op);
    uint64_t gs = 0, ge = 0;
    ck_assert_uint_eq(ct_trace_nccl_gpu(&t, op, &gs, &ge), CT_SRC_CUPTI);
    ck_assert_uint_eq(gs, T0 + 200000);
    ck_assert_uint_eq(ge, T0 + 270000);
    ct_trace_free(&t);
}
END_TEST

Suite *shmem_ops_suite(void)
{
    Suite *s = suite_create("shmem_ops");
    TCase *tc = tcase_create("shmem_ops");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, nvshmem_kernels_inside_its_call_are_the_ops_gpu_time);
    suite_add_tcase(s, tc);
    return s;
}
