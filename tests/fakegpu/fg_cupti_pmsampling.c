/*
 * fg_cupti_pmsampling.c - the fake CUPTI's PM sampling: the profiler
 * target and host calls it needs (cuptiProfilerInitialize,
 * cuptiDeviceGetChipName, cuptiProfilerHost*) and cupti_pmsampling.h, with
 * the documented semantics, on the simulated device (README.md, "Fake
 * CUPTI: PM sampling").
 *
 * Once started, the simulated GPU takes a sample every interval of its
 * fixed-frequency trigger: sample k covers [t0 + k I, t0 + (k+1) I) and
 * holds, for each configured metric, the time-weighted truth of the
 * simulated schedule over it, from the activity integrals the simulated
 * NVML's GPM reads too (fg_gpm.h: the kernels' profiles, the copies'
 * PCIe bytes, the collectives' NVLink bytes). Completed samples wait in
 * the "hardware buffer" (hardwareBufferSize / FGPM_RECORD_BYTES(n)
 * samples; in keep-oldest mode the newer ones are lost when it is full:
 * overflow) until cuptiPmSamplingDecodeData moves them into the counter
 * data image, as many as it has room for (COUNTER_DATA_FULL, else
 * END_OF_RECORDS). Only whole samples are taken: sampling stopped
 * mid-sample ends with the last whole one. Sample times are the GPU's
 * globaltimer: CLOCK_MONOTONIC plus CLOCK_REALTIME - CLOCK_MONOTONIC read
 * when sampling is enabled.
 *
 * Metric names are Perfworks names (the table below); a name this chip
 * does not know is refused (CUPTI_ERROR_INVALID_METRIC_NAME), as is NVLink
 * on a part without it (FAKEGPU_GPM_NVLINK unset). FAKEGPU_PM_SAMPLING=0
 * makes the device an older part without PM sampling (a pre-Turing chip,
 * "GV100"): cuptiProfilerHostInitialize and cuptiPmSamplingEnable answer
 * CUPTI_ERROR_NOT_SUPPORTED.
 *
 * State lives in the objects and images the client holds; one lock
 * (pm_mu) guards the enabled set. Never calls the driver with it held.
 */
#include "fg_cupti_internal.h"
#include "fg_gpm.h"

#pragma GCC visibility push(default)
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>
#pragma GCC visibility pop

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* What a metric reads from the integrals. */
enum fgpm_kind { FGPM_PCT, FGPM_PCIE_TX, FGPM_PCIE_RX, FGPM_NVL_TX, FGPM_NVL_RX };

static const struct fgpm_metric {
    const char *name;
    int kind, field; /* FGPM_PCT: its fg_gpm_field */
} fgpm_metrics[] = {
    {"sm__cycles_active.avg.pct_of_peak_sustained_elapsed", FGPM_PCT, FG_GPM_SM},
    {"sm__warps_active.avg.pct_of_peak_sustained_elapsed", FGPM_PCT, FG_GPM_OCC},
    {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed", FGPM_PCT, FG_GPM_TENSOR},
    {"dram__throughput.avg.pct_of_peak_sustained_elapsed", FGPM_PCT, FG_GPM_DRAM},
    {"sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed", FGPM_PCT, FG_GPM_FP64},
    {"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed", FGPM_PCT, FG_GPM_FP32},
    {"sm__pipe_fp16_cycles_active.avg.pct_of_peak_sustained_elapsed", FGPM_PCT, FG_GPM_FP16},
    {"pcie__write_bytes.sum.per_second", FGPM_PCIE_TX, 0},
    {"pcie__read_bytes.sum.per_second", FGPM_PCIE_RX, 0},
    {"nvltx__bytes.sum.per_second", FGPM_NVL_TX, 0},
    {"nvlrx__bytes.sum.per_second", FGPM_NVL_RX, 0},
};
#define FGPM_NMETRIC (int)(sizeof(fgpm_metrics) / sizeof(fgpm_metrics[0]))
#define FGPM_MAX_DEV 64
#define FGPM_MAGIC_H 0x70686f31u /* host object */
#define FGPM_MAGIC_C 0x70636631u /* config image */
#define FGPM_MAGIC_D 0x70646931u /* counter data image */
#define FGPM_MAGIC_O 0x706f6231u /* sampling object */
/* bytes a sample of n metrics takes in the hardware buffer */
#define FGPM_RECORD_BYTES(n) (32u + 8u * (unsigned)(n))

static pthread_mutex_t pm_mu = PTHREAD_MUTEX_INITIALIZER;
static int pm_inited; /* cuptiProfilerInitialize calls not yet undone */

/* FAKEGPU_PM_SAMPLING=0: an older part without PM sampling. */
static int pm_supported(void)
{
    const char *v = getenv("FAKEGPU_PM_SAMPLING");
    return !(v && !strcmp(v, "0"));
}

static int metric_index(const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < FGPM_NMETRIC; i++)
        if (!strcmp(name, fgpm_metrics[i].name)) {
            int nvl = fgpm_metrics[i].kind == FGPM_NVL_TX || fgpm_metrics[i].kind == FGPM_NVL_RX;
            return nvl && !fg_gpm_nvlink() ? -1 : i;
        }
    return -1;
}

