/*
 * GPU performance monitoring beside the health counters (CUTRACE_GPM_MS,
 * docs/efficiency.md): NVML's GPM metrics (SM activity and occupancy,
 * tensor, DRAM bandwidth, FP64/FP32/FP16 pipes, PCIe and NVLink rates) of
 * the devices health.c matched, sampled by the writer thread every period.
 * GPM makes one rate of two samples: each period's sample closes the
 * interval the previous one opened, and each metric is recorded as one
 * CT_REC_COUNTER stamped with the interval's START, so that "a value
 * holds until the next sample" (how every counter reads) is exactly
 * true; `gpm_interval` beside them gives each interval's length.
 *
 * The support query's answer is recorded once per device: the counter
 * `gpm_supported` (1 yes; 0 the device says no: an older GPU; -1 this
 * NVML has no GPM functions: an older driver; -2 the query, the buffers or
 * the first sample failed, recorded after a 1 in that case) and the
 * recorder metadata `gpm` with the reason.
 *
 * Runs on the writer thread only (health.c's tick); never on a job
 * thread, never fails the job, prints nothing. A metric NVML answers
 * "not supported" for is dropped for the device after the first try.
 */
#include "shim/health_gpm.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "shim/health.h"
#include "shim/shim.h"

/* ------------------------------------------------ NVML GPM ABI (nvml.h) */

typedef int nvml_ret;
typedef struct nvml_gpm_sample_st *nvml_gpm_sample;
#define NVML_SUCCESS_                 0
#define NVML_ERROR_NOT_SUPPORTED_     3
#define NVML_GPM_SUPPORT_VERSION_     1
#define NVML_GPM_METRICS_GET_VERSION_ 1
/* nvml.h's NVML_GPM_METRIC_MAX has grown (98 in R525, 210, 333): NVML
 * reads numMetrics entries only; the largest known size is allocated */
#define GPM_METRIC_MAX 333

struct nvml_gpm_support { /* nvmlGpmSupport_t */
    unsigned version, is_supported;
};
struct nvml_gpm_metric { /* nvmlGpmMetric_t, 40 bytes */
    unsigned id;
    nvml_ret ret;
    double value;
    struct {
        char *short_name, *long_name, *unit;
    } info;
};
struct nvml_gpm_metrics_get { /* nvmlGpmMetricsGet_t */
    unsigned version, num;
    nvml_gpm_sample sample1, sample2;
    struct nvml_gpm_metric m[GPM_METRIC_MAX];
};

/* The metrics recorded: NVML's id, our counter name, unit and scale (the
 * counter is an integer: percentages in 0.01 %, MiB/s as KiB/s). */
static const struct gpm_metric {
    unsigned id;
    const char *name, *unit;
    double scale;
} metric[] = {
    {2, "gpm_sm_util", "0.01%", 100},       /* NVML_GPM_METRIC_SM_UTIL */
    {3, "gpm_sm_occupancy", "0.01%", 100},  /* NVML_GPM_METRIC_SM_OCCUPANCY */
    {5, "gpm_tensor_util", "0.01%", 100},   /* NVML_GPM_METRIC_ANY_TENSOR_UTIL */
    {10, "gpm_dram_bw_util", "0.01%", 100}, /* NVML_GPM_METRIC_DRAM_BW_UTIL */
    {11, "gpm_fp64_util", "0.01%", 100},    /* NVML_GPM_METRIC_FP64_UTIL */
    {12, "gpm_fp32_util", "0.01%", 100},    /* NVML_GPM_METRIC_FP32_UTIL */
    {13, "gpm_fp16_util", "0.01%", 100},    /* NVML_GPM_METRIC_FP16_UTIL */
    {20, "gpm_pcie_tx", "KiB/s", 1024},     /* NVML_GPM_METRIC_PCIE_TX_PER_SEC (MiB/s) */
    {21, "gpm_pcie_rx", "KiB/s", 1024},     /* NVML_GPM_METRIC_PCIE_RX_PER_SEC */
    {61, "gpm_nvlink_tx", "KiB/s", 1024},   /* NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC */
    {60, "gpm_nvlink_rx", "KiB/s", 1024},   /* NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC */
};
#define NMETRIC (sizeof(metric) / sizeof(metric[0]))

