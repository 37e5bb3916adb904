/* Suite "stragglers": ct_stragglers (decoder/analysis/stragglers.c) and the
 * compute slowness it scores (decoder/analysis/kernels.c), on hand-built
 * jobs (docs/report.md, "Stragglers"). Times in µs. */
#include <check.h>
#include <stdlib.h>

#include "decoder/util/stats.h"
#include "tests/unit/timeline_builder.h"
#include "decoder/read/job.h"

#define NRANKS 5
#define NCOLL  4

/*
 * Five ranks, four iterations of 1000 µs ([1000k+1000, 1000k+2000), so the
 * median step is 1000 and the lateness floor 10 µs). In iteration k every
 * rank runs the kernels "gemm" [+0, +gemm[r]) and "attn" after it, then an
 * AllReduce (communicator 1, sequence k) that ends at +900 on every rank
 * (the clocks agree) and starts at +600 + late[k][r].
 */
static void job_of(struct ct_job *job, struct ct_report *rep, const int64_t late[NCOLL][NRANKS],
                   const int64_t gemm[NRANKS], const int64_t attn[NRANKS])
{
    struct tb_job b;
    tb_init(&b);
    for (int r = 0; r < NRANKS; r++) {
        struct ct_proc *p = tb_proc(&b, r);
        for (int k = 0; k < NCOLL; k++) {
            int64_t a = 1000 + 1000 * k;
            tb_range(p, a, a + 1000, k);
            tb_kernel(p, "gemm", 1, a, a + gemm[r], TB_NOLAUNCH);
            tb_kernel(p, "attn", 1, a + gemm[r], a + gemm[r] + attn[r], TB_NOLAUNCH);
            tb_nccl(p, (struct tb_coll){.op = CT_NCCL_OP_ALLREDUCE,
                                        .comm = 1,
                                        .seq = (uint64_t)k,
                                        .comm_rank = r,
                                        .nranks = NRANKS,
                                        .bytes = 1 << 20,
                                        .stream = 2,
                                        .s = a + 600 + late[k][r],
                                        .e = a + 900});
        }
    }
    tb_build(&b, job);
    tb_analyze(job, NULL, rep);
}

static const int64_t same_gemm[NRANKS] = {100, 100, 100, 100, 100};
static const int64_t same_attn[NRANKS] = {50, 50, 50, 50, 50};

/*
 * Starts +600 + (0, -10, 10, 200, -5) on collectives 0-2, median start
 * +600: rank 3 arrives 200 late on them and on time (+600) on collective 3.
 * Lateness (median over its collectives): ranks 0 1 2 4: 0 -10 10 -5;
 * rank 3: median(200, 200, 200, 0) = 200.
 */
static const int64_t late3[NCOLL][NRANKS] = {
    {0, -10, 10, 200, -5}, {0, -10, 10, 200, -5}, {0, -10, 10, 200, -5}, {0, -10, 10, 0, -5}};

