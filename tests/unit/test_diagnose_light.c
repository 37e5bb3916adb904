/* Suite "diagnose_light": `cutrace diagnose` on one job recorded throughout
 * (full mode) and in capture windows (light mode) finds the same things
 * (docs/report.md, "Capture windows"; docs/recording.md "Light mode"). The job is
 * examples/sim_train's, hand-built in µs from what its traces hold. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/compare/diagnose.h"
#include "decoder/compare/runs.h"
#include "tests/unit/timeline_builder.h"
#include "decoder/read/facts.h"
#include "decoder/read/job.h"

#define STEPS 20
#define STEP  4200 /* the demo's step p50, µs */
#define WARM  24000

/* Where step k begins: step 0 is the warm-up, WARM longer than the rest. */
static int64_t step_at(int k)
{
    return 1000 + (k ? WARM + (int64_t)k * STEP : 0);
}

static int in(int64_t t, int64_t lo, int64_t hi)
{
    return t >= lo && t < hi;
}

/*
 * One sim_train step from a (µs), what the shim records of it when the
 * recording is on at its host times ([lo, hi)): a range [a, next step)
 * when both ends are (a step a window cuts is not an iteration); the input
 * copy call [a+50, a+450 + extra) (extra: the warm-up's first touches),
 * its transfer [a+55, a+223); the forward kernel launched 5 after the call
 * returns and running 10 after it, 1200 long; the backward and optimizer
 * kernels launched 1 and 2 later, 2200 and 200 long back to back; a
 * synchronize from the last launch to 40 after the GPU's end (the host
 * wakes up). The next step's copy call comes 150 after the sync returns.
 * A GPU op is recorded when its launch was (the shim keeps a kernel's
 * record when its launch was recorded, even past a window's close).
 *
 * An ordinary step (from the previous one's sync) idles 432: [a, a+50)
 * 50 of sync drain (and the 100 before a), [a+50, a+55) 5 in the copy
 * call before its transfer, [a+223, a+450) 227 in the copy call,
 * [a+450, a+460) 10 launching fwd (its launch call 0.405 ms after the copy
 * call's start), [a+4060, a+4100) 40 in the sync while the host wakes:
 * blocking call 232, drain 150, launch 10, unexplained 40.
 */
static void sim_step(struct ct_proc *p, int k, int64_t lo, int64_t hi)
{
    int64_t a = step_at(k), extra = k ? 0 : WARM;
    int64_t ret = a + 450 + extra, f = ret + 10, g = f + 1200, o = g + 2200, end = o + 200;
    if (in(a, lo, hi) && in(step_at(k + 1), lo, hi))
        tb_range(p, a, step_at(k + 1), k);
    if (in(a + 50, lo, hi)) {
        tb_copy(p, 1, a + 55, a + 223, a + 50);
        tb_cuda_call(p, a + 50, ret);
    }
    if (in(ret + 5, lo, hi))
        tb_kernel(p, "fwd", 1, f, g, ret + 5);
    if (in(ret + 6, lo, hi))
        tb_kernel(p, "bwd", 1, g, o, ret + 6);
    if (in(ret + 7, lo, hi)) {
        tb_kernel(p, "opt", 1, o, end, ret + 7);
        tb_sync(p, ret + 7, end + 40);
    }
}

/* The job in full mode (lo, hi unbounded) or in light mode's windows
 * [lo, hi) and [lo2, hi2), analysed and diagnosed. */
static void sim_job(struct ct_job *job, struct ct_report *rep, struct ct_diagnosis *d,
                    const int64_t *win, int nwin)
{
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *p = tb_proc(&b, 0);
    for (int w = 0; w < (nwin ? nwin : 1); w++)
        for (int k = 0; k < STEPS; k++)
            sim_step(p, k, nwin ? win[2 * w] : INT64_MIN / 4,
                     nwin ? win[2 * w + 1] : INT64_MAX / 4);
    for (int w = 0; w < nwin; w++)
        tb_capture(p, win[2 * w], win[2 * w + 1]);
    tb_build(&b, job);
    tb_analyze(job, NULL, rep);
    struct ct_diag_opts o = {.min_saving = 0.02};
    ck_assert_int_eq(ct_diagnose(rep, &o, d), 0);
}

static int has(const struct ct_diagnosis *d, int kind)
{
    for (size_t i = 0; i < d->nf; i++)
        if (d->f[i].kind == kind)
            return 1;
    return 0;
}