struct gpm_dev {
    int state; /* 0 not asked, 1 sampling, -1 not sampled (said why) */
    nvml_gpm_sample s[2];
    int cur;       /* s[cur] is the next to fill; s[!cur] holds the previous */
    int have_prev; /* s[!cur] is filled */
    int sampled;   /* a sample succeeded once */
    uint64_t prev_ns, next_ns;
    uint32_t off; /* bit per metric: not supported */
};

static struct {
    void *lib;
    nvml_ret (*query)(void *, struct nvml_gpm_support *);
    nvml_ret (*alloc)(nvml_gpm_sample *);
    nvml_ret (*sfree)(nvml_gpm_sample);
    nvml_ret (*get)(void *, nvml_gpm_sample);
    nvml_ret (*metrics)(struct nvml_gpm_metrics_get *);
    unsigned period_ms;
    struct gpm_dev dev[CT_GPM_MAX_DEV];
    uint32_t name[NMETRIC], unit[NMETRIC], n_interval, n_supported, u_ns, u_flag;
    uint64_t samples, cost_ns;
    int said_ok;
} g;

/* Lives here, not on the writer's stack: 13 KB. */
static struct nvml_gpm_metrics_get g_mg;

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *sym(const char *name)
{
    return g.lib ? dlsym(g.lib, name) : NULL;
}

int ct_gpm_start(int after_fork)
{
    if (after_fork) /* the parent's NVML handles and buffers are not this image's */
        memset(g.dev, 0, sizeof(g.dev));
    g.lib = NULL;
    g.period_ms = ct_cfg.gpm_ms;
    g.samples = g.cost_ns = 0;
    g.said_ok = 0;
    for (size_t i = 0; i < NMETRIC; i++) {
        g.name[i] = ct_intern(metric[i].name);
        g.unit[i] = ct_intern(metric[i].unit);
    }
    g.n_interval = ct_intern("gpm_interval");
    g.u_ns = ct_intern("ns");
    g.n_supported = ct_intern("gpm_supported");
    g.u_flag = ct_intern("flag");
    return 0;
}

void ct_gpm_bind(void *nvml_lib)
{
    g.lib = nvml_lib;
#define GP(field, name)                                                                            \
    do {                                                                                           \
        void *p_ = sym(name);                                                                      \
        memcpy(&g.field, &p_, sizeof(p_));                                                         \
    } while (0)
    GP(query, "nvmlGpmQueryDeviceSupport");
    GP(alloc, "nvmlGpmSampleAlloc");
    GP(sfree, "nvmlGpmSampleFree");
    GP(get, "nvmlGpmSampleGet");
    GP(metrics, "nvmlGpmMetricsGet");
#undef GP
}

/* Device d will not be sampled: its answer and why, once. */
static void refuse(uint64_t now, int d, int64_t code, const char *why)
{
    struct gpm_dev *x = &g.dev[d];
    x->state = -1;
    ct_health_counter(now, d, g.n_supported, code, g.u_flag);
    char buf[200];
    snprintf(buf, sizeof(buf), "unavailable: device %d: %s", d, why);
    ct_health_meta("gpm", buf);
}

/* The support query and two sample buffers; 1 when d can be sampled. */
static int open_device(uint64_t now, int d, void *h)
{
    struct gpm_dev *x = &g.dev[d];
    if (!g.query || !g.alloc || !g.get || !g.metrics || !g.sfree) {
        refuse(now, d, -1, "NVML has no GPM functions (a driver older than R520)");
        return 0;
    }
    struct nvml_gpm_support sup = {NVML_GPM_SUPPORT_VERSION_, 0};
    nvml_ret rc = g.query(h, &sup);
    char why[96];
    if (rc != NVML_SUCCESS_) {
        snprintf(why, sizeof(why), "nvmlGpmQueryDeviceSupport failed (%d)", rc);
        refuse(now, d, -2, why);
        return 0;
    }
    if (!sup.is_supported) {
        refuse(now, d, 0, "the device does not support GPM (Hopper and later do)");
        return 0;
    }
    if (g.alloc(&x->s[0]) != NVML_SUCCESS_ || g.alloc(&x->s[1]) != NVML_SUCCESS_) {
        if (x->s[0])
            g.sfree(x->s[0]);
        x->s[0] = NULL;
        refuse(now, d, -2, "nvmlGpmSampleAlloc failed");
        return 0;
    }
    x->state = 1;
    ct_health_counter(now, d, g.n_supported, 1, g.u_flag);
    char src[64]; /* which source writes this device's gpm_* counters */
    snprintf(src, sizeof(src), "gpm device %d period_ms %u", d, g.period_ms);
    ct_health_meta("efficiency_source", src);
    if (!g.said_ok) {
        ct_health_meta("gpm", "supported");
        g.said_ok = 1;
    }
    return 1;
}

