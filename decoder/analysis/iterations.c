/* Iteration detection: named ranges, marks, or the work that repeats (repeats.c). */
#include "decoder/analysis/iterations.h"
#include "decoder/analysis/analysis.h"
#include "decoder/util/search.h"
#include "decoder/util/stats.h"
#include "decoder/read/job.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *ct_iter_source_name(enum ct_iter_source s)
{
    switch (s) {
    case CT_ITER_RANGES: return "ranges";
    case CT_ITER_MARKS: return "marks";
    case CT_ITER_PERIOD: return "period";
    default: return "none";
    }
}

static int cmp_range(const void *a, const void *b)
{
    const struct ct_range *x = a, *y = b;
    return (x->s > y->s) - (x->s < y->s);
}

static int64_t step_number(const struct ct_range *r, int64_t dflt)
{
    return r->num == CT_STEP_NONE ? dflt : r->num;
}

/* 1 when [s, e] lies inside one capture window of the rank (always, for a
 * rank recorded throughout): a step cut by a pause is not a step. */
static int captured(const struct ct_rank *r, int64_t s, int64_t e)
{
    if (!r->cover)
        return 1;
    long w = ct_ivset_find(r->cover, s);
    return w >= 0 && e <= r->cover->v[w].e;
}

/* 1 when host time [s, e] reaches into where a salvaged process of r
 * launched ops whose GPU time never came (timeline.h hcut): the step's GPU
 * work is not all in the trace. */
static int undelivered_in(const struct ct_rank *r, int64_t s, int64_t e)
{
    return r->hcut.n && ct_ivset_len_in(&r->hcut, s, e > s ? e : s + 1) > 0;
}

/* The processes of r whose step ranges count: the main one, and every
 * other that drives the GPU (the rank's process in each attempt of a
 * restarted job, decoder/analysis/goodput.h); a loader worker's own ranges
 * are not the rank's steps. */
static int steps_of(const struct ct_rank *r, size_t i)
{
    const struct ct_proc *p = r->procs[i];
    return i == 0 || p->nops || p->nlaunches;
}

static int from_ranges(const struct ct_rank *r, struct ct_iter **out, size_t *n,
                       enum ct_iter_source *src)
{
    size_t nr = 0, nm = 0;
    for (size_t q = 0; q < r->nprocs; q++) {
        const struct ct_proc *p = r->procs[q];
        for (size_t i = 0; i < p->nsteps && steps_of(r, q); i++) {
            nr += p->steps[i].e > p->steps[i].s;
            nm += p->steps[i].e == p->steps[i].s;
        }
    }
    int marks = nr == 0;
    size_t k = marks ? nm : nr;
    if (k == 0 || (marks && k < 2))
        return 0;
    struct ct_range *v = malloc(k * sizeof(*v));
    struct ct_iter *it = malloc(k * sizeof(*it));
    if (!v || !it) {
        free(v);
        free(it);
        return -ENOMEM;
    }
    k = 0;
    for (size_t q = 0; q < r->nprocs; q++) {
        const struct ct_proc *p = r->procs[q];
        for (size_t i = 0; i < p->nsteps && steps_of(r, q); i++)
            if ((p->steps[i].e > p->steps[i].s) != marks)
                v[k++] = p->steps[i];
    }
    size_t sorted = 1; /* as extraction leaves them: skip the sort */
    while (sorted < k && v[sorted - 1].s <= v[sorted].s)
        sorted++;
    if (sorted < k)
        qsort(v, k, sizeof(*v), cmp_range);
    /* one step seen twice (two flight-recorder windows of one process
     * overlap, both holding it) is one step */
    size_t u = k ? 1 : 0;
    for (size_t i = 1; i < k; i++)
        if (v[i].s != v[u - 1].s || v[i].e != v[u - 1].e)
            v[u++] = v[i];
    k = u;
    size_t m = 0;
    if (marks) {
        for (size_t i = 0; i + 1 < k; i++)
            if (captured(r, v[i].s, v[i + 1].s))
                it[m++] = (struct ct_iter){v[i].s, v[i + 1].s, step_number(&v[i], (int64_t)i),
                                           undelivered_in(r, v[i].s, v[i + 1].s)};
    } else {
        size_t w = 0; /* the ranges a pause cuts are not steps */
        for (size_t i = 0; i < k; i++)
            if (captured(r, v[i].s, v[i].e))
                v[w++] = v[i];
        for (size_t i = 0; i < w; i++)
            it[m++] = (struct ct_iter){v[i].s, v[i].e, step_number(&v[i], (int64_t)i),
                                       undelivered_in(r, v[i].s, v[i].e)};
        /* the step lasts until the GPU work launched inside it is done */
        int64_t *starts = malloc(m * sizeof(*starts));
        if (!starts) {
            free(v);
            free(it);
            return -ENOMEM;
        }
        for (size_t i = 0; i < m; i++)
            starts[i] = it[i].s;
        size_t at = 0;
        for (size_t i = 0; i < r->nops; i++) {
            int64_t l = r->ops[i].launch;
            if (l == INT64_MIN)
                continue;
            size_t lo = ct_gallop(starts, m, l, 1, &at); /* the first step after l */
            if (lo == 0)
                continue;
            struct ct_iter *x = &it[lo - 1];
            if (l < v[lo - 1].e && r->ops[i].e > x->e)
                x->e = r->ops[i].e;
        }
        free(starts);
    }
    free(v);
    *out = it;
    *n = m;
    *src = marks ? CT_ITER_MARKS : CT_ITER_RANGES;
    return 0;
}

