/* Suite "breakdown": ct_metrics_rank (decoder/analysis/breakdown.c) on
 * hand-built ranks: the temporal breakdown over the window, overlap and
 * exposed communication, per communication kind and per iteration, and
 * HTA's idle breakdown (docs/report.md, "Definitions"). Times in µs. */
#include <check.h>
#include <stdlib.h>

#include "tests/unit/timeline_builder.h"
#include "decoder/read/job.h"

/*
 * One rank (µs):
 *   stream 1  compute K1 [100,200)  K2 [300,400)
 *   stream 2  compute K3 [350,420)
 *   stream 3  AllReduce  [150,380)      (a one-member communicator: dp)
 *   stream 4  memcpy     [500,540)
 *   stream 5  memcpy     [520,560)
 */
static void one_rank(struct ct_job *job)
{
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    tb_kernel(p, "k1", 1, 100, 200, 90);
    tb_kernel(p, "k2", 1, 300, 400, 290);
    tb_kernel(p, "k3", 2, 350, 420, 340);
    tb_nccl(p, (struct tb_coll){.op = CT_NCCL_OP_ALLREDUCE,
                                .comm = 1,
                                .nranks = 1,
                                .bytes = 8,
                                .stream = 3,
                                .s = 150,
                                .e = 380,
                                .launch = 140});
    tb_copy(p, 4, 500, 540, 490);
    tb_copy(p, 5, 520, 560, 510);
    tb_build(&b, job);
}

START_TEST(window_is_first_gpu_start_to_last_gpu_end)
{
    struct ct_job job;
    struct ct_rank_result res;
    one_rank(&job);
    tb_metrics(&job, 0, NULL, 0, &res);
    ck_assert_int_eq(res.ws, TB_US(100)); /* K1's start */
    ck_assert_int_eq(res.we, TB_US(560)); /* the second memcpy's end */
    tb_result_free(&res);
    ct_job_free(&job);
}
END_TEST

START_TEST(busy_classes_are_unions_over_streams)
{
    struct ct_job job;
    struct ct_rank_result res;
    one_rank(&job);
    tb_metrics(&job, 0, NULL, 0, &res);
    /* compute: [100,200) ∪ [300,420) = 100 + 120 (the durations sum to 270) */
    ck_assert_int_eq(res.compute, TB_US(220));
    /* memory: [500,560) = 60 (the durations sum to 80) */
    ck_assert_int_eq(res.memory, TB_US(60));
    /* comm: [150,380) = 230 */
    ck_assert_int_eq(res.comm, TB_US(230));
    ck_assert_int_eq(res.cls_len[CT_CL_DP], TB_US(230));
    tb_result_free(&res);
    ct_job_free(&job);
}
END_TEST

START_TEST(idle_is_window_minus_union_of_all_gpu_intervals)
{
    struct ct_job job;
    struct ct_rank_result res;
    one_rank(&job);
    tb_metrics(&job, 0, NULL, 0, &res);
    /* window 560 - 100 = 460; all GPU: [100,420) ∪ [500,560) = 320 + 60 = 380;
     * idle = 460 - 380 = 80 (the gap [420,500)) */
    ck_assert_int_eq(res.idle, TB_US(80));
    tb_result_free(&res);
    ct_job_free(&job);
}
END_TEST

START_TEST(overlap_is_comm_covered_by_compute)
{
    struct ct_job job;
    struct ct_rank_result res;
    one_rank(&job);
    tb_metrics(&job, 0, NULL, 0, &res);
    /* [150,380) ∩ ([100,200) ∪ [300,420)) = [150,200) + [300,380) = 50 + 80 */
    ck_assert_int_eq(res.overlap, TB_US(130));
    ck_assert_int_eq(res.cls_overlap[CT_CL_DP], TB_US(130));
    tb_result_free(&res);
    ct_job_free(&job);
}
END_TEST

