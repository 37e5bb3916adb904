/*
 * Suite "salvaged": how the decoder reads a trace completed from a dead
 * process's live mapping (decoder/read/tracefile.c): the GPU ops whose GPU
 * time died with the process (CUPTI's buffers) are named, not idle; the
 * extraction says where the process's GPU record ends (read/extract_join.c
 * `undelivered`), and the report's GPU figures stop there (read/job.c
 * gcut, analysis/iterations.c ct_iterations_cut).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/read/extract.h"
#include "decoder/export/report_out.h"
#include "decoder/read/job.h"
#include "decoder/read/tracefile.h"
#include "src/live.h"
#include "src/recorder.h"
#include "src/salvage.h"
#include "tests/unit/helpers.h"
#include "tests/unit/timeline_builder.h"

static void launch(uint64_t corr, uint64_t t)
{
    uint64_t a[CT_API_NFIELDS] = {0};
    a[CT_API_START] = t;
    a[CT_API_END] = t + 10;
    a[CT_API_NAME] = ct_intern("cuLaunchKernel");
    a[CT_API_CORR] = corr;
    a[CT_API_FAMILY] = CT_FAM_LAUNCH;
    a[CT_API_STREAM] = 7;
    ck_assert_int_eq(ct_emit(CT_REC_API, CT_RF_NS, a, CT_API_NFIELDS), 0);
}

static void launch_on(uint64_t corr, uint64_t t, uint64_t stream)
{
    uint64_t a[CT_API_NFIELDS] = {0};
    a[CT_API_START] = t;
    a[CT_API_END] = t + 10;
    a[CT_API_NAME] = ct_intern("cuLaunchKernel");
    a[CT_API_CORR] = corr;
    a[CT_API_FAMILY] = CT_FAM_LAUNCH;
    a[CT_API_STREAM] = stream;
    ck_assert_int_eq(ct_emit(CT_REC_API, CT_RF_NS, a, CT_API_NFIELDS), 0);
}

static void gpu_on(uint64_t corr, uint64_t s, uint64_t e, uint64_t stream)
{
    uint64_t g[CT_GPU_NFIELDS] = {0};
    g[CT_GPU_START] = s;
    g[CT_GPU_END] = e;
    g[CT_GPU_CORR] = corr;
    g[CT_GPU_TYPE] = CT_GPU_KERNEL;
    g[CT_GPU_STREAM] = stream;
    g[CT_GPU_SOURCE] = CT_SRC_CUPTI;
    g[CT_GPU_NAME] = ct_intern("k");
    ck_assert_int_eq(ct_emit(CT_REC_GPU, CT_RF_NS, g, CT_GPU_NFIELDS), 0);
}

static void gpu(uint64_t corr, uint64_t t)
{
    uint64_t g[CT_GPU_NFIELDS] = {0};
    g[CT_GPU_START] = t;
    g[CT_GPU_END] = t + 50;
    g[CT_GPU_CORR] = corr;
    g[CT_GPU_TYPE] = CT_GPU_KERNEL;
    g[CT_GPU_STREAM] = 7;
    g[CT_GPU_SOURCE] = CT_SRC_CUPTI;
    ck_assert_int_eq(ct_emit(CT_REC_GPU, CT_RF_NS, g, CT_GPU_NFIELDS), 0);
}

/* The salvage of this process's mapping as it is now, written over path. */
static void salvage_into(const char *path)
{
    size_t mlen, flen;
    uint8_t *map = th_read_file(ct_live_where_path(), &mlen);
    uint8_t *file = th_read_file(path, &flen);
    ck_assert(map && file);
    struct ct_live_map m;
    struct ct_salvage s;
    char err[256];
    ck_assert_int_eq(ct_live_map_mem(&m, map, mlen), 0);
    ck_assert_int_eq(ct_salvage_build(&m, (int64_t)flen, 0, &s, err, sizeof(err)), 0);
    size_t n = (size_t)s.prefix_len + s.tail.len;
    uint8_t *all = malloc(n);
    memcpy(all, file, (size_t)s.prefix_len);
    memcpy(all + s.prefix_len, s.tail.p, s.tail.len);
    char out[600];
    snprintf(out, sizeof(out), "%s.salvaged", path);
    ck_assert_int_eq(th_write_file(out, all, n), 0);
    ck_assert_int_eq(rename(out, path), 0);
    free(all);
    ct_salvage_free(&s);
    free(map);
    free(file);
}

