/*
 * Runs for `cutrace diff` and `cutrace diagnose`: which traces form one run
 * (one job's execution), what their metadata says (host, GPU model, driver,
 * NCCL version, NCCL_* settings, `--tag` values) and the per-copy facts the
 * report's timelines do not keep (host call and GPU transfer of each copy).
 *
 * A run operand is a trace file (a run of one trace), a folder holding
 * *.cutrace files directly (one run: every trace under it), or a folder of
 * such folders (each immediate subfolder with traces is a run, in name
 * order); traces of several runs in one folder (their run identities,
 * decoder/read/run_identity.h) are as many runs. Functions return 0 or a negative errno with err
 * holding one message naming the path; they never print and never exit.
 */
#ifndef CT_RUNS_H
#define CT_RUNS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "decoder/analysis/analysis.h"

struct ct_kv {
    char *key, *value;
};

/* One memcpy call with its GPU transfer (trace clock, ns). */
struct ct_copy_fact {
    int64_t host_s, host_e, gpu_s, gpu_e;
    uint64_t bytes;
    uint8_t kind;  /* enum ct_copy_kind */
    uint8_t async; /* an *Async entry point */
};

/* What one trace file says besides its timeline. Metadata keys: process
 * keys as recorded ("host", "rank", "nccl_version", "env.NCCL_ALGO",
 * "tag.KEY", ...); device keys prefixed "device." ("device.name",
 * "device.driver_version"); the first value of a key wins. */
struct ct_trace_facts {
    char *path;
    int64_t rank; /* -1 when the metadata has none */
    struct ct_kv *meta;
    size_t nmeta;
    struct ct_copy_fact *copies; /* sorted by host start */
    size_t ncopies;
};

struct ct_run {
    char *name; /* the folder (or file) the run came from */
    char **paths;
    size_t n;
    struct ct_trace_facts *facts; /* one per path after ct_run_scan */
};

struct ct_runset {
    struct ct_run *runs;
    size_t n;
};

/* Adds the runs of one operand (rules above). */
int ct_runs_find(struct ct_runset *rs, const char *operand, char *err, size_t errlen);
void ct_runs_free(struct ct_runset *rs);

/* Reads every trace's facts (one streaming pass per file). */
int ct_run_scan(struct ct_run *run, char *err, size_t errlen);
/* A trace's facts, or a summary's (decoder/read/summary.h: f->path is then
 * the trace's it was made from). */
int ct_facts_scan(const char *path, struct ct_trace_facts *f, char *err, size_t errlen);
/* The facts as a summary's facts section (cutrace summarize). */
struct ct_sum_wbuf;
void ct_facts_encode(const struct ct_trace_facts *f, struct ct_sum_wbuf *b);
void ct_facts_free(struct ct_trace_facts *f);

/*
 * The run's value of a segmentation key, written to buf: the key is looked
 * up as given, then as an alias ("gpu"/"gpu_model" -> device.name,
 * "driver" -> device.driver_version, "nccl" -> nccl_version), then as
 * env.KEY (NCCL_* settings) and tag.KEY. Traces that disagree give their
 * distinct values joined by '+'; no trace with the key gives "(none)".
 */
const char *ct_run_value(const struct ct_run *run, const char *key, char *buf, size_t len);

/*
 * The run's command lines: the distinct "cmdline" metadata values of its
 * traces (one per process image), '\n'-separated, into *out (malloc'ed; ""
 * when no trace has one). Uses the facts when ct_run_scan has run, else
 * reads only each trace's first chunk, where the recorder writes a
 * process's metadata.
 */
int ct_run_cmdlines(const struct ct_run *run, char **out, char *err, size_t errlen);

/* Loads the run's traces, builds the job and runs every report analysis
 * (as `cutrace report` does). On success the caller frees rep then job. */
int ct_run_report(const struct ct_run *run, const struct ct_iter_opts *io, struct ct_job *job,
                  struct ct_report *rep, char *err, size_t errlen);

/* Writes the run's JSON-lines rows (diff_rows.c; columns in docs/diff.md,
 * "schema":"cutrace.rows","version":CT_ROWS_VERSION on every row): one
 * "job" row, one "iteration" row per rank and iteration, one "rank" row per
 * rank, one "kernel" row per kernel name, one "collective" row per
 * collective table row. side: "A", "B" or NULL. Needs ct_run_scan for the
 * metadata columns. */
#define CT_ROWS_VERSION 2
struct ct_report;
void ct_rows_write(FILE *f, const struct ct_run *run, const char *side,
                   const struct ct_report *rep);

/* `cutrace report --rows FILE` (diff_rows.c): writes rep's rows to f, the
 * run named name with the metadata of the cutrace traces among the inputs
 * the report was made of (one more streaming pass per trace; PyTorch
 * profiler traces have no such metadata: their columns say "(none)").
 * Returns 0, or a negative errno with err holding one message naming the
 * trace. */
struct ct_inputs;
int ct_report_rows(FILE *f, const char *name, const struct ct_inputs *in,
                   const struct ct_report *rep, char *err, size_t errlen);

#endif
