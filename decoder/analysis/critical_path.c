/*
 * The job's dependency graph (ct_cp_build) and the critical path of each
 * step over it (ct_cp_paths). Definitions: docs/critical-path.md.
 *
 * Points and edges, per rank (its main process):
 *   - GPU op: start -> end, its duration (a matched collective instead runs
 *     start -> rendezvous -> end, below);
 *   - stream order: the previous op's end on the stream -> start;
 *   - launch: the host launch call -> start;
 *   - host thread order: the host's events (launch calls, synchronisations,
 *     data waits, checkpoint I/O) in time order, each one's end -> the
 *     next one's start: host time;
 *   - a synchronisation's end waits for the last op launched before it on
 *     each stream (end -> sync end): the GPU op it waited for;
 *   - data waits and checkpoint I/O: start -> end, their duration;
 *   - collectives matched across ranks by (communicator, sequence) and
 *     send/recv pairs by (communicator, src, dst, sequence): every member's
 *     start -> one rendezvous point (the last arriver's start) -> each
 *     member's end, that member's transfer;
 *   - iteration start/end: from the host event and the op on each stream
 *     that precede it (sinks: nothing waits on them).
 * Event waits: the process's event edges (a cuStreamWaitEvent joined to
 * the record it waits on): the last op launched on the recording stream
 * before the record -> the first op launched on the waiting stream after
 * the wait. Assumed where the trace has no edge: a rank whose main process
 * kept no event edges has its cross-stream order on one GPU
 * through launch order and host synchronisations, and inferred from time:
 * an op that began within CT_CP_WAIT_NS after an op on another stream of
 * its rank ended, later than its launch and its stream predecessor allow,
 * is taken to have waited for that op (a gradient bucket's all-reduce
 * waiting for its backward kernel); every synchronisation is taken to wait
 * for every stream (a stream sync that did not shows a negative slack,
 * harmless unscaled); a host process's threads are one chain; loader
 * workers and other processes of a rank are not in the graph (their effect
 * reaches it through the main process's data waits).
 *
 * Exactness. A point's time is max over its edges of (source + weight).
 * Durations are weighted by what was measured. Of the gap edges into a
 * point, the one whose source came last is the binding edge, and the gap
 * from it is the point's latency (a wake-up after a sync, a launch's
 * latency, the time between back-to-back kernels); every gap edge into the
 * point carries that latency, so the point follows the latest of its
 * sources by it, whichever that is after scaling. Unscaled every point
 * lands on its measured time (no other source is later than the binding
 * one); a scaled source that moves earlier lets the point move only as far
 * as its other sources allow; one that moves later than the binding source
 * delays the point by the same latency. (Weighting the others 0 instead
 * made a sync whose GPU work got shorter wake up at once after its other
 * streams' work, as if the host's latency had been the waited op's.)
 */
#include "decoder/analysis/critical_path.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decoder/analysis/critical_path_int.h"
#include "decoder/util/array.h"
#include "decoder/util/names.h"
#include "decoder/util/stats.h"
#include "decoder/read/job.h"

const char *ct_cp_cat_name(int cat)
{
    static const char *const n[CT_CP_NCAT] = {"compute",    "memory",  "comm", "peer_wait",
                                              "launch",     "gpu_gap", "host", "data_wait",
                                              "checkpoint", "sync"};
    return cat >= 0 && cat < CT_CP_NCAT ? n[cat] : "?";
}

int ct_cp_add_pt(struct ct_cp_graph *g, int64_t t, int32_t rank, uint32_t *id)
{
    if (ct_grow((void **)&g->pt, &g->cappt, g->npt, sizeof(*g->pt)))
        return -ENOMEM;
    g->pt[g->npt] = (struct cp_pt){.t = t, .v = t, .rank = rank};
    *id = (uint32_t)g->npt++;
    return 0;
}

int ct_cp_add_edge(struct ct_cp_graph *g, uint32_t src, uint32_t dst, int kind, int cat,
                   int32_t rank)
{
    if (ct_grow((void **)&g->ed, &g->caped, g->ned, sizeof(*g->ed)))
        return -ENOMEM;
    g->ed[g->ned] = (struct cp_edge){
        .src = src, .dst = dst, .kind = (uint8_t)kind, .cat = (uint8_t)cat, .rank = rank};
    g->ned++;
    return 0;
}

