/*
 * fg_internal.h - shared state of the simulated CUDA driver (libcuda.so.1).
 *
 * Every source file of the fake includes this header first.  The build
 * defines __CUDA_API_VERSION_INTERNAL so that cuda.h declares every entry
 * point under its exported name (cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds, the
 * pre-v2 names, ...) instead of renaming them, and
 * __CUDA_API_PUSH_VISIBILITY_DEFAULT so that those declarations stay
 * exported while everything else (the fg_ helpers) is hidden.
 *
 * Locking: one process-wide mutex (fg.lock) protects all state.  Entry
 * points take it on entry; fg_ helpers documented as "locked" expect it held.
 * Only waits (fg_wait_ops_locked) and host-function calls drop it.
 */
#ifndef FG_INTERNAL_H
#define FG_INTERNAL_H

#include "fg_cupti_hooks.h"

#include <cuda.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FG_DRIVER_VERSION 13000 /* the newest; FAKEGPU_DRIVER_VERSION presents an older one */
/* The driver version presented (FAKEGPU_DRIVER_VERSION, at most
 * FG_DRIVER_VERSION): cuDriverGetVersion reports it and cuGetProcAddress
 * knows no entry point newer than it. The libcuda of tests/fakegpu/drv<V>/
 * also lacks those exports, as an old driver's library does. */
int fg_driver_version(void);
#define FG_MAX_DEVICES      64
#define FG_DEVICE_MEM_BYTES (80ull << 30) /* an 80 GiB H100-class part */

/* ---------------------------------------------------------------- handles */

/* Every handle given to a caller is registered with its type, so that a
 * stale or foreign pointer is rejected instead of dereferenced. */
typedef enum fg_htype {
    FG_H_NONE = 0,
    FG_H_CTX,
    FG_H_STREAM,
    FG_H_EVENT,
    FG_H_MODULE,
    FG_H_FUNC,
    FG_H_LIBRARY,
    FG_H_KERNEL,
    FG_H_GRAPH,
    FG_H_GRAPH_EXEC,
    FG_H_GRAPH_NODE, /* nodes of graphs and their clones in executable graphs */
    FG_H_POOL,
} fg_htype;

void fg_handle_add(const void *h, fg_htype t);
void fg_handle_del(const void *h);
fg_htype fg_handle_type(const void *h);

/* ------------------------------------------------------------- scheduler */

typedef struct fg_op fg_op;
typedef struct fg_ctx fg_ctx;
typedef struct fg_stream fg_stream;
typedef struct fg_graph fg_graph;
typedef struct fg_node fg_node;

/* A capture dependency set (fg_capture.c): the nodes of the capture graph
 * that the next node captured on a stream depends on. */
typedef struct fg_capdeps {
    fg_node **v;
    size_t n, cap;
} fg_capdeps;
/* dst = src (merge: dst = dst union src).  False when out of memory. */
bool fg_capdeps_set(fg_capdeps *dst, const fg_capdeps *src, bool merge);
void fg_capdeps_free(fg_capdeps *d);

typedef enum fg_op_kind {
    FG_OP_MARKER, /* zero-length: event records, stream waits */
    FG_OP_KERNEL,
    FG_OP_COPY,
    FG_OP_MEMSET,
    FG_OP_HOSTFN,   /* runs on the worker thread; ends when the function returns */
    FG_OP_FREE,     /* cuMemFreeAsync: releases memory in stream order */
    FG_OP_EXTERNAL, /* end decided by a resolver (seam for a simulated NCCL) */
} fg_op_kind;

/*
 * Resolver seam: an op whose end is not known at enqueue time (e.g. a
 * collective that completes only when peers in other processes arrive)
 * carries a resolver.  Once the op's start is known the scheduler calls
 * resolve(op_start_ns, &end_ns, arg) from fg_progress(); it returns true and
 * sets *end_ns when the end is known, false to be asked again later (every
 * query, every synchronize poll - at least once per millisecond while someone
 * waits).  It runs with fg.lock held, must not block and must not call the
 * CUDA API.  Anything queued behind such an op stays unresolved until then.
 */
typedef bool (*fg_resolve_fn)(int64_t start_ns, int64_t *end_ns, void *arg);

