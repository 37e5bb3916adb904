/*
 * test_fakegpu_cupti_pm.c - the fake CUPTI's PM sampling
 * (fg_cupti_pmsampling.c, README.md "Fake CUPTI: PM sampling") against the
 * simulated driver's schedule: the refusals CUPTI documents, an older part
 * without it, each sample the time-weighted truth of the kernels' profiles,
 * a full counter data image and an overflowing hardware buffer. Each test
 * runs in its own forked process (a fresh driver and CUPTI).
 */
#include <check.h>
#include <cuda.h>
#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CU_OK(call)    ck_assert_int_eq((call), CUDA_SUCCESS)
#define CUPTI_OK(call) ck_assert_int_eq((call), CUPTI_SUCCESS)

static const char *const SM = "sm__cycles_active.avg.pct_of_peak_sustained_elapsed";
static const char *const TC = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed";
static const char *const DRAM = "dram__throughput.avg.pct_of_peak_sustained_elapsed";

struct pm {
    CUpti_Profiler_Host_Object *host;
    CUpti_PmSampling_Object *obj;
    uint8_t config[256], *image;
    size_t config_size, image_size;
};

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Initialise, host object with names, enable on device 0, configure
 * (interval_ns, hardware buffer hw bytes) and an image of max samples. */
static void pm_setup(struct pm *p, const char **names, size_t n, uint64_t interval_ns, size_t hw,
                     uint32_t max)
{
    CUpti_Profiler_Initialize_Params in = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE, NULL};
    CUPTI_OK(cuptiProfilerInitialize(&in));
    CUpti_Device_GetChipName_Params chip = {CUpti_Device_GetChipName_Params_STRUCT_SIZE, NULL, 0,
                                            NULL};
    CUPTI_OK(cuptiDeviceGetChipName(&chip));
    ck_assert_str_eq(chip.pChipName, "GH100");
    CUpti_Profiler_Host_Initialize_Params hi = {CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE,
                                                NULL,
                                                CUPTI_PROFILER_TYPE_PM_SAMPLING,
                                                chip.pChipName,
                                                NULL,
                                                NULL};
    CUPTI_OK(cuptiProfilerHostInitialize(&hi));
    p->host = hi.pHostObject;
    CUpti_Profiler_Host_ConfigAddMetrics_Params am = {
        CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE, NULL, p->host, names, n};
    CUPTI_OK(cuptiProfilerHostConfigAddMetrics(&am));
    CUpti_Profiler_Host_GetConfigImageSize_Params cs = {
        CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE, NULL, p->host, 0};
    CUPTI_OK(cuptiProfilerHostGetConfigImageSize(&cs));
    ck_assert_uint_le(cs.configImageSize, sizeof(p->config));
    p->config_size = cs.configImageSize;
    CUpti_Profiler_Host_GetConfigImage_Params ci = {
        CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE, NULL, p->host, p->config_size,
        p->config};
    CUPTI_OK(cuptiProfilerHostGetConfigImage(&ci));
    CUpti_PmSampling_Enable_Params en = {CUpti_PmSampling_Enable_Params_STRUCT_SIZE, NULL, 0, NULL};
    CUPTI_OK(cuptiPmSamplingEnable(&en));
    p->obj = en.pPmSamplingObject;
    CUpti_PmSampling_SetConfig_Params sc = {
        CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE,
        NULL,
        p->obj,
        p->config_size,
        p->config,
        hw,
        interval_ns,
        CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL,
        CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST};
    CUPTI_OK(cuptiPmSamplingSetConfig(&sc));
    CUpti_PmSampling_GetCounterDataSize_Params ds = {
        CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE, NULL, p->obj, names, n, max, 0};
    CUPTI_OK(cuptiPmSamplingGetCounterDataSize(&ds));
    p->image_size = ds.counterDataSize;
    p->image = malloc(p->image_size);
    ck_assert_ptr_nonnull(p->image);
    CUpti_PmSampling_CounterDataImage_Initialize_Params di = {
        CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE, NULL, p->obj,
        p->image_size, p->image};
    CUPTI_OK(cuptiPmSamplingCounterDataImageInitialize(&di));
}

