/*
 * Suite "nvtx": NVTX programs (tests/nvtx/w_nvtx.c, built on the toolkit's
 * NVTX3 headers) and a cutrace.h program run with libcutrace.so as both
 * LD_PRELOAD and NVTX_INJECTION64_PATH; their traces are compared with what
 * the programs say they did: every range with its nesting, messages,
 * domains, and thread names.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/helpers.h"
#include "tests/unit/run.h"

/* Runs exe mode (GPU timing off); SHIM: LD_PRELOAD and NVTX_INJECTION64_PATH
 * = the shim; PRELOAD_ONLY: LD_PRELOAD but no NVTX_INJECTION64_PATH. */
enum how { NO_SHIM, SHIM, PRELOAD_ONLY };
static void run(struct th_run *r, enum how how, const char *exe, const char *mode)
{
    const char *shim = th_env("CT_SHIM");
    char inject[600];
    snprintf(inject, sizeof(inject), "NVTX_INJECTION64_PATH=%s", shim);
    const char *env[] = {how == SHIM ? inject : "NVTX_INJECTION64_PATH", NULL};
    struct th_run_opts o = {
        .preload = how != NO_SHIM ? shim : NULL, .gpu_timing_off = 1, .env = env};
    const char *argv[] = {exe, mode, NULL};
    th_run(r, &o, argv);
}

static void read_trace(const struct th_run *r, struct th_trace *t)
{
    th_run_read_trace(r, 0, t);
    ck_assert(t->rd.has_footer);
}

static const char *S(const struct th_trace *t, uint64_t id)
{
    const char *s = ct_reader_string(&t->rd, id);
    return s ? s : "";
}

/* The integer after "KEY " in out (e.g. "TID 3 "). */
static long value_after(const char *out, const char *key)
{
    const char *p = strstr(out, key);
    ck_assert_msg(p != NULL, "program output lacks \"%s\"", key);
    return strtol(p + strlen(key), NULL, 10);
}

struct range {
    uint64_t start, end, depth;
    const char *domain, *message;
    uint32_t tid;
};

/* The one range with this message (fails unless exactly one). */
static struct range range_named(const struct th_trace *t, const char *message)
{
    struct range g = {0};
    int n = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct ct_record *r = &t->recs[i];
        if (r->kind != CT_REC_NVTX_RANGE || strcmp(S(t, r->f[CT_NVTX_MESSAGE]), message))
            continue;
        g = (struct range){r->f[CT_NVTX_START],         r->f[CT_NVTX_END],
                           r->f[CT_NVTX_DEPTH],         S(t, r->f[CT_NVTX_DOMAIN]),
                           S(t, r->f[CT_NVTX_MESSAGE]), r->tid};
        n++;
    }
    ck_assert_msg(n == 1, "%d ranges \"%s\" in the trace, expected 1", n, message);
    ck_assert_uint_le(g.start, g.end);
    return g;
}

static size_t count_ranges(const struct th_trace *t, const char *message)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += t->recs[i].kind == CT_REC_NVTX_RANGE &&
             !strcmp(S(t, t->recs[i].f[CT_NVTX_MESSAGE]), message);
    return n;
}

/* The one mark with this message; its domain in *domain. */
static uint64_t mark_named(const struct th_trace *t, const char *message, const char **domain)
{
    uint64_t when = 0;
    int n = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct ct_record *r = &t->recs[i];
        if (r->kind != CT_REC_NVTX_MARK || strcmp(S(t, r->f[CT_MARK_MESSAGE]), message))
            continue;
        when = r->f[CT_MARK_TIME];
        *domain = S(t, r->f[CT_MARK_DOMAIN]);
        n++;
    }
    ck_assert_msg(n == 1, "%d marks \"%s\" in the trace, expected 1", n, message);
    return when;
}

/* child lies within parent in time, one level deeper, same thread. */
static void assert_nested(const struct range *parent, const struct range *child)
{
    ck_assert_uint_le(parent->start, child->start);
    ck_assert_uint_ge(parent->end, child->end);
    ck_assert_uint_eq(child->depth, parent->depth + 1);
    ck_assert_uint_eq(child->tid, parent->tid);
}

