/*
 * GPU efficiency of a rank (efficiency.h, docs/efficiency.md): GPM sample
 * intervals time-weighted onto the window, the iterations and the kernel
 * families that ran in them.
 *
 * A GPM sample interval I carries the device's mean activity over I (two
 * samples make one rate). Definitions, with B the union of the rank's
 * kernels (SM work: compute and NCCL kernels, not copies, which run on
 * copy engines) and b_I = |B ∩ I| / |I|:
 *   - window, iteration: sum over I of |I ∩ span| v_I / sum |I ∩ span|;
 *   - while busy (percentages): v_I / b_I, the activity of the time the
 *     SMs had work (GPM counts nothing while no kernel runs), at most 100;
 *   - family f: each interval's busy time |B ∩ I| split over the families
 *     by their own busy time in I (|U_f ∩ I| / sum over g of |U_g ∩ I|:
 *     concurrent families share it), w_fI; the family's value is the
 *     w-weighted mean of the while-busy values (rates: of v_I), and an
 *     interval holding more than one family is "mixed": its value is the
 *     mix, so the family's mixed share says how much of its figure is a
 *     blend (docs/efficiency.md bounds the error this leaves).
 * Never prints; not thread-safe per rank result.
 */
#include "decoder/analysis/efficiency.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/analysis.h"
#include "decoder/analysis/efficiency_int.h"
#include "decoder/read/counters.h"
#include "decoder/read/facts.h"
#include "decoder/util/demangle.h"
#include "decoder/util/stats.h"

static const char *const series[CT_EFF_N] = {
    "gpm_sm_util",   "gpm_sm_occupancy", "gpm_tensor_util", "gpm_dram_bw_util",
    "gpm_fp64_util", "gpm_fp32_util",    "gpm_fp16_util",   "gpm_pcie_tx",
    "gpm_pcie_rx",   "gpm_nvlink_tx",    "gpm_nvlink_rx",
};
static const char *const json_name[CT_EFF_N] = {
    "sm_active_pct",   "sm_occupancy_pct", "tensor_active_pct", "dram_bw_pct",
    "fp64_active_pct", "fp32_active_pct",  "fp16_active_pct",   "pcie_tx_mib_s",
    "pcie_rx_mib_s",   "nvlink_tx_mib_s",  "nvlink_rx_mib_s",
};

const char *ct_eff_series(int m)
{
    return m >= 0 && m < CT_EFF_N ? series[m] : "?";
}

const char *ct_eff_json_name(int m)
{
    return m >= 0 && m < CT_EFF_N ? json_name[m] : "?";
}

const char *ct_eff_source_name(int src)
{
    return src == CT_EFF_SRC_PM ? "cupti_pm_sampling" : "nvml_gpm";
}

const char *ct_eff_source_label(int src)
{
    return src == CT_EFF_SRC_PM ? "CUPTI PM sampling" : "NVML GPM";
}

const char *ct_eff_interval_series(int src)
{
    return src == CT_EFF_SRC_PM ? "pm_interval" : "gpm_interval";
}

const char *ct_eff_missing_why(int src)
{
    return src == CT_EFF_SRC_PM
               ? "not given by the device (the chip refused the CUPTI metric: the recorder "
                 "metadata `pm_sampling_metrics_dropped`)"
               : "not given by the device (NVML answered \"not supported\")";
}

const char *ct_eff_class_name(int c)
{
    static const char *const n[] = {"unclassified",  "tensor_bound",  "memory_bound",
                                    "compute_bound", "latency_bound", "blend"};
    return c >= 0 && c <= CT_EFF_BLEND ? n[c] : "?";
}

/*
 * The rule. A unit busy at least CT_EFF_BOUND_PCT of the time the work
 * runs is its limiter candidate: at 50 % the unit already works as long
 * as it waits, so removing every other stall could at most double the
 * work before that unit saturates, and it is the ceiling to look at
 * first; the busiest candidate wins (tensor pipes, DRAM bandwidth, the
 * non-tensor FP pipes). When no unit reaches it, every unit idles most of
 * the time the kernels run: the work waits on latency (dependent
 * instructions, memory latency rather than bandwidth, synchronisation,
 * a grid's tail) or has too few warps to hide it (occupancy): latency/
 * occupancy-limited. Tensor and DRAM are required; FP pipes that were not
 * sampled count as idle.
 */
