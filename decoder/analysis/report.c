/*
 * Every analysis of a built job, in the order the figures depend on each
 * other (decoder/analysis/analysis.h): collectives matched across ranks,
 * then per rank its iterations, breakdown (decoder/analysis/breakdown.c)
 * and the split of its GPU-idle time (decoder/analysis/stalls.c), then the
 * job's collective and kernel tables and its stragglers.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/analysis.h"
#include "decoder/analysis/efficiency.h"
#include "decoder/analysis/goodput.h"
#include "decoder/analysis/health.h"
#include "decoder/analysis/nccl_links.h"
#include "decoder/analysis/speed_of_light.h"
#include "decoder/analysis/xfer_model.h"
#include "decoder/util/stats.h"
#include "decoder/read/job.h"

void ct_report_free(struct ct_report *rep)
{
    for (size_t r = 0; r < rep->nr; r++) {
        free(rep->rr[r].iters);
        free(rep->rr[r].all_iters);
        free(rep->rr[r].im);
        ct_efficiency_free(rep->rr[r].eff);
    }
    free(rep->rr);
    free(rep->coll);
    free(rep->steps);
    for (size_t i = 0; i < rep->nkern; i++)
        free(rep->kern[i].name);
    free(rep->kern);
    ct_kernels_acc_free(rep->kacc);
    ct_coll_match_free(rep->cmatch);
    if (rep->nlinks)
        ct_nlinks_free(rep->nlinks);
    free(rep->nlinks);
    free(rep->xfer);
    if (rep->goodput)
        ct_goodput_free(rep->goodput);
    free(rep->goodput);
    memset(rep, 0, sizeof(*rep));
}

/* Runs every analysis on a built job. Returns 0 or -ENOMEM. */
int ct_report_selected_none(const struct ct_report *rep, const struct ct_iter_opts *io,
                            const char *what, char *err, size_t errlen)
{
    if (!io || (io->skip <= 0 && io->first <= 0 && io->last < 0))
        return 0;
    for (size_t r = 0; r < rep->nr; r++)
        if (rep->rr[r].niters)
            return 0;
    int64_t lo, hi;
    long n = ct_report_unselected(rep, &lo, &hi);
    if (n > 0)
        snprintf(err, errlen,
                 "%s: selects none of the run's iterations (its iterations: %lld to %lld)", what,
                 (long long)lo, (long long)hi);
    else
        snprintf(err, errlen, "%s: the run has no iterations to select%s", what,
                 n < 0 ? " (out of memory counting them)" : "");
    return 1;
}

long ct_report_unselected(const struct ct_report *rep, int64_t *lo, int64_t *hi)
{
    struct ct_report all;
    const struct ct_iter_opts none = {0, 0, -1, 0};
    if (ct_report_analyze(rep->job, &none, &all))
        return -ENOMEM;
    long n = 0;
    *lo = INT64_MAX;
    *hi = INT64_MIN;
    for (size_t r = 0; r < all.nr; r++)
        for (size_t i = 0; i < all.rr[r].niters; i++) {
            int64_t k = all.rr[r].iters[i].index;
            *lo = k < *lo ? k : *lo;
            *hi = k > *hi ? k : *hi;
            n++;
        }
    ct_report_free(&all);
    return n;
}

