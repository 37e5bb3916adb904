/*
 * `cutrace fleet explain`: a regression pinned on the factor that carries
 * it (docs/fleet.md "Statistics"). Within each workload (never across
 * them, so a factor is not confused with the workload that happens to run
 * on it), the log of each job's median step time is modelled as
 *
 *   log step_j = mu_W + sum_c beta_c x_jc + e_j
 *
 * over candidate columns x_c: one per value of a factor (host, GPU model,
 * driver, CUDA, NCCL and cutrace versions, tags, NCCL settings, recorded
 * configuration) against the factor's most common value (against the jobs
 * without it for a job's hosts). Columns identical or opposite over the
 * workload's jobs are one candidate, reported as confounded. The fit is
 * Huber's M-estimate (IRLS with the MAD scale), so a few jobs slowed by
 * something recorded nowhere do not make a factor of the level they ran
 * with; its standard errors are the larger of Huber's (1981, with his
 * small-sample correction) and the sandwich of each job's own residual
 * with HC3's leverage correction, so a value seen in few jobs is judged
 * by their own scatter. Columns are chosen per workload in two passes:
 * forward entry at a liberal 0.05, each candidate tested in the model of
 * those already in (several factors of similar size mask each other in the
 * model of none), then backward elimination at alpha / m (Bonferroni over
 * the m candidates tried in every workload) on the joint model, then
 * entry at alpha / m again, until nothing changes: a factor that only
 * looks slow because it ran with a slow one leaves once that one is in. The
 * final model's p-values are adjusted by Benjamini-Hochberg over all m,
 * and the intervals of the R discoveries are Benjamini-Yekutieli's
 * false-coverage-rate intervals, at level 1 - R alpha / m.
 *
 * Each discovery's effect is also fitted, with the same model, on the
 * parts of the step (compute, exposed communication, data stalls,
 * checkpoint, other idle: µs per step) and on the bus bandwidth of the
 * workload's main collective, so it is named with the metric that carries
 * it. Change points: binary segmentation of each workload's log step in
 * run-start order (outliers held to 2 robust scales), each split tested
 * by a permutation of the jobs' order, with the factors whose value
 * changed at the point.
 */
#include "decoder/compare/fleet_pin.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/compare/stats_test.h"
#include "decoder/util/stats.h"

#define MAXP      24    /* columns of one model: the intercept and what entered */
#define MIN_SIDE  3     /* jobs with and without a candidate value */
#define HUBER_K   1.345 /* 95 % efficiency at the normal */
#define LIBERAL   0.05  /* forward entry before the strict, joint test */
#define CP_WINDOW 200   /* jobs each side of a change point read for what changed */

const char *ct_fx_part_name(int k)
{
    static const char *const n[CT_FX_NPARTS] = {"step_mean",      "compute",    "exposed_comm",
                                                "straggler_wait", "data_stall", "checkpoint",
                                                "other_idle"};
    return k >= 0 && k < CT_FX_NPARTS ? n[k] : "?";
}

/* ------------------------------------------------------------ the fit */

struct fit {
    int ok, aliased;
    size_t n, p;
    double beta[MAXP], se[MAXP];
    double df, scale;
    /* per 0/1 column: the jobs with it and without it whose residual the
     * fit did not clip (what its estimate rests on) */
    double eff1[MAXP], eff0[MAXP];
};

/* Cholesky of the p x p matrix a in place (lower); 0, or the column whose
 * pivot vanished (1-based): that column is a combination of those before
 * it over the rows used. */
static int chol(double *a, size_t p)
{
    for (size_t j = 0; j < p; j++) {
        double d = a[j * p + j];
        double orig = d;
        for (size_t k = 0; k < j; k++)
            d -= a[j * p + k] * a[j * p + k];
        if (!(d > 1e-9 * (orig > 1 ? orig : 1)))
            return (int)j + 1;
        d = sqrt(d);
        a[j * p + j] = d;
        for (size_t i = j + 1; i < p; i++) {
            double s = a[i * p + j];
            for (size_t k = 0; k < j; k++)
                s -= a[i * p + k] * a[j * p + k];
            a[i * p + j] = s / d;
        }
    }
    return 0;
}

/* Solves L L' x = b in place. */
static void chol_solve(const double *l, size_t p, double *b)
{
    for (size_t i = 0; i < p; i++) {
        double s = b[i];
        for (size_t k = 0; k < i; k++)
            s -= l[i * p + k] * b[k];
        b[i] = s / l[i * p + i];
    }
    for (size_t i = p; i-- > 0;) {
        double s = b[i];
        for (size_t k = i + 1; k < p; k++)
            s -= l[k * p + i] * b[k];
        b[i] = s / l[i * p + i];
    }
}

/* Weighted normal equations: beta for weights w over the used rows; the
 * Cholesky factor of X'WX left in a. */
static int wls(const double *y, const double *const *X, size_t p, size_t n, const double *w,
               double *a, double *beta)
{
    for (size_t r = 0; r < p; r++) {
        double b = 0;
        for (size_t i = 0; i < n; i++)
            b += w[i] * X[r][i] * y[i];
        beta[r] = b;
        for (size_t c = 0; c <= r; c++) {
            double s = 0;
            for (size_t i = 0; i < n; i++)
                s += w[i] * X[r][i] * X[c][i];
            a[r * p + c] = a[c * p + r] = s;
        }
    }
    int bad = chol(a, p);
    if (bad)
        return bad;
    chol_solve(a, p, beta);
    return 0;
}

