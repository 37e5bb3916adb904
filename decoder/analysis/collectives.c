/*
 * Cross-rank matching of NCCL ops, the collective table, pipeline topology
 * and stragglers (definitions: docs/report.md).
 *
 * Matching keys: a collective by (comm_hash, seq) (seq counts collectives per
 * communicator); a Send by (comm_hash, its comm rank, peer, seq) and a Recv
 * by (comm_hash, peer, its comm rank, seq) (seq counts per communicator,
 * peer and direction), so the k-th Send A->B meets the k-th Recv on B from A.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/analysis.h"
#include "decoder/util/keys.h"
#include "decoder/util/stats.h"

struct ct_match_key ct_nccl_match_key(const struct ct_nccl_call *o)
{
    struct ct_match_key k = {o->comm, o->seq, -1, -1};
    if (o->op == CT_NCCL_OP_SEND)
        k.src = o->comm_rank, k.dst = o->peer;
    else if (o->op == CT_NCCL_OP_RECV)
        k.src = o->peer, k.dst = o->comm_rank;
    return k;
}

int ct_match_key_cmp(const struct ct_match_key *x, const struct ct_match_key *y)
{
    if (x->comm != y->comm)
        return x->comm < y->comm ? -1 : 1;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    if (x->dst != y->dst)
        return x->dst < y->dst ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

struct key {
    struct ct_match_key m;
    uint32_t rank; /* index into job->ranks */
    uint32_t op;   /* index into that rank's nccl[] */
};

static int cmp_key(const void *a, const void *b)
{
    const struct key *x = a, *y = b;
    int c = ct_match_key_cmp(&x->m, &y->m);
    return c ? c : (x->rank > y->rank) - (x->rank < y->rank);
}

/* The order of cmp_key and cmp_ref below, for ct_sort_by (a radix sort;
 * qsort stays the fallback when that is out of memory). */
static uint64_t signed_key(int64_t x)
{
    return (uint64_t)x ^ (UINT64_C(1) << 63);
}
static uint64_t key_comm(const void *e)
{
    return ((const struct key *)e)->m.comm;
}
static uint64_t key_src(const void *e)
{
    return signed_key(((const struct key *)e)->m.src);
}
static uint64_t key_dst(const void *e)
{
    return signed_key(((const struct key *)e)->m.dst);
}
static uint64_t key_seq(const void *e)
{
    return ((const struct key *)e)->m.seq;
}
/* then rank: the keys are built in rank order */
static const ct_key_fn key_order[] = {key_comm, key_src, key_dst, key_seq};

static int is_p2p(int op)
{
    return op == CT_NCCL_OP_SEND || op == CT_NCCL_OP_RECV;
}

/* Groups of matched ops, as index ranges into the sorted key array. */
struct ct_coll_match {
    struct key *k;
    size_t n;
};

static int build_keys(struct ct_job *job, struct ct_coll_match *m)
{
    size_t n = 0;
    for (size_t r = 0; r < job->nranks; r++)
        for (size_t i = 0; i < job->ranks[r].nnccl; i++)
            n += job->ranks[r].nccl[i].e != 0;
    m->k = malloc((n ? n : 1) * sizeof(*m->k));
    if (!m->k)
        return -ENOMEM;
    m->n = 0;
    for (size_t r = 0; r < job->nranks; r++)
        for (size_t i = 0; i < job->ranks[r].nnccl; i++) {
            const struct ct_nccl_call *o = &job->ranks[r].nccl[i];
            if (!o->e)
                continue;
            m->k[m->n++] = (struct key){ct_nccl_match_key(o), (uint32_t)r, (uint32_t)i};
        }
    if (ct_sort_by(m->k, m->n, sizeof(*m->k), key_order, 4))
        qsort(m->k, m->n, sizeof(*m->k), cmp_key);
    return 0;
}

static int same(const struct key *a, const struct key *b)
{
    return !ct_match_key_cmp(&a->m, &b->m);
}

#define OP(job, k) (&(job)->ranks[(k)->rank].nccl[(k)->op])

