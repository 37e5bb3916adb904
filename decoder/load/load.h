/*
 * The format dispatch: the one way operands become inputs and inputs
 * become a job (decoder/load/load.c), for every command that reads traces.
 * It sits above the readers, which are siblings that never call each
 * other: cutrace traces (decoder/read/extract.h), their per-rank summaries
 * (decoder/read/summary.h) and PyTorch profiler traces (decoder/kineto/),
 * all filling the one model (decoder/read/timeline.h), as Perfetto's
 * importers sit below one dispatcher. Operands are expanded (trace files,
 * folders of them, Kineto traces, summaries), every input decoded on
 * several threads by its reader straight into its compact timeline, Kineto
 * processes completed, the job built (ranks, classes, clock alignment).
 * Nothing above this folder calls a reader.
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
    /* ct_load_operands: every input as it is, of every run, without notes
     * (info, dump, summarize, the run folders of diff) */
    int keep_all;
    /* 1: the caller holds ranks open around what it reads of them, so a
     * large job may be spilled (decoder/read/spill.h) */
    int spill;
};

/* The kind of input an operand is (enum ct_source): a PyTorch profiler
 * trace or a folder that holds only those, a summary, else a cutrace trace
 * (or a folder of traces and summaries). */
int ct_load_format(const char *operand);

/*
 * A command's operands as its inputs, the one way: each operand added to
 * in, a PyTorch profiler trace (or a folder of them) by the Kineto
 * reader's rules unless o->no_kineto, else a file as is or a folder as
 * every *.cutrace and *.ctsum under it; the same file given twice counted
 * once with a note on stderr, and the run picked (o->run;
 * decoder/load/run_identity.h: several runs are refused with their listing
 * on stderr); with o->keep_all, every input of every run, no note. Returns 0, or a negative errno
 * with err: ct_load_usage_error tells the operand errors that are the user's (several runs, no such
 * run, a FIFO or device, mixed kinds) from the files that could not be read.
 */
int ct_load_operands(const struct ct_load_opts *o, struct ct_inputs *in, char *const *operands,
                     int n, char *err, size_t errlen);
/* 1 when rc (of ct_load_operands) is a bad operand of the user's rather
 * than a file that could not be read. */
int ct_load_usage_error(int rc);

/*
 * Decodes one input by its reader (by its name: a Kineto trace, a summary,
 * else a cutrace trace; only the latter two with o->no_kineto) into p. A
 * Kineto trace is complete only after ct_load_job (its processes are
 * finished together). Returns 0, or a negative errno with err naming the
 * file. Safe to call concurrently on different inputs.
 */
int ct_load_input(const struct ct_load_opts *o, const char *path, struct ct_proc *p, char *err,
                  size_t errlen);

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