/*
 * Full mode: 20 steps, the warm-up step sitting 24 ms in its copy call.
 * Light mode: two windows holding steps 4-8 and 13-17 whole, opening mid-
 * step 3 and 12 and closing mid-step 9 and 18 (as windows on the realtime
 * clock do), the warm-up outside them.
 *
 * Before the blocking-call class, the launch rule reached back from each
 * fwd launch to its copy call's start (0.405 ms earlier, within the 1 ms
 * burst): launch overhead 237 + 5 of each step's 432 of idle, 5.8 % of
 * the step. In light mode that was more than half of the idle, and
 * `diagnose` reported launch_bound (the 6 %); in full mode the
 * warm-up's 24 ms of unexplained idle, spread over 20 steps, kept it under
 * half, and it did not. Neither the window edges nor a resume cost made
 * the finding: the GPU waited for the copy call to return, not for
 * launches. Now 232 of each step is the blocking call's and 10 launch
 * overhead, and the two modes find the same things (sync drain, 3.6 % of
 * the step, in both).
 *
 * Light mode's split, exact: 10 iterations of 432, less each window's
 * first step's [a, a+55) (drain 50, call 5), before the first GPU work the
 * window recorded: idle 4210, blocking call 2310, drain 1400, launch 100,
 * unexplained 400. Full mode's blocking call: the warm-up's [a+223,
 * a+24450) 24227 and 232 in each of the 19 others, 28635.
 */
START_TEST(light_mode_finds_what_full_mode_finds)
{
    struct ct_job fj, lj;
    struct ct_report fr, lr;
    struct ct_diagnosis *fd = calloc(1, sizeof(*fd)), *ld = calloc(1, sizeof(*ld));
    ck_assert(fd && ld);
    const int64_t win[4] = {step_at(3) + 2000, step_at(9) + 1000, step_at(12) + 3000,
                            step_at(18) + 500};
    sim_job(&fj, &fr, fd, NULL, 0);
    sim_job(&lj, &lr, ld, win, 2);
    const struct ct_rank_result *f = tb_result(&fr, 0), *l = tb_result(&lr, 0);
    ck_assert_uint_eq(f->niters, STEPS);
    ck_assert_uint_eq(l->niters, 10); /* 4-8 and 13-17 */
    ck_assert_int_eq(l->idle, TB_US(4210));
    ck_assert_int_eq(l->at.cuda_call, TB_US(2310));
    ck_assert_int_eq(l->at.sync_drain, TB_US(1400));
    ck_assert_int_eq(l->at.launch_overhead, TB_US(100));
    ck_assert_int_eq(l->at.unexplained, TB_US(400));
    ck_assert_int_eq(f->at.cuda_call, TB_US(28635));
    ck_assert(!has(fd, CT_FK_LAUNCH_BOUND));
    ck_assert(!has(ld, CT_FK_LAUNCH_BOUND));
    for (int kind = 0; kind < CT_FK_COUNT; kind++)
        ck_assert_msg(has(fd, kind) == has(ld, kind), "finding %s: full %d, light %d",
                      ct_finding_kind_name(kind), has(fd, kind), has(ld, kind));
    ct_diagnosis_free(fd);
    ct_diagnosis_free(ld);
    free(fd);
    free(ld);
    ct_report_free(&fr);
    ct_report_free(&lr);
    ct_job_free(&fj);
    ct_job_free(&lj);
}
END_TEST

/* The full-mode job built and analysed, and an empty diagnosis to fill
 * (its own findings dropped: each test adds the facts it is about). */
static struct ct_diagnosis *full_job(struct ct_job *j, struct ct_report *r)
{
    struct ct_diagnosis *d = calloc(1, sizeof(*d));
    ck_assert(d);
    sim_job(j, r, d, NULL, 0);
    ct_diagnosis_free(d);
    memset(d, 0, sizeof(*d));
    return d;
}

/*
 * A fix never saves more than the whole step. The full-mode job with 50
 * Async copies on as many threads, each holding the host 10 ms for a 10 ms
 * transfer (a pageable buffer) from the first step's start on its one rank:
 * pageable_memcpy's formula (host time of the blocking copies inside the
 * iterations per iteration: 500 ms / 20) gives 25 ms, six times the 4.2 ms
 * step (host time is not step time when threads block side by side). The
 * saving is the step, 100 %, its confidence halved, and the formula's
 * figure is in the evidence.
 */
