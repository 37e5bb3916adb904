/*
 * JSON-lines rows of per-run, per-rank, per-iteration metrics
 * (`--rows FILE` of diff, diagnose and report): one self-describing object a line,
 * flat columns, so a fleet database loads thousands of runs with its JSON
 * reader (DuckDB read_json_auto, Spark, BigQuery, SQLite json_extract).
 * Columns are documented in docs/diff.md. Never prints elsewhere.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "decoder/compare/diff.h"
#include "decoder/read/inputs.h"
#include "decoder/util/json.h"
#include "decoder/kineto/kineto.h"
#include "decoder/compare/runs.h"

static void col(FILE *f, const char *k, double ns)
{
    fputc(',', f);
    ct_json_member(f, k, ns / 1e3, 3);
}

static void common(FILE *f, const char *kind, const struct ct_run *run, const char *side,
                   const struct ct_rank_result *x)
{
    char buf[512];
    fprintf(f, "{\"row\":\"%s\",\"run\":", kind);
    ct_json_str(f, run->name);
    fprintf(f, ",\"side\":");
    if (side)
        ct_json_str(f, side);
    else
        fprintf(f, "null");
    fprintf(f, ",\"rank\":%d,\"host\":", x->rank->rank);
    ct_json_str(f, x->rank->host);
    fprintf(f, ",\"gpu\":");
    ct_json_str(f, ct_run_value(run, "device.name", buf, sizeof(buf)));
    fprintf(f, ",\"driver\":");
    ct_json_str(f, ct_run_value(run, "device.driver_version", buf, sizeof(buf)));
    fprintf(f, ",\"nccl_version\":");
    ct_json_str(f, ct_run_value(run, "nccl_version", buf, sizeof(buf)));
    /* tags and NCCL_* settings as one object: {"tag.K":"V","env.NCCL_X":"V"} */
    fprintf(f, ",\"labels\":{");
    int first = 1;
    if (run->facts && run->n) {
        const struct ct_trace_facts *t = &run->facts[0];
        for (size_t i = 0; i < t->nmeta; i++) {
            const char *k = t->meta[i].key;
            if (strncmp(k, "tag.", 4) && strncmp(k, "env.NCCL_", 9))
                continue;
            fprintf(f, "%s", first ? "" : ",");
            ct_json_str(f, k);
            fputc(':', f);
            ct_json_str(f, t->meta[i].value);
            first = 0;
        }
    }
    fputc('}', f);
}

void ct_rows_write(FILE *f, const struct ct_run *run, const char *side, const struct ct_report *rep)
{
    for (size_t r = 0; r < rep->nr; r++) {
        const struct ct_rank_result *x = &rep->rr[r];
        for (size_t i = 0; i < x->niters; i++) {
            const struct ct_iter *it = &x->iters[i];
            const struct ct_iter_metrics *m = &x->im[i];
            common(f, "iteration", run, side, x);
            fprintf(f, ",\"iteration\":%" PRId64, it->index);
            col(f, "start_us", (double)(it->s - rep->job->t0));
            col(f, "duration_us", (double)(it->e - it->s));
            col(f, "compute_us", (double)m->compute);
            col(f, "comm_us", (double)m->comm);
            col(f, "memory_us", (double)m->memory);
            col(f, "idle_us", (double)m->idle);
            col(f, "exposed_comm_us", (double)m->exposed_comm);
            col(f, "bubble_us", (double)m->bubble);
            fprintf(f, "}\n");
        }
        const struct ct_attribution *a = &x->at;
        common(f, "rank", run, side, x);
        fprintf(f, ",\"iteration\":null,\"iterations\":%zu", x->niters);
        col(f, "window_us", (double)x->covered);
        col(f, "compute_us", (double)x->compute);
        col(f, "comm_us", (double)x->comm);
        col(f, "memory_us", (double)x->memory);
        col(f, "idle_us", (double)x->idle);
        col(f, "exposed_comm_us", (double)x->exposed_comm);
        col(f, "bubble_us", (double)a->pipeline_bubble);
        col(f, "data_stall_us", (double)a->data_stall);
        col(f, "checkpoint_stall_us", (double)a->checkpoint_stall);
        col(f, "sync_drain_us", (double)a->sync_drain);
        col(f, "launch_overhead_us", (double)a->launch_overhead);
        col(f, "unexplained_us", (double)a->unexplained);
        col(f, "lateness_us", (double)x->lateness);
        fputc(',', f);
        ct_json_member(f, "slowness", x->slowness, 4);
        fputs("}\n", f);
    }
}

int ct_report_rows(const char *path, char *const *operands, int noperands,
                   const struct ct_report *rep, char *err, size_t errlen)
{
    struct ct_inputs in = {0};
    int rc = 0;
    err[0] = 0;
    for (int i = 0; i < noperands && !rc; i++)
        if (!ct_kineto_operand(operands[i]))
            rc = ct_inputs_expand(&in, operands + i, 1, err, errlen);
    struct ct_run run = {.name = noperands > 0 ? operands[0] : "", .paths = in.paths, .n = in.n};
    if (!rc)
        rc = ct_run_scan(&run, err, errlen);
    FILE *f = NULL;
    if (!rc && !(f = fopen(path, "w"))) {
        rc = -errno;
        snprintf(err, errlen, "--rows %s: %s", path, strerror(errno));
    }
    if (rc == -ENOMEM && !err[0])
        snprintf(err, errlen, "out of memory");
    if (f) {
        ct_rows_write(f, &run, NULL, rep);
        if (fclose(f) != 0) {
            rc = -EIO;
            snprintf(err, errlen, "--rows %s: write error", path);
        }
    }
    for (size_t i = 0; run.facts && i < run.n; i++)
        ct_facts_free(&run.facts[i]);
    free(run.facts);
    ct_inputs_free(&in);
    return rc;
}