START_TEST(exposed_comm_is_comm_not_covered_by_compute)
{
    struct ct_job job;
    struct ct_rank_result res;
    one_rank(&job);
    tb_metrics(&job, 0, NULL, 0, &res);
    /* [150,380) \ compute = [200,300) = 100 (= 230 - 130) */
    ck_assert_int_eq(res.exposed_comm, TB_US(100));
    ck_assert_int_eq(res.cls_exposed[CT_CL_DP], TB_US(100));
    tb_result_free(&res);
    ct_job_free(&job);
}
END_TEST

/* Iterations [50,300) and [300,560) of one_rank: every figure restricted
 * to [s, e); an iteration may begin before the first GPU start. */
START_TEST(iteration_figures_are_restricted_to_the_iteration)
{
    struct ct_job job;
    struct ct_rank_result res;
    one_rank(&job);
    struct ct_iter it[2] = {{TB_US(50), TB_US(300), 0, 0}, {TB_US(300), TB_US(560), 1, 0}};
    tb_metrics(&job, 0, it, 2, &res);
    ck_assert_uint_eq(res.niters, 2);
    const struct ct_iter_metrics *a = &res.im[0], *c = &res.im[1];
    /* [50,300): compute [100,200) = 100; comm [150,300) = 150; memory 0;
     * GPU [100,300) = 200 so idle = 250 - 200 = 50; exposed = comm minus
     * [150,200) under compute = 150 - 50 = 100 */
    ck_assert_int_eq(a->compute, TB_US(100));
    ck_assert_int_eq(a->comm, TB_US(150));
    ck_assert_int_eq(a->memory, 0);
    ck_assert_int_eq(a->idle, TB_US(50));
    ck_assert_int_eq(a->exposed_comm, TB_US(100));
    /* [300,560): compute [300,420) = 120; comm [300,380) = 80; memory
     * [500,560) = 60; GPU 120 + 60 = 180 so idle = 260 - 180 = 80; exposed =
     * 80 - 80 (all of [300,380) under K2) = 0 */
    ck_assert_int_eq(c->compute, TB_US(120));
    ck_assert_int_eq(c->comm, TB_US(80));
    ck_assert_int_eq(c->memory, TB_US(60));
    ck_assert_int_eq(c->idle, TB_US(80));
    ck_assert_int_eq(c->exposed_comm, 0);
    tb_result_free(&res);
    ct_job_free(&job);
}
END_TEST

/*
 * One rank with every kind but tp:
 *   compute   [100,200)
 *   AllReduce [150,250) on communicator 1           -> dp
 *   Broadcast [180,300) on communicator 2           -> other (rule 2)
 *   Send      [400,430) on communicator 3           -> pp
 *   AllReduce [500,520) on communicator 3 (it also carries Send/Recv) -> other (rule 3)
 */
