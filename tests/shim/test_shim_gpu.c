/*
 * Suite "shim", GPU timing: w_gputime's known schedule under the shim with
 * CUPTI (the simulated one, as CUDA 12.x and 13.x releases), event pairs,
 * timing off, a context destroyed with pairs pending, the injection path.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/util/names.h"
#include "tests/shim/shim_run.h"

struct expect_op {
    char type[16];
    uint64_t dur;
};

struct gpu_run {
    struct th_trace t;
    unsigned long long sid, pt, legacy;
    struct expect_op exp[16];
    int nexp;
    char timing[32], fallback[256], cupti_flush[16];
};

static void gpu_run(struct gpu_run *g, const char *const *env)
{
    char exe[512];
    snprintf(exe, sizeof(exe), "%s/w_gputime", th_env("CT_WORKLOADS"));
    const char *argv[] = {exe, NULL};
    struct th_run r;
    run(&r, th_env("CT_SHIM"), env, argv);
    char *out = th_slurp(r.out), *err = th_slurp(r.err);
    ck_assert_msg(r.status == 0, "status %d: %s", r.status, err);
    ck_assert_msg(err[0] == 0, "stderr: %s", err);
    memset(g, 0, sizeof(*g));
    ck_assert(sscanf(strstr(out, "STREAMS"), "STREAMS s=%llu pt=%llu legacy=%llu", &g->sid, &g->pt,
                     &g->legacy) == 3);
    for (char *p = strstr(out, "EXPECT "); p && g->nexp < 16; p = strstr(p + 1, "EXPECT ")) {
        unsigned long long dur;
        ck_assert(sscanf(p, "EXPECT %15s %llu", g->exp[g->nexp].type, &dur) == 2);
        g->exp[g->nexp++].dur = dur;
    }
    char path[512];
    ck_assert_int_eq(th_run_trace(&r, 0, path, sizeof(path)), 1);
    th_trace_read_file(&g->t, path);
    for (size_t i = 0; i < g->t.n; i++) {
        const struct ct_record *m = &g->t.recs[i];
        if (m->kind != CT_REC_META || m->f[CT_META_SCOPE] != CT_SCOPE_RECORDER)
            continue;
        const char *k = S(&g->t, m->f[CT_META_KEY]);
        if (!strcmp(k, "gpu_timing"))
            snprintf(g->timing, sizeof(g->timing), "%s", S(&g->t, m->f[CT_META_VALUE]));
        if (!strcmp(k, "gpu_timing_fallback"))
            snprintf(g->fallback, sizeof(g->fallback), "%s", S(&g->t, m->f[CT_META_VALUE]));
        if (!strcmp(k, "cupti_flush_ms"))
            snprintf(g->cupti_flush, sizeof(g->cupti_flush), "%s", S(&g->t, m->f[CT_META_VALUE]));
    }
    free(out);
    free(err);
}

static const struct ct_record *api_of(const struct th_trace *t, uint64_t corr)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->recs[i].kind == CT_REC_API && t->recs[i].f[CT_API_CORR] == corr)
            return &t->recs[i];
    return NULL;
}

static int cmp_gpu_start(const void *a, const void *b)
{
    const struct ct_record *x = *(const struct ct_record *const *)a;
    const struct ct_record *y = *(const struct ct_record *const *)b;
    return (x->f[CT_GPU_START] > y->f[CT_GPU_START]) - (x->f[CT_GPU_START] < y->f[CT_GPU_START]);
}

/*
 * Checks the intervals on stream S against the schedule: durations and
 * back-to-back starts within `tol` ns, every timed call joined to its
 * interval, captured launches untimed, default streams right. With CUPTI the
 * graph shows as its two kernels; with events as one interval.
 */
