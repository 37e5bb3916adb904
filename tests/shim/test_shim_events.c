/*
 * Suite "shim", dependency edges: w_events records events on stream A and
 * waits on them from stream B through every interposition path; the trace
 * must hold each of those calls with its stream and the event's id, the
 * same id in the record and in the wait, and none of the events the shim
 * itself records to time GPU work.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decoder/read/summary.h"
#include "decoder/read/timeline.h"
#include "decoder/util/names.h"
#include "tests/shim/shim_run.h"
#include "decoder/read/devices.h"
#include "decoder/read/extract.h"

struct expect_call {
    char name[64];
    unsigned long long event, stream;
};

struct events_run {
    struct th_trace t;
    char path[TH_RUN_PATH];
    struct expect_call exp[64];
    int nexp;
    struct expect_call sync[16]; /* the syncs, with the stream each waits for (0: every) */
    int nsync;
    int records, waits, launches;
    unsigned long long sa, sb, spt;
};

static void events_run(struct events_run *e, const char *timing)
{
    char exe[512], env0[64];
    snprintf(exe, sizeof(exe), "%s/w_events", th_env("CT_WORKLOADS"));
    snprintf(env0, sizeof(env0), "CUTRACE_GPU_TIMING=%s", timing);
    const char *argv[] = {exe, NULL};
    const char *env[] = {env0, NULL};
    struct th_run r;
    run(&r, th_env("CT_SHIM"), env, argv);
    char *out = th_run_clean(&r);
    memset(e, 0, sizeof(*e));
    ck_assert(sscanf(strstr(out, "STREAMS"), "STREAMS a=%llu b=%llu pt=%llu", &e->sa, &e->sb,
                     &e->spt) == 3);
    ck_assert(sscanf(strstr(out, "CALLS"), "CALLS records=%d waits=%d launches=%d", &e->records,
                     &e->waits, &e->launches) == 3);
    for (char *p = strstr(out, "EXPECT "); p; p = strstr(p + 1, "EXPECT ")) {
        ck_assert_int_lt(e->nexp, 64);
        struct expect_call *x = &e->exp[e->nexp++];
        ck_assert(sscanf(p, "EXPECT %63s %llu %llu", x->name, &x->event, &x->stream) == 3);
    }
    for (char *p = strstr(out, "SYNC "); p; p = strstr(p + 1, "SYNC ")) {
        ck_assert_int_lt(e->nsync, 16);
        struct expect_call *x = &e->sync[e->nsync++];
        ck_assert(sscanf(p, "SYNC %63s %llu", x->name, &x->stream) == 2);
    }
    ck_assert_int_eq(e->nexp, e->records + e->waits + 1); /* and the one cuEventSynchronize */
    ck_assert_int_eq(th_run_trace(&r, 0, e->path, sizeof(e->path)), 1);
    th_trace_read_file(&e->t, e->path);
    ck_assert(e->t.rd.has_footer);
    free(out);
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && !strcmp(s + n - m, tail);
}

/*
 * The event calls of the trace, in order, against the expectations; no
 * other cuEventRecord* call in the trace (the shim's own timing events go
 * to the driver directly); no other call carries an event.
 */
static void check_event_calls(struct events_run *e)
{
    int k = 0, records = 0, launches = 0;
    for (size_t i = 0; i < e->t.n; i++) {
        const struct ct_record *r = &e->t.recs[i];
        if (r->kind != CT_REC_API)
            continue;
        const uint64_t *f = r->f;
        const char *name = S(&e->t, f[CT_API_NAME]);
        uint64_t id = 0;
        int has = ct_api_event(f, &id);
        records += !strncmp(name, "cuEventRecord", 13);
        launches += f[CT_API_FAMILY] == CT_FAM_LAUNCH;
        if (!has) {
            ck_assert_msg(strncmp(name, "cuEventRecord", 13) &&
                              strncmp(name, "cuStreamWaitEvent", 17),
                          "%s without its event", name);
            continue;
        }
        ck_assert_msg(k < e->nexp, "event call %s (event %" PRIu64 ") that was not made", name, id);
        const struct expect_call *x = &e->exp[k++];
        ck_assert_str_eq(name, x->name);
        ck_assert_msg(id == x->event, "%s: event %" PRIu64 ", expected %llu", name, id, x->event);
        ck_assert_msg(f[CT_API_STREAM] == x->stream, "%s: stream %" PRIu64 ", expected %llu", name,
                      f[CT_API_STREAM], x->stream);
        ck_assert_str_eq(ct_name_family(f[CT_API_FAMILY]), "sync");
        int esync = !strcmp(name, "cuEventSynchronize"); /* waits: no stream, no device */
        ck_assert_int_eq((int64_t)f[CT_API_DEVICE], esync ? -1 : 0);
        ck_assert_int_eq((int64_t)f[CT_API_RESULT], 0);
        unsigned want = esync
                            ? CT_APIF_EVENT
                            : CT_APIF_ASYNC | CT_APIF_EVENT | (ends_with(name, "_ptsz") ? 1u : 0u);
        ck_assert_msg(f[CT_API_FLAGS] == want, "%s: flags %" PRIu64 ", expected %u", name,
                      f[CT_API_FLAGS], want);
        ck_assert_uint_gt(f[CT_API_CORR], 0);
    }
    ck_assert_msg(k == e->nexp, "%d of %d event calls recorded", k, e->nexp);
    ck_assert_int_eq(records, e->records);
    ck_assert_int_eq(launches, e->launches);
}

