/*
 * fg_nvml.c - a fake libnvidia-ml.so.1 for the simulated devices: the NVML
 * subset cutrace's health sampler reads (shim/health.c), with values
 * scripted per process by FAKEGPU_NVML_CAP (fg_throttle.h), consistent
 * with the simulated driver's kernel timing. Types are declared here from
 * NVML's public ABI (nvml.h is not in the CUDA toolkit); only what the
 * sampler uses exists. Identity matches the simulated driver: the UUID
 * cuDeviceGetUuid gives, formatted "GPU-xxxxxxxx-xxxx-...", and bus
 * 0x18 + 0x10 * ordinal. GPM (nvmlGpm*) from the simulated driver's
 * activity integrals (fg_gpm.h), at the end of the file.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "fg_gpm.h"
#include "fg_throttle.h"

#define API __attribute__((visibility("default")))

typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NOT_FOUND = 6,
};
#define NVML_CLOCK_SM                            1
#define NVML_CLOCK_MEM                           2
#define NVML_CLOCKS_THROTTLE_REASON_SW_POWER_CAP 0x4ull

typedef struct {
    unsigned gpu, memory;
} nvmlUtilization_t;
typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;

struct fg_nvml_device {
    int ordinal;
};
typedef struct fg_nvml_device *nvmlDevice_t;

#define MAX_DEV      64
#define FG_LIMIT_MW  700000u
#define FG_POWER_MW  450000u
#define FG_MEM_MHZ   2619u
#define FG_MEM_TOTAL (80ull << 30)
#define FG_MEM_USED  (1ull << 30)

static struct fg_nvml_device g_dev[MAX_DEV];
static int g_ndev, g_init;
static int64_t g_cap_after[FG_THROTTLE_MAX], g_t0;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The simulated driver's cap instant for device d (fg_throttle.c's
 * fakegpu_cap_ns), or -2 when no simulated driver is loaded or initialised. */
static int64_t driver_cap_ns(int d)
{
    int64_t (*fn)(int) = NULL;
    void *p = dlsym(RTLD_DEFAULT, "fakegpu_cap_ns");
    if (!p) {
        void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        if (lib)
            p = dlsym(lib, "fakegpu_cap_ns");
    }
    memcpy(&fn, &p, sizeof(p));
    return fn ? fn(d) : -2;
}

static int capped(int d)
{
    if (d >= FG_THROTTLE_MAX || g_cap_after[d] < 0)
        return 0;
    int64_t at = driver_cap_ns(d);
    if (at == -2)
        at = g_t0 + g_cap_after[d]; /* no simulated driver: from nvmlInit */
    return at >= 0 && now_ns() >= at;
}

API nvmlReturn_t nvmlInit_v2(void)
{
    const char *n = getenv("FAKEGPU_DEVICES");
    g_ndev = n && *n ? atoi(n) : 1;
    if (g_ndev < 0)
        g_ndev = 0;
    if (g_ndev > MAX_DEV)
        g_ndev = MAX_DEV;
    for (int i = 0; i < g_ndev; i++)
        g_dev[i].ordinal = i;
    fg_throttle_parse(getenv("FAKEGPU_NVML_CAP"), g_cap_after);
    g_t0 = now_ns();
    g_init = 1;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlInit(void)
{
    return nvmlInit_v2();
}

API nvmlReturn_t nvmlShutdown(void)
{
    g_init = 0;
    return NVML_SUCCESS;
}

API const char *nvmlErrorString(nvmlReturn_t r)
{
    return r == NVML_SUCCESS ? "Success" : "Fake NVML error";
}

API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *count)
{
    if (!g_init)
        return NVML_ERROR_UNINITIALIZED;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = (unsigned)g_ndev;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *dev)
{
    if (!g_init)
        return NVML_ERROR_UNINITIALIZED;
    if (!dev || i >= (unsigned)g_ndev)
        return NVML_ERROR_INVALID_ARGUMENT;
    *dev = &g_dev[i];
    return NVML_SUCCESS;
}

