/*
 * Traces and summaries into the fleet store, run by run: each run among
 * the operands (decoder/load/run_identity.h) is loaded and analysed as
 * `cutrace report` would, and its rows (docs/diff.md "Rows") go straight
 * into the adder (fleet_add.c), a line at a time, without a file between.
 * A run the store has already is not loaded at all. Summaries
 * (`cutrace summarize`) load without their traces, so a job of thousands
 * of ranks is added from its summaries alone.
 */
#include "decoder/compare/fleet.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/analysis.h"
#include "decoder/compare/fleet_store.h"
#include "decoder/compare/runs.h"
#include "decoder/load/load.h"
#include "decoder/load/run_identity.h"
#include "decoder/read/inputs.h"
#include "decoder/read/job.h"
#include "decoder/read/summary.h"

/* A FILE whose lines go to the adder as they are written. */
struct sink {
    struct ct_fleet_adder *a;
    char *buf;
    size_t len, cap;
    int rc;
};

static ssize_t sink_write(void *cookie, const char *data, size_t n)
{
    struct sink *s = cookie;
    if (s->rc)
        return -1;
    if (s->len + n > s->cap) {
        size_t c = s->cap ? s->cap : 1 << 16;
        while (c < s->len + n)
            c *= 2;
        char *b = realloc(s->buf, c);
        if (!b) {
            s->rc = -ENOMEM;
            return -1;
        }
        s->buf = b;
        s->cap = c;
    }
    memcpy(s->buf + s->len, data, n);
    s->len += n;
    size_t start = 0;
    for (size_t i = 0; i < s->len && !s->rc; i++)
        if (s->buf[i] == '\n') {
            s->rc = ct_fleet_adder_line(s->a, s->buf + start, i - start);
            start = i + 1;
        }
    memmove(s->buf, s->buf + start, s->len - start);
    s->len -= start;
    return s->rc ? -1 : (ssize_t)n;
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* 1 when the store holds the run whose identities are ids (' '-separated):
 * the identity fleet_add.c keys it by, their sorted '+'-join. */
static int present(struct ct_fdb *db, const char *ids, char *err, size_t errlen)
{
    char *c = strdup(ids), *v[256];
    if (!c)
        return -ENOMEM;
    size_t n = 0;
    for (char *save, *t = strtok_r(c, " ", &save); t && n < 256; t = strtok_r(NULL, " ", &save))
        v[n++] = t;
    qsort(v, n, sizeof(*v), cmp_str);
    char *key = malloc(strlen(ids) + 2);
    if (!key) {
        free(c);
        return -ENOMEM;
    }
    key[0] = 0;
    for (size_t i = 0; i < n; i++) {
        if (i)
            strcat(key, "+");
        strcat(key, v[i]);
    }
    struct ct_fdb_stmt *st;
    int rc = ct_fdb_prepare(db, "SELECT 1 FROM jobs WHERE run_id = $1", &st, err, errlen);
    if (!rc) {
        ct_fdb_bind_text(st, 1, key);
        rc = ct_fdb_step(st);
        if (rc < 0)
            snprintf(err, errlen, "%s", ct_fdb_errmsg(db));
        ct_fdb_finalize(st);
    }
    free(key);
    free(c);
    return rc;
}

/* One run's inputs loaded, analysed and handed to the adder as rows. */
static int one_run(struct ct_fleet_adder *a, const struct ct_inputs *in, char *err, size_t errlen)
{
    struct ct_load_opts lo = {.cmd = "cutrace fleet add", .spill = 1};
    struct ct_job job;
    struct ct_report rep = {0};
    struct ct_iter_opts io = {0, 0, -1, 0};
    int rc = ct_load_job(&lo, in, &job, err, errlen);
    if (rc)
        return rc;
    rc = ct_report_analyze(&job, &io, &rep);
    if (rc) {
        snprintf(err, errlen, "out of memory");
        ct_report_free(&rep);
        ct_job_free(&job);
        return rc;
    }
    struct sink s = {.a = a};
    cookie_io_functions_t fns = {.write = sink_write};
    FILE *f = fopencookie(&s, "w", fns);
    if (!f) {
        rc = -ENOMEM;
        snprintf(err, errlen, "out of memory");
    } else {
        char *dir = strdup(in->paths[0]);
        if (dir)
            ct_rows_write(f, dirname(dir), NULL, &rep);
        else
            rc = -ENOMEM;
        free(dir);
        if (fclose(f) && !rc)
            rc = s.rc ? s.rc : -EIO;
        if (!rc && s.len)
            rc = ct_fleet_adder_line(a, s.buf, s.len);
        if (!rc && s.rc)
            rc = s.rc;
        if (rc && !err[0])
            snprintf(err, errlen, "%s", rc == -ENOMEM ? "out of memory" : "rows not stored");
    }
    free(s.buf);
    ct_report_free(&rep);
    ct_job_free(&job);
    return rc;
}

int ct_fleet_add_traces(struct ct_fdb *db, char *const *operands, int n, int progress,
                        struct ct_fleet_add_stats *st, char *err, size_t errlen)
{
    for (int i = 0; i < n; i++)
        if (ct_load_format(operands[i]) == CT_SOURCE_KINETO) {
            snprintf(err, errlen,
                     "%s: a PyTorch profiler trace: write its rows with cutrace report --rows "
                     "FILE and add those",
                     operands[i]);
            return -EMEDIUMTYPE;
        }
    struct ct_inputs in = {0};
    /* every input as it is (runs are taken apart below), as traces */
    struct ct_load_opts lo = {.cmd = "cutrace fleet add", .no_kineto = 1, .keep_all = 1};
    int rc = ct_load_operands(&lo, &in, operands, n, err, errlen);
    if (rc) {
        ct_inputs_free(&in);
        return rc;
    }
    struct ct_run_list l;
    if ((rc = ct_run_list_read(&in, &l, NULL))) {
        snprintf(err, errlen, "out of memory");
        ct_inputs_free(&in);
        return rc;
    }
    /* the runs, then the inputs that name none (traces from before run
     * identities) as one more */
    for (size_t r = 0; r <= l.n && !rc; r++) {
        size_t want = r < l.n ? r : SIZE_MAX;
        struct ct_inputs sub = {0};
        int summaries = 1;
        for (size_t i = 0; i < in.n && !rc; i++)
            if (l.of[i] == want) {
                rc = ct_inputs_add(&sub, in.paths[i]);
                summaries &= ct_ends_with(in.paths[i], CT_SUMMARY_SUFFIX);
            }
        if (rc || !sub.n) {
            ct_inputs_free(&sub);
            if (rc)
                snprintf(err, errlen, "out of memory");
            continue;
        }
        const char *name = r < l.n ? l.runs[r].ids : "(traces without a run identity)";
        int have = r < l.n ? present(db, l.runs[r].ids, err, errlen) : 0;
        if (have < 0) {
            rc = have;
        } else if (have) {
            st->present++;
            if (progress)
                fprintf(stderr, "cutrace fleet add: run %s: in the store already\n", name);
        } else {
            struct ct_fleet_adder *a;
            if ((rc = ct_fleet_adder_new(db, summaries ? "summaries" : "traces", &a))) {
                snprintf(err, errlen, "out of memory");
            } else {
                char e[512] = "";
                rc = one_run(a, &sub, e, sizeof(e));
                struct ct_fleet_add_stats s = {0};
                char e2[512] = "";
                int rc2 = ct_fleet_adder_end(a, &s, e2, sizeof(e2));
                if (!rc)
                    rc = rc2;
                if (rc)
                    snprintf(err, errlen, "run %s (%s): %s", name, sub.paths[0],
                             e[0]    ? e
                             : e2[0] ? e2
                                     : "failed");
                st->added += s.added;
                st->present += s.present;
                if (!rc && progress)
                    fprintf(stderr, "cutrace fleet add: run %s: %zu traces%s\n", name, sub.n,
                            s.added ? " added" : ", in the store already");
            }
        }
        ct_inputs_free(&sub);
    }
    ct_run_list_free(&l);
    ct_inputs_free(&in);
    return rc;
}
