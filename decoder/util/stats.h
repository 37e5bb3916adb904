/* Order statistics the report uses (medians, percentiles, MAD). */
#ifndef CT_STATS_H
#define CT_STATS_H

#include <stddef.h>
#include <stdint.h>

/* qsort comparators of int64_t and uint64_t values. */
int ct_cmp_i64(const void *a, const void *b);
int ct_cmp_u64(const void *a, const void *b);

/* Median of v[0..n) (reorders v); 0 for n == 0. Even n: the mean of the two
 * middle values, rounded toward negative infinity. */
int64_t ct_median_i64(int64_t *v, size_t n);

/* Percentile q in [0,100] of v[0..n) by linear interpolation between closest
 * ranks (numpy's default); sorts v. 0 for n == 0. Infinite values are
 * allowed: between a value and +inf the interpolation is +inf (its limit),
 * between -inf and a value -inf; never NaN unless v holds one. */
double ct_percentile(double *v, size_t n, double q);

/* Median of doubles (sorts v); 0 for n == 0. */
double ct_median(double *v, size_t n);

/* The same value as ct_percentile / ct_median (bit for bit) by selection in
 * O(n): reorders v without sorting it. For callers that do not use the order
 * afterwards. v must hold no NaN. */
double ct_percentile_select(double *v, size_t n, double q);
double ct_median_select(double *v, size_t n);

#endif
