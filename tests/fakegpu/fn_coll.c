/*
 * fn_coll.c - collective and point-to-point calls, groups, the kernel
 * launch of each group and the resolver that decides when it ends.
 *
 * Every call validates its arguments, opens an implicit group when none is
 * open (calling ncclGroupStart/ncclGroupEnd through the PLT, as real NCCL
 * calls its own API, so an interposer sees the nested calls), and appends
 * an op to the calling thread's group.  The outermost ncclGroupEnd launches
 * one kernel per stream holding that stream's ops, through cuLaunchKernelEx
 * (obtained from cuGetProcAddress_v2), with kernelParams[0] carrying the
 * launch's token (fg_nccl_hooks.h).  The host never blocks here.
 *
 * Timing (README.md, "Fake NCCL"): the driver calls fn_resolve with the
 * kernel's start once it is known.  Each op's start is published in the
 * communicator's shared segment; an op ends at the latest start among its
 * participants plus its latency and transfer time (fn_links.c); the kernel
 * ends when its last op has.  fn_resolve runs under the driver's lock: it only reads and writes
 * memory and never waits.
 */
#include "fn_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FN_TOKEN_BUCKETS 1024
#define FN_BLOCK_THREADS 512

/* The calling thread's group: depth and ops appended since the outermost
 * ncclGroupStart. */
static __thread struct {
    int depth;
    struct fn_op *ops;
    size_t n, cap;
} fn_grp;

static struct fn_launch *fn_tokens[FN_TOKEN_BUCKETS]; /* fn_lock */
static uint64_t fn_next_token = 1;                    /* fn_lock */

/* ---------------------------------------------------------------- tables */

static const struct {
    const char *nccl, *kernel;
    unsigned size;
} fn_dtypes[ncclNumTypes] = {
    [ncclInt8] = {"ncclInt8", "i8", 1},
    [ncclUint8] = {"ncclUint8", "u8", 1},
    [ncclInt32] = {"ncclInt32", "i32", 4},
    [ncclUint32] = {"ncclUint32", "u32", 4},
    [ncclInt64] = {"ncclInt64", "i64", 8},
    [ncclUint64] = {"ncclUint64", "u64", 8},
    [ncclFloat16] = {"ncclFloat16", "f16", 2},
    [ncclFloat32] = {"ncclFloat32", "f32", 4},
    [ncclFloat64] = {"ncclFloat64", "f64", 8},
    [ncclBfloat16] = {"ncclBfloat16", "bf16", 2},
    [ncclFloat8e4m3] = {"ncclFloat8e4m3", "f8e4m3", 1},
    [ncclFloat8e5m2] = {"ncclFloat8e5m2", "f8e5m2", 1},
};

static const char *const fn_redops[ncclNumOps] = {"Sum", "Prod", "Max", "Min", "Avg"};

static const char *const fn_funcs[] = {
    [FN_BROADCAST] = "Broadcast", [FN_REDUCE] = "Reduce",
    [FN_ALLGATHER] = "AllGather", [FN_REDUCESCATTER] = "ReduceScatter",
    [FN_ALLREDUCE] = "AllReduce", [FN_ALLTOALL] = "AlltoAll",
    [FN_GATHER] = "Gather",       [FN_SCATTER] = "Scatter",
    [FN_SEND] = "Send",           [FN_RECV] = "Recv",
};

const char *fn_func_name(fn_func f)
{
    return fn_funcs[f];
}

const char *fn_dtype_name(ncclDataType_t t)
{
    return fn_dtypes[t].nccl;
}

unsigned fn_dtype_bytes(ncclDataType_t t)
{
    return fn_dtypes[t].size;
}

static bool fn_has_redop(fn_func f)
{
    return f == FN_ALLREDUCE || f == FN_REDUCE || f == FN_REDUCESCATTER;
}

static bool fn_has_root(fn_func f)
{
    return f == FN_BROADCAST || f == FN_REDUCE || f == FN_GATHER || f == FN_SCATTER;
}

/* ncclDevKernel_<Func>_<RedOp>_<type>_RING_LL for reductions,
 * ncclDevKernel_<Func>_RING_LL for Broadcast and AllGather, and
 * ncclDevKernel_SendRecv for what NCCL builds from p2p (Send, Recv,
 * AlltoAll, Gather, Scatter). */
