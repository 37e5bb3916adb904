/*
 * NCCL's choice of algorithm and protocol per size, and the sizes where it
 * costs bandwidth (decoder/analysis/nccl_choices.c; docs/nccl.md, "The
 * choice per size"). Never prints.
 */
#ifndef CT_NCCL_CHOICES_H
#define CT_NCCL_CHOICES_H

#include <stddef.h>
#include <stdint.h>

struct ct_report;

/* A size whose bus bandwidth is below the next smaller size's by more than
 * (1 - CT_CHOICE_TOL) under another algorithm or protocol: the larger op
 * should move at least as fast (its latency share is smaller). */
#define CT_CHOICE_TOL 0.2

struct ct_nchoice_dip {
    size_t row, prev;                 /* rep->coll indices: the dip and its smaller neighbour */
    char choice[40], prev_choice[40]; /* "RING/LL" */
    double saving_ns; /* its instances' time at the neighbour's bus bandwidth, saved,
                       * per member (instances x members / members) */
};

/* The dips of rep's collectives (rep->coll and the choices of
 * rep->nlinks->split). *n 0 and *out NULL when none; *known: whether any
 * collective had a recorded choice. 0 or -ENOMEM; free(*out). */
int ct_nccl_choice_dips(const struct ct_report *rep, struct ct_nchoice_dip **out, size_t *n,
                        int *known);

#endif
