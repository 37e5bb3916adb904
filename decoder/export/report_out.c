/*
 * `cutrace report` output: the text report (headline first, then per-rank
 * and per-table detail) and the versioned JSON document (schema in
 * docs/report.md). JSON numbers are always finite; `_us` values are µs with
 * three decimals (ns resolution).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/goodput.h"
#include "decoder/export/goodput_out.h"
#include "decoder/analysis/hang.h"
#include "decoder/export/efficiency_out.h"
#include "decoder/export/health_out.h"
#include "decoder/export/nccl_out.h"
#include "decoder/analysis/analysis.h"
#include "decoder/util/json.h"
#include "decoder/export/hta_out.h"
#include "decoder/util/names.h"
#include "decoder/util/stats.h"
#include "decoder/export/report_out.h"

/* For the text report, which prints numbers only (the JSON uses json_us). */
static double us(double ns)
{
    return isfinite(ns) ? ns / 1000.0 : 0;
}

/* A figure for the text with `prec` decimals, or "-" when it has none. */
static void fig(char *b, size_t n, double v, int prec)
{
    if (isfinite(v))
        snprintf(b, n, "%.*f", prec, v);
    else
        snprintf(b, n, "-");
}

/* For the JSON: a non-finite figure stays non-finite (null, util/json.h). */
static double json_us(double ns)
{
    return ns / 1000.0;
}

static void num(FILE *f, const char *k, double v, int comma)
{
    ct_json_member(f, k, v, 3);
    if (comma)
        fputc_unlocked(',', f);
}

/* One write of the whole member: a report writes millions of them, and
 * stdio's per-call locking cost more than the formatting. */
static void num_ns(FILE *f, const char *k, int64_t ns, int comma)
{
    char b[96];
    size_t kl = strlen(k), n = kl <= 64 ? ct_json_us_fmt(b, k, kl, ns, comma) : 0;
    if (n)
        fwrite_unlocked(b, 1, n, f);
    else
        num(f, k, (double)ns / 1000.0, comma);
}

/* One element of a rank's iterations[], written at once (most of a long
 * job's JSON is these). */
static void iteration_json(FILE *f, const struct ct_iter *it, const struct ct_iter_metrics *m,
                           int64_t t0, int first)
{
#define K(s)                                                                                       \
    {                                                                                              \
        s, sizeof(s) - 1                                                                           \
    }
    static const struct {
        const char *s;
        size_t n;
    } key[] = {K("start_us"),  K("end_us"),  K("duration_us"),     K("compute_us"), K("comm_us"),
               K("memory_us"), K("idle_us"), K("exposed_comm_us"), K("bubble_us")};
#undef K
    const int64_t v[] = {it->s - t0, it->e - t0, it->e - it->s,   m->compute, m->comm,
                         m->memory,  m->idle,    m->exposed_comm, m->bubble};
    enum { NV = sizeof(v) / sizeof(v[0]) };
    char b[48 + NV * 48];
    size_t n = 0;
    if (!first)
        b[n++] = ',';
    memcpy(b + n, "{\"index\":", 9);
    n += 9;
    if (it->index < 0)
        b[n++] = '-';
    n += ct_json_u64_fmt(b + n, it->index < 0 ? -(uint64_t)it->index : (uint64_t)it->index);
    b[n++] = ',';
    for (int i = 0; i < NV; i++) {
        size_t w = ct_json_us_fmt(b + n, key[i].s, key[i].n, v[i], i + 1 < NV);
        if (!w) { /* out of the fast path's range: member by member */
            fwrite_unlocked(b, 1, n, f);
            n = 0;
            num(f, key[i].s, (double)v[i] / 1000.0, i + 1 < NV);
            continue;
        }
        n += w;
    }
    b[n++] = '}';
    fwrite_unlocked(b, 1, n, f);
}

/* The temporal breakdown of a rank's window or of one iteration. */
static void breakdown(FILE *f, int64_t compute, int64_t comm, int64_t memory, int64_t idle,
                      int64_t exposed_comm)
{
    num_ns(f, "compute_us", compute, 1);
    num_ns(f, "comm_us", comm, 1);
    num_ns(f, "memory_us", memory, 1);
    num_ns(f, "idle_us", idle, 1);
    num_ns(f, "exposed_comm_us", exposed_comm, 1);
}

/* A percentage; negative means "no denominator" (null). */
static void pct_or_null(FILE *f, const char *k, double v, int comma)
{
    num(f, k, v < 0 ? NAN : v, comma);
}

static double overlap_pct(int64_t overlap, int64_t comm)
{
    return comm > 0 ? 100.0 * (double)overlap / (double)comm : -1;
}

static const char *op_name(int op)
{
    return op == CT_NCCL_OP_COUNT ? "other" : ct_name_nccl_op((uint64_t)op);
}

/* The job's host processes (decoder/read/job.c: no GPU work, not ranks). */
static void host_processes_json(FILE *f, const struct ct_job *job)
{
    fprintf(f, "\"host_processes\":[");
    for (size_t i = 0; job && i < job->nhosts; i++) {
        const struct ct_proc *p = job->hosts[i];
        fprintf(f, "%s{\"pid\":%" PRIu32 ",\"ppid\":%" PRIu32 ",\"host\":", i ? "," : "", p->pid,
                p->ppid);
        ct_json_str(f, p->host ? p->host : "");
        fprintf(f, ",\"path\":");
        ct_json_str(f, p->path ? p->path : "");
        fputc_unlocked('}', f);
    }
    fputc_unlocked(']', f);
}

static void host_processes_text(FILE *f, const struct ct_job *job)
{
    if (!job || !job->nhosts)
        return;
    fprintf(f, "\nHost processes (no GPU work; not ranks): %zu\n", job->nhosts);
    for (size_t i = 0; i < job->nhosts; i++)
        fprintf(f, "  pid %-8" PRIu32 " ppid %-8" PRIu32 " %-12s %s\n", job->hosts[i]->pid,
                job->hosts[i]->ppid, job->hosts[i]->host ? job->hosts[i]->host : "",
                job->hosts[i]->path ? job->hosts[i]->path : "");
}