/* What cuDeviceGetUuid gives for ordinal d (fg_device.c), as NVML formats it. */
static void uuid_of(int d, char *buf, size_t n)
{
    unsigned char b[16] = "FAKEGPU-UUID";
    memset(b + 12, 0, 4);
    b[15] = (unsigned char)d;
    snprintf(buf, n, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t dev, char *uuid, unsigned len)
{
    if (!g_init)
        return NVML_ERROR_UNINITIALIZED;
    if (!dev || !uuid)
        return NVML_ERROR_INVALID_ARGUMENT;
    uuid_of(dev->ordinal, uuid, len);
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *dev)
{
    if (!g_init)
        return NVML_ERROR_UNINITIALIZED;
    if (!uuid || !dev)
        return NVML_ERROR_INVALID_ARGUMENT;
    char buf[96];
    for (int d = 0; d < g_ndev; d++) {
        uuid_of(d, buf, sizeof(buf));
        if (!strcasecmp(buf, uuid)) {
            *dev = &g_dev[d];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

API nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, nvmlDevice_t *dev)
{
    if (!g_init)
        return NVML_ERROR_UNINITIALIZED;
    if (!bus_id || !dev)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned dom = 0, bus = 0, slot = 0;
    if (sscanf(bus_id, "%x:%x:%x", &dom, &bus, &slot) != 3)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (int d = 0; d < g_ndev; d++)
        if ((unsigned)(0x18 + d * 0x10) == bus) {
            *dev = &g_dev[d];
            return NVML_SUCCESS;
        }
    return NVML_ERROR_NOT_FOUND;
}

#define DEV_CHECK(out)                                                                             \
    do {                                                                                           \
        if (!g_init)                                                                               \
            return NVML_ERROR_UNINITIALIZED;                                                       \
        if (!dev || !(out))                                                                        \
            return NVML_ERROR_INVALID_ARGUMENT;                                                    \
    } while (0)

API nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t dev, int type, unsigned *mhz)
{
    DEV_CHECK(mhz);
    if (type == NVML_CLOCK_MEM)
        *mhz = FG_MEM_MHZ;
    else /* graphics and SM clocks move together */
        *mhz = capped(dev->ordinal) ? FG_CAP_CLOCK_MHZ : FG_CLOCK_MHZ;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t dev, unsigned *mw)
{
    DEV_CHECK(mw);
    *mw = capped(dev->ordinal) ? FG_LIMIT_MW : FG_POWER_MW;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t dev, unsigned *mw)
{
    DEV_CHECK(mw);
    *mw = FG_LIMIT_MW;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t dev, int sensor, unsigned *c)
{
    DEV_CHECK(c);
    (void)sensor;
    *c = capped(dev->ordinal) ? 83 : 62;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t dev,
                                                           unsigned long long *reasons)
{
    DEV_CHECK(reasons);
    *reasons = capped(dev->ordinal) ? NVML_CLOCKS_THROTTLE_REASON_SW_POWER_CAP : 0;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t dev,
                                                        unsigned long long *reasons)
{
    return nvmlDeviceGetCurrentClocksThrottleReasons(dev, reasons);
}

API nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, nvmlUtilization_t *u)
{
    DEV_CHECK(u);
    u->gpu = 97;
    u->memory = 41;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *m)
{
    DEV_CHECK(m);
    m->total = FG_MEM_TOTAL;
    m->used = FG_MEM_USED;
    m->free = FG_MEM_TOTAL - FG_MEM_USED;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t dev, int counter, unsigned *kbs)
{
    DEV_CHECK(kbs);
    *kbs = counter == 0 ? 1200 : 800;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t dev, unsigned *n)
{
    DEV_CHECK(n);
    *n = 0;
    return NVML_SUCCESS;
}

/* The simulated part has no ECC reporting and no NVLink (like a PCIe card
 * with ECC off): the sampler must turn these counters off, not fail. */
API nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t dev, int type, int counter,
                                             unsigned long long *n)
{
    DEV_CHECK(n);
    (void)type;
    (void)counter;
    return NVML_ERROR_NOT_SUPPORTED;
}

/* NVLink state per link: FAKEGPU_NVLINK_LINKS=N makes links 0..N-1
 * active and the rest of NVML's 18 inactive; unset (a PCIe part) every
 * link answers NVML_ERROR_NOT_SUPPORTED. Past link 17: an invalid
 * argument, as NVML answers past a device's links. */
API nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t dev, unsigned link, unsigned *active)
{
    DEV_CHECK(active);
    const char *v = getenv("FAKEGPU_NVLINK_LINKS");
    if (!v || !*v)
        return NVML_ERROR_NOT_SUPPORTED;
    if (link >= 18)
        return NVML_ERROR_INVALID_ARGUMENT;
    *active = (long)link < strtol(v, NULL, 10) ? 1 : 0;
    return NVML_SUCCESS;
}

