/*
 * NCCL collectives, point-to-point ops and groups.
 *
 * Each outermost op call is one CT_REC_NCCL record: op, datatype, count,
 * bytes (nccl-tests' size, so the decoder's bandwidths match nccl-tests),
 * reduction, root/peer, stream, communicator hash, rank, size and a
 * sequence number that is the same for the same op on every rank:
 *   - collectives: the communicator's collective counter (NCCL's own
 *     seqNumber counts the same way);
 *   - Send/Recv: a counter per (communicator, peer, direction), so the k-th
 *     Send from A to B has the k-th Recv on B from A as its partner.
 * Ops between the outermost ncclGroupStart and ncclGroupEnd carry the
 * group's id: the correlation id of the API record written for that
 * outermost ncclGroupEnd, during which NCCL launches the fused kernel.
 *
 * GPU time per op, first available wins (the decoder joins them):
 *   1. our NCCL profiler plugin (shim/nccl_profiler.c) when NCCL loads it;
 *   2. CUPTI records of the ncclDevKernel_* launch NCCL makes inside the
 *      call (its cuLaunchKernelEx goes through our cuGetProcAddress layer
 *      and is recorded as an ordinary launch nested in the op's span);
 *   3. in event mode, a pair of events around the outermost call on the
 *      op's stream (around the outermost ncclGroupEnd on each member's
 *      stream, shared by the group's members).
 */
#include <string.h>

#include "shim/gpu.h"
#include "shim/nccl_int.h"

typedef ncclResult_t (*coll_fn)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                ncclComm_t, cudaStream_t);
typedef ncclResult_t (*rooted_coll_fn)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                       int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*bcast_fn)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*broadcast_fn)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t,
                                     cudaStream_t);
typedef ncclResult_t (*gather_fn)(const void *, void *, size_t, ncclDataType_t, ncclComm_t,
                                  cudaStream_t);
typedef ncclResult_t (*rooted_gather_fn)(const void *, void *, size_t, ncclDataType_t, int,
                                         ncclComm_t, cudaStream_t);
typedef ncclResult_t (*send_fn)(const void *, size_t, ncclDataType_t, int, ncclComm_t,
                                cudaStream_t);
typedef ncclResult_t (*recv_fn)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*group_fn)(void);

static const char *const op_api_name[CT_NCCL_OP_COUNT] = {
    [CT_NCCL_OP_ALLREDUCE] = "ncclAllReduce",
    [CT_NCCL_OP_BROADCAST] = "ncclBroadcast",
    [CT_NCCL_OP_REDUCE] = "ncclReduce",
    [CT_NCCL_OP_ALLGATHER] = "ncclAllGather",
    [CT_NCCL_OP_REDUCESCATTER] = "ncclReduceScatter",
    [CT_NCCL_OP_ALLTOALL] = "ncclAlltoAll",
    [CT_NCCL_OP_GATHER] = "ncclGather",
    [CT_NCCL_OP_SCATTER] = "ncclScatter",
    [CT_NCCL_OP_SEND] = "ncclSend",
    [CT_NCCL_OP_RECV] = "ncclRecv",
    [CT_NCCL_OP_BCAST] = "ncclBcast",
};
static _Atomic uint32_t op_name_ids[CT_NCCL_OP_COUNT];
static _Atomic uint32_t group_end_name;

static uint64_t dtype_size(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2: return 1;
    case ncclFloat16:
    case ncclBfloat16: return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64: return 8;
    default: return 0; /* invalid: NCCL rejects the call; we record 0 bytes */
    }
}

/* nccl-tests' message size of an op (its algbw divides this by the time). */
static uint64_t op_bytes(unsigned op, uint64_t count, uint64_t esize, int nranks)
{
    uint64_t b = count * esize;
    switch (op) {
    case CT_NCCL_OP_ALLGATHER:
    case CT_NCCL_OP_REDUCESCATTER:
    case CT_NCCL_OP_ALLTOALL:
    case CT_NCCL_OP_GATHER:
    case CT_NCCL_OP_SCATTER: return nranks > 0 ? b * (uint64_t)nranks : b;
    default: return b;
    }
}