/* How the rank was recorded ("capture"), its GPU-timing source and the
 * figures given as null with the reason ("unavailable"). */
static void provenance_json(FILE *f, const struct ct_rank_result *x, int64_t t0)
{
    const struct ct_rank *R = x->rank;
    const struct ct_proc *p = R->nprocs ? R->procs[0] : NULL;
    /* a rank is a (process, device): which ones */
    fprintf(f, "\"pid\":%" PRIu32 ",\"device\":", p ? p->pid : 0);
    if (p && p->device >= 0)
        fprintf(f, "%" PRId32 ",", p->device);
    else
        fprintf(f, "null,");
    fprintf(f, "\"capture\":{\"mode\":\"%s\",\"recorded\":\"%s\",",
            p && p->light ? "light" : "full", R->cover ? "windows" : "throughout");
    if (R->cover) {
        /* the windows as the GPU saw them, [start_us, end_us] like the
         * iterations' (from the job's first GPU start) */
        fprintf(f, "\"windows\":%zu,\"spans\":[", x->windows);
        for (size_t i = 0; i < R->gcover.n; i++) {
            fprintf(f, "%s[%.3f,%.3f]", i ? "," : "", (double)(R->gcover.v[i].s - t0) / 1e3,
                    (double)(R->gcover.v[i].e - t0) / 1e3);
        }
        fprintf(f, "],");
    } else {
        fprintf(f, "\"windows\":null,\"spans\":null,");
    }
    num_ns(f, "covered_us", x->covered, 1);
    num_ns(f, "span_us", x->we - x->ws, 1);
    if (R->gcut.n) {
        /* a salvaged process's GPU ops whose time never came: where the
         * GPU figures end ([start_us, end_us] of each uncovered span, the
         * open end null) and the steps left out of the iterations */
        fprintf(f, "\"undelivered\":{\"ops\":%" PRIu64 ",\"iterations_cut\":%zu,\"spans\":[",
                R->undelivered, x->iters_cut);
        for (size_t i = 0; i < R->gcut.n; i++) {
            fprintf(f, "%s[%.3f,", i ? "," : "", (double)(R->gcut.v[i].s - t0) / 1e3);
            if (R->gcut.v[i].e >= CT_OPEN_END)
                fputs("null]", f);
            else
                fprintf(f, "%.3f]", (double)(R->gcut.v[i].e - t0) / 1e3);
        }
        fprintf(f, "]},");
    } else {
        fprintf(f, "\"undelivered\":null,");
    }
    if (p && p->light && p->light_period_ms)
        fprintf(f, "\"light_window_ms\":%" PRIu32 ",\"light_period_ms\":%" PRIu32 "},",
                p->light_window_ms, p->light_period_ms);
    else
        fprintf(f, "\"light_window_ms\":null,\"light_period_ms\":null},");
    fprintf(f, "\"gpu_timing\":\"%s\",\"unavailable\":[", ct_gpu_timing_name(&R->cov));
    const char *fig, *why;
    for (size_t i = 0; ct_unavailable(x, i, &fig, &why); i++) {
        fprintf(f, "%s{\"figure\":\"%s\",\"reason\":", i ? "," : "", fig);
        ct_json_str(f, why);
        fputc_unlocked('}', f);
    }
    fprintf(f, "],");
}

/* What a coverage fact means for the figures (docs/report.md, "Coverage"). */
static const char *fact_reason(const struct ct_cov_fact *c)
{
    switch (c->kind) {
    case CT_COVF_UNTIMED:
        return "no GPU time for these ops: busy figures are lower bounds, idle and its split "
               "too high; confidences resting on the ops' times are lowered";
    case CT_COVF_UNDELIVERED:
        return "the process was killed with these ops' GPU times in CUPTI's buffers (salvaged "
               "trace): they ran, untimed; the rank's GPU figures end where they could have "
               "begun (capture.undelivered), the time after is not covered, never idle";
    case CT_COVF_DAMAGED:
        return "the records in the damaged bytes are lost: figures over them miss their ops, "
               "confidences are lowered by the damaged share";
    default:
        return "no footer: the process did not shut its trace down (killed), and its records "
               "end at the cut, at most a flush period (CUTRACE_FLUSH_MS) before it died";
    }
}

/* "material":[...]: the rank's coverage facts that change the answer. */
static void coverage_material_json(FILE *f, const struct ct_rank *R)
{
    static const char *const kind[] = {"untimed_ops", "damaged_bytes", "truncated_file",
                                       "undelivered_ops"};
    struct ct_cov_fact c;
    fputs("\"material\":[", f);
    for (size_t i = 0; ct_coverage_fact(R, i, &c); i++) {
        fprintf(f, "%s{\"fact\":\"%s\",\"count\":%" PRIu64 ",\"of\":", i ? "," : "", kind[c.kind],
                c.count);
        if (c.of)
            fprintf(f, "%" PRIu64, c.of);
        else
            fputs("null", f);
        fputs(",\"file\":", f);
        if (c.path)
            ct_json_str(f, c.path);
        else
            fputs("null", f);
        if (c.truncated)
            fprintf(f, ",\"truncated_at\":%" PRIu64, c.offset);
        else
            fputs(",\"truncated_at\":null", f);
        fputs(",\"reason\":", f);
        ct_json_str(f, fact_reason(&c));
        fputc_unlocked('}', f);
    }
    fputc_unlocked(']', f);
}

