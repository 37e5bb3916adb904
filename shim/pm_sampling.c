/*
 * CUPTI PM sampling (CUTRACE_PM_SAMPLING_US, docs/efficiency.md): the GPM
 * metrics of shim/health_gpm.c (SM activity and occupancy, tensor, DRAM,
 * FP pipes, PCIe and NVLink rates) sampled by the GPU itself every N us,
 * for short captures where GPM's 100 ms intervals blend the phases.
 *
 * Taken only through the CUPTI this process holds for GPU timing
 * (gpu_cupti.c): when another profiler has CUPTI, or GPU timing is not
 * CUPTI, it is not taken and the trace says why. The sequence, per device
 * (CUPTI's PM sampling API, cupti_pmsampling.h with the profiler host and
 * target APIs): cuptiProfilerInitialize once, cuptiDeviceGetChipName,
 * cuptiProfilerHostInitialize (PM sampling), cuptiProfilerHostConfigAddMetrics
 * (one metric at a time: one the chip does not know is dropped, said once),
 * cuptiProfilerHostGetConfigImageSize / GetConfigImage,
 * cuptiPmSamplingEnable, cuptiPmSamplingSetConfig (the interval in ns on
 * the GPU's fixed-frequency trigger, a hardware buffer, keep-oldest),
 * cuptiPmSamplingGetCounterDataSize, cuptiPmSamplingCounterDataImageInitialize,
 * cuptiPmSamplingStart. Then every decode pass: cuptiPmSamplingDecodeData
 * into the counter data image, cuptiPmSamplingGetCounterDataInfo, per
 * completed sample cuptiPmSamplingCounterDataGetSampleInfo and
 * cuptiProfilerHostEvaluateToGpuValues, and the image initialised again
 * for the next pass (again at once while the image filled up). At the end
 * a last pass, Stop, Disable, the host object's Deinitialize.
 *
 * Each sample is recorded as the GPM path records an interval: one
 * CT_REC_COUNTER per metric under the GPM counter's name, stamped at the
 * sample's start, and `pm_interval` (its length, ns) beside them. Sample
 * times are the GPU's globaltimer (CLOCK_REALTIME's base): converted to
 * the trace's CLOCK_MONOTONIC with one offset per pass, read back to back,
 * as shim/nccl_profiler.c converts its globaltimer stamps.
 *
 * Everything runs on the writer thread (health.c's pass), never on a job
 * thread; nothing here fails the job or prints. Every step that fails
 * says so once in the trace (the API and its result: the counter
 * `pm_supported` and the recorder metadata `pm_sampling`), and the job
 * runs on, with GPM (if on) sampling that device instead.
 */
#include "shim/pm_sampling.h"

#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shim/gpu.h"
#include "shim/health.h"
#include "shim/pm_sampling_decode.h"
#include "shim/shim.h"

/* The hardware buffer CUPTI fills between two decodes: large enough for
 * seconds of samples at the shortest interval, so a late writer pass does
 * not overflow it (an overflow is said once). */
#define CT_PM_HW_BUFFER (64u << 20)
/* A decode pass every this often (the writer's pass may come later). */
#define CT_PM_PASS_MS 20
/* Passes over a full image within one decode before the rest waits. */
#define CT_PM_ROUNDS 8

/* The support answer, `pm_supported`, once per device. */
enum {
    PM_SAMPLED = 1,
    PM_DEVICE_NO = 0,    /* the device does not support PM sampling */
    PM_NOT_OURS = -1,    /* CUPTI is not ours: not taken */
    PM_STEP_FAILED = -2, /* a step failed (its API and result said) */
    PM_NO_API = -3,      /* this CUPTI has no PM sampling API */
};

/* Every entry point, typed as the toolkit declares it, resolved once
 * (dlsym); FN lists them with the name each is looked up by. */
