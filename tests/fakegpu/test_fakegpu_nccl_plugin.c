/*
 * test_fakegpu_nccl_plugin.c - a profiler plugin for the fake NCCL's tests
 * (libfgtestprof.so).  Exports ncclProfiler_v6, _v5, _v4 and _v3 and records
 * every call (test_fakegpu_nccl_plugin.h).  FGTP_MASK (decimal) is the
 * eActivationMask it returns; default: everything the fake emits.
 */
#include "fn_profiler_abi.h"
#include "test_fakegpu_nccl_plugin.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FGTP_MAX 4096

static pthread_mutex_t fgtp_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fgtp_rec fgtp_recs[FGTP_MAX];
static size_t fgtp_n;
static uint64_t fgtp_next_id = 1, fgtp_next_ctx = 1;

const struct fgtp_rec *fgtp_records(size_t *n)
{
    pthread_mutex_lock(&fgtp_lock);
    *n = fgtp_n;
    pthread_mutex_unlock(&fgtp_lock);
    return fgtp_recs;
}

void fgtp_reset(void)
{
    pthread_mutex_lock(&fgtp_lock);
    fgtp_n = 0;
    pthread_mutex_unlock(&fgtp_lock);
}

static int64_t fgtp_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Appends r (filled by the caller) and returns its id for START. */
static uint64_t fgtp_add(struct fgtp_rec *r)
{
    r->host_ns = fgtp_clock(CLOCK_MONOTONIC);
    r->offset_ns = fgtp_clock(CLOCK_REALTIME) - r->host_ns;
    pthread_mutex_lock(&fgtp_lock);
    if (r->call == FGTP_START)
        r->id = fgtp_next_id++;
    if (fgtp_n < FGTP_MAX)
        fgtp_recs[fgtp_n++] = *r;
    pthread_mutex_unlock(&fgtp_lock);
    return r->id;
}

static void fgtp_str(char *dst, size_t n, const char *s)
{
    if (s) {
        strncpy(dst, s, n - 1);
        dst[n - 1] = 0;
    }
}

static int fgtp_mask(void)
{
    const char *m = getenv("FGTP_MASK");
    return m ? atoi(m) : 0x1fff; /* up to CeColl (v6) */
}

static void *fgtp_new_ctx(void)
{
    pthread_mutex_lock(&fgtp_lock);
    uint64_t c = fgtp_next_ctx++;
    pthread_mutex_unlock(&fgtp_lock);
    return (void *)(uintptr_t)c;
}

static ncclResult_t fgtp_init_common(int version, void **ctx, int *mask, const char *name,
                                     uint64_t hash, int nranks, int rank)
{
    *ctx = fgtp_new_ctx();
    *mask = fgtp_mask();
    struct fgtp_rec r = {.call = FGTP_INIT,
                         .version = version,
                         .hash = hash,
                         .nranks = nranks,
                         .rank = rank,
                         .ctx = (uint64_t)(uintptr_t)*ctx};
    fgtp_str(r.name, sizeof r.name, name);
    fgtp_add(&r);
    return ncclSuccess;
}

static ncclResult_t fgtp_stop(void *h)
{
    struct fgtp_rec r = {.call = FGTP_STOP, .id = (uint64_t)(uintptr_t)h};
    fgtp_add(&r);
    return ncclSuccess;
}

static ncclResult_t fgtp_finalize(void *ctx)
{
    struct fgtp_rec r = {.call = FGTP_FINALIZE, .ctx = (uint64_t)(uintptr_t)ctx};
    fgtp_add(&r);
    return ncclSuccess;
}

static ncclResult_t fgtp_state(int version, void *h, fn_prof_state st, uint64_t ptimer)
{
    struct fgtp_rec r = {.call = FGTP_STATE,
                         .version = version,
                         .id = (uint64_t)(uintptr_t)h,
                         .state = (int)st,
                         .ptimer = ptimer};
    fgtp_add(&r);
    return ncclSuccess;
}

