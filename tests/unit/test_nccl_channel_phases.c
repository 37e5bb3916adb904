/* Suite "nccl_channel_phases": an NCCL kernel's phases from its channels
 * (decoder/analysis/nccl_channel_phases.c, docs/nccl.md "Kernel channels")
 * on hand-built channel times with exact values. Times in ns. */
#include <check.h>
#include <math.h>
#include <stdint.h>

#include "decoder/analysis/nccl_channel_phases.h"

/* Kernel at 1000; channel c starts at 1500 + 100c and stops at 9000,
 * channel 2 at 20000: setup 500, start spread 300, stop spread 11000,
 * the busiest channel 2 with a run of 20000 - 1700. */
START_TEST(an_op_reduces_to_setup_spreads_and_its_busiest_channel)
{
    int64_t s[] = {1800, 1500, 1600, 1700}, e[] = {9000, 9000, 9000, 20000};
    uint32_t id[] = {3, 0, 1, 2}; /* out of id order: the ids are what is named */
    struct ct_nchan_obs o;
    ct_nchan_obs_of(s, e, id, 4, 1000, &o);
    ck_assert_uint_eq(o.nch, 4);
    ck_assert_int_eq(o.setup, 500);
    ck_assert_int_eq(o.setup_why, CT_NCHAN_WHY_NONE);
    ck_assert_int_eq(o.start_spread, 300);
    ck_assert_int_eq(o.stop_spread, 11000);
    ck_assert_int_eq(o.run, 20000 - 1700);
    ck_assert_int_eq(o.busiest, 2);
}
END_TEST

START_TEST(runs_within_the_timer_tick_or_one_channel_name_no_busiest)
{
    int64_t s[] = {0, 0}, e[] = {50000, 50000 + CT_NCHAN_TIE_NS};
    uint32_t id[] = {0, 1};
    struct ct_nchan_obs o;
    ct_nchan_obs_of(s, e, id, 2, 0, &o);
    ck_assert_int_eq(o.busiest, -1); /* 1 us apart: a tie */
    ck_assert_int_eq(o.run, 50000 + CT_NCHAN_TIE_NS);
    e[1] += 1;
    ct_nchan_obs_of(s, e, id, 2, 0, &o);
    ck_assert_int_eq(o.busiest, 1);
    ct_nchan_obs_of(s, e, id, 1, 0, &o);
    ck_assert_int_eq(o.busiest, -1); /* one channel: no imbalance to name */
    ck_assert_int_eq(o.stop_spread, 0);
}
END_TEST

/* A first channel up to the clocks' tolerance before its kernel starts
 * with it; further, or no kernel, leaves the setup unknown, never negative. */
START_TEST(a_setup_is_never_negative_and_unknown_past_the_clocks_tolerance)
{
    int64_t s[] = {10000}, e[] = {20000};
    uint32_t id[] = {0};
    struct ct_nchan_obs o;
    ct_nchan_obs_of(s, e, id, 1, 10000 + CT_NCHAN_CLOCK_TOL_NS, &o);
    ck_assert_int_eq(o.setup, 0);
    ct_nchan_obs_of(s, e, id, 1, 10000 + CT_NCHAN_CLOCK_TOL_NS + 1, &o);
    ck_assert_int_eq(o.setup, -1);
    ck_assert_int_eq(o.setup_why, CT_NCHAN_WHY_CLOCKS);
    ct_nchan_obs_of(s, e, id, 1, INT64_MIN, &o);
    ck_assert_int_eq(o.setup, -1);
    ck_assert_int_eq(o.setup_why, CT_NCHAN_WHY_NO_KERNEL);
}
END_TEST

static struct ct_nchan_obs ob(size_t row, int64_t setup, int64_t sp, int64_t run, int64_t stop,
                              int32_t busiest)
{
    return (struct ct_nchan_obs){.row = row,
                                 .nch = 4,
                                 .setup = setup,
                                 .setup_why = setup < 0 ? CT_NCHAN_WHY_NO_KERNEL : 0,
                                 .start_spread = sp,
                                 .stop_spread = stop,
                                 .run = run,
                                 .busiest = busiest};
}

/* Row 0: three instances, medians exact, channel 5 the busiest in 2 of 3;
 * row 1: the busiest in 1 of 2 (a tie in the other), and a setup in 1 of
 * 2: neither named; row 2: no instance. */
START_TEST(a_collective_takes_medians_and_names_a_channel_busiest_in_most_instances)
{
    struct ct_nchan_obs o[] = {ob(0, 100, 10, 1000, 300, 5), ob(1, 40, 0, 700, 0, 3),
                               ob(0, 300, 30, 3000, 100, 5), ob(0, 200, 20, 2000, 200, 1),
                               ob(1, -1, 0, 900, 0, -1)};
    struct ct_nchan_row r[3];
    for (int i = 0; i < 3; i++)
        ct_nchan_row_init(&r[i]);
    ck_assert_int_eq(ct_nchan_rows(o, 5, r, 3), 0);
    ck_assert_uint_eq(r[0].instances, 3);
    ck_assert_int_eq(r[0].why, CT_NCHAN_WHY_NONE);
    ck_assert_double_eq(r[0].setup_p50_ns, 200);
    ck_assert_double_eq(r[0].start_spread_p50_ns, 20);
    ck_assert_double_eq(r[0].run_p50_ns, 2000);
    ck_assert_double_eq(r[0].stop_spread_p50_ns, 200);
    ck_assert_int_eq(r[0].busiest, 5);
    ck_assert_double_eq_tol(r[0].busiest_pct, 200.0 / 3, 1e-9);
    ck_assert_uint_eq(r[1].instances, 2);
    ck_assert_int_eq(r[1].busiest, -1);
    ck_assert_int_eq(r[1].busiest_why, CT_NCHAN_WHY_NO_BUSIEST);
    ck_assert(isnan(r[1].busiest_pct));
    ck_assert(isnan(r[1].setup_p50_ns)); /* 1 of 2: not most */
    ck_assert_int_eq(r[1].setup_why, CT_NCHAN_WHY_NO_KERNEL);
    ck_assert_double_eq(r[1].run_p50_ns, 800);
    ck_assert_uint_eq(r[2].instances, 0);
    ck_assert_int_eq(r[2].why, CT_NCHAN_WHY_NO_CHANNELS);
    ck_assert(isnan(r[2].run_p50_ns) && isnan(r[2].stop_spread_p50_ns));
    ck_assert_str_ne(ct_nchan_why_text(CT_NCHAN_WHY_NO_CHANNELS), "");
}
END_TEST

Suite *nccl_channel_phases_suite(void)
{
    Suite *s = suite_create("nccl_channel_phases");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, an_op_reduces_to_setup_spreads_and_its_busiest_channel);
    tcase_add_test(tc, runs_within_the_timer_tick_or_one_channel_name_no_busiest);
    tcase_add_test(tc, a_setup_is_never_negative_and_unknown_past_the_clocks_tolerance);
    tcase_add_test(tc, a_collective_takes_medians_and_names_a_channel_busiest_in_most_instances);
    suite_add_tcase(s, tc);
    return s;
}
