/*
 * `cutrace report`'s versioned JSON document (schema in docs/report.md);
 * the text is report_text.c's. JSON numbers are always finite; `_us` values are µs with
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
