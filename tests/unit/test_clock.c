/* Suite "clock": decoder/read/clock.c, the realtime offset of a trace
 * (ct_clock_offset) and the alignment of ranks by collective ends
 * (ct_clock_refine, run by ct_job_build) on hand-built jobs
 * (docs/report.md, "Clocks"). Times in µs unless said. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/read/clock.h"
#include "tests/unit/timeline_builder.h"
#include "decoder/read/job.h"

#define NOPS 5

/* Rank r runs NOPS AllReduces (communicator 1, sequence k) that end at
 * 1000k + 1500 + jitter[r][k] on its own clock, starting 200 earlier, and a
 * kernel before each. Then the whole process's clock is `off[r]` µs ahead. */
static void ranks(struct tb_job *b, int n, const int64_t *off, const int64_t (*jitter)[NOPS])
{
    tb_init(b);
    for (int r = 0; r < n; r++) {
        struct ct_proc *p = tb_proc(b, r);
        for (int k = 0; k < NOPS; k++) {
            int64_t e = 1000 * k + 1500 + (jitter ? jitter[r][k] : 0);
            tb_kernel(p, "k", 1, e - 400, e - 300, e - 450);
            tb_nccl(p, (struct tb_coll){.op = CT_NCCL_OP_ALLREDUCE,
                                        .comm = 1,
                                        .seq = (uint64_t)k,
                                        .comm_rank = r,
                                        .nranks = n,
                                        .stream = 2,
                                        .s = e - 200,
                                        .e = e,
                                        .launch = e - 250});
        }
        tb_shift(p, off[r]);
    }
}

/* Three ranks, rank 2's clock 5 µs ahead: every collective's median end is
 * ranks 0 and 1's, so rank 2 is moved back by 5 µs (skew -5) and the
 * others stay; nothing is left over (residual 0). */
START_TEST(a_rank_whose_clock_is_off_is_moved_onto_the_collective_ends)
{
    const int64_t off[3] = {0, 0, 5};
    struct tb_job b;
    struct ct_job job;
    ranks(&b, 3, off, NULL);
    tb_build(&b, &job);
    ck_assert_int_eq(tb_rank(&job, 0)->skew_ns, 0);
    ck_assert_int_eq(tb_rank(&job, 1)->skew_ns, 0);
    ck_assert_int_eq(tb_rank(&job, 2)->skew_ns, TB_US(-5));
    for (int r = 0; r < 3; r++) {
        const struct ct_rank *R = tb_rank(&job, r);
        ck_assert_int_eq(R->residual_ns, 0);
        /* the first kernel at 1100 and the first collective's end at 1500 on every rank */
        ck_assert_int_eq(R->ops[0].s, TB_US(1100));
        ck_assert_int_eq(R->gpu.v[0].s, TB_US(1100));
        ck_assert_int_eq(R->nccl[0].e, TB_US(1500));
    }
    ck_assert_int_eq(job.t0, TB_US(1100));
    ct_job_free(&job);
}
END_TEST

/* Rank 2 (clock 5 µs ahead) has a DataLoader child on its host clock and
 * host evidence in both; all of it moves with the rank: the main
 * process's launch calls, NCCL host times, step ranges, sync, data waits;
 * the child's checkpoint writes. */
START_TEST(host_times_move_with_their_rank)
{
    const int64_t off[3] = {0, 0, 5};
    struct tb_job b;
    struct ct_job job;
    ranks(&b, 3, off, NULL);
    struct ct_proc *m = &b.procs[2];
    tb_range(m, 1005, 2005, 0);
    tb_sync(m, 1105, 1205);
    tb_data_wait(m, 1305, 1405);
    struct ct_proc *c = tb_child(&b, m);
    tb_ckpt(c, 1505, 1605);
    tb_build(&b, &job);
    const struct ct_rank *R = tb_rank(&job, 2);
    ck_assert_uint_eq(R->nprocs, 2);
    const struct ct_proc *mp = R->procs[0], *cp = R->procs[1];
    ck_assert_int_eq(mp->launches[0], TB_US(1050)); /* 1500 - 450 */
    ck_assert_int_eq(R->nccl[0].host_s, TB_US(1250));
    ck_assert_int_eq(mp->steps[0].s, TB_US(1000));
    ck_assert_int_eq(mp->steps[0].e, TB_US(2000));
    ck_assert_int_eq(mp->sync.v[0].s, TB_US(1100));
    ck_assert_int_eq(mp->data_wait.v[0].e, TB_US(1400));
    ck_assert_int_eq(cp->ckpt.v[0].s, TB_US(1500));
    ck_assert_int_eq(R->ops[0].launch, TB_US(1050));
    ct_job_free(&job);
}
END_TEST

