/* Medians and percentiles by sorting; inputs are small per call. */
#include "decoder/stats.h"

#include <stdlib.h>

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int64_t ct_median_i64(int64_t *v, size_t n)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof(*v), cmp_i64);
    if (n % 2)
        return v[n / 2];
    int64_t a = v[n / 2 - 1], b = v[n / 2];
    int64_t s = a / 2 + b / 2 + (a % 2 + b % 2) / 2;
    return s;
}

double ct_percentile(double *v, size_t n, double q)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof(*v), cmp_d);
    double pos = q / 100.0 * (double)(n - 1);
    size_t i = (size_t)pos;
    if (i + 1 >= n)
        return v[n - 1];
    return v[i] + (v[i + 1] - v[i]) * (pos - (double)i);
}

double ct_median(double *v, size_t n)
{
    return ct_percentile(v, n, 50);
}
