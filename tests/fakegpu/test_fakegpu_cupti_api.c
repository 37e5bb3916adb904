/*
 * test_fakegpu_cupti_api.c - the fake CUPTI's entry points: version,
 * result strings, timestamps, subscription (one subscriber;
 * FAKEGPU_CUPTI_BUSY=1), kind enabling and the KERNEL alias, external
 * correlation stacks, cuptiFinalize; and buffers: cuptiActivityGetNextRecord
 * walking a delivered buffer, maxNumRecords, dropped records.
 */
#include "test_fakegpu_cupti.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- session */

START_TEST(version_strings_and_timestamps)
{
    uint32_t v = 0;
    CUPTI_OK(cuptiGetVersion(&v));
    ck_assert_uint_eq(v, CUPTI_API_VERSION);
    ck_assert_int_eq(cuptiGetVersion(NULL), CUPTI_ERROR_INVALID_PARAMETER);

    const char *str = NULL;
    CUPTI_OK(cuptiGetResultString(CUPTI_SUCCESS, &str));
    ck_assert_str_eq(str, "CUPTI_SUCCESS");
    CUPTI_OK(cuptiGetResultString(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, &str));
    ck_assert_str_eq(str, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED");
    CUPTI_OK(cuptiGetResultString(CUPTI_ERROR_UNKNOWN, &str));
    ck_assert_str_eq(str, "CUPTI_ERROR_UNKNOWN");
    ck_assert_int_eq(cuptiGetResultString((CUptiResult)500, &str), CUPTI_ERROR_INVALID_PARAMETER);
    ck_assert_int_eq(cuptiGetResultString(CUPTI_SUCCESS, NULL), CUPTI_ERROR_INVALID_PARAMETER);

    /* CLOCK_MONOTONIC by default, the registered callback's clock after. */
    uint64_t t = 0;
    int64_t before = tc_now_ns();
    CUPTI_OK(cuptiGetTimestamp(&t));
    int64_t after = tc_now_ns();
    ck_assert_int_ge((int64_t)t, before);
    ck_assert_int_le((int64_t)t, after);
    ck_assert_int_eq(cuptiActivityRegisterTimestampCallback(NULL), CUPTI_ERROR_INVALID_PARAMETER);
    CUPTI_OK(cuptiActivityRegisterTimestampCallback(tc_timestamp)); /* before any enable */
    before = tc_now_ns();
    CUPTI_OK(cuptiGetTimestamp(&t));
    after = tc_now_ns();
    ck_assert_int_ge((int64_t)t, before + TC_TS_OFFSET);
    ck_assert_int_le((int64_t)t, after + TC_TS_OFFSET);
    ck_assert_int_eq(cuptiGetTimestamp(NULL), CUPTI_ERROR_INVALID_PARAMETER);
    CUPTI_OK(cuptiActivityFlushPeriod(5));
}
END_TEST

START_TEST(one_subscriber_at_a_time)
{
    CUpti_SubscriberHandle a = NULL, b = NULL;
    CUPTI_OK(cuptiSubscribe(&a, NULL, NULL));
    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq(cuptiSubscribe(&b, NULL, NULL),
                     CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    ck_assert_int_eq(cuptiSubscribe(NULL, NULL, NULL), CUPTI_ERROR_INVALID_PARAMETER);
    ck_assert_int_eq(cuptiUnsubscribe((CUpti_SubscriberHandle)&b), CUPTI_ERROR_INVALID_PARAMETER);
    CUPTI_OK(cuptiUnsubscribe(a));
    ck_assert_int_eq(cuptiUnsubscribe(a), CUPTI_ERROR_INVALID_PARAMETER);
    CUPTI_OK(cuptiSubscribe(&b, NULL, NULL)); /* free again */
    CUPTI_OK(cuptiUnsubscribe(b));
}
END_TEST

START_TEST(busy_env_refuses_everything)
{
    setenv("FAKEGPU_CUPTI_BUSY", "1", 1);
    CUcontext ctx;
    tc_init_cuda(&ctx);
    CUpti_SubscriberHandle a = NULL;
    ck_assert_int_eq(cuptiSubscribe(&a, NULL, NULL),
                     CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    ck_assert_int_eq(cuptiActivityRegisterCallbacks(tc_buffer_requested, tc_buffer_completed),
                     CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    ck_assert_int_eq(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
                     CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    ck_assert_int_eq(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY),
                     CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    ck_assert_int_eq(cuptiActivityFlushAll(0), CUPTI_ERROR_INVALID_OPERATION);
    unsetenv("FAKEGPU_CUPTI_BUSY"); /* the other profiler went away */
    CUPTI_OK(cuptiSubscribe(&a, NULL, NULL));
}
END_TEST

START_TEST(kind_errors_and_kernel_alias)
{
    CUcontext ctx;
    tc_init_cuda(&ctx);
    ck_assert_int_eq(cuptiActivityFlushAll(0), CUPTI_ERROR_INVALID_OPERATION); /* no callbacks */
    ck_assert_int_eq(cuptiActivityRegisterCallbacks(NULL, tc_buffer_completed),
                     CUPTI_ERROR_INVALID_PARAMETER);
    CUPTI_OK(cuptiActivityRegisterCallbacks(tc_buffer_requested, tc_buffer_completed));
    ck_assert_int_eq(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER), CUPTI_ERROR_NOT_COMPATIBLE);
    ck_assert_int_eq(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_INVALID), CUPTI_ERROR_INVALID_KIND);
    ck_assert_int_eq(cuptiActivityEnable((CUpti_ActivityKind)100000), CUPTI_ERROR_INVALID_KIND);
    ck_assert_int_eq(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER), CUPTI_ERROR_NOT_COMPATIBLE);

    /* KERNEL alone gives KERNEL records... */
    CUPTI_OK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_KERNEL));
    CUstream s;
    CU_OK(cuStreamCreate(&s, 0));
    tc_launch("k1__10us", s);
    CU_OK(cuStreamSynchronize(s));
    CUPTI_OK(cuptiActivityFlushAll(0));
    ck_assert_uint_eq(tc_count(CUPTI_ACTIVITY_KIND_KERNEL), 1);
    /* ... with CONCURRENT_KERNEL too, CONCURRENT_KERNEL records. */
    CUPTI_OK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    tc_launch("k2__10us", s);
    CU_OK(cuStreamSynchronize(s));
    CUPTI_OK(cuptiActivityFlushAll(0));
    ck_assert_uint_eq(tc_count(CUPTI_ACTIVITY_KIND_KERNEL), 1);
    ck_assert_uint_eq(tc_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), 1);
    /* Disabled kinds record nothing; disabled SYNCHRONIZATION never was on. */
    CUPTI_OK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_KERNEL));
    CUPTI_OK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    tc_launch("k3__10us", s);
    CU_OK(cuStreamSynchronize(s));
    CUPTI_OK(cuptiActivityFlushAll(0));
    ck_assert_uint_eq(tc_total(), 2);
}
END_TEST