static double mad_scale(const double *r, const double *use, size_t n, double *tmp)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (use[i] > 0)
            tmp[k++] = fabs(r[i]);
    double m = ct_median(tmp, k);
    return 1.4826 * m;
}

/*
 * Huber's M-estimate of y on the columns X[0..p) over the rows with
 * use[i] > 0 (X[0] is the intercept). scratch holds 4n doubles. Aliased
 * when a column is a combination of the others over those rows.
 */
static void huber(const double *y, const double *const *X, size_t p, size_t n, const double *use,
                  double *scratch, struct fit *f)
{
    memset(f, 0, sizeof(*f));
    f->p = p;
    double *w = scratch, *r = scratch + n, *tmp = scratch + 2 * n;
    double a[MAXP * MAXP], beta[MAXP];
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        w[i] = use[i] > 0 ? 1 : 0;
        used += use[i] > 0;
    }
    f->n = used;
    if (used < p + 2)
        return;
    int bad = wls(y, X, p, n, w, a, beta);
    if (bad) {
        f->aliased = bad;
        return;
    }
    double s = 0;
    for (int it = 0; it < 50; it++) {
        for (size_t i = 0; i < n; i++) {
            double fit = 0;
            for (size_t c = 0; c < p; c++)
                fit += X[c][i] * beta[c];
            r[i] = y[i] - fit;
        }
        s = mad_scale(r, use, n, tmp);
        if (!(s > 1e-12))
            break; /* more than half the residuals are 0: least squares stands */
        for (size_t i = 0; i < n; i++)
            w[i] = use[i] > 0 ? (fabs(r[i]) <= HUBER_K * s ? 1 : HUBER_K * s / fabs(r[i])) : 0;
        double nb[MAXP];
        if (wls(y, X, p, n, w, a, nb))
            break;
        double d = 0;
        for (size_t c = 0; c < p; c++) {
            d = fabs(nb[c] - beta[c]) > d ? fabs(nb[c] - beta[c]) : d;
            beta[c] = nb[c];
        }
        if (d < 1e-10)
            break;
    }
    for (size_t i = 0; i < n; i++) {
        double fit = 0;
        for (size_t c = 0; c < p; c++)
            fit += X[c][i] * beta[c];
        r[i] = y[i] - fit;
    }
    /* Huber's covariance: K^2 [sum psi^2 / (n - p)] / m^2 (X'X)^-1, m the
     * share of unclipped residuals, K = 1 + p/n (1 - m)/m */
    double psi2 = 0, m = 0, ss = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(use[i] > 0))
            continue;
        ss += r[i] * r[i];
        if (s > 1e-12) {
            double u = r[i] / s;
            double ps = u > HUBER_K ? HUBER_K : u < -HUBER_K ? -HUBER_K : u;
            psi2 += ps * ps;
            m += fabs(u) <= HUBER_K;
        }
    }
    double dfree = (double)used - (double)p;
    double var;
    if (s > 1e-12 && m > 0) {
        m /= (double)used;
        double K = 1 + (double)p / (double)used * (1 - m) / m;
        var = K * K * s * s * (psi2 / dfree) / (m * m);
    } else {
        var = ss / dfree;
    }
    for (size_t i = 0; i < n; i++)
        w[i] = use[i] > 0 ? 1 : 0;
    if (wls(y, X, p, n, w, a, tmp)) /* X'X's factor for the covariance */
        return;
    /* The same covariance from each job's own residual (the sandwich
     * A^-1 B A^-1, A = sum psi'(u) x x', B = sum (psi(u) / (1 - h))^2 x x'
     * with the leverage h: HC3): a value seen in few jobs, one of them far
     * off, has the scatter of its own jobs, not the workload's. Each
     * column's standard error is the larger of the two. */
    double bread[MAXP * MAXP], meat[MAXP * MAXP] = {0};
    int sandwich = s > 1e-12;
    if (sandwich) {
        for (size_t i = 0; i < n; i++)
            w[i] = use[i] > 0 && fabs(r[i]) <= HUBER_K * s ? 1 : 0;
        sandwich = !wls(y, X, p, n, w, bread, tmp);
    }
    for (size_t i = 0; sandwich && i < n; i++) {
        if (!(use[i] > 0))
            continue;
        double z[MAXP], h = 0;
        for (size_t c = 0; c < p; c++)
            z[c] = X[c][i];
        /* h = x' (X'X)^-1 x: L z = x, h = |z|^2 */
        for (size_t c = 0; c < p; c++) {
            double v = z[c];
            for (size_t k = 0; k < c; k++)
                v -= a[c * p + k] * z[k];
            z[c] = v / a[c * p + c];
            h += z[c] * z[c];
        }
        h = h < 0.99 ? h : 0.99;
        double u = r[i] / s;
        double ps = (u > HUBER_K ? HUBER_K : u < -HUBER_K ? -HUBER_K : u) / (1 - h);
        for (size_t c = 0; c < p; c++)
            for (size_t k = 0; k < p; k++)
                meat[c * p + k] += ps * ps * X[c][i] * X[k][i];
    }
    for (size_t c = 0; c < p; c++) {
        double e[MAXP] = {0};
        e[c] = 1;
        chol_solve(a, p, e);
        f->se[c] = sqrt(var * e[c]);
        if (sandwich) {
            double v[MAXP] = {0}, q = 0;
            v[c] = 1;
            chol_solve(bread, p, v);
            for (size_t k = 0; k < p; k++)
                for (size_t l = 0; l < p; l++)
                    q += v[k] * meat[k * p + l] * v[l];
            double se2 = sqrt(s * s * q);
            f->se[c] = se2 > f->se[c] ? se2 : f->se[c];
        }
        f->beta[c] = beta[c];
        f->eff1[c] = f->eff0[c] = 0;
        for (size_t i = 0; i < n; i++) {
            if (!(use[i] > 0))
                continue;
            int kept = !(s > 1e-12) || fabs(r[i]) <= HUBER_K * s;
            *(X[c][i] > 0.5 ? &f->eff1[c] : &f->eff0[c]) += kept;
        }
    }
    f->df = dfree;
    f->scale = sqrt(var);
    f->ok = var >= 0 && dfree >= 1;
}

