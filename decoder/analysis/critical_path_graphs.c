/*
 * The edges inside a replayed CUDA graph (decoder/analysis/critical_path.c;
 * docs/critical-path.md). A graph's nodes run on the launch stream as CUPTI
 * reports them, but in the order of the graph's own dependencies: parallel
 * branches overlap, and a node may start while an unrelated branch still
 * runs. Where the trace names each op's executable node (ct_gpu_op.gnode) and
 * the graph's edges (ct_proc.gedges), an op of the graph waits for the ops
 * of its predecessor nodes in the same launch, and for nothing else on its
 * stream; a root node waits for what its stream ran before the launch (the
 * stream rule). An op whose node has a predecessor the trace does not name,
 * or whose predecessor's op is not in the window, keeps the stream rule.
 */
#include <errno.h>
#include <stdlib.h>

#include "decoder/analysis/critical_path_int.h"

static int cmp_gix(const void *a, const void *b)
{
    const struct cp_gix *x = a, *y = b;
    if (x->launch != y->launch)
        return x->launch < y->launch ? -1 : 1;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    if (x->gnode != y->gnode)
        return x->gnode < y->gnode ? -1 : 1;
    return (x->op > y->op) - (x->op < y->op);
}

int ct_cp_graph_index(const struct ct_rank *rk, const struct cp_win *w, struct cp_gix **out,
                      size_t *nout)
{
    *out = NULL, *nout = 0;
    if (!rk->procs[0]->ngedges)
        return 0;
    size_t n = 0;
    for (size_t i = 0; i < w->nops; i++)
        n += w->ops[i].gnode != 0 && w->ops[i].launch != INT64_MIN;
    if (!n)
        return 0;
    struct cp_gix *v = malloc(n * sizeof(*v));
    if (!v)
        return -ENOMEM;
    n = 0;
    for (size_t i = 0; i < w->nops; i++)
        if (w->ops[i].gnode && w->ops[i].launch != INT64_MIN)
            v[n++] =
                (struct cp_gix){w->ops[i].launch, w->ops[i].gnode, w->ops[i].stream, (uint32_t)i};
    qsort(v, n, sizeof(*v), cmp_gix);
    *out = v, *nout = n;
    return 0;
}

/* The first edge into node `to` (edges sorted by (to, from)), or n. */
static size_t first_into(const struct ct_gedge *e, size_t n, uint64_t to)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (e[mid].to < to)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The op of node `node` in launch (launch, stream), or UINT32_MAX. */
static uint32_t op_of(const struct cp_gix *ix, size_t n, int64_t launch, uint32_t stream,
                      uint64_t node)
{
    struct cp_gix k = {launch, node, stream, 0};
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp_gix(&ix[mid], &k) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && ix[lo].launch == launch && ix[lo].stream == stream && ix[lo].gnode == node
               ? ix[lo].op
               : UINT32_MAX;
}

int ct_cp_graph_root(const struct ct_rank *rk, const struct ct_gpu_op *o)
{
    const struct ct_proc *p0 = rk->procs[0];
    if (!o->gnode || !p0->ngedges)
        return 0;
    size_t k = first_into(p0->gedges, p0->ngedges, o->gnode);
    return k == p0->ngedges || p0->gedges[k].to != o->gnode;
}

int ct_cp_graph_edges(struct ct_cp_graph *g, const struct ct_rank *rk, const struct cp_win *w,
                      const struct opx *ox, const struct cp_gix *ix, size_t nix, size_t i,
                      int32_t ri, int *root)
{
    const struct ct_gpu_op *o = &w->ops[i];
    const struct ct_proc *p0 = rk->procs[0];
    *root = 0;
    if (!o->gnode || !nix || o->launch == INT64_MIN)
        return 0;
    size_t k = first_into(p0->gedges, p0->ngedges, o->gnode), end = k;
    while (end < p0->ngedges && p0->gedges[end].to == o->gnode)
        end++;
    if (k == end) { /* no predecessor: a root, after what the stream ran before */
        *root = 1;
        return 0;
    }
    for (size_t j = k; j < end; j++) /* all named and all in the window, or the stream rule */
        if (!p0->gedges[j].from ||
            op_of(ix, nix, o->launch, o->stream, p0->gedges[j].from) == UINT32_MAX)
            return 0;
    for (size_t j = k; j < end; j++) {
        uint32_t src = op_of(ix, nix, o->launch, o->stream, p0->gedges[j].from);
        if (ct_cp_add_edge(g, ox[src].pe, ox[i].ps, CP_GAP, CT_CP_GPU_GAP, ri))
            return -ENOMEM;
        g->ed[g->ned - 1].stream = o->stream;
    }
    return 1;
}