/* ------------------------------------------------ GPM (fg_gpm.h) */

/* GPU performance monitoring as nvml.h defines it (values from NVML's
 * public ABI): a sample snapshots the device's cumulative activity (the
 * simulated driver's integrals, fakegpu_gpm_integrals), and two samples
 * make one rate per metric, the time-weighted truth of the schedule over
 * their interval. FAKEGPU_GPM=0 makes every device an older part without
 * GPM (the support query says so, samples are refused); FAKEGPU_GPM=denied
 * answers the query yes and refuses every sample (no permission). The simulated
 * part has no NVLink (those metrics answer "not supported") unless
 * FAKEGPU_GPM_NVLINK=1: then NVLink tx and rx are the bytes the collectives'
 * kernels moved (fg_activity.c) over the interval. */
#define NVML_ERROR_ARGUMENT_VERSION_MISMATCH    25
#define NVML_GPM_SUPPORT_VERSION                1
#define NVML_GPM_METRICS_GET_VERSION            1
#define FG_GPM_METRIC_MAX                       98 /* nvml.h's NVML_GPM_METRIC_MAX of R525 */
#define NVML_GPM_METRIC_SM_UTIL                 2
#define NVML_GPM_METRIC_SM_OCCUPANCY            3
#define NVML_GPM_METRIC_ANY_TENSOR_UTIL         5
#define NVML_GPM_METRIC_DRAM_BW_UTIL            10
#define NVML_GPM_METRIC_FP64_UTIL               11
#define NVML_GPM_METRIC_FP32_UTIL               12
#define NVML_GPM_METRIC_FP16_UTIL               13
#define NVML_GPM_METRIC_PCIE_TX_PER_SEC         20
#define NVML_GPM_METRIC_PCIE_RX_PER_SEC         21
#define NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC 60
#define NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC 61

typedef struct {
    unsigned version, isSupportedDevice;
} nvmlGpmSupport_t;

struct fg_gpm_sample {
    unsigned magic;
    int dev; /* -1 until filled */
    struct fg_gpm_integrals in;
};
#define FG_GPM_MAGIC 0x67706d31u
typedef struct fg_gpm_sample *nvmlGpmSample_t;

typedef struct {
    unsigned metricId;
    nvmlReturn_t nvmlReturn;
    double value;
    struct {
        char *shortName, *longName, *unit;
    } metricInfo;
} nvmlGpmMetric_t;

typedef struct {
    unsigned version, numMetrics;
    nvmlGpmSample_t sample1, sample2;
    nvmlGpmMetric_t metrics[FG_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;

static int gpm_supported(void)
{
    const char *v = getenv("FAKEGPU_GPM");
    return !(v && !strcmp(v, "0"));
}

/* FAKEGPU_GPM=denied: supported, but samples refused (a process without
 * the permission NVML asks for). */
static int gpm_denied(void)
{
    const char *v = getenv("FAKEGPU_GPM");
    return v && !strcmp(v, "denied");
}

API nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t dev, nvmlGpmSupport_t *s)
{
    DEV_CHECK(s);
    if (s->version != NVML_GPM_SUPPORT_VERSION)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    s->isSupportedDevice = (unsigned)gpm_supported();
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *out)
{
    if (!out)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct fg_gpm_sample *s = calloc(1, sizeof(*s));
    if (!s)
        return NVML_ERROR_INVALID_ARGUMENT; /* NVML says MEMORY; nothing here tests it */
    s->magic = FG_GPM_MAGIC;
    s->dev = -1;
    *out = s;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t s)
{
    if (!s || s->magic != FG_GPM_MAGIC)
        return NVML_ERROR_INVALID_ARGUMENT;
    s->magic = 0;
    free(s);
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t dev, nvmlGpmSample_t s)
{
    DEV_CHECK(s);
    if (s->magic != FG_GPM_MAGIC)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!gpm_supported())
        return NVML_ERROR_NOT_SUPPORTED;
    if (gpm_denied())
        return 4; /* NVML_ERROR_NO_PERMISSION */
    fg_gpm_integrals_at(dev->ordinal, now_ns(), &s->in);
    s->dev = dev->ordinal;
    return NVML_SUCCESS;
}

