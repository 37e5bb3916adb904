/* Suite "collectives": matching across ranks (ct_collectives_match) and the
 * collective table (ct_collectives_table) of decoder/analysis/collectives.c
 * on hand-built jobs (docs/report.md, "Collectives"). Times in µs; table
 * durations are ns, bandwidths GB/s (= bytes/ns). */
#include <check.h>
#include <stdlib.h>

#include "tests/unit/timeline_builder.h"
#include "decoder/read/job.h"

static const struct ct_coll_row *row_of(const struct ct_report *rep, int op, uint64_t bytes,
                                        int nranks)
{
    for (size_t i = 0; i < rep->ncoll; i++)
        if (rep->coll[i].op == op && rep->coll[i].bytes == bytes && rep->coll[i].nranks == nranks)
            return &rep->coll[i];
    ck_abort_msg("no row for op %d, %llu bytes, %d ranks", op, (unsigned long long)bytes, nranks);
    return NULL;
}

/*
 * Three ranks, two AllReduces of 3 000 000 bytes on communicator 1 (all
 * ends agree, so the clocks stay put):
 *   seq 0: rank 0 [100,400)  rank 1 [150,400)  rank 2 [250,400)
 *   seq 1: rank 0 [1000,1200) rank 1 [1020,1200) rank 2 [1000,1200)
 */
static void allreduce3(struct ct_job *job, struct ct_report *rep)
{
    static const int64_t s[2][3] = {{100, 150, 250}, {1000, 1020, 1000}};
    static const int64_t e[2] = {400, 1200};
    struct tb_job b;
    tb_init(&b);
    for (int r = 0; r < 3; r++) {
        struct ct_proc *p = tb_proc(&b, r);
        for (int k = 0; k < 2; k++)
            tb_nccl(p, (struct tb_coll){.op = CT_NCCL_OP_ALLREDUCE,
                                        .comm = 1,
                                        .seq = (uint64_t)k,
                                        .comm_rank = r,
                                        .nranks = 3,
                                        .bytes = 3000000,
                                        .s = s[k][r],
                                        .e = e[k]});
    }
    tb_build(&b, job);
    tb_analyze(job, NULL, rep);
}

