/*
 * fg_copy.c - memory copies (1D, 2D, 3D, peer; synchronous and Async; the
 * legacy, _ptds and _ptsz entry points).
 *
 * Duration = bytes / bandwidth: FAKEGPU_PCIE_GBPS when either end is host
 * memory, FAKEGPU_HBM_GBPS for device-to-device and peer copies (GB/s =
 * 1e9 bytes/s, i.e. bytes per nanosecond).  Synchronous entry points, and
 * Async ones with a pageable host end (host memory the fake did not
 * allocate or register), return only once the copy has completed in
 * virtual time, as CUDA does for pageable memory, and no later (FG_WAIT_SPIN:
 * the call costs the transfer, not a timer latency).
 */
#include "fg_internal.h"

#include <math.h>

int64_t fg_bytes_ns(size_t bytes, double gbps)
{
    return (int64_t)llround((double)bytes / gbps);
}

typedef enum { FG_END_PAGEABLE, FG_END_PINNED, FG_END_DEVICE } fg_end_kind;

typedef struct fg_end {
    char *ptr;
    fg_end_kind kind;
} fg_end;

/* Locked.  What the registry says about an address, whatever the caller
 * declared it to be. */
static fg_end_kind fg_classify(uintptr_t p)
{
    const fg_alloc *a = fg_mem_find(p);
    if (!a)
        return FG_END_PAGEABLE;
    return a->kind == FG_MEM_DEVICE || a->kind == FG_MEM_MANAGED ? FG_END_DEVICE : FG_END_PINNED;
}

/* Locked.  A declared device range must lie inside one device allocation:
 * writing through a bad device pointer would crash the host, whereas the
 * real driver reports an error. */
static bool fg_device_extent_ok(uintptr_t p, size_t extent)
{
    const fg_alloc *a = fg_mem_find(p);
    return a && (a->kind == FG_MEM_DEVICE || a->kind == FG_MEM_MANAGED) &&
           extent <= a->size - (p - a->base);
}

typedef struct fg_copy_req {
    fg_end dst, src;
    size_t width, height, depth, dpitch, spitch, dslice, sslice;
    bool check_dst_dev, check_src_dev; /* declared device ends, to validate */
    bool sync_api;
    CUstream stream;
    bool per_thread;
} fg_copy_req;

static fg_cupti_mem fg_cupti_mem_of(fg_end_kind k)
{
    return k == FG_END_DEVICE   ? FG_CUPTI_MEM_DEVICE
           : k == FG_END_PINNED ? FG_CUPTI_MEM_PINNED
                                : FG_CUPTI_MEM_PAGEABLE;
}

static size_t fg_extent(size_t width, size_t height, size_t depth, size_t pitch, size_t slice)
{
    if (!width || !height || !depth)
        return 0;
    return (depth - 1) * slice + (height - 1) * pitch + width;
}

