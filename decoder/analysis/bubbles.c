/*
 * Pipeline bubbles (definitions: docs/report.md), per iteration [a, b) of a
 * rank that runs pipeline send/recv ops: PPWAIT = U [s, min(all_s, e)) of
 * its matched Send/Recv ops (the time the op waited for its peer); WARM =
 * [a, first PP op start) when the first PP op is a Recv, COOL = [last PP op
 * end, b) when the last is a Send; bubble = |([a,b) \\ COMPUTE) n PPWAIT| +
 * |(WARM u COOL) n GPU-idle|. A waiting receive occupies the GPU stream, so a
 * bubble is not only GPU-idle time. Its GPU-idle part is the first class of
 * the idle split (decoder/analysis/stalls.c). The rank's bubble share is the
 * median over its iterations of bubble / iteration length.
 *
 * Pipeline topology: ranks joined by matched Send/Recv form pipelines. When
 * one is a chain of p ranks and every link carries the same number m of
 * sends per iteration in each direction, expected bubble = 100 (p-1)/(m+p-1)
 * (1F1B/GPipe, relative to the iteration); otherwise it is null.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "decoder/analysis/analysis.h"
#include "decoder/util/search.h"
#include "decoder/util/stats.h"

/* The bubble set of the rank, and per-iteration lengths into res->im.
 * Nothing to do for a rank without pipeline ops (most). */
int ct_bubbles_rank(struct ct_rank_result *res, struct ct_ivset *out, int *pipeline)
{
    struct ct_rank *r = res->rank;
    struct ct_ivset wait = {0}, edge = {0}, t1 = {0}, t2 = {0}, noncomp = {0}, win = {0},
                    idle = {0};
    int rc = 0;
    size_t npp = 0, j = 0;
    /* PP ops sorted by GPU start come from ops[] (sorted) */
    for (size_t i = 0; i < r->nops && !rc; i++) {
        const struct ct_gpu_op *g = &r->ops[i];
        if (g->cls != CT_CL_PP)
            continue;
        npp++;
        const struct ct_nccl_call *o = g->nccl >= 0 ? &r->nccl[g->nccl] : NULL;
        if (o && o->all_s)
            rc = ct_ivset_add(&wait, g->s, o->all_s < g->e ? o->all_s : g->e);
    }
    if (!npp || rc)
        goto out;
    const struct ct_gpu_op **pp = malloc(npp * sizeof(*pp));
    npp = 0;
    if (!pp)
        rc = -ENOMEM;
    for (size_t i = 0; i < r->nops && !rc; i++)
        if (r->ops[i].cls == CT_CL_PP)
            pp[npp++] = &r->ops[i];
    for (size_t k = 0; k < res->niters && !rc; k++) {
        int64_t a = res->iters[k].s, b = res->iters[k].e;
        const struct ct_gpu_op *first = NULL, *last = NULL;
        while (j < npp && pp[j]->e <= a)
            j++;
        for (size_t i = j; i < npp && pp[i]->s < b; i++) {
            if (pp[i]->e <= a)
                continue;
            if (!first)
                first = pp[i];
            if (!last || pp[i]->e > last->e)
                last = pp[i];
        }
        if (!first)
            continue;
        *pipeline = 1;
        if (first->op == CT_NCCL_OP_RECV)
            rc = ct_ivset_add(&edge, a, first->s);
        if (!rc && last->op == CT_NCCL_OP_SEND)
            rc = ct_ivset_add(&edge, last->e, b);
    }
    free(pp);
    if (rc)
        goto out;
    ct_ivset_normalize_unsorted(&wait);
    ct_ivset_normalize_unsorted(&edge);
    /* the GPU-idle time of the window (of its capture windows); recorded
     * throughout, to the end of the last iteration when later: a stage
     * whose GPU is done waits there for the pipeline to drain (the last
     * step's cool-down, which the next step's work bounds in every other) */
    int64_t we = res->we;
    if (!r->cover && res->niters && res->iters[res->niters - 1].e > we)
        we = res->iters[res->niters - 1].e;
    if ((rc = r->cover ? ct_ivset_clip(&r->gcover, res->ws, res->we, &win)
                       : ct_ivset_add(&win, res->ws, we)))
        goto out;
    if (!r->cover && r->gcut.n) { /* less the time salvage left without GPU times */
        struct ct_ivset all = win;
        win = (struct ct_ivset){0};
        rc = ct_ivset_subtract(&all, &r->gcut, &win);
        ct_ivset_free(&all);
        if (rc)
            goto out;
    }
    if ((rc = ct_ivset_subtract(&win, &r->gpu, &idle)))
        goto out;
    /* without pipeline ops (most jobs) both parts are empty: none of the
     * rank-sized sets below is built */
    if (wait.n &&
        ((rc = ct_ivset_subtract(&r->gpu, &r->cls[CT_CL_COMPUTE], &noncomp)) ||
         (rc = ct_ivset_union(&noncomp, &idle, &t2)) || (rc = ct_ivset_intersect(&t2, &wait, &t1))))
        goto out;
    if ((rc = ct_ivset_intersect(&edge, &idle, &t2)) || (rc = ct_ivset_union(&t1, &t2, out)))
        goto out;
    size_t at = 0;
    for (size_t k = 0; k < res->niters; k++)
        res->im[k].bubble = ct_ivset_len_in_at(out, res->iters[k].s, res->iters[k].e, &at);
    if (*pipeline && res->niters) { /* the share: median over the iterations */
        double *pct = malloc(res->niters * sizeof(*pct));
        if (!pct) {
            rc = -ENOMEM;
            goto out;
        }
        for (size_t k = 0; k < res->niters; k++) {
            int64_t d = res->iters[k].e - res->iters[k].s;
            pct[k] = d > 0 ? 100.0 * (double)res->im[k].bubble / (double)d : 0;
        }
        res->bubble_pct = ct_median_select(pct, res->niters); /* no NaN, no -0 */
        free(pct);
    }
out:
    ct_ivset_free(&win);
    ct_ivset_free(&idle);
    ct_ivset_free(&wait);
    ct_ivset_free(&edge);
    ct_ivset_free(&t1);
    ct_ivset_free(&t2);
    ct_ivset_free(&noncomp);
    return rc;
}