int ct_cp_slast_set(struct slast **v, size_t *n, size_t *cap, uint32_t stream, uint32_t pe)
{
    for (size_t i = 0; i < *n; i++)
        if ((*v)[i].stream == stream) {
            (*v)[i].pe = pe;
            return 0;
        }
    if (ct_grow((void **)v, cap, *n, sizeof(**v)))
        return -ENOMEM;
    (*v)[(*n)++] = (struct slast){stream, pe, 0, UINT32_MAX};
    return 0;
}

/* The same by end: keeps the later end per stream. */
static int ended_set(struct slast **v, size_t *n, size_t *cap, uint32_t stream, uint32_t pe,
                     int64_t e)
{
    for (size_t i = 0; i < *n; i++)
        if ((*v)[i].stream == stream) {
            if (e >= (*v)[i].e)
                (*v)[i].pe = pe, (*v)[i].e = e;
            return 0;
        }
    if (ct_grow((void **)v, cap, *n, sizeof(**v)))
        return -ENOMEM;
    (*v)[(*n)++] = (struct slast){stream, pe, e, UINT32_MAX};
    return 0;
}

/* GPU intervals of one device from different timers (the NCCL plugin's
 * beside CUPTI's) disagree by up to a few hundred ns: an op that ended
 * this much after another began may still be what it waited for. */
#define CT_CP_CLOCK_NS 1000

/* The stream-order source of an op starting at s on stream: the last op
 * on it, or, when s is before that op's end, that op's own predecessor. A
 * stream runs one launch at a time, so intervals on it that overlap are
 * parts of one launch: an NCCL op's kernel beside the plugin's interval,
 * or the sends and receives of one group, which NCCL fuses into one
 * kernel. Chaining those would be false (a grouped send and receive
 * between two ranks would each wait for the other: a cycle). */
static uint32_t stream_source(const struct slast *v, size_t n, uint32_t stream, int64_t s)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].stream == stream)
            return s + CT_CP_CLOCK_NS < v[i].e ? v[i].pre : v[i].pe;
    return UINT32_MAX;
}

/* Advances the stream sweep past op (pe, s, e); the op that ends last of
 * a set that overlaps is what the next op follows. */
static int stream_next(struct slast **v, size_t *n, size_t *cap, uint32_t stream, uint32_t pe,
                       int64_t s, int64_t e)
{
    for (size_t i = 0; i < *n; i++) {
        struct slast *l = &(*v)[i];
        if (l->stream != stream)
            continue;
        if (s + CT_CP_CLOCK_NS < l->e) { /* part of the same launch */
            if (e > l->e)
                l->pe = pe, l->e = e;
        } else {
            l->pre = l->pe, l->pe = pe, l->e = e;
        }
        return 0;
    }
    if (ct_grow((void **)v, cap, *n, sizeof(**v)))
        return -ENOMEM;
    (*v)[(*n)++] = (struct slast){stream, pe, e, UINT32_MAX};
    return 0;
}

/* How soon after an op on another stream ends an op that waited for it
 * begins: HTA's consecutive-kernel delay (a stream wait releases the
 * waiting op within microseconds). */
#define CT_CP_WAIT_NS 30000
static struct cp_win window(const struct ct_rank_result *x)
{
    const struct ct_rank *rk = x->rank;
    struct cp_win w = {rk->ops, rk->nops, INT64_MIN, INT64_MAX};
    if (!x->niters)
        return w;
    w.s = x->iters[0].s, w.e = x->iters[0].e;
    for (size_t i = 1; i < x->niters; i++) {
        w.s = x->iters[i].s < w.s ? x->iters[i].s : w.s;
        w.e = x->iters[i].e > w.e ? x->iters[i].e : w.e;
    }
    size_t lo = 0, hi = rk->nops; /* ops come sorted by start */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rk->ops[mid].s < w.s)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t end = lo;
    while (end < rk->nops && rk->ops[end].s <= w.e)
        end++;
    w.ops = rk->ops + lo, w.nops = end - lo;
    return w;
}

