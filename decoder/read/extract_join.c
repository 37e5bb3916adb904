/*
 * The end of a file's streaming extraction (decoder/read/extract.c): joins by
 * correlation id, the GPU-time fallbacks of NCCL ops (extract_nccl.c), and the ordering of
 * GPU intervals, NCCL ops and steps by their record's start, with the
 * clock offset applied.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/read/extract_int.h"
#include "decoder/util/search.h"
#include "decoder/util/stats.h"
#include "src/reader.h"
#include "decoder/read/life.h"

/*
 * One interval per op (tracefile.h ct_gpu_source_rank): where GPU records
 * of one correlation id and type come from two sources (an event pair and
 * NCCL's profiler plugin around one collective), those of the lesser
 * source are dropped (at the end of join, as NCCL ops' own intervals are)
 * and counted (coverage superseded). gcorr sorted by correlation id.
 */
static void drop_superseded(struct ct_extraction *x)
{
    struct ct_kv *gc = x->gcorr.p;
    struct ct_gpu_op *ops = x->ops.p;
    const uint8_t *src = x->gsrc.p;
    for (size_t a = 0, b; a + 1 < x->gcorr.n; a = b) {
        /* a run of one key (nearly every one): on to the next */
        b = a + 1;
        if (gc[b].key != gc[a].key)
            continue;
        while (b < x->gcorr.n && gc[b].key == gc[a].key)
            b++;
        if (!gc[a].key)
            continue;
        for (size_t i = a; i < b; i++) {
            if (gc[i].val == NONE || gc[i].val >= x->gsrc.n)
                continue;
            int mine = ct_gpu_source_rank(src[gc[i].val]);
            for (size_t j = a; j < b; j++)
                if (j != i && gc[j].val != NONE && gc[j].val < x->gsrc.n &&
                    ops[gc[j].val].type == ops[gc[i].val].type &&
                    ct_gpu_source_rank(src[gc[j].val]) > mine) {
                    ops[gc[i].val].name = SYNTHETIC - 1; /* dropped at the end of join */
                    /* counted as the source of no op: the coverage says
                     * what the figures rest on */
                    struct ct_coverage *c = &x->p->cov;
                    uint8_t s = src[gc[i].val];
                    uint64_t *by = s == CT_SRC_CUPTI         ? &c->gpu_cupti
                                   : s == CT_SRC_NCCL_PLUGIN ? &c->gpu_plugin
                                                             : &c->gpu_events;
                    if (*by)
                        (*by)--;
                    if (s == CT_SRC_EVENTS_BLOCKING && c->gpu_events_blocking)
                        c->gpu_events_blocking--;
                    c->superseded++;
                    gc[i].val = NONE;
                    break;
                }
        }
    }
}

/* A launch that wants a GPU record: its stream (the call's), host start,
 * and its GPU interval's end (INT64_MIN: none arrived). */
struct pend {
    uint64_t stream;
    int64_t launch, end;
};

static int cmp_pend(const void *a, const void *b)
{
    const struct pend *x = a, *y = b;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    return (x->launch > y->launch) - (x->launch < y->launch);
}

/*
 * A trace salvaged from a process that died with GPU times still queued in
 * it (CUPTI's buffers, event pairs not yet read: CT_SALVAGE_GPU_PENDING):
 * on each stream, the ops launched after the last one whose GPU interval
 * arrived, that have none (the rule of ct_trace_undelivered), ran, or were
 * running, but their time was never delivered (a stream runs its ops in
 * order: an untimed op before a delivered one on its stream was not timed
 * for another reason; on a stream none of whose ops was timed, those
 * launched after the last delivered launch of any stream). Counts them (p->undelivered) and says
 * from when the process's record is incomplete: on the host, the earliest one's launch
 * (p->host_cut: every op launched before it has its GPU time, or never
 * had one); on the GPU, the earliest time one of them can have started
 * (p->gpu_cut): its launch, or the end of the last delivered op on its
 * stream when that is later. Streams are the calls' (a GPU record's stream
 * id may name the legacy stream differently). Raw times; timed, calls and
 * gcorr sorted by correlation id.
 */