static void *pop_on_other_thread(void *arg)
{
    (void)arg;
    uint64_t id = 0;
    ck_assert_int_eq(
        cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &id),
        CUPTI_ERROR_QUEUE_EMPTY);
    return NULL;
}

START_TEST(external_correlation_stacks)
{
    const CUpti_ExternalCorrelationKind K0 = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                                        K1 = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1;
    uint64_t id = 0;
    ck_assert_int_eq(cuptiActivityPopExternalCorrelationId(K0, &id), CUPTI_ERROR_QUEUE_EMPTY);
    ck_assert_int_eq(
        cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_INVALID, 1),
        CUPTI_ERROR_INVALID_PARAMETER);
    ck_assert_int_eq(
        cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_SIZE, 1),
        CUPTI_ERROR_INVALID_PARAMETER);
    ck_assert_int_eq(
        cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_SIZE, &id),
        CUPTI_ERROR_INVALID_PARAMETER);
    /* LIFO per kind; deep stacks grow. */
    for (uint64_t i = 1; i <= 100; i++)
        CUPTI_OK(cuptiActivityPushExternalCorrelationId(K0, i));
    for (uint64_t i = 100; i > 1; i--) {
        CUPTI_OK(cuptiActivityPopExternalCorrelationId(K0, &id));
        ck_assert_uint_eq(id, i);
    }
    /* Per thread: another thread sees an empty stack. */
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, pop_on_other_thread, NULL), 0);
    pthread_join(t, NULL);

    /* Two kinds pushed: two external records for one call, the tops. */
    CUcontext ctx;
    tc_init_cuda(&ctx);
    tc_cupti_start(false);
    CUPTI_OK(cuptiActivityPushExternalCorrelationId(K0, 42)); /* above 1 */
    CUPTI_OK(cuptiActivityPushExternalCorrelationId(K1, 7));
    CUstream s;
    CU_OK(cuStreamCreate(&s, 0));
    tc_launch("corr__10us", s);
    CUPTI_OK(cuptiActivityPopExternalCorrelationId(K1, NULL));
    CUPTI_OK(cuptiActivityPopExternalCorrelationId(K0, &id));
    ck_assert_uint_eq(id, 42);
    tc_launch("nocorr__10us", s); /* K0 still holds 1 */
    CUPTI_OK(cuptiActivityPopExternalCorrelationId(K0, &id));
    ck_assert_uint_eq(id, 1);
    tc_launch("outside__10us", s); /* no external region */
    CU_OK(cuCtxSynchronize());
    CUPTI_OK(cuptiActivityFlushAll(0));
    const tc_rec *k = tc_kernel("corr__10us");
    ck_assert_ptr_nonnull(k);
    uint32_t corr = k->r.kernel.correlationId;
    size_t n0 = 0, n1 = 0;
    for (size_t i = 0; i < tc_total(); i++) {
        tc_rec r = tc_get(i);
        if (r.r.any.kind != CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION ||
            r.r.ext.correlationId != corr)
            continue;
        if (r.r.ext.externalKind == K0) {
            n0++;
            ck_assert_uint_eq(r.r.ext.externalId, 42);
        } else if (r.r.ext.externalKind == K1) {
            n1++;
            ck_assert_uint_eq(r.r.ext.externalId, 7);
        }
    }
    ck_assert_uint_eq(n0, 1);
    ck_assert_uint_eq(n1, 1);
    uint64_t ext = 0;
    ck_assert_uint_eq(tc_ext_for(tc_kernel("nocorr__10us")->r.kernel.correlationId, &ext), 1);
    ck_assert_uint_eq(ext, 1);
    ck_assert_uint_eq(tc_ext_for(tc_kernel("outside__10us")->r.kernel.correlationId, NULL), 0);
    ck_assert_uint_gt(tc_kernel("nocorr__10us")->r.kernel.correlationId, corr);
}
END_TEST

