/*
 * Suite diff: decoder/compare/diff.c's three-way verdict and its figures
 * that cannot be computed, and diff_workload.c's "not the same workload"
 * lines, on hand-built inputs with exact expectations (docs/diff.md,
 * "Verdicts", "Not the same workload"). `unit_diag diff` runs it alone.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/compare/diff.h"

/* Every branch of the classification, at the default minimum effect 2 %
 * and alpha 0.05; the case first: 3.4 % slower, p = 0.0026,
 * interval [1.017, 1.051] was "no evidence" and is a change possibly below
 * the minimum effect. */
START_TEST(classify_gives_the_three_way_verdict)
{
    const double m = 0.02, a = 0.05;
    ck_assert_int_eq(ct_diff_classify(0.0026, a, 1.017, 1.051, m, 0), 1);
    /* entirely above 1.02 and significant: regressed */
    ck_assert_int_eq(ct_diff_classify(0.001, a, 1.025, 1.06, m, 0), 2);
    /* entirely below 0.98: improved; below 1 but not below 0.98: -1 */
    ck_assert_int_eq(ct_diff_classify(0.001, a, 0.95, 0.975, m, 0), -2);
    ck_assert_int_eq(ct_diff_classify(0.001, a, 0.97, 0.99, m, 0), -1);
    /* an interval entirely inside (1, 1.02): changed, below the minimum */
    ck_assert_int_eq(ct_diff_classify(0.001, a, 1.005, 1.015, m, 0), 1);
    /* the interval holds 1: no evidence, whatever q says (the U test and
     * the bootstrap can disagree) */
    ck_assert_int_eq(ct_diff_classify(0.001, a, 0.99, 1.03, m, 0), 0);
    /* not significant: no evidence even with an interval beyond */
    ck_assert_int_eq(ct_diff_classify(0.06, a, 1.03, 1.05, m, 0), 0);
    ck_assert_int_eq(ct_diff_classify(0.05, a, 1.03, 1.05, m, 0), 0);
    /* touching the bound is not beyond it: lo = 1.02 exactly */
    ck_assert_int_eq(ct_diff_classify(0.001, a, 1.02, 1.05, m, 0), 1);
    /* min effect 0: the middle class is empty, a change is beyond it */
    ck_assert_int_eq(ct_diff_classify(0.0026, a, 1.017, 1.051, 0, 0), 2);
    ck_assert_int_eq(ct_diff_classify(0.001, a, 0.97, 0.99, 0, 0), -2);
}
END_TEST

/* A bound that could not be computed (NaN) excludes nothing on its side,
 * and the NaN q of a broken test concludes nothing. */
START_TEST(classify_an_unknown_bound_excludes_nothing)
{
    const double m = 0.02, a = 0.05;
    ck_assert_int_eq(ct_diff_classify(0.001, a, 1.03, NAN, m, 0), 2);
    ck_assert_int_eq(ct_diff_classify(0.001, a, 1.01, NAN, m, 0), 1);
    ck_assert_int_eq(ct_diff_classify(0.001, a, NAN, 0.95, m, 0), -2);
    ck_assert_int_eq(ct_diff_classify(0.001, a, NAN, 0.99, m, 0), -1);
    ck_assert_int_eq(ct_diff_classify(0.001, a, NAN, NAN, m, 0), 0);
    ck_assert_int_eq(ct_diff_classify(0.001, a, 0.0, NAN, m, 0), 0);
    ck_assert_int_eq(ct_diff_classify(NAN, a, 1.03, 1.05, m, 0), 0);
}
END_TEST

/* goodput_pct is the one metric where larger is better: a lower goodput is
 * the regression. */
START_TEST(classify_flips_for_higher_is_better)
{
    ck_assert(ct_diff_higher_is_better("goodput_pct"));
    ck_assert(!ct_diff_higher_is_better("step_us"));
    ck_assert(!ct_diff_higher_is_better("kernel:goodput_pct"));
    ck_assert_int_eq(ct_diff_classify(0.001, 0.05, 0.90, 0.95, 0.02, 1), 2);
    ck_assert_int_eq(ct_diff_classify(0.001, 0.05, 0.985, 0.995, 0.02, 1), 1);
    ck_assert_int_eq(ct_diff_classify(0.001, 0.05, 1.03, 1.05, 0.02, 1), -2);
}
END_TEST

