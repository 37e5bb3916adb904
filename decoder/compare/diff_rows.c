/*
 * JSON-lines rows of a run's job, ranks, iterations, kernels,
 * collectives and NCCL's links (`--rows FILE` of diff, diagnose and report): one
 * self-describing object a line, flat columns, with what a fleet database
 * joins on (job id, run start, host, GPU, driver, CUDA and NCCL versions,
 * tags), so it loads thousands of runs with its JSON reader (DuckDB
 * read_json_auto, Spark, BigQuery, the sqlite3 CLI and json_extract).
 * Columns and their version are documented in docs/diff.md. Never prints
 * elsewhere.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "decoder/analysis/efficiency.h"
#include "decoder/analysis/goodput.h"
#include "decoder/analysis/health.h"
#include "decoder/analysis/nccl_links.h"
#include "decoder/compare/diff.h"
#include "decoder/read/facts.h"
#include "decoder/util/json.h"
#include "decoder/compare/runs.h"
#include "decoder/util/names.h"

static void col(FILE *f, const char *k, double ns)
{
    fputc(',', f);
    ct_json_member(f, k, ns / 1e3, 3);
}

/* The job's time zero (its first GPU start, realtime) as ISO 8601 UTC. */
static void run_start(FILE *f, const struct ct_report *rep)
{
    int64_t ns = rep->job->t0;
    time_t sec = (time_t)(ns / 1000000000);
    struct tm tm;
    char buf[64];
    if (ns <= 0 || !gmtime_r(&sec, &tm) || !strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm)) {
        fputs("null", f);
        return;
    }
    fprintf(f, "\"%s.%06ldZ\"", buf, (long)(ns % 1000000000 / 1000));
}

/* The columns every row has; rank rows and iteration rows name their rank
 * (x), job, kernel and collective rows have rank and host null. */
