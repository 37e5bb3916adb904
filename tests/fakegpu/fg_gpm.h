/*
 * fg_gpm.h - what the simulated driver and the fake NVML agree on for GPU
 * performance monitoring (GPM; README.md, "Fake NVML: GPM"): each kernel's
 * activity profile and the cumulative activity integrals a GPM sample
 * snapshots. The driver (fg_activity.c) integrates the profile of every
 * kernel over the time it runs, and the bytes of every copy with a host
 * end over its transfer; the fake NVML reads those integrals at
 * nvmlGpmSampleGet through fakegpu_gpm_integrals() and turns two of them
 * into rates (nvmlGpmMetricsGet). Header-only: both libraries use it.
 */
#ifndef FG_GPM_H
#define FG_GPM_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* What a kernel keeps busy while it runs, each 0..100 (% of the device):
 * SM activity, warp occupancy, any tensor pipe, DRAM bandwidth, and the
 * non-tensor FP64/FP32/FP16 pipes. */
enum fg_gpm_field {
    FG_GPM_SM,
    FG_GPM_OCC,
    FG_GPM_TENSOR,
    FG_GPM_DRAM,
    FG_GPM_FP64,
    FG_GPM_FP32,
    FG_GPM_FP16,
    FG_GPM_NFIELDS
};

/* Cumulative integrals of one device up to t_ns (CLOCK_MONOTONIC):
 * share[f] in percent x ns (a kernel of profile p running d ns adds
 * p[f] * d), PCIe bytes sent (device to host) and received (host to
 * device), and NVLink bytes sent and received by the collectives' kernels
 * (FAKEGPU_GPM_NVLINK=1 only: README.md, "Fake NVML: GPM"). */
struct fg_gpm_integrals {
    int64_t t_ns;
    double share[FG_GPM_NFIELDS];
    double pcie_tx_bytes, pcie_rx_bytes;
    double nvlink_tx_bytes, nvlink_rx_bytes;
};

/* FAKEGPU_GPM_NVLINK=1: the simulated part has NVLink (its collectives'
 * kernels move data over it, and NVML gives the NVLink metrics). */
static inline int fg_gpm_nvlink(void)
{
    const char *v = getenv("FAKEGPU_GPM_NVLINK");
    return v && v[0] == '1' && !v[1];
}

/* The driver's entry point the fake NVML looks up (dlsym): the integrals
 * of device dev up to now (a time earlier than one asked before is taken
 * as that one). 0, or -1 for a bad device or before the first cuInit. */
typedef int (*fg_gpm_integrals_fn)(int dev, int64_t now, struct fg_gpm_integrals *out);

/* How far behind a query's time the driver folds ended intervals into its
 * totals: a query may ask for a time this much older than the newest
 * asked before and still be exact (the fake CUPTI's PM samples, decoded
 * after they end, fg_cupti_pmsampling.c). */
#define FG_GPM_FOLD_LAG_NS 2000000000

/* The integrals of device dev at t_ns (CLOCK_MONOTONIC) from the loaded
 * simulated driver (fakegpu_gpm_integrals); zeros at t_ns without a
 * loaded, initialised driver: nothing ran. The fake NVML's samples and the
 * fake CUPTI's PM samples both read them here. */
static inline void fg_gpm_integrals_at(int dev, int64_t t_ns, struct fg_gpm_integrals *in)
{
    fg_gpm_integrals_fn fn = NULL;
    void *p = dlsym(RTLD_DEFAULT, "fakegpu_gpm_integrals");
    if (!p) {
        void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        if (lib)
            p = dlsym(lib, "fakegpu_gpm_integrals");
    }
    memcpy(&fn, &p, sizeof(p));
    if (!fn || fn(dev, t_ns, in) != 0) {
        memset(in, 0, sizeof(*in));
        in->t_ns = t_ns;
    }
}

/* Field f's mean over [a, b] in percent of the device: the time-weighted
 * truth of the schedule; concurrent kernels add up, so it is capped at
 * 100. Negative when b is not after a. */
static inline double fg_gpm_pct(const struct fg_gpm_integrals *a, const struct fg_gpm_integrals *b,
                                int f)
{
    double dt = (double)(b->t_ns - a->t_ns);
    if (dt <= 0)
        return -1;
    double v = (b->share[f] - a->share[f]) / dt;
    return v < 0 ? 0 : v > 100 ? 100 : v;
}

/* Bytes per second between two byte integrals (x0 at a, x1 at b). */
static inline double fg_gpm_bytes_per_s(const struct fg_gpm_integrals *a,
                                        const struct fg_gpm_integrals *b, double x0, double x1)
{
    double dt = (double)(b->t_ns - a->t_ns);
    return dt > 0 ? (x1 - x0) / (dt / 1e9) : 0;
}

#endif