/* Every wait follows a record of its event on stream A (or the per-thread
 * stream) and is on stream B: the edge a dependency graph draws. */
static void check_edges(const struct events_run *e)
{
    for (int i = 0; i < e->nexp; i++) {
        const struct expect_call *w = &e->exp[i];
        if (strncmp(w->name, "cuStreamWaitEvent", 17))
            continue;
        ck_assert_uint_eq(w->stream, e->sb);
        int j = i - 1;
        while (j >= 0 && e->exp[j].event != w->event)
            j--;
        ck_assert_msg(j >= 0 && !strncmp(e->exp[j].name, "cuEventRecord", 13),
                      "wait on %llu without its record", w->event);
        ck_assert(e->exp[j].stream == e->sa || e->exp[j].stream == e->spt);
    }
}

/* What each sync waited for (decoder/read/extract_join.c, struct
 * ct_syncon), in call order: a stream's sync its stream, from its own
 * start; the event's sync the per-thread stream the event was recorded
 * on, from the record (the one the edge on the per-thread stream has);
 * the legacy stream's every blocking stream (CT_SYNCON_BLOCKING: not A
 * or B, created non-blocking) and the context's every stream (0). */
static void check_decoded_syncs(const struct events_run *e, const struct ct_proc *p)
{
    int64_t rec = INT64_MIN;
    for (size_t i = 0; i < p->nedges; i++)
        if (p->edges[i].from == e->spt)
            rec = p->edges[i].rec;
    ck_assert_int_ne(rec, INT64_MIN);
    /* A and B were created non-blocking; the per-thread stream is not */
    ck_assert(ct_is_nonblocking(p, (uint32_t)e->sa) && ct_is_nonblocking(p, (uint32_t)e->sb));
    ck_assert(!ct_is_nonblocking(p, (uint32_t)e->spt));
    ck_assert_uint_eq(p->nnonblock, 2);
    ck_assert_uint_eq(p->nsyncs, (size_t)e->nsync);
    ck_assert_int_eq(e->nsync, 8);
    for (int i = 0; i < e->nsync; i++) {
        const struct ct_syncon *o = &p->syncs[i];
        ck_assert_msg(o->stream == e->sync[i].stream, "%s: waits for stream %u, expected %llu",
                      e->sync[i].name, o->stream, e->sync[i].stream);
        int esync = !strcmp(e->sync[i].name, "cuEventSynchronize");
        ck_assert_int_eq(o->rec, esync ? rec : o->t);
        ck_assert(!i || o[-1].t <= o->t);
    }
}

/* The decoder joins each wait to the latest record of its event before it
 * (decoder/read/extract_join.c): one edge per wait, by wait time, from the
 * record's stream to the wait's, the record earlier; and the summary
 * carries them (docs/summary.md). */