START_TEST(finalize_delivers_complete_and_stops)
{
    CUcontext ctx;
    tc_init_cuda(&ctx);
    tc_cupti_start(false);
    CUstream s;
    CU_OK(cuStreamCreate(&s, 0));
    tc_launch("before__10us", s);
    CU_OK(cuStreamSynchronize(s));
    tc_launch("pending__300000us", s); /* not complete at finalize: dropped */
    CUPTI_OK(cuptiFinalize());
    ck_assert_ptr_nonnull(tc_kernel("before__10us"));
    ck_assert_ptr_null(tc_kernel("pending__300000us"));
    size_t total = tc_total();
    /* Everything is off, callbacks included. */
    ck_assert_int_eq(cuptiActivityFlushAll(0), CUPTI_ERROR_INVALID_OPERATION);
    tc_launch("after__10us", s);
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_eq(tc_total(), total);
    /* A new session works. */
    tc_cupti_start(false);
    tc_launch("again__10us", s);
    CU_OK(cuStreamSynchronize(s));
    CUPTI_OK(cuptiActivityFlushAll(0));
    ck_assert_ptr_nonnull(tc_kernel("again__10us"));
    ck_assert_ptr_null(tc_kernel("after__10us"));
    ck_assert_ptr_null(tc_kernel("pending__300000us"));
}
END_TEST

TCase *tc_api_session(void)
{
    TCase *tc = tcase_create("session");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, version_strings_and_timestamps);
    tcase_add_test(tc, one_subscriber_at_a_time);
    tcase_add_test(tc, busy_env_refuses_everything);
    tcase_add_test(tc, kind_errors_and_kernel_alias);
    tcase_add_test(tc, external_correlation_stacks);
    tcase_add_test(tc, finalize_delivers_complete_and_stops);
    return tc;
}

/* ------------------------------------------------------------- buffers */

static size_t kind_size(CUpti_ActivityKind k)
{
    switch (k) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(CUpti_ActivityExternalCorrelation);
    default: return 0;
    }
}

START_TEST(get_next_record_walks_a_buffer)
{
    CUcontext ctx;
    tc_init_cuda(&ctx);
    tc_cupti_start(false);
    CUstream s;
    CUdeviceptr d;
    CU_OK(cuStreamCreate(&s, 0));
    CU_OK(cuMemAlloc(&d, 4096));
    CUPTI_OK(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, 9));
    tc_launch("walk__10us", s);
    CU_OK(cuMemsetD8Async(d, 1, 4096, s));
    CU_OK(cuMemcpyDtoDAsync(d, d + 2048, 1024, s));
    CU_OK(cuStreamSynchronize(s));
    CUPTI_OK(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, NULL));
    CUPTI_OK(cuptiActivityFlushAll(0));
    /* kernel, memset, memcpy, sync + one external record per call, in one
     * or more buffers (the background thread may have delivered some) */
    ck_assert_uint_eq(tc_total(), 8);

    uint8_t *buf;
    size_t nrec = 0;
    size_t valid = tc_last_raw(&buf, &nrec);
    CUpti_Activity *rec = NULL;
    size_t n = 0, offset = 0;
    CUptiResult rc;
    while ((rc = cuptiActivityGetNextRecord(buf, valid, &rec)) == CUPTI_SUCCESS) {
        /* Back to back: each record starts where the previous ended. */
        ck_assert_uint_eq((size_t)((uint8_t *)rec - buf), offset);
        size_t sz = kind_size(rec->kind);
        ck_assert_uint_ne(sz, 0);
        ck_assert_uint_eq(sz % 8, 0);
        offset += sz;
        n++;
    }
    ck_assert_int_eq(rc, CUPTI_ERROR_MAX_LIMIT_REACHED);
    ck_assert_uint_eq(offset, valid);
    ck_assert_uint_eq(n, nrec);
    ck_assert_uint_ge(n, 1);

    /* Errors: NULL arguments, a truncated record, garbage. */
    rec = NULL;
    ck_assert_int_eq(cuptiActivityGetNextRecord(NULL, valid, &rec), CUPTI_ERROR_INVALID_PARAMETER);
    ck_assert_int_eq(cuptiActivityGetNextRecord(buf, valid, NULL), CUPTI_ERROR_INVALID_PARAMETER);
    size_t first = kind_size(((CUpti_Activity *)(void *)buf)->kind);
    rec = NULL;
    ck_assert_int_eq(cuptiActivityGetNextRecord(buf, first - 8, &rec), CUPTI_ERROR_INVALID_KIND);
    rec = NULL;
    ck_assert_int_eq(cuptiActivityGetNextRecord(buf, 0, &rec), CUPTI_ERROR_MAX_LIMIT_REACHED);
    uint64_t garbage[8];
    memset(garbage, 0x5a, sizeof garbage);
    rec = NULL;
    ck_assert_int_eq(cuptiActivityGetNextRecord((uint8_t *)garbage, sizeof garbage, &rec),
                     CUPTI_ERROR_INVALID_KIND);
    free(buf);
}
END_TEST