/* The last value of thread metadata `key` for thread scope id, or NULL. */
static const char *thread_meta(const struct th_trace *t, uint64_t id, const char *key)
{
    const char *v = NULL;
    for (size_t i = 0; i < t->n; i++) {
        const struct ct_record *r = &t->recs[i];
        if (r->kind == CT_REC_META && r->f[CT_META_SCOPE] == CT_SCOPE_THREAD &&
            r->f[CT_META_SCOPE_ID] == id && !strcmp(S(t, r->f[CT_META_KEY]), key))
            v = S(t, r->f[CT_META_VALUE]);
    }
    return v;
}

static long recorder_meta(const struct th_trace *t, const char *key)
{
    for (size_t i = 0; i < t->n; i++) {
        const struct ct_record *r = &t->recs[i];
        if (r->kind == CT_REC_META && r->f[CT_META_SCOPE] == CT_SCOPE_RECORDER &&
            !strcmp(S(t, r->f[CT_META_KEY]), key))
            return atol(S(t, r->f[CT_META_VALUE]));
    }
    return 0;
}

START_TEST(nested_ranges_marks_and_domains_are_recorded_exactly)
{
    struct th_run r;
    run(&r, SHIM, th_env("CT_W_NVTX"), "ranges");
    char *out = th_run_clean(&r);
    /* NVTX's return values: 0-based levels, per domain */
    ck_assert_ptr_nonnull(strstr(out, "RET push 0 1 2 pop 2 1 0\n"));
    ck_assert_ptr_nonnull(strstr(out, "RET start 1 1\n"));
    ck_assert_ptr_nonnull(strstr(out, "RET domain 0 0 1 pop 0 1 0\n"));
    ck_assert_ptr_nonnull(strstr(out, "RET same_domain 1\n"));
    uint32_t main_tid = (uint32_t)value_after(out, "TID main ");
    uint32_t ender_tid = (uint32_t)value_after(out, "TID ender ");
    struct th_trace t;
    read_trace(&r, &t);

    /* three deep on the main thread, depth = level + 1, default domain "" */
    struct range outer = range_named(&t, "outer");
    struct range middle = range_named(&t, "middle");
    struct range inner = range_named(&t, "inner-\xc3\xa9\xe2\x86\x92\xf0\x9f\x98\x80");
    ck_assert_uint_eq(outer.depth, 1);
    ck_assert_uint_eq(outer.tid, main_tid);
    ck_assert_str_eq(outer.domain, "");
    ck_assert_str_eq(middle.domain, "");
    ck_assert_str_eq(inner.domain, "");
    assert_nested(&outer, &middle);
    assert_nested(&middle, &inner);
    /* the program slept 1 ms inside each level on both sides */
    ck_assert_uint_ge(middle.start - outer.start, 1000000);
    ck_assert_uint_ge(outer.end - middle.end, 1000000);
    const char *dom;
    uint64_t m = mark_named(&t, "mark-ascii", &dom);
    ck_assert_str_eq(dom, "");
    ck_assert(m >= inner.start && m <= inner.end);
    ck_assert_uint_eq(range_named(&t, "ex-wide-\xc3\xbc").depth, 1);
    mark_named(&t, "mark-wide-\xc3\x9f", &dom);
    mark_named(&t, "mark-ex", &dom);

    /* start/end: depth 0; the record is the ending thread's */
    struct range cross = range_named(&t, "cross-thread");
    ck_assert_uint_eq(cross.depth, 0);
    ck_assert_uint_eq(cross.tid, ender_tid);
    ck_assert_uint_ge(cross.end - cross.start, 2000000);
    ck_assert_uint_eq(range_named(&t, "start-wide").depth, 0);

    /* a domain with registered strings, interleaved with the default domain */
    struct range reg = range_named(&t, "registered-msg");
    struct range regw = range_named(&t, "registered-wide-\xc3\xa5");
    struct range between = range_named(&t, "default-in-between");
    ck_assert_str_eq(reg.domain, "my-domain");
    ck_assert_str_eq(regw.domain, "my-domain");
    ck_assert_uint_eq(reg.depth, 1);
    assert_nested(&reg, &regw);
    ck_assert_str_eq(between.domain, "");
    ck_assert_uint_eq(between.depth, 1);
    ck_assert(between.start >= reg.start && between.start <= regw.start);
    ck_assert(between.end >= regw.start && between.end <= regw.end);
    mark_named(&t, "registered-msg", &dom);
    ck_assert_str_eq(dom, "my-domain");
    struct range dstart = range_named(&t, "domain-start");
    ck_assert_str_eq(dstart.domain, "my-domain");
    ck_assert_uint_eq(dstart.depth, 0);
    mark_named(&t, "wide-domain-mark", &dom);
    ck_assert_str_eq(dom, "wide-domain");

    ck_assert_uint_eq(th_count_kind(&t, CT_REC_NVTX_RANGE), 10);
    ck_assert_uint_eq(th_count_kind(&t, CT_REC_NVTX_MARK), 5);
    ck_assert_int_eq(recorder_meta(&t, "nvtx_pop_unmatched"), 0);
    ck_assert_uint_eq(th_count_kind(&t, CT_REC_ERROR), 0);
    th_trace_free(&t);
    free(out);
}
END_TEST

