/*
 * The host side of a rank's graph (decoder/analysis/critical_path.c; docs/
 * critical-path.md): the main process's host events in order, and what
 * each synchronisation waited for.
 *
 * A sync waits for the last op launched before it on the stream it names
 * (cuStreamSynchronize*), or before its event's latest record on that
 * record's stream (cuEventSynchronize), as the trace's sync waits say
 * (struct ct_syncon); a sync of the legacy stream for every blocking
 * stream's last op (the streams not created non-blocking). Every stream's
 * last op, when the sync waited for every stream (a context's sync, a
 * synchronous copy) or the trace does not say (Kineto input, traces recorded
 * before the recorder kept it, an event recorded before the capture). A
 * sync interval of the timeline that several syncs overlap (threads) waits
 * for all of theirs.
 */
#include <errno.h>
#include <stdlib.h>

#include "decoder/analysis/critical_path_int.h"
#include "decoder/util/array.h"
#include "decoder/util/search.h"
#include "decoder/read/devices.h"

static int cmp_hev(const void *a, const void *b)
{
    const struct hev *x = a, *y = b;
    if (x->s != y->s)
        return x->s < y->s ? -1 : 1;
    return x->kind - y->kind;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int ct_cp_host_events(struct ct_cp_graph *g, const struct ct_rank *rk, const struct cp_win *w,
                      int32_t ri, struct hev **out, size_t *nout)
{
    const struct ct_proc *p0 = rk->procs[0];
    int64_t *l = malloc((w->nops ? w->nops : 1) * sizeof(*l));
    if (!l)
        return -ENOMEM;
    size_t nl = 0;
    for (size_t i = 0; i < w->nops; i++)
        if (w->ops[i].launch != INT64_MIN && w->ops[i].type != CT_GPU_SYNC)
            l[nl++] = w->ops[i].launch;
    qsort(l, nl, sizeof(*l), cmp_i64);
    size_t n = 0;
    for (size_t i = 0; i < nl; i++)
        if (!i || l[i] != l[i - 1])
            l[n++] = l[i];
    size_t tot = n + p0->sync.n + p0->data_wait.n + p0->ckpt.n;
    struct hev *h = malloc((tot ? tot : 1) * sizeof(*h));
    if (!h) {
        free(l);
        return -ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        h[k++] = (struct hev){.s = l[i], .e = l[i], .kind = HE_LAUNCH};
    const struct ct_ivset *sets[3] = {&p0->sync, &p0->data_wait, &p0->ckpt};
    for (int s = 0; s < 3; s++)
        for (size_t i = 0; i < sets[s]->n; i++)
            if (sets[s]->v[i].e >= w->s && sets[s]->v[i].s <= w->e)
                h[k++] =
                    (struct hev){.s = sets[s]->v[i].s, .e = sets[s]->v[i].e, .kind = HE_SYNC + s};
    free(l);
    qsort(h, k, sizeof(*h), cmp_hev);
    static const int cat[] = {CT_CP_HOST, CT_CP_SYNC, CT_CP_DATA, CT_CP_CKPT};
    for (size_t i = 0; i < k; i++) {
        if (ct_cp_add_pt(g, h[i].s, ri, &h[i].ps))
            goto oom;
        h[i].pe = h[i].ps;
        if (h[i].kind != HE_LAUNCH) {
            if (ct_cp_add_pt(g, h[i].e, ri, &h[i].pe) ||
                ct_cp_add_edge(g, h[i].ps, h[i].pe, h[i].kind == HE_SYNC ? CP_GAP : CP_DUR,
                               cat[h[i].kind], ri))
                goto oom;
        }
        /* host thread order: host time between events (scaled by host=N) */
        if (i && ct_cp_add_edge(g, h[i - 1].pe, h[i].ps, CP_GAP, CT_CP_HOST, ri))
            goto oom;
    }
    *out = h;
    *nout = k;
    return 0;
oom:
    free(h);
    return -ENOMEM;
}

int64_t ct_cp_host_before(const struct hev *h, size_t n, int64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (h[mid].s <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return -1;
    return h[lo - 1].e <= t ? h[lo - 1].pe : h[lo - 1].ps;
}

const struct hev *ct_cp_launch_ev(const struct hev *h, size_t n, int64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (h[mid].s < t || (h[mid].s == t && h[mid].kind < HE_LAUNCH))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && h[lo].s == t && h[lo].kind == HE_LAUNCH ? &h[lo] : NULL;
}

/* An op by (stream, launch): the launch call's host start, or the op's
 * start when the call is unknown. */
struct slaunch {
    uint32_t stream;
    int64_t t;
    uint32_t op;
};
static int cmp_slaunch(const void *a, const void *b)
{
    const struct slaunch *x = a, *y = b;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    if (x->t != y->t)
        return (x->t > y->t) - (x->t < y->t);
    return (x->op > y->op) - (x->op < y->op);
}

/* The index + 1 of the last op of v (n, sorted) on `stream` launched
 * before t, or 0. */
struct slaunch_key {
    const struct slaunch *v;
    uint32_t stream;
    int64_t t;
};
static int slaunch_before(size_t i, const void *ctx)
{
    const struct slaunch_key *k = ctx;
    return k->v[i].stream < k->stream || (k->v[i].stream == k->stream && k->v[i].t < k->t);
}

static size_t launched_before(const struct slaunch *v, size_t n, uint32_t stream, int64_t t)
{
    const struct slaunch_key k = {v, stream, t};
    size_t lo = ct_partition(n, slaunch_before, &k);
    return lo && v[lo - 1].stream == stream ? lo : 0;
}

struct sync_key {
    const struct ct_syncon *v;
    int64_t t;
};
static int sync_before(size_t i, const void *ctx)
{
    const struct sync_key *k = ctx;
    return k->v[i].t < k->t;
}

/* The first of the n syncs (by start) starting at or after t. */
static size_t sync_from(const struct ct_syncon *v, size_t n, int64_t t)
{
    const struct sync_key k = {v, t};
    return ct_partition(n, sync_before, &k);
}

int ct_cp_sync_edges(struct ct_cp_graph *g, const struct ct_rank *rk, const struct cp_win *w,
                     const struct opx *ox, const struct hev *h, size_t nh, int32_t ri)
{
    const struct ct_proc *p0 = rk->procs[0];
    struct slast *sl = NULL;
    struct slaunch *v = malloc((w->nops ? w->nops : 1) * sizeof(*v));
    size_t nsl = 0, capsl = 0, nv = 0, j = 0;
    int rc = v ? 0 : -ENOMEM;
    /* the ops by (stream, launch), for the syncs that name a stream (a
     * trace without sync waits has none) */
    for (size_t i = 0; i < w->nops && !rc && p0->nsyncs; i++)
        if (w->ops[i].type != CT_GPU_SYNC)
            v[nv++] = (struct slaunch){
                w->ops[i].stream, w->ops[i].launch != INT64_MIN ? w->ops[i].launch : w->ops[i].s,
                (uint32_t)i};
    if (!rc && nv > 1)
        qsort(v, nv, sizeof(*v), cmp_slaunch);
    for (size_t i = 0; i < nh && !rc; i++) {
        if (h[i].kind != HE_SYNC)
            continue;
        /* every stream's last op launched before the sync began (launch
         * order on a stream is its start order) */
        while (j < w->nops && !rc &&
               (w->ops[j].launch != INT64_MIN ? w->ops[j].launch : w->ops[j].s) < h[i].s) {
            if (w->ops[j].type != CT_GPU_SYNC)
                rc = ct_cp_slast_set(&sl, &nsl, &capsl, w->ops[j].stream, ox[j].pe);
            j++;
        }
        size_t a = sync_from(p0->syncs, p0->nsyncs, h[i].s), b = a;
        int every = 0, blocking = 0;
        for (; b < p0->nsyncs && p0->syncs[b].t <= h[i].e; b++) {
            every |= !p0->syncs[b].stream;
            blocking |= p0->syncs[b].stream == CT_SYNCON_BLOCKING;
        }
        for (size_t k = 0; k < nsl && !rc && (every || a == b || blocking); k++)
            if (every || a == b || !ct_is_nonblocking(p0, sl[k].stream))
                rc = ct_cp_add_edge(g, sl[k].pe, h[i].pe, CP_GAP, CT_CP_SYNC, ri);
        if (every || a == b)
            continue;
        uint32_t last = UINT32_MAX; /* syncs in a row on one stream wait for one op */
        for (size_t k = a; k < b && !rc; k++) {
            if (p0->syncs[k].stream == CT_SYNCON_BLOCKING)
                continue;
            size_t o = launched_before(v, nv, p0->syncs[k].stream, p0->syncs[k].rec);
            if (o && ox[v[o - 1].op].pe != last) {
                last = ox[v[o - 1].op].pe;
                rc = ct_cp_add_edge(g, last, h[i].pe, CP_GAP, CT_CP_SYNC, ri);
            }
        }
    }
    free(v);
    free(sl);
    return rc;
}