/* ------------------------------------------------------------ candidates */

struct cand {
    char *factor, *value, *baseline;
    char **alias; /* "=factor=value" (always together) or "!factor=value" (never) */
    size_t nalias;
    double *x;
    size_t n1;
    int selected, model_alias;
    double p, q;
    struct fit fin;
    size_t col; /* in the final model */
};

struct wmodel {
    struct ct_fx_workload *W;
    struct cand *c;
    size_t nc;
    double *y;
    double *ycp; /* what change points are searched in (explain_run) */
    double *one;
    size_t sel[MAXP];
    size_t nsel;
};

static int same(const double *a, const double *b, size_t n, int flip)
{
    for (size_t i = 0; i < n; i++)
        if ((a[i] > 0.5) != ((b[i] > 0.5) != flip))
            return 0;
    return 1;
}

static int push_alias(struct cand *c, char kind, const char *factor, const char *value)
{
    char **a = realloc(c->alias, (c->nalias + 1) * sizeof(*a));
    if (!a)
        return -ENOMEM;
    c->alias = a;
    size_t n = strlen(factor) + strlen(value) + 3;
    if (!(a[c->nalias] = malloc(n)))
        return -ENOMEM;
    snprintf(a[c->nalias], n, "%c%s=%s", kind, factor, value);
    c->nalias++;
    return 0;
}

/* Adds the column (or an alias of an existing one). x is taken. */
static int add_cand(struct wmodel *m, const char *factor, const char *value, const char *baseline,
                    double *x, size_t n)
{
    size_t n1 = 0;
    for (size_t i = 0; i < n; i++)
        n1 += x[i] > 0.5;
    if (n1 < MIN_SIDE || n - n1 < MIN_SIDE) {
        free(x);
        return 0;
    }
    for (size_t k = 0; k < m->nc; k++)
        for (int flip = 0; flip < 2; flip++) {
            struct cand *e = &m->c[k];
            if (!same(e->x, x, n, flip))
                continue;
            if (flip && !strcmp(e->factor, factor) && n1 < e->n1 && !e->baseline && !baseline) {
                /* two values of a job's hosts that split the jobs between
                 * them: the one with fewer jobs is named ("host=h7", not
                 * "host=h2" 10 % faster); the other's aliases turn round */
                char *f2 = strdup(factor), *v2 = strdup(value);
                if (!f2 || !v2) {
                    free(f2);
                    free(v2);
                    free(x);
                    return -ENOMEM;
                }
                for (size_t a = 0; a < e->nalias; a++)
                    e->alias[a][0] = e->alias[a][0] == '=' ? '!' : '=';
                int rc = push_alias(e, '!', e->factor, e->value);
                free(e->factor);
                free(e->value);
                free(e->x);
                e->factor = f2;
                e->value = v2;
                e->x = x;
                e->n1 = n1;
                return rc;
            }
            free(x);
            return push_alias(e, flip ? '!' : '=', factor, value);
        }
    struct cand *c = realloc(m->c, (m->nc + 1) * sizeof(*c));
    if (!c) {
        free(x);
        return -ENOMEM;
    }
    m->c = c;
    c = &m->c[m->nc++];
    memset(c, 0, sizeof(*c));
    c->factor = strdup(factor);
    c->value = strdup(value);
    c->baseline = baseline ? strdup(baseline) : NULL;
    c->x = x;
    c->n1 = n1;
    c->p = 1;
    if (!c->factor || !c->value || (baseline && !c->baseline))
        return -ENOMEM;
    return 0;
}

/* The order factors are taken in, so that of confounded columns the
 * first kind is the one named (a host before the clock policy it had, a
 * driver before the CUDA version it implies): hardware, software, the
 * recorded configuration, NCCL settings, tags. */
