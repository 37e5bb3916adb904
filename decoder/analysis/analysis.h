/*
 * Results of `cutrace report`'s analyses, per rank and for the job, in ns
 * on the job clock (outputs convert to µs). Definitions are in
 * docs/report.md; each module states the ones it computes.
 *
 *   breakdown.c    temporal breakdown, overlap, exposed communication and
 *                  transfer, HTA idle breakdown, per-iteration figures
 *   bubbles.c      pipeline bubbles, their share, the pipelines and their
 *                  expected bubble
 *   stalls.c       the split of GPU-idle time (data, checkpoint, blocking
 *                  CUDA call, sync drain, launch overhead, unexplained)
 *   collectives.c  cross-rank matching, the collective table
 *   stragglers.c   per-rank lateness and kernel slowness
 *   kernels.c      per-kernel-name statistics
 *   iterations.c   iteration boundaries (step_phase.c: one phase per job)
 *   job_steps.c    the job's per-step figures over its ranks
 *   hang.c         collectives in flight of a flight-recorder window
 *   health.c       GPU and host health counters
 *   efficiency.c   GPM activity per window, iteration and kernel family
 *   provenance.c   where a rank's figures come from, which ones are null
 *   report.c       all of the above, in order (ct_report_analyze)
 */
#ifndef CT_ANALYSIS_H
#define CT_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "decoder/analysis/iterations.h"
#include "decoder/read/timeline.h"

/* HTA's consecutive_kernel_delay: a shorter gap between kernels whose next
 * one was already launched is "kernel wait". */
#define CT_KERNEL_WAIT_NS 30000

struct ct_iter_metrics {
    int64_t compute, comm, memory, idle, exposed_comm, bubble;
};

struct ct_attribution {
    int64_t pipeline_bubble; /* |bubble set|: waits on pipeline peers + warm-up/cool-down */
    int64_t bubble_idle;     /* the part of it that was GPU-idle */
    int64_t data_stall, ckpt_idle;
    int64_t cuda_call; /* the main process's launching threads inside a blocking CUDA call */
    int64_t sync_drain, launch_overhead, unexplained;
    int64_t checkpoint_stall; /* step-time excess of checkpoint steps (or ckpt_idle) */
    int ckpt_steps;           /* iterations that contained checkpoint activity */
};

struct ct_goodput;
struct ct_eff;

struct ct_rank_result {
    struct ct_rank *rank;
    int64_t ws, we; /* window: first GPU start .. last GPU end */
    /* what the figures are over: we - ws, or of a rank with capture windows
     * (ct_rank.cover) the part of [ws, we) they cover, in `windows` windows */
    int64_t covered;
    size_t windows;
    int64_t compute, comm, memory, idle, exposed_comm, overlap;
    /* of memory: copies timed by an event pair around their blocking host
     * call (the host call's time, pageable staging included) */
    int64_t memory_blocking;
    /* kernels counted as communication with no NCCL call of theirs (a
     * communication-kernel table entry, or an NCCL kernel whose call was not
     * recorded: docs/nccl.md): how many and their summed GPU time; their
     * bytes are unknown (unavailable "comm_kernels.bytes") */
    uint64_t comm_kernels;
    int64_t comm_kernels_time;
    /* busy time (the union of the rank's GPU ops, in its cover), and of it
     * the ops a CUDA graph replay launched: graph_pct */
    int64_t busy, graph_busy;
    int64_t cls_len[CT_CL_COUNT], cls_exposed[CT_CL_COUNT], cls_overlap[CT_CL_COUNT];
    int64_t host_wait, kernel_wait, other_wait;
    struct ct_iter *iters;
    size_t niters;
    /* a salvaged rank's steps whose GPU work is not all in the trace
     * (ct_iterations_cut) are not in iters: iters_cut of them; all_iters
     * holds every step (goodput's), NULL when none was cut */
    struct ct_iter *all_iters;
    size_t nall_iters, iters_cut;
    enum ct_iter_source iter_src;
    /* 1 for ranges/marks, the detector's 0..1 for the period; times
     * ct_coverage_factor where a coverage fact is material (iter_conf_found
     * is what the source gave) */
    double iter_conf, iter_conf_found;
    unsigned iter_why; /* CT_ITER_WHY_* bits (iterations.h): ct_iter_note */
    struct ct_iter_metrics *im;
    struct ct_attribution at;
    double bubble_pct, expected_bubble_pct; /* < 0: null */
    int pp_stages, pp_microbatches;         /* inferred, 0 when unknown */
    /* stragglers */
    int64_t lateness; /* median over collectives of start - median start */
    double slowness;  /* median over kernels of duration / peers' median */
    double score, persistence;
    int flagged;
    /* GPU efficiency from GPM samples (efficiency.h); NULL before the
     * analysis ran */
    struct ct_eff *eff;
};