/* The job's steps (ct_job_steps): "steps":[...], */
static void steps_json(FILE *f, const struct ct_report *rep)
{
    fprintf(f, "\"steps\":[");
    for (size_t i = 0; i < rep->nsteps; i++) {
        const struct ct_job_step *s = &rep->steps[i];
        char b[80]; /* {"index":N,"ranks":N, in one write */
        size_t n = 0;
        if (i)
            b[n++] = ',';
        memcpy(b + n, "{\"index\":", 9);
        n += 9;
        if (s->index < 0)
            b[n++] = '-';
        n += ct_json_u64_fmt(b + n, s->index < 0 ? -(uint64_t)s->index : (uint64_t)s->index);
        memcpy(b + n, ",\"ranks\":", 9);
        n += 9;
        n += ct_json_u64_fmt(b + n, s->ranks);
        b[n++] = ',';
        fwrite_unlocked(b, 1, n, f);
        num_ns(f, "start_us", s->start - rep->job->t0, 1);
        num_ns(f, "end_us", s->end - rep->job->t0, 1);
        num(f, "duration_p50_us", json_us(s->dur_p50), 1);
        num(f, "duration_max_us", json_us(s->dur_max), 1);
        fputs_unlocked("\"slowest_rank\":", f);
        if (s->slowest < 0)
            fputc_unlocked('-', f);
        char d[24];
        fwrite_unlocked(d, 1,
                        ct_json_u64_fmt(d, s->slowest < 0 ? -(uint64_t)(int64_t)s->slowest
                                                          : (uint64_t)s->slowest),
                        f);
        fputc_unlocked(',', f);
        num(f, "compute_p50_us", json_us(s->compute), 1);
        num(f, "comm_p50_us", json_us(s->comm), 1);
        num(f, "exposed_comm_p50_us", json_us(s->exposed), 1);
        num(f, "idle_p50_us", json_us(s->idle), 0);
        fputc_unlocked('}', f);
    }
    fprintf(f, "],");
}