START_TEST(comm_by_kind_splits_dp_pp_other_and_comm_is_their_union)
{
    struct tb_job b;
    struct ct_job job;
    struct ct_rank_result res;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    tb_kernel(p, "k", 1, 100, 200, TB_NOLAUNCH);
    tb_nccl(
        p,
        (struct tb_coll){
            .op = CT_NCCL_OP_ALLREDUCE, .comm = 1, .nranks = 1, .stream = 2, .s = 150, .e = 250});
    tb_nccl(
        p,
        (struct tb_coll){
            .op = CT_NCCL_OP_BROADCAST, .comm = 2, .nranks = 1, .stream = 3, .s = 180, .e = 300});
    tb_nccl(p, (struct tb_coll){.op = CT_NCCL_OP_SEND,
                                .comm = 3,
                                .nranks = 2,
                                .peer = 1,
                                .stream = 4,
                                .s = 400,
                                .e = 430});
    tb_nccl(
        p,
        (struct tb_coll){
            .op = CT_NCCL_OP_ALLREDUCE, .comm = 3, .nranks = 1, .stream = 4, .s = 500, .e = 520});
    tb_build(&b, &job);
    tb_metrics(&job, 0, NULL, 0, &res);
    /* dp: [150,250) = 100, of which [150,200) = 50 under compute */
    ck_assert_int_eq(res.cls_len[CT_CL_DP], TB_US(100));
    ck_assert_int_eq(res.cls_overlap[CT_CL_DP], TB_US(50));
    ck_assert_int_eq(res.cls_exposed[CT_CL_DP], TB_US(50));
    /* other: [180,300) + [500,520) = 140, of which [180,200) = 20 under compute */
    ck_assert_int_eq(res.cls_len[CT_CL_OTHER], TB_US(140));
    ck_assert_int_eq(res.cls_overlap[CT_CL_OTHER], TB_US(20));
    ck_assert_int_eq(res.cls_exposed[CT_CL_OTHER], TB_US(120));
    /* pp: [400,430) = 30, none under compute */
    ck_assert_int_eq(res.cls_len[CT_CL_PP], TB_US(30));
    ck_assert_int_eq(res.cls_overlap[CT_CL_PP], 0);
    ck_assert_int_eq(res.cls_exposed[CT_CL_PP], TB_US(30));
    ck_assert_int_eq(res.cls_len[CT_CL_TP], 0);
    /* comm: [150,300) ∪ [400,430) ∪ [500,520) = 150 + 30 + 20 = 200 (the
     * kinds sum to 270: dp and other overlap on [180,250)); overlap
     * [150,200) = 50; exposed 150 */
    ck_assert_int_eq(res.comm, TB_US(200));
    ck_assert_int_eq(res.overlap, TB_US(50));
    ck_assert_int_eq(res.exposed_comm, TB_US(150));
    tb_result_free(&res);
    ct_job_free(&job);
}
END_TEST

/* Four ranks, TP groups {0,1} {2,3} (communicators 10, 11), DP groups
 * {0,2} {1,3} (communicators 20, 21): the consecutive groups beside a
 * strided one are tp (rule 4), the strided ones dp (rule 5). */
START_TEST(comm_by_kind_tp_is_the_consecutive_group_beside_a_strided_one)
{
    struct tb_job b;
    struct ct_job job;
    tb_init(&b);
    for (int r = 0; r < 4; r++) {
        struct ct_proc *p = tb_proc(&b, r);
        tb_nccl(p, (struct tb_coll){.op = CT_NCCL_OP_ALLREDUCE,
                                    .comm = (uint64_t)(10 + r / 2),
                                    .comm_rank = r % 2,
                                    .nranks = 2,
                                    .s = 100,
                                    .e = 150});
        tb_nccl(p, (struct tb_coll){.op = CT_NCCL_OP_ALLREDUCE,
                                    .comm = (uint64_t)(20 + r % 2),
                                    .comm_rank = r / 2,
                                    .nranks = 2,
                                    .s = 200,
                                    .e = 260});
    }
    tb_build(&b, &job);
    for (int r = 0; r < 4; r++) {
        struct ct_rank_result res;
        tb_metrics(&job, r, NULL, 0, &res);
        ck_assert_int_eq(res.cls_len[CT_CL_TP], TB_US(50));     /* [100,150) */
        ck_assert_int_eq(res.cls_len[CT_CL_DP], TB_US(60));     /* [200,260) */
        ck_assert_int_eq(res.cls_exposed[CT_CL_TP], TB_US(50)); /* no compute */
        ck_assert_int_eq(res.comm, TB_US(110));
        tb_result_free(&res);
    }
    ct_job_free(&job);
}
END_TEST

/* HTA idle breakdown, one stream (µs):
 *   A [100,200) launched  50
 *   B [300,400) launched 250  after A ended: host wait 300 - 200 = 100
 *   C [450,460) launched 150  before B ended, gap 50 >= 30: other 50
 *   D [470,480) launched 460  exactly when C ended (not after): gap 10 < 30: kernel wait 10 */