/* Locked.  Whether r's ends are valid (its stream aside). */
static CUresult fg_copy_check_locked(const fg_copy_req *r)
{
    size_t bytes = r->width * r->height * r->depth;
    if (bytes && (!r->dst.ptr || !r->src.ptr))
        return CUDA_ERROR_INVALID_VALUE;
    /* a copy-engine collective's copy moves no bytes (the fake NCCL's
     * buffers may stand for larger ones): its ends need only exist */
    bool ce = fg_nccl_ce_pending() && r->dst.kind == FG_END_DEVICE && r->src.kind == FG_END_DEVICE;
    if (bytes && r->check_dst_dev && !ce &&
        !fg_device_extent_ok((uintptr_t)r->dst.ptr,
                             fg_extent(r->width, r->height, r->depth, r->dpitch, r->dslice)))
        return CUDA_ERROR_INVALID_VALUE;
    if (bytes && r->check_src_dev && !ce &&
        !fg_device_extent_ok((uintptr_t)r->src.ptr,
                             fg_extent(r->width, r->height, r->depth, r->spitch, r->sslice)))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

static CUresult fg_copy_submit(const fg_copy_req *r)
{
    FG_ENTER();
    size_t bytes = r->width * r->height * r->depth;
    CUresult rc = fg_copy_check_locked(r);
    if (rc != CUDA_SUCCESS)
        FG_RETURN(rc);
    fg_stream *s = fg_stream_get(r->stream, r->per_thread, &rc);
    if (!s)
        FG_RETURN(rc);
    if (r->sync_api && s->capture)
        FG_RETURN(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    bool host_end = r->dst.kind != FG_END_DEVICE || r->src.kind != FG_END_DEVICE;
    bool pageable = r->dst.kind == FG_END_PAGEABLE || r->src.kind == FG_END_PAGEABLE;
    fg_desc d = {.kind = FG_OP_COPY, .name = "memcpy"};
    d.duration_ns = fg_bytes_ns(bytes, host_end ? fg.pcie_gbps : fg.hbm_gbps);
    d.u.copy.dst = r->dst.ptr;
    d.u.copy.src = r->src.ptr;
    d.u.copy.width = r->width;
    d.u.copy.height = r->height;
    d.u.copy.depth = r->depth;
    d.u.copy.dpitch = r->dpitch;
    d.u.copy.spitch = r->spitch;
    d.u.copy.dslice = r->dslice;
    d.u.copy.sslice = r->sslice;
    d.u.copy.src_mem = fg_cupti_mem_of(r->src.kind);
    d.u.copy.dst_mem = fg_cupti_mem_of(r->dst.kind);
    if (!s->capture)
        fg_nccl_copy_desc(&d); /* a fake NCCL copy-engine collective's copy */
    FG_RETURN(fg_submit(s, &d, r->sync_api || pageable ? FG_WAIT_SPIN : 0));
}

/* A linear copy.  Declared host ends are classified (pinned or pageable),
 * declared device ends validated; cuMemcpy's unified ends are classified
 * both ways. */
typedef enum { FG_DECL_HOST, FG_DECL_DEVICE, FG_DECL_UNIFIED } fg_decl;

static fg_end fg_end_decl(const void *p, fg_decl decl)
{
    fg_end e = {.ptr = (char *)(uintptr_t)p, .kind = FG_END_DEVICE};
    if (decl != FG_DECL_DEVICE) {
        FG_LOCK();
        e.kind = fg_classify((uintptr_t)p);
        FG_UNLOCK();
        if (decl == FG_DECL_HOST && e.kind == FG_END_DEVICE)
            e.kind = FG_END_PINNED; /* a "host" pointer into device memory: not pageable */
    }
    return e;
}

static CUresult fg_copy_1d(const void *dst, fg_decl ddecl, const void *src, fg_decl sdecl, size_t n,
                           bool sync_api, CUstream hs, bool pt)
{
    if (!__atomic_load_n(&fg.initialized, __ATOMIC_ACQUIRE))
        return CUDA_ERROR_NOT_INITIALIZED;
    fg_copy_req r = {
        .dst = fg_end_decl(dst, ddecl),
        .src = fg_end_decl(src, sdecl),
        .width = n,
        .height = 1,
        .depth = 1,
        .check_dst_dev = ddecl == FG_DECL_DEVICE,
        .check_src_dev = sdecl == FG_DECL_DEVICE,
        .sync_api = sync_api,
        .stream = hs,
        .per_thread = pt,
    };
    return fg_copy_submit(&r);
}

#define FG_DPTR(p) ((const void *)(uintptr_t)(p))

CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    return fg_copy_1d(FG_DPTR(dstDevice), FG_DECL_DEVICE, srcHost, FG_DECL_HOST, ByteCount, true, 0,
                      false);
}

CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    return fg_copy_1d(FG_DPTR(dstDevice), FG_DECL_DEVICE, srcHost, FG_DECL_HOST, ByteCount, true, 0,
                      true);
}

CUresult CUDAAPI cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    return fg_copy_1d(dstHost, FG_DECL_HOST, FG_DPTR(srcDevice), FG_DECL_DEVICE, ByteCount, true, 0,
                      false);
}

CUresult CUDAAPI cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    return fg_copy_1d(dstHost, FG_DECL_HOST, FG_DPTR(srcDevice), FG_DECL_DEVICE, ByteCount, true, 0,
                      true);
}

CUresult CUDAAPI cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    return fg_copy_1d(FG_DPTR(dstDevice), FG_DECL_DEVICE, FG_DPTR(srcDevice), FG_DECL_DEVICE,
                      ByteCount, true, 0, false);
}

CUresult CUDAAPI cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                      size_t ByteCount)
{
    return fg_copy_1d(FG_DPTR(dstDevice), FG_DECL_DEVICE, FG_DPTR(srcDevice), FG_DECL_DEVICE,
                      ByteCount, true, 0, true);
}