/* The op's sequence number on its communicator (see the top). */
static uint64_t next_seq(struct ct_nccl_comm *cm, unsigned op, int peer)
{
    if (!cm)
        return 0;
    if (op != CT_NCCL_OP_SEND && op != CT_NCCL_OP_RECV)
        return atomic_fetch_add_explicit(&cm->coll_seq, 1, memory_order_relaxed);
    if (peer < 0 || peer >= cm->nranks || !cm->p2p_seq)
        return 0;
    return atomic_fetch_add_explicit(&cm->p2p_seq[(op == CT_NCCL_OP_RECV ? cm->nranks : 0) + peer],
                                     1, memory_order_relaxed);
}

int ct_nccl_op_enter(struct ct_nccl_opcall *c, unsigned op, uint64_t count, uint64_t dtype,
                     uint64_t esize, int redop, int root, int peer, struct ct_nccl_comm *cm,
                     cudaStream_t stream)
{
    struct ct_nccl_tls *t = ct_nccl_tls();
    c->rec = t->depth == 0 && !ct_tls_guard && ct_shim_recording();
    t->depth++;
    if (!c->rec) {
        /* Paused between capture windows, the op still takes its number:
         * ranks whose windows open a few ms apart (light mode, `cutrace
         * start` on each) then number the same op the same, and the
         * decoder matches it across them. */
        if (t->depth == 1 && !ct_tls_guard && atomic_load(&ct_shim_state) == CT_SHIM_PAUSED)
            next_seq(cm, op, peer);
        return 0;
    }
    ct_tls_guard = 1; /* our own bookkeeping below calls nothing recorded */
    c->op = op;
    c->count = count;
    c->dtype = dtype;
    c->esize = esize;
    c->redop = redop;
    c->root = root;
    c->peer = peer;
    c->stream = stream;
    c->corr = ct_next_corr();
    c->comm = cm;
    c->seq = next_seq(c->comm, op, peer);
    if (t->group_depth == 0) {
        t->npending = 0;
        t->overflow = 0;
    }
    struct ct_nccl_pending *p = ct_nccl_pending_slot(t);
    if (p)
        *p = (struct ct_nccl_pending){
            .corr = c->corr,
            .count = count,
            .peer = peer,
            .op = (uint8_t)op,
            .stream = (uint64_t)(uintptr_t)stream,
        };
    if (ct_cfg.stacks && ct_stack_wanted(1))
        ct_stack_capture(c->corr);
    c->gpu.start = 0;
    if (ct_gpu_mode == CT_GPU_EVENTS && t->group_depth == 0)
        ct_events_before((CUstream)stream, 0, &c->gpu);
    ct_tls_guard = 0;
    c->t0 = ct_clock_now();
    return 1;
}

void ct_nccl_op_leave(struct ct_nccl_opcall *c, int failed)
{
    struct ct_nccl_tls *t = ct_nccl_tls();
    t->depth--;
    if (!c->rec)
        return;
    uint64_t t1 = ct_clock_now();
    CT_ERRNO_SAVE;
    ct_tls_guard = 1;
    int dev = -1;
    uint64_t sid = ct_stream_id((CUstream)c->stream, 0, &dev);
    int nranks = c->comm ? c->comm->nranks : 0;
    uint64_t bytes = op_bytes(c->op, c->count, c->esize, nranks);
    uint64_t f[CT_NCCL_NFIELDS] = {0};
    f[CT_NCCL_START] = c->t0;
    f[CT_NCCL_END] = t1;
    f[CT_NCCL_OP] = c->op;
    f[CT_NCCL_COMM] = c->comm ? c->comm->hash : 0;
    f[CT_NCCL_SEQ] = c->seq;
    f[CT_NCCL_COUNT] = c->count;
    f[CT_NCCL_DTYPE] = (uint64_t)c->dtype;
    f[CT_NCCL_BYTES] = bytes;
    f[CT_NCCL_REDOP] = (uint64_t)(int64_t)c->redop;
    f[CT_NCCL_ROOT] = (uint64_t)(int64_t)c->root;
    f[CT_NCCL_PEER] = (uint64_t)(int64_t)c->peer;
    f[CT_NCCL_STREAM] = sid;
    f[CT_NCCL_GROUP] = t->group_depth > 0 ? t->group : 0;
    f[CT_NCCL_CORR] = c->corr;
    f[CT_NCCL_RANK] = (uint64_t)(int64_t)(c->comm ? c->comm->rank : -1);
    f[CT_NCCL_NRANKS] = (uint64_t)nranks;
    /* a failed call enqueued nothing: recorded (the job saw it) but with
     * the error in place of a group, so no GPU time is looked for */
    if (failed)
        f[CT_NCCL_GROUP] = 0;
    ct_emit(CT_REC_NCCL, 0, f, CT_NCCL_NFIELDS);
    if (c->gpu.start)
        ct_events_after(&c->gpu, (CUstream)c->stream, 0, c->corr, sid, dev, CT_GPU_NCCL,
                        ct_nccl_name_id(c->api, c->api_id), bytes, 0);
    ct_tls_guard = 0;
    CT_ERRNO_RESTORE;
}

