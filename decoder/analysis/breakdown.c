/*
 * Per-rank breakdown over the window [first GPU start, last GPU end), and
 * of a rank with capture windows over the part of it they cover:
 *   compute = |∪COMPUTE|, comm = |∪COMM|, memory = |∪MEMORY|,
 *   idle = |covered| - |∪ all GPU intervals ∩ covered|,
 *   overlap = |∪COMM ∩ ∪COMPUTE|, exposed_comm = |∪COMM \ ∪COMPUTE|,
 * the same per communication class, and per iteration over [s, e).
 * HTA idle breakdown per stream: the gap before each op goes to host_wait
 * when the op was launched after the previous op on its stream ended, else
 * to kernel_wait when shorter than CT_KERNEL_WAIT_NS, else to other.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/analysis.h"
#include "decoder/read/job.h"

/* |a|, or of a rank with capture windows |a ∩ cover| */
static int64_t len_c(const struct ct_ivset *a, const struct ct_ivset *cover)
{
    return cover ? ct_ivset_overlap(a, cover) : ct_ivset_len(a);
}

/* |a ∩ b|, within cover when there is one (an allocation failure leaves
 * it unclipped: the figure is then over the span, as without windows). */
static int64_t overlap_c(const struct ct_ivset *a, const struct ct_ivset *b,
                         const struct ct_ivset *cover)
{
    struct ct_ivset t = {0};
    if (!cover || ct_ivset_intersect(a, cover, &t)) {
        ct_ivset_free(&t);
        return ct_ivset_overlap(a, b);
    }
    int64_t v = ct_ivset_overlap(&t, b);
    ct_ivset_free(&t);
    return v;
}

/* Graph coverage: of the rank's GPU busy time, what graph replays
 * launched (the union of their ops), both within the cover; and, in the
 * same walk of the ops, the time of blocking copies and the communication
 * kernels outside NCCL's calls. */
static int graph_share(struct ct_rank_result *res)
{
    const struct ct_rank *r = res->rank;
    const struct ct_ivset *cover = ct_rank_gcover(r);
    struct ct_ivset g = {0};
    for (size_t i = 0; i < r->nops; i++) {
        const struct ct_gpu_op *o = &r->ops[i];
        if (o->graph && ct_ivset_add(&g, o->s, o->e)) {
            ct_ivset_free(&g);
            return -ENOMEM;
        }
        if (o->blocking)
            res->memory_blocking += o->e - o->s;
        if (o->nccl < 0 && o->type == CT_GPU_KERNEL && CT_CL_IS_COMM(o->cls) &&
            (!r->cover || ct_ivset_len_in(&r->gcover, o->s, o->e) > 0)) {
            res->comm_kernels++;
            res->comm_kernels_time += o->e - o->s;
        }
    }
    ct_ivset_normalize(&g);
    res->busy = len_c(&r->gpu, cover);
    res->graph_busy = len_c(&g, cover);
    ct_ivset_free(&g);
    return 0;
}

static void breakdown(struct ct_rank_result *res)
{
    struct ct_rank *r = res->rank;
    const struct ct_ivset *compute = &r->cls[CT_CL_COMPUTE];
    /* over the covered time only: work running past a window's whole
     * iterations is beside work the pause left unrecorded */
    const struct ct_ivset *cv = ct_rank_gcover(r);
    res->compute = len_c(compute, cv);
    res->memory = len_c(&r->cls[CT_CL_MEMORY], cv);
    res->comm = len_c(&r->comm, cv);
    res->idle = res->covered - len_c(&r->gpu, cv);
    res->overlap = overlap_c(&r->comm, compute, cv);
    res->exposed_comm = res->comm - res->overlap;
    for (int c = CT_CL_DP; c < CT_CL_COUNT; c++) {
        /* a rank with one communication class (the common case) has its
         * set equal to the union's: its figures are the union's, taken,
         * not computed again (a walk of both large sets) */
        const struct ct_ivset *s = &r->cls[c];
        int same = s->n == r->comm.n && (!s->n || !memcmp(s->v, r->comm.v, s->n * sizeof(*s->v)));
        res->cls_len[c] = same ? res->comm : len_c(s, cv);
        res->cls_overlap[c] = same ? res->overlap : overlap_c(s, compute, cv);
        res->cls_exposed[c] = res->cls_len[c] - res->cls_overlap[c];
    }
    size_t at[6] = {0}; /* iterations come in time order: one sweep per set */
    for (size_t k = 0; k < res->niters; k++) {
        int64_t a = res->iters[k].s, b = res->iters[k].e;
        struct ct_iter_metrics *m = &res->im[k];
        m->compute = ct_ivset_len_in_at(compute, a, b, &at[0]);
        m->memory = ct_ivset_len_in_at(&r->cls[CT_CL_MEMORY], a, b, &at[1]);
        m->comm = ct_ivset_len_in_at(&r->comm, a, b, &at[2]);
        m->idle = (b - a) - ct_ivset_len_in_at(&r->gpu, a, b, &at[3]);
        /* exposed = comm - |comm ∩ compute| inside it */
        m->exposed_comm = m->comm - ct_ivset_overlap_in(&r->comm, compute, a, b, &at[4], &at[5]);
    }
}