/* ------------------------------------------------------------------ v5 */

static ncclResult_t fgtp_init_v5(void **ctx, uint64_t commId, int *mask, const char *name,
                                 int nNodes, int nranks, int rank, fn_logger_t logfn)
{
    (void)nNodes;
    if (logfn)
        logfn(fnLogInfo, 0, __FILE__, __LINE__, "fgtestprof v5 init rank %d", rank);
    return fgtp_init_common(5, ctx, mask, name, commId, nranks, rank);
}

/* v5's events; v6 (d6 non-NULL) adds the copy-engine collective, its other
 * members where v5 has them. */
static ncclResult_t fgtp_start_v56(int version, void *ctx, void **h, fn_prof_descr_v5 *d,
                                   const fn_prof_descr_v6 *d6)
{
    struct fgtp_rec r = {.call = FGTP_START,
                         .version = version,
                         .type = d->type,
                         .parent = (uint64_t)(uintptr_t)d->parentObj,
                         .rank = d->rank,
                         .ctx = (uint64_t)(uintptr_t)ctx};
    switch (d->type) {
    case fnProfileColl:
        r.seq = d->coll.seqNumber;
        fgtp_str(r.func, sizeof r.func, d->coll.func);
        r.sendbuff = d->coll.sendBuff;
        r.recvbuff = d->coll.recvBuff;
        r.count = d->coll.count;
        r.root = d->coll.root;
        fgtp_str(r.dtype, sizeof r.dtype, d->coll.datatype);
        r.nchannels = d->coll.nChannels;
        r.nwarps = d->coll.nWarps;
        fgtp_str(r.algo, sizeof r.algo, d->coll.algo);
        fgtp_str(r.proto, sizeof r.proto, d->coll.proto);
        r.pgroup = (uint64_t)(uintptr_t)d->coll.parentGroup;
        break;
    case fnProfileP2p:
        fgtp_str(r.func, sizeof r.func, d->p2p.func);
        r.recvbuff = d->p2p.buff;
        fgtp_str(r.dtype, sizeof r.dtype, d->p2p.datatype);
        r.count = d->p2p.count;
        r.peer = d->p2p.peer;
        r.nchannels = d->p2p.nChannels;
        r.pgroup = (uint64_t)(uintptr_t)d->p2p.parentGroup;
        break;
    case fnProfileKernelCh:
        r.channel = d->kernelCh.channelId;
        r.ptimer = d->kernelCh.pTimer;
        break;
    case fnProfileProxyOp:
        r.channel = d->proxyOp.channelId;
        r.peer = d->proxyOp.peer;
        r.root = d->proxyOp.isSend; /* ProxyOp: isSend in root */
        r.count = (size_t)d->proxyOp.nSteps;
        break;
    case fnProfileGroupApi: r.depth = d->groupApi.groupDepth; break;
    case fnProfileCollApi:
        fgtp_str(r.func, sizeof r.func, d->collApi.func);
        r.count = d->collApi.count;
        fgtp_str(r.dtype, sizeof r.dtype, d->collApi.datatype);
        r.root = d->collApi.root;
        r.stream = d->collApi.stream;
        break;
    case fnProfileP2pApi:
        fgtp_str(r.func, sizeof r.func, d->p2pApi.func);
        r.count = d->p2pApi.count;
        fgtp_str(r.dtype, sizeof r.dtype, d->p2pApi.datatype);
        r.stream = d->p2pApi.stream;
        break;
    case fnProfileKernelLaunch: r.stream = d->kernelLaunch.stream; break;
    case fnProfileCeColl:
        if (!d6)
            break;
        r.seq = d6->ceColl.seqNumber;
        fgtp_str(r.func, sizeof r.func, d6->ceColl.func);
        r.sendbuff = d6->ceColl.sendBuff;
        r.recvbuff = d6->ceColl.recvBuff;
        r.count = d6->ceColl.count;
        r.root = d6->ceColl.root;
        fgtp_str(r.dtype, sizeof r.dtype, d6->ceColl.datatype);
        fgtp_str(r.algo, sizeof r.algo, d6->ceColl.syncStrategy);
        r.stream = d6->ceColl.stream;
        r.depth = (int)d6->ceColl.ceSeqNum;
        break;
    default: break;
    }
    *h = (void *)(uintptr_t)fgtp_add(&r);
    return ncclSuccess;
}