/* The work that repeats, found in each capture window on its own (a cycle
 * that a pause cuts is no step, and the job may change between windows);
 * the confidence is the windows' weighted by their iterations. */
static int from_repeats(const struct ct_rank *r, int64_t period, struct ct_iter **out, size_t *n,
                        double *conf, unsigned *why)
{
    if (!r->cover)
        return ct_iterations_from_repeats(r, INT64_MIN, INT64_MAX, period, out, n, conf, why);
    struct ct_iter *all = NULL;
    size_t nall = 0;
    double wsum = 0;
    unsigned wwhy = 0;
    for (size_t w = 0; w < r->cover->n; w++) {
        struct ct_iter *it;
        size_t k;
        double c;
        unsigned y;
        int rc = ct_iterations_from_repeats(r, r->cover->v[w].s, r->cover->v[w].e, period, &it, &k,
                                            &c, &y);
        struct ct_iter *grown = rc || !k ? NULL : realloc(all, (nall + k) * sizeof(*all));
        if (rc || (k && !grown)) {
            free(it);
            free(all);
            return rc ? rc : -ENOMEM;
        }
        if (!k)
            continue;
        wwhy |= y;
        all = grown;
        for (size_t i = 0; i < k; i++)
            all[nall + i] = (struct ct_iter){it[i].s, it[i].e, (int64_t)(nall + i), 0};
        free(it);
        nall += k;
        wsum += c * (double)k;
    }
    *out = all;
    *n = nall;
    *conf = nall ? wsum / (double)nall : 0;
    *why = nall ? wwhy : 0;
    return 0;
}

int ct_iterations_find(const struct ct_rank *r, const struct ct_iter_opts *o, struct ct_iter **out,
                       size_t *n, enum ct_iter_source *src, double *conf, unsigned *why)
{
    *out = NULL;
    *n = 0;
    *src = CT_ITER_NONE;
    double c = 0;
    unsigned y = 0;
    int rc = from_ranges(r, out, n, src);
    if (!rc && *n)
        c = 1; /* the job said where its steps are */
    if (!rc && *n == 0) {
        free(*out);
        *out = NULL;
        rc = from_repeats(r, o->period_ns, out, n, &c, &y);
        /* HTA's mode leaves out a capture's last step (its preprocessing
         * drops the rows from the last ProfilerStep's start): without the
         * annotations, the same step goes (kineto_model.c sets at_step 2) */
        if (!rc && *n && r->procs[0]->at_step == 2) {
            (*n)--;
            y |= CT_ITER_WHY_HTA_LAST;
        }
        *src = *n ? CT_ITER_PERIOD : CT_ITER_NONE;
        if (!*n)
            y &= CT_ITER_WHY_PARTS | CT_ITER_WHY_HTA_LAST;
    }
    if (conf)
        *conf = c;
    if (why)
        *why = y;
    if (rc)
        return rc;
    size_t w = 0;
    for (size_t i = 0; i < *n && r->gcut.n; i++) /* beside ops whose GPU time never came */
        (*out)[i].partial |= ct_ivset_len_in(&r->gcut, (*out)[i].s, (*out)[i].e) > 0;
    for (size_t i = 0; i < *n; i++) {
        if ((long)i < o->skip)
            continue;
        if ((*out)[i].index < o->first || (o->last >= 0 && (*out)[i].index > o->last))
            continue;
        (*out)[w++] = (*out)[i];
    }
    *n = w;
    return 0;
}