static void fn_kernel_name(const struct fn_op *op, char *buf, size_t n)
{
    if (fn_has_redop(op->func))
        snprintf(buf, n, "ncclDevKernel_%s_%s_%s_RING_LL", fn_funcs[op->func], fn_redops[op->redop],
                 fn_dtypes[op->dtype].kernel);
    else if (op->func == FN_BROADCAST || op->func == FN_ALLGATHER)
        snprintf(buf, n, "ncclDevKernel_%s_RING_LL", fn_funcs[op->func]);
    else
        snprintf(buf, n, "ncclDevKernel_SendRecv");
}

/* ----------------------------------------------------------- token table */

static struct fn_launch **fn_token_slot(uint64_t token)
{
    struct fn_launch **pp = &fn_tokens[token % FN_TOKEN_BUCKETS];
    while (*pp && (*pp)->token != token)
        pp = &(*pp)->hnext;
    return pp;
}

void fn_launch_free_locked(struct fn_launch *l)
{
    struct fn_launch **pp = fn_token_slot(l->token);
    if (*pp)
        *pp = l->hnext;
    for (size_t i = 0; i < l->nops; i++)
        l->ops[i].comm->inflight--;
    free(l->ops);
    free(l);
}

/* -------------------------------------------------------------- resolver */

static void fn_publish_locked(const struct fn_launch *l, const struct fn_op *op)
{
    struct ncclComm *c = op->comm;
    if (op->func == FN_SEND)
        fn_shm_p2p_publish(c->shm, c->rank, op->peer, true, op->seq, l->start_ns);
    else if (op->func == FN_RECV)
        fn_shm_p2p_publish(c->shm, op->peer, c->rank, false, op->seq, l->start_ns);
    else
        fn_shm_coll_publish(c->shm, c->rank, op->seq, l->start_ns);
}

static bool fn_try_end_locked(const struct fn_launch *l, struct fn_op *op)
{
    if (op->end_known)
        return true;
    struct ncclComm *c = op->comm;
    int64_t latest = l->start_ns, st;
    if (__atomic_load_n(&c->aborted, __ATOMIC_ACQUIRE)) {
        op->end_ns = l->start_ns; /* an aborted communicator's work ends at once */
        op->end_known = true;
        return true;
    }
    if (op->func == FN_SEND || op->func == FN_RECV) {
        bool send = op->func == FN_SEND;
        if (!fn_shm_p2p_start(c->shm, send ? c->rank : op->peer, send ? op->peer : c->rank, !send,
                              op->seq, &st))
            return false;
        latest = st > latest ? st : latest;
    } else {
        for (int r = 0; r < c->nranks; r++) {
            if (r == c->rank)
                continue;
            if (!fn_shm_coll_start(c->shm, r, op->seq, &st))
                return false;
            latest = st > latest ? st : latest;
        }
    }
    op->end_ns = latest + op->xfer_ns;
    op->end_known = true;
    return true;
}

static bool fn_resolve(uint64_t token, int64_t start_ns, int64_t *end_ns)
{
    pthread_mutex_lock(&fn_lock);
    struct fn_launch *l = *fn_token_slot(token);
    if (!l || l->resolved) { /* a graph replay of a finished launch: no time */
        pthread_mutex_unlock(&fn_lock);
        *end_ns = start_ns;
        return true;
    }
    bool news = false;
    if (!l->start_known) {
        l->start_ns = start_ns;
        l->start_known = true;
        for (size_t i = 0; i < l->nops; i++)
            fn_publish_locked(l, &l->ops[i]);
        news = true;
    }
    bool all = true;
    int64_t end = l->start_ns;
    for (size_t i = 0; i < l->nops; i++) {
        bool known = l->ops[i].end_known;
        if (!fn_try_end_locked(l, &l->ops[i]))
            all = false;
        else if (l->ops[i].end_ns > end)
            end = l->ops[i].end_ns;
        news |= !known && l->ops[i].end_known;
    }
    if (all) {
        l->end_ns = end;
        l->resolved = true;
        *end_ns = end;
    }
    if (all && !l->profiled)
        fn_launch_free_locked(l);
    else if (news && l->profiled)
        fn_prof_wake_locked();
    pthread_mutex_unlock(&fn_lock);
    return all;
}