START_TEST(max_records_per_buffer_is_honoured)
{
    __atomic_store_n(&tc_buf_max, 2, __ATOMIC_SEQ_CST);
    CUcontext ctx;
    tc_init_cuda(&ctx);
    tc_cupti_start(false);
    CUstream s;
    CU_OK(cuStreamCreate(&s, 0));
    for (int i = 0; i < 5; i++)
        tc_launch("many__1us", s);
    CU_OK(cuStreamSynchronize(s));
    CUPTI_OK(cuptiActivityFlushAll(0));
    ck_assert_uint_eq(tc_total(), 6); /* 5 kernels + the stream sync */
    ck_assert_uint_eq(tc_max_per_buffer(), 2);
    ck_assert_uint_ge(tc_buffers(), 3);
}
END_TEST

START_TEST(small_or_missing_buffers_drop_records)
{
    __atomic_store_n(&tc_buf_size, 16, __ATOMIC_SEQ_CST); /* smaller than any record */
    CUcontext ctx;
    tc_init_cuda(&ctx);
    CUPTI_OK(cuptiActivityRegisterCallbacks(tc_buffer_requested, tc_buffer_completed));
    CUPTI_OK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    size_t dropped = 99;
    ck_assert_int_eq(cuptiActivityGetNumDroppedRecords(NULL, 0, NULL),
                     CUPTI_ERROR_INVALID_PARAMETER);
    CUPTI_OK(cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped));
    ck_assert_uint_eq(dropped, 0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, 0));
    for (int i = 0; i < 3; i++)
        tc_launch("dropme__1us", s);
    CU_OK(cuStreamSynchronize(s));
    CUPTI_OK(cuptiActivityFlushAll(0));
    CUPTI_OK(cuptiActivityGetNumDroppedRecords(ctx, 0, &dropped));
    ck_assert_uint_eq(dropped, 3);
    CUPTI_OK(cuptiActivityGetNumDroppedRecords(ctx, 0, &dropped));
    ck_assert_uint_eq(dropped, 0); /* reset by reading */
    /* No buffer at all. */
    __atomic_store_n(&tc_buf_none, true, __ATOMIC_SEQ_CST);
    tc_launch("dropme__1us", s);
    tc_launch("dropme__1us", s);
    CU_OK(cuStreamSynchronize(s));
    CUPTI_OK(cuptiActivityFlushAll(0));
    CUPTI_OK(cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped));
    ck_assert_uint_eq(dropped, 2);
    /* Buffers are back: records flow again. */
    __atomic_store_n(&tc_buf_none, false, __ATOMIC_SEQ_CST);
    __atomic_store_n(&tc_buf_size, 4096, __ATOMIC_SEQ_CST);
    tc_launch("kept__1us", s);
    CU_OK(cuStreamSynchronize(s));
    CUPTI_OK(cuptiActivityFlushAll(0));
    ck_assert_uint_eq(tc_total(), 1);
    CUPTI_OK(cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped));
    ck_assert_uint_eq(dropped, 0);
}
END_TEST

TCase *tc_api_buffers(void)
{
    TCase *tc = tcase_create("buffers");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, get_next_record_walks_a_buffer);
    tcase_add_test(tc, max_records_per_buffer_is_honoured);
    tcase_add_test(tc, small_or_missing_buffers_drop_records);
    return tc;
}