START_TEST(ops_launched_after_the_last_delivered_one_are_untimed_not_idle)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    ck_assert_int_eq(th_start(path, 1 << 16, 60000), 0);
    ct_live_gpu_mode(1); /* GPU times come from CUPTI: they wait in its buffers */
    /* launches 1..10 every 100 us from t0; CUPTI delivered 1, 2, 4..7 (3:
     * an op it never timed, as happens); 8..10 were in its buffers at the
     * kill */
    const uint64_t t0 = 5000000000ull;
    for (uint64_t c = 1; c <= 10; c++)
        launch(c, t0 + c * 100000);
    for (uint64_t c = 1; c <= 7; c++)
        if (c != 3)
            gpu(c, t0 + c * 100000 + 20000);
    ck_assert_int_eq(ct_recorder_flush(5000), 0);
    ct_recorder_pause_writer(1);
    launch(11, t0 + 11 * 100000); /* in the ring alone at the kill */
    salvage_into(path);
    struct ct_trace t;
    char err[512];
    ck_assert_int_eq(ct_trace_load(&t, path, 1, err, sizeof(err)), 0);
    ck_assert(t.rd.salvaged && (t.rd.salvage.flags & CT_SALVAGE_GPU_PENDING));
    uint64_t n;
    int64_t from;
    ck_assert_int_eq(ct_trace_undelivered(&t, &n, &from), 0);
    ck_assert_uint_eq(n, 4); /* 8, 9, 10, 11: after 7, the last delivered */
    ck_assert_int_eq(from, (int64_t)(t0 + 8 * 100000));
    ct_trace_free(&t);
    ct_recorder_pause_writer(0);
    ct_recorder_stop(5000);
}
END_TEST

START_TEST(without_gpu_times_queued_in_the_process_nothing_is_undelivered)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    ck_assert_int_eq(th_start(path, 1 << 16, 60000), 0);
    /* GPU timing off: no GPU record was ever coming */
    for (uint64_t c = 1; c <= 5; c++)
        launch(c, 5000000000ull + c * 100000);
    ct_recorder_pause_writer(1);
    salvage_into(path);
    struct ct_trace t;
    char err[512];
    ck_assert_int_eq(ct_trace_load(&t, path, 1, err, sizeof(err)), 0);
    ck_assert(t.rd.salvaged && !(t.rd.salvage.flags & CT_SALVAGE_GPU_PENDING));
    uint64_t n;
    int64_t from;
    ck_assert_int_eq(ct_trace_undelivered(&t, &n, &from), 0);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(from, INT64_MAX);
    ct_trace_free(&t);
    ct_recorder_pause_writer(0);
    ct_recorder_stop(5000);
}
END_TEST

/*
 * Where the GPU record of a salvaged process ends, from its trace. Each
 * stream runs in order, so an op with no GPU record launched after the
 * last delivered one of its stream never had its time delivered: op 3
 * (stream 7, launched at 300 us, after op 1), op 4 (stream 9, at 400 us,
 * after op 2) and op 6 (stream 11, at 180 us, after op 5: a kernel still
 * running at the kill, though op 2 on another stream was launched and
 * delivered after it). Op 7 (stream 13, at 110 us) was never timed on a
 * stream nothing timed, before the last delivery: an ordinary untimed op.
 * The earliest each can have run: op 3 after op 1 ended (1150 us), op 4
 * at its launch (400; op 2 ended at 260), op 6 at its launch (180; op 5
 * ended at 140). So the record is whole on the host until 180 us and on
 * the GPU until 180 us.
 */