struct fgpm_list {
    unsigned n;
    int idx[FGPM_NMETRIC];
};

struct CUpti_Profiler_Host_Object {
    unsigned magic;
    CUpti_ProfilerType type;
    struct fgpm_list m;
};

struct fgpm_config {
    unsigned magic;
    struct fgpm_list m;
};

struct CUpti_PmSampling_Object {
    unsigned magic;
    int dev;
    int configured, started;
    struct fgpm_list m;
    int64_t interval_ns, t0, t_stop; /* t_stop 0 while sampling */
    int64_t gt_off;                  /* globaltimer - CLOCK_MONOTONIC */
    uint64_t next_k;                 /* the oldest sample not yet decoded */
    uint64_t hw_cap;                 /* samples the hardware buffer holds */
    uint64_t lost_from, lost_to;     /* samples an overflow lost: [from, to) */
};
static struct CUpti_PmSampling_Object *pm_enabled[FGPM_MAX_DEV];

struct fgpm_sample {
    uint64_t start, end; /* globaltimer */
    double v[FGPM_NMETRIC];
};
struct fgpm_data { /* the counter data image's header; samples follow */
    unsigned magic;
    struct fgpm_list m;
    uint64_t max, populated;
};

static int64_t mono_now(void)
{
    return fgc_mono_now();
}

/* ------------------------------------------------ profiler, target side */

FGC_EXPORT CUptiResult CUPTIAPI cuptiProfilerInitialize(CUpti_Profiler_Initialize_Params *q)
{
    if (!q || q->structSize < CUpti_Profiler_Initialize_Params_STRUCT_SIZE)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&pm_mu);
    pm_inited++;
    pthread_mutex_unlock(&pm_mu);
    return CUPTI_SUCCESS;
}

FGC_EXPORT CUptiResult CUPTIAPI cuptiProfilerDeInitialize(CUpti_Profiler_DeInitialize_Params *q)
{
    if (!q || q->structSize < CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&pm_mu);
    if (pm_inited > 0)
        pm_inited--;
    pthread_mutex_unlock(&pm_mu);
    return CUPTI_SUCCESS;
}

FGC_EXPORT CUptiResult CUPTIAPI cuptiDeviceGetChipName(CUpti_Device_GetChipName_Params *q)
{
    if (!q || q->structSize < CUpti_Device_GetChipName_Params_STRUCT_SIZE ||
        q->deviceIndex >= FGPM_MAX_DEV)
        return CUPTI_ERROR_INVALID_PARAMETER;
    q->pChipName = pm_supported() ? "GH100" : "GV100";
    return CUPTI_SUCCESS;
}

/* ------------------------------------------------ profiler, host side */

FGC_EXPORT CUptiResult CUPTIAPI
cuptiProfilerHostInitialize(CUpti_Profiler_Host_Initialize_Params *q)
{
    if (!q || q->structSize < CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE || !q->pChipName ||
        q->profilerType >= CUPTI_PROFILER_TYPE_PROFILER_INVALID)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (strcmp(q->pChipName, "GH100") && strcmp(q->pChipName, "GV100"))
        return CUPTI_ERROR_INVALID_CHIP_NAME;
    if (!strcmp(q->pChipName, "GV100") && q->profilerType == CUPTI_PROFILER_TYPE_PM_SAMPLING)
        return CUPTI_ERROR_NOT_SUPPORTED; /* PM sampling: Turing and later */
    struct CUpti_Profiler_Host_Object *h = calloc(1, sizeof(*h));
    if (!h)
        return CUPTI_ERROR_OUT_OF_MEMORY;
    h->magic = FGPM_MAGIC_H;
    h->type = q->profilerType;
    q->pHostObject = h;
    return CUPTI_SUCCESS;
}