START_TEST(host_wait_is_the_gap_before_an_op_launched_after_the_previous_end)
{
    struct tb_job b;
    struct ct_job job;
    struct ct_rank_result res;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    tb_kernel(p, "a", 1, 100, 200, 50);
    tb_kernel(p, "b", 1, 300, 400, 250);
    tb_kernel(p, "c", 1, 450, 460, 150);
    tb_kernel(p, "d", 1, 470, 480, 460);
    tb_build(&b, &job);
    tb_metrics(&job, 0, NULL, 0, &res);
    ck_assert_int_eq(res.host_wait, TB_US(100));
    ck_assert_int_eq(res.other_wait, TB_US(50));
    ck_assert_int_eq(res.kernel_wait, TB_US(10));
    tb_result_free(&res);
    ct_job_free(&job);
}
END_TEST

/* Ops launched before their predecessor ended: a gap shorter than 30 µs
 * is kernel wait, one of 30 µs or more other.
 *   A [100,200)  B [229,300) (gap 29)  C [330,400) (gap 30), all launched early */
START_TEST(kernel_wait_is_a_gap_under_30us_other_from_30us)
{
    struct tb_job b;
    struct ct_job job;
    struct ct_rank_result res;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    tb_kernel(p, "a", 1, 100, 200, 0);
    tb_kernel(p, "b", 1, 229, 300, 10);
    tb_kernel(p, "c", 1, 330, 400, 20);
    tb_build(&b, &job);
    tb_metrics(&job, 0, NULL, 0, &res);
    ck_assert_int_eq(res.kernel_wait, TB_US(29));
    ck_assert_int_eq(res.other_wait, TB_US(30));
    ck_assert_int_eq(res.host_wait, 0);
    tb_result_free(&res);
    ct_job_free(&job);
}
END_TEST

/* Without a launch time the op cannot be shown to have waited for the
 * host: A [100,200), B [300,400) of unknown launch: other 100. */
START_TEST(an_op_of_unknown_launch_is_never_host_wait)
{
    struct tb_job b;
    struct ct_job job;
    struct ct_rank_result res;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    tb_kernel(p, "a", 1, 100, 200, TB_NOLAUNCH);
    tb_kernel(p, "b", 1, 300, 400, TB_NOLAUNCH);
    tb_build(&b, &job);
    tb_metrics(&job, 0, NULL, 0, &res);
    ck_assert_int_eq(res.host_wait, 0);
    ck_assert_int_eq(res.other_wait, TB_US(100));
    tb_result_free(&res);
    ct_job_free(&job);
}
END_TEST

/* Two streams, all launched early:
 *   stream 1  A [100,200)  B [300,400)   gap 100
 *   stream 2  X [150,250)  Y [350,450)   gap 100
 * The gaps are per stream and summed: other 200, while the rank's idle
 * time is only [250,300) = 50. (Ops in start order across streams leave
 * gaps 50, -50, 50...: a stream-blind walk would give 50.) */
START_TEST(gaps_are_per_stream_and_summed_over_streams)
{
    struct tb_job b;
    struct ct_job job;
    struct ct_rank_result res;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    tb_kernel(p, "a", 1, 100, 200, 10);
    tb_kernel(p, "x", 2, 150, 250, 11);
    tb_kernel(p, "b", 1, 300, 400, 12);
    tb_kernel(p, "y", 2, 350, 450, 13);
    tb_build(&b, &job);
    tb_metrics(&job, 0, NULL, 0, &res);
    ck_assert_int_eq(res.other_wait, TB_US(200));
    ck_assert_int_eq(res.kernel_wait + res.host_wait, 0);
    ck_assert_int_eq(res.idle, TB_US(50));
    tb_result_free(&res);
    ct_job_free(&job);
}
END_TEST

/* A [100,200) and B [150,250) overlap on one stream (no gap: skipped);
 * C [260,300) follows B, the last op to start: gap 10, kernel wait. */