/* What an op does.  Also the node type of captured graphs, which is why it
 * holds everything needed to replay the op later. */
typedef struct fg_desc {
    fg_op_kind kind;
    int64_t duration_ns;
    const char *name; /* kernel name; owned by its function, which is never freed */
    union {
        struct { /* launch geometry: reported to CUPTI only */
            unsigned grid[3], block[3];
            unsigned shmem;
            bool coop;
        } launch;
        struct { /* 3D strided copy: depth slices of height rows of width bytes */
            char *dst;
            const char *src;
            size_t width, height, depth;
            size_t dpitch, spitch, dslice, sslice;
            fg_cupti_mem src_mem, dst_mem; /* reported to CUPTI only */
        } copy;
        struct {
            char *dst;
            size_t pitch, width, height; /* width in elements */
            uint32_t value;
            unsigned elsize;
        } memset;
        struct {
            CUhostFn fn;
            CUstreamCallback cb; /* cuStreamAddCallback flavour when non-NULL */
            CUstream cb_stream;
            void *arg;
        } host;
        struct {
            void *ptr;
        } free;
    } u;
    fg_resolve_fn resolve;
    void *resolve_arg;
    /* a resolver op that is a copy (u.copy filled, no bytes moved): a fake
     * NCCL copy-engine collective, reported to CUPTI as a memcpy */
    bool ext_copy;
} fg_desc;

struct fg_op {
    int refs;
    fg_desc d;
    int64_t min_start_ns; /* enqueue time and already-finished dependencies */
    int64_t start_ns, end_ns;
    bool start_known, resolved, executed, running, deps_executed;
    fg_op *next; /* pending list */
    size_t ndeps;
    fg_op **deps;
    int device; /* of the stream it was enqueued on (power cap, fg_throttle.h) */
};

int64_t fg_now(void);
void fg_sleep_until(int64_t t_ns);
void fg_op_ref(fg_op *op);
void fg_op_unref(fg_op *op);
/* Enqueue d on s (not capturing), after s's previous op, the implicit
 * legacy-stream dependencies and the extra deps.  Returns the op, owned by
 * the stream (take a ref to keep it). */
fg_op *fg_enqueue(fg_stream *s, const fg_desc *d, fg_op *const *extra, size_t nextra);
/* Enqueue d for s's device after exactly deps, starting no earlier than
 * min_start_ns, without taking a place in s's FIFO order (s->last stays):
 * the nodes of a replayed graph.  Returns the op with a reference the
 * caller owns. */
fg_op *fg_enqueue_detached(fg_stream *s, const fg_desc *d, fg_op *const *deps, size_t ndeps,
                           int64_t min_start_ns);
/* Record into the capture graph if s is capturing, else enqueue; when wait
 * is set, block until the op has completed in virtual time: FG_WAIT sleeps
 * until then, FG_WAIT_SPIN (synchronous copies) spins for the last part so
 * the call returns when the copy ends, not a timer latency later. */
#define FG_WAIT      1
#define FG_WAIT_SPIN 2
CUresult fg_submit(fg_stream *s, const fg_desc *d, int wait);
/* Advance resolution/execution of pending ops; cheap when nothing pends. */
void fg_progress(void);
bool fg_op_done(fg_op *op, int64_t now);
/* Block until every op completed (in virtual time); drops fg.lock while waiting. */
void fg_wait_ops_locked(fg_op *const *ops, size_t n);
/* Block until no queued op has a side effect left to run (frees use it). */
void fg_drain_effects_locked(void);
void fg_sched_atfork_child(void);

/* ---------------------------------------------------- devices / contexts */

typedef struct fg_device {
    int ordinal;
    fg_ctx *primary;
    int primary_refs;
    unsigned primary_flags;
    size_t used_mem;
    char pool_tag; /* address used as the device's default CUmemoryPool */
} fg_device;

struct fg_ctx {
    int device;
    unsigned long long id;
    unsigned flags;
    bool primary, destroyed;
    unsigned resets; /* teardowns so far: a primary context is reset, others destroyed */
    fg_stream *legacy;
    fg_stream **streams; /* user and per-thread streams, not the legacy one */
    size_t nstreams, capstreams;
    fg_op **orphans; /* last ops of destroyed streams, still owed to syncs */
    size_t norphans, caporphans;
};