static int host_ok(const CUpti_Profiler_Host_Object *h)
{
    return h && h->magic == FGPM_MAGIC_H;
}

FGC_EXPORT CUptiResult CUPTIAPI
cuptiProfilerHostDeinitialize(CUpti_Profiler_Host_Deinitialize_Params *q)
{
    if (!q || q->structSize < CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE ||
        !host_ok(q->pHostObject))
        return CUPTI_ERROR_INVALID_PARAMETER;
    q->pHostObject->magic = 0;
    free(q->pHostObject);
    return CUPTI_SUCCESS;
}

/* Adds the names to the host object's list: all of them, or, when one is
 * unknown, none. */
FGC_EXPORT CUptiResult CUPTIAPI
cuptiProfilerHostConfigAddMetrics(CUpti_Profiler_Host_ConfigAddMetrics_Params *q)
{
    if (!q || q->structSize < CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE ||
        !host_ok(q->pHostObject) || (q->numMetrics && !q->ppMetricNames))
        return CUPTI_ERROR_INVALID_PARAMETER;
    struct fgpm_list add = q->pHostObject->m;
    for (size_t i = 0; i < q->numMetrics; i++) {
        int k = metric_index(q->ppMetricNames[i]);
        if (k < 0)
            return CUPTI_ERROR_INVALID_METRIC_NAME;
        unsigned j = 0;
        while (j < add.n && add.idx[j] != k)
            j++;
        if (j == add.n)
            add.idx[add.n++] = k;
    }
    q->pHostObject->m = add;
    return CUPTI_SUCCESS;
}

FGC_EXPORT CUptiResult CUPTIAPI
cuptiProfilerHostGetConfigImageSize(CUpti_Profiler_Host_GetConfigImageSize_Params *q)
{
    if (!q || q->structSize < CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE ||
        !host_ok(q->pHostObject))
        return CUPTI_ERROR_INVALID_PARAMETER;
    q->configImageSize = sizeof(struct fgpm_config);
    return CUPTI_SUCCESS;
}

FGC_EXPORT CUptiResult CUPTIAPI
cuptiProfilerHostGetConfigImage(CUpti_Profiler_Host_GetConfigImage_Params *q)
{
    if (!q || q->structSize < CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE ||
        !host_ok(q->pHostObject) || !q->pConfigImage ||
        q->configImageSize < sizeof(struct fgpm_config))
        return CUPTI_ERROR_INVALID_PARAMETER;
    struct fgpm_config c = {FGPM_MAGIC_C, q->pHostObject->m};
    memcpy(q->pConfigImage, &c, sizeof(c));
    return CUPTI_SUCCESS;
}

/* The image's header, when image is one of ours of at least that size. */
static int data_header(const uint8_t *image, size_t size, struct fgpm_data *h)
{
    if (!image || size < sizeof(*h))
        return -1;
    memcpy(h, image, sizeof(*h));
    if (h->magic != FGPM_MAGIC_D || size < sizeof(*h) + h->max * sizeof(struct fgpm_sample) ||
        h->populated > h->max)
        return -1;
    return 0;
}

static void data_sample(const uint8_t *image, uint64_t i, struct fgpm_sample *s)
{
    memcpy(s, image + sizeof(struct fgpm_data) + i * sizeof(*s), sizeof(*s));
}