CUresult CUDAAPI cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                                      CUstream hStream)
{
    return fg_copy_1d(FG_DPTR(dstDevice), FG_DECL_DEVICE, srcHost, FG_DECL_HOST, ByteCount, false,
                      hStream, false);
}

CUresult CUDAAPI cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost,
                                           size_t ByteCount, CUstream hStream)
{
    return fg_copy_1d(FG_DPTR(dstDevice), FG_DECL_DEVICE, srcHost, FG_DECL_HOST, ByteCount, false,
                      hStream, true);
}

CUresult CUDAAPI cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                      CUstream hStream)
{
    return fg_copy_1d(dstHost, FG_DECL_HOST, FG_DPTR(srcDevice), FG_DECL_DEVICE, ByteCount, false,
                      hStream, false);
}

CUresult CUDAAPI cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                           CUstream hStream)
{
    return fg_copy_1d(dstHost, FG_DECL_HOST, FG_DPTR(srcDevice), FG_DECL_DEVICE, ByteCount, false,
                      hStream, true);
}

CUresult CUDAAPI cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                      size_t ByteCount, CUstream hStream)
{
    return fg_copy_1d(FG_DPTR(dstDevice), FG_DECL_DEVICE, FG_DPTR(srcDevice), FG_DECL_DEVICE,
                      ByteCount, false, hStream, false);
}

CUresult CUDAAPI cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                           size_t ByteCount, CUstream hStream)
{
    return fg_copy_1d(FG_DPTR(dstDevice), FG_DECL_DEVICE, FG_DPTR(srcDevice), FG_DECL_DEVICE,
                      ByteCount, false, hStream, true);
}

CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    return fg_copy_1d(FG_DPTR(dst), FG_DECL_UNIFIED, FG_DPTR(src), FG_DECL_UNIFIED, ByteCount, true,
                      0, false);
}

CUresult CUDAAPI cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    return fg_copy_1d(FG_DPTR(dst), FG_DECL_UNIFIED, FG_DPTR(src), FG_DECL_UNIFIED, ByteCount, true,
                      0, true);
}

CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    return fg_copy_1d(FG_DPTR(dst), FG_DECL_UNIFIED, FG_DPTR(src), FG_DECL_UNIFIED, ByteCount,
                      false, hStream, false);
}

CUresult CUDAAPI cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                                    CUstream hStream)
{
    return fg_copy_1d(FG_DPTR(dst), FG_DECL_UNIFIED, FG_DPTR(src), FG_DECL_UNIFIED, ByteCount,
                      false, hStream, true);
}

/* ----------------------------------------------------------------- batch */

/* cuMemcpyBatchAsync (CUDA 12.8; _v2 in 13.0 drops failIdx): `count` 1D
 * copies between unified addresses on one stream, each enqueued in order
 * as cuMemcpyAsync would (its direction from the registry). Every copy is
 * checked before any is enqueued, so a failing batch enqueues nothing and
 * names the first bad copy in *failIdx (SIZE_MAX for an error of the call
 * itself: no copies, NULL arrays, a bad stream). The attributes (source
 * access order, location hints) change nothing here. A CUPTI gets one
 * memcpy record per copy, all with the call's one correlation id. */
static fg_copy_req fg_batch_req(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hs, bool pt)
{
    return (fg_copy_req){
        .dst = fg_end_decl(FG_DPTR(dst), FG_DECL_UNIFIED),
        .src = fg_end_decl(FG_DPTR(src), FG_DECL_UNIFIED),
        .width = n,
        .height = 1,
        .depth = 1,
        .stream = hs,
        .per_thread = pt,
    };
}

static CUresult fg_copy_batch(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                              size_t *fail, CUstream hs, bool pt)
{
    if (!__atomic_load_n(&fg.initialized, __ATOMIC_ACQUIRE))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (fail)
        *fail = SIZE_MAX;
    if (!count || !dsts || !srcs || !sizes)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc;
    FG_LOCK();
    bool stream_ok = fg_stream_get(hs, pt, &rc) != NULL;
    FG_UNLOCK();
    if (!stream_ok)
        return rc;
    for (size_t i = 0; i < count; i++) {
        fg_copy_req r = fg_batch_req(dsts[i], srcs[i], sizes[i], hs, pt);
        FG_LOCK();
        rc = fg_copy_check_locked(&r);
        FG_UNLOCK();
        if (rc != CUDA_SUCCESS) {
            if (fail)
                *fail = i;
            return rc;
        }
    }
    const struct fg_cupti_hooks *h = fg_cupti();
    if (h)
        fg_cupti_batch_begin(h);
    for (size_t i = 0; i < count && rc == CUDA_SUCCESS; i++) {
        fg_copy_req r = fg_batch_req(dsts[i], srcs[i], sizes[i], hs, pt);
        rc = fg_copy_submit(&r);
        if (rc != CUDA_SUCCESS && fail)
            *fail = i;
    }
    if (h)
        fg_cupti_batch_end();
    return rc;
}

