/*
 * Hand-built timelines for the analysis suites (breakdown, bubbles, stalls,
 * stragglers, collectives, iterations, clock): processes written op by op,
 * as a reader (decoder/read/extract.h) would leave them, then folded into
 * a job by the real ct_job_build and analysed by the real analyses. The truth of every
 * figure is then known exactly and computed by hand in each test.
 *
 * Times are given in µs (the unit the report prints) and stored in ns; an
 * expected ns figure is written TB_US(µs). Helpers fail the running test
 * on allocation failure; they never return errors.
 */
#ifndef CT_TEST_TIMELINE_BUILDER_H
#define CT_TEST_TIMELINE_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#include "decoder/analysis/analysis.h"
#include "decoder/read/timeline.h"

#define TB_US(x)     ((int64_t)(x)*1000)
#define TB_NOLAUNCH  INT64_MIN /* a GPU interval whose launching call is unknown */
#define TB_MAX_PROCS 16

/* The processes of a job being written; tb_build hands them to the job. */
struct tb_job {
    struct ct_proc *procs; /* TB_MAX_PROCS of them, so pointers stay valid */
    size_t n;
};

void tb_init(struct tb_job *b);

/* A process with rank metadata `rank` (-1: none) on host "h", pid 100 + its
 * index, parent pid 1. */
struct ct_proc *tb_proc(struct tb_job *b, int64_t rank);

/* A process without rank metadata whose parent is `parent` (a DataLoader
 * worker, a checkpoint writer): it joins the parent's rank. */
struct ct_proc *tb_child(struct tb_job *b, const struct ct_proc *parent);

/* A compute kernel [s, e) on `stream`, launched at `launch` (TB_NOLAUNCH:
 * unknown). A known launch is also one of the process's launch calls. */
void tb_kernel(struct ct_proc *p, const char *name, uint32_t stream, int64_t s, int64_t e,
               int64_t launch);

/* A kernel that ran as executable graph node `node` of the graph launched
 * at `launch` (one launch call for all its nodes: tb_launch), and an edge
 * of the process's graphs (from 0: a predecessor the trace does not name).
 * Edges must be added in (to, from) order, as extraction sorts them. */
void tb_graph_kernel(struct ct_proc *p, const char *name, uint32_t stream, int64_t s, int64_t e,
                     int64_t launch, uint64_t node);
void tb_graph_edge(struct ct_proc *p, uint64_t from, uint64_t to);
/* An event edge: a cuEventRecord on stream `from` at host time rec (µs)
 * waited on by stream `to` at wait. Add them in wait order. */
void tb_event_edge(struct ct_proc *p, uint32_t from, int64_t rec, uint32_t to, int64_t wait);

/* A memcpy [s, e) (class memory); launch as for tb_kernel. tb_copy_named:
 * one named as a profiler names it ("Memcpy HtoD (Pageable -> Device)"
 * says its direction). */
void tb_copy(struct ct_proc *p, uint32_t stream, int64_t s, int64_t e, int64_t launch);
void tb_copy_named(struct ct_proc *p, const char *name, uint32_t stream, int64_t s, int64_t e,
                   int64_t launch);

/* An NCCL call. Its class comes from ct_job_build (rules in timeline.h). */
struct tb_coll {
    int op; /* enum ct_nccl_op */
    uint64_t comm, seq, bytes;
    int32_t comm_rank, peer, nranks; /* peer: Send/Recv only */
    uint32_t stream;
    int64_t s, e;   /* GPU interval in µs; e == 0: untimed (no GPU interval) */
    int64_t launch; /* host start of the call in µs; 0: unknown */
};
/* Adds o (NCCL calls must be added in host start order, as extraction
 * leaves them) and, when timed, its GPU interval. */
void tb_nccl(struct ct_proc *p, struct tb_coll o);

/* Host evidence of the process, [s, e) in µs. */
void tb_launch(struct ct_proc *p, int64_t t); /* a launch/copy call with no GPU interval */
void tb_sync(struct ct_proc *p, int64_t s, int64_t e);
/* A sync [s, e) that waited for the last op launched on `stream` before
 * rec (a stream's sync: rec = s; an event's: its record's time), or for
 * every stream (stream 0); syncs must be added by start. */
void tb_sync_on(struct ct_proc *p, int64_t s, int64_t e, uint32_t stream, int64_t rec);
void tb_data_wait(struct ct_proc *p, int64_t s, int64_t e);
void tb_ckpt(struct ct_proc *p, int64_t s, int64_t e);
/* A blocking CUDA call [s, e) on a thread that launches GPU work (what
 * ct_calls_finish keeps: ct_is_blocking_call). */
void tb_cuda_call(struct ct_proc *p, int64_t s, int64_t e);
/* A read of a regular file: a data wait and one of file_read (a restore). */
void tb_file_read(struct ct_proc *p, int64_t s, int64_t e);
/* A host-to-device copy [s, e): its call and its GPU interval (htod). */
void tb_htod(struct ct_proc *p, int64_t s, int64_t e);
/* An iteration range (num: its "#N", CT_STEP_NONE for none) and a mark. */
void tb_range(struct ct_proc *p, int64_t s, int64_t e, int64_t num);
void tb_mark(struct ct_proc *p, int64_t t, int64_t num);

/* Stream `stream` of the process is on device dev (the shim's stream
 * metadata, or the device of its GPU records). */
void tb_device(struct ct_proc *p, uint32_t stream, int32_t dev);

/* A capture window [s, e) in µs (host times, as its marks say): the process
 * was recorded in windows (light mode, a paused start). */
void tb_capture(struct ct_proc *p, int64_t s, int64_t e);

/* Shifts every time the process has so far by d µs (its clock is off). */
void tb_shift(struct ct_proc *p, int64_t d);

/* Puts every process in extraction order (ops by start, launches sorted,
 * host sets normalised) and builds the job, which takes the processes.
 * Fails the test when ct_job_build does. */
void tb_build(struct tb_job *b, struct ct_job *job);

/* ct_report_analyze with o (NULL: no --skip/--steps). Fails the test when
 * it fails. */
void tb_analyze(struct ct_job *job, const struct ct_iter_opts *o, struct ct_report *rep);

/* The job rank numbered `rank`, and its result in rep; fail when absent. */
struct ct_rank *tb_rank(struct ct_job *job, int rank);
struct ct_rank_result *tb_result(struct ct_report *rep, int rank);

/* ct_metrics_rank alone on the rank numbered `rank`, with the iterations
 * it[0..n) (copied): res is set up and filled; free it with tb_result_free. */
void tb_metrics(struct ct_job *job, int rank, const struct ct_iter *it, size_t n,
                struct ct_rank_result *res);
void tb_result_free(struct ct_rank_result *res);

#endif
