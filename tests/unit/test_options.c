/*
 * The options every command parses (decoder/util/options.c): the one
 * table, whose shared options mean the same for each command that takes
 * them; and the values report, export, diff and diagnose parse (rank
 * lists, iteration ranges, time windows). Each bad value must be refused
 * (the command then names the option and what it expects), each good one
 * read exactly.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The long options of command cmd include name (its code in *code). */
static int has_option(enum ct_cmd_id cmd, const char *name, int *code)
{
    for (const struct option *o = ct_options_of(cmd); o->name; o++)
        if (!strcmp(o->name, name)) {
            *code = o->val;
            return 1;
        }
    return 0;
}

/* --step, --skip, --json, -o/--output are one option wherever they are
 * taken: the same code, the same checks (an empty --step and a --skip
 * that is no count refused by each, a good value stored); a command's own
 * option with the same code (diff's --seed, summarize's -j) is left to it. */
START_TEST(shared_options_mean_the_same_for_every_command)
{
    static const enum ct_cmd_id step_cmds[] = {CT_CMD_REPORT, CT_CMD_EXPORT, CT_CMD_SUMMARIZE,
                                               CT_CMD_GOODPUT, CT_CMD_CRITICAL_PATH};
    for (size_t i = 0; i < sizeof(step_cmds) / sizeof(step_cmds[0]); i++) {
        int code;
        ck_assert(has_option(step_cmds[i], "step", &code) && code == 's');
        ck_assert(has_option(step_cmds[i], "output", &code) && code == 'o');
        struct ct_shared_opts o = {0};
        ck_assert_int_eq(ct_shared_opt(step_cmds[i], "cutrace x", 's', "", &o), -1);
        ck_assert_int_eq(ct_shared_opt(step_cmds[i], "cutrace x", 's', "Fwd", &o), 1);
        ck_assert_str_eq(o.step, "Fwd");
    }
    static const enum ct_cmd_id skip_cmds[] = {CT_CMD_REPORT, CT_CMD_DIFF, CT_CMD_DIAGNOSE,
                                               CT_CMD_CRITICAL_PATH};
    for (size_t i = 0; i < sizeof(skip_cmds) / sizeof(skip_cmds[0]); i++) {
        struct ct_shared_opts o = {0};
        ck_assert_int_eq(ct_shared_opt(skip_cmds[i], "cutrace x", 'k', "x", &o), -1);
        ck_assert_int_eq(ct_shared_opt(skip_cmds[i], "cutrace x", 'k', "-1", &o), -1);
        ck_assert_int_eq(ct_shared_opt(skip_cmds[i], "cutrace x", 'k', "3", &o), 1);
        ck_assert_int_eq(o.skip, 3);
        ck_assert_int_eq(ct_shared_opt(skip_cmds[i], "cutrace x", 'j', NULL, &o), 1);
        ck_assert(o.json);
    }
    int code;
    struct ct_shared_opts o = {0};
    ck_assert(has_option(CT_CMD_DIFF, "seed", &code) && !has_option(CT_CMD_DIFF, "step", &code));
    ck_assert_int_eq(ct_shared_opt(CT_CMD_DIFF, "cutrace diff", 's', "7", &o), 0);
    ck_assert(!has_option(CT_CMD_SUMMARIZE, "json", &code));
    ck_assert_int_eq(ct_shared_opt(CT_CMD_SUMMARIZE, "cutrace summarize", 'j', "4", &o), 0);
    ck_assert(!o.json);
    /* every command has --help; info none of the others */
    for (int c = 0; c < CT_NCMDS; c++)
        ck_assert(has_option((enum ct_cmd_id)c, "help", &code) && code == 'h');
    ck_assert(ct_options_of(CT_CMD_INFO)[1].name == NULL);
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
    tcase_add_test(tc, shared_options_mean_the_same_for_every_command);
    suite_add_tcase(s, tc);
    return s;
}
