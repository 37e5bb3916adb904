/*
 * Which run each input belongs to, read before a job is loaded, so that the
 * traces of separate runs are never merged into one job (docs/runs.md, "Runs").
 *
 * Every trace the shim writes names its run (process metadata run_id:
 * shim/meta.c ct_run_identity, one per `cutrace run`, per launch of a
 * launcher, or per traced process tree). A job restarted by its launcher
 * or scheduler (Slurm's requeue, a resubmitted script) may come back with
 * a new run identity: runs that carry the same launcher job id and whose
 * restart counts differ are attempts of one job and count as one
 * (`cutrace goodput` measures the attempts). Traces recorded before run
 * identities, and traces whose metadata cannot be read, name no run: they
 * go with any run (as before) and never make operands "several runs".
 * PyTorch profiler traces have no run identity of cutrace's and are one
 * run of their own kind: never merged with cutrace traces.
 */
#ifndef CT_DECODER_RUN_IDENTITY_H
#define CT_DECODER_RUN_IDENTITY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "decoder/read/inputs.h"

/* One run (or one job of several attempts) among the inputs. */
struct ct_run_info {
    char *id;              /* the first run identity of the group; "kineto" for PyTorch traces */
    char *ids;             /* every run identity of the group, ' '-separated */
    char *job;             /* the launcher's job id, NULL when none */
    char *host;            /* the first trace's host, NULL when unknown */
    char *cmdline;         /* the first trace's command line, NULL when unknown */
    int64_t start_real_ns; /* the earliest trace's start (CLOCK_REALTIME), 0: unknown */
    size_t ntraces;
    int64_t restart_lo, restart_hi; /* restart counts seen, -1 when none */
    int kineto;
};

struct ct_run_list {
    struct ct_run_info *runs;
    size_t n;
    size_t *of; /* per input: the index of its run, or SIZE_MAX (it names none) */
    size_t ninputs;
};

/*
 * Reads the identity of every input of in (a trace's first metadata frame,
 * a summary's process life) and groups them into runs. Returns 0, or
 * -ENOMEM. An input that cannot be read names no run (its loading says
 * why); with job not NULL, neither does an input of another launcher job.
 */
int ct_run_list_read(const struct ct_inputs *in, struct ct_run_list *l, const char *job);
void ct_run_list_free(struct ct_run_list *l);

/* Writes one line per run (id, traces, start, host, command) to f, each
 * prefixed with indent; at most max lines and a count of the rest. */
void ct_run_list_print(FILE *f, const struct ct_run_list *l, const char *indent, size_t max);

/*
 * Keeps in only the inputs of one run: the one named sel (its identity or
 * a unique prefix of it, any identity of a job's attempts), or, with sel
 * NULL, the only one. Inputs that name no run stay. With job (goodput's
 * --job), only the inputs of that launcher job id count, and the others
 * stay for the loader's own job filter. Returns 0; -ENOTUNIQ
 * when the inputs hold several runs and sel is NULL (what is wrong and the
 * runs are written to stderr, prefixed with cmd, and err says how to pick
 * one); -ESRCH when sel names none of them or -EINVAL when sel is a
 * prefix of several (the same); -EMEDIUMTYPE when PyTorch profiler
 * traces and cutrace traces are mixed; -ENOMEM.
 */
int ct_inputs_pick_run(struct ct_inputs *in, const char *sel, const char *job, const char *cmd,
                       char *err, size_t errlen);

/* The highest N among the cutrace-runN folders of the current folder
 * (`cutrace run` makes its folder one more than the highest there, so this
 * is the newest run's), its name into out: N, or 0 when there is none. A
 * command given no operand reads it (docs/cli.md). */
long ct_newest_run_dir(char *out, size_t n);

#endif