static int undelivered(struct ct_extraction *x)
{
    struct ct_proc *p = x->p;
    const struct ct_kv *tm = x->timed.p, *ca = x->calls.p, *gc = x->gcorr.p;
    const struct ct_gpu_op *ops = x->ops.p;
    struct pend *u = malloc((x->timed.n ? x->timed.n : 1) * sizeof(*u));
    if (!u)
        return -ENOMEM;
    size_t ic = 0, ig = 0, n = 0;
    for (size_t i = 0; i < x->timed.n; i++) {
        if (!ct_kv_seek(&x->calls, &ic, tm[i].key))
            continue;
        struct pend e = {tm[i].val, (int64_t)ca[ic].val, INT64_MIN};
        if (ct_kv_seek(&x->gcorr, &ig, tm[i].key)) {
            e.end = e.launch; /* delivered; its latest op's end when kept */
            for (size_t g = ig; g < x->gcorr.n && gc[g].key == tm[i].key; g++)
                if (gc[g].val != NONE && ops[gc[g].val].e > e.end)
                    e.end = ops[gc[g].val].e;
        }
        u[n++] = e;
    }
    int64_t any = INT64_MIN; /* the last delivered launch on any stream */
    for (size_t k = 0; k < n; k++)
        if (u[k].end != INT64_MIN && u[k].launch > any)
            any = u[k].launch;
    qsort(u, n, sizeof(*u), cmp_pend);
    uint64_t count = 0;
    int64_t host = INT64_MAX, gpu = INT64_MAX;
    for (size_t a = 0, b; a < n; a = b) {
        size_t last = SIZE_MAX; /* the stream's last delivered launch */
        int64_t end = INT64_MIN;
        for (b = a; b < n && u[b].stream == u[a].stream; b++)
            if (u[b].end != INT64_MIN) {
                last = b;
                if (u[b].end > end)
                    end = u[b].end;
            }
        for (size_t k = last == SIZE_MAX ? a : last + 1; k < b; k++) {
            if (last == SIZE_MAX && u[k].launch <= any)
                continue; /* a stream nothing timed: only what followed the last delivery */
            count++;
            if (u[k].launch < host)
                host = u[k].launch;
            int64_t g = end > u[k].launch ? end : u[k].launch;
            if (g < gpu)
                gpu = g;
        }
    }
    free(u);
    if (count) {
        p->undelivered = count;
        p->host_cut = host;
        p->gpu_cut = gpu;
    }
    return 0;
}

/*
 * Joins every GPU interval to the call that enqueued it (an NCCL op's or an
 * API record's correlation id) and classifies it; counts untimed launches;
 * drops NCCL ops' own intervals where a GPU record exists. All key arrays
 * sorted by correlation id.
 */