CUresult CUDAAPI cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
                                    size_t count, CUmemcpyAttributes *attrs, size_t *attrsIdxs,
                                    size_t numAttrs, size_t *failIdx, CUstream hStream)
{
    (void)attrs, (void)attrsIdxs, (void)numAttrs;
    return fg_copy_batch(dsts, srcs, sizes, count, failIdx, hStream, false);
}

CUresult CUDAAPI cuMemcpyBatchAsync_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
                                         size_t count, CUmemcpyAttributes *attrs, size_t *attrsIdxs,
                                         size_t numAttrs, size_t *failIdx, CUstream hStream)
{
    (void)attrs, (void)attrsIdxs, (void)numAttrs;
    return fg_copy_batch(dsts, srcs, sizes, count, failIdx, hStream, true);
}

CUresult CUDAAPI cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
                                       size_t count, CUmemcpyAttributes *attrs, size_t *attrsIdxs,
                                       size_t numAttrs, CUstream hStream)
{
    (void)attrs, (void)attrsIdxs, (void)numAttrs;
    return fg_copy_batch(dsts, srcs, sizes, count, NULL, hStream, false);
}

CUresult CUDAAPI cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
                                            size_t count, CUmemcpyAttributes *attrs,
                                            size_t *attrsIdxs, size_t numAttrs, CUstream hStream)
{
    (void)attrs, (void)attrsIdxs, (void)numAttrs;
    return fg_copy_batch(dsts, srcs, sizes, count, NULL, hStream, true);
}

/* ------------------------------------------------------------------ peer */

static CUresult fg_copy_peer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx,
                             size_t n, bool sync_api, CUstream hs, bool pt)
{
    FG_ENTER();
    bool ok = fg_ctx_from_handle(dctx) && fg_ctx_from_handle(sctx);
    FG_UNLOCK();
    if (!ok)
        return CUDA_ERROR_INVALID_CONTEXT;
    return fg_copy_1d(FG_DPTR(dst), FG_DECL_DEVICE, FG_DPTR(src), FG_DECL_DEVICE, n, sync_api, hs,
                      pt);
}

CUresult CUDAAPI cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                              CUcontext srcContext, size_t ByteCount)
{
    return fg_copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, true, 0, false);
}

CUresult CUDAAPI cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext,
                                   CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount)
{
    return fg_copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, true, 0, true);
}

CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext,
                                   CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount,
                                   CUstream hStream)
{
    return fg_copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, false, hStream,
                        false);
}

CUresult CUDAAPI cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext,
                                        CUdeviceptr srcDevice, CUcontext srcContext,
                                        size_t ByteCount, CUstream hStream)
{
    return fg_copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, false, hStream,
                        true);
}

/* ---------------------------------------------------------- 2D and 3D */

/* One end of a CUDA_MEMCPY2D/3D: resolves the memory type and offset. */
static CUresult fg_end_typed(CUmemorytype t, const void *host, CUdeviceptr dev, size_t off,
                             fg_end *e, bool *check)
{
    *check = false;
    switch (t) {
    case CU_MEMORYTYPE_HOST:
        *e = fg_end_decl(host ? (const char *)host + off : NULL, FG_DECL_HOST);
        return CUDA_SUCCESS;
    case CU_MEMORYTYPE_DEVICE:
        *e = fg_end_decl(dev ? (const char *)(uintptr_t)dev + off : NULL, FG_DECL_DEVICE);
        *check = true;
        return CUDA_SUCCESS;
    case CU_MEMORYTYPE_UNIFIED:
        *e = fg_end_decl(dev ? (const char *)(uintptr_t)dev + off : NULL, FG_DECL_UNIFIED);
        return CUDA_SUCCESS;
    default: return CUDA_ERROR_NOT_SUPPORTED; /* CUDA arrays are not simulated */
    }
}

