/*
 * `cutrace fleet explain`'s change points (docs/fleet.md "Statistics"):
 * binary segmentation of a workload's log step times in run-start order
 * (outliers held to 2 robust scales), each split the largest two-sample t
 * and kept when a permutation of the jobs' order makes one as large at
 * most alpha / (the candidates tried) of the time, and at each kept split
 * the factors whose value changed there (fleet_pin.c runs it per
 * workload).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/compare/fleet_pin.h"
#include "decoder/compare/stats_test.h"
#include "decoder/util/stats.h"

#define CP_WINDOW 200 /* jobs each side of a change point read for what changed */

/* Max over splits k in [lo + ms, hi - ms] of the two-sample t of
 * y[lo..k) against y[k..hi) (pooled variance); its split in *at. */
static double max_t(const double *y, size_t lo, size_t hi, size_t ms, size_t *at)
{
    double best = -1;
    size_t n = hi - lo;
    double S = 0, SS = 0;
    for (size_t i = lo; i < hi; i++)
        S += y[i], SS += y[i] * y[i];
    double s1 = 0, ss1 = 0;
    for (size_t k = lo; k < hi - ms; k++) {
        s1 += y[k], ss1 += y[k] * y[k];
        size_t n1 = k + 1 - lo, n2 = n - n1;
        if (n1 < ms)
            continue;
        double m1 = s1 / (double)n1, m2 = (S - s1) / (double)n2;
        double v1 = ss1 - (double)n1 * m1 * m1, v2 = (SS - ss1) - (double)n2 * m2 * m2;
        double sp = (v1 + v2) / (double)(n - 2);
        double t = fabs(m1 - m2) / sqrt((sp > 1e-30 ? sp : 1e-30) * (1.0 / n1 + 1.0 / n2));
        if (t > best) {
            best = t;
            *at = k + 1;
        }
    }
    return best;
}

struct cpctx {
    struct ct_fleet_explain *x;
    const struct ct_fleet_jobs *js;
    size_t w;
    const double *y;
    double *perm, *win;
    uint64_t rng;
    double thresh;
    size_t *cuts;
    size_t ncuts;
};

