/* Suite "efficiency": GPM sample intervals attributed onto a rank's
 * window, iterations and kernel families (decoder/analysis/efficiency.c,
 * docs/efficiency.md), on hand-built ranks whose counter series are built
 * here as the shim records them (`gpm_interval` and the metrics stamped at
 * each interval's start, percentages in 0.01 %); the classification rule;
 * the reasons of a rank without figures. Times in µs; every expected value
 * is worked by hand in the comment beside it. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/analysis.h"
#include "decoder/analysis/efficiency.h"
#include "decoder/compare/diagnose.h"
#include "decoder/export/efficiency_out.h"
#include "decoder/read/counters.h"
#include "decoder/read/job.h"
#include "tests/unit/gpm_series.h"
#include "tests/unit/timeline_builder.h"

static const struct ct_eff_family *family(const struct ct_eff *e, const char *name)
{
    for (size_t k = 0; k < e->nfam; k++)
        if (!strcmp(e->fam[k].name, name))
            return &e->fam[k];
    ck_abort_msg("no family %s", name);
    return NULL;
}

#define NEAR(a, b) ck_assert_double_eq_tol((a), (b), 1e-6)

/*
 * Two steps [0,1000) [1000,2000) on stream 1: gemm [0,600) and ew
 * [600,1000), then gemm [1000,1600), ew [1600,1900), idle [1900,2000).
 * The device is sampled in four intervals of 500; their values are the
 * time-weighted truth of gemm (SM 90, tensor 60, DRAM 20) and ew (SM 50,
 * tensor 0, DRAM 80):
 *   I0 [0,500)     gemm 500:                tensor 60, DRAM 20, SM 90
 *   I1 [500,1000)  gemm 100, ew 400:        tensor 12, DRAM 68, SM 58
 *   I2 [1000,1500) gemm 500:                tensor 60, DRAM 20, SM 90
 *   I3 [1500,2000) gemm 100, ew 300, idle:  tensor 12, DRAM 52, SM 48
 * Busy fractions 1, 1, 1, 0.8 (I3: 400 of 500).
 */
static struct ct_proc *two_phases_rank(struct tb_job *bp, int rank)
{
    struct ct_proc *m = tb_proc(bp, rank);
    tb_range(m, 0, 1000, 0);
    tb_range(m, 1000, 2000, 1);
    tb_kernel(m, "gemm", 1, 0, 600, 0);
    tb_kernel(m, "ew", 1, 600, 1000, 1);
    tb_kernel(m, "gemm", 1, 1000, 1600, 1000);
    tb_kernel(m, "ew", 1, 1600, 1900, 1001);
    struct ct_hproc *h = tb_hp_new();
    tb_hp_add(h, 0, "gpm_supported", "flag", 0, 1);
    tb_gpm_interval(h, 0, 500, 90, 60, 20);
    tb_gpm_interval(h, 500, 500, 58, 12, 68);
    tb_gpm_interval(h, 1000, 500, 90, 60, 20);
    tb_gpm_interval(h, 1500, 500, 48, 12, 52);
    m->health = h;
    return m;
}

static void two_phases(struct ct_job *job, struct ct_report *rep)
{
    struct tb_job b;
    tb_init(&b);
    two_phases_rank(&b, 0);
    tb_build(&b, job);
    tb_analyze(job, NULL, rep);
}

