/*
 * Suite stats-test: decoder/compare/stats_test.c against values worked out by hand
 * with scipy's definitions (mannwhitneyu, false_discovery_control) and
 * against properties the bootstrap must have (seeded, contains the true ratio on a clean shift).
 * `unit_diag SUITE` runs one suite; each test in its own process.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/compare/diff.h"
#include "decoder/compare/stats_test.h"

/* Student's t against the tables (scipy.stats.t.sf / t.isf, two-sided). */
START_TEST(student_t_matches_the_tables)
{
    ck_assert_double_eq_tol(ct_t_q2(0.05, 1), 12.706205, 1e-5);
    ck_assert_double_eq_tol(ct_t_q2(0.05, 3), 3.182446, 1e-6);
    ck_assert_double_eq_tol(ct_t_q2(0.05, 10), 2.228139, 1e-6);
    ck_assert_double_eq_tol(ct_t_q2(0.01, 30), 2.749996, 1e-6);
    ck_assert_double_eq_tol(ct_t_p2(2.0, 5), 0.101939, 1e-6);
    ck_assert_double_eq_tol(ct_t_p2(0, 7.5), 1.0, 1e-12);
    /* Welch's non-integer df: between its integer neighbours */
    double p7 = ct_t_p2(2.5, 7), p8 = ct_t_p2(2.5, 8), p = ct_t_p2(2.5, 7.3);
    ck_assert(p < p7 && p > p8);
}
END_TEST

/* One metric "step_us" per run; samples: n iterations at the run's value
 * +- spread (alternating), so each run's median is its value. */
static void runs(struct ct_metric_set *sum, struct ct_metric_set *smp, const double *v, size_t n,
                 double spread, size_t iters)
{
    for (size_t i = 0; i < n; i++) {
        memset(&sum[i], 0, sizeof(sum[i]));
        memset(&smp[i], 0, sizeof(smp[i]));
        ck_assert_int_eq(ct_metric_add(&sum[i], "compute_us", v[i] * 0.5), 0);
        ck_assert_int_eq(ct_metric_add(&sum[i], "step_us", v[i]), 0);
        for (size_t k = 0; k < iters; k++)
            ck_assert_int_eq(
                ct_metric_add(&smp[i], "step_us", v[i] + (k % 2 ? spread : -spread) * (k != 0)), 0);
    }
}

/* Four runs a side, B 4 % slower: the primary first, tested alone (q = p),
 * ratio of geometric means, Welch df, the runs' iterations counted. */