FGC_EXPORT CUptiResult CUPTIAPI
cuptiProfilerHostEvaluateToGpuValues(CUpti_Profiler_Host_EvaluateToGpuValues_Params *q)
{
    struct fgpm_data h;
    if (!q || q->structSize < CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE ||
        !host_ok(q->pHostObject) ||
        data_header(q->pCounterDataImage, q->counterDataImageSize, &h) ||
        (q->numMetrics && (!q->ppMetricNames || !q->pMetricValues)))
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (q->rangeIndex >= h.populated)
        return CUPTI_ERROR_INVALID_PARAMETER;
    struct fgpm_sample s;
    data_sample(q->pCounterDataImage, q->rangeIndex, &s);
    for (size_t i = 0; i < q->numMetrics; i++) {
        int k = metric_index(q->ppMetricNames[i]);
        unsigned j = 0;
        while (k >= 0 && j < h.m.n && h.m.idx[j] != k)
            j++;
        if (k < 0 || j == h.m.n)
            return CUPTI_ERROR_INVALID_METRIC_NAME; /* not collected in this image */
        q->pMetricValues[i] = s.v[j];
    }
    return CUPTI_SUCCESS;
}

/* ------------------------------------------------ PM sampling */

static int obj_ok(const CUpti_PmSampling_Object *o)
{
    return o && o->magic == FGPM_MAGIC_O;
}

FGC_EXPORT CUptiResult CUPTIAPI cuptiPmSamplingEnable(CUpti_PmSampling_Enable_Params *q)
{
    if (!q || q->structSize < CUpti_PmSampling_Enable_Params_STRUCT_SIZE ||
        q->deviceIndex >= FGPM_MAX_DEV)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (!pm_supported())
        return CUPTI_ERROR_NOT_SUPPORTED;
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    int64_t mono = mono_now();
    pthread_mutex_lock(&pm_mu);
    CUptiResult r = CUPTI_SUCCESS;
    if (!pm_inited)
        r = CUPTI_ERROR_NOT_INITIALIZED; /* cuptiProfilerInitialize first */
    else if (pm_enabled[q->deviceIndex])
        r = CUPTI_ERROR_INVALID_OPERATION; /* already enabled on the device */
    struct CUpti_PmSampling_Object *o = NULL;
    if (r == CUPTI_SUCCESS && !(o = calloc(1, sizeof(*o))))
        r = CUPTI_ERROR_OUT_OF_MEMORY;
    if (o) {
        o->magic = FGPM_MAGIC_O;
        o->dev = (int)q->deviceIndex;
        o->gt_off = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec - mono;
        pm_enabled[q->deviceIndex] = o;
        q->pPmSamplingObject = o;
    }
    pthread_mutex_unlock(&pm_mu);
    return r;
}

FGC_EXPORT CUptiResult CUPTIAPI cuptiPmSamplingDisable(CUpti_PmSampling_Disable_Params *q)
{
    if (!q || q->structSize < CUpti_PmSampling_Disable_Params_STRUCT_SIZE ||
        !obj_ok(q->pPmSamplingObject))
        return CUPTI_ERROR_INVALID_PARAMETER;
    struct CUpti_PmSampling_Object *o = q->pPmSamplingObject;
    pthread_mutex_lock(&pm_mu);
    if (pm_enabled[o->dev] == o)
        pm_enabled[o->dev] = NULL;
    pthread_mutex_unlock(&pm_mu);
    o->magic = 0;
    free(o);
    return CUPTI_SUCCESS;
}

FGC_EXPORT CUptiResult CUPTIAPI cuptiPmSamplingSetConfig(CUpti_PmSampling_SetConfig_Params *q)
{
    struct fgpm_config c;
    if (!q || q->structSize < CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE ||
        !obj_ok(q->pPmSamplingObject) || !q->pConfig || q->configSize < sizeof(c) ||
        !q->samplingInterval)
        return CUPTI_ERROR_INVALID_PARAMETER;
    memcpy(&c, q->pConfig, sizeof(c));
    if (c.magic != FGPM_MAGIC_C || !c.m.n)
        return CUPTI_ERROR_INVALID_PARAMETER;
    /* the simulated part samples on its fixed-frequency trigger only */
    if (q->triggerMode != CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL)
        return CUPTI_ERROR_NOT_SUPPORTED;
    uint64_t cap = q->hardwareBufferSize / FGPM_RECORD_BYTES(c.m.n);
    if (!cap)
        return CUPTI_ERROR_INVALID_PARAMETER;
    struct CUpti_PmSampling_Object *o = q->pPmSamplingObject;
    if (o->started)
        return CUPTI_ERROR_INVALID_OPERATION;
    o->m = c.m;
    o->interval_ns = (int64_t)q->samplingInterval;
    o->hw_cap = cap;
    o->configured = 1;
    return CUPTI_SUCCESS;
}