static int cmp_stream(const void *a, const void *b, void *ctx)
{
    const struct ct_gpu_op *ops = ctx;
    const struct ct_gpu_op *x = &ops[*(const size_t *)a], *y = &ops[*(const size_t *)b];
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    if (x->s != y->s)
        return x->s < y->s ? -1 : 1;
    return (*(const size_t *)a > *(const size_t *)b) - (*(const size_t *)a < *(const size_t *)b);
}

/* One gap of an op after the previous op on its stream. */
/* The part of a gap [a, b) inside the covered time: a pause between capture
 * windows is not a wait. Out of line: most ranks have no windows, and every
 * op's gap passes add_gap. */
static __attribute__((noinline)) int64_t covered_gap(const struct ct_ivset *cover, int64_t a,
                                                     int64_t b)
{
    return ct_ivset_len_in(cover, a, b);
}

static inline void add_gap(struct ct_rank_result *res, const struct ct_ivset *cover,
                           const struct ct_gpu_op *prev, const struct ct_gpu_op *op)
{
    int64_t gap = op->s - prev->e;
    if (gap <= 0)
        return;
    if (__builtin_expect(cover != NULL, 0) && (gap = covered_gap(cover, prev->e, op->s)) <= 0)
        return;
    if (op->launch != INT64_MIN && op->launch > prev->e)
        res->host_wait += gap;
    else if (gap < CT_KERNEL_WAIT_NS)
        res->kernel_wait += gap;
    else
        res->other_wait += gap;
}

/* Ops sorted by start (what ct_job_build leaves): walking them in index order
 * visits each stream's ops in (start, index) order, the order of the sort
 * below, so each op's predecessor is the last op seen on its stream: an
 * open-addressing map stream -> last op index replaces the sort. */
static int idle_sorted(struct ct_rank_result *res)
{
    struct ct_rank *r = res->rank;
    const struct ct_ivset *cover = ct_rank_gcover(r);
    size_t cap = 64, used = 0;
    struct slot {
        uint32_t stream;
        uint32_t full;
        size_t last;
    } *t = calloc(cap, sizeof(*t));
    if (!t)
        return -ENOMEM;
    for (size_t i = 0; i < r->nops; i++) {
        uint32_t st = r->ops[i].stream;
        size_t h = (st * 0x9E3779B1u) & (cap - 1);
        while (t[h].full && t[h].stream != st)
            h = (h + 1) & (cap - 1);
        if (t[h].full) {
            add_gap(res, cover, &r->ops[t[h].last], &r->ops[i]);
            t[h].last = i;
            continue;
        }
        t[h] = (struct slot){st, 1, i};
        if (++used * 2 > cap) {
            size_t ncap = cap * 2;
            struct slot *n = calloc(ncap, sizeof(*n));
            if (!n) {
                free(t);
                return -ENOMEM;
            }
            for (size_t k = 0; k < cap; k++) {
                if (!t[k].full)
                    continue;
                size_t g = (t[k].stream * 0x9E3779B1u) & (ncap - 1);
                while (n[g].full)
                    g = (g + 1) & (ncap - 1);
                n[g] = t[k];
            }
            free(t);
            t = n;
            cap = ncap;
        }
    }
    free(t);
    return 0;
}

