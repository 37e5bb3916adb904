/*
 * Suite "json": the one JSON writer (decoder/util/json.c). Numbers, alone
 * and as members, are written exactly as printf's "%.*f" writes them,
 * whichever path writes them (the digits of a whole count of 10^-decimals units, or printf):
 * times in whole ns as µs, values that are no such count, halfway cases,
 * negative values that round to 0, large values; non-finite ones as null.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/util/json.h"

/* ct_json_num(v, d) and printf("%.*f", d, v) side by side. */
static void same_as_printf(double v, int d)
{
    char *got = NULL, want[512];
    size_t n = 0;
    FILE *f = open_memstream(&got, &n);
    ck_assert_ptr_nonnull(f);
    ct_json_num(f, v, d);
    fclose(f);
    snprintf(want, sizeof(want), "%.*f", d, v);
    ck_assert_msg(!strcmp(got, want), "%.17g with %d decimals: got %s, printf %s", v, d, got, want);
    free(got);
    /* and as a member, its key before it */
    f = open_memstream(&got, &n);
    ck_assert_ptr_nonnull(f);
    ct_json_member(f, "exposed_comm_us", v, d);
    fclose(f);
    snprintf(want, sizeof(want), "\"exposed_comm_us\":%.*f", d, v);
    ck_assert_msg(!strcmp(got, want), "member %.17g, %d decimals: got %s, printf %s", v, d, got,
                  want);
    free(got);
}

START_TEST(numbers_are_written_as_printf_writes_them)
{
    static const double fixed[] = {
        0,      -0.0,    1,       -1,       0.5,       1.5,          2.5,     -2.5, 0.0005,
        0.0015, -0.0004, -0.0005, 123.4565, 1e14,      -1e14,        9e14,    1e15, 2.5e15,
        9.1e15, 1e300,   1e-300,  5e-324,   0.1 + 0.2, 1234567.0005, 999.9995};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        for (int d = 0; d <= 8; d++)
            same_as_printf(fixed[i], d);
    srand(5);
    for (int k = 0; k < 50000; k++) {
        long long ns = ((long long)rand() << 20 | rand()) % 4000000000000ll - 100000000000ll;
        same_as_printf((double)ns / 1e3, 3); /* whole ns as µs: the common case */
        char b[64], want[64];
        size_t n = ct_json_us_fmt(b, "t_us", 4, ns, k % 2);
        snprintf(want, sizeof(want), "\"t_us\":%.3f%s", (double)ns / 1000.0, k % 2 ? "," : "");
        ck_assert_msg(n == strlen(want) && !memcmp(b, want, n), "ns %lld: %.*s, printf %s", ns,
                      (int)n, b, want);
        same_as_printf((double)ns / 1e3, 1);
        double r = (double)rand() / RAND_MAX * pow(10, rand() % 16 - 6) * (rand() % 2 ? 1 : -1);
        same_as_printf(r, rand() % 7);
        same_as_printf(r * 1e3, 2);
    }
}
END_TEST

START_TEST(non_finite_numbers_are_null)
{
    const double v[] = {NAN, INFINITY, -INFINITY};
    for (size_t i = 0; i < 3; i++) {
        char *got = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&got, &n);
        ct_json_member(f, "k", v[i], 3);
        fclose(f);
        ck_assert_str_eq(got, "\"k\":null");
        free(got);
    }
}
END_TEST

/* ct_json_num_g: an integer (a count, a size in bytes) exactly, whatever its
 * digits; anything else to six significant digits; non-finite as null. */
START_TEST(a_general_number_keeps_an_integer_whole)
{
    const struct {
        double v;
        const char *want;
    } c[] = {{16777216, "16777216"},
             {-3, "-3"},
             {0, "0"},
             {9007199254740991.0, "9007199254740991"},
             {1e300, "1e+300"},
             {0.994229, "0.994229"},
             {707210.126, "707210"},
             {NAN, "null"}};
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        char *got = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&got, &n);
        ct_json_num_g(f, c[i].v);
        fclose(f);
        ck_assert_str_eq(got, c[i].want);
        free(got);
    }
}
END_TEST

Suite *json_suite(void)
{
    Suite *s = suite_create("json");
    TCase *tc = tcase_create("json");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, numbers_are_written_as_printf_writes_them);
    tcase_add_test(tc, non_finite_numbers_are_null);
    tcase_add_test(tc, a_general_number_keeps_an_integer_whole);
    suite_add_tcase(s, tc);
    return s;
}
