/*
 * `cutrace diff`'s comparison of two metric sets (docs/diff.md): ratio of
 * medians B/A with a seeded percentile-bootstrap 95 % interval, two-sided
 * Mann-Whitney U, Benjamini-Hochberg across the compared metrics, and a
 * three-way verdict: beyond the minimum effect (significance and an
 * interval entirely beyond it), a change possibly below it (significance
 * and an interval that excludes no change), no evidence. A figure that
 * cannot be computed is NAN with its reason, never a number that looks
 * like one. Never prints.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/compare/diff.h"
#include "decoder/util/stats.h"
#include "decoder/compare/stats_test.h"

const char *ct_diff_verdict_name(int v)
{
    return v > 0 ? "regressed" : v < 0 ? "improved" : "no evidence";
}

const char *ct_diff_change_name(int c)
{
    switch (c) {
    case 2: return "regressed";
    case 1: return "worse, possibly below min effect";
    case -1: return "better, possibly below min effect";
    case -2: return "improved";
    default: return "no evidence";
    }
}

int ct_diff_higher_is_better(const char *metric)
{
    /* GPM activity while busy: the same work in less time is more of it */
    return !strcmp(metric, "goodput_pct") || !strncmp(metric, "gpm_", 4) ||
           !strncmp(metric, "link_gbps:", 10);
}

int ct_diff_classify(double q, double alpha, double lo, double hi, double min_effect,
                     int higher_is_better)
{
    int c = 0;
    /* comparisons with a NaN bound are false: an unknown bound excludes
     * nothing on its side */
    if (!(q < alpha))
        c = 0;
    else if (lo > 1 + min_effect)
        c = 2;
    else if (hi < 1 - min_effect)
        c = -2;
    else if (lo > 1)
        c = 1;
    else if (hi < 1)
        c = -1;
    return higher_is_better ? -c : c;
}

static void unavailable(struct ct_diff_row *r, const char *figure, const char *reason)
{
    if (r->nunavail < sizeof(r->unavail) / sizeof(r->unavail[0]))
        r->unavail[r->nunavail++] = (struct ct_diff_unavail){figure, reason};
}

/*
 * The row's figures that cannot be computed, with their reasons, then its
 * verdict. A percentile-bootstrap bound is +inf when more resamples than the
 * tail holds have a median of 0 on side A (a stall that some runs do not
 * have): the interval is unbounded on that side, which no number states.
 */
static void finish_row(struct ct_diff_row *r, const struct ct_diff_opts *o)
{
    r->nunavail = 0;
    if (r->ratio < 0) {
        static const char why[] = "the median of A is 0: no relative change";
        r->lo = r->hi = NAN;
        unavailable(r, "ratio", why);
        unavailable(r, "ci_low", why);
        unavailable(r, "ci_high", why);
    } else {
        if (!isfinite(r->lo)) {
            r->lo = NAN;
            unavailable(r, "ci_low",
                        "A's resampled median is 0 in more than 97.5 % of the bootstrap "
                        "resamples");
        }
        if (!isfinite(r->hi)) {
            r->hi = NAN;
            unavailable(r, "ci_high",
                        "unbounded: A's resampled median is 0 in more than 2.5 % of the "
                        "bootstrap resamples");
        }
    }
    r->change = r->ratio < 0 ? 0
                             : ct_diff_classify(r->q, o->alpha, r->lo, r->hi, o->min_effect,
                                                ct_diff_higher_is_better(r->name));
    r->verdict = r->change / 2;
}

static double median_copy(const double *v, size_t n)
{
    double *t = malloc((n ? n : 1) * sizeof(*t));
    if (!t)
        return NAN;
    memcpy(t, v, n * sizeof(*t));
    double m = ct_median(t, n);
    free(t);
    return m;
}

/* The seed of one metric's bootstrap: the run's seed mixed with the name,
 * so a metric's interval does not depend on which other metrics exist. */
static uint64_t metric_seed(uint64_t seed, const char *name)
{
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    uint64_t st = seed ^ h;
    return ct_rng_next(&st);
}

