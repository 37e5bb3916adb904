/*
 * Cross-rank critical path and what-if replay (docs/critical-path.md).
 *
 * The job's dependency graph is built once over the whole run, on points
 * (instants): a GPU op's start and end, a host event's start and end, the
 * rendezvous of a matched collective, each rank's iteration start and end.
 * Edges carry a weight; a point's time is the maximum over its incoming
 * edges of (source time + weight). Weights are taken from the trace so
 * that, unscaled, every point lands on its measured time exactly
 * (critical_path.c says how); the replay (replay.c) recomputes the points
 * in dependency order with chosen durations scaled, and the critical path
 * of an iteration is the walk back from its latest end along the edge
 * that bound each point, every ns of the iteration on exactly one edge.
 */
#ifndef CT_CRITICAL_PATH_H
#define CT_CRITICAL_PATH_H

#include <stddef.h>
#include <stdint.h>

#include "decoder/analysis/analysis.h"

/* What a segment of the path is (the category of the edge it lies on). */
enum ct_cp_cat {
    CT_CP_COMPUTE = 0, /* a compute kernel's duration */
    CT_CP_MEMORY,      /* a copy or memset */
    CT_CP_COMM,        /* a collective's transfer (after its last member arrived) */
    CT_CP_PEER_WAIT,   /* a collective waiting on peers (a whole unmatched op) */
    CT_CP_LAUNCH,      /* launch call -> GPU start (launch latency) */
    CT_CP_GPU_GAP,     /* previous op on the stream -> start: an order not in the trace */
    CT_CP_HOST,        /* host time between host events (Python, launch overhead, GC) */
    CT_CP_DATA,        /* a data-loader wait (read/recv/poll on a file, pipe, socket) */
    CT_CP_CKPT,        /* checkpoint I/O (write/fsync, large DtoH) */
    CT_CP_SYNC,        /* a host synchronisation, or its wake-up after the GPU op */
    CT_CP_NCAT
};
const char *ct_cp_cat_name(int cat);
/* Whether a segment of category cat lies on a GPU stream (it then has a
 * stream, and a name where it is an op's duration): 1 or 0. */
int ct_cp_cat_gpu(int cat);

/* A --scale selector of `cutrace whatif`. */
enum ct_cp_sel {
    CT_SEL_KERNEL = 0,
    CT_SEL_RANK,
    CT_SEL_OP,
    CT_SEL_HOST,
    CT_SEL_DATA,
    CT_SEL_CKPT,
    CT_SEL_NET,  /* every transfer's bandwidth term (xfer_model.h) */
    CT_SEL_LINK, /* one network link's: the transfers of its communicators */
};
struct ct_cp_scale {
    int kind;         /* enum ct_cp_sel */
    const char *glob; /* CT_SEL_KERNEL: fnmatch pattern on the (demangled or raw) name */
    int64_t rank;     /* CT_SEL_RANK, CT_SEL_HOST: the rank number; CT_SEL_LINK: the sender */
    int64_t dst;      /* CT_SEL_LINK: the receiving rank */
    int op;           /* CT_SEL_OP: enum ct_nccl_op */
    uint64_t bytes;   /* CT_SEL_OP: 0 any size */
    double factor;    /* >= 0 */
};
/* Parses "kernel=GLOB=F", "rank=N=F", "op=NAME[:BYTES]=F", "host=N=F",
 * "data=F", "ckpt=F", "net=F", "link=A-B=F" into s (glob points into
 * spec). 0, or -EINVAL with a one-line reason in err. */
int ct_cp_scale_parse(const char *spec, struct ct_cp_scale *s, char *err, size_t errlen);

/*
 * Whether selector s (spec as the user gave it) selects anything of rep's
 * job: a kernel name the glob matches, a rank that is there, a collective
 * of that name (and size), data-loader waits, checkpoint I/O. 0, or
 * -ESRCH with err saying what the job has instead: a selector that matches
 * nothing would predict the run unchanged, which reads as "no gain".
 */