/* The median duration of n iterations, 0 when none, -1 out of memory. */
static double median_step(const struct ct_iter *it, size_t n)
{
    if (!n)
        return 0;
    double *d = malloc(n * sizeof(*d));
    if (!d)
        return -1;
    for (size_t i = 0; i < n; i++)
        d[i] = (double)(it[i].e - it[i].s);
    double m = ct_median_select(d, n); /* whole ns: no NaN, no -0 */
    free(d);
    return m;
}

/* The sequence number of the first op on communicator comm launched in
 * each of the rank's iterations (UINT64_MAX: none) into seq[0..niters). */
static void first_seqs(const struct ct_rank_result *x, uint64_t comm, uint64_t *seq)
{
    const struct ct_rank *r = x->rank;
    size_t j = 0;
    for (size_t i = 0; i < x->niters; i++) {
        seq[i] = UINT64_MAX;
        while (j < r->nnccl && r->nccl[j].host_s < x->iters[i].s)
            j++;
        for (size_t q = j; q < r->nnccl && r->nccl[q].host_s < x->iters[i].e; q++)
            if (r->nccl[q].comm == comm && r->nccl[q].seq < seq[i])
                seq[i] = r->nccl[q].seq;
    }
}

/* The communicator that carries most of the rank's first NCCL ops, 0: none. */
static uint64_t main_comm(const struct ct_rank *r)
{
    uint64_t best = 0;
    size_t most = 0;
    for (size_t i = 0; i < r->nnccl && i < 256; i++) { /* the first ops are enough */
        size_t c = 0;
        for (size_t q = 0; q < r->nnccl && q < 256; q++)
            c += r->nccl[q].comm == r->nccl[i].comm;
        if (c > most)
            most = c, best = r->nccl[i].comm;
    }
    return best;
}

/*
 * Steps found from repeats are numbered per rank from 0, and a rank that
 * dropped a warm-up step its peers kept would number every step one off.
 * The ranks' collectives say which steps are the same: on the reference
 * (the rank whose first step holds the earliest op of the communicator),
 * the step holding the same first sequence number gives the index; the
 * most common shift over a rank's steps renumbers it.
 */
