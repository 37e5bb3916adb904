/*
 * The metrics `cutrace diff` compares, taken from a run's report (names and
 * definitions in docs/diff.md). Values are µs but for the percentages
 * (goodput_pct, gpm_*_pct). Never prints.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/efficiency.h"
#include "decoder/analysis/goodput.h"
#include "decoder/analysis/nccl_links.h"
#include "decoder/compare/diff.h"
#include "decoder/util/names.h"
#include "decoder/util/stats.h"
#include "decoder/read/job.h"

/* More samples than this (kernel instances of a long run) are thinned to an
 * evenly spaced subset: the bootstrap sorts every resample. */
#define MAX_SAMPLES 4000

/* Every fixed name ct_diff_collect gives ct_metric_add (beside kernel:NAME
 * and collective:OP:BYTES): keep it with the calls below. */
static const char *const fixed_metrics[] = {"step_us",
                                            "compute_us",
                                            "exposed_comm_us",
                                            "idle_us",
                                            "bubble_us",
                                            "data_stall_us",
                                            "checkpoint_stall_us",
                                            "sync_drain_us",
                                            "launch_overhead_us",
                                            "cuda_call_us",
                                            "goodput_pct",
                                            "startup_us",
                                            "lost_us",
                                            "downtime_us",
                                            "gpm_sm_pct",
                                            "gpm_tensor_pct",
                                            "gpm_dram_pct",
                                            NULL};

/* GPM activity compared by diff, while the GPU (or a family) is busy:
 * "gpm_tensor_pct" for the rank, "gpm_tensor_pct:FAMILY" per kernel family
 * (docs/diff.md). */
static const struct {
    int m;
    const char *name;
} gpm_metrics[] = {
    {CT_EFF_SM, "gpm_sm_pct"}, {CT_EFF_TENSOR, "gpm_tensor_pct"}, {CT_EFF_DRAM, "gpm_dram_pct"}};
#define N_GPM (sizeof(gpm_metrics) / sizeof(gpm_metrics[0]))

int ct_diff_metric_name_ok(const char *name, char *list, size_t len)
{
    if (!strncmp(name, "kernel:", 7) || !strncmp(name, "collective:", 11) ||
        !strncmp(name, "link_gbps:", 10))
        return 1;
    for (size_t i = 0; i < N_GPM; i++) {
        size_t k = strlen(gpm_metrics[i].name);
        if (!strncmp(name, gpm_metrics[i].name, k) && name[k] == ':' && name[k + 1])
            return 1;
    }
    size_t at = 0;
    if (len)
        list[0] = 0;
    for (int i = 0; fixed_metrics[i]; i++) {
        if (!strcmp(name, fixed_metrics[i]))
            return 1;
        int w = snprintf(list + at, len - at, "%s%s", at ? ", " : "", fixed_metrics[i]);
        if (w > 0 && (size_t)w < len - at)
            at += (size_t)w;
    }
    return 0;
}

int ct_metric_add(struct ct_metric_set *s, const char *name, double v)
{
    struct ct_metric *m = ct_metric_find(s, name);
    if (!m) {
        if (s->n == s->cap) {
            size_t cap = s->cap ? s->cap * 2 : 32;
            struct ct_metric *q = realloc(s->m, cap * sizeof(*q));
            if (!q)
                return -ENOMEM;
            s->m = q;
            s->cap = cap;
        }
        m = &s->m[s->n];
        memset(m, 0, sizeof(*m));
        if (!(m->name = strdup(name)))
            return -ENOMEM;
        s->n++;
    }
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 16;
        double *q = realloc(m->v, cap * sizeof(*q));
        if (!q)
            return -ENOMEM;
        m->v = q;
        m->cap = cap;
    }
    m->v[m->n++] = v;
    return 0;
}

struct ct_metric *ct_metric_find(const struct ct_metric_set *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->m[i].name, name))
            return &s->m[i];
    return NULL;
}

void ct_metric_set_free(struct ct_metric_set *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->m[i].name);
        free(s->m[i].v);
    }
    free(s->m);
    memset(s, 0, sizeof(*s));
}

static const char *op_name(int op)
{
    return op == CT_NCCL_OP_COUNT ? "other" : ct_name_nccl_op((uint64_t)op);
}

/* A scratch metric set holding within-run samples, folded into s either
 * as is (thinned) or as one median each. */
static int fold(struct ct_metric_set *tmp, int per_iteration, struct ct_metric_set *s)
{
    int rc = 0;
    for (size_t i = 0; i < tmp->n && !rc; i++) {
        struct ct_metric *m = &tmp->m[i];
        if (!per_iteration) {
            rc = ct_metric_add(s, m->name, ct_median(m->v, m->n));
            continue;
        }
        size_t step = m->n > MAX_SAMPLES ? (m->n + MAX_SAMPLES - 1) / MAX_SAMPLES : 1;
        for (size_t k = 0; k < m->n && !rc; k += step)
            rc = ct_metric_add(s, m->name, m->v[k]);
    }
    return rc;
}

static int has_pp(const struct ct_report *rep)
{
    for (size_t r = 0; r < rep->nr; r++)
        if (rep->rr[r].bubble_pct >= 0)
            return 1;
    return 0;
}