/* What pm_setup took, given back (the object disabled when still enabled,
 * the host object, the image): LeakSanitizer checks every test. */
static void pm_teardown(struct pm *p, int disable)
{
    if (disable) {
        CUpti_PmSampling_Disable_Params dp = {CUpti_PmSampling_Disable_Params_STRUCT_SIZE, NULL,
                                              p->obj};
        cuptiPmSamplingDisable(&dp);
    }
    CUpti_Profiler_Host_Deinitialize_Params hd = {
        CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE, NULL, p->host};
    CUPTI_OK(cuptiProfilerHostDeinitialize(&hd));
    free(p->image);
}

static void pm_start(struct pm *p)
{
    CUpti_PmSampling_Start_Params st = {CUpti_PmSampling_Start_Params_STRUCT_SIZE, NULL, p->obj};
    CUPTI_OK(cuptiPmSamplingStart(&st));
}

static CUptiResult pm_decode(struct pm *p, CUpti_PmSampling_DecodeData_Params *dd)
{
    CUpti_PmSampling_DecodeData_Params d = {
        CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE, NULL, p->obj, p->image, p->image_size,
        CUPTI_PM_SAMPLING_DECODE_STOP_REASON_OTHER,     0};
    CUptiResult r = cuptiPmSamplingDecodeData(&d);
    *dd = d;
    return r;
}

static size_t pm_completed(struct pm *p)
{
    CUpti_PmSampling_GetCounterDataInfo_Params inf = {
        CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE,
        NULL,
        p->image,
        p->image_size,
        0,
        0,
        0};
    CUPTI_OK(cuptiPmSamplingGetCounterDataInfo(&inf));
    ck_assert_uint_eq(inf.numPopulatedSamples, inf.numCompletedSamples);
    return inf.numCompletedSamples;
}

static void init_cuda(CUcontext *ctx)
{
    CUdevice dev;
    CU_OK(cuInit(0));
    CU_OK(cuDeviceGet(&dev, 0));
    CU_OK(cuDevicePrimaryCtxRetain(ctx, dev));
    CU_OK(cuCtxSetCurrent(*ctx));
}

