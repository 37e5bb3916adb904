/*
 * Per-rank timelines for `cutrace report`: what each rank's GPU did (per
 * stream and per class) and what its host threads were doing, on one job
 * clock (int64 ns of CLOCK_REALTIME, from each trace's CLOCK sync records,
 * refined across ranks by matching collective ends).
 *
 * Building happens in two steps. ct_proc_extract() turns one decoded trace
 * (one process) into compact arrays and may run on several threads at once,
 * one trace each; the raw records can then be freed. ct_job_build() folds
 * processes into ranks (loader workers join the rank they serve), classifies
 * communication, builds the interval sets and aligns clocks.
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

struct ct_kineto;

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
struct ct_gop {
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
struct ct_nop {
    int64_t host_s, host_e, s, e;
    uint64_t comm, seq, bytes, corr;
    int64_t all_s; /* latest GPU start over the matched members (self
                    * included): the transfer can begin only then; 0 when
                    * the op was not matched across ranks */
    int32_t comm_rank, peer, nranks;
    uint32_t stream; /* its stream's id: the device it ran on (ct_sdev_of) */
    uint8_t op, cls;
    uint8_t from_op; /* 0 but while ct_proc_settle runs (decoder/read/spill.h) */
};

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
    char *run;         /* metadata "run_id" (decoder/read/run_identity.h), NULL: none */
    int64_t start_ns;  /* when the image started (start_mono_ns), INT64_MIN: not recorded */
    int64_t restart;   /* restart_count (torchrun, Slurm requeue), -1: not recorded */
    int64_t signal_ns; /* when a fatal signal arrived (metadata "signal"), INT64_MIN: none */
    int32_t signal;
    uint32_t flush_ms; /* CUTRACE_FLUSH_MS it recorded with, 0: the default */
    int64_t hang_ns;   /* the shim's hang detection record, INT64_MIN: none */
};
void ct_life_init(struct ct_life *l);
/* Folds one process-scope metadata pair (raw time t) in; 0 or -ENOMEM. */
int ct_life_meta(struct ct_life *l, const char *key, const char *value, int64_t t);
/* Folds one of the recorder's error records in. */
void ct_life_error(struct ct_life *l, const char *what, int64_t t);
/* Frees what l holds. */
void ct_life_free(struct ct_life *l);
/* Moves the times by the trace's clock offset. */
void ct_life_finish(struct ct_life *l, int64_t off);

/* What one process contributes; produced by ct_proc_extract. */
struct ct_proc {
    char *path, *host;
    int64_t rank; /* -1 when the metadata has none */
    uint32_t pid, ppid;
    int64_t clock_offset; /* ns added to monotonic trace times */
    struct ct_gop *ops;
    size_t nops;
    struct ct_nop *nccl;
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
    struct ct_evedge *edges;   /* by wait time; not spilled (one per wait) */
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
    int32_t device;        /* the device it drives (ct_split_devices), -1 unknown */
    struct ct_kineto *kin; /* Kineto input only (decoder/kineto/kineto.h), else NULL */
    struct ct_life life;
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
};
#define CT_OPEN_END  (INT64_MAX / 4)
#define CT_OPEN_NONE INT64_MIN

/*
 * Extracts one loaded trace (loaded with keep_records). step_name: the NVTX
 * range or mark message that names iterations ("ProfilerStep" matches
 * "ProfilerStep#N"); NULL for the default. Returns 0 or -ENOMEM. Safe to
 * call concurrently on different traces.
 */
int ct_proc_extract(struct ct_trace *t, const char *step_name, struct ct_proc *p);

/*
 * The same from a trace file in one streaming pass (decoder/read/extract.c),
 * without keeping records: memory is about the result plus 16 bytes per API
 * and GPU record while it runs. The result equals ct_trace_load() followed
 * by ct_proc_extract(). Returns 0 (the file may be truncated or damaged:
 * p->cov says so), or a negative errno with err holding one message naming
 * the file (the reader's message, or "PATH: out of memory"); p is then
 * empty. Safe to call concurrently on different files.
 */
int ct_proc_extract_file(const char *path, const char *step_name, struct ct_proc *p, char *err,
                         size_t errlen);
void ct_proc_free(struct ct_proc *p);

/* Extraction rules shared by both extractors (timeline.c): an I/O op that
 * is a data wait (read/recv/poll... on a file, pipe or socket), one that is
 * checkpoint I/O (write/fsync... on a file), a call (API family and flags)
 * the host blocks in until the GPU is done (a synchronize, a synchronous
 * copy; not cuStreamWaitEvent, which makes a stream wait and returns at
 * once), a range or mark message that names an iteration ("ProfilerStep"
 * matches "ProfilerStep#N"). */
int ct_is_data_wait(const char *op, uint64_t fd_type);
int ct_is_host_sync(uint64_t fam, uint64_t flags);
int ct_is_ckpt_io(const char *op, uint64_t fd_type);
/* A CUDA driver call that blocked the host: one that is not a wait for the
 * GPU (a synchronize: CT_FAM_SYNC without CT_APIF_ASYNC) and lasted at
 * least CT_BLOCKING_CALL_NS (an allocation, a module load, a pageable or
 * synchronous copy, a memset that synchronises, a launch that loaded its
 * module). dur in ns. */