static int idle_breakdown(struct ct_rank_result *res)
{
    struct ct_rank *r = res->rank;
    const struct ct_ivset *cover = ct_rank_gcover(r);
    if (r->nops < 2)
        return 0;
    size_t k = 1;
    while (k < r->nops && r->ops[k - 1].s <= r->ops[k].s)
        k++;
    if (k == r->nops)
        return idle_sorted(res);
    size_t *ix = malloc(r->nops * sizeof(*ix));
    if (!ix)
        return -ENOMEM;
    for (size_t i = 0; i < r->nops; i++)
        ix[i] = i;
    qsort_r(ix, r->nops, sizeof(*ix), cmp_stream, r->ops);
    for (k = 1; k < r->nops; k++) {
        const struct ct_gpu_op *prev = &r->ops[ix[k - 1]], *op = &r->ops[ix[k]];
        if (prev->stream == op->stream)
            add_gap(res, cover, prev, op);
    }
    free(ix);
    return 0;
}

int ct_cover_iterations(struct ct_rank_result *res)
{
    struct ct_rank *r = res->rank;
    if (!r->cover || !res->niters)
        return 0;
    struct ct_ivset it = {0}, out = {0};
    int rc = 0;
    for (size_t k = 0; k < res->niters && !rc; k++)
        rc = ct_ivset_add(&it, res->iters[k].s, res->iters[k].e);
    ct_ivset_normalize(&it);
    if (!rc)
        rc = ct_ivset_intersect(&it, &r->gcover, &out);
    ct_ivset_free(&it);
    if (rc) {
        ct_ivset_free(&out);
        return rc;
    }
    ct_ivset_free(&r->gcover);
    r->gcover = out;
    return 0;
}

int ct_metrics_rank(struct ct_rank_result *res)
{
    struct ct_rank *r = res->rank;
    if (r->gpu.n) {
        res->ws = r->gpu.v[0].s;
        res->we = r->gpu.v[r->gpu.n - 1].e;
    }
    res->covered = res->we - res->ws;
    if (r->cover) { /* the windows as the GPU saw them */
        res->covered = ct_ivset_len_in(&r->gcover, res->ws, res->we);
        res->windows = r->gcover.n;
    } else if (r->gcut.n) { /* less the time salvage left without GPU times */
        res->covered = ct_ivset_len_in(&r->gcover, res->ws, res->we);
    }
    if (res->niters) {
        res->im = calloc(res->niters, sizeof(*res->im));
        if (!res->im)
            return -ENOMEM;
    }
    breakdown(res);
    int rc = graph_share(res);
    return rc ? rc : idle_breakdown(res);
}

/* Exposed transfer (ct_exposed_transfer, analysis.h): each collective's
 * transfer part, from the latest start over its matched members (all_s) to
 * its end, placed at the op's start, over the collectives but pipeline
 * send/recv; their union less compute. */
int ct_exposed_transfer(struct ct_rank *R, int64_t *out)
{
    struct ct_ivset x = {0}, d = {0};
    int rc = ct_rank_open(R);
    for (size_t i = 0; i < R->nops && !rc; i++) {
        const struct ct_gpu_op *g = &R->ops[i];
        if (!CT_CL_IS_COMM(g->cls) || g->cls == CT_CL_PP)
            continue;
        int64_t from = g->s;
        if (g->nccl >= 0 && (size_t)g->nccl < R->nnccl && R->nccl[g->nccl].all_s > g->s)
            from = R->nccl[g->nccl].all_s;
        if (from < g->e)
            rc = ct_ivset_add(&x, g->s, g->s + (g->e - from));
    }
    if (!rc) {
        ct_ivset_normalize(&x);
        rc = ct_ivset_subtract(&x, &R->cls[CT_CL_COMPUTE], &d);
    }
    *out = rc ? 0 : ct_ivset_len(&d);
    ct_ivset_free(&x);
    ct_ivset_free(&d);
    ct_rank_close(R);
    return rc;
}
