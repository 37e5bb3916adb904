/*
 * The GPU-efficiency checks of `cutrace diagnose` (docs/diff.md,
 * docs/efficiency.md), on each rank's GPM figures per kernel family
 * (decoder/analysis/efficiency.h):
 *   low_tensor_activity  a GEMM family (by name) holding at least a tenth of
 *                        the rank's kernel time whose tensor pipes are busy
 *                        less than half the time it runs;
 *   memory_bound_phase   any other family of that weight classified
 *                        memory-bound: a fusion candidate.
 * One finding per family, naming every rank where it holds. Their saving is
 * not quantified (null): GPM says how busy the units were, not how much
 * faster the kernels could run, and no replay scales a kernel's efficiency.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "decoder/analysis/analysis.h"
#include "decoder/analysis/efficiency.h"
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
        ct_dg_insufficient(c, CT_FK_LOW_TENSOR, "no GPM figures: %s", w);
        ct_dg_insufficient(c, CT_FK_MEMORY_PHASE, "no GPM figures: %s", w);
    }
    return 0;
}