#define CT_BLOCKING_CALL_NS 100000
int ct_is_blocking_call(uint64_t fam, uint64_t flags, int64_t dur);
int ct_step_matches(const char *msg, const char *step);
/* The number after the last '#' of a step's message (all of the rest a
 * decimal integer), or CT_STEP_NONE: what names an iteration in reports.
 * Only the number is kept (a long job has a message per step). */
int64_t ct_step_number(const char *msg);
/* Folds one recorder "capture" mark (value "start" or "stop", raw time t)
 * or process metadata (mode, light_window_ms, light_period_ms) into p's
 * windows; ct_capture_finish closes a window left open and shifts the set
 * by the clock offset. 0 or -ENOMEM. */
int ct_capture_mark(struct ct_proc *p, const char *value, int64_t t);
void ct_capture_meta(struct ct_proc *p, const char *key, const char *value);
int ct_capture_finish(struct ct_proc *p, int64_t off);

/* The blocking CUDA calls of a process while its trace is read (both
 * extractors): each with its thread, and the threads that issued GPU work
 * (launch, copy, memset or NCCL calls). ct_calls_finish keeps the calls of
 * those threads (the ones that feed the GPU: a pinned-memory thread's
 * allocation does not hold the GPU back), moved by the clock offset, in
 * out, normalised; it frees c. ct_calls_note and ct_calls_launcher: 0 or
 * -ENOMEM. */
struct ct_calls {
    struct ct_call_span {
        int64_t s, e;
        uint32_t tid;
    } * v;
    size_t n, cap;
    uint32_t *tids; /* the launching threads, unsorted, once each */
    size_t ntids, captids;
};
int ct_calls_note(struct ct_calls *c, int64_t s, int64_t e, uint32_t tid);
int ct_calls_launcher(struct ct_calls *c, uint32_t tid);
int ct_calls_finish(struct ct_calls *c, struct ct_ivset *out, int64_t off);
void ct_calls_free(struct ct_calls *c);

/* devices.c: notes that stream id `stream` belongs to device dev (dev < 0:
 * nothing to note), 0 or -ENOMEM; the device of a stream, -1 unknown; and
 * the split of every process that drives several devices into one process
 * per device (procs reallocated, *nprocs grown; rules in devices.c), 0 or
 * -ENOMEM. */
int ct_sdev_note(struct ct_proc *p, uint32_t stream, int32_t dev);
/* Notes that `stream` is non-blocking (kept sorted, once). 0 or -ENOMEM. */
int ct_nonblocking_note(struct ct_proc *p, uint32_t stream);
/* 1 when `stream` of p was created non-blocking. */
int ct_is_nonblocking(const struct ct_proc *p, uint32_t stream);
/* The same, inline for the common case (every GPU record passes here): the
 * stream last noted, with the same device. */
static inline int ct_sdev_seen(struct ct_proc *p, uint32_t stream, int32_t dev)
{
    if (dev < 0 ||
        (p->nsdev && p->sdev[p->nsdev - 1].stream == stream && p->sdev[p->nsdev - 1].dev == dev))
        return 0;
    return ct_sdev_note(p, stream, dev);
}
int32_t ct_sdev_of(const struct ct_proc *p, uint32_t stream);
int ct_split_devices(struct ct_proc **procs, size_t *nprocs);

struct ct_rank {
    int rank;
    char *host;
    struct ct_proc **procs; /* procs[0] is the main (GPU-driving) process */
    size_t nprocs;
    struct ct_gop *ops; /* all GPU intervals, sorted by start */
    size_t nops;
    struct ct_nop *nccl; /* sorted by host start */
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
    int64_t skew_ns; /* refinement added after realtime alignment */
    /* spilled: its processes' ops and launches are held compressed; ops,
     * the class sets, comm and gpu exist only while it is open (opens: how
     * many ct_rank_open calls hold it); gcover is kept once built */
    uint8_t spilled, gcover_built;
    uint32_t opens;
    int64_t residual_ns; /* median |collective end - peers' median end| after it */
    struct ct_coverage cov;
};

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

/*
 * Takes ownership of procs (an array from malloc) and builds the job:
 * ranks, classes, interval sets, clock alignment. Returns 0 or -ENOMEM.
 */
int ct_job_build(struct ct_job *job, struct ct_proc *procs, size_t nprocs);
void ct_job_free(struct ct_job *job);

/*
 * A spilled rank's GPU ops, launches and interval sets, rebuilt from its
 * processes' spills exactly as ct_job_build made them (classes, clock
 * refinement); ct_rank_close frees them again. Every reader of those
 * fields of a rank holds it open; on a rank that is not spilled both do
 * nothing. Opens nest (a count is kept). ct_rank_open returns 0, -ENOMEM
 * or -EIO (a spill that does not decode: memory corrupted).
 */
int ct_rank_open(struct ct_rank *r);
void ct_rank_close(struct ct_rank *r);

/* The op of an NCCL kernel name (ncclDevKernel_AllReduce_...), 0 if none. */
int ct_nccl_op_from_kernel(const char *name);

#endif
