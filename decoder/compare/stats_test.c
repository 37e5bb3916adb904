/*
 * Two-sample statistics for `cutrace diff` (contracts in stats_test.h).
 * Definitions follow scipy: mannwhitneyu(method="exact"/"asymptotic",
 * use_continuity=True), false_discovery_control(method="bh"); the
 * bootstrap is the percentile method on the ratio of medians.
 */
#include "decoder/compare/stats_test.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/util/stats.h"

uint64_t ct_rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

struct tagged {
    double v;
    int side;
};

static int cmp_tagged(const void *x, const void *y)
{
    double a = ((const struct tagged *)x)->v, b = ((const struct tagged *)y)->v;
    return (a > b) - (a < b);
}

/* P(U <= u) under H0 without ties: counts of arrangements by recurrence
 * f(m, n, u) = f(m-1, n, u-n) + f(m, n-1, u), one row per m. */
static double exact_cdf(size_t m, size_t n, double u)
{
    size_t umax = m * n;
    /* cnt[j][k]: arrangements of i values of a and j of b with U = k */
    double *cur = calloc((n + 1) * (umax + 1), sizeof(double));
    double *nxt = calloc((n + 1) * (umax + 1), sizeof(double));
    if (!cur || !nxt) {
        free(cur);
        free(nxt);
        return -1;
    }
#define AT(t, j, k) (t)[(j) * (umax + 1) + (k)]
    for (size_t j = 0; j <= n; j++)
        AT(cur, j, 0) = 1; /* i = 0: U = 0 */
    for (size_t i = 1; i <= m; i++) {
        memset(nxt, 0, (n + 1) * (umax + 1) * sizeof(double));
        for (size_t j = 0; j <= n; j++)
            for (size_t k = 0; k <= i * j; k++) {
                /* the largest value is from a (adds j to U) or from b */
                double v = k >= j ? AT(cur, j, k - j) : 0;
                if (j > 0)
                    v += AT(nxt, j - 1, k);
                AT(nxt, j, k) = v;
            }
        double *t = cur;
        cur = nxt;
        nxt = t;
    }
    double total = 0, below = 0;
    for (size_t k = 0; k <= umax; k++) {
        total += AT(cur, n, k);
        if ((double)k <= u + 1e-9)
            below += AT(cur, n, k);
    }
#undef AT
    free(cur);
    free(nxt);
    return below / total;
}

double ct_mwu_p(const double *a, size_t na, const double *b, size_t nb)
{
    if (!na || !nb)
        return 1;
    size_t n = na + nb;
    struct tagged *t = malloc(n * sizeof(*t));
    if (!t)
        return -1;
    for (size_t i = 0; i < na; i++)
        t[i] = (struct tagged){a[i], 0};
    for (size_t i = 0; i < nb; i++)
        t[na + i] = (struct tagged){b[i], 1};
    qsort(t, n, sizeof(*t), cmp_tagged);
    /* midranks, rank sum of a, tie term sum(t^3 - t) */
    double ra = 0, ties = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && t[j].v == t[i].v)
            j++;
        double rank = ((double)i + 1 + (double)j) / 2, cnt = (double)(j - i);
        for (size_t k = i; k < j; k++)
            if (!t[k].side)
                ra += rank;
        ties += cnt * cnt * cnt - cnt;
        i = j;
    }
    free(t);
    double m1 = (double)na, m2 = (double)nb;
    double u1 = ra - m1 * (m1 + 1) / 2, mu = m1 * m2 / 2;
    double umin = u1 < m1 * m2 - u1 ? u1 : m1 * m2 - u1;
    if (ties == 0 && na * nb <= 400) {
        double c = exact_cdf(na, nb, umin);
        if (c < 0)
            return -1;
        double p = 2 * c;
        return p > 1 ? 1 : p;
    }
    double var = m1 * m2 / 12 * ((double)n + 1 - ties / ((double)n * ((double)n - 1)));
    if (var <= 0)
        return 1;
    double z = (fabs(u1 - mu) - 0.5) / sqrt(var);
    if (z < 0)
        z = 0;
    double p = erfc(z / sqrt(2));
    return p > 1 ? 1 : p;
}