static void common(FILE *f, const char *kind, const char *name, const char *side,
                   const struct ct_report *rep, const struct ct_rank_result *x)
{
    char buf[512];
    fprintf(f,
            "{\"schema\":\"cutrace.rows\",\"version\":%d,\"row\":\"%s\",\"run\":", CT_ROWS_VERSION,
            kind);
    ct_json_str(f, name);
    fprintf(f, ",\"side\":");
    if (side)
        ct_json_str(f, side);
    else
        fprintf(f, "null");
    fprintf(f, ",\"job\":");
    ct_json_str(f, ct_run_value(rep->job, "job", buf, sizeof(buf)));
    fprintf(f, ",\"run_start_utc\":");
    run_start(f, rep);
    if (x) {
        fprintf(f, ",\"rank\":%d,\"host\":", x->rank->rank);
        ct_json_str(f, x->rank->host);
    } else {
        fprintf(f, ",\"rank\":null,\"host\":null");
    }
    fprintf(f, ",\"gpu\":");
    ct_json_str(f, ct_run_value(rep->job, "device.name", buf, sizeof(buf)));
    /* the driver's CUDA version (cuDriverGetVersion: 13000), also as 13.0 */
    const char *drv = ct_run_value(rep->job, "device.driver_version", buf, sizeof(buf));
    fprintf(f, ",\"driver\":");
    ct_json_str(f, drv);
    char *end;
    long v = strtol(drv, &end, 10);
    if (end != drv && !*end && v > 0)
        fprintf(f, ",\"cuda_version\":\"%ld.%ld\"", v / 1000, v % 1000 / 10);
    else
        fprintf(f, ",\"cuda_version\":null");
    fprintf(f, ",\"nccl_version\":");
    ct_json_str(f, ct_run_value(rep->job, "nccl_version", buf, sizeof(buf)));
    /* tags and NCCL_* settings as one object: {"tag.K":"V","env.NCCL_X":"V"} */
    fprintf(f, ",\"labels\":{");
    int first = 1;
    const struct ct_trace_facts *t = NULL; /* the first trace's */
    for (size_t i = 0; i < rep->job->nprocs && !t; i++)
        t = rep->job->procs[i].facts;
    if (t) {
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

/* GPU efficiency columns (docs/efficiency.md): "PREFIX<metric>" for the
 * metrics (all, or the percentages), null where the samples give none. */
static void gpm_cols(FILE *f, const char *prefix, const double v[CT_EFF_N], int pct_only)
{
    char key[64];
    for (int m = 0; m < (pct_only ? CT_EFF_NPCT : CT_EFF_N); m++) {
        snprintf(key, sizeof(key), "%s%s", prefix, ct_eff_json_name(m));
        fputc(',', f);
        ct_json_member(f, key, v ? v[m] : NAN, 2);
    }
}

static const char *op_name(int op)
{
    return op == CT_NCCL_OP_COUNT ? "other" : ct_name_nccl_op((uint64_t)op);
}

/* A rank's health counters over its window (docs/health.md), one row when
 * its trace has device counters: the time-weighted means, the highest SM
 * clock seen (what the fleet takes as the unthrottled clock) and what held
 * the clock most of the time. */
static void health_row(FILE *f, const char *name, const char *side, const struct ct_report *rep,
                       size_t r)
{
    const struct ct_rank_result *x = &rep->rr[r];
    const struct ct_hproc *h = x->rank->nprocs ? x->rank->procs[0]->health : NULL;
    if (!h || !h->ns)
        return;
    struct ct_health_sum s;
    ct_health_summarise(h, ct_health_shift(rep, r), x->ws, x->we, &s);
    if (s.device < 0)
        return;
    const struct ct_hseries *clk = ct_hproc_find(h, s.device, "sm_clock");
    double mx = NAN;
    for (size_t i = 0; clk && i < clk->n; i++)
        mx = isnan(mx) || (double)clk->v[i] > mx ? (double)clk->v[i] : mx;
    common(f, "health", name, side, rep, x);
    fprintf(f, ",\"iteration\":null,\"device\":%d,\"samples\":%zu", s.device, s.samples);
    fputc(',', f);
    ct_json_member(f, "sm_clock_mhz", s.sm_clock, 1);
    fputc(',', f);
    ct_json_member(f, "sm_clock_max_mhz", mx, 1);
    fputc(',', f);
    ct_json_member(f, "power_w", s.power_w, 1);
    fputc(',', f);
    ct_json_member(f, "power_limit_w", s.power_limit_w, 1);
    fputc(',', f);
    ct_json_member(f, "temperature_c", s.temperature, 1);
    fputc(',', f);
    ct_json_member(f, "throttled_pct", 100 * s.throttled_share, 2);
    const char *pol = ct_health_label(h, "clock_policy");
    fprintf(f, ",\"clock_policy\":");
    if (pol)
        ct_json_str(f, pol);
    else
        fputs("null", f);
    fputs("}\n", f);
}

static void rank_or_null(FILE *f, const char *k, int32_t r)
{
    if (r >= 0)
        fprintf(f, ",\"%s\":%d", k, r);
    else
        fprintf(f, ",\"%s\":null", k);
}

/* One row per directed link of NCCL's account (the report's nccl.links,
 * docs/nccl.md): none without proxy records. */
static void link_rows(FILE *f, const char *name, const char *side, const struct ct_report *rep)
{
    const struct ct_nlinks *L = rep->nlinks;
    for (size_t i = 0; L && i < L->nl; i++) {
        const struct ct_nlink *l = &L->l[i];
        int slow = 0;
        for (size_t k = 0; k < L->nslow; k++)
            slow |= L->slow[k].link == i;
        common(f, "link", name, side, rep, NULL);
        fprintf(f, ",\"iteration\":null,\"comm_hash\":\"0x%016" PRIx64 "\",\"src\":%d,\"dst\":%d",
                l->comm, l->src, l->dst);
        rank_or_null(f, "src_rank", l->src_rank);
        rank_or_null(f, "dst_rank", l->dst_rank);
        fprintf(f, ",\"ops\":%" PRIu64 ",\"bytes\":%" PRIu64, l->ops, l->bytes);
        fputc(',', f);
        ct_json_member(f, "gbps", l->gbps, 3);
        fputc(',', f);
        ct_json_member(f, "p10_gbps", l->p10, 3);
        fputc(',', f);
        ct_json_member(f, "p50_gbps", l->p50, 3);
        fputc(',', f);
        ct_json_member(f, "p90_gbps", l->p90, 3);
        col(f, "net_us", l->busy_ns);
        fprintf(f, ",\"slow\":%s}\n", slow ? "true" : "false");
    }
}

/* The job row, then per rank its iterations and the rank row, then the
 * kernel and collective tables. */
void ct_rows_write(FILE *f, const char *name, const char *side, const struct ct_report *rep)
{
    int64_t win = 0, comp = 0, comm = 0, idle = 0, expo = 0;
    for (size_t r = 0; r < rep->nr; r++) {
        const struct ct_rank_result *x = &rep->rr[r];
        win += x->covered, comp += x->compute, comm += x->comm, idle += x->idle;
        expo += x->exposed_comm;
    }
    common(f, "job", name, side, rep, NULL);
    fprintf(f, ",\"iteration\":null,\"ranks\":%zu,\"iterations\":%zu", rep->nr, rep->iterations);
    double no = rep->step_p50 > 0 ? 0 : NAN; /* no iteration on any rank: null step figures */
    col(f, "step_p50_us", rep->step_p50 + no);
    col(f, "step_p90_us", rep->step_p90 + no);
    col(f, "step_p99_us", rep->step_p99 + no);
    col(f, "window_us", (double)win);
    col(f, "compute_us", (double)comp);
    col(f, "comm_us", (double)comm);
    col(f, "idle_us", (double)idle);
    col(f, "exposed_comm_us", (double)expo);
    const struct ct_goodput *g = rep->goodput;
    int gp = g && g->natt;
    fputc(',', f);
    ct_json_member(f, "goodput_pct", gp ? g->goodput_pct : NAN, 2);
    col(f, "wall_us", gp ? (double)(g->e - g->s) : NAN);
    col(f, "downtime_us", gp ? g->downtime : NAN);
    fprintf(f, ",\"attempts\":%zu", gp ? g->natt : 0);
    /* what a fleet store keys and fingerprints a job by (docs/fleet.md) */
    char buf[1024];
    const char *id = ct_run_value(rep->job, "run_id", buf, sizeof(buf));
    fprintf(f, ",\"run_id\":");
    if (strcmp(id, "(none)"))
        ct_json_str(f, id);
    else
        fputs("null", f);
    fprintf(f, ",\"cutrace_version\":");
    ct_json_str(f, ct_run_value(rep->job, "cutrace_version", buf, sizeof(buf)));
    const char *cmd = NULL; /* the first trace's that has one */
    for (size_t i = 0; i < rep->job->nprocs && !cmd; i++)
        cmd = ct_facts_value(rep->job->procs[i].facts, "cmdline");
    fprintf(f, ",\"cmdline\":");
    if (cmd)
        ct_json_str(f, cmd);
    else
        fputs("null", f);
    fputs("}\n", f);
    /* the job's attempts: where its wall time went (docs/goodput.md) */
    for (size_t a = 0; gp && a < g->natt; a++) {
        const struct ct_attempt *A = &g->att[a];
        common(f, "attempt", name, side, rep, NULL);
        fprintf(f, ",\"iteration\":null,\"attempt\":%zu,\"restart_count\":", a);
        if (A->restart >= 0)
            fprintf(f, "%" PRId64, A->restart);
        else
            fputs("null", f);
        fprintf(f, ",\"ended\":\"%s\",\"ranks\":%zu,\"lost_steps\":%zu", ct_ended_name(A->ended),
                A->ranks, A->nlost);
        col(f, "start_us", (double)(A->s - g->s));
        col(f, "end_us", (double)(A->e - g->s));
        for (int k = 0; k < CT_GP_NPARTS; k++) {
            char key[48];
            snprintf(key, sizeof(key), "%s_us", ct_gp_part_name(k));
            col(f, key, A->part[k]);
        }
        fputs("}\n", f);
    }
    for (size_t r = 0; r < rep->nr; r++) {
        const struct ct_rank_result *x = &rep->rr[r];
        for (size_t i = 0; i < x->niters; i++) {
            const struct ct_iter *it = &x->iters[i];
            const struct ct_iter_metrics *m = &x->im[i];
            common(f, "iteration", name, side, rep, x);
            fprintf(f, ",\"iteration\":%" PRId64, it->index);
            col(f, "start_us", (double)(it->s - rep->job->t0));
            col(f, "duration_us", (double)(it->e - it->s));
            col(f, "compute_us", (double)m->compute);
            col(f, "comm_us", (double)m->comm);
            col(f, "memory_us", (double)m->memory);
            col(f, "idle_us", (double)m->idle);
            col(f, "exposed_comm_us", (double)m->exposed_comm);
            col(f, "bubble_us", (double)m->bubble);
            const struct ct_eff *e = x->eff;
            gpm_cols(f, "gpm_", e && !e->why && i < e->nit ? e->it[i].v : NULL, 0);
            fprintf(f, "}\n");
        }
        const struct ct_attribution *a = &x->at;
        common(f, "rank", name, side, rep, x);
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
        col(f, "cuda_call_us", (double)a->cuda_call);
        col(f, "sync_drain_us", (double)a->sync_drain);
        col(f, "launch_overhead_us", (double)a->launch_overhead);
        col(f, "unexplained_us", (double)a->unexplained);
        col(f, "lateness_us", (double)x->lateness);
        fputc(',', f);
        ct_json_member(f, "slowness", x->slowness, 4);
        const struct ct_eff *e = x->eff;
        int have = e && !e->why;
        gpm_cols(f, "gpm_", have ? e->window : NULL, 0);
        gpm_cols(f, "gpm_busy_", have ? e->busy : NULL, 1);
        fputs(",\"gpm_unavailable\":", f);
        if (have)
            fputs("null", f);
        else
            ct_json_str(f, e ? e->why : "not analysed");
        fputs("}\n", f);
    }
    for (size_t r = 0; r < rep->nr; r++)
        health_row(f, name, side, rep, r);
    for (size_t i = 0; i < rep->nkern; i++) {
        const struct ct_kernel_row *k = &rep->kern[i];
        common(f, "kernel", name, side, rep, NULL);
        fprintf(f, ",\"iteration\":null,\"name\":");
        ct_json_str(f, k->name);
        fprintf(f, ",\"count\":%" PRIu64, k->count);
        col(f, "total_us", (double)k->total);
        col(f, "p50_us", k->p50);
        fputs("}\n", f);
    }
    for (size_t i = 0; i < rep->ncoll; i++) {
        const struct ct_coll_row *c = &rep->coll[i];
        common(f, "collective", name, side, rep, NULL);
        fprintf(f,
                ",\"iteration\":null,\"op\":\"%s\",\"lib\":\"%s\",\"bytes\":%" PRIu64
                ",\"nranks\":%d,\"count\":%" PRIu64 ",\"matched\":%" PRIu64,
                op_name(c->op), ct_comm_lib_name(c->lib), c->bytes, c->nranks, c->count,
                c->matched);
        col(f, "p50_us", c->p50);
        col(f, "transfer_p50_us", c->transfer_p50);
        col(f, "wait_p50_us", c->wait_p50);
        /* every rank's wait for the last member, all instances (the fleet's
         * stragglers): the matched instances' sum, scaled to them all */
        col(f, "wait_total_us",
            c->matched ? c->wait_sum * (double)c->count / (double)c->matched : NAN);
        col(f, "arrival_skew_p50_us", c->skew_p50);
        fputc(',', f);
        ct_json_member(f, "algbw_gbps", c->algbw, 3);
        fputc(',', f);
        ct_json_member(f, "busbw_gbps", c->busbw, 3);
        fputc(',', f);
        ct_json_member(f, "sol_gbps", c->sol_gbps, 3);
        fputc(',', f);
        ct_json_member(f, "sol_pct", c->sol_pct, 3);
        fputs(",\"sol_reason\":", f);
        if (c->sol_reason[0])
            ct_json_str(f, c->sol_reason);
        else
            fputs("null", f);
        fputs("}\n", f);
    }
    link_rows(f, name, side, rep);
}