static int key_rank(const char *k)
{
    static const char *const order[] = {"host",         "gpu",          "driver",
                                        "cuda_version", "nccl_version", "cutrace_version"};
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
        if (!strcmp(k, order[i]))
            return (int)i;
    return !strncmp(k, "config.", 7) ? 6 : !strncmp(k, "env.", 4) ? 7 : 8;
}

static int cmp_key(const void *a, const void *b)
{
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    int d = key_rank(x) - key_rank(y);
    return d ? d : strcmp(x, y);
}

/* Jobs of the whole fleet with value v of key (with "(none)": without
 * the key), for the baseline every workload compares against. */
static size_t fleet_count(const struct ct_fleet_jobs *js, const char *key, const char *v,
                          const char **vals)
{
    size_t c = 0;
    for (size_t i = 0; i < js->n; i++) {
        size_t nv = ct_fleet_values(&js->j[i], key, vals, 4096);
        if (!nv)
            c += !strcmp(v, "(none)");
        for (size_t k = 0; k < nv; k++)
            c += !strcmp(vals[k], v);
    }
    return c;
}

/* The workload's candidate columns, factor by factor (keys sorted). */
static int candidates(const struct ct_fleet_jobs *js, struct wmodel *m)
{
    size_t n = m->W->n;
    /* every factor key of the workload's jobs */
    char **keys = NULL;
    size_t nk = 0;
    for (size_t i = 0; i < n; i++) {
        const struct ct_fleet_job *j = &js->j[m->W->jobs[i]];
        for (size_t v = 0; v < j->nfv; v++) {
            int seen = 0;
            for (size_t k = 0; k < nk && !seen; k++)
                seen = !strcmp(keys[k], j->fv[v].key);
            if (seen)
                continue;
            char **x = realloc(keys, (nk + 1) * sizeof(*x));
            if (!x) {
                free(keys);
                return -ENOMEM;
            }
            keys = x;
            keys[nk++] = j->fv[v].key;
        }
    }
    if (nk)
        qsort(keys, nk, sizeof(*keys), cmp_key);
    int rc = 0;
    const char **vals = malloc(4096 * sizeof(*vals));
    const char **dv = NULL;
    size_t *cnt = NULL;
    if (!vals)
        rc = -ENOMEM;
    for (size_t k = 0; k < nk && !rc; k++) {
        const char *key = keys[k];
        int setv = !strcmp(key, "host");
        size_t ndv = 0, cap = 0;
        free(dv);
        free(cnt);
        dv = NULL;
        cnt = NULL;
        for (size_t i = 0; i < n && !rc; i++) {
            const struct ct_fleet_job *j = &js->j[m->W->jobs[i]];
            size_t nv = ct_fleet_values(j, key, vals, 4096);
            if (nv > 1)
                setv = 1;
            if (!nv) {
                vals[0] = "(none)";
                nv = 1;
            }
            for (size_t v = 0; v < nv; v++) {
                size_t d = 0;
                while (d < ndv && strcmp(dv[d], vals[v]))
                    d++;
                if (d == ndv) {
                    if (ndv == cap) {
                        cap = cap ? cap * 2 : 16;
                        const char **x = realloc(dv, cap * sizeof(*x));
                        size_t *y = realloc(cnt, cap * sizeof(*y));
                        if (x)
                            dv = x;
                        if (y)
                            cnt = y;
                        if (!x || !y) {
                            rc = -ENOMEM;
                            break;
                        }
                    }
                    dv[ndv] = vals[v];
                    cnt[ndv++] = 0;
                }
                cnt[d]++;
            }
        }
        if (rc || ndv < 2)
            continue;
        /* values in name order, so candidates come out the same every time */
        for (size_t a = 1; a < ndv; a++)
            for (size_t b = a; b > 0 && strcmp(dv[b - 1], dv[b]) > 0; b--) {
                const char *t = dv[b];
                dv[b] = dv[b - 1];
                dv[b - 1] = t;
                size_t c = cnt[b];
                cnt[b] = cnt[b - 1];
                cnt[b - 1] = c;
            }
        /* the baseline: the value most of the fleet runs with (one baseline
         * in every workload), then the workload's most common */
        size_t base = 0, bestg = 0;
        for (size_t d = 0; d < ndv && !setv; d++) {
            const char **tmp = malloc(4096 * sizeof(*tmp));
            if (!tmp) {
                rc = -ENOMEM;
                break;
            }
            size_t g = fleet_count(js, key, dv[d], tmp);
            free(tmp);
            if (d == 0 || g > bestg || (g == bestg && cnt[d] > cnt[base]))
                base = d, bestg = g;
        }
        for (size_t d = 0; d < ndv && !rc; d++) {
            if (!setv && d == base)
                continue;
            double *x = calloc(n, sizeof(*x));
            if (!x) {
                rc = -ENOMEM;
                break;
            }
            for (size_t i = 0; i < n; i++) {
                const struct ct_fleet_job *j = &js->j[m->W->jobs[i]];
                size_t nv = ct_fleet_values(j, key, vals, 4096);
                if (!nv) {
                    vals[0] = "(none)";
                    nv = 1;
                }
                for (size_t v = 0; v < nv; v++)
                    x[i] = x[i] > 0 || !strcmp(vals[v], dv[d]) ? 1 : 0;
            }
            rc = add_cand(m, key, dv[d], setv ? NULL : dv[base], x, n);
        }
    }
    free(dv);
    free(cnt);
    free(vals);
    free(keys);
    return rc;
}