struct ct_report;
int ct_cp_scale_check(const struct ct_report *rep, const struct ct_cp_scale *s, const char *spec,
                      char *err, size_t errlen);

/* The factor net= and link= selectors put on the bandwidth term of one
 * communicator's transfers (those holding a selected link; the others
 * take net='s alone), with the ring's slowest link before and after. */
struct ct_cp_comm_factor {
    uint64_t comm;
    double f;
    int32_t before_src, before_dst, after_src, after_dst; /* job ranks */
    double before_gbps, after_gbps;
};
/* *net the product of net= factors; *cf (sorted by comm, free()) the
 * communicators link= selectors reach. 0 or -ENOMEM. */
int ct_cp_bandwidth_factors(const struct ct_report *rep, const struct ct_cp_scale *sc, size_t n,
                            double *net, struct ct_cp_comm_factor **cf, size_t *ncf);

struct ct_cp_graph;

/* Builds the graph of rep's job over every rank and iteration (opens and
 * closes each rank). Returns 0 or -ENOMEM; *out then owns the graph. */
int ct_cp_build(const struct ct_report *rep, struct ct_cp_graph **out);
/* What a command that needs the graph lets it take: half the machine's
 * physical memory (CUTRACE_CP_MAX_MIB overrides, in MiB), so that a job
 * too large to hold gets a clear error instead of the kernel's OOM kill. */
size_t ct_cp_memory_limit(void);
void ct_cp_free(struct ct_cp_graph *g);
/* What a command builds the graph within when the graph is a side figure
 * of its output (diagnose's savings, the HTML page's path) rather than the
 * answer: about 250 bytes per GPU op, so some 4 M GPU ops per graph ... */
#define CT_CP_SIDE_BYTES ((size_t)1 << 30)
/* ... in at most this many chunks of steps (ct_cp_run_sets): each rebuilds
 * every rank's ops, so a run of 8 GiB of graph costs some 8 report passes
 * more, and a larger one is left out with the reason. */
#define CT_CP_SIDE_CHUNKS 8

/* Replays the graph with the selectors applied (n == 0: unscaled, which
 * reproduces every measured time). Returns 0 or -ENOMEM. */
int ct_cp_replay(struct ct_cp_graph *g, const struct ct_cp_scale *sc, size_t n);

/* One segment kind of the path, summed over the run. */
struct ct_cp_seg {
    int rank;         /* rank number */
    int cat;          /* enum ct_cp_cat */
    uint32_t stream;  /* GPU categories; 0 otherwise */
    const char *name; /* the op's raw name, the collective, or NULL */
    int64_t dur;
    uint64_t count;
};

/* One job step (iterations of one index over the ranks). */
struct ct_cp_step {
    int64_t index;
    int64_t start, end;      /* earliest rank start, latest rank end (replayed times) */
    int end_rank;            /* the rank that finished last: where the walk starts */
    int64_t cat[CT_CP_NCAT]; /* the path's composition: sums to end - start */
};

struct ct_cp_result {
    struct ct_cp_step *steps;
    size_t nsteps;
    struct ct_cp_seg *segs; /* longest first */
    size_t nsegs;
    int64_t total, cat[CT_CP_NCAT];
    int64_t *rank_time; /* per job rank (rep order): path time on that rank */
    size_t nranks;
    int *rank_num;
    /* median over (rank, iteration) of the replayed iteration duration,
     * ns: the same statistic as the report's step_p50 */
    double step_p50;
    size_t unordered; /* points in a dependency cycle: kept at their measured time */
    /* GPU ops of CUDA graph replays on the walked steps, and of them those
     * that follow their graph's recorded edges (or are its roots); the
     * others follow their stream's order (docs/critical-path.md, "CUDA
     * graphs") */
    size_t graph_ops, graph_ops_edges;
    double *durs; /* the replayed (rank, iteration) durations step_p50 is the median of */
    size_t ndurs;
    /* graphs it was computed over (ct_cp_run): 1, or the chunks of steps a
     * run too large for one graph was cut into; then span is the sum of
     * the chunks' spans (each chunk's earliest step start to its latest
     * step end), which ct_cp_mean_step divides, and chunk_steps the steps
     * of the largest chunk */
    size_t chunks, chunk_steps;
    int64_t span;
};

