/* Medians and percentiles by sorting, or by selection where the order is not
 * needed (per-kernel durations: up to millions of values). */
#include "decoder/util/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/util/keys.h"

int ct_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int ct_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorting for the order statistics: insertion for the many short arrays
 * (a collective's ends across ranks), the radix sort of keys.h for long ones
 * (qsort's comparison calls were a tenth of a large report's time), qsort
 * when that is out of memory. */
enum { SHORT_SORT = 24 };

/* Insertion sort of v[0..n), elements of type T compared with >. */
#define INSERTION_SORT(T, v, n)                                                                    \
    for (size_t i_ = 1; i_ < (n); i_++) {                                                          \
        T x_ = (v)[i_];                                                                            \
        size_t j_ = i_;                                                                            \
        for (; j_ > 0 && (v)[j_ - 1] > x_; j_--)                                                   \
            (v)[j_] = (v)[j_ - 1];                                                                 \
        (v)[j_] = x_;                                                                              \
    }

static void sort_i64(int64_t *v, size_t n)
{
    if (n <= SHORT_SORT)
        INSERTION_SORT(int64_t, v, n)
    else if (ct_i64_sort(v, n))
        qsort(v, n, sizeof(*v), ct_cmp_i64);
}

/* Doubles sort as the integers of their bits with the sign bit flipped
 * (negative ones: all bits flipped), -0 as +0; NaN, which has no order,
 * leaves the whole to qsort. */
static void sort_d(double *v, size_t n)
{
    int nan = 0;
    for (size_t i = 0; i < n && !nan; i++)
        nan = isnan(v[i]);
    if (nan) {
        qsort(v, n, sizeof(*v), cmp_d);
        return;
    }
    if (n <= SHORT_SORT) {
        INSERTION_SORT(double, v, n)
        return;
    }
    uint64_t *u = (uint64_t *)v; /* same size, sorted in place as integers */
    for (size_t i = 0; i < n; i++) {
        double d = v[i] == 0 ? 0.0 : v[i];
        uint64_t b;
        memcpy(&b, &d, sizeof(b));
        u[i] = b >> 63 ? ~b : b | (UINT64_C(1) << 63);
    }
    int rc = ct_u64_sort(u, n);
    for (size_t i = 0; i < n; i++) {
        uint64_t b = u[i] >> 63 ? u[i] & ~(UINT64_C(1) << 63) : ~u[i];
        memcpy(&v[i], &b, sizeof(b));
    }
    if (rc)
        qsort(v, n, sizeof(*v), cmp_d);
}

int64_t ct_median_i64(int64_t *v, size_t n)
{
    if (!n)
        return 0;
    sort_i64(v, n);
    if (n % 2)
        return v[n / 2];
    /* floor((a + b) / 2) without overflow: halves rounded down (shifts of
     * negative values are arithmetic in the compilers we build with), plus
     * the carry of two odd values. (The division it replaces rounded
     * toward zero for some signs, away for others.) */
    int64_t a = v[n / 2 - 1], b = v[n / 2];
    return (a >> 1) + (b >> 1) + (a & b & 1);
}

/* The point a fraction f of the way from lo to hi (lo <= hi), defined for
 * infinite ends as the limit of the line: between a value and +inf it is
 * +inf unless f = 0, between -inf and a value it is -inf. The plain formula
 * gives NaN there (inf - inf, 0 * inf): a bootstrap of a ratio whose
 * denominator is 0 in some resamples holds +inf values. */
static double interp(double lo, double hi, double f)
{
    if (isinf(lo))
        return lo;
    if (isinf(hi))
        return f == 0 ? lo : hi;
    return lo + (hi - lo) * f;
}

double ct_percentile(double *v, size_t n, double q)
{
    if (!n)
        return 0;
    if (n == 2 && !isnan(v[0]) && !isnan(v[1]) && v[1] < v[0]) {
        double t = v[0]; /* what sort_d's insertion does to two values */
        v[0] = v[1];
        v[1] = t;
    }
    if (n > 2 || (n == 2 && (isnan(v[0]) || isnan(v[1])))) /* one or two: in order now */
        sort_d(v, n);
    double pos = q / 100.0 * (double)(n - 1);
    size_t i = (size_t)pos;
    if (i + 1 >= n)
        return v[n - 1];
    return interp(v[i], v[i + 1], pos - (double)i);
}

double ct_median(double *v, size_t n)
{
    return ct_percentile(v, n, 50);
}

/* Moves the k-th smallest of v[0..n) to v[k], smaller-or-equal values before
 * it and greater-or-equal after (Hoare partition around a median of three;
 * runs of equal values split evenly, so they cost no more than distinct ones).
 * Small ranges by insertion sort. */
static void select_kth(double *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (hi - lo > 16) {
        size_t mid = lo + (hi - lo) / 2;
        double a = v[lo], b = v[mid], c = v[hi];
        double piv = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
        size_t i = lo, j = hi;
        for (;;) {
            while (v[i] < piv)
                i++;
            while (piv < v[j])
                j--;
            if (i >= j)
                break;
            double t = v[i];
            v[i++] = v[j];
            v[j--] = t;
        }
        /* v[lo..j] <= piv <= v[j+1..hi], both sides non-empty */
        if (k <= j)
            hi = j;
        else
            lo = j + 1;
    }
    for (size_t i = lo + 1; i <= hi; i++) {
        double x = v[i];
        size_t j = i;
        while (j > lo && x < v[j - 1]) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
}

double ct_percentile_select(double *v, size_t n, double q)
{
    if (!n)
        return 0;
    double pos = q / 100.0 * (double)(n - 1);
    size_t i = (size_t)pos;
    select_kth(v, n, i < n ? i : n - 1);
    if (i + 1 >= n) {
        /* the largest value: v[n-1] after select_kth(n-1) */
        return v[n - 1];
    }
    double next = v[i + 1];
    for (size_t j = i + 2; j < n; j++)
        if (v[j] < next)
            next = v[j];
    return interp(v[i], next, pos - (double)i);
}

double ct_median_select(double *v, size_t n)
{
    return ct_percentile_select(v, n, 50);
}