static void check_schedule(struct gpu_run *g, uint64_t tol, int cupti)
{
    /* Under user-mode emulation the simulated device's threads run 10-50x
     * slower and unevenly: its scheduling jitter, what tol bounds, with
     * them (the order and count checks stay exact). */
    if (getenv("CT_EMULATED"))
        tol *= 50;
    const struct ct_record *on_s[64];
    size_t n = 0;
    int pt_seen = 0, legacy_seen = 0;
    for (size_t i = 0; i < g->t.n; i++) {
        const struct ct_record *r = &g->t.recs[i];
        if (r->kind != CT_REC_GPU || r->f[CT_GPU_TYPE] == CT_GPU_SYNC)
            continue;
        const struct ct_record *call = api_of(&g->t, r->f[CT_GPU_CORR]);
        ck_assert_msg(call != NULL, "GPU interval without its call (corr %llu)",
                      (unsigned long long)r->f[CT_GPU_CORR]);
        const char *kernel = S(&g->t, r->f[CT_GPU_NAME]);
        if (!strcmp(kernel, "P__20us")) {
            ck_assert_uint_eq(r->f[CT_GPU_STREAM], g->pt);
            pt_seen++;
        } else if (!strcmp(kernel, "L__10us")) {
            ck_assert_uint_eq(r->f[CT_GPU_STREAM], g->legacy);
            legacy_seen++;
        } else {
            ck_assert_msg(r->f[CT_GPU_STREAM] == g->sid, "%s on stream %llu", kernel,
                          (unsigned long long)r->f[CT_GPU_STREAM]);
            ck_assert_uint_lt(n, 64);
            on_s[n++] = r;
        }
    }
    ck_assert_int_eq(pt_seen, 1);
    ck_assert_int_eq(legacy_seen, 1);
    qsort(on_s, n, sizeof(on_s[0]), cmp_gpu_start);
    /* expected sequence; with CUPTI the graph is its nodes */
    struct expect_op exp[20];
    int ne = 0;
    for (int i = 0; i < g->nexp; i++) {
        if (cupti && !strcmp(g->exp[i].type, "graph")) {
            exp[ne++] = (struct expect_op){"kernel", 30000};
            exp[ne++] = (struct expect_op){"kernel", 40000};
        } else {
            exp[ne++] = g->exp[i];
        }
    }
    ck_assert_msg((int)n == ne, "%zu intervals on stream S, expected %d", n, ne);
    for (int i = 0; i < ne; i++) {
        const uint64_t *f = on_s[i]->f;
        uint64_t dur = f[CT_GPU_END] - f[CT_GPU_START];
        ck_assert_str_eq(ct_name_gpu_type(f[CT_GPU_TYPE]), exp[i].type);
        int64_t derr = (int64_t)dur - (int64_t)exp[i].dur;
        /* On an idle stream the start event runs as soon as it is recorded,
         * before the op itself is enqueued, so in event mode the first op
         * also holds the launch call's latency (one real GPUs show too). */
        if (i == 0 && !cupti && derr > 0)
            derr = 0;
        ck_assert_msg(derr <= (int64_t)tol && derr >= -(int64_t)tol,
                      "op %d (%s): %llu ns, expected %llu +- %llu", i, exp[i].type,
                      (unsigned long long)dur, (unsigned long long)exp[i].dur,
                      (unsigned long long)tol);
        if (i > 0) {
            int64_t gap = (int64_t)f[CT_GPU_START] - (int64_t)on_s[i - 1]->f[CT_GPU_END];
            ck_assert_msg(gap <= (int64_t)tol && gap >= -(int64_t)tol,
                          "op %d starts %lld ns after the previous ends", i, (long long)gap);
        }
    }
    /* the first op cannot start before its launch call (with CUPTI; the
     * start event of event mode is recorded just before the call's span) */
    const struct ct_record *first = api_of(&g->t, on_s[0]->f[CT_GPU_CORR]);
    if (cupti)
        ck_assert_uint_ge(on_s[0]->f[CT_GPU_START] + tol, first->f[CT_API_START]);
    /* every kernel, copy, memset and graph launch on a stream not capturing
     * has its interval; the two captured launches have none */
    for (size_t i = 0; i < g->t.n; i++) {
        const struct ct_record *r = &g->t.recs[i];
        if (r->kind != CT_REC_API)
            continue;
        uint64_t fam = r->f[CT_API_FAMILY];
        if (fam != CT_FAM_LAUNCH && fam != CT_FAM_MEMCPY && fam != CT_FAM_MEMSET &&
            fam != CT_FAM_GRAPH)
            continue;
        int timed = 0;
        for (size_t k = 0; k < g->t.n; k++)
            timed +=
                g->t.recs[k].kind == CT_REC_GPU && g->t.recs[k].f[CT_GPU_CORR] == r->f[CT_API_CORR];
        const char *kernel = S(&g->t, r->f[CT_API_KERNEL]);
        int captured = !strcmp(kernel, "C1__30us") || !strcmp(kernel, "C2__40us");
        int expect = captured ? 0 : (cupti && fam == CT_FAM_GRAPH ? 2 : 1);
        ck_assert_msg(timed == expect, "%s %s: %d intervals, expected %d",
                      S(&g->t, r->f[CT_API_NAME]), kernel, timed, expect);
    }
}