FGC_EXPORT CUptiResult CUPTIAPI
cuptiPmSamplingGetCounterDataSize(CUpti_PmSampling_GetCounterDataSize_Params *q)
{
    if (!q || q->structSize < CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE ||
        !obj_ok(q->pPmSamplingObject) || !q->maxSamples || (q->numMetrics && !q->pMetricNames))
        return CUPTI_ERROR_INVALID_PARAMETER;
    for (size_t i = 0; i < q->numMetrics; i++)
        if (metric_index(q->pMetricNames[i]) < 0)
            return CUPTI_ERROR_INVALID_METRIC_NAME;
    q->counterDataSize = sizeof(struct fgpm_data) + q->maxSamples * sizeof(struct fgpm_sample);
    return CUPTI_SUCCESS;
}

FGC_EXPORT CUptiResult CUPTIAPI
cuptiPmSamplingCounterDataImageInitialize(CUpti_PmSampling_CounterDataImage_Initialize_Params *q)
{
    if (!q || q->structSize < CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE ||
        !obj_ok(q->pPmSamplingObject) || !q->pCounterData ||
        q->counterDataSize < sizeof(struct fgpm_data) + sizeof(struct fgpm_sample))
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (!q->pPmSamplingObject->configured)
        return CUPTI_ERROR_INVALID_OPERATION;
    struct fgpm_data h = {FGPM_MAGIC_D, q->pPmSamplingObject->m, 0, 0};
    h.max = (q->counterDataSize - sizeof(h)) / sizeof(struct fgpm_sample);
    memcpy(q->pCounterData, &h, sizeof(h));
    return CUPTI_SUCCESS;
}

FGC_EXPORT CUptiResult CUPTIAPI cuptiPmSamplingStart(CUpti_PmSampling_Start_Params *q)
{
    if (!q || q->structSize < CUpti_PmSampling_Start_Params_STRUCT_SIZE ||
        !obj_ok(q->pPmSamplingObject))
        return CUPTI_ERROR_INVALID_PARAMETER;
    struct CUpti_PmSampling_Object *o = q->pPmSamplingObject;
    if (!o->configured || o->started)
        return CUPTI_ERROR_INVALID_OPERATION;
    o->started = 1;
    o->t0 = mono_now();
    o->t_stop = 0;
    o->next_k = o->lost_from = o->lost_to = 0;
    return CUPTI_SUCCESS;
}

FGC_EXPORT CUptiResult CUPTIAPI cuptiPmSamplingStop(CUpti_PmSampling_Stop_Params *q)
{
    if (!q || q->structSize < CUpti_PmSampling_Stop_Params_STRUCT_SIZE ||
        !obj_ok(q->pPmSamplingObject))
        return CUPTI_ERROR_INVALID_PARAMETER;
    struct CUpti_PmSampling_Object *o = q->pPmSamplingObject;
    if (!o->started || o->t_stop)
        return CUPTI_ERROR_INVALID_OPERATION;
    o->t_stop = mono_now();
    return CUPTI_SUCCESS;
}

/* Sample k of o: its times and the truth of the schedule over it. The
 * integrals are read in increasing time (fg_gpm.h: exact while within
 * FG_GPM_FOLD_LAG_NS of the newest time asked). */
static void take_sample(const struct CUpti_PmSampling_Object *o, uint64_t k,
                        struct fg_gpm_integrals *a, int have_a, struct fg_gpm_integrals *b,
                        struct fgpm_sample *s)
{
    int64_t t0 = o->t0 + (int64_t)k * o->interval_ns, t1 = t0 + o->interval_ns;
    if (!have_a)
        fg_gpm_integrals_at(o->dev, t0, a);
    fg_gpm_integrals_at(o->dev, t1, b);
    memset(s, 0, sizeof(*s));
    s->start = (uint64_t)(t0 + o->gt_off);
    s->end = (uint64_t)(t1 + o->gt_off);
    for (unsigned j = 0; j < o->m.n; j++) {
        const struct fgpm_metric *m = &fgpm_metrics[o->m.idx[j]];
        double v = 0;
        switch (m->kind) {
        case FGPM_PCT: v = fg_gpm_pct(a, b, m->field); break;
        case FGPM_PCIE_TX: v = fg_gpm_bytes_per_s(a, b, a->pcie_tx_bytes, b->pcie_tx_bytes); break;
        case FGPM_PCIE_RX: v = fg_gpm_bytes_per_s(a, b, a->pcie_rx_bytes, b->pcie_rx_bytes); break;
        case FGPM_NVL_TX:
            v = fg_gpm_bytes_per_s(a, b, a->nvlink_tx_bytes, b->nvlink_tx_bytes);
            break;
        default: v = fg_gpm_bytes_per_s(a, b, a->nvlink_rx_bytes, b->nvlink_rx_bytes); break;
        }
        s->v[j] = v < 0 ? 0 : v;
    }
}

