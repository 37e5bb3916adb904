/* Suite "goodput": a job's wall time over its attempts by ct_goodput
 * (decoder/analysis/goodput.c, docs/goodput.md) on hand-built job lives,
 * every part computed by hand. Times in µs. */
#include <check.h>
#include <math.h>

#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/goodput.h"
#include "decoder/kineto/kineto.h"
#include "tests/unit/timeline_builder.h"
#include "decoder/read/job.h"

static void near_us(double got_ns, double want_us)
{
    ck_assert_msg(fabs(got_ns - (double)TB_US(want_us)) < 1.0, "got %.0f ns, want %.0f us", got_ns,
                  want_us);
}

/* One step range #num [s, e) with a kernel launched and run inside it. */
static void step(struct ct_proc *p, int64_t s, int64_t e, int64_t num)
{
    tb_range(p, s, e, num);
    tb_kernel(p, "k", 1, s + 10, e - 10, s + 5);
}

/*
 * A launcher (no GPU work: a host process) from 0 to 1500, and rank 0 in two
 * attempts:
 *   attempt 0 (restart count 0, start 0): steps #1 [100,200) #2 [200,300),
 *     a checkpoint save [300,350), steps #3 [350,450) #4 [450,550), then
 *     work launched at 600 and 620 (step #5 in progress), SIGKILLed: its
 *     trace is cut short (620 is its last record);
 *   attempt 1 (restart count 1, start 1000): reads the checkpoint file
 *     [1050,1080), runs #3 [1100,1200) #4 [1200,1300) #5 [1300,1400),
 *     syncs [1400,1450) and exits.
 * Attempt 0 spans [0, 620): the next attempt runs #3 again, so #3, #4 and
 * #5 are lost (rule: steps run again) from #3's start: lost 270; start-up
 * [0,100) 100; productive #1 + #2 200; the save after #2 stalls 50.
 * Attempt 1 spans [1000, 1500) (the launcher's end): restore 30, start-up
 * 70, productive 300, shutdown [1400,1500) 100. Down time 1000 - 620 = 380.
 * Total 1500, goodput 500 / 1500.
 */
