/*
 * The GPU-efficiency checks of `cutrace diagnose` (docs/diff.md,
 * docs/efficiency.md), on each rank's GPM figures per kernel family
 * (decoder/analysis/efficiency.h):
 *   low_tensor_activity  a GEMM family (by name) holding at least a tenth of
 *                        the rank's kernel time whose tensor pipes are busy
 *                        less than half the time it runs;
 *   memory_bound_phase   any other family of that weight classified
 *                        memory-bound: a fusion candidate.
 *   nvlink_saturated     NVLink tx + rx during the collectives at least 80 %
 *                        of the platform's peak (platforms.h, by the device
 *                        name) while PCIe carries under 5 % of that peak.
 * One finding per family (per job for NVLink), naming every rank where it
 * holds. Their saving is not quantified (null): GPM says how busy the
 * units and links were, not how much faster the work could run, and no
 * replay scales a kernel's efficiency or a link's bandwidth.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "decoder/analysis/analysis.h"
#include "decoder/analysis/efficiency.h"
#include "decoder/analysis/platforms.h"
#include "decoder/compare/diagnose_int.h"

/* A family below a tenth of the rank's kernel time could at most halve a
 * twentieth of it by running twice as fast: not worth a finding. */
#define HEAVY_SHARE 0.10

/* Kernel names of matrix multiplications and convolutions (cuBLAS,
 * cuBLASLt, CUTLASS, cuDNN, framework wrappers). */
static int gemm_like(const char *name)
{
    static const char *const w[] = {"gemm",   "matmul", "mma",    "cutlass", "nvjet",
                                    "cublas", "linear", "conv2d", "conv3d",  "convolution",
                                    "fprop",  "dgrad",  "wgrad",  NULL};
    for (const char *const *p = w; *p; p++)
        if (strcasestr(name, *p))
            return 1;
    return 0;
}

/* Which kind family F of a rank whose kernel time is total raises, or -1. */
static int kind_of(const struct ct_eff_family *F, double total)
{
    if (!(total > 0) || (double)F->busy < HEAVY_SHARE * total)
        return -1;
    if (F->cls == CT_EFF_BLEND || F->cls == CT_EFF_UNCLASSIFIED)
        return -1; /* its figure is not its own, or is missing */
    if (gemm_like(F->name))
        return F->v[CT_EFF_TENSOR] < CT_EFF_BOUND_PCT ? CT_FK_LOW_TENSOR : -1;
    return F->cls == CT_EFF_MEMORY_BOUND ? CT_FK_MEMORY_PHASE : -1;
}

struct acc { /* one (kind, family) over the ranks where it holds */
    int kind;
    const char *name;
    int ranks[64];
    size_t nranks, more;
    double w, tensor, dram, sm, occ, share, seen, mixed;
};

static void add_rank(struct acc *a, int rank, const struct ct_eff_family *F, double total)
{
    if (a->nranks < sizeof(a->ranks) / sizeof(a->ranks[0]))
        a->ranks[a->nranks++] = rank;
    else
        a->more++;
    double w = F->attributed;
    a->w += w;
    a->tensor += w * F->v[CT_EFF_TENSOR];
    a->dram += w * F->v[CT_EFF_DRAM];
    a->sm += w * (isfinite(F->v[CT_EFF_SM]) ? F->v[CT_EFF_SM] : 0);
    a->occ += w * (isfinite(F->v[CT_EFF_OCC]) ? F->v[CT_EFF_OCC] : 0);
    a->share += (double)F->busy / total;
    a->seen += F->busy > 0 ? F->attributed / (double)F->busy : 0;
    a->mixed += F->mixed;
}

