/* pm_sampling_decode: CUPTI PM sampling's pure part (shim/pm_sampling_decode.h):
 * each metric's counter and scaling, the GPU-time conversion of a sample,
 * and the counter data image's size. Exact values. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "shim/pm_sampling_decode.h"

START_TEST(every_metric_is_recorded_as_its_gpm_counter)
{
    /* the same counters, in the GPM path's order (shim/health_gpm.c), so
     * that every reader of gpm_* reads PM samples unchanged */
    static const char *const gpm[CT_PM_NMETRIC] = {
        "gpm_sm_util",   "gpm_sm_occupancy", "gpm_tensor_util", "gpm_dram_bw_util",
        "gpm_fp64_util", "gpm_fp32_util",    "gpm_fp16_util",   "gpm_pcie_tx",
        "gpm_pcie_rx",   "gpm_nvlink_tx",    "gpm_nvlink_rx"};
    for (int m = 0; m < CT_PM_NMETRIC; m++) {
        ck_assert_str_eq(ct_pm_metrics[m].counter, gpm[m]);
        ck_assert_str_eq(ct_pm_metrics[m].unit, m < 7 ? "0.01%" : "KiB/s");
        for (int k = 0; k < m; k++) /* one CUPTI metric per counter */
            ck_assert_str_ne(ct_pm_metrics[m].cupti, ct_pm_metrics[k].cupti);
    }
}
END_TEST

START_TEST(percentages_become_hundredths_and_rates_kib_per_second)
{
    int64_t c = -1;
    ck_assert_int_eq(ct_pm_counter_value(2, 63.456, &c), 0); /* tensor, % */
    ck_assert_int_eq(c, 6346);                               /* rounded to 0.01 % */
    ck_assert_int_eq(ct_pm_counter_value(0, 0, &c), 0);
    ck_assert_int_eq(c, 0);
    /* a sum of units past 100 % is capped, as GPM's are */
    ck_assert_int_eq(ct_pm_counter_value(3, 130.0, &c), 0);
    ck_assert_int_eq(c, 10000);
    /* bytes per second: 1 GiB/s is 1048576 KiB/s */
    ck_assert_int_eq(ct_pm_counter_value(9, 1073741824.0, &c), 0);
    ck_assert_int_eq(c, 1048576);
    ck_assert_int_eq(ct_pm_counter_value(8, 1535.0, &c), 0); /* 1.499 KiB/s rounds to 1 */
    ck_assert_int_eq(c, 1);
}
END_TEST

START_TEST(values_that_are_no_value_are_not_recorded)
{
    int64_t c = 77;
    ck_assert_int_lt(ct_pm_counter_value(0, NAN, &c), 0);
    ck_assert_int_lt(ct_pm_counter_value(0, -0.5, &c), 0);
    ck_assert_int_lt(ct_pm_counter_value(-1, 10, &c), 0);
    ck_assert_int_lt(ct_pm_counter_value(CT_PM_NMETRIC, 10, &c), 0);
    ck_assert_int_eq(c, 77); /* untouched */
}
END_TEST

START_TEST(gpu_times_land_on_the_monotonic_clock_with_exact_lengths)
{
    /* globaltimer on CLOCK_REALTIME's base; realtime - monotonic = off */
    const uint64_t off = 1733580000000000000ull - 5000000000ull;
    uint64_t s = 0, len = 0;
    ck_assert_uint_eq(ct_pm_gpu_to_mono(off + 5000000123ull, off), 5000000123ull);
    ck_assert_int_eq(ct_pm_sample_span(off + 7000000000ull, off + 7001000000ull, off, 0, &s, &len),
                     0);
    ck_assert_uint_eq(s, 7000000000ull);
    ck_assert_uint_eq(len, 1000000u); /* 1 ms, whatever the offset */
    /* a stamp from before the monotonic clock's origin maps to nothing */
    ck_assert_uint_eq(ct_pm_gpu_to_mono(off - 1, off), 0);
    ck_assert_int_lt(ct_pm_sample_span(off - 10, off + 10, off, 0, &s, &len), 0);
}
END_TEST

START_TEST(empty_samples_are_skipped)
{
    uint64_t s = 9, len = 9;
    const uint64_t off = 1000;
    /* CUPTI hands out zero-length samples as sampling stops */
    ck_assert_int_lt(ct_pm_sample_span(5000, 5000, off, 0, &s, &len), 0);
    ck_assert_int_lt(ct_pm_sample_span(6000, 5000, off, 0, &s, &len), 0);
    /* wholly before the previous sample's end: nothing left of it */
    ck_assert_int_lt(ct_pm_sample_span(5000, 6000, off, 5000, &s, &len), 0);
    ck_assert_uint_eq(s, 9);
    ck_assert_uint_eq(len, 9);
}
END_TEST

START_TEST(a_sample_never_overlaps_the_previous_one)
{
    /* the offset read at the next pass is 30 ns smaller: the sample would
     * start 30 ns before the previous one ended; it starts at that end,
     * 30 ns shorter, and ends where its own times say */
    const uint64_t off = 1000000, prev_end = 2000000;
    uint64_t s = 0, len = 0;
    ck_assert_int_eq(
        ct_pm_sample_span(off + prev_end - 30, off + prev_end + 999970, off, prev_end, &s, &len),
        0);
    ck_assert_uint_eq(s, prev_end);
    ck_assert_uint_eq(len, 999970u);
    /* a gap stays a gap */
    ck_assert_int_eq(
        ct_pm_sample_span(off + prev_end + 40, off + prev_end + 1000040, off, prev_end, &s, &len),
        0);
    ck_assert_uint_eq(s, prev_end + 40);
    ck_assert_uint_eq(len, 1000000u);
}
END_TEST

START_TEST(image_holds_four_passes_within_bounds)
{
    ck_assert_uint_eq(ct_pm_max_samples(1000, 20), 80);   /* 4 x 20 ms at 1 ms */
    ck_assert_uint_eq(ct_pm_max_samples(100, 20), 800);   /* at 100 us */
    ck_assert_uint_eq(ct_pm_max_samples(100000, 20), 16); /* at least 16 */
    ck_assert_uint_eq(ct_pm_max_samples(10, 100), CT_PM_MAX_SAMPLES);
    ck_assert_uint_eq(ct_pm_max_samples(0, 20), 16);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("pm_sampling_decode");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, every_metric_is_recorded_as_its_gpm_counter);
    tcase_add_test(tc, percentages_become_hundredths_and_rates_kib_per_second);
    tcase_add_test(tc, values_that_are_no_value_are_not_recorded);
    tcase_add_test(tc, gpu_times_land_on_the_monotonic_clock_with_exact_lengths);
    tcase_add_test(tc, empty_samples_are_skipped);
    tcase_add_test(tc, a_sample_never_overlaps_the_previous_one);
    tcase_add_test(tc, image_holds_four_passes_within_bounds);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
