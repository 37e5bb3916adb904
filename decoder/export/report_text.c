/*
 * `cutrace report`'s text (headline first, then per-rank and per-table
 * detail); the JSON document is report_out.c's. A figure the report has
 * not is a dash, never a 0.
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

static const char *op_name(int op)
{
    return op == CT_NCCL_OP_COUNT ? "other" : ct_name_nccl_op((uint64_t)op);
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
