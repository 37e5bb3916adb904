/* Suite "critical_path": the job graph, its replay and the critical path
 * (decoder/analysis/critical_path.c, replay.c; docs/critical-path.md) on
 * hand-built jobs whose paths are worked out by hand below. Times in µs. */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#include "decoder/analysis/critical_path.h"
#include "tests/unit/timeline_builder.h"
#include "decoder/read/devices.h"
#include "decoder/read/job.h"

/*
 * Two ranks, two iterations k of 1000 ([a, a + 1000), a = 1000 + 1000k).
 * On rank r: "gemm" launched at a+10 runs [a+20, a+20+G_r) on stream 1
 * (G_0 = 300, G_1 = 600); an AllReduce launched at a+15 (communicator 1,
 * sequence k) runs from the end of gemm to a+700 on both ranks: rank 1
 * arrives last, at a+620, and the transfer takes 80; the host waits in a
 * synchronisation [a+16, a+750), then 250 of host work to the range end.
 *
 * The path of each step, walked back from a+1000 on rank 0 (both end
 * there; the first rank is taken): host 250 (rank 0, sync end -> range
 * end), sync 50 (rank 0's wake-up after the AllReduce), transfer 80 (rank
 * 0), rendezvous at rank 1's arrival, rank 1's gemm 600, its launch
 * latency 10, and 10 of host time on rank 1 back to a (the previous
 * synchronisation's end lies before the step). Sum: 1000, the step.
 */
static void steps_of_two_ranks(struct ct_job *job, struct ct_report *rep, int nsteps, int vary)
{
    struct tb_job b;
    tb_init(&b);
    for (int r = 0; r < 2; r++) {
        struct ct_proc *p = tb_proc(&b, r);
        for (int k = 0; k < nsteps; k++) {
            int64_t a = 1000 + 1000 * k, gemm = r ? 600 + vary * (k % 3) : 300;
            tb_range(p, a, a + 1000, k);
            tb_kernel(p, "gemm", 1, a + 20, a + 20 + gemm, a + 10);
            tb_nccl(p, (struct tb_coll){.op = CT_NCCL_OP_ALLREDUCE,
                                        .comm = 1,
                                        .seq = (uint64_t)k,
                                        .comm_rank = r,
                                        .nranks = 2,
                                        .bytes = 1 << 20,
                                        .stream = 1,
                                        .s = a + 20 + gemm,
                                        .e = a + 700,
                                        .launch = a + 15});
            tb_sync(p, a + 16, a + 750);
        }
    }
    tb_build(&b, job);
    tb_analyze(job, NULL, rep);
}

static void two_ranks(struct ct_job *job, struct ct_report *rep)
{
    steps_of_two_ranks(job, rep, 2, 0);
}

static int64_t seg_dur(const struct ct_cp_result *r, int rank, int cat)
{
    int64_t d = 0;
    for (size_t i = 0; i < r->nsegs; i++)
        if (r->segs[i].rank == rank && r->segs[i].cat == cat)
            d += r->segs[i].dur;
    return d;
}

START_TEST(path_length_is_the_step_and_composition_is_exact)
{
    struct ct_job job;
    struct ct_report rep;
    two_ranks(&job, &rep);
    struct ct_cp_graph *g;
    struct ct_cp_result res;
    ck_assert_int_eq(ct_cp_build(&rep, &g), 0);
    ck_assert_int_eq(ct_cp_paths(g, &res), 0);
    ck_assert_uint_eq(res.nsteps, 2);
    for (size_t i = 0; i < res.nsteps; i++) {
        const struct ct_cp_step *s = &res.steps[i];
        ck_assert_int_eq(s->end - s->start, TB_US(1000));
        int64_t sum = 0;
        for (int c = 0; c < CT_CP_NCAT; c++)
            sum += s->cat[c];
        ck_assert_int_eq(sum, TB_US(1000));
        ck_assert_int_eq(s->cat[CT_CP_COMPUTE], TB_US(600));
        ck_assert_int_eq(s->cat[CT_CP_COMM], TB_US(80));
        ck_assert_int_eq(s->cat[CT_CP_SYNC], TB_US(50));
        ck_assert_int_eq(s->cat[CT_CP_LAUNCH], TB_US(10));
        ck_assert_int_eq(s->cat[CT_CP_HOST], TB_US(260));
        ck_assert_int_eq(s->cat[CT_CP_PEER_WAIT], 0);
    }
    ck_assert_int_eq(res.total, TB_US(2000));
    /* the compute is rank 1's gemm: the last arriver */
    ck_assert_int_eq(seg_dur(&res, 1, CT_CP_COMPUTE), TB_US(1200));
    ck_assert_int_eq(seg_dur(&res, 0, CT_CP_COMPUTE), 0);
    ck_assert_int_eq(seg_dur(&res, 0, CT_CP_HOST), TB_US(500));
    ck_assert_str_eq(res.segs[0].name, "gemm");
    ck_assert_int_eq(res.segs[0].rank, 1);
    ck_assert_int_eq(res.segs[0].dur, TB_US(1200));
    /* a launch segment is on the stream of the op it launched (stream 1
     * here), not on stream 0 */
    size_t nlaunch = 0;
    for (size_t i = 0; i < res.nsegs; i++)
        if (res.segs[i].cat == CT_CP_LAUNCH) {
            ck_assert_uint_eq(res.segs[i].stream, 1);
            nlaunch++;
        }
    ck_assert_uint_ge(nlaunch, 1);
    ct_cp_result_free(&res);
    ct_cp_free(g);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* The path's edges of each step in time order (what export --critical-path
 * draws): the walk of the comment above, forwards. Runs of one (rank,
 * category) are merged here: the host time before rank 1's launch may be
 * several host edges. */
