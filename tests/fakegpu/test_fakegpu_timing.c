/*
 * test_fakegpu_timing.c - virtual-time behaviour of the simulated driver:
 * kernel durations, FIFO streams, concurrency, implicit legacy-stream
 * synchronisation, per-thread streams, events, copies, memsets, host
 * functions and graph replay.
 *
 * Tolerances.  These tests run on busy 2-core VMs, where a thread can lose
 * the CPU for milliseconds.  Two kinds of checks are used:
 *  - virtual durations read from events recorded behind BLOCKER are exact
 *    (the fake computes them, no host timing involved), so they are checked
 *    to 1 us (EXACT_MS), which float milliseconds resolve easily;
 *  - wall-clock durations have strict lower bounds (a synchronise must
 *    never return early) and loose upper bounds: at least +50% or +10 ms,
 *    whichever is larger, and always below the value that would indicate
 *    the wrong behaviour (e.g. serialisation instead of concurrency).
 */
#include "test_fakegpu.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define EXACT_MS 0.001

/* ------------------------------------------------------------- kernels */

START_TEST(kernel_duration_from_name_suffix)
{
    tf_setup();
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    tf_launch(BLOCKER, s);
    CUevent e0 = tf_record(s);
    tf_launch("gemm__2000us", s);
    CUevent e1 = tf_record(s);
    tf_launch("tiny__500ns", s);
    CUevent e2 = tf_record(s);
    tf_launch("no_suffix_kernel", s);
    CUevent e3 = tf_record(s);
    tf_launch("not_a_suffix__12ms", s); /* only us and ns count: default */
    CUevent e4 = tf_record(s);
    ck_assert_double_eq_tol(tf_elapsed(e0, e1), 2.0, EXACT_MS);
    ck_assert_double_eq_tol(tf_elapsed(e1, e2), 0.0005, 1e-5);
    ck_assert_double_eq_tol(tf_elapsed(e2, e3), 0.005, 1e-5);
    ck_assert_double_eq_tol(tf_elapsed(e3, e4), 0.005, 1e-5);
}
END_TEST

START_TEST(kernel_scale_env_multiplies_durations_except_nccl)
{
    setenv("FAKEGPU_KERNEL_SCALE", "0.5", 1);
    tf_setup();
    CUstream s;
    CU_OK(cuStreamCreate(&s, 0));
    tf_launch(BLOCKER, s);
    CUevent e0 = tf_record(s);
    tf_launch("k__4000us", s);
    CUevent e1 = tf_record(s);
    tf_launch("ncclDevKernel_AllReduce_Sum_f32__4000us", s);
    CUevent e2 = tf_record(s);
    tf_launch("plain", s);
    CUevent e3 = tf_record(s);
    ck_assert_double_eq_tol(tf_elapsed(e0, e1), 2.0, EXACT_MS);
    ck_assert_double_eq_tol(tf_elapsed(e1, e2), 4.0, EXACT_MS);
    ck_assert_double_eq_tol(tf_elapsed(e2, e3), 0.0025, 1e-5);
}
END_TEST

START_TEST(launch_variants_take_name_derived_time)
{
    tf_setup();
    CUstream s;
    CU_OK(cuStreamCreate(&s, 0));
    tf_launch(BLOCKER, s);
    CUevent e0 = tf_record(s);
    CUlaunchConfig cfg = {.gridDimX = 4,
                          .gridDimY = 1,
                          .gridDimZ = 1,
                          .blockDimX = 128,
                          .blockDimY = 1,
                          .blockDimZ = 1,
                          .hStream = s};
    CU_OK(cuLaunchKernelEx(&cfg, tf_kernel("ex__1000us"), NULL, NULL));
    CUevent e1 = tf_record(s);
    CU_OK(cuLaunchCooperativeKernel(tf_kernel("coop__3000us"), 2, 1, 1, 32, 1, 1, 0, s, NULL));
    CUevent e2 = tf_record(s);
    ck_assert_double_eq_tol(tf_elapsed(e0, e1), 1.0, EXACT_MS);
    ck_assert_double_eq_tol(tf_elapsed(e1, e2), 3.0, EXACT_MS);
}
END_TEST

