/* Suite "provenance": which coverage facts are material and what they do to
 * the confidences resting on them (decoder/analysis/provenance.c
 * ct_coverage_fact, ct_coverage_factor; docs/report.md, "Coverage"), on
 * hand-built ranks whose coverage is set as extraction would leave it.
 * Times in µs. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/compare/diagnose.h"
#include "tests/unit/timeline_builder.h"
#include "decoder/read/job.h"

/* Rank 0: four step ranges of 1000 with a kernel in each, timed by CUPTI
 * (timed records), untimed launches and damage as given; its file is
 * `path`. */
static void job_with(struct ct_job *job, struct ct_report *rep, uint64_t timed, uint64_t untimed,
                     uint64_t damaged, uint64_t bytes, int truncated)
{
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    for (int k = 0; k < 4; k++) {
        tb_range(p, 1000 * k, 1000 * (k + 1), k);
        tb_kernel(p, "k", 1, 1000 * k + 100, 1000 * k + 900, 1000 * k + 50);
    }
    p->cov.gpu_cupti = timed;
    p->cov.untimed = untimed;
    p->cov.damaged = damaged;
    p->cov.bytes = bytes;
    p->cov.truncated = truncated != 0;
    p->trunc_at = truncated ? 7000 : 0;
    tb_build(&b, job);
    tb_analyze(job, NULL, rep);
}

/* 10 of 1000 ops untimed is 1.0 %: not material (the window edges of light
 * mode leave 0.05-0.31 % untimed, measured on sim_train); 11 of 1000 is. */
START_TEST(untimed_ops_are_material_above_1_percent)
{
    struct ct_job job;
    struct ct_report rep;
    struct ct_cov_fact f;
    job_with(&job, &rep, 990, 10, 0, 5000, 0);
    ck_assert_int_eq(ct_coverage_fact(tb_rank(&job, 0), 0, &f), 0);
    char why[200];
    ck_assert(ct_coverage_factor(tb_rank(&job, 0), 1, why, sizeof(why)) == 1.0);
    ck_assert_str_eq(why, "");
    ct_report_free(&rep);
    ct_job_free(&job);
    job_with(&job, &rep, 989, 11, 0, 5000, 0);
    ck_assert_int_eq(ct_coverage_fact(tb_rank(&job, 0), 0, &f), 1);
    ck_assert_int_eq(f.kind, CT_COVF_UNTIMED);
    ck_assert_uint_eq(f.count, 11);
    ck_assert_uint_eq(f.of, 1000);
    ck_assert_ptr_null(f.path);
    ck_assert_int_eq(ct_coverage_fact(tb_rank(&job, 0), 1, &f), 0);
    /* 1 - 11/1000 for what rests on the ops' times; nothing else */
    ck_assert(fabs(ct_coverage_factor(tb_rank(&job, 0), 1, why, sizeof(why)) - 0.989) < 1e-12);
    ck_assert_ptr_nonnull(strstr(why, "1.1% of the GPU ops untimed"));
    ck_assert(ct_coverage_factor(tb_rank(&job, 0), 0, NULL, 0) == 1.0);
    /* iterations from ranges do not rest on the ops' times */
    ck_assert(tb_result(&rep, 0)->iter_conf == 1.0);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* Any damaged byte is material, its file named, with its cut when it was
 * cut too; 200 of 10000 bytes lower every confidence by 2 %: the step
 * ranges' 1 becomes 0.98 (a damaged stretch loses its steps' ranges and
 * ops), with both values in the note. */