const struct fg_nccl_hooks fn_hooks = {.abi = FG_NCCL_ABI, .resolve = fn_resolve};

bool fn_comm_drain(struct ncclComm *c)
{
    int64_t deadline =
        fn_now() + (int64_t)(fn_env_double("FAKEGPU_NCCL_TIMEOUT_S", 60, 0.001, 1e6) * 1e9);
    for (;;) {
        pthread_mutex_lock(&fn_lock);
        int n = c->inflight;
        pthread_mutex_unlock(&fn_lock);
        if (n == 0)
            return true;
        if (fn_now() > deadline)
            return false;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

/* ------------------------------------------------------------- launching */

static struct {
    CUmodule mod;
    struct {
        char name[96];
        CUfunction f;
    } fns[64];
    size_t nfns;
} fn_kernels; /* fn_lock */

static CUresult fn_function(const char *name, CUfunction *f)
{
    pthread_mutex_lock(&fn_lock);
    for (size_t i = 0; i < fn_kernels.nfns; i++) {
        if (!strcmp(fn_kernels.fns[i].name, name)) {
            *f = fn_kernels.fns[i].f;
            pthread_mutex_unlock(&fn_lock);
            return CUDA_SUCCESS;
        }
    }
    CUmodule mod = fn_kernels.mod;
    pthread_mutex_unlock(&fn_lock);
    CUresult rc = CUDA_SUCCESS;
    if (!mod)
        rc = fn_cu.module_load_data(&mod, "fake NCCL device code");
    if (rc == CUDA_SUCCESS)
        rc = fn_cu.module_get_function(f, mod, name);
    if (rc != CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&fn_lock);
    fn_kernels.mod = mod;
    size_t cap = sizeof fn_kernels.fns / sizeof fn_kernels.fns[0];
    if (fn_kernels.nfns < cap && strlen(name) < sizeof fn_kernels.fns[0].name) {
        snprintf(fn_kernels.fns[fn_kernels.nfns].name, sizeof fn_kernels.fns[0].name, "%s", name);
        fn_kernels.fns[fn_kernels.nfns++].f = *f;
    }
    pthread_mutex_unlock(&fn_lock);
    return CUDA_SUCCESS;
}

uint64_t fn_token_register_locked(struct fn_launch *l)
{
    l->token = fn_next_token++;
    *fn_token_slot(l->token) = l;
    return l->token;
}

void fn_launch_finish_now(struct fn_launch *l)
{
    pthread_mutex_lock(&fn_lock);
    if (!l->token)
        fn_token_register_locked(l);
    l->start_ns = l->end_ns = fn_now();
    for (size_t i = 0; i < l->nops; i++) {
        l->ops[i].end_ns = l->start_ns;
        l->ops[i].end_known = true;
        l->ops[i].plan.ksteps = 0; /* no transfer: no proxy steps */
    }
    l->start_known = l->resolved = true;
    if (l->profiled)
        fn_prof_wake_locked();
    else
        fn_launch_free_locked(l);
    pthread_mutex_unlock(&fn_lock);
}

static ncclResult_t fn_launch(struct fn_launch *l)
{
    if (l->ops[0].ce)
        return fn_ce_launch(l);
    struct ncclComm *c = l->ops[0].comm;
    CUstream stream = l->ops[0].stream;
    char name[96];
    fn_kernel_name(&l->ops[0], name, sizeof name);
    for (size_t i = 0; i < l->nops; i++)
        l->profiled |=
            l->ops[i].h_op || l->ops[i].pg ||
            (l->ops[i].comm->prof_ctx && (l->ops[i].comm->prof_mask & fnProfileKernelCh));
    CUresult cres = fn_cu.ctx_push(c->ctx);
    bool pushed = cres == CUDA_SUCCESS;
    CUfunction f = NULL;
    if (cres == CUDA_SUCCESS)
        cres = fn_function(name, &f);
    CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
    if (cres == CUDA_SUCCESS && fn_cu.stream_is_capturing)
        cres = fn_cu.stream_is_capturing(stream, &cap);
    struct fg_nccl_launch arg = {.magic = FG_NCCL_LAUNCH_MAGIC};
    pthread_mutex_lock(&fn_lock);
    if (cap == CU_STREAM_CAPTURE_STATUS_NONE)
        arg.token = fn_token_register_locked(l);
    for (size_t i = 0; i < l->nops; i++)
        l->ops[i].comm->inflight++;
    pthread_mutex_unlock(&fn_lock);
    if (l->profiled)
        fn_prof_track(l);
    void *params[1] = {&arg};
    CUlaunchConfig cfg = {.gridDimX = (unsigned)fn_prof_channels,
                          .gridDimY = 1,
                          .gridDimZ = 1,
                          .blockDimX = FN_BLOCK_THREADS,
                          .blockDimY = 1,
                          .blockDimZ = 1,
                          .hStream = stream};
    void *kl = fn_prof_launch_begin(c, stream);
    if (cres == CUDA_SUCCESS)
        cres = fn_cu.launch_kernel_ex(&cfg, f, params, NULL);
    fn_prof_launch_end(kl);
    CUcontext dummy;
    if (pushed)
        fn_cu.ctx_pop(&dummy);
    if (cres == CUDA_SUCCESS && arg.token)
        return ncclSuccess; /* from here on l belongs to the resolver/proxy */
    /* Not launched, or captured (replays are plain kernels): finish now. */
    fn_launch_finish_now(l);
    if (cres != CUDA_SUCCESS) {
        fn_set_error("fake NCCL: kernel launch failed (CUresult %d)", (int)cres);
        return ncclUnhandledCudaError;
    }
    return ncclSuccess;
}

/* Whether op b goes into the launch that op a starts: the kernel of a's
 * stream, unless either runs on copy engines (one launch each, no
 * kernel). */
static bool fn_same_launch(const struct fn_op *a, const struct fn_op *b)
{
    return a == b || (!a->ce && !b->ce && a->stream == b->stream);
}

/* The outermost ncclGroupEnd: one launch per stream, in call order (and
 * one per copy-engine op). */
static ncclResult_t fn_group_flush(void)
{
    struct fn_op *ops = fn_grp.ops;
    size_t n = fn_grp.n;
    fn_grp.ops = NULL;
    fn_grp.n = fn_grp.cap = 0;
    fn_prof_group_end_begin();
    fn_prof_group_ops(ops, n);
    ncclResult_t rc = ncclSuccess;
    bool *taken = calloc(n ? n : 1, sizeof *taken);
    for (size_t i = 0; taken && i < n; i++) {
        if (taken[i])
            continue;
        struct fn_launch *l = calloc(1, sizeof *l);
        size_t m = 0;
        for (size_t j = i; j < n; j++)
            m += fn_same_launch(&ops[i], &ops[j]);
        if (l)
            l->ops = calloc(m, sizeof *l->ops);
        if (!l || !l->ops) {
            free(l);
            rc = ncclSystemError;
            break;
        }
        for (size_t j = i; j < n; j++) {
            if (fn_same_launch(&ops[i], &ops[j])) {
                l->ops[l->nops++] = ops[j];
                taken[j] = true;
            }
        }
        ncclResult_t r = fn_launch(l);
        if (rc == ncclSuccess)
            rc = r;
    }
    if (!taken)
        rc = ncclSystemError;
    free(taken);
    free(ops);
    fn_prof_group_end_done();
    return rc;
}

FN_API ncclResult_t ncclGroupStart(void)
{
    fn_grp.depth++;
    return ncclSuccess;
}

FN_API ncclResult_t ncclGroupEnd(void)
{
    if (fn_grp.depth <= 0) {
        fn_set_error("fake NCCL: ncclGroupEnd without ncclGroupStart");
        return ncclInvalidUsage;
    }
    if (--fn_grp.depth > 0)
        return ncclSuccess;
    return fn_group_flush();
}

/* ----------------------------------------------------------------- calls */

static ncclResult_t fn_invalid(const char *what, const struct fn_op *op)
{
    fn_set_error("fake NCCL: %s: invalid %s", fn_funcs[op->func], what);
    return ncclInvalidArgument;
}

static ncclResult_t fn_check(const struct fn_op *op)
{
    struct ncclComm *c = op->comm;
    if (!fn_comm_valid(c))
        return fn_invalid("communicator", op);
    if (__atomic_load_n(&c->aborted, __ATOMIC_ACQUIRE)) {
        fn_set_error("fake NCCL: %s on an aborted communicator", fn_funcs[op->func]);
        return ncclInvalidUsage;
    }
    if ((int)op->dtype < 0 || (int)op->dtype >= ncclNumTypes)
        return fn_invalid("datatype", op);
    if (fn_has_redop(op->func) && ((int)op->redop < 0 || (int)op->redop >= ncclNumOps))
        return fn_invalid("reduction operation", op);
    if (fn_has_root(op->func) && (op->root < 0 || op->root >= c->nranks))
        return fn_invalid("root", op);
    if ((op->func == FN_SEND || op->func == FN_RECV) && (op->peer < 0 || op->peer >= c->nranks))
        return fn_invalid("peer", op);
    if (op->count == 0)
        return ncclSuccess;
    bool root = op->root == c->rank;
    bool reads = op->func != FN_RECV && !(op->func == FN_BROADCAST && !root) &&
                 !(op->func == FN_SCATTER && !root);
    bool writes = op->func != FN_SEND && !(op->func == FN_REDUCE && !root) &&
                  !(op->func == FN_GATHER && !root);
    if (reads && !op->sendbuff)
        return fn_invalid("send buffer (NULL)", op);
    if (writes && !op->recvbuff)
        return fn_invalid("receive buffer (NULL)", op);
    return ncclSuccess;
}

static ncclResult_t fn_call(struct fn_op op)
{
    ncclResult_t rc = fn_check(&op);
    if (rc != ncclSuccess)
        return rc;
    bool bad = false;
    op.ce = fn_ce_wanted(op.func, &bad);
    if (bad)
        return ncclInvalidArgument;
    bool implicit = fn_grp.depth == 0;
    if (implicit && (rc = ncclGroupStart()) != ncclSuccess) /* through the PLT, on purpose */
        return rc;
    struct ncclComm *c = op.comm;
    if (op.func == FN_SEND)
        op.seq = c->send_seq[op.peer]++;
    else if (op.func == FN_RECV)
        op.seq = c->recv_seq[op.peer]++;
    else
        op.seq = c->coll_seq++;
    fn_plan_op(&op);
    if (op.ce)
        op.plan.ksteps = 0; /* copy engines over NVLink: no proxy, no steps */
    fn_prof_api_call_begin(&op, fn_grp.depth);
    if (fn_grp.n == fn_grp.cap) {
        size_t cap = fn_grp.cap ? 2 * fn_grp.cap : 8;
        struct fn_op *p = realloc(fn_grp.ops, cap * sizeof *p);
        if (!p) {
            fn_prof_api_call_end();
            if (implicit)
                ncclGroupEnd();
            return ncclSystemError;
        }
        fn_grp.ops = p;
        fn_grp.cap = cap;
    }
    fn_grp.ops[fn_grp.n++] = op;
    fn_prof_api_call_end();
    return implicit ? ncclGroupEnd() : ncclSuccess;
}

FN_API ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                                  ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                  cudaStream_t stream)
{
    return fn_call((struct fn_op){.comm = comm,
                                  .func = FN_ALLREDUCE,
                                  .dtype = datatype,
                                  .redop = op,
                                  .sendbuff = sendbuff,
                                  .recvbuff = recvbuff,
                                  .count = count,
                                  .root = -1,
                                  .peer = -1,
                                  .stream = (CUstream)stream});
}

FN_API ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                                  ncclDataType_t datatype, int root, ncclComm_t comm,
                                  cudaStream_t stream)
{
    return fn_call((struct fn_op){.comm = comm,
                                  .func = FN_BROADCAST,
                                  .dtype = datatype,
                                  .sendbuff = sendbuff,
                                  .recvbuff = recvbuff,
                                  .count = count,
                                  .root = root,
                                  .peer = -1,
                                  .stream = (CUstream)stream});
}