START_TEST(overlapping_ops_on_a_stream_leave_no_gap)
{
    struct tb_job b;
    struct ct_job job;
    struct ct_rank_result res;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    tb_kernel(p, "a", 1, 100, 200, 10);
    tb_kernel(p, "b", 1, 150, 250, 11);
    tb_kernel(p, "c", 1, 260, 300, 12);
    tb_build(&b, &job);
    tb_metrics(&job, 0, NULL, 0, &res);
    ck_assert_int_eq(res.kernel_wait, TB_US(10)); /* -50 would be added without the skip */
    ck_assert_int_eq(res.other_wait, 0);
    ck_assert_int_eq(res.host_wait, 0);
    tb_result_free(&res);
    ct_job_free(&job);
}
END_TEST

/* Two streams, given to the analysis out of start order (ct_job_build
 * sorts them; a rank built another way may not be):
 *   stream 1  A [100,200)  B [300,400)                  gap 100, launched early: other
 *   stream 2  X [450,550)  Y [650,750)  Z [900,1000)    gap 100 other; Z launched at
 *                                                       800, after Y's end: host 150
 * In stream order B -> X would be a gap of 50 if streams were not kept
 * apart. Other 200, host wait 150. */
START_TEST(idle_breakdown_does_not_depend_on_op_order)
{
    struct tb_job b;
    struct ct_job job;
    struct ct_rank_result res;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    tb_kernel(p, "a", 1, 100, 200, 10);
    tb_kernel(p, "b", 1, 300, 400, 12);
    tb_kernel(p, "x", 2, 450, 550, 11);
    tb_kernel(p, "y", 2, 650, 750, 13);
    tb_kernel(p, "z", 2, 900, 1000, 800);
    tb_build(&b, &job);
    struct ct_rank *r = tb_rank(&job, 0);
    for (size_t i = 0; i < r->nops / 2; i++) {
        struct ct_gpu_op t = r->ops[i];
        r->ops[i] = r->ops[r->nops - 1 - i];
        r->ops[r->nops - 1 - i] = t;
    }
    tb_metrics(&job, 0, NULL, 0, &res);
    ck_assert_int_eq(res.other_wait, TB_US(200));
    ck_assert_int_eq(res.host_wait, TB_US(150));
    ck_assert_int_eq(res.kernel_wait, 0);
    tb_result_free(&res);
    ct_job_free(&job);
}
END_TEST

/*
 * One process (rank 0 by its launcher) driving two devices: stream 1 on
 * device 0, stream 2 on device 1; two steps [0,100) [100,200) of a kernel
 * of 80 on device 0 and 20 on device 1, then an all-reduce (comm 5, 2
 * ranks: device 0 is comm rank 0, device 1 comm rank 1) that runs [80,90)
 * on device 0 and [20,90) on device 1, which waits. Two ranks, numbered by
 * comm rank, one device each: compute 160 and 40, communication 20 and
 * 140, both with the host's two step ranges, the collective matched.
 */
