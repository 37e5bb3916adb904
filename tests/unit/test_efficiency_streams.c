/* Suite "efficiency_streams": the per-stream attribution of GPM samples,
 * the link traffic of a rank's collectives and the NVLink finding
 * (decoder/analysis/efficiency_streams.c, decoder/analysis/platforms.c,
 * decoder/compare/diagnose_efficiency.c; docs/efficiency.md), and the GPM
 * columns of the rows, on hand-built ranks. Times in µs; every expected
 * value is worked by hand in the comment beside it. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/analysis.h"
#include "decoder/analysis/efficiency.h"
#include "decoder/analysis/platforms.h"
#include "decoder/compare/diagnose.h"
#include "decoder/compare/runs.h"
#include "decoder/export/efficiency_out.h"
#include "decoder/export/html_int.h"
#include "decoder/read/counters.h"
#include "decoder/read/facts.h"
#include "decoder/read/job.h"
#include "tests/unit/gpm_series.h"
#include "tests/unit/timeline_builder.h"

#define NEAR(a, b) ck_assert_double_eq_tol((a), (b), 1e-6)

static const struct ct_finding *find_kind(const struct ct_diagnosis *d, int kind, size_t *n)
{
    const struct ct_finding *f = NULL;
    *n = 0;
    for (size_t i = 0; i < d->nf; i++)
        if (d->f[i].kind == kind) {
            f = f ? f : &d->f[i];
            (*n)++;
        }
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

/* The recorded device name of process m (its facts' "device.name"). */
static void device_name(struct ct_proc *m, const char *name)
{
    struct ct_trace_facts *f = calloc(1, sizeof(*f));
    ck_assert_ptr_nonnull(f);
    f->rank = -1;
    f->meta = calloc(1, sizeof(*f->meta));
    ck_assert_ptr_nonnull(f->meta);
    f->meta[0].key = strdup("device.name");
    f->meta[0].value = strdup(name);
    f->nmeta = 1;
    m->facts = f;
}

static const struct ct_eff_stream *stream_of(const struct ct_eff *e, uint32_t s)
{
    for (size_t k = 0; k < e->nstr; k++)
        if (e->str[k].stream == s)
            return &e->str[k];
    ck_abort_msg("no stream %u", s);
    return NULL;
}

