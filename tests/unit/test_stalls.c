/* Suite "stalls": the split of GPU-idle time by ct_attribution_rank
 * (decoder/analysis/stalls.c) into data stall, checkpoint, blocking CUDA
 * call, sync drain, launch overhead and unexplained, and the checkpoint
 * stall by step-time excess, on hand-built ranks (docs/report.md, "GPU-idle
 * split"); which calls are blocking (ct_is_blocking_call). Times in µs. */
#include <check.h>
#include <stdlib.h>

#include "decoder/read/extract_int.h"
#include "decoder/read/host_classes.h"
#include "tests/unit/timeline_builder.h"
#include "decoder/read/job.h"

/*
 * Rank 0: a main process and a checkpoint writer (a child process without
 * rank metadata), two iterations [1000,5000) [5000,9600). Main process,
 * stream 1 compute (launch: TB_NOLAUNCH unless given):
 *   A [1000,1100)  B [1300,1400)  C [3700,3800) launched 3600
 *   D [6200,6300) launched 6000   E [9000,9100) launched 8500  F [9500,9600)
 *   launch calls without GPU work at 7000, 7500, 8000
 *   data waits [1050,1250) [9100,9400); a blocking sync [3700,3900)
 * Writer: checkpoint writes [1400,3600) [9200,9500); a data wait
 * [6300,6800) (not the main process's: no evidence).
 *
 * Window [1000,9600) = 8600, GPU 6 x 100 = 600, idle 8000, in gaps:
 *   [1100,1300)  data [1100,1250) 150, unexplained [1250,1300) 50
 *   [1400,3700)  checkpoint [1400,3600) 2200, launch [3600,3700) (C) 100
 *   [3800,6200)  unexplained [3800,3900) 100 (still in the sync),
 *                drain [3900,6000) 2100 (sync return .. next launch 6000),
 *                launch [6000,6200) 200 (D; the previous call, 3600, is
 *                2.4 ms earlier)
 *   [6300,9000)  unexplained [6300,8000) 1700, launch [8000,9000) 1000 (E
 *                launched 8500, the previous call 8000 is 0.5 ms earlier)
 *   [9100,9500)  data [9100,9400) 300 (before checkpoint), checkpoint
 *                [9400,9500) 100
 * Sums: data 450, checkpoint 2300, drain 2100, launch 1300, unexplained
 * 1850; 450 + 2300 + 2100 + 1300 + 1850 = 8000.
 */
static void scenario(struct ct_job *job, struct ct_report *rep)
{
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *m = tb_proc(&b, 0);
    struct ct_proc *w = tb_child(&b, m);
    tb_range(m, 1000, 5000, 0);
    tb_range(m, 5000, 9600, 1);
    tb_kernel(m, "a", 1, 1000, 1100, TB_NOLAUNCH);
    tb_kernel(m, "b", 1, 1300, 1400, TB_NOLAUNCH);
    tb_kernel(m, "c", 1, 3700, 3800, 3600);
    tb_kernel(m, "d", 1, 6200, 6300, 6000);
    tb_kernel(m, "e", 1, 9000, 9100, 8500);
    tb_kernel(m, "f", 1, 9500, 9600, TB_NOLAUNCH);
    tb_launch(m, 7000);
    tb_launch(m, 7500);
    tb_launch(m, 8000);
    tb_data_wait(m, 1050, 1250);
    tb_data_wait(m, 9100, 9400);
    tb_sync(m, 3700, 3900);
    tb_ckpt(w, 1400, 3600);
    tb_ckpt(w, 9200, 9500);
    tb_data_wait(w, 6300, 6800);
    tb_build(&b, job);
    tb_analyze(job, NULL, rep);
}