START_TEST(refuses_what_cupti_refuses)
{
    CUcontext ctx;
    init_cuda(&ctx);
    CUpti_PmSampling_Enable_Params en = {CUpti_PmSampling_Enable_Params_STRUCT_SIZE, NULL, 0, NULL};
    ck_assert_int_eq(cuptiPmSamplingEnable(&en), CUPTI_ERROR_NOT_INITIALIZED);
    CUpti_Profiler_Initialize_Params in = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE, NULL};
    CUPTI_OK(cuptiProfilerInitialize(&in));
    CUpti_Profiler_Host_Initialize_Params hi = {CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE,
                                                NULL,
                                                CUPTI_PROFILER_TYPE_PM_SAMPLING,
                                                "GH100",
                                                NULL,
                                                NULL};
    CUPTI_OK(cuptiProfilerHostInitialize(&hi));
    hi.pChipName = "XY999";
    ck_assert_int_eq(cuptiProfilerHostInitialize(&hi), CUPTI_ERROR_INVALID_CHIP_NAME);
    /* an unknown name, and NVLink on a part without it: refused, and the
     * call adds none of its names */
    const char *bad[] = {TC, "sm__no_such_metric.avg"};
    CUpti_Profiler_Host_ConfigAddMetrics_Params am = {
        CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE, NULL, hi.pHostObject, bad, 2};
    ck_assert_int_eq(cuptiProfilerHostConfigAddMetrics(&am), CUPTI_ERROR_INVALID_METRIC_NAME);
    const char *nvl = "nvltx__bytes.sum.per_second";
    am.ppMetricNames = &nvl;
    am.numMetrics = 1;
    ck_assert_int_eq(cuptiProfilerHostConfigAddMetrics(&am), CUPTI_ERROR_INVALID_METRIC_NAME);
    am.structSize = 1;
    ck_assert_int_eq(cuptiProfilerHostConfigAddMetrics(&am), CUPTI_ERROR_INVALID_PARAMETER);
    CUPTI_OK(cuptiPmSamplingEnable(&en));
    CUpti_PmSampling_Enable_Params again = en;
    ck_assert_int_eq(cuptiPmSamplingEnable(&again), CUPTI_ERROR_INVALID_OPERATION);
    CUpti_PmSampling_Start_Params st = {CUpti_PmSampling_Start_Params_STRUCT_SIZE, NULL,
                                        en.pPmSamplingObject};
    ck_assert_int_eq(cuptiPmSamplingStart(&st), CUPTI_ERROR_INVALID_OPERATION); /* no config */
    /* the config image of no metric, and the SYSCLK trigger */
    uint8_t cfg[256];
    CUpti_Profiler_Host_GetConfigImage_Params ci = {
        CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE, NULL, hi.pHostObject, sizeof(cfg),
        cfg};
    CUPTI_OK(cuptiProfilerHostGetConfigImage(&ci));
    CUpti_PmSampling_SetConfig_Params sc = {
        CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE,
        NULL,
        en.pPmSamplingObject,
        sizeof(cfg),
        cfg,
        1 << 20,
        1000000,
        CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL,
        CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST};
    ck_assert_int_eq(cuptiPmSamplingSetConfig(&sc), CUPTI_ERROR_INVALID_PARAMETER);
    am.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE;
    am.ppMetricNames = bad; /* TC alone */
    CUPTI_OK(cuptiProfilerHostConfigAddMetrics(&am));
    CUPTI_OK(cuptiProfilerHostGetConfigImage(&ci));
    sc.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_SYSCLK_INTERVAL;
    ck_assert_int_eq(cuptiPmSamplingSetConfig(&sc), CUPTI_ERROR_NOT_SUPPORTED);
    sc.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
    CUPTI_OK(cuptiPmSamplingSetConfig(&sc));
    CUPTI_OK(cuptiPmSamplingStart(&st));
    ck_assert_int_eq(cuptiPmSamplingStart(&st), CUPTI_ERROR_INVALID_OPERATION); /* twice */
    CUpti_PmSampling_Stop_Params sp = {CUpti_PmSampling_Stop_Params_STRUCT_SIZE, NULL,
                                       en.pPmSamplingObject};
    CUPTI_OK(cuptiPmSamplingStop(&sp));
    ck_assert_int_eq(cuptiPmSamplingStop(&sp), CUPTI_ERROR_INVALID_OPERATION);
    CUpti_PmSampling_Disable_Params dp = {CUpti_PmSampling_Disable_Params_STRUCT_SIZE, NULL,
                                          en.pPmSamplingObject};
    CUPTI_OK(cuptiPmSamplingDisable(&dp));
    CUPTI_OK(cuptiPmSamplingEnable(&again)); /* free again */
    CUpti_Profiler_Host_Deinitialize_Params hd = {
        CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE, NULL, hi.pHostObject};
    CUPTI_OK(cuptiProfilerHostDeinitialize(&hd));
}
END_TEST

