/*
 * The job's steps (ct_job_steps): one row per iteration index, over the
 * ranks that have that iteration. At thousands of ranks a (rank, iteration)
 * table is millions of rows; the job's own per-step figures are what a
 * reader looks at first, with the slowest rank of each step named.
 *
 * Ranks number the same step alike (ranges by their ProfilerStep number;
 * repeats by the collectives' sequence numbers, iterations.c, and cut in
 * one phase, step_phase.c), so the index groups the same step. A step's
 * span runs from the earliest rank's start to the latest rank's end; its
 * duration figures are the median and the maximum of the ranks' own
 * durations (the ranks' clocks are aligned, but a rank late by its arrival
 * skew still runs one step: the span alone would add the skew), and its
 * compute, communication, exposed communication and idle are medians over
 * the ranks.
 */
#include "decoder/analysis/analysis.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/util/keys.h"
#include "decoder/util/stats.h"

struct at {
    int64_t index;
    uint32_t r, k; /* rank result, iteration */
};

/* by step index, then rank result: each rank's come in index order, so
 * ct_sort_by merges them */
static uint64_t at_index(const void *a)
{
    return (uint64_t)((const struct at *)a)->index ^ (UINT64_C(1) << 63);
}
static uint64_t at_rank(const void *a)
{
    return ((const struct at *)a)->r;
}
static const ct_key_fn at_order[] = {at_index, at_rank};

int ct_job_steps(struct ct_report *rep)
{
    size_t n = 0;
    for (size_t r = 0; r < rep->nr; r++)
        if (rep->rr[r].im)
            n += rep->rr[r].niters;
    rep->steps = NULL;
    rep->nsteps = 0;
    if (!n)
        return 0;
    struct at *v = malloc(n * sizeof(*v));
    double *d = malloc(n * sizeof(*d));
    if (!v || !d) {
        free(v);
        free(d);
        return -ENOMEM;
    }
    size_t k = 0;
    for (size_t r = 0; r < rep->nr; r++)
        for (size_t i = 0; rep->rr[r].im && i < rep->rr[r].niters; i++)
            v[k++] = (struct at){rep->rr[r].iters[i].index, (uint32_t)r, (uint32_t)i};
    if (ct_sort_by(v, n, sizeof(*v), at_order, 2)) {
        free(v);
        free(d);
        return -ENOMEM;
    }
    size_t groups = 0;
    for (size_t i = 0; i < n; i++)
        groups += i == 0 || v[i].index != v[i - 1].index;
    rep->steps = calloc(groups, sizeof(*rep->steps));
    if (!rep->steps) {
        free(v);
        free(d);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && v[j].index == v[i].index)
            j++;
        struct ct_job_step *s = &rep->steps[rep->nsteps++];
        s->index = v[i].index;
        s->ranks = j - i;
        s->start = INT64_MAX;
        s->end = INT64_MIN;
        int64_t longest = -1;
        for (size_t q = i; q < j; q++) {
            const struct ct_rank_result *x = &rep->rr[v[q].r];
            const struct ct_iter *it = &x->iters[v[q].k];
            if (it->s < s->start)
                s->start = it->s;
            if (it->e > s->end)
                s->end = it->e;
            if (it->e - it->s > longest)
                longest = it->e - it->s, s->slowest = x->rank->rank;
            d[q - i] = (double)(it->e - it->s);
        }
        s->dur_max = (double)longest;
        s->dur_p50 = ct_median(d, j - i);
        /* medians of each figure over the step's ranks */
        for (int f = 0; f < 4; f++) {
            for (size_t q = i; q < j; q++) {
                const struct ct_iter_metrics *m = &rep->rr[v[q].r].im[v[q].k];
                d[q - i] = (double)(f == 0   ? m->compute
                                    : f == 1 ? m->comm
                                    : f == 2 ? m->exposed_comm
                                             : m->idle);
            }
            double med = ct_median(d, j - i);
            *(f == 0 ? &s->compute : f == 1 ? &s->comm : f == 2 ? &s->exposed : &s->idle) = med;
        }
        i = j;
    }
    free(v);
    free(d);
    return 0;
}
