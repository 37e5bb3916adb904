/*
 * test_fakegpu_seam.c - the resolver seam that a simulated NCCL will use:
 * an op whose end is decided later (FG_OP_EXTERNAL with a resolver).  This
 * program links the fake's objects directly (not libcuda.so.1) so that it
 * can call the hidden fg_ helpers, as an extension compiled into the
 * library would.
 */
#include "fg_internal.h"

#include <check.h>
#include <stdlib.h>

#define CU_OK(call) ck_assert_int_eq((call), CUDA_SUCCESS)

static int released;       /* set by the "peer" thread */
static int64_t release_ns; /* when the peers arrived */
static int resolver_calls;

static bool peers_arrived(int64_t start_ns, int64_t *end_ns, void *arg)
{
    (void)arg;
    resolver_calls++;
    if (!__atomic_load_n(&released, __ATOMIC_ACQUIRE))
        return false;
    *end_ns = (release_ns > start_ns ? release_ns : start_ns) + 1000000; /* +1 ms of transfer */
    return true;
}

static void *peer_thread(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 30 * 1000000};
    nanosleep(&ts, NULL);
    release_ns = fg_now();
    __atomic_store_n(&released, 1, __ATOMIC_RELEASE);
    return NULL;
}

static double now_ms(void)
{
    return (double)fg_now() / 1e6;
}

START_TEST(resolver_op_completes_only_when_resolved)
{
    CUcontext ctx;
    CUstream s;
    CUmodule m;
    CUfunction after;
    CU_OK(cuInit(0));
    CU_OK(cuDevicePrimaryCtxRetain(&ctx, 0));
    CU_OK(cuCtxSetCurrent(ctx));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuModuleLoadData(&m, "x"));
    CU_OK(cuModuleGetFunction(&after, m, "after__1000us"));

    double t0 = now_ms();
    FG_LOCK();
    CUresult rc;
    fg_stream *st = fg_stream_get(s, false, &rc);
    fg_desc d = {.kind = FG_OP_EXTERNAL, .name = "ncclAllReduce", .resolve = peers_arrived};
    rc = fg_submit(st, &d, false);
    FG_UNLOCK();
    CU_OK(rc);
    CU_OK(cuLaunchKernel(after, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    CUevent done;
    CU_OK(cuEventCreate(&done, 0));
    CU_OK(cuEventRecord(done, s));

    pthread_t peer;
    ck_assert_int_eq(pthread_create(&peer, NULL, peer_thread, NULL), 0);
    ck_assert_int_eq(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    ck_assert_int_eq(cuEventQuery(done), CUDA_ERROR_NOT_READY);
    CU_OK(cuStreamSynchronize(s)); /* polls the resolver until the peer arrives */
    pthread_join(peer, NULL);
    /* 30 ms until the peers arrive, 1 ms of collective, 1 ms of kernel. */
    ck_assert_double_ge(now_ms() - t0, 32.0);
    ck_assert_int_gt(resolver_calls, 1);
    FG_LOCK();
    int64_t end = st->last->end_ns;
    FG_UNLOCK();
    ck_assert_int_eq(end, release_ns + 2000000);
}
END_TEST

int main(void)
{
    unsetenv("FAKEGPU_KERNEL_SCALE");
    Suite *su = suite_create("fakegpu-seam");
    TCase *tc = tcase_create("resolver");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, resolver_op_completes_only_when_resolved);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