TCase *tf_timing_kernels(void)
{
    TCase *tc = tcase_create("kernels");
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, kernel_duration_from_name_suffix);
    tcase_add_test(tc, kernel_scale_env_multiplies_durations_except_nccl);
    tcase_add_test(tc, launch_variants_take_name_derived_time);
    return tc;
}

/* ------------------------------------------------------------- streams */

static int order_log[8];
static int order_n;
static double host_called_ms;

static void log_host(void *arg)
{
    order_log[order_n++] = (int)(intptr_t)arg;
    host_called_ms = tf_now_ms();
}

static CUstream callback_stream;
static CUresult callback_status = (CUresult)-1;

static void log_callback(CUstream s, CUresult status, void *arg)
{
    callback_stream = s;
    callback_status = status;
    log_host(arg);
}

START_TEST(ops_on_one_stream_run_in_fifo_order)
{
    tf_setup();
    CUstream s;
    CU_OK(cuStreamCreate(&s, 0));
    tf_launch(BLOCKER, s);
    CUevent e0 = tf_record(s);
    tf_launch("a__1000us", s);
    CU_OK(cuLaunchHostFunc(s, log_host, (void *)1));
    tf_launch("b__2000us", s);
    CU_OK(cuLaunchHostFunc(s, log_host, (void *)2));
    CU_OK(cuLaunchHostFunc(s, log_host, (void *)3));
    CUevent e1 = tf_record(s);
    CU_OK(cuStreamSynchronize(s));
    ck_assert_int_eq(order_n, 3);
    ck_assert_int_eq(order_log[0], 1);
    ck_assert_int_eq(order_log[1], 2);
    ck_assert_int_eq(order_log[2], 3);
    /* Host functions take real (small) time; the kernels 3 ms exactly. */
    ck_assert_float_ge(tf_elapsed(e0, e1), 3.0f);
}
END_TEST

START_TEST(two_streams_run_concurrently)
{
    /* 10 ms kernels rather than 2 ms: the wall-clock bounds below then
     * tolerate 9.9 ms of host stalls while still telling concurrent (10 ms)
     * from serialised (20 ms). */
    tf_setup();
    CUstream a, b;
    CU_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    double t0 = tf_now_ms();
    tf_launch("ka__10000us", a);
    tf_launch("kb__10000us", b);
    CUevent ea = tf_record(a), eb = tf_record(b);
    CU_OK(cuCtxSynchronize());
    double two_streams = tf_now_ms() - t0;
    ck_assert_double_ge(two_streams, 10.0);
    ck_assert_double_lt(two_streams, 19.9);
    /* Virtual timeline: both ended within the launch-to-launch gap. */
    ck_assert_float_lt(tf_elapsed(ea, eb), 5.0f);
    ck_assert_float_gt(tf_elapsed(ea, eb), -5.0f);

    t0 = tf_now_ms();
    tf_launch("ka__10000us", a);
    tf_launch("kb__10000us", a);
    CU_OK(cuStreamSynchronize(a));
    double one_stream = tf_now_ms() - t0;
    ck_assert_double_ge(one_stream, 20.0);
    ck_assert_double_lt(one_stream, 40.0);
}
END_TEST

START_TEST(legacy_stream_waits_for_blocking_streams)
{
    tf_setup();
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
    tf_launch("work__10000us", s);
    CUevent es = tf_record(s);
    tf_launch("legacy__1000us", CU_STREAM_LEGACY);
    CUevent el = tf_record(CU_STREAM_LEGACY);
    ck_assert_double_eq_tol(tf_elapsed(es, el), 1.0, EXACT_MS);
    /* Handle 0 in a legacy entry point is the legacy stream too. */
    tf_launch("work__10000us", s);
    CUevent es2 = tf_record(s);
    tf_launch("legacy0__2000us", 0);
    CUevent el2 = tf_record(0);
    ck_assert_double_eq_tol(tf_elapsed(es2, el2), 2.0, EXACT_MS);
}
END_TEST