#define FN_LIST(X)                                                                                 \
    X(init, cuptiProfilerInitialize)                                                               \
    X(chip, cuptiDeviceGetChipName)                                                                \
    X(host_init, cuptiProfilerHostInitialize)                                                      \
    X(host_deinit, cuptiProfilerHostDeinitialize)                                                  \
    X(add, cuptiProfilerHostConfigAddMetrics)                                                      \
    X(image_size, cuptiProfilerHostGetConfigImageSize)                                             \
    X(image, cuptiProfilerHostGetConfigImage)                                                      \
    X(evaluate, cuptiProfilerHostEvaluateToGpuValues)                                              \
    X(enable, cuptiPmSamplingEnable)                                                               \
    X(disable, cuptiPmSamplingDisable)                                                             \
    X(set_config, cuptiPmSamplingSetConfig)                                                        \
    X(data_size, cuptiPmSamplingGetCounterDataSize)                                                \
    X(data_init, cuptiPmSamplingCounterDataImageInitialize)                                        \
    X(start, cuptiPmSamplingStart)                                                                 \
    X(stop, cuptiPmSamplingStop)                                                                   \
    X(decode, cuptiPmSamplingDecodeData)                                                           \
    X(data_info, cuptiPmSamplingGetCounterDataInfo)                                                \
    X(sample_info, cuptiPmSamplingCounterDataGetSampleInfo)

struct pm_fns {
#define FN_FIELD(field, sym) __typeof__(sym) *field;
    FN_LIST(FN_FIELD)
#undef FN_FIELD
    CUptiResult (*result_string)(CUptiResult, const char **);
};

/* a device sampled until the finish: GPM does not take it after */
#define PM_DONE 2

struct pm_dev {
    int state; /* 0 not asked, 1 sampling, -1 not sampled (said why), PM_DONE */
    CUpti_Profiler_Host_Object *host;
    CUpti_PmSampling_Object *obj;
    int started;
    uint8_t *config, *image;
    size_t config_size, image_size;
    const char *names[CT_PM_NMETRIC]; /* CUPTI names of the metrics kept */
    int idx[CT_PM_NMETRIC];           /* their ct_pm_metrics index */
    size_t n;
    uint64_t next_ns;
    uint64_t last_end; /* the previous sample's end, trace clock */
    int said_overflow, said_decode, said_sample;
};

static struct {
    void *lib;
    int resolved; /* 0 not yet, 1 every entry point found, -1 not */
    struct pm_fns fn;
    int profiler_inited;
    unsigned interval_us;
    char refused[200]; /* why GPU timing could not take CUPTI */
    struct pm_dev dev[CT_PM_MAX_DEV];
    uint32_t name[CT_PM_NMETRIC], unit[CT_PM_NMETRIC], n_interval, n_supported, u_ns, u_flag;
    uint64_t samples, passes, cost_ns;
    _Atomic int busy;     /* a pass or the finish holds the state */
    _Atomic int finished; /* set after each device's last state: read without the busy flag */
} p;

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static const char *result(CUptiResult r)
{
    const char *s = NULL;
    if (p.fn.result_string && p.fn.result_string(r, &s) == CUPTI_SUCCESS && s)
        return s;
    return "unknown CUPTI error";
}

/* CUPTI's entry points, once: all of them, or none used (an older CUPTI,
 * said in the trace). */