void ct_report_json(FILE *f, const struct ct_report *rep, int rank_iters)
{
    fprintf(f, "{\"schema\":\"cutrace.report\",\"version\":%d,\"cutrace_version\":\"%s\",",
            CT_REPORT_SCHEMA_VERSION, CT_VERSION);
    fprintf(f, "\"ranks\":[");
    for (size_t r = 0; r < rep->nr; r++) {
        const struct ct_rank_result *x = &rep->rr[r];
        const struct ct_rank *R = x->rank;
        fprintf(f, "%s{\"rank\":%d,\"host\":", r ? "," : "", R->rank);
        ct_json_str(f, R->host);
        fprintf(f, ",\"processes\":%zu,", R->nprocs);
        provenance_json(f, x, rep->job->t0);
        num_ns(f, "window_us", x->covered, 1);
        breakdown(f, x->compute, x->comm, x->memory, x->idle, x->exposed_comm);
        num_ns(f, "memory_blocking_us", x->memory_blocking, 1);
        /* kernels that communicate without an NCCL call: bytes unknown */
        fprintf(f, "\"comm_kernels\":{\"count\":%" PRIu64 ",", x->comm_kernels);
        num_ns(f, "gpu_us", x->comm_kernels_time, 1);
        /* none: none to count (0), else unknown (unavailable comm_kernels.bytes) */
        fprintf(f, "\"bytes\":%s},", x->comm_kernels ? "null" : "0");
        /* null without GPU work: no share to give */
        pct_or_null(f, "graph_pct",
                    x->busy > 0 ? 100.0 * (double)x->graph_busy / (double)x->busy : -1, 1);
        struct ct_step_kind reg, heavy;
        if (ct_step_kinds(x, &reg, &heavy)) {
            fprintf(f, "\"step_kinds\":null,"); /* out of memory */
        } else {
            fprintf(f, "\"step_kinds\":{");
            for (int h = 0; h < 2; h++) {
                const struct ct_step_kind *k = h ? &heavy : &reg;
                fprintf(f, "%s\"%s\":{\"steps\":%zu,", h ? "," : "", h ? "heavy" : "regular",
                        k->steps);
                num(f, "p50_us", k->steps ? json_us(k->p50) : NAN, 1);
                num_ns(f, "compute_us", k->compute, 0);
                fputc_unlocked('}', f);
            }
            fprintf(f, "},");
        }
        pct_or_null(f, "overlap_pct", overlap_pct(x->overlap, x->comm), 1);
        fprintf(f, "\"comm_by_kind\":{");
        for (int c = CT_CL_DP; c < CT_CL_COUNT; c++) {
            fprintf(f, "\"%s\":{", ct_class_name(c));
            num_ns(f, "comm_us", x->cls_len[c], 1);
            num_ns(f, "exposed_us", x->cls_exposed[c], 1);
            pct_or_null(f, "overlap_pct", overlap_pct(x->cls_overlap[c], x->cls_len[c]), 0);
            fprintf(f, "}%s", c + 1 < CT_CL_COUNT ? "," : "");
        }
        fprintf(f, "},\"idle_breakdown\":{");
        num_ns(f, "host_wait_us", x->host_wait, 1);
        num_ns(f, "kernel_wait_us", x->kernel_wait, 1);
        num_ns(f, "other_us", x->other_wait, 0);
        fprintf(f, "},\"attribution\":{");
        num_ns(f, "pipeline_bubble_us", x->at.pipeline_bubble, 1);
        num_ns(f, "pipeline_bubble_idle_us", x->at.bubble_idle, 1);
        num_ns(f, "data_stall_us", x->at.data_stall, 1);
        if (ct_figure_unavailable(x, "checkpoint_stall_us"))
            fprintf(f, "\"checkpoint_stall_us\":null,");
        else
            num_ns(f, "checkpoint_stall_us", x->at.checkpoint_stall, 1);
        num_ns(f, "checkpoint_idle_us", x->at.ckpt_idle, 1);
        fprintf(f, "\"checkpoint_steps\":%d,", x->at.ckpt_steps);
        num_ns(f, "cuda_call_us", x->at.cuda_call, 1);
        num_ns(f, "sync_drain_us", x->at.sync_drain, 1);
        num_ns(f, "launch_overhead_us", x->at.launch_overhead, 1);
        num_ns(f, "unexplained_us", x->at.unexplained, 0);
        fprintf(f, "},\"iteration_source\":\"%s\",", ct_iter_source_name(x->iter_src));
        char note[512];
        ct_iter_note(note, sizeof(note), x->iter_src, x->iter_why);
        if (x->iter_src == CT_ITER_NONE) /* no figure to give, and why */
            fprintf(f, "\"iteration_confidence\":null,");
        else
            fprintf(f, "\"iteration_confidence\":%.3f,", x->iter_conf);
        /* why it is below what its source gave (coverage), or null */
        char why[256];
        if (x->iter_src != CT_ITER_NONE &&
            ct_coverage_factor(R, x->iter_src == CT_ITER_PERIOD, why, sizeof(why)) < 1) {
            char lowered[320];
            snprintf(lowered, sizeof(lowered), "lowered from %.3f: %s", x->iter_conf_found, why);
            fprintf(f, "\"iteration_confidence_note\":");
            ct_json_str(f, lowered);
            fputc_unlocked(',', f);
        } else {
            fprintf(f, "\"iteration_confidence_note\":null,");
        }
        if (note[0]) { /* why none, or why the confidence is lower */
            fprintf(f, "\"iteration_note\":");
            ct_json_str(f, note);
            fputc_unlocked(',', f);
        }
        fprintf(f, "\"iteration_count\":%zu,", x->niters);
        if (rank_iters) { /* per-(rank, iteration) detail: on request */
            fprintf(f, "\"iterations\":[");
            for (size_t k = 0; k < x->niters; k++)
                iteration_json(f, &x->iters[k], &x->im[k], rep->job->t0, k == 0);
            fprintf(f, "],");
        }
        pct_or_null(f, "bubble_pct", x->bubble_pct, 1);
        pct_or_null(f, "expected_bubble_pct", x->expected_bubble_pct, 1);
        fprintf(f, "\"pipeline\":{\"stages\":%d,\"microbatches\":%d},", x->pp_stages,
                x->pp_microbatches);
        fprintf(f, "\"clock\":{");
        num_ns(f, "skew_us", R->skew_ns, 1);
        num_ns(f, "residual_us", R->residual_ns, 0);
        fprintf(f, "},\"straggler\":{");
        num_ns(f, "lateness_us", x->lateness, 1);
        num(f, "slowness", x->slowness, 1);
        num(f, "score", x->score, 1);
        num(f, "persistence", x->persistence, 1);
        fprintf(f, "\"flagged\":%s},", x->flagged ? "true" : "false");
        ct_hta_json(f, R); /* kineto: "hta":{...}, for Kineto input */
        ct_health_json(f, rep,
                       r); /* health: "health":{...} or null (decoder/export/health_out.c) */
        ct_efficiency_json(f, rep, r); /* "efficiency":{...} (decoder/export/efficiency_out.c) */
        const struct ct_coverage *c = &R->cov;
        fprintf(f,
                "\"coverage\":{\"gpu_cupti\":%" PRIu64 ",\"gpu_events\":%" PRIu64
                ",\"gpu_events_blocking\":%" PRIu64 ",\"gpu_plugin\":%" PRIu64
                ",\"gpu_nccl_record\":%" PRIu64 ",\"dropped_records\":%" PRIu64
                ",\"untimed_ops\":%" PRIu64 ",\"unmatched_p2p\":%" PRIu64 ",\"processes\":%" PRIu64
                ",\"truncated_files\":%" PRIu64 ",\"damaged_bytes\":%" PRIu64
                ",\"superseded_intervals\":%" PRIu64 ",",
                c->gpu_cupti, c->gpu_events, c->gpu_events_blocking, c->gpu_plugin,
                c->gpu_nccl_record, c->dropped, c->untimed, c->unmatched_p2p, c->processes,
                c->truncated, c->damaged, c->superseded);
        coverage_material_json(f, R);
        fputs("}}", f);
    }
    fprintf(f, "],\"collectives\":[");
    for (size_t i = 0; i < rep->ncoll; i++) {
        const struct ct_coll_row *c = &rep->coll[i];
        fprintf(f,
                "%s{\"op\":\"%s\",\"lib\":\"%s\",\"bytes\":%" PRIu64
                ",\"nranks\":%d,\"count\":%" PRIu64 ",\"matched\":%" PRIu64 ",",
                i ? "," : "", op_name(c->op), ct_comm_lib_name(c->lib), c->bytes, c->nranks,
                c->count, c->matched);
        num(f, "p50_us", json_us(c->p50), 1);
        num(f, "p90_us", json_us(c->p90), 1);
        num(f, "max_us", json_us(c->max), 1);
        num(f, "arrival_skew_p50_us", json_us(c->skew_p50), 1);
        num(f, "wait_p50_us", json_us(c->wait_p50), 1);
        num(f, "transfer_p50_us", json_us(c->transfer_p50), 1);
        num(f, "algbw_gbps", c->algbw, 1);
        num(f, "busbw_gbps", c->busbw, 0);
        fputc_unlocked(',', f);
        num(f, "sol_gbps", c->sol_gbps, 1);
        num(f, "sol_pct", c->sol_pct, 1);
        fputs("\"sol_basis\":", f);
        if (c->sol_basis[0])
            ct_json_str(f, c->sol_basis);
        else
            fputs("null", f);
        fputs(",\"sol_reason\":", f);
        if (c->sol_reason[0])
            ct_json_str(f, c->sol_reason);
        else
            fputs("null", f);
        fputc_unlocked('}', f);
    }
    fprintf(f, "],\"kernels\":[");
    for (size_t i = 0; i < rep->nkern; i++) {
        const struct ct_kernel_row *k = &rep->kern[i];
        fprintf(f, "%s{\"name\":", i ? "," : "");
        ct_json_str(f, k->name);
        fprintf(f, ",\"count\":%" PRIu64 ",", k->count);
        num_ns(f, "total_us", k->total, 1);
        num(f, "p50_us", json_us(k->p50), 0);
        fputc_unlocked('}', f);
    }
    fprintf(f, "],\"job\":{\"ranks\":%zu,\"iterations\":%zu,", rep->nr, rep->iterations);
    /* where the output's times start, on the job clock (realtime ns for
     * cutrace traces, the trace's own ts for Kineto): what two reports of
     * one trace compare their times through */
    fprintf(f, "\"time_zero_ns\":%" PRId64 ",", rep->job->t0);
    /* no iteration on any rank: no step time (null, not 0) */
    num(f, "step_p50_us", rep->step_p50 > 0 ? json_us(rep->step_p50) : NAN, 1);
    num(f, "step_p90_us", rep->step_p50 > 0 ? json_us(rep->step_p90) : NAN, 1);
    num(f, "step_p99_us", rep->step_p50 > 0 ? json_us(rep->step_p99) : NAN, 1);
    steps_json(f, rep);
    ct_efficiency_job_json(f, rep);
    fprintf(f, "\"stragglers\":[");
    /* flagged ranks, highest score first */
    int first = 1;
    char *done = calloc(rep->nr ? rep->nr : 1, 1);
    for (;;) {
        size_t best = SIZE_MAX;
        for (size_t r = 0; r < rep->nr; r++)
            if (done && !done[r] && rep->rr[r].flagged &&
                (best == SIZE_MAX || rep->rr[r].score > rep->rr[best].score))
                best = r;
        if (best == SIZE_MAX)
            break;
        done[best] = 1;
        fprintf(f, "%s{\"rank\":%d,", first ? "" : ",", rep->rr[best].rank->rank);
        num(f, "score", rep->rr[best].score, 1);
        num_ns(f, "lateness_us", rep->rr[best].lateness, 1);
        num(f, "slowness", rep->rr[best].slowness, 1);
        num(f, "persistence", rep->rr[best].persistence, 0);
        fputc_unlocked('}', f);
        first = 0;
    }
    free(done);
    fprintf(f, "]},");
    ct_hang_json(f, rep); /* collectives in flight of a flight-recorder window */
    fputc_unlocked(',', f);
    ct_nccl_json(f, rep); /* nccl: links, slow links, splits (decoder/export/nccl_out.c) */
    fputc_unlocked(',', f);
    host_processes_json(f, rep->job);
    if (rep->goodput) { /* the job's wall time over its attempts (docs/goodput.md) */
        fputs(",\"goodput\":", f);
        ct_goodput_json(f, rep->goodput);
    }
    fprintf(f, "}\n");
}

