/*
 * Huber's M-estimate of a linear model (decoder/compare/huber_fit.h): the
 * robust fit `cutrace fleet explain` makes of each workload's log step
 * times on its candidate factors (fleet_pin.c, docs/fleet.md
 * "Statistics"): IRLS from the least-squares start with the MAD scale,
 * the standard errors the larger of Huber's (1981, with his small-sample
 * correction) and the HC3 sandwich.
 */
#include "decoder/compare/huber_fit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/util/stats.h"

#define HUBER_K 1.345 /* 95 % efficiency at the normal */

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
void ct_huber_fit(const double *y, const double *const *X, size_t p, size_t n, const double *use,
                  double *scratch, struct ct_huber_fit *f)
{
    memset(f, 0, sizeof(*f));
    f->p = p;
    double *w = scratch, *r = scratch + n, *tmp = scratch + 2 * n;
    double a[CT_HUBER_MAXP * CT_HUBER_MAXP], beta[CT_HUBER_MAXP];
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
        double nb[CT_HUBER_MAXP];
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
    double bread[CT_HUBER_MAXP * CT_HUBER_MAXP], meat[CT_HUBER_MAXP * CT_HUBER_MAXP] = {0};
    int sandwich = s > 1e-12;
    if (sandwich) {
        for (size_t i = 0; i < n; i++)
            w[i] = use[i] > 0 && fabs(r[i]) <= HUBER_K * s ? 1 : 0;
        sandwich = !wls(y, X, p, n, w, bread, tmp);
    }
    for (size_t i = 0; sandwich && i < n; i++) {
        if (!(use[i] > 0))
            continue;
        double z[CT_HUBER_MAXP], h = 0;
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
        double e[CT_HUBER_MAXP] = {0};
        e[c] = 1;
        chol_solve(a, p, e);
        f->se[c] = sqrt(var * e[c]);
        if (sandwich) {
            double v[CT_HUBER_MAXP] = {0}, q = 0;
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
