/* Realtime mapping per process and collective-end refinement per rank. */
#include "decoder/read/clock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/util/keys.h"
#include "decoder/util/stats.h"
#include "decoder/read/timeline.h"

int64_t ct_clock_offset(const struct ct_trace *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += t->recs[i].kind == CT_REC_CLOCK;
    if (n == 0)
        return (int64_t)(t->rd.hdr.start_real_ns - t->rd.hdr.start_mono_ns);
    int64_t *d = malloc(n * sizeof(*d));
    if (!d)
        return (int64_t)(t->rd.hdr.start_real_ns - t->rd.hdr.start_mono_ns);
    n = 0;
    for (size_t i = 0; i < t->n; i++)
        if (t->recs[i].kind == CT_REC_CLOCK)
            d[n++] = (int64_t)(t->recs[i].f[CT_CLOCK_REAL] - t->recs[i].f[CT_CLOCK_MONO]);
    int64_t m = ct_median_i64(d, n);
    free(d);
    return m;
}

static void shift_set(struct ct_ivset *a, int64_t d)
{
    for (size_t i = 0; i < a->n; i++) {
        a->v[i].s += d;
        a->v[i].e += d;
    }
}

/* A shift's move of what a spilled rank holds only while open (ops and
 * launches): when they are absent, ct_rank_open applies it. */
void ct_clock_shift_ops(struct ct_rank *r, int64_t d)
{
    if (!d)
        return;
    for (size_t i = 0; r->ops && i < r->nops; i++) {
        r->ops[i].s += d;
        r->ops[i].e += d;
        if (r->ops[i].launch != INT64_MIN)
            r->ops[i].launch += d;
    }
    for (size_t k = 0; k < r->nprocs; k++) {
        struct ct_proc *p = r->procs[k];
        for (size_t i = 0; p->launches && i < p->nlaunches; i++)
            p->launches[i] += d;
    }
}

static void shift_rank(struct ct_rank *r, int64_t d)
{
    if (!d)
        return;
    ct_clock_shift_ops(r, d);
    for (size_t i = 0; i < r->nnccl; i++) {
        r->nccl[i].host_s += d;
        r->nccl[i].host_e += d;
        if (r->nccl[i].e) {
            r->nccl[i].s += d;
            r->nccl[i].e += d;
        }
    }
    for (size_t k = 0; k < r->nprocs; k++) {
        struct ct_proc *p = r->procs[k];
        for (size_t i = 0; i < p->nsteps; i++) {
            p->steps[i].s += d;
            p->steps[i].e += d;
        }
        for (size_t i = 0; i < p->nedges; i++) {
            p->edges[i].rec += d;
            p->edges[i].wait += d;
        }
        for (size_t i = 0; i < p->nsyncs; i++) {
            p->syncs[i].t += d;
            p->syncs[i].rec += d;
        }
        shift_set(&p->sync, d);
        shift_set(&p->cuda_call, d);
        shift_set(&p->data_wait, d);
        shift_set(&p->file_read, d);
        shift_set(&p->htod, d);
        int64_t *lt[] = {&p->life.start_ns, &p->life.signal_ns, &p->life.hang_ns, &p->last_ns,
                         &p->gpu_lo,        &p->gpu_hi,         &p->busy_lo,      &p->launch_lo,
                         &p->launch_hi,     &p->host_cut,       &p->gpu_cut};
        for (size_t j = 0; j < sizeof(lt) / sizeof(lt[0]); j++)
            if (*lt[j] != INT64_MIN && *lt[j] != INT64_MAX)
                *lt[j] += d;
        shift_set(&p->ckpt, d);
        shift_set(&p->capture, d);
    }
}

struct end {
    uint64_t comm, seq;
    int64_t e;
    uint32_t rank; /* index into job->ranks */
};