/* A time and a point or op index: ops by end, iteration points by time. */
struct tix {
    int64_t t;
    uint32_t i;
};
static int cmp_tix(const void *a, const void *b)
{
    const struct tix *x = a, *y = b;
    if (x->t != y->t)
        return (x->t > y->t) - (x->t < y->t);
    return (x->i > y->i) - (x->i < y->i);
}

static int cls_cat(int cls)
{
    return cls == CT_CL_COMPUTE ? CT_CP_COMPUTE : cls == CT_CL_MEMORY ? CT_CP_MEMORY : CT_CP_COMM;
}

/* An op by (stream, launch): where an event edge's ends are found. */
struct slaunch {
    uint32_t stream;
    int64_t launch;
    uint32_t op;
};
static int cmp_slaunch(const void *a, const void *b)
{
    const struct slaunch *x = a, *y = b;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    if (x->launch != y->launch)
        return (x->launch > y->launch) - (x->launch < y->launch);
    return (x->op > y->op) - (x->op < y->op);
}

/* The first entry of v (n, sorted) on `stream` launched after t (after:
 * at or after when `at` is set), or n. */
static size_t launched_after(const struct slaunch *v, size_t n, uint32_t stream, int64_t t, int at)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].stream < stream ||
            (v[mid].stream == stream && (at ? v[mid].launch < t : v[mid].launch <= t)))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The recorded event edges of the rank's main process (decoder/read/
 * timeline.h, struct ct_evedge): the first op launched on the waiting
 * stream after the wait starts after the end of the last op launched on
 * the recording stream before the record. A launch of several ops (a CUDA
 * graph's nodes, an NCCL op's intervals) completes the event with the one
 * that ended last; a graph launched after the wait waits in each of its
 * roots (its other nodes follow them: an edge into them too, with its
 * measured gap, would hold them back when a predecessor is scaled
 * shorter). 0 or -ENOMEM. */