FN_API ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root,
                              ncclComm_t comm, cudaStream_t stream)
{
    return ncclBroadcast(buff, buff, count, datatype, root, comm, stream); /* through the PLT */
}

FN_API ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
                               ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                               cudaStream_t stream)
{
    return fn_call((struct fn_op){.comm = comm,
                                  .func = FN_REDUCE,
                                  .dtype = datatype,
                                  .redop = op,
                                  .sendbuff = sendbuff,
                                  .recvbuff = recvbuff,
                                  .count = count,
                                  .root = root,
                                  .peer = -1,
                                  .stream = (CUstream)stream});
}

FN_API ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                                  ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    return fn_call((struct fn_op){.comm = comm,
                                  .func = FN_ALLGATHER,
                                  .dtype = datatype,
                                  .sendbuff = sendbuff,
                                  .recvbuff = recvbuff,
                                  .count = sendcount,
                                  .root = -1,
                                  .peer = -1,
                                  .stream = (CUstream)stream});
}

FN_API ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                      ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                      cudaStream_t stream)
{
    return fn_call((struct fn_op){.comm = comm,
                                  .func = FN_REDUCESCATTER,
                                  .dtype = datatype,
                                  .redop = op,
                                  .sendbuff = sendbuff,
                                  .recvbuff = recvbuff,
                                  .count = recvcount,
                                  .root = -1,
                                  .peer = -1,
                                  .stream = (CUstream)stream});
}