static int join(struct ct_extraction *x, const uint8_t *name_op)
{
    struct ct_proc *p = x->p;
    struct ct_gpu_op *ops = x->ops.p;
    const struct ct_kv *gc = x->gcorr.p;
    const struct ct_nccl_call *nccl = x->nccl.p;
    struct ct_vec ncorr = {0}; /* kv (corr, NCCL op index) */
    for (size_t i = 0; i < x->nccl.n; i++)
        if (ct_kv_push(&ncorr, nccl[i].corr, i)) {
            free(ncorr.p);
            return -ENOMEM;
        }
    if (ct_kv_sort(ncorr.p, ncorr.n) || ct_kv_sort(x->gcorr.p, x->gcorr.n) ||
        ct_kv_sort(x->gend.p, x->gend.n) || ct_kv_sort(x->calls.p, x->calls.n) ||
        ct_kv_sort(x->timed.p, x->timed.n) || ct_u64_sort(x->graphs.p, x->graphs.n)) {
        free(ncorr.p);
        return -ENOMEM;
    }
    drop_superseded(x);
    size_t ia = 0, in = 0, igr = 0;
    const uint64_t *gr = x->graphs.p;
    for (size_t i = 0; i < x->gcorr.n; i++) {
        if (gc[i].val == NONE)
            continue;
        struct ct_gpu_op *g = &ops[gc[i].val];
        uint64_t corr = gc[i].key;
        const struct ct_nccl_call *call = NULL;
        g->launch = INT64_MIN;
        g->nccl = -1;
        while (igr < x->graphs.n && gr[igr] < corr) /* both by corr */
            igr++;
        g->graph = g->type == CT_GPU_GRAPH || (corr && igr < x->graphs.n && gr[igr] == corr);
        /* ct_trace_call: never for id 0; an id on both an NCCL and an API
         * record (not written by the shim) joins the NCCL op */
        if (corr && ct_kv_seek(&ncorr, &in, corr)) {
            call = &nccl[((const struct ct_kv *)ncorr.p)[in].val];
            g->launch = call->host_s;
            g->nccl = (int32_t)((const struct ct_kv *)ncorr.p)[in].val;
            if (!g->stream) /* the plugin's interval knows no stream: its op's */
                g->stream = call->stream;
        } else if (corr && ct_kv_seek(&x->calls, &ia, corr)) {
            g->launch = (int64_t)((const struct ct_kv *)x->calls.p)[ia].val;
        }
        uint8_t kop = name_op[g->name];
        if (g->type == CT_GPU_MEMCPY || g->type == CT_GPU_MEMSET)
            g->cls = CT_CL_MEMORY;
        else if (g->type == CT_GPU_NCCL || call)
            g->cls = CT_CL_OTHER, g->op = call ? call->op : kop;
        else if ((g->op = kop) != 0)
            g->cls = CT_CL_OTHER;
        else
            g->cls = CT_CL_COMPUTE;
    }
    /* launches and copies without any GPU record (of any type) */
    size_t ig = 0;
    const struct ct_kv *tm = x->timed.p;
    for (size_t i = 0; i < x->timed.n; i++)
        if (!ct_kv_seek(&x->gcorr, &ig, tm[i].key))
            p->cov.untimed++;
    if (x->rd->salvaged && (x->rd->salvage.flags & CT_SALVAGE_GPU_PENDING) && undelivered(x) != 0) {
        free(ncorr.p);
        return -ENOMEM;
    }
    /* NCCL ops without a GPU record of their own: their group's, or the
     * kernel launched inside their call (kept in nccl_fb) */
    uint8_t *fell = calloc(x->nccl.n ? x->nccl.n : 1, 1);
    if (!fell) {
        free(ncorr.p);
        return -ENOMEM;
    }
    ig = 0;
    const struct ct_kv *nc = ncorr.p;
    for (size_t i = 0; i < ncorr.n; i++) {
        if (nc[i].key && ct_kv_seek(&x->gcorr, &ig, nc[i].key))
            continue;
        uint64_t o = ct_nccl_fallback(x, nc[i].val);
        if (o == NONE)
            o = ct_nccl_copies(x, nc[i].val);
        if (o != NONE) {
            if (ct_nccl_link(x, o, nc[i].val)) {
                free(fell);
                free(ncorr.p);
                return -ENOMEM;
            }
            fell[nc[i].val] = 1;
        }
    }
    if (ct_nccl_link_nested(x)) {
        free(fell);
        free(ncorr.p);
        return -ENOMEM;
    }
    ct_nccl_link_groups(x);
    ops = x->ops.p;
    /* an NCCL op's own interval stands only without a GPU record */
    ig = 0;
    uint64_t *synth = x->nsynth.p;
    for (size_t i = 0; i < ncorr.n; i++) {
        uint64_t o = synth[nc[i].val];
        if (o == NONE)
            continue;
        if (ct_kv_seek(&x->gcorr, &ig, nc[i].key) || fell[nc[i].val])
            ops[o].name = SYNTHETIC - 1; /* dropped below */
        else
            p->cov.gpu_nccl_record++;
    }
    free(fell);
    free(ncorr.p);
    size_t w = 0;
    for (size_t i = 0; i < x->ops.n; i++)
        if (ops[i].name != SYNTHETIC - 1) {
            if (w != i) /* most traces drop none: no copy of the array onto itself */
                ops[w] = ops[i];
            w++;
        }
    x->ops.n = w;
    return 0;
}