static int event_edges(struct ct_cp_graph *g, const struct ct_rank *rk, const struct cp_win *w,
                       const struct opx *ox, int32_t ri)
{
    const struct ct_proc *p0 = rk->procs[0];
    struct slaunch *v = malloc((w->nops ? w->nops : 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < w->nops; i++)
        if (w->ops[i].launch != INT64_MIN && w->ops[i].type != CT_GPU_SYNC)
            v[n++] = (struct slaunch){w->ops[i].stream, w->ops[i].launch, (uint32_t)i};
    qsort(v, n, sizeof(*v), cmp_slaunch);
    int rc = 0;
    for (size_t k = 0; k < p0->nedges && !rc; k++) {
        const struct ct_evedge *e = &p0->edges[k];
        size_t a = launched_after(v, n, e->from, e->rec, 1); /* a - 1: the last before */
        size_t b = launched_after(v, n, e->to, e->wait, 0);
        if (!a || v[a - 1].stream != e->from || b == n || v[b].stream != e->to)
            continue; /* nothing recorded before, or nothing waited after */
        size_t src = a - 1;
        for (size_t c = a - 1; c-- > 0 && v[c].stream == e->from && v[c].launch == v[a - 1].launch;)
            if (w->ops[v[c].op].e > w->ops[v[src].op].e)
                src = c;
        for (size_t c = b; c < n && v[c].stream == e->to && v[c].launch == v[b].launch && !rc; c++)
            if (c == b || ct_cp_graph_root(rk, &w->ops[v[c].op])) {
                rc = ct_cp_add_edge(g, ox[v[src].op].pe, ox[v[c].op].ps, CP_GAP, CT_CP_GPU_GAP, ri);
                if (!rc)
                    g->ed[g->ned - 1].stream = e->to;
            }
    }
    free(v);
    return rc;
}

/* The source of a graph's root node on its stream: what the stream ran
 * before the launch, the same for every root of the launch (a root that
 * began after another root ended did not wait for it). *from is the stream
 * rule's source; the first root of a launch keeps it for the others. */
struct groot {
    uint32_t stream, src;
    int64_t launch;
};
static int root_source(struct groot **v, size_t *n, size_t *cap, const struct ct_gpu_op *o,
                       uint32_t *from)
{
    for (size_t k = 0; k < *n; k++) {
        struct groot *r = &(*v)[k];
        if (r->stream != o->stream)
            continue;
        if (r->launch == o->launch)
            *from = r->src;
        else
            r->launch = o->launch, r->src = *from;
        return 0;
    }
    if (ct_grow((void **)v, cap, *n, sizeof(**v)))
        return -ENOMEM;
    (*v)[(*n)++] = (struct groot){o->stream, *from, o->launch};
    return 0;
}

/* The part of x's window whose ops belong to the walked steps: from the
 * first walked iteration's start to the start of the first one after them
 * (the next chunk's), so that chunks count each op once. */
static void walked_span(const struct ct_cp_graph *g, const struct ct_rank_result *x, int64_t *lo,
                        int64_t *hi)
{
    *lo = INT64_MAX, *hi = INT64_MAX;
    if (!x->niters) {
        *lo = INT64_MIN;
        return;
    }
    for (size_t i = 0; i < x->niters; i++) {
        const struct ct_iter *it = &x->iters[i];
        if (it->index > g->last_index && it->s < *hi)
            *hi = it->s;
        else if (it->index >= g->first_index && it->index <= g->last_index && it->s < *lo)
            *lo = it->s;
    }
    if (g->first_index == INT64_MIN) /* the run's first steps: from the window's start */
        *lo = INT64_MIN;
}

static int build_rank(struct ct_cp_graph *g, const struct ct_rank_result *x, int32_t ri)
{
    const struct ct_rank *rk = x->rank;
    const struct cp_win win = window(x), *w = &win;
    struct hev *h = NULL;
    size_t nh = 0;
    struct opx *ox = malloc((w->nops ? w->nops : 1) * sizeof(*ox));
    struct tix *byend = malloc((w->nops ? w->nops : 1) * sizeof(*byend));
    unsigned char *seen = calloc(rk->nnccl ? rk->nnccl : 1, 1);
    struct slast *sl = NULL, *en = NULL;
    size_t nsl = 0, capsl = 0, nen = 0, capen = 0;
    struct cp_gix *gix = NULL;
    size_t ngix = 0;
    struct groot *gl = NULL;
    size_t ngl = 0, capgl = 0;
    int rc = -ENOMEM;
    if (!ox || !byend || !seen || ct_cp_host_events(g, rk, w, ri, &h, &nh))
        goto out;
    for (size_t i = 0; i < w->nops; i++) {
        if (ct_cp_add_pt(g, w->ops[i].s, ri, &ox[i].ps) ||
            ct_cp_add_pt(g, w->ops[i].e, ri, &ox[i].pe))
            goto out;
        byend[i] = (struct tix){w->ops[i].e, (uint32_t)i};
    }
    qsort(byend, w->nops, sizeof(*byend), cmp_tix);
    /* a trace of a recorder that keeps event edges has the job's
     * cross-stream waits: no inference from timing then */
    int infer = !rk->procs[0]->nedges;
    if (!infer && event_edges(g, rk, w, ox, ri))
        goto out;
    if (ct_cp_graph_index(rk, w, &gix, &ngix))
        goto out;
    int64_t wlo, whi;
    walked_span(g, x, &wlo, &whi);
    size_t j = 0;
    for (size_t i = 0; i < w->nops; i++) {
        const struct ct_gpu_op *o = &w->ops[i];
        if (o->type == CT_GPU_SYNC)
            continue; /* the GPU's view of a host wait, not work: the sync is a host event */
        int64_t known = INT64_MIN; /* the latest source the trace names */
        int root, ge = ct_cp_graph_edges(g, rk, w, ox, gix, ngix, i, ri, &root);
        if (ge < 0)
            goto out;
        uint32_t from = ge ? UINT32_MAX : stream_source(sl, nsl, o->stream, o->s);
        if (root && root_source(&gl, &ngl, &capgl, o, &from))
            goto out;
        if (o->graph && o->s >= wlo && o->s < whi) {
            g->graph_ops++;
            g->graph_ops_edges += ge || root;
        }
        if (from != UINT32_MAX) {
            if (ct_cp_add_edge(g, from, ox[i].ps, CP_GAP, CT_CP_GPU_GAP, ri))
                goto out;
            g->ed[g->ned - 1].stream = o->stream;
            known = g->pt[from].t;
        }
        const struct hev *lv = o->launch != INT64_MIN ? ct_cp_launch_ev(h, nh, o->launch) : NULL;
        if (lv) { /* the launch's stream is the op's: its queue was empty then */
            if (ct_cp_add_edge(g, lv->pe, ox[i].ps, CP_GAP, CT_CP_LAUNCH, ri))
                goto out;
            g->ed[g->ned - 1].stream = o->stream;
        }
        if (lv && lv->s > known)
            known = lv->s;
        /* the op that ended last on another stream before this one began:
         * when it ended after every source the trace names and this op
         * began within CT_CP_WAIT_NS of it, this op is taken to have
         * waited for it (an event wait the timeline does not keep) */
        while (j < w->nops && byend[j].t <= o->s + CT_CP_CLOCK_NS) {
            if (w->ops[byend[j].i].type != CT_GPU_SYNC && byend[j].i != i &&
                ended_set(&en, &nen, &capen, w->ops[byend[j].i].stream, ox[byend[j].i].pe,
                          byend[j].t))
                goto out;
            j++;
        }
        const struct slast *other = NULL; /* the other stream's latest end */
        for (size_t k = 0; k < nen; k++)
            if (en[k].stream != o->stream && (!other || en[k].e > other->e))
                other = &en[k];
        if (infer && !ge && !root && other && other->e > known &&
            o->s - other->e <= CT_CP_WAIT_NS && other->pe != ox[i].pe) {
            if (ct_cp_add_edge(g, other->pe, ox[i].ps, CP_GAP, CT_CP_GPU_GAP, ri))
                goto out;
            g->ed[g->ned - 1].stream = o->stream;
        }
        if (stream_next(&sl, &nsl, &capsl, o->stream, ox[i].pe, o->s, o->e))
            goto out;
        /* every GPU interval of one NCCL op (its kernel, the plugin's or
         * the record's interval) is one member: it arrives with the first
         * to start, each ends after the transfer */
        const struct ct_nccl_call *n =
            o->nccl >= 0 && (size_t)o->nccl < rk->nnccl ? &rk->nccl[o->nccl] : NULL;
        if (n && n->e) {
            if (ct_grow((void **)&g->keys, &g->capkeys, g->nkeys, sizeof(*g->keys)))
                goto out;
            struct cp_key *k = &g->keys[g->nkeys++];
            *k = (struct cp_key){
                .m = ct_nccl_match_key(n),
                .ps = ox[i].ps,
                .pe = ox[i].pe,
                .rank = ri,
                .nranks = n->op == CT_NCCL_OP_SEND || n->op == CT_NCCL_OP_RECV ? 2 : n->nranks,
                .op = n->op,
                .bytes = n->bytes,
                .stream = o->stream,
                .arrive = !seen[o->nccl]};
            seen[o->nccl] = 1;
        } else {
            if (ct_cp_add_edge(g, ox[i].ps, ox[i].pe, CP_DUR, cls_cat(o->cls), ri))
                goto out;
            struct cp_edge *e = &g->ed[g->ned - 1];
            e->gpu = 1;
            e->stream = o->stream;
            e->name = o->name < rk->nnames ? rk->names[o->name] : NULL;
        }
    }
    if (ct_cp_sync_edges(g, rk, w, ox, h, nh, ri))
        goto out;
    /* iteration points, from the host event and each stream's op before */
    size_t ni = x->niters;
    struct tix *ip = malloc((ni ? 2 * ni : 1) * sizeof(*ip));
    if (!ip)
        goto out;
    g->itp[ri] = malloc((ni ? 2 * ni : 1) * sizeof(uint32_t));
    if (!g->itp[ri]) {
        free(ip);
        goto out;
    }
    for (size_t i = 0; i < 2 * ni; i++) {
        int64_t t = i & 1 ? x->iters[i / 2].e : x->iters[i / 2].s;
        if (ct_cp_add_pt(g, t, ri, &g->itp[ri][i])) {
            free(ip);
            goto out;
        }
        g->pt[g->itp[ri][i]].step = 1;
        ip[i] = (struct tix){t, g->itp[ri][i]};
    }
    qsort(ip, 2 * ni, sizeof(*ip), cmp_tix); /* an iteration may end after the next began */
    nsl = 0;
    j = 0;
    for (size_t i = 0; i < 2 * ni; i++) {
        while (j < w->nops && byend[j].t <= ip[i].t) {
            if (w->ops[byend[j].i].type != CT_GPU_SYNC &&
                ct_cp_slast_set(&sl, &nsl, &capsl, w->ops[byend[j].i].stream, ox[byend[j].i].pe)) {
                free(ip);
                goto out;
            }
            j++;
        }
        int64_t hp = ct_cp_host_before(h, nh, ip[i].t);
        int bad = hp >= 0 && ct_cp_add_edge(g, (uint32_t)hp, ip[i].i, CP_GAP, CT_CP_HOST, ri);
        for (size_t k = 0; k < nsl && !bad; k++)
            bad = ct_cp_add_edge(g, sl[k].pe, ip[i].i, CP_GAP, CT_CP_GPU_GAP, ri);
        if (bad) {
            free(ip);
            goto out;
        }
    }
    free(ip);
    rc = 0;
out:
    free(h);
    free(ox);
    free(byend);
    free(seen);
    free(sl);
    free(en);
    free(gix);
    free(gl);
    return rc;
}

static int cmp_key(const void *a, const void *b)
{
    const struct cp_key *x = a, *y = b;
    int c = ct_match_key_cmp(&x->m, &y->m);
    return c ? c : (x->rank > y->rank) - (x->rank < y->rank);
}

static int same_key(const struct cp_key *a, const struct cp_key *b)
{
    return !ct_match_key_cmp(&a->m, &b->m);
}

/* Matched ops meet at a rendezvous point (the last member's start); an
 * unmatched one keeps its whole interval as its duration. */
static int collectives(struct ct_cp_graph *g)
{
    if (g->nkeys) /* qsort of NULL, 0 is undefined (UBSan) */
        qsort(g->keys, g->nkeys, sizeof(*g->keys), cmp_key);
    for (size_t i = 0; i < g->nkeys;) {
        size_t j = i, members = 0;
        int64_t last = INT64_MIN;
        while (j < g->nkeys && same_key(&g->keys[j], &g->keys[i])) {
            if (g->keys[j].arrive && g->pt[g->keys[j].ps].t > last)
                last = g->pt[g->keys[j].ps].t;
            members += g->keys[j].arrive;
            j++;
        }
        uint32_t r = 0;
        if (members >= 2 && ct_cp_add_pt(g, last, g->keys[i].rank, &r))
            return -ENOMEM;
        for (size_t k = i; k < j; k++) {
            const struct cp_key *m = &g->keys[k];
            if (members >= 2) {
                if ((m->arrive && ct_cp_add_edge(g, m->ps, r, CP_MAX0, CT_CP_PEER_WAIT, m->rank)) ||
                    ct_cp_add_edge(g, r, m->pe, CP_DUR, CT_CP_COMM, m->rank))
                    return -ENOMEM;
            } else if (ct_cp_add_edge(g, m->ps, m->pe, CP_DUR, CT_CP_COMM, m->rank)) {
                return -ENOMEM;
            }
            struct cp_edge *e = &g->ed[g->ned - 1];
            e->xfer = 1;
            e->op = m->op;
            e->bytes = m->bytes;
            e->nranks = m->nranks;
            e->comm = m->m.comm;
            e->stream = m->stream;
            e->name = ct_name_nccl_op(m->op);
        }
        i = j;
    }
    return 0;
}

/* Whether a gap edge may have bound its point (finish()). */
static int possible(const struct cp_edge *e, int64_t gap)
{
    return e->cat != CT_CP_SYNC || gap >= -CT_CP_CLOCK_NS;
}

/* An iteration's start or end point p (a sink) follows one source: the
 * one at its very time (the GPU end an iteration was extended to, the
 * launch a repeat began with: decoder/analysis/iterations.h), else the
 * host event before it (a range's start or end is the host's, after its
 * own last event however late other streams' work ended), else the
 * latest (`bind`). That edge keeps its measured gap; the others weigh 0:
 * they only keep the point from coming before them. Returns the edge. */
static uint32_t step_bind(struct ct_cp_graph *g, uint32_t p, uint32_t bind)
{
    uint32_t at = UINT32_MAX, host = UINT32_MAX;
    for (uint32_t k = g->in_off[p]; k < g->in_off[p + 1]; k++) {
        const struct cp_edge *e = &g->ed[g->in_idx[k]];
        if (e->kind == CP_GAP && g->pt[e->src].t == g->pt[p].t && at == UINT32_MAX)
            at = g->in_idx[k];
        if (e->kind == CP_GAP && e->cat == CT_CP_HOST)
            host = g->in_idx[k];
    }
    bind = at != UINT32_MAX ? at : host != UINT32_MAX ? host : bind;
    for (uint32_t k = g->in_off[p]; k < g->in_off[p + 1]; k++) {
        struct cp_edge *e = &g->ed[g->in_idx[k]];
        if (e->kind == CP_GAP)
            e->w = g->in_idx[k] == bind ? g->pt[p].t - g->pt[e->src].t : 0;
    }
    return bind;
}

/* The binding rule, the in-edge index and the dependency order (Kahn). */
static int finish(struct ct_cp_graph *g)
{
    size_t np = g->npt;
    g->in_off = calloc(np + 1, sizeof(*g->in_off));
    g->in_idx = malloc((g->ned ? g->ned : 1) * sizeof(*g->in_idx));
    g->order = malloc((np ? np : 1) * sizeof(*g->order));
    uint32_t *out_off = calloc(np + 1, sizeof(*out_off));
    uint32_t *out_idx = malloc((g->ned ? g->ned : 1) * sizeof(*out_idx));
    uint32_t *deg = calloc(np ? np : 1, sizeof(*deg));
    int rc = -ENOMEM;
    if (!g->in_off || !g->in_idx || !g->order || !out_off || !out_idx || !deg)
        goto out;
    for (size_t i = 0; i < g->ned; i++)
        g->in_off[g->ed[i].dst + 1]++, out_off[g->ed[i].src + 1]++;
    for (size_t p = 0; p < np; p++)
        g->in_off[p + 1] += g->in_off[p], out_off[p + 1] += out_off[p];
    for (size_t i = 0; i < g->ned; i++) {
        g->in_idx[g->in_off[g->ed[i].dst] + deg[g->ed[i].dst]++] = (uint32_t)i;
    }
    memset(deg, 0, np * sizeof(*deg));
    for (size_t i = 0; i < g->ned; i++)
        out_idx[out_off[g->ed[i].src] + deg[g->ed[i].src]++] = (uint32_t)i;
    for (size_t p = 0; p < np; p++) {
        /* the binding source: the latest that may have bound the point. A
         * synchronisation that the trace does not say what it waited for
         * is taken to wait for every stream (critical_path_host.c): an op
         * of another stream that ended after it returned, beyond the
         * timers' disagreement, was not waited for, and keeps its own
         * negative gap instead of the point's latency (it binds only when
         * no other source could). Every other edge is a dependency even
         * when clocks put its source after the point (a launch whose host
         * clock runs ahead of the GPU's). */
        int64_t latest = INT64_MIN, any = INT64_MIN;
        uint32_t bind = UINT32_MAX, bind_any = UINT32_MAX;
        for (uint32_t k = g->in_off[p]; k < g->in_off[p + 1]; k++) {
            struct cp_edge *e = &g->ed[g->in_idx[k]];
            int64_t gap = g->pt[p].t - g->pt[e->src].t;
            e->w = e->kind == CP_MAX0 ? 0 : gap; /* possible gap sources: set below */
            if (e->kind != CP_GAP)
                continue;
            if (possible(e, gap) && g->pt[e->src].t > latest)
                latest = g->pt[e->src].t, bind = g->in_idx[k];
            if (g->pt[e->src].t > any)
                any = g->pt[e->src].t, bind_any = g->in_idx[k];
        }
        for (uint32_t k = g->in_off[p]; bind != UINT32_MAX && k < g->in_off[p + 1]; k++) {
            struct cp_edge *e = &g->ed[g->in_idx[k]];
            if (e->kind == CP_GAP && possible(e, g->pt[p].t - g->pt[e->src].t))
                e->w = g->pt[p].t - latest;
        }
        if (bind == UINT32_MAX)
            bind = bind_any;
        if (g->pt[p].step && bind != UINT32_MAX)
            bind = step_bind(g, (uint32_t)p, bind);
        if (bind != UINT32_MAX)
            g->ed[bind].bind = 1;
        deg[p] = g->in_off[p + 1] - g->in_off[p];
    }
    size_t head = 0;
    g->norder = 0;
    for (size_t p = 0; p < np; p++)
        if (!deg[p])
            g->order[g->norder++] = (uint32_t)p;
    while (head < g->norder) {
        uint32_t p = g->order[head++];
        for (uint32_t k = out_off[p]; k < out_off[p + 1]; k++) {
            uint32_t d = g->ed[out_idx[k]].dst;
            if (!--deg[d])
                g->order[g->norder++] = d;
        }
    }
    rc = 0;
out:
    free(out_off);
    free(out_idx);
    free(deg);
    return rc;
}

void ct_cp_free(struct ct_cp_graph *g)
{
    if (!g)
        return;
    if (g->itp)
        for (size_t r = 0; r < g->rep->nr; r++)
            free(g->itp[r]);
    free(g->itp);
    free(g->pt);
    free(g->ed);
    free(g->keys);
    free(g->in_off);
    free(g->in_idx);
    free(g->order);
    free(g);
}

double ct_cp_mean_step(const struct ct_cp_result *r)
{
    if (!r->nsteps)
        return 0;
    if (r->chunks > 1)
        return (double)r->span / (double)r->nsteps;
    int64_t lo = r->steps[0].start, hi = r->steps[0].end;
    for (size_t i = 1; i < r->nsteps; i++) {
        lo = r->steps[i].start < lo ? r->steps[i].start : lo;
        hi = r->steps[i].end > hi ? r->steps[i].end : hi;
    }
    return (double)(hi - lo) / (double)r->nsteps;
}

size_t ct_cp_memory_limit(void)
{
    const char *e = getenv("CUTRACE_CP_MAX_MIB");
    char *end;
    unsigned long long mib = e ? strtoull(e, &end, 10) : 0;
    if (e && *e && !*end && mib)
        return (size_t)mib << 20;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (size_t)pages * (size_t)page / 2 : (size_t)1 << 32;
}

int ct_cp_build(const struct ct_report *rep, struct ct_cp_graph **out)
{
    size_t need;
    return ct_cp_build_from(rep, 0, 0, INT64_MIN, INT64_MAX, &need, out);
}

int ct_cp_build_from(const struct ct_report *rep, size_t max_bytes, size_t give_up,
                     int64_t first_index, int64_t last_index, size_t *need,
                     struct ct_cp_graph **out)
{
    *out = NULL;
    *need = 0;
    struct ct_cp_graph *g = calloc(1, sizeof(*g));
    if (!g)
        return -ENOMEM;
    g->rep = rep;
    g->first_index = first_index, g->last_index = last_index;
    g->itp = calloc(rep->nr ? rep->nr : 1, sizeof(*g->itp));
    int rc = g->itp ? 0 : -ENOMEM;
    for (size_t r = 0; r < rep->nr && !rc; r++) {
        struct ct_rank *rk = rep->rr[r].rank;
        if ((rc = ct_rank_open(rk)))
            break;
        rc = build_rank(g, &rep->rr[r], (int32_t)r);
        ct_rank_close(rk);
        size_t bytes =
            g->cappt * sizeof(*g->pt) + g->caped * sizeof(*g->ed) + g->capkeys * sizeof(*g->keys);
        double whole = (double)bytes * (double)rep->nr / (double)(r + 1);
        if (!rc && ((max_bytes && bytes > max_bytes) ||
                    (give_up && r + 1 >= 4 && r + 1 < rep->nr && whole > (double)give_up))) {
            *need = (size_t)whole;
            rc = -E2BIG;
        }
    }
    if (!rc)
        rc = collectives(g);
    if (!rc)
        rc = finish(g);
    if (!rc)
        rc = ct_cp_replay(g, NULL, 0);
    if (rc) {
        ct_cp_free(g);
        return rc;
    }
    *out = g;
    return 0;
}
