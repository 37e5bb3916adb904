/*
 * fg_cupti_hooks.h - the internal interface between the simulated driver
 * (libcuda.so.1) and the fake CUPTI (libcupti.so.13).
 *
 * The fake CUPTI finds fakegpu_cupti_attach() in the loaded libcuda.so.1
 * (dlopen RTLD_NOLOAD, then dlsym RTLD_DEFAULT) and registers a table of
 * hooks; the driver answers with a table of functions CUPTI may call.
 * Both sides use plain C types only: this header includes neither cuda.h
 * nor the CUPTI headers.
 *
 * Hooks (driver -> CUPTI) are called on the thread that made the driver
 * API call, WITH the driver's lock held.  They may take CUPTI's own locks
 * but must never block, call the CUDA API or call back into the client.
 * Lock order, everywhere: CUPTI collect lock -> driver lock -> CUPTI state
 * lock.  The one exception is node_cloned: it is called with NO driver
 * lock held, precisely so that CUPTI can call its client from it (a
 * resource callback), and the client may call the CUDA API and CUPTI
 * (cuptiGetGraphNodeId) from there; CUPTI must hold none of its own locks
 * while it calls the client.
 *
 * Driver functions (CUPTI -> driver) take the driver's lock: CUPTI calls
 * them only while holding none of the locks its hooks take.
 *
 * Without an attached CUPTI the driver pays one predictable branch (a load
 * of the hooks pointer) per work-enqueueing call.
 */
#ifndef FG_CUPTI_HOOKS_H
#define FG_CUPTI_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FG_CUPTI_ABI 2 /* 2: node_cloned, graph look-ups */

/* Not applicable (sync records: streamId/eventId), as CUPTI's
 * CUPTI_SYNCHRONIZATION_INVALID_VALUE. */
#define FG_CUPTI_NA 0xFFFFFFFFu

typedef enum fg_cupti_op_kind {
    FG_CUPTI_OP_KERNEL = 1, /* kernels, and resolver (seam) ops */
    FG_CUPTI_OP_MEMCPY = 2,
    FG_CUPTI_OP_MEMSET = 3,
} fg_cupti_op_kind;

/* Where one end of a copy lives (values of CUpti_ActivityMemoryKind). */
typedef enum fg_cupti_mem {
    FG_CUPTI_MEM_PAGEABLE = 1,
    FG_CUPTI_MEM_PINNED = 2,
    FG_CUPTI_MEM_DEVICE = 3,
} fg_cupti_mem;

/* Values of CUpti_ActivitySynchronizationType. */
typedef enum fg_cupti_sync_type {
    FG_CUPTI_SYNC_EVENT = 1,       /* cuEventSynchronize */
    FG_CUPTI_SYNC_STREAM_WAIT = 2, /* cuStreamWaitEvent */
    FG_CUPTI_SYNC_STREAM = 3,      /* cuStreamSynchronize */
    FG_CUPTI_SYNC_CONTEXT = 4,     /* cuCtxSynchronize(_v2) */
} fg_cupti_sync_type;

/* One op enqueued for execution (never for a capturing stream). */
struct fg_cupti_op {
    fg_cupti_op_kind kind;
    uint32_t correlation_id; /* from hooks->api_call() of this API call */
    uint32_t device_id;      /* device ordinal */
    uint32_t context_id;     /* cuCtxGetId */
    uint32_t stream_id;      /* cuStreamGetId of the stream the op runs on */
    uint32_t graph_id;       /* 0 unless replayed by cuGraphLaunch */
    uint64_t graph_node_id;  /* 0 unless replayed by cuGraphLaunch */
    /* kernels */
    const char *name; /* lives as long as the process; NULL for unnamed seam ops */
    unsigned grid[3], block[3];
    unsigned dynamic_smem;
    bool cooperative;
    /* copies and memsets */
    uint64_t bytes;
    fg_cupti_mem src_mem, dst_mem; /* copies */
    uint32_t value;                /* memsets */
    /* Timing.  resolved: start_ns/end_ns (CLOCK_MONOTONIC) are final.
     * Otherwise handle is an opaque reference to the op that CUPTI keeps
     * (hook returns true) and later hands to poll() or release(). */
    bool resolved;
    int64_t start_ns, end_ns;
    void *handle;
};

/* One synchronising call, reported when it returns (successfully). */
struct fg_cupti_sync {
    fg_cupti_sync_type type;
    uint32_t correlation_id;
    uint32_t context_id;
    uint32_t stream_id;        /* FG_CUPTI_NA unless stream sync / stream wait */
    uint32_t event_id;         /* FG_CUPTI_NA unless event sync / stream wait */
    int64_t enter_ns, exit_ns; /* host CLOCK_MONOTONIC */
};

/* One node cloned by a graph instantiation (CUPTI's CUpti_GraphData of
 * CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED).  The pointers are the CUDA
 * handles (CUcontext, CUgraph, CUgraphNode), opaque here. */
struct fg_cupti_clone {
    void *context;        /* current on the instantiating thread; NULL if none */
    void *graph;          /* the executable graph's internal graph: NULL */
    void *original_graph; /* the CUgraph instantiated */
    void *node;           /* the clone (a node of the executable graph) */
    void *original_node;  /* the source graph's node it was cloned from */
    int node_type;        /* a CUgraphNodeType value */
};

struct fg_cupti_hooks {
    unsigned abi; /* FG_CUPTI_ABI */
    /* A driver API call that enqueues work (launch, graph launch, copy,
     * memset) or synchronises begins on this thread: returns its new
     * correlation id.  CUPTI reads the thread's external correlation
     * stacks here. */
    uint32_t (*api_call)(void);
    /* An op was enqueued.  Returns true when CUPTI keeps op->handle (the
     * driver then leaves its reference to CUPTI); false otherwise. */
    bool (*op)(const struct fg_cupti_op *op);
    /* A synchronising call is about to return. */
    void (*sync)(const struct fg_cupti_sync *sync);
    /* A graph instantiation cloned a node: once per node, in node order, on
     * the instantiating thread, before the instantiation returns, WITHOUT
     * the driver lock (see the top).  May be NULL. */
    void (*node_cloned)(const struct fg_cupti_clone *clone);
};

struct fg_cupti_driver {
    unsigned abi; /* FG_CUPTI_ABI */
    /* For every handles[i] != NULL whose end is now known: store its
     * start/end (CLOCK_MONOTONIC), drop the reference, set handles[i] =
     * NULL.  Advances the scheduler first (resolvers are polled). */
    void (*poll)(void **handles, size_t n, int64_t *start_ns, int64_t *end_ns);
    /* Drop references CUPTI no longer wants (NULL entries are skipped). */
    void (*release)(void **handles, size_t n);
    /* The id CUPTI reports for a CUgraphNode (graphNodeId; original nodes
     * and clones alike), a CUgraph (graphId) or a CUgraphExec.  False for
     * anything that is not a live handle of that kind. */
    bool (*node_id)(const void *node, uint64_t *id);
    bool (*graph_id)(const void *graph, uint32_t *id);
    bool (*exec_id)(const void *exec, uint32_t *id);
};

/* Exported by libcuda.so.1 (default visibility).  hooks != NULL attaches
 * (replacing any earlier table), NULL detaches.  Returns the driver table,
 * or NULL when hooks->abi is not FG_CUPTI_ABI. */
typedef const struct fg_cupti_driver *(*fakegpu_cupti_attach_fn)(const struct fg_cupti_hooks *);
#define FAKEGPU_CUPTI_ATTACH "fakegpu_cupti_attach"

#endif