/*
 * A column's estimate can be tested when the fit is whole, it has degrees
 * of freedom, and at least MIN_SIDE jobs on each side of the column kept
 * their residual unclipped: a value seen in a handful of jobs, half of
 * them slowed by something recorded nowhere, gives Huber's estimate
 * nothing to rest on (every job of it clipped, its location anywhere
 * between the two halves) and is not tested.
 */
static int robust(const struct fit *f, size_t col)
{
    return f->ok && f->df >= 3 && f->se[col] > 0 && f->eff1[col] >= MIN_SIDE &&
           f->eff0[col] >= MIN_SIDE;
}

/* The model of the selected columns plus candidate extra (SIZE_MAX: none)
 * on y. */
static void model_fit(const struct wmodel *m, const double *y, const double *use, size_t extra,
                      double *scratch, struct fit *f)
{
    const double *X[MAXP];
    size_t p = 0;
    X[p++] = m->one;
    for (size_t s = 0; s < m->nsel; s++)
        X[p++] = m->c[m->sel[s]].x;
    if (extra != SIZE_MAX)
        X[p++] = m->c[extra].x;
    huber(y, X, p, m->W->n, use, scratch, f);
}

/* ------------------------------------------------------------ change points */

/* 1 when column x, in run-start order, is a switch in time: 0s then 1s
 * (or 1s then 0s) but for at most a twentieth of the jobs. */
static int step_in_time(const double *x, size_t n)
{
    size_t ones = 0, best = n;
    for (size_t i = 0; i < n; i++)
        ones += x[i] > 0.5;
    /* mismatches of "0 before k, 1 from k" and of its opposite, every k */
    size_t before1 = 0;
    for (size_t k = 0; k <= n; k++) {
        size_t up = before1 + ((n - k) - (ones - before1)); /* 1s before, 0s after */
        size_t down = (k - before1) + (ones - before1);     /* 0s before, 1s after */
        best = up < best ? up : best;
        best = down < best ? down : best;
        if (k < n)
            before1 += x[k] > 0.5;
    }
    return best * 20 <= n;
}

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
    size_t ms = MIN_SIDE;
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

static int change_points(struct ct_fleet_explain *x, size_t w, const double *y, size_t ntested)
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

/* ------------------------------------------------------------ explain */

static void cand_free(struct cand *c)
{
    free(c->factor);
    free(c->value);
    free(c->baseline);
    for (size_t i = 0; i < c->nalias; i++)
        free(c->alias[i]);
    free(c->alias);
    free(c->x);
}

void ct_fleet_explain_free(struct ct_fleet_explain *x)
{
    if (!x)
        return;
    for (size_t i = 0; i < x->nw; i++)
        free(x->w[i].jobs);
    free(x->w);
    for (size_t i = 0; i < x->nf; i++) {
        struct ct_fx_finding *f = &x->f[i];
        free(f->factor);
        free(f->value);
        free(f->baseline);
        for (size_t k = 0; k < f->nalias; k++)
            free(f->aliases[k]);
        free(f->aliases);
        free(f->coll);
    }
    free(x->f);
    for (size_t i = 0; i < x->nc; i++) {
        for (size_t k = 0; k < x->c[i].nchanged; k++)
            free(x->c[i].changed[k]);
        free(x->c[i].changed);
    }
    free(x->c);
    free(x);
}

static double part_value(const struct ct_fleet_job *j, int k)
{
    switch (k) {
    case CT_FX_STEP_MEAN: return j->step_mean;
    case CT_FX_COMPUTE: return j->compute_step;
    case CT_FX_EXPOSED: return j->exposed_step - (isfinite(j->wait_step) ? j->wait_step : 0);
    case CT_FX_WAIT: return j->wait_step;
    case CT_FX_IDLE: {
        double d = isfinite(j->data_step) ? j->data_step : 0;
        double c = isfinite(j->ckpt_step) ? j->ckpt_step : 0;
        return j->idle_step - d - c;
    }
    case CT_FX_DATA: return j->data_step;
    case CT_FX_CKPT: return j->ckpt_step;
    }
    return NAN;
}

static int cmp_finding(const void *a, const void *b)
{
    const struct ct_fx_finding *x = a, *y = b;
    int c = strcmp(x->factor, y->factor);
    if (!c)
        c = strcmp(x->value, y->value);
    if (!c)
        c = (x->w > y->w) - (x->w < y->w);
    return c;
}

