/* Suite "iterations": ct_iterations_find (decoder/analysis/iterations.c) on
 * hand-built ranks: step ranges, marks, the kernel-name period, --skip and
 * --steps (docs/report.md, "Iterations"). Times in µs. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/export/report_out.h"
#include "tests/unit/timeline_builder.h"
#include "decoder/read/job.h"

struct found {
    struct ct_job job;
    struct ct_iter *it;
    size_t n;
    enum ct_iter_source src;
    double conf;
    unsigned why;
};

/* Builds the job of b (one rank, 0) and finds its iterations with o
 * (NULL: no --skip/--steps). */
static void find(struct tb_job *b, const struct ct_iter_opts *o, struct found *f)
{
    struct ct_iter_opts all = {0, 0, -1, 0};
    tb_build(b, &f->job);
    ck_assert_int_eq(ct_iterations_find(tb_rank(&f->job, 0), o ? o : &all, &f->it, &f->n, &f->src,
                                        &f->conf, &f->why),
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

/* An optimizer's kernel, as PyTorch's fused Adam names it: one kind of the
 * synchronisation structure a step repeats with (repeats.c name_marks). */
#define OPT_KERNEL "multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>>"

/* Compute kernel i at [100 + 100 i, 150 + 100 i), names in `names` (one
 * letter each; 'O' is OPT_KERNEL). */
static void kernels(struct ct_proc *p, const char *names)
{
    for (int i = 0; names[i]; i++) {
        char name[2] = {names[i], 0};
        tb_kernel(p, names[i] == 'O' ? OPT_KERNEL : name, 1, 100 + 100 * i, 150 + 100 * i,
                  TB_NOLAUNCH);
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

/* Four steps of a head kernel that differs in every step (p, q, r, s: a
 * variant chosen per step) then c..g and the optimizer's kernel O, in a
 * capture that starts and ends at a step (Kineto): the anchors c..O sit
 * one op into every step, the last cycle lacks the one op that ends the
 * cycle before (its next step's head), so the steps are the cycles
 * rotated back by one: from the capture's first host event (50) and from
 * kernels 7, 14 and 21. Recorded by cutrace (no such premise) the same
 * work gives the cycles from c, one op late: the op before the first is
 * no step. */
START_TEST(a_capture_that_starts_at_a_step_is_cut_at_its_steps)
{
    struct tb_job b;
    struct found f;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    kernels(p, "pcdefgOqcdefgOrcdefgOscdefgO");
    p->at_step = 1;
    p->first_host = TB_US(50);
    find(&b, NULL, &f);
    ck_assert_int_eq(f.src, CT_ITER_PERIOD);
    ck_assert_uint_eq(f.n, 4);
    expect_iter(&f, 0, 50, 800, 0);
    expect_iter(&f, 1, 800, 1500, 1);
    expect_iter(&f, 2, 1500, 2200, 2);
    expect_iter(&f, 3, 2200, 2850, 3);
    found_free(&f);

    tb_init(&b);
    kernels(tb_proc(&b, 0), "pcdefgOqcdefgOrcdefgOscdefgO");
    find(&b, NULL, &f);
    ck_assert_uint_eq(f.n, 4);
    expect_iter(&f, 0, 200, 900, 0);
    expect_iter(&f, 3, 2300, 2850, 3);
    found_free(&f);
}
END_TEST

/* Two kernels launched twice and three times in every step, no token once
 * per step ((aabbb) x 4): every second a, from the first of each pair (the
 * one after the longest distance from the a before), cuts the steps. */
START_TEST(a_kernel_launched_m_times_per_step_cuts_every_mth)
{
    struct tb_job b;
    struct found f;
    tb_init(&b);
    kernels(tb_proc(&b, 0), "aabbbaabbbaabbbaabbb");
    find(&b, NULL, &f);
    ck_assert_int_eq(f.src, CT_ITER_PERIOD);
    ck_assert_uint_eq(f.n, 4);
    expect_iter(&f, 0, 100, 600, 0);
    expect_iter(&f, 1, 600, 1100, 1);
    expect_iter(&f, 3, 1600, 2050, 3);
    found_free(&f);
}
END_TEST

/* abcO abcO (O: the optimizer): two steps are a period only in a capture
 * of whole steps (anchors seen twice), and two cycles are too few to be
 * sure of (confidence times 0.7, and why); elsewhere a token seen twice is
 * no evidence. */
START_TEST(two_steps_repeat_only_in_a_capture_of_whole_steps)
{
    struct tb_job b;
    struct found f;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    kernels(p, "abcOabcO");
    p->at_step = 1;
    p->first_host = TB_US(100);
    find(&b, NULL, &f);
    ck_assert_uint_eq(f.n, 2);
    expect_iter(&f, 0, 100, 500, 0);
    expect_iter(&f, 1, 500, 850, 1);
    /* the kernels are 100 us apart, a gap no longer in one place than in
     * another: no pause of the host's loop either */
    ck_assert_uint_eq(f.why, CT_ITER_WHY_FEW | CT_ITER_WHY_NO_PAUSE);
    ck_assert_double_eq_tol(f.conf, 0.7 * 0.5, 1e-9);
    found_free(&f);

    tb_init(&b);
    kernels(tb_proc(&b, 0), "abcOabcO");
    find(&b, NULL, &f);
    ck_assert_int_eq(f.src, CT_ITER_NONE);
    found_free(&f);
}
END_TEST

/* abc abc abc, each step ending with the host blocked in a sync (320-390,
 * 620-690, 920-990: a loss.item()): the steps end where the syncs do (the
 * host cannot run ahead of one), so the second and third start at 390 and
 * 690, not at their first launch. */
START_TEST(a_step_ended_by_a_sync_is_over_when_the_sync_is)
{
    struct tb_job b;
    struct found f;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    kernels(p, "abcabcabc");
    for (int k = 0; k < 3; k++)
        tb_sync(p, 320 + 300 * k, 390 + 300 * k);
    find(&b, NULL, &f);
    ck_assert_uint_eq(f.n, 3);
    expect_iter(&f, 0, 100, 390, 0);
    expect_iter(&f, 1, 390, 690, 1);
    expect_iter(&f, 2, 690, 990, 2);
    found_free(&f);
}
END_TEST

/* Steps of kernels a..e and an all-reduce (seq k), 1000 us each, on two
 * ranks; rank 0's first step also runs four one-off kernels (a warm-up),
 * so it drops that step and finds 4, rank 1 finds 5. The all-reduces say
 * which steps are the same: rank 0's are numbered 1..4, as rank 1 numbers
 * the steps that hold the same sequence numbers. */
static void step_with_allreduce(struct ct_proc *p, int k, int warm)
{
    int64_t t = 1000 * k;
    const char *n[] = {"a", "b", "c", "d", "e", "w1", "w2", "w3", "w4"};
    for (int j = 0; j < (warm ? 9 : 5); j++)
        tb_kernel(p, n[j], 1, t + 10 + 80 * j, t + 80 + 80 * j, t + 80 * j);
    tb_nccl(p, (struct tb_coll){.op = CT_NCCL_OP_ALLREDUCE,
                                .comm = 7,
                                .nranks = 2,
                                .seq = (uint64_t)k,
                                .bytes = 1 << 20,
                                .s = t + 850,
                                .e = t + 950,
                                .launch = t + 840});
}

START_TEST(ranks_number_the_same_steps_alike)
{
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *p0 = tb_proc(&b, 0), *p1 = tb_proc(&b, 1);
    for (int k = 0; k < 5; k++) {
        step_with_allreduce(p0, k, k == 0);
        step_with_allreduce(p1, k, 0);
    }
    struct ct_job job;
    tb_build(&b, &job);
    struct ct_report rep;
    tb_analyze(&job, NULL, &rep);
    const struct ct_rank_result *r0 = &rep.rr[0], *r1 = &rep.rr[1];
    ck_assert_int_eq(r0->iter_src, CT_ITER_PERIOD);
    ck_assert_uint_eq(r0->niters, 4);
    ck_assert_uint_eq(r1->niters, 5);
    for (size_t i = 0; i < 4; i++) {
        ck_assert_int_eq(r0->iters[i].index, (int64_t)i + 1);
        ck_assert_int_eq(r0->iters[i].s, r1->iters[i + 1].s);
    }
    ck_assert_int_eq(r1->iters[0].index, 0);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* Eight steps of 1000 us: forward f1 f2, backward b1 b2, an all-reduce
 * (seq k), the optimizer's kernel o. Rank 0 alone logs its loss after the
 * forward pass (a copy, then a sync that ends at +200): its repeats start
 * its steps after that sync, its peers' at f1. Most ranks begin at f1, so
 * rank 0 is re-cut at its own f1 launches (t = 1000 k), every step of
 * 1000 us but the last (to o's end), numbered as rank 1's. */
static void logged_step(struct ct_proc *p, int k, int logs)
{
    int64_t t = 1000 * k;
    tb_kernel(p, "f1", 1, t + 10, t + 80, t);
    tb_kernel(p, "f2", 1, t + 90, t + 160, t + 80);
    if (logs) {
        tb_copy(p, 1, t + 170, t + 175, t + 165);
        tb_sync(p, t + 166, t + 200);
    }
    tb_kernel(p, "b1", 1, t + 210, t + 280, t + 200);
    tb_kernel(p, "b2", 1, t + 290, t + 360, t + 280);
    tb_nccl(p, (struct tb_coll){.op = CT_NCCL_OP_ALLREDUCE,
                                .comm = 7,
                                .nranks = 3,
                                .seq = (uint64_t)k,
                                .bytes = 1 << 20,
                                .s = t + 370,
                                .e = t + 450,
                                .launch = t + 360});
    tb_kernel(p, "o", 1, t + 460, t + 520, t + 455);
}

START_TEST(ranks_cut_their_steps_in_one_phase)
{
    for (int nr = 2; nr <= 3; nr++) {
        struct tb_job b;
        tb_init(&b);
        for (int r = 0; r < nr; r++) {
            struct ct_proc *p = tb_proc(&b, r);
            for (int k = 0; k < 8; k++)
                logged_step(p, k, r == 0);
        }
        struct ct_job job;
        tb_build(&b, &job);
        struct ct_report rep;
        tb_analyze(&job, NULL, &rep);
        const struct ct_rank_result *r0 = &rep.rr[0], *r1 = &rep.rr[1];
        ck_assert_int_eq(r0->iter_src, CT_ITER_PERIOD);
        ck_assert_int_eq(r1->iter_src, CT_ITER_PERIOD);
        ck_assert_uint_ge(r1->niters, 7);
        ck_assert_int_eq(r1->iters[0].s % TB_US(1000), 0); /* the peers' own phase */
        ck_assert_uint_eq(r0->niters, r1->niters);
        for (size_t i = 0; i < r0->niters; i++) {
            ck_assert_int_eq(r0->iters[i].s, r1->iters[i].s);
            ck_assert_int_eq(r0->iters[i].index, r1->iters[i].index);
            if (i + 1 < r0->niters)
                ck_assert_int_eq(r0->iters[i].e, r0->iters[i].s + TB_US(1000));
        }
        ct_report_free(&rep);
        ct_job_free(&job);
    }
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
    kernels(p, "ababab");
    find(&b, NULL, &f);
    ck_assert_int_eq(f.src, CT_ITER_PERIOD);
    ck_assert_uint_eq(f.n, 3); /* [100,300) [300,500) [500,650) */
    expect_iter(&f, 0, 100, 300, 0);
    expect_iter(&f, 2, 500, 650, 2);
    /* the cycles agree (1), but nothing of a step's synchronisation
     * structure repeats with them and the host never pauses: halved twice */
    ck_assert_uint_eq(f.why, CT_ITER_WHY_NO_SYNC | CT_ITER_WHY_NO_PAUSE);
    ck_assert_double_eq_tol(f.conf, 0.25, 1e-9);
    found_free(&f);
}
END_TEST

/* Compute ab ab ab ab ab with AllReduces after the first and the fourth
 * cycle only: two collectives are no period of their own, and a cycle with
 * one op more is still a step: five cycles of ab. */
START_TEST(an_occasional_collective_is_an_extra_op_of_its_step)
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
                                        .e = t + 500,
                                        .launch = t + 350});
    }
    find(&b, NULL, &f);
    ck_assert_int_eq(f.src, CT_ITER_PERIOD);
    ck_assert_uint_eq(f.n, 5);
    expect_iter(&f, 0, 1000, 2000, 0);
    expect_iter(&f, 4, 5000, 5300, 4);
    found_free(&f);
}
END_TEST

/* Nine steps of 4200 us: one kernel launched four times (900 us each,
 * 1000 us apart), then an all-reduce. The kernel alone repeats 36 times,
 * but the all-reduce comes in every fourth of those cycles: the step is the
 * all-reduce's cycle. Cut at the all-reduce, the steps before the first and
 * after the last are partial: 8 iterations of exactly 4200 us. */
START_TEST(a_kernel_repeated_inside_the_step_is_not_the_step)
{
    struct tb_job b;
    struct found f;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    for (int j = 0; j < 9; j++) {
        int64_t t = 4200 * j;
        for (int k = 0; k < 4; k++)
            tb_kernel(p, "k", 1, t + 1000 * k + 20, t + 1000 * k + 920, t + 1000 * k);
        tb_nccl(p, (struct tb_coll){.op = CT_NCCL_OP_ALLREDUCE,
                                    .comm = 1,
                                    .nranks = 1,
                                    .seq = (uint64_t)j,
                                    .bytes = 1 << 20,
                                    .s = t + 3950,
                                    .e = t + 4150,
                                    .launch = t + 3930});
    }
    find(&b, NULL, &f);
    ck_assert_int_eq(f.src, CT_ITER_PERIOD);
    ck_assert_uint_ge(f.n, 8);
    ck_assert_uint_le(f.n, 9);
    for (size_t i = 0; i + 1 < f.n; i++)
        ck_assert_int_eq(f.it[i + 1].s - f.it[i].s, TB_US(4200));
    /* the cycles agree (> 0.9) and each holds its all-reduce, but the host
     * launches at a steady 1000 us: no pause of its loop, half the
     * confidence */
    ck_assert_uint_eq(f.why, CT_ITER_WHY_NO_PAUSE);
    ck_assert(f.conf > 0.45 && f.conf <= 0.5);
    found_free(&f);
}
END_TEST

/* Twelve steps of five kernels a..e, 100 us apart, a step every 1000 us; a
 * warm-up first step with six more kernels after b (autotuning), an extra kernel x
 * in every third step, and kernel c swapped for its variant c2 in odd
 * steps. The warm-up is dropped; the other eleven are steps, each from its
 * first kernel's launch. */
START_TEST(extra_missing_and_variant_kernels_keep_their_steps)
{
    struct tb_job b;
    struct found f;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    const char *names[] = {"a", "b", "c", "d", "e"};
    for (int j = 0; j < 12; j++) {
        int64_t t = 1000 * j;
        int64_t at = t;
        for (int k = 0; k < 5; k++, at += 100) {
            const char *nm = k == 2 && j % 2 ? "c2" : names[k];
            tb_kernel(p, nm, 1, at + 10, at + 60, at);
            if (j == 0 && k == 1) /* autotuning inside the first forward */
                for (int w = 0; w < 6; w++) {
                    char wn[8] = {'w', (char)('0' + w), 0};
                    tb_kernel(p, wn, 1, at + 62 + 5 * w, at + 66 + 5 * w, at + 61 + w);
                }
        }
        if (j % 3 == 2)
            tb_kernel(p, "x", 1, at + 10, at + 40, at);
    }
    find(&b, NULL, &f);
    ck_assert_int_eq(f.src, CT_ITER_PERIOD);
    ck_assert_uint_eq(f.n, 11);
    for (size_t i = 0; i < f.n; i++)
        ck_assert_int_eq(f.it[i].s, TB_US(1000 * (int64_t)(i + 1)));
    /* the cycles agree (> 0.7), but kernels alone, 100 us apart with 500 us
     * before each step (5 gaps, under the 12 of a loop's pause): no
     * synchronisation structure, no pause, a quarter of that */
    ck_assert_uint_eq(f.why, CT_ITER_WHY_NO_SYNC | CT_ITER_WHY_NO_PAUSE);
    ck_assert(f.conf > 0.7 * 0.25 && f.conf <= 0.25);
    found_free(&f);
}
END_TEST

/* A serving loop: 60 decode steps, each a graph replay of six kernels
 * enqueued at one host time, host gaps of 300 to 500 us between them, and a
 * prefill of three kernels before every tenth decode: 60 steps (the
 * prefills are extra work of their steps, not a period of 10). */
START_TEST(a_serving_loop_has_one_step_per_decode)
{
    struct tb_job b;
    struct found f;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    int64_t t = 100;
    for (int j = 0; j < 60; j++) {
        int64_t g = t;
        if (j % 10 == 0)
            for (int k = 0; k < 3; k++, g += 40) {
                char nm[8] = {'p', (char)('0' + k), 0};
                tb_kernel(p, nm, 1, g + 10, g + 40, g);
            }
        for (int k = 0; k < 6; k++) {
            char nm[8] = {'g', (char)('0' + k), 0};
            tb_kernel(p, nm, 1, g + 10 + 20 * k, g + 28 + 20 * k, g);
        }
        t = g + 140 + 300 + (j * 37) % 200;
    }
    find(&b, NULL, &f);
    ck_assert_int_eq(f.src, CT_ITER_PERIOD);
    ck_assert_uint_ge(f.n, 59);
    ck_assert_uint_le(f.n, 60);
    found_free(&f);
}
END_TEST

/* The names a profiler gives copies between host and device: a batch
 * fetched, a result read back (repeats.c name_marks). */
#define HTOD "Memcpy HtoD (Pageable -> Device)"
#define DTOH "Memcpy DtoH (Device -> Pageable)"

/* One prefill captured whole (Kineto: a capture of whole steps): the input
 * copied in, an embedding, 36 layers of four kernels launched back to back
 * 10 us apart (the GPU behind), then the logits, the sampling and the
 * token read back, the host waiting for it. The 36 layers repeat exactly
 * (before this rule: 35 "iterations" at confidence 1), but the step's
 * synchronisation structure (the copies, the sync) shows only at the
 * capture's ends and no host pause separates the layers: one step of
 * layers, no iterations, and why. */
START_TEST(the_layers_of_one_captured_step_are_no_iterations)
{
    struct tb_job b;
    struct found f;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    p->at_step = 1;
    p->first_host = 0;
    const char *layer[] = {"qkv", "attn", "proj", "mlp"};
    int64_t h = 10, g = 20;
    tb_copy_named(p, HTOD, 1, g, g + 10, h);
    h += 10, g += 10;
    tb_kernel(p, "embedding", 1, g, g + 20, h);
    h += 10, g += 20;
    for (int l = 0; l < 36; l++)
        for (int k = 0; k < 4; k++, h += 10, g += 100)
            tb_kernel(p, layer[k], 1, g, g + 100, h);
    tb_kernel(p, "lm_head", 1, g, g + 50, h);
    tb_kernel(p, "sample", 1, g + 50, g + 60, h + 10);
    tb_copy_named(p, DTOH, 1, g + 60, g + 65, h + 20);
    tb_sync(p, h + 25, g + 66);
    find(&b, NULL, &f);
    ck_assert_int_eq(f.src, CT_ITER_NONE);
    ck_assert_uint_eq(f.n, 0);
    ck_assert_uint_eq(f.why, CT_ITER_WHY_PARTS);
    found_free(&f);
}
END_TEST

/* Four training steps, 20 ms apart (the host waits for data between
 * them): each fetches its batch (a host-to-device copy), runs 12 forward
 * layers of three kernels and 12 backward layers of two, an all-reduce and
 * the optimizer. A forward layer repeats 48 times, and its cycles agree
 * well enough to pass (11 of 12 alike); but the level above it, the
 * batch's copy, carries the copy, the all-reduce and the optimizer that
 * the layers lack, and the host's pause: the steps are that level, each
 * from its copy's launch: [1000, 21000) .. [61000, 61950) (the last to its
 * optimizer's end), confidence 1. */
START_TEST(twelve_layers_in_each_step_are_not_steps)
{
    struct tb_job b;
    struct found f;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    for (int k = 0; k < 4; k++) {
        int64_t t = 1000 + 20000 * k;
        tb_copy_named(p, HTOD, 1, t + 10, t + 20, t);
        const char *fwd[] = {"f1", "f2", "f3"}, *bwd[] = {"b1", "b2"};
        for (int i = 0; i < 36; i++)
            tb_kernel(p, fwd[i % 3], 1, t + 100 + 10 * i + 2, t + 100 + 10 * i + 8,
                      t + 100 + 10 * i);
        for (int i = 0; i < 24; i++)
            tb_kernel(p, bwd[i % 2], 1, t + 500 + 10 * i + 2, t + 500 + 10 * i + 8,
                      t + 500 + 10 * i);
        tb_nccl(p, (struct tb_coll){.op = CT_NCCL_OP_ALLREDUCE,
                                    .comm = 1,
                                    .nranks = 1,
                                    .seq = (uint64_t)k,
                                    .bytes = 1 << 20,
                                    .s = t + 805,
                                    .e = t + 900,
                                    .launch = t + 800});
        tb_kernel(p, OPT_KERNEL, 1, t + 905, t + 950, t + 900);
    }
    find(&b, NULL, &f);
    ck_assert_int_eq(f.src, CT_ITER_PERIOD);
    ck_assert_uint_eq(f.n, 4);
    expect_iter(&f, 0, 1000, 21000, 0);
    expect_iter(&f, 1, 21000, 41000, 1);
    expect_iter(&f, 2, 41000, 61000, 2);
    expect_iter(&f, 3, 61000, 61950, 3);
    ck_assert_uint_eq(f.why, 0);
    ck_assert_double_eq_tol(f.conf, 1, 1e-9);
    found_free(&f);
}
END_TEST

/* A serving loop whose host runs far ahead: 20 decode steps, each an
 * input copy, six kernels and the sampled token copied back (no sync),
 * launched every 300 us (10 us apart inside a step), while the GPU takes
 * 1000 us a step: step k runs on the GPU in [1000k + 110, 1000k + 1110).
 * Cut at host launches, step k would run from 300k + 100 to its GPU end,
 * holding the GPU work of every step queued before it (a p50 step of 7.7
 * ms in a 20 ms window). Cut where its GPU work can begin: step 0 from its
 * first launch (100) to 1110, step k from 1000k + 110 to 1000k + 1110,
 * back to back, none outside the data, none empty; p50 1000 us. */
START_TEST(a_serving_loop_whose_host_runs_ahead_is_cut_on_the_gpu)
{
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    for (int k = 0; k < 20; k++) {
        int64_t h = 300 * k + 100, g = 1000 * k + 110;
        tb_copy_named(p, HTOD, 1, g, g + 50, h);
        for (int j = 0; j < 6; j++) {
            char nm[4] = {'d', (char)('0' + j), 0};
            tb_kernel(p, nm, 1, g + 50 + 150 * j, g + 200 + 150 * j, h + 10 * (j + 1));
        }
        tb_copy_named(p, DTOH, 1, g + 950, g + 1000, h + 70);
    }
    struct ct_job job;
    struct ct_report rep;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    const struct ct_rank_result *x = tb_result(&rep, 0);
    ck_assert_int_eq(x->iter_src, CT_ITER_PERIOD);
    ck_assert_uint_eq(x->niters, 20);
    ck_assert_int_eq(x->iters[0].s, TB_US(100));
    ck_assert_int_eq(x->iters[0].e, TB_US(1110));
    for (size_t k = 1; k < 20; k++) {
        ck_assert_int_eq(x->iters[k].s, TB_US(1000 * (int64_t)k + 110));
        ck_assert_int_eq(x->iters[k].e, TB_US(1000 * (int64_t)k + 1110));
        ck_assert_int_eq(x->iters[k].s, x->iters[k - 1].e);
    }
    for (size_t k = 0; k < 20; k++)
        ck_assert(x->im[k].compute > 0);
    ck_assert_double_eq_tol(rep.step_p50, TB_US(1000), 1e-9);
    ck_assert_uint_eq(x->iter_why, 0);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* A capture of four whole steps: a head kernel that differs in every step
 * (h, j, l, n), then x A b c d e O (O: the optimizer), the last step
 * without its e. The anchor x sits one op into every step, and the last
 * cycle (x A b c d O) lacks e as well as the next step's head, so its lack
 * is not the head op for op (rotation()). The capture begins at a step,
 * so the op before the first x is its head, and the last cycle lacks two
 * ops of the median eight, within 3 ops of that: the steps start at every
 * head, [50, 900) [900, 1700) [1700, 2500) [2500, 3150), not at x (100 us,
 * an eighth of a step, late). In HTA's mode the last step goes, as HTA
 * drops a capture's last ProfilerStep. */
START_TEST(a_captured_step_is_cut_at_its_head_when_its_cycles_differ)
{
    for (int hta = 0; hta < 2; hta++) {
        struct tb_job b;
        struct found f;
        tb_init(&b);
        struct ct_proc *p = tb_proc(&b, 0);
        kernels(p, "hxAbcdeOjxAbcdeOlxAbcdeOnxAbcdO");
        p->at_step = hta ? 2 : 1;
        p->first_host = TB_US(50);
        find(&b, NULL, &f);
        ck_assert_int_eq(f.src, CT_ITER_PERIOD);
        ck_assert_uint_eq(f.n, hta ? 3 : 4);
        expect_iter(&f, 0, 50, 900, 0);
        expect_iter(&f, 1, 900, 1700, 1);
        expect_iter(&f, 2, 1700, 2500, 2);
        if (!hta)
            expect_iter(&f, 3, 2500, 3150, 3);
        ck_assert_uint_eq(f.why & CT_ITER_WHY_HTA_LAST, hta ? CT_ITER_WHY_HTA_LAST : 0);
        found_free(&f);
    }
}
END_TEST

/* Two steps captured whole, each a batch copied in, 12 layers of three
 * kernels and the optimizer, 5 ms apart: the layers repeat 24 times, the
 * steps twice (a capture of whole steps admits that), and the steps carry
 * the copy and the optimizer the layers lack: two steps, [0, 5000) and
 * [5000, 5500), at 0.7 of the confidence (two cycles are few). */
START_TEST(two_captured_steps_of_twelve_layers_are_two_steps)
{
    struct tb_job b;
    struct found f;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    p->at_step = 1;
    p->first_host = 0;
    for (int k = 0; k < 2; k++) {
        int64_t t = 5000 * k + 100;
        tb_copy_named(p, HTOD, 1, t + 5, t + 10, t);
        const char *lay[] = {"l1", "l2", "l3"};
        for (int i = 0; i < 36; i++)
            tb_kernel(p, lay[i % 3], 1, t + 20 + 10 * i + 2, t + 20 + 10 * i + 8, t + 20 + 10 * i);
        tb_kernel(p, OPT_KERNEL, 1, t + 395, t + 400, t + 390);
    }
    find(&b, NULL, &f);
    ck_assert_int_eq(f.src, CT_ITER_PERIOD);
    ck_assert_uint_eq(f.n, 2);
    expect_iter(&f, 0, 0, 5100, 0);
    expect_iter(&f, 1, 5100, 5500, 1);
    ck_assert_uint_eq(f.why, CT_ITER_WHY_FEW);
    ck_assert_double_eq_tol(f.conf, 0.7, 1e-9);
    found_free(&f);
}
END_TEST

/* A capture of four identical chunks of kernels a..f, each with a 12 ms
 * host wait after its third launch (an expert-parallel dispatch polling
 * for its counts, no CUDA sync) and nothing of a step's synchronisation
 * structure: the host pauses like a loop, so they may be steps, but
 * nothing says so: four iterations, half the confidence, and why. */
START_TEST(cycles_that_pause_but_carry_no_structure_have_half_the_confidence)
{
    struct tb_job b;
    struct found f;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    p->at_step = 1;
    p->first_host = 0;
    int64_t h = 10;
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < 6; j++) {
            char nm[2] = {(char)('a' + j), 0};
            tb_kernel(p, nm, 1, h + 5, h + 8, h);
            h += j == 2 ? 12000 : 20;
        }
    find(&b, NULL, &f);
    ck_assert_int_eq(f.src, CT_ITER_PERIOD);
    ck_assert_uint_eq(f.n, 4);
    ck_assert_uint_eq(f.why, CT_ITER_WHY_NO_SYNC);
    ck_assert_double_eq_tol(f.conf, 0.5, 1e-9);
    found_free(&f);
}
END_TEST

/* Kernels that never repeat: no iteration, confidence 0. */
START_TEST(work_that_does_not_repeat_gives_no_iterations)
{
    struct tb_job b;
    struct found f;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    for (int i = 0; i < 40; i++) {
        char nm[8];
        snprintf(nm, sizeof(nm), "u%d", i);
        tb_kernel(p, nm, 1, 100 * i + 10, 100 * i + 50, 100 * i);
    }
    find(&b, NULL, &f);
    ck_assert_int_eq(f.src, CT_ITER_NONE);
    ck_assert_uint_eq(f.n, 0);
    ck_assert(f.conf == 0);
    found_free(&f);
}
END_TEST

/* The text report's second line says where iterations came from. Ranks
 * 0..n-1: ranks below `ranged` have step ranges, the next `periodic` have
 * only their repeating kernels ("ab" x 4), the rest kernels that never
 * repeat. Returns the report text (malloc'ed). */
static char *report_text(int n, int ranged, int periodic)
{
    struct tb_job b;
    tb_init(&b);
    for (int r = 0; r < n; r++) {
        struct ct_proc *p = tb_proc(&b, r);
        if (r < ranged) {
            tb_range(p, 90, 290, 1);
            tb_range(p, 290, 490, 2);
        }
        kernels(p, r < ranged + periodic ? "abababab" : "abcdefgh");
    }
    struct ct_job job;
    struct ct_report rep;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    ct_report_text(f, &rep);
    fclose(f);
    ct_report_free(&rep);
    ct_job_free(&job);
    return buf;
}

START_TEST(the_text_report_says_where_iterations_came_from)
{
    char *t = report_text(2, 2, 0);
    ck_assert_msg(strstr(t, "\nIterations from step ranges on every rank\n"), "%s", t);
    free(t);
    t = report_text(3, 1, 1);
    ck_assert_msg(strstr(t, "\nIterations of rank 0: 2 from step ranges\n"), "%s", t);
    ck_assert_msg(strstr(t, "\nIterations of rank 1: 4 found from the work that repeats (no step "
                            "annotation), confidence 0.25 (no collective, optimizer kernel, host "
                            "copy, host sync or graph launch repeats with the cycles: they may "
                            "be parts of one step; the host launches the cycles back to back, "
                            "with no pause of its loop between them: they may be parts of one "
                            "step)\n"),
                  "%s", t);
    ck_assert_msg(strstr(t, "\nIterations of rank 2: none (no step ranges or marks, and no "
                            "repeating work that agrees across cycles); whole-window figures "
                            "only\n"),
                  "%s", t);
    free(t);
    /* above 8 ranks: one line of counts, the ranks without iterations named */
    t = report_text(10, 4, 3);
    ck_assert_msg(strstr(t, "\nIterations: 4 rank(s) from step ranges, 0 from marks, 3 from the "
                            "work that repeats (lowest confidence 0.25), 3 with none (ranks 7 8 "
                            "9)\n"),
                  "%s", t);
    ck_assert_ptr_null(strstr(t, "Iterations of rank"));
    free(t);
    /* no iteration anywhere: no step time */
    t = report_text(1, 0, 0);
    ck_assert_msg(strstr(t, "cutrace report: 1 rank(s), no iterations: no step time\n"), "%s", t);
    free(t);
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

/* Capture windows [0,2000) and [3000,5000): the marks at 1900 and 3500
 * enclose the pause, so that span is no iteration. */
START_TEST(a_span_a_pause_cuts_is_not_an_iteration)
{
    struct tb_job b;
    struct found f;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    tb_capture(p, 0, 2000);
    tb_capture(p, 3000, 5000);
    tb_mark(p, 1000, 1);
    tb_mark(p, 1900, 2);
    tb_mark(p, 3500, 3);
    tb_mark(p, 4000, 4);
    tb_kernel(p, "k", 1, 1450, 1800, 1400);
    find(&b, NULL, &f);
    ck_assert_int_eq(f.src, CT_ITER_MARKS);
    ck_assert_uint_eq(f.n, 2);
    expect_iter(&f, 0, 1000, 1900, 1);
    expect_iter(&f, 1, 3500, 4000, 3);
    found_free(&f);
}
END_TEST

/* Unannotated work in two windows, the second starting mid-cycle: the
 * repeats are found in each window on their own, and no iteration spans
 * the pause [1250,3000) (over the whole rank, the cycle that holds it
 * would be one). */
START_TEST(repeats_are_found_in_each_capture_window)
{
    struct tb_job b;
    struct found f;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    tb_capture(p, 0, 1250);
    tb_capture(p, 3000, 4250);
    const char *w1 = "abcabcabcab", *w2 = "bcabcabcabc";
    for (int i = 0; w1[i]; i++) {
        char n1[2] = {w1[i], 0}, n2[2] = {w2[i], 0};
        tb_kernel(p, n1, 1, 100 + 100 * i, 150 + 100 * i, TB_NOLAUNCH);
        tb_kernel(p, n2, 1, 3100 + 100 * i, 3150 + 100 * i, TB_NOLAUNCH);
    }
    find(&b, NULL, &f);
    ck_assert_int_eq(f.src, CT_ITER_PERIOD);
    ck_assert_uint_ge(f.n, 5);
    for (size_t i = 0; i < f.n; i++) {
        int64_t s = f.it[i].s, e = f.it[i].e;
        ck_assert_int_eq(f.it[i].index, (int64_t)i);
        ck_assert_msg((s >= 0 && e <= TB_US(1250)) || (s >= TB_US(3000) && e <= TB_US(4250)),
                      "iteration %zu [%lld, %lld) is not inside one window", i, (long long)s,
                      (long long)e);
        ck_assert_int_eq(e - s, TB_US(300)); /* a cycle of three kernels, 100 apart */
    }
    found_free(&f);
}
END_TEST

START_TEST(skip_drops_the_first_n_iterations)
{
    struct tb_job b;
    struct found f;
    struct ct_iter_opts o = {2, 0, -1, 0};
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
    } cases[] = {
        {{0, 11, 12, 0}, 2, 11, 12}, {{0, 13, -1, 0}, 2, 13, 14}, {{0, 0, 10, 0}, 1, 10, 10}};
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
    tcase_add_test(tc, a_capture_that_starts_at_a_step_is_cut_at_its_steps);
    tcase_add_test(tc, two_steps_repeat_only_in_a_capture_of_whole_steps);
    tcase_add_test(tc, a_kernel_launched_m_times_per_step_cuts_every_mth);
    tcase_add_test(tc, ranks_number_the_same_steps_alike);
    tcase_add_test(tc, ranks_cut_their_steps_in_one_phase);
    tcase_add_test(tc, a_step_ended_by_a_sync_is_over_when_the_sync_is);
    tcase_add_test(tc, a_single_mark_falls_back_to_the_kernel_period);
    tcase_add_test(tc, an_occasional_collective_is_an_extra_op_of_its_step);
    tcase_add_test(tc, a_kernel_repeated_inside_the_step_is_not_the_step);
    tcase_add_test(tc, extra_missing_and_variant_kernels_keep_their_steps);
    tcase_add_test(tc, a_serving_loop_has_one_step_per_decode);
    tcase_add_test(tc, work_that_does_not_repeat_gives_no_iterations);
    tcase_add_test(tc, the_layers_of_one_captured_step_are_no_iterations);
    tcase_add_test(tc, twelve_layers_in_each_step_are_not_steps);
    tcase_add_test(tc, a_serving_loop_whose_host_runs_ahead_is_cut_on_the_gpu);
    tcase_add_test(tc, a_captured_step_is_cut_at_its_head_when_its_cycles_differ);
    tcase_add_test(tc, two_captured_steps_of_twelve_layers_are_two_steps);
    tcase_add_test(tc, cycles_that_pause_but_carry_no_structure_have_half_the_confidence);
    tcase_add_test(tc, the_text_report_says_where_iterations_came_from);
    tcase_add_test(tc, fewer_than_4_compute_kernels_give_no_iterations);
    tcase_add_test(tc, a_span_a_pause_cuts_is_not_an_iteration);
    tcase_add_test(tc, repeats_are_found_in_each_capture_window);
    tcase_add_test(tc, skip_drops_the_first_n_iterations);
    tcase_add_test(tc, steps_keep_iterations_whose_index_is_in_a_to_b);
    suite_add_tcase(s, tc);
    return s;
}
