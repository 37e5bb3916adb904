/* Suite "diagnose_replay": `cutrace diagnose` taking its savings from the
 * what-if replay of the job's graph (decoder/compare/diagnose_replay.c),
 * and falling back to the checks' formulas where it cannot (docs/diff.md).
 * Hand-built jobs, times in µs. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/compare/diagnose.h"
#include "tests/unit/timeline_builder.h"
#include "decoder/read/job.h"

/* Iteration k's AllReduce on rank r of n (communicator 1, sequence k, 1
 * MiB) on stream, over [s, e), launched at launch. */
static void allreduce(struct ct_proc *p, int k, int r, int n, uint32_t stream, int64_t s, int64_t e,
                      int64_t launch)
{
    tb_nccl(p, (struct tb_coll){.op = CT_NCCL_OP_ALLREDUCE,
                                .comm = 1,
                                .seq = (uint64_t)k,
                                .comm_rank = r,
                                .nranks = n,
                                .bytes = 1 << 20,
                                .stream = stream,
                                .s = s,
                                .e = e,
                                .launch = launch});
}

/*
 * Three ranks, four iterations [a, a+1000), a = 1000 + 1000k. On rank r,
 * stream 1: "gemm" launched at a+10 runs [a+20, a+20+G_r); an AllReduce
 * launched at a+15 (communicator 1, sequence k) from gemm's end to a+700
 * (rank 2 arrives last, at a+620: a transfer of 80); "tail" launched at
 * a+16 runs [a+700, a+700+T_r). G = 300, 300, 600 and T = 100, 100, 200:
 * rank 2's kernels take twice as long. A sync [a+17, a+750+T_r) wakes 50
 * after tail; the host works on to the range end (150 on ranks 0 and 1,
 * 50 on rank 2).
 *
 * compute_straggler, rank 2: its formula is its compute beyond its peers',
 * 800 - 400 = 400. The replay (rank=2=0.5) knows that tail runs after
 * the transfer on every rank: rank 2 arrives at a+320 with its peers, the
 * transfer ends at a+400, tail at a+500, the syncs at a+550, and ranks 0
 * and 1 end their host work at a+700 (rank 2 at a+600): steps of 700, a
 * saving of 300.
 *
 * exposed_communication: the transfer of 80 runs after every rank's gemm
 * and before its tail, so all of it is exposed: formula 80; the replay
 * (op=AllReduce=0) ends the transfer at the rendezvous, and every rank's
 * iteration 80 earlier: 80.
 */
static void straggler_steps(struct ct_job *job, struct ct_report *rep, int nsteps)
{
    struct tb_job b;
    tb_init(&b);
    const int64_t gemm[3] = {300, 300, 600}, tail[3] = {100, 100, 200};
    for (int r = 0; r < 3; r++) {
        struct ct_proc *p = tb_proc(&b, r);
        for (int k = 0; k < nsteps; k++) {
            int64_t a = 1000 + 1000 * k;
            tb_range(p, a, a + 1000, k);
            tb_kernel(p, "gemm", 1, a + 20, a + 20 + gemm[r], a + 10);
            allreduce(p, k, r, 3, 1, a + 20 + gemm[r], a + 700, a + 15);
            tb_kernel(p, "tail", 1, a + 700, a + 700 + tail[r], a + 16);
            tb_sync(p, a + 17, a + 750 + tail[r]);
        }
    }
    tb_build(&b, job);
    tb_analyze(job, NULL, rep);
}

static void straggler_job(struct ct_job *job, struct ct_report *rep)
{
    straggler_steps(job, rep, 4);
}

static const struct ct_finding *find(const struct ct_diagnosis *d, int kind)
{
    for (size_t i = 0; i < d->nf; i++)
        if (d->f[i].kind == kind)
            return &d->f[i];
    return NULL;
}

