/*
 * The option values report, export, diff and diagnose parse
 * (decoder/util/options.c): rank lists, iteration ranges, time windows.
 * Each bad value must be refused (the command then names the option and
 * what it expects), each good one read exactly.
 */
#include <check.h>
#include <stdlib.h>

#include "decoder/util/options.h"

START_TEST(rank_lists_are_sorted_without_repeats)
{
    int *v;
    size_t n;
    ck_assert_int_eq(ct_parse_rank_list("100,0-3,2", &v, &n), 0);
    ck_assert_uint_eq(n, 5);
    const int want[] = {0, 1, 2, 3, 100};
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(v[i], want[i]);
    free(v);
    ck_assert_int_eq(ct_parse_rank_list("7", &v, &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(v[0], 7);
    free(v);
}
END_TEST

START_TEST(bad_rank_lists_are_refused)
{
    static const char *const bad[] = {"",    "x",  "1-", "-1",    "1,,2",
                                      "5-2", "1,", ",1", "1-2-3", "2147483648"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int *v = (int *)1;
        size_t n = 9;
        ck_assert_msg(ct_parse_rank_list(bad[i], &v, &n) == -1, "'%s' accepted", bad[i]);
        ck_assert_ptr_null(v);
        ck_assert_uint_eq(n, 0);
    }
}
END_TEST

START_TEST(iteration_ranges_may_leave_a_side_open)
{
    int64_t a, b;
    ck_assert_int_eq(ct_parse_index_range("3-7", &a, &b), 0);
    ck_assert(a == 3 && b == 7);
    ck_assert_int_eq(ct_parse_index_range("3-", &a, &b), 0);
    ck_assert(a == 3 && b == -1);
    ck_assert_int_eq(ct_parse_index_range("-7", &a, &b), 0);
    ck_assert(a == 0 && b == 7);
    static const char *const bad[] = {"", "3", "7-3", "a-b", "1-2-3", "-1-2"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(ct_parse_index_range(bad[i], &a, &b) == -1, "'%s' accepted", bad[i]);
}
END_TEST

START_TEST(windows_may_start_before_time_zero)
{
    double s, e;
    ck_assert_int_eq(ct_parse_window_us("-500-2000", &s, &e), 0);
    ck_assert(s == -500 && e == 2000);
    ck_assert_int_eq(ct_parse_window_us("1e3-2.5e3", &s, &e), 0);
    ck_assert(s == 1000 && e == 2500);
    static const char *const bad[] = {"", "5", "5-1", "5-5", "x-1", "1-x", "1-2-3", "nan-1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(ct_parse_window_us(bad[i], &s, &e) == -1, "'%s' accepted", bad[i]);
}
END_TEST

Suite *options_suite(void)
{
    Suite *s = suite_create("options");
    TCase *tc = tcase_create("values");
    tcase_add_test(tc, rank_lists_are_sorted_without_repeats);
    tcase_add_test(tc, bad_rank_lists_are_refused);
    tcase_add_test(tc, iteration_ranges_may_leave_a_side_open);
    tcase_add_test(tc, windows_may_start_before_time_zero);
    suite_add_tcase(s, tc);
    return s;
}
