/* Suite "iterations": ct_iterations_find (decoder/analysis/iterations.c) on
 * hand-built ranks: step ranges, marks, the kernel-name period, --skip and
 * --steps (docs/report.md, "Iterations"). Times in µs. */
#include <check.h>
#include <stdlib.h>

#include "tests/unit/timeline_builder.h"

struct found {
    struct ct_job job;
    struct ct_iter *it;
    size_t n;
    enum ct_iter_source src;
};

/* Builds the job of b (one rank, 0) and finds its iterations with o
 * (NULL: no --skip/--steps). */
static void find(struct tb_job *b, const struct ct_iter_opts *o, struct found *f)
{
    struct ct_iter_opts all = {0, 0, -1};
    tb_build(b, &f->job);
    ck_assert_int_eq(ct_iterations_find(tb_rank(&f->job, 0), o ? o : &all, &f->it, &f->n, &f->src),
                     0);
}

static void found_free(struct found *f)
{
    free(f->it);
    ct_job_free(&f->job);
}

static void expect_iter(const struct found *f, size_t i, int64_t s, int64_t e, int64_t index)
{
    ck_assert_uint_lt(i, f->n);
    ck_assert_int_eq(f->it[i].s, TB_US(s));
    ck_assert_int_eq(f->it[i].e, TB_US(e));
    ck_assert_int_eq(f->it[i].index, index);
}

START_TEST(ranges_give_one_iteration_each_numbered_by_their_step)
{
    struct tb_job b;
    struct found f;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    tb_range(p, 1000, 2000, 5);
    tb_range(p, 2000, 3000, 6);
    tb_kernel(p, "k", 1, 1100, 1500, 1050);
    tb_kernel(p, "k", 1, 2100, 2500, 2050);
    find(&b, NULL, &f);
    ck_assert_int_eq(f.src, CT_ITER_RANGES);
    ck_assert_uint_eq(f.n, 2);
    expect_iter(&f, 0, 1000, 2000, 5);
    expect_iter(&f, 1, 2000, 3000, 6);
    found_free(&f);
}
END_TEST

/*
 * Ranges [1000,2000) #0, [2000,3000) #1, [5000,6000) #2 and GPU work:
 *   launched 1900 (in #0), runs [1950,2300)  -> #0 ends at 2300
 *   launched 2100 (in #1), runs [2200,2500)  -> ends before #1 does
 *   launched  900 (before any range), runs [950,4000): no step's work
 *   launched 3000 (#1's end: outside it), runs [3000,3500): no step's work
 *   launched 5999 (in #2), runs [6000,6100)  -> #2 ends at 6100
 */
START_TEST(a_step_lasts_until_the_gpu_work_launched_inside_it_ends)
{
    struct tb_job b;
    struct found f;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    tb_range(p, 1000, 2000, 0);
    tb_range(p, 2000, 3000, 1);
    tb_range(p, 5000, 6000, 2);
    tb_kernel(p, "z", 1, 950, 4000, 900);
    tb_kernel(p, "x", 2, 1950, 2300, 1900);
    tb_kernel(p, "y", 3, 2200, 2500, 2100);
    tb_kernel(p, "w", 4, 3000, 3500, 3000);
    tb_kernel(p, "v", 5, 6000, 6100, 5999);
    find(&b, NULL, &f);
    ck_assert_uint_eq(f.n, 3);
    expect_iter(&f, 0, 1000, 2300, 0);
    expect_iter(&f, 1, 2000, 3000, 1);
    expect_iter(&f, 2, 5000, 6100, 2);
    found_free(&f);
}
END_TEST

/* Given out of order: #9 [300,400), then [200,300) without a number, then
 * #7 [100,200). Taken in start order; the unnumbered one, second, takes
 * its ordinal 1. */
START_TEST(ranges_are_taken_in_start_order_and_unnumbered_take_their_ordinal)
{
    struct tb_job b;
    struct found f;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    tb_range(p, 300, 400, 9);
    tb_range(p, 200, 300, CT_STEP_NONE);
    tb_range(p, 100, 200, 7);
    tb_kernel(p, "k", 1, 150, 160, TB_NOLAUNCH);
    find(&b, NULL, &f);
    ck_assert_uint_eq(f.n, 3);
    expect_iter(&f, 0, 100, 200, 7);
    expect_iter(&f, 1, 200, 300, 1);
    expect_iter(&f, 2, 300, 400, 9);
    found_free(&f);
}
END_TEST

/* Marks at 1000 #1, 1500 #2, 2500 #3: [1000,1500) #1 and [1500,2500) #2
 * (the last mark opens no iteration). A mark's iteration is not extended
 * by its GPU work (launched 1400, running until 1800). */