/* Two ranks 3000 µs apart: the median end of each collective is half way,
 * so each moves 1500 toward the other. */
START_TEST(two_ranks_meet_half_way)
{
    const int64_t off[2] = {0, 3000};
    struct tb_job b;
    struct ct_job job;
    ranks(&b, 2, off, NULL);
    tb_build(&b, &job);
    ck_assert_int_eq(tb_rank(&job, 0)->skew_ns, TB_US(1500));
    ck_assert_int_eq(tb_rank(&job, 1)->skew_ns, TB_US(-1500));
    ck_assert_int_eq(tb_rank(&job, 0)->nccl[0].e, TB_US(3000)); /* 1500 + 1500 */
    ck_assert_int_eq(tb_rank(&job, 1)->nccl[0].e, TB_US(3000)); /* 4500 - 1500 */
    ct_job_free(&job);
}
END_TEST

/*
 * Rank 1's ends wander by 60 -40 30 30 130 µs around the others' (ranks 0
 * and 2 agree, so every collective's median end is theirs). Its shift is
 * the median of those, 30: skew -30. Afterwards its ends differ by
 * 30 -70 0 0 100, median 0 (the second pass moves nothing), and the
 * residual is the median of |30 -70 0 0 100| = 0 0 30 70 100: 30 (the
 * signed median would be 0, the residual before the shift 40).
 */
START_TEST(residual_is_the_median_absolute_end_difference_after_alignment)
{
    const int64_t off[3] = {0, 0, 0};
    const int64_t jitter[3][NOPS] = {{0}, {60, -40, 30, 30, 130}, {0}};
    struct tb_job b;
    struct ct_job job;
    ranks(&b, 3, off, jitter);
    tb_build(&b, &job);
    ck_assert_int_eq(tb_rank(&job, 1)->skew_ns, TB_US(-30));
    ck_assert_int_eq(tb_rank(&job, 1)->residual_ns, TB_US(30));
    ck_assert_int_eq(tb_rank(&job, 0)->skew_ns, 0);
    ck_assert_int_eq(tb_rank(&job, 0)->residual_ns, 0);
    ck_assert_int_eq(tb_rank(&job, 2)->residual_ns, 0);
    ct_job_free(&job);
}
END_TEST

/* Send/Recv only (rank 1 receives what rank 0 sends, its clock 50 µs
 * ahead): no collective ends to align on, realtime alignment stays. */
START_TEST(send_recv_only_jobs_keep_realtime_alignment)
{
    struct tb_job b;
    struct ct_job job;
    tb_init(&b);
    struct ct_proc *p0 = tb_proc(&b, 0), *p1 = tb_proc(&b, 1);
    for (int k = 0; k < 3; k++) {
        int64_t t = 1000 + 1000 * k;
        tb_nccl(p0, (struct tb_coll){.op = CT_NCCL_OP_SEND,
                                     .comm = 2,
                                     .seq = (uint64_t)k,
                                     .comm_rank = 0,
                                     .peer = 1,
                                     .nranks = 2,
                                     .s = t,
                                     .e = t + 100});
        tb_nccl(p1, (struct tb_coll){.op = CT_NCCL_OP_RECV,
                                     .comm = 2,
                                     .seq = (uint64_t)k,
                                     .comm_rank = 1,
                                     .peer = 0,
                                     .nranks = 2,
                                     .s = t,
                                     .e = t + 100});
    }
    tb_shift(p1, 50);
    tb_build(&b, &job);
    ck_assert_int_eq(tb_rank(&job, 0)->skew_ns, 0);
    ck_assert_int_eq(tb_rank(&job, 1)->skew_ns, 0);
    ck_assert_int_eq(tb_rank(&job, 1)->nccl[0].e, TB_US(1150));
    ct_job_free(&job);
}
END_TEST

