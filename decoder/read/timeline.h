/*
 * The job model: what each process of a job contributes (struct ct_proc:
 * its GPU intervals, NCCL calls, launches and host interval sets, on one job
 * clock: int64 ns of CLOCK_REALTIME, from each trace's CLOCK sync records,
 * refined across ranks by matching collective ends), and the ranks and job
 * they are folded into (struct ct_rank, struct ct_job). Every reader fills
 * a struct ct_proc (decoder/read/extract.h for a cutrace trace,
 * decoder/read/summary.h for a summary, decoder/kineto/ for a PyTorch
 * profiler trace, chosen by decoder/load/); decoder/read/job.h builds the
 * job; the analyses read it. The model never names a reader.
 *
 * Communication classes (the rule, applied per NCCL op, first that holds):
 *   1. Send/Recv (and SendRecv kernels)            -> pp   (pipeline)
 *   2. Broadcast/Reduce/AlltoAll/Gather/Scatter     -> other
 *   3. AllReduce/ReduceScatter/AllGather on a communicator that also
 *      carries Send/Recv                            -> other
 *   4. ... on a communicator whose members are consecutive global ranks,
 *      not all ranks of the job, when the same rank also runs such
 *      collectives on a strided communicator (members not consecutive)
 *                                                   -> tp   (tensor-parallel)
 *   5. ... otherwise (spans the data-parallel group) -> dp   (data-parallel)
 * Rule 4 follows the layout every common framework uses (Megatron, DeepSpeed,
 * torchtitan): tensor-parallel groups are the innermost, consecutive ranks,
 * so the data-parallel group of a TP>1 job is strided. An ncclDevKernel_* /
 * ncclKernel_* kernel without an NCCL call record is classified by the op in
 * its name with rules 1, 2 and 5.
 */
#ifndef CT_TIMELINE_H
#define CT_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "decoder/util/intervals.h"
#include "decoder/read/tracefile.h"

struct ct_hproc;
struct ct_nacct;
struct ct_hta;

/* The kind of input a process was read from. */
enum ct_source {
    CT_SOURCE_TRACE = 0, /* a cutrace trace (decoder/read/extract.h) */
    CT_SOURCE_SUMMARY,   /* a cutrace summary of one (decoder/read/summary.h) */
    CT_SOURCE_KINETO,    /* a PyTorch profiler trace (decoder/kineto/) */
};
struct ct_trace_facts;

enum ct_class {
    CT_CL_COMPUTE = 0,
    CT_CL_MEMORY,
    CT_CL_DP,
    CT_CL_TP,
    CT_CL_PP,
    CT_CL_OTHER,
    CT_CL_COUNT
};
#define CT_CL_IS_COMM(c) ((c) >= CT_CL_DP)
const char *ct_class_name(int cls);

/* One GPU interval. */
struct ct_gpu_op {
    int64_t s, e;
    int64_t launch; /* host start of the call that enqueued it, INT64_MIN if unknown */
    uint32_t stream;
    uint32_t name;        /* index into the rank's name table */
    int32_t nccl;         /* index of its NCCL op in the rank, -1 */
    uint8_t cls;          /* enum ct_class */
    uint8_t type;         /* enum ct_gpu_type */
    uint8_t op;           /* enum ct_nccl_op guessed from a kernel name, 0 */
    uint8_t blocking : 1; /* timed by an event pair around a blocking host call
                           * (CT_SRC_EVENTS_BLOCKING): memory_blocking_us */
    uint8_t nested : 1;   /* linked to its NCCL op for the class only: a kernel NCCL launched inside
                           * a call whose GPU time came from elsewhere (plugin, event pair) */
    uint8_t graph : 1;    /* launched by a CUDA graph replay (cuGraphLaunch): graph_pct */
    uint64_t gnode;       /* the executable graph node it ran as (CT_SCOPE_GRAPH_NODE), 0: none
                           * or not known */
    /* 48 bytes: every analysis passes over millions of these (the record's
     * GPU-time source is counted into the coverage, not kept) */
};

/* One NCCL call with its GPU interval when known (s = e = 0 otherwise). */
struct ct_nccl_call {
    int64_t host_s, host_e, s, e;
    uint64_t comm, seq, bytes, corr;
    int64_t all_s; /* latest GPU start over the matched members (self
                    * included): the transfer can begin only then; 0 when
                    * the op was not matched across ranks */
    int32_t comm_rank, peer, nranks;
    uint32_t stream; /* its stream's id: the device it ran on (ct_sdev_of) */
    uint8_t op, cls;
    uint8_t from_op; /* 0 but while ct_proc_settle runs (decoder/read/spill.h) */
    uint8_t lib;     /* enum ct_comm_lib: whose collective it is */
};