START_TEST(a_process_that_drives_two_devices_is_a_rank_per_device)
{
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    tb_device(p, 1, 0);
    tb_device(p, 2, 1);
    for (int k = 0; k < 2; k++) {
        int64_t t = 100 * k;
        tb_range(p, t, t + 100, k);
        tb_kernel(p, "big", 1, t, t + 80, t);
        tb_kernel(p, "small", 2, t, t + 20, t);
        tb_nccl(p, (struct tb_coll){CT_NCCL_OP_ALLREDUCE, 5, (uint64_t)k, 1 << 20, 0, -1, 2, 1,
                                    t + 80, t + 90, t + 1});
        tb_nccl(p, (struct tb_coll){CT_NCCL_OP_ALLREDUCE, 5, (uint64_t)k, 1 << 20, 1, -1, 2, 2,
                                    t + 20, t + 90, t + 2});
    }
    struct ct_job job;
    tb_build(&b, &job);
    ck_assert_uint_eq(job.nranks, 2);
    struct ct_report rep;
    tb_analyze(&job, NULL, &rep);
    const struct ct_rank_result *d0 = tb_result(&rep, 0), *d1 = tb_result(&rep, 1);
    ck_assert_int_eq(d0->rank->procs[0]->device, 0);
    ck_assert_int_eq(d1->rank->procs[0]->device, 1);
    ck_assert_uint_eq(d0->rank->procs[0]->pid, d1->rank->procs[0]->pid);
    ck_assert_int_eq(d0->compute, TB_US(160));
    ck_assert_int_eq(d1->compute, TB_US(40));
    ck_assert_int_eq(d0->comm, TB_US(20));
    ck_assert_int_eq(d1->comm, TB_US(140));
    ck_assert_uint_eq(d0->niters, 2);
    ck_assert_uint_eq(d1->niters, 2);
    ck_assert_uint_eq(rep.ncoll, 1);
    ck_assert_uint_eq(rep.coll[0].matched, 4); /* each op of each rank */
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * A rank recorded in two capture windows, host [0, 100) and [300, 400) µs,
 * paused in between (light mode):
 *   A [10,50) launched 5, B [60,90) launched 55, C [110,130) launched 95
 *   (queued before the close, run after it), D [320,360) launched 305,
 *   E [385,395) launched 380; a data wait [92,108); step ranges [0,95],
 *   [95,305] (cut by the pause) and [305,399].
 * Windows as the GPU saw them: [10,130) and [320,395); the figures are over
 * the whole iterations inside them: [10,95) and [320,395), covered 160 (C,
 * past the first step, runs where unrecorded work may run beside it).
 * GPU busy 40+30+40+10 = 120, idle 160 - 120 = 40: the gaps [50,60),
 * [90,95) and [360,385), not the pause [130,320).
 * Idle split: data [92,95) = 3; launch overhead (each launch from the
 * previous one, closer than 1 ms): [50,60) 10, [90,92) 2, [360,385) 25 =
 * 37; D's [95,320) would be more had the pause counted.
 * HTA host wait: 10 + 5 + 25 = 40 (C -> D's gap is the pause: none).
 * Iterations: the two steps inside a window.
 */
START_TEST(capture_windows_leave_the_pause_out_of_every_figure)
{
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    tb_capture(p, 0, 100);
    tb_capture(p, 300, 400);
    tb_kernel(p, "A", 1, 10, 50, 5);
    tb_kernel(p, "B", 1, 60, 90, 55);
    tb_kernel(p, "C", 1, 110, 130, 95);
    tb_kernel(p, "D", 1, 320, 360, 305);
    tb_kernel(p, "E", 1, 385, 395, 380);
    tb_data_wait(p, 92, 108);
    tb_range(p, 0, 95, 1);
    tb_range(p, 95, 305, 2);
    tb_range(p, 305, 399, 3);
    struct ct_job job;
    tb_build(&b, &job);
    struct ct_report rep;
    tb_analyze(&job, NULL, &rep);
    const struct ct_rank_result *x = tb_result(&rep, 0);
    ck_assert_int_eq(x->covered, TB_US(160));
    ck_assert_uint_eq(x->windows, 2);
    ck_assert_int_eq(x->compute, TB_US(120));
    ck_assert_int_eq(x->idle, TB_US(40));
    ck_assert_int_eq(x->at.data_stall, TB_US(3));
    ck_assert_int_eq(x->at.launch_overhead, TB_US(37));
    ck_assert_int_eq(x->at.unexplained + x->at.sync_drain + x->at.ckpt_idle, 0);
    ck_assert_int_eq(x->host_wait, TB_US(40));
    ck_assert_uint_eq(x->niters, 2);
    ck_assert_int_eq(x->iters[0].index, 1);
    ck_assert_int_eq(x->iters[1].index, 3);
    /* no window held a checkpoint: the stall is not known, and says why */
    ck_assert(ct_figure_unavailable(x, "checkpoint_stall_us"));
    ck_assert(!ct_figure_unavailable(x, "iterations"));
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* Graph coverage and step kinds: four steps of 100 us each, on one stream;
 * in each, a graph replay's two kernels (two 20 us kernels); steps 0 and 2
 * also run a 60 us kernel outside the graph (a prefill). Busy: 4 x 40 +
 * 2 x 60 = 280 us, of it graph 160: 57.1 %. Step compute 100, 40, 100,
 * 40: median 70, heavy above 87.5: steps 0 and 2 (compute 200), regular 1
 * and 3 (80), each of them 100 us long. */
START_TEST(graph_share_and_heavy_steps)
{
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    for (int k = 0; k < 4; k++) {
        int64_t t = 100 * k;
        if (k % 2 == 0)
            tb_kernel(p, "prefill", 1, t, t + 60, t);
        tb_kernel(p, "g1", 1, t + 60, t + 80, t);
        p->ops[p->nops - 1].graph = 1;
        tb_kernel(p, "g2", 1, t + 80, t + 100, t);
        p->ops[p->nops - 1].graph = 1;
    }
    struct ct_job job;
    tb_build(&b, &job);
    struct ct_iter it[4];
    for (int k = 0; k < 4; k++)
        it[k] = (struct ct_iter){TB_US(100 * k), TB_US(100 * k + 100), k, 0};
    struct ct_rank_result res;
    tb_metrics(&job, 0, it, 4, &res);
    ck_assert_int_eq(res.busy, TB_US(280));
    ck_assert_int_eq(res.graph_busy, TB_US(160));
    struct ct_step_kind reg, heavy;
    ck_assert_int_eq(ct_step_kinds(&res, &reg, &heavy), 0);
    ck_assert_uint_eq(heavy.steps, 2);
    ck_assert_uint_eq(reg.steps, 2);
    ck_assert_int_eq(heavy.compute, TB_US(200));
    ck_assert_int_eq(reg.compute, TB_US(80));
    ck_assert(heavy.p50 == (double)TB_US(100) && reg.p50 == (double)TB_US(100));
    tb_result_free(&res);
    ct_job_free(&job);
}
END_TEST

Suite *breakdown_suite(void)
{
    Suite *s = suite_create("breakdown");
    TCase *tc = tcase_create("breakdown");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, window_is_first_gpu_start_to_last_gpu_end);
    tcase_add_test(tc, busy_classes_are_unions_over_streams);
    tcase_add_test(tc, idle_is_window_minus_union_of_all_gpu_intervals);
    tcase_add_test(tc, overlap_is_comm_covered_by_compute);
    tcase_add_test(tc, exposed_comm_is_comm_not_covered_by_compute);
    tcase_add_test(tc, iteration_figures_are_restricted_to_the_iteration);
    tcase_add_test(tc, comm_by_kind_splits_dp_pp_other_and_comm_is_their_union);
    tcase_add_test(tc, comm_by_kind_tp_is_the_consecutive_group_beside_a_strided_one);
    tcase_add_test(tc, host_wait_is_the_gap_before_an_op_launched_after_the_previous_end);
    tcase_add_test(tc, kernel_wait_is_a_gap_under_30us_other_from_30us);
    tcase_add_test(tc, an_op_of_unknown_launch_is_never_host_wait);
    tcase_add_test(tc, gaps_are_per_stream_and_summed_over_streams);
    tcase_add_test(tc, overlapping_ops_on_a_stream_leave_no_gap);
    tcase_add_test(tc, idle_breakdown_does_not_depend_on_op_order);
    tcase_add_test(tc, capture_windows_leave_the_pause_out_of_every_figure);
    tcase_add_test(tc, a_process_that_drives_two_devices_is_a_rank_per_device);
    tcase_add_test(tc, graph_share_and_heavy_steps);
    suite_add_tcase(s, tc);
    return s;
}