/* The run's mean step, ns: from the earliest step start to the latest step
 * end, over the steps (0 without steps). Not the mean of the steps' spans:
 * where a replay lets ranks drift apart (one rank's steps shorter than
 * another's until a collective holds it), consecutive spans overlap and
 * their sum would count the overlap twice. */
double ct_cp_mean_step(const struct ct_cp_result *r);

/* The critical path of every step of rep's job, unscaled (base) and, when
 * nsc > 0, replayed with the selectors (pred), in one graph when it fits
 * in max_bytes (0: no limit), else in chunks of consecutive steps that
 * each do (docs/critical-path.md, "Runs too large for one graph"): each
 * chunk's graph also holds the steps either side, as context, so that its
 * first step's ops keep their sources and its span ends where the next
 * chunk begins. Returns 0, -ENOMEM, or -E2BIG when one step with its
 * context passes max_bytes. */
int ct_cp_run(const struct ct_report *rep, size_t max_bytes, const struct ct_cp_scale *sc,
              size_t nsc, struct ct_cp_result *base, struct ct_cp_result *pred);

/* Several replays of one run (diagnose's, one per finding): base as
 * ct_cp_run, preds[k] replayed with sets[k], each chunk's graph built once
 * for all of them; path, when not NULL, gets the edges of base's steps
 * (as ct_cp_path_edges, chunk after chunk, each edge's step its position
 * in base->steps). max_chunks (0: any) bounds the chunks: every chunk
 * rebuilds each rank it holds, so past it the run is -E2BIG. Chunks are
 * sized at half max_bytes, so the first attempt gives up once the graph
 * extrapolated from its first ranks passes max_chunks x max_bytes (twice
 * the refusal's bound: room for ranks larger than the rest), having built
 * a few ranks' graphs rather than max_bytes of them. */
struct ct_cp_set {
    const struct ct_cp_scale *sc;
    size_t n;
};
struct ct_cp_path;
int ct_cp_run_sets(const struct ct_report *rep, size_t max_bytes, size_t max_chunks,
                   const struct ct_cp_set *sets, size_t nsets, struct ct_cp_result *base,
                   struct ct_cp_result *preds, struct ct_cp_path *path);

/* The critical path of every step over the last replay. 0 or -ENOMEM. */
int ct_cp_paths(const struct ct_cp_graph *g, struct ct_cp_result *out);
void ct_cp_result_free(struct ct_cp_result *r);

/* One edge of a step's path: what `export --critical-path` and the HTML
 * report draw. */
struct ct_cp_pedge {
    size_t step;      /* the step's position in ct_cp_result.steps (same order) */
    int64_t index;    /* its iteration index */
    int rank;         /* rank number */
    int cat;          /* enum ct_cp_cat */
    uint32_t stream;  /* GPU categories; 0 otherwise */
    const char *name; /* as struct ct_cp_seg (borrowed from the job) */
    int64_t s, e;     /* replayed ns on the job clock (measured when unscaled), s < e */
};

struct ct_cp_path {
    struct ct_cp_pedge *v; /* by step, each step's edges in time order */
    size_t n;
    size_t nsteps;
};

/* The edges of every step's path over the last replay, by the same walk as
 * ct_cp_paths: a step's edges tile [start, end] of its ct_cp_step without
 * gap or overlap, and their durations per category sum to its cat[].
 * Returns 0 or -ENOMEM (out then empty); free with ct_cp_path_free. */
int ct_cp_path_edges(const struct ct_cp_graph *g, struct ct_cp_path *out);
void ct_cp_path_free(struct ct_cp_path *p);

#endif
