/*
 * fg_context.c - contexts: the per-thread current-context stack, explicit
 * contexts (cuCtxCreate*), primary contexts (cuDevicePrimaryCtx*), context
 * queries and cuCtxSynchronize.
 *
 * Context objects are never freed, only unregistered, so that memory, events
 * and graphs that still point at a destroyed context stay safe to touch.
 */
#include "fg_internal.h"

#include <stdlib.h>

#define FG_CTX_STACK 64

static __thread fg_ctx *fg_tls_stack[FG_CTX_STACK];
static __thread int fg_tls_depth;

fg_ctx *fg_ctx_from_handle(CUcontext h)
{
    fg_ctx *c = (fg_ctx *)h;
    return fg_handle_type(c) == FG_H_CTX ? c : NULL;
}

fg_ctx *fg_current_ctx(void)
{
    if (fg_tls_depth == 0)
        return NULL;
    fg_ctx *c = fg_tls_stack[fg_tls_depth - 1];
    return c && !c->destroyed ? c : NULL;
}

CUresult fg_require_ctx(fg_ctx **out)
{
    *out = fg_current_ctx();
    return *out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

static fg_ctx *fg_ctx_new(int dev, unsigned flags, bool primary)
{
    fg_ctx *c = calloc(1, sizeof *c);
    if (!c || !fg_grow((void **)&fg.ctxs, &fg.capctxs, fg.nctxs + 1, sizeof *fg.ctxs)) {
        free(c);
        return NULL;
    }
    c->device = dev;
    c->id = fg_next_id();
    c->flags = flags;
    c->primary = primary;
    c->legacy = fg_stream_new(c, FG_S_LEGACY, 0, 0);
    fg.ctxs[fg.nctxs++] = c;
    fg_handle_add(c, FG_H_CTX);
    return c;
}

void fg_ctx_wait_all_locked(fg_ctx *c)
{
    size_t n = 0, cap = 0;
    fg_op **ops = NULL;
    size_t need = c->nstreams + c->norphans + 1;
    if (!fg_grow((void **)&ops, &cap, need, sizeof *ops))
        abort();
    if (c->legacy && c->legacy->last)
        ops[n++] = c->legacy->last;
    for (size_t i = 0; i < c->nstreams; i++)
        if (c->streams[i]->last)
            ops[n++] = c->streams[i]->last;
    for (size_t i = 0; i < c->norphans; i++)
        ops[n++] = c->orphans[i];
    fg_wait_ops_locked(ops, n);
    free(ops);
    /* Orphans are owed to nobody once they are complete. */
    int64_t now = fg_now();
    size_t keep = 0;
    for (size_t i = 0; i < c->norphans; i++) {
        if (fg_op_done(c->orphans[i], now))
            fg_op_unref(c->orphans[i]);
        else
            c->orphans[keep++] = c->orphans[i];
    }
    c->norphans = keep;
}

/* Streams die with their context; their ops live on until complete. */
static void fg_ctx_teardown(fg_ctx *c)
{
    fg_ctx_wait_all_locked(c);
    c->resets++; /* its events go with it, as in CUDA */
    while (c->nstreams)
        fg_stream_free(c->streams[c->nstreams - 1]);
    if (!c->primary) {
        c->destroyed = true;
        fg_handle_del(c);
    }
}

static void fg_tls_remove(fg_ctx *c)
{
    int k = 0;
    for (int i = 0; i < fg_tls_depth; i++)
        if (fg_tls_stack[i] != c)
            fg_tls_stack[k++] = fg_tls_stack[i];
    fg_tls_depth = k;
}

static CUresult fg_ctx_create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    FG_ENTER();
    if (!pctx)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!fg_device_valid(dev))
        FG_RETURN(CUDA_ERROR_INVALID_DEVICE);
    if (fg_tls_depth >= FG_CTX_STACK)
        FG_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    fg_ctx *c = fg_ctx_new(dev, flags, false);
    if (!c)
        FG_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    fg_tls_stack[fg_tls_depth++] = c;
    *pctx = (CUcontext)c;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return fg_ctx_create(pctx, flags, dev);
}

CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return fg_ctx_create(pctx, flags, dev);
}

CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                                unsigned int flags, CUdevice dev)
{
    (void)paramsArray;
    (void)numParams;
    return fg_ctx_create(pctx, flags, dev);
}

CUresult CUDAAPI cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                                unsigned int flags, CUdevice dev)
{
    (void)ctxCreateParams;
    return fg_ctx_create(pctx, flags, dev);
}

static CUresult fg_ctx_destroy(CUcontext ctx)
{
    FG_ENTER();
    fg_ctx *c = fg_ctx_from_handle(ctx);
    if (!c)
        FG_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    if (c->primary)
        FG_RETURN(CUDA_ERROR_INVALID_CONTEXT); /* primary contexts are released, not destroyed */
    fg_ctx_teardown(c);
    fg_tls_remove(c);
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxDestroy(CUcontext ctx)
{
    return fg_ctx_destroy(ctx);
}

CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx)
{
    return fg_ctx_destroy(ctx);
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
    FG_ENTER();
    fg_ctx *c = NULL;
    if (ctx && !(c = fg_ctx_from_handle(ctx)))
        FG_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    if (fg_tls_depth == 0) {
        if (c)
            fg_tls_stack[fg_tls_depth++] = c;
    } else if (c) {
        fg_tls_stack[fg_tls_depth - 1] = c;
    } else {
        fg_tls_depth--; /* setting NULL unbinds the top context */
    }
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
    FG_ENTER();
    if (!pctx)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    *pctx = (CUcontext)fg_current_ctx();
    FG_RETURN(CUDA_SUCCESS);
}