START_TEST(threads_named_every_way_are_named_in_the_trace)
{
    struct th_run r;
    run(&r, SHIM, th_env("CT_W_NVTX"), "threads");
    char *out = th_run_clean(&r);
    ck_assert_ptr_nonnull(strstr(out, "RET setname_other 0\n"));
    struct th_trace t;
    read_trace(&r, &t);
    static const char *const names[8] = {"w-set-0",   "w-set-1",   "w-set-2",  "w-prctl-3",
                                         "w-prctl-4", "w-prctl-5", "w-nvtx-6", "w-by-main-7"};
    for (int i = 0; i < 8; i++) {
        char key[16], msg[32];
        snprintf(key, sizeof(key), "TID %d ", i);
        uint32_t tid = (uint32_t)value_after(out, key);
        const char *name = thread_meta(&t, tid, "name");
        ck_assert_msg(name != NULL, "thread %d (tid %u) has no name in the trace", i, tid);
        ck_assert_str_eq(name, names[i]);
        snprintf(msg, sizeof(msg), "work-%d", i);
        struct range work = range_named(&t, msg);
        snprintf(msg, sizeof(msg), "inner-%d", i);
        struct range inner = range_named(&t, msg);
        ck_assert_uint_eq(work.tid, tid);
        ck_assert_uint_eq(work.depth, 1);
        assert_nested(&work, &inner);
    }
    ck_assert_int_eq(recorder_meta(&t, "thread_names_lost"), 0);
    th_trace_free(&t);
    free(out);
}
END_TEST

START_TEST(unmatched_pops_and_overflowing_pushes_are_counted)
{
    struct th_run r;
    run(&r, SHIM, th_env("CT_W_NVTX"), "anomalies");
    char *out = th_run_clean(&r);
    ck_assert_ptr_nonnull(strstr(out, "RET pop_empty -1 deep_ok 1 domain_pop_empty -1\n"));
    struct th_trace t;
    read_trace(&r, &t);
    /* the stack holds 64: those are recorded, properly nested; 6 are counted */
    ck_assert_uint_eq(count_ranges(&t, "deep"), 64);
    uint64_t seen = 0;
    const struct ct_record *prev = NULL;
    for (size_t i = 0; i < t.n; i++) {
        const struct ct_record *x = &t.recs[i];
        if (x->kind != CT_REC_NVTX_RANGE)
            continue;
        /* pops come innermost first: depths 64, 63, ..., 1, each enclosing the previous */
        ck_assert_uint_eq(x->f[CT_NVTX_DEPTH], 64 - seen);
        if (prev) {
            ck_assert_uint_le(x->f[CT_NVTX_START], prev->f[CT_NVTX_START]);
            ck_assert_uint_ge(x->f[CT_NVTX_END], prev->f[CT_NVTX_END]);
        }
        prev = x;
        seen++;
    }
    ck_assert_int_eq(recorder_meta(&t, "nvtx_push_overflow"), 6);
    ck_assert_int_eq(recorder_meta(&t, "nvtx_pop_unmatched"), 2);
    ck_assert_int_eq(recorder_meta(&t, "nvtx_end_unmatched"), 1);
    /* the first of each kind is also an error record (a killed job keeps it) */
    ck_assert_uint_eq(th_count_kind(&t, CT_REC_ERROR), 3);
    th_trace_free(&t);
    free(out);
}
END_TEST