uint64_t ct_nccl_take_pending(const char *func, uint64_t count, int peer)
{
    static const struct {
        const char *func;
        unsigned op, alt;
    } names[] = {
        {"AllReduce", CT_NCCL_OP_ALLREDUCE, 0},
        {"Broadcast", CT_NCCL_OP_BROADCAST, CT_NCCL_OP_BCAST},
        {"Reduce", CT_NCCL_OP_REDUCE, 0},
        {"AllGather", CT_NCCL_OP_ALLGATHER, 0},
        {"ReduceScatter", CT_NCCL_OP_REDUCESCATTER, 0},
        {"AllToAll", CT_NCCL_OP_ALLTOALL, 0},
        {"AlltoAll", CT_NCCL_OP_ALLTOALL, 0},
        {"Gather", CT_NCCL_OP_GATHER, 0},
        {"Scatter", CT_NCCL_OP_SCATTER, 0},
        {"Send", CT_NCCL_OP_SEND, 0},
        {"Recv", CT_NCCL_OP_RECV, 0},
    };
    if (!func)
        return 0;
    unsigned op = 0, alt = 0;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(func, names[i].func) == 0) {
            op = names[i].op;
            alt = names[i].alt;
            break;
        }
    struct ct_nccl_tls *t = ct_nccl_tls();
    if (!op || t->depth == 0)
        return 0; /* not inside one of our recorded calls on this thread */
    for (unsigned i = 0; i < t->npending; i++) {
        struct ct_nccl_pending *p = &t->pending[i];
        if (p->taken || (p->op != op && (!alt || p->op != alt)) || p->count != count)
            continue;
        if ((op == CT_NCCL_OP_SEND || op == CT_NCCL_OP_RECV) && p->peer != peer)
            continue;
        p->taken = 1;
        return p->corr;
    }
    return 0;
}

/* ------------------------------------------------------------ ops */

/* An NCCL op: its element size and API name from its op and datatype. */
static void op_enter(struct ct_nccl_opcall *c, unsigned op, uint64_t count, ncclDataType_t dtype,
                     int redop, int root, int peer, ncclComm_t comm, cudaStream_t stream)
{
    c->api = op_api_name[op];
    c->api_id = &op_name_ids[op];
    ct_nccl_op_enter(c, op, count, (uint64_t)dtype, dtype_size(dtype), redop, root, peer,
                     ct_nccl_comm_get(comm), stream);
}

#define OP_BODY(call)                                                                              \
    do {                                                                                           \
        struct ct_nccl_opcall c;                                                                   \
        op_enter(&c, OP_ARGS);                                                                     \
        ncclResult_t r = call;                                                                     \
        ct_nccl_op_leave(&c, r != ncclSuccess && r != ncclInProgress);                             \
        return r;                                                                                  \
    } while (0)

CT_EXPORT ncclResult_t ncclAllReduce(const void *sb, void *rb, size_t n, ncclDataType_t t,
                                     ncclRedOp_t op, ncclComm_t comm, cudaStream_t s)
{
    coll_fn real = CT_NCCL_REAL(coll_fn, CT_NS_ncclAllReduce);
    if (!real)
        return ncclSystemError;
#define OP_ARGS CT_NCCL_OP_ALLREDUCE, n, t, (int)op, -1, -1, comm, s
    OP_BODY(real(sb, rb, n, t, op, comm, s));
#undef OP_ARGS
}