START_TEST(blocking_stream_waits_for_prior_legacy_work)
{
    tf_setup();
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
    tf_launch("legacy__10000us", CU_STREAM_LEGACY);
    CUevent el = tf_record(CU_STREAM_LEGACY);
    tf_launch("after__1000us", s);
    CUevent es = tf_record(s);
    ck_assert_double_eq_tol(tf_elapsed(el, es), 1.0, EXACT_MS);
}
END_TEST

START_TEST(non_blocking_stream_is_exempt_from_legacy_sync)
{
    tf_setup();
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    tf_launch("long__20000us", s);
    CUevent es = tf_record(s);
    tf_launch("short__1000us", CU_STREAM_LEGACY);
    CUevent el = tf_record(CU_STREAM_LEGACY);
    /* The legacy kernel did not wait: it ended ~19 ms before s's kernel. */
    ck_assert_float_lt(tf_elapsed(es, el), -10.0f);

    tf_launch("long__20000us", CU_STREAM_LEGACY);
    CUevent el2 = tf_record(CU_STREAM_LEGACY);
    tf_launch("short__1000us", s);
    CUevent es2 = tf_record(s);
    ck_assert_float_lt(tf_elapsed(el2, es2), -10.0f);
}
END_TEST

typedef struct pt_result {
    CUcontext ctx;
    CUevent done;
    unsigned long long id, id_ptsz0;
} pt_result;

CUresult cuStreamGetId_ptsz(CUstream hStream,
                            unsigned long long *streamId); /* not in the public cuda.h */

static void *pt_thread(void *arg)
{
    pt_result *r = arg;
    CU_OK(cuCtxSetCurrent(r->ctx));
    tf_launch("pt__10000us", CU_STREAM_PER_THREAD);
    CU_OK(cuEventCreate(&r->done, 0));
    CU_OK(cuEventRecord(r->done, CU_STREAM_PER_THREAD));
    CU_OK(cuStreamGetId(CU_STREAM_PER_THREAD, &r->id));
    CU_OK(cuStreamGetId_ptsz(0, &r->id_ptsz0));
    return NULL;
}