/* The library whose call an op's record is (format v7: CT_NCCL_DTYPE_NVSHMEM). */
enum ct_comm_lib { CT_LIB_NCCL = 0, CT_LIB_NVSHMEM = 1 };
/* The library of a CT_REC_NCCL record's dtype field, and its name as the
 * report and the exports give it ("nccl", "nvshmem"). */
#define CT_COMM_LIB_OF(dtype) (((dtype)&CT_NCCL_DTYPE_NVSHMEM) ? CT_LIB_NVSHMEM : CT_LIB_NCCL)
const char *ct_comm_lib_name(int lib);

/* A stream id and the device it belongs to. */
struct ct_sdev {
    uint32_t stream;
    int32_t dev;
};

/* A cross-stream dependency the job made with an event: a
 * cuStreamWaitEvent on stream `to` at host time `wait` on the latest
 * cuEventRecord of that event before it, on stream `from` at host time
 * `rec` (ns; both the calls' host starts). The work launched on `to` after
 * the wait runs after the work launched on `from` before the record. */
struct ct_evedge {
    int64_t rec, wait;
    uint32_t from, to;
};

/* A dependency inside a replayed CUDA graph (CT_SCOPE_GRAPH): the op that
 * ran as executable node `to` starts after the one that ran as `from`
 * ends, in the same launch; from 0: `to` has a predecessor the trace does
 * not name (its graph's edges are then incomplete for it). */
struct ct_gedge {
    uint64_t to, from;
};

/* What a host synchronisation waited for: the last op launched on
 * `stream` before host time `rec` (a cuStreamSynchronize*: its stream,
 * rec = t; a cuEventSynchronize: the stream and time of the event's latest
 * record before the sync), or every stream's work launched before t
 * (stream 0: a context's sync, a synchronous copy, an event the trace has
 * no record of), or every blocking stream's (a sync of the legacy
 * stream). */
struct ct_syncon {
    int64_t t, rec; /* host start of the sync; see above */
    uint32_t stream;
};
/* ct_syncon.stream of a sync of the legacy stream: every blocking stream's
 * last op launched before it (the streams not in ct_proc.nonblock) */
#define CT_SYNCON_BLOCKING UINT32_MAX

/* A named host range (NVTX range or a mark: s == e). */
struct ct_range {
    int64_t s, e;
    int64_t num; /* the number its message ends with ("ProfilerStep#12": 12), or CT_STEP_NONE */
};
#define CT_STEP_NONE INT64_MIN

struct ct_coverage {
    uint64_t gpu_cupti, gpu_events, gpu_plugin, gpu_nccl_record;
    uint64_t gpu_events_blocking; /* of gpu_events: pairs around a blocking host call */
    uint64_t dropped;             /* records lost (DROP records, all reasons) */
    uint64_t untimed;             /* launches/copies/memsets without a GPU interval */
    uint64_t unmatched_p2p;       /* Send/Recv without their peer's op in the traces */
    uint64_t processes, truncated;
    uint64_t damaged; /* bytes skipped as damaged, at every place */
    uint64_t bytes;   /* the trace files' length */
    /* GPU records not counted above: another source timed the same op
     * better (tracefile.h ct_gpu_source_rank) */
    uint64_t superseded;
};

/* Counts a GPU record's source (enum ct_gpu_source) into c. */
static inline void ct_cov_source(struct ct_coverage *c, uint64_t source)
{
    if (source == CT_SRC_CUPTI)
        c->gpu_cupti++;
    else if (source == CT_SRC_EVENTS)
        c->gpu_events++;
    else if (source == CT_SRC_EVENTS_BLOCKING)
        c->gpu_events++, c->gpu_events_blocking++;
    else if (source == CT_SRC_NCCL_PLUGIN)
        c->gpu_plugin++;
}

/* A process's life as its trace states it (life.c): what `cutrace goodput`
 * groups attempts by and what ended each process. Times on the job clock. */
struct ct_life {
    char *job;         /* metadata "job" (the launcher's job id), NULL: none */
    char *run;         /* metadata "run_id" (decoder/load/run_identity.h), NULL: none */
    int64_t start_ns;  /* when the image started (start_mono_ns), INT64_MIN: not recorded */
    int64_t restart;   /* restart_count (torchrun, Slurm requeue), -1: not recorded */
    int64_t signal_ns; /* when a fatal signal arrived (metadata "signal"), INT64_MIN: none */
    int32_t signal;
    uint32_t flush_ms; /* CUTRACE_FLUSH_MS it recorded with, 0: the default */
    int64_t hang_ns;   /* the shim's hang detection record, INT64_MIN: none */
    /* 1: the process died without finishing its trace (SIGKILL) and the
     * trace was completed from its live mapping (src/salvage.h): its end is
     * its last record, nothing lost to a flush period */
    int32_t salvaged;
};