static void resolve(void)
{
    if (p.resolved)
        return;
    p.resolved = -1;
    p.lib = ct_cupti_lib();
    if (!p.lib)
        return;
    int missing = 0;
#define FN_RESOLVE(field, sym)                                                                     \
    p.fn.field = (__typeof__(sym) *)ct_fn(dlsym(p.lib, #sym));                                     \
    missing |= !p.fn.field;
    FN_LIST(FN_RESOLVE)
#undef FN_RESOLVE
    p.fn.result_string =
        (CUptiResult(*)(CUptiResult, const char **))ct_fn(dlsym(p.lib, "cuptiGetResultString"));
    if (!missing)
        p.resolved = 1;
}

int ct_pm_start(int after_fork)
{
    /* a forked child: the parent's CUPTI objects are not this image's */
    memset(p.dev, 0, sizeof(p.dev));
    if (after_fork) {
        p.lib = NULL;
        p.resolved = 0;
        p.profiler_inited = 0;
    }
    p.interval_us = ct_cfg.pm_sampling_us;
    p.samples = p.passes = p.cost_ns = 0;
    p.finished = 0;
    if (!p.interval_us)
        return 0;
    for (int i = 0; i < CT_PM_NMETRIC; i++) {
        p.name[i] = ct_intern(ct_pm_metrics[i].counter);
        p.unit[i] = ct_intern(ct_pm_metrics[i].unit);
    }
    p.n_interval = ct_intern("pm_interval");
    p.u_ns = ct_intern("ns");
    p.n_supported = ct_intern("pm_supported");
    p.u_flag = ct_intern("flag");
    return 0;
}

void ct_pm_cupti_refused(const char *why)
{
    snprintf(p.refused, sizeof(p.refused), "%s", why ? why : "");
}

/* Device d will not be PM-sampled: its answer and why, once. */
static void refuse(uint64_t now, int d, int code, const char *why)
{
    p.dev[d].state = -1;
    ct_health_counter(now, d, p.n_supported, code, p.u_flag);
    char buf[320];
    snprintf(buf, sizeof(buf), "%s: device %d: %s",
             code == PM_NOT_OURS ? "not taken" : "unavailable", d, why);
    ct_health_meta("pm_sampling", buf);
}

/* A step failed: CUPTI_ERROR_NOT_SUPPORTED (and an unknown chip) is the
 * device's answer, anything else the step's failure. */
static void step_failed(uint64_t now, int d, const char *api, CUptiResult r)
{
    char why[200];
    if (r == CUPTI_ERROR_NOT_SUPPORTED || r == CUPTI_ERROR_INVALID_CHIP_NAME) {
        snprintf(why, sizeof(why),
                 "the device does not support CUPTI PM sampling (Turing and later do): %s: %s", api,
                 result(r));
        refuse(now, d, PM_DEVICE_NO, why);
        return;
    }
    snprintf(why, sizeof(why), "%s failed: %s", api, result(r));
    refuse(now, d, PM_STEP_FAILED, why);
}

/* 1 when a setup step succeeded; else says so (step_failed) and 0. */
static int step_ok(uint64_t now, int d, const char *api, CUptiResult r)
{
    if (r == CUPTI_SUCCESS)
        return 1;
    step_failed(now, d, api, r);
    return 0;
}

/* Undoes whatever of device d's setup was done (in reverse). */
static void teardown(struct pm_dev *x)
{
    if (x->obj) {
        if (x->started) {
            CUpti_PmSampling_Stop_Params s = {CUpti_PmSampling_Stop_Params_STRUCT_SIZE, NULL,
                                              x->obj};
            p.fn.stop(&s);
        }
        CUpti_PmSampling_Disable_Params q = {CUpti_PmSampling_Disable_Params_STRUCT_SIZE, NULL,
                                             x->obj};
        p.fn.disable(&q);
    }
    if (x->host) {
        CUpti_Profiler_Host_Deinitialize_Params q = {
            CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE, NULL, x->host};
        p.fn.host_deinit(&q);
    }
    free(x->config);
    free(x->image);
    memset(x, 0, sizeof(*x));
}

/* Sets device d up through Start; 1 when it samples. */
static int open_device(uint64_t now, int d)
{
    struct pm_dev *x = &p.dev[d];
    resolve();
    if (!p.lib) {
        char why[260];
        snprintf(why, sizeof(why), "CUPTI is not ours (%s)",
                 p.refused[0] ? p.refused
                              : "GPU timing is not CUPTI: PM sampling is taken only through the "
                                "CUPTI cutrace holds for --gpu-timing=cupti");
        refuse(now, d, PM_NOT_OURS, why);
        return 0;
    }
    if (p.resolved < 0) {
        refuse(now, d, PM_NO_API,
               "this CUPTI has no PM sampling API (cupti_pmsampling.h: CUDA 12.6 and later)");
        return 0;
    }
    if (!p.profiler_inited) {
        CUpti_Profiler_Initialize_Params q = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE, NULL};
        if (!step_ok(now, d, "cuptiProfilerInitialize", p.fn.init(&q)))
            goto fail;
        p.profiler_inited = 1;
    }
    CUpti_Device_GetChipName_Params chip = {CUpti_Device_GetChipName_Params_STRUCT_SIZE, NULL,
                                            (size_t)d, NULL};
    if (!step_ok(now, d, "cuptiDeviceGetChipName", p.fn.chip(&chip)))
        goto fail;
    CUpti_Profiler_Host_Initialize_Params hi = {CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE,
                                                NULL,
                                                CUPTI_PROFILER_TYPE_PM_SAMPLING,
                                                chip.pChipName,
                                                NULL,
                                                NULL};
    if (!step_ok(now, d, "cuptiProfilerHostInitialize", p.fn.host_init(&hi)))
        goto fail;
    x->host = hi.pHostObject;
    /* one metric at a time: a name this chip does not know is refused
     * alone (NVLink on a part without it) */
    char dropped[160] = "";
    size_t dl = 0;
    for (int i = 0; i < CT_PM_NMETRIC; i++) {
        const char *nm = ct_pm_metrics[i].cupti;
        CUpti_Profiler_Host_ConfigAddMetrics_Params am = {
            CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE, NULL, x->host, &nm, 1};
        CUptiResult r = p.fn.add(&am);
        if (r == CUPTI_SUCCESS) {
            x->names[x->n] = nm;
            x->idx[x->n++] = i;
        } else if (dl < sizeof(dropped)) {
            dl += (size_t)snprintf(dropped + dl, sizeof(dropped) - dl, "%s%s", dl ? ", " : "",
                                   ct_pm_metrics[i].counter);
        }
    }
    if (dropped[0]) {
        char buf[240];
        snprintf(buf, sizeof(buf), "device %d: the chip refused %s (their figures stay null)", d,
                 dropped);
        ct_health_meta("pm_sampling_metrics_dropped", buf);
    }
    if (!x->n) {
        refuse(now, d, PM_STEP_FAILED, "cuptiProfilerHostConfigAddMetrics refused every metric");
        goto fail;
    }
    CUpti_Profiler_Host_GetConfigImageSize_Params cs = {
        CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE, NULL, x->host, 0};
    if (!step_ok(now, d, "cuptiProfilerHostGetConfigImageSize", p.fn.image_size(&cs)))
        goto fail;
    if (!(x->config = malloc(cs.configImageSize ? cs.configImageSize : 1))) {
        refuse(now, d, PM_STEP_FAILED, "no memory for the config image");
        goto fail;
    }
    x->config_size = cs.configImageSize;
    CUpti_Profiler_Host_GetConfigImage_Params ci = {
        CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE, NULL, x->host, x->config_size,
        x->config};
    if (!step_ok(now, d, "cuptiProfilerHostGetConfigImage", p.fn.image(&ci)))
        goto fail;
    CUpti_PmSampling_Enable_Params en = {CUpti_PmSampling_Enable_Params_STRUCT_SIZE, NULL,
                                         (size_t)d, NULL};
    if (!step_ok(now, d, "cuptiPmSamplingEnable", p.fn.enable(&en)))
        goto fail;
    x->obj = en.pPmSamplingObject;
    CUpti_PmSampling_SetConfig_Params sc = {
        CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE,
        NULL,
        x->obj,
        x->config_size,
        x->config,
        CT_PM_HW_BUFFER,
        (uint64_t)p.interval_us * 1000u,
        CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL,
        CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST};
    if (!step_ok(now, d, "cuptiPmSamplingSetConfig", p.fn.set_config(&sc)))
        goto fail;
    CUpti_PmSampling_GetCounterDataSize_Params ds = {
        CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE, NULL, x->obj, x->names, x->n,
        ct_pm_max_samples(p.interval_us, CT_PM_PASS_MS),        0};
    if (!step_ok(now, d, "cuptiPmSamplingGetCounterDataSize", p.fn.data_size(&ds)))
        goto fail;
    if (!(x->image = malloc(ds.counterDataSize ? ds.counterDataSize : 1))) {
        refuse(now, d, PM_STEP_FAILED, "no memory for the counter data image");
        goto fail;
    }
    x->image_size = ds.counterDataSize;
    CUpti_PmSampling_CounterDataImage_Initialize_Params di = {
        CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE, NULL, x->obj,
        x->image_size, x->image};
    if (!step_ok(now, d, "cuptiPmSamplingCounterDataImageInitialize", p.fn.data_init(&di)))
        goto fail;
    CUpti_PmSampling_Start_Params st = {CUpti_PmSampling_Start_Params_STRUCT_SIZE, NULL, x->obj};
    if (!step_ok(now, d, "cuptiPmSamplingStart", p.fn.start(&st)))
        goto fail;
    x->started = 1;
    x->state = 1;
    x->next_ns = now + CT_PM_PASS_MS * 1000000ull;
    ct_health_counter(now, d, p.n_supported, PM_SAMPLED, p.u_flag);
    char buf[96];
    snprintf(buf, sizeof(buf), "pm_sampling device %d interval_us %u", d, p.interval_us);
    ct_health_meta("efficiency_source", buf);
    return 1;
fail:
    teardown(x);
    x->state = -1;
    return 0;
}

/* Records the image's completed samples; 0, or -1 when the image could
 * not be read (said once). */
static int record_samples(uint64_t now, int d, uint64_t off)
{
    struct pm_dev *x = &p.dev[d];
    CUpti_PmSampling_GetCounterDataInfo_Params inf = {
        CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE,
        NULL,
        x->image,
        x->image_size,
        0,
        0,
        0};
    CUptiResult r = p.fn.data_info(&inf);
    char buf[200];
    if (r != CUPTI_SUCCESS) {
        if (!x->said_sample++) {
            snprintf(buf, sizeof(buf), "device %d: cuptiPmSamplingGetCounterDataInfo failed: %s", d,
                     result(r));
            ct_health_meta("pm_sampling_error", buf);
        }
        return -1;
    }
    double v[CT_PM_NMETRIC];
    for (size_t i = 0; i < inf.numCompletedSamples; i++) {
        CUpti_PmSampling_CounterData_GetSampleInfo_Params si = {
            CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE,
            NULL,
            x->obj,
            x->image,
            x->image_size,
            i,
            0,
            0};
        CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = {
            CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE,
            NULL,
            x->host,
            x->image,
            x->image_size,
            i,
            x->names,
            x->n,
            v};
        const char *api = "cuptiPmSamplingCounterDataGetSampleInfo";
        if ((r = p.fn.sample_info(&si)) == CUPTI_SUCCESS) {
            api = "cuptiProfilerHostEvaluateToGpuValues";
            r = p.fn.evaluate(&ev);
        }
        if (r != CUPTI_SUCCESS) {
            if (!x->said_sample++) {
                snprintf(buf, sizeof(buf), "device %d: %s failed: %s (the sample is lost)", d, api,
                         result(r));
                ct_health_meta("pm_sampling_error", buf);
            }
            continue;
        }
        uint64_t s, len;
        if (ct_pm_sample_span(si.startTimestamp, si.endTimestamp, off, x->last_end, &s, &len))
            continue; /* an empty sample (sampling stopping) */
        x->last_end = s + len;
        ct_health_counter(s, d, p.n_interval, (int64_t)len, p.u_ns);
        for (size_t k = 0; k < x->n; k++) {
            int64_t c;
            if (ct_pm_counter_value(x->idx[k], v[k], &c) == 0)
                ct_health_counter(s, d, p.name[x->idx[k]], c, p.unit[x->idx[k]]);
        }
        p.samples++;
    }
    (void)now;
    return 0;
}

/* One decode pass of device d: decode, record, initialise the image
 * again; again at once while the image filled up. */
static void decode_pass(uint64_t now, int d)
{
    struct pm_dev *x = &p.dev[d];
    char buf[200];
    /* one offset for the pass: every sample's length stays exact */
    uint64_t mono = ct_clock_mono_ns();
    uint64_t off = ct_clock_real_ns() - mono;
    for (int round = 0; round < CT_PM_ROUNDS; round++) {
        CUpti_PmSampling_DecodeData_Params dd = {
            CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE, NULL, x->obj, x->image, x->image_size,
            CUPTI_PM_SAMPLING_DECODE_STOP_REASON_OTHER,     0};
        CUptiResult r = p.fn.decode(&dd);
        if (dd.overflow || r == CUPTI_ERROR_OUT_OF_MEMORY) {
            if (!x->said_overflow++) {
                snprintf(buf, sizeof(buf),
                         "device %d: the hardware buffer overflowed between two decodes (samples "
                         "lost)",
                         d);
                ct_health_meta("pm_sampling_error", buf);
            }
        } else if (r != CUPTI_SUCCESS) {
            if (!x->said_decode++) {
                snprintf(buf, sizeof(buf), "device %d: cuptiPmSamplingDecodeData failed: %s", d,
                         result(r));
                ct_health_meta("pm_sampling_error", buf);
            }
            return;
        }
        p.passes++;
        if (record_samples(now, d, off) != 0)
            return;
        CUpti_PmSampling_CounterDataImage_Initialize_Params di = {
            CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE, NULL, x->obj,
            x->image_size, x->image};
        if ((r = p.fn.data_init(&di)) != CUPTI_SUCCESS) {
            if (!x->said_decode++) {
                snprintf(buf, sizeof(buf),
                         "device %d: cuptiPmSamplingCounterDataImageInitialize failed: %s", d,
                         result(r));
                ct_health_meta("pm_sampling_error", buf);
            }
            return;
        }
        if (dd.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL)
            return;
    }
}

int ct_pm_device(uint64_t now, int d)
{
    if (!p.interval_us || d < 0 || d >= CT_PM_MAX_DEV)
        return 0;
    /* after the finish a device it sampled stays its: GPM opened there in
     * a writer pass after the exit's finish wrote a second source */
    if (p.finished)
        return p.dev[d].state == PM_DONE;
    struct pm_dev *x = &p.dev[d];
    if (x->state < 0)
        return 0;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&p.busy, &expected, 1))
        return x->state == 1;
    uint64_t c0 = thread_cpu_ns();
    if (x->state == 0)
        open_device(now, d);
    else if (now >= x->next_ns) {
        decode_pass(now, d);
        x->next_ns = now + CT_PM_PASS_MS * 1000000ull;
    }
    p.cost_ns += thread_cpu_ns() - c0;
    int on = x->state == 1;
    atomic_store(&p.busy, 0);
    return on;
}

