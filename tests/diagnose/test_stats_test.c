/*
 * Suite stats-test: decoder/compare/stats_test.c against values worked out by hand
 * with scipy's definitions (mannwhitneyu, false_discovery_control) and
 * against properties the bootstrap must have (seeded, contains the true ratio on a clean shift).
 * `unit_diag SUITE` runs one suite; each test in its own process.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/compare/stats_test.h"

START_TEST(mwu_exact_matches_scipy)
{
    /* complete separation, 5 vs 5: exact p = 2 / C(10,5) = 2/252 */
    double a[] = {1, 2, 3, 4, 5}, b[] = {6, 7, 8, 9, 10};
    ck_assert_double_eq_tol(ct_mwu_p(a, 5, b, 5), 2.0 / 252, 1e-12);
    /* interleaved: [1,3,5,7] vs [2,4,6,8]: U = 6; 24 of the 70
     * arrangements have U <= 6: p = 48/70 */
    double c[] = {1, 3, 5, 7}, d[] = {2, 4, 6, 8};
    ck_assert_double_eq_tol(ct_mwu_p(c, 4, d, 4), 48.0 / 70, 1e-12);
    /* symmetric in its arguments */
    ck_assert_double_eq_tol(ct_mwu_p(d, 4, c, 4), 48.0 / 70, 1e-12);
}
END_TEST

START_TEST(mwu_ties_use_corrected_normal)
{
    /* [1,2,2,3] vs [2,3,3,4]: midranks give U1 = 3, mean 8, tie term 48,
     * var = 16/12 (9 - 48/56); z = (|3 - 8| - 0.5) / sqrt(var),
     * p = erfc(z / sqrt 2) = 0.17203370892182296 (scipy's asymptotic
     * formula with use_continuity=True, evaluated by hand) */
    double a[] = {1, 2, 2, 3}, b[] = {2, 3, 3, 4};
    ck_assert_double_eq_tol(ct_mwu_p(a, 4, b, 4), 0.17203370892182296, 1e-12);
}
END_TEST

START_TEST(mwu_degenerate_inputs)
{
    double a[] = {5, 5, 5}, b[] = {5, 5, 5};
    ck_assert_double_eq(ct_mwu_p(a, 3, b, 3), 1.0);
    ck_assert_double_eq(ct_mwu_p(a, 0, b, 3), 1.0);
}
END_TEST

START_TEST(bh_matches_scipy)
{
    /* sorted p x n / rank: .025 .025 .05 .05 .2, then the running minimum
     * from the top, back in input order */
    double p[] = {0.01, 0.04, 0.03, 0.2, 0.005}, q[5];
    double want[] = {0.025, 0.05, 0.05, 0.2, 0.025};
    ck_assert_int_eq(ct_bh_adjust(p, 5, q), 0);
    for (int i = 0; i < 5; i++)
        ck_assert_double_eq_tol(q[i], want[i], 1e-12);
    /* in place */
    ck_assert_int_eq(ct_bh_adjust(p, 5, p), 0);
    ck_assert_double_eq_tol(p[1], 0.05, 1e-12);
}
END_TEST

START_TEST(bootstrap_is_seeded_and_covers_the_shift)
{
    double a[40], b[40];
    uint64_t st = 7;
    for (int i = 0; i < 40; i++) {
        a[i] = 100 * (1 + 0.02 * ((double)(ct_rng_next(&st) % 1000) / 500 - 1));
        b[i] = 105 * (1 + 0.02 * ((double)(ct_rng_next(&st) % 1000) / 500 - 1));
    }
    double lo, hi, lo2, hi2;
    ck_assert_int_eq(ct_boot_ratio_ci(a, 40, b, 40, 2000, 42, &lo, &hi), 0);
    ck_assert_int_eq(ct_boot_ratio_ci(a, 40, b, 40, 2000, 42, &lo2, &hi2), 0);
    ck_assert(lo == lo2 && hi == hi2);
    ck_assert(lo < 1.05 && hi > 1.05);
    ck_assert(lo > 1.0);
    ck_assert_int_eq(ct_boot_ratio_ci(a, 0, b, 40, 2000, 42, &lo, &hi), -22);
}
END_TEST

Suite *stats_test_suite(void)
{
    Suite *s = suite_create("stats-test");
    TCase *t = tcase_create("core");
    tcase_set_timeout(t, 30);
    tcase_add_test(t, mwu_exact_matches_scipy);
    tcase_add_test(t, mwu_ties_use_corrected_normal);
    tcase_add_test(t, mwu_degenerate_inputs);
    tcase_add_test(t, bh_matches_scipy);
    tcase_add_test(t, bootstrap_is_seeded_and_covers_the_shift);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(stats_test_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