typedef enum fg_stream_kind { FG_S_USER, FG_S_LEGACY, FG_S_PER_THREAD } fg_stream_kind;

struct fg_stream {
    fg_ctx *ctx;
    unsigned long long id;
    unsigned flags;
    int priority;
    fg_stream_kind kind;
    pthread_t owner; /* FG_S_PER_THREAD only */
    fg_op *last;
    fg_graph *capture; /* non-NULL while capturing into this graph */
    bool capture_origin;
    fg_capdeps capdeps; /* while capturing: what its next captured node depends on */
};

struct fg_global {
    pthread_mutex_t lock;
    pthread_cond_t progress_cond; /* broadcast whenever an op finishes */
    pthread_cond_t worker_cond;
    int initialized; /* read without the lock: use __atomic */
    int ndevices;
    double kernel_scale, pcie_gbps, hbm_gbps;
    int64_t init_ns;                /* CLOCK_MONOTONIC of the first cuInit */
    int64_t cap_ns[FG_MAX_DEVICES]; /* FAKEGPU_NVML_CAP: capped from then on, -1 never */
    /* FAKEGPU_NVML_CAP_FROM=launch: offsets waiting for the first kernel */
    int64_t cap_after[FG_MAX_DEVICES];
    int cap_pending;
    fg_device devices[FG_MAX_DEVICES];
    unsigned long long next_id;
    fg_ctx **ctxs;
    size_t nctxs, capctxs;
    fg_op *pending_head, *pending_tail;
    bool worker_started;
};
extern struct fg_global fg;

#define FG_LOCK()   pthread_mutex_lock(&fg.lock)
#define FG_UNLOCK() pthread_mutex_unlock(&fg.lock)
/* Entry-point prologue: everything except cuInit & co. fails before cuInit. */
#define FG_ENTER()                                                                                 \
    do {                                                                                           \
        if (!__atomic_load_n(&fg.initialized, __ATOMIC_ACQUIRE))                                   \
            return CUDA_ERROR_NOT_INITIALIZED;                                                     \
        FG_LOCK();                                                                                 \
    } while (0)
#define FG_RETURN(rc)                                                                              \
    do {                                                                                           \
        CUresult rc_ = (rc);                                                                       \
        FG_UNLOCK();                                                                               \
        return rc_;                                                                                \
    } while (0)

unsigned long long fg_next_id(void);
bool fg_grow(void **arr, size_t *cap, size_t need, size_t elsize);
void fg_retire(void *p); /* keep a dead object reachable forever */

fg_ctx *fg_current_ctx(void);
fg_ctx *fg_ctx_from_handle(CUcontext h); /* NULL unless a live context */
CUresult fg_require_ctx(fg_ctx **out);
void fg_ctx_wait_all_locked(fg_ctx *c);
bool fg_device_valid(CUdevice d);

/* Map a CUstream argument to a stream: handle 0 means the per-thread stream
 * in _ptsz/_ptds entry points (per_thread=true), the legacy stream otherwise. */
fg_stream *fg_stream_get(CUstream h, bool per_thread, CUresult *err);
bool fg_stream_blocking(const fg_stream *s);
fg_stream *fg_stream_new(fg_ctx *c, fg_stream_kind kind, unsigned flags, int prio);
void fg_stream_free(fg_stream *s);

/* ------------------------------------------------------ fake CUPTI hooks */

/* Set by fakegpu_cupti_attach (fg_cupti_driver.c); NULL when no fake CUPTI
 * is attached, which is the only thing the hot paths test. */
extern const struct fg_cupti_hooks *fg_cupti_hooks_p;
static inline const struct fg_cupti_hooks *fg_cupti(void)
{
    return __atomic_load_n(&fg_cupti_hooks_p, __ATOMIC_ACQUIRE);
}
/* Locked.  Report op (just enqueued on s) to the attached CUPTI. */
void fg_cupti_op_locked(const struct fg_cupti_hooks *h, fg_stream *s, fg_op *op);
/* Locked.  At the start of a synchronising call: returns its correlation id
 * (0 when no CUPTI is attached) and the host entry time. */
