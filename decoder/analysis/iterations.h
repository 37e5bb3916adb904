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
 *      median cycle; each kept cycle is one iteration, from its first op's
 *      launch (or the end of a sync after the op before) to the next
 *      cycle's (or its own GPU work's end, when later); in a capture of
 *      whole steps (Kineto), every cycle rotated to start where the
 *      capture's steps do. None when no anchor holds: iterations are never
 *      invented. A rank whose period disagrees with the job's looks again
 *      at the job's period (ct_iterations_agree).
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

struct ct_iter {
    int64_t s, e;
    int64_t index; /* N of ProfilerStep#N, else the ordinal from 0 */
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
 * confidence (0..1) for the period, 0 when none. Returns 0 or -ENOMEM. */
int ct_iterations_find(const struct ct_rank *r, const struct ct_iter_opts *o, struct ct_iter **out,
                       size_t *n, enum ct_iter_source *src, double *conf);

/* Source 3 alone (repeats.c): iterations from the work that repeats among
 * the ops launched in [lo, hi), with the confidence in them. Returns 0 or
 * -ENOMEM; *n = 0 when none holds. */
int ct_iterations_from_repeats(const struct ct_rank *r, int64_t lo, int64_t hi, int64_t period_ns,
                               struct ct_iter **out, size_t *n, double *conf);

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

const char *ct_iter_source_name(enum ct_iter_source s);

#endif