START_TEST(a_saving_is_never_more_than_the_step)
{
    struct ct_job j;
    struct ct_report r;
    struct ct_diagnosis *d = full_job(&j, &r);
    /* the copies as the rank's trace's facts (read/facts.h), freed with the job */
    struct ct_trace_facts *facts = calloc(1, sizeof(*facts));
    struct ct_copy_fact *cp = calloc(50, sizeof(*cp));
    ck_assert(facts && cp);
    /* the builder's traces have no clock offset: trace time is job time */
    ck_assert_int_eq(j.procs[0].clock_offset + tb_result(&r, 0)->rank->skew_ns, 0);
    int64_t w0 = tb_result(&r, 0)->iters[0].s;
    ck_assert_int_ge(tb_result(&r, 0)->iters[STEPS - 1].e - w0, TB_US(10000));
    for (int i = 0; i < 50; i++)
        cp[i] = (struct ct_copy_fact){.host_s = w0,
                                      .host_e = w0 + TB_US(10000),
                                      .gpu_s = w0,
                                      .gpu_e = w0 + TB_US(10000),
                                      .bytes = 1 << 26,
                                      .kind = CT_COPY_HTOD,
                                      .async = 1};
    *facts = (struct ct_trace_facts){.rank = 0, .copies = cp, .ncopies = 50};
    ck_assert_uint_eq(j.nprocs, 1);
    j.procs[0].facts = facts;
    struct ct_diag_opts o = {.min_saving = 0.02};
    ck_assert_int_eq(ct_diagnose(&r, &o, d), 0);
    const struct ct_finding *f = NULL;
    for (size_t i = 0; i < d->nf; i++)
        if (d->f[i].kind == CT_FK_PAGEABLE_MEMCPY)
            f = &d->f[i];
    ck_assert_ptr_nonnull(f);
    ck_assert_double_eq_tol(f->saving_us, r.step_p50 / 1e3, 1e-6);
    int said = 0;
    for (size_t i = 0; i < f->nev; i++)
        if (!strcmp(f->ev[i].key, "formula_estimate_beyond_the_step_us")) {
            ck_assert_double_eq_tol(f->ev[i].num, 500000.0 / STEPS, 1e-6);
            said = 1;
        }
    ck_assert(said);
    ct_diagnosis_free(d);
    free(d);
    ct_report_free(&r);
    ct_job_free(&j);
}
END_TEST

/*
 * Copies outside the steps cost no step. The same job with 40 Async copies
 * that each held the host 10 ms for a 10 ms transfer, all before the first
 * step (a model and its data moved to the GPU at start): no
 * pageable_memcpy finding, where dividing all blocked host time by the
 * iterations made one of 20 ms a step. And one such copy straddling the
 * first step's start counts only its part inside: 2 ms of 10.
 */
START_TEST(copies_before_the_first_step_cost_no_step)
{
    struct ct_job j;
    struct ct_report r;
    struct ct_diagnosis *d = full_job(&j, &r);
    int64_t w0 = tb_result(&r, 0)->iters[0].s;
    struct ct_trace_facts *facts = calloc(1, sizeof(*facts));
    struct ct_copy_fact *cp = calloc(41, sizeof(*cp));
    ck_assert(facts && cp);
    for (int i = 0; i < 40; i++)
        cp[i] = (struct ct_copy_fact){.host_s = w0 - TB_US(500000) + i * TB_US(10000),
                                      .host_e = w0 - TB_US(490000) + i * TB_US(10000),
                                      .gpu_s = w0 - TB_US(500000) + i * TB_US(10000),
                                      .gpu_e = w0 - TB_US(490000) + i * TB_US(10000),
                                      .bytes = 1 << 26,
                                      .kind = CT_COPY_HTOD,
                                      .async = 1};
    *facts = (struct ct_trace_facts){.rank = 0, .copies = cp, .ncopies = 40};
    j.procs[0].facts = facts;
    struct ct_diag_opts o = {.min_saving = 0};
    ck_assert_int_eq(ct_diagnose(&r, &o, d), 0);
    for (size_t i = 0; i < d->nf; i++)
        ck_assert_int_ne(d->f[i].kind, CT_FK_PAGEABLE_MEMCPY);
    ct_diagnosis_free(d);
    memset(d, 0, sizeof(*d));
    /* one more, [w0 - 8 ms, w0 + 2 ms): 2 ms inside, over 20 steps */
    cp[40] = (struct ct_copy_fact){.host_s = w0 - TB_US(8000),
                                   .host_e = w0 + TB_US(2000),
                                   .gpu_s = w0 - TB_US(8000),
                                   .gpu_e = w0 + TB_US(2000),
                                   .bytes = 1 << 26,
                                   .kind = CT_COPY_HTOD,
                                   .async = 1};
    facts->ncopies = 41;
    ck_assert_int_eq(ct_diagnose(&r, &o, d), 0);
    const struct ct_finding *f = NULL;
    for (size_t i = 0; i < d->nf; i++)
        if (d->f[i].kind == CT_FK_PAGEABLE_MEMCPY)
            f = &d->f[i];
    ck_assert_ptr_nonnull(f);
    ck_assert_double_eq_tol(f->saving_us, 2000.0 / STEPS, 1e-6);
    ct_diagnosis_free(d);
    free(d);
    ct_report_free(&r);
    ct_job_free(&j);
}
END_TEST

Suite *diagnose_light_suite(void)
{
    Suite *s = suite_create("diagnose_light");
    TCase *tc = tcase_create("diagnose_light");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, light_mode_finds_what_full_mode_finds);
    tcase_add_test(tc, a_saving_is_never_more_than_the_step);
    tcase_add_test(tc, copies_before_the_first_step_cost_no_step);
    suite_add_tcase(s, tc);
    return s;
}
