/* health_proc: the /proc parsers of the health sampler (shim/health_proc.h),
 * fed the text the kernel writes, including the awkward cases. */
#include <check.h>
#include <stdlib.h>

#include "shim/health_proc.h"

START_TEST(stat_fields_are_counted_after_the_last_parenthesis)
{
    /* a command name with spaces and parentheses, as prctl allows */
    const char *s = "4242 (py (worker) 1) R 1 4242 4242 0 -1 4194560 12345 0 7 0 250 31 0 0 20 0 "
                    "9 0 1000 123456789 2000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 "
                    "0 0 0 0\n";
    uint64_t ut = 0, st = 0, mf = 0;
    ck_assert_int_eq(ct_proc_parse_stat(s, &ut, &st, &mf), 0);
    ck_assert_uint_eq(mf, 7);
    ck_assert_uint_eq(ut, 250);
    ck_assert_uint_eq(st, 31);
}
END_TEST

START_TEST(stat_refuses_cut_or_foreign_text)
{
    uint64_t a, b, c;
    ck_assert_int_lt(ct_proc_parse_stat("4242 (x) R 1 2 3", &a, &b, &c), 0);
    ck_assert_int_lt(ct_proc_parse_stat("no parenthesis here", &a, &b, &c), 0);
    ck_assert_int_lt(ct_proc_parse_stat("1 (x) R 1 2 3 4 5 6 7 8 x 10 11 12", &a, &b, &c), 0);
}
END_TEST

START_TEST(psi_some_avg10_in_hundredths_of_a_percent)
{
    int64_t v = -1;
    const char *psi = "some avg10=12.34 avg60=1.00 avg300=0.10 total=123456\n"
                      "full avg10=99.99 avg60=0.00 avg300=0.00 total=0\n";
    ck_assert_int_eq(ct_proc_parse_psi_some_avg10(psi, &v), 0);
    ck_assert_int_eq(v, 1234);
    ck_assert_int_eq(ct_proc_parse_psi_some_avg10("some avg10=0.00 avg60=0.00", &v), 0);
    ck_assert_int_eq(v, 0);
    ck_assert_int_eq(ct_proc_parse_psi_some_avg10("some avg10=100.00 avg60=0", &v), 0);
    ck_assert_int_eq(v, 10000);
    /* only "some" counts, even when "full" comes first */
    ck_assert_int_eq(ct_proc_parse_psi_some_avg10("full avg10=5.00\nsome avg10=1.5 x\n", &v), 0);
    ck_assert_int_eq(v, 150);
}
END_TEST

START_TEST(psi_refuses_what_it_cannot_read)
{
    int64_t v;
    ck_assert_int_lt(ct_proc_parse_psi_some_avg10("", &v), 0);
    ck_assert_int_lt(ct_proc_parse_psi_some_avg10("full avg10=1.00\n", &v), 0);
    ck_assert_int_lt(ct_proc_parse_psi_some_avg10("some avg60=1.00\nfull avg10=1.00\n", &v), 0);
    ck_assert_int_lt(ct_proc_parse_psi_some_avg10("some avg10=abc\n", &v), 0);
}
END_TEST

START_TEST(loadavg_running_tasks)
{
    int64_t r = -1;
    ck_assert_int_eq(ct_proc_parse_loadavg_running("0.52 0.58 0.59 3/467 12345\n", &r), 0);
    ck_assert_int_eq(r, 3);
    ck_assert_int_lt(ct_proc_parse_loadavg_running("0.52 0.58 0.59 12345\n", &r), 0);
    ck_assert_int_lt(ct_proc_parse_loadavg_running("0.52 0.58 0.59 9/4 1\n", &r), 0);
    ck_assert_int_lt(ct_proc_parse_loadavg_running("", &r), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("health_proc");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, stat_fields_are_counted_after_the_last_parenthesis);
    tcase_add_test(tc, stat_refuses_cut_or_foreign_text);
    tcase_add_test(tc, psi_some_avg10_in_hundredths_of_a_percent);
    tcase_add_test(tc, psi_refuses_what_it_cannot_read);
    tcase_add_test(tc, loadavg_running_tasks);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