int ct_eff_classify(const double v[CT_EFF_N])
{
    double t = v[CT_EFF_TENSOR], d = v[CT_EFF_DRAM], f = 0;
    if (!isfinite(t) || !isfinite(d))
        return CT_EFF_UNCLASSIFIED;
    for (int m = CT_EFF_FP64; m <= CT_EFF_FP16; m++)
        if (isfinite(v[m]) && v[m] > f)
            f = v[m];
    double top = t >= d ? t : d;
    if (f > top)
        top = f;
    if (top < CT_EFF_BOUND_PCT)
        return CT_EFF_LATENCY_BOUND;
    return top == t ? CT_EFF_TENSOR_BOUND : top == d ? CT_EFF_MEMORY_BOUND : CT_EFF_COMPUTE_BOUND;
}

/* A family's figure that comes mostly from intervals it shared is the
 * blend of the families there: past half, the others' values can move it
 * by more than half the difference between them, enough to cross any
 * threshold, so no class is claimed (the period is too long for its
 * phases; docs/efficiency.md). */
int ct_eff_family_class(const struct ct_eff_family *f)
{
    if (!(f->attributed > 0))
        return CT_EFF_UNCLASSIFIED;
    if (f->mixed > CT_EFF_MIXED_MAX * f->attributed)
        return CT_EFF_BLEND;
    return ct_eff_classify(f->v);
}

/* ------------------------------------------------ samples */

/* The device whose GPM series the rank's figures come from: the one its
 * main process drives when sampled, else the lowest sampled. */
static int pick_device(const struct ct_hproc *h, int want, const char *name)
{
    if (want >= 0 && ct_hproc_find(h, want, name))
        return want;
    int d = -1;
    for (size_t i = 0; h && i < h->ns; i++)
        if (h->s[i].dev >= 0 && !strcmp(h->s[i].name, name) && (d < 0 || h->s[i].dev < d))
            d = h->s[i].dev;
    return d;
}

/* Why CUPTI PM sampling gave device d no sample (its answer,
 * shim/pm_sampling.c), or NULL when it was not asked for. */
static const char *no_pm_reason(const struct ct_hproc *h, int d)
{
    const struct ct_hseries *s = d >= 0 ? ct_hproc_find(h, d, "pm_supported") : NULL;
    if (!s || !s->n)
        return NULL;
    switch (s->v[s->n - 1]) {
    case 0:
        return "the device does not support CUPTI PM sampling (an older GPU: Turing and later "
               "do)";
    case -1:
        return "CUPTI PM sampling not taken: CUPTI is not cutrace's (another profiler holds it, "
               "or GPU timing is not CUPTI; the recorder metadata `pm_sampling` says which)";
    case -3: return "CUPTI has no PM sampling API (a CUPTI older than CUDA 12.6)";
    case 1:
        return "no CUPTI PM sample in the window (shorter than one CUTRACE_PM_SAMPLING_US "
               "interval)";
    default:
        return "a CUPTI PM sampling step failed (the recorder metadata `pm_sampling` says which "
               "and its result)";
    }
}

/* Why a rank without intervals has no figures. PM sampling was asked for
 * explicitly: its answer comes first. */
static const char *no_gpm_reason(const struct ct_hproc *h, int *device, int *src)
{
    *src = CT_EFF_SRC_GPM;
    if (!h)
        return "the trace has no counters (a PyTorch profiler trace, or a recorder before "
               "format v2)";
    int pd = pick_device(h, *device, "pm_supported");
    const char *pm = no_pm_reason(h, pd);
    if (pm) {
        *device = pd;
        *src = CT_EFF_SRC_PM;
        return pm;
    }
    int d = pick_device(h, *device, "gpm_supported");
    const struct ct_hseries *s = d >= 0 ? ct_hproc_find(h, d, "gpm_supported") : NULL;
    if (s && s->n) {
        *device = d;
        int64_t v = s->v[s->n - 1];
        if (v == 0)
            return "the device does not support GPM (an older GPU: Hopper and later do)";
        if (v == -1)
            return "NVML has no GPM functions (a driver older than R520)";
        if (v < 0)
            return "the GPM support query, its sample buffers or its first sample failed (the "
                   "recorder metadata `gpm` says which)";
        return "no GPM sample interval in the window (shorter than one CUTRACE_GPM_MS period)";
    }
    if (!strncmp(h->status, "unavailable: NVML", 17))
        return "NVML was not loadable (health counters say why)";
    if (!strncmp(h->status, "unavailable", 11))
        return "NVML did not find the device";
    return "GPM was not sampled (CUTRACE_GPM_MS=0, or a recorder without GPM sampling)";
}

/* The intervals of device d, shifted onto the job clock, with each
 * metric's value (series share the interval's start time). */