START_TEST(change_names_and_the_old_verdict)
{
    ck_assert_str_eq(ct_diff_change_name(2), "regressed");
    ck_assert_str_eq(ct_diff_change_name(1), "worse, possibly below min effect");
    ck_assert_str_eq(ct_diff_change_name(0), "no evidence");
    ck_assert_str_eq(ct_diff_change_name(-1), "better, possibly below min effect");
    ck_assert_str_eq(ct_diff_change_name(-2), "improved");
    /* the verdict key keeps its meaning: beyond the minimum effect only */
    for (int c = -2; c <= 2; c++)
        ck_assert_int_eq(c / 2, c == 2 ? 1 : c == -2 ? -1 : 0);
}
END_TEST

/* Runs with one metric: summary m[i], and iteration samples at m[i] +-
 * spread (alternating; the first exactly m[i]), so each run's median is its
 * value. */
static void build(struct ct_metric_set *sum, struct ct_metric_set *smp, struct ct_diff_run *r,
                  const char *name, const double *v, size_t n, double spread)
{
    for (size_t i = 0; i < n; i++) {
        memset(&sum[i], 0, sizeof(sum[i]));
        memset(&smp[i], 0, sizeof(smp[i]));
        ck_assert_int_eq(ct_metric_add(&sum[i], name, v[i]), 0);
        for (size_t k = 0; k < 9; k++)
            ck_assert_int_eq(
                ct_metric_add(&smp[i], name, v[i] + (k % 2 ? spread : -spread) * (k != 0)), 0);
        r[i] = (struct ct_diff_run){&sum[i], &smp[i]};
    }
}

static void drop(struct ct_metric_set *sum, struct ct_metric_set *smp, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ct_metric_set_free(&sum[i]);
        ct_metric_set_free(&smp[i]);
    }
}

/* A small but real change through the run-level model: 4 vs 4 runs, B 3 %
 * slower with about 1 % run-to-run scatter. On the logs: sd 0.0082 a side,
 * se of the difference 0.0058, t(0.975, 6) = 2.447: the interval is about
 * 1.03 x exp(+-0.0142) = [1.0156, 1.0445]: it excludes 1 but not 1.02. At
 * --min-effect 0 the same row is "regressed". */
START_TEST(small_real_change_is_worse_possibly_below_min_effect)
{
    double a[] = {1000, 1010, 990, 1000}, b[] = {1030, 1040, 1020, 1030};
    struct ct_metric_set sa[4], pa[4], sb[4], pb[4];
    struct ct_diff_run ra[4], rb[4];
    build(sa, pa, ra, "step_us", a, 4, 0.1);
    build(sb, pb, rb, "step_us", b, 4, 0.1);
    for (int zero = 0; zero < 2; zero++) {
        struct ct_diff_opts o = {.min_effect = zero ? 0 : 0.02, .alpha = 0.05, .reps = 200};
        struct ct_diff_row *r;
        size_t n;
        ck_assert_int_eq(ct_diff_compare_runs(ra, 4, rb, 4, &o, NULL, &r, &n), 0);
        ck_assert_uint_eq(n, 1);
        ck_assert(r[0].run_level && r[0].primary);
        ck_assert_double_eq_tol(r[0].lo, 1.0156, 2e-4);
        ck_assert_double_eq_tol(r[0].hi, 1.0445, 2e-4);
        ck_assert(r[0].p < 0.05);
        ck_assert_int_eq(r[0].change, zero ? 2 : 1);
        ck_assert_int_eq(r[0].verdict, zero ? 1 : 0);
        ck_assert_uint_eq(r[0].nunavail, 0);
        free(r);
    }
    drop(sa, pa, 4);
    drop(sb, pb, 4);
}
END_TEST

/*
 * The launch_overhead_us case that printed [0.0000, -nan]: a per-run figure
 * that is 0 in some runs (one of 4 a side) has no log scale, so the runs
 * are compared by the U test and a bootstrap of the ratio of medians. A
 * resample of A's 4 values has median 0 when 3 or 4 draws are the zero:
 * probability 4 (1/4)^3 (3/4) + (1/4)^4 = 0.0508, more than the 2.5 % tail:
 * the upper bound is +inf (from about 102 of the 2000 resamples, at least
 * 51 needed: 5 sd of the binomial away for any seed), and so is B's
 * median 0 for the lower bound: exactly 0. The ratio is 9.5 / 8.5.
 */