FGC_EXPORT CUptiResult CUPTIAPI cuptiPmSamplingDecodeData(CUpti_PmSampling_DecodeData_Params *q)
{
    struct fgpm_data h;
    if (!q || q->structSize < CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE ||
        !obj_ok(q->pPmSamplingObject) ||
        data_header(q->pCounterDataImage, q->counterDataImageSize, &h))
        return CUPTI_ERROR_INVALID_PARAMETER;
    struct CUpti_PmSampling_Object *o = q->pPmSamplingObject;
    q->overflow = 0;
    q->decodeStopReason = CUPTI_PM_SAMPLING_DECODE_STOP_REASON_END_OF_RECORDS;
    if (!o->started)
        return CUPTI_ERROR_INVALID_OPERATION;
    int64_t until = o->t_stop ? o->t_stop : mono_now();
    uint64_t done = until > o->t0 ? (uint64_t)((until - o->t0) / o->interval_ns) : 0;
    /* keep-oldest: what the hardware buffer had no room for is lost */
    if (done > o->next_k + o->hw_cap && done > o->lost_to) {
        uint64_t from = o->next_k + o->hw_cap;
        if (o->lost_to < from)
            o->lost_from = from;
        o->lost_to = done;
        q->overflow = 1;
    }
    struct fg_gpm_integrals a, b;
    int have_a = 0;
    while (o->next_k < done) {
        if (o->next_k >= o->lost_from && o->next_k < o->lost_to) {
            o->next_k = o->lost_to;
            have_a = 0;
            continue;
        }
        if (h.populated == h.max) {
            q->decodeStopReason = CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL;
            break;
        }
        struct fgpm_sample s;
        take_sample(o, o->next_k, &a, have_a, &b, &s);
        a = b;
        have_a = 1;
        memcpy(q->pCounterDataImage + sizeof(h) + h.populated * sizeof(s), &s, sizeof(s));
        h.populated++;
        o->next_k++;
    }
    memcpy(q->pCounterDataImage, &h, sizeof(h));
    return q->overflow ? CUPTI_ERROR_OUT_OF_MEMORY : CUPTI_SUCCESS;
}

FGC_EXPORT CUptiResult CUPTIAPI
cuptiPmSamplingGetCounterDataInfo(CUpti_PmSampling_GetCounterDataInfo_Params *q)
{
    struct fgpm_data h;
    if (!q || q->structSize < CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE ||
        data_header(q->pCounterDataImage, q->counterDataImageSize, &h))
        return CUPTI_ERROR_INVALID_PARAMETER;
    q->numTotalSamples = h.max;
    q->numPopulatedSamples = h.populated;
    q->numCompletedSamples = h.populated; /* only whole samples are decoded */
    return CUPTI_SUCCESS;
}

FGC_EXPORT CUptiResult CUPTIAPI
cuptiPmSamplingCounterDataGetSampleInfo(CUpti_PmSampling_CounterData_GetSampleInfo_Params *q)
{
    struct fgpm_data h;
    if (!q || q->structSize < CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE ||
        !obj_ok(q->pPmSamplingObject) ||
        data_header(q->pCounterDataImage, q->counterDataImageSize, &h) ||
        q->sampleIndex >= h.populated)
        return CUPTI_ERROR_INVALID_PARAMETER;
    struct fgpm_sample s;
    data_sample(q->pCounterDataImage, q->sampleIndex, &s);
    q->startTimestamp = s.start;
    q->endTimestamp = s.end;
    return CUPTI_SUCCESS;
}