/* The discovery's figures from the final model of its workload. */
static int finding(struct ct_fleet_explain *x, struct wmodel *m, size_t w, struct cand *c,
                   double *scratch, double *buf, double *use)
{
    const struct ct_fleet_jobs *js = x->js;
    const struct ct_fx_workload *W = m->W;
    struct ct_fx_finding *f = realloc(x->f, (x->nf + 1) * sizeof(*f));
    if (!f)
        return -ENOMEM;
    x->f = f;
    f = &x->f[x->nf++];
    memset(f, 0, sizeof(*f));
    f->w = w;
    f->factor = strdup(c->factor);
    f->value = strdup(c->value);
    f->baseline = c->baseline ? strdup(c->baseline) : NULL;
    if (!f->factor || !f->value || (c->baseline && !f->baseline))
        return -ENOMEM;
    if (c->nalias) {
        f->aliases = calloc(c->nalias, sizeof(char *));
        if (!f->aliases)
            return -ENOMEM;
        for (size_t a = 0; a < c->nalias; a++)
            if (!(f->aliases[f->nalias++] = strdup(c->alias[a])))
                return -ENOMEM;
    }
    f->n_with = c->n1;
    f->n_without = W->n - c->n1;
    const struct fit *F = &c->fin;
    size_t col = c->col;
    double alpha_cov = 1 - x->level;
    double tq = ct_t_q2(alpha_cov, F->df);
    f->beta = F->beta[col];
    f->se = F->se[col];
    f->df = F->df;
    f->p = c->p;
    f->q = c->q;
    f->lo = f->beta - tq * f->se;
    f->hi = f->beta + tq * f->se;
    f->effect_pct = 100 * (exp(f->beta) - 1);
    f->lo_pct = 100 * (exp(f->lo) - 1);
    f->hi_pct = 100 * (exp(f->hi) - 1);
    double me = 100 * x->o.min_effect;
    f->change = f->lo_pct > me    ? 2
                : f->lo_pct > 0   ? 1
                : f->hi_pct < -me ? -2
                : f->hi_pct < 0   ? -1
                                  : 0;
    /* the parts, each with the same model */
    f->carrier = -1;
    double best = 0;
    for (int k = 0; k < CT_FX_NPARTS; k++) {
        size_t ok = 0, on = 0;
        for (size_t i = 0; i < W->n; i++) {
            buf[i] = part_value(&js->j[W->jobs[i]], k);
            use[i] = isfinite(buf[i]);
            ok += use[i] > 0;
            on += use[i] > 0 && c->x[i] > 0.5;
        }
        if (ok < m->nsel + 1 + 2 * MIN_SIDE || on < MIN_SIDE || ok - on < MIN_SIDE)
            continue;
        struct fit pf;
        model_fit(m, buf, use, SIZE_MAX, scratch, &pf);
        if (!pf.ok)
            continue;
        struct ct_fx_part *P = &f->part[k];
        double t = ct_t_q2(alpha_cov, pf.df);
        P->ok = 1;
        P->beta = pf.beta[col];
        P->lo = P->beta - t * pf.se[col];
        P->hi = P->beta + t * pf.se[col];
        P->share = NAN;
    }
    const struct ct_fx_part *S = &f->part[CT_FX_STEP_MEAN];
    for (int k = CT_FX_COMPUTE; k < CT_FX_NPARTS; k++) {
        struct ct_fx_part *P = &f->part[k];
        if (!P->ok || !S->ok || !(fabs(S->beta) > 1e-9))
            continue;
        P->share = P->beta / S->beta;
        if (P->share > best) {
            best = P->share;
            f->carrier = k;
        }
    }
    /* the bus bandwidth of the workload's most common main collective */
    const char *coll = NULL;
    size_t most = 0;
    for (size_t i = 0; i < W->n; i++) {
        const char *ci = js->j[W->jobs[i]].coll;
        if (!ci)
            continue;
        size_t k = 0;
        for (size_t q = 0; q < W->n; q++)
            k += js->j[W->jobs[q]].coll && !strcmp(js->j[W->jobs[q]].coll, ci);
        if (k > most || (k == most && coll && strcmp(ci, coll) < 0))
            most = k, coll = ci;
    }
    if (coll) {
        size_t ok = 0, on = 0;
        for (size_t i = 0; i < W->n; i++) {
            const struct ct_fleet_job *j = &js->j[W->jobs[i]];
            int has = j->coll && !strcmp(j->coll, coll) && j->coll_busbw > 0;
            buf[i] = has ? log(j->coll_busbw) : 0;
            use[i] = has;
            ok += has;
            on += has && c->x[i] > 0.5;
        }
        if (!(f->coll = strdup(coll)))
            return -ENOMEM;
        struct fit bf = {0};
        if (ok >= m->nsel + 1 + 2 * MIN_SIDE && on >= MIN_SIDE && ok - on >= MIN_SIDE)
            model_fit(m, buf, use, SIZE_MAX, scratch, &bf);
        if (bf.ok) {
            double t = ct_t_q2(alpha_cov, bf.df);
            f->busbw_ok = 1;
            f->busbw_pct = 100 * (exp(bf.beta[col]) - 1);
            f->busbw_lo = 100 * (exp(bf.beta[col] - t * bf.se[col]) - 1);
            f->busbw_hi = 100 * (exp(bf.beta[col] + t * bf.se[col]) - 1);
        }
    }
    return 0;
}

/* Forward entry: while the best candidate, tested in the model of those
 * already in, has p <= level (and the model keeps 5 degrees of freedom),
 * it enters. */