START_TEST(an_older_part_has_no_pm_sampling)
{
    setenv("FAKEGPU_PM_SAMPLING", "0", 1);
    CUcontext ctx;
    init_cuda(&ctx);
    CUpti_Profiler_Initialize_Params in = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE, NULL};
    CUPTI_OK(cuptiProfilerInitialize(&in));
    CUpti_Device_GetChipName_Params chip = {CUpti_Device_GetChipName_Params_STRUCT_SIZE, NULL, 0,
                                            NULL};
    CUPTI_OK(cuptiDeviceGetChipName(&chip));
    ck_assert_str_eq(chip.pChipName, "GV100");
    CUpti_Profiler_Host_Initialize_Params hi = {CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE,
                                                NULL,
                                                CUPTI_PROFILER_TYPE_PM_SAMPLING,
                                                chip.pChipName,
                                                NULL,
                                                NULL};
    ck_assert_int_eq(cuptiProfilerHostInitialize(&hi), CUPTI_ERROR_NOT_SUPPORTED);
    CUpti_PmSampling_Enable_Params en = {CUpti_PmSampling_Enable_Params_STRUCT_SIZE, NULL, 0, NULL};
    ck_assert_int_eq(cuptiPmSamplingEnable(&en), CUPTI_ERROR_NOT_SUPPORTED);
}
END_TEST

/*
 * gemm (SM 100, tensor 64, DRAM 22) for 30 ms, then ew (SM 100, tensor 0,
 * DRAM 81) for 30 ms, sampled every 2 ms. A sample holding a share g of
 * gemm and e of ew has SM 100 (g + e), tensor 64 g, DRAM 22 g + 81 e: so
 * DRAM = 22 t/64 + 81 (SM/100 - t/64) for every sample, exactly (the
 * time-weighted truth), with at least 10 samples of each pure phase.
 */