START_TEST(per_thread_streams_are_independent)
{
    CUcontext ctx = tf_setup();
    pt_result r[2] = {{.ctx = ctx}, {.ctx = ctx}};
    pthread_t t[2];
    double t0 = tf_now_ms();
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, pt_thread, &r[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    CU_OK(cuEventSynchronize(r[0].done));
    CU_OK(cuEventSynchronize(r[1].done));
    double wall = tf_now_ms() - t0;
    ck_assert_double_ge(wall, 10.0);
    ck_assert_double_lt(wall, 19.9); /* serialised would be 20 ms */
    ck_assert_float_lt(tf_elapsed(r[0].done, r[1].done), 5.0f);
    ck_assert_float_gt(tf_elapsed(r[0].done, r[1].done), -5.0f);
    ck_assert_uint_ne(r[0].id, r[1].id);
    ck_assert_uint_eq(r[0].id, r[0].id_ptsz0); /* _ptsz handle 0 = per-thread stream */
    unsigned long long legacy_id;
    CU_OK(cuStreamGetId(0, &legacy_id));
    ck_assert_uint_ne(legacy_id, r[0].id);
    ck_assert_uint_ne(legacy_id, r[1].id);
}
END_TEST

START_TEST(per_thread_stream_still_waits_for_legacy_stream)
{
    /* Documented choice, as in CUDA: the per-thread stream is a blocking
     * stream with respect to the legacy stream. */
    tf_setup();
    tf_launch("legacy__10000us", CU_STREAM_LEGACY);
    CUevent el = tf_record(CU_STREAM_LEGACY);
    tf_launch("pt__1000us", CU_STREAM_PER_THREAD);
    CUevent ep = tf_record(CU_STREAM_PER_THREAD);
    ck_assert_double_eq_tol(tf_elapsed(el, ep), 1.0, EXACT_MS);
}
END_TEST

START_TEST(sync_calls_block_until_completion)
{
    tf_setup();
    CUstream s;
    CU_OK(cuStreamCreate(&s, 0));
    double t0 = tf_now_ms();
    tf_launch("k__20000us", s);
    ck_assert_int_eq(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    CU_OK(cuStreamSynchronize(s));
    ck_assert_double_ge(tf_now_ms() - t0, 20.0);
    CU_OK(cuStreamQuery(s));

    t0 = tf_now_ms();
    tf_launch("k__20000us", s);
    CU_OK(cuCtxSynchronize());
    ck_assert_double_ge(tf_now_ms() - t0, 20.0);

    t0 = tf_now_ms();
    tf_launch("k__20000us", s);
    CUevent e = tf_record(s);
    CU_OK(cuEventSynchronize(e));
    ck_assert_double_ge(tf_now_ms() - t0, 20.0);

    t0 = tf_now_ms();
    tf_launch("k__20000us", s);
    CU_OK(cuCtxSynchronize_v2(NULL));
    ck_assert_double_ge(tf_now_ms() - t0, 20.0);
}
END_TEST

START_TEST(host_func_runs_on_worker_after_prior_work)
{
    tf_setup();
    CUstream s;
    CU_OK(cuStreamCreate(&s, 0));
    double t0 = tf_now_ms();
    tf_launch("k__10000us", s);
    CU_OK(cuLaunchHostFunc(s, log_host, (void *)7));
    ck_assert_int_eq(order_n, 0); /* not called inline */
    CU_OK(cuStreamSynchronize(s));
    ck_assert_int_eq(order_n, 1);
    ck_assert_int_eq(order_log[0], 7);
    ck_assert_double_ge(host_called_ms - t0, 10.0);

    /* The cuStreamAddCallback flavour gets the stream and a status. */
    CU_OK(cuStreamAddCallback(s, log_callback, (void *)8, 0));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_int_eq(order_n, 2);
    ck_assert_int_eq(order_log[1], 8);
    ck_assert_ptr_eq(callback_stream, s);
    ck_assert_int_eq(callback_status, CUDA_SUCCESS);
}
END_TEST

TCase *tf_timing_streams(void)
{
    TCase *tc = tcase_create("streams");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, ops_on_one_stream_run_in_fifo_order);
    tcase_add_test(tc, two_streams_run_concurrently);
    tcase_add_test(tc, legacy_stream_waits_for_blocking_streams);
    tcase_add_test(tc, blocking_stream_waits_for_prior_legacy_work);
    tcase_add_test(tc, non_blocking_stream_is_exempt_from_legacy_sync);
    tcase_add_test(tc, per_thread_streams_are_independent);
    tcase_add_test(tc, per_thread_stream_still_waits_for_legacy_stream);
    tcase_add_test(tc, sync_calls_block_until_completion);
    tcase_add_test(tc, host_func_runs_on_worker_after_prior_work);
    return tc;
}

/* -------------------------------------------------------------- events */

START_TEST(event_query_reports_not_ready_until_completion)
{
    tf_setup();
    CUevent never = tf_event();
    CU_OK(cuEventQuery(never)); /* never recorded: complete */
    CUstream s;
    CU_OK(cuStreamCreate(&s, 0));
    tf_launch("k__20000us", s);
    CUevent e = tf_record(s);
    ck_assert_int_eq(cuEventQuery(e), CUDA_ERROR_NOT_READY);
    CU_OK(cuEventSynchronize(e));
    CU_OK(cuEventQuery(e));
}
END_TEST

START_TEST(event_elapsed_time_reports_cuda_errors)
{
    tf_setup();
    CUstream s;
    CU_OK(cuStreamCreate(&s, 0));
    CUevent a = tf_event(), b = tf_event(), nt;
    CU_OK(cuEventCreate(&nt, CU_EVENT_DISABLE_TIMING));
    float ms;
    ck_assert_int_eq(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_INVALID_HANDLE); /* not recorded */
    CU_OK(cuEventRecord(a, s));
    tf_launch("k__20000us", s);
    CU_OK(cuEventRecord(b, s));
    CU_OK(cuEventRecord(nt, s));
    ck_assert_int_eq(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_NOT_READY);
    CU_OK(cuStreamSynchronize(s));
    ck_assert_int_eq(cuEventElapsedTime(&ms, a, nt), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(cuEventElapsedTime(NULL, a, b), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuEventElapsedTime(&ms, a, b));
    ck_assert_double_ge(ms, 20.0);
    ck_assert_double_lt(ms, 30.0); /* a was recorded just before the kernel */
}
END_TEST

START_TEST(stream_wait_event_delays_later_ops)
{
    tf_setup();
    CUstream a, b;
    CU_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    tf_launch("producer__10000us", a);
    CUevent ready = tf_record(a);
    CU_OK(cuStreamWaitEvent(b, ready, 0));
    tf_launch("consumer__1000us", b);
    CUevent done = tf_record(b);
    ck_assert_double_eq_tol(tf_elapsed(ready, done), 1.0, EXACT_MS);
}
END_TEST

TCase *tf_timing_events(void)
{
    TCase *tc = tcase_create("events");
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, event_query_reports_not_ready_until_completion);
    tcase_add_test(tc, event_elapsed_time_reports_cuda_errors);
    tcase_add_test(tc, stream_wait_event_delays_later_ops);
    return tc;
}

/* -------------------------------------------------------------- copies */

#define COPY_BYTES (8u << 20) /* 8 MiB: 8.39 ms at 1 GB/s */
#define COPY_MS    ((double)COPY_BYTES / 1e6)

START_TEST(pageable_async_copy_returns_after_completion)
{
    setenv("FAKEGPU_PCIE_GBPS", "1", 1);
    tf_setup();
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    char *host = malloc(COPY_BYTES);
    memset(host, 0x5a, COPY_BYTES);
    CUdeviceptr d;
    CU_OK(cuMemAlloc(&d, COPY_BYTES));
    double t0 = tf_now_ms();
    CU_OK(cuMemcpyHtoDAsync(d, host, COPY_BYTES, s));
    ck_assert_double_ge(tf_now_ms() - t0, COPY_MS);
    CU_OK(cuStreamQuery(s)); /* nothing left to wait for */
    ck_assert_int_eq(((unsigned char *)(uintptr_t)d)[COPY_BYTES - 1], 0x5a);
    free(host);
}
END_TEST

/* The bytes move when the copy is enqueued (a real memmove, slow under
 * sanitizers), so the virtual duration is made long next to it: 1 MiB at
 * 0.01 GB/s is 105 ms. */
#define PINNED_BYTES (1u << 20)
#define PINNED_MS    ((double)PINNED_BYTES / 1e4)

START_TEST(pinned_async_copy_returns_before_completion)
{
    setenv("FAKEGPU_PCIE_GBPS", "0.01", 1);
    tf_setup();
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    void *host;
    CU_OK(cuMemAllocHost(&host, PINNED_BYTES));
    memset(host, 0x33, PINNED_BYTES);
    CUdeviceptr d;
    CU_OK(cuMemAlloc(&d, PINNED_BYTES));
    double t0 = tf_now_ms();
    CU_OK(cuMemcpyHtoDAsync(d, host, PINNED_BYTES, s));
    ck_assert_double_lt(tf_now_ms() - t0, PINNED_MS / 2);
    ck_assert_int_eq(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    CU_OK(cuStreamSynchronize(s));
    ck_assert_double_ge(tf_now_ms() - t0, PINNED_MS);
    ck_assert_int_eq(((unsigned char *)(uintptr_t)d)[0], 0x33);

    /* Registered host memory is pinned too. */
    char *reg = malloc(PINNED_BYTES);
    CU_OK(cuMemHostRegister(reg, PINNED_BYTES, 0));
    t0 = tf_now_ms();
    CU_OK(cuMemcpyDtoHAsync(reg, d, PINNED_BYTES, s));
    ck_assert_double_lt(tf_now_ms() - t0, PINNED_MS / 2);
    CU_OK(cuStreamSynchronize(s));
    ck_assert_double_ge(tf_now_ms() - t0, PINNED_MS);
    ck_assert_int_eq((unsigned char)reg[PINNED_BYTES / 2], 0x33);
    CU_OK(cuMemHostUnregister(reg));
    free(reg);
    CU_OK(cuMemFreeHost(host));
    CU_OK(cuMemFree(d));
}
END_TEST

START_TEST(copy_duration_follows_bandwidth_env)
{
    /* Small buffers at low bandwidths: the real memmoves stay far shorter
     * than BLOCKER even under sanitizers. */
    setenv("FAKEGPU_PCIE_GBPS", "0.2", 1);
    setenv("FAKEGPU_HBM_GBPS", "0.4", 1);
    tf_setup();
    CUstream s;
    CU_OK(cuStreamCreate(&s, 0));
    void *host;
    CU_OK(cuMemAllocHost(&host, 400000));
    CUdeviceptr a, b;
    CU_OK(cuMemAlloc(&a, 400000));
    CU_OK(cuMemAlloc(&b, 400000));
    tf_launch(BLOCKER, s);
    CUevent e0 = tf_record(s);
    CU_OK(cuMemcpyHtoDAsync(a, host, 400000, s)); /* 2 ms at 0.2 GB/s */
    CUevent e1 = tf_record(s);
    CU_OK(cuMemcpyDtoDAsync(b, a, 400000, s)); /* 1 ms at 0.4 GB/s */
    CUevent e2 = tf_record(s);
    CU_OK(cuMemcpyAsync(b, a, 200000, s)); /* unified, device-device: 0.5 ms */
    CUevent e3 = tf_record(s);
    CU_OK(cuMemsetD32Async(a, 7, 100000, s)); /* memset: 400 kB at HBM, 1 ms */
    CUevent e4 = tf_record(s);
    ck_assert_double_eq_tol(tf_elapsed(e0, e1), 2.0, EXACT_MS);
    ck_assert_double_eq_tol(tf_elapsed(e1, e2), 1.0, EXACT_MS);
    ck_assert_double_eq_tol(tf_elapsed(e2, e3), 0.5, EXACT_MS);
    ck_assert_double_eq_tol(tf_elapsed(e3, e4), 1.0, EXACT_MS);
}
END_TEST

START_TEST(sync_copies_and_memsets_move_bytes_and_block)
{
    setenv("FAKEGPU_HBM_GBPS", "1", 1);
    tf_setup();
    CUdeviceptr d;
    CU_OK(cuMemAlloc(&d, COPY_BYTES));
    double t0 = tf_now_ms();
    CU_OK(cuMemsetD32(d, 0xdeadbeef, COPY_BYTES / 4));
    ck_assert_double_ge(tf_now_ms() - t0, COPY_MS);
    uint32_t words[4];
    CU_OK(cuMemcpyDtoH(words, d + 64, sizeof words));
    for (int i = 0; i < 4; i++)
        ck_assert_uint_eq(words[i], 0xdeadbeefu);
    CU_OK(cuMemsetD16(d, 0x1234, 2));
    CU_OK(cuMemsetD8(d + 4, 0x99, 1));
    unsigned char bytes[6];
    CU_OK(cuMemcpyDtoH(bytes, d, sizeof bytes));
    ck_assert_uint_eq(bytes[0], 0x34);
    ck_assert_uint_eq(bytes[1], 0x12);
    ck_assert_uint_eq(bytes[4], 0x99);
    ck_assert_uint_eq(bytes[5], 0xbe);
    /* 2D: rows of 3 bytes at pitch 8 */
    CU_OK(cuMemsetD2D8(d, 8, 0x42, 3, 2));
    unsigned char row[11];
    CU_OK(cuMemcpyDtoH(row, d, sizeof row));
    ck_assert_uint_eq(row[2], 0x42);
    ck_assert_uint_ne(row[3], 0x42);
    ck_assert_uint_eq(row[10], 0x42);
    /* A 2D copy honours both pitches. */
    char src[4][5] = {"abcd", "efgh", "ijkl", "mnop"};
    char dst[4][3] = {{0}};
    CUDA_MEMCPY2D c2 = {.srcMemoryType = CU_MEMORYTYPE_HOST,
                        .srcHost = src,
                        .srcPitch = 5,
                        .dstMemoryType = CU_MEMORYTYPE_HOST,
                        .dstHost = dst,
                        .dstPitch = 3,
                        .WidthInBytes = 2,
                        .Height = 4};
    CU_OK(cuMemcpy2D(&c2));
    ck_assert_int_eq(dst[3][0], 'm');
    ck_assert_int_eq(dst[2][1], 'j');
    /* Bad device pointers are errors, not crashes. */
    ck_assert_int_eq(cuMemsetD8(0x1000, 0, 16), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemcpyHtoD(0, bytes, 4), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemcpyDtoH(bytes, d + COPY_BYTES - 2, 4), CUDA_ERROR_INVALID_VALUE);
}
END_TEST

/* A synchronous copy's host call returns when the copy ends, as the real
 * driver's does (it spins, staging pageable memory meanwhile), not a timer
 * latency later. 4 KB at 0.05 GB/s is an 82 us transfer (the memmove of
 * 4 KB is noise even under sanitizers); a sleep until its end overshoots by
 * at least the kernel's 50 us timer slack, so the fastest of 31 calls (one
 * of them runs unpreempted even on a busy VM) must end within 45 us of the
 * transfer, and never before it. Buffers are touched first: a first
 * touch's page faults are the host's (a real driver has them too). */
#define SYNC_BYTES 4096u
#define SYNC_MS    ((double)SYNC_BYTES / 5e4)

START_TEST(a_synchronous_copy_returns_when_the_copy_ends)
{
    setenv("FAKEGPU_PCIE_GBPS", "0.05", 1);
    tf_setup();
    char *host = malloc(SYNC_BYTES);
    memset(host, 1, SYNC_BYTES);
    CUdeviceptr d;
    CU_OK(cuMemAlloc(&d, SYNC_BYTES));
    CU_OK(cuMemcpyHtoD(d, host, SYNC_BYTES));
    double fastest = 1e9;
    for (int i = 0; i < 31; i++) {
        double t0 = tf_now_ms();
        CU_OK(i % 2 ? cuMemcpyDtoH(host, d, SYNC_BYTES) : cuMemcpyHtoD(d, host, SYNC_BYTES));
        double ms = tf_now_ms() - t0;
        ck_assert_double_ge(ms, SYNC_MS);
        if (ms < fastest)
            fastest = ms;
    }
    ck_assert_double_lt(fastest - SYNC_MS, 0.045);
    CU_OK(cuMemFree(d));
    free(host);
}
END_TEST

START_TEST(peer_copy_between_devices_uses_hbm_bandwidth)
{
    setenv("FAKEGPU_DEVICES", "2", 1);
    setenv("FAKEGPU_HBM_GBPS", "1", 1);
    CU_OK(cuInit(0));
    CUcontext c0, c1;
    CU_OK(cuDevicePrimaryCtxRetain(&c0, 0));
    CU_OK(cuDevicePrimaryCtxRetain(&c1, 1));
    CUdeviceptr d0, d1;
    CU_OK(cuCtxSetCurrent(c1));
    CU_OK(cuMemAlloc(&d1, 2000000));
    CU_OK(cuCtxSetCurrent(c0));
    CU_OK(cuMemAlloc(&d0, 2000000));
    CU_OK(cuMemsetD8(d0, 0x77, 2000000));
    double t0 = tf_now_ms();
    CU_OK(cuMemcpyPeer(d1, c1, d0, c0, 2000000));
    ck_assert_double_ge(tf_now_ms() - t0, 2.0);
    ck_assert_int_eq(((unsigned char *)(uintptr_t)d1)[1999999], 0x77);
    int dev = -1;
    CU_OK(cuPointerGetAttribute(&dev, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, d1));
    ck_assert_int_eq(dev, 1);
}
END_TEST

TCase *tf_timing_copies(void)
{
    TCase *tc = tcase_create("copies");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, pageable_async_copy_returns_after_completion);
    tcase_add_test(tc, pinned_async_copy_returns_before_completion);
    tcase_add_test(tc, copy_duration_follows_bandwidth_env);
    tcase_add_test(tc, sync_copies_and_memsets_move_bytes_and_block);
    tcase_add_test(tc, a_synchronous_copy_returns_when_the_copy_ends);
    tcase_add_test(tc, peer_copy_between_devices_uses_hbm_bandwidth);
    return tc;
}

/* -------------------------------------------------------------- graphs */

static int graph_host_calls;

static void count_host(void *arg)
{
    (void)arg;
    graph_host_calls++;
}

START_TEST(graph_launch_replays_captured_kernels)
{
    setenv("FAKEGPU_HBM_GBPS", "1", 1);
    tf_setup();
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr d;
    CU_OK(cuMemAlloc(&d, 1000000));

    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUstreamCaptureStatus st;
    CU_OK(cuStreamIsCapturing(s, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    cuuint64_t id = 0;
    CUgraph g_seen = NULL;
    CU_OK(cuStreamGetCaptureInfo(s, &st, &id, &g_seen, NULL, NULL, NULL));
    ck_assert_ptr_nonnull(g_seen);
    double t0 = tf_now_ms();
    tf_launch("g1__100000us", s);
    tf_launch("g2__200000us", s);
    CU_OK(cuMemsetD8Async(d, 1, 1000000, s)); /* 1 ms */
    CU_OK(cuLaunchHostFunc(s, count_host, NULL));
    tf_launch("g3__300000us", s);
    ck_assert_int_eq(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUgraph g;
    CU_OK(cuStreamEndCapture(s, &g));
    ck_assert_ptr_eq(g, g_seen);
    CU_OK(cuStreamSynchronize(s));
    /* Recorded, not executed: 601 ms of work did not run. */
    ck_assert_double_lt(tf_now_ms() - t0, 300.0);
    ck_assert_int_eq(graph_host_calls, 0);

    CUgraphExec x;
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuGraphUpload(x, s));
    tf_launch(BLOCKER, s);
    CUevent e0 = tf_record(s);
    CU_OK(cuGraphLaunch(x, s));
    CUevent e1 = tf_record(s);
    CU_OK(cuGraphLaunch(x, s));
    CUevent e2 = tf_record(s);
    /* 601 ms of kernels and memset plus the host function's real time,
     * which includes the worker's wake-up latency (loose upper bound). */
    ck_assert_double_ge(tf_elapsed(e0, e1), 601.0 - EXACT_MS);
    ck_assert_double_lt(tf_elapsed(e0, e1), 621.0);
    ck_assert_double_ge(tf_elapsed(e1, e2), 601.0 - EXACT_MS);
    ck_assert_double_lt(tf_elapsed(e1, e2), 621.0);
    ck_assert_int_eq(graph_host_calls, 2);
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(g));
}
END_TEST

START_TEST(forked_capture_joins_through_events)
{
    tf_setup();
    CUstream a, b;
    CU_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    CUevent fork = tf_event(), join = tf_event();
    CU_OK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU_OK(cuEventRecord(fork, a));
    CU_OK(cuStreamWaitEvent(b, fork, 0));
    CUstreamCaptureStatus st;
    CU_OK(cuStreamIsCapturing(b, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    tf_launch("side__2000us", b);
    CU_OK(cuEventRecord(join, b));
    CU_OK(cuStreamWaitEvent(a, join, 0));
    tf_launch("main__1000us", a);
    ck_assert_int_eq(cuStreamEndCapture(b, &(CUgraph){0}), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
    CUgraph g;
    CU_OK(cuStreamEndCapture(a, &g));
    CU_OK(cuStreamIsCapturing(b, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_NONE);
    CUgraphExec x;
    CU_OK(cuGraphInstantiateWithFlags(&x, g, 0));
    tf_launch(BLOCKER, a);
    CUevent e0 = tf_record(a);
    CU_OK(cuGraphLaunch(x, a));
    CUevent e1 = tf_record(a);
    /* main waits for side through the join event: a chain, 2 + 1 ms. */
    ck_assert_double_eq_tol(tf_elapsed(e0, e1), 3.0, EXACT_MS);
}
END_TEST

TCase *tf_timing_graphs(void)
{
    TCase *tc = tcase_create("graphs");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, graph_launch_replays_captured_kernels);
    tcase_add_test(tc, forked_capture_joins_through_events);
    return tc;
}
