/*
 * fg_stream.c - streams: creation and destruction, the mapping of stream
 * handles (0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD, created streams) to
 * stream objects, queries, synchronisation, host functions and callbacks,
 * and the stream getters.  Each entry point taking a stream exists in a
 * legacy form (handle 0 = legacy stream) and a _ptsz form (handle 0 =
 * per-thread stream).
 *
 * Per-thread default streams behave as in CUDA: they are blocking streams
 * (they synchronise with the legacy stream) but not with each other or with
 * any other stream.  One exists per (thread, context), created on first use.
 */
#include "fg_internal.h"

#include <stdlib.h>

bool fg_stream_blocking(const fg_stream *s)
{
    switch (s->kind) {
    case FG_S_PER_THREAD: return true;
    case FG_S_USER: return !(s->flags & CU_STREAM_NON_BLOCKING);
    default: return false;
    }
}

fg_stream *fg_stream_new(fg_ctx *c, fg_stream_kind kind, unsigned flags, int prio)
{
    fg_stream *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    if (kind != FG_S_LEGACY &&
        !fg_grow((void **)&c->streams, &c->capstreams, c->nstreams + 1, sizeof *c->streams)) {
        free(s);
        return NULL;
    }
    s->ctx = c;
    s->id = fg_next_id();
    s->flags = flags;
    s->priority = prio;
    s->kind = kind;
    if (kind == FG_S_PER_THREAD)
        s->owner = pthread_self();
    if (kind != FG_S_LEGACY) {
        c->streams[c->nstreams++] = s;
        fg_handle_add(s, FG_H_STREAM);
    }
    return s;
}

void fg_stream_free(fg_stream *s)
{
    fg_ctx *c = s->ctx;
    for (size_t i = 0; i < c->nstreams; i++) {
        if (c->streams[i] == s) {
            c->streams[i] = c->streams[--c->nstreams];
            break;
        }
    }
    /* Work still in flight completes after destruction, as in CUDA; the
     * context keeps it so that cuCtxSynchronize and the legacy stream still
     * wait for it. */
    if (s->last && !fg_op_done(s->last, fg_now()) &&
        fg_grow((void **)&c->orphans, &c->caporphans, c->norphans + 1, sizeof *c->orphans))
        c->orphans[c->norphans++] = s->last;
    else
        fg_op_unref(s->last);
    fg_capdeps_free(&s->capdeps);
    fg_handle_del(s);
    free(s);
}

fg_stream *fg_stream_get(CUstream h, bool per_thread, CUresult *err)
{
    *err = CUDA_SUCCESS;
    if (!h)
        h = per_thread ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
    if (h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
        fg_ctx *c = fg_current_ctx();
        if (!c) {
            *err = CUDA_ERROR_INVALID_CONTEXT;
            return NULL;
        }
        if (h == CU_STREAM_LEGACY)
            return c->legacy;
        pthread_t self = pthread_self();
        for (size_t i = 0; i < c->nstreams; i++)
            if (c->streams[i]->kind == FG_S_PER_THREAD && pthread_equal(c->streams[i]->owner, self))
                return c->streams[i];
        fg_stream *s = fg_stream_new(c, FG_S_PER_THREAD, 0, 0);
        if (!s)
            *err = CUDA_ERROR_OUT_OF_MEMORY;
        return s;
    }
    if (fg_handle_type(h) != FG_H_STREAM) {
        *err = CUDA_ERROR_INVALID_HANDLE;
        return NULL;
    }
    return (fg_stream *)h;
}

/* ------------------------------------------------------------- creation */

#define FG_PRIO_LEAST    0
#define FG_PRIO_GREATEST (-5)

static CUresult fg_stream_create(CUstream *ph, unsigned int flags, int prio)
{
    FG_ENTER();
    fg_ctx *c;
    if (!ph || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (fg_require_ctx(&c) != CUDA_SUCCESS)
        FG_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    /* Out-of-range priorities are clamped, as the driver documents. */
    prio = prio > FG_PRIO_LEAST ? FG_PRIO_LEAST : prio < FG_PRIO_GREATEST ? FG_PRIO_GREATEST : prio;
    fg_stream *s = fg_stream_new(c, FG_S_USER, flags, prio);
    if (!s)
        FG_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    *ph = (CUstream)s;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    return fg_stream_create(phStream, Flags, 0);
}

CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
    return fg_stream_create(phStream, flags, priority);
}

