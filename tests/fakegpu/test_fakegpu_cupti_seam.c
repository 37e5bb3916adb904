/*
 * test_fakegpu_cupti_seam.c - the fake CUPTI with resolver ops (the seam a
 * simulated NCCL uses): their end is unknown at enqueue, so their records,
 * and those of ops queued behind them, must be delivered only once the
 * resolver has decided, with the resolved times.  Like test_fakegpu_seam.c
 * this program links the driver's objects directly to reach fg_submit; it
 * exports its dynamic symbols so that the fake CUPTI finds
 * fakegpu_cupti_attach with dlsym(RTLD_DEFAULT).
 */
#include "fg_internal.h"

#include <check.h>
#include <cupti_activity.h> /* not cupti.h: it clashes with __CUDA_API_VERSION_INTERNAL */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CU_OK(call)    ck_assert_int_eq((call), CUDA_SUCCESS)
#define CUPTI_OK(call) ck_assert_int_eq((call), CUPTI_SUCCESS)

static int released;
static int64_t release_ns;

static bool peers_arrived(int64_t start_ns, int64_t *end_ns, void *arg)
{
    (void)arg;
    if (!__atomic_load_n(&released, __ATOMIC_ACQUIRE))
        return false;
    *end_ns = (release_ns > start_ns ? release_ns : start_ns) + 1000000; /* +1 ms of transfer */
    return true;
}

static void *peer_thread(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 40 * 1000000};
    nanosleep(&ts, NULL);
    release_ns = fg_now();
    __atomic_store_n(&released, 1, __ATOMIC_RELEASE);
    return NULL;
}

static pthread_mutex_t got_lock = PTHREAD_MUTEX_INITIALIZER;
static CUpti_ActivityKernel10 got[8];
static int ngot;

static void CUPTIAPI requested(uint8_t **buffer, size_t *size, size_t *max)
{
    *size = 16384;
    *buffer = aligned_alloc(8, *size);
    *max = 0;
}

static void CUPTIAPI completed(CUcontext c, uint32_t s, uint8_t *buffer, size_t size, size_t valid)
{
    (void)c;
    (void)s;
    (void)size;
    CUpti_Activity *rec = NULL;
    pthread_mutex_lock(&got_lock);
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS)
        if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && ngot < 8)
            memcpy(&got[ngot++], rec, sizeof got[0]);
    pthread_mutex_unlock(&got_lock);
    free(buffer);
}

static int count(void)
{
    pthread_mutex_lock(&got_lock);
    int n = ngot;
    pthread_mutex_unlock(&got_lock);
    return n;
}

START_TEST(resolver_op_records_wait_for_resolution)
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
    CUPTI_OK(cuptiActivityRegisterCallbacks(requested, completed));
    CUPTI_OK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));

    FG_LOCK();
    CUresult rc;
    fg_stream *st = fg_stream_get(s, false, &rc);
    fg_desc d = {
        .kind = FG_OP_EXTERNAL, .name = "ncclDevKernel_AllReduce", .resolve = peers_arrived};
    rc = fg_submit(st, &d, false);
    FG_UNLOCK();
    CU_OK(rc);
    CU_OK(cuLaunchKernel(after, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    pthread_t peer;
    ck_assert_int_eq(pthread_create(&peer, NULL, peer_thread, NULL), 0);

    /* Unresolved: nothing goes out, flushed or not (two delivery periods). */
    CUPTI_OK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    struct timespec ts = {0, 20 * 1000000};
    nanosleep(&ts, NULL);
    ck_assert_int_eq(count(), 0);

    CU_OK(cuStreamSynchronize(s));
    pthread_join(peer, NULL);
    CUPTI_OK(cuptiActivityFlushAll(0));
    ck_assert_int_eq(count(), 2);
    const CUpti_ActivityKernel10 *nccl = strcmp(got[0].name, "after__1000us") ? &got[0] : &got[1];
    const CUpti_ActivityKernel10 *k = nccl == &got[0] ? &got[1] : &got[0];
    ck_assert_str_eq(nccl->name, "ncclDevKernel_AllReduce");
    ck_assert_int_eq((int64_t)nccl->end, release_ns + 1000000);
    ck_assert_uint_eq(k->start, nccl->end);
    ck_assert_uint_eq(k->end, nccl->end + 1000000);
    ck_assert_uint_ne(nccl->correlationId, k->correlationId);
}
END_TEST

int main(void)
{
    unsetenv("FAKEGPU_KERNEL_SCALE");
    unsetenv("FAKEGPU_CUPTI_BUSY");
    Suite *su = suite_create("fakegpu-cupti-seam");
    TCase *tc = tcase_create("resolver");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, resolver_op_records_wait_for_resolution);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