START_TEST(lateness_is_median_of_start_minus_median_start_over_ranks)
{
    struct ct_job job;
    struct ct_report rep;
    job_of(&job, &rep, late3, same_gemm, same_attn);
    const int64_t want[NRANKS] = {0, -10, 10, 200, -5};
    for (int r = 0; r < NRANKS; r++)
        ck_assert_int_eq(tb_result(&rep, r)->lateness, TB_US(want[r]));
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * Lateness over ranks: median 0, |x - 0| = 0 10 10 200 5, MAD 10, scale
 * max(1.4826 · 10, floor 10) = 14.826 µs. z: rank 3 200/14.826 = 13.4898...,
 * rank 2 10/14.826 = 0.6745; slowness all 1 (z 0): score = max of the two.
 */
START_TEST(score_is_robust_z_of_lateness_scaled_by_mad)
{
    struct ct_job job;
    struct ct_report rep;
    job_of(&job, &rep, late3, same_gemm, same_attn);
    ck_assert_double_eq_tol(rep.step_p50, (double)TB_US(1000), 1e-6);
    ck_assert_double_eq_tol(tb_result(&rep, 3)->score, 200.0 / 14.826, 1e-9);
    ck_assert_double_eq_tol(tb_result(&rep, 2)->score, 10.0 / 14.826, 1e-9);
    ck_assert_double_eq_tol(tb_result(&rep, 1)->score, 0.0, 1e-9); /* max(-0.67, 0) */
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* Rank 3 was late by >= 3.5 scales (51.9 µs) on 3 of its 4 collectives:
 * persistence 0.75, flagged (score >= 3.5, persistence >= 0.5); the others
 * were never that late and are not flagged. */
START_TEST(persistence_is_share_of_collectives_late_by_3_5_scales)
{
    struct ct_job job;
    struct ct_report rep;
    job_of(&job, &rep, late3, same_gemm, same_attn);
    ck_assert_double_eq_tol(tb_result(&rep, 3)->persistence, 0.75, 1e-12);
    ck_assert_int_eq(tb_result(&rep, 3)->flagged, 1);
    for (int r = 0; r < NRANKS; r++)
        if (r != 3) {
            ck_assert_double_eq_tol(tb_result(&rep, r)->persistence, 0.0, 1e-12);
            ck_assert_int_eq(tb_result(&rep, r)->flagged, 0);
        }
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * Every rank 10 µs apart in arrival, none late beyond its peers' spread:
 * lateness 0 -10 10 20 -20, median 0, MAD 10, scale 14.826: the largest z
 * is 20/14.826 = 1.35 < 3.5: nobody flagged.
 */
START_TEST(spread_within_mad_flags_nobody)
{
    static const int64_t spread[NCOLL][NRANKS] = {
        {0, -10, 10, 20, -20}, {0, -10, 10, 20, -20}, {0, -10, 10, 20, -20}, {0, -10, 10, 20, -20}};
    struct ct_job job;
    struct ct_report rep;
    job_of(&job, &rep, spread, same_gemm, same_attn);
    ck_assert_double_eq_tol(tb_result(&rep, 3)->score, 20.0 / 14.826, 1e-9);
    for (int r = 0; r < NRANKS; r++)
        ck_assert_int_eq(tb_result(&rep, r)->flagged, 0);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * All ranks arrive together (lateness 0, MAD 0: the floor, 1 % of the
 * 1000 µs step, is the scale and every z is 0). Rank 4's gemm takes 120
 * (others 100) and its attn 55 (others 50): per kernel name its median /
 * the median of the ranks' medians = 1.2 and 1.1, slowness median(1.2,
 * 1.1) = 1.15; the others 1.0. Over ranks: median 1, MAD 0, scale = floor
 * 0.01: z = 0.15 / 0.01 = 15: flagged by slowness, persistence 1.
 */
START_TEST(slow_compute_is_flagged_by_slowness_with_persistence_1)
{
    static const int64_t none[NCOLL][NRANKS] = {{0}};
    static const int64_t gemm[NRANKS] = {100, 100, 100, 100, 120};
    static const int64_t attn[NRANKS] = {50, 50, 50, 50, 55};
    struct ct_job job;
    struct ct_report rep;
    job_of(&job, &rep, none, gemm, attn);
    const struct ct_rank_result *x = tb_result(&rep, 4);
    ck_assert_double_eq_tol(x->slowness, 1.15, 1e-12);
    ck_assert_double_eq_tol(x->score, 15.0, 1e-6);
    ck_assert_double_eq_tol(x->persistence, 1.0, 1e-12);
    ck_assert_int_eq(x->flagged, 1);
    for (int r = 0; r < 4; r++) {
        ck_assert_double_eq_tol(tb_result(&rep, r)->slowness, 1.0, 1e-12);
        ck_assert_int_eq(tb_result(&rep, r)->lateness, 0);
        ck_assert_int_eq(tb_result(&rep, r)->flagged, 0);
    }
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* Lateness is over matched collectives only. Three ranks run one
 * AllReduce together (all start at 8000: lateness 0). Ranks 0 and 1 also
 * exchange three Send/Recv pairs, rank 1's Recv starting 500 after the
 * Send: counted, they would make rank 1 late by 250 against the pair's
 * median. */
START_TEST(lateness_counts_matched_collectives_only)
{
    struct tb_job b;
    struct ct_job job;
    struct ct_report rep;
    tb_init(&b);
    struct ct_proc *ps[3];
    for (int r = 0; r < 3; r++) {
        ps[r] = tb_proc(&b, r);
        tb_range(ps[r], 1, 10000, 0);
    }
    for (int k = 0; k < 3; k++) {
        int64_t a = 1000 + 2000 * k;
        tb_nccl(ps[0], (struct tb_coll){.op = CT_NCCL_OP_SEND,
                                        .comm = 9,
                                        .seq = (uint64_t)k,
                                        .comm_rank = 0,
                                        .peer = 1,
                                        .nranks = 2,
                                        .s = a,
                                        .e = a + 1000});
        tb_nccl(ps[1], (struct tb_coll){.op = CT_NCCL_OP_RECV,
                                        .comm = 9,
                                        .seq = (uint64_t)k,
                                        .comm_rank = 1,
                                        .peer = 0,
                                        .nranks = 2,
                                        .s = a + 500,
                                        .e = a + 1000});
    }
    /* one collective, all arriving together at 8000 */
    for (int r = 0; r < 3; r++)
        tb_nccl(ps[r], (struct tb_coll){.op = CT_NCCL_OP_ALLREDUCE,
                                        .comm = 1,
                                        .comm_rank = r,
                                        .nranks = 3,
                                        .s = 8000,
                                        .e = 8100});
    /* rank 2's AllReduce on a communicator nobody else has: unmatched */
    tb_nccl(ps[2], (struct tb_coll){
                       .op = CT_NCCL_OP_ALLREDUCE, .comm = 2, .nranks = 3, .s = 9000, .e = 9100});
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    for (int r = 0; r < 3; r++) {
        ck_assert_int_eq(tb_result(&rep, r)->lateness, 0);
        ck_assert_int_eq(tb_result(&rep, r)->flagged, 0);
    }
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* The kernels table's p50 is the exact median of all the name's samples
 * over the ranks (kernels.c takes it from counts of distinct durations,
 * not from the samples): three ranks of 41 "gemm" kernels each with
 * pseudo-random durations of 1 to 61 µs (many repeats), rank 1's also
 * over a 2^31 µs (over 2^40 ns) one (the overflow list), and "solo" on rank 2
 * only, an even count. Expected: the median of the samples themselves. */
START_TEST(kernel_p50_is_the_exact_median_of_all_samples)
{
    struct tb_job b;
    struct ct_job job;
    struct ct_report rep;
    tb_init(&b);
    double all[3 * 41 + 2], solo[6];
    size_t n = 0, ns = 0;
    int64_t total = 0;
    uint64_t x = 12345;
    for (int r = 0; r < 3; r++) {
        struct ct_proc *p = tb_proc(&b, r);
        int64_t t = 1000;
        tb_range(p, 1, 1LL << 33, 0);
        for (int k = 0; k < 41; k++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            int64_t d = 1 + (int64_t)((x >> 33) % 61);
            tb_kernel(p, "gemm", 1, t, t + d, TB_NOLAUNCH);
            all[n++] = (double)TB_US(d);
            total += TB_US(d);
            t += d + 1000;
        }
        if (r == 1) {
            int64_t d = 1LL << 31; /* µs: 2^40 ns is 1.1e9 µs */
            tb_kernel(p, "gemm", 1, t, t + d, TB_NOLAUNCH);
            all[n++] = (double)TB_US(d);
            total += TB_US(d);
            t += d + 1000;
        }
        for (int k = 0; r == 2 && k < 6; k++) {
            int64_t d = 10 + 7 * (k % 3);
            tb_kernel(p, "solo", 1, t, t + d, TB_NOLAUNCH);
            solo[ns++] = (double)TB_US(d);
            t += d + 1000;
        }
    }
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    ck_assert_uint_eq(rep.nkern, 2);
    ck_assert_str_eq(rep.kern[0].name, "gemm");
    ck_assert_uint_eq(rep.kern[0].count, n);
    ck_assert_int_eq(rep.kern[0].total, total);
    ck_assert_double_eq(rep.kern[0].p50, ct_median_select(all, n));
    ck_assert_str_eq(rep.kern[1].name, "solo");
    ck_assert_double_eq(rep.kern[1].p50, ct_median_select(solo, ns));
    ck_assert_double_eq(rep.kern[1].p50, (double)TB_US(17)); /* 10 10 17 17 24 24 */
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

Suite *stragglers_suite(void)
{
    Suite *s = suite_create("stragglers");
    TCase *tc = tcase_create("stragglers");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, lateness_is_median_of_start_minus_median_start_over_ranks);
    tcase_add_test(tc, score_is_robust_z_of_lateness_scaled_by_mad);
    tcase_add_test(tc, persistence_is_share_of_collectives_late_by_3_5_scales);
    tcase_add_test(tc, spread_within_mad_flags_nobody);
    tcase_add_test(tc, slow_compute_is_flagged_by_slowness_with_persistence_1);
    tcase_add_test(tc, lateness_counts_matched_collectives_only);
    tcase_add_test(tc, kernel_p50_is_the_exact_median_of_all_samples);
    suite_add_tcase(s, tc);
    return s;
}