static struct ct_eff_smp *read_samples(const struct ct_hproc *h, int d, int src, int64_t shift,
                                       size_t *n, int missing[CT_EFF_N])
{
    /* both sources write the same metric series: a sample's values are
     * those stamped at its own interval's start */
    const struct ct_hseries *iv = ct_hproc_find(h, d, ct_eff_interval_series(src));
    *n = 0;
    struct ct_eff_smp *v = calloc(iv->n ? iv->n : 1, sizeof(*v));
    if (!v)
        return NULL;
    const struct ct_hseries *ms[CT_EFF_N];
    size_t at[CT_EFF_N] = {0};
    for (int m = 0; m < CT_EFF_N; m++) {
        ms[m] = ct_hproc_find(h, d, series[m]);
        missing[m] = 1; /* until one of this source's samples gives it */
    }
    for (size_t i = 0; i < iv->n; i++) {
        if (iv->v[i] <= 0)
            continue;
        struct ct_eff_smp *x = &v[(*n)++];
        x->s = iv->t[i] + shift;
        x->e = x->s + iv->v[i];
        for (int m = 0; m < CT_EFF_N; m++) {
            x->v[m] = NAN;
            const struct ct_hseries *q = ms[m];
            while (q && at[m] < q->n && q->t[at[m]] < iv->t[i])
                at[m]++;
            if (q && at[m] < q->n && q->t[at[m]] == iv->t[i]) {
                x->v[m] = (double)q->v[at[m]] / (m < CT_EFF_NPCT ? 100.0 : 1024.0);
                missing[m] = 0;
            }
        }
    }
    return v;
}

/* ------------------------------------------------ families */

struct share { /* one family's raw busy time in one interval */
    size_t i;
    uint32_t f;
    double len;
};

static int share_cmp(const void *a, const void *b)
{
    const struct share *x = a, *y = b;
    if (x->i != y->i)
        return x->i < y->i ? -1 : 1;
    return x->f < y->f ? -1 : x->f > y->f;
}

/* Work on the SMs, each piece once: a kernel NCCL launched inside a call
 * whose GPU time came from elsewhere (the profiler plugin, an event pair;
 * `nested`) is that op's time again, counted with the op. */
int ct_eff_sm_work(const struct ct_gpu_op *o)
{
    return (o->type == CT_GPU_KERNEL && !o->nested) || o->type == CT_GPU_NCCL;
}

struct dname {
    char *name; /* demangled, owned until handed to a family */
    size_t k;   /* the rank's name index */
};

static int dname_cmp(const void *a, const void *b)
{
    const struct dname *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->k > y->k) - (x->k < y->k);
}

/* Family ids of the rank's names (demangled names equal: one family, by
 * sorting: a rank can have thousands of names); fam[] gets the names.
 * -ENOMEM or the count. */
static long families(const struct ct_rank *R, uint32_t *of, struct ct_eff_family **fam)
{
    size_t n = 0, nn = R->nnames;
    struct ct_eff_family *f = calloc(nn ? nn : 1, sizeof(*f));
    struct dname *d = calloc(nn ? nn : 1, sizeof(*d));
    long rc = -ENOMEM;
    char buf[512];
    if (!f || !d)
        goto out;
    for (size_t k = 0; k < nn; k++) {
        ct_demangle(R->names[k] ? R->names[k] : "?", buf, sizeof(buf));
        d[k].k = k;
        if (!(d[k].name = strdup(buf)))
            goto out;
    }
    qsort(d, nn, sizeof(*d), dname_cmp);
    for (size_t i = 0; i < nn; i++) {
        if (!n || strcmp(f[n - 1].name, d[i].name)) {
            f[n++].name = d[i].name; /* the family owns it now */
            d[i].name = NULL;
        }
        of[d[i].k] = (uint32_t)(n - 1);
    }
    *fam = f;
    f = NULL;
    rc = (long)n;
out:
    for (size_t k = 0; d && k < nn; k++)
        free(d[k].name);
    free(d);
    for (size_t k = 0; f && k < n; k++)
        free(f[k].name);
    free(f);
    return rc;
}