static CUresult fg_ctx_push(CUcontext ctx)
{
    FG_ENTER();
    fg_ctx *c = fg_ctx_from_handle(ctx);
    if (!c)
        FG_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    if (fg_tls_depth >= FG_CTX_STACK)
        FG_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    fg_tls_stack[fg_tls_depth++] = c;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx)
{
    return fg_ctx_push(ctx);
}

CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx)
{
    return fg_ctx_push(ctx);
}

static CUresult fg_ctx_pop(CUcontext *pctx)
{
    FG_ENTER();
    if (fg_tls_depth == 0)
        FG_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    fg_ctx *c = fg_tls_stack[--fg_tls_depth];
    if (pctx)
        *pctx = (CUcontext)c;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx)
{
    return fg_ctx_pop(pctx);
}

CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext *pctx)
{
    return fg_ctx_pop(pctx);
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice *device)
{
    FG_ENTER();
    fg_ctx *c;
    if (!device)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (fg_require_ctx(&c) != CUDA_SUCCESS)
        FG_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    *device = c->device;
    FG_RETURN(CUDA_SUCCESS);
}

/* The CUDA 13 forms take an explicit context; NULL means the current one. */
static fg_ctx *fg_ctx_or_current(CUcontext ctx)
{
    return ctx ? fg_ctx_from_handle(ctx) : fg_current_ctx();
}

CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    FG_ENTER();
    if (!device)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    fg_ctx *c = fg_ctx_or_current(ctx);
    if (!c)
        FG_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    *device = c->device;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
    FG_ENTER();
    if (!ctxId)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    fg_ctx *c = fg_ctx_or_current(ctx);
    if (!c)
        FG_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    *ctxId = c->id;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxGetFlags(unsigned int *flags)
{
    FG_ENTER();
    fg_ctx *c;
    if (!flags)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (fg_require_ctx(&c) != CUDA_SUCCESS)
        FG_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    *flags = c->flags;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    FG_ENTER();
    if (!version)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!fg_ctx_or_current(ctx))
        FG_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    *version = 3020;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxSynchronize(void)
{
    FG_ENTER();
    int64_t t0 = 0;
    uint32_t corr = fg_cupti_sync_begin(&t0);
    fg_ctx *c;
    if (fg_require_ctx(&c) != CUDA_SUCCESS)
        FG_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    fg_ctx_wait_all_locked(c);
    if (corr)
        fg_cupti_sync_end(corr, t0, FG_CUPTI_SYNC_CONTEXT, c, FG_CUPTI_NA, FG_CUPTI_NA);
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx)
{
    FG_ENTER();
    int64_t t0 = 0;
    uint32_t corr = fg_cupti_sync_begin(&t0);
    fg_ctx *c = fg_ctx_or_current(ctx);
    if (!c)
        FG_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    fg_ctx_wait_all_locked(c);
    if (corr)
        fg_cupti_sync_end(corr, t0, FG_CUPTI_SYNC_CONTEXT, c, FG_CUPTI_NA, FG_CUPTI_NA);
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
    FG_ENTER();
    fg_ctx *c;
    if (Flags != 0)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (fg_require_ctx(&c) != CUDA_SUCCESS || !fg_ctx_from_handle(peerContext))
        FG_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxDisablePeerAccess(CUcontext peerContext)
{
    FG_ENTER();
    if (!fg_ctx_from_handle(peerContext))
        FG_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    FG_RETURN(CUDA_SUCCESS);
}

/* ------------------------------------------------------ primary contexts */

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    FG_ENTER();
    if (!pctx)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!fg_device_valid(dev))
        FG_RETURN(CUDA_ERROR_INVALID_DEVICE);
    fg_device *d = &fg.devices[dev];
    if (!d->primary && !(d->primary = fg_ctx_new(dev, d->primary_flags, true)))
        FG_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    d->primary_refs++;
    *pctx = (CUcontext)d->primary;
    FG_RETURN(CUDA_SUCCESS);
}

/* The primary context object survives its last release (its handle stays
 * valid, as real drivers hand out the same one again); only its work is
 * drained and its streams destroyed. */
static CUresult fg_primary_release(CUdevice dev, bool reset)
{
    FG_ENTER();
    if (!fg_device_valid(dev))
        FG_RETURN(CUDA_ERROR_INVALID_DEVICE);
    fg_device *d = &fg.devices[dev];
    if (!reset && d->primary_refs == 0)
        FG_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    d->primary_refs = reset ? 0 : d->primary_refs - 1;
    if (d->primary_refs == 0 && d->primary)
        fg_ctx_teardown(d->primary);
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
    return fg_primary_release(dev, false);
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    return fg_primary_release(dev, false);
}

CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev)
{
    return fg_primary_release(dev, true);
}

CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    return fg_primary_release(dev, true);
}

CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    FG_ENTER();
    if (!flags || !active)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!fg_device_valid(dev))
        FG_RETURN(CUDA_ERROR_INVALID_DEVICE);
    *flags = fg.devices[dev].primary_flags;
    *active = fg.devices[dev].primary_refs > 0;
    FG_RETURN(CUDA_SUCCESS);
}

static CUresult fg_primary_set_flags(CUdevice dev, unsigned int flags)
{
    FG_ENTER();
    if (!fg_device_valid(dev))
        FG_RETURN(CUDA_ERROR_INVALID_DEVICE);
    fg.devices[dev].primary_flags = flags;
    if (fg.devices[dev].primary)
        fg.devices[dev].primary->flags = flags;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    return fg_primary_set_flags(dev, flags);
}

CUresult CUDAAPI cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
    return fg_primary_set_flags(dev, flags);
}