static void finding(struct ctx *c, const struct acc *a)
{
    size_t n = a->nranks + a->more;
    double seen = a->seen / (double)n, mixed = a->w > 0 ? a->mixed / a->w : 1;
    /* what the figure rests on: the family's time the samples saw, less
     * the part that is a blend */
    double conf = seen * (1 - mixed);
    struct ct_finding *f = ct_dg_add_unquantified(c, a->kind, conf > 0.95 ? 0.95 : conf);
    if (!f)
        return;
    for (size_t k = 0; k < a->nranks; k++)
        ct_dg_rank_add(f, a->ranks[k]);
    double tensor = a->tensor / a->w, dram = a->dram / a->w;
    ct_dg_evs(f, "family", "%s", a->name);
    ct_dg_ev(f, "tensor_active_pct", tensor);
    ct_dg_ev(f, "dram_bw_pct", dram);
    ct_dg_ev(f, "sm_active_pct", a->sm / a->w);
    ct_dg_ev(f, "sm_occupancy_pct", a->occ / a->w);
    ct_dg_ev(f, "kernel_time_share_pct", 100 * a->share / (double)n);
    ct_dg_ev(f, "mixed_pct", 100 * mixed);
    ct_dg_evs(f, "saving",
              "unquantified: GPM says how busy the units were, not how fast the "
              "kernels could run");
    if (a->kind == CT_FK_LOW_TENSOR)
        snprintf(f->summary, sizeof(f->summary),
                 "%.80s (%.0f%% of the kernel time) keeps its tensor cores busy %.0f%% of the "
                 "time it runs (DRAM %.0f%%): a GEMM below half its tensor peak (shape, "
                 "precision without tensor cores, or memory-bound)",
                 a->name, 100 * a->share / (double)n, tensor, dram);
    else
        snprintf(f->summary, sizeof(f->summary),
                 "%.80s (%.0f%% of the kernel time) is memory-bound: DRAM bandwidth %.0f%% busy, "
                 "tensor %.0f%%; fusing it with its neighbours saves its DRAM round trips",
                 a->name, 100 * a->share / (double)n, dram, tensor);
}

/*
 * "Saturated": the collectives move at least 80 % of the link's peak. At
 * that rate no better use of NVLink (algorithm, protocol, channels) can
 * make them more than 1 / 0.8 = 1.25x faster: the link, not the schedule,
 * bounds them, and only fewer bytes (a lower precision, compression) or
 * more overlap with compute shortens them. The rate is measured over the
 * intervals the collectives fill to 90 %, where other traffic can add at
 * most 11 % of its own rate (efficiency_streams.c).
 * "PCIe idle": under 5 % of the NVLink peak (45 GB/s on NVLink 4, 90 on
 * NVLink 5) on PCIe at the same time. A network stage of the collective
 * runs through a NIC on PCIe: one NIC of the platform's generation (400
 * Gb/s with Hopper, 800 with Blackwell: 50 and 100 GB/s a direction)
 * would carry more than that in one direction alone. Below it, the data
 * stay on NVLink: a faster network would not help.
 */
#define NVLINK_SATURATED_PCT 80.0
#define PCIE_IDLE_SHARE      0.05