CT_EXPORT ncclResult_t ncclReduceScatter(const void *sb, void *rb, size_t n, ncclDataType_t t,
                                         ncclRedOp_t op, ncclComm_t comm, cudaStream_t s)
{
    coll_fn real = CT_NCCL_REAL(coll_fn, CT_NS_ncclReduceScatter);
    if (!real)
        return ncclSystemError;
#define OP_ARGS CT_NCCL_OP_REDUCESCATTER, n, t, (int)op, -1, -1, comm, s
    OP_BODY(real(sb, rb, n, t, op, comm, s));
#undef OP_ARGS
}

CT_EXPORT ncclResult_t ncclReduce(const void *sb, void *rb, size_t n, ncclDataType_t t,
                                  ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t s)
{
    rooted_coll_fn real = CT_NCCL_REAL(rooted_coll_fn, CT_NS_ncclReduce);
    if (!real)
        return ncclSystemError;
#define OP_ARGS CT_NCCL_OP_REDUCE, n, t, (int)op, root, -1, comm, s
    OP_BODY(real(sb, rb, n, t, op, root, comm, s));
#undef OP_ARGS
}

CT_EXPORT ncclResult_t ncclBroadcast(const void *sb, void *rb, size_t n, ncclDataType_t t, int root,
                                     ncclComm_t comm, cudaStream_t s)
{
    broadcast_fn real = CT_NCCL_REAL(broadcast_fn, CT_NS_ncclBroadcast);
    if (!real)
        return ncclSystemError;
#define OP_ARGS CT_NCCL_OP_BROADCAST, n, t, -1, root, -1, comm, s
    OP_BODY(real(sb, rb, n, t, root, comm, s));
#undef OP_ARGS
}

CT_EXPORT ncclResult_t ncclBcast(void *b, size_t n, ncclDataType_t t, int root, ncclComm_t comm,
                                 cudaStream_t s)
{
    bcast_fn real = CT_NCCL_REAL(bcast_fn, CT_NS_ncclBcast);
    if (!real)
        return ncclSystemError;
#define OP_ARGS CT_NCCL_OP_BCAST, n, t, -1, root, -1, comm, s
    OP_BODY(real(b, n, t, root, comm, s));
#undef OP_ARGS
}

CT_EXPORT ncclResult_t ncclAllGather(const void *sb, void *rb, size_t n, ncclDataType_t t,
                                     ncclComm_t comm, cudaStream_t s)
{
    gather_fn real = CT_NCCL_REAL(gather_fn, CT_NS_ncclAllGather);
    if (!real)
        return ncclSystemError;
#define OP_ARGS CT_NCCL_OP_ALLGATHER, n, t, -1, -1, -1, comm, s
    OP_BODY(real(sb, rb, n, t, comm, s));
#undef OP_ARGS
}

CT_EXPORT ncclResult_t ncclAlltoAll(const void *sb, void *rb, size_t n, ncclDataType_t t,
                                    ncclComm_t comm, cudaStream_t s)
{
    gather_fn real = CT_NCCL_REAL(gather_fn, CT_NS_ncclAlltoAll);
    if (!real)
        return ncclSystemError;
#define OP_ARGS CT_NCCL_OP_ALLTOALL, n, t, -1, -1, -1, comm, s
    OP_BODY(real(sb, rb, n, t, comm, s));
#undef OP_ARGS
}

CT_EXPORT ncclResult_t ncclGather(const void *sb, void *rb, size_t n, ncclDataType_t t, int root,
                                  ncclComm_t comm, cudaStream_t s)
{
    rooted_gather_fn real = CT_NCCL_REAL(rooted_gather_fn, CT_NS_ncclGather);
    if (!real)
        return ncclSystemError;
#define OP_ARGS CT_NCCL_OP_GATHER, n, t, -1, root, -1, comm, s
    OP_BODY(real(sb, rb, n, t, root, comm, s));
#undef OP_ARGS
}

CT_EXPORT ncclResult_t ncclScatter(const void *sb, void *rb, size_t n, ncclDataType_t t, int root,
                                   ncclComm_t comm, cudaStream_t s)
{
    rooted_gather_fn real = CT_NCCL_REAL(rooted_gather_fn, CT_NS_ncclScatter);
    if (!real)
        return ncclSystemError;
#define OP_ARGS CT_NCCL_OP_SCATTER, n, t, -1, root, -1, comm, s
    OP_BODY(real(sb, rb, n, t, root, comm, s));
#undef OP_ARGS
}