struct ct_coll_row {
    int op;
    int lib; /* enum ct_comm_lib (decoder/read/timeline.h) */
    uint64_t bytes;
    int nranks;
    uint64_t count;
    double p50, p90, max;                    /* GPU duration, ns */
    double skew_p50, wait_p50, transfer_p50; /* over matched instances, ns */
    double wait_sum;                         /* the matched instances' waits, summed (ns) */
    double algbw, busbw;                     /* GB/s from p50 */
    uint64_t matched;
    /* what the links can carry in busbw's unit and busbw's share of it
     * (speed_of_light.c); NAN with sol_reason */
    double sol_gbps, sol_pct;
    char sol_basis[160], sol_reason[320];
};

struct ct_kernel_row {
    char *name; /* demangled */
    uint64_t count;
    int64_t total;
    double p50;
};

/* One step of the job: the iterations of one index over the ranks that
 * have it (job_steps.c). ns on the job clock. */
struct ct_job_step {
    int64_t index;
    size_t ranks;
    int64_t start, end;                  /* the earliest rank's start, the latest rank's end */
    double dur_p50, dur_max;             /* of the ranks' own durations */
    int slowest;                         /* the rank (number) whose step took longest */
    double compute, comm, exposed, idle; /* medians over the ranks */
};

struct ct_kernels_acc;
struct ct_coll_match;

struct ct_report {
    struct ct_job *job;
    struct ct_rank_result *rr; /* one per job rank, same order */
    size_t nr;
    struct ct_coll_row *coll;
    size_t ncoll;
    struct ct_kernel_row *kern;
    size_t nkern;
    size_t iterations;         /* fewest iterations of any rank */
    double step_p50;           /* median iteration duration over all ranks, ns */
    double step_p90, step_p99; /* the same distribution's tail (a serving loop's latency) */
    struct ct_job_step *steps; /* by index (ct_job_steps) */
    size_t nsteps;
    struct ct_goodput *goodput;   /* over the job's attempts (goodput.h), from these iterations */
    struct ct_kernels_acc *kacc;  /* kernels.c, between collect and table */
    struct ct_coll_match *cmatch; /* collectives.c: the ops by match key, between match and table */
    struct ct_nlinks *nlinks;     /* NCCL links and splits (nccl_links.h), NULL on no memory */
    struct ct_xfer_model *xfer; /* per collective kind, latency + size / bandwidth (xfer_model.h) */
    size_t nxfer;
};

int ct_metrics_rank(struct ct_rank_result *res);

/* A rank's steps in two kinds: heavy, whose GPU compute exceeds the median
 * step's by more than 25 % (a serving loop's prefills beside its decode
 * steps; a training job's evaluation steps), and regular, the rest. For
 * each: steps, their median duration (ns, 0 when none) and compute (ns).
 * Returns 0 or -ENOMEM (report.c). */
struct ct_step_kind {
    size_t steps;
    double p50;
    int64_t compute;
};
int ct_step_kinds(const struct ct_rank_result *res, struct ct_step_kind *regular,
                  struct ct_step_kind *heavy);
