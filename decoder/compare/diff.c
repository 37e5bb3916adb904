/*
 * `cutrace diff`'s comparison of two metric sets (docs/diff.md): ratio of
 * medians B/A with a seeded percentile-bootstrap 95 % interval, two-sided
 * Mann-Whitney U, Benjamini-Hochberg across the compared metrics, and a
 * verdict that needs both significance and an interval entirely beyond the
 * minimum effect. Never prints.
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
        struct ct_diff_row *r = &v[i];
        r->q = p[i];
        /* a metric that is zero on side A has no ratio: nothing to conclude
         * about a relative change */
        if (r->q < o->alpha && r->ratio >= 0) {
            if (r->lo > 1 + o->min_effect)
                r->verdict = 1;
            else if (r->hi < 1 - o->min_effect)
                r->verdict = -1;
        }
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