static double pct(int64_t part, int64_t whole)
{
    return whole > 0 ? 100.0 * (double)part / (double)whole : 0;
}

/* A share as text: "12.3%", or "-" without a denominator (a rank with no
 * GPU window, a job without communication): never a 0.0 % of nothing. */
struct pct_text {
    char s[16];
};
static struct pct_text pct_s(int64_t part, int64_t whole)
{
    struct pct_text t;
    if (whole > 0)
        snprintf(t.s, sizeof(t.s), "%.1f%%", pct(part, whole));
    else
        snprintf(t.s, sizeof(t.s), "-");
    return t;
}

/* Steps whose GPU compute exceeds the median step's by > 25 % (a serving
 * loop's prefills), over all ranks: a line when there are any (none when
 * memory runs out). */
static void heavy_text(FILE *f, const struct ct_report *rep)
{
    size_t nh = 0, nall = 0, kh = 0, kr = 0;
    int64_t ch = 0, call = 0;
    double *ph = malloc((rep->nr ? rep->nr : 1) * sizeof(*ph));
    double *pr = malloc((rep->nr ? rep->nr : 1) * sizeof(*pr));
    for (size_t r = 0; ph && pr && r < rep->nr; r++) {
        struct ct_step_kind reg, heavy;
        if (ct_step_kinds(&rep->rr[r], &reg, &heavy)) {
            nh = 0;
            break;
        }
        nh += heavy.steps;
        nall += heavy.steps + reg.steps;
        ch += heavy.compute;
        call += heavy.compute + reg.compute;
        if (heavy.steps)
            ph[kh++] = heavy.p50;
        if (reg.steps)
            pr[kr++] = reg.p50;
    }
    if (nh)
        fprintf(
            f,
            "  heavy steps (GPU compute > 1.25 x the median step's: a serving loop's prefills): "
            "%zu of %zu, p50 %.3f ms against %.3f ms for the rest, %.1f%% of compute (JSON "
            "step_kinds per rank)\n",
            nh, nall, ct_median(ph, kh) / 1e6, ct_median(pr, kr) / 1e6, pct(ch, call));
    free(ph);
    free(pr);
}

/* Where the iterations came from: one line when every rank agrees on
 * ranges or marks, else one per rank with the detector's confidence, and
 * for ranks without iterations why only window figures are given. */