/* A rank with capture windows and iterations: its covered time becomes the
 * whole iterations inside the windows (breakdown.c). The edges of a window
 * hold parts of steps and, past its close, work the pause left unrecorded
 * beside the recorded work still running: not what the figures are over.
 * 0 or -ENOMEM. */
int ct_cover_iterations(struct ct_rank_result *res);
int ct_attribution_rank(struct ct_job *job, struct ct_rank_result *res);
/* breakdown.c: the rank's exposed transfer (ns): of its collectives but
 * pipeline send/recv, the transfer part (from the latest start over the
 * matched members to the end) not under compute; exposed communication
 * with every peer on time. Opens and closes the rank. 0 or -ENOMEM. */
int ct_exposed_transfer(struct ct_rank *R, int64_t *out);
/* bubbles.c: the rank's bubble set into out (empty without pipeline ops),
 * per-iteration lengths into res->im and the rank's share into
 * res->bubble_pct; *pipeline set when some iteration has pipeline ops. 0 or
 * -ENOMEM. */
int ct_bubbles_rank(struct ct_rank_result *res, struct ct_ivset *out, int *pipeline);
/* bubbles.c: per iteration of a rank (rank open), its first compute start
 * and last compute end inside it (cs >= ce: no compute), in iteration
 * order; NULL on allocation failure. ct_iter_extent_find: the extent of
 * iteration `index`, or NULL. */
struct ct_iter_extent {
    int64_t index, cs, ce;
};
struct ct_iter_extent *ct_compute_extents(const struct ct_rank_result *x);
const struct ct_iter_extent *ct_iter_extent_find(const struct ct_iter_extent *v, size_t n,
                                                 int64_t index);
/* bubbles.c: a stage's own GPU work (rank open): every class but pipeline
 * send/recv, into out. 0 or -ENOMEM. */
int ct_own_work(const struct ct_rank *R, struct ct_ivset *out);
/* bubbles.c: the pipelines of the job (ranks joined by matched Send/Recv):
 * each rank's stages, micro-batches and expected bubble (rules in
 * bubbles.c). 0 or -ENOMEM. */
int ct_pipeline_topology(struct ct_report *rep);
/* Matches rep->job's NCCL ops across ranks (all_s of each collective's
 * members), keeping the ops sorted by match key in rep->cmatch for
 * ct_collectives_table (the keys do not change between them: one sort
 * for both). 0 or -ENOMEM. */
int ct_collectives_match(struct ct_report *rep);
/* The key that matches an NCCL op across ranks (collectives.c, the rule of
 * docs/report.md): a collective by (comm, seq), a Send by (comm, its comm
 * rank -> peer, seq), a Recv by (comm, peer -> its comm rank, seq); src and
 * dst are -1 for collectives. Ops with equal keys are one operation. */
struct ct_match_key {
    uint64_t comm, seq;
    int32_t src, dst;
};
struct ct_match_key ct_nccl_match_key(const struct ct_nccl_call *o);
/* The order ct_collectives_match sorts keys in; 0 for one operation. */
int ct_match_key_cmp(const struct ct_match_key *a, const struct ct_match_key *b);
/* The job's per-step figures over its ranks into rep->steps (job_steps.c).
 * 0 or -ENOMEM. */
int ct_job_steps(struct ct_report *rep);
int ct_collectives_table(struct ct_report *rep);
void ct_coll_match_free(struct ct_coll_match *m);
int ct_stragglers(struct ct_report *rep);
/* kernels.c: ct_kernels_collect reduces the open rank rep->rr[r].rank to
 * its kernel figures (called for each rank, in rank order); ct_kernels_table
 * then makes rep->kern and each rank's slowness. 0 or -ENOMEM. */
int ct_kernels_collect(struct ct_report *rep, size_t r);
int ct_kernels_table(struct ct_report *rep);
void ct_kernels_acc_free(struct ct_kernels_acc *a);
void ct_report_free(struct ct_report *rep);

