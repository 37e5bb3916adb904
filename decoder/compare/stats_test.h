/*
 * Statistics for comparing two samples (`cutrace diff`): a seeded
 * bootstrap interval for the ratio of medians, the Mann-Whitney U test and
 * Benjamini-Hochberg adjustment. Pure functions on caller arrays; no
 * allocation except where stated, never print, thread-safe.
 */
#ifndef CT_STATS_TEST_H
#define CT_STATS_TEST_H

#include <stddef.h>
#include <stdint.h>

/* splitmix64: the seeded generator every resample draws from. */
uint64_t ct_rng_next(uint64_t *state);

/*
 * Two-sided p-value of the Mann-Whitney U test of a[0..na) against
 * b[0..nb). Exact (the permutation distribution of U, by recurrence) when
 * there are no ties and na * nb <= 400; otherwise the normal approximation
 * with tie correction and continuity correction. 1 when either side is
 * empty or every value is equal. Returns -1 only on allocation failure.
 */
double ct_mwu_p(const double *a, size_t na, const double *b, size_t nb);

/*
 * Percentile bootstrap 95 % interval of median(b) / median(a): each of
 * `reps` resamples draws na values from a and nb from b with replacement
 * (the two sides independently), from the generator seeded with `seed`.
 * *lo, *hi get the 2.5 and 97.5 percentiles of the resampled ratios.
 * Medians must be positive; a resample whose median of a is 0 counts as
 * +inf. Returns 0, -EINVAL for an empty side or reps < 10, -ENOMEM.
 */
int ct_boot_ratio_ci(const double *a, size_t na, const double *b, size_t nb, unsigned reps,
                     uint64_t seed, double *lo, double *hi);

/*
 * Student's t distribution with df degrees of freedom (df > 0, not
 * necessarily an integer: Welch's): the two-sided tail P(|T| >= |t|), and
 * the quantile q with P(|T| >= q) = p2 (0 < p2 < 1). From the regularised
 * incomplete beta function, I_{df/(df+t^2)}(df/2, 1/2); accurate to about
 * 1e-12 against the tables.
 */
double ct_t_p2(double t, double df);
double ct_t_q2(double p2, double df);

/*
 * Benjamini-Hochberg adjusted p-values (q-values): q[i] = min over j with
 * p[j] >= p[i] of p[j] * n / rank(p[j]), capped at 1. q may alias p.
 * Returns 0 or -ENOMEM.
 */
int ct_bh_adjust(const double *p, size_t n, double *q);

#endif