START_TEST(damaged_bytes_are_material_and_lower_confidence_by_their_share)
{
    struct ct_job job;
    struct ct_report rep;
    struct ct_cov_fact f;
    job_with(&job, &rep, 1000, 0, 200, 10000, 1);
    const struct ct_rank_result *x = tb_result(&rep, 0);
    ck_assert_int_eq(ct_coverage_fact(x->rank, 0, &f), 1);
    ck_assert_int_eq(f.kind, CT_COVF_DAMAGED);
    ck_assert_uint_eq(f.count, 200);
    ck_assert_uint_eq(f.of, 10000);
    ck_assert_int_eq(f.truncated, 1);
    ck_assert_uint_eq(f.offset, 7000);
    ck_assert_str_eq(f.path, "mem");
    ck_assert_int_eq(ct_coverage_fact(x->rank, 1, &f), 0); /* one line per file */
    ck_assert(fabs(x->iter_conf - 0.98) < 1e-12);
    ck_assert(x->iter_conf_found == 1.0);
    char why[200];
    ck_assert(fabs(ct_coverage_factor(x->rank, 0, why, sizeof(why)) - 0.98) < 1e-12);
    ck_assert_ptr_nonnull(strstr(why, "2.00% of the trace bytes damaged (200 bytes skipped"));
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* A file cut without damage is stated (its offset) but lowers nothing:
 * what was decoded is whole, and a step the cut left partial is none. */
START_TEST(a_cut_file_is_stated_and_lowers_nothing)
{
    struct ct_job job;
    struct ct_report rep;
    struct ct_cov_fact f;
    job_with(&job, &rep, 1000, 0, 0, 10000, 1);
    const struct ct_rank_result *x = tb_result(&rep, 0);
    ck_assert_int_eq(ct_coverage_fact(x->rank, 0, &f), 1);
    ck_assert_int_eq(f.kind, CT_COVF_TRUNCATED);
    ck_assert_uint_eq(f.count, 0);
    ck_assert_uint_eq(f.offset, 7000);
    ck_assert(ct_coverage_factor(x->rank, 1, NULL, 0) == 1.0);
    ck_assert(x->iter_conf == 1.0);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* diagnose: a finding's confidence is the check's times its ranks' worst
 * coverage factor, with the reason. Two ranks, the same 4 steps [a, a+1000):
 * a kernel [a+100, a+300) launched at a+50, a sync [a+60, a+310), nothing
 * launched until the next step's kernel: sync drain on both ranks (the
 * finding names both). Rank 1 has 300 of its 10000 bytes damaged: the
 * finding's confidence is 0.97 of what the same job undamaged gives. */
static void two_ranks(struct ct_job *job, struct ct_report *rep, uint64_t damaged)
{
    struct tb_job b;
    tb_init(&b);
    for (int r = 0; r < 2; r++) {
        struct ct_proc *p = tb_proc(&b, r);
        for (int k = 0; k < 4; k++) {
            int64_t a = 1000 * k;
            tb_range(p, a, a + 1000, k);
            tb_kernel(p, "k", 1, a + 100, a + 300, a + 50);
            tb_sync(p, a + 60, a + 310);
        }
        p->cov.bytes = 10000;
        if (r == 1)
            p->cov.damaged = damaged;
    }
    tb_build(&b, job);
    tb_analyze(job, NULL, rep);
}

START_TEST(a_finding_on_a_damaged_rank_has_lower_confidence_and_says_why)
{
    struct ct_job j0, j1;
    struct ct_report r0, r1;
    struct ct_diagnosis *d0 = calloc(1, sizeof(*d0)), *d1 = calloc(1, sizeof(*d1));
    ck_assert(d0 && d1);
    two_ranks(&j0, &r0, 0);
    two_ranks(&j1, &r1, 300);
    struct ct_diag_opts o = {.min_saving = 0.02};
    ck_assert_int_eq(ct_diagnose(&r0, &o, d0), 0);
    ck_assert_int_eq(ct_diagnose(&r1, &o, d1), 0);
    const struct ct_finding *a = NULL, *b = NULL;
    for (size_t i = 0; i < d0->nf; i++)
        if (d0->f[i].kind == CT_FK_SYNC_DRAIN)
            a = &d0->f[i];
    for (size_t i = 0; i < d1->nf; i++)
        if (d1->f[i].kind == CT_FK_SYNC_DRAIN)
            b = &d1->f[i];
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_str_eq(a->confidence_note, "");
    ck_assert(fabs(b->confidence - 0.97 * a->confidence) < 1e-12);
    ck_assert_ptr_nonnull(strstr(b->confidence_note, "rank 1: 3.00% of the trace bytes damaged"));
    ct_diagnosis_free(d0);
    ct_diagnosis_free(d1);
    free(d0);
    free(d1);
    ct_report_free(&r0);
    ct_report_free(&r1);
    ct_job_free(&j0);
    ct_job_free(&j1);
}
END_TEST

Suite *provenance_suite(void)
{
    Suite *s = suite_create("provenance");
    TCase *tc = tcase_create("provenance");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, untimed_ops_are_material_above_1_percent);
    tcase_add_test(tc, damaged_bytes_are_material_and_lower_confidence_by_their_share);
    tcase_add_test(tc, a_cut_file_is_stated_and_lowers_nothing);
    tcase_add_test(tc, a_finding_on_a_damaged_rank_has_lower_confidence_and_says_why);
    suite_add_tcase(s, tc);
    return s;
}