START_TEST(event_timing_matches_the_simulated_schedule)
{
    const char *env[] = {"CUTRACE_GPU_TIMING=events", NULL};
    struct gpu_run g;
    gpu_run(&g, env);
    ck_assert_str_eq(g.timing, "events");
    /* Tolerance: the anchor's host time is the midpoint of one cuEventRecord
     * call (error <= half of it, well under 1 us here) plus float-ms rounding
     * of cuEventElapsedTime (~0.06 us per second of anchor age); 2 us keeps
     * a loaded CI machine from flaking while still catching a missed op. */
    check_schedule(&g, 2000, 0);
    th_trace_free(&g.t);
}
END_TEST

/* Event-pair timing and a context destroyed right after its last
 * synchronous copy (tests/workloads/w_ctxdestroy.c, in the style of the
 * vectorAddDrv sample): the simulated driver, like CUDA, destroys the
 * context's events with it, so pairs read after cuCtxDestroy were lost
 * (about one run in two lost 1 to 3 of the 4 ops). The shim reads them
 * first: in each of 5 runs all four ops (2 HtoD copies, the launch, the
 * DtoH copy) have their interval and nothing is counted untimed. */
START_TEST(event_pairs_are_read_before_their_context_is_destroyed)
{
    char exe[512];
    snprintf(exe, sizeof(exe), "%s/w_ctxdestroy", th_env("CT_WORKLOADS"));
    const char *argv[] = {exe, NULL};
    const char *env[] = {"CUTRACE_GPU_TIMING=events", NULL};
    for (int k = 0; k < 5; k++) {
        struct th_run r;
        run(&r, th_env("CT_SHIM"), env, argv);
        ck_assert_msg(r.status == 0, "status %d", r.status);
        struct th_trace t;
        th_run_read_trace(&r, 0, &t);
        ck_assert(t.rd.has_footer);
        ck_assert_uint_eq(th_count_kind(&t, CT_REC_GPU), 4);
        for (size_t i = 0; i < t.n; i++)
            ck_assert_msg(
                t.recs[i].kind != CT_REC_DROP || t.recs[i].f[CT_DROP_REASON] != CT_DROP_GPU_UNTIMED,
                "run %d: %llu op(s) untimed", k, (unsigned long long)t.recs[i].f[CT_DROP_COUNT]);
        /* the three synchronous copies' pairs bracket their blocking host
         * call, and say so; the launch's does not */
        int blocking = 0, plain = 0;
        for (size_t i = 0; i < t.n; i++) {
            const struct ct_record *g = &t.recs[i];
            if (g->kind != CT_REC_GPU)
                continue;
            if (g->f[CT_GPU_TYPE] == CT_GPU_MEMCPY)
                blocking += g->f[CT_GPU_SOURCE] == CT_SRC_EVENTS_BLOCKING;
            else
                plain += g->f[CT_GPU_SOURCE] == CT_SRC_EVENTS;
        }
        ck_assert_int_eq(blocking, 3);
        ck_assert_int_eq(plain, 1);
        th_trace_free(&t);
        if (k == 0) { /* the report says how it counted them */
            char *out = th_cutrace("report %s", r.traces);
            ck_assert_msg(strstr(out, "of synchronous copies timed by CUDA event pairs around the "
                                      "host call"),
                          "%s", out);
            free(out);
        }
    }
}
END_TEST

START_TEST(timing_off_records_host_spans_only)
{
    const char *env[] = {"CUTRACE_GPU_TIMING=off", NULL};
    struct gpu_run g;
    gpu_run(&g, env);
    ck_assert_str_eq(g.timing, "off");
    ck_assert_uint_eq(th_count_kind(&g.t, CT_REC_GPU), 0);
    ck_assert_uint_gt(th_count_kind(&g.t, CT_REC_API), 10);
    th_trace_free(&g.t);
}
END_TEST

START_TEST(real_cupti_on_the_simulated_driver_falls_back_to_events)
{
    char lib[600];
    snprintf(lib, sizeof(lib), "CUTRACE_CUPTI_LIB=%s", th_env("CT_REAL_CUPTI"));
    const char *env[] = {lib, NULL};
    struct gpu_run g;
    gpu_run(&g, env);
    ck_assert_str_eq(g.timing, "events");
    ck_assert_msg(g.fallback[0] != 0, "no reason recorded");
    check_schedule(&g, 2000, 0);
    th_trace_free(&g.t);
}
END_TEST