static double median_of(const double *src, size_t n, double *tmp)
{
    memcpy(tmp, src, n * sizeof(*tmp));
    return ct_median(tmp, n);
}

int ct_boot_ratio_ci(const double *a, size_t na, const double *b, size_t nb, unsigned reps,
                     uint64_t seed, double *lo, double *hi)
{
    if (!na || !nb || reps < 10)
        return -EINVAL;
    double *ra = malloc(na * sizeof(double)), *rb = malloc(nb * sizeof(double));
    double *ratio = malloc(reps * sizeof(double));
    if (!ra || !rb || !ratio) {
        free(ra);
        free(rb);
        free(ratio);
        return -ENOMEM;
    }
    uint64_t st = seed;
    for (unsigned r = 0; r < reps; r++) {
        for (size_t i = 0; i < na; i++)
            ra[i] = a[ct_rng_next(&st) % na];
        for (size_t i = 0; i < nb; i++)
            rb[i] = b[ct_rng_next(&st) % nb];
        double ma = median_of(ra, na, ra), mb = median_of(rb, nb, rb);
        ratio[r] = ma > 0 ? mb / ma : INFINITY;
    }
    *lo = ct_percentile(ratio, reps, 2.5);
    *hi = ct_percentile(ratio, reps, 97.5);
    free(ra);
    free(rb);
    free(ratio);
    return 0;
}

struct pidx {
    double p;
    size_t i;
};

static int cmp_pidx(const void *x, const void *y)
{
    double a = ((const struct pidx *)x)->p, b = ((const struct pidx *)y)->p;
    return (a > b) - (a < b);
}

int ct_bh_adjust(const double *p, size_t n, double *q)
{
    if (!n)
        return 0;
    struct pidx *s = malloc(n * sizeof(*s));
    if (!s)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        s[i] = (struct pidx){p[i], i};
    qsort(s, n, sizeof(*s), cmp_pidx);
    double run = 1;
    for (size_t k = n; k-- > 0;) {
        double v = s[k].p * (double)n / (double)(k + 1);
        if (v < run)
            run = v;
        s[k].p = run;
    }
    for (size_t k = 0; k < n; k++)
        q[s[k].i] = s[k].p;
    free(s);
    return 0;
}

/* The continued fraction of the incomplete beta function (modified Lentz). */
static double beta_cf(double a, double b, double x)
{
    const double tiny = 1e-300;
    double qab = a + b, qap = a + 1, qam = a - 1, c = 1, d = 1 - qab * x / qap;
    if (fabs(d) < tiny)
        d = tiny;
    d = 1 / d;
    double h = d;
    for (int m = 1; m <= 400; m++) {
        double m2 = 2.0 * m;
        double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1 + aa * d;
        d = fabs(d) < tiny ? tiny : d;
        c = 1 + aa / c;
        c = fabs(c) < tiny ? tiny : c;
        d = 1 / d;
        h *= d * c;
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1 + aa * d;
        d = fabs(d) < tiny ? tiny : d;
        c = 1 + aa / c;
        c = fabs(c) < tiny ? tiny : c;
        d = 1 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1) < 1e-15)
            break;
    }
    return h;
}

/* I_x(a, b), the regularised incomplete beta function. */
static double beta_inc(double a, double b, double x)
{
    if (x <= 0)
        return 0;
    if (x >= 1)
        return 1;
    double front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
    if (x < (a + 1) / (a + b + 2))
        return front * beta_cf(a, b, x) / a;
    return 1 - front * beta_cf(b, a, 1 - x) / b;
}

double ct_t_p2(double t, double df)
{
    if (!isfinite(t))
        return isnan(t) ? NAN : 0;
    return beta_inc(df / 2, 0.5, df / (df + t * t));
}

double ct_t_q2(double p2, double df)
{
    /* the tail falls as t grows: bisection on [0, hi] */
    double lo = 0, hi = 1;
    while (ct_t_p2(hi, df) > p2 && hi < 1e12)
        hi *= 2;
    for (int i = 0; i < 200 && hi - lo > 1e-13 * hi; i++) {
        double mid = (lo + hi) / 2;
        if (ct_t_p2(mid, df) > p2)
            lo = mid;
        else
            hi = mid;
    }
    return (lo + hi) / 2;
}
