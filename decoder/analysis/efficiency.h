/*
 * How well a rank's GPU worked while busy (docs/efficiency.md): NVML GPM
 * samples (the `gpm_*` counter series of its trace, shim/health_gpm.c)
 * time-weighted onto what ran in each sample's interval: the rank's
 * window, each iteration, and each kernel family (kernels grouped by
 * demangled name, as the kernel table groups them), with each family
 * classified as tensor-bound, memory-bound, compute-bound (CUDA cores) or
 * latency/occupancy-limited. Computed by ct_efficiency_rank while the
 * rank is open (report.c), written by decoder/export/efficiency_out.c.
 */
#ifndef CT_EFFICIENCY_H
#define CT_EFFICIENCY_H

#include <stddef.h>
#include <stdint.h>

struct ct_rank_result;
struct ct_hproc;
struct ct_eff_family;

/* The metrics, in the order of the tables below. Percentages (0..100) of
 * the device, and rates in MiB/s. */
enum ct_eff_metric {
    CT_EFF_SM,
    CT_EFF_OCC,
    CT_EFF_TENSOR,
    CT_EFF_DRAM,
    CT_EFF_FP64,
    CT_EFF_FP32,
    CT_EFF_FP16,
    CT_EFF_PCIE_TX,
    CT_EFF_PCIE_RX,
    CT_EFF_NVLINK_TX,
    CT_EFF_NVLINK_RX,
    CT_EFF_N
};
#define CT_EFF_NPCT CT_EFF_PCIE_TX /* the first CT_EFF_NPCT are percentages */

/* The counter series of metric m ("gpm_sm_util"), and its JSON name
 * ("sm_active_pct"). */
const char *ct_eff_series(int m);
const char *ct_eff_json_name(int m);

/* Where a rank's figures come from (docs/efficiency.md): NVML GPM
 * (shim/health_gpm.c) or CUPTI PM sampling (shim/pm_sampling.c), both
 * recorded as the same gpm_* counters, each sample with its interval
 * series ("gpm_interval", "pm_interval"). Where a device has both, the
 * finer PM samples are used. */
enum ct_eff_source { CT_EFF_SRC_GPM = 0, CT_EFF_SRC_PM = 1 };
/* "nvml_gpm" / "cupti_pm_sampling" (JSON), "NVML GPM" / "CUPTI PM
 * sampling" (text), and the interval series of the source. */
const char *ct_eff_source_name(int src);
const char *ct_eff_source_label(int src);
const char *ct_eff_interval_series(int src);
/* Why a metric the device did not give is null, by source. */
const char *ct_eff_missing_why(int src);

enum ct_eff_class {
    CT_EFF_UNCLASSIFIED = 0, /* a metric the rule needs is missing */
    CT_EFF_TENSOR_BOUND,
    CT_EFF_MEMORY_BOUND,
    CT_EFF_COMPUTE_BOUND, /* non-tensor FP pipes */
    CT_EFF_LATENCY_BOUND, /* latency/occupancy-limited: no unit near its ceiling */
    CT_EFF_BLEND,         /* over CT_EFF_MIXED_MAX of its time in mixed intervals: not judged */
};
const char *ct_eff_class_name(int c);
/* The rule (efficiency.c): a unit is the limiter when it is busy at least
 * this share of the time the work runs. */
#define CT_EFF_BOUND_PCT 50.0
/* A family whose figure comes more than this share from intervals shared
 * with other families is a blend: not classified (efficiency.c). */
#define CT_EFF_MIXED_MAX 0.5
/* Classifies while-busy values v (NaN: absent). */
int ct_eff_classify(const double v[CT_EFF_N]);
/* The class of family f: CT_EFF_BLEND past CT_EFF_MIXED_MAX, else by its
 * values; CT_EFF_UNCLASSIFIED without attributed time. */
int ct_eff_family_class(const struct ct_eff_family *f);