/* The rates of the interval s[!cur] .. s[cur], stamped at its start. */
static void record_interval(int d, uint64_t start, uint64_t end)
{
    struct gpm_dev *x = &g.dev[d];
    memset(&g_mg, 0, offsetof(struct nvml_gpm_metrics_get, m));
    g_mg.version = NVML_GPM_METRICS_GET_VERSION_;
    g_mg.sample1 = x->s[!x->cur];
    g_mg.sample2 = x->s[x->cur];
    size_t idx[NMETRIC];
    unsigned n = 0;
    for (size_t i = 0; i < NMETRIC; i++)
        if (!(x->off & (1u << i))) {
            memset(&g_mg.m[n], 0, sizeof(g_mg.m[n]));
            g_mg.m[n].id = metric[i].id;
            idx[n++] = i;
        }
    if (!n)
        return;
    g_mg.num = n;
    if (g.metrics(&g_mg) != NVML_SUCCESS_)
        return; /* this interval is lost; the next may work */
    ct_health_counter(start, d, g.n_interval, (int64_t)(end - start), g.u_ns);
    for (unsigned k = 0; k < n; k++) {
        const struct nvml_gpm_metric *m = &g_mg.m[k];
        size_t i = idx[k];
        if (m->ret == NVML_ERROR_NOT_SUPPORTED_) {
            x->off |= 1u << i;
            continue;
        }
        if (m->ret != NVML_SUCCESS_ || !(m->value >= 0)) /* NaN too */
            continue;
        double v = m->value * metric[i].scale + 0.5;
        ct_health_counter(start, d, g.name[i], v < 9.2e18 ? (int64_t)v : INT64_MAX, g.unit[i]);
    }
}

void ct_gpm_device(uint64_t now, int d, void *h)
{
    if (!g.period_ms || d < 0 || d >= CT_GPM_MAX_DEV || !h)
        return;
    struct gpm_dev *x = &g.dev[d];
    if (x->state < 0 || (x->state == 1 && now < x->next_ns))
        return;
    uint64_t c0 = thread_cpu_ns();
    if (x->state == 0 && !open_device(now, d, h))
        goto out;
    /* the sample's own time: taken right before NVML reads the counters,
     * after whatever else this writer pass did */
    uint64_t t = ct_clock_mono_ns();
    nvml_ret rc = g.get(h, x->s[x->cur]);
    if (rc != NVML_SUCCESS_ && !x->sampled) {
        /* never sampled (no permission, a MIG instance): say why, once,
         * rather than ask again every period */
        char why[96];
        snprintf(why, sizeof(why), "nvmlGpmSampleGet failed (%d)", rc);
        refuse(now, d, -2, why);
        goto out;
    }
    if (rc != NVML_SUCCESS_) {
        x->have_prev = 0; /* no rate across a failed sample */
        x->next_ns = now + (uint64_t)g.period_ms * 1000000u;
        goto out;
    }
    if (x->have_prev)
        record_interval(d, x->prev_ns, t);
    x->prev_ns = t;
    x->have_prev = 1;
    x->sampled = 1;
    x->cur = !x->cur;
    x->next_ns = now + (uint64_t)g.period_ms * 1000000u;
    g.samples++;
out:
    g.cost_ns += thread_cpu_ns() - c0;
}

void ct_gpm_finish(void)
{
    if (!g.samples)
        return;
    char buf[64];
    snprintf(buf, sizeof(buf), "%llu", (unsigned long long)g.samples);
    ct_health_meta("gpm_samples", buf);
    snprintf(buf, sizeof(buf), "%llu", (unsigned long long)(g.cost_ns / g.samples));
    ct_health_meta("gpm_ns_per_sample", buf);
}