START_TEST(each_sample_is_the_time_weighted_truth)
{
    setenv("FAKEGPU_GPM_PROFILE", "gemm=sm:100,tc:64,dram:22;ew=sm:100,dram:81", 1);
    CUcontext ctx;
    init_cuda(&ctx);
    struct pm p;
    const char *names[] = {SM, TC, DRAM};
    pm_setup(&p, names, 3, 2000000, 1 << 20, 256);
    CUmodule mod;
    CUfunction g, e;
    CU_OK(cuModuleLoadData(&mod, "pm"));
    CU_OK(cuModuleGetFunction(&g, mod, "gemm__30000us"));
    CU_OK(cuModuleGetFunction(&e, mod, "ew__30000us"));
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    int64_t real0 = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec;
    pm_start(&p);
    CU_OK(cuLaunchKernel(g, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    CU_OK(cuLaunchKernel(e, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    CU_OK(cuCtxSynchronize());
    sleep_ms(10);
    CUpti_PmSampling_DecodeData_Params dd;
    CUPTI_OK(pm_decode(&p, &dd));
    ck_assert_int_eq(dd.decodeStopReason, CUPTI_PM_SAMPLING_DECODE_STOP_REASON_END_OF_RECORDS);
    ck_assert_int_eq(dd.overflow, 0);
    size_t n = pm_completed(&p);
    ck_assert_uint_ge(n, 30); /* 60 ms of work and more at 2 ms */
    int pure_g = 0, pure_e = 0;
    uint64_t prev_end = 0;
    for (size_t i = 0; i < n; i++) {
        CUpti_PmSampling_CounterData_GetSampleInfo_Params si = {
            CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE,
            NULL,
            p.obj,
            p.image,
            p.image_size,
            i,
            0,
            0};
        CUPTI_OK(cuptiPmSamplingCounterDataGetSampleInfo(&si));
        ck_assert_uint_eq(si.endTimestamp - si.startTimestamp, 2000000); /* exact */
        ck_assert(!prev_end || si.startTimestamp == prev_end);           /* back to back */
        prev_end = si.endTimestamp;
        /* the globaltimer: CLOCK_REALTIME's base */
        ck_assert(llabs((long long)si.startTimestamp - real0) < 1000000000LL);
        double v[3];
        CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = {
            CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE,
            NULL,
            p.host,
            p.image,
            p.image_size,
            i,
            names,
            3,
            v};
        CUPTI_OK(cuptiProfilerHostEvaluateToGpuValues(&ev));
        double gs = v[1] / 64, es = v[0] / 100 - gs;
        ck_assert_double_eq_tol(v[2], 22 * gs + 81 * es, 1e-6);
        pure_g += fabs(v[1] - 64) < 1e-6 && fabs(v[2] - 22) < 1e-6;
        pure_e += v[1] == 0 && fabs(v[2] - 81) < 1e-6;
    }
    ck_assert_int_ge(pure_g, 10);
    ck_assert_int_ge(pure_e, 10);
    /* a name not collected in the image is refused */
    const char *other = "sm__warps_active.avg.pct_of_peak_sustained_elapsed";
    double x;
    CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = {
        CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE,
        NULL,
        p.host,
        p.image,
        p.image_size,
        0,
        &other,
        1,
        &x};
    ck_assert_int_eq(cuptiProfilerHostEvaluateToGpuValues(&ev), CUPTI_ERROR_INVALID_METRIC_NAME);
    pm_teardown(&p, 1);
}
END_TEST

START_TEST(a_full_image_and_an_overflowing_buffer)
{
    CUcontext ctx;
    init_cuda(&ctx);
    struct pm p;
    const char *names[] = {SM};
    /* room for 4 samples in the image, 1 ms each */
    pm_setup(&p, names, 1, 1000000, 1 << 20, 4);
    pm_start(&p);
    sleep_ms(20);
    CUpti_PmSampling_DecodeData_Params dd;
    CUPTI_OK(pm_decode(&p, &dd));
    ck_assert_int_eq(dd.decodeStopReason, CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL);
    ck_assert_uint_eq(pm_completed(&p), 4);
    CUpti_PmSampling_CounterData_GetSampleInfo_Params si = {
        CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE,
        NULL,
        p.obj,
        p.image,
        p.image_size,
        3,
        0,
        0};
    CUPTI_OK(cuptiPmSamplingCounterDataGetSampleInfo(&si));
    uint64_t end3 = si.endTimestamp;
    si.sampleIndex = 4; /* not populated */
    ck_assert_int_eq(cuptiPmSamplingCounterDataGetSampleInfo(&si), CUPTI_ERROR_INVALID_PARAMETER);
    CUpti_PmSampling_CounterDataImage_Initialize_Params di = {
        CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE, NULL, p.obj, p.image_size,
        p.image};
    CUPTI_OK(cuptiPmSamplingCounterDataImageInitialize(&di));
    ck_assert_uint_eq(pm_completed(&p), 0);
    /* the next decode goes on where the last one stopped */
    CUPTI_OK(pm_decode(&p, &dd));
    si.sampleIndex = 0;
    CUPTI_OK(cuptiPmSamplingCounterDataGetSampleInfo(&si));
    ck_assert_uint_eq(si.startTimestamp, end3);
    struct pm q;
    /* a hardware buffer of 3 samples (32 + 8 bytes each with one metric):
     * keep-oldest, the rest lost: overflow */
    CUpti_PmSampling_Disable_Params dp = {CUpti_PmSampling_Disable_Params_STRUCT_SIZE, NULL, p.obj};
    CUPTI_OK(cuptiPmSamplingDisable(&dp));
    pm_setup(&q, names, 1, 1000000, 3 * 40, 64);
    pm_start(&q);
    sleep_ms(20);
    ck_assert_int_eq(pm_decode(&q, &dd), CUPTI_ERROR_OUT_OF_MEMORY);
    ck_assert_int_eq(dd.overflow, 1);
    ck_assert_uint_eq(pm_completed(&q), 3);
    pm_teardown(&q, 1);
    pm_teardown(&p, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fakegpu_cupti_pm");
    TCase *tc = tcase_create("pm_sampling");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, refuses_what_cupti_refuses);
    tcase_add_test(tc, an_older_part_has_no_pm_sampling);
    tcase_add_test(tc, each_sample_is_the_time_weighted_truth);
    tcase_add_test(tc, a_full_image_and_an_overflowing_buffer);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