START_TEST(families_take_each_interval_by_busy_share_while_busy)
{
    struct ct_job job;
    struct ct_report rep;
    two_phases(&job, &rep);
    const struct ct_eff *e = rep.rr[0].eff;
    ck_assert_ptr_nonnull(e);
    ck_assert_ptr_null(e->why);
    ck_assert_int_eq(e->device, 0);
    ck_assert_uint_eq(e->intervals, 4);
    NEAR(e->period_ns, 500e3);
    ck_assert_uint_eq(e->nfam, 2);
    /* gemm: pure in I0 and I2 (500 each), mixed in I1 and I3 (100 each):
     * attributed 1200, mixed 200. While busy: I3's 12 / 0.8 = 15, so
     * tensor (500*60 + 100*12 + 500*60 + 100*15) / 1200 = 52.25,
     * DRAM (500*20 + 100*68 + 500*20 + 100*65) / 1200 = 27.75,
     * SM (500*90 + 100*58 + 500*90 + 100*60) / 1200 = 84.8333... */
    const struct ct_eff_family *g = family(e, "gemm");
    ck_assert_str_eq(e->fam[0].name, "gemm"); /* by attributed time: 1200 before 700 */
    ck_assert_int_eq(g->busy, TB_US(1200));
    NEAR(g->attributed, 1200e3);
    NEAR(g->mixed, 200e3);
    NEAR(g->v[CT_EFF_TENSOR], 52.25);
    NEAR(g->v[CT_EFF_DRAM], 27.75);
    NEAR(g->v[CT_EFF_SM], 101800.0 / 1200);
    ck_assert_int_eq(g->cls, CT_EFF_TENSOR_BOUND);
    /* ew: only in the mixed I1 (400) and I3 (300): all 700 mixed, so its
     * figures are blends: tensor (400*12 + 300*15) / 700 = 13.2857..,
     * DRAM (400*68 + 300*65) / 700 = 66.714..: memory-bound by the values,
     * but all of it from mixed intervals: a blend, not classified */
    const struct ct_eff_family *w = family(e, "ew");
    NEAR(w->attributed, 700e3);
    NEAR(w->mixed, 700e3);
    NEAR(w->v[CT_EFF_TENSOR], 9300.0 / 700);
    NEAR(w->v[CT_EFF_DRAM], 46700.0 / 700);
    ck_assert_int_eq(ct_eff_classify(w->v), CT_EFF_MEMORY_BOUND);
    ck_assert_int_eq(w->cls, CT_EFF_BLEND);
    /* metrics never recorded are null, and said so */
    ck_assert(isnan(g->v[CT_EFF_OCC]));
    ck_assert_int_eq(e->metric_missing[CT_EFF_OCC], 1);
    ck_assert_int_eq(e->metric_missing[CT_EFF_TENSOR], 0);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

START_TEST(window_and_iterations_are_time_weighted_means)
{
    struct ct_job job;
    struct ct_report rep;
    two_phases(&job, &rep);
    const struct ct_rank_result *x = &rep.rr[0];
    const struct ct_eff *e = x->eff;
    /* window [0,1900): I3 counts for 400. Tensor
     * (500*60 + 500*12 + 500*60 + 400*12) / 1900 = 70800 / 1900; per busy
     * time the same over 500 + 500 + 500 + 400*0.8 = 1820 */
    ck_assert_int_eq(x->ws, TB_US(0));
    ck_assert_int_eq(x->we, TB_US(1900));
    NEAR(e->covered, 1900e3);
    NEAR(e->window[CT_EFF_TENSOR], 70800.0 / 1900);
    NEAR(e->busy[CT_EFF_TENSOR], 70800.0 / 1820);
    /* iterations: [0,1000) holds I0, I1: tensor (60 + 12) / 2 = 36, DRAM
     * (20 + 68) / 2 = 44; the second, to 2000, holds I2, I3: DRAM 36 */
    ck_assert_uint_eq(e->nit, 2);
    ck_assert_int_eq(e->it[0].s, TB_US(0));
    ck_assert_int_eq(e->it[0].e, TB_US(1000));
    NEAR(e->it[0].covered, 1000e3);
    NEAR(e->it[0].v[CT_EFF_TENSOR], 36);
    NEAR(e->it[0].v[CT_EFF_DRAM], 44);
    ck_assert_int_eq(e->it[1].index, 1);
    double len = (double)(e->it[1].e - e->it[1].s);
    ck_assert(len >= 900e3);
    /* over [1000, e): I2 (500 at 20) and I3's part up to e (at 52) */
    NEAR(e->it[1].v[CT_EFF_DRAM], (500e3 * 20 + (len - 500e3) * 52) / len);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

START_TEST(concurrent_families_share_the_busy_time)
{
    /* a [0,400) on stream 1 and b [200,500) on stream 2 in one interval
     * [0,500) of tensor 40: busy 500, raw 400 + 300 = 700, so a gets
     * 400 * 500 / 700 and b 300 * 500 / 700, both mixed, both at 40 */
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *m = tb_proc(&b, 0);
    tb_kernel(m, "a", 1, 0, 400, 0);
    tb_kernel(m, "b", 2, 200, 500, 1);
    struct ct_hproc *h = tb_hp_new();
    tb_gpm_interval(h, 0, 500, 80, 40, 30);
    m->health = h;
    struct ct_job job;
    struct ct_report rep;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    const struct ct_eff *e = rep.rr[0].eff;
    const struct ct_eff_family *fa = family(e, "a"), *fb = family(e, "b");
    NEAR(fa->attributed, 400e3 * 500 / 700);
    NEAR(fb->attributed, 300e3 * 500 / 700);
    NEAR(fa->mixed, fa->attributed);
    NEAR(fa->v[CT_EFF_TENSOR], 40);
    NEAR(fb->v[CT_EFF_TENSOR], 40);
    /* tensor 40, DRAM 30: no unit at half its time; but shared throughout */
    ck_assert_int_eq(ct_eff_classify(fa->v), CT_EFF_LATENCY_BOUND);
    ck_assert_int_eq(fa->cls, CT_EFF_BLEND);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* An all-reduce timed by NCCL's profiler plugin [400,500) and the kernel
 * NCCL launched for it, seen by CUPTI too ([400,500), nested: the same
 * work), beside a [0,400), in one interval [0,500): the work is a's 400
 * and the all-reduce's 100, not 100 twice (which gave a 400 * 500 / 600
 * and listed the kernel as a family of its own). */
START_TEST(a_collective_timed_twice_is_one_family)
{
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *m = tb_proc(&b, 0);
    tb_kernel(m, "a", 1, 0, 400, 0);
    tb_nccl(m, (struct tb_coll){.op = CT_NCCL_OP_ALLREDUCE,
                                .comm = 1,
                                .bytes = 1 << 20,
                                .comm_rank = 0,
                                .peer = -1,
                                .nranks = 1,
                                .stream = 2,
                                .s = 400,
                                .e = 500,
                                .launch = 390});
    tb_kernel(m, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 2, 400, 500, 391);
    m->ops[m->nops - 1].nested = 1;
    struct ct_hproc *h = tb_hp_new();
    tb_gpm_interval(h, 0, 500, 80, 40, 30);
    m->health = h;
    struct ct_job job;
    struct ct_report rep;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    const struct ct_eff *e = rep.rr[0].eff;
    NEAR(family(e, "a")->attributed, 400e3);
    for (size_t k = 0; k < e->nfam; k++) /* the kernel is no family of its own */
        ck_assert_str_ne(e->fam[k].name, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

START_TEST(the_job_merges_families_over_ranks_by_attributed_time)
{
    /* rank 0 as above (gemm: 1200 attributed, 200 mixed, tensor 52.25,
     * DRAM 27.75); rank 1 runs gemm alone in one interval [0,500) at
     * tensor 40, DRAM 20. The job's gemm: attributed 1700, mixed
     * 200/1700 = 11.76 %, tensor (52.25*1200 + 40*500) / 1700 = 48.65,
     * DRAM (27.75*1200 + 20*500) / 1700 = 25.47: no unit at half its
     * time, latency-bound, though rank 0's own gemm is tensor-bound */
    struct tb_job b;
    tb_init(&b);
    two_phases_rank(&b, 0);
    struct ct_proc *p1 = tb_proc(&b, 1);
    tb_kernel(p1, "gemm", 1, 0, 500, 0);
    struct ct_hproc *h = tb_hp_new();
    tb_gpm_interval(h, 0, 500, 90, 40, 20);
    p1->health = h;
    struct ct_job job;
    struct ct_report rep;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    ct_efficiency_job_json(f, &rep);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "{\"name\":\"gemm\",\"busy_us\":1700.000,\"attributed_us\":"
                                      "1700.000,\"mixed_pct\":11.76,\"sm_active_pct\":"));
    const char *g = strstr(buf, "\"name\":\"gemm\"");
    ck_assert_ptr_nonnull(strstr(g, "\"tensor_active_pct\":48.65,\"dram_bw_pct\":25.47,"));
    ck_assert_ptr_nonnull(strstr(g, "\"class\":\"latency_bound\"}"));
    /* gemm (1700) before ew (700) */
    const char *ew = strstr(buf, "\"name\":\"ew\"");
    ck_assert(ew && g < ew);
    free(buf);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

static const struct ct_finding *find_kind(const struct ct_diagnosis *d, int kind, size_t *n)
{
    const struct ct_finding *f = NULL;
    *n = 0;
    for (size_t i = 0; i < d->nf; i++)
        if (d->f[i].kind == kind && (*n)++ == 0)
            f = &d->f[i];
    return f;
}

static double ev(const struct ct_finding *f, const char *key)
{
    for (size_t k = 0; k < f->nev; k++)
        if (!strcmp(f->ev[k].key, key))
            return f->ev[k].num;
    ck_abort_msg("no evidence %s", key);
    return NAN;
}

START_TEST(diagnose_names_a_gemm_without_tensor_activity_and_a_memory_bound_phase)
{
    /* One interval per family, none shared: gemm [0,1000) in [0,1000) at
     * tensor 20, DRAM 30: a GEMM at a fifth of its tensor time, 51 % of
     * the kernel time (1000 of 1000 + 900 + 50): low_tensor_activity.
     * ew [1000,1900) in [1000,2000) at DRAM 85 over the interval, 85 / 0.9
     * = 94.4 while busy: memory-bound, 46 %: memory_bound_phase. small
     * [2000,2050) in [2000,2100), memory-bound too, but 2.6 % of the
     * kernel time: nothing. Savings unquantified (null), confidence the
     * seen share (1) times the unmixed share (1), at most 0.95. */
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *m = tb_proc(&b, 0);
    tb_kernel(m, "gemm", 1, 0, 1000, 0);
    tb_kernel(m, "ew", 1, 1000, 1900, 1);
    tb_kernel(m, "small", 1, 2000, 2050, 2);
    struct ct_hproc *h = tb_hp_new();
    tb_gpm_interval(h, 0, 1000, 80, 20, 30);
    tb_gpm_interval(h, 1000, 1000, 50, 0, 85);
    tb_gpm_interval(h, 2000, 100, 5, 0, 4.5);
    m->health = h;
    struct ct_job job;
    struct ct_report rep;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    struct ct_diag_opts o = {.min_saving = 0.02};
    struct ct_diagnosis *d = calloc(1, sizeof(*d));
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(ct_diagnose(&rep, &o, d), 0);
    size_t n;
    const struct ct_finding *t = find_kind(d, CT_FK_LOW_TENSOR, &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(t->nranks, 1);
    ck_assert_int_eq(t->ranks[0], 0);
    ck_assert(isnan(t->saving_us));
    NEAR(t->confidence, 0.95);
    NEAR(ev(t, "tensor_active_pct"), 20);
    NEAR(ev(t, "kernel_time_share_pct"), 100.0 * 1000 / 1950);
    const struct ct_finding *w = find_kind(d, CT_FK_MEMORY_PHASE, &n);
    ck_assert_uint_eq(n, 1); /* ew, not small */
    NEAR(ev(w, "dram_bw_pct"), 85 / 0.9);
    ck_assert_ptr_nonnull(strstr(w->summary, "ew (46% of the kernel time) is memory-bound"));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ct_diagnosis_json(f, d, o.min_saving);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "\"kind\":\"low_tensor_activity\",\"ranks\":[0],"
                                      "\"saving_us\":null,\"saving_pct\":null,"
                                      "\"saving_from\":\"unquantified\""));
    free(buf);
    ct_diagnosis_free(d);
    free(d);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* A rank with kernels and the given counters (NULL: none). */
static const char *why_of(struct ct_hproc *h, const char *status, int *listed)
{
    static char buf[256];
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *m = tb_proc(&b, 0);
    tb_kernel(m, "k", 1, 0, 100, 0);
    if (h && status)
        snprintf(h->status, sizeof(h->status), "%s", status);
    m->health = h;
    struct ct_job job;
    struct ct_report rep;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    const struct ct_eff *e = rep.rr[0].eff;
    ck_assert_ptr_nonnull(e);
    ck_assert_ptr_nonnull(e->why);
    ck_assert_uint_eq(e->nfam, 0);
    ck_assert(isnan(e->window[CT_EFF_SM]));
    snprintf(buf, sizeof(buf), "%s", e->why);
    *listed = ct_figure_unavailable(&rep.rr[0], "efficiency");
    ct_report_free(&rep);
    ct_job_free(&job);
    return buf;
}

/*
 * The kernels of two_phases_rank on a device sampled by both sources: GPM
 * intervals of 500 (stamped 1 after the kernels' boundaries, with blended
 * values as there) and CUPTI PM samples every 100 (pm_interval). The PM
 * samples fall on the kernels' boundaries (600, 1000, 1600, 1900 are
 * multiples of 100), so each is one family's truth: gemm SM 90, tensor
 * 60, DRAM 20; ew SM 50, tensor 0, DRAM 80; [1900, 2000) idle, all 0. The
 * figures must rest on the PM samples alone. (The shim never records both
 * on one device at once: GPM leaves a PM-sampled device alone; a trace may
 * still hold both, GPM before PM started, or from another recorder.)
 */
START_TEST(pm_samples_are_used_where_a_device_has_both_sources)
{
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *m = tb_proc(&b, 0);
    tb_range(m, 0, 1000, 0);
    tb_range(m, 1000, 2000, 1);
    tb_kernel(m, "gemm", 1, 0, 600, 0);
    tb_kernel(m, "ew", 1, 600, 1000, 1);
    tb_kernel(m, "gemm", 1, 1000, 1600, 1000);
    tb_kernel(m, "ew", 1, 1600, 1900, 1001);
    struct ct_hproc *h = tb_hp_new();
    tb_hp_add(h, 0, "gpm_supported", "flag", 0, 1);
    tb_gpm_interval(h, 1, 500, 90, 60, 20);
    tb_gpm_interval(h, 501, 500, 58, 12, 68);
    tb_gpm_interval(h, 1001, 500, 90, 60, 20);
    tb_gpm_interval(h, 1501, 499, 48, 12, 52);
    tb_hp_add(h, 0, "pm_supported", "flag", 0, 1);
    for (int64_t t = 0; t < 2000; t += 100) {
        int gemm = t < 600 || (t >= 1000 && t < 1600), ew = !gemm && t < 1900;
        tb_pm_sample(h, t, 100, gemm ? 90 : ew ? 50 : 0, gemm ? 60 : 0, gemm ? 20 : ew ? 80 : 0);
    }
    tb_hp_sort(h);
    m->health = h;
    struct ct_job job;
    struct ct_report rep;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    const struct ct_eff *e = rep.rr[0].eff;
    ck_assert_ptr_null(e->why);
    ck_assert_int_eq(e->source, CT_EFF_SRC_PM);
    ck_assert_uint_eq(e->intervals, 19); /* [0,1900) of the window */
    NEAR(e->period_ns, 100e3);
    const struct ct_eff_family *g = family(e, "gemm"), *w = family(e, "ew");
    NEAR(g->v[CT_EFF_TENSOR], 60);
    NEAR(g->v[CT_EFF_DRAM], 20);
    NEAR(g->v[CT_EFF_SM], 90);
    NEAR(g->mixed, 0);
    NEAR(w->v[CT_EFF_TENSOR], 0);
    NEAR(w->v[CT_EFF_DRAM], 80);
    NEAR(w->mixed, 0);
    /* no longer a blend: the finer samples see the phases apart */
    ck_assert_int_eq(w->cls, CT_EFF_MEMORY_BOUND);
    ck_assert_int_eq(g->cls, CT_EFF_TENSOR_BOUND);
    /* window [0,1900): tensor 60 over 1200 of it */
    NEAR(e->window[CT_EFF_TENSOR], 60.0 * 1200 / 1900);
    /* the source, said in the JSON and the text */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    ct_efficiency_json(f, &rep, 0);
    ct_efficiency_text(f, &rep);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "\"efficiency\":{\"source\":\"cupti_pm_sampling\","));
    ck_assert_ptr_nonnull(strstr(buf, "GPU efficiency (CUPTI PM sampling;"));
    ck_assert_ptr_nonnull(strstr(buf, "19 intervals of 0.1 ms (CUPTI PM sampling)"));
    free(buf);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

START_TEST(no_pm_figures_say_pm_samplings_reason_unless_gpm_has_some)
{
    int listed = 0;
    struct ct_hproc *h = tb_hp_new();
    tb_hp_add(h, 0, "pm_supported", "flag", 0, 0); /* a pre-Turing part */
    ck_assert_ptr_nonnull(strstr(why_of(h, NULL, &listed), "does not support CUPTI PM sampling"));
    ck_assert_int_eq(listed, 1);
    h = tb_hp_new();
    tb_hp_add(h, 0, "pm_supported", "flag", 0, -1); /* another profiler holds CUPTI */
    ck_assert_ptr_nonnull(strstr(why_of(h, NULL, &listed), "CUPTI PM sampling not taken"));
    h = tb_hp_new();
    tb_hp_add(h, 0, "pm_supported", "flag", 0, -3);
    ck_assert_ptr_nonnull(strstr(why_of(h, NULL, &listed), "no PM sampling API"));
    h = tb_hp_new();
    tb_hp_add(h, 0, "pm_supported", "flag", 0, -2);
    ck_assert_ptr_nonnull(strstr(why_of(h, NULL, &listed), "step failed"));
    h = tb_hp_new();
    tb_hp_add(h, 0, "pm_supported", "flag", 0, 1); /* sampling, the run ended first */
    ck_assert_ptr_nonnull(strstr(why_of(h, NULL, &listed), "no CUPTI PM sample in the window"));
    /* PM refused, GPM sampled: the GPM figures */
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *m = two_phases_rank(&b, 0);
    tb_hp_add(m->health, 0, "pm_supported", "flag", 0, 0);
    struct ct_job job;
    struct ct_report rep;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    ck_assert_ptr_null(rep.rr[0].eff->why);
    ck_assert_int_eq(rep.rr[0].eff->source, CT_EFF_SRC_GPM);
    ck_assert_uint_eq(rep.rr[0].eff->intervals, 4);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

START_TEST(no_figures_without_gpm_and_the_reason_says_why)
{
    int listed = 0;
    ck_assert_ptr_nonnull(strstr(why_of(NULL, NULL, &listed), "the trace has no counters"));
    ck_assert_int_eq(listed, 1);
    struct ct_hproc *h = tb_hp_new();
    tb_hp_add(h, 0, "gpm_supported", "flag", 0, 0); /* an older GPU */
    ck_assert_ptr_nonnull(strstr(why_of(h, NULL, &listed), "does not support GPM"));
    ck_assert_int_eq(listed, 1);
    h = tb_hp_new();
    tb_hp_add(h, 0, "gpm_supported", "flag", 0, -1); /* an older driver */
    ck_assert_ptr_nonnull(strstr(why_of(h, NULL, &listed), "NVML has no GPM functions"));
    h = tb_hp_new();
    tb_hp_add(h, -1, "cpu_time", "ms", 0, 1); /* host counters only: NVML missing */
    ck_assert_ptr_nonnull(
        strstr(why_of(h, "unavailable: NVML not loadable (x)", &listed), "NVML was not loadable"));
    h = tb_hp_new();
    tb_hp_add(h, 0, "sm_clock", "MHz", 0, 1980); /* health counters, GPM off */
    ck_assert_ptr_nonnull(strstr(why_of(h, "nvml", &listed), "CUTRACE_GPM_MS=0"));
    h = tb_hp_new();
    tb_hp_add(h, 0, "gpm_supported", "flag", 0, 1); /* supported, the run ended first */
    ck_assert_ptr_nonnull(strstr(why_of(h, "nvml", &listed), "no GPM sample interval"));
}
END_TEST

START_TEST(the_busiest_unit_at_half_its_time_or_more_bounds_the_work_unless_mostly_mixed)
{
    double v[CT_EFF_N];
    for (int m = 0; m < CT_EFF_N; m++)
        v[m] = NAN;
    ck_assert_int_eq(ct_eff_classify(v), CT_EFF_UNCLASSIFIED);
    v[CT_EFF_TENSOR] = 49.99;
    v[CT_EFF_DRAM] = 49.99;
    ck_assert_int_eq(ct_eff_classify(v), CT_EFF_LATENCY_BOUND);
    v[CT_EFF_TENSOR] = 50; /* at the threshold, and a tie goes to tensor */
    v[CT_EFF_DRAM] = 50;
    ck_assert_int_eq(ct_eff_classify(v), CT_EFF_TENSOR_BOUND);
    v[CT_EFF_DRAM] = 50.01;
    ck_assert_int_eq(ct_eff_classify(v), CT_EFF_MEMORY_BOUND);
    v[CT_EFF_TENSOR] = 10;
    v[CT_EFF_DRAM] = 20;
    v[CT_EFF_FP32] = 60; /* the CUDA cores: FP32 busy 60 % */
    ck_assert_int_eq(ct_eff_classify(v), CT_EFF_COMPUTE_BOUND);
    v[CT_EFF_DRAM] = NAN;
    ck_assert_int_eq(ct_eff_classify(v), CT_EFF_UNCLASSIFIED);
    /* a family: classified up to half its time mixed, a blend past it */
    struct ct_eff_family f = {.attributed = 1000, .mixed = 500};
    memcpy(f.v, v, sizeof(v));
    f.v[CT_EFF_DRAM] = 20;
    ck_assert_int_eq(ct_eff_family_class(&f), CT_EFF_COMPUTE_BOUND);
    f.mixed = 500.001;
    ck_assert_int_eq(ct_eff_family_class(&f), CT_EFF_BLEND);
    f.attributed = f.mixed = 0;
    ck_assert_int_eq(ct_eff_family_class(&f), CT_EFF_UNCLASSIFIED);
}
END_TEST

Suite *efficiency_suite(void)
{
    Suite *s = suite_create("efficiency");
    TCase *t = tcase_create("efficiency");
    tcase_set_timeout(t, 10);
    tcase_add_test(t, families_take_each_interval_by_busy_share_while_busy);
    tcase_add_test(t, window_and_iterations_are_time_weighted_means);
    tcase_add_test(t, concurrent_families_share_the_busy_time);
    tcase_add_test(t, a_collective_timed_twice_is_one_family);
    tcase_add_test(t, the_job_merges_families_over_ranks_by_attributed_time);
    tcase_add_test(t, diagnose_names_a_gemm_without_tensor_activity_and_a_memory_bound_phase);
    tcase_add_test(t, no_figures_without_gpm_and_the_reason_says_why);
    tcase_add_test(t, pm_samples_are_used_where_a_device_has_both_sources);
    tcase_add_test(t, no_pm_figures_say_pm_samplings_reason_unless_gpm_has_some);
    tcase_add_test(t,
                   the_busiest_unit_at_half_its_time_or_more_bounds_the_work_unless_mostly_mixed);
    suite_add_tcase(s, t);
    return s;
}