int ct_report_analyze(struct ct_job *job, const struct ct_iter_opts *io, struct ct_report *rep)
{
    memset(rep, 0, sizeof(*rep));
    rep->job = job;
    rep->nr = job->nranks;
    rep->rr = calloc(job->nranks ? job->nranks : 1, sizeof(*rep->rr));
    if (!rep->rr)
        return -ENOMEM;
    int rc = ct_collectives_match(rep);
    size_t total_it = 0;
    rep->iterations = job->nranks ? SIZE_MAX : 0;
    for (size_t r = 0; r < job->nranks && !rc; r++) {
        struct ct_rank_result *x = &rep->rr[r];
        x->rank = &job->ranks[r];
        x->bubble_pct = x->expected_bubble_pct = -1;
        if ((rc = ct_rank_open(x->rank)))
            break;
        rc = ct_iterations_find(x->rank, io, &x->iters, &x->niters, &x->iter_src, &x->iter_conf,
                                &x->iter_why);
        ct_rank_close(x->rank);
    }
    if (!rc)
        rc = ct_iterations_agree(rep->rr, job->nranks, io);
    /* iterations rest on the records (a damaged stretch loses its steps'
     * ops and ranges) and, found from the work that repeats, on every op
     * being there: coverage lowers their confidence (provenance.c) */
    for (size_t r = 0; r < job->nranks && !rc; r++) {
        struct ct_rank_result *x = &rep->rr[r];
        x->iter_conf_found = x->iter_conf;
        if (x->iter_src != CT_ITER_NONE)
            x->iter_conf *= ct_coverage_factor(x->rank, x->iter_src == CT_ITER_PERIOD, NULL, 0);
    }
    for (size_t r = 0; r < job->nranks && !rc; r++) {
        struct ct_rank_result *x = &rep->rr[r];
        if ((rc = ct_rank_open(x->rank)))
            break;
        rc = ct_iterations_gpu_side(x);
        if (!rc)
            rc = ct_iterations_cut(x);
        if (!rc)
            rc = ct_cover_iterations(x);
        if (!rc)
            rc = ct_metrics_rank(x);
        if (!rc)
            rc = ct_attribution_rank(job, x);
        if (!rc)
            rc = ct_kernels_collect(rep, r);
        if (!rc)
            rc = ct_efficiency_rank(x, ct_health_shift(rep, r));
        ct_rank_close(x->rank);
        total_it += x->niters;
        if (x->niters < rep->iterations)
            rep->iterations = x->niters;
    }
    if (rep->iterations == SIZE_MAX)
        rep->iterations = 0;
    if (!rc && total_it) {
        double *d = malloc(total_it * sizeof(*d));
        if (!d)
            return -ENOMEM;
        size_t k = 0;
        for (size_t r = 0; r < rep->nr; r++)
            for (size_t i = 0; i < rep->rr[r].niters; i++)
                d[k++] = (double)(rep->rr[r].iters[i].e - rep->rr[r].iters[i].s);
        /* by selection: the durations are not read in order after (whole
         * numbers of ns: no NaN, no -0) */
        rep->step_p90 = ct_percentile_select(d, k, 90);
        rep->step_p99 = ct_percentile_select(d, k, 99);
        rep->step_p50 = ct_median_select(d, k);
        free(d);
    }
    if (!rc)
        rc = ct_job_steps(rep);
    if (!rc)
        rc = ct_collectives_table(rep);
    if (!rc)
        rc = ct_xfer_models(rep, &rep->xfer, &rep->nxfer);
    if (!rc)
        rc = ct_speed_of_light(rep);
    if (!rc)
        rc = ct_kernels_table(rep);
    if (!rc && !(rep->nlinks = calloc(1, sizeof(*rep->nlinks))))
        rc = -ENOMEM;
    if (!rc)
        rc = ct_nccl_links(rep->job, rep->nlinks); /* nccl_links.c */
    if (!rc)
        rc = ct_nccl_channel_phases(rep->job, rep->nlinks); /* nccl_channel_phases.c */
    if (!rc)
        rc = ct_stragglers(rep);
    if (!rc)
        rc = ct_pipeline_topology(rep);
    if (!rc && !(rep->goodput = calloc(1, sizeof(*rep->goodput))))
        rc = -ENOMEM;
    if (!rc)
        rc = ct_goodput(rep, rep->goodput);
    return rc;
}

int ct_step_kinds(const struct ct_rank_result *res, struct ct_step_kind *regular,
                  struct ct_step_kind *heavy)
{
    memset(regular, 0, sizeof(*regular));
    memset(heavy, 0, sizeof(*heavy));
    size_t n = res->im ? res->niters : 0;
    if (!n)
        return 0;
    double *c = malloc(n * sizeof(*c)), *dr = malloc(n * sizeof(*dr)),
           *dh = malloc(n * sizeof(*dh));
    if (!c || !dr || !dh) {
        free(c);
        free(dr);
        free(dh);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        c[i] = (double)res->im[i].compute;
    double med = ct_median_select(c, n); /* reorders c: read res->im below */
    for (size_t i = 0; i < n; i++) {
        int h = (double)res->im[i].compute > 1.25 * med;
        struct ct_step_kind *k = h ? heavy : regular;
        (h ? dh : dr)[k->steps++] = (double)(res->iters[i].e - res->iters[i].s);
        k->compute += res->im[i].compute;
    }
    regular->p50 = ct_median_select(dr, regular->steps);
    heavy->p50 = ct_median_select(dh, heavy->steps);
    free(c);
    free(dr);
    free(dh);
    return 0;
}