static int number_alike(struct ct_rank_result *rr, size_t n)
{
    size_t ref = SIZE_MAX;
    uint64_t comm = 0, ref_first = UINT64_MAX;
    uint64_t *rs = NULL;
    for (size_t i = 0; i < n; i++) {
        if (rr[i].iter_src != CT_ITER_PERIOD || !rr[i].niters)
            continue;
        uint64_t c = comm ? comm : main_comm(rr[i].rank);
        if (!c)
            continue;
        uint64_t *sq = malloc(rr[i].niters * sizeof(*sq));
        if (!sq) {
            free(rs);
            return -ENOMEM;
        }
        first_seqs(&rr[i], c, sq);
        if (sq[0] != UINT64_MAX && sq[0] < ref_first) {
            free(rs);
            rs = sq;
            ref = i;
            ref_first = sq[0];
            comm = c;
        } else {
            free(sq);
        }
    }
    for (size_t i = 0; ref != SIZE_MAX && i < n; i++) {
        struct ct_rank_result *x = &rr[i];
        if (i == ref || x->iter_src != CT_ITER_PERIOD || !x->niters)
            continue;
        uint64_t *sq = malloc(x->niters * sizeof(*sq));
        long *d = malloc(x->niters * sizeof(*d));
        if (!sq || !d) {
            free(sq);
            free(d);
            free(rs);
            return -ENOMEM;
        }
        first_seqs(x, comm, sq);
        size_t nd = 0;
        for (size_t k = 0, j = 0; k < x->niters; k++) {
            if (sq[k] == UINT64_MAX)
                continue;
            while (j < rr[ref].niters && (rs[j] == UINT64_MAX || rs[j] < sq[k]))
                j++;
            if (j < rr[ref].niters && rs[j] == sq[k])
                d[nd++] = (long)rr[ref].iters[j].index - (long)k;
        }
        /* the most common shift, when it holds for most of the steps */
        long best = 0;
        size_t most = 0;
        for (size_t a = 0; a < nd; a++) {
            size_t c = 0;
            for (size_t q = 0; q < nd && q < 256; q++)
                c += d[q] == d[a];
            if (c > most)
                most = c, best = d[a];
            if (a >= 256)
                break;
        }
        if (most * 2 > (nd < 256 ? nd : 256))
            for (size_t k = 0; k < x->niters; k++)
                x->iters[k].index = (int64_t)k + best;
        free(sq);
        free(d);
    }
    free(rs);
    return 0;
}

/* One phase (ct_iterations_align, on the first rank's main communicator),
 * then one numbering. */
static int align_and_number(struct ct_rank_result *rr, size_t n)
{
    uint64_t comm = 0;
    for (size_t i = 0; i < n && !comm; i++)
        if (rr[i].niters)
            comm = main_comm(rr[i].rank);
    int rc = ct_iterations_align(rr, n, comm);
    return rc ? rc : number_alike(rr, n);
}

int ct_iterations_agree(struct ct_rank_result *rr, size_t n, const struct ct_iter_opts *o)
{
    double *med = malloc((n ? n : 1) * sizeof(*med));
    if (!med)
        return -ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        double m = median_step(rr[i].iters, rr[i].niters);
        if (m < 0) {
            free(med);
            return -ENOMEM;
        }
        if (m > 0)
            med[k++] = m;
    }
    double job = k >= 2 ? ct_median(med, k) : 0;
    free(med);
    if (job <= 0)
        return align_and_number(rr, n);
    for (size_t i = 0; i < n; i++) {
        struct ct_rank_result *x = &rr[i];
        double m = median_step(x->iters, x->niters);
        if (m < 0)
            return -ENOMEM;
        if (x->iter_src != CT_ITER_PERIOD || (m >= 0.85 * job && m <= 1.15 * job))
            continue;
        struct ct_iter_opts p = *o;
        p.period_ns = (int64_t)job;
        struct ct_iter *it;
        size_t ni;
        enum ct_iter_source src;
        double conf;
        unsigned why;
        int rc = ct_rank_open(x->rank);
        if (rc)
            return rc;
        rc = ct_iterations_find(x->rank, &p, &it, &ni, &src, &conf, &why);
        ct_rank_close(x->rank);
        if (rc)
            return rc;
        if (ni == 0) {
            free(it);
            continue;
        }
        free(x->iters);
        x->iters = it;
        x->niters = ni;
        x->iter_src = src;
        x->iter_conf = conf;
        x->iter_why = why;
    }
    return align_and_number(rr, n);
}

void ct_iter_note(char *buf, size_t n, enum ct_iter_source src, unsigned why)
{
    static const struct {
        unsigned bit;
        const char *text;
    } t[] = {
        {CT_ITER_WHY_PARTS, "the work repeats, but its cycles are parts of one step (layers): "
                            "the job's synchronisation structure (collectives, optimizer, host "
                            "copies, syncs, graph launches) shows only at the capture's ends, or "
                            "not at all and the host launches the cycles back to back"},
        {CT_ITER_WHY_NO_SYNC, "no collective, optimizer kernel, host copy, host sync or graph "
                              "launch repeats with the cycles: they may be parts of one step"},
        {CT_ITER_WHY_NO_PAUSE, "the host launches the cycles back to back, with no pause of its "
                               "loop between them: they may be parts of one step"},
        {CT_ITER_WHY_FEW, "two cycles or fewer: too few to tell a step from a part of one"},
        {CT_ITER_WHY_HTA_LAST, "HTA's mode leaves out the capture's last step (--no-hta keeps it)"},
    };
    size_t k = 0;
    buf[0] = 0;
    if (src == CT_ITER_NONE && !(why & (CT_ITER_WHY_PARTS | CT_ITER_WHY_HTA_LAST)))
        k = (size_t)snprintf(buf, n,
                             "no step ranges or marks, and no repeating work that agrees "
                             "across cycles");
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]) && k < n; i++)
        if (why & t[i].bit)
            k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? "; " : "", t[i].text);
}