static void select_columns(struct wmodel *m, size_t n, double level, double *scratch,
                           const double *use)
{
    for (;;) {
        size_t pick = SIZE_MAX;
        double bestp = 2;
        if (m->nsel + 2 >= MAXP || n < m->nsel + 2 + 5)
            return;
        for (size_t k = 0; k < m->nc; k++) {
            struct cand *c = &m->c[k];
            if (c->selected || c->model_alias)
                continue;
            struct fit f;
            model_fit(m, m->y, use, k, scratch, &f);
            if (f.aliased) {
                c->model_alias = 1;
                continue;
            }
            if (!robust(&f, m->nsel + 1))
                continue;
            double p = ct_t_p2(f.beta[m->nsel + 1] / f.se[m->nsel + 1], f.df);
            if (p < bestp) {
                bestp = p;
                pick = k;
            }
        }
        if (pick == SIZE_MAX || bestp > level)
            return;
        m->c[pick].selected = 1;
        m->sel[m->nsel++] = pick;
    }
}

/* Backward elimination: while the column with the largest joint p has
 * p > level, it leaves. */
static void drop_columns(struct wmodel *m, double level, double *scratch, const double *use)
{
    while (m->nsel) {
        struct fit f;
        model_fit(m, m->y, use, SIZE_MAX, scratch, &f);
        size_t worst = SIZE_MAX;
        double worstp = level;
        for (size_t s = 0; s < m->nsel; s++) {
            double p = robust(&f, s + 1) ? ct_t_p2(f.beta[s + 1] / f.se[s + 1], f.df) : 1;
            if (p > worstp) {
                worstp = p;
                worst = s;
            }
        }
        if (worst == SIZE_MAX)
            return;
        m->c[m->sel[worst]].selected = 0;
        memmove(&m->sel[worst], &m->sel[worst + 1], (m->nsel - worst - 1) * sizeof(m->sel[0]));
        m->nsel--;
        for (size_t k = 0; k < m->nc; k++)
            m->c[k].model_alias = 0; /* the model changed */
    }
}