/* A collective's members start together when the last one arrives. */
START_TEST(matched_ops_learn_the_latest_start_of_their_instance)
{
    struct ct_job job;
    struct ct_report rep;
    allreduce3(&job, &rep);
    for (int r = 0; r < 3; r++) {
        const struct ct_rank *R = tb_rank(&job, r);
        ck_assert_int_eq(R->nccl[0].all_s, TB_US(250));  /* rank 2's start */
        ck_assert_int_eq(R->nccl[1].all_s, TB_US(1020)); /* rank 1's start */
    }
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* Durations 300 250 150 | 200 180 200, sorted 150 180 200 200 250 300:
 * p50 at rank 2.5 = 200, p90 at rank 4.5 = 250 + 0.5·50 = 275, max 300. */
START_TEST(durations_are_gpu_times_over_all_ranks_ops)
{
    struct ct_job job;
    struct ct_report rep;
    allreduce3(&job, &rep);
    ck_assert_uint_eq(rep.ncoll, 1);
    const struct ct_coll_row *x = row_of(&rep, CT_NCCL_OP_ALLREDUCE, 3000000, 3);
    ck_assert_uint_eq(x->count, 6);
    ck_assert_uint_eq(x->matched, 6);
    ck_assert_double_eq_tol(x->p50, (double)TB_US(200), 1e-6);
    ck_assert_double_eq_tol(x->p90, (double)TB_US(275), 1e-6);
    ck_assert_double_eq_tol(x->max, (double)TB_US(300), 1e-6);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* Skew per instance = latest - earliest start: 250 - 100 = 150 and
 * 1020 - 1000 = 20; median 85. */
START_TEST(arrival_skew_is_latest_minus_earliest_start_per_instance)
{
    struct ct_job job;
    struct ct_report rep;
    allreduce3(&job, &rep);
    const struct ct_coll_row *x = row_of(&rep, CT_NCCL_OP_ALLREDUCE, 3000000, 3);
    ck_assert_double_eq_tol(x->skew_p50, (double)TB_US(85), 1e-6);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* Per op, wait = latest start - own start: 150 100 0 | 20 0 20, sorted
 * 0 0 20 20 100 150, median 20 (measured from the earliest start instead
 * it would be 10); transfer = end - latest start: 150 x 3 | 180 x 3,
 * median 165. */
START_TEST(wait_is_until_the_last_arrival_transfer_after_it)
{
    struct ct_job job;
    struct ct_report rep;
    allreduce3(&job, &rep);
    const struct ct_coll_row *x = row_of(&rep, CT_NCCL_OP_ALLREDUCE, 3000000, 3);
    ck_assert_double_eq_tol(x->wait_p50, (double)TB_US(20), 1e-6);
    ck_assert_double_eq_tol(x->transfer_p50, (double)TB_US(165), 1e-6);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* algbw = 3e6 bytes / 200 000 ns = 15 GB/s; AllReduce on n = 3:
 * busbw = 15 · 2(3-1)/3 = 20 GB/s. */
START_TEST(allreduce_busbw_is_algbw_times_2_n_minus_1_over_n)
{
    struct ct_job job;
    struct ct_report rep;
    allreduce3(&job, &rep);
    const struct ct_coll_row *x = row_of(&rep, CT_NCCL_OP_ALLREDUCE, 3000000, 3);
    ck_assert_double_eq_tol(x->algbw, 15.0, 1e-9);
    ck_assert_double_eq_tol(x->busbw, 20.0, 1e-9);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* Four ranks, each op on its own communicator, 4 000 000 bytes in 100 µs:
 * algbw 40 GB/s; busbw by the nccl-tests factor for n = 4. */
START_TEST(busbw_factor_follows_nccl_tests_per_op)
{
    static const struct {
        int op;
        double busbw;
    } want[] = {
        {CT_NCCL_OP_ALLREDUCE, 60.0},     /* 2·3/4 */
        {CT_NCCL_OP_ALLGATHER, 30.0},     /* 3/4 */
        {CT_NCCL_OP_REDUCESCATTER, 30.0}, /* 3/4 */
        {CT_NCCL_OP_ALLTOALL, 30.0},      /* 3/4 */
        {CT_NCCL_OP_GATHER, 30.0},        /* 3/4 */
        {CT_NCCL_OP_SCATTER, 30.0},       /* 3/4 */
        {CT_NCCL_OP_BROADCAST, 40.0},     /* 1 */
        {CT_NCCL_OP_REDUCE, 40.0},        /* 1 */
    };
    const size_t n = sizeof(want) / sizeof(want[0]);
    struct tb_job b;
    struct ct_job job;
    struct ct_report rep;
    tb_init(&b);
    for (int r = 0; r < 4; r++) {
        struct ct_proc *p = tb_proc(&b, r);
        for (size_t i = 0; i < n; i++)
            tb_nccl(p, (struct tb_coll){.op = want[i].op,
                                        .comm = 100 + i,
                                        .comm_rank = r,
                                        .nranks = 4,
                                        .bytes = 4000000,
                                        .s = 1000 + 200 * (int64_t)i,
                                        .e = 1100 + 200 * (int64_t)i});
    }
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    ck_assert_uint_eq(rep.ncoll, n);
    for (size_t i = 0; i < n; i++) {
        const struct ct_coll_row *x = row_of(&rep, want[i].op, 4000000, 4);
        ck_assert_uint_eq(x->count, 4);
        ck_assert_double_eq_tol(x->algbw, 40.0, 1e-9);
        ck_assert_double_eq_tol(x->busbw, want[i].busbw, 1e-9);
    }
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* Rows are (op, bytes, number of ranks): AllReduce of 4 MB on 4 ranks, of
 * 8 MB on 4 ranks, and of 4 MB on the 2-rank communicator {0,1} are three
 * rows, each of its own ops. */
START_TEST(rows_group_by_op_bytes_and_nranks)
{
    struct tb_job b;
    struct ct_job job;
    struct ct_report rep;
    tb_init(&b);
    for (int r = 0; r < 4; r++) {
        struct ct_proc *p = tb_proc(&b, r);
        tb_nccl(p, (struct tb_coll){.op = CT_NCCL_OP_ALLREDUCE,
                                    .comm = 1,
                                    .seq = 0,
                                    .comm_rank = r,
                                    .nranks = 4,
                                    .bytes = 4000000,
                                    .s = 100,
                                    .e = 200});
        tb_nccl(p, (struct tb_coll){.op = CT_NCCL_OP_ALLREDUCE,
                                    .comm = 1,
                                    .seq = 1,
                                    .comm_rank = r,
                                    .nranks = 4,
                                    .bytes = 8000000,
                                    .s = 300,
                                    .e = 500});
        if (r < 2)
            tb_nccl(p, (struct tb_coll){.op = CT_NCCL_OP_ALLREDUCE,
                                        .comm = 2,
                                        .comm_rank = r,
                                        .nranks = 2,
                                        .bytes = 4000000,
                                        .s = 600,
                                        .e = 650});
    }
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    ck_assert_uint_eq(rep.ncoll, 3);
    ck_assert_uint_eq(row_of(&rep, CT_NCCL_OP_ALLREDUCE, 4000000, 4)->count, 4);
    ck_assert_uint_eq(row_of(&rep, CT_NCCL_OP_ALLREDUCE, 8000000, 4)->count, 4);
    ck_assert_uint_eq(row_of(&rep, CT_NCCL_OP_ALLREDUCE, 4000000, 2)->count, 2);
    /* 8e6 / 200 000 ns = 40 GB/s; 4e6 / 50 000 ns = 80 GB/s */
    ck_assert_double_eq_tol(row_of(&rep, CT_NCCL_OP_ALLREDUCE, 8000000, 4)->algbw, 40.0, 1e-9);
    ck_assert_double_eq_tol(row_of(&rep, CT_NCCL_OP_ALLREDUCE, 4000000, 2)->algbw, 80.0, 1e-9);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * Two ranks, 1 500 000 bytes. Pair k is the k-th Send from `src` to `dst`
 * and the k-th Recv on `dst` from `src` (communicator 9):
 *   k = 0: Send [100,300)  Recv [160,300)   both start at 160
 *   k = 1: Send [500,600)  Recv [480,600)   both start at 500
 */
static void pairs(struct ct_job *job, struct ct_report *rep, int src, int dst)
{
    static const int64_t ss[2] = {100, 500}, se[2] = {300, 600};
    static const int64_t rs[2] = {160, 480}, re[2] = {300, 600};
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *p[2];
    p[0] = tb_proc(&b, 0);
    p[1] = tb_proc(&b, 1);
    for (int k = 0; k < 2; k++) {
        tb_nccl(p[src], (struct tb_coll){.op = CT_NCCL_OP_SEND,
                                         .comm = 9,
                                         .seq = (uint64_t)k,
                                         .comm_rank = src,
                                         .peer = dst,
                                         .nranks = 2,
                                         .bytes = 1500000,
                                         .s = ss[k],
                                         .e = se[k]});
        tb_nccl(p[dst], (struct tb_coll){.op = CT_NCCL_OP_RECV,
                                         .comm = 9,
                                         .seq = (uint64_t)k,
                                         .comm_rank = dst,
                                         .peer = src,
                                         .nranks = 2,
                                         .bytes = 1500000,
                                         .s = rs[k],
                                         .e = re[k]});
    }
    tb_build(&b, job);
    tb_analyze(job, NULL, rep);
}

START_TEST(kth_send_meets_the_kth_recv_of_the_same_pair)
{
    struct ct_job job;
    struct ct_report rep;
    pairs(&job, &rep, 0, 1);
    for (int r = 0; r < 2; r++) {
        const struct ct_rank *R = tb_rank(&job, r);
        ck_assert_int_eq(R->nccl[0].all_s, TB_US(160));
        ck_assert_int_eq(R->nccl[1].all_s, TB_US(500));
        ck_assert_uint_eq(R->cov.unmatched_p2p, 0);
    }
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* Send row: durations 200, 100: p50 150, algbw 1.5e6 / 150 000 = 10 GB/s,
 * busbw factor 1; wait 60, 0: 30; transfer 140, 100: 120; skew 60, 20: 40.
 * Recv row: durations 140, 120: p50 130; wait 0, 20: 10; transfer 140,
 * 100: 120. Both directions give the same rows. */
START_TEST(send_recv_rows_have_wait_transfer_and_busbw_factor_1)
{
    for (int dir = 0; dir < 2; dir++) {
        struct ct_job job;
        struct ct_report rep;
        pairs(&job, &rep, dir, 1 - dir);
        ck_assert_uint_eq(rep.ncoll, 2);
        const struct ct_coll_row *s = row_of(&rep, CT_NCCL_OP_SEND, 1500000, 2);
        ck_assert_uint_eq(s->count, 2);
        ck_assert_uint_eq(s->matched, 2);
        ck_assert_double_eq_tol(s->p50, (double)TB_US(150), 1e-6);
        ck_assert_double_eq_tol(s->algbw, 10.0, 1e-9);
        ck_assert_double_eq_tol(s->busbw, 10.0, 1e-9);
        ck_assert_double_eq_tol(s->wait_p50, (double)TB_US(30), 1e-6);
        ck_assert_double_eq_tol(s->transfer_p50, (double)TB_US(120), 1e-6);
        ck_assert_double_eq_tol(s->skew_p50, (double)TB_US(40), 1e-6);
        const struct ct_coll_row *v = row_of(&rep, CT_NCCL_OP_RECV, 1500000, 2);
        ck_assert_uint_eq(v->matched, 2);
        ck_assert_double_eq_tol(v->p50, (double)TB_US(130), 1e-6);
        ck_assert_double_eq_tol(v->wait_p50, (double)TB_US(10), 1e-6);
        ck_assert_double_eq_tol(v->transfer_p50, (double)TB_US(120), 1e-6);
        ct_report_free(&rep);
        ct_job_free(&job);
    }
}
END_TEST

/*
 * The Recv row's arrival skew is over its matched instances, whichever rank
 * sends. docs/report.md: "Per matched instance: arrival skew = latest -
 * earliest GPU start": the two pairs above, skews 60 and 20, median 40 us.
 * (It was 0 when rank 0 sent: an instance counted for the Recv row only
 * when the Recv sorted first in the instance.)
 */
START_TEST(recv_row_arrival_skew_is_over_its_matched_instances)
{
    for (int dir = 0; dir < 2; dir++) {
        struct ct_job job;
        struct ct_report rep;
        pairs(&job, &rep, dir, 1 - dir);
        const struct ct_coll_row *v = row_of(&rep, CT_NCCL_OP_RECV, 1500000, 2);
        ck_assert_double_eq_tol(v->skew_p50, (double)TB_US(40), 1e-6);
        ct_report_free(&rep);
        ct_job_free(&job);
    }
}
END_TEST

/*
 * Two ranks, communicator 1: seq 0 on both (rank 0 [100,200), rank 1
 * [150,200)); seq 1 timed on rank 0 only ([300,400); rank 1's is untimed,
 * so not in the table and no match). Then AllReduces of 2000 bytes with
 * sequence 0 on communicators 2 (rank 0) and 3 (rank 1): different
 * communicators never match.
 *   1000-byte row: count 3 (the untimed op is not counted), matched 2,
 *   wait median(50, 0) = 25, skew of the one instance 50.
 *   2000-byte row: count 2, matched 0, no skew.
 */
START_TEST(unmatched_and_untimed_ops_have_no_wait_or_skew)
{
    struct tb_job b;
    struct ct_job job;
    struct ct_report rep;
    tb_init(&b);
    struct ct_proc *p0 = tb_proc(&b, 0), *p1 = tb_proc(&b, 1);
    struct tb_coll o = {.op = CT_NCCL_OP_ALLREDUCE, .comm = 1, .nranks = 2, .bytes = 1000};
    o.comm_rank = 0;
    o.seq = 0, o.s = 100, o.e = 200;
    tb_nccl(p0, o);
    o.seq = 1, o.s = 300, o.e = 400;
    tb_nccl(p0, o);
    o.comm_rank = 1;
    o.seq = 0, o.s = 150, o.e = 200;
    tb_nccl(p1, o);
    o.seq = 1, o.s = 350, o.e = 0; /* untimed */
    tb_nccl(p1, o);
    o.bytes = 2000, o.seq = 0;
    o.comm = 2, o.comm_rank = 0, o.s = 500, o.e = 600;
    tb_nccl(p0, o);
    o.comm = 3, o.comm_rank = 1, o.s = 550, o.e = 600;
    tb_nccl(p1, o);
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    ck_assert_int_eq(tb_rank(&job, 0)->nccl[1].all_s, 0);
    ck_assert_int_eq(tb_rank(&job, 0)->nccl[2].all_s, 0);
    const struct ct_coll_row *a = row_of(&rep, CT_NCCL_OP_ALLREDUCE, 1000, 2);
    ck_assert_uint_eq(a->count, 3);
    ck_assert_uint_eq(a->matched, 2);
    ck_assert_double_eq_tol(a->wait_p50, (double)TB_US(25), 1e-6);
    ck_assert_double_eq_tol(a->skew_p50, (double)TB_US(50), 1e-6);
    const struct ct_coll_row *c = row_of(&rep, CT_NCCL_OP_ALLREDUCE, 2000, 2);
    ck_assert_uint_eq(c->count, 2);
    ck_assert_uint_eq(c->matched, 0);
    ck_assert_double_eq_tol(c->skew_p50, 0.0, 1e-9);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

Suite *collectives_suite(void)
{
    Suite *s = suite_create("collectives");
    TCase *tc = tcase_create("collectives");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, matched_ops_learn_the_latest_start_of_their_instance);
    tcase_add_test(tc, durations_are_gpu_times_over_all_ranks_ops);
    tcase_add_test(tc, arrival_skew_is_latest_minus_earliest_start_per_instance);
    tcase_add_test(tc, wait_is_until_the_last_arrival_transfer_after_it);
    tcase_add_test(tc, allreduce_busbw_is_algbw_times_2_n_minus_1_over_n);
    tcase_add_test(tc, busbw_factor_follows_nccl_tests_per_op);
    tcase_add_test(tc, rows_group_by_op_bytes_and_nranks);
    tcase_add_test(tc, kth_send_meets_the_kth_recv_of_the_same_pair);
    tcase_add_test(tc, send_recv_rows_have_wait_transfer_and_busbw_factor_1);
    tcase_add_test(tc, unmatched_and_untimed_ops_have_no_wait_or_skew);
    tcase_add_test(tc, recv_row_arrival_skew_is_over_its_matched_instances);
    suite_add_tcase(s, tc);
    return s;
}