START_TEST(savings_come_from_the_replay_where_the_graph_is_complete)
{
    struct ct_job job;
    struct ct_report rep;
    straggler_job(&job, &rep);
    struct ct_diag_opts o = {.min_saving = 0.02};
    struct ct_diagnosis *d = calloc(1, sizeof(*d));
    ck_assert_int_eq(ct_diagnose(&rep, &o, d), 0);
    ck_assert_int_eq(d->replayed, 1);
    ck_assert_str_eq(d->replay_note, "");
    const struct ct_finding *s = find(d, CT_FK_COMPUTE_STRAGGLER);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(s->from_replay, 1);
    ck_assert_str_eq(s->whatif, "rank=2=0.5");
    ck_assert(fabs(s->saving_us - 300) < 0.01);
    ck_assert(fabs(s->formula_saving_us - 400) < 0.01);
    const struct ct_finding *x = find(d, CT_FK_EXPOSED_COMM);
    ck_assert_ptr_nonnull(x);
    ck_assert_int_eq(x->from_replay, 1);
    ck_assert_str_eq(x->whatif, "op=AllReduce=0");
    ck_assert(fabs(x->saving_us - 80) < 0.01);
    /* ranked by the replay's savings */
    ck_assert(d->f[0].saving_us >= d->f[1].saving_us);
    ct_diagnosis_free(d);
    free(d);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

START_TEST(a_graph_over_the_limit_leaves_the_formulas_and_says_so)
{
    struct ct_job job;
    struct ct_report rep;
    straggler_job(&job, &rep);
    struct ct_diag_opts o = {.min_saving = 0.02, .graph_bytes = 1};
    struct ct_diagnosis *d = calloc(1, sizeof(*d));
    ck_assert_int_eq(ct_diagnose(&rep, &o, d), 0);
    ck_assert_int_eq(d->replayed, 0);
    ck_assert_ptr_nonnull(strstr(d->replay_note, "formula"));
    const struct ct_finding *s = find(d, CT_FK_COMPUTE_STRAGGLER);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(s->from_replay, 0);
    ck_assert(fabs(s->saving_us - 400) < 0.01);
    ct_diagnosis_free(d);
    free(d);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * The same job over 24 steps, under the smallest limit (a power of two
 * from 1 KiB) at which the replay runs: the whole graph passes it, so the
 * replay runs in chunks of steps, and the savings are the whole graph's,
 * 300 and 80 a step.
 */
START_TEST(a_graph_over_the_limit_is_replayed_in_chunks_with_the_same_savings)
{
    struct ct_job job;
    struct ct_report rep;
    straggler_steps(&job, &rep, 24);
    struct ct_diagnosis *d = NULL;
    for (size_t lim = 1 << 10; lim <= (1 << 22); lim *= 2) {
        struct ct_diag_opts o = {.min_saving = 0.02, .graph_bytes = lim};
        d = calloc(1, sizeof(*d));
        ck_assert_int_eq(ct_diagnose(&rep, &o, d), 0);
        if (d->replayed)
            break;
        ck_assert_ptr_nonnull(strstr(d->replay_note, "chunks of steps"));
        ct_diagnosis_free(d);
        free(d);
        d = NULL;
    }
    ck_assert_ptr_nonnull(d);
    ck_assert_uint_gt(d->replay_chunks, 1);
    const struct ct_finding *s = find(d, CT_FK_COMPUTE_STRAGGLER);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(s->from_replay, 1);
    ck_assert(fabs(s->saving_us - 300) < 0.01);
    const struct ct_finding *x = find(d, CT_FK_EXPOSED_COMM);
    ck_assert_ptr_nonnull(x);
    ck_assert(fabs(x->saving_us - 80) < 0.01);
    ct_diagnosis_free(d);
    free(d);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * Two ranks alike, four iterations [a, a+1000): "gemm" [a+20, a+320) on
 * stream 1 (launched at a+10), an AllReduce on stream 2 (launched at a+15)
 * [a+120, a+520), a sync [a+17, a+600): it wakes 80 after the AllReduce,
 * and 400 of host work follow. Exposed: the transfer after gemm, 200.
 *
 * Hidden entirely (op=AllReduce=0), the AllReduce ends at a+120 and gemm
 * at a+320 is the latest thing the sync waits for; the host still wakes 80
 * after it (the latency belongs to the sync, not to the op it happened to
 * wait for last): a+400, a saving of 200, the formula's. Had the other
 * edges into the sync carried no latency, it would wake at a+320, a saving
 * of 280 that no overlap of the transfer can buy.
 */
START_TEST(a_sync_keeps_its_wake_up_after_whichever_op_ends_last)
{
    struct tb_job b;
    tb_init(&b);
    for (int r = 0; r < 2; r++) {
        struct ct_proc *p = tb_proc(&b, r);
        for (int k = 0; k < 4; k++) {
            int64_t a = 1000 + 1000 * k;
            tb_range(p, a, a + 1000, k);
            tb_kernel(p, "gemm", 1, a + 20, a + 320, a + 10);
            allreduce(p, k, r, 2, 2, a + 120, a + 520, a + 15);
            tb_sync(p, a + 17, a + 600);
        }
    }
    struct ct_job job;
    struct ct_report rep;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    struct ct_diag_opts o = {.min_saving = 0.02};
    struct ct_diagnosis *d = calloc(1, sizeof(*d));
    ck_assert_int_eq(ct_diagnose(&rep, &o, d), 0);
    const struct ct_finding *x = find(d, CT_FK_EXPOSED_COMM);
    ck_assert_ptr_nonnull(x);
    ck_assert_int_eq(x->from_replay, 1);
    ck_assert(fabs(x->formula_saving_us - 200) < 0.01);
    ck_assert(fabs(x->saving_us - 200) < 0.01);
    ct_diagnosis_free(d);
    free(d);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * Three ranks, four iterations [a, a+1000): "gemm" [a+20, a+320) on stream
 * 1 (launched at a+10), an AllReduce on stream 1 (launched at a+15) from
 * a+320 to a+600, and "side" on stream 3 (launched at a+11) from a+330 for
 * S_r (S = 100, 100, 200: rank 2's twice as slow) under the transfer; a
 * sync [a+17, a+650), host work to the range end. Rank 2's slowness is the
 * median of its kernels' ratios, (1 + 2) / 2 = 1.5, and it computes 100
 * more per iteration outside other compute (the formula's saving, 10 % of
 * the step); but side ends long before the transfer does: the replay
 * (rank=2=0.666667, its kernels at its peers' speed) saves nothing, and
 * the finding is dismissed.
 */
START_TEST(a_straggler_off_the_path_is_dismissed_by_the_replay)
{
    struct tb_job b;
    tb_init(&b);
    const int64_t side[3] = {100, 100, 200};
    for (int r = 0; r < 3; r++) {
        struct ct_proc *p = tb_proc(&b, r);
        for (int k = 0; k < 4; k++) {
            int64_t a = 1000 + 1000 * k;
            tb_range(p, a, a + 1000, k);
            tb_kernel(p, "gemm", 1, a + 20, a + 320, a + 10);
            tb_kernel(p, "side", 3, a + 330, a + 330 + side[r], a + 11);
            allreduce(p, k, r, 3, 1, a + 320, a + 600, a + 15);
            tb_sync(p, a + 17, a + 650);
        }
    }
    struct ct_job job;
    struct ct_report rep;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    struct ct_diag_opts o = {.min_saving = 0.02};
    struct ct_diagnosis *d = calloc(1, sizeof(*d));
    ck_assert_int_eq(ct_diagnose(&rep, &o, d), 0);
    ck_assert_ptr_null(find(d, CT_FK_COMPUTE_STRAGGLER));
    ck_assert_uint_eq(d->ndis, 1);
    ck_assert_int_eq(d->dis[0].kind, CT_FK_COMPUTE_STRAGGLER);
    ck_assert(fabs(d->dis[0].formula_saving_us - 100) < 0.01);
    ck_assert(fabs(d->dis[0].saving_us) < 0.01);
    ck_assert_str_eq(d->dis[0].whatif, "rank=2=0.666667");
    ct_diagnosis_free(d);
    free(d);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

Suite *diagnose_replay_suite(void)
{
    Suite *s = suite_create("diagnose_replay");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, savings_come_from_the_replay_where_the_graph_is_complete);
    tcase_add_test(tc, a_graph_over_the_limit_leaves_the_formulas_and_says_so);
    tcase_add_test(tc, a_graph_over_the_limit_is_replayed_in_chunks_with_the_same_savings);
    tcase_add_test(tc, a_sync_keeps_its_wake_up_after_whichever_op_ends_last);
    tcase_add_test(tc, a_straggler_off_the_path_is_dismissed_by_the_replay);
    suite_add_tcase(s, tc);
    return s;
}
