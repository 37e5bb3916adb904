/*
 * Iterations of one rank. Sources, first that gives at least one:
 *   1. NVTX (or cutrace) ranges named `ProfilerStep#N` (or `--step NAME`,
 *      matching NAME or NAME#N): one iteration per range, from the range's
 *      start to the later of its end and the last GPU end of work launched
 *      inside it (the step is over when its GPU work is);
 *   2. marks of that name: from one mark to the next;
 *   3. the work that repeats in every step (decoder/analysis/repeats.c):
 *      compute kernels, copies and NCCL ops in launch order, cut at the
 *      token whose occurrences give the most cycles that agree with their
 *      median cycle, unless a level above it repeats with the job's
 *      synchronisation structure (collectives, optimizer, host copies,
 *      graph launches) or the host's loop and it does not (layers inside a
 *      step); each kept cycle is one iteration, from its first op's
 *      launch (or the end of a sync after the op before) to the next
 *      cycle's (or its own GPU work's end, when later); in a capture of
 *      whole steps (Kineto), every cycle rotated to start where the
 *      capture's steps do. None when no anchor holds, or when the level
 *      that repeats is a part of one step: iterations are never invented.
 *      A rank whose period disagrees with the job's looks again at the
 *      job's period (ct_iterations_agree).
 * Ranges and repeats then start no earlier than their GPU work can
 * (ct_iterations_gpu_side): a host that runs ahead of its GPU queues a
 * step long before the GPU begins it.
 * A rank with capture windows (ct_rank.cover) has only the iterations that
 * lie inside one window; source 3 looks in each window on its own.
 * Then `--skip N` drops the first N and `--steps A-B` keeps indexes A..B.
 */
#ifndef CT_ITERATIONS_H
#define CT_ITERATIONS_H

#include <stddef.h>
#include <stdint.h>

#include "decoder/read/timeline.h"

enum ct_iter_source { CT_ITER_NONE = 0, CT_ITER_RANGES, CT_ITER_MARKS, CT_ITER_PERIOD };

/* Why iterations from repeats have less confidence, or none (bits of the
 * `why` the finders give; ct_iter_note words them):
 *   NO_SYNC  no collective, optimizer kernel, host copy, host sync or graph
 *            launch in most cycles: confidence halved;
 *   NO_PAUSE the host launches the cycles back to back (no loop boundary
 *            between them): confidence halved;
 *   FEW      two cycles or fewer: confidence times 0.7;
 *   PARTS    none: the work that repeats is a part of one step (a capture
 *            of whole steps whose synchronisation structure shows only at
 *            its ends, or none at all and no host pause);
 *   HTA_LAST one step fewer: HTA's mode drops a capture's last step. */
enum {
    CT_ITER_WHY_NO_SYNC = 1,
    CT_ITER_WHY_NO_PAUSE = 2,
    CT_ITER_WHY_FEW = 4,
    CT_ITER_WHY_PARTS = 8,
    CT_ITER_WHY_HTA_LAST = 16,
};

struct ct_iter {
    int64_t s, e;
    int64_t index; /* N of ProfilerStep#N, else the ordinal from 0 */
    /* 1: a step of a salvaged process whose GPU work is not all in the
     * trace (it launched ops whose GPU time died with the process, or ran
     * beside them: struct ct_rank gcut, hcut); ct_iterations_cut takes it
     * out of the GPU figures */
    int32_t partial;
};

struct ct_iter_opts {
    long skip;           /* drop the first `skip` iterations */
    int64_t first, last; /* keep indexes in [first, last]; last < 0: no bound */
    /* source 3 only: take the anchor whose cycles last period_ns (within
     * 15 %), 0: any (ct_iterations_agree sets it for a rank whose period
     * disagrees with the job's) */
    int64_t period_ns;
};

/* Finds the iterations of rank r. *out is malloc'ed (NULL when none).
 * *conf (when conf is not NULL): 1 for ranges and marks, the detector's
 * confidence (0..1) for the period, 0 when none; *why (when not NULL): the
 * CT_ITER_WHY_* bits. Returns 0 or -ENOMEM. */
/* Moves the partial iterations of x (above; marked by ct_iterations_find,
 * checked again on their final bounds) out of x->iters, which the GPU
 * figures are over, keeping every step in x->all_iters (what goodput counts
 * the job's life by). Nothing when none is. 0 or -ENOMEM. */
struct ct_rank_result;
int ct_iterations_cut(struct ct_rank_result *x);

int ct_iterations_find(const struct ct_rank *r, const struct ct_iter_opts *o, struct ct_iter **out,
                       size_t *n, enum ct_iter_source *src, double *conf, unsigned *why);

/* Source 3 alone (repeats.c): iterations from the work that repeats among
 * the ops launched in [lo, hi), with the confidence in them and the
 * CT_ITER_WHY_* bits of why it is less than the cycles' agreement (why may
 * be NULL). Returns 0 or -ENOMEM; *n = 0 when none holds. */
int ct_iterations_from_repeats(const struct ct_rank *r, int64_t lo, int64_t hi, int64_t period_ns,
                               struct ct_iter **out, size_t *n, double *conf, unsigned *why);

/* Writes into buf (size n) what the report says of a rank's iterations
 * beside their source: the reason for none, or for a confidence below the
 * cycles' agreement ("" when there is nothing to say). */
void ct_iter_note(char *buf, size_t n, enum ct_iter_source src, unsigned why);

/* Ranks of one job share their step. After every rank's iterations were
 * found (rr[i].iters), a rank whose iterations came from repeats with a
 * median step more than 15 % off the job's (the median over ranks of each
 * rank's median step) looks again for an anchor with the job's period;
 * when one holds, its iterations replace the rank's (a pipeline's last
 * stage repeats its micro-batch exactly, its step only at the sync), and
 * ranks whose steps came from repeats are numbered alike by the sequence
 * numbers of their collectives (a rank that dropped a warm-up step). Needs
 * struct ct_rank_result (analysis.h). 0 or -ENOMEM. */
struct ct_rank_result;
int ct_iterations_agree(struct ct_rank_result *rr, size_t n, const struct ct_iter_opts *o);

/* One phase for the job's steps (step_phase.c): ranks whose steps came
 * from repeats and begin at another op than most ranks' (or than the
 * annotated ranks') are re-cut at the ops that the collectives on
 * communicator comm map from a reference rank's boundaries, and take its
 * step numbers. 0 or -ENOMEM. */
int ct_iterations_align(struct ct_rank_result *rr, size_t n, uint64_t comm);

/* Iterations never start before the GPU can begin their work: a host that
 * runs ahead of its GPU (a serving loop, a training loop without a sync)
 * launches step k while the GPU still runs the steps before it. Each
 * iteration of a rank whose iterations came from ranges or repeats, but
 * the first, starts at the latest of its host start and the earlier of
 * its own work's first GPU start and the end of the previous iteration's
 * work; an iteration that ended where the next began still does. The work
 * of iteration k: the ops launched from its host start to the next's.
 * Needs struct ct_rank_result (analysis.h) and its rank open. 0 or
 * -ENOMEM. */
int ct_iterations_gpu_side(struct ct_rank_result *x);

const char *ct_iter_source_name(enum ct_iter_source s);

#endif