START_TEST(unbounded_interval_is_null_with_its_reason)
{
    double a[] = {0, 8, 9, 10}, b[] = {0, 9, 10, 11};
    struct ct_metric_set sa[4], pa[4], sb[4], pb[4];
    struct ct_diff_run ra[4], rb[4];
    build(sa, pa, ra, "launch_overhead_us", a, 4, 0);
    build(sb, pb, rb, "launch_overhead_us", b, 4, 0);
    struct ct_diff_opts o = {.min_effect = 0.02, .alpha = 0.05, .seed = 1, .reps = 2000};
    struct ct_diff_row *r;
    size_t n;
    ck_assert_int_eq(ct_diff_compare_runs(ra, 4, rb, 4, &o, NULL, &r, &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert(!r[0].run_level);
    ck_assert_double_eq(r[0].med_a, 8.5);
    ck_assert_double_eq(r[0].med_b, 9.5);
    ck_assert_double_eq(r[0].ratio, 9.5 / 8.5);
    ck_assert_double_eq(r[0].lo, 0);
    ck_assert(isnan(r[0].hi));
    ck_assert(isfinite(r[0].p) && isfinite(r[0].q));
    ck_assert_uint_eq(r[0].nunavail, 1);
    ck_assert_str_eq(r[0].unavail[0].figure, "ci_high");
    ck_assert_str_eq(r[0].unavail[0].reason, "unbounded: A's resampled median is 0 in more than "
                                             "2.5 % of the bootstrap resamples");
    ck_assert_int_eq(r[0].change, 0);
    free(r);
    drop(sa, pa, 4);
    drop(sb, pb, 4);
}
END_TEST

/* A figure that is 0 on side A (no relative change): ratio and interval
 * are null, each with the reason, and nothing is concluded. Through the
 * one-sample-per-value comparison (ct_diff_compare). */
START_TEST(zero_baseline_has_no_ratio_and_says_why)
{
    struct ct_metric_set a = {0}, b = {0};
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(ct_metric_add(&a, "checkpoint_stall_us", 0), 0);
        ck_assert_int_eq(ct_metric_add(&b, "checkpoint_stall_us", 100 + i), 0);
    }
    struct ct_diff_opts o = {.min_effect = 0.02, .alpha = 0.05, .seed = 1, .reps = 200};
    struct ct_diff_row *r;
    size_t n;
    ck_assert_int_eq(ct_diff_compare(&a, &b, &o, &r, &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert(r[0].ratio < 0 && isnan(r[0].lo) && isnan(r[0].hi));
    ck_assert_uint_eq(r[0].nunavail, 3);
    const char *fig[] = {"ratio", "ci_low", "ci_high"};
    for (int i = 0; i < 3; i++) {
        ck_assert_str_eq(r[0].unavail[i].figure, fig[i]);
        ck_assert_str_eq(r[0].unavail[i].reason, "the median of A is 0: no relative change");
    }
    /* 5 tied zeros against 5 distinct values: U1 = 0, mean 12.5, tie term
     * 5^3 - 5 = 120, var = 25/12 (11 - 120/90), z = (12.5 - 0.5)/sqrt(var)
     * = 2.674: p = erfc(z / sqrt 2) = 0.0075, significant, and still no
     * verdict without a ratio */
    double z = 12 / sqrt(25.0 / 12 * (11 - 120.0 / 90));
    ck_assert_double_eq_tol(r[0].p, erfc(z / sqrt(2)), 1e-12);
    ck_assert_int_eq(r[0].change, 0);
    free(r);
    ct_metric_set_free(&a);
    ct_metric_set_free(&b);
}
END_TEST

/* ---- not the same workload ---- */

static struct ct_metric_set kernels(int first, int count)
{
    struct ct_metric_set s = {0};
    char name[64];
    ck_assert_int_eq(ct_metric_add(&s, "step_us", 1000), 0);
    for (int k = first; k < first + count; k++) {
        snprintf(name, sizeof(name), "kernel:k%d", k);
        ck_assert_int_eq(ct_metric_add(&s, name, 10), 0);
    }
    return s;
}

static void free_lines(char **w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(w[i]);
    free(w);
}

START_TEST(jaccard_of_kernel_names)
{
    const char *a[] = {"x", "y", "z", "w"}, *b[] = {"y", "z", "v"};
    size_t shared;
    /* {y, z} of {x, y, z, w, v} */
    ck_assert_double_eq(ct_kernel_jaccard(a, 4, b, 3, &shared), 2.0 / 5);
    ck_assert_uint_eq(shared, 2);
    ck_assert_double_eq(ct_kernel_jaccard(a, 4, a, 4, &shared), 1);
    ck_assert_double_eq(ct_kernel_jaccard(a, 0, b, 0, &shared), 1);
    ck_assert_double_eq(ct_kernel_jaccard(a, 4, b, 0, &shared), 0);
}
END_TEST

/* Two runs per side, 2 ranks against 4, kernels k0..k9 against k0..k3
 * (Jaccard 4/10 < 0.5), and the model argument changed while the output
 * folder is each run's own: three lines, exactly these. With one run a
 * side, that run's own folder is a word of every run of its side too. */
START_TEST(workload_mismatch_gives_one_line_per_difference)
{
    struct ct_metric_set ka = kernels(0, 10), kb = kernels(0, 4);
    struct ct_workload a[2] = {{2, &ka, "python train.py --model 13b --out /o/a0"},
                               {2, &ka, "python train.py --model 13b --out /o/a1"}};
    struct ct_workload b[2] = {{4, &kb, "python train.py --model 7b --out /o/b0"},
                               {4, &kb, "python train.py --model 7b --out /o/b1"}};
    char **w = NULL;
    size_t nw = 0;
    ck_assert_int_eq(ct_diff_workload(a, 2, b, 2, &w, &nw), 0);
    ck_assert_uint_eq(nw, 3);
    ck_assert_str_eq(w[0], "not the same workload? rank count: A's runs have 2 ranks, B's 4");
    ck_assert_str_eq(w[1], "not the same workload? kernels: 4 of 10 names shared (Jaccard 0.40 < "
                           "0.50); 6 only in A (e.g. k4), 0 only in B");
    ck_assert_str_eq(w[2], "not the same workload? command line: words in every run of A and "
                           "none of B: \"13b\"; of B and none of A: \"7b\"");
    free_lines(w, nw);
    w = NULL;
    nw = 0;
    ck_assert_int_eq(ct_diff_workload(a, 1, b, 1, &w, &nw), 0);
    ck_assert_uint_eq(nw, 3);
    ck_assert_str_eq(w[2], "not the same workload? command line: words in every run of A and "
                           "none of B: \"13b /o/a0\"; of B and none of A: \"7b /o/b0\"");
    free_lines(w, nw);
    ct_metric_set_free(&ka);
    ct_metric_set_free(&kb);
}
END_TEST

/* Reruns of one workload: the same ranks, kernel names half shared
 * (Jaccard exactly 0.5: k0..k5 against k2..k7 share 4 of 8: not below the
 * threshold), command lines that differ only in words no side has in every
 * run (each run's own output folder), and a run without a command line:
 * no line. Mixed rank counts on one side are listed. */
START_TEST(same_workload_gives_no_line)
{
    struct ct_metric_set ka = kernels(0, 6), kb = kernels(2, 6);
    struct ct_workload a[2] = {{8, &ka, "python train.py --out /o/r0"},
                               {8, &ka, "python train.py --out /o/r1"}};
    struct ct_workload b[3] = {{8, &kb, "python train.py --out /o/r2"},
                               {8, &kb, "python train.py --out /o/r3"},
                               {8, &kb, ""}};
    char **w = NULL;
    size_t nw = 0;
    ck_assert_int_eq(ct_diff_workload(a, 2, b, 3, &w, &nw), 0);
    ck_assert_uint_eq(nw, 0);
    free_lines(w, nw);
    w = NULL;
    /* no command line on one side: nothing to compare there */
    struct ct_workload c[1] = {{8, &ka, NULL}};
    ck_assert_int_eq(ct_diff_workload(a, 2, c, 1, &w, &nw), 0);
    ck_assert_uint_eq(nw, 0);
    free_lines(w, nw);
    w = NULL;
    nw = 0;
    /* ranks 4 and 8 in A against 8 */
    struct ct_workload d[2] = {{4, &ka, NULL}, {8, &ka, NULL}};
    ck_assert_int_eq(ct_diff_workload(d, 2, c, 1, &w, &nw), 0);
    ck_assert_uint_eq(nw, 1);
    ck_assert_str_eq(w[0], "not the same workload? rank count: A's runs have 4 or 8 ranks, B's 8");
    free_lines(w, nw);
    ct_metric_set_free(&ka);
    ct_metric_set_free(&kb);
}
END_TEST

Suite *diff_suite(void)
{
    Suite *s = suite_create("diff");
    TCase *t = tcase_create("core");
    tcase_set_timeout(t, 30);
    tcase_add_test(t, classify_gives_the_three_way_verdict);
    tcase_add_test(t, classify_an_unknown_bound_excludes_nothing);
    tcase_add_test(t, classify_flips_for_higher_is_better);
    tcase_add_test(t, change_names_and_the_old_verdict);
    tcase_add_test(t, small_real_change_is_worse_possibly_below_min_effect);
    tcase_add_test(t, unbounded_interval_is_null_with_its_reason);
    tcase_add_test(t, zero_baseline_has_no_ratio_and_says_why);
    tcase_add_test(t, jaccard_of_kernel_names);
    tcase_add_test(t, workload_mismatch_gives_one_line_per_difference);
    tcase_add_test(t, same_workload_gives_no_line);
    suite_add_tcase(s, t);
    return s;
}