/* One kernel family of a rank. Values are while the family runs (NaN
 * when no sample interval saw it, or the metric was not sampled). */
struct ct_eff_family {
    char *name;         /* demangled kernel name, owned */
    int64_t busy;       /* its GPU-busy time in the window, ns */
    double attributed;  /* of it, inside sample intervals (ns, split by share) */
    double mixed;       /* of attributed, in intervals it shared with other families */
    double v[CT_EFF_N]; /* while-busy values */
    int cls;            /* enum ct_eff_class */
};

/* One iteration: the device's values over its span (NaN: not covered). */
struct ct_eff_iter {
    int64_t index, s, e;
    double covered; /* ns of [s, e) inside sample intervals */
    double v[CT_EFF_N];
};

/* One GPU stream of a rank (docs/efficiency.md, "Per stream"). A sample
 * interval is the stream's when it holds at least CT_EFF_STREAM_DOMINANT
 * of the per-stream busy time in it (concurrent streams share it, as
 * families do); values are while busy over those intervals (NaN: none). */
#define CT_EFF_STREAM_DOMINANT 0.9
struct ct_eff_stream {
    uint32_t stream;
    int64_t busy;       /* its SM work in the window (the union of its ops), ns */
    size_t intervals;   /* sample intervals it dominated */
    double attributed;  /* their busy time |B ∩ I|, ns */
    double own;         /* of it, the stream's own busy time, ns */
    double v[CT_EFF_N]; /* while-busy values over them */
    int cls;            /* enum ct_eff_class of v; CT_EFF_UNCLASSIFIED without intervals */
};

/* The link traffic of a rank's collectives (docs/efficiency.md,
 * "Collectives' link traffic"): over the sample intervals its collectives
 * (the union of its communication kernels) fill at least
 * CT_EFF_STREAM_DOMINANT of, the bytes each metric moved in them over the
 * collectives' time there, MiB/s (NaN: not sampled, or no such interval:
 * why says which). */
struct ct_eff_coll {
    int64_t total;    /* the collectives' time in the window, ns */
    double seen;      /* of it, inside the intervals they filled, ns */
    size_t intervals; /* those intervals */
    double pcie_tx, pcie_rx, nvlink_tx, nvlink_rx;
    const char *why; /* NULL, or why there is no figure (static string) */
};

struct ct_eff {
    int device;                   /* the device sampled, -1 none */
    int source;                   /* enum ct_eff_source of the figures, or of why there are none */
    char device_name[96];         /* its recorded name (cuDeviceGetName), "" unknown */
    const char *why;              /* NULL, or why there are no figures (static string) */
    size_t intervals;             /* sample intervals overlapping the window */
    double period_ns;             /* their median length */
    double covered;               /* ns of the window inside them */
    double window[CT_EFF_N];      /* time-weighted over the window's covered part */
    double busy[CT_EFF_N];        /* the same per busy time (percentages only) */
    int metric_missing[CT_EFF_N]; /* 1: the device did not give it (not supported) */
    struct ct_eff_family *fam;    /* by attributed time, descending */
    size_t nfam;
    struct ct_eff_iter *it; /* one per iteration of the rank */
    size_t nit;
    struct ct_eff_stream *str; /* by busy time, descending */
    size_t nstr;
    struct ct_eff_coll coll;
};

/*
 * Rank x (open, iterations found): its efficiency into a new x->eff from
 * its main process's counters shifted by `shift` onto the job clock.
 * Returns 0 or -ENOMEM. x->eff is NULL only on failure.
 */
int ct_efficiency_rank(struct ct_rank_result *x, int64_t shift);

/* NVLink tx + rx during e's collectives as % of its platform's peak
 * (decoder/analysis/platforms.h), NaN without the figure or a table
 * entry; *pf (may be NULL) gets the entry or NULL. */
struct ct_platform;
double ct_efficiency_nvlink_pct(const struct ct_eff *e, const struct ct_platform **pf);
void ct_efficiency_free(struct ct_eff *e);

#endif