START_TEST(cupti_timing_matches_the_simulated_schedule)
{
    const char *fake = getenv("CT_FAKE_CUPTI");
    if (!fake || !*fake)
        return; /* built without the simulated CUPTI */
    char lib[600];
    snprintf(lib, sizeof(lib), "CUTRACE_CUPTI_LIB=%s", fake);
    const char *env[] = {lib, NULL};
    struct gpu_run g;
    gpu_run(&g, env);
    ck_assert_msg(!strcmp(g.timing, "cupti"), "timing %s: %s", g.timing, g.fallback);
    /* CUPTI reports the device's own times: within 1 us */
    check_schedule(&g, 1000, 1);
    /* its synchronization records join the call that waited (the sync
     * wrappers push the call's correlation id) */
    size_t syncs = 0, joined = 0;
    for (size_t i = 0; i < g.t.n; i++) {
        const struct ct_record *r = &g.t.recs[i];
        if (r->kind != CT_REC_GPU || r->f[CT_GPU_TYPE] != CT_GPU_SYNC)
            continue;
        syncs++;
        for (size_t j = 0; j < g.t.n && r->f[CT_GPU_CORR]; j++)
            if (g.t.recs[j].kind == CT_REC_API && g.t.recs[j].f[CT_API_CORR] == r->f[CT_GPU_CORR] &&
                g.t.recs[j].f[CT_API_FAMILY] == CT_FAM_SYNC) {
                joined++;
                break;
            }
    }
    ck_assert_uint_gt(syncs, 0);
    ck_assert_msg(joined == syncs, "%zu of %zu synchronization records join their call", joined,
                  syncs);
    ck_assert_str_eq(g.cupti_flush, "100"); /* CUPTI's buffers flushed every 100 ms */
    th_trace_free(&g.t);
}
END_TEST

START_TEST(a_short_flush_period_shortens_cuptis)
{
    /* what a SIGKILL takes with CUPTI's buffers is what they hold: at most a
     * flush period's GPU intervals, CUTRACE_FLUSH_MS when it is shorter */
    const char *fake = getenv("CT_FAKE_CUPTI");
    if (!fake || !*fake)
        return;
    char lib[600];
    snprintf(lib, sizeof(lib), "CUTRACE_CUPTI_LIB=%s", fake);
    const char *env[] = {lib, "CUTRACE_FLUSH_MS=2", NULL};
    struct gpu_run g;
    gpu_run(&g, env);
    ck_assert_str_eq(g.timing, "cupti");
    ck_assert_str_eq(g.cupti_flush, "2");
    check_schedule(&g, 1000, 1); /* the same intervals, delivered more often */
    th_trace_free(&g.t);
}
END_TEST

START_TEST(busy_cupti_falls_back_to_events_visibly)
{
    const char *fake = getenv("CT_FAKE_CUPTI");
    if (!fake || !*fake)
        return;
    char lib[600];
    snprintf(lib, sizeof(lib), "CUTRACE_CUPTI_LIB=%s", fake);
    const char *env[] = {lib, "FAKEGPU_CUPTI_BUSY=1", NULL};
    struct gpu_run g;
    gpu_run(&g, env);
    ck_assert_str_eq(g.timing, "events");
    ck_assert_ptr_nonnull(strstr(g.fallback, "busy"));
    check_schedule(&g, 2000, 0);
    th_trace_free(&g.t);
}
END_TEST

/* A CUDA 12 stack's CUPTI (API version 19 for 12.0 to 28 for 12.9 update
 * 1) is read in its own record layouts (shim/gpu_cupti.c): the fake
 * presents 12.0's (19) and 12.6's (24) CUpti_ActivityKernel9, Memcpy5 and
 * Synchronization records, and 12.8's (26) Kernel9 with Memcpy6 and
 * Synchronization2: every op is CUPTI-timed to the device's schedule and
 * the synchronisation records join their calls. CUDA 11.8's (18) and an
 * unknown 14.x are refused, with the version in the reason, and event
 * pairs time the GPU. */