uint32_t fg_cupti_sync_begin_slow(const struct fg_cupti_hooks *h, int64_t *enter_ns);
static inline uint32_t fg_cupti_sync_begin(int64_t *enter_ns)
{
    const struct fg_cupti_hooks *h = fg_cupti();
    return __builtin_expect(h == NULL, 1) ? 0 : fg_cupti_sync_begin_slow(h, enter_ns);
}
/* Locked.  When that call returns successfully (corr != 0); stream_id and
 * event_id are FG_CUPTI_NA where they do not apply. */
void fg_cupti_sync_end(uint32_t corr, int64_t enter_ns, fg_cupti_sync_type type, const fg_ctx *c,
                       uint32_t stream_id, uint32_t event_id);
/* Locked.  cuGraphLaunch: one correlation id for every replayed node. */
void fg_cupti_graph_begin(const struct fg_cupti_hooks *h, uint32_t graph_id);
void fg_cupti_graph_node(uint64_t node_id);
void fg_cupti_graph_end(void);
/* cuMemcpyBatchAsync: one correlation id for every copy of the batch. */
/* (cuda.h declares no cuMemcpyBatchAsync_v2_ptsz: its per-thread macro
 * makes the name; fg_copy.c defines it) */
CUresult CUDAAPI cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
                                            size_t count, CUmemcpyAttributes *attrs,
                                            size_t *attrsIdxs, size_t numAttrs, CUstream hStream);
void fg_cupti_batch_begin(const struct fg_cupti_hooks *h);
void fg_cupti_batch_end(void);
/* The driver table's graph look-ups (fg_graph.c); they take fg.lock. */
bool fg_graph_node_id(const void *node, uint64_t *id);
bool fg_graph_id(const void *graph, uint32_t *id);
bool fg_graph_exec_id(const void *exec, uint32_t *id);

/* ------------------------------------------------------- fake NCCL hooks */

/* Locked.  Turns d (a kernel launch) into a resolver op of the attached fake
 * NCCL when d names an ncclDevKernel_* and params carries its token
 * (fg_nccl_hooks.h); leaves d unchanged otherwise. */
void fg_nccl_launch_desc(fg_desc *d, void **params);
/* Locked.  Turns d (a device-to-device copy, not captured) into a resolver
 * op of the attached fake NCCL when the calling thread has armed a
 * copy-engine token (fakegpu_nccl_ce_arm, fg_nccl_hooks.h), consuming it;
 * leaves d unchanged otherwise. */
void fg_nccl_copy_desc(fg_desc *d);
/* Whether the calling thread has armed a copy-engine token. */
bool fg_nccl_ce_pending(void);

/* ---------------------------------------------------------------- memory */

typedef enum fg_mem_kind {
    FG_MEM_DEVICE,
    FG_MEM_HOST_PINNED,
    FG_MEM_HOST_REGISTERED,
    FG_MEM_MANAGED
} fg_mem_kind;

typedef struct fg_alloc {
    uintptr_t base;
    size_t size;
    fg_mem_kind kind;
    int device;
    fg_ctx *ctx;
    unsigned long long id;
} fg_alloc;

const fg_alloc *fg_mem_find(uintptr_t p); /* locked */
void fg_mem_release_locked(uintptr_t base);

/* ----------------------------------------------------------- misc helpers */

int64_t fg_kernel_duration_ns(const char *name);
/* FAKEGPU_NVML_CAP (fg_throttle.c): read at the first cuInit; the instant a
 * device becomes power-capped (-1: never). */
void fg_throttle_init_locked(void);
void fg_throttle_launch_locked(void); /* arms a cap counted from the first launch */
int64_t fg_cap_ns(int device);
/* Locked. A kernel's or copy's timing was settled: its activity for GPM
 * (fg_activity.c, fg_gpm.h). */
void fg_activity_op_locked(const fg_op *op);
const char *fg_func_name(CUfunction f); /* NULL unless a function or kernel handle */
int64_t fg_bytes_ns(size_t bytes, double gbps);
/* Record d into the capture of s (fg_capture.c): a node depending on s's
 * dependency set, which becomes that node. */
CUresult fg_graph_record_locked(fg_stream *s, const fg_desc *d);
bool fg_graph_capturing(fg_graph *g); /* false for destroyed graphs too */

#endif