int ct_fleet_explain_run(const struct ct_fleet_jobs *js, const struct ct_fleet_explain_opts *o,
                         struct ct_fleet_explain **out, char *err, size_t errlen)
{
    *out = NULL;
    struct ct_fleet_explain *x = calloc(1, sizeof(*x));
    struct wmodel *M = NULL;
    double *scratch = NULL, *buf = NULL, *use = NULL;
    int rc = -ENOMEM;
    if (!x)
        goto fail;
    x->o = *o;
    x->js = js;
    /* workloads, in order of first appearance (run-start order) */
    for (size_t i = 0; i < js->n; i++) {
        const struct ct_fleet_job *j = &js->j[i];
        if (!(j->step_p50 > 0))
            continue;
        size_t w = 0;
        while (w < x->nw && strcmp(x->w[w].name, j->workload))
            w++;
        if (w == x->nw) {
            struct ct_fx_workload *nw = realloc(x->w, (x->nw + 1) * sizeof(*nw));
            if (!nw)
                goto fail;
            x->w = nw;
            memset(&x->w[x->nw], 0, sizeof(x->w[0]));
            x->w[x->nw].name = j->workload;
            x->nw++;
        }
        size_t *jj = realloc(x->w[w].jobs, (x->w[w].n + 1) * sizeof(*jj));
        if (!jj)
            goto fail;
        x->w[w].jobs = jj;
        jj[x->w[w].n++] = i;
    }
    M = calloc(x->nw ? x->nw : 1, sizeof(*M));
    size_t maxn = 1;
    for (size_t w = 0; w < x->nw; w++)
        maxn = x->w[w].n > maxn ? x->w[w].n : maxn;
    scratch = malloc(4 * maxn * sizeof(double));
    buf = malloc(maxn * sizeof(double));
    use = malloc(maxn * sizeof(double));
    if (!M || !scratch || !buf || !use)
        goto fail;
    /* candidates of every workload first: m is over all of them */
    for (size_t w = 0; w < x->nw; w++) {
        struct wmodel *m = &M[w];
        struct ct_fx_workload *W = &x->w[w];
        m->W = W;
        m->y = malloc(W->n * sizeof(double));
        m->one = malloc(W->n * sizeof(double));
        if (!m->y || !m->one)
            goto fail;
        for (size_t i = 0; i < W->n; i++) {
            m->y[i] = log(js->j[W->jobs[i]].step_p50);
            m->one[i] = 1;
            buf[i] = js->j[W->jobs[i]].step_p50;
        }
        W->median_step = ct_median(buf, W->n);
        if (W->n < o->min_jobs) {
            W->skipped = "too few jobs";
            continue;
        }
        if ((rc = candidates(js, m)))
            goto fail;
        W->ncand = m->nc;
        x->m += m->nc;
    }
    double enter = o->alpha / (double)(x->m ? x->m : 1);
    /* the columns of each workload's model */
    for (size_t w = 0; w < x->nw; w++) {
        struct wmodel *m = &M[w];
        struct ct_fx_workload *W = &x->w[w];
        if (W->skipped)
            continue;
        for (size_t i = 0; i < W->n; i++)
            use[i] = 1;
        /* liberal forward entry, then the strict test on the joint model:
         * several factors of similar size mask each other in the model of
         * none (each one's test carries the others' variance), and a column
         * that entered early because its few jobs all had the fast values of
         * real factors leaves once those are in */
        select_columns(m, W->n, LIBERAL, scratch, use);
        drop_columns(m, enter, scratch, use);
        for (int round = 0; round < 8; round++) {
            size_t before = m->nsel;
            select_columns(m, W->n, enter, scratch, use);
            if (m->nsel == before)
                break;
            drop_columns(m, enter, scratch, use);
        }
        W->nselected = m->nsel;
        /* the final model: the selected columns' joint p; the others'
         * p when added to it */
        struct fit fin;
        model_fit(m, m->y, use, SIZE_MAX, scratch, &fin);
        W->sigma = fin.ok ? fin.scale : NAN;
        /* change points are looked for in the step with the effects of the
         * factors in the model taken out, except those that switch once in
         * time (a driver upgraded on a date): what changed over time stays */
        m->ycp = malloc(W->n * sizeof(double));
        if (!m->ycp)
            goto fail;
        memcpy(m->ycp, m->y, W->n * sizeof(double));
        for (size_t s = 0; fin.ok && s < m->nsel; s++) {
            const struct cand *c = &m->c[m->sel[s]];
            if (step_in_time(c->x, W->n))
                continue;
            for (size_t i = 0; i < W->n; i++)
                m->ycp[i] -= fin.beta[s + 1] * c->x[i];
        }
        for (size_t s = 0; s < m->nsel; s++) {
            struct cand *c = &m->c[m->sel[s]];
            c->fin = fin;
            c->col = s + 1;
            c->p = robust(&fin, s + 1) ? ct_t_p2(fin.beta[s + 1] / fin.se[s + 1], fin.df) : 1;
        }
        for (size_t k = 0; k < m->nc; k++) {
            struct cand *c = &m->c[k];
            if (c->selected || c->model_alias)
                continue;
            struct fit f;
            model_fit(m, m->y, use, k, scratch, &f);
            if (f.aliased)
                c->model_alias = 1;
            else if (robust(&f, m->nsel + 1))
                c->p = ct_t_p2(f.beta[m->nsel + 1] / f.se[m->nsel + 1], f.df);
        }
    }
    /* Benjamini-Hochberg over every candidate tried */
    if (x->m) {
        double *p = malloc(x->m * sizeof(double));
        if (!p)
            goto fail;
        size_t k = 0;
        for (size_t w = 0; w < x->nw; w++)
            for (size_t c = 0; c < M[w].nc; c++)
                p[k++] = M[w].c[c].p;
        if (ct_bh_adjust(p, x->m, p)) {
            free(p);
            goto fail;
        }
        k = 0;
        size_t R = 0;
        for (size_t w = 0; w < x->nw; w++)
            for (size_t c = 0; c < M[w].nc; c++) {
                M[w].c[c].q = p[k++];
                R += M[w].c[c].selected && M[w].c[c].q <= o->alpha;
            }
        free(p);
        x->level = 1 - (double)(R ? R : 1) * o->alpha / (double)x->m;
    } else {
        x->level = 1 - o->alpha;
    }
    for (size_t w = 0; w < x->nw; w++)
        for (size_t c = 0; c < M[w].nc; c++) {
            struct cand *cd = &M[w].c[c];
            if (!cd->selected || cd->q > o->alpha)
                continue;
            if ((rc = finding(x, &M[w], w, cd, scratch, buf, use)))
                goto fail;
            if (!x->f[x->nf - 1].change) { /* its corrected interval holds no change */
                struct ct_fx_finding *f = &x->f[--x->nf];
                free(f->factor);
                free(f->value);
                free(f->baseline);
                for (size_t a = 0; a < f->nalias; a++)
                    free(f->aliases[a]);
                free(f->aliases);
                free(f->coll);
            }
        }
    if (x->nf)
        qsort(x->f, x->nf, sizeof(*x->f), cmp_finding);
    /* change points of the workloads with a run start for every job */
    size_t ntested = 0;
    for (size_t w = 0; w < x->nw; w++) {
        int dated = x->w[w].n >= o->min_jobs && x->w[w].n >= 2 * MIN_SIDE + 1;
        for (size_t i = 0; i < x->w[w].n && dated; i++)
            dated = js->j[x->w[w].jobs[i]].start_us != INT64_MIN;
        ntested += dated;
    }
    x->cp_tested = ntested;
    for (size_t w = 0; w < x->nw; w++) {
        int dated = x->w[w].n >= o->min_jobs && x->w[w].n >= 2 * MIN_SIDE + 1;
        for (size_t i = 0; i < x->w[w].n && dated; i++)
            dated = js->j[x->w[w].jobs[i]].start_us != INT64_MIN;
        if (dated && (rc = change_points(x, w, M[w].ycp ? M[w].ycp : M[w].y, ntested)))
            goto fail;
    }
    rc = 0;
fail:
    for (size_t w = 0; M && w < (x ? x->nw : 0); w++) {
        for (size_t c = 0; c < M[w].nc; c++)
            cand_free(&M[w].c[c]);
        free(M[w].c);
        free(M[w].y);
        free(M[w].ycp);
        free(M[w].one);
    }
    free(M);
    free(scratch);
    free(buf);
    free(use);
    if (rc) {
        snprintf(err, errlen, "out of memory");
        ct_fleet_explain_free(x);
        return rc;
    }
    *out = x;
    return 0;
}