START_TEST(an_interval_is_the_stream_s_that_did_nine_tenths_of_its_work)
{
    /* Intervals of 1000 (values: SM, tensor, DRAM over the interval):
     *   I0 [0,1000)     s1 a 1000:                    s1 (all)      80 60 20
     *   I1 [1000,2000)  s1 a 950, s2 b 50:            s1 (0.95)     70 50 30
     *   I2 [2000,3000)  s1 a 500, s2 b 500, s3 c 10:  nobody        10 10 10
     *   I3 [3000,4000)  s2 b 800, idle 200:           s2 (all)      40  0 64
     *   I4 [4000,5000)  s1 a 900 and s2 b 100 at once
     *                   (per-stream sum 1000, B 900): s1 (0.9: at the threshold)
     *                                                               90 45 18
     * s1: I0, I1, I4 with weights |B ∩ I| 1000, 1000, 900 at their while-
     * busy values (I4 / 0.9: SM 100, tensor 50, DRAM 20): tensor
     * (60000 + 50000 + 45000) / 2900, SM (80000 + 70000 + 90000) / 2900,
     * DRAM (20000 + 30000 + 18000) / 2900; own time 1000 + 950 + 900.
     * s2: I3 / 0.8: SM 50, tensor 0, DRAM 80: memory-bound. s3: none. */
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *m = tb_proc(&b, 0);
    tb_kernel(m, "a", 1, 0, 1950, 0);
    tb_kernel(m, "b", 2, 1950, 2000, 1);
    tb_kernel(m, "a", 1, 2000, 2500, 2);
    tb_kernel(m, "c", 3, 2000, 2010, 3);
    tb_kernel(m, "b", 2, 2500, 3800, 4);
    tb_kernel(m, "a", 1, 4000, 4900, 5);
    tb_kernel(m, "b", 2, 4000, 4100, 6);
    struct ct_hproc *h = tb_hp_new();
    tb_gpm_interval(h, 0, 1000, 80, 60, 20);
    tb_gpm_interval(h, 1000, 1000, 70, 50, 30);
    tb_gpm_interval(h, 2000, 1000, 10, 10, 10);
    tb_gpm_interval(h, 3000, 1000, 40, 0, 64);
    tb_gpm_interval(h, 4000, 1000, 90, 45, 18);
    m->health = h;
    struct ct_job job;
    struct ct_report rep;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    const struct ct_eff *e = rep.rr[0].eff;
    ck_assert_ptr_null(e->why);
    ck_assert_uint_eq(e->nstr, 3);
    ck_assert_uint_eq(e->str[0].stream, 1); /* by busy time: 3350, 1450, 10 */
    ck_assert_uint_eq(e->str[1].stream, 2);
    const struct ct_eff_stream *s1 = stream_of(e, 1), *s2 = stream_of(e, 2), *s3 = stream_of(e, 3);
    ck_assert_int_eq(s1->busy, TB_US(3350));
    ck_assert_uint_eq(s1->intervals, 3);
    NEAR(s1->attributed, 2900e3);
    NEAR(s1->own, 2850e3);
    NEAR(s1->v[CT_EFF_TENSOR], 155000.0 / 2900);
    NEAR(s1->v[CT_EFF_SM], 240000.0 / 2900);
    NEAR(s1->v[CT_EFF_DRAM], 68000.0 / 2900);
    ck_assert_int_eq(s1->cls, CT_EFF_TENSOR_BOUND);
    ck_assert_int_eq(s2->busy, TB_US(1450));
    ck_assert_uint_eq(s2->intervals, 1);
    NEAR(s2->attributed, 800e3);
    NEAR(s2->v[CT_EFF_SM], 50);
    NEAR(s2->v[CT_EFF_TENSOR], 0);
    NEAR(s2->v[CT_EFF_DRAM], 80);
    ck_assert_int_eq(s2->cls, CT_EFF_MEMORY_BOUND);
    ck_assert_uint_eq(s3->intervals, 0);
    ck_assert(isnan(s3->v[CT_EFF_TENSOR]));
    ck_assert_int_eq(s3->cls, CT_EFF_UNCLASSIFIED);
    /* the JSON: every stream, the one without an interval null with why */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ct_efficiency_json(f, &rep, 0);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "\"stream_dominance_pct\":90,\"streams\":[{\"stream\":1,"));
    ck_assert_ptr_nonnull(
        strstr(buf, "{\"stream\":3,\"busy_us\":10.000,\"intervals\":0,"
                    "\"attributed_us\":0.000,\"own_pct\":null,\"sm_active_pct\":null"));
    ck_assert_ptr_nonnull(strstr(buf, "\"class\":\"unclassified\",\"unavailable\":\"no sample "
                                      "interval where this stream did 90 %"));
    free(buf);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* NVLink and PCIe series of one interval, MiB/s (recorded in KiB/s). */
static void links(struct ct_hproc *h, int64_t s, double ntx, double nrx, double ptx, double prx)
{
    tb_hp_add(h, 0, "gpm_nvlink_tx", "KiB/s", TB_US(s), (int64_t)llround(ntx * 1024));
    tb_hp_add(h, 0, "gpm_nvlink_rx", "KiB/s", TB_US(s), (int64_t)llround(nrx * 1024));
    tb_hp_add(h, 0, "gpm_pcie_tx", "KiB/s", TB_US(s), (int64_t)llround(ptx * 1024));
    tb_hp_add(h, 0, "gpm_pcie_rx", "KiB/s", TB_US(s), (int64_t)llround(prx * 1024));
}

/* Rank `rank` of b: an all-reduce [0,950) then compute [950,1000) in I0
 * [0,1000), and an all-reduce [1000,1500) in I1 [1000,2000), on a device
 * named `name`; I0's NVLink tx, rx at ntx, nrx MiB/s, PCIe tx at ptx. */
static void coll_rank(struct tb_job *b, int rank, const char *name, double ntx, double nrx,
                      double ptx)
{
    struct ct_proc *m = tb_proc(b, rank);
    device_name(m, name);
    for (int k = 0; k < 2; k++)
        tb_nccl(m, (struct tb_coll){.op = CT_NCCL_OP_ALLREDUCE,
                                    .comm = 7,
                                    .seq = (uint64_t)k,
                                    .bytes = 1 << 30,
                                    .comm_rank = rank,
                                    .peer = -1,
                                    .nranks = 2,
                                    .stream = 2,
                                    .s = k ? 1000 : 0,
                                    .e = k ? 1500 : 950,
                                    .launch = k ? 990 : 0});
    tb_kernel(m, "k", 1, 950, 1000, 10);
    struct ct_hproc *h = tb_hp_new();
    tb_gpm_interval(h, 0, 1000, 20, 0, 20);
    links(h, 0, ntx, nrx, ptx, 0);
    tb_gpm_interval(h, 1000, 1000, 10, 0, 10);
    links(h, 1000, 1e5, 1e5, 0, 0);
    m->health = h;
}