CUresult CUDAAPI cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    FG_ENTER();
    if (leastPriority)
        *leastPriority = FG_PRIO_LEAST;
    if (greatestPriority)
        *greatestPriority = FG_PRIO_GREATEST;
    FG_RETURN(CUDA_SUCCESS);
}

static CUresult fg_stream_destroy(CUstream h)
{
    FG_ENTER();
    if (fg_handle_type(h) != FG_H_STREAM)
        FG_RETURN(CUDA_ERROR_INVALID_HANDLE);
    fg_stream *s = (fg_stream *)h;
    if (s->kind != FG_S_USER)
        FG_RETURN(CUDA_ERROR_INVALID_HANDLE);
    fg_stream_free(s);
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuStreamDestroy(CUstream hStream)
{
    return fg_stream_destroy(hStream);
}

CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream)
{
    return fg_stream_destroy(hStream);
}

/* ------------------------------------------------------- query and sync */

static CUresult fg_stream_query(CUstream h, bool pt)
{
    FG_ENTER();
    CUresult rc;
    fg_stream *s = fg_stream_get(h, pt, &rc);
    if (!s)
        FG_RETURN(rc);
    if (s->capture)
        FG_RETURN(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    FG_RETURN(!s->last || fg_op_done(s->last, fg_now()) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY);
}

CUresult CUDAAPI cuStreamQuery(CUstream hStream)
{
    return fg_stream_query(hStream, false);
}

CUresult CUDAAPI cuStreamQuery_ptsz(CUstream hStream)
{
    return fg_stream_query(hStream, true);
}

static CUresult fg_stream_sync(CUstream h, bool pt)
{
    FG_ENTER();
    int64_t t0 = 0;
    uint32_t corr = fg_cupti_sync_begin(&t0);
    CUresult rc;
    fg_stream *s = fg_stream_get(h, pt, &rc);
    if (!s)
        FG_RETURN(rc);
    if (s->capture)
        FG_RETURN(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    fg_op *last = s->last; /* s may be destroyed while we wait */
    fg_ctx *c = s->ctx;    /* what the sync record needs, should s go */
    uint32_t sid = (uint32_t)s->id;
    if (last)
        fg_wait_ops_locked(&last, 1);
    if (corr)
        fg_cupti_sync_end(corr, t0, FG_CUPTI_SYNC_STREAM, c, sid, FG_CUPTI_NA);
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuStreamSynchronize(CUstream hStream)
{
    return fg_stream_sync(hStream, false);
}

CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream)
{
    return fg_stream_sync(hStream, true);
}

/* -------------------------------------------------------- host functions */

static CUresult fg_host_submit(CUstream h, bool pt, const fg_desc *d)
{
    FG_ENTER();
    CUresult rc;
    fg_stream *s = fg_stream_get(h, pt, &rc);
    if (!s)
        FG_RETURN(rc);
    FG_RETURN(fg_submit(s, d, false));
}

static CUresult fg_launch_host_func(CUstream h, CUhostFn fn, void *userData, bool pt)
{
    if (!fn)
        return __atomic_load_n(&fg.initialized, __ATOMIC_ACQUIRE) ? CUDA_ERROR_INVALID_VALUE
                                                                  : CUDA_ERROR_NOT_INITIALIZED;
    fg_desc d = {.kind = FG_OP_HOSTFN, .name = "hostFunction"};
    d.u.host.fn = fn;
    d.u.host.arg = userData;
    return fg_host_submit(h, pt, &d);
}

CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
    return fg_launch_host_func(hStream, fn, userData, false);
}

CUresult CUDAAPI cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData)
{
    return fg_launch_host_func(hStream, fn, userData, true);
}

static CUresult fg_add_callback(CUstream h, CUstreamCallback cb, void *userData, unsigned flags,
                                bool pt)
{
    if (!cb || flags != 0)
        return __atomic_load_n(&fg.initialized, __ATOMIC_ACQUIRE) ? CUDA_ERROR_INVALID_VALUE
                                                                  : CUDA_ERROR_NOT_INITIALIZED;
    fg_desc d = {.kind = FG_OP_HOSTFN, .name = "streamCallback"};
    d.u.host.cb = cb;
    d.u.host.cb_stream = h;
    d.u.host.arg = userData;
    return fg_host_submit(h, pt, &d);
}