int ct_diff_compare(const struct ct_metric_set *a, const struct ct_metric_set *b,
                    const struct ct_diff_opts *o, struct ct_diff_row **rows, size_t *n)
{
    *rows = NULL;
    *n = 0;
    struct ct_diff_row *v = calloc(a->n ? a->n : 1, sizeof(*v));
    double *p = calloc(a->n ? a->n : 1, sizeof(*p));
    if (!v || !p) {
        free(v);
        free(p);
        return -ENOMEM;
    }
    size_t k = 0;
    int rc = 0;
    for (size_t i = 0; i < a->n && !rc; i++) {
        const struct ct_metric *ma = &a->m[i], *mb = ct_metric_find(b, ma->name);
        if (!mb || !ma->n || !mb->n)
            continue;
        struct ct_diff_row *r = &v[k];
        r->name = ma->name;
        r->na = ma->n;
        r->nb = mb->n;
        r->med_a = median_copy(ma->v, ma->n);
        r->med_b = median_copy(mb->v, mb->n);
        r->ratio = r->lo = r->hi = -1;
        if (r->med_a > 0) {
            r->ratio = r->med_b / r->med_a;
            rc = ct_boot_ratio_ci(ma->v, ma->n, mb->v, mb->n, o->reps,
                                  metric_seed(o->seed, ma->name), &r->lo, &r->hi);
        }
        r->p = ct_mwu_p(ma->v, ma->n, mb->v, mb->n);
        if (r->p < 0)
            rc = -ENOMEM;
        p[k++] = r->p;
    }
    if (!rc)
        rc = ct_bh_adjust(p, k, p);
    for (size_t i = 0; i < k && !rc; i++) {
        /* a metric that is zero on side A has no ratio: nothing to conclude
         * about a relative change */
        v[i].q = p[i];
        finish_row(&v[i], o);
    }
    free(p);
    if (rc) {
        free(v);
        return rc;
    }
    *rows = v;
    *n = k;
    return 0;
}

/* ---- runs with their iterations ---- */

/* The metric's value in a run's summary, or NAN. */
static double run_value(const struct ct_diff_run *r, const char *name)
{
    const struct ct_metric *m = ct_metric_find(r->summary, name);
    return m && m->n ? m->v[0] : NAN;
}

/*
 * What the run's own scatter implies for the variance of the log of its
 * median: (pi/2) (1.4826 MAD / median)^2 / n, the large-sample variance of
 * a median (exact for normal samples, and a robust scale so a few outlier
 * iterations do not inflate it). 0 without samples.
 */
static double run_floor(const struct ct_diff_run *r, const char *name, size_t *nsamp)
{
    const struct ct_metric *m = r->samples ? ct_metric_find(r->samples, name) : NULL;
    *nsamp = m ? m->n : 0;
    if (!m || m->n < 2)
        return 0;
    double *t = malloc(m->n * sizeof(*t));
    if (!t)
        return 0;
    memcpy(t, m->v, m->n * sizeof(*t));
    double med = ct_median(t, m->n);
    for (size_t i = 0; i < m->n; i++)
        t[i] = fabs(m->v[i] - med);
    double mad = ct_median(t, m->n);
    free(t);
    if (!(med > 0))
        return 0;
    double rel = 1.4826 * mad / med;
    return M_PI / 2 * rel * rel / (double)m->n;
}

struct side_stats {
    size_t n, samples;
    double mean, var; /* of the log run values; var floored */
    int positive;     /* every run value > 0 */
};

static void side_stats(const struct ct_diff_run *r, size_t nr, const char *name, double *vals,
                       struct side_stats *s)
{
    memset(s, 0, sizeof(*s));
    s->positive = 1;
    double floor = 0;
    for (size_t i = 0; i < nr; i++) {
        double v = run_value(&r[i], name);
        if (!isfinite(v))
            continue;
        size_t ns;
        floor += run_floor(&r[i], name, &ns);
        s->samples += ns;
        vals[s->n++] = v;
        s->positive &= v > 0;
    }
    if (!s->n || !s->positive)
        return;
    for (size_t i = 0; i < s->n; i++)
        s->mean += log(vals[i]);
    s->mean /= (double)s->n;
    double ss = 0;
    for (size_t i = 0; i < s->n; i++)
        ss += (log(vals[i]) - s->mean) * (log(vals[i]) - s->mean);
    double var = s->n > 1 ? ss / (double)(s->n - 1) : 0;
    floor /= (double)s->n;
    s->var = var > floor ? var : floor;
}

