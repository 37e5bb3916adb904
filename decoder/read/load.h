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
 * Decodes every input of in (in parallel, results in input order) and
 * builds job from them. Kineto warnings go to stderr, one line each,
 * prefixed with o->cmd. Returns 0; -EIO with err naming the trace that
 * could not be read; -EINVAL with err naming a bad CUTRACE_SPILL; or
 * -ENOMEM. On failure nothing is left allocated.
 */
int ct_load_job(const struct ct_load_opts *o, const struct ct_inputs *in, struct ct_job *job,
                char *err, size_t errlen);

#endif