/* What one process contributes; filled by a reader (above). */
struct ct_proc {
    char *path, *host;
    int64_t rank; /* -1 when the metadata has none */
    uint32_t pid, ppid;
    int64_t clock_offset; /* ns added to monotonic trace times */
    struct ct_gpu_op *ops;
    size_t nops;
    struct ct_nccl_call *nccl;
    size_t nnccl;
    int64_t *launches; /* sorted host starts of launch/copy/memset/NCCL calls */
    size_t nlaunches;
    struct ct_ivset sync; /* blocking sync calls and synchronous copies */
    /* CUDA calls that blocked (ct_is_blocking_call) on the threads that
     * launch GPU work (ct_calls_finish) */
    struct ct_ivset cuda_call;
    struct ct_ivset data_wait; /* read/recv/poll... on files, pipes, sockets */
    struct ct_ivset ckpt;      /* write/fsync on files, DtoH copies >= 16 MiB */
    struct ct_ivset file_read; /* of data_wait: reads on regular files (a checkpoint's restore) */
    /* host-to-device copies: their calls' host spans and their GPU
     * intervals (what follows a checkpoint's reading in a restore) */
    struct ct_ivset htod;
    struct ct_evedge *edges; /* by wait time; not spilled (one per wait) */
    size_t nedges;
    struct ct_gedge *gedges; /* by (to, from) */
    size_t ngedges;
    struct ct_syncon *syncs; /* one per host sync (of `sync`), by start; none in traces of
                              * Kineto (every sync then waits for every stream) */
    size_t nsyncs;
    uint32_t *nonblock; /* streams created non-blocking (their "nonblocking" metadata), sorted */
    size_t nnonblock;
    struct ct_range *steps; /* ranges/marks naming iterations */
    size_t nsteps;
    char **names;
    size_t nnames;
    struct ct_coverage cov;
    uint64_t trunc_at; /* truncated (cov.truncated): where the decoded part ends, else 0 */
    /* Capture windows (CUTRACE_START=paused, CUTRACE_DURATION, light mode's
     * duty cycle): the spans of time the trace covers, from its capture
     * marks. windowed 0: recorded throughout (capture empty). A window
     * open at the end runs to CT_OPEN_END, one closed with no start seen
     * (its mark lost with the frames before it) from -CT_OPEN_END. */
    struct ct_ivset capture;
    int64_t capture_open; /* raw start of the window still open, CT_OPEN_NONE */
    /* the latest time of the trace's own records (metadata, counters,
     * errors, clock syncs: a flight-recorder window's are from when it was
     * written), INT64_MIN when none */
    int64_t last_ns;
    uint8_t windowed, light;
    /* 1: the capture began and ended at a step (torch.profiler starts and
     * stops recording in prof.step()), its first host event at first_host:
     * what places iterations found from repeats (repeats.c) */
    uint8_t at_step;
    int64_t first_host;
    uint32_t light_window_ms, light_period_ms; /* light mode's schedule, 0 unknown */
    struct ct_sdev *sdev;                      /* the device of each stream the trace names */
    size_t nsdev, capsdev;
    int32_t device; /* the device it drives (ct_split_devices), -1 unknown */
    uint8_t source; /* enum ct_source: which kind of input it was read from */
    /* Kineto input in HTA-compatible mode: HTA's figures for it
     * (decoder/read/hta.h), else NULL */
    struct ct_hta *hta;
    /* A reader's own data about the process until the format dispatch
     * (decoder/load/) has completed the job and released it (reader_free,
     * which ct_proc_free also calls); NULL after and for most inputs */
    void *reader_data;
    void (*reader_free)(void *);
    struct ct_life life;
    /* What the trace says about itself, read in the same pass as the rest
     * (NULL for a PyTorch profiler trace): its health counters
     * (decoder/read/counters.h; every part of a process split by device
     * has a copy) and its metadata and copy facts (decoder/read/facts.h;
     * the first part only: they are the file's) */
    struct ct_hproc *health;
    struct ct_trace_facts *facts;
    /* NCCL's own account of its ops (decoder/read/nccl_acct.h, format v4
     * plugin records), NULL when the trace has none; every part of a
     * process split by device has a copy (joined by correlation id) */
    struct ct_nacct *nacct;
    /* Bounded memory (decoder/read/spill.h): a large job's ops and launches
     * stay compressed in spill while their rank is closed (ops and launches
     * NULL; nops and nlaunches still count them), and the bounds below,
     * which some figures need with the rank closed, are kept for every
     * process (ct_proc_settle; INT64_MAX and INT64_MIN when there are none). */
    unsigned char *spill;
    size_t nspill;
    int64_t gpu_lo, gpu_hi; /* earliest op start, latest op end */
    int64_t busy_lo;        /* earliest start of an op of positive length */
    int64_t launch_lo, launch_hi;
    /* A salvaged process that died with GPU times still queued in it
     * (CUPTI's buffers, docs/salvage.md): its `undelivered` GPU ops, the
     * ones launched after the last whose GPU time arrived, ran without
     * their time reaching the trace. Its record is complete on the host
     * until host_cut (the earliest one's launch) and on the GPU until
     * gpu_cut (the earliest GPU time one of them can have started); both
     * unset (undelivered 0) otherwise. */
    uint64_t undelivered;
    int64_t host_cut, gpu_cut;
};
#define CT_OPEN_END  (INT64_MAX / 4)
#define CT_OPEN_NONE INT64_MIN

