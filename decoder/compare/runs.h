/*
 * Runs for `cutrace diff` and `cutrace diagnose`: which traces form one run
 * (one job's execution), and what their metadata says (host, GPU model,
 * driver, NCCL version, NCCL_* settings, `--tag` values: the facts each
 * trace's extraction gathered, decoder/read/facts.h).
 *
 * A run operand is a trace file (a run of one trace), a folder holding
 * *.cutrace files directly (one run: every trace under it), or a folder of
 * such folders (each immediate subfolder with traces is a run, in name
 * order); traces of several runs in one folder (their run identities,
 * decoder/load/run_identity.h) are as many runs. Functions return 0 or a negative errno with err
 * holding one message naming the path; they never print and never exit.
 */
#ifndef CT_RUNS_H
#define CT_RUNS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "decoder/analysis/analysis.h"

struct ct_run {
    char *name; /* the folder (or file) the run came from */
    char **paths;
    size_t n;
};

struct ct_runset {
    struct ct_run *runs;
    size_t n;
};

/* Adds the runs of one operand (rules above). */
int ct_runs_find(struct ct_runset *rs, const char *operand, char *err, size_t errlen);
void ct_runs_free(struct ct_runset *rs);

/*
 * The run's value of a segmentation key, written to buf: the key is looked
 * up as given, then as an alias ("gpu"/"gpu_model" -> device.name,
 * "driver" -> device.driver_version, "nccl" -> nccl_version), then as
 * env.KEY (NCCL_* settings) and tag.KEY, in the facts of each trace of the
 * loaded run (decoder/read/facts.h). Traces that disagree give their
 * distinct values joined by '+'; no trace with the key gives "(none)".
 */
const char *ct_run_value(const struct ct_job *job, const char *key, char *buf, size_t len);

/*
 * The loaded run's command lines: the distinct "cmdline" metadata values
 * of its traces (one per process image), '\n'-separated, into *out
 * (malloc'ed; "" when no trace has one). 0 or -ENOMEM.
 */
int ct_run_cmdlines(const struct ct_job *job, char **out);

/* Loads the run's traces, builds the job and runs every report analysis
 * (as `cutrace report` does). On success the caller frees rep then job. */
int ct_run_report(const struct ct_run *run, const struct ct_iter_opts *io, struct ct_job *job,
                  struct ct_report *rep, char *err, size_t errlen);

/* Writes the run's JSON-lines rows (diff_rows.c; columns in docs/diff.md,
 * "schema":"cutrace.rows","version":CT_ROWS_VERSION on every row): one
 * "job" row, one "iteration" row per rank and iteration, one "rank" row per
 * rank, one "kernel" row per kernel name, one "collective" row per
 * collective table row. name: the run's (its folder), side: "A", "B" or
 * NULL. The metadata columns come from the facts of the report's traces
 * (decoder/read/facts.h; PyTorch profiler traces have none: their columns
 * say "(none)"). */
#define CT_ROWS_VERSION 2
struct ct_report;
void ct_rows_write(FILE *f, const char *name, const char *side, const struct ct_report *rep);

#endif