START_TEST(cupti_12_is_read_and_other_versions_fall_back_visibly)
{
    const char *fake = getenv("CT_FAKE_CUPTI");
    if (!fake || !*fake)
        return;
    char lib[600];
    snprintf(lib, sizeof(lib), "CUTRACE_CUPTI_LIB=%s", fake);
    static const struct {
        const char *env, *timing, *reason;
    } cases[] = {{"FAKEGPU_CUPTI_VERSION=24", "cupti", ""},
                 {"FAKEGPU_CUPTI_VERSION=19", "cupti", ""},
                 {"FAKEGPU_CUPTI_VERSION=26", "cupti", ""},
                 {"FAKEGPU_CUPTI_VERSION=18", "events", "CUPTI API version 18;"},
                 {"FAKEGPU_CUPTI_VERSION=140000", "events", "CUPTI API version 140000;"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *env[] = {lib, cases[i].env, NULL};
        struct gpu_run g;
        gpu_run(&g, env);
        ck_assert_msg(!strcmp(g.timing, cases[i].timing), "%s: timing %s (%s)", cases[i].env,
                      g.timing, g.fallback);
        ck_assert_msg(strstr(g.fallback, cases[i].reason), "%s: reason '%s'", cases[i].env,
                      g.fallback);
        check_schedule(&g, g.timing[0] == 'c' ? 1000 : 2000, g.timing[0] == 'c');
        size_t syncs = 0, joined = 0;
        for (size_t k = 0; k < g.t.n; k++) {
            const struct ct_record *r = &g.t.recs[k];
            if (r->kind != CT_REC_GPU || r->f[CT_GPU_TYPE] != CT_GPU_SYNC)
                continue;
            syncs++;
            const struct ct_record *call = api_of(&g.t, r->f[CT_GPU_CORR]);
            joined += call && call->f[CT_API_FAMILY] == CT_FAM_SYNC;
        }
        ck_assert_msg(g.timing[0] != 'c' || (syncs > 0 && joined == syncs),
                      "%s: %zu of %zu synchronization records join their call", cases[i].env,
                      joined, syncs);
        th_trace_free(&g.t);
    }
}
END_TEST

START_TEST(injection_path_alone_records_gpu_intervals)
{
    const char *fake = getenv("CT_FAKE_CUPTI");
    if (!fake || !*fake)
        return;
    /* No LD_PRELOAD: the driver loads the shim through CUDA_INJECTION64_PATH
     * at cuInit. Calls are not interposed then, but CUPTI's intervals are. */
    char inj[600], lib[600], exe[512];
    snprintf(inj, sizeof(inj), "CUDA_INJECTION64_PATH=%s", th_env("CT_SHIM"));
    snprintf(lib, sizeof(lib), "CUTRACE_CUPTI_LIB=%s", fake);
    snprintf(exe, sizeof(exe), "%s/w_gputime", th_env("CT_WORKLOADS"));
    const char *env[] = {inj, lib, NULL};
    const char *argv[] = {exe, NULL};
    struct th_run r;
    run(&r, NULL, env, argv);
    ck_assert_int_eq(r.status, 0);
    char path[512];
    ck_assert_int_eq(th_run_trace(&r, 0, path, sizeof(path)), 1);
    struct th_trace t;
    th_trace_read_file(&t, path);
    size_t kernels = 0;
    for (size_t i = 0; i < t.n; i++)
        kernels += t.recs[i].kind == CT_REC_GPU && t.recs[i].f[CT_GPU_TYPE] == CT_GPU_KERNEL;
    ck_assert_uint_eq(kernels, 7); /* blocker, A, C1, C2 (graph), B, P, L */
    ck_assert_uint_eq(th_count_kind(&t, CT_REC_API), 0);
    th_trace_free(&t);
}
END_TEST

void shim_gpu_tests(TCase *tc)
{
    tcase_add_test(tc, event_timing_matches_the_simulated_schedule);
    tcase_add_test(tc, timing_off_records_host_spans_only);
    tcase_add_test(tc, event_pairs_are_read_before_their_context_is_destroyed);
    tcase_add_test(tc, real_cupti_on_the_simulated_driver_falls_back_to_events);
    tcase_add_test(tc, cupti_timing_matches_the_simulated_schedule);
    tcase_add_test(tc, a_short_flush_period_shortens_cuptis);
    tcase_add_test(tc, busy_cupti_falls_back_to_events_visibly);
    tcase_add_test(tc, cupti_12_is_read_and_other_versions_fall_back_visibly);
    tcase_add_test(tc, injection_path_alone_records_gpu_intervals);
}