START_TEST(data_stall_is_idle_time_in_main_process_waits)
{
    struct ct_job job;
    struct ct_report rep;
    scenario(&job, &rep);
    const struct ct_rank_result *x = tb_result(&rep, 0);
    ck_assert_uint_eq(tb_rank(&job, 0)->nprocs, 2); /* the writer joined rank 0 */
    /* [1100,1250) + [9100,9400) = 150 + 300; the writer's wait is not counted */
    ck_assert_int_eq(x->at.data_stall, TB_US(450));
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

START_TEST(checkpoint_idle_is_idle_time_in_any_process_checkpoint_io)
{
    struct ct_job job;
    struct ct_report rep;
    scenario(&job, &rep);
    /* the writer's [1400,3600) = 2200 + [9400,9500) = 100 after the data wait */
    ck_assert_int_eq(tb_result(&rep, 0)->at.ckpt_idle, TB_US(2300));
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

START_TEST(sync_drain_runs_from_sync_return_to_next_launch_call)
{
    struct ct_job job;
    struct ct_report rep;
    scenario(&job, &rep);
    /* [3900, 6000) */
    ck_assert_int_eq(tb_result(&rep, 0)->at.sync_drain, TB_US(2100));
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

START_TEST(launch_overhead_runs_from_host_launch_to_gpu_start)
{
    struct ct_job job;
    struct ct_report rep;
    scenario(&job, &rep);
    /* C [3600,3700) 100 + D [6000,6200) 200 + E from the 8000 call [8000,9000) 1000 */
    ck_assert_int_eq(tb_result(&rep, 0)->at.launch_overhead, TB_US(1300));
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

START_TEST(unexplained_is_the_idle_time_no_evidence_covers)
{
    struct ct_job job;
    struct ct_report rep;
    scenario(&job, &rep);
    /* [1250,1300) 50 + [3800,3900) 100 + [6300,8000) 1700 */
    ck_assert_int_eq(tb_result(&rep, 0)->at.unexplained, TB_US(1850));
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

START_TEST(idle_split_sums_to_idle)
{
    struct ct_job job;
    struct ct_report rep;
    scenario(&job, &rep);
    const struct ct_rank_result *x = tb_result(&rep, 0);
    const struct ct_attribution *a = &x->at;
    ck_assert_int_eq(x->idle, TB_US(8000)); /* 8600 - 600 */
    ck_assert_int_eq(a->cuda_call, 0);      /* no blocking call in the scenario */
    ck_assert_int_eq(a->bubble_idle + a->data_stall + a->ckpt_idle + a->cuda_call + a->sync_drain +
                         a->launch_overhead + a->unexplained,
                     x->idle);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* The scenario has two iterations: the checkpoint stall is the checkpoint
 * idle time, 2300. */
START_TEST(checkpoint_stall_is_checkpoint_idle_with_fewer_than_3_iterations)
{
    struct ct_job job;
    struct ct_report rep;
    scenario(&job, &rep);
    const struct ct_rank_result *x = tb_result(&rep, 0);
    ck_assert_uint_eq(x->niters, 2);
    ck_assert_int_eq(x->at.checkpoint_stall, TB_US(2300));
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * One idle gap [200,1200) (between A [100,200) and B [1200,1300)) that
 * every kind of evidence covers in part:
 *   data wait [200,400); checkpoint write [300,600) (main process);
 *   sync [150,500), the next launch call at 700 (B's): drain [500,700);
 *   B launched at 700, the previous call 450 is 0.25 ms earlier: launch
 *   overhead [450,1200).
 * Each instant to the first that covers it: data [200,400) 200,
 * checkpoint [400,600) 200, drain [600,700) 100, launch [700,1200) 500,
 * unexplained 0 (with launch first it would take 750).
 */
START_TEST(each_idle_instant_goes_to_the_first_class_that_covers_it)
{
    struct tb_job b;
    struct ct_job job;
    struct ct_report rep;
    tb_init(&b);
    struct ct_proc *m = tb_proc(&b, 0);
    tb_kernel(m, "a", 1, 100, 200, TB_NOLAUNCH);
    tb_launch(m, 450);
    tb_kernel(m, "b", 1, 1200, 1300, 700);
    tb_data_wait(m, 200, 400);
    tb_ckpt(m, 300, 600);
    tb_sync(m, 150, 500);
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    const struct ct_attribution *a = &tb_result(&rep, 0)->at;
    ck_assert_int_eq(a->data_stall, TB_US(200));
    ck_assert_int_eq(a->ckpt_idle, TB_US(200));
    ck_assert_int_eq(a->sync_drain, TB_US(100));
    ck_assert_int_eq(a->launch_overhead, TB_US(500));
    ck_assert_int_eq(a->unexplained, 0);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * A hundred kernels 1 ms apart, each launched 50 us before it starts (the
 * previous launch call under 1 ms earlier: each gap is launch overhead
 * from that call), and a data wait [50100,50600) in the gap after the
 * 50th, whose second part still falls to launch overhead: the pieces
 * before and after it that only the launch set reaches (which the sweep
 * hands straight to it) and the one the wait reaches add up exactly.
 * Idle 99 x 900 = 89100: data 500, launch 88600.
 */
START_TEST(pieces_only_the_last_set_reaches_are_split_as_the_others)
{
    struct tb_job b;
    struct ct_job job;
    struct ct_report rep;
    tb_init(&b);
    struct ct_proc *m = tb_proc(&b, 0);
    for (int i = 1; i <= 100; i++)
        tb_kernel(m, "k", 1, 1000 * i, 1000 * i + 100, 1000 * i - 50);
    tb_data_wait(m, 50100, 50600);
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    const struct ct_attribution *a = &tb_result(&rep, 0)->at;
    ck_assert_int_eq(a->data_stall, TB_US(500));
    ck_assert_int_eq(a->launch_overhead, TB_US(88600));
    ck_assert_int_eq(a->unexplained, 0);
    ck_assert_int_eq(a->sync_drain, 0);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * examples/sim_train's step, cut down: kernel A [100,200), then the host
 * sits in an input copy call [150,900) that blocked (pageable, or the
 * simulated device copying on the host); its transfer [160,300) ran at
 * once. Kernel B [950,1050) is launched at 900, when the call returns.
 * Idle [300,950) = 650: the call [300,900) 600 is the blocking call's, B's
 * own launch [900,950) 50 launch overhead. Without the class the launch
 * rule takes all 650 (B's previous launch call, the copy at 150, began
 * 0.75 ms earlier): what made `diagnose` report launch_bound on the demo.
 */
START_TEST(idle_inside_a_blocking_call_is_the_call_not_launch_overhead)
{
    struct tb_job b;
    struct ct_job job;
    struct ct_report rep;
    tb_init(&b);
    struct ct_proc *m = tb_proc(&b, 0);
    tb_kernel(m, "a", 1, 100, 200, TB_NOLAUNCH);
    tb_copy(m, 1, 160, 300, 150);
    tb_cuda_call(m, 150, 900);
    tb_kernel(m, "b", 1, 950, 1050, 900);
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    const struct ct_rank_result *x = tb_result(&rep, 0);
    const struct ct_attribution *a = &x->at;
    ck_assert_int_eq(x->idle, TB_US(650));
    ck_assert_int_eq(a->cuda_call, TB_US(600));
    ck_assert_int_eq(a->launch_overhead, TB_US(50));
    ck_assert_int_eq(a->unexplained, 0);
    ck_assert_int_eq(a->data_stall + a->ckpt_idle + a->sync_drain + a->bubble_idle, 0);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * The blocking call's place in the order. One idle gap [200,1200) between
 * A [100,200) and B [1200,1300) (launched 1150):
 *   data wait [200,300); checkpoint write [250,400);
 *   a blocking call (an allocation after the sync) [350,700);
 *   sync [150,500), next launch call 800: drain [500,800);
 *   B launched 1150, the previous call 800 is 0.35 ms earlier: launch
 *   overhead [800,1200).
 * Data [200,300) 100, checkpoint [300,400) 100, blocking call [400,700)
 * 300, drain [700,800) 100, launch [800,1200) 400, unexplained 0; the sum
 * is the gap, 1000. With drain first the call would keep [400,500) only.
 */
START_TEST(blocking_call_comes_after_data_and_checkpoint_before_drain_and_launch)
{
    struct tb_job b;
    struct ct_job job;
    struct ct_report rep;
    tb_init(&b);
    struct ct_proc *m = tb_proc(&b, 0);
    tb_kernel(m, "a", 1, 100, 200, TB_NOLAUNCH);
    tb_launch(m, 800);
    tb_kernel(m, "b", 1, 1200, 1300, 1150);
    tb_data_wait(m, 200, 300);
    tb_ckpt(m, 250, 400);
    tb_cuda_call(m, 350, 700);
    tb_sync(m, 150, 500);
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    const struct ct_rank_result *x = tb_result(&rep, 0);
    const struct ct_attribution *a = &x->at;
    ck_assert_int_eq(a->data_stall, TB_US(100));
    ck_assert_int_eq(a->ckpt_idle, TB_US(100));
    ck_assert_int_eq(a->cuda_call, TB_US(300));
    ck_assert_int_eq(a->sync_drain, TB_US(100));
    ck_assert_int_eq(a->launch_overhead, TB_US(400));
    ck_assert_int_eq(a->unexplained, 0);
    ck_assert_int_eq(a->data_stall + a->ckpt_idle + a->cuda_call + a->sync_drain +
                         a->launch_overhead + a->unexplained,
                     x->idle);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* A blocking call of a process that is not the rank's main one (a loader
 * worker's, a checkpoint writer's) does not hold the GPU back: its idle
 * time stays unexplained. Main: A [100,200), B [1200,1300) launched at
 * TB_NOLAUNCH; the writer (a child) sits in a call [300,900). Idle 1000,
 * all unexplained. */
START_TEST(another_process_blocking_call_explains_nothing)
{
    struct tb_job b;
    struct ct_job job;
    struct ct_report rep;
    tb_init(&b);
    struct ct_proc *m = tb_proc(&b, 0);
    struct ct_proc *w = tb_child(&b, m);
    tb_kernel(m, "a", 1, 100, 200, TB_NOLAUNCH);
    tb_kernel(m, "b", 1, 1200, 1300, TB_NOLAUNCH);
    tb_kernel(m, "c", 1, 1300, 1400, TB_NOLAUNCH); /* the main process has the most GPU work */
    tb_cuda_call(w, 300, 900);
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    const struct ct_attribution *a = &tb_result(&rep, 0)->at;
    ck_assert_int_eq(a->cuda_call, 0);
    ck_assert_int_eq(a->unexplained, TB_US(1000));
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* Which calls blocked: 100 us or more and not a synchronize (which waits
 * for the GPU: cu*Synchronize, a synchronous event wait), whatever else it
 * is (an allocation, a module load, a synchronous or pageable copy, a
 * launch that loaded its module, an event record made Async). */
START_TEST(a_blocking_call_lasts_100us_and_is_no_synchronize)
{
    ck_assert(ct_is_blocking_call(CT_FAM_ALLOC, 0, 100000));
    ck_assert(!ct_is_blocking_call(CT_FAM_ALLOC, 0, 99999));
    ck_assert(ct_is_blocking_call(CT_FAM_MODULE, 0, 5000000));
    ck_assert(ct_is_blocking_call(CT_FAM_MEMCPY, 0, 400000));             /* synchronous copy */
    ck_assert(ct_is_blocking_call(CT_FAM_MEMCPY, CT_APIF_ASYNC, 400000)); /* pageable Async */
    ck_assert(ct_is_blocking_call(CT_FAM_MEMSET, 0, 150000));
    ck_assert(ct_is_blocking_call(CT_FAM_LAUNCH, 0, 2000000));
    ck_assert(ct_is_blocking_call(CT_FAM_OTHER, 0, 100000));
    ck_assert(!ct_is_blocking_call(CT_FAM_LAUNCH, 0, 9000)); /* an enqueue */
    ck_assert(!ct_is_blocking_call(CT_FAM_SYNC, 0, 5000000));
    ck_assert(!ct_is_blocking_call(CT_FAM_SYNC, CT_APIF_EVENT | CT_APIF_LEGACY, 5000000));
    ck_assert(ct_is_blocking_call(CT_FAM_SYNC, CT_APIF_ASYNC | CT_APIF_EVENT, 200000));
}
END_TEST

/* Long launches (200 us each) of kernel 7 at 1000 and 5000 and of kernel 9
 * at 3000, noted out of order, a 300 us allocation at 8000, all on a
 * launching thread: the first launch of each kernel loaded its module and
 * blocked; the second of kernel 7 was held by the host itself (preempted),
 * which is no blocking call. */
START_TEST(only_a_kernels_first_launch_blocks)
{
    struct ct_calls c = {0};
    ck_assert_int_eq(ct_calls_launcher(&c, 1), 0);
    ck_assert_int_eq(ct_calls_launch(&c, 7, 5000), 0);
    ck_assert_int_eq(ct_calls_note(&c, 5000, 5200, 1, 7), 0);
    ck_assert_int_eq(ct_calls_launch(&c, 9, 3000), 0);
    ck_assert_int_eq(ct_calls_note(&c, 3000, 3200, 1, 9), 0);
    ck_assert_int_eq(ct_calls_launch(&c, 7, 1000), 0);
    ck_assert_int_eq(ct_calls_note(&c, 1000, 1200, 1, 7), 0);
    ck_assert_int_eq(ct_calls_launch(&c, -1, 8000), 0);
    ck_assert_int_eq(ct_calls_note(&c, 8000, 8300, 1, -1), 0);
    struct ct_ivset out = {0};
    ck_assert_int_eq(ct_calls_finish(&c, &out, 0), 0);
    ck_assert_uint_eq(out.n, 3);
    ck_assert_int_eq(out.v[0].s, 1000);
    ck_assert_int_eq(out.v[1].s, 3000);
    ck_assert_int_eq(out.v[2].s, 8000);
    ct_ivset_free(&out);
}
END_TEST

/* A [100,200), launch calls at 400 and 500, B [2000,2100) launched at
 * 1500: its previous call (500) began exactly 1 ms earlier, so launch
 * overhead runs from 500 ([500,2000) = 1500; only that one call: the one
 * at 400 does not extend it); [200,500) 300 stays unexplained. */
START_TEST(launch_overhead_starts_at_the_previous_launch_call_at_most_1ms_earlier)
{
    struct tb_job b;
    struct ct_job job;
    struct ct_report rep;
    tb_init(&b);
    struct ct_proc *m = tb_proc(&b, 0);
    tb_kernel(m, "a", 1, 100, 200, TB_NOLAUNCH);
    tb_launch(m, 400);
    tb_launch(m, 500);
    tb_kernel(m, "b", 1, 2000, 2100, 1500);
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    const struct ct_attribution *a = &tb_result(&rep, 0)->at;
    ck_assert_int_eq(a->launch_overhead, TB_US(1500));
    ck_assert_int_eq(a->unexplained, TB_US(300));
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * Rank 1 of a pipeline: a kernel [500,600), then its iteration [1000,2000)
 * begins with a Recv [1200,1300) (its Send on rank 0 starts at 1200 too):
 * warm-up [1000,1200) is GPU-idle bubble. A data wait [900,1100) and a
 * checkpoint write [1100,1250) also cover parts of it: the bubble comes
 * first. Idle [600,1200) = 600: bubble 200, data [900,1000) 100,
 * checkpoint 0, unexplained [600,900) 300.
 */
START_TEST(the_idle_bubble_comes_before_every_other_class)
{
    struct tb_job b;
    struct ct_job job;
    struct ct_report rep;
    tb_init(&b);
    struct ct_proc *p0 = tb_proc(&b, 0), *p1 = tb_proc(&b, 1);
    tb_range(p0, 1000, 2000, 0);
    tb_nccl(p0, (struct tb_coll){.op = CT_NCCL_OP_SEND,
                                 .comm = 5,
                                 .comm_rank = 0,
                                 .peer = 1,
                                 .nranks = 2,
                                 .stream = 2,
                                 .s = 1200,
                                 .e = 1300});
    tb_range(p1, 1000, 2000, 0);
    tb_kernel(p1, "pre", 1, 500, 600, TB_NOLAUNCH);
    tb_nccl(p1, (struct tb_coll){.op = CT_NCCL_OP_RECV,
                                 .comm = 5,
                                 .comm_rank = 1,
                                 .peer = 0,
                                 .nranks = 2,
                                 .stream = 2,
                                 .s = 1200,
                                 .e = 1300});
    tb_data_wait(p1, 900, 1100);
    tb_ckpt(p1, 1100, 1250);
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    const struct ct_attribution *a = &tb_result(&rep, 1)->at;
    ck_assert_int_eq(a->bubble_idle, TB_US(200));
    ck_assert_int_eq(a->data_stall, TB_US(100));
    ck_assert_int_eq(a->ckpt_idle, 0);
    ck_assert_int_eq(a->unexplained, TB_US(300));
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * Eight back-to-back iterations from 1000 of durations
 *   400 100 110 [300] 120 170 [90] 500
 * with checkpoint writes in iterations 3 and 6 ([1700,1710), [2250,2260)).
 * Iteration 3: its 4 nearest clean iterations are 2, 4 (d = 1) and 1, 5
 * (d = 2): median(110, 120, 100, 170) = 115, excess 300 - 115 = 185 (all
 * six clean ones would give median 145, excess 155).
 * Iteration 6: 5, 7 (d = 1), 4 (d = 2), 2 (d = 4; 3 has a checkpoint):
 * median(170, 500, 120, 110) = 145 > 90: 0, not -55.
 * Stall 185 over 2 checkpoint steps.
 */
START_TEST(checkpoint_stall_is_step_excess_over_nearest_clean_iterations)
{
    struct tb_job b;
    struct ct_job job;
    struct ct_report rep;
    tb_init(&b);
    struct ct_proc *m = tb_proc(&b, 0);
    const int64_t dur[8] = {400, 100, 110, 300, 120, 170, 90, 500};
    int64_t s = 1000;
    for (int k = 0; k < 8; k++) {
        tb_range(m, s, s + dur[k], k);
        tb_kernel(m, "k", 1, s, s + 10, TB_NOLAUNCH);
        s += dur[k];
    }
    tb_ckpt(m, 1700, 1710);
    tb_ckpt(m, 2250, 2260);
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    const struct ct_rank_result *x = tb_result(&rep, 0);
    ck_assert_uint_eq(x->niters, 8);
    ck_assert_int_eq(x->at.checkpoint_stall, TB_US(185));
    ck_assert_int_eq(x->at.ckpt_steps, 2);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

Suite *stalls_suite(void)
{
    Suite *s = suite_create("stalls");
    TCase *tc = tcase_create("stalls");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, data_stall_is_idle_time_in_main_process_waits);
    tcase_add_test(tc, pieces_only_the_last_set_reaches_are_split_as_the_others);
    tcase_add_test(tc, checkpoint_idle_is_idle_time_in_any_process_checkpoint_io);
    tcase_add_test(tc, sync_drain_runs_from_sync_return_to_next_launch_call);
    tcase_add_test(tc, launch_overhead_runs_from_host_launch_to_gpu_start);
    tcase_add_test(tc, unexplained_is_the_idle_time_no_evidence_covers);
    tcase_add_test(tc, idle_split_sums_to_idle);
    tcase_add_test(tc, checkpoint_stall_is_checkpoint_idle_with_fewer_than_3_iterations);
    tcase_add_test(tc, each_idle_instant_goes_to_the_first_class_that_covers_it);
    tcase_add_test(tc, launch_overhead_starts_at_the_previous_launch_call_at_most_1ms_earlier);
    tcase_add_test(tc, the_idle_bubble_comes_before_every_other_class);
    tcase_add_test(tc, checkpoint_stall_is_step_excess_over_nearest_clean_iterations);
    tcase_add_test(tc, idle_inside_a_blocking_call_is_the_call_not_launch_overhead);
    tcase_add_test(tc, blocking_call_comes_after_data_and_checkpoint_before_drain_and_launch);
    tcase_add_test(tc, another_process_blocking_call_explains_nothing);
    tcase_add_test(tc, a_blocking_call_lasts_100us_and_is_no_synchronize);
    tcase_add_test(tc, only_a_kernels_first_launch_blocks);
    suite_add_tcase(s, tc);
    return s;
}