START_TEST(second_client_library_and_second_init_are_harmless)
{
    struct th_run r;
    run(&r, SHIM, th_env("CT_W_NVTX"), "twice");
    char *out = th_run_clean(&r);
    ck_assert_ptr_nonnull(strstr(out, "RET again 1 levels 0 1\n"));
    struct th_trace t;
    read_trace(&r, &t);
    ck_assert_uint_eq(count_ranges(&t, "main-before"), 1);
    ck_assert_uint_eq(count_ranges(&t, "client-range"), 2);
    ck_assert_uint_eq(count_ranges(&t, "client-default"), 2);
    struct range a = range_named(&t, "main-after");
    struct range b = range_named(&t, "main-after-inner");
    assert_nested(&a, &b);
    for (size_t i = 0; i < t.n; i++)
        if (t.recs[i].kind == CT_REC_NVTX_RANGE &&
            !strcmp(S(&t, t.recs[i].f[CT_NVTX_MESSAGE]), "client-range"))
            ck_assert_str_eq(S(&t, t.recs[i].f[CT_NVTX_DOMAIN]), "client");
    ck_assert_uint_eq(th_count_kind(&t, CT_REC_NVTX_RANGE), 7);
    th_trace_free(&t);
    free(out);
}
END_TEST

START_TEST(without_injection_path_nvtx_records_nothing)
{
    /* LD_PRELOAD alone: NVTX never loads us, and naming threads is not an
     * event, so the process writes no trace at all. */
    struct th_run r;
    run(&r, PRELOAD_ONLY, th_env("CT_W_NVTX"), "threads");
    free(th_run_clean(&r));
    char path[512];
    ck_assert_int_eq(th_run_trace(&r, 0, path, sizeof(path)), 0);
}
END_TEST

START_TEST(user_api_is_a_no_op_without_the_shim)
{
    struct th_run r;
    run(&r, NO_SHIM, th_env("CT_W_API"), "");
    char *out = th_run_clean(&r);
    ck_assert_str_eq(out, "RET recording 0 push -1 -1 pop -1 -1 -1 flush -38\n");
    char path[512];
    ck_assert_int_eq(th_run_trace(&r, 0, path, sizeof(path)), 0);
    free(out);
}
END_TEST

START_TEST(user_api_records_ranges_and_marks_in_domain_cutrace)
{
    struct th_run r;
    run(&r, PRELOAD_ONLY, th_env("CT_W_API"), "");
    char *out = th_run_clean(&r);
    ck_assert_str_eq(out, "RET recording 1 push 0 1 pop 1 0 -1 flush 0\n");
    struct th_trace t;
    read_trace(&r, &t);
    struct range step = range_named(&t, "step");
    struct range fwd = range_named(&t, "forward");
    ck_assert_str_eq(step.domain, "cutrace");
    ck_assert_str_eq(fwd.domain, "cutrace");
    ck_assert_uint_eq(step.depth, 1);
    assert_nested(&step, &fwd);
    const char *dom;
    uint64_t m = mark_named(&t, "api-mark", &dom);
    ck_assert_str_eq(dom, "cutrace");
    ck_assert(m >= fwd.start && m <= fwd.end);
    ck_assert_int_eq(recorder_meta(&t, "nvtx_pop_unmatched"), 1);
    th_trace_free(&t);
    free(out);
}
END_TEST

static Suite *nvtx_suite(void)
{
    Suite *s = suite_create("nvtx");
    TCase *tc = tcase_create("nvtx");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, nested_ranges_marks_and_domains_are_recorded_exactly);
    tcase_add_test(tc, threads_named_every_way_are_named_in_the_trace);
    tcase_add_test(tc, unmatched_pops_and_overflowing_pushes_are_counted);
    tcase_add_test(tc, second_client_library_and_second_init_are_harmless);
    tcase_add_test(tc, without_injection_path_nvtx_records_nothing);
    suite_add_tcase(s, tc);
    TCase *api = tcase_create("user_api");
    tcase_set_timeout(api, 60);
    tcase_add_test(api, user_api_is_a_no_op_without_the_shim);
    tcase_add_test(api, user_api_records_ranges_and_marks_in_domain_cutrace);
    suite_add_tcase(s, api);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(nvtx_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
