/*
 * The split of each rank's GPU-idle time (definitions: docs/report.md). What
 * counts as a data wait, checkpoint I/O, a host sync or a blocking call is
 * decided during extraction (decoder/read/host_classes.h); this file splits
 * the GPU's idle time by those host sets.
 *
 * GPU-idle time of the window is split, each instant to the first class
 * whose host evidence covers it: the idle part of the pipeline bubble
 * (decoder/analysis/bubbles.c), data stall (the main process blocked in
 * read/recv/poll... on a file, pipe or socket), checkpoint (write/fsync on
 * files or a DtoH copy >= 16 MiB, any process of the rank), blocking CUDA
 * call (a thread of the main process that launches GPU work was inside a
 * CUDA call that blocked, ct_is_blocking_call: an allocation, a module
 * load, a pageable or synchronous copy; not a synchronize), sync drain
 * ([return of a blocking sync or synchronous copy, next launch)), launch
 * overhead ([host launch, GPU start) of an op, from the main process's
 * previous launch call when that one began at most CT_LAUNCH_BURST_NS (1 ms)
 * earlier: a host issuing work back to back is the bottleneck, so the GPU's
 * wait between those calls is launch overhead), and unexplained.
 * Checkpoint stall also counts the step-time excess of checkpoint steps.
 *
 * Why a blocking call comes before sync drain and launch overhead: both
 * reach back over host time they cannot see into. A launch right after a
 * 400 us pageable copy call began within 1 ms of it, so the launch rule
 * would call the GPU's wait for the copy call to return launch overhead
 * (measured on a 200-step examples/sim_train: 95 % of its launch overhead,
 * which made `diagnose` report launch_bound in light mode); after a sync, an allocation before the
 * next launch is what the GPU waits for, not the host's scheduling. It
 * comes after data and checkpoint: a large DtoH copy is a checkpoint's, and
 * a loader's wait is what the host was doing while another of its threads
 * sat in a call.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/analysis.h"
#include "decoder/util/search.h"
#include "decoder/util/stats.h"

/* Launch calls closer than this: the host is issuing work, and GPU-idle
 * time before the later one's work is launch overhead (the host could not
 * feed the GPU faster). Longer host gaps without a recorded blocking call
 * are unexplained host stalls. */
#define CT_LAUNCH_BURST_NS 1000000

static int add_set(struct ct_ivset *dst, const struct ct_ivset *src)
{
    for (size_t i = 0; i < src->n; i++)
        if (ct_ivset_add(dst, src->v[i].s, src->v[i].e))
            return -ENOMEM;
    return 0;
}

/* [sync return, next launch) for every blocking sync of the main process. */
static int drain_set(const struct ct_proc *p, struct ct_ivset *out)
{
    size_t at = 0; /* the syncs are in time order: each search goes on from the last */
    for (size_t i = 0; i < p->sync.n; i++) {
        int64_t e = p->sync.v[i].e;
        size_t lo = ct_gallop(p->launches, p->nlaunches, e, 0, &at);
        int64_t next = lo < p->nlaunches ? p->launches[lo] : INT64_MAX;
        if (next != INT64_MAX && ct_ivset_add(out, e, next))
            return -ENOMEM;
    }
    ct_ivset_normalize_unsorted(out);
    return 0;
}

/*
 * Launch overhead intervals [host launch, GPU start) of the rank's ops,
 * normalised. The ops are in GPU start order, so the intervals come sorted
 * by end, and their union is built as they come, as a stack: the new
 * interval swallows the last blocks that reach its start (their ends are
 * at or before its end) and takes their place. No sort and no array of all
 * the intervals (these were a report's largest sort). Out of GPU order
 * (not from ct_job_build), the rest is added and the whole normalised.
 */
static int launch_set(const struct ct_rank *r, const struct ct_proc *main, struct ct_ivset *out)
{
    /* the arrays and the stack's top in locals: a store of an interval
     * (int64_t) may alias the counts (size_t), which would otherwise be
     * loaded again after each */
    const struct ct_gpu_op *ops = r->ops;
    const int64_t *launches = main->launches;
    const size_t nops = r->nops, nlaunches = main->nlaunches;
    size_t at = 0; /* where the previous op's launch was found */
    int sorted = 1;
    for (size_t i = 0; i < nops; i++) {
        int64_t h = ops[i].launch, e = ops[i].s;
        if (h == INT64_MIN || h >= e)
            continue;
        /* the main process's previous launch call (ops in GPU order launch
         * in nearly the same host order) */
        size_t lo = ct_gallop(launches, nlaunches, h, 0, &at);
        if (lo > 0 && h - launches[lo - 1] <= CT_LAUNCH_BURST_NS)
            h = launches[lo - 1];
        size_t n = out->n;
        if (n && e < out->v[n - 1].e)
            sorted = 0;
        while (sorted && n && out->v[n - 1].e >= h) {
            int64_t top = out->v[--n].s;
            h = top < h ? top : h;
        }
        out->n = n;
        if (ct_ivset_add(out, h, e))
            return -ENOMEM;
    }
    if (!sorted)
        ct_ivset_normalize_unsorted(out);
    return 0;
}

