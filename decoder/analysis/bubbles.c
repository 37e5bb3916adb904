/*
 * Pipeline bubbles (definitions: docs/report.md), per iteration [a, b) of a
 * rank that runs pipeline send/recv ops: PPWAIT = U [s, min(all_s, e)) of
 * its matched Send/Recv ops (the time the op waited for its peer); WARM =
 * [a, first PP op start) when the first PP op is a Recv, COOL = [last PP op
 * end, b) when the last is a Send; bubble = |([a,b) \\ COMPUTE) n PPWAIT| +
 * |(WARM u COOL) n GPU-idle|. A waiting receive occupies the GPU stream, so a
 * bubble is not only GPU-idle time. Its GPU-idle part is the first class of
 * the idle split (decoder/analysis/stalls.c).
 */
#include <errno.h>
#include <stdlib.h>

#include "decoder/analysis/analysis.h"

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
        const struct ct_gop *g = &r->ops[i];
        if (g->cls != CT_CL_PP)
            continue;
        npp++;
        const struct ct_nop *o = g->nccl >= 0 ? &r->nccl[g->nccl] : NULL;
        if (o && o->all_s)
            rc = ct_ivset_add(&wait, g->s, o->all_s < g->e ? o->all_s : g->e);
    }
    if (!npp || rc)
        goto out;
    const struct ct_gop **pp = malloc(npp * sizeof(*pp));
    npp = 0;
    if (!pp)
        rc = -ENOMEM;
    for (size_t i = 0; i < r->nops && !rc; i++)
        if (r->ops[i].cls == CT_CL_PP)
            pp[npp++] = &r->ops[i];
    for (size_t k = 0; k < res->niters && !rc; k++) {
        int64_t a = res->iters[k].s, b = res->iters[k].e;
        const struct ct_gop *first = NULL, *last = NULL;
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
                       : ct_ivset_add(&win, res->ws, we)) ||
        (rc = ct_ivset_subtract(&win, &r->gpu, &idle)))
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