static ncclResult_t fgtp_start_v5(void *ctx, void **h, fn_prof_descr_v5 *d)
{
    return fgtp_start_v56(5, ctx, h, d, NULL);
}

static ncclResult_t fgtp_state_v5(void *h, fn_prof_state st, fn_prof_args_v5 *a)
{
    return fgtp_state(5, h, st, a ? a->kernelCh.pTimer : 0);
}

__attribute__((visibility("default"))) fn_profiler_v5 ncclProfiler_v5 = {
    .name = "fgtestprof",
    .init = fgtp_init_v5,
    .startEvent = fgtp_start_v5,
    .stopEvent = fgtp_stop,
    .recordEventState = fgtp_state_v5,
    .finalize = fgtp_finalize,
};

/* ------------------------------------------------------------------ v6 */

static ncclResult_t fgtp_init_v6(void **ctx, uint64_t commId, int *mask, const char *name,
                                 int nNodes, int nranks, int rank, fn_logger_t logfn)
{
    (void)nNodes, (void)logfn;
    return fgtp_init_common(6, ctx, mask, name, commId, nranks, rank);
}

/* v5's members keep their offsets in v6's descriptor (fn_profiler_abi.h) */
static ncclResult_t fgtp_start_v6(void *ctx, void **h, fn_prof_descr_v6 *d)
{
    return fgtp_start_v56(6, ctx, h, (fn_prof_descr_v5 *)(void *)d, d);
}

static ncclResult_t fgtp_state_v6(void *h, fn_prof_state st, fn_prof_args_v6 *a)
{
    return fgtp_state(6, h, st, a ? a->kernelCh.pTimer : 0);
}

__attribute__((visibility("default"))) fn_profiler_v6 ncclProfiler_v6 = {
    .name = "fgtestprof",
    .init = fgtp_init_v6,
    .startEvent = fgtp_start_v6,
    .stopEvent = fgtp_stop,
    .recordEventState = fgtp_state_v6,
    .finalize = fgtp_finalize,
};

/* ------------------------------------------------------------------ v4 */

static ncclResult_t fgtp_init_v4(void **ctx, int *mask, const char *name, uint64_t hash, int nNodes,
                                 int nranks, int rank, fn_logger_t logfn)
{
    (void)nNodes;
    (void)logfn;
    return fgtp_init_common(4, ctx, mask, name, hash, nranks, rank);
}

static ncclResult_t fgtp_start_v4(void *ctx, void **h, fn_prof_descr_v4 *d)
{
    struct fgtp_rec r = {.call = FGTP_START,
                         .version = 4,
                         .type = d->type,
                         .parent = (uint64_t)(uintptr_t)d->parentObj,
                         .rank = d->rank,
                         .ctx = (uint64_t)(uintptr_t)ctx};
    if (d->type == fnProfileColl) {
        r.seq = d->coll.seqNumber;
        fgtp_str(r.func, sizeof r.func, d->coll.func);
        r.sendbuff = d->coll.sendBuff;
        r.recvbuff = d->coll.recvBuff;
        r.count = d->coll.count;
        r.root = d->coll.root;
        fgtp_str(r.dtype, sizeof r.dtype, d->coll.datatype);
        r.nchannels = d->coll.nChannels;
        r.nwarps = d->coll.nWarps;
        fgtp_str(r.algo, sizeof r.algo, d->coll.algo);
        fgtp_str(r.proto, sizeof r.proto, d->coll.proto);
    } else if (d->type == fnProfileP2p) {
        fgtp_str(r.func, sizeof r.func, d->p2p.func);
        r.recvbuff = d->p2p.buff;
        fgtp_str(r.dtype, sizeof r.dtype, d->p2p.datatype);
        r.count = d->p2p.count;
        r.peer = d->p2p.peer;
        r.nchannels = d->p2p.nChannels;
    } else if (d->type == fnProfileKernelCh) {
        r.channel = d->kernelCh.channelId;
        r.ptimer = d->kernelCh.pTimer;
    } else if (d->type == fnProfileProxyOp) {
        r.channel = d->proxyOp.channelId;
        r.peer = d->proxyOp.peer;
        r.root = d->proxyOp.isSend; /* ProxyOp: isSend in root */
        r.count = (size_t)d->proxyOp.nSteps;
    }
    *h = (void *)(uintptr_t)fgtp_add(&r);
    return ncclSuccess;
}