/* Welch's t on the log run values: ratio, interval, p and df into r. */
static void welch(const struct side_stats *a, const struct side_stats *b, struct ct_diff_row *r)
{
    double va = a->var / (double)a->n, vb = b->var / (double)b->n, se2 = va + vb;
    double d = b->mean - a->mean;
    r->ratio = exp(d);
    if (!(se2 > 0)) { /* every run alike on both sides */
        r->lo = r->hi = r->ratio;
        r->p = d == 0 ? 1 : 0;
        r->df = (double)(a->n + b->n - 2);
        return;
    }
    double se = sqrt(se2);
    double den = va * va / (double)(a->n - 1) + vb * vb / (double)(b->n - 1);
    r->df = den > 0 ? se2 * se2 / den : (double)(a->n + b->n - 2);
    r->p = ct_t_p2(d / se, r->df);
    double tq = ct_t_q2(0.05, r->df);
    r->lo = exp(d - tq * se);
    r->hi = exp(d + tq * se);
}

int ct_diff_compare_runs(const struct ct_diff_run *a, size_t na, const struct ct_diff_run *b,
                         size_t nb, const struct ct_diff_opts *o, const char *primary,
                         struct ct_diff_row **rows, size_t *n)
{
    *rows = NULL;
    *n = 0;
    if (!primary)
        primary = "step_us";
    /* the metrics: those of side A's runs, in first-seen order */
    struct ct_metric_set names = {0};
    int rc = 0;
    for (size_t i = 0; i < na && !rc; i++)
        for (size_t k = 0; k < a[i].summary->n && !rc; k++)
            if (!ct_metric_find(&names, a[i].summary->m[k].name))
                rc = ct_metric_add(&names, a[i].summary->m[k].name, 0);
    size_t cap = names.n ? names.n : 1, k = 0;
    struct ct_diff_row *v = calloc(cap, sizeof(*v));
    double *va = malloc((na ? na : 1) * sizeof(double)),
           *vb = malloc((nb ? nb : 1) * sizeof(double));
    double *p = malloc(cap * sizeof(double));
    if (rc || !v || !va || !vb || !p) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t m = 0; m < names.n; m++) {
        const char *name = names.m[m].name;
        struct side_stats sa, sb;
        side_stats(a, na, name, va, &sa);
        side_stats(b, nb, name, vb, &sb);
        if (!sa.n || !sb.n)
            continue;
        struct ct_diff_row *r = &v[k++];
        r->name = name;
        r->primary = !strcmp(name, primary);
        r->na = sa.n;
        r->nb = sb.n;
        r->samples_a = sa.samples;
        r->samples_b = sb.samples;
        r->med_a = median_copy(va, sa.n);
        r->med_b = median_copy(vb, sb.n);
        r->ratio = r->lo = r->hi = -1;
        if (sa.n >= 2 && sb.n >= 2 && sa.positive && sb.positive) {
            r->run_level = 1;
            welch(&sa, &sb, r);
        } else {
            /* a zero value somewhere (a stall that some runs do not have):
             * no log scale; the runs' values by rank, as for one sample each */
            if (r->med_a > 0) {
                r->ratio = r->med_b / r->med_a;
                rc = ct_boot_ratio_ci(va, sa.n, vb, sb.n, o->reps, metric_seed(o->seed, name),
                                      &r->lo, &r->hi);
                if (rc)
                    goto out;
            }
            r->p = ct_mwu_p(va, sa.n, vb, sb.n);
            if (r->p < 0) {
                rc = -ENOMEM;
                goto out;
            }
        }
    }
    /* the primary alone at alpha; the diagnostics corrected among themselves */
    size_t nd = 0;
    for (size_t i = 0; i < k; i++)
        if (!v[i].primary)
            p[nd++] = v[i].p;
    if ((rc = ct_bh_adjust(p, nd, p)))
        goto out;
    nd = 0;
    for (size_t i = 0; i < k; i++) {
        struct ct_diff_row *r = &v[i];
        r->q = r->primary ? r->p : p[nd++];
        finish_row(r, o);
    }
    /* the primary first */
    for (size_t i = 1; i < k; i++)
        if (v[i].primary) {
            struct ct_diff_row t = v[i];
            memmove(v + 1, v, i * sizeof(*v));
            v[0] = t;
            break;
        }
out:
    free(va);
    free(vb);
    free(p);
    if (rc) {
        free(v);
        /* names borrow nothing yet */
        ct_metric_set_free(&names);
        return rc;
    }
    /* row names must outlive the name set: point them at side A's metrics */
    for (size_t i = 0; i < k; i++)
        for (size_t r = 0; r < na; r++) {
            const struct ct_metric *m = ct_metric_find(a[r].summary, v[i].name);
            if (m) {
                v[i].name = m->name;
                break;
            }
        }
    ct_metric_set_free(&names);
    *rows = v;
    *n = k;
    return 0;
}