/* An op's order key: a GPU record's GPU start, an NCCL record's host start
 * for an op made from it (compared unsigned, as the radix sort does). */
static inline uint64_t op_key(const struct ct_gpu_op *g)
{
    return (uint64_t)(g->name == SYNTHETIC ? g->launch : g->s);
}

/*
 * Stable sort of the ops by op_key, in place. GPU records come in
 * completion order, a few places out of start order: an insertion sort
 * finishes them while its moves stay within two per op (no key array, no
 * permutation: the largest array of a report is passed over once). Beyond
 * that budget, the sorted permutation of the keys (radix) is applied cycle
 * by cycle, still in place (no second array of the largest kind). 0 or
 * -ENOMEM.
 */
static int order_ops(struct ct_gpu_op *ops, size_t no)
{
    size_t budget = 2 * no, i = 1;
    for (; i < no && budget; i++) {
        uint64_t k = op_key(&ops[i]);
        if (op_key(&ops[i - 1]) <= k)
            continue;
        struct ct_gpu_op x = ops[i];
        size_t m = i;
        for (; m > 0 && op_key(&ops[m - 1]) > k && budget; m--, budget--)
            ops[m] = ops[m - 1];
        ops[m] = x; /* moved only past greater keys: still stable */
    }
    if (i >= no && budget)
        return 0;
    struct ct_kv *perm = malloc((no ? no : 1) * sizeof(*perm));
    if (!perm)
        return -ENOMEM;
    for (i = 0; i < no; i++)
        perm[i].key = op_key(&ops[i]);
    if (ct_kv_order(perm, no)) {
        free(perm);
        return -ENOMEM;
    }
    /* cycle by cycle; a placed slot gets perm[j].val = j */
    for (i = 0; i < no; i++) {
        if (perm[i].val == i)
            continue;
        struct ct_gpu_op first = ops[i];
        size_t j = i;
        for (;;) {
            size_t k = perm[j].val;
            perm[j].val = j;
            if (k == i) {
                ops[j] = first;
                break;
            }
            ops[j] = ops[k];
            j = k;
        }
    }
    free(perm);
    return 0;
}

/* Stable order of n items by (raw start time key, file order): items are
 * in file order, so a stable sort by key. perm[new] = old. */
static uint64_t ev_event(const void *e)
{
    return ((const struct event_call *)e)->event;
}

static uint64_t ev_time(const void *e)
{
    return (uint64_t)((const struct event_call *)e)->t ^ (1ull << 63);
}

static uint64_t edge_wait(const void *e)
{
    return (uint64_t)((const struct ct_evedge *)e)->wait ^ (1ull << 63);
}

static uint64_t edge_rec(const void *e)
{
    return (uint64_t)((const struct ct_evedge *)e)->rec ^ (1ull << 63);
}

/* The index + 1 of the latest of the records r (sorted by event, then
 * time) of `event` at or before t, or 0 (never recorded by then: nothing
 * to wait for, as in CUDA). */
struct rec_key {
    const struct event_call *r;
    uint64_t event;
    int64_t t;
};
static int rec_before(size_t i, const void *ctx)
{
    const struct rec_key *k = ctx;
    return k->r[i].event < k->event || (k->r[i].event == k->event && k->r[i].t <= k->t);
}

static size_t latest_record(const struct event_call *r, size_t n, uint64_t event, int64_t t)
{
    const struct rec_key k = {r, event, t};
    size_t lo = ct_partition(n, rec_before, &k); /* the first record after (event, t) */
    return lo && r[lo - 1].event == event ? lo : 0;
}

/* Each wait joined to the latest record of its event at or before it (a
 * record later moves the event; a wait on an event never recorded in the
 * trace, or recorded only after, has nothing to wait for, as in CUDA) into
 * x->p->edges, by wait time; x->evr is sorted by (event, time). 0 or
 * -ENOMEM. */