FN_API ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
                                 ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    return fn_call((struct fn_op){.comm = comm,
                                  .func = FN_ALLTOALL,
                                  .dtype = datatype,
                                  .sendbuff = sendbuff,
                                  .recvbuff = recvbuff,
                                  .count = count,
                                  .root = -1,
                                  .peer = -1,
                                  .stream = (CUstream)stream});
}

FN_API ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count,
                               ncclDataType_t datatype, int root, ncclComm_t comm,
                               cudaStream_t stream)
{
    return fn_call((struct fn_op){.comm = comm,
                                  .func = FN_GATHER,
                                  .dtype = datatype,
                                  .sendbuff = sendbuff,
                                  .recvbuff = recvbuff,
                                  .count = count,
                                  .root = root,
                                  .peer = -1,
                                  .stream = (CUstream)stream});
}

FN_API ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count,
                                ncclDataType_t datatype, int root, ncclComm_t comm,
                                cudaStream_t stream)
{
    return fn_call((struct fn_op){.comm = comm,
                                  .func = FN_SCATTER,
                                  .dtype = datatype,
                                  .sendbuff = sendbuff,
                                  .recvbuff = recvbuff,
                                  .count = count,
                                  .root = root,
                                  .peer = -1,
                                  .stream = (CUstream)stream});
}