/* Global rank of comm rank `cr` in communicator `comm`, -1 if unknown. */
static int global_rank(const struct ct_job *job, uint64_t comm, int32_t cr)
{
    for (size_t r = 0; r < job->nranks; r++)
        for (size_t i = 0; i < job->ranks[r].nnccl; i++)
            if (job->ranks[r].nccl[i].comm == comm) {
                if (job->ranks[r].nccl[i].comm_rank == cr)
                    return (int)r;
                break;
            }
    return -1;
}

int ct_pipeline_topology(struct ct_report *rep)
{
    struct ct_job *job = rep->job;
    size_t nr = rep->nr;
    /* sends[r][peer] per iteration: counted from matched sends */
    int *peer_a = malloc((nr ? nr : 1) * sizeof(int)),
        *peer_b = malloc((nr ? nr : 1) * sizeof(int));
    double *m_a = calloc(nr ? nr : 1, sizeof(double)), *m_b = calloc(nr ? nr : 1, sizeof(double));
    int *deg = calloc(nr ? nr : 1, sizeof(int)), *bad = calloc(nr ? nr : 1, sizeof(int));
    int rc = -ENOMEM;
    if (!peer_a || !peer_b || !m_a || !m_b || !deg || !bad)
        goto out;
    for (size_t r = 0; r < nr; r++) {
        peer_a[r] = peer_b[r] = -1;
        struct ct_rank *R = &job->ranks[r];
        uint64_t last_comm = 0;
        int last_peer = -2, last_g = -1;
        uint64_t cnt[2] = {0, 0};
        const struct ct_rank_result *x = &rep->rr[r];
        size_t at = 0; /* NCCL ops come by host start, as the iterations do */
        /* per iteration, so that the median (what every whole step has)
         * is the micro-batch count: a step whose peer's capture window
         * closed first has sends that match nothing */
        double *per = calloc(2 * (x->niters ? x->niters : 1), sizeof(*per));
        if (!per)
            goto out;
        for (size_t i = 0; i < R->nnccl; i++) {
            const struct ct_nccl_call *o = &R->nccl[i];
            if (o->op != CT_NCCL_OP_SEND || !o->all_s)
                continue;
            /* micro-batches per iteration count the sends inside one: those
             * of a step a capture window cut, or before the first step,
             * would make the count no whole number */
            while (at < x->niters && x->iters[at].e <= o->host_s)
                at++;
            if (x->niters && (at == x->niters || o->host_s < x->iters[at].s))
                continue;
            int g;
            if (o->comm == last_comm && o->peer == last_peer)
                g = last_g;
            else
                g = global_rank(job, o->comm, o->peer);
            last_comm = o->comm, last_peer = o->peer, last_g = g;
            if (g < 0)
                continue;
            size_t slot = x->niters ? at : 0;
            if (peer_a[r] < 0 || peer_a[r] == g)
                peer_a[r] = g, cnt[0]++, per[2 * slot]++;
            else if (peer_b[r] < 0 || peer_b[r] == g)
                peer_b[r] = g, cnt[1]++, per[2 * slot + 1]++;
            else
                bad[r] = 1; /* more than two neighbours: not a chain */
        }
        if (x->niters) {
            double *va = malloc(2 * x->niters * sizeof(*va));
            if (!va) {
                free(per);
                goto out;
            }
            for (size_t k = 0; k < x->niters; k++)
                va[k] = per[2 * k], va[x->niters + k] = per[2 * k + 1];
            m_a[r] = ct_median_select(va, x->niters); /* counts */
            m_b[r] = ct_median_select(va + x->niters, x->niters);
            free(va);
        } else {
            m_a[r] = (double)cnt[0];
            m_b[r] = (double)cnt[1];
        }
        free(per);
        deg[r] = (peer_a[r] >= 0) + (peer_b[r] >= 0);
    }
    /* components by walking neighbours */
    for (size_t r = 0; r < nr; r++) {
        if (!deg[r] || rep->rr[r].pp_stages)
            continue;
        int *comp = malloc(nr * sizeof(*comp)); /* a component: at most every rank */
        if (!comp)
            goto out;
        size_t nc = 0, head = 0;
        comp[nc++] = (int)r;
        rep->rr[r].pp_stages = -1;
        int chain = 1;
        double m = m_a[r];
        while (head < nc) {
            int x = comp[head++];
            if (bad[x] || deg[x] > 2)
                chain = 0;
            if (fabs(m_a[x] - m) > 1e-9 || (peer_b[x] >= 0 && fabs(m_b[x] - m) > 1e-9))
                chain = 0;
            int nb[2] = {peer_a[x], peer_b[x]};
            for (int k = 0; k < 2; k++)
                if (nb[k] >= 0 && rep->rr[nb[k]].pp_stages == 0) {
                    rep->rr[nb[k]].pp_stages = -1;
                    comp[nc++] = nb[k];
                }
        }
        size_t ends = 0;
        for (size_t k = 0; k < nc; k++)
            ends += deg[comp[k]] == 1;
        if (nc < 2 || (nc > 2 && ends != 2))
            chain = 0;
        int mi = (int)(m + 0.5);
        if (fabs(m - mi) > 1e-9 || mi < 1)
            chain = 0;
        for (size_t k = 0; k < nc; k++) {
            struct ct_rank_result *rr = &rep->rr[comp[k]];
            rr->pp_stages = (int)nc;
            rr->pp_microbatches = chain ? mi : 0;
            rr->expected_bubble_pct =
                chain ? 100.0 * (double)(nc - 1) / (double)(mi + (int)nc - 1) : -1;
        }
        free(comp);
    }
    for (size_t r = 0; r < nr; r++)
        if (rep->rr[r].pp_stages < 0)
            rep->rr[r].pp_stages = 0;
    rc = 0;
out:
    free(peer_a);
    free(peer_b);
    free(m_a);
    free(m_b);
    free(deg);
    free(bad);
    return rc;
}