START_TEST(run_level_primary_is_tested_alone_and_first)
{
    double a[] = {1000, 1004, 998, 1002}, b[] = {1040, 1044, 1038, 1042};
    struct ct_metric_set sa[4], pa[4], sb[4], pb[4];
    runs(sa, pa, a, 4, 1, 20);
    runs(sb, pb, b, 4, 1, 20);
    struct ct_diff_run ra[4], rb[4];
    for (int i = 0; i < 4; i++) {
        ra[i] = (struct ct_diff_run){&sa[i], &pa[i]};
        rb[i] = (struct ct_diff_run){&sb[i], &pb[i]};
    }
    struct ct_diff_opts o = {.min_effect = 0.02, .alpha = 0.05, .seed = 1, .reps = 200};
    struct ct_diff_row *r;
    size_t n;
    ck_assert_int_eq(ct_diff_compare_runs(ra, 4, rb, 4, &o, NULL, &r, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(r[0].name, "step_us");
    ck_assert(r[0].primary && r[0].run_level);
    ck_assert_double_eq(r[0].q, r[0].p);
    /* geometric means: exp(mean log) of each side; the ratio is theirs */
    double ga = exp((log(1000.) + log(1004.) + log(998.) + log(1002.)) / 4);
    double gb = exp((log(1040.) + log(1044.) + log(1038.) + log(1042.)) / 4);
    ck_assert_double_eq_tol(r[0].ratio, gb / ga, 1e-12);
    ck_assert(r[0].lo > 1.02 && r[0].hi < 1.06);
    ck_assert_int_eq(r[0].verdict, 1);
    ck_assert_uint_eq(r[0].samples_a, 80);
    /* nearly equal variances (on the log scale B's are a little smaller),
     * equal n: Welch's df just under 2(n - 1) = 6 */
    ck_assert(r[0].df > 5.9 && r[0].df <= 6);
    ck_assert(!r[1].primary);
    free(r);
    for (int i = 0; i < 4; i++) {
        ct_metric_set_free(&sa[i]);
        ct_metric_set_free(&pa[i]);
        ct_metric_set_free(&sb[i]);
        ct_metric_set_free(&pb[i]);
    }
}
END_TEST

/* Runs that agree closely by chance cannot claim more precision than their
 * iterations allow: with a wide iteration scatter the same run values give
 * a wider interval (the floor) and no verdict. */
START_TEST(iteration_scatter_floors_the_run_variance)
{
    double a[] = {1000, 1000.5, 999.5}, b[] = {1030, 1030.5, 1029.5};
    struct ct_diff_opts o = {.min_effect = 0, .alpha = 0.05, .seed = 1, .reps = 200};
    double width[2];
    int verdict[2];
    for (int wide = 0; wide < 2; wide++) {
        struct ct_metric_set sa[3], pa[3], sb[3], pb[3];
        runs(sa, pa, a, 3, wide ? 400 : 0.1, 10);
        runs(sb, pb, b, 3, wide ? 400 : 0.1, 10);
        struct ct_diff_run ra[3], rb[3];
        for (int i = 0; i < 3; i++) {
            ra[i] = (struct ct_diff_run){&sa[i], &pa[i]};
            rb[i] = (struct ct_diff_run){&sb[i], &pb[i]};
        }
        struct ct_diff_row *r;
        size_t n;
        ck_assert_int_eq(ct_diff_compare_runs(ra, 3, rb, 3, &o, "step_us", &r, &n), 0);
        width[wide] = r[0].hi - r[0].lo;
        verdict[wide] = r[0].verdict;
        free(r);
        for (int i = 0; i < 3; i++) {
            ct_metric_set_free(&sa[i]);
            ct_metric_set_free(&pa[i]);
            ct_metric_set_free(&sb[i]);
            ct_metric_set_free(&pb[i]);
        }
    }
    ck_assert_int_eq(verdict[0], 1);
    ck_assert_int_eq(verdict[1], 0);
    ck_assert(width[1] > 10 * width[0]);
}
END_TEST

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
    tcase_add_test(t, student_t_matches_the_tables);
    tcase_add_test(t, run_level_primary_is_tested_alone_and_first);
    tcase_add_test(t, iteration_scatter_floors_the_run_variance);
    tcase_add_test(t, mwu_exact_matches_scipy);
    tcase_add_test(t, mwu_ties_use_corrected_normal);
    tcase_add_test(t, mwu_degenerate_inputs);
    tcase_add_test(t, bh_matches_scipy);
    tcase_add_test(t, bootstrap_is_seeded_and_covers_the_shift);
    suite_add_tcase(s, t);
    return s;
}

Suite *diff_suite(void); /* test_diff.c */

/* unit_diag [SUITE]: every suite, or the one named (stats-test, diff). */
int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        Suite *(*make)(void);
    } all[] = {{"stats-test", stats_test_suite}, {"diff", diff_suite}};
    SRunner *sr = NULL;
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        if (argc > 1 && strcmp(argv[1], all[i].name))
            continue;
        if (!sr)
            sr = srunner_create(all[i].make());
        else
            srunner_add_suite(sr, all[i].make());
    }
    if (!sr) {
        fprintf(stderr, "unit_diag: unknown suite '%s' (stats-test, diff)\n", argv[1]);
        return 2;
    }
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