void ct_proc_free(struct ct_proc *p);

/* A range or mark message that names an iteration ("ProfilerStep" matches
 * "ProfilerStep#N"). */
int ct_step_matches(const char *msg, const char *step);
/* The number after the last '#' of a step's message (all of the rest a
 * decimal integer), or CT_STEP_NONE: what names an iteration in reports.
 * Only the number is kept (a long job has a message per step). */
int64_t ct_step_number(const char *msg);
struct ct_rank {
    int rank;
    char *host;
    struct ct_proc **procs; /* procs[0] is the main (GPU-driving) process */
    size_t nprocs;
    struct ct_gpu_op *ops; /* all GPU intervals, sorted by start */
    size_t nops;
    size_t nlaunched;          /* of those, the ops whose launch is known: counted as the
                                * sets are built, for the analyses that leave out those
                                * without one when most have it */
    struct ct_nccl_call *nccl; /* sorted by host start */
    size_t nnccl;
    char **names; /* pointers borrowed from the processes; ops[].name indexes it */
    size_t nnames;
    struct ct_ivset cls[CT_CL_COUNT];
    struct ct_ivset comm, gpu; /* union of the communication classes; of everything */
    /* The main process's capture windows (its capture set) when its trace
     * was windowed, else NULL: recorded throughout. Every figure of the
     * rank is over its windows (docs/report.md, "Capture windows"). */
    const struct ct_ivset *cover;
    /* The same windows as the GPU saw them (built with cover): for each,
     * from the first GPU start to the last GPU end of the work launched
     * inside it. The GPU runs behind the host: work queued before a window
     * opens (not recorded) runs into it, and work launched before it
     * closes runs after. GPU figures are over these. */
    struct ct_ivset gcover;
    /* Where a salvaged process of the rank ran GPU ops whose GPU time never
     * reached its trace (struct ct_proc undelivered, docs/salvage.md):
     * from its gpu_cut to the first GPU start of the rank's next process
     * (a restarted attempt), else open. That time is not covered: the
     * GPU figures are over gcover less it, and gcover then exists without
     * capture windows too (ct_rank_gcover). hcut: the same from host_cut,
     * over host time: a step reaching into it is not an iteration (its GPU
     * work is not all there). Empty (n 0) for every other rank. */
    struct ct_ivset gcut, hcut;
    uint64_t undelivered; /* the ops, over the rank's processes */
    int64_t skew_ns;      /* refinement added after realtime alignment */
    /* spilled: its processes' ops and launches are held compressed; ops,
     * the class sets, comm and gpu exist only while it is open (opens: how
     * many ct_rank_open calls hold it); gcover is kept once built */
    uint8_t spilled, gcover_built;
    uint32_t opens;
    int64_t residual_ns; /* median |collective end - peers' median end| after it */
    struct ct_coverage cov;
};

/* The covered time of rank r's GPU figures (its capture windows as the
 * GPU saw them, less what salvage left without GPU time), or NULL when it
 * is all of its span. */
static inline const struct ct_ivset *ct_rank_gcover(const struct ct_rank *r)
{
    return r->cover || r->gcut.n ? &r->gcover : NULL;
}

struct ct_job {
    struct ct_proc *procs;
    size_t nprocs;
    struct ct_rank *ranks; /* sorted by rank */
    size_t nranks;
    /* Host processes: no GPU work, no rank of their own or of an ancestor,
     * in a job where other processes have GPU work (launchers such as
     * mpirun, helpers, a launcher's pre-exec child): listed, not ranks.
     * Pointers into procs, in input order. */
    struct ct_proc **hosts;
    size_t nhosts;
    int64_t t0; /* earliest GPU start of the job: output times are relative to it */
};

/* The op of an NCCL kernel name (ncclDevKernel_AllReduce_...), 0 if none. */
int ct_nccl_op_from_kernel(const char *name);

#endif