FN_API ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                             ncclComm_t comm, cudaStream_t stream)
{
    return fn_call((struct fn_op){.comm = comm,
                                  .func = FN_SEND,
                                  .dtype = datatype,
                                  .sendbuff = sendbuff,
                                  .count = count,
                                  .root = -1,
                                  .peer = peer,
                                  .stream = (CUstream)stream});
}

FN_API ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                             ncclComm_t comm, cudaStream_t stream)
{
    return fn_call((struct fn_op){.comm = comm,
                                  .func = FN_RECV,
                                  .dtype = datatype,
                                  .recvbuff = recvbuff,
                                  .count = count,
                                  .root = -1,
                                  .peer = peer,
                                  .stream = (CUstream)stream});
}

FN_ALIAS(ncclGroupStart);
FN_ALIAS(ncclGroupEnd);
FN_ALIAS(ncclAllReduce);
FN_ALIAS(ncclBroadcast);
FN_ALIAS(ncclBcast);
FN_ALIAS(ncclReduce);
FN_ALIAS(ncclAllGather);
FN_ALIAS(ncclReduceScatter);
FN_ALIAS(ncclAlltoAll);
FN_ALIAS(ncclGather);
FN_ALIAS(ncclScatter);
FN_ALIAS(ncclSend);
FN_ALIAS(ncclRecv);