int ct_diff_collect(const struct ct_report *rep, int per_iteration, struct ct_metric_set *s)
{
    struct ct_metric_set t = {0};
    int rc = 0, pp = has_pp(rep);
    /* per (rank, iteration) */
    for (size_t r = 0; r < rep->nr && !rc; r++) {
        const struct ct_rank_result *x = &rep->rr[r];
        for (size_t i = 0; i < x->niters && !rc; i++) {
            const struct ct_iter_metrics *m = &x->im[i];
            rc = ct_metric_add(&t, "step_us", (double)(x->iters[i].e - x->iters[i].s) / 1e3);
            rc = rc ? rc : ct_metric_add(&t, "compute_us", (double)m->compute / 1e3);
            rc = rc ? rc : ct_metric_add(&t, "exposed_comm_us", (double)m->exposed_comm / 1e3);
            rc = rc ? rc : ct_metric_add(&t, "idle_us", (double)m->idle / 1e3);
            if (pp && !rc)
                rc = ct_metric_add(&t, "bubble_us", (double)m->bubble / 1e3);
        }
        /* stalls are per-rank totals: per iteration on average, one sample
         * per rank */
        if (!x->niters || rc)
            continue;
        double n = (double)x->niters * 1e3;
        const struct ct_attribution *a = &x->at;
        rc = ct_metric_add(&t, "data_stall_us", (double)a->data_stall / n);
        rc = rc ? rc : ct_metric_add(&t, "checkpoint_stall_us", (double)a->checkpoint_stall / n);
        rc = rc ? rc : ct_metric_add(&t, "cuda_call_us", (double)a->cuda_call / n);
        rc = rc ? rc : ct_metric_add(&t, "sync_drain_us", (double)a->sync_drain / n);
        rc = rc ? rc : ct_metric_add(&t, "launch_overhead_us", (double)a->launch_overhead / n);
    }
    /* per kernel (compute) and per collective instance */
    char name[512];
    for (size_t r = 0; r < rep->nr && !rc; r++) {
        struct ct_rank *R = rep->rr[r].rank;
        rc = ct_rank_open(R);
        for (size_t i = 0; i < R->nops && !rc; i++) {
            const struct ct_gpu_op *g = &R->ops[i];
            if (g->cls != CT_CL_COMPUTE || g->name >= R->nnames)
                continue;
            snprintf(name, sizeof(name), "kernel:%s", R->names[g->name]);
            rc = ct_metric_add(&t, name, (double)(g->e - g->s) / 1e3);
        }
        ct_rank_close(R);
        for (size_t i = 0; i < R->nnccl && !rc; i++) {
            const struct ct_nccl_call *o = &R->nccl[i];
            if (o->e <= o->s)
                continue;
            /* NVSHMEM's apart from NCCL's of the same op and size */
            snprintf(name, sizeof(name), "collective:%s%s:%" PRIu64,
                     o->lib == CT_LIB_NVSHMEM ? "nvshmem:" : "", op_name(o->op), o->bytes);
            /* within one run, waiting on peers follows host jitter: compare
             * the transfer part (from the last member's arrival) */
            int64_t from = per_iteration && o->all_s > o->s ? o->all_s : o->s;
            if (from < o->e)
                rc = ct_metric_add(&t, name, (double)(o->e - from) / 1e3);
        }
    }
    /* per rank: GPM activity while busy, the rank's and each kernel
     * family's that is not a blend of others (efficiency.h), one sample
     * each */
    for (size_t r = 0; r < rep->nr && !rc; r++) {
        const struct ct_eff *e = rep->rr[r].eff;
        if (!e || e->why)
            continue;
        for (size_t k = 0; k < N_GPM && !rc; k++)
            if (isfinite(e->busy[gpm_metrics[k].m]))
                rc = ct_metric_add(&t, gpm_metrics[k].name, e->busy[gpm_metrics[k].m]);
        for (size_t i = 0; i < e->nfam && !rc; i++) {
            const struct ct_eff_family *f = &e->fam[i];
            if (!(f->attributed > 0) || ct_eff_family_class(f) == CT_EFF_BLEND)
                continue;
            for (size_t k = 0; k < N_GPM && !rc; k++) {
                if (!isfinite(f->v[gpm_metrics[k].m]))
                    continue;
                snprintf(name, sizeof(name), "%s:%s", gpm_metrics[k].name, f->name);
                rc = ct_metric_add(&t, name, f->v[gpm_metrics[k].m]);
            }
        }
    }
    /* per run: where its wall time went (one sample each; docs/goodput.md) */
    const struct ct_goodput *g = rep->goodput;
    if (!rc && g && g->natt && g->e > g->s) {
        /* a figure given as null (no step found) is no sample */
        if (isfinite(g->goodput_pct))
            rc = ct_metric_add(&t, "goodput_pct", g->goodput_pct);
        if (!rc && isfinite(g->part[CT_GP_STARTUP]))
            rc = ct_metric_add(&t, "startup_us", g->part[CT_GP_STARTUP] / 1e3);
        rc = rc ? rc : ct_metric_add(&t, "lost_us", g->part[CT_GP_LOST] / 1e3);
        rc = rc ? rc : ct_metric_add(&t, "downtime_us", g->downtime / 1e3);
    }
    /* per run: each network link's bandwidth over the run (NCCL's proxy
     * steps, docs/nccl.md), named by job ranks; one sample each */
    const struct ct_nlinks *L = rep->nlinks;
    for (size_t i = 0; !rc && L && i < L->nl; i++) {
        const struct ct_nlink *l = &L->l[i];
        if (!isfinite(l->gbps) || l->src_rank < 0 || l->dst_rank < 0)
            continue;
        snprintf(name, sizeof(name), "link_gbps:%d->%d", l->src_rank, l->dst_rank);
        rc = ct_metric_add(&t, name, l->gbps);
    }
    if (!rc)
        rc = fold(&t, per_iteration, s);
    ct_metric_set_free(&t);
    return rc;
}