/* Collectives of one member each (communicators 1 and 2 with sequence
 * numbers alike): nothing to compare, nobody moves. */
START_TEST(unmatched_collectives_leave_ranks_in_place)
{
    struct tb_job b;
    struct ct_job job;
    tb_init(&b);
    for (int r = 0; r < 2; r++) {
        struct ct_proc *p = tb_proc(&b, r);
        tb_nccl(p, (struct tb_coll){.op = CT_NCCL_OP_ALLREDUCE,
                                    .comm = 1 + (uint64_t)r,
                                    .nranks = 2,
                                    .s = 1000,
                                    .e = 1100 + 500 * r});
    }
    tb_build(&b, &job);
    for (int r = 0; r < 2; r++) {
        ck_assert_int_eq(tb_rank(&job, r)->skew_ns, 0);
        ck_assert_int_eq(tb_rank(&job, r)->residual_ns, 0);
    }
    ck_assert_int_eq(tb_rank(&job, 1)->nccl[0].e, TB_US(1600));
    ct_job_free(&job);
}
END_TEST

/* Realtime offset of a trace (ns): the median of realtime - monotonic over
 * its CLOCK records, robust to one bad pair: 1000, 1010, 5000 -> 1010; an
 * even count takes the mean of the middle two rounded down: 100, 103 ->
 * 101; without records, the header's start pair. */
START_TEST(realtime_offset_is_the_median_of_clock_pairs)
{
    struct ct_trace t;
    struct ct_record recs[3];
    memset(&t, 0, sizeof(t));
    memset(recs, 0, sizeof(recs));
    const uint64_t mono[3] = {500, 900, 700}, real[3] = {1500, 5900, 1710};
    for (int i = 0; i < 3; i++) {
        recs[i].kind = CT_REC_CLOCK;
        recs[i].f[CT_CLOCK_MONO] = mono[i];
        recs[i].f[CT_CLOCK_REAL] = real[i];
    }
    t.recs = recs;
    t.n = 3;
    t.rd.hdr.start_mono_ns = 10;
    t.rd.hdr.start_real_ns = 77;
    ck_assert_int_eq(ct_clock_offset(&t), 1010);
    recs[1].f[CT_CLOCK_REAL] = 900 + 100; /* pairs 1000, 100, 1010: median 1000 */
    ck_assert_int_eq(ct_clock_offset(&t), 1000);
    recs[0].f[CT_CLOCK_REAL] = 500 + 100, recs[1].f[CT_CLOCK_REAL] = 900 + 103;
    t.n = 2; /* 100, 103 */
    ck_assert_int_eq(ct_clock_offset(&t), 101);
    recs[0].kind = recs[1].kind = CT_REC_GPU; /* no CLOCK record left */
    ck_assert_int_eq(ct_clock_offset(&t), 67);
}
END_TEST

Suite *clock_suite(void)
{
    Suite *s = suite_create("clock");
    TCase *tc = tcase_create("clock");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, a_rank_whose_clock_is_off_is_moved_onto_the_collective_ends);
    tcase_add_test(tc, host_times_move_with_their_rank);
    tcase_add_test(tc, two_ranks_meet_half_way);
    tcase_add_test(tc, residual_is_the_median_absolute_end_difference_after_alignment);
    tcase_add_test(tc, send_recv_only_jobs_keep_realtime_alignment);
    tcase_add_test(tc, unmatched_collectives_leave_ranks_in_place);
    tcase_add_test(tc, realtime_offset_is_the_median_of_clock_pairs);
    suite_add_tcase(s, tc);
    return s;
}