static void check_nvlink(struct ctx *c)
{
    const struct ct_report *rep = c->rep;
    const char *why = NULL;
    char buf[200], gpm[300];
    size_t judged = 0, n = 0;
    int ranks[64], more = 0;
    double gbs = 0, pcie = 0, seen = 0, share = 0; /* sums over the ranks where it holds */
    const struct ct_platform *plat = NULL;         /* the first rank's where it holds */
    const char *dev = NULL;
    for (size_t r = 0; r < rep->nr; r++) {
        const struct ct_eff *e = rep->rr[r].eff;
        if (!e || e->why) {
            if (!why) {
                snprintf(gpm, sizeof(gpm), "no GPU activity samples: %s",
                         e ? e->why : "no rank was analysed");
                why = gpm;
            }
            continue;
        }
        if (!e->coll.total)
            continue; /* no collective: nothing to judge on this rank */
        const struct ct_platform *p = NULL;
        double pct = ct_efficiency_nvlink_pct(e, &p);
        if (!p) {
            snprintf(buf, sizeof(buf),
                     "no NVLink peak for the device \"%.80s\" (the platform table: H100 SXM, H200 "
                     "SXM, B200, GB200, GB300)",
                     e->device_name[0] ? e->device_name : "(name not recorded)");
            why = why ? why : buf;
            continue;
        }
        if (e->coll.why) {
            why = why ? why : e->coll.why;
            continue;
        }
        double pc = (e->coll.pcie_tx + e->coll.pcie_rx) * 1048576.0 / 1e9;
        if (!isfinite(pc)) {
            why = why ? why : "PCIe rates not given by the device: PCIe idle cannot be told";
            continue;
        }
        judged++;
        if (!(pct >= NVLINK_SATURATED_PCT) || pc >= PCIE_IDLE_SHARE * p->nvlink_gbs)
            continue;
        if (n < sizeof(ranks) / sizeof(ranks[0]))
            ranks[n++] = rep->rr[r].rank->rank;
        else
            more++;
        gbs += (e->coll.nvlink_tx + e->coll.nvlink_rx) * 1048576.0 / 1e9;
        pcie += pc;
        share += pct; /* of each rank's own platform's peak */
        seen += (double)e->coll.seen / (double)e->coll.total;
        plat = plat ? plat : p;
        dev = dev ? dev : e->device_name;
    }
    if (!n) {
        if (!judged)
            ct_dg_insufficient(c, CT_FK_NVLINK_SATURATED, "%s",
                               why ? why : "no collective ran on any rank with GPM figures");
        return;
    }
    double k = (double)(n + (size_t)more), conf = seen / k;
    struct ct_finding *f =
        ct_dg_add_unquantified(c, CT_FK_NVLINK_SATURATED, conf > 0.95 ? 0.95 : conf);
    if (!f)
        return;
    for (size_t i = 0; i < n; i++)
        ct_dg_rank_add(f, ranks[i]);
    ct_dg_evs(f, "platform", "%s (%s)", plat->label, plat->nvlink);
    ct_dg_evs(f, "device", "%s", dev);
    ct_dg_ev(f, "nvlink_gbps", gbs / k);
    ct_dg_ev(f, "nvlink_peak_gbps", plat->nvlink_gbs);
    ct_dg_ev(f, "nvlink_pct_of_peak", share / k);
    ct_dg_ev(f, "pcie_gbps", pcie / k);
    ct_dg_ev(f, "collective_seen_pct", 100 * seen / k);
    ct_dg_evs(f, "saving",
              "unquantified: GPM says how busy the link was, not how much faster the "
              "collectives could run");
    snprintf(f->summary, sizeof(f->summary),
             "NVLink carries %.0f GB/s during the collectives, %.0f%% of the %s's %.0f GB/s "
             "peak, while PCIe carries %.1f GB/s: the collectives are bound by NVLink (fewer "
             "bytes or more overlap with compute shortens them, not a faster network)",
             gbs / k, share / k, plat->label, plat->nvlink_gbs, pcie / k);
}

int ct_dg_check_efficiency(struct ctx *c)
{
    const struct ct_report *rep = c->rep;
    struct acc *v = NULL;
    size_t n = 0, cap = 0;
    const char *why = NULL;
    int any = 0;
    for (size_t r = 0; r < rep->nr; r++) {
        const struct ct_eff *e = rep->rr[r].eff;
        if (!e || e->why) {
            if (e && !why)
                why = e->why;
            continue;
        }
        any = 1;
        double total = 0;
        for (size_t k = 0; k < e->nfam; k++)
            total += (double)e->fam[k].busy;
        for (size_t k = 0; k < e->nfam; k++) {
            const struct ct_eff_family *F = &e->fam[k];
            int kind = kind_of(F, total);
            if (kind < 0)
                continue;
            size_t j = 0;
            while (j < n && (v[j].kind != kind || strcmp(v[j].name, F->name)))
                j++;
            if (j == n) {
                if (n == cap) {
                    size_t cc = cap ? 2 * cap : 8;
                    struct acc *q = realloc(v, cc * sizeof(*q));
                    if (!q) {
                        free(v);
                        return -ENOMEM;
                    }
                    v = q;
                    cap = cc;
                }
                memset(&v[n], 0, sizeof(v[n]));
                v[n].kind = kind;
                v[n].name = F->name;
                n++;
            }
            add_rank(&v[j], rep->rr[r].rank->rank, F, total);
        }
    }
    for (size_t j = 0; j < n; j++)
        if (v[j].w > 0)
            finding(c, &v[j]);
    free(v);
    if (!any) {
        const char *w = why ? why : "no rank was analysed";
        ct_dg_insufficient(c, CT_FK_LOW_TENSOR, "no GPU activity samples: %s", w);
        ct_dg_insufficient(c, CT_FK_MEMORY_PHASE, "no GPU activity samples: %s", w);
    }
    check_nvlink(c);
    return 0;
}