static void iterations_text(FILE *f, const struct ct_report *rep)
{
    int same = 1;
    for (size_t r = 0; r < rep->nr; r++)
        same &= rep->rr[r].iter_src == rep->rr[0].iter_src &&
                (rep->rr[r].iter_src == CT_ITER_RANGES || rep->rr[r].iter_src == CT_ITER_MARKS);
    if (rep->nr && same) {
        fprintf(f, "Iterations from step %s on every rank\n",
                rep->rr[0].iter_src == CT_ITER_RANGES ? "ranges" : "marks");
        return;
    }
    if (rep->nr > 8) { /* a big job: counts, the weakest confidence, the ranks without */
        size_t by[CT_ITER_PERIOD + 1] = {0};
        double lo = 1;
        for (size_t r = 0; r < rep->nr; r++) {
            by[rep->rr[r].iter_src]++;
            if (rep->rr[r].iter_src == CT_ITER_PERIOD && rep->rr[r].iter_conf < lo)
                lo = rep->rr[r].iter_conf;
        }
        fprintf(f,
                "Iterations: %zu rank(s) from step ranges, %zu from marks, %zu from the work "
                "that repeats",
                by[CT_ITER_RANGES], by[CT_ITER_MARKS], by[CT_ITER_PERIOD]);
        if (by[CT_ITER_PERIOD])
            fprintf(f, " (lowest confidence %.2f)", lo);
        fprintf(f, ", %zu with none", by[CT_ITER_NONE]);
        size_t shown = 0;
        for (size_t r = 0; r < rep->nr && shown < 8; r++)
            if (rep->rr[r].iter_src == CT_ITER_NONE)
                fprintf(f, "%s%d", shown++ ? " " : " (ranks ", rep->rr[r].rank->rank);
        fprintf(f, "%s\n", shown ? (by[CT_ITER_NONE] > shown ? " ...)" : ")") : "");
        return;
    }
    for (size_t r = 0; r < rep->nr; r++) {
        const struct ct_rank_result *x = &rep->rr[r];
        char note[512];
        ct_iter_note(note, sizeof(note), x->iter_src, x->iter_why);
        if (x->iter_src == CT_ITER_PERIOD)
            fprintf(f,
                    "Iterations of rank %d: %zu found from the work that repeats (no step "
                    "annotation), confidence %.2f%s%s%s\n",
                    x->rank->rank, x->niters, x->iter_conf, note[0] ? " (" : "", note,
                    note[0] ? ")" : "");
        else if (x->iter_src == CT_ITER_NONE)
            fprintf(f, "Iterations of rank %d: none (%s); whole-window figures only\n",
                    x->rank->rank, note);
        else
            fprintf(f, "Iterations of rank %d: %zu from step %s\n", x->rank->rank, x->niters,
                    x->iter_src == CT_ITER_RANGES ? "ranges" : "marks");
    }
}

/* How the ranks were recorded and timed, when that is not the plain case
 * (recorded throughout, one GPU-timing source on every rank). */
static void provenance_text(FILE *f, const struct ct_report *rep)
{
    size_t windowed = 0, light = 0, nwin = 0;
    int64_t cov = 0, span = 0;
    const struct ct_proc *lp = NULL;
    int same_timing = 1;
    for (size_t r = 0; r < rep->nr; r++) {
        const struct ct_rank_result *x = &rep->rr[r];
        const struct ct_proc *p = x->rank->nprocs ? x->rank->procs[0] : NULL;
        same_timing &=
            !strcmp(ct_gpu_timing_name(&x->rank->cov), ct_gpu_timing_name(&rep->rr[0].rank->cov));
        if (!x->rank->cover)
            continue;
        windowed++;
        nwin += x->windows;
        cov += x->covered;
        span += x->we - x->ws;
        if (p && p->light) {
            light++;
            lp = p;
        }
    }
    if (windowed) {
        fprintf(f, "Capture: %zu of %zu rank(s) recorded in windows", windowed, rep->nr);
        if (light == windowed && lp && lp->light_period_ms)
            fprintf(f, " (light mode: the first %" PRIu32 " ms of every %" PRIu32 " ms)",
                    lp->light_window_ms, lp->light_period_ms);
        fprintf(f,
                ": %zu window(s) covering %.3f s of %.3f s (%.1f%%); every figure is over the "
                "windows, and figures the windows cannot show are left out (JSON unavailable)\n",
                nwin, (double)cov / 1e9, (double)span / 1e9, pct(cov, span));
    }
    /* processes that drive several devices: one rank per device */
    size_t shared = 0;
    for (size_t r = 0; r < rep->nr; r++)
        for (size_t q = 0; q < rep->nr; q++)
            if (q != r && rep->rr[q].rank->nprocs && rep->rr[r].rank->nprocs &&
                rep->rr[q].rank->procs[0]->pid == rep->rr[r].rank->procs[0]->pid &&
                !strcmp(rep->rr[q].rank->host, rep->rr[r].rank->host)) {
                shared++;
                break;
            }
    if (shared) {
        fprintf(f,
                "Ranks per device: %zu rank(s) share a process that drives several GPUs:", shared);
        size_t shown = 0;
        for (size_t r = 0; r < rep->nr && shown < 16; r++) {
            const struct ct_proc *p = rep->rr[r].rank->nprocs ? rep->rr[r].rank->procs[0] : NULL;
            if (p && p->device >= 0)
                fprintf(f, "%s rank %d = pid %" PRIu32 " GPU %" PRId32, shown++ ? "," : "",
                        rep->rr[r].rank->rank, p->pid, p->device);
        }
        fprintf(f, "%s\n", rep->nr > 16 ? " ..." : "");
    }
    if (!rep->nr)
        return;
    if (same_timing) {
        const char *t = ct_gpu_timing_name(&rep->rr[0].rank->cov);
        if (strcmp(t, "cupti"))
            fprintf(f, "GPU timing: %s on every rank\n",
                    !strcmp(t, "events") ? "CUDA event pairs"
                    : !strcmp(t, "none") ? "none (GPU figures are empty)"
                                         : t);
        return;
    }
    fprintf(f, "GPU timing:");
    for (size_t r = 0; r < rep->nr && r < 16; r++)
        fprintf(f, " rank %d %s%s", rep->rr[r].rank->rank,
                ct_gpu_timing_name(&rep->rr[r].rank->cov), r + 1 < rep->nr ? "," : "");
    fprintf(f, "%s\n", rep->nr > 16 ? " ..." : "");
}

/* Coverage facts that change the answer, one line each (the first 8; a
 * file of a process that drives several devices once). */