/*
 * For a command whose iteration selection (--skip, --steps, --iterations)
 * kept no iteration of rep: the iteration indexes the run has without it,
 * into *lo and *hi (the job analysed again, unselected). Returns how many
 * (0: the run has none), or -ENOMEM. Only for the refusal's message: a
 * second analysis of one job counts some coverage twice.
 */
long ct_report_unselected(const struct ct_report *rep, int64_t *lo, int64_t *hi);
/* 1 when io selects part of the iterations and rep kept none of them;
 * err then says so, with the iterations the run has (the selection named
 * as the user gave it: what, e.g. "--steps 100-200"). */
int ct_report_selected_none(const struct ct_report *rep, const struct ct_iter_opts *io,
                            const char *what, char *err, size_t errlen);

/* provenance.c: the rank's GPU-timing source ("cupti", "events",
 * "nccl_plugin", "nccl_record", "mixed" or "none"); its i-th figure that the
 * trace cannot support, with the reason (0 when there are fewer); whether
 * `figure` (a JSON name) is one of them. */
const char *ct_gpu_timing_name(const struct ct_coverage *c);
int ct_unavailable(const struct ct_rank_result *x, size_t i, const char **figure,
                   const char **reason);
int ct_figure_unavailable(const struct ct_rank_result *x, const char *figure);

/* Coverage facts that change the answer (docs/report.md, "Coverage"): a
 * rank's GPU ops without a GPU time when they are more than
 * CT_UNTIMED_MATERIAL of its ops, and every file of its processes that was
 * damaged or cut. */
#define CT_UNTIMED_MATERIAL 0.01
enum { CT_COVF_UNTIMED, CT_COVF_DAMAGED, CT_COVF_TRUNCATED, CT_COVF_UNDELIVERED };
struct ct_cov_fact {
    int kind;
    uint64_t count; /* untimed or undelivered ops, damaged bytes; 0 for a file only cut */
    uint64_t of;    /* the rank's GPU ops, the file's bytes (0 unknown) */
    /* undelivered: the first launch of one, and where the rank's GPU
     * figures end (the first cut of each, struct ct_rank hcut, gcut) */
    int64_t host_from, gpu_from;
    int truncated;    /* the file has no footer: decoded up to offset */
    uint64_t offset;  /* where its decoded part ends */
    const char *path; /* the file; NULL for untimed ops */
};
/* The share of the rank's GPU ops (launch, copy and memset calls with their
 * GPU records) without a GPU interval, and of its trace bytes skipped as
 * damaged; 0 without either. */
double ct_untimed_share(const struct ct_coverage *c);
/* The same for rank r, less the ops a salvage left without their GPU time
 * (struct ct_rank undelivered): they are past the rank's covered time and
 * change no figure */
double ct_rank_untimed_share(const struct ct_rank *r);
double ct_damaged_share(const struct ct_coverage *c);
/* The i-th material fact of rank r (GPU ops whose time never came from a
 * killed process first, then untimed ops, then one per file: damaged, with
 * its cut if it has one, or cut): 1, or 0 past the last. */
int ct_coverage_fact(const struct ct_rank *r, size_t i, struct ct_cov_fact *f);
/* What a confidence resting on rank r's records is multiplied by:
 * (1 - damaged share) when bytes were damaged (records there are lost),
 * times (1 - untimed share) when it rests on the ops' GPU times (on_ops)
 * and that share is material; 1 when nothing is. why (n bytes) says what
 * lowered it, "" when nothing did. A cut file lowers nothing: what was
 * decoded is whole (the last frame's records end the trace), and no
 * iteration or finding is made of a step the cut left partial. */
double ct_coverage_factor(const struct ct_rank *r, int on_ops, char *why, size_t n);

/* Runs every analysis on a built job (iterations per rank with o). Returns 0
 * or -ENOMEM; rep borrows job. */
int ct_report_analyze(struct ct_job *job, const struct ct_iter_opts *o, struct ct_report *rep);

#endif
