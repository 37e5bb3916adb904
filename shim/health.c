/*
 * Health counters beside the timeline (CUTRACE_HEALTH_MS, docs/health.md):
 * every period the writer thread samples NVML for the devices this process
 * uses (those cuda_cache.c described: matched to NVML by UUID, else PCI bus
 * id) and a few host counters from /proc, and records each as one
 * CT_REC_COUNTER (device -1 for the host).
 *
 * All the work runs on the writer thread (a tick, src/recorder.h): never on
 * a job thread, which only publishes a device's identity once. NVML is
 * dlopen'ed (RTLD_LOCAL) once the job has initialised CUDA (its first
 * described device), never linked: a machine without it records "health =
 * unavailable: REASON" once as recorder metadata and goes on with the host
 * counters. Nothing here may fail the job or print. The same pass drives
 * GPM sampling (shim/health_gpm.c, CUTRACE_GPM_MS) on the matched devices
 * and CUPTI PM sampling (shim/pm_sampling.c, CUTRACE_PM_SAMPLING_US) on
 * every described device.
 */
#include "shim/health.h"
#include "shim/hw_links.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "shim/health_gpm.h"
#include "shim/health_proc.h"
#include "shim/pm_sampling.h"
#include "shim/shim.h"
#include "src/ownfd.h"

/* ------------------------------------------------ NVML ABI (nvml.h facts) */

/* Our own declarations of the NVML subset used: nvml.h is not part of the
 * CUDA toolkit we build against. Values are those of the public ABI. */
typedef int nvml_ret;
typedef struct nvml_device_st *nvml_device;
#define NVML_SUCCESS_                      0
#define NVML_CLOCK_SM_                     1
#define NVML_CLOCK_MEM_                    2
#define NVML_TEMPERATURE_GPU_              0
#define NVML_PCIE_UTIL_TX_BYTES_           0
#define NVML_PCIE_UTIL_RX_BYTES_           1
#define NVML_MEMORY_ERROR_CORRECTED_       0
#define NVML_MEMORY_ERROR_UNCORRECTED_     1
#define NVML_VOLATILE_ECC_                 0
#define NVML_FI_NVLINK_THROUGHPUT_DATA_TX_ 138 /* KiB since the counter was reset */
#define NVML_FI_NVLINK_THROUGHPUT_DATA_RX_ 139
struct nvml_utilization {
    unsigned gpu, memory;
};
struct nvml_memory {
    unsigned long long total, free, used;
};
struct nvml_field_value { /* nvmlFieldValue_t */
    unsigned field_id, scope_id;
    long long timestamp, latency_usec;
    int value_type; /* nvmlValueType_t */
    nvml_ret ret;
    union {
        double d;
        unsigned ui;
        unsigned long ul;
        unsigned long long ull;
        long long sll;
    } value;
};

struct nvml_fns {
    nvml_ret (*init)(void);
    nvml_ret (*by_uuid)(const char *, nvml_device *);
    nvml_ret (*by_pci)(const char *, nvml_device *);
    nvml_ret (*clock)(nvml_device, int, unsigned *);
    nvml_ret (*power)(nvml_device, unsigned *);
    nvml_ret (*power_limit)(nvml_device, unsigned *);
    nvml_ret (*temperature)(nvml_device, int, unsigned *);
    nvml_ret (*throttle)(nvml_device, unsigned long long *);
    nvml_ret (*util)(nvml_device, struct nvml_utilization *);
    nvml_ret (*memory)(nvml_device, struct nvml_memory *);
    nvml_ret (*pcie_tp)(nvml_device, int, unsigned *);
    nvml_ret (*pcie_replay)(nvml_device, unsigned *);
    nvml_ret (*ecc)(nvml_device, int, int, unsigned long long *);
    nvml_ret (*fields)(nvml_device, int, struct nvml_field_value *);
};

/* ------------------------------------------------ devices of the job */

