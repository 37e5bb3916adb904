/*
 * The one way a job is loaded (decoder/read/load.c), for every command that
 * reads traces as a job (report, export, diff, diagnose): operands expanded
 * (trace files, folders of them, PyTorch profiler traces, per-rank
 * summaries: decoder/read/summary.h), every trace decoded on several
 * threads straight into its compact timeline (a summary read back), Kineto
 * processes completed, the job built (ranks, classes, clock alignment).
 */
#ifndef CT_DECODER_LOAD_H
#define CT_DECODER_LOAD_H

#include <stddef.h>

#include "decoder/read/inputs.h"
#include "decoder/read/timeline.h"

struct ct_load_opts {
    const char *cmd;  /* "cutrace report": prefixes progress and warnings on stderr */
    const char *step; /* NVTX range or mark naming iterations; NULL: the default */
    int hta;          /* Kineto input: HTA-compatible preprocessing (docs/kineto.md) */
    int progress;     /* a progress line on stderr for loads longer than a second */
    const char *job;  /* keep only the traces of this job id (metadata "job"); NULL: all */
    const char *run; /* --run: the run to read when the operands hold several; NULL: the only one */
    /* PyTorch profiler traces are not operands here: ct_load_operands
     * expands them as it would any file, and ct_load_job reads every input
     * as a cutrace trace or summary (a JSON file is then refused by the
     * trace reader) */
    int no_kineto;
    /* 1: the caller holds ranks open around what it reads of them, so a
     * large job may be spilled (decoder/read/spill.h) */
    int spill;
};

/*
 * Adds each operand to in: a PyTorch profiler trace (or a folder of them)
 * by the Kineto reader's rules, else a file as is or a folder as every
 * *.cutrace under it. Returns 0, or a negative errno with err naming the
 * operand.
 */
int ct_load_expand(struct ct_inputs *in, char *const *operands, int n, char *err, size_t errlen);

/*
 * A command's operands as its inputs, the one way: expanded (as
 * ct_load_expand, or as cutrace traces only with o->no_kineto), the same
 * file given twice counted once with a note on stderr, and the run picked
 * (o->run; decoder/read/run_identity.h: several runs are refused with
 * their listing on stderr). Returns 0, or a negative errno with err:
 * ct_load_usage_error tells the operand errors that are the user's
 * (several runs, no such run, a FIFO or device, mixed kinds) from the
 * files that could not be read.
 */
int ct_load_operands(const struct ct_load_opts *o, struct ct_inputs *in, char *const *operands,
                     int n, char *err, size_t errlen);
/* 1 when rc (of ct_load_operands) is a bad operand of the user's rather
 * than a file that could not be read. */
int ct_load_usage_error(int rc);

/*
 * Decodes every input of in (in parallel, results in input order) and
 * builds job from them. Kineto warnings go to stderr, one line each,
 * prefixed with o->cmd. Returns 0; -EIO with err naming the trace that
 * could not be read; -EINVAL with err naming a bad CUTRACE_SPILL; -ESRCH
 * when o->step names no range or mark of the traces; or -ENOMEM. On failure nothing is left
 * allocated.
 */
int ct_load_job(const struct ct_load_opts *o, const struct ct_inputs *in, struct ct_job *job,
                char *err, size_t errlen);

#endif