/* What the excess-bubble check of `diagnose` weighs a stage's waits with
 * (analysis.h): each iteration's compute extent, and the stage's own work. */

struct ends_by {
    const struct ct_ivset *set;
    int64_t t;
};

/* Interval i of the set ends at or before t. */
static int ends_by(size_t i, const void *ctx)
{
    const struct ends_by *q = ctx;
    return q->set->v[i].e <= q->t;
}

struct ct_iter_extent *ct_compute_extents(const struct ct_rank_result *x)
{
    const struct ct_ivset *cs = &x->rank->cls[CT_CL_COMPUTE];
    struct ct_iter_extent *v = calloc(x->niters ? x->niters : 1, sizeof(*v));
    if (!v)
        return NULL;
    for (size_t k = 0; k < x->niters; k++) {
        int64_t a = x->iters[k].s, b = x->iters[k].e;
        struct ends_by q = {cs, a};
        size_t lo = ct_partition(cs->n, ends_by, &q); /* first compute interval ending after a */
        v[k].index = x->iters[k].index;
        if (lo < cs->n && cs->v[lo].s < b) {
            v[k].cs = cs->v[lo].s > a ? cs->v[lo].s : a;
            size_t j = lo;
            while (j + 1 < cs->n && cs->v[j + 1].s < b)
                j++;
            v[k].ce = cs->v[j].e < b ? cs->v[j].e : b;
        }
    }
    return v;
}

struct extent_key {
    const struct ct_iter_extent *v;
    int64_t index;
};

static int index_before(size_t i, const void *ctx)
{
    const struct extent_key *q = ctx;
    return q->v[i].index < q->index;
}

const struct ct_iter_extent *ct_iter_extent_find(const struct ct_iter_extent *v, size_t n,
                                                 int64_t index)
{
    struct extent_key q = {v, index}; /* iterations come in index order */
    size_t lo = ct_partition(n, index_before, &q);
    return lo < n && v[lo].index == index ? &v[lo] : NULL;
}

int ct_own_work(const struct ct_rank *R, struct ct_ivset *out)
{
    struct ct_ivset t = {0};
    int rc = ct_ivset_copy(&R->cls[CT_CL_COMPUTE], out);
    for (int c = 0; c < CT_CL_COUNT && !rc; c++) {
        if (c == CT_CL_COMPUTE || c == CT_CL_PP)
            continue;
        rc = ct_ivset_union(out, &R->cls[c], &t);
        if (!rc) {
            struct ct_ivset x = *out;
            *out = t;
            t = x;
        }
    }
    ct_ivset_free(&t);
    return rc;
}
