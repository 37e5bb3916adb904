/*
 * One phase for every rank's steps (ct_iterations_align).
 *
 * A rank whose steps came from repeats is cut where its own anchor says,
 * and any rotation of a repeating sequence repeats: a rank that alone
 * waits in a sync (rank 0 logging loss.item() after its forward pass)
 * starts its steps there, its peers at their first kernel. Per-iteration
 * figures compared across ranks then compare different work.
 *
 * The collectives name the same point on every rank: a step boundary is
 * "k ops after the launch of collective seq P" (or "k ops before seq S")
 * on the rank's main communicator, and the op there is the same kernel.
 * A rank's phase is the op at its boundaries and the position of the
 * collective before them in the step's cycle of collectives (P mod the
 * collectives per step). The phase most ranks share wins (a rank's own
 * sync is rank-specific work, so a tie goes to the phase cut less often at
 * a sync); annotated ranks, when there are any, set it. Every other rank
 * whose steps came from repeats is re-cut at the points that map its
 * reference's boundaries, and takes its step numbers.
 */
#include "decoder/analysis/analysis.h"
#include "decoder/analysis/iterations.h"
#include "decoder/util/keys.h"
#include "decoder/util/search.h"
#include "decoder/read/job.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* One op in launch order: kernels, copies, memsets and NCCL calls, as the
 * repeat detector sees them (repeats.c events). */
struct wop {
    int64_t t, e; /* host launch; GPU end, 0 unknown */
    uint64_t key; /* what it is: name and type, or NCCL op, bytes, comm */
    uint64_t seq; /* sequence number on the main communicator, else UINT64_MAX */
};

struct coll { /* the layout of struct ct_kv (util/keys.h): sorted by seq with ct_kv_sort */
    uint64_t seq;
    uint64_t at; /* its position in the ops */
};

struct view {
    struct wop *w;
    size_t n;
    struct coll *by_at, *by_seq; /* the main communicator's ops */
    size_t nc;
};

/* A rank's phase: the op its steps begin with and where that falls in the
 * cycle of collectives, with what the tie-break needs. */
struct phase {
    uint64_t key, pos, m;
    double sync_share;
    size_t rank;
    int annotated, ok;
};