START_TEST(marks_give_iterations_from_mark_to_mark)
{
    struct tb_job b;
    struct found f;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    tb_mark(p, 1000, 1);
    tb_mark(p, 1500, 2);
    tb_mark(p, 2500, 3);
    tb_kernel(p, "k", 1, 1450, 1800, 1400);
    find(&b, NULL, &f);
    ck_assert_int_eq(f.src, CT_ITER_MARKS);
    ck_assert_uint_eq(f.n, 2);
    expect_iter(&f, 0, 1000, 1500, 1);
    expect_iter(&f, 1, 1500, 2500, 2);
    found_free(&f);
}
END_TEST

START_TEST(ranges_take_precedence_over_marks)
{
    struct tb_job b;
    struct found f;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    tb_mark(p, 100, 1);
    tb_mark(p, 200, 2);
    tb_mark(p, 300, 3);
    tb_range(p, 1000, 2000, 7);
    tb_kernel(p, "k", 1, 1100, 1200, TB_NOLAUNCH);
    find(&b, NULL, &f);
    ck_assert_int_eq(f.src, CT_ITER_RANGES);
    ck_assert_uint_eq(f.n, 1);
    expect_iter(&f, 0, 1000, 2000, 7);
    found_free(&f);
}
END_TEST

/* Compute kernel i at [100 + 100 i, 150 + 100 i), names in `names`. */
static void kernels(struct ct_proc *p, const char *names)
{
    for (int i = 0; names[i]; i++) {
        char name[2] = {names[i], 0};
        tb_kernel(p, name, 1, 100 + 100 * i, 150 + 100 * i, TB_NOLAUNCH);
    }
}

/* abc abc abc ab: period 3, three complete cycles, each from its first
 * kernel's start to the next cycle's: [100,400) [400,700) [700,1000)
 * (kernel 9, the incomplete cycle's first, starts at 1000). */
START_TEST(kernel_period_gives_one_iteration_per_complete_cycle)
{
    struct tb_job b;
    struct found f;
    tb_init(&b);
    kernels(tb_proc(&b, 0), "abcabcabcab");
    find(&b, NULL, &f);
    ck_assert_int_eq(f.src, CT_ITER_PERIOD);
    ck_assert_uint_eq(f.n, 3);
    expect_iter(&f, 0, 100, 400, 0);
    expect_iter(&f, 1, 400, 700, 1);
    expect_iter(&f, 2, 700, 1000, 2);
    found_free(&f);
}
END_TEST

/* abc abc abc: the last cycle has no next one and ends with its last
 * kernel (kernel 8 ends at 950). */
START_TEST(the_last_cycle_ends_at_its_last_kernel_end)
{
    struct tb_job b;
    struct found f;
    tb_init(&b);
    kernels(tb_proc(&b, 0), "abcabcabc");
    find(&b, NULL, &f);
    ck_assert_uint_eq(f.n, 3);
    expect_iter(&f, 2, 700, 950, 2);
    found_free(&f);
}
END_TEST

/* One mark opens no iteration: the kernel period is used. */
START_TEST(a_single_mark_falls_back_to_the_kernel_period)
{
    struct tb_job b;
    struct found f;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    tb_mark(p, 50, 1);
    kernels(p, "abab");
    find(&b, NULL, &f);
    ck_assert_int_eq(f.src, CT_ITER_PERIOD);
    ck_assert_uint_eq(f.n, 2); /* [100,300) [300,450) */
    expect_iter(&f, 0, 100, 300, 0);
    expect_iter(&f, 1, 300, 450, 1);
    found_free(&f);
}
END_TEST

/* Compute ab ab ab ab ab with AllReduces after the first and the fourth
 * cycle: the period is over compute kernels only (2, five cycles; with the
 * communication kernels in, "a b n a b a b a b n a b" has no period). */
START_TEST(the_period_is_over_compute_kernels_only)
{
    struct tb_job b;
    struct found f;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    for (int c = 0; c < 5; c++) {
        int64_t t = 1000 * (c + 1);
        tb_kernel(p, "a", 1, t, t + 100, TB_NOLAUNCH);
        tb_kernel(p, "b", 1, t + 200, t + 300, TB_NOLAUNCH);
        if (c == 0 || c == 3)
            tb_nccl(p, (struct tb_coll){.op = CT_NCCL_OP_ALLREDUCE,
                                        .comm = 1,
                                        .nranks = 1,
                                        .seq = (uint64_t)c,
                                        .s = t + 400,
                                        .e = t + 500});
    }
    find(&b, NULL, &f);
    ck_assert_int_eq(f.src, CT_ITER_PERIOD);
    ck_assert_uint_eq(f.n, 5);
    expect_iter(&f, 0, 1000, 2000, 0);
    expect_iter(&f, 4, 5000, 5300, 4);
    found_free(&f);
}
END_TEST