static ncclResult_t fgtp_state_v4(void *h, fn_prof_state st, fn_prof_args_v4 *a)
{
    return fgtp_state(4, h, st, a ? a->kernelCh.pTimer : 0);
}

__attribute__((visibility("default"))) fn_profiler_v4 ncclProfiler_v4 = {
    .name = "fgtestprof",
    .init = fgtp_init_v4,
    .startEvent = fgtp_start_v4,
    .stopEvent = fgtp_stop,
    .recordEventState = fgtp_state_v4,
    .finalize = fgtp_finalize,
};

/* ------------------------------------------------------------------ v3 */

static ncclResult_t fgtp_init_v3(void **ctx, int *mask)
{
    return fgtp_init_common(3, ctx, mask, NULL, 0, 0, -1);
}

static ncclResult_t fgtp_start_v3(void *ctx, void **h, fn_prof_descr_v3 *d)
{
    struct fgtp_rec r = {.call = FGTP_START,
                         .version = 3,
                         .type = d->type,
                         .parent = (uint64_t)(uintptr_t)d->parentObj,
                         .rank = d->rank,
                         .ctx = (uint64_t)(uintptr_t)ctx};
    if (d->type == fnProfileColl) {
        fgtp_str(r.name, sizeof r.name, d->coll.name);
        r.hash = d->coll.commHash;
        r.seq = d->coll.seqNumber;
        fgtp_str(r.func, sizeof r.func, d->coll.func);
        r.sendbuff = d->coll.sendBuff;
        r.recvbuff = d->coll.recvBuff;
        r.count = d->coll.count;
        r.root = d->coll.root;
        fgtp_str(r.dtype, sizeof r.dtype, d->coll.datatype);
        r.nchannels = d->coll.nMaxChannels;
        r.nwarps = d->coll.nWarps;
        fgtp_str(r.algo, sizeof r.algo, d->coll.algo);
        fgtp_str(r.proto, sizeof r.proto, d->coll.proto);
    } else if (d->type == fnProfileP2p) {
        fgtp_str(r.name, sizeof r.name, d->p2p.name);
        r.hash = d->p2p.commHash;
        fgtp_str(r.func, sizeof r.func, d->p2p.func);
        r.recvbuff = d->p2p.buff;
        fgtp_str(r.dtype, sizeof r.dtype, d->p2p.datatype);
        r.count = d->p2p.count;
        r.peer = d->p2p.peer;
    } else if (d->type == fnProfileKernelCh) {
        r.channel = d->kernelCh.channelId;
    }
    *h = (void *)(uintptr_t)fgtp_add(&r);
    return ncclSuccess;
}

static ncclResult_t fgtp_state_v3(void *h, fn_prof_state st, fn_prof_args_v3 *a)
{
    (void)a;
    return fgtp_state(3, h, st, 0);
}

__attribute__((visibility("default"))) fn_profiler_v3 ncclProfiler_v3 = {
    .name = "fgtestprof",
    .init = fgtp_init_v3,
    .startEvent = fgtp_start_v3,
    .stopEvent = fgtp_stop,
    .recordEventState = fgtp_state_v3,
    .finalize = fgtp_finalize,
};