static int cmp_end(const void *a, const void *b)
{
    const struct end *x = a, *y = b;
    if (x->comm != y->comm)
        return x->comm < y->comm ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* cmp_end's order for ct_sort_by (then rank: built in rank order). */
static uint64_t end_comm(const void *e)
{
    return ((const struct end *)e)->comm;
}
static uint64_t end_seq(const void *e)
{
    return ((const struct end *)e)->seq;
}
static const ct_key_fn end_order[] = {end_comm, end_seq};

static int is_collective(int op)
{
    return op != CT_NCCL_OP_SEND && op != CT_NCCL_OP_RECV;
}

/* The ends of every rank's timed collectives, in (communicator, sequence,
 * rank) order: *v (malloc'ed), *n. 0 or -ENOMEM. */
static int collect_ends(const struct ct_job *job, struct end **v, size_t *n)
{
    *n = 0;
    for (size_t r = 0; r < job->nranks; r++)
        for (size_t i = 0; i < job->ranks[r].nnccl; i++)
            *n += job->ranks[r].nccl[i].e && is_collective(job->ranks[r].nccl[i].op);
    if (!(*v = malloc((*n ? *n : 1) * sizeof(**v))))
        return -ENOMEM;
    *n = 0;
    for (size_t r = 0; r < job->nranks; r++)
        for (size_t i = 0; i < job->ranks[r].nnccl; i++) {
            const struct ct_nccl_call *o = &job->ranks[r].nccl[i];
            if (o->e && is_collective(o->op))
                (*v)[(*n)++] = (struct end){o->comm, o->seq, o->e, (uint32_t)r};
        }
    if (ct_sort_by(*v, *n, sizeof(**v), end_order, 2))
        qsort(*v, *n, sizeof(**v), cmp_end);
    return 0;
}

/* One pass over the sorted ends: residuals of every rank against the
 * per-op median end. res[r] gets the median residual, abs_res[r] the
 * median |residual|. */
static int pass(const struct ct_job *job, const struct end *v, size_t n, int64_t *res,
                int64_t *abs_res)
{
    /* each rank's residuals in one array, rank r's from at[r]: counted
     * first, so that it is n long, not n per rank */
    size_t *at = calloc(job->nranks + 1, sizeof(*at));
    size_t *cnt = calloc(job->nranks ? job->nranks : 1, sizeof(*cnt));
    int64_t *ends = malloc((n ? n : 1) * sizeof(*ends)); /* a group: up to n ends (duplicates) */
    int64_t *per = malloc((n ? n : 1) * sizeof(*per));
    int rc = -ENOMEM;
    if (!at || !cnt || !ends || !per)
        goto out;
    for (int fill = 0; fill < 2; fill++) {
        for (size_t i = 0; i < n;) {
            size_t j = i;
            while (j < n && v[j].comm == v[i].comm && v[j].seq == v[i].seq)
                j++;
            if (j - i >= 2 && !fill)
                for (size_t k = i; k < j; k++)
                    at[v[k].rank + 1]++;
            if (j - i >= 2 && fill) {
                for (size_t k = i; k < j; k++)
                    ends[k - i] = v[k].e;
                int64_t m = ct_median_i64(ends, j - i);
                for (size_t k = i; k < j; k++)
                    per[at[v[k].rank] + cnt[v[k].rank]++] = v[k].e - m;
            }
            i = j;
        }
        for (size_t r = 0; r < job->nranks && !fill; r++)
            at[r + 1] += at[r];
    }
    for (size_t r = 0; r < job->nranks; r++) {
        int64_t *p = per + at[r];
        res[r] = cnt[r] ? ct_median_i64(p, cnt[r]) : 0;
        for (size_t k = 0; k < cnt[r]; k++)
            p[k] = p[k] < 0 ? -p[k] : p[k];
        abs_res[r] = cnt[r] ? ct_median_i64(p, cnt[r]) : 0;
    }
    rc = 0;
out:
    free(per);
    free(at);
    free(cnt);
    free(ends);
    return rc;
}

int ct_clock_refine(struct ct_job *job)
{
    int64_t *res = calloc(job->nranks ? job->nranks : 1, sizeof(*res));
    int64_t *abs_res = calloc(job->nranks ? job->nranks : 1, sizeof(*abs_res));
    struct end *v = NULL;
    size_t n = 0;
    int rc = -ENOMEM;
    if (!res || !abs_res)
        goto out;
    rc = 0;
    if (job->nranks < 2) /* no peer to align with: skew and residual stay 0 */
        goto out;
    /* sorted once: shifting a rank moves its ends, not their order */
    if ((rc = collect_ends(job, &v, &n)))
        goto out;
    for (int it = 0; it < 2; it++) {
        if ((rc = pass(job, v, n, res, abs_res)))
            goto out;
        for (size_t r = 0; r < job->nranks; r++)
            job->ranks[r].skew_ns -= res[r];
        for (size_t k = 0; k < n; k++)
            v[k].e -= res[v[k].rank];
    }
    rc = pass(job, v, n, res, abs_res);
    /* the ranks' own times move once, by the sum of the passes' shifts */
    for (size_t r = 0; !rc && r < job->nranks; r++) {
        shift_rank(&job->ranks[r], job->ranks[r].skew_ns);
        job->ranks[r].residual_ns = abs_res[r];
    }
out:
    free(res);
    free(abs_res);
    free(v);
    return rc;
}