static void check_decoded_edges(const struct events_run *e)
{
    struct ct_proc p;
    char err[512];
    ck_assert_msg(!ct_proc_extract_file(e->path, NULL, &p, err, sizeof(err)), "%s", err);
    size_t k = 0;
    for (int i = 0; i < e->nexp; i++) {
        const struct expect_call *w = &e->exp[i];
        if (strncmp(w->name, "cuStreamWaitEvent", 17))
            continue;
        int j = i - 1;
        while (j >= 0 && e->exp[j].event != w->event)
            j--;
        ck_assert_uint_lt(k, p.nedges);
        const struct ct_evedge *x = &p.edges[k++];
        ck_assert_uint_eq(x->from, e->exp[j].stream);
        ck_assert_uint_eq(x->to, w->stream);
        ck_assert_int_lt(x->rec, x->wait);
        ck_assert(k < 2 || x[-1].wait <= x->wait);
    }
    ck_assert_uint_eq(k, p.nedges);
    ck_assert_uint_gt(k, 0);
    check_decoded_syncs(e, &p);
    char sum[TH_RUN_PATH + 8];
    snprintf(sum, sizeof(sum), "%s.ctsum", e->path);
    struct ct_proc q;
    ck_assert_msg(!ct_summary_write(sum, &p, NULL, err, sizeof(err)), "%s", err);
    ck_assert_msg(!ct_summary_read(sum, NULL, &q, err, sizeof(err)), "%s", err);
    unlink(sum);
    ck_assert_uint_eq(q.nedges, p.nedges);
    ck_assert(!memcmp(q.edges, p.edges, p.nedges * sizeof(*p.edges)));
    ck_assert_uint_eq(q.nsyncs, p.nsyncs);
    for (size_t i = 0; i < p.nsyncs; i++)
        ck_assert(q.syncs[i].t == p.syncs[i].t && q.syncs[i].rec == p.syncs[i].rec &&
                  q.syncs[i].stream == p.syncs[i].stream);
    ck_assert_uint_eq(q.nnonblock, p.nnonblock);
    ck_assert(!memcmp(q.nonblock, p.nonblock, p.nnonblock * sizeof(*p.nonblock)));
    ct_proc_free(&q);
    ct_proc_free(&p);
}

static size_t gpu_from(const struct th_trace *t, unsigned source)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += t->recs[i].kind == CT_REC_GPU && t->recs[i].f[CT_GPU_TYPE] == CT_GPU_KERNEL &&
             t->recs[i].f[CT_GPU_SOURCE] == source;
    return n;
}

START_TEST(event_ids_join_records_and_waits_on_every_path)
{
    struct events_run e;
    events_run(&e, "off");
    check_event_calls(&e);
    check_edges(&e);
    check_decoded_edges(&e);
    /* 4 paths x 4 variants, plus the per-thread stream's record */
    ck_assert_int_eq(e.records, 17);
    th_trace_free(&e.t);
}
END_TEST

/* With CUDA-event GPU timing the shim records two events per launch on
 * the launch's stream: they time the kernels and are not the job's calls. */
START_TEST(timing_events_of_the_shim_are_not_job_calls)
{
    struct events_run e;
    events_run(&e, "events");
    check_event_calls(&e);
    check_edges(&e);
    ck_assert_uint_eq(gpu_from(&e.t, CT_SRC_EVENTS), (size_t)e.launches);
    th_trace_free(&e.t);
}
END_TEST

/* The event shows in both dumps on the event calls alone, and the JSON
 * keeps the documented contract (tests/e2e/check_dump_json.py). */
START_TEST(dump_shows_the_event_on_event_calls_only)
{
    struct events_run e;
    events_run(&e, "off");
    char *json = th_cutrace("dump --json %s", e.path);
    int seen = 0;
    for (char *line = json, *nl; *line; line = nl + 1) {
        nl = strchr(line, '\n');
        ck_assert_ptr_nonnull(nl);
        *nl = 0;
        if (!strstr(line, "\"kind\":\"api\""))
            continue;
        int call = strstr(line, "\"name\":\"cuEventRecord") ||
                   strstr(line, "\"name\":\"cuStreamWaitEvent") ||
                   strstr(line, "\"name\":\"cuEventSynchronize");
        char want[64];
        snprintf(want, sizeof(want), ",\"event\":%llu", e.exp[seen < e.nexp ? seen : 0].event);
        if (call) {
            ck_assert_msg(strstr(line, want), "expected %s in %s", want, line);
            seen++;
        } else {
            ck_assert_msg(!strstr(line, "\"event\""), "event on %s", line);
        }
    }
    ck_assert_int_eq(seen, e.nexp);
    free(json);
    /* a destroyed event's handle may come back in a later round */
    int waits_on = 0;
    for (int i = 0; i < e.nexp; i++)
        waits_on += e.exp[i].event == e.exp[1].event && !strcmp(e.exp[i].name, e.exp[1].name);
    char *text = th_cutrace("dump %s | grep -c ' name=%s .* event=%llu'", e.path, e.exp[1].name,
                            e.exp[1].event);
    ck_assert_int_eq(atoi(text), waits_on);
    free(text);
    char *check = th_cutrace("dump --json %s | python3 %s/tests/e2e/check_dump_json.py", e.path,
                             th_env("CT_SOURCE"));
    ck_assert_ptr_nonnull(strstr(check, "records valid"));
    free(check);
    th_trace_free(&e.t);
}
END_TEST

void shim_events_tests(TCase *tc)
{
    tcase_add_test(tc, event_ids_join_records_and_waits_on_every_path);
    tcase_add_test(tc, timing_events_of_the_shim_are_not_job_calls);
    tcase_add_test(tc, dump_shows_the_event_on_event_calls_only);
}