/* Names index each rank's own table: the key hashes the text. */
static uint64_t name_key(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static uint64_t wop_t(const void *a)
{
    return (uint64_t)((const struct wop *)a)->t ^ (1ull << 63);
}

static uint64_t wop_key(const void *a)
{
    return ((const struct wop *)a)->key;
}

/* by launch, then what it is; stable (a rank's half million ops made
 * qsort's comparisons a fifth of a spilled job's report) */
static const ct_key_fn wop_order[] = {wop_t, wop_key};

static void view_free(struct view *v)
{
    free(v->w);
    free(v->by_at);
    free(v->by_seq);
    memset(v, 0, sizeof(*v));
}

static int view_build(const struct ct_rank *r, uint64_t comm, struct view *v)
{
    memset(v, 0, sizeof(*v));
    v->w = malloc((r->nops + r->nnccl + 1) * sizeof(*v->w));
    uint64_t *nk = malloc((r->nnames + 1) * sizeof(*nk)); /* name_key of each name */
    if (!v->w || !nk) {
        free(v->w);
        free(nk);
        v->w = NULL;
        return -ENOMEM;
    }
    for (size_t k = 0; k < r->nnames; k++)
        nk[k] = name_key(r->names[k]);
    nk[r->nnames] = name_key(NULL);
    for (size_t i = 0; i < r->nops; i++) {
        const struct ct_gpu_op *g = &r->ops[i];
        int comm_cls = CT_CL_IS_COMM(g->cls);
        if (g->nccl >= 0 || g->launch == INT64_MIN ||
            (!comm_cls && g->cls != CT_CL_COMPUTE && g->cls != CT_CL_MEMORY))
            continue;
        uint64_t key = nk[g->name < r->nnames ? g->name : r->nnames];
        v->w[v->n++] =
            (struct wop){g->launch, g->e, ct_mix64(g->type, key) & ~(1ull << 63), UINT64_MAX};
    }
    for (size_t i = 0; i < r->nnccl; i++) {
        const struct ct_nccl_call *o = &r->nccl[i];
        v->w[v->n++] =
            (struct wop){o->host_s, o->e,
                         ct_mix64(ct_mix64(ct_mix64(2, o->op), o->bytes), o->comm) | (1ull << 63),
                         o->comm == comm ? o->seq : UINT64_MAX};
    }
    free(nk);
    if (ct_sort_by(v->w, v->n, sizeof(*v->w), wop_order, 2)) {
        view_free(v);
        return -ENOMEM;
    }
    for (size_t i = 0; i < v->n; i++)
        v->nc += v->w[i].seq != UINT64_MAX;
    v->by_at = malloc((v->nc + 1) * sizeof(*v->by_at));
    v->by_seq = malloc((v->nc + 1) * sizeof(*v->by_seq));
    if (!v->by_at || !v->by_seq) {
        view_free(v);
        return -ENOMEM;
    }
    for (size_t i = 0, k = 0; i < v->n; i++)
        if (v->w[i].seq != UINT64_MAX)
            v->by_at[k++] = (struct coll){v->w[i].seq, i};
    memcpy(v->by_seq, v->by_at, v->nc * sizeof(*v->by_at));
    /* by sequence number, stably: a radix sort on the first 8 bytes */
    if (ct_kv_sort((struct ct_kv *)(void *)v->by_seq, v->nc)) {
        view_free(v);
        return -ENOMEM;
    }
    return 0;
}

struct key {
    const struct view *v;
    int64_t t;
    size_t at;
    uint64_t seq;
};

static int op_before(size_t i, const void *k)
{
    const struct key *q = k;
    return q->v->w[i].t < q->t;
}

static int coll_pos_before(size_t i, const void *k)
{
    const struct key *q = k;
    return q->v->by_at[i].at < q->at;
}

static int coll_seq_before(size_t i, const void *k)
{
    const struct key *q = k;
    return q->v->by_seq[i].seq < q->seq;
}

/* The first op launched at or after t (n: none). */
static size_t op_at(const struct view *v, int64_t t)
{
    struct key q = {.v = v, .t = t};
    return ct_partition(v->n, op_before, &q);
}

/* The main communicator's last op before position i (-1: none); the one
 * at or after it is the next. */
static long coll_before(const struct view *v, size_t i)
{
    struct key q = {.v = v, .at = i};
    return (long)ct_partition(v->nc, coll_pos_before, &q) - 1;
}

/* The position of the op with sequence number seq, SIZE_MAX: not seen. */
static size_t coll_at(const struct view *v, uint64_t seq)
{
    struct key q = {.v = v, .seq = seq};
    size_t lo = ct_partition(v->nc, coll_seq_before, &q);
    return lo < v->nc && v->by_seq[lo].seq == seq ? v->by_seq[lo].at : SIZE_MAX;
}

/*
 * The op on x that is op i of ref, SIZE_MAX when the collectives do not
 * place it: counted from the collective before it, or back from the one
 * after it, whichever is nearer (a rank's extra ops, a logging copy, lie
 * between them less often on the shorter side), then checked by what the
 * op is; a near op of the same kind stands in when an extra op moved it.
 */
static size_t map_op(const struct view *ref, size_t i, const struct view *x)
{
    long p = coll_before(ref, i);
    size_t from = SIZE_MAX, back = SIZE_MAX;
    if (p >= 0)
        from = coll_at(x, ref->by_at[p].seq);
    if ((size_t)(p + 1) < ref->nc)
        back = coll_at(x, ref->by_at[p + 1].seq);
    size_t kf = p >= 0 ? i - ref->by_at[p].at : SIZE_MAX;
    size_t kb = (size_t)(p + 1) < ref->nc ? ref->by_at[p + 1].at - i : SIZE_MAX;
    size_t j;
    if (from != SIZE_MAX && (kf <= kb || back == SIZE_MAX))
        j = from + kf;
    else if (back != SIZE_MAX && back >= kb)
        j = back - kb;
    else
        return SIZE_MAX;
    uint64_t want = ref->w[i].key;
    for (size_t d = 0; d <= 3; d++) {
        if (j + d < x->n && x->w[j + d].key == want)
            return j + d;
        if (d && j >= d && j - d < x->n && x->w[j - d].key == want)
            return j - d;
    }
    return SIZE_MAX;
}

/* 1 when a sync of the rank ended exactly at t (its step was cut there). */
static int at_sync_end(const struct ct_rank *r, int64_t t)
{
    const struct ct_ivset *s = &r->procs[0]->sync;
    long k = ct_ivset_find(s, t - 1);
    return k >= 0 && s->v[k].e == t;
}

/* The rank's phase: the most common (first op, position of the collective
 * before it) over its steps. */
static int phase_of(const struct ct_rank_result *x, const struct view *v, struct phase *ph)
{
    memset(ph, 0, sizeof(*ph));
    if (x->niters < 2 || !v->nc)
        return 0;
    uint64_t *per = malloc(x->niters * sizeof(*per));
    uint64_t *sig = malloc(x->niters * sizeof(*sig));
    if (!per || !sig) {
        free(per);
        free(sig);
        return -ENOMEM;
    }
    size_t k = 0, ns = 0, cut = 0;
    for (size_t i = 0; i < x->niters; i++) {
        size_t a = op_at(v, x->iters[i].s), b = op_at(v, x->iters[i].e);
        long p = coll_before(v, a), q = coll_before(v, b);
        per[k++] = (uint64_t)(q - p);
        cut += at_sync_end(x->rank, x->iters[i].s);
    }
    int rc = ct_u64_sort(per, k);
    uint64_t m = rc ? 0 : per[k / 2];
    for (size_t i = 0; m && i < x->niters; i++) {
        size_t a = op_at(v, x->iters[i].s);
        long p = coll_before(v, a);
        if (a < v->n && p >= 0)
            sig[ns++] = ct_mix64(v->w[a].key, v->by_at[p].seq % m);
    }
    if (ns && !rc)
        rc = ct_u64_sort(sig, ns);
    if (ns && !rc) {
        size_t best = 0, run = 0;
        for (size_t i = 0; i < ns; i++) {
            run = i && sig[i] == sig[i - 1] ? run + 1 : 1;
            if (run > best)
                best = run, ph->key = sig[i];
        }
        ph->ok = best * 2 > ns;
    }
    ph->m = m;
    ph->sync_share = (double)cut / (double)x->niters;
    free(per);
    free(sig);
    return rc;
}

static int cmp_phase(const void *a, const void *b)
{
    const struct phase *x = a, *y = b;
    if (x->key != y->key)
        return (x->key > y->key) - (x->key < y->key);
    if (x->m != y->m)
        return (x->m > y->m) - (x->m < y->m);
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Re-cuts x at the ops that map ref's boundaries. 1 when done. */
static int recut(const struct ct_rank_result *ref, const struct view *rv, struct ct_rank_result *x,
                 const struct view *xv)
{
    size_t n = ref->niters;
    size_t *at = malloc((n + 1) * sizeof(*at));
    struct ct_iter *it = malloc((n + 1) * sizeof(*it));
    if (!at || !it) {
        free(at);
        free(it);
        return -ENOMEM;
    }
    for (size_t k = 0; k < n; k++) {
        size_t i = op_at(rv, ref->iters[k].s);
        at[k] = i < rv->n ? map_op(rv, i, xv) : SIZE_MAX;
    }
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
        if (at[k] == SIZE_MAX)
            continue;
        int64_t s = xv->w[at[k]].t, e;
        if (k + 1 < n && ref->iters[k].e == ref->iters[k + 1].s) {
            if (at[k + 1] == SIZE_MAX)
                continue;
            e = xv->w[at[k + 1]].t;
        } else {
            /* the step runs until the work it launched is done: to the end
             * of the op that maps ref's last op of the step */
            size_t last = op_at(rv, ref->iters[k].e);
            size_t j = last > 0 ? map_op(rv, last - 1, xv) : SIZE_MAX;
            if (j == SIZE_MAX || j < at[k])
                continue;
            e = xv->w[j].t;
            for (size_t q = at[k]; q <= j; q++)
                if (xv->w[q].e > e)
                    e = xv->w[q].e;
        }
        const struct ct_ivset *cov = x->rank->cover;
        long w = cov ? ct_ivset_find(cov, s) : 0;
        if (e <= s || (cov && (w < 0 || e > cov->v[w].e)))
            continue;
        it[m++] = (struct ct_iter){s, e, ref->iters[k].index, 0};
    }
    free(at);
    /* it replaces x's own only when it keeps most of them */
    if (m < 2 || 5 * m < 4 * x->niters) {
        free(it);
        return 0;
    }
    free(x->iters);
    x->iters = it;
    x->niters = m;
    return 1;
}

int ct_iterations_align(struct ct_rank_result *rr, size_t n, uint64_t comm)
{
    if (!comm || n < 2)
        return 0;
    /* only iterations found from the work that repeats are recut below:
     * a job whose ranks all name their steps has nothing to align (and
     * no rank's views to build: a fifth of a 2-rank report) */
    size_t found = 0;
    for (size_t i = 0; i < n; i++)
        found += rr[i].iter_src == CT_ITER_PERIOD;
    if (!found)
        return 0;
    struct phase *ph = calloc(n, sizeof(*ph));
    if (!ph)
        return -ENOMEM;
    int rc = 0;
    size_t np = 0, nann = 0;
    /* the first rank with a phase keeps its view: the reference is
     * usually it (the lowest rank of the phase most ranks share), whose
     * view is then not built twice */
    struct view kept = {0};
    size_t kept_rank = SIZE_MAX;
    for (size_t i = 0; i < n && !rc; i++) {
        if (rr[i].iter_src == CT_ITER_NONE)
            continue;
        struct view v;
        if ((rc = ct_rank_open(rr[i].rank)))
            break;
        rc = view_build(rr[i].rank, comm, &v);
        ct_rank_close(rr[i].rank);
        if (rc)
            break;
        struct phase p;
        rc = phase_of(&rr[i], &v, &p);
        if (!rc && p.ok && kept_rank == SIZE_MAX) {
            kept = v;
            kept_rank = i;
        } else {
            view_free(&v);
        }
        if (!rc && p.ok) {
            p.rank = i;
            p.annotated = rr[i].iter_src != CT_ITER_PERIOD;
            nann += p.annotated;
            ph[np++] = p;
        }
    }
    if (rc || np < 2) {
        view_free(&kept);
        free(ph);
        return rc;
    }
    /* the phase most ranks share: annotated ranks' when there are any */
    qsort(ph, np, sizeof(*ph), cmp_phase);
    size_t best = SIZE_MAX, best_n = 0;
    double best_sync = 0;
    for (size_t i = 0; i < np;) {
        size_t j = i, cnt = 0;
        double sync = 0;
        while (j < np && ph[j].key == ph[i].key && ph[j].m == ph[i].m) {
            cnt += nann ? ph[j].annotated : 1;
            sync += ph[j].sync_share;
            j++;
        }
        sync /= (double)(j - i);
        int tie = cnt == best_n && sync <= best_sync + 1e-9 && sync >= best_sync - 1e-9;
        if (cnt && (cnt > best_n || (cnt == best_n && sync < best_sync - 1e-9) ||
                    (tie && ph[i].rank < ph[best].rank)))
            best = i, best_n = cnt, best_sync = sync;
        i = j;
    }
    size_t ref = ph[best].rank;
    for (size_t i = best; i < np && ph[i].key == ph[best].key; i++)
        if (!nann || ph[i].annotated) {
            ref = ph[i].rank; /* the group's lowest rank (ties go to the lower) */
            break;
        }
    struct view rv;
    if (ref == kept_rank) {
        rv = kept;
    } else {
        view_free(&kept);
        if (!(rc = ct_rank_open(rr[ref].rank))) {
            rc = view_build(rr[ref].rank, comm, &rv);
            ct_rank_close(rr[ref].rank);
        }
    }
    if (rc) {
        free(ph);
        return rc;
    }
    for (size_t i = 0; i < np && !rc; i++) {
        struct ct_rank_result *x = &rr[ph[i].rank];
        if (ph[i].annotated || (ph[i].key == ph[best].key && ph[i].m == ph[best].m) ||
            ph[i].m != ph[best].m)
            continue;
        struct view xv;
        if ((rc = ct_rank_open(x->rank)))
            break;
        rc = view_build(x->rank, comm, &xv);
        ct_rank_close(x->rank);
        if (rc)
            break;
        int done = recut(&rr[ref], &rv, x, &xv);
        rc = done < 0 ? done : 0;
        view_free(&xv);
    }
    view_free(&rv);
    free(ph);
    return rc;
}