static void segment(struct cpctx *c, size_t lo, size_t hi, int depth)
{
    size_t ms = CT_FX_MIN_SIDE;
    if (depth > 3 || hi - lo < 2 * ms + 1 || c->ncuts >= 16)
        return;
    /* the segment's values held to its median +- 2 robust scales (MAD x
     * 1.4826): one job slowed by something recorded nowhere, at the edge
     * of the series, is not a change of the workload. The clipping depends
     * only on the values, not their order, so the permutations stay
     * exchangeable. */
    size_t n = hi - lo;
    memcpy(c->perm, c->y + lo, n * sizeof(double));
    double med = ct_median(c->perm, n);
    for (size_t i = 0; i < n; i++)
        c->perm[i] = fabs(c->y[lo + i] - med);
    double sc = 2 * 1.4826 * ct_median(c->perm, n);
    for (size_t i = 0; i < n; i++) {
        double v = c->y[lo + i];
        c->win[i] = sc > 0 && v > med + sc ? med + sc : sc > 0 && v < med - sc ? med - sc : v;
    }
    size_t at = 0;
    double t = max_t(c->win, 0, n, ms, &at);
    if (!(t > 0))
        return;
    at += lo;
    /* the same statistic over random orders of the same jobs */
    unsigned B = c->x->o.perms, ge = 0;
    for (unsigned b = 0; b < B; b++) {
        memcpy(c->perm, c->win, (hi - lo) * sizeof(double));
        for (size_t i = hi - lo - 1; i > 0; i--) {
            size_t k = (size_t)(ct_rng_next(&c->rng) % (i + 1));
            double tmp = c->perm[i];
            c->perm[i] = c->perm[k];
            c->perm[k] = tmp;
        }
        size_t dummy;
        ge += max_t(c->perm, 0, hi - lo, ms, &dummy) >= t - 1e-12;
    }
    double p = (1.0 + ge) / (1.0 + B);
    if (p > c->thresh)
        return;
    c->cuts[c->ncuts++] = at;
    segment(c, lo, at, depth + 1);
    segment(c, at, hi, depth + 1);
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* "key: old -> new" for each factor whose values moved at the cut: a value
 * in at most a fifth of the jobs of [lo, cut) and at least four fifths of
 * [cut, hi). */
static int changed_at(const struct ct_fleet_jobs *js, const struct ct_fx_workload *W, size_t lo,
                      size_t cut, size_t hi, struct ct_fx_change *ch)
{
    const char *vals[256];
    for (size_t i = lo; i < hi; i++) {
        const struct ct_fleet_job *j = &js->j[W->jobs[i]];
        for (size_t v = 0; v < j->nfv; v++) {
            const char *key = j->fv[v].key, *val = j->fv[v].value;
            /* once per (key, value) */
            int seen = 0;
            for (size_t q = lo; q < i && !seen; q++) {
                const struct ct_fleet_job *k = &js->j[W->jobs[q]];
                size_t nv = ct_fleet_values(k, key, vals, 256);
                for (size_t z = 0; z < nv && !seen; z++)
                    seen = !strcmp(vals[z], val);
            }
            for (size_t z = 0; z < v && !seen; z++)
                seen = !strcmp(j->fv[z].key, key) && !strcmp(j->fv[z].value, val);
            if (seen)
                continue;
            double before = 0, after = 0;
            for (size_t q = lo; q < hi; q++) {
                const struct ct_fleet_job *k = &js->j[W->jobs[q]];
                size_t nv = ct_fleet_values(k, key, vals, 256);
                int has = 0;
                for (size_t z = 0; z < nv; z++)
                    has |= !strcmp(vals[z], val);
                *(q < cut ? &before : &after) += has;
            }
            before /= (double)(cut - lo);
            after /= (double)(hi - cut);
            if (!(before <= 0.2 && after >= 0.8))
                continue;
            /* what it replaced: the key's value that went the other way */
            const char *old = NULL;
            for (size_t q = lo; q < cut && !old; q++) {
                const struct ct_fleet_job *k = &js->j[W->jobs[q]];
                size_t nv = ct_fleet_values(k, key, vals, 256);
                for (size_t z = 0; z < nv && !old; z++) {
                    double b2 = 0, a2 = 0;
                    for (size_t r = lo; r < hi; r++) {
                        const char *v2[256];
                        size_t n2 = ct_fleet_values(&js->j[W->jobs[r]], key, v2, 256);
                        int has = 0;
                        for (size_t y = 0; y < n2; y++)
                            has |= !strcmp(v2[y], vals[z]);
                        *(r < cut ? &b2 : &a2) += has;
                    }
                    if (b2 / (double)(cut - lo) >= 0.8 && a2 / (double)(hi - cut) <= 0.2)
                        old = vals[z];
                }
            }
            char line[512];
            snprintf(line, sizeof(line), "%s: %s -> %s", key, old ? old : "(others)", val);
            char **x = realloc(ch->changed, (ch->nchanged + 1) * sizeof(*x));
            if (!x)
                return -ENOMEM;
            ch->changed = x;
            if (!(x[ch->nchanged] = strdup(line)))
                return -ENOMEM;
            ch->nchanged++;
        }
    }
    return 0;
}

int ct_fx_change_points(struct ct_fleet_explain *x, size_t w, const double *y, size_t ntested)
{
    const struct ct_fx_workload *W = &x->w[w];
    struct cpctx c = {.x = x, .js = x->js, .w = w, .y = y};
    uint64_t h = x->o.seed;
    for (const char *s = W->name; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    c.rng = h;
    c.thresh = x->o.alpha / (double)(ntested ? ntested : 1);
    c.perm = malloc(W->n * sizeof(double));
    c.win = malloc(W->n * sizeof(double));
    c.cuts = malloc(16 * sizeof(size_t));
    if (!c.perm || !c.win || !c.cuts) {
        free(c.perm);
        free(c.win);
        free(c.cuts);
        return -ENOMEM;
    }
    segment(&c, 0, W->n, 0);
    qsort(c.cuts, c.ncuts, sizeof(size_t), cmp_size);
    int rc = 0;
    for (size_t k = 0; k < c.ncuts && !rc; k++) {
        size_t lo = k ? c.cuts[k - 1] : 0, hi = k + 1 < c.ncuts ? c.cuts[k + 1] : W->n;
        size_t cut = c.cuts[k];
        struct ct_fx_change *ch = realloc(x->c, (x->nc + 1) * sizeof(*ch));
        if (!ch) {
            rc = -ENOMEM;
            break;
        }
        x->c = ch;
        ch = &x->c[x->nc++];
        memset(ch, 0, sizeof(*ch));
        ch->w = w;
        ch->at = cut;
        ch->at_us = x->js->j[W->jobs[cut]].start_us;
        /* the step's ratio across it: geometric means of the segments beside
         * it, with Student's 95 % interval (not corrected for having
         * looked for the split: read it as the size, not as a test) */
        double m1 = 0, m2 = 0, v1 = 0, v2 = 0;
        size_t n1 = cut - lo, n2 = hi - cut;
        for (size_t i = lo; i < cut; i++)
            m1 += y[i];
        for (size_t i = cut; i < hi; i++)
            m2 += y[i];
        m1 /= (double)n1;
        m2 /= (double)n2;
        for (size_t i = lo; i < cut; i++)
            v1 += (y[i] - m1) * (y[i] - m1);
        for (size_t i = cut; i < hi; i++)
            v2 += (y[i] - m2) * (y[i] - m2);
        double df = (double)(n1 + n2 - 2);
        double se = sqrt((v1 + v2) / df * (1.0 / n1 + 1.0 / n2));
        double tq = ct_t_q2(0.05, df);
        ch->effect_pct = 100 * (exp(m2 - m1) - 1);
        ch->lo_pct = 100 * (exp(m2 - m1 - tq * se) - 1);
        ch->hi_pct = 100 * (exp(m2 - m1 + tq * se) - 1);
        ch->p = ct_t_p2((m2 - m1) / (se > 0 ? se : 1e-30), df);
        /* what changed is read from at most CP_WINDOW jobs each side: a
         * factor that changed at the point changed there, and a workload
         * of many thousand jobs costs no more */
        size_t wlo = cut - lo > CP_WINDOW ? cut - CP_WINDOW : lo;
        size_t whi = hi - cut > CP_WINDOW ? cut + CP_WINDOW : hi;
        rc = changed_at(x->js, W, wlo, cut, whi, ch);
    }
    free(c.perm);
    free(c.win);
    free(c.cuts);
    return rc;
}