START_TEST(the_gpu_record_ends_where_an_undelivered_op_could_first_run)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    ck_assert_int_eq(th_start(path, 1 << 16, 60000), 0);
    ct_live_gpu_mode(1);
    const uint64_t t0 = 5000000000ull, us = 1000;
    launch_on(1, t0 + 100 * us, 7);
    launch_on(2, t0 + 200 * us, 9);
    launch_on(3, t0 + 300 * us, 7);
    launch_on(4, t0 + 400 * us, 9);
    launch_on(5, t0 + 120 * us, 11);
    launch_on(6, t0 + 180 * us, 11);
    launch_on(7, t0 + 110 * us, 13);
    gpu_on(1, t0 + 150 * us, t0 + 1150 * us, 7);
    gpu_on(2, t0 + 250 * us, t0 + 260 * us, 9);
    gpu_on(5, t0 + 130 * us, t0 + 140 * us, 11);
    ck_assert_int_eq(ct_recorder_flush(5000), 0);
    ct_recorder_pause_writer(1);
    salvage_into(path);
    struct ct_proc p;
    char err[512];
    ck_assert_msg(ct_proc_extract_file(path, NULL, &p, err, sizeof(err)) == 0, "%s", err);
    ck_assert_uint_eq(p.undelivered, 3);
    ck_assert_uint_eq(p.cov.untimed, 4);
    ck_assert_int_eq(p.host_cut - p.clock_offset, (int64_t)(t0 + 180 * us));
    ck_assert_int_eq(p.gpu_cut - p.clock_offset, (int64_t)(t0 + 180 * us));
    ct_proc_free(&p);
    /* what `cutrace info` says: the same ops */
    struct ct_trace t;
    ck_assert_int_eq(ct_trace_load(&t, path, 1, err, sizeof(err)), 0);
    uint64_t n;
    int64_t from;
    ck_assert_int_eq(ct_trace_undelivered(&t, &n, &from), 0);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(from, (int64_t)(t0 + 180 * us));
    ct_trace_free(&t);
    ct_recorder_pause_writer(0);
    ct_recorder_stop(5000);
}
END_TEST

/*
 * A rank whose process was killed with a GPU op's time in CUPTI's buffers:
 *   stream 1: K1 [100,200) launched at 50, K2 [300,400) at 60,
 *             K3 [400,500) at 70 (all delivered)
 *   stream 2: an op launched at 250, never delivered (it may have run from
 *             250 on: extraction's gpu_cut 250, host_cut 250)
 *   steps:    #1 [40,55) launches K1; #2 [58,260) launches K2, K3 and the
 *             undelivered op
 * The GPU figures stop at 250: covered [100,250) = 150 of the 400 us span,
 * compute [100,200) = 100, idle [200,250) = 50, all of it attributed; the
 * gap [250,300), where the undelivered op may have run, is not idle. Step
 * 2 launched the undelivered op: not an iteration (goodput still counts
 * it). Without the cut (the same rank, its loss not said) idle is 100: the
 * figure this guards against.
 */
static void killed_rank(struct ct_job *job, int said)
{
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    tb_kernel(p, "k", 1, 100, 200, 50);
    tb_kernel(p, "k", 1, 300, 400, 60);
    tb_kernel(p, "k", 1, 400, 500, 70);
    tb_launch(p, 250);
    tb_range(p, 40, 55, 1);
    tb_range(p, 58, 260, 2);
    p->cov.untimed = 1;
    p->cov.gpu_cupti = 3;
    p->life.salvaged = 1;
    if (said) {
        p->undelivered = 1;
        p->host_cut = p->gpu_cut = TB_US(250);
    }
    tb_build(&b, job);
}

