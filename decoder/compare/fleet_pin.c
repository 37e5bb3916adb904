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

#include "decoder/compare/huber_fit.h"
#include "decoder/compare/stats_test.h"
#include "decoder/util/stats.h"

#define MAXP     CT_HUBER_MAXP
#define MIN_SIDE CT_FX_MIN_SIDE
#define LIBERAL  0.05 /* forward entry before the strict, joint test */

const char *ct_fx_part_name(int k)
{
    static const char *const n[CT_FX_NPARTS] = {"step_mean",      "compute",    "exposed_comm",
                                                "straggler_wait", "data_stall", "checkpoint",
                                                "other_idle"};
    return k >= 0 && k < CT_FX_NPARTS ? n[k] : "?";
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
    struct ct_huber_fit fin;
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
static int robust(const struct ct_huber_fit *f, size_t col)
{
    return f->ok && f->df >= 3 && f->se[col] > 0 && f->eff1[col] >= MIN_SIDE &&
           f->eff0[col] >= MIN_SIDE;
}

/* The model of the selected columns plus candidate extra (SIZE_MAX: none)
 * on y. */
static void model_fit(const struct wmodel *m, const double *y, const double *use, size_t extra,
                      double *scratch, struct ct_huber_fit *f)
{
    const double *X[MAXP];
    size_t p = 0;
    X[p++] = m->one;
    for (size_t s = 0; s < m->nsel; s++)
        X[p++] = m->c[m->sel[s]].x;
    if (extra != SIZE_MAX)
        X[p++] = m->c[extra].x;
    ct_huber_fit(y, X, p, m->W->n, use, scratch, f);
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
    const struct ct_huber_fit *F = &c->fin;
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
        struct ct_huber_fit pf;
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
        struct ct_huber_fit bf = {0};
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
            struct ct_huber_fit f;
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
        struct ct_huber_fit f;
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
        struct ct_huber_fit fin;
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
            struct ct_huber_fit f;
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
        if (dated && (rc = ct_fx_change_points(x, w, M[w].ycp ? M[w].ycp : M[w].y, ntested)))
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