int ct_iterations_gpu_side(struct ct_rank_result *x)
{
    if ((x->iter_src != CT_ITER_RANGES && x->iter_src != CT_ITER_PERIOD) || x->niters < 2)
        return 0;
    const struct ct_rank *r = x->rank;
    size_t n = x->niters;
    struct ct_iter *it = x->iters;
    for (size_t k = 1; k < n; k++)
        if (it[k].s < it[k - 1].s)
            return 0; /* not in start order: no next step to bound the work by */
    int64_t *hs = malloc(n * sizeof(*hs)), *gs = malloc(n * sizeof(*gs)),
            *ge = malloc(n * sizeof(*ge));
    if (!hs || !gs || !ge) {
        free(hs);
        free(gs);
        free(ge);
        return -ENOMEM;
    }
    for (size_t k = 0; k < n; k++) {
        hs[k] = it[k].s;
        gs[k] = INT64_MAX;
        ge[k] = INT64_MIN;
    }
    /* an op whose launch is unknown is placed by its GPU start, which says
     * nothing of the step that launched it: left out when most ops have
     * their launch (as the repeat detector does) */
    size_t known = r->nlaunched, at = 0;
    for (size_t i = 0; i < r->nops; i++) {
        const struct ct_gpu_op *g = &r->ops[i];
        if (g->launch == INT64_MIN && 2 * known > r->nops)
            continue;
        int64_t l = g->launch != INT64_MIN ? g->launch : g->s;
        size_t k = ct_gallop(hs, n, l, 1, &at); /* the first step after l */
        if (k == 0)
            continue;
        k--;
        if (k + 1 == n && l >= it[k].e)
            continue; /* after the last step */
        if (g->s < gs[k])
            gs[k] = g->s;
        if (g->e > ge[k])
            ge[k] = g->e;
    }
    for (size_t k = 1; k < n; k++) {
        int64_t gpu = gs[k] < ge[k - 1] ? gs[k] : ge[k - 1];
        if (gs[k] == INT64_MAX || ge[k - 1] == INT64_MIN || gpu <= hs[k])
            continue;
        if (it[k - 1].e >= hs[k] && it[k - 1].e < gpu)
            it[k - 1].e = gpu; /* the steps stay back to back */
        it[k].s = gpu;
        if (it[k].e < gpu)
            it[k].e = gpu;
    }
    free(hs);
    free(gs);
    free(ge);
    return 0;
}

int ct_iterations_cut(struct ct_rank_result *x)
{
    const struct ct_rank *r = x->rank;
    if (!r->gcut.n && !r->hcut.n)
        return 0;
    size_t np = 0;
    for (size_t k = 0; k < x->niters; k++) {
        struct ct_iter *it = &x->iters[k];
        it->partial |= r->gcut.n && ct_ivset_len_in(&r->gcut, it->s, it->e) > 0;
        np += it->partial != 0;
    }
    if (!np)
        return 0;
    x->all_iters = malloc(x->niters * sizeof(*x->all_iters));
    if (!x->all_iters)
        return -ENOMEM;
    memcpy(x->all_iters, x->iters, x->niters * sizeof(*x->iters));
    x->nall_iters = x->niters;
    size_t w = 0;
    for (size_t k = 0; k < x->niters; k++)
        if (!x->iters[k].partial)
            x->iters[w++] = x->iters[k];
    x->niters = w;
    x->iters_cut = np;
    return 0;
}
