/*
 * `cutrace export` and `cutrace report --html`: what the writers share.
 *
 * An export reads a job twice. The first pass builds the job as `cutrace
 * report` does (ct_proc_extract_file + ct_job_build + ct_report_analyze):
 * it yields the rank of every trace, the clock alignment and the report's
 * figures. The second pass decodes one trace at a time (ct_trace_load) and
 * streams its records to the writer, so memory is the compact job plus one
 * decoded trace. Every exported time is on the job clock, rebased to the
 * job's time zero: the first GPU start of the job, the zero of `cutrace
 * report`'s `start_us` (host activity before it has negative times).
 */
#ifndef CT_EXPORT_H
#define CT_EXPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "decoder/analysis/analysis.h"
#include "decoder/util/progress.h"

/* One trace of the job and how its times map onto the export's clock. */
struct ct_export_src {
    const char *path; /* borrowed from the job */
    const char *host;
    int rank;
    uint32_t pid;
    int64_t shift; /* ns added to the trace's monotonic ns: ns since time zero */
};

struct ct_export_job {
    struct ct_job job;
    struct ct_report rep;
    struct ct_export_src *src; /* sorted by rank, then path */
    size_t nsrc;
    int64_t origin_realtime_ns; /* time zero as CLOCK_REALTIME ns (job->t0) */
};

/*
 * Writers. Each returns 0, or a negative errno with err holding one message
 * (naming the file for a trace that cannot be read, "out of memory", or the
 * output's own error). They never print except through pr.
 */
int ct_export_chrome(FILE *f, struct ct_export_job *x, struct ct_progress *pr, char *err,
                     size_t errlen);
int ct_export_sqlite(const char *out, struct ct_export_job *x, struct ct_progress *pr, char *err,
                     size_t errlen);

/* The self-contained HTML report (decoder/export/html.c): summary,
 * per-rank timelines, charts and tables of a finished report. Returns 0 or
 * -ENOMEM (the page is then incomplete); write errors show on f. */
int ct_report_html(FILE *f, const struct ct_report *rep);

#endif
