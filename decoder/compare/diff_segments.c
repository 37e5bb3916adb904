/* `cutrace diff`'s runs and segments (decoder/compare/diff_segments.h). */
#include "decoder/compare/diff_segments.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/read/job.h"

void ct_diff_side_free(struct ct_diff_side *s)
{
    for (size_t i = 0; i < s->rs.n; i++) {
        if (s->value)
            free(s->value[i]);
        if (s->summary)
            ct_metric_set_free(&s->summary[i]);
        if (s->samples)
            ct_metric_set_free(&s->samples[i]);
        if (s->cmdline)
            free(s->cmdline[i]);
        if (s->tsum)
            ct_metric_set_free(&s->tsum[i]);
        if (s->tsamp)
            ct_metric_set_free(&s->tsamp[i]);
    }
    free(s->tsum);
    free(s->tsamp);
    free(s->nranks);
    free(s->cmdline);
    free(s->value);
    free(s->summary);
    free(s->samples);
    ct_runs_free(&s->rs);
}

int ct_diff_side_load(struct ct_diff_side *s, const char *by, const struct ct_iter_opts *io,
                      FILE *rows, const char *name, char *err, size_t errlen)
{
    size_t n = s->rs.n;
    s->value = calloc(n, sizeof(char *));
    s->summary = calloc(n, sizeof(*s->summary));
    s->samples = calloc(n, sizeof(*s->samples));
    s->nranks = calloc(n, sizeof(*s->nranks));
    s->cmdline = calloc(n, sizeof(*s->cmdline));
    if (!s->value || !s->summary || !s->samples || !s->nranks || !s->cmdline)
        return -ENOMEM;
    int by_tag = by && !strcmp(by, CT_DIFF_BY_TAG); /* not a run's value: diff_tags.c */
    if (by_tag &&
        (!(s->tsum = calloc(n, sizeof(*s->tsum))) || !(s->tsamp = calloc(n, sizeof(*s->tsamp)))))
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        struct ct_run *run = &s->rs.runs[i];
        char buf[512];
        struct ct_job job;
        struct ct_report rep;
        int rc = ct_run_report(run, io, &job, &rep, err, errlen);
        if (rc)
            return rc;
        /* what the traces say about themselves came with them (facts) */
        s->value[i] = strdup(by && !by_tag ? ct_run_value(&job, by, buf, sizeof(buf)) : "all");
        rc = s->value[i] ? ct_run_cmdlines(&job, &s->cmdline[i]) : -ENOMEM;
        s->nranks[i] = rep.nr;
        if (!rc)
            rc = ct_diff_collect(&rep, 0, &s->summary[i]);
        if (!rc)
            rc = ct_diff_collect(&rep, 1, &s->samples[i]);
        if (!rc && by_tag)
            rc = ct_diff_collect_tags(&rep, 0, &s->tsum[i]);
        if (!rc && by_tag)
            rc = ct_diff_collect_tags(&rep, 1, &s->tsamp[i]);
        if (rows && !rc)
            ct_rows_write(rows, run->name, name, &rep);
        ct_report_free(&rep);
        ct_job_free(&job);
        if (rc)
            return rc;
    }
    return 0;
}

static int add_segment(struct ct_diff_segment **v, size_t *n, const char *value, int side)
{
    for (size_t i = 0; i < *n; i++)
        if (!strcmp((*v)[i].value, value)) {
            if (side)
                (*v)[i].nb++;
            else
                (*v)[i].na++;
            return 0;
        }
    struct ct_diff_segment *q = realloc(*v, (*n + 1) * sizeof(*q));
    if (!q)
        return -ENOMEM;
    *v = q;
    q[*n] = (struct ct_diff_segment){strdup(value), side == 0, side == 1};
    if (!q[*n].value)
        return -ENOMEM;
    (*n)++;
    return 0;
}

int ct_diff_segments(const struct ct_diff_side s[2], struct ct_diff_segment **segs, size_t *n)
{
    int rc = 0;
    for (int k = 0; k < 2 && !rc; k++)
        for (size_t i = 0; i < s[k].rs.n && !rc; i++)
            rc = add_segment(segs, n, s[k].value[i], k);
    return rc;
}

void ct_diff_segments_free(struct ct_diff_segment *segs, size_t n)
{
    for (size_t g = 0; g < n; g++)
        free(segs[g].value);
    free(segs);
}

/* The samples of one side of a segment. */
static int side_samples(struct ct_diff_side *s, const char *value, int per_iteration,
                        const struct ct_iter_opts *io, struct ct_metric_set *out, char *err,
                        size_t errlen)
{
    for (size_t i = 0; i < s->rs.n; i++) {
        if (strcmp(s->value[i], value))
            continue;
        int rc = 0;
        if (per_iteration && s->tag_view) { /* a tag's samples, kept at load */
            const struct ct_metric_set *m = &s->samples[i];
            for (size_t k = 0; k < m->n && !rc; k++)
                for (size_t j = 0; j < m->m[k].n && !rc; j++)
                    rc = ct_metric_add(out, m->m[k].name, m->m[k].v[j]);
        } else if (per_iteration) {
            struct ct_job job;
            struct ct_report rep;
            if ((rc = ct_run_report(&s->rs.runs[i], io, &job, &rep, err, errlen)))
                return rc;
            rc = ct_diff_collect(&rep, 1, out);
            ct_report_free(&rep);
            ct_job_free(&job);
        } else {
            const struct ct_metric_set *m = &s->summary[i];
            for (size_t k = 0; k < m->n && !rc; k++)
                for (size_t j = 0; j < m->m[k].n && !rc; j++)
                    rc = ct_metric_add(out, m->m[k].name, m->m[k].v[j]);
        }
        if (rc)
            return rc;
    }
    return 0;
}