static int event_edges(struct ct_extraction *x, int64_t off)
{
    static const ct_key_fn edge_order[] = {edge_wait, edge_rec};
    struct ct_proc *p = x->p;
    if (!x->evw.n || !x->evr.n)
        return 0;
    const struct event_call *r = x->evr.p, *w = x->evw.p;
    p->edges = malloc(x->evw.n * sizeof(*p->edges));
    if (!p->edges)
        return -ENOMEM;
    for (size_t i = 0; i < x->evw.n; i++) {
        size_t k = latest_record(r, x->evr.n, w[i].event, w[i].t);
        if (k)
            p->edges[p->nedges++] =
                (struct ct_evedge){r[k - 1].t + off, w[i].t + off, r[k - 1].stream, w[i].stream};
    }
    return ct_sort_by(p->edges, p->nedges, sizeof(*p->edges), edge_order, 2);
}

static uint64_t sync_time(const void *e)
{
    return (uint64_t)((const struct ct_syncon *)e)->t ^ (1ull << 63);
}

/* What each host sync waited for (struct ct_syncon) into x->p->syncs, by
 * start: an event's sync joins the latest record of its event before it,
 * as a wait does (its stream, and the work launched there before the
 * record); one whose event has no record in the trace (recorded before
 * the capture began) is taken to wait for every stream. 0 or -ENOMEM. */
static int sync_waits(struct ct_extraction *x, int64_t off)
{
    static const ct_key_fn order[] = {sync_time};
    struct ct_proc *p = x->p;
    const struct event_call *v = x->evs.p, *r = x->evr.p;
    if (!x->evs.n)
        return 0;
    p->syncs = malloc(x->evs.n * sizeof(*p->syncs));
    if (!p->syncs)
        return -ENOMEM;
    for (size_t i = 0; i < x->evs.n; i++) {
        struct ct_syncon *o = &p->syncs[p->nsyncs++];
        *o = (struct ct_syncon){v[i].t + off, v[i].t + off, v[i].stream};
        size_t k = v[i].event ? latest_record(r, x->evr.n, v[i].event, v[i].t) : 0;
        if (k)
            o->stream = r[k - 1].stream, o->rec = r[k - 1].t + off;
        else if (v[i].event)
            o->stream = 0;
    }
    return ct_sort_by(p->syncs, p->nsyncs, sizeof(*p->syncs), order, 1);
}