static void coverage_text(FILE *f, const struct ct_report *rep)
{
    const char **seen = NULL;
    size_t nseen = 0, shown = 0, more = 0;
    struct ct_cov_fact c;
    for (size_t r = 0; r < rep->nr; r++) {
        const struct ct_rank *R = rep->rr[r].rank;
        for (size_t i = 0; ct_coverage_fact(R, i, &c); i++) {
            if (c.path) {
                size_t k = 0;
                while (k < nseen && strcmp(seen[k], c.path))
                    k++;
                if (k < nseen)
                    continue;
                const char **s = realloc(seen, (nseen + 1) * sizeof(*s));
                if (!s)
                    continue; /* out of memory: the line may come twice */
                seen = s;
                seen[nseen++] = c.path;
            }
            if (shown == 8) {
                more++;
                continue;
            }
            shown++;
            if (c.kind == CT_COVF_UNDELIVERED) {
                fprintf(f,
                        "Coverage: rank %d: %" PRIu64 " GPU ops launched from %.6f s never had "
                        "their GPU time delivered (the process was killed; salvaged trace): its "
                        "GPU figures end at %.6f s, the time after is not covered (not idle)%s\n",
                        R->rank, c.count, (double)(c.host_from - rep->job->t0) / 1e9,
                        (double)(c.gpu_from - rep->job->t0) / 1e9,
                        rep->rr[r].iters_cut ? "; the steps it holds are not iterations" : "");
            } else if (c.kind == CT_COVF_UNTIMED) {
                fprintf(f,
                        "Coverage: rank %d: %" PRIu64 " GPU ops untimed (%.1f%% of %" PRIu64
                        "): no GPU time for them, so busy figures are lower bounds and idle "
                        "and its split too high; confidences lowered\n",
                        R->rank, c.count, pct((int64_t)c.count, (int64_t)c.of), c.of);
            } else if (c.kind == CT_COVF_DAMAGED) {
                fprintf(f, "Coverage: %" PRIu64 " damaged bytes skipped in %s (", c.count, c.path);
                if (c.of)
                    fprintf(f, "%.2f%% of the file", pct((int64_t)c.count, (int64_t)c.of));
                if (c.truncated)
                    fprintf(f, "%struncated at offset %" PRIu64, c.of ? "; " : "", c.offset);
                fprintf(f, "): their records are lost; confidences lowered\n");
            } else {
                fprintf(f,
                        "Coverage: %s truncated at offset %" PRIu64
                        " (no footer: the process did not shut its trace down; its records end "
                        "there)\n",
                        c.path, c.offset);
            }
        }
    }
    free(seen);
    if (more)
        fprintf(f, "Coverage: ... and %zu more (JSON: each rank's coverage.material)\n", more);
}

