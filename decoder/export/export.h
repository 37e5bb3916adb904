/*
 * `cutrace export` and `cutrace report --html`: what the writers share.
 *
 * An export reads a job twice. The first pass builds the job as `cutrace
 * report` does (ct_load_job + ct_report_analyze, decoder/load/load.h):
 * it yields the rank of every trace, the clock alignment and the report's
 * figures. The second pass decodes one trace at a time (ct_trace_load) and
 * streams its records to the writer, so memory is the compact job plus one
 * decoded trace. Between the two, a pass over the traces' times
 * (decoder/export/prescan.c) finds the exports' time zero and the Chrome
 * file's expected size. Every exported time is on the job clock, rebased
 * to that zero: the job's earliest record, so that no time is negative
 * (Perfetto drops events of negative time). `cutrace report`'s zero (the
 * job's first GPU start, its `start_us`) is job.t0 - origin after it.
 */
#ifndef CT_EXPORT_H
#define CT_EXPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "decoder/analysis/analysis.h"
#include "decoder/analysis/critical_path.h"
#include "decoder/util/progress.h"

/* One trace of the job and how its times map onto the export's clock. */
struct ct_export_src {
    const char *path; /* borrowed from the job */
    const char *host;
    const struct ct_hproc *health; /* the trace's counters (borrowed from the job), or NULL */
    int rank;
    uint32_t pid;
    int64_t shift; /* ns added to the trace's monotonic ns: on the job clock until
                    * ct_export_rebase, then ns since the export's time zero */
};

/* The part of the job to write (`export --ranks`, `--iterations`,
 * `--window`): a large job's whole timeline is hundreds of GB. */
struct ct_export_sel {
    int *ranks; /* sorted; NULL: every rank */
    size_t nranks;
    int64_t lo, hi; /* records that overlap [lo, hi] (clock as src.shift); INT64_MIN/MAX: all */
};

struct ct_export_job {
    struct ct_job job;
    struct ct_report rep;
    struct ct_export_src *src; /* sorted by rank, then path */
    size_t nsrc;
    int64_t origin;             /* the export's time zero on the job clock: its earliest record */
    int64_t origin_realtime_ns; /* the same as CLOCK_REALTIME ns (the job clock is realtime) */
    struct ct_export_sel sel;
    /* `export --critical-path` (Chrome only): the path's edges after an
     * unscaled replay, or NULL; the steps of index cp_first..cp_last drawn
     * (cp_last -1: to the end), within sel. */
    const struct ct_cp_path *cp;
    int64_t cp_first, cp_last;
    /* `export --nccl-proxy` (Chrome only): NCCL's ProxyOps on tracks of
     * their own (decoder/export/chrome_nccl.c) */
    int nccl_proxy;
};

/* Whether the selection holds rank r. */
static inline int ct_export_rank_on(const struct ct_export_sel *s, int r)
{
    if (!s->ranks)
        return 1;
    size_t lo = 0, hi = s->nranks;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->ranks[mid] < r)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->nranks && s->ranks[lo] == r;
}

/* The end of a span record (its field 1, after the start in field 0), the
 * start for the others. */
static inline uint64_t ct_export_rec_end(const struct ct_record *r)
{
    switch (r->kind) {
    case CT_REC_API:
    case CT_REC_GPU:
    case CT_REC_NCCL:
    case CT_REC_IO:
    case CT_REC_NVTX_RANGE:
    case CT_REC_NCCL_PROXY: return r->f[1];
    default: return r->f[0];
    }
}

/* Whether [a, b] (ns since time zero) overlaps the selection's window. */
static inline int ct_export_in(const struct ct_export_sel *s, int64_t a, int64_t b)
{
    return b >= s->lo && a <= s->hi;
}

/* Whether record r of a trace shifted by shift is written: it overlaps the
 * window; metadata and clock pairs always (they describe the whole trace). */
static inline int ct_export_rec_in(const struct ct_export_sel *s, const struct ct_record *r,
                                   int64_t shift)
{
    return r->kind == CT_REC_META || r->kind == CT_REC_CLOCK ||
           ct_export_in(s, (int64_t)r->f[0] + shift, (int64_t)ct_export_rec_end(r) + shift);
}

/* The Chrome file's expected size (ct_export_prescan). */
struct ct_export_size {
    uint64_t records; /* records of the selection that become events */
    uint64_t events;  /* the events they make */
    uint64_t bytes;   /* the file's expected length */
};

/*
 * The pass before writing (decoder/export/prescan.c): reads every trace of
 * x once, times and a few names, with x->src shifts and x->sel still on the
 * job clock. Sets x->origin to the job's earliest record of an exported
 * kind (not metadata or clock pairs; the report's zero when there is
 * none), and with est the Chrome file's expected size for x->sel and x->cp
 * (chrome 1; chrome 0 reads times only). A thread per CPU, one trace each
 * at a time. Returns 0, or a negative errno with err naming the trace that
 * cannot be read.
 */
int ct_export_prescan(struct ct_export_job *x, int chrome, struct ct_export_size *est,
                      struct ct_progress *pr, char *err, size_t errlen);
/* Moves the src shifts and the selection to ns since x->origin. */
void ct_export_rebase(struct ct_export_job *x);

/*
 * Writers. Each returns 0, or a negative errno with err holding one message
 * (naming the file for a trace that cannot be read, "out of memory", or the
 * output's own error). They never print except through pr.
 */
int ct_export_chrome(FILE *f, struct ct_export_job *x, struct ct_progress *pr, char *err,
                     size_t errlen);
int ct_export_sqlite(const char *out, struct ct_export_job *x, struct ct_progress *pr, char *err,
                     size_t errlen);

/* The HTML report's critical-path section: the unscaled path of rep's job
 * (res, and path from ct_cp_path_edges), or, res NULL, why the graph was
 * not built (one sentence, shown as is). */
struct ct_html_cp {
    const struct ct_cp_result *res;
    const struct ct_cp_path *path;
    const char *why;
};

/* What the HTML page shows besides rep's figures, each gathered by the
 * command (decoder/cmd/report.c) from the layers above this one. */
struct ct_html_in {
    const struct ct_html_cp *cp; /* the critical path; NULL: not built, no reason */
    /* `cutrace diagnose --json`'s document for rep (compare/diagnose.h),
     * shown as the page's findings; NULL: diagnose_why says why not */
    const char *diagnose, *diagnose_why;
    /* the traces' metadata, as compare/runs.h's ct_run_value and
     * ct_run_cmdlines give them; NULL: not read */
    const char *cmdlines; /* distinct command lines, '\n'-separated */
    const char *gpus;     /* distinct device names, '+'-joined; "(none)" */
    const char *recorder; /* distinct cutrace_version values, '+'-joined */
};

/* The self-contained HTML report (decoder/export/html.c): the job's
 * identity, diagnose's findings, summary, timelines, charts and tables of
 * a finished report. in may be NULL (nothing beyond rep). Returns 0 or
 * -EIO (write errors on f). */
int ct_report_html(FILE *f, const struct ct_report *rep, const struct ct_html_in *in);

#endif