#define CT_HEALTH_MAX_DEV 64

struct dev_ident {
    char uuid[96], pci[32];
    atomic_int ready; /* written once by a job thread, read by the writer */
};
static struct dev_ident g_ident[CT_HEALTH_MAX_DEV];
/* A device was described since the last sample: the next writer pass
 * samples at once, so counters start with the device's first use, not one
 * period later (a job throttled from its start read as throttled only from
 * the first period on) */
static atomic_int g_new_device;

void ct_health_device(int dev, const char *uuid, const char *pci)
{
    if (dev < 0 || dev >= CT_HEALTH_MAX_DEV || atomic_load(&g_ident[dev].ready))
        return;
    snprintf(g_ident[dev].uuid, sizeof(g_ident[dev].uuid), "%s", uuid ? uuid : "");
    snprintf(g_ident[dev].pci, sizeof(g_ident[dev].pci), "%s", pci ? pci : "");
    atomic_store_explicit(&g_ident[dev].ready, 1, memory_order_release);
    atomic_store_explicit(&g_new_device, 1, memory_order_release);
}

/* ------------------------------------------------ counters */

/* One counter of a device: which NVML read, its name and unit. A read that
 * says "not supported" turns the counter off for that device. */
enum dev_counter {
    DC_SM_CLOCK,
    DC_MEM_CLOCK,
    DC_POWER,
    DC_POWER_LIMIT,
    DC_TEMPERATURE,
    DC_THROTTLE,
    DC_GPU_UTIL,
    DC_MEM_UTIL,
    DC_MEM_USED,
    DC_PCIE_TX,
    DC_PCIE_RX,
    DC_PCIE_REPLAY,
    DC_ECC_CORRECTED,
    DC_ECC_UNCORRECTED,
    DC_NVLINK_TX,
    DC_NVLINK_RX,
    DC_COUNT
};
static const char *const dc_name[DC_COUNT][2] = {
    {"sm_clock", "MHz"},
    {"mem_clock", "MHz"},
    {"power", "mW"},
    {"power_limit", "mW"},
    {"temperature", "C"},
    {"throttle_reasons", "bitmask"},
    {"gpu_util", "%"},
    {"mem_util", "%"},
    {"mem_used", "bytes"},
    {"pcie_tx", "KB/s"},
    {"pcie_rx", "KB/s"},
    {"pcie_replay", "count"},
    {"ecc_corrected", "count"},
    {"ecc_uncorrected", "count"},
    {"nvlink_tx", "KiB"},
    {"nvlink_rx", "KiB"},
};

enum host_counter { HC_CPU_TIME, HC_CPU_PRESSURE, HC_RUN_QUEUE, HC_MAJOR_FAULTS, HC_COUNT };
static const char *const hc_name[HC_COUNT][2] = {
    {"cpu_time", "ms"},        /* utime + stime of the process */
    {"cpu_pressure", "0.01%"}, /* /proc/pressure/cpu some avg10 */
    {"run_queue", "0.01/cpu"}, /* /proc/loadavg runnable tasks per CPU, when PSI is absent */
    {"major_faults", "count"}, /* since the process started */
};

struct dev_state {
    int tried; /* NVML lookup done */
    nvml_device h;
    uint32_t off; /* bit per enum dev_counter: unsupported */
};

static struct {
    unsigned period_ms;
    uint64_t next_ns;
    int nvml_tried;
    void *lib;
    struct nvml_fns fn;
    struct dev_state dev[CT_HEALTH_MAX_DEV];
    uint32_t dev_name[DC_COUNT], dev_unit[DC_COUNT], host_name[HC_COUNT], host_unit[HC_COUNT];
    int psi; /* 1 PSI readable, 0 not (loadavg instead), -1 not tried */
    long ncpu, hz;
    /* cost, writer thread CPU time (CLOCK_THREAD_CPUTIME_ID) */
    uint64_t samples, cost_ns, writer_cpu_ns;
    int matched, unmatched;
    int hw_host; /* the host's NICs recorded (hw_links.c) */
} h;