START_TEST(restart_splits_into_attempts_and_names_lost_steps)
{
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *l = tb_proc(&b, -1);
    l->life.start_ns = 0;
    l->last_ns = TB_US(1500);
    struct ct_proc *a0 = tb_proc(&b, 0);
    a0->life.start_ns = 0;
    a0->life.restart = 0;
    a0->cov.truncated = 1;
    step(a0, 100, 200, 1);
    step(a0, 200, 300, 2);
    tb_ckpt(a0, 300, 350);
    step(a0, 350, 450, 3);
    step(a0, 450, 550, 4);
    tb_launch(a0, 600);
    tb_launch(a0, 620);
    struct ct_proc *a1 = tb_proc(&b, 0);
    a1->life.start_ns = TB_US(1000);
    a1->life.restart = 1;
    tb_file_read(a1, 1050, 1080);
    step(a1, 1100, 1200, 3);
    step(a1, 1200, 1300, 4);
    step(a1, 1300, 1400, 5);
    tb_sync(a1, 1400, 1450);
    /* a worker attempt 1's rank forked, with no restart count of its own:
     * it joins the attempt of the latest counted process started before it */
    struct ct_proc *wk = tb_child(&b, a1);
    wk->life.start_ns = TB_US(1020);
    tb_data_wait(wk, 1020, 1030);
    struct ct_job job;
    struct ct_report rep;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    const struct ct_goodput *g = rep.goodput;
    ck_assert_uint_eq(g->natt, 2);
    near_us((double)(g->e - g->s), 1500);
    near_us(g->downtime, 380);
    ck_assert(fabs(g->goodput_pct - 100.0 / 3) < 1e-6);
    const struct ct_attempt *A = &g->att[0], *B = &g->att[1];
    ck_assert_int_eq(A->restart, 0);
    ck_assert_int_eq(A->ended, CT_END_TRUNCATED);
    ck_assert_int_eq(A->end_uncertainty, 100 * 1000000); /* CUTRACE_FLUSH_MS's default */
    near_us((double)(A->e - A->s), 620);
    near_us(A->part[CT_GP_STARTUP], 100);
    near_us(A->part[CT_GP_PRODUCTIVE], 200);
    near_us(A->part[CT_GP_CHECKPOINT], 50);
    near_us(A->part[CT_GP_LOST], 270);
    ck_assert_int_eq(A->lost_rule, CT_LOST_RESTEP);
    ck_assert_uint_eq(A->nlost, 3);
    ck_assert_int_eq(A->lost_steps[0], 3);
    ck_assert_int_eq(A->lost_steps[2], 5);
    ck_assert_int_eq(A->first_step, 1);
    ck_assert_int_eq(A->last_step, 2);
    ck_assert_int_eq(B->ended, CT_END_EXIT);
    ck_assert_uint_eq(B->procs, 2);
    ck_assert_uint_eq(A->procs, 1);
    near_us((double)(B->s - g->s), 1000);
    near_us(B->part[CT_GP_RESTORE], 30);
    near_us(B->part[CT_GP_STARTUP], 70);
    near_us(B->part[CT_GP_PRODUCTIVE], 300);
    near_us(B->part[CT_GP_SHUTDOWN], 100);
    ck_assert_uint_eq(B->nlost, 0);
    ck_assert_uint_eq(B->steps, 3);
    double sum = g->downtime;
    for (int p = 0; p < CT_GP_NPARTS; p++)
        sum += g->part[p];
    near_us(sum, 1500);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * The job of restart_splits_into_attempts_and_names_lost_steps, with what
 * the live mapping changes: attempt 0's rank was SIGKILLed and its trace
 * completed from its mapping (salvaged, no signal known): it ended
 * "killed", its end is its last record (no flush period lost). Attempt 1
 * copies the model to the GPU at its start [1020,1030) (not a restore:
 * before the checkpoint's reading), reads the checkpoint [1050,1080), then
 * copies what it read to the GPU [1085,1090) and [1088,1095) (overlapping
 * pieces): the restore is the reading and those copies, 30 + 10 = 40;
 * start-up the other 60 of [1000,1100).
 */
START_TEST(a_killed_attempt_ends_at_its_last_record_and_a_restore_holds_its_copies)
{
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *l = tb_proc(&b, -1);
    l->life.start_ns = 0;
    l->last_ns = TB_US(1500);
    struct ct_proc *a0 = tb_proc(&b, 0);
    a0->life.start_ns = 0;
    a0->life.restart = 0;
    a0->life.salvaged = 1;
    step(a0, 100, 200, 1);
    step(a0, 200, 300, 2);
    tb_ckpt(a0, 300, 350);
    step(a0, 350, 450, 3);
    step(a0, 450, 550, 4);
    tb_launch(a0, 600);
    tb_launch(a0, 620);
    struct ct_proc *a1 = tb_proc(&b, 0);
    a1->life.start_ns = TB_US(1000);
    a1->life.restart = 1;
    tb_htod(a1, 1020, 1030);
    tb_file_read(a1, 1050, 1080);
    tb_htod(a1, 1085, 1090);
    tb_htod(a1, 1088, 1095);
    step(a1, 1100, 1200, 3);
    step(a1, 1200, 1300, 4);
    step(a1, 1300, 1400, 5);
    tb_htod(a1, 1310, 1320); /* a step's input: not a restore */
    tb_sync(a1, 1400, 1450);
    struct ct_job job;
    struct ct_report rep;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    const struct ct_goodput *g = rep.goodput;
    ck_assert_uint_eq(g->natt, 2);
    const struct ct_attempt *A = &g->att[0], *B = &g->att[1];
    ck_assert_int_eq(A->ended, CT_END_KILLED);
    ck_assert_str_eq(ct_ended_name(A->ended), "killed");
    ck_assert_int_eq(A->signal, 0);
    ck_assert_int_eq(A->end_uncertainty, 0);
    near_us((double)(A->e - A->s), 620);
    near_us(A->part[CT_GP_LOST], 270);
    ck_assert_uint_eq(A->nlost, 3); /* #3 #4 run again, #5 in progress */
    ck_assert_int_eq(A->lost_steps[0], 3);
    ck_assert_int_eq(A->lost_steps[2], 5);
    near_us(B->part[CT_GP_RESTORE], 40);
    near_us(B->part[CT_GP_STARTUP], 60);
    near_us(B->part[CT_GP_PRODUCTIVE], 300);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * Steps whose names carry no number ("train_step"): their indexes are the
 * order they come in, which means nothing across a restart. Attempt 0:
 * steps [100,200) [200,300), a save [300,350), steps [350,450) [450,550),
 * work launched at 600 (a step in progress), killed (salvaged). Attempt 1
 * runs three steps from 1100. The steps run again are not told by number:
 * the steps after the last save are lost (the 3rd and 4th, and the one in
 * progress), from 350: lost 620 - 350 = 270; productive the first two, 200.
 */
START_TEST(steps_without_numbers_in_their_names_are_lost_after_the_last_save)
{
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *a0 = tb_proc(&b, 0);
    a0->life.start_ns = 0;
    a0->life.restart = 0;
    a0->life.salvaged = 1;
    step(a0, 100, 200, CT_STEP_NONE);
    step(a0, 200, 300, CT_STEP_NONE);
    tb_ckpt(a0, 300, 350);
    step(a0, 350, 450, CT_STEP_NONE);
    step(a0, 450, 550, CT_STEP_NONE);
    tb_launch(a0, 600);
    tb_launch(a0, 620);
    struct ct_proc *a1 = tb_proc(&b, 0);
    a1->life.start_ns = TB_US(1000);
    a1->life.restart = 1;
    step(a1, 1100, 1200, CT_STEP_NONE);
    step(a1, 1200, 1300, CT_STEP_NONE);
    step(a1, 1300, 1400, CT_STEP_NONE);
    struct ct_job job;
    struct ct_report rep;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    const struct ct_goodput *g = rep.goodput;
    ck_assert_uint_eq(g->natt, 2);
    const struct ct_attempt *A = &g->att[0];
    ck_assert_int_eq(A->lost_rule, CT_LOST_CHECKPOINT);
    near_us(A->part[CT_GP_PRODUCTIVE], 200);
    near_us(A->part[CT_GP_CHECKPOINT], 50);
    near_us(A->part[CT_GP_LOST], 270);
    ck_assert_uint_eq(A->nlost, 3);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * No restart count (a launcher that sets none): two ranks start at 0, run
 * steps #0 [100,200) #1 [200,300) and sync [300,310); two new processes
 * start at 500 and run #0 [600,700), sync [700,710). The lifetimes do not
 * overlap: two attempts, down time 500 - 310. The second runs step 0 again,
 * so both steps of the first are lost, from 100 (210); start-up 100. The
 * second: start-up 100, productive 100, shutdown 10.
 */
START_TEST(attempts_without_a_restart_count_come_from_lifetimes)
{
    struct tb_job b;
    tb_init(&b);
    for (int r = 0; r < 2; r++) {
        struct ct_proc *p = tb_proc(&b, r);
        p->life.start_ns = 0;
        step(p, 100, 200, 0);
        step(p, 200, 300, 1);
        tb_sync(p, 300, 310);
    }
    for (int r = 0; r < 2; r++) {
        struct ct_proc *p = tb_proc(&b, r);
        p->life.start_ns = TB_US(500);
        step(p, 600, 700, 0);
        tb_sync(p, 700, 710);
    }
    struct ct_job job;
    struct ct_report rep;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    const struct ct_goodput *g = rep.goodput;
    ck_assert_uint_eq(g->natt, 2);
    const struct ct_attempt *A = &g->att[0], *B = &g->att[1];
    ck_assert_int_eq(A->restart, -1);
    ck_assert_uint_eq(A->ranks, 2);
    ck_assert_uint_eq(A->procs, 2);
    near_us((double)(A->e - A->s), 310);
    near_us(g->downtime, 190);
    near_us(A->part[CT_GP_STARTUP], 100);
    near_us(A->part[CT_GP_LOST], 210);
    ck_assert_int_eq(A->lost_rule, CT_LOST_RESTEP);
    ck_assert_uint_eq(A->nlost, 2);
    ck_assert_int_eq(A->lost_steps[0], 0);
    ck_assert_int_eq(A->lost_steps[1], 1);
    near_us(B->part[CT_GP_STARTUP], 100);
    near_us(B->part[CT_GP_PRODUCTIVE], 100);
    near_us(B->part[CT_GP_SHUTDOWN], 10);
    ck_assert_uint_eq(B->nlost, 0);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * A hang: two ranks, steps #0 [100,200) #1 [200,300) #2 [300,390), an
 * all-reduce per step. Rank 0's shim detected the hang at 900: its
 * all-reduce issued at 400 never completed (the one issued at 250 did).
 * Rank 1 was ended by SIGTERM at 950. The onset is 400: every rank hangs
 * from there to the attempt's end 950 (550); before it: start-up 100,
 * productive 290, shutdown [390,400) 10. The last attempt loses nothing.
 */
START_TEST(a_hang_runs_from_the_first_pending_collective_on_every_rank)
{
    struct tb_job b;
    tb_init(&b);
    for (int r = 0; r < 2; r++) {
        struct ct_proc *p = tb_proc(&b, r);
        p->life.start_ns = 0;
        p->cov.truncated = 1;
        step(p, 100, 200, 0);
        step(p, 200, 300, 1);
        step(p, 300, 390, 2);
        tb_nccl(p, (struct tb_coll){CT_NCCL_OP_ALLREDUCE, 7, 1, 1024, r, -1, 2, 2, 260, 270, 250});
        if (r == 0) {
            tb_nccl(p, (struct tb_coll){CT_NCCL_OP_ALLREDUCE, 7, 2, 1024, r, -1, 2, 2, 0, 0, 400});
            p->life.hang_ns = TB_US(900);
        } else {
            p->life.signal = 15;
            p->life.signal_ns = TB_US(950);
        }
    }
    struct ct_job job;
    struct ct_report rep;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    const struct ct_goodput *g = rep.goodput;
    ck_assert_uint_eq(g->natt, 1);
    const struct ct_attempt *A = &g->att[0];
    ck_assert_int_eq(A->ended, CT_END_HANG);
    ck_assert_int_eq(A->signal, 15);
    near_us((double)(A->hang_since - g->s), 400);
    near_us(A->part[CT_GP_HANG], 550);
    near_us(A->part[CT_GP_STARTUP], 100);
    near_us(A->part[CT_GP_PRODUCTIVE], 290);
    near_us(A->part[CT_GP_SHUTDOWN], 10);
    ck_assert_uint_eq(A->nlost, 0);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * A save inside a step: steps [100,200) [200,300) [300,450) [450,550), the
 * third holding checkpoint I/O [320,360) of the main process and a data
 * wait [400,410). The median step without a save is 100: the third stalls
 * 150 - 100 = 50 (at least its I/O, 40); its data wait is a data stall. A gap between steps with a
 * forked writer's save [560,580) and then idle, then [600,700): checkpoint from the gap's start 550
 * to 580 (30), idle 20. Productive: the steps' 550 less 50 and 10; start-up from the start at 50 to
 * the first step, 50.
 */
START_TEST(a_save_stalls_by_its_step_excess_and_a_gap_to_its_last_io)
{
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *m = tb_proc(&b, 0);
    m->life.start_ns = TB_US(50);
    struct ct_proc *w = tb_child(&b, m);
    w->life.start_ns = TB_US(50);
    step(m, 100, 200, 0);
    step(m, 200, 300, 1);
    step(m, 300, 450, 2);
    step(m, 450, 550, 3);
    step(m, 600, 700, 4);
    tb_ckpt(m, 320, 360);
    tb_data_wait(m, 400, 410);
    tb_ckpt(w, 560, 580);
    struct ct_job job;
    struct ct_report rep;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    const struct ct_attempt *A = &rep.goodput->att[0];
    ck_assert_uint_eq(rep.goodput->natt, 1);
    near_us(A->part[CT_GP_STARTUP], 50);
    near_us(A->part[CT_GP_CHECKPOINT], 50 + 30);
    near_us(A->part[CT_GP_DATA], 10);
    near_us(A->part[CT_GP_PRODUCTIVE], 550 - 50 - 10);
    near_us(A->part[CT_GP_IDLE], 20);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* The parts and the down time sum to the covered time. */
static void sums_to_covered(const struct ct_goodput *g)
{
    double sum = g->downtime;
    for (int p = 0; p < CT_GP_NPARTS; p++) {
        ck_assert_msg(g->part[p] >= 0, "part %s negative: %f", ct_gp_part_name(p), g->part[p]);
        sum += g->part[p];
    }
    ck_assert_msg(fabs(sum - g->covered) < 1.0, "parts %f, covered %f", sum, g->covered);
}

/*
 * A paused start (CUTRACE_START=paused): the process lives [0, 4000) and
 * `cutrace start`/`stop` open windows [1000, 1500) and [3000, 3600).
 * Window 1: steps [1050,1150) [1150,1250) [1300,1400), idle 50 between the
 * second and third; window 2: steps [3020,3120) [3120,3220). What lies
 * before a window's first step or after its last up to a pause ([1000,1050)
 * 50, [1400,1500) 100, [3000,3020) 20, [3220,3600) 380) is part of a step
 * the window cut, or of the pause: a window edge, in no part. Before the
 * first window nothing was recorded: no start-up. Covered: 500 + 50 idle =
 * 550 of the 4000 wall; goodput 500 / 550.
 */
START_TEST(capture_windows_leave_the_pauses_out_of_goodput)
{
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    p->life.start_ns = 0;
    p->last_ns = TB_US(4000);
    tb_capture(p, 1000, 1500);
    tb_capture(p, 3000, 3600);
    step(p, 1050, 1150, 1);
    step(p, 1150, 1250, 2);
    step(p, 1300, 1400, 3);
    step(p, 3020, 3120, 20);
    step(p, 3120, 3220, 21);
    struct ct_job job;
    struct ct_report rep;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    const struct ct_goodput *g = rep.goodput;
    ck_assert_uint_eq(g->natt, 1);
    near_us((double)(g->e - g->s), 4000);
    near_us(g->covered, 550);
    near_us(g->part[CT_GP_PRODUCTIVE], 500);
    near_us(g->part[CT_GP_IDLE], 50);
    near_us(g->part[CT_GP_STARTUP], 0);
    near_us(g->part[CT_GP_SHUTDOWN], 0);
    ck_assert(fabs(g->goodput_pct - 100.0 * 500 / 550) < 1e-6);
    ck_assert_ptr_null(g->unavailable);
    near_us(g->att[0].covered, 550);
    sums_to_covered(g);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * Recorded from the start (CUTRACE_DURATION, light mode starting inside a
 * window: no start mark), to 500; a second window from 2000 to the end of
 * the process at 2500. Start-up [0,100) before the first step; steps
 * [100,200) [200,300); [300,500) an edge (the window closed); [2000,2050)
 * an edge; steps [2050,2150) [2150,2250); [2250,2500) shutdown (the window
 * holds it to the end). Covered 100 + 400 + 250 = 750; goodput 400 / 750.
 */
START_TEST(a_window_open_from_the_start_holds_start_up)
{
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    p->life.start_ns = 0;
    p->last_ns = TB_US(2500);
    tb_capture(p, -1000000, 500); /* open before its first mark */
    tb_capture(p, 2000, 1000000); /* open at the end */
    step(p, 100, 200, 0);
    step(p, 200, 300, 1);
    step(p, 2050, 2150, 30);
    step(p, 2150, 2250, 31);
    struct ct_job job;
    struct ct_report rep;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    const struct ct_goodput *g = rep.goodput;
    near_us(g->covered, 750);
    near_us(g->part[CT_GP_STARTUP], 100);
    near_us(g->part[CT_GP_PRODUCTIVE], 400);
    near_us(g->part[CT_GP_SHUTDOWN], 250);
    ck_assert(fabs(g->goodput_pct - 100.0 * 400 / 750) < 1e-6);
    sums_to_covered(g);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* A job with no step range, mark or repeating work: one kernel. Nothing
 * tells productive time from start-up: goodput and the parts that need
 * steps are unknown (NAN: null), with the reason; not 0 %. */
START_TEST(no_step_found_gives_no_goodput)
{
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    p->life.start_ns = 0;
    tb_kernel(p, "k", 1, 100, 300, 50);
    tb_sync(p, 300, 400);
    struct ct_job job;
    struct ct_report rep;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    const struct ct_goodput *g = rep.goodput;
    ck_assert(isnan(g->goodput_pct));
    ck_assert_ptr_nonnull(g->unavailable);
    ck_assert_ptr_nonnull(strstr(g->unavailable, "no step found"));
    ck_assert(isnan(g->part[CT_GP_STARTUP]) && isnan(g->part[CT_GP_PRODUCTIVE]));
    ck_assert(isnan(g->att[0].part[CT_GP_IDLE]));
    near_us(g->part[CT_GP_HANG], 0);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* A PyTorch profiler trace (Kineto) of three steps, the last dropped by
 * HTA's last-step rule: #1 host [1000,2000) launches at 1100 a kernel that
 * runs [1500,1900); #2 host [2500,3500) launches at 2600 one that runs
 * [2700,3200); #3 [3500,4000) launches at 3600 one at [3700,3800) (gone
 * with its step). A cpu_op at 0 is host time long before any kernel. The
 * goodput is over the GPU window [1500, 3200): #1 from 1500 to its host end
 * 2000 (500), idle [2000,2500) (500), #2 [2500,3200) (700: it lasts until
 * its kernel ends). Productive 1200 of 1700; the host span [1000,3500) less
 * the window is uncovered (800). */
static const char *kineto_steps =
    "{\"traceEvents\": ["
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::empty\",\"ts\":0,\"dur\":5},"
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"ts\":1000,"
    "\"dur\":1000},"
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"ts\":1100,\"dur\":5,"
    "\"args\":{\"correlation\":1}},"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"ts\":1500,\"dur\":400,"
    "\"args\":{\"stream\":7,\"correlation\":1}},"
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#2\",\"ts\":2500,"
    "\"dur\":1000},"
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"ts\":2600,\"dur\":5,"
    "\"args\":{\"correlation\":2}},"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"ts\":2700,\"dur\":500,"
    "\"args\":{\"stream\":7,\"correlation\":2}},"
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#3\",\"ts\":3500,"
    "\"dur\":500},"
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"ts\":3600,\"dur\":5,"
    "\"args\":{\"correlation\":3}},"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"ts\":3700,\"dur\":100,"
    "\"args\":{\"stream\":7,\"correlation\":3}}"
    "]}";

/* The Kineto trace as a job, HTA-compatible mode (the report's default). */
static void kineto_job(const char *doc, struct ct_job *job, struct ct_report *rep)
{
    struct ct_proc *p = calloc(1, sizeof(*p));
    char err[256];
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(ct_kineto_load_mem(doc, strlen(doc), "k.json", p, err, sizeof(err)), 0);
    ck_assert_int_eq(ct_kineto_finish(p, 1, 1), 0);
    ck_assert_int_eq(ct_job_build(job, p, 1), 0);
    tb_analyze(job, NULL, rep);
}

START_TEST(kineto_goodput_is_over_the_gpu_window)
{
    struct ct_job job;
    struct ct_report rep;
    kineto_job(kineto_steps, &job, &rep);
    const struct ct_goodput *g = rep.goodput;
    ck_assert_uint_eq(g->natt, 1);
    near_us((double)(g->e - g->s), 2500);
    near_us(g->covered, 1700);
    near_us(g->part[CT_GP_PRODUCTIVE], 1200);
    near_us(g->part[CT_GP_IDLE], 500);
    near_us(g->part[CT_GP_STARTUP], 0);
    near_us(g->part[CT_GP_SHUTDOWN], 0);
    near_us(g->downtime, 0);
    ck_assert(fabs(g->goodput_pct - 100.0 * 1200 / 1700) < 1e-6);
    sums_to_covered(g);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* The same trace without its step annotations and with one kernel: no
 * step, so no goodput (null with the reason), not 0 %. */
START_TEST(kineto_without_a_step_has_no_goodput)
{
    static const char *doc =
        "{\"traceEvents\": ["
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"ts\":1100,"
        "\"dur\":5,\"args\":{\"correlation\":1}},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"ts\":1500,\"dur\":400,"
        "\"args\":{\"stream\":7,\"correlation\":1}}"
        "]}";
    struct ct_job job;
    struct ct_report rep;
    kineto_job(doc, &job, &rep);
    const struct ct_goodput *g = rep.goodput;
    ck_assert(isnan(g->goodput_pct));
    ck_assert_ptr_nonnull(g->unavailable);
    ck_assert(isnan(g->part[CT_GP_PRODUCTIVE]));
    near_us(g->covered, 400);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

Suite *goodput_suite(void)
{
    Suite *s = suite_create("goodput");
    TCase *tc = tcase_create("goodput");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, restart_splits_into_attempts_and_names_lost_steps);
    tcase_add_test(tc, a_killed_attempt_ends_at_its_last_record_and_a_restore_holds_its_copies);
    tcase_add_test(tc, steps_without_numbers_in_their_names_are_lost_after_the_last_save);
    tcase_add_test(tc, attempts_without_a_restart_count_come_from_lifetimes);
    tcase_add_test(tc, a_hang_runs_from_the_first_pending_collective_on_every_rank);
    tcase_add_test(tc, a_save_stalls_by_its_step_excess_and_a_gap_to_its_last_io);
    tcase_add_test(tc, capture_windows_leave_the_pauses_out_of_goodput);
    tcase_add_test(tc, a_window_open_from_the_start_holds_start_up);
    tcase_add_test(tc, no_step_found_gives_no_goodput);
    tcase_add_test(tc, kineto_goodput_is_over_the_gpu_window);
    tcase_add_test(tc, kineto_without_a_step_has_no_goodput);
    suite_add_tcase(s, tc);
    return s;
}