START_TEST(path_edges_run_in_time_order_across_ranks)
{
    struct ct_job job;
    struct ct_report rep;
    two_ranks(&job, &rep);
    struct ct_cp_graph *g;
    struct ct_cp_result res;
    struct ct_cp_path path;
    ck_assert_int_eq(ct_cp_build(&rep, &g), 0);
    ck_assert_int_eq(ct_cp_paths(g, &res), 0);
    ck_assert_int_eq(ct_cp_path_edges(g, &path), 0);
    ck_assert_uint_eq(path.nsteps, 2);
    static const struct {
        int rank, cat;
        int64_t s, e; /* µs after the step's start a */
    } want[] = {{1, CT_CP_HOST, 0, 10},    {1, CT_CP_LAUNCH, 10, 20}, {1, CT_CP_COMPUTE, 20, 620},
                {0, CT_CP_COMM, 620, 700}, {0, CT_CP_SYNC, 700, 750}, {0, CT_CP_HOST, 750, 1000}};
    const size_t nw = sizeof(want) / sizeof(want[0]);
    size_t i = 0;
    int64_t cat[2][CT_CP_NCAT] = {{0}};
    for (size_t k = 0; k < 2; k++) {
        int64_t a = TB_US(1000 + 1000 * (int64_t)k);
        ck_assert_int_eq(path.v[i].s, a); /* the step's start */
        for (size_t w = 0; w < nw; w++) {
            ck_assert_uint_lt(i, path.n);
            ck_assert_uint_eq(path.v[i].step, k);
            ck_assert_int_eq(path.v[i].index, (int64_t)k);
            ck_assert_int_eq(path.v[i].rank, want[w].rank);
            ck_assert_int_eq(path.v[i].cat, want[w].cat);
            ck_assert_int_eq(path.v[i].s, a + TB_US(want[w].s));
            int64_t e = path.v[i].e;
            cat[k][path.v[i].cat] += path.v[i].e - path.v[i].s;
            /* the run of this (rank, category): edges meet end to start */
            while (++i < path.n && path.v[i].step == k && path.v[i].rank == want[w].rank &&
                   path.v[i].cat == want[w].cat) {
                ck_assert_int_eq(path.v[i].s, e);
                e = path.v[i].e;
                cat[k][path.v[i].cat] += path.v[i].e - path.v[i].s;
            }
            ck_assert_int_eq(e, a + TB_US(want[w].e));
        }
        for (int c = 0; c < CT_CP_NCAT; c++)
            ck_assert_int_eq(cat[k][c], res.steps[k].cat[c]);
    }
    ck_assert_uint_eq(i, path.n);
    for (size_t k = 0; k < path.n; k++)
        if (path.v[k].cat == CT_CP_COMPUTE)
            ck_assert_str_eq(path.v[k].name, "gemm");
    ct_cp_path_free(&path);
    ct_cp_result_free(&res);
    ct_cp_free(g);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

START_TEST(unscaled_replay_reproduces_every_measured_time)
{
    struct ct_job job;
    struct ct_report rep;
    two_ranks(&job, &rep);
    struct ct_cp_graph *g;
    struct ct_cp_result res;
    ck_assert_int_eq(ct_cp_build(&rep, &g), 0);
    struct ct_cp_scale none = {.kind = CT_SEL_RANK, .rank = 0, .factor = 1};
    ck_assert_int_eq(ct_cp_replay(g, &none, 1), 0);
    ck_assert_int_eq(ct_cp_paths(g, &res), 0);
    ck_assert(fabs(res.step_p50 - rep.step_p50) < 0.5);
    ck_assert(fabs(res.step_p50 - (double)TB_US(1000)) < 0.5);
    for (size_t i = 0; i < res.nsteps; i++) {
        ck_assert_int_eq(res.steps[i].start, TB_US(1000 + 1000 * (int64_t)i));
        ck_assert_int_eq(res.steps[i].end, TB_US(2000 + 1000 * (int64_t)i));
    }
    ck_assert_uint_eq(res.unordered, 0);
    ct_cp_result_free(&res);
    ct_cp_free(g);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * rank=1=0.25: rank 1's gemm becomes 150, rank 0's 300 is now the later
 * arrival: rank 0 becomes critical. Replayed step (iteration 1, and 0
 * alike): the host returns from the previous sync 300 earlier; gemm
 * [a'+20, a'+320), transfer 80, wake-up 50, host 250: 700 from start to
 * end on both ranks.
 */
START_TEST(scaling_the_slow_rank_moves_the_path_to_the_other)
{
    struct ct_job job;
    struct ct_report rep;
    two_ranks(&job, &rep);
    struct ct_cp_graph *g;
    struct ct_cp_result res;
    char err[200];
    struct ct_cp_scale sc;
    ck_assert_int_eq(ct_cp_scale_parse("rank=1=0.25", &sc, err, sizeof(err)), 0);
    ck_assert_int_eq(ct_cp_build(&rep, &g), 0);
    ck_assert_int_eq(ct_cp_replay(g, &sc, 1), 0);
    ck_assert_int_eq(ct_cp_paths(g, &res), 0);
    ck_assert(fabs(res.step_p50 - (double)TB_US(700)) < 0.5);
    ck_assert_int_eq(seg_dur(&res, 0, CT_CP_COMPUTE), TB_US(600));
    ck_assert_int_eq(seg_dur(&res, 1, CT_CP_COMPUTE), 0);
    for (size_t i = 0; i < res.nsteps; i++)
        ck_assert_int_eq(res.steps[i].end - res.steps[i].start, TB_US(700));
    ct_cp_result_free(&res);
    /* op=AllReduce=0.5 halves the transfer only: 40 less per step */
    ck_assert_int_eq(ct_cp_scale_parse("op=AllReduce=0.5", &sc, err, sizeof(err)), 0);
    ck_assert_int_eq(ct_cp_replay(g, &sc, 1), 0);
    ck_assert_int_eq(ct_cp_paths(g, &res), 0);
    ck_assert(fabs(res.step_p50 - (double)TB_US(960)) < 0.5);
    ct_cp_result_free(&res);
    ct_cp_free(g);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * One rank, three iterations [a, a+1000): a data wait [a, a+400), 10 of
 * host time, a launch at a+410 of "step" [a+420, a+920), a sync
 * [a+415, a+930), 70 of host time to the range end. With data=0 every
 * step is 400 shorter.
 */
START_TEST(instant_loader_removes_the_data_wait)
{
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    for (int k = 0; k < 3; k++) {
        int64_t a = 1000 + 1000 * k;
        tb_range(p, a, a + 1000, k);
        tb_data_wait(p, a, a + 400);
        tb_kernel(p, "step", 1, a + 420, a + 920, a + 410);
        tb_sync(p, a + 415, a + 930);
    }
    struct ct_job job;
    struct ct_report rep;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    struct ct_cp_graph *g;
    struct ct_cp_result res;
    ck_assert_int_eq(ct_cp_build(&rep, &g), 0);
    ck_assert_int_eq(ct_cp_paths(g, &res), 0);
    for (size_t i = 0; i < res.nsteps; i++) {
        ck_assert_int_eq(res.steps[i].cat[CT_CP_DATA], TB_US(400));
        ck_assert_int_eq(res.steps[i].cat[CT_CP_COMPUTE], TB_US(500));
        ck_assert_int_eq(res.steps[i].cat[CT_CP_HOST], TB_US(80));
        ck_assert_int_eq(res.steps[i].cat[CT_CP_SYNC], TB_US(10));
        ck_assert_int_eq(res.steps[i].cat[CT_CP_LAUNCH], TB_US(10));
    }
    ct_cp_result_free(&res);
    char err[200];
    struct ct_cp_scale sc;
    ck_assert_int_eq(ct_cp_scale_parse("data=0", &sc, err, sizeof(err)), 0);
    ck_assert_int_eq(ct_cp_replay(g, &sc, 1), 0);
    ck_assert_int_eq(ct_cp_paths(g, &res), 0);
    ck_assert(fabs(res.step_p50 - (double)TB_US(600)) < 0.5);
    ck_assert_int_eq(res.cat[CT_CP_DATA], 0);
    ct_cp_result_free(&res);
    ct_cp_free(g);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * Two ranks exchanging in one NCCL group, as a pipeline's
 * send_forward_recv_backward does: in iteration k ([a, a+1000), a = 1000
 * + 1000k) rank r runs "f" [a+20, a+20+F_r) (F_0 = 200, F_1 = 400,
 * launched at a+10), then sends to and receives from the other rank in
 * one group (communicator 1, sequence k; send first on both ranks): NCCL
 * fuses the group into one kernel, so both members run over the same
 * interval, from the rank's arrival to a+500 (rank 1 arrives last, at
 * a+420: a transfer of 80). A sync [a+16, a+550), then 450 of host work.
 *
 * Chained in stream order, each rank's receive would wait for its send,
 * whose transfer waits for the other rank's receive: a cycle. Overlapping
 * members are one launch, so there is none, and rank=1=0.5 makes rank 1
 * arrive at a+220 with rank 0: transfer 80 (rank 0's), wake-up 50, host
 * 450: steps of 800.
 */
START_TEST(grouped_send_and_recv_are_one_launch_not_a_cycle)
{
    struct tb_job b;
    tb_init(&b);
    const int64_t f[2] = {200, 400};
    for (int r = 0; r < 2; r++) {
        struct ct_proc *p = tb_proc(&b, r);
        for (int k = 0; k < 2; k++) {
            int64_t a = 1000 + 1000 * k;
            tb_range(p, a, a + 1000, k);
            tb_kernel(p, "f", 1, a + 20, a + 20 + f[r], a + 10);
            for (int op = 0; op < 2; op++)
                tb_nccl(p, (struct tb_coll){.op = op ? CT_NCCL_OP_RECV : CT_NCCL_OP_SEND,
                                            .comm = 1,
                                            .seq = (uint64_t)k,
                                            .comm_rank = r,
                                            .peer = 1 - r,
                                            .nranks = 2,
                                            .bytes = 4096,
                                            .stream = 1,
                                            .s = a + 20 + f[r],
                                            .e = a + 500,
                                            .launch = a + 12 + op});
            tb_sync(p, a + 16, a + 550);
        }
    }
    struct ct_job job;
    struct ct_report rep;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    struct ct_cp_graph *g;
    struct ct_cp_result res;
    ck_assert_int_eq(ct_cp_build(&rep, &g), 0);
    ck_assert_int_eq(ct_cp_paths(g, &res), 0);
    ck_assert_uint_eq(res.unordered, 0);
    ck_assert(fabs(res.step_p50 - (double)TB_US(1000)) < 0.5);
    ck_assert_int_eq(seg_dur(&res, 1, CT_CP_COMPUTE), TB_US(800));
    ct_cp_result_free(&res);
    char err[200];
    struct ct_cp_scale sc;
    ck_assert_int_eq(ct_cp_scale_parse("rank=1=0.5", &sc, err, sizeof(err)), 0);
    ck_assert_int_eq(ct_cp_replay(g, &sc, 1), 0);
    ck_assert_int_eq(ct_cp_paths(g, &res), 0);
    ck_assert_uint_eq(res.unordered, 0);
    for (size_t i = 0; i < res.nsteps; i++)
        ck_assert_int_eq(res.steps[i].end - res.steps[i].start, TB_US(800));
    ct_cp_result_free(&res);
    ct_cp_free(g);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * One rank, two iterations [a, a+1000): "own" on stream 1 (launched at
 * a+10) [a+20, a+320), "bg" on stream 2 (launched at a+11) [a+20, a+500),
 * a sync [a+15, a+330) that returns 10 after own (it did not wait for bg,
 * which ends 170 later), host work to the range end. The trace does not
 * say what the sync waited for, so it is taken to wait for every stream,
 * but bg ends after it returned: that edge keeps its gap, own binds
 * (latency 10). The range's end is the host's: it follows the sync's end
 * by its 670 of host work, however late bg ended.
 *
 * kernel=own=2: own ends at a+620, the sync returns at a+630 (not at
 * a+450, where bg's -170 as the sync's latency would put it), and the
 * range ends at 630 + 670: steps of 1300. Path: launch 10, compute 600,
 * sync 10, host 670 + the 10 before the launch.
 */
START_TEST(a_sync_does_not_take_its_latency_from_an_op_it_did_not_wait_for)
{
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    for (int k = 0; k < 2; k++) {
        int64_t a = 1000 + 1000 * k;
        tb_range(p, a, a + 1000, k);
        tb_kernel(p, "own", 1, a + 20, a + 320, a + 10);
        tb_kernel(p, "bg", 2, a + 20, a + 500, a + 11);
        tb_sync(p, a + 15, a + 330);
    }
    struct ct_job job;
    struct ct_report rep;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    struct ct_cp_graph *g;
    struct ct_cp_result res;
    char err[200];
    struct ct_cp_scale sc;
    ck_assert_int_eq(ct_cp_scale_parse("kernel=own=2", &sc, err, sizeof(err)), 0);
    ck_assert_int_eq(ct_cp_build(&rep, &g), 0);
    ck_assert_int_eq(ct_cp_replay(g, &sc, 1), 0);
    ck_assert_int_eq(ct_cp_paths(g, &res), 0);
    ck_assert_uint_eq(res.nsteps, 2);
    const struct ct_cp_step *s = &res.steps[0];
    ck_assert_int_eq(s->end - s->start, TB_US(1300));
    ck_assert_int_eq(s->cat[CT_CP_COMPUTE], TB_US(600));
    ck_assert_int_eq(s->cat[CT_CP_SYNC], TB_US(10));
    ck_assert_int_eq(s->cat[CT_CP_LAUNCH], TB_US(10));
    ck_assert_int_eq(s->cat[CT_CP_HOST], TB_US(680));
    ct_cp_result_free(&res);
    ct_cp_free(g);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * One rank, two iterations [a, a+1000): "mine" [a+20, a+320) on the
 * stream the sync names and "other" [a+20, a+300) on another, launched at
 * a+10 and a+11; the sync [a+15, a+330) waits for mine (latency 10), then
 * 670 of host work. Case 0 is a cuStreamSynchronize of stream 1 (mine on
 * 1, other on 2); case 1 a cuEventSynchronize of an event recorded on
 * stream 2 at a+12, after other's launch: mine on 2, other on 1; case 2
 * a sync of the legacy stream, which waits for every blocking stream:
 * mine on 1, other on 2, created non-blocking.
 *
 * kernel=mine=0.5: mine ends at a+170, the sync returns 10 later, at
 * a+180, and the step is 1000 - 150 = 850. Had the sync waited for every
 * stream it would wake after other, at a+310: 980. Unscaled, 1000.
 */
START_TEST(a_sync_waits_for_the_stream_or_event_it_names)
{
    for (int c = 0; c < 3; c++) {
        struct tb_job b;
        tb_init(&b);
        struct ct_proc *p = tb_proc(&b, 0);
        uint32_t mine = c == 1 ? 2 : 1, other = c == 1 ? 1 : 2;
        if (c == 2)
            ck_assert_int_eq(ct_nonblocking_note(p, other), 0);
        for (int k = 0; k < 2; k++) {
            int64_t a = 1000 + 1000 * k;
            tb_range(p, a, a + 1000, k);
            tb_kernel(p, "mine", mine, a + 20, a + 320, a + 10);
            tb_kernel(p, "other", other, a + 20, a + 300, a + 11);
            tb_sync_on(p, a + 15, a + 330, c == 2 ? CT_SYNCON_BLOCKING : mine,
                       c == 1 ? a + 12 : a + 15);
        }
        struct ct_job job;
        struct ct_report rep;
        tb_build(&b, &job);
        tb_analyze(&job, NULL, &rep);
        struct ct_cp_graph *g;
        struct ct_cp_result res;
        char err[200];
        struct ct_cp_scale sc;
        ck_assert_int_eq(ct_cp_scale_parse("kernel=mine=0.5", &sc, err, sizeof(err)), 0);
        ck_assert_int_eq(ct_cp_build(&rep, &g), 0);
        ck_assert_int_eq(ct_cp_replay(g, NULL, 0), 0);
        ck_assert_int_eq(ct_cp_paths(g, &res), 0);
        ck_assert_int_eq(res.steps[0].end - res.steps[0].start, TB_US(1000));
        ct_cp_result_free(&res);
        ck_assert_int_eq(ct_cp_replay(g, &sc, 1), 0);
        ck_assert_int_eq(ct_cp_paths(g, &res), 0);
        ck_assert_uint_eq(res.nsteps, 2);
        const struct ct_cp_step *s = &res.steps[0];
        ck_assert_msg(s->end - s->start == TB_US(850), "case %d: step %lld ns", c,
                      (long long)(s->end - s->start));
        ck_assert_int_eq(s->cat[CT_CP_COMPUTE], TB_US(150));
        ck_assert_int_eq(s->cat[CT_CP_SYNC], TB_US(10));
        ct_cp_result_free(&res);
        ct_cp_free(g);
        ct_report_free(&rep);
        ct_job_free(&job);
    }
}
END_TEST

static void same_result(const struct ct_cp_result *a, const struct ct_cp_result *b, int times)
{
    ck_assert_uint_eq(a->nsteps, b->nsteps);
    for (size_t i = 0; i < a->nsteps; i++) {
        const struct ct_cp_step *x = &a->steps[i], *y = &b->steps[i];
        ck_assert(x->index == y->index && x->end_rank == y->end_rank);
        ck_assert_int_eq(x->end - x->start, y->end - y->start);
        ck_assert(!times || (x->start == y->start && x->end == y->end));
        ck_assert_int_eq(memcmp(x->cat, y->cat, sizeof(x->cat)), 0);
    }
    ck_assert_uint_eq(a->nsegs, b->nsegs);
    for (size_t i = 0; i < a->nsegs; i++) {
        const struct ct_cp_seg *x = &a->segs[i], *y = &b->segs[i];
        ck_assert(x->rank == y->rank && x->cat == y->cat && x->stream == y->stream);
        ck_assert(x->name == y->name && x->dur == y->dur && x->count == y->count);
    }
    ck_assert_int_eq(a->total, b->total);
    for (int c = 0; c < CT_CP_NCAT; c++)
        ck_assert_int_eq(a->cat[c], b->cat[c]);
    for (size_t r = 0; r < a->nranks; r++)
        ck_assert_int_eq(a->rank_time[r], b->rank_time[r]);
    ck_assert(a->step_p50 == b->step_p50);
    ck_assert(ct_cp_mean_step(a) == ct_cp_mean_step(b));
    ck_assert_uint_eq(a->unordered, b->unordered);
}

/*
 * A run too large for one graph (ct_cp_run): 40 steps of the two-rank job
 * above, rank 1's gemm 600, 630, 660 in turn, cut into chunks by a limit of
 * 48 KiB (the whole graph takes some 200 KiB), gives the whole run's
 * figures: each step's span, composition and end rank, the segments, the
 * ranks' path times, the median and the mean step, unscaled and with rank
 * 1 at a quarter. Scaled, the steps' starts drift earlier over the run;
 * each chunk starts from measured times, so its steps keep their lengths
 * but not their places (times = 0), and the mean step adds up the
 * chunks' spans. A limit one step passes is -E2BIG.
 */
START_TEST(a_run_too_large_for_one_graph_is_cut_into_chunks)
{
    struct ct_job job;
    struct ct_report rep;
    steps_of_two_ranks(&job, &rep, 40, 30);
    char err[200];
    struct ct_cp_scale sc;
    ck_assert_int_eq(ct_cp_scale_parse("rank=1=0.25", &sc, err, sizeof(err)), 0);
    struct ct_cp_result wb, wp, cb, cp;
    ck_assert_int_eq(ct_cp_run(&rep, 0, &sc, 1, &wb, &wp), 0);
    ck_assert_uint_eq(wb.chunks, 1);
    ck_assert_uint_eq(wb.nsteps, 40);
    ck_assert(wp.step_p50 < wb.step_p50 - (double)TB_US(200));
    ck_assert_int_eq(ct_cp_run(&rep, 48 << 10, &sc, 1, &cb, &cp), 0);
    ck_assert_uint_gt(cb.chunks, 2);
    ck_assert_uint_lt(cb.chunk_steps, 40);
    same_result(&wb, &cb, 1);
    same_result(&wp, &cp, 0);
    ct_cp_result_free(&wb);
    ct_cp_result_free(&wp);
    ct_cp_result_free(&cb);
    ct_cp_result_free(&cp);
    ck_assert_int_eq(ct_cp_run(&rep, 256, NULL, 0, &cb, &cp), -E2BIG);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * One rank, three iterations [a, a+1000), a = 1000 + 1000k, each one
 * replay of a forked graph launched at a+10 on stream 1, then a sync
 * [a+12, a+740) and host work to the range end. Nodes (executable ids
 * 1..5) and edges A->B, A->C, B->D, C->E, D->E:
 *   A [a+20, a+70)  B [a+72, a+122)  C [a+72, a+472)  D [a+124, a+724)
 *   E [a+726, a+736)
 * D waited for B, not for C (which still ran): the path of each step is
 * host 10, launch 10, A 50, gap 2, B 50, gap 2, D 600, gap 2, E 10, sync 4,
 * host 260: compute 710. The stream rule alone takes C and B as one launch
 * (they overlap) and D, which begins inside it, as part of it too: D would
 * follow A, and B would be off the path. kernel=B=2 then delays D and E
 * by 50 a step; kernel=C=1.5 (C ends at a+672, before D) changes nothing;
 * kernel=C=2 (C ends at a+872) puts C on the path: E [a+874, a+884), the
 * sync ends at a+888 and the step 148 later.
 */
static void forked_graph(struct ct_job *job, struct ct_report *rep, int edges)
{
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    for (int k = 0; k < 3; k++) {
        int64_t a = 1000 + 1000 * k, l = a + 10;
        tb_range(p, a, a + 1000, k);
        tb_launch(p, l);
        tb_graph_kernel(p, "A", 1, a + 20, a + 70, l, 1);
        tb_graph_kernel(p, "B", 1, a + 72, a + 122, l, 2);
        tb_graph_kernel(p, "C", 1, a + 72, a + 472, l, 3);
        tb_graph_kernel(p, "D", 1, a + 124, a + 724, l, 4);
        tb_graph_kernel(p, "E", 1, a + 726, a + 736, l, 5);
        tb_sync(p, a + 12, a + 740);
    }
    if (edges) { /* by (to, from) */
        tb_graph_edge(p, 1, 2);
        tb_graph_edge(p, 1, 3);
        tb_graph_edge(p, 2, 4);
        tb_graph_edge(p, 3, 5);
        tb_graph_edge(p, 4, 5);
    }
    tb_build(&b, job);
    tb_analyze(job, NULL, rep);
}

static double graph_step(struct ct_cp_graph *g, const char *sel)
{
    char err[200];
    struct ct_cp_scale sc;
    struct ct_cp_result res;
    ck_assert_int_eq(ct_cp_scale_parse(sel, &sc, err, sizeof(err)), 0);
    ck_assert_int_eq(ct_cp_replay(g, &sc, 1), 0);
    ck_assert_int_eq(ct_cp_paths(g, &res), 0);
    double p50 = res.step_p50;
    ct_cp_result_free(&res);
    return p50;
}

START_TEST(a_replayed_graph_follows_its_own_edges)
{
    struct ct_job job;
    struct ct_report rep;
    forked_graph(&job, &rep, 1);
    struct ct_cp_graph *g;
    struct ct_cp_result res;
    ck_assert_int_eq(ct_cp_build(&rep, &g), 0);
    ck_assert_int_eq(ct_cp_paths(g, &res), 0);
    ck_assert_uint_eq(res.nsteps, 3);
    for (size_t i = 0; i < res.nsteps; i++) {
        ck_assert_int_eq(res.steps[i].end - res.steps[i].start, TB_US(1000));
        ck_assert_int_eq(res.steps[i].cat[CT_CP_COMPUTE], TB_US(710));
    }
    ck_assert_uint_eq(res.graph_ops, 15); /* 5 nodes x 3 replays, every one joined */
    ck_assert_uint_eq(res.graph_ops_edges, 15);
    int64_t b = 0, c = 0;
    for (size_t i = 0; i < res.nsegs; i++) {
        b += !strcmp(res.segs[i].name ? res.segs[i].name : "", "B") ? res.segs[i].dur : 0;
        c += !strcmp(res.segs[i].name ? res.segs[i].name : "", "C") ? res.segs[i].dur : 0;
    }
    ck_assert_int_eq(b, TB_US(150));
    ck_assert_int_eq(c, 0);
    ct_cp_result_free(&res);
    ck_assert(fabs(graph_step(g, "kernel=B=2") - (double)TB_US(1050)) < 0.5);
    ck_assert(fabs(graph_step(g, "kernel=C=1.5") - (double)TB_US(1000)) < 0.5);
    ck_assert(fabs(graph_step(g, "kernel=C=2") - (double)TB_US(1148)) < 0.5);
    ct_cp_free(g);
    ct_report_free(&rep);
    ct_job_free(&job);
    /* without the edges (a trace of event timing, or an older recorder) D
     * follows A: B is off the path and scaling it moves nothing */
    forked_graph(&job, &rep, 0);
    ck_assert_int_eq(ct_cp_build(&rep, &g), 0);
    ck_assert_int_eq(ct_cp_paths(g, &res), 0);
    for (size_t i = 0; i < res.nsteps; i++)
        ck_assert_int_eq(res.steps[i].cat[CT_CP_COMPUTE], TB_US(660));
    ck_assert_uint_eq(res.graph_ops, 15); /* said: none of them follows its graph */
    ck_assert_uint_eq(res.graph_ops_edges, 0);
    ct_cp_result_free(&res);
    ck_assert(fabs(graph_step(g, "kernel=B=2") - (double)TB_US(1000)) < 0.5);
    ct_cp_free(g);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * Event waits into and out of CUDA graph launches, 3 steps of 1000 µs at
 * a = 1000 + 1000 k (µs; ranges [a, a + 1000)).
 * into: X on stream 1 [a+20, a+420) (launched a+10); cuEventRecord on 1 at
 *   a+12, cuStreamWaitEvent on 2 at a+14; a graph launched on 2 at a+16
 *   with two chains, R1 [a+422, a+432) -> E1 [a+434, a+444) and R2
 *   [a+423, a+723) -> E2 [a+725, a+735); N on 2 [a+737, a+747) (launched
 *   a+17); a sync [a+18, a+750). Both roots waited for X: kernel=X=2 ends
 *   X at a+820, R2 at a+1123, E2 at a+1135, N at a+1147, the sync at
 *   a+1150: steps of 1400. The wait reaching R1 alone leaves R2, E2 and N
 *   where they were, and the step at 1000.
 * out of: a graph launched on 2 at a+10 with P [a+20, a+420) and Q
 *   [a+30, a+60) (no edges: two roots); cuEventRecord on 2 at a+12,
 *   waited on by 3 at a+14; Y on 3 [a+422, a+472) (launched a+16); a sync
 *   [a+18, a+480). The event completed with P, which ended last, not with
 *   Q, which started last: kernel=P=0.5 ends P at a+220, Y at a+272 and
 *   the sync at a+280: steps of 800. Taking Q leaves them at 1000.
 */
static void graph_waits(struct ct_job *job, struct ct_report *rep, int into)
{
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    for (int k = 0; k < 3; k++) {
        int64_t a = 1000 + 1000 * k;
        tb_range(p, a, a + 1000, k);
        if (into) {
            tb_kernel(p, "X", 1, a + 20, a + 420, a + 10);
            tb_event_edge(p, 1, a + 12, 2, a + 14);
            tb_launch(p, a + 16);
            tb_graph_kernel(p, "R1", 2, a + 422, a + 432, a + 16, 4 * k + 1);
            tb_graph_kernel(p, "R2", 2, a + 423, a + 723, a + 16, 4 * k + 2);
            tb_graph_kernel(p, "E1", 2, a + 434, a + 444, a + 16, 4 * k + 3);
            tb_graph_kernel(p, "E2", 2, a + 725, a + 735, a + 16, 4 * k + 4);
            tb_kernel(p, "N", 2, a + 737, a + 747, a + 17);
            tb_sync(p, a + 18, a + 750);
        } else {
            tb_launch(p, a + 10);
            tb_graph_kernel(p, "P", 2, a + 20, a + 420, a + 10, 2 * k + 1);
            tb_graph_kernel(p, "Q", 2, a + 30, a + 60, a + 10, 2 * k + 2);
            tb_event_edge(p, 2, a + 12, 3, a + 14);
            tb_kernel(p, "Y", 3, a + 422, a + 472, a + 16);
            tb_sync(p, a + 18, a + 480);
        }
    }
    if (into) /* by (to, from) */
        for (uint64_t k = 0; k < 3; k++) {
            tb_graph_edge(p, 4 * k + 1, 4 * k + 3);
            tb_graph_edge(p, 4 * k + 2, 4 * k + 4);
        }
    else /* a graph of roots only: an edge list that names other nodes */
        tb_graph_edge(p, 100, 101);
    tb_build(&b, job);
    tb_analyze(job, NULL, rep);
}

/* graph_waits' median step (µs) replayed with each of two selectors. */
static void graph_waits_steps(int into, const char *sel1, int64_t want1, const char *sel2,
                              int64_t want2)
{
    struct ct_job job;
    struct ct_report rep;
    struct ct_cp_graph *g;
    graph_waits(&job, &rep, into);
    ck_assert_int_eq(ct_cp_build(&rep, &g), 0);
    ck_assert(fabs(graph_step(g, sel1) - (double)TB_US(want1)) < 0.5);
    ck_assert(fabs(graph_step(g, sel2) - (double)TB_US(want2)) < 0.5);
    ct_cp_free(g);
    ct_report_free(&rep);
    ct_job_free(&job);
}

START_TEST(an_event_wait_meets_a_graph_launch_at_its_roots_and_last_end)
{
    graph_waits_steps(1, "kernel=X=1", 1000, "kernel=X=2", 1400);
    graph_waits_steps(0, "kernel=P=1", 1000, "kernel=P=0.5", 800);
}
END_TEST

START_TEST(selectors_parse_and_bad_ones_say_why)
{
    struct ct_cp_scale s;
    char err[300];
    ck_assert_int_eq(ct_cp_scale_parse("kernel=gemm*=0.5", &s, err, sizeof(err)), 0);
    ck_assert_int_eq(s.kind, CT_SEL_KERNEL);
    ck_assert(s.factor == 0.5);
    ck_assert_int_eq(ct_cp_scale_parse("op=AllReduce:1048576=0.25", &s, err, sizeof(err)), 0);
    ck_assert_int_eq(s.op, CT_NCCL_OP_ALLREDUCE);
    ck_assert_uint_eq(s.bytes, 1048576);
    ck_assert_int_eq(ct_cp_scale_parse("host=3=2", &s, err, sizeof(err)), 0);
    ck_assert_int_eq(s.kind, CT_SEL_HOST);
    ck_assert_int_eq(s.rank, 3);
    ck_assert_int_eq(ct_cp_scale_parse("gpu=1=2", &s, err, sizeof(err)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "allowed"));
    ck_assert_int_eq(ct_cp_scale_parse("rank=x=2", &s, err, sizeof(err)), -EINVAL);
    ck_assert_int_eq(ct_cp_scale_parse("op=Foo=2", &s, err, sizeof(err)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "AllReduce"));
    ck_assert_int_eq(ct_cp_scale_parse("data=-1", &s, err, sizeof(err)), -EINVAL);
    ck_assert_int_eq(ct_cp_scale_parse("data", &s, err, sizeof(err)), -EINVAL);
    ck_assert_int_eq(ct_cp_scale_parse("ckpt=0", &s, err, sizeof(err)), 0);
    ck_assert_int_eq(s.kind, CT_SEL_CKPT);
}
END_TEST

Suite *critical_path_suite(void)
{
    Suite *s = suite_create("critical_path");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, path_length_is_the_step_and_composition_is_exact);
    tcase_add_test(tc, path_edges_run_in_time_order_across_ranks);
    tcase_add_test(tc, unscaled_replay_reproduces_every_measured_time);
    tcase_add_test(tc, scaling_the_slow_rank_moves_the_path_to_the_other);
    tcase_add_test(tc, instant_loader_removes_the_data_wait);
    tcase_add_test(tc, grouped_send_and_recv_are_one_launch_not_a_cycle);
    tcase_add_test(tc, a_sync_does_not_take_its_latency_from_an_op_it_did_not_wait_for);
    tcase_add_test(tc, a_sync_waits_for_the_stream_or_event_it_names);
    tcase_add_test(tc, a_run_too_large_for_one_graph_is_cut_into_chunks);
    tcase_add_test(tc, selectors_parse_and_bad_ones_say_why);
    tcase_add_test(tc, a_replayed_graph_follows_its_own_edges);
    tcase_add_test(tc, an_event_wait_meets_a_graph_launch_at_its_roots_and_last_end);
    suite_add_tcase(s, tc);
    return s;
}