/* The period holds when names match name[i + P] for >= 95 % of the n - P
 * compared launches. (1 2) x 21 with one element changed: 2 mismatches of
 * 40 (5 %): period 2. (1 2) x 11 with one changed: 2 of 20 (10 %): no
 * period 2, and no other P >= 2 with name[P] = name[0] fits exactly. */
START_TEST(the_period_tolerates_5_pct_mismatches)
{
    uint32_t seq[42];
    for (int i = 0; i < 42; i++)
        seq[i] = 1 + (uint32_t)(i % 2);
    seq[5] = 9;
    ck_assert_uint_eq(ct_iterations_period(seq, 42), 2);
    seq[5] = 2; /* the 22-long case, index 9 changed */
    seq[9] = 9;
    ck_assert_uint_eq(ct_iterations_period(seq, 22), 0);
    uint32_t exact[10] = {1, 2, 1, 2, 1, 2, 1, 2, 1, 3};
    ck_assert_uint_eq(ct_iterations_period(exact, 10), 0); /* 10 - P < 20: no mismatch allowed */
    ck_assert_uint_eq(ct_iterations_period(exact, 9), 2);
}
END_TEST

START_TEST(fewer_than_4_compute_kernels_give_no_iterations)
{
    struct tb_job b;
    struct found f;
    tb_init(&b);
    kernels(tb_proc(&b, 0), "aaa");
    find(&b, NULL, &f);
    ck_assert_int_eq(f.src, CT_ITER_NONE);
    ck_assert_uint_eq(f.n, 0);
    found_free(&f);
}
END_TEST

/* Five ranges numbered #10 .. #14, 100 µs each from 1000. */
static void five_steps(struct tb_job *b)
{
    tb_init(b);
    struct ct_proc *p = tb_proc(b, 0);
    for (int k = 0; k < 5; k++)
        tb_range(p, 1000 + 100 * k, 1100 + 100 * k, 10 + k);
    tb_kernel(p, "k", 1, 1000, 1010, TB_NOLAUNCH);
}

START_TEST(skip_drops_the_first_n_iterations)
{
    struct tb_job b;
    struct found f;
    struct ct_iter_opts o = {2, 0, -1};
    five_steps(&b);
    find(&b, &o, &f);
    ck_assert_uint_eq(f.n, 3);
    expect_iter(&f, 0, 1200, 1300, 12);
    expect_iter(&f, 2, 1400, 1500, 14);
    found_free(&f);
}
END_TEST

/* --steps keeps step numbers, not positions: 11-12 keeps #11 and #12
 * (positions 11-12 do not exist); 13- keeps #13 and #14; -10 keeps #10. */
START_TEST(steps_keep_iterations_whose_index_is_in_a_to_b)
{
    const struct {
        struct ct_iter_opts o;
        size_t n;
        int64_t first, last;
    } cases[] = {{{0, 11, 12}, 2, 11, 12}, {{0, 13, -1}, 2, 13, 14}, {{0, 0, 10}, 1, 10, 10}};
    for (size_t c = 0; c < 3; c++) {
        struct tb_job b;
        struct found f;
        five_steps(&b);
        find(&b, &cases[c].o, &f);
        ck_assert_uint_eq(f.n, cases[c].n);
        ck_assert_int_eq(f.it[0].index, cases[c].first);
        ck_assert_int_eq(f.it[f.n - 1].index, cases[c].last);
        found_free(&f);
    }
}
END_TEST

Suite *iterations_suite(void)
{
    Suite *s = suite_create("iterations");
    TCase *tc = tcase_create("iterations");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, ranges_give_one_iteration_each_numbered_by_their_step);
    tcase_add_test(tc, a_step_lasts_until_the_gpu_work_launched_inside_it_ends);
    tcase_add_test(tc, ranges_are_taken_in_start_order_and_unnumbered_take_their_ordinal);
    tcase_add_test(tc, marks_give_iterations_from_mark_to_mark);
    tcase_add_test(tc, ranges_take_precedence_over_marks);
    tcase_add_test(tc, kernel_period_gives_one_iteration_per_complete_cycle);
    tcase_add_test(tc, the_last_cycle_ends_at_its_last_kernel_end);
    tcase_add_test(tc, a_single_mark_falls_back_to_the_kernel_period);
    tcase_add_test(tc, the_period_is_over_compute_kernels_only);
    tcase_add_test(tc, the_period_tolerates_5_pct_mismatches);
    tcase_add_test(tc, fewer_than_4_compute_kernels_give_no_iterations);
    tcase_add_test(tc, skip_drops_the_first_n_iterations);
    tcase_add_test(tc, steps_keep_iterations_whose_index_is_in_a_to_b);
    suite_add_tcase(s, tc);
    return s;
}