/* The first interval ending after t (intervals sorted, disjoint). */
static size_t first_after(const struct ct_eff_smp *v, size_t n, int64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v[mid].e <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int attribute_families(const struct ct_rank *R, int64_t ws, int64_t we, struct ct_eff_smp *v,
                              size_t n, struct ct_eff *e)
{
    int rc = -ENOMEM;
    uint32_t *of = calloc(R->nnames ? R->nnames : 1, sizeof(*of));
    struct share *sh = NULL;
    double *num = NULL, *den = NULL;
    size_t nsh = 0, cap = 0;
    if (!of)
        goto out;
    long nf = families(R, of, &e->fam);
    if (nf < 0)
        goto out;
    e->nfam = (size_t)nf;
    for (size_t k = 0; k < R->nops; k++) {
        const struct ct_gpu_op *o = &R->ops[k];
        int64_t s = o->s > ws ? o->s : ws, t = o->e < we ? o->e : we;
        if (!ct_eff_sm_work(o) || t <= s || o->name >= R->nnames)
            continue;
        uint32_t f = of[o->name];
        e->fam[f].busy += t - s;
        for (size_t i = first_after(v, n, s); i < n && v[i].s < t; i++) {
            int64_t a = s > v[i].s ? s : v[i].s, b = t < v[i].e ? t : v[i].e;
            if (b <= a)
                continue;
            if (nsh == cap) {
                size_t c = cap ? cap * 2 : 1024;
                void *q = realloc(sh, c * sizeof(*sh));
                if (!q)
                    goto out;
                sh = q;
                cap = c;
            }
            sh[nsh++] = (struct share){i, f, (double)(b - a)};
        }
    }
    qsort(sh, nsh, sizeof(*sh), share_cmp);
    num = calloc(e->nfam * CT_EFF_N + 1, sizeof(*num));
    den = calloc(e->nfam * CT_EFF_N + 1, sizeof(*den));
    if (!num || !den)
        goto out;
    for (size_t a = 0; a < nsh;) {
        size_t i = sh[a].i, b = a, distinct = 0;
        double raw = 0;
        for (; b < nsh && sh[b].i == i; b++) {
            raw += sh[b].len;
            distinct += b == a || sh[b].f != sh[b - 1].f;
        }
        const struct ct_eff_smp *x = &v[i];
        double frac = x->busy / (double)(x->e - x->s);
        for (size_t k = a; k < b; k++) {
            struct ct_eff_family *F = &e->fam[sh[k].f];
            double w = sh[k].len * x->busy / raw; /* concurrent families share the busy time */
            F->attributed += w;
            if (distinct > 1)
                F->mixed += w;
            for (int m = 0; m < CT_EFF_N; m++) {
                if (!isfinite(x->v[m]))
                    continue;
                double val = x->v[m];
                if (m < CT_EFF_NPCT) {
                    val = frac > 0 ? val / frac : NAN;
                    if (!isfinite(val))
                        continue;
                    val = val > 100 ? 100 : val;
                }
                num[sh[k].f * CT_EFF_N + m] += w * val;
                den[sh[k].f * CT_EFF_N + m] += w;
            }
        }
        a = b;
    }
    for (size_t f = 0; f < e->nfam; f++) {
        for (int m = 0; m < CT_EFF_N; m++) {
            double d = den[f * CT_EFF_N + m];
            e->fam[f].v[m] = d > 0 ? num[f * CT_EFF_N + m] / d : NAN;
        }
        e->fam[f].cls = ct_eff_family_class(&e->fam[f]);
    }
    rc = 0;
out:
    free(of);
    free(sh);
    free(num);
    free(den);
    return rc;
}

static int fam_cmp(const void *a, const void *b)
{
    const struct ct_eff_family *x = a, *y = b;
    if (x->attributed != y->attributed)
        return x->attributed > y->attributed ? -1 : 1;
    if (x->busy != y->busy)
        return x->busy > y->busy ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* ------------------------------------------------ spans */

/* Time-weighted means over [s, t) into out; returns the covered ns. */
static double span_means(const struct ct_eff_smp *v, size_t n, int64_t s, int64_t t,
                         double out[CT_EFF_N], double busy[CT_EFF_N])
{
    double num[CT_EFF_N] = {0}, den[CT_EFF_N] = {0}, bnum[CT_EFF_N] = {0}, bden[CT_EFF_N] = {0};
    double covered = 0;
    for (size_t i = first_after(v, n, s); i < n && v[i].s < t; i++) {
        int64_t a = s > v[i].s ? s : v[i].s, b = t < v[i].e ? t : v[i].e;
        if (b <= a)
            continue;
        double w = (double)(b - a), frac = v[i].busy / (double)(v[i].e - v[i].s);
        covered += w;
        for (int m = 0; m < CT_EFF_N; m++) {
            if (!isfinite(v[i].v[m]))
                continue;
            num[m] += w * v[i].v[m];
            den[m] += w;
            bnum[m] += w * v[i].v[m];
            bden[m] += w * frac;
        }
    }
    for (int m = 0; m < CT_EFF_N; m++) {
        out[m] = den[m] > 0 ? num[m] / den[m] : NAN;
        if (busy) {
            double x = m < CT_EFF_NPCT && bden[m] > 0 ? bnum[m] / bden[m] : NAN;
            busy[m] = isfinite(x) && x > 100 ? 100 : x;
        }
    }
    return covered;
}

/* ------------------------------------------------ the rank */

void ct_efficiency_free(struct ct_eff *e)
{
    if (!e)
        return;
    for (size_t f = 0; f < e->nfam; f++)
        free(e->fam[f].name);
    free(e->fam);
    free(e->it);
    free(e->str);
    free(e);
}

int ct_efficiency_rank(struct ct_rank_result *x, int64_t shift)
{
    const struct ct_rank *R = x->rank;
    struct ct_eff *e = calloc(1, sizeof(*e));
    if (!e)
        return -ENOMEM;
    x->eff = e;
    for (int m = 0; m < CT_EFF_N; m++)
        e->window[m] = e->busy[m] = NAN;
    const struct ct_hproc *h = R->nprocs ? R->procs[0]->health : NULL;
    int want = R->nprocs ? R->procs[0]->device : -1;
    const char *dn = R->nprocs ? ct_facts_value(R->procs[0]->facts, "device.name") : NULL;
    snprintf(e->device_name, sizeof(e->device_name), "%s", dn ? dn : "");
    /* the finer source where there are both (docs/efficiency.md) */
    e->source = CT_EFF_SRC_PM;
    e->device = h ? pick_device(h, want, "pm_interval") : -1;
    if (e->device < 0) {
        e->source = CT_EFF_SRC_GPM;
        e->device = h ? pick_device(h, want, "gpm_interval") : -1;
    }
    if (e->device < 0) {
        e->device = want;
        e->why = no_gpm_reason(h, &e->device, &e->source);
        return 0;
    }
    size_t n;
    struct ct_eff_smp *v = read_samples(h, e->device, e->source, shift, &n, e->metric_missing);
    if (!v)
        return -ENOMEM;
    int rc = 0;
    struct ct_ivset busy = {0};
    double *gaps = NULL;
    /* B: the rank's SM work */
    for (size_t k = 0; k < R->nops && !rc; k++)
        if (ct_eff_sm_work(&R->ops[k]))
            rc = ct_ivset_add(&busy, R->ops[k].s, R->ops[k].e);
    if (rc)
        goto out;
    ct_ivset_normalize(&busy);
    size_t at = 0;
    for (size_t i = 0; i < n; i++)
        v[i].busy = (double)ct_ivset_len_in_at(&busy, v[i].s, v[i].e, &at);
    for (size_t i = 0; i < n; i++)
        e->intervals += v[i].e > x->ws && v[i].s < x->we;
    if (!e->intervals) {
        e->why = e->source == CT_EFF_SRC_PM
                     ? "no CUPTI PM sample in the window (shorter than one "
                       "CUTRACE_PM_SAMPLING_US interval)"
                     : "no GPM sample interval in the window (shorter than one CUTRACE_GPM_MS "
                       "period)";
        goto out;
    }
    if (!(gaps = malloc(n * sizeof(*gaps)))) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        gaps[i] = (double)(v[i].e - v[i].s);
    e->period_ns = ct_median(gaps, n);
    e->covered = span_means(v, n, x->ws, x->we, e->window, e->busy);
    if ((rc = attribute_families(R, x->ws, x->we, v, n, e)))
        goto out;
    qsort(e->fam, e->nfam, sizeof(*e->fam), fam_cmp);
    while (e->nfam && e->fam[e->nfam - 1].busy == 0) /* names of copies, memsets */
        free(e->fam[--e->nfam].name);
    if ((rc = ct_eff_streams(R, x->ws, x->we, v, n, e)) ||
        (rc = ct_eff_collectives(R, x->ws, x->we, v, n, e)))
        goto out; /* efficiency_streams.c */
    if (x->niters && !(e->it = calloc(x->niters, sizeof(*e->it)))) {
        rc = -ENOMEM;
        goto out;
    }
    e->nit = x->niters;
    for (size_t k = 0; k < x->niters; k++) {
        struct ct_eff_iter *it = &e->it[k];
        it->index = x->iters[k].index;
        it->s = x->iters[k].s;
        it->e = x->iters[k].e;
        it->covered = span_means(v, n, it->s, it->e, it->v, NULL);
    }
out:
    free(gaps);
    free(v);
    ct_ivset_free(&busy);
    return rc;
}