/* The sweep of take_all over the non-empty sets, in order of priority: set
 * k's intervals v[k][0..n[k]), its cursor j[k] and share len[k]; len[nuse]
 * what none covers. One struct of plain arrays: the sweep's reads of a set
 * are not reloaded after each write of a share, as they were through
 * pointers to separate arrays (which may alias). */
struct sweep {
    const struct ct_iv *v[8];
    size_t n[8], j[8];
    int64_t len[9];
    int nuse;
    int64_t next; /* the earliest start at the cursors of all sets but the last */
};

/* Piece [a, b) of the idle time, not covered by sets 0..k-1: the part that
 * set k covers goes to len[k], the rest on to set k + 1, and what no set
 * covers to len[nuse] (unexplained). Pieces arrive in time order at every
 * level, so each set's cursor j[k] only moves forward. A set with nothing
 * in the piece passes it whole to the next in this loop, not by a call:
 * most pieces fall to one set after passing several. */
static void split(struct sweep *w, int k, int64_t a, int64_t b)
{
    for (; k < w->nuse; k++) {
        const struct ct_iv *v = w->v[k];
        size_t n = w->n[k], x = w->j[k];
        while (x < n && v[x].e <= a)
            x++;
        w->j[k] = x;
        if (x == n || v[x].s >= b)
            continue;
        int64_t cur = a;
        for (; x < n && v[x].s < b && cur < b; x++) {
            int64_t cs = v[x].s > cur ? v[x].s : cur, ce = v[x].e < b ? v[x].e : b;
            if (cs > cur)
                split(w, k + 1, cur, cs);
            if (ce > cs)
                w->len[k] += ce - cs;
            if (ce > cur)
                cur = ce;
        }
        if (cur < b)
            split(w, k + 1, cur, b);
        return;
    }
    w->len[w->nuse] += b - a;
}

/* w->next from the cursors (INT64_MAX when those sets are done). */
static void next_start(struct sweep *w)
{
    w->next = INT64_MAX;
    for (int k = 0; k + 1 < w->nuse; k++)
        if (w->j[k] < w->n[k] && w->v[k][w->j[k]].s < w->next)
            w->next = w->v[k][w->j[k]].s;
}

/* Piece [a, b) to split. One that ends by the next start of every set but
 * the last (most pieces: the last, the launch overhead, covers most idle
 * time) goes straight to the last: the others would each pass it on, their
 * cursors unmoved. */
static void piece(struct sweep *w, int64_t a, int64_t b)
{
    if (w->nuse && b <= w->next) {
        split(w, w->nuse - 1, a, b);
        return;
    }
    split(w, 0, a, b);
    next_start(w);
}

/* An idle gap [a, b): the parts inside capture windows (all of it without
 * cover) go to piece; a pause is not idle time. The cover's cursor *cj
 * moves forward as the gaps do. */
static void gap(const struct ct_ivset *cover, size_t *cj, struct sweep *w, int64_t a, int64_t b)
{
    if (!cover) {
        piece(w, a, b);
        return;
    }
    while (*cj < cover->n && cover->v[*cj].e <= a)
        (*cj)++;
    for (size_t x = *cj; x < cover->n && cover->v[x].s < b; x++) {
        int64_t s = cover->v[x].s > a ? cover->v[x].s : a,
                e = cover->v[x].e < b ? cover->v[x].e : b;
        if (e > s)
            piece(w, s, e);
    }
}

/* Splits the GPU-idle time of the window [ws, we) (the gaps of the GPU
 * set, inside the capture windows cover when not NULL) among the sets
 * by[0..nby) in that order of priority (each instant to the first that
 * covers it; len[k] is by[k]'s share) in one sweep; len[nby] gets what
 * none covers. The gaps are walked, not built. */
