/*
 * Internal interface of the NCCL wrappers (shim/nccl*.c): the wrap table,
 * the communicator registry and the per-thread state that ties NCCL's
 * profiler-plugin events back to the calls we recorded.
 *
 * Shape of an NCCL wrapper: unlike the CUDA wrappers it does not hold
 * ct_tls_guard across the real call, because the CUDA work NCCL does inside
 * (its kernel launch, event records) belongs on the timeline; a per-thread
 * NCCL depth instead makes NCCL's calls to its own API (ncclBcast calls
 * ncclBroadcast, a collective opens an implicit group) pass through, so only
 * the outermost call is recorded.
 */
#ifndef CT_NCCL_INT_H
#define CT_NCCL_INT_H

#include <nccl.h>
#include <stdatomic.h>
#include <stdint.h>

#include "shim/gpu.h"
#include "shim/nccl_table.h"
#include "shim/shim.h"

/* A communicator as the wrappers see it. */
struct ct_nccl_comm {
    _Atomic uintptr_t handle;
    uint64_t hash; /* identical on every rank: derived from the unique id */
    int rank, nranks, device;
    _Atomic uint64_t coll_seq; /* collectives issued on it */
    _Atomic uint32_t *p2p_seq; /* [2 * nranks]: sends then receives, per peer */
    _Atomic uint32_t splits;   /* ncclCommSplit/Shrink calls, for the child's hash */
};

/* The registered communicator of a handle, or NULL (created before cutrace
 * could see it, or the registry is full). Lock-free. */
struct ct_nccl_comm *ct_nccl_comm_get(ncclComm_t handle);
/* Registers (or re-registers: handles are reused) a communicator and writes
 * its metadata to the trace. Not on the hot path. */
struct ct_nccl_comm *ct_nccl_comm_add(ncclComm_t handle, uint64_t hash, int rank, int nranks,
                                      int device);

/* 64-bit hashes (FNV-1a then a final mix): of a unique id, and of a parent
 * hash with the integers that make a child communicator. */
uint64_t ct_nccl_hash_bytes(const void *p, size_t n, uint64_t seed);
uint64_t ct_nccl_hash_mix(uint64_t h, uint64_t v);

/* An op of the current outermost call or group, kept so the profiler plugin
 * (called on this thread inside the outermost ncclGroupEnd) can find the
 * correlation id of the op it reports. */
struct ct_nccl_pending {
    uint64_t corr;
    uint64_t count;
    int32_t peer; /* -1 for collectives */
    uint8_t op;   /* enum ct_nccl_op */
    uint8_t taken;
    uint64_t stream; /* CUstream, for event pairs around the group */
};

#define CT_NCCL_PENDING 64

struct ct_nccl_tls {
    int depth;       /* NCCL calls in progress on this thread (ours included) */
    int group_depth; /* user-level ncclGroupStart nesting */
    uint64_t group;  /* correlation id of the outermost group (its GroupEnd record) */
    unsigned npending;
    unsigned overflow;               /* ops of this group beyond CT_NCCL_PENDING */
    struct ct_nccl_pending *pending; /* [CT_NCCL_PENDING], NULL if none could be had */
    uint64_t init_hash;              /* hash of the comm whose creation call runs here */
};

/* The calling thread's state. The pending list lives in a static pool, one
 * slot per thread that calls NCCL, not in TLS: the shim's thread-local data
 * must fit glibc's static TLS surplus for the driver to dlopen it
 * (CUDA_INJECTION64_PATH). */
struct ct_nccl_tls *ct_nccl_tls(void);
/* Room for one more pending op of this thread, or NULL (counted). */
struct ct_nccl_pending *ct_nccl_pending_slot(struct ct_nccl_tls *t);

/* Profiler plugin (shim/nccl_profiler.c): the op matching a Coll or P2p
 * event started on this thread, 0 if none. `name` is NCCL's func string. */
uint64_t ct_nccl_take_pending(const char *func, uint64_t count, int peer);

/* An op call being recorded (shim/nccl.c; NVSHMEM's collectives,
 * shim/nvshmem.c, are recorded the same way). `api` and `api_id` name the
 * call for an event pair around it; set them before ct_nccl_op_enter. */
struct ct_nccl_opcall {
    int rec;
    unsigned op;
    uint64_t corr, t0, count, dtype, esize;
    int redop, root, peer;
    void *stream; /* cudaStream_t */
    struct ct_nccl_comm *comm;
    uint64_t seq;
    const char *api;
    _Atomic uint32_t *api_id;
    struct ct_gpu_op gpu;
};

/* The outermost op call of this thread (depth 0, not inside our own
 * bookkeeping, recording) starts: it takes its sequence number, a
 * correlation id, a pending slot (for the profiler plugin) and, in event
 * mode, the event before it. Returns whether it is recorded (c->rec).
 * esize: bytes per element (count * esize, times the ranks for the
 * gathering ops, is the record's bytes, nccl-tests' size). */
int ct_nccl_op_enter(struct ct_nccl_opcall *c, unsigned op, uint64_t count, uint64_t dtype,
                     uint64_t esize, int redop, int root, int peer, struct ct_nccl_comm *cm,
                     cudaStream_t stream);
/* The call returned (failed: it enqueued nothing): writes its CT_REC_NCCL
 * record; errno is preserved. */
void ct_nccl_op_leave(struct ct_nccl_opcall *c, int failed);

/* Writes an API record for an NCCL call that is not an op (groups,
 * communicator creation and teardown). */
void ct_nccl_api_record(const char *name, uint64_t corr, uint64_t t0, int result, uint64_t stream);

/* Names of NCCL's own entry points, interned once. */
uint32_t ct_nccl_name_id(const char *name, _Atomic uint32_t *cache);

#endif