void ct_coll_match_free(struct ct_coll_match *m)
{
    if (m)
        free(m->k);
    free(m);
}

int ct_collectives_match(struct ct_report *rep)
{
    struct ct_job *job = rep->job;
    struct ct_coll_match *mp = calloc(1, sizeof(*mp));
    if (!mp || build_keys(job, mp)) {
        free(mp);
        return -ENOMEM;
    }
    rep->cmatch = mp;
    struct ct_coll_match m = *mp;
    for (size_t i = 0; i < m.n;) {
        size_t j = i;
        int64_t maxs = INT64_MIN;
        while (j < m.n && same(&m.k[j], &m.k[i])) {
            if (OP(job, &m.k[j])->s > maxs)
                maxs = OP(job, &m.k[j])->s;
            j++;
        }
        if (j - i >= 2)
            for (size_t k = i; k < j; k++)
                OP(job, &m.k[k])->all_s = maxs;
        else if (is_p2p(OP(job, &m.k[i])->op))
            job->ranks[m.k[i].rank].cov.unmatched_p2p++;
        i = j;
    }
    return 0;
}

static double bus_factor(int op, int n)
{
    if (n <= 0)
        return 1;
    switch (op) {
    case CT_NCCL_OP_ALLREDUCE: return 2.0 * (n - 1) / n;
    case CT_NCCL_OP_ALLGATHER:
    case CT_NCCL_OP_REDUCESCATTER:
    case CT_NCCL_OP_ALLTOALL:
    case CT_NCCL_OP_GATHER:
    case CT_NCCL_OP_SCATTER: return (double)(n - 1) / n;
    default: return 1;
    }
}

struct ref {
    int lib, op, nranks;
    uint64_t bytes;
    const struct ct_nccl_call *o;
};

static int cmp_ref(const void *a, const void *b)
{
    const struct ref *x = a, *y = b;
    if (x->lib != y->lib)
        return x->lib - y->lib;
    if (x->op != y->op)
        return x->op - y->op;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? -1 : 1;
    return x->nranks - y->nranks;
}

static uint64_t ref_op(const void *e)
{
    const struct ref *r = e;
    return signed_key(r->lib * 256 + r->op); /* NCCL's rows first, then NVSHMEM's */
}
static uint64_t ref_bytes(const void *e)
{
    return ((const struct ref *)e)->bytes;
}
static uint64_t ref_nranks(const void *e)
{
    return signed_key(((const struct ref *)e)->nranks);
}
static const ct_key_fn ref_order[] = {ref_op, ref_bytes, ref_nranks};

/* Arrival skew (max start - min start) of every matched instance whose
 * first member has row c's op, bytes and ranks; n at most ninst. */
static size_t row_skews(const struct ct_job *job, const struct ct_coll_match *m,
                        const struct ct_coll_row *c, double *w)
{
    size_t ns = 0;
    for (size_t i = 0; i < m->n;) {
        size_t j = i;
        int64_t mn = INT64_MAX, mx = INT64_MIN;
        const struct ct_nccl_call *o0 = OP(job, &m->k[i]);
        while (j < m->n && same(&m->k[j], &m->k[i])) {
            const struct ct_nccl_call *o = OP(job, &m->k[j]);
            mn = o->s < mn ? o->s : mn;
            mx = o->s > mx ? o->s : mx;
            j++;
        }
        int np = is_p2p(o0->op) ? 2 : o0->nranks;
        /* a matched Send/Recv pair is an instance of both its Send row
         * and its Recv row, whichever of the two sorts first */
        if (j - i >= 2 && o0->bytes == c->bytes && np == c->nranks && o0->lib == c->lib &&
            (o0->op == c->op || (is_p2p(o0->op) && is_p2p(c->op))))
            w[ns++] = (double)(mx - mn);
        i = j;
    }
    return ns;
}

/* The table has a row per (library, op, bytes, ranks), a handful in a job however
 * many ops it ran, and its scratch is sized by the largest row: at a
 * thousand ranks of short steps the job's NCCL ops are most of what is
 * resident, and a table or scratch of one entry per op would double that
 * at the report's peak (docs/report.md, "Memory"). */
