/* What decoder/analysis/efficiency.c shares with the per-stream and
 * collective-traffic attribution (decoder/analysis/efficiency_streams.c):
 * one GPM sample interval on the job clock. */
#ifndef CT_EFFICIENCY_INT_H
#define CT_EFFICIENCY_INT_H

#include <stddef.h>
#include <stdint.h>

#include "decoder/analysis/efficiency.h"

struct ct_rank;

struct ct_eff_smp {
    int64_t s, e;
    double v[CT_EFF_N]; /* NaN: absent */
    double busy;        /* |B ∩ I|: the rank's SM work inside it */
};

/* Work on the SMs, each piece once (efficiency.c). */
struct ct_gpu_op;
int ct_eff_sm_work(const struct ct_gpu_op *o);

/* Per-stream figures of rank R over [ws, we) into e->str (the intervals v,
 * sorted and disjoint, with their busy time): 0 or -ENOMEM. */
int ct_eff_streams(const struct ct_rank *R, int64_t ws, int64_t we, const struct ct_eff_smp *v,
                   size_t n, struct ct_eff *e);
/* The link traffic during R's collectives into e->coll: 0 or -ENOMEM. */
int ct_eff_collectives(const struct ct_rank *R, int64_t ws, int64_t we, const struct ct_eff_smp *v,
                       size_t n, struct ct_eff *e);

#endif