CUresult CUDAAPI cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData,
                                     unsigned int flags)
{
    return fg_add_callback(hStream, callback, userData, flags, false);
}

CUresult CUDAAPI cuStreamAddCallback_ptsz(CUstream hStream, CUstreamCallback callback,
                                          void *userData, unsigned int flags)
{
    return fg_add_callback(hStream, callback, userData, flags, true);
}

/* --------------------------------------------------------------- getters */

typedef enum { FG_SG_ID, FG_SG_FLAGS, FG_SG_PRIO, FG_SG_CTX, FG_SG_DEVICE } fg_stream_getter;

static CUresult fg_stream_getter_run(CUstream h, bool pt, fg_stream_getter what, void *out)
{
    FG_ENTER();
    if (!out)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    CUresult rc;
    fg_stream *s = fg_stream_get(h, pt, &rc);
    if (!s)
        FG_RETURN(rc);
    switch (what) {
    case FG_SG_ID: *(unsigned long long *)out = s->id; break;
    case FG_SG_FLAGS: *(unsigned *)out = s->flags; break;
    case FG_SG_PRIO: *(int *)out = s->priority; break;
    case FG_SG_CTX: *(CUcontext *)out = (CUcontext)s->ctx; break;
    case FG_SG_DEVICE: *(CUdevice *)out = s->ctx->device; break;
    }
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuStreamGetId(CUstream hStream, unsigned long long *streamId)
{
    return fg_stream_getter_run(hStream, false, FG_SG_ID, streamId);
}

CUresult CUDAAPI cuStreamGetId_ptsz(CUstream hStream, unsigned long long *streamId)
{
    return fg_stream_getter_run(hStream, true, FG_SG_ID, streamId);
}

CUresult CUDAAPI cuStreamGetFlags(CUstream hStream, unsigned int *flags)
{
    return fg_stream_getter_run(hStream, false, FG_SG_FLAGS, flags);
}

CUresult CUDAAPI cuStreamGetFlags_ptsz(CUstream hStream, unsigned int *flags)
{
    return fg_stream_getter_run(hStream, true, FG_SG_FLAGS, flags);
}

CUresult CUDAAPI cuStreamGetPriority(CUstream hStream, int *priority)
{
    return fg_stream_getter_run(hStream, false, FG_SG_PRIO, priority);
}

CUresult CUDAAPI cuStreamGetPriority_ptsz(CUstream hStream, int *priority)
{
    return fg_stream_getter_run(hStream, true, FG_SG_PRIO, priority);
}

CUresult CUDAAPI cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
    return fg_stream_getter_run(hStream, false, FG_SG_CTX, pctx);
}

CUresult CUDAAPI cuStreamGetCtx_ptsz(CUstream hStream, CUcontext *pctx)
{
    return fg_stream_getter_run(hStream, true, FG_SG_CTX, pctx);
}

static CUresult fg_stream_get_ctx2(CUstream h, CUcontext *pctx, CUgreenCtx *pGreenCtx, bool pt)
{
    CUcontext c = NULL;
    CUresult rc = fg_stream_getter_run(h, pt, FG_SG_CTX, &c);
    if (rc == CUDA_SUCCESS) {
        if (pctx)
            *pctx = c;
        if (pGreenCtx)
            *pGreenCtx = NULL; /* green contexts are not simulated */
    }
    return rc;
}

CUresult CUDAAPI cuStreamGetCtx_v2(CUstream hStream, CUcontext *pCtx, CUgreenCtx *pGreenCtx)
{
    return fg_stream_get_ctx2(hStream, pCtx, pGreenCtx, false);
}

CUresult CUDAAPI cuStreamGetCtx_v2_ptsz(CUstream hStream, CUcontext *pCtx, CUgreenCtx *pGreenCtx)
{
    return fg_stream_get_ctx2(hStream, pCtx, pGreenCtx, true);
}

CUresult CUDAAPI cuStreamGetDevice(CUstream hStream, CUdevice *device)
{
    return fg_stream_getter_run(hStream, false, FG_SG_DEVICE, device);
}

CUresult CUDAAPI cuStreamGetDevice_ptsz(CUstream hStream, CUdevice *device)
{
    return fg_stream_getter_run(hStream, true, FG_SG_DEVICE, device);
}