void ct_pm_finish(void)
{
    if (!p.interval_us || p.finished)
        return;
    /* the writer's pass may be decoding: wait for it, a little */
    int expected = 0;
    for (int i = 0; !atomic_compare_exchange_strong(&p.busy, &expected, 1); i++) {
        if (i >= 200)
            return;
        expected = 0;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    uint64_t now = ct_clock_mono_ns();
    for (int d = 0; d < CT_PM_MAX_DEV; d++) {
        struct pm_dev *x = &p.dev[d];
        if (x->state != 1)
            continue;
        CUpti_PmSampling_Stop_Params s = {CUpti_PmSampling_Stop_Params_STRUCT_SIZE, NULL, x->obj};
        if (p.fn.stop(&s) == CUPTI_SUCCESS)
            x->started = 0;
        decode_pass(now, d); /* what was sampled up to the stop */
        teardown(x);
        x->state = PM_DONE;
    }
    p.finished = 1;
    if (p.passes) {
        char buf[64];
        snprintf(buf, sizeof(buf), "%llu", (unsigned long long)p.samples);
        ct_health_meta("pm_samples", buf);
        snprintf(buf, sizeof(buf), "%llu", (unsigned long long)(p.cost_ns / p.passes));
        ct_health_meta("pm_ns_per_pass", buf);
        snprintf(buf, sizeof(buf), "%llu", (unsigned long long)p.cost_ns);
        ct_health_meta("pm_cpu_ns", buf);
    }
    atomic_store(&p.busy, 0);
}