void ct_health_meta(const char *key, const char *value)
{
    uint64_t f[CT_META_NFIELDS] = {ct_clock_mono_ns(), CT_SCOPE_RECORDER, 0, ct_intern(key),
                                   ct_intern(value)};
    ct_emit(CT_REC_META, CT_RF_NS, f, CT_META_NFIELDS);
}

void ct_health_counter(uint64_t now, int dev, uint32_t name, int64_t value, uint32_t unit)
{
    uint64_t f[CT_COUNTER_NFIELDS] = {now, (uint64_t)(int64_t)dev, name, (uint64_t)value, unit};
    ct_emit(CT_REC_COUNTER, CT_RF_NS, f, CT_COUNTER_NFIELDS);
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Reads a small /proc file into buf (NUL-terminated). Bytes read, or -1. */
static ssize_t read_small(const char *path, char *buf, size_t n)
{
    return ct_own_read_small(path, buf, n);
}

static void sample_host(uint64_t now)
{
    char buf[1024];
    uint64_t ut, st, mf;
    if (read_small("/proc/self/stat", buf, sizeof(buf)) > 0 &&
        ct_proc_parse_stat(buf, &ut, &st, &mf) == 0) {
        ct_health_counter(now, -1, h.host_name[HC_CPU_TIME],
                          (int64_t)((ut + st) * 1000u / (uint64_t)h.hz), h.host_unit[HC_CPU_TIME]);
        ct_health_counter(now, -1, h.host_name[HC_MAJOR_FAULTS], (int64_t)mf,
                          h.host_unit[HC_MAJOR_FAULTS]);
    }
    int64_t v;
    if (h.psi != 0) {
        if (read_small("/proc/pressure/cpu", buf, sizeof(buf)) > 0 &&
            ct_proc_parse_psi_some_avg10(buf, &v) == 0) {
            h.psi = 1;
            ct_health_counter(now, -1, h.host_name[HC_CPU_PRESSURE], v,
                              h.host_unit[HC_CPU_PRESSURE]);
            return;
        }
        h.psi = 0; /* no PSI here (old kernel, disabled): the run queue instead */
    }
    if (read_small("/proc/loadavg", buf, sizeof(buf)) > 0 &&
        ct_proc_parse_loadavg_running(buf, &v) == 0) {
        /* the running count includes this reader */
        int64_t others = v > 0 ? v - 1 : 0;
        ct_health_counter(now, -1, h.host_name[HC_RUN_QUEUE], others * 100 / h.ncpu,
                          h.host_unit[HC_RUN_QUEUE]);
    }
}

static void *nvml_sym(const char *a, const char *b)
{
    void *p = dlsym(h.lib, a);
    return p || !b ? p : dlsym(h.lib, b);
}

/* dlopen and nvmlInit; on failure, says why once (recorder metadata). */
static void nvml_open(void)
{
    h.nvml_tried = 1;
    const char *env = getenv("CUTRACE_NVML_LIB"); /* tests and unusual installs */
    h.lib = dlopen(env && *env ? env : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    char why[300];
    if (!h.lib) {
        const char *e = dlerror();
        snprintf(why, sizeof(why), "unavailable: NVML not loadable (%.240s)",
                 e ? e : "libnvidia-ml.so.1");
        ct_health_meta("health", why);
        return;
    }
#define NV(field, a, b)                                                                            \
    do {                                                                                           \
        void *p_ = nvml_sym(a, b);                                                                 \
        memcpy(&h.fn.field, &p_, sizeof(p_));                                                      \
    } while (0)
    NV(init, "nvmlInit_v2", "nvmlInit");
    NV(by_uuid, "nvmlDeviceGetHandleByUUID", NULL);
    NV(by_pci, "nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId");
    NV(clock, "nvmlDeviceGetClockInfo", NULL);
    NV(power, "nvmlDeviceGetPowerUsage", NULL);
    NV(power_limit, "nvmlDeviceGetEnforcedPowerLimit", NULL);
    NV(temperature, "nvmlDeviceGetTemperature", NULL);
    NV(throttle, "nvmlDeviceGetCurrentClocksEventReasons",
       "nvmlDeviceGetCurrentClocksThrottleReasons");
    NV(util, "nvmlDeviceGetUtilizationRates", NULL);
    NV(memory, "nvmlDeviceGetMemoryInfo", NULL);
    NV(pcie_tp, "nvmlDeviceGetPcieThroughput", NULL);
    NV(pcie_replay, "nvmlDeviceGetPcieReplayCounter", NULL);
    NV(ecc, "nvmlDeviceGetTotalEccErrors", NULL);
    NV(fields, "nvmlDeviceGetFieldValues", NULL);
#undef NV
    nvml_ret rc = h.fn.init ? h.fn.init() : -1;
    if (rc != NVML_SUCCESS_) {
        snprintf(why, sizeof(why), "unavailable: nvmlInit failed (%d)", rc);
        ct_health_meta("health", why);
        dlclose(h.lib);
        h.lib = NULL;
        return;
    }
    ct_health_meta("health", "nvml");
    ct_gpm_bind(h.lib);
}

/* The NVML handle of described device d (once). */
static void match_device(int d)
{
    struct dev_state *s = &h.dev[d];
    s->tried = 1;
    const struct dev_ident *id = &g_ident[d];
    nvml_device dh = NULL;
    if (h.fn.by_uuid && id->uuid[0] && h.fn.by_uuid(id->uuid, &dh) == NVML_SUCCESS_ && dh)
        s->h = dh;
    else if (h.fn.by_pci && id->pci[0] && h.fn.by_pci(id->pci, &dh) == NVML_SUCCESS_ && dh)
        s->h = dh;
    if (s->h) {
        h.matched++;
        ct_hw_links_device(h.lib, d, s->h);
    } else {
        char why[200];
        snprintf(why, sizeof(why), "unavailable: device %d (%.100s) not found by NVML", d,
                 id->uuid[0] ? id->uuid : id->pci);
        ct_health_meta("health", why);
        h.unmatched++;
    }
}

/* One read: records it, or turns the counter off when NVML says no. The
 * caller makes the NVML call first (its result is an argument here, and
 * the order of evaluation of arguments is unspecified). */
static void dc(uint64_t now, int d, enum dev_counter c, nvml_ret rc, int64_t v)
{
    struct dev_state *s = &h.dev[d];
    if (rc == NVML_SUCCESS_)
        ct_health_counter(now, d, h.dev_name[c], v, h.dev_unit[c]);
    else
        s->off |= 1u << c;
}

#define ON(c) (!(s->off & (1u << (c))))

static void sample_device(uint64_t now, int d)
{
    struct dev_state *s = &h.dev[d];
    nvml_device x = s->h;
    const struct nvml_fns *f = &h.fn;
    unsigned u = 0;
    unsigned long long ull = 0;
    if (f->clock && ON(DC_SM_CLOCK)) {
        nvml_ret rc = f->clock(x, NVML_CLOCK_SM_, &u);
        dc(now, d, DC_SM_CLOCK, rc, u);
    }
    if (f->clock && ON(DC_MEM_CLOCK)) {
        nvml_ret rc = f->clock(x, NVML_CLOCK_MEM_, &u);
        dc(now, d, DC_MEM_CLOCK, rc, u);
    }
    if (f->power && ON(DC_POWER)) {
        nvml_ret rc = f->power(x, &u);
        dc(now, d, DC_POWER, rc, u);
    }
    if (f->power_limit && ON(DC_POWER_LIMIT)) {
        nvml_ret rc = f->power_limit(x, &u);
        dc(now, d, DC_POWER_LIMIT, rc, u);
    }
    if (f->temperature && ON(DC_TEMPERATURE)) {
        nvml_ret rc = f->temperature(x, NVML_TEMPERATURE_GPU_, &u);
        dc(now, d, DC_TEMPERATURE, rc, u);
    }
    if (f->throttle && ON(DC_THROTTLE)) {
        nvml_ret rc = f->throttle(x, &ull);
        dc(now, d, DC_THROTTLE, rc, (int64_t)ull);
    }
    if (f->util && (ON(DC_GPU_UTIL) || ON(DC_MEM_UTIL))) {
        struct nvml_utilization ut = {0, 0};
        nvml_ret rc = f->util(x, &ut);
        dc(now, d, DC_GPU_UTIL, rc, ut.gpu);
        dc(now, d, DC_MEM_UTIL, rc, ut.memory);
    }
    if (f->memory && ON(DC_MEM_USED)) {
        struct nvml_memory m = {0, 0, 0};
        nvml_ret rc = f->memory(x, &m);
        dc(now, d, DC_MEM_USED, rc, (int64_t)m.used);
    }
    if (f->pcie_tp && ON(DC_PCIE_TX)) {
        nvml_ret rc = f->pcie_tp(x, NVML_PCIE_UTIL_TX_BYTES_, &u);
        dc(now, d, DC_PCIE_TX, rc, u);
    }
    if (f->pcie_tp && ON(DC_PCIE_RX)) {
        nvml_ret rc = f->pcie_tp(x, NVML_PCIE_UTIL_RX_BYTES_, &u);
        dc(now, d, DC_PCIE_RX, rc, u);
    }
    if (f->pcie_replay && ON(DC_PCIE_REPLAY)) {
        nvml_ret rc = f->pcie_replay(x, &u);
        dc(now, d, DC_PCIE_REPLAY, rc, u);
    }
    if (f->ecc && ON(DC_ECC_CORRECTED)) {
        nvml_ret rc = f->ecc(x, NVML_MEMORY_ERROR_CORRECTED_, NVML_VOLATILE_ECC_, &ull);
        dc(now, d, DC_ECC_CORRECTED, rc, (int64_t)ull);
    }
    if (f->ecc && ON(DC_ECC_UNCORRECTED)) {
        nvml_ret rc = f->ecc(x, NVML_MEMORY_ERROR_UNCORRECTED_, NVML_VOLATILE_ECC_, &ull);
        dc(now, d, DC_ECC_UNCORRECTED, rc, (int64_t)ull);
    }
    if (f->fields && (ON(DC_NVLINK_TX) || ON(DC_NVLINK_RX))) {
        /* scope_id UINT_MAX: summed over links */
        struct nvml_field_value fv[2];
        memset(fv, 0, sizeof(fv));
        fv[0].field_id = NVML_FI_NVLINK_THROUGHPUT_DATA_TX_;
        fv[1].field_id = NVML_FI_NVLINK_THROUGHPUT_DATA_RX_;
        fv[0].scope_id = fv[1].scope_id = 0xffffffffu;
        nvml_ret rc = f->fields(x, 2, fv);
        dc(now, d, DC_NVLINK_TX, rc ? rc : fv[0].ret, (int64_t)fv[0].value.ull);
        dc(now, d, DC_NVLINK_RX, rc ? rc : fv[1].ret, (int64_t)fv[1].value.ull);
    }
}

/* Writer thread, every pass: health counters when their period is up, and
 * GPM (health_gpm.c), which keeps its own period per device. */
static void tick(uint64_t now)
{
    if (!ct_shim_live())
        return;
    int fresh = atomic_load_explicit(&g_new_device, memory_order_acquire);
    int due = h.period_ms && (now >= h.next_ns || fresh);
    if (!due && !ct_cfg.gpm_ms && !ct_cfg.pm_sampling_us)
        return;
    if (fresh)
        atomic_store_explicit(&g_new_device, 0, memory_order_relaxed);
    uint64_t c0 = due ? thread_cpu_ns() : 0;
    if (due) {
        h.next_ns = now + (uint64_t)h.period_ms * 1000000u;
        sample_host(now);
        if (!h.hw_host) { /* once per image: the host's NICs */
            h.hw_host = 1;
            ct_hw_links_host();
        }
    }
    for (int d = 0; d < CT_HEALTH_MAX_DEV; d++) {
        if (!atomic_load_explicit(&g_ident[d].ready, memory_order_acquire))
            continue;
        /* CUPTI PM sampling needs no NVML; a device it samples is not
         * GPM-sampled too (one source per device: docs/efficiency.md) */
        int pm = d < CT_PM_MAX_DEV && ct_pm_device(now, d);
        if (!h.nvml_tried)
            nvml_open(); /* the job has initialised CUDA: it described a device */
        if (!h.lib)
            continue;
        if (!h.dev[d].tried)
            match_device(d);
        if (!h.dev[d].h)
            continue;
        if (due)
            sample_device(now, d);
        if (d < CT_GPM_MAX_DEV && !pm)
            ct_gpm_device(now, d, h.dev[d].h);
    }
    if (!due)
        return;
    uint64_t c1 = thread_cpu_ns();
    h.samples++;
    h.cost_ns += c1 - c0;
    h.writer_cpu_ns = c1;
}

int ct_health_start(int after_fork)
{
    if (!ct_cfg.health_ms && !ct_cfg.gpm_ms && !ct_cfg.pm_sampling_us)
        return 0;
    ct_gpm_start(after_fork);
    ct_pm_start(after_fork);
    if (after_fork) {
        /* CUDA (and NVML's handles) belong to the parent: host counters
         * only, until this image describes devices of its own (it cannot) */
        for (int d = 0; d < CT_HEALTH_MAX_DEV; d++)
            atomic_store(&g_ident[d].ready, 0);
        h.lib = NULL;
        h.nvml_tried = 0;
        memset(h.dev, 0, sizeof(h.dev));
    }
    h.period_ms = ct_cfg.health_ms;
    h.next_ns = 0;
    h.hw_host = 0;
    h.psi = -1;
    h.samples = h.cost_ns = h.writer_cpu_ns = 0;
    h.ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (h.ncpu < 1)
        h.ncpu = 1;
    h.hz = sysconf(_SC_CLK_TCK);
    if (h.hz < 1)
        h.hz = 100;
    for (int c = 0; c < DC_COUNT; c++) {
        h.dev_name[c] = ct_intern(dc_name[c][0]);
        h.dev_unit[c] = ct_intern(dc_name[c][1]);
    }
    for (int c = 0; c < HC_COUNT; c++) {
        h.host_name[c] = ct_intern(hc_name[c][0]);
        h.host_unit[c] = ct_intern(hc_name[c][1]);
    }
    return ct_writer_tick_add(tick);
}

void ct_health_finish(void)
{
    ct_pm_finish();
    ct_gpm_finish();
    if (!ct_cfg.health_ms || !h.samples)
        return;
    /* what sampling cost the writer thread (scripts/bench reads these) */
    char buf[64];
    snprintf(buf, sizeof(buf), "%llu", (unsigned long long)h.samples);
    ct_health_meta("health_samples", buf);
    snprintf(buf, sizeof(buf), "%llu", (unsigned long long)(h.cost_ns / h.samples));
    ct_health_meta("health_ns_per_sample", buf);
    snprintf(buf, sizeof(buf), "%llu", (unsigned long long)h.cost_ns);
    ct_health_meta("health_cpu_ns", buf);
    snprintf(buf, sizeof(buf), "%llu", (unsigned long long)h.writer_cpu_ns);
    ct_health_meta("writer_cpu_ns", buf);
}