int ct_collectives_table(struct ct_report *rep)
{
    struct ct_job *job = rep->job;
    size_t n = 0;
    /* an op of no size (NVSHMEM's barrier and sync: op "other") has no
     * bandwidth: no row; it is communication all the same */
#define ROWED(o) ((o)->e != 0 && (o)->op != CT_NCCL_OP_COUNT)
    for (size_t r = 0; r < job->nranks; r++)
        for (size_t i = 0; i < job->ranks[r].nnccl; i++)
            n += ROWED(&job->ranks[r].nccl[i]);
    struct ref *v = malloc((n ? n : 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    n = 0;
    for (size_t r = 0; r < job->nranks; r++)
        for (size_t i = 0; i < job->ranks[r].nnccl; i++) {
            const struct ct_nccl_call *o = &job->ranks[r].nccl[i];
            if (ROWED(o))
                v[n++] = (struct ref){o->lib, o->op, is_p2p(o->op) ? 2 : o->nranks, o->bytes, o};
        }
    if (ct_sort_by(v, n, sizeof(*v), ref_order, 3))
        qsort(v, n, sizeof(*v), cmp_ref);
    size_t nrows = 0, widest = 1;
    for (size_t i = 0, j; i < n; i = j, nrows++) {
        for (j = i; j < n && !cmp_ref(&v[i], &v[j]); j++)
            ;
        widest = j - i > widest ? j - i : widest;
    }
    double *d = malloc(widest * sizeof(*d));
    double *w = malloc(widest * sizeof(*w));
    double *t = malloc(widest * sizeof(*t));
    rep->coll = calloc(nrows ? nrows : 1, sizeof(*rep->coll));
    if (!d || !w || !t || !rep->coll) {
        free(v);
        free(d);
        free(w);
        free(t);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n;) {
        size_t j = i, nm = 0;
        while (j < n && !cmp_ref(&v[i], &v[j])) {
            const struct ct_nccl_call *o = v[j].o;
            d[j - i] = (double)(o->e - o->s);
            if (o->all_s) {
                w[nm] = (double)(o->all_s > o->s ? o->all_s - o->s : 0);
                t[nm++] = (double)(o->e > o->all_s ? o->e - o->all_s : 0);
            }
            j++;
        }
        struct ct_coll_row *row = &rep->coll[rep->ncoll++];
        row->op = v[i].op;
        row->lib = v[i].lib;
        row->bytes = v[i].bytes;
        row->nranks = v[i].nranks;
        row->count = j - i;
        row->matched = nm;
        row->p90 = ct_percentile(d, j - i, 90);
        row->max = d[j - i - 1];
        row->p50 = ct_percentile(d, j - i, 50);
        row->wait_sum = 0;
        for (size_t k = 0; k < nm; k++)
            row->wait_sum += w[k];
        /* by selection (times in whole ns: no NaN, no -0); d above is
         * sorted for its maximum */
        row->wait_p50 = ct_median_select(w, nm);
        row->transfer_p50 = ct_median_select(t, nm);
        row->algbw = row->p50 > 0 ? (double)row->bytes / row->p50 : 0; /* bytes/ns = GB/s */
        row->busbw = row->algbw * bus_factor(row->op, row->nranks);
        i = j;
    }
    free(v);
    free(d);
    free(t);
    free(w);
    /* an instance has two members or more: at most n / 2 of them */
    /* the ops by match key, as ct_collectives_match sorted them (its
     * keys, else sorted here) */
    struct ct_coll_match m = {0};
    double *sk = malloc((n / 2 + 1) * sizeof(*sk));
    if (!sk || (!rep->cmatch && build_keys(job, &m))) {
        free(sk);
        return -ENOMEM;
    }
    if (rep->cmatch)
        m = *rep->cmatch;
    for (size_t r = 0; r < rep->ncoll; r++)
        rep->coll[r].skew_p50 = ct_median_select(sk, row_skews(job, &m, &rep->coll[r], sk));
    if (!rep->cmatch)
        free(m.k);
    free(sk);
    return 0;
}
