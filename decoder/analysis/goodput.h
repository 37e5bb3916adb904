/*
 * Goodput over a job's whole life (decoder/analysis/goodput.c; definitions
 * in docs/goodput.md): the job's wall time, from its first process start to
 * its last process end, split into down time between attempts and, for
 * each attempt, start-up, productive steps, checkpoint saves, restores, lost
 * work, hang time, data stalls, idle between steps, shutdown and the time
 * the traces cannot classify. Only time the traces cover is split: a rank
 * recorded in capture windows (paused start, `cutrace start`/`stop`, light
 * mode) covers its windows, a PyTorch profiler trace its GPU window; the
 * rest (and a window's edges, parts of steps it cut) is uncovered.
 * Goodput = productive / covered, null when no step was found.
 *
 * An attempt is one launch of the job's rank processes: processes with the
 * same restart count (metadata restart_count: CUTRACE_RESTART_COUNT,
 * TORCHELASTIC_RESTART_COUNT, SLURM_RESTART_COUNT), or, without one, ranks'
 * processes whose lifetimes overlap (a new attempt starts when a process
 * starts after every earlier one ended). An attempt's parts are the mean
 * over its ranks of each rank's own partition of the attempt's span, so
 * they sum to the span.
 */
#ifndef CT_GOODPUT_H
#define CT_GOODPUT_H

#include <stddef.h>
#include <stdint.h>

struct ct_report;

enum ct_part {
    CT_GP_STARTUP = 0,
    CT_GP_PRODUCTIVE,
    CT_GP_CHECKPOINT,
    CT_GP_RESTORE,
    CT_GP_LOST,
    CT_GP_HANG,
    CT_GP_DATA,
    CT_GP_IDLE,
    CT_GP_SHUTDOWN,
    CT_GP_UNCLASSIFIED,
    CT_GP_NPARTS
};
/* "startup", "productive", ... as JSON keys take them (with "_us") */
const char *ct_gp_part_name(int part);

/* killed: a process died without finishing its trace, by a signal no handler saw (SIGKILL),
 * and its trace was completed from its live mapping: nothing was lost, the signal is not
 * known (a known one is CT_END_SIGNAL) */
enum ct_ended { CT_END_EXIT = 0, CT_END_SIGNAL, CT_END_TRUNCATED, CT_END_HANG, CT_END_KILLED };
const char *ct_ended_name(int ended);

/* How an attempt's lost steps were found. */
enum ct_lost_rule {
    CT_LOST_NONE = 0,   /* nothing lost: the attempt ended cleanly and was the last */
    CT_LOST_RESTEP,     /* the next attempt ran these step numbers again */
    CT_LOST_CHECKPOINT, /* steps after the attempt's last checkpoint save */
    CT_LOST_ALL,        /* no checkpoint save in a failed attempt: all its steps */
};
const char *ct_lost_rule_name(int rule);

struct ct_attempt {
    int64_t s, e;    /* job clock, ns */
    int64_t restart; /* restart count, -1 when not recorded */
    int ended;       /* enum ct_ended */
    int signal;      /* the fatal signal, 0 none seen */
    size_t ranks, procs;
    const char **traces;       /* the trace files (borrowed), nprocs of them */
    double part[CT_GP_NPARTS]; /* ns, mean over its ranks */
    int64_t *lost_steps;       /* step indexes, ascending */
    size_t nlost;
    int lost_rule;
    size_t steps; /* productive steps of its first rank (the median rank's count) */
    int64_t first_step, last_step; /* indexes of its productive steps, -1 none */
    int64_t hang_since;            /* the hang's onset, INT64_MIN none */
    int64_t end_uncertainty;       /* ns its end may lie after the last record: a truncated
                                    * trace loses what was not flushed (CUTRACE_FLUSH_MS);
                                    * 0 for one completed from its live mapping */
    /* ns of its span the parts are of (mean over its ranks): what the
     * traces recorded, less window edges; part[] sums to it. The rest of
     * the span is uncovered: no part, and not in the goodput. */
    double covered;
    double recorded;   /* the same with the window edges: what the records cover */
    size_t steps_seen; /* iterations found in it, over its ranks (kept or lost) */
};

struct ct_goodput {
    const char *job;           /* the job id of the traces (borrowed), NULL none recorded */
    int64_t s, e;              /* first process start, last process end (job clock) */
    double part[CT_GP_NPARTS]; /* sums over attempts, ns */
    double downtime;           /* between attempts, ns */
    /* ns the goodput is over: the attempts' covered time and the down time
     * (part[] and downtime sum to it); e - s less it is uncovered */
    double covered;
    double goodput_pct;      /* productive / covered; NAN with `unavailable` */
    const char *unavailable; /* why goodput_pct is NAN (static), NULL */
    struct ct_attempt *att;
    size_t natt;
    /* processes with no start time recorded (older traces): their first
     * record stands for it */
    size_t no_start;
};

/* Computes the goodput of rep's job (its iterations found). 0 or -ENOMEM. */
int ct_goodput(const struct ct_report *rep, struct ct_goodput *g);
void ct_goodput_free(struct ct_goodput *g);

#endif
