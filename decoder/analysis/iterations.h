/*
 * Iterations of one rank. Sources, first that gives at least one:
 *   1. NVTX (or cutrace) ranges named `ProfilerStep#N` (or `--step NAME`,
 *      matching NAME or NAME#N): one iteration per range, from the range's
 *      start to the later of its end and the last GPU end of work launched
 *      inside it (the step is over when its GPU work is);
 *   2. marks of that name: from one mark to the next;
 *   3. the repeating pattern of compute-kernel names: the smallest period P
 *      such that name[i] == name[i+P] for >= 95% of launches, anchored at the
 *      first kernel; each complete cycle is one iteration, from its first
 *      kernel's GPU start to the next cycle's first kernel (the last: its
 *      last kernel's end).
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
};

/* Finds the iterations of rank r. *out is malloc'ed (NULL when none).
 * Returns 0 or -ENOMEM. */
int ct_iterations_find(const struct ct_rank *r, const struct ct_iter_opts *o, struct ct_iter **out,
                       size_t *n, enum ct_iter_source *src);

/* The detected period of a sequence of ids (0 when none), exposed for tests. */
size_t ct_iterations_period(const uint32_t *seq, size_t n);

const char *ct_iter_source_name(enum ct_iter_source s);

#endif