static CUresult fg_copy_3d(const CUDA_MEMCPY3D *p, bool sync_api, CUstream hs, bool pt)
{
    if (!__atomic_load_n(&fg.initialized, __ATOMIC_ACQUIRE))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    size_t depth = p->Depth ? p->Depth : 1;
    size_t spitch = p->srcPitch ? p->srcPitch : p->WidthInBytes;
    size_t dpitch = p->dstPitch ? p->dstPitch : p->WidthInBytes;
    size_t sheight = p->srcHeight ? p->srcHeight : p->Height;
    size_t dheight = p->dstHeight ? p->dstHeight : p->Height;
    if ((p->Height > 1 || depth > 1) && (spitch < p->WidthInBytes || dpitch < p->WidthInBytes))
        return CUDA_ERROR_INVALID_VALUE;
    if (depth > 1 && (sheight < p->Height || dheight < p->Height))
        return CUDA_ERROR_INVALID_VALUE;
    fg_copy_req r = {
        .width = p->WidthInBytes,
        .height = p->Height,
        .depth = depth,
        .dpitch = dpitch,
        .spitch = spitch,
        .dslice = dpitch * dheight,
        .sslice = spitch * sheight,
        .sync_api = sync_api,
        .stream = hs,
        .per_thread = pt,
    };
    size_t soff = p->srcZ * r.sslice + p->srcY * spitch + p->srcXInBytes;
    size_t doff = p->dstZ * r.dslice + p->dstY * dpitch + p->dstXInBytes;
    CUresult rc =
        fg_end_typed(p->srcMemoryType, p->srcHost, p->srcDevice, soff, &r.src, &r.check_src_dev);
    if (rc == CUDA_SUCCESS)
        rc = fg_end_typed(p->dstMemoryType, p->dstHost, p->dstDevice, doff, &r.dst,
                          &r.check_dst_dev);
    return rc == CUDA_SUCCESS ? fg_copy_submit(&r) : rc;
}

static CUresult fg_copy_2d(const CUDA_MEMCPY2D *p, bool sync_api, CUstream hs, bool pt)
{
    if (!p)
        return __atomic_load_n(&fg.initialized, __ATOMIC_ACQUIRE) ? CUDA_ERROR_INVALID_VALUE
                                                                  : CUDA_ERROR_NOT_INITIALIZED;
    CUDA_MEMCPY3D q = {
        .srcXInBytes = p->srcXInBytes,
        .srcY = p->srcY,
        .srcMemoryType = p->srcMemoryType,
        .srcHost = p->srcHost,
        .srcDevice = p->srcDevice,
        .srcArray = p->srcArray,
        .srcPitch = p->srcPitch,
        .dstXInBytes = p->dstXInBytes,
        .dstY = p->dstY,
        .dstMemoryType = p->dstMemoryType,
        .dstHost = p->dstHost,
        .dstDevice = p->dstDevice,
        .dstArray = p->dstArray,
        .dstPitch = p->dstPitch,
        .WidthInBytes = p->WidthInBytes,
        .Height = p->Height,
        .Depth = 1,
    };
    return fg_copy_3d(&q, sync_api, hs, pt);
}

CUresult CUDAAPI cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy)
{
    return fg_copy_2d(pCopy, true, 0, false);
}

CUresult CUDAAPI cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *pCopy)
{
    return fg_copy_2d(pCopy, true, 0, true);
}

CUresult CUDAAPI cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *pCopy)
{
    return fg_copy_2d(pCopy, true, 0, false);
}

CUresult CUDAAPI cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *pCopy)
{
    return fg_copy_2d(pCopy, true, 0, true);
}

CUresult CUDAAPI cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
    return fg_copy_2d(pCopy, false, hStream, false);
}

CUresult CUDAAPI cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
    return fg_copy_2d(pCopy, false, hStream, true);
}

CUresult CUDAAPI cuMemcpy3D_v2(const CUDA_MEMCPY3D *pCopy)
{
    return fg_copy_3d(pCopy, true, 0, false);
}

CUresult CUDAAPI cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *pCopy)
{
    return fg_copy_3d(pCopy, true, 0, true);
}

CUresult CUDAAPI cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *pCopy, CUstream hStream)
{
    return fg_copy_3d(pCopy, false, hStream, false);
}

CUresult CUDAAPI cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *pCopy, CUstream hStream)
{
    return fg_copy_3d(pCopy, false, hStream, true);
}