int ct_extract_finish(struct ct_extraction *x)
{
    struct ct_proc *p = x->p;
    int rc = 0;
    /* the op of each kernel name, from the final strings */
    size_t nnames = x->name_sid.n;
    const uint32_t *sid = x->name_sid.p;
    uint8_t *name_op = malloc(nnames ? nnames : 1);
    if (!name_op)
        return -ENOMEM;
    for (size_t i = 0; i < nnames; i++)
        name_op[i] = (uint8_t)ct_nccl_op_from_kernel(ct_reader_string(x->rd, sid[i]));
    rc = join(x, name_op);
    free(name_op);
    if (rc)
        return rc;
    /* the join keys are done with: their memory serves the ordering below
     * (a lower peak, fewer fresh pages) */
    struct ct_vec *keys[] = {&x->gcorr, &x->calls, &x->timed, &x->gend,
                             &x->gendv, &x->nkl,   &x->graphs};
    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
        free(keys[k]->p);
        *keys[k] = (struct ct_vec){0};
    }

    /* NCCL ops by host start; ops link to them through inv */
    struct ct_kv *perm = NULL; /* perm[new].val = old */
    size_t *inv = NULL;
    size_t nn = x->nccl.n;
    if ((rc = ct_kv_order(x->nord.p, nn)))
        goto out;
    const struct ct_kv *nperm = x->nord.p;
    inv = malloc((nn ? nn : 1) * sizeof(*inv));
    p->nccl = malloc((nn ? nn : 1) * sizeof(*p->nccl));
    if (!inv || !p->nccl) {
        rc = -ENOMEM;
        goto out;
    }
    const struct ct_nccl_call *nsrc = x->nccl.p;
    for (size_t i = 0; i < nn; i++) {
        p->nccl[i] = nsrc[nperm[i].val];
        inv[nperm[i].val] = i;
    }
    p->nnccl = nn;

    /* ops by their record's start, in place */
    size_t no = x->ops.n;
    struct ct_gpu_op *ops = x->ops.p;
    if ((rc = order_ops(ops, no)))
        goto out;
    p->ops = ops; /* x->ops's array, now p's */
    x->ops.p = NULL;
    x->ops.n = x->ops.cap = 0;
    uint32_t *renum = calloc(nnames ? nnames : 1, sizeof(*renum));
    p->names = calloc(nnames ? nnames : 1, sizeof(*p->names));
    if (!renum || !p->names) {
        free(renum);
        rc = -ENOMEM;
        goto out;
    }
    const int64_t off = p->clock_offset;
    for (size_t i = 0; i < no; i++) {
        struct ct_gpu_op *g = &ops[i];
        if (g->name == SYNTHETIC) {
            g->name = 0;
        } else {
            if (!renum[g->name]) {
                p->names[p->nnames] = strdup(ct_reader_string(x->rd, sid[g->name]));
                if (!p->names[p->nnames]) {
                    rc = -ENOMEM;
                    break;
                }
                renum[g->name] = (uint32_t)++p->nnames;
            }
            g->name = renum[g->name] - 1;
        }
        if (g->nccl >= 0)
            g->nccl = (int32_t)inv[g->nccl];
        g->s += off;
        g->e += off;
        if (g->launch != INT64_MIN)
            g->launch += off;
    }
    if (p->undelivered) {
        p->host_cut += off;
        p->gpu_cut += off;
    }
    free(renum);
    if (rc)
        goto out;
    p->nops = no;
    for (size_t i = 0; i < nn; i++) {
        struct ct_nccl_call *n = &p->nccl[i];
        n->host_s += off;
        n->host_e += off;
        if (n->e) {
            n->s += off;
            n->e += off;
        }
    }

    /* steps in record order */
    size_t ns = x->steps.n;
    free(perm);
    perm = malloc((ns ? ns : 1) * sizeof(*perm));
    if (!perm) {
        rc = -ENOMEM;
        goto out;
    }
    const struct ct_range *st = x->steps.p;
    for (size_t i = 0; i < ns; i++)
        perm[i].key = (uint64_t)st[i].s;
    if ((rc = ct_kv_order(perm, ns)))
        goto out;
    p->steps = malloc((ns ? ns : 1) * sizeof(*p->steps));
    if (!p->steps) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < ns; i++) {
        p->steps[i] = st[perm[i].val];
        p->steps[i].s += off;
        p->steps[i].e += off;
    }
    p->nsteps = ns;

    p->launches = x->launches.p;
    p->nlaunches = x->launches.n;
    x->launches.p = NULL;
    for (size_t i = 0; i < p->nlaunches; i++)
        p->launches[i] += off;
    if ((rc = ct_i64_sort(p->launches, p->nlaunches)))
        goto out;
    struct ct_ivset *sets[] = {&p->sync, &p->data_wait, &p->ckpt, &p->file_read, &p->htod};
    for (size_t k = 0; k < sizeof(sets) / sizeof(sets[0]); k++) {
        for (size_t i = 0; i < sets[k]->n; i++) {
            sets[k]->v[i].s += off;
            sets[k]->v[i].e += off;
        }
        ct_ivset_normalize(sets[k]);
    }
    if ((rc = ct_calls_finish(&x->bcalls, &p->cuda_call, off)))
        goto out;
    static const ct_key_fn rec_order[] = {ev_event, ev_time};
    if ((rc = ct_sort_by(x->evr.p, x->evr.n, sizeof(struct event_call), rec_order, 2)) ||
        (rc = event_edges(x, off)) || (rc = sync_waits(x, off)))
        goto out;
    rc = ct_capture_finish(p, off);
    ct_life_finish(&p->life, off);
    if (p->last_ns != INT64_MIN)
        p->last_ns += off;
out:
    free(perm);
    free(inv);
    return rc;
}
