/* The graph of decoder/analysis/critical_path.h, shared by its builder
 * (critical_path.c) and its replay (replay.c) only. */
#ifndef CT_CRITICAL_PATH_INT_H
#define CT_CRITICAL_PATH_INT_H

#include <stddef.h>
#include <stdint.h>

#include "decoder/analysis/critical_path.h"

/* Edge kinds: a measured gap (binding rule, critical_path.c), a duration
 * (what selectors scale), a rendezvous input (weight 0: the point is the
 * latest of its members). */
enum { CP_GAP = 0, CP_DUR, CP_MAX0 };

struct cp_pt {
    int64_t t;    /* measured */
    int64_t v;    /* replayed */
    int32_t rank; /* index into the job's ranks */
};

struct cp_edge {
    uint32_t src, dst;
    int64_t w;  /* weight that reproduces the measured times */
    int64_t wr; /* weight of the last replay */
    uint8_t kind, cat;
    uint8_t gpu : 1;  /* a GPU op's duration (kernel=, rank= scale it) */
    uint8_t xfer : 1; /* a collective's transfer, or a whole unmatched one (op=) */
    uint8_t bind : 1; /* the gap edge whose source came last into its point */
    uint8_t op;       /* enum ct_nccl_op of xfer edges */
    int32_t rank;     /* index into the job's ranks */
    uint32_t stream;
    uint64_t bytes;
    const char *name; /* a GPU op's raw name (borrowed from its process) */
};

/* A matched-op candidate: a GPU op linked to a timed NCCL op. */
struct cp_key {
    struct ct_match_key m; /* collectives.c's matching rule */
    uint32_t ps, pe;
    int32_t rank;
    uint8_t op;
    uint64_t bytes;
    uint32_t stream;
    uint8_t arrive; /* the op's first interval on its rank: its start is the arrival */
};

struct ct_cp_graph {
    const struct ct_report *rep;
    struct cp_pt *pt;
    size_t npt, cappt;
    struct cp_edge *ed;
    size_t ned, caped;
    struct cp_key *keys;
    size_t nkeys, capkeys;
    uint32_t *in_off; /* npt + 1: edges into point p are in_idx[in_off[p] .. in_off[p+1]) */
    uint32_t *in_idx;
    uint32_t *order; /* points in dependency order */
    size_t norder;
    uint32_t **itp; /* per rank: iteration i's start point [2i], end point [2i+1] */
};

#endif