START_TEST(the_collectives_link_rate_is_the_bytes_of_the_intervals_they_fill)
{
    /* I0: collectives 950 of 1000 (>= 0.9): NVLink tx 190000 MiB/s over
     * the interval moved 190000 * 1000 in 950 of collectives: 200000;
     * rx 95000 -> 100000; PCIe tx 950 -> 1000, rx 0. I1: 500 of 1000:
     * not theirs (its 1e5 not counted). Total 1450, seen 950, 1 interval.
     * Against the H100 SXM's 900 GB/s: 300000 MiB/s = 314.57 GB/s,
     * 34.95 %. */
    struct tb_job b;
    tb_init(&b);
    coll_rank(&b, 0, "NVIDIA H100 80GB HBM3", 190000, 95000, 950);
    struct ct_job job;
    struct ct_report rep;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    const struct ct_eff *e = rep.rr[0].eff;
    ck_assert_ptr_null(e->coll.why);
    ck_assert_int_eq(e->coll.total, TB_US(1450));
    NEAR(e->coll.seen, 950e3);
    ck_assert_uint_eq(e->coll.intervals, 1);
    ck_assert_double_eq_tol(e->coll.nvlink_tx, 200000, 1e-3); /* KiB/s rounding: 1e-3 MiB/s */
    ck_assert_double_eq_tol(e->coll.nvlink_rx, 100000, 1e-3);
    ck_assert_double_eq_tol(e->coll.pcie_tx, 1000, 1e-3);
    NEAR(e->coll.pcie_rx, 0);
    const struct ct_platform *p = NULL;
    ck_assert_double_eq_tol(ct_efficiency_nvlink_pct(e, &p), 300000 * 1048576.0 / 9e11 * 100, 1e-6);
    ck_assert_str_eq(p->label, "H100 SXM");
    ct_report_free(&rep);
    ct_job_free(&job);
    /* no NVLink series (a part without it): the rate is absent, said why */
    tb_init(&b);
    struct ct_proc *m = tb_proc(&b, 0);
    tb_kernel(m, "k", 1, 0, 50, 0);
    tb_nccl(m, (struct tb_coll){.op = CT_NCCL_OP_ALLREDUCE,
                                .comm = 7,
                                .bytes = 1 << 20,
                                .peer = -1,
                                .nranks = 2,
                                .stream = 2,
                                .s = 50,
                                .e = 1000,
                                .launch = 40});
    struct ct_hproc *h = tb_hp_new();
    tb_gpm_interval(h, 0, 1000, 20, 0, 20);
    m->health = h;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    e = rep.rr[0].eff;
    ck_assert_uint_eq(e->coll.intervals, 1);
    ck_assert(isnan(e->coll.nvlink_tx));
    ck_assert_ptr_nonnull(strstr(e->coll.why, "NVLink rates not given by the device"));
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

START_TEST(the_platform_table_knows_sxm_parts_by_their_recorded_names)
{
    ck_assert_str_eq(ct_platform_of("NVIDIA H100 80GB HBM3")->label, "H100 SXM");
    ck_assert_str_eq(ct_platform_of("NVIDIA H100 SXM5 80GB")->label, "H100 SXM");
    NEAR(ct_platform_of("NVIDIA H200")->nvlink_gbs, 900);
    NEAR(ct_platform_of("NVIDIA B200")->nvlink_gbs, 1800);
    ck_assert_str_eq(ct_platform_of("NVIDIA GB200")->label, "GB200");
    ck_assert_str_eq(ct_platform_of("NVIDIA GB300")->label, "GB300");
    /* bridges, export parts, superchips not in the table, unknown names */
    ck_assert_ptr_null(ct_platform_of("NVIDIA H100 PCIe"));
    ck_assert_ptr_null(ct_platform_of("NVIDIA H100 NVL"));
    ck_assert_ptr_null(ct_platform_of("NVIDIA H200 NVL"));
    ck_assert_ptr_null(ct_platform_of("NVIDIA GH200 480GB"));
    ck_assert_ptr_null(ct_platform_of("NVIDIA H800"));
    ck_assert_ptr_null(ct_platform_of("NVIDIA H20"));
    ck_assert_ptr_null(ct_platform_of("FakeGPU 0"));
    ck_assert_ptr_null(ct_platform_of(""));
    ck_assert_ptr_null(ct_platform_of(NULL));
}
END_TEST

static struct ct_diagnosis *diagnose(struct ct_report *rep)
{
    struct ct_diag_opts o = {.min_saving = 0.02};
    struct ct_diagnosis *d = calloc(1, sizeof(*d));
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(ct_diagnose(rep, &o, d), 0);
    return d;
}

static const char *insufficient(const struct ct_diagnosis *d, int kind)
{
    for (size_t i = 0; i < d->nins; i++)
        if (d->ins[i].kind == kind)
            return d->ins[i].reason;
    return NULL;
}

START_TEST(nvlink_saturated_needs_four_fifths_of_the_peak_with_pcie_idle)
{
    /* Rank 0: 400000 MiB/s each way over the collectives (I0: 380000 over
     * the interval / 0.95) = 838.86 GB/s, 93.2 % of 900; PCIe 0: found.
     * Rank 1: 93.2 % too, PCIe 47.5 / 0.95 = 50 MiB/s... at 50000 MiB/s
     * (52.4 GB/s >= 45): not idle. Rank 2: 200000 each way: 46.6 %: no.
     * One finding naming rank 0 only; saving unquantified; confidence the
     * seen share 950 / 1450. */
    struct tb_job b;
    tb_init(&b);
    coll_rank(&b, 0, "NVIDIA H100 80GB HBM3", 380000, 380000, 0);
    coll_rank(&b, 1, "NVIDIA H100 80GB HBM3", 380000, 380000, 47500);
    coll_rank(&b, 2, "NVIDIA H100 80GB HBM3", 190000, 190000, 0);
    struct ct_job job;
    struct ct_report rep;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    struct ct_diagnosis *d = diagnose(&rep);
    size_t n;
    const struct ct_finding *f = find_kind(d, CT_FK_NVLINK_SATURATED, &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(f->nranks, 1);
    ck_assert_int_eq(f->ranks[0], 0);
    ck_assert(isnan(f->saving_us));
    NEAR(f->confidence, 950.0 / 1450);
    ck_assert_double_eq_tol(ev(f, "nvlink_gbps"), 800000 * 1048576.0 / 1e9, 1e-6);
    NEAR(ev(f, "nvlink_peak_gbps"), 900);
    NEAR(ev(f, "pcie_gbps"), 0);
    ck_assert_ptr_null(insufficient(d, CT_FK_NVLINK_SATURATED));
    ck_assert_ptr_nonnull(strstr(f->summary, "of the H100 SXM's 900 GB/s peak"));
    ct_diagnosis_free(d);
    free(d);
    ct_report_free(&rep);
    ct_job_free(&job);
    /* a part the table does not know: not judged, and why */
    tb_init(&b);
    coll_rank(&b, 0, "NVIDIA H100 PCIe", 380000, 380000, 0);
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    d = diagnose(&rep);
    find_kind(d, CT_FK_NVLINK_SATURATED, &n);
    ck_assert_uint_eq(n, 0);
    ck_assert_ptr_nonnull(strstr(insufficient(d, CT_FK_NVLINK_SATURATED),
                                 "no NVLink peak for the device \"NVIDIA H100 PCIe\""));
    ct_diagnosis_free(d);
    free(d);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

START_TEST(rows_carry_the_gpm_figures_of_each_iteration_and_rank)
{
    /* test_efficiency.c's two phases: steps [0,1000) [1000,2000), gemm
     * [0,600) ew [600,1000) gemm [1000,1600) ew [1600,1900); intervals of
     * 500 at tensor 60, 12, 60, 12 and DRAM 20, 68, 20, 52. Iteration 0:
     * tensor (60 + 12) / 2 = 36, DRAM (20 + 68) / 2 = 44; the rank's window
     * [0,1900): tensor (500*60 + 500*12 + 500*60 + 400*12) / 1900 = 37.26,
     * per busy time / (1500 + 400*0.8) = 70800 / 1820 = 38.90 */
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
    tb_gpm_interval(h, 0, 500, 90, 60, 20);
    tb_gpm_interval(h, 500, 500, 58, 12, 68);
    tb_gpm_interval(h, 1000, 500, 90, 60, 20);
    tb_gpm_interval(h, 1500, 500, 48, 12, 52);
    m->health = h;
    struct ct_job job;
    struct ct_report rep;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ct_rows_write(f, "run", NULL, &rep);
    fclose(f);
    const char *it = strstr(buf, "\"row\":\"iteration\"");
    ck_assert_ptr_nonnull(it);
    const char *eol = strchr(it, '\n');
    const char *tc = strstr(it, "\"gpm_tensor_active_pct\":36");
    ck_assert(tc && tc < eol);
    const char *dr = strstr(it, "\"gpm_dram_bw_pct\":44");
    ck_assert(dr && dr < eol);
    const char *nv = strstr(it, "\"gpm_nvlink_tx_mib_s\":null");
    ck_assert(nv && nv < eol);
    const char *rk = strstr(buf, "\"row\":\"rank\"");
    ck_assert_ptr_nonnull(rk);
    eol = strchr(rk, '\n');
    const char *w = strstr(rk, "\"gpm_tensor_active_pct\":37.26");
    const char *bz = strstr(rk, "\"gpm_busy_tensor_active_pct\":38.9");
    const char *un = strstr(rk, "\"gpm_unavailable\":null}");
    ck_assert(w && w < eol && bz && bz < eol && un && un < eol);
    free(buf);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

START_TEST(the_page_merges_runs_of_intervals_past_two_thousand_keeping_their_mean)
{
    /* 4001 intervals of 100 µs over one kernel [0, 400100): SM (i % 3) * 30,
     * tensor 50, DRAM (i % 2) * 10, no NVLink series. The page gets runs of
     * ceil(4001 / 2000) = 3: 1334 points (ns since time zero), the first [0, 300 µs) at SM
     * (0 + 30 + 60) / 3 = 30, DRAM 10 / 3; the last, intervals 3999 and
     * 4000, [399900, 400100) µs at SM (0 + 30) / 2 = 15, DRAM 5; NVLink
     * null in every point and missing with the reason. */
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *m = tb_proc(&b, 0);
    tb_kernel(m, "k", 1, 0, 400100, 0);
    struct ct_hproc *h = tb_hp_new();
    for (int i = 0; i < 4001; i++)
        tb_gpm_interval(h, 100 * (int64_t)i, 100, (i % 3) * 30, 50, (i % 2) * 10);
    m->health = h;
    struct ct_job job;
    struct ct_report rep;
    tb_build(&b, &job);
    tb_analyze(&job, NULL, &rep);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ct_html_eff_rank_json(f, &rep, 0);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, ",\"eff\":{\"dev\":0,\"why\":null,\"missing\":{\"sm\":null,"
                                      "\"tensor\":null,\"dram\":null,\"nvlink\":\"not given by "
                                      "the device"));
    ck_assert_ptr_nonnull(strstr(buf, "\"iv\":[0,300000,30.00,50.00,3.33,null,300000,"));
    ck_assert_ptr_nonnull(strstr(buf, ",399900000,400100000,15.00,50.00,5.00,null]}"));
    size_t commas = 0;
    for (const char *p = strstr(buf, "\"iv\":["); *p; p++)
        commas += *p == ',';
    ck_assert_uint_eq(commas + 1, 1334 * 6);
    free(buf);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

Suite *efficiency_streams_suite(void)
{
    Suite *s = suite_create("efficiency_streams");
    TCase *t = tcase_create("efficiency_streams");
    tcase_set_timeout(t, 10);
    tcase_add_test(t, an_interval_is_the_stream_s_that_did_nine_tenths_of_its_work);
    tcase_add_test(t, the_collectives_link_rate_is_the_bytes_of_the_intervals_they_fill);
    tcase_add_test(t, the_platform_table_knows_sxm_parts_by_their_recorded_names);
    tcase_add_test(t, nvlink_saturated_needs_four_fifths_of_the_peak_with_pcie_idle);
    tcase_add_test(t, rows_carry_the_gpm_figures_of_each_iteration_and_rank);
    tcase_add_test(t, the_page_merges_runs_of_intervals_past_two_thousand_keeping_their_mean);
    suite_add_tcase(s, t);
    return s;
}
