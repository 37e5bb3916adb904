/* The graph of decoder/analysis/critical_path.h, shared by its builder
 * (critical_path.c, its host side in critical_path_host.c) and its replay
 * (replay.c) only. */
#ifndef CT_CRITICAL_PATH_INT_H
#define CT_CRITICAL_PATH_INT_H

#include <stddef.h>
#include <stdint.h>

#include "decoder/analysis/critical_path.h"
#include "decoder/read/timeline.h"

/* Edge kinds: a measured gap (binding rule, critical_path.c), a duration
 * (what selectors scale), a rendezvous input (weight 0: the point is the
 * latest of its members). */
enum { CP_GAP = 0, CP_DUR, CP_MAX0 };

struct cp_pt {
    int64_t t;    /* measured */
    int64_t v;    /* replayed */
    int32_t rank; /* index into the job's ranks */
    uint8_t step; /* an iteration's start or end: a sink, see finish() */
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
    int32_t nranks; /* xfer edges: the collective's kind (2 for point-to-point) */
    uint64_t bytes;
    uint64_t comm;    /* xfer edges: the communicator (its links: link=) */
    const char *name; /* a GPU op's raw name (borrowed from its process) */
};

/* A matched-op candidate: a GPU op linked to a timed NCCL op. */
struct cp_key {
    struct ct_match_key m; /* collectives.c's matching rule */
    uint32_t ps, pe;
    int32_t rank, nranks;
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
    /* steps of index outside first..last are a chunk's context
     * (critical_path_chunks.c): in the graph, not walked; INT64_MIN and
     * INT64_MAX in a whole run's graph */
    int64_t first_index, last_index;
    size_t graph_ops, graph_ops_edges; /* ct_cp_result's, counted as the ranks are built */
};

/* ct_cp_build, with the graph's first_index and last_index, giving up with
 * -E2BIG once its points and edges pass max_bytes (0: no limit); on -E2BIG
 * *need is what the whole graph would take, extrapolated from the ranks
 * built. give_up (0: none) ends the build as soon as that
 * extrapolation, from 4 ranks or more, passes it: a caller that will refuse
 * a graph past some size learns it from a few ranks, not from max_bytes of
 * them. */
int ct_cp_build_from(const struct ct_report *rep, size_t max_bytes, size_t give_up,
                     int64_t first_index, int64_t last_index, size_t *need,
                     struct ct_cp_graph **out);
/* replay.c: merges the segment rows of one (rank, category, stream,
 * name), counts and durations summed, and sorts them longest first. */
void ct_cp_segs_fold(struct ct_cp_result *o);

/* critical_path.c */
int ct_cp_add_pt(struct ct_cp_graph *g, int64_t t, int32_t rank, uint32_t *id);
int ct_cp_add_edge(struct ct_cp_graph *g, uint32_t src, uint32_t dst, int kind, int cat,
                   int32_t rank);

/* The last op on each stream, as a sweep passes (e: its end, for the
 * sweep by end). */
struct slast {
    uint32_t stream, pe;
    int64_t e;
    uint32_t pre; /* the stream sweep: the last op's own predecessor (UINT32_MAX none) */
};
int ct_cp_slast_set(struct slast **v, size_t *n, size_t *cap, uint32_t stream, uint32_t pe);

/* The part of a rank the graph holds: the ops that start within its
 * iterations, [s, e] (the first's start to the last's end; the whole run
 * without iterations). Only the steps are walked, and a job's warm-up
 * before its first step (initialisation, compilation) can outweigh many
 * steps: the graph's memory is the steps' (critical-path --iterations
 * bounds it further). */
struct cp_win {
    const struct ct_gpu_op *ops;
    size_t nops;
    int64_t s, e;
};

/* An op's start and end points. */
struct opx {
    uint32_t ps, pe;
};

/* critical_path_graphs.c: the window's ops that ran as graph nodes, by
 * (launch, stream, node): where a graph edge's source is found. */
struct cp_gix {
    int64_t launch;
    uint64_t gnode;
    uint32_t stream, op;
};
/* The index of w's graph ops (*out NULL when the rank's main process kept
 * no graph edges). 0 or -ENOMEM. */
int ct_cp_graph_index(const struct ct_rank *rk, const struct cp_win *w, struct cp_gix **out,
                      size_t *nout);
/* 1 when o ran as a node that its graph's recorded edges give no
 * predecessor: a root, which waits for what its launch stream waited for. */
int ct_cp_graph_root(const struct ct_rank *rk, const struct ct_gpu_op *o);
/* The edges into op i from its graph predecessors' ops in its launch: 1
 * when added (its sources are those), 0 when the stream rule applies
 * (*root set: a root node, whose source is what its stream ran before the
 * launch), -ENOMEM. */
int ct_cp_graph_edges(struct ct_cp_graph *g, const struct ct_rank *rk, const struct cp_win *w,
                      const struct opx *ox, const struct cp_gix *ix, size_t nix, size_t i,
                      int32_t ri, int *root);

/* critical_path_host.c: a host event of the rank's main process and its
 * points. */
enum { HE_LAUNCH = 0, HE_SYNC, HE_DATA, HE_CKPT };
struct hev {
    int64_t s, e;
    int kind;
    uint32_t ps, pe;
};
/* The host events within w, sorted, with their points and the host order
 * edges between them. 0 or -ENOMEM. */
int ct_cp_host_events(struct ct_cp_graph *g, const struct ct_rank *rk, const struct cp_win *w,
                      int32_t ri, struct hev **out, size_t *nout);
/* The last host event starting at or before t (its end point when it
 * ended by t), or -1. */
int64_t ct_cp_host_before(const struct hev *h, size_t n, int64_t t);
/* The launch event at t, or NULL. */
const struct hev *ct_cp_launch_ev(const struct hev *h, size_t n, int64_t t);
/* The edges from the GPU ops each synchronisation of h waited for to its
 * end. 0 or -ENOMEM. */
int ct_cp_sync_edges(struct ct_cp_graph *g, const struct ct_rank *rk, const struct cp_win *w,
                     const struct opx *ox, const struct hev *h, size_t nh, int32_t ri);

#endif