START_TEST(time_after_the_salvage_cut_is_not_covered_never_idle)
{
    struct ct_job job;
    struct ct_report rep;
    killed_rank(&job, 1);
    tb_analyze(&job, NULL, &rep);
    const struct ct_rank_result *x = tb_result(&rep, 0);
    ck_assert_int_eq(x->we - x->ws, TB_US(400));
    ck_assert_int_eq(x->covered, TB_US(150));
    ck_assert_int_eq(x->compute, TB_US(100));
    ck_assert_int_eq(x->busy, TB_US(100));
    ck_assert_int_eq(x->idle, TB_US(50));
    const struct ct_attribution *a = &x->at;
    ck_assert_int_eq(a->bubble_idle + a->data_stall + a->ckpt_idle + a->cuda_call + a->sync_drain +
                         a->launch_overhead + a->unexplained,
                     TB_US(50));
    ck_assert_uint_eq(x->niters, 1);
    ck_assert_int_eq(x->iters[0].index, 1);
    ck_assert_uint_eq(x->iters_cut, 1);
    ck_assert_uint_eq(x->nall_iters, 2);
    ck_assert_int_eq(x->all_iters[1].index, 2);
    /* said: a material coverage fact and an unavailable figure */
    struct ct_cov_fact f;
    ck_assert(ct_coverage_fact(x->rank, 0, &f));
    ck_assert_int_eq(f.kind, CT_COVF_UNDELIVERED);
    ck_assert_uint_eq(f.count, 1);
    ck_assert_uint_eq(f.of, 4);
    ck_assert_int_eq(f.gpu_from, TB_US(250) + x->rank->skew_ns);
    ck_assert(!ct_coverage_fact(x->rank, 1, &f)); /* not also "untimed": it is past the cut */
    ck_assert(ct_figure_unavailable(x, "gpu_after_salvage_cut"));
    ct_report_free(&rep);
    ct_job_free(&job);

    killed_rank(&job, 0);
    tb_analyze(&job, NULL, &rep);
    x = tb_result(&rep, 0);
    ck_assert_int_eq(x->covered, TB_US(400));
    ck_assert_int_eq(x->idle, TB_US(100));
    ck_assert_uint_eq(x->niters, 2);
    ck_assert(!ct_figure_unavailable(x, "gpu_after_salvage_cut"));
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * A restarted rank: attempt 0 (killed, its record cut at 250) and attempt
 * 1 (a new process, first GPU op at 1000). The uncovered span ends where
 * attempt 1's GPU work begins: attempt 1's figures are whole. Covered:
 * [100,250) and [1000,1100); busy 100 + 100; idle 50 + 0.
 */
START_TEST(the_cut_ends_where_the_next_attempt_begins)
{
    struct tb_job b;
    struct ct_job job;
    struct ct_report rep;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    tb_kernel(p, "k", 1, 100, 200, 50);
    tb_kernel(p, "k", 1, 300, 400, 60);
    tb_launch(p, 250);
    p->undelivered = 1;
    p->host_cut = p->gpu_cut = TB_US(250);
    p->life.salvaged = 1;
    struct ct_proc *q = tb_proc(&b, 0);
    tb_kernel(q, "k", 1, 1000, 1100, 990);
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    const struct ct_rank_result *x = tb_result(&rep, 0);
    ck_assert_uint_eq(x->rank->gcut.n, 1);
    ck_assert_int_eq(x->rank->gcut.v[0].e - x->rank->gcut.v[0].s, TB_US(750));
    ck_assert_int_eq(x->covered, TB_US(250));
    ck_assert_int_eq(x->busy, TB_US(200));
    ck_assert_int_eq(x->idle, TB_US(50));
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * A process killed before any of its GPU work was delivered past its first
 * op's start: the cut (100) is the first GPU start, nothing is covered.
 * Every share has no denominator: "-" in text, the time figures 0 of 0
 * (never a negative idle), and the report says why.
 */
START_TEST(a_rank_cut_at_its_first_gpu_op_has_no_covered_time)
{
    struct tb_job b;
    struct ct_job job;
    struct ct_report rep;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    tb_kernel(p, "k", 2, 100, 200, 50);
    tb_launch(p, 60);
    p->undelivered = 1;
    p->host_cut = TB_US(60);
    p->gpu_cut = TB_US(100); /* stream 1's op, launched at 60, could run from 100 on */
    p->life.salvaged = 1;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    const struct ct_rank_result *x = tb_result(&rep, 0);
    ck_assert_int_eq(x->covered, 0);
    ck_assert_int_eq(x->idle, 0);
    ck_assert_int_eq(x->compute, 0);
    char *out = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&out, &n);
    ct_report_text(f, &rep);
    fclose(f);
    /* the rank's row: window 0, every share "-" */
    const char *row = strstr(out, "\n  0     h");
    ck_assert_msg(row != NULL, "%s", out);
    ck_assert_msg(strstr(row, "0.000       -       -       -       -") != NULL, "%s", row);
    ck_assert_msg(strstr(out, "its GPU figures end at") != NULL, "%s", out);
    free(out);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

Suite *salvaged_suite(void)
{
    Suite *s = suite_create("salvaged");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, ops_launched_after_the_last_delivered_one_are_untimed_not_idle);
    tcase_add_test(tc, without_gpu_times_queued_in_the_process_nothing_is_undelivered);
    tcase_add_test(tc, the_gpu_record_ends_where_an_undelivered_op_could_first_run);
    tcase_add_test(tc, time_after_the_salvage_cut_is_not_covered_never_idle);
    tcase_add_test(tc, the_cut_ends_where_the_next_attempt_begins);
    tcase_add_test(tc, a_rank_cut_at_its_first_gpu_op_has_no_covered_time);
    suite_add_tcase(s, tc);
    return s;
}