CT_EXPORT ncclResult_t ncclSend(const void *b, size_t n, ncclDataType_t t, int peer,
                                ncclComm_t comm, cudaStream_t s)
{
    send_fn real = CT_NCCL_REAL(send_fn, CT_NS_ncclSend);
    if (!real)
        return ncclSystemError;
#define OP_ARGS CT_NCCL_OP_SEND, n, t, -1, -1, peer, comm, s
    OP_BODY(real(b, n, t, peer, comm, s));
#undef OP_ARGS
}

CT_EXPORT ncclResult_t ncclRecv(void *b, size_t n, ncclDataType_t t, int peer, ncclComm_t comm,
                                cudaStream_t s)
{
    recv_fn real = CT_NCCL_REAL(recv_fn, CT_NS_ncclRecv);
    if (!real)
        return ncclSystemError;
#define OP_ARGS CT_NCCL_OP_RECV, n, t, -1, -1, peer, comm, s
    OP_BODY(real(b, n, t, peer, comm, s));
#undef OP_ARGS
}

/* ------------------------------------------------------------ groups */

CT_EXPORT ncclResult_t ncclGroupStart(void)
{
    group_fn real = CT_NCCL_REAL(group_fn, CT_NS_ncclGroupStart);
    if (!real)
        return ncclSystemError;
    struct ct_nccl_tls *t = ct_nccl_tls();
    if (t->depth > 0 || ct_tls_guard)
        return real(); /* NCCL's own implicit group inside one of its calls */
    if (t->group_depth == 0) {
        t->group = ct_shim_recording() ? ct_next_corr() : 0;
        t->npending = 0;
        t->overflow = 0;
    }
    t->group_depth++;
    t->depth++;
    ncclResult_t r = real();
    t->depth--;
    if (r != ncclSuccess)
        t->group_depth--;
    return r;
}

/* Distinct streams of the group's members (event pairs are per stream). */
#define CT_NCCL_GROUP_STREAMS 8

CT_EXPORT ncclResult_t ncclGroupEnd(void)
{
    group_fn real = CT_NCCL_REAL(group_fn, CT_NS_ncclGroupEnd);
    if (!real)
        return ncclSystemError;
    struct ct_nccl_tls *t = ct_nccl_tls();
    if (t->depth > 0 || ct_tls_guard || t->group_depth == 0)
        return real();
    if (--t->group_depth > 0 || !t->group || !ct_shim_recording()) {
        t->depth++;
        ncclResult_t r = real();
        t->depth--;
        return r;
    }
    /* the outermost GroupEnd: NCCL launches the group's work here */
    CUstream streams[CT_NCCL_GROUP_STREAMS];
    struct ct_gpu_op gpu[CT_NCCL_GROUP_STREAMS];
    unsigned ns = 0;
    ct_tls_guard = 1;
    if (ct_gpu_mode == CT_GPU_EVENTS) {
        for (unsigned i = 0; i < t->npending; i++) {
            CUstream s = (CUstream)(uintptr_t)t->pending[i].stream;
            unsigned j = 0;
            while (j < ns && streams[j] != s)
                j++;
            if (j < ns || ns == CT_NCCL_GROUP_STREAMS)
                continue;
            streams[ns] = s;
            ct_events_before(s, 0, &gpu[ns]);
            ns++;
        }
    }
    ct_tls_guard = 0;
    uint64_t t0 = ct_clock_now();
    t->depth++;
    ncclResult_t r = real();
    t->depth--;
    CT_ERRNO_SAVE;
    ct_tls_guard = 1;
    uint64_t group = t->group;
    ct_nccl_api_record("ncclGroupEnd", group, t0, (int)r, 0);
    for (unsigned i = 0; i < ns; i++) {
        if (!gpu[i].start)
            continue;
        int dev = -1;
        uint64_t sid = ct_stream_id(streams[i], 0, &dev);
        ct_events_after(&gpu[i], streams[i], 0, group, sid, dev, CT_GPU_NCCL,
                        ct_nccl_name_id("ncclGroupEnd", &group_end_name), 0, 0);
    }
    t->group = 0;
    t->npending = 0;
    ct_tls_guard = 0;
    CT_ERRNO_RESTORE;
    return r;
}