void ct_report_text(FILE *f, const struct ct_report *rep)
{
    int64_t win = 0, comp = 0, expo = 0, idle = 0, comm = 0, ovl = 0;
    for (size_t r = 0; r < rep->nr; r++) {
        win += rep->rr[r].covered;
        comp += rep->rr[r].compute;
        expo += rep->rr[r].exposed_comm;
        idle += rep->rr[r].idle;
        comm += rep->rr[r].comm;
        ovl += rep->rr[r].overlap;
    }
    if (rep->step_p50 > 0)
        fprintf(f,
                "cutrace report: %zu rank(s), %zu iteration(s), step p50 %.3f ms (p90 %.3f, p99 "
                "%.3f)\n",
                rep->nr, rep->iterations, rep->step_p50 / 1e6, rep->step_p90 / 1e6,
                rep->step_p99 / 1e6);
    else
        fprintf(f, "cutrace report: %zu rank(s), no iterations: no step time\n", rep->nr);
    iterations_text(f, rep);
    const struct ct_goodput *g = rep->goodput;
    if (g && g->natt && g->e > g->s && !isnan(g->goodput_pct))
        fprintf(f,
                "goodput %.1f %% of the %.3f s the traces cover of the job's %.3f s wall time, "
                "%zu attempt(s) (cutrace goodput: where the rest went)\n",
                g->goodput_pct, g->covered / 1e9, (double)(g->e - g->s) / 1e9, g->natt);
    else if (g && g->natt && g->e > g->s)
        fprintf(f, "goodput - (%s)\n", g->unavailable ? g->unavailable : "unknown");
    provenance_text(f, rep);
    coverage_text(f, rep);
    fprintf(f, "\n");
    fprintf(f, "Where GPU time goes (all ranks, %% of window):\n");
    fprintf(f,
            "  compute %s  exposed communication %s  idle %s  "
            "(communication hidden under compute: %s)\n",
            pct_s(comp, win).s, pct_s(expo, win).s, pct_s(idle, win).s, pct_s(ovl, comm).s);
    int64_t blocking = 0;
    for (size_t r = 0; r < rep->nr; r++)
        blocking += rep->rr[r].memory_blocking;
    if (blocking)
        fprintf(f,
                "  memory time includes %.3f ms of synchronous copies timed by CUDA event pairs "
                "around the host call: that is the call's time, pageable staging included, not "
                "only the transfer (CUPTI times the transfer alone; JSON memory_blocking_us)\n",
                (double)blocking / 1e6);
    int64_t busy = 0, graph = 0;
    for (size_t r = 0; r < rep->nr; r++)
        busy += rep->rr[r].busy, graph += rep->rr[r].graph_busy;
    if (graph)
        fprintf(f,
                "  CUDA graph replays launched %.1f%% of GPU busy time (JSON graph_pct per rank)\n",
                pct(graph, busy));
    heavy_text(f, rep);
    int any = 0;
    for (size_t r = 0; r < rep->nr; r++)
        if (rep->rr[r].flagged) {
            if (!any)
                fprintf(f, "\nStragglers:\n");
            any = 1;
            fprintf(f, "  rank %d: score %.1f, lateness %.1f us, kernel slowness x%.3f\n",
                    rep->rr[r].rank->rank, rep->rr[r].score, us((double)rep->rr[r].lateness),
                    rep->rr[r].slowness);
        }
    ct_hang_text(f, rep); /* collectives in flight of a flight-recorder window */
    fprintf(f, "\nPer rank (ms; %% of window):\n");
    fprintf(f, "  %-5s %-12s %9s %7s %7s %7s %7s %8s %7s\n", "rank", "host", "window", "comp%",
            "comm%", "mem%", "idle%", "overlap", "bubble");
    for (size_t r = 0; r < rep->nr; r++) {
        const struct ct_rank_result *x = &rep->rr[r];
        int64_t w = x->covered;
        char ov[16], bb[16];
        if (x->comm)
            snprintf(ov, sizeof(ov), "%.1f%%", pct(x->overlap, x->comm));
        else
            snprintf(ov, sizeof(ov), "-");
        if (x->bubble_pct >= 0)
            snprintf(bb, sizeof(bb), "%.1f%%", x->bubble_pct);
        else
            snprintf(bb, sizeof(bb), "-");
        fprintf(f, "  %-5d %-12.12s %9.3f %7s %7s %7s %7s %8s %7s\n", x->rank->rank, x->rank->host,
                (double)w / 1e6, pct_s(x->compute, w).s, pct_s(x->comm, w).s, pct_s(x->memory, w).s,
                pct_s(x->idle, w).s, ov, bb);
    }
    /* the labels over their columns (ckpt: a checkpoint step's excess
       over the median step, docs/report.md) */
    fprintf(f, "\nGPU-idle attribution (ms):\n  %-9s %11s %11s %11s %11s %11s %11s %11s\n", "rank",
            "bubble", "data", "ckpt", "cuda-call", "sync-drain", "launch", "unexplained");
    for (size_t r = 0; r < rep->nr; r++) {
        const struct ct_attribution *a = &rep->rr[r].at;
        fprintf(f, "  %-9d %11.3f %11.3f %11.3f %11.3f %11.3f %11.3f %11.3f\n",
                rep->rr[r].rank->rank, (double)a->bubble_idle / 1e6, (double)a->data_stall / 1e6,
                (double)a->checkpoint_stall / 1e6, (double)a->cuda_call / 1e6,
                (double)a->sync_drain / 1e6, (double)a->launch_overhead / 1e6,
                (double)a->unexplained / 1e6);
    }
    if (rep->ncoll) {
        /* the op column fits NVSHMEM's names ("nvshmem:ReduceScatter"): 14
         * as before for NCCL's */
        int w = 14;
        for (size_t i = 0; i < rep->ncoll; i++)
            if (rep->coll[i].lib == CT_LIB_NVSHMEM)
                w = 8 + (int)strlen(op_name(rep->coll[i].op)) > w
                        ? 8 + (int)strlen(op_name(rep->coll[i].op))
                        : w;
        fprintf(f,
                "\nCollectives (algbw, busbw in GB/s; of SoL: busbw over what the links carry):\n"
                "  %-*s %12s %6s %8s %10s %10s %9s %9s %7s\n",
                w, "op", "bytes", "ranks", "count", "p50 us", "skew us", "algbw", "busbw",
                "of SoL");
        for (size_t i = 0; i < rep->ncoll; i++) {
            const struct ct_coll_row *c = &rep->coll[i];
            char sol[16] = "-";
            if (isfinite(c->sol_pct))
                snprintf(sol, sizeof(sol), "%.1f%%", c->sol_pct);
            char name[40];
            /* NVSHMEM's rows say so: a user is never told NCCL ran them */
            snprintf(name, sizeof(name), "%s%s", c->lib == CT_LIB_NVSHMEM ? "nvshmem:" : "",
                     op_name(c->op));
            /* a figure the rows cannot give (one rank: no skew) is a dash,
             * never a 0 or "nan" */
            char p50[24], skew[24], alg[24], bus[24];
            fig(p50, sizeof(p50), c->p50 / 1e3, 1);
            fig(skew, sizeof(skew), c->skew_p50 / 1e3, 1);
            fig(alg, sizeof(alg), c->algbw, 2);
            fig(bus, sizeof(bus), c->busbw, 2);
            fprintf(f, "  %-*s %12" PRIu64 " %6d %8" PRIu64 " %10s %10s %9s %9s %7s\n", w, name,
                    c->bytes, c->nranks, c->count, p50, skew, alg, bus, sol);
        }
        /* what each bound rests on, or why there is none, once per text */
        for (size_t i = 0; i < rep->ncoll; i++) {
            const struct ct_coll_row *c = &rep->coll[i];
            const char *t = c->sol_basis[0] ? c->sol_basis : c->sol_reason;
            int seen = 0;
            for (size_t j = 0; j < i && !seen; j++)
                seen = !strcmp(t, rep->coll[j].sol_basis[0] ? rep->coll[j].sol_basis
                                                            : rep->coll[j].sol_reason);
            if (!seen && *t)
                fprintf(f, "  SoL %s: %s\n", c->sol_basis[0] ? "from" : "unknown", t);
        }
    }
    if (rep->nkern) {
        fprintf(f, "\nTop kernels by total time:\n  %10s    %8s    %13s  %s\n", "total ms", "count",
                "p50 us", "kernel");
        char *done = calloc(rep->nkern, 1);
        for (int k = 0; k < 10 && done; k++) {
            size_t best = SIZE_MAX;
            for (size_t i = 0; i < rep->nkern; i++)
                if (!done[i] && (best == SIZE_MAX || rep->kern[i].total > rep->kern[best].total))
                    best = i;
            if (best == SIZE_MAX)
                break;
            done[best] = 1;
            fprintf(f, "  %10.3f    %8" PRIu64 "    %13.1f  %s\n",
                    (double)rep->kern[best].total / 1e6, rep->kern[best].count,
                    us(rep->kern[best].p50), rep->kern[best].name);
        }
        free(done);
    }
    ct_hta_text(f, rep);        /* kineto: HTA-compatible section */
    ct_health_text(f, rep);     /* health: GPU health section (decoder/export/health_out.c) */
    ct_efficiency_text(f, rep); /* GPM: GPU efficiency section (efficiency_out.c) */
    ct_nccl_text(f, rep);       /* nccl: links and splits (decoder/export/nccl_out.c) */
    fprintf(f, "\nClock alignment (skew applied after realtime, residual):\n");
    for (size_t r = 0; r < rep->nr; r++)
        /* rounded first: a skew of -30 ns is "0.0", not "-0.0" */
        fprintf(f, "  rank %-4d skew %10.1f us  residual %8.1f us\n", rep->rr[r].rank->rank,
                round(us((double)rep->rr[r].rank->skew_ns) * 10) / 10 + 0.0,
                us((double)rep->rr[r].rank->residual_ns));
    host_processes_text(f, rep->job);
}