static void take_all(const struct ct_ivset *gpu, const struct ct_ivset *cover, int64_t ws,
                     int64_t we, const struct ct_ivset *const *by, int nby, int64_t *len)
{
    /* empty sets take nothing: the sweep skips them (a level less of
     * recursion for every idle piece) */
    struct sweep w = {.nuse = 0};
    int at[8];
    for (int k = 0; k < nby; k++) {
        len[k] = 0;
        if (by[k]->n) {
            at[w.nuse] = k;
            w.v[w.nuse] = by[k]->v;
            w.n[w.nuse++] = by[k]->n;
        }
    }
    next_start(&w);
    int64_t cur = ws;
    size_t cj = 0;
    for (size_t i = 0; i < gpu->n && gpu->v[i].s < we; i++) {
        if (gpu->v[i].s > cur)
            gap(cover, &cj, &w, cur, gpu->v[i].s);
        if (gpu->v[i].e > cur)
            cur = gpu->v[i].e;
    }
    if (cur < we)
        gap(cover, &cj, &w, cur, we);
    for (int u = 0; u < w.nuse; u++)
        len[at[u]] = w.len[u];
    len[nby] = w.len[w.nuse];
}

/* Checkpoint stall by step-time excess: for each iteration that holds
 * checkpoint activity, its duration minus the median of the (up to 2 + 2)
 * nearest iterations without any, floored at 0. */
static void ckpt_excess(struct ct_rank_result *res, const struct ct_ivset *ckpt)
{
    size_t n = res->niters;
    if (n < 2)
        return;
    char *has = calloc(n, 1);
    size_t at = 0;
    if (!has)
        return;
    for (size_t k = 0; k < n; k++)
        has[k] = ct_ivset_len_in_at(ckpt, res->iters[k].s, res->iters[k].e, &at) > 0;
    int64_t total = 0;
    for (size_t k = 0; k < n; k++) {
        if (!has[k])
            continue;
        res->at.ckpt_steps++;
        int64_t nb[4];
        size_t m = 0;
        for (size_t d = 1; d < n && m < 4; d++) {
            int got = 0;
            if (k >= d && !has[k - d] && m < 4)
                nb[m++] = res->iters[k - d].e - res->iters[k - d].s, got = 1;
            if (k + d < n && !has[k + d] && m < 4)
                nb[m++] = res->iters[k + d].e - res->iters[k + d].s, got = 1;
            (void)got;
        }
        if (!m)
            continue;
        int64_t med = ct_median_i64(nb, m), dur = res->iters[k].e - res->iters[k].s;
        if (dur > med)
            total += dur - med;
    }
    free(has);
    res->at.checkpoint_stall = total;
}

int ct_attribution_rank(struct ct_job *job, struct ct_rank_result *res)
{
    (void)job;
    struct ct_rank *r = res->rank;
    struct ct_ivset bub = {0}, data = {0}, ckpt = {0}, drain = {0}, launch = {0};
    int rc = 0;
    res->bubble_pct = res->expected_bubble_pct = -1;
    if (res->we <= res->ws)
        return 0;
    int pipeline = 0; /* the bubble set, and the rank's share of it (bubbles.c) */
    if ((rc = ct_bubbles_rank(res, &bub, &pipeline)))
        goto out;
    res->at.pipeline_bubble = ct_ivset_len(&bub);
    const struct ct_proc *main = r->procs[0];
    if ((rc = ct_ivset_copy(&main->data_wait, &data)))
        goto out;
    for (size_t k = 0; k < r->nprocs && !rc; k++)
        rc = add_set(&ckpt, &r->procs[k]->ckpt);
    ct_ivset_normalize_unsorted(&ckpt);
    if (!rc)
        rc = drain_set(main, &drain);
    if (!rc)
        rc = launch_set(r, main, &launch);
    /* the main process's blocking calls: normalised when extracted */
    const struct ct_ivset *by[6] = {&bub, &data, &ckpt, &main->cuda_call, &drain, &launch};
    int64_t len[7];
    if (rc)
        goto out;
    take_all(&r->gpu, ct_rank_gcover(r), res->ws, res->we, by, 6, len);
    res->at.bubble_idle = len[0];
    res->at.data_stall = len[1];
    res->at.ckpt_idle = len[2];
    res->at.cuda_call = len[3];
    res->at.sync_drain = len[4];
    res->at.launch_overhead = len[5];
    res->at.unexplained = len[6];
    res->at.checkpoint_stall = res->at.ckpt_idle;
    if (!rc && res->niters >= 3)
        ckpt_excess(res, &ckpt);
out:
    ct_ivset_free(&bub);
    ct_ivset_free(&data);
    ct_ivset_free(&ckpt);
    ct_ivset_free(&drain);
    ct_ivset_free(&launch);
    return rc;
}