static void info(nvmlGpmMetric_t *m, const char *sn, const char *ln, const char *unit)
{
    /* nvml.h's char * members; NVML hands out its own constant strings */
    m->metricInfo.shortName = (char *)(uintptr_t)sn;
    m->metricInfo.longName = (char *)(uintptr_t)ln;
    m->metricInfo.unit = (char *)(uintptr_t)unit;
}

API nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *g)
{
    if (!g_init)
        return NVML_ERROR_UNINITIALIZED;
    if (!g)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (g->version != NVML_GPM_METRICS_GET_VERSION)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    const struct fg_gpm_sample *a = g->sample1, *b = g->sample2;
    if (!a || !b || a->magic != FG_GPM_MAGIC || b->magic != FG_GPM_MAGIC || a->dev < 0 ||
        a->dev != b->dev || g->numMetrics > FG_GPM_METRIC_MAX)
        return NVML_ERROR_INVALID_ARGUMENT;
    double dt = (double)(b->in.t_ns - a->in.t_ns);
    if (dt <= 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned i = 0; i < g->numMetrics; i++) {
        nvmlGpmMetric_t *m = &g->metrics[i];
        int f = -1;
        m->nvmlReturn = NVML_SUCCESS;
        m->value = 0;
        info(m, "", "", "");
        switch (m->metricId) {
        case NVML_GPM_METRIC_SM_UTIL:
            f = FG_GPM_SM, info(m, "sm_util", "SM utilization", "%");
            break;
        case NVML_GPM_METRIC_SM_OCCUPANCY:
            f = FG_GPM_OCC, info(m, "sm_occupancy", "SM occupancy", "%");
            break;
        case NVML_GPM_METRIC_ANY_TENSOR_UTIL:
            f = FG_GPM_TENSOR, info(m, "any_tensor_util", "Any tensor utilization", "%");
            break;
        case NVML_GPM_METRIC_DRAM_BW_UTIL:
            f = FG_GPM_DRAM, info(m, "dram_bw_util", "DRAM bandwidth utilization", "%");
            break;
        case NVML_GPM_METRIC_FP64_UTIL:
            f = FG_GPM_FP64, info(m, "fp64_util", "FP64 utilization", "%");
            break;
        case NVML_GPM_METRIC_FP32_UTIL:
            f = FG_GPM_FP32, info(m, "fp32_util", "FP32 utilization", "%");
            break;
        case NVML_GPM_METRIC_FP16_UTIL:
            f = FG_GPM_FP16, info(m, "fp16_util", "FP16 utilization", "%");
            break;
        case NVML_GPM_METRIC_PCIE_TX_PER_SEC:
            m->value =
                fg_gpm_bytes_per_s(&a->in, &b->in, a->in.pcie_tx_bytes, b->in.pcie_tx_bytes) /
                1048576.0;
            info(m, "pcie_tx", "PCIe transmit", "MiB/sec");
            continue;
        case NVML_GPM_METRIC_PCIE_RX_PER_SEC:
            m->value =
                fg_gpm_bytes_per_s(&a->in, &b->in, a->in.pcie_rx_bytes, b->in.pcie_rx_bytes) /
                1048576.0;
            info(m, "pcie_rx", "PCIe receive", "MiB/sec");
            continue;
        case NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC:
        case NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC:
            if (!fg_gpm_nvlink()) {
                m->nvmlReturn = NVML_ERROR_NOT_SUPPORTED; /* a part without NVLink */
                continue;
            }
            m->value = (m->metricId == NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC
                            ? fg_gpm_bytes_per_s(&a->in, &b->in, a->in.nvlink_tx_bytes,
                                                 b->in.nvlink_tx_bytes)
                            : fg_gpm_bytes_per_s(&a->in, &b->in, a->in.nvlink_rx_bytes,
                                                 b->in.nvlink_rx_bytes)) /
                       1048576.0;
            info(m,
                 m->metricId == NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC ? "nvlink_tx" : "nvlink_rx",
                 "NVLink total", "MiB/sec");
            continue;
        default: /* media engines, per-precision tensor pipes: not on this part */
            m->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
            continue;
        }
        m->value = fg_gpm_pct(&a->in, &b->in, f); /* concurrent kernels add up: capped */
    }
    return NVML_SUCCESS;
}