int ct_diff_side_warnings(const struct ct_diff_side s[2], char ***w, size_t *nw)
{
    struct ct_workload *v[2] = {calloc(s[0].rs.n + 1, sizeof(*v[0])),
                                calloc(s[1].rs.n + 1, sizeof(*v[1]))};
    int rc = v[0] && v[1] ? 0 : -ENOMEM;
    for (int k = 0; k < 2 && !rc; k++)
        for (size_t i = 0; i < s[k].rs.n; i++)
            v[k][i] = (struct ct_workload){s[k].nranks[i], &s[k].summary[i], s[k].cmdline[i]};
    if (!rc)
        rc = ct_diff_workload(v[0], s[0].rs.n, v[1], s[1].rs.n, w, nw);
    free(v[0]);
    free(v[1]);
    return rc;
}

/* The runs of side s with --by value `value`, for ct_diff_compare_runs. */
static size_t segment_runs(const struct ct_diff_side *s, const char *value, struct ct_diff_run *out)
{
    size_t n = 0;
    for (size_t i = 0; i < s->rs.n; i++)
        if (!strcmp(s->value[i], value))
            out[n++] = (struct ct_diff_run){&s->summary[i], &s->samples[i]};
    return n;
}

int ct_diff_same_sign(int x, int y)
{
    return (x > 0 && y > 0) || (x < 0 && y < 0);
}

int ct_diff_segment_compare(struct ct_diff_side s[2], const struct ct_diff_segment *g,
                            const struct ct_diff_opts *o, const char *primary,
                            const struct ct_iter_opts *io, struct ct_diff_segment_result *res,
                            char *err, size_t errlen)
{
    memset(res, 0, sizeof(*res));
    int per_it = res->per_iteration = g->na == 1 && g->nb == 1;
    /* runs with their iterations: both sides have a run-to-run spread */
    int run_level = res->run_level = g->na >= 2 && g->nb >= 2;
    int rc = 0;
    struct ct_metric_set *ma = &res->a, *mb = &res->b;
    if (!g->na || !g->nb)
        snprintf(res->warn, sizeof(res->warn),
                 "only side %s has runs with this value: nothing to compare", g->na ? "A" : "B");
    else if (!per_it && (g->na < CT_DIFF_MIN_RUNS || g->nb < CT_DIFF_MIN_RUNS))
        snprintf(res->warn, sizeof(res->warn),
                 "too few runs to conclude (%zu vs %zu; at least %d per side are needed: "
                 "no verdict)",
                 g->na, g->nb, CT_DIFF_MIN_RUNS);
    else if (per_it)
        snprintf(res->warn, sizeof(res->warn),
                 "one run per side: samples are iterations (and instances) within the runs, "
                 "collectives compared on their transfer part; this shows a difference "
                 "between these two runs, not between configurations");
    if (run_level) {
        struct ct_diff_run *ra = malloc(g->na * sizeof(*ra)), *rb = malloc(g->nb * sizeof(*rb));
        rc = ra && rb ? 0 : -ENOMEM;
        if (!rc)
            rc = ct_diff_compare_runs(ra, segment_runs(&s[0], g->value, ra), rb,
                                      segment_runs(&s[1], g->value, rb), o, primary, &res->rows,
                                      &res->nrows);
        free(ra);
        free(rb);
        if (!rc && primary && (!res->nrows || !res->rows[0].primary) && !res->warn[0])
            snprintf(res->warn, sizeof(res->warn), "primary metric %s is not on both sides",
                     primary);
    } else if (g->na && g->nb) {
        rc = side_samples(&s[0], g->value, per_it, io, ma, err, errlen);
        if (!rc)
            rc = side_samples(&s[1], g->value, per_it, io, mb, err, errlen);
        if (!rc)
            rc = ct_diff_compare(ma, mb, o, &res->rows, &res->nrows);
    }
    struct ct_diff_row *r = res->rows;
    size_t nr = res->nrows;
    if (!per_it && (g->na < CT_DIFF_MIN_RUNS || g->nb < CT_DIFF_MIN_RUNS))
        for (size_t i = 0; i < nr; i++)
            r[i].verdict = r[i].change = 0;
    /* what explains a change of the primary: diagnostics that changed
     * in the same direction (beyond the minimum effect or not) */
    int pchange = res->primary_change = run_level && nr && r[0].primary ? r[0].change : 0;
    if (pchange)
        for (size_t i = 1, at = 0; i < nr && at < sizeof(res->explained) - 1; i++)
            if (ct_diff_same_sign(r[i].change, pchange)) {
                int w = snprintf(res->explained + at, sizeof(res->explained) - at, "%s%s",
                                 at ? ", " : "", r[i].name);
                at += w > 0 ? (size_t)w : 0;
            }
    return rc;
}

void ct_diff_segment_result_free(struct ct_diff_segment_result *res)
{
    free(res->rows);
    for (size_t i = 0; i < res->nown; i++)
        ct_metric_set_free(&res->own[i]);
    free(res->own);
    ct_metric_set_free(&res->a);
    ct_metric_set_free(&res->b);
    memset(res, 0, sizeof(*res));
}
