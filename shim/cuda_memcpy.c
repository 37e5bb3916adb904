/*
 * Copies: every synchronous and asynchronous variant, 1D/2D/3D and peer,
 * legacy and per-thread, and batches (cuMemcpyBatchAsync). Records bytes
 * and direction; the direction of a unified-addressing copy (cuMemcpy,
 * cuMemcpyAsync, a batch's copies) is looked up from the pointers' memory
 * types after the call.
 */
#include "shim/gpu.h"

CUresult cuMemcpy_ptds(CUdeviceptr, CUdeviceptr, size_t);
CUresult cuMemcpyAsync_ptsz(CUdeviceptr, CUdeviceptr, size_t, CUstream);
CUresult cuMemcpyPeer_ptds(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t);
CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream);
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr, const void *, size_t);
CUresult cuMemcpyDtoH_v2_ptds(void *, CUdeviceptr, size_t);
CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr, CUdeviceptr, size_t);
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr, const void *, size_t, CUstream);
CUresult cuMemcpyDtoHAsync_v2_ptsz(void *, CUdeviceptr, size_t, CUstream);
CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr, CUdeviceptr, size_t, CUstream);
CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *);
CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *);
CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *, CUstream);
CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *);
CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *, CUstream);

typedef CUresult (*ptr_attr_fn)(void *, CUpointer_attribute, CUdeviceptr);

/* Host unless the driver knows the pointer as device or managed memory. */
static int is_device_ptr(CUdeviceptr p)
{
    static ptr_attr_fn _Atomic get;
    ptr_attr_fn f = atomic_load_explicit(&get, memory_order_acquire);
    if (!f) {
        f = (ptr_attr_fn)ct_fn(ct_driver_sym("cuPointerGetAttribute"));
        atomic_store_explicit(&get, f, memory_order_release);
    }
    unsigned int type = 0;
    CT_ERRNO_SAVE;
    CUresult r = f ? f(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) : CUDA_ERROR_NOT_INITIALIZED;
    CT_ERRNO_RESTORE;
    if (r != CUDA_SUCCESS)
        return 0;
    return type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED ||
           type == CU_MEMORYTYPE_ARRAY;
}

static unsigned kind_of(int src_dev, int dst_dev)
{
    if (src_dev)
        return dst_dev ? CT_COPY_DTOD : CT_COPY_DTOH;
    return dst_dev ? CT_COPY_HTOD : CT_COPY_HTOH;
}

static unsigned kind_of_types(CUmemorytype src, CUdeviceptr sptr, CUmemorytype dst,
                              CUdeviceptr dptr)
{
    int s = src == CU_MEMORYTYPE_UNIFIED ? is_device_ptr(sptr) : src != CU_MEMORYTYPE_HOST;
    int d = dst == CU_MEMORYTYPE_UNIFIED ? is_device_ptr(dptr) : dst != CU_MEMORYTYPE_HOST;
    return kind_of(s, d);
}

static void done(struct ct_call *c, struct ct_gpu_op *g, enum ct_sym sym, CUresult r,
                 unsigned flags, CUstream s, uint64_t bytes, unsigned kind)
{
    int dev;
    uint64_t sid = ct_stream_id(s, flags & CT_APIF_PER_THREAD, &dev);
    ct_gpu_after(c, g, s, flags, sid, dev, CT_GPU_MEMCPY, 0, bytes, kind);
    ct_call_simple(c, sym, CT_FAM_MEMCPY, r, sid, dev, flags, bytes, kind);
    ct_call_leave(c);
}

/* 1D copies between two addresses (HtoD, DtoH, DtoD and unified). */
typedef CUresult (*copy_fn)(CUdeviceptr, CUdeviceptr, size_t);
typedef CUresult (*copy_async_fn)(CUdeviceptr, CUdeviceptr, size_t, CUstream);

static CUresult copy1d(enum ct_sym sym, unsigned flags, int kind, CUdeviceptr dst, CUdeviceptr src,
                       size_t n, CUstream s, int async)
{
    ct_voidfn real = ct_fn(ct_real_get(sym));
    if (!real)
        return CT_NOT_AVAILABLE;
    if (!ct_shim_recording())
        return async ? ((copy_async_fn)real)(dst, src, n, s) : ((copy_fn)real)(dst, src, n);
    struct ct_call c;
    struct ct_gpu_op g;
    ct_call_enter_gpu(&c, s, flags, &g);
    CUresult r = async ? ((copy_async_fn)real)(dst, src, n, s) : ((copy_fn)real)(dst, src, n);
    if (kind < 0)
        kind = (int)kind_of(is_device_ptr(src), is_device_ptr(dst));
    done(&c, &g, sym, r, flags | (async ? CT_APIF_ASYNC : 0), s, n, (unsigned)kind);
    return r;
}

/* The HtoD/DtoH signatures differ from (dst, src) device pointers only in
 * pointer types of the same size; they go through copy1d with casts. */
#define HOST(p) ((CUdeviceptr)(uintptr_t)(p))

CUresult ct_impl_cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    return copy1d(CT_SYM_cuMemcpy, 0, -1, dst, src, n, NULL, 0);
}
CUresult ct_impl_cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    return copy1d(CT_SYM_cuMemcpy_ptds, CT_APIF_PER_THREAD, -1, dst, src, n, NULL, 0);
}
CUresult ct_impl_cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    return copy1d(CT_SYM_cuMemcpyAsync, 0, -1, dst, src, n, s, 1);
}
CUresult ct_impl_cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    return copy1d(CT_SYM_cuMemcpyAsync_ptsz, CT_APIF_PER_THREAD, -1, dst, src, n, s, 1);
}
CUresult ct_impl_cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
    return copy1d(CT_SYM_cuMemcpyHtoD_v2, 0, CT_COPY_HTOD, dst, HOST(src), n, NULL, 0);
}
CUresult ct_impl_cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n)
{
    return copy1d(CT_SYM_cuMemcpyHtoD_v2_ptds, CT_APIF_PER_THREAD, CT_COPY_HTOD, dst, HOST(src), n,
                  NULL, 0);
}
CUresult ct_impl_cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
    return copy1d(CT_SYM_cuMemcpyDtoH_v2, 0, CT_COPY_DTOH, HOST(dst), src, n, NULL, 0);
}
CUresult ct_impl_cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n)
{
    return copy1d(CT_SYM_cuMemcpyDtoH_v2_ptds, CT_APIF_PER_THREAD, CT_COPY_DTOH, HOST(dst), src, n,
                  NULL, 0);
}
CUresult ct_impl_cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    return copy1d(CT_SYM_cuMemcpyDtoD_v2, 0, CT_COPY_DTOD, dst, src, n, NULL, 0);
}
CUresult ct_impl_cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    return copy1d(CT_SYM_cuMemcpyDtoD_v2_ptds, CT_APIF_PER_THREAD, CT_COPY_DTOD, dst, src, n, NULL,
                  0);
}
CUresult ct_impl_cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
    return copy1d(CT_SYM_cuMemcpyHtoDAsync_v2, 0, CT_COPY_HTOD, dst, HOST(src), n, s, 1);
}
CUresult ct_impl_cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
    return copy1d(CT_SYM_cuMemcpyHtoDAsync_v2_ptsz, CT_APIF_PER_THREAD, CT_COPY_HTOD, dst,
                  HOST(src), n, s, 1);
}
CUresult ct_impl_cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
    return copy1d(CT_SYM_cuMemcpyDtoHAsync_v2, 0, CT_COPY_DTOH, HOST(dst), src, n, s, 1);
}
CUresult ct_impl_cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
    return copy1d(CT_SYM_cuMemcpyDtoHAsync_v2_ptsz, CT_APIF_PER_THREAD, CT_COPY_DTOH, HOST(dst),
                  src, n, s, 1);
}
CUresult ct_impl_cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    return copy1d(CT_SYM_cuMemcpyDtoDAsync_v2, 0, CT_COPY_DTOD, dst, src, n, s, 1);
}
CUresult ct_impl_cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    return copy1d(CT_SYM_cuMemcpyDtoDAsync_v2_ptsz, CT_APIF_PER_THREAD, CT_COPY_DTOD, dst, src, n,
                  s, 1);
}

/* Peer copies between contexts. */
typedef CUresult (*peer_fn)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t);
typedef CUresult (*peer_async_fn)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream);

static CUresult peer(enum ct_sym sym, unsigned flags, CUdeviceptr dst, CUcontext dctx,
                     CUdeviceptr src, CUcontext sctx, size_t n, CUstream s, int async)
{
    ct_voidfn real = ct_fn(ct_real_get(sym));
    if (!real)
        return CT_NOT_AVAILABLE;
#define CALL_PEER                                                                                  \
    (async ? ((peer_async_fn)real)(dst, dctx, src, sctx, n, s)                                     \
           : ((peer_fn)real)(dst, dctx, src, sctx, n))
    if (!ct_shim_recording())
        return CALL_PEER;
    struct ct_call c;
    struct ct_gpu_op g;
    ct_call_enter_gpu(&c, s, flags, &g);
    CUresult r = CALL_PEER;
#undef CALL_PEER
    done(&c, &g, sym, r, flags | (async ? CT_APIF_ASYNC : 0), s, n, CT_COPY_PEER);
    return r;
}

CUresult ct_impl_cuMemcpyPeer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx,
                              size_t n)
{
    return peer(CT_SYM_cuMemcpyPeer, 0, dst, dctx, src, sctx, n, NULL, 0);
}
CUresult ct_impl_cuMemcpyPeer_ptds(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx,
                                   size_t n)
{
    return peer(CT_SYM_cuMemcpyPeer_ptds, CT_APIF_PER_THREAD, dst, dctx, src, sctx, n, NULL, 0);
}
CUresult ct_impl_cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx,
                                   size_t n, CUstream s)
{
    return peer(CT_SYM_cuMemcpyPeerAsync, 0, dst, dctx, src, sctx, n, s, 1);
}
CUresult ct_impl_cuMemcpyPeerAsync_ptsz(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,
                                        CUcontext sctx, size_t n, CUstream s)
{
    return peer(CT_SYM_cuMemcpyPeerAsync_ptsz, CT_APIF_PER_THREAD, dst, dctx, src, sctx, n, s, 1);
}

/*
 * Batches (CUDA 12.8 on; NCCL's copy-engine collectives make them): one
 * call enqueues `count` 1D copies between unified addresses on the stream,
 * in order. One API record: bytes the sum of the sizes, the copies' count
 * in its grid x field and, when a 12.8 call failed on one copy, that
 * copy's index + 1 (failIdx + 1) in grid y (docs/recording.md, "Copies");
 * the direction that of every copy when they agree, else none. CUPTI
 * gives each copy a memcpy record, all with the call's correlation id.
 * The driver's result, its failIdx and errno reach the caller unchanged.
 */
typedef CUresult (*batch_fn)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *,
                             size_t *, size_t, size_t *, CUstream);
typedef CUresult (*batch_v2_fn)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t,
                                CUmemcpyAttributes *, size_t *, size_t, CUstream);

struct batch_args {
    CUdeviceptr *dsts, *srcs;
    size_t *sizes, count;
    CUmemcpyAttributes *attrs;
    size_t *attr_idxs, nattrs;
    size_t *fail; /* 12.8's failIdx; NULL for _v2 or when the caller gave none */
    int v2;
};

static CUresult batch_call(ct_voidfn real, const struct batch_args *a, CUstream s)
{
    if (a->v2)
        return ((batch_v2_fn)real)(a->dsts, a->srcs, a->sizes, a->count, a->attrs, a->attr_idxs,
                                   a->nattrs, s);
    return ((batch_fn)real)(a->dsts, a->srcs, a->sizes, a->count, a->attrs, a->attr_idxs, a->nattrs,
                            a->fail, s);
}

static CUresult batch(enum ct_sym sym, unsigned flags, const struct batch_args *a, CUstream s)
{
    ct_voidfn real = ct_fn(ct_real_get(sym));
    if (!real)
        return CT_NOT_AVAILABLE;
    if (!ct_shim_recording())
        return batch_call(real, a, s);
    struct ct_call c;
    struct ct_gpu_op g;
    ct_call_enter_gpu(&c, s, flags, &g);
    CUresult r = batch_call(real, a, s);
    CT_ERRNO_SAVE; /* the pointer look-ups below reach the driver */
    uint64_t bytes = 0;
    int kind = -1;
    for (size_t i = 0; a->sizes && a->dsts && a->srcs && i < a->count; i++) {
        bytes += a->sizes[i];
        int k = (int)kind_of(is_device_ptr(a->srcs[i]), is_device_ptr(a->dsts[i]));
        kind = kind < 0 || kind == k ? k : CT_COPY_NONE;
    }
    uint64_t failed = r != CUDA_SUCCESS && a->fail && *a->fail < UINT32_MAX ? *a->fail + 1 : 0;
    flags |= CT_APIF_ASYNC;
    int dev;
    uint64_t sid = ct_stream_id(s, flags & CT_APIF_PER_THREAD, &dev);
    unsigned k = kind < 0 ? CT_COPY_NONE : (unsigned)kind;
    ct_gpu_after(&c, &g, s, flags, sid, dev, CT_GPU_MEMCPY, 0, bytes, k);
    if (__builtin_expect(ct_cfg.stacks != 0, 1) && ct_stack_wanted(0))
        ct_stack_capture(c.corr);
    uint64_t *w = ct_call_record(&c, sym, CT_FAM_MEMCPY, r, sid, dev, flags, k);
    if (w) {
        w[CT_PA_KERNEL_SHMEM] = 0;
        w[CT_PA_GRID_XY] = (a->count < UINT32_MAX ? a->count : UINT32_MAX) | failed << 32;
        w[CT_PA_GRID_Z_BLK_X] = 0;
        w[CT_PA_BLK_YZ] = 0;
        w[CT_PA_BYTES] = bytes;
        ct_call_commit();
    }
    ct_call_leave(&c);
    CT_ERRNO_RESTORE;
    return r;
}

CUresult ct_impl_cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
                                    size_t count, CUmemcpyAttributes *attrs, size_t *idxs,
                                    size_t nattrs, size_t *fail, CUstream s)
{
    struct batch_args a = {dsts, srcs, sizes, count, attrs, idxs, nattrs, fail, 0};
    return batch(CT_SYM_cuMemcpyBatchAsync, 0, &a, s);
}
CUresult ct_impl_cuMemcpyBatchAsync_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
                                         size_t count, CUmemcpyAttributes *attrs, size_t *idxs,
                                         size_t nattrs, size_t *fail, CUstream s)
{
    struct batch_args a = {dsts, srcs, sizes, count, attrs, idxs, nattrs, fail, 0};
    return batch(CT_SYM_cuMemcpyBatchAsync_ptsz, CT_APIF_PER_THREAD, &a, s);
}
CUresult ct_impl_cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
                                       size_t count, CUmemcpyAttributes *attrs, size_t *idxs,
                                       size_t nattrs, CUstream s)
{
    struct batch_args a = {dsts, srcs, sizes, count, attrs, idxs, nattrs, NULL, 1};
    return batch(CT_SYM_cuMemcpyBatchAsync_v2, 0, &a, s);
}
CUresult ct_impl_cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
                                            size_t count, CUmemcpyAttributes *attrs, size_t *idxs,
                                            size_t nattrs, CUstream s)
{
    struct batch_args a = {dsts, srcs, sizes, count, attrs, idxs, nattrs, NULL, 1};
    return batch(CT_SYM_cuMemcpyBatchAsync_v2_ptsz, CT_APIF_PER_THREAD, &a, s);
}

/* 2D and 3D copies: bytes and direction come from the descriptor. */
typedef CUresult (*copy2d_fn)(const CUDA_MEMCPY2D *);
typedef CUresult (*copy2d_async_fn)(const CUDA_MEMCPY2D *, CUstream);
typedef CUresult (*copy3d_fn)(const CUDA_MEMCPY3D *);
typedef CUresult (*copy3d_async_fn)(const CUDA_MEMCPY3D *, CUstream);

static CUresult copy2d(enum ct_sym sym, unsigned flags, const CUDA_MEMCPY2D *p, CUstream s,
                       int async)
{
    ct_voidfn real = ct_fn(ct_real_get(sym));
    if (!real)
        return CT_NOT_AVAILABLE;
    if (!ct_shim_recording() || !p)
        return async ? ((copy2d_async_fn)real)(p, s) : ((copy2d_fn)real)(p);
    struct ct_call c;
    struct ct_gpu_op g;
    ct_call_enter_gpu(&c, s, flags, &g);
    CUresult r = async ? ((copy2d_async_fn)real)(p, s) : ((copy2d_fn)real)(p);
    unsigned kind = kind_of_types(p->srcMemoryType, p->srcDevice, p->dstMemoryType, p->dstDevice);
    done(&c, &g, sym, r, flags | (async ? CT_APIF_ASYNC : 0), s,
         (uint64_t)p->WidthInBytes * p->Height, kind);
    return r;
}

static CUresult copy3d(enum ct_sym sym, unsigned flags, const CUDA_MEMCPY3D *p, CUstream s,
                       int async)
{
    ct_voidfn real = ct_fn(ct_real_get(sym));
    if (!real)
        return CT_NOT_AVAILABLE;
    if (!ct_shim_recording() || !p)
        return async ? ((copy3d_async_fn)real)(p, s) : ((copy3d_fn)real)(p);
    struct ct_call c;
    struct ct_gpu_op g;
    ct_call_enter_gpu(&c, s, flags, &g);
    CUresult r = async ? ((copy3d_async_fn)real)(p, s) : ((copy3d_fn)real)(p);
    unsigned kind = kind_of_types(p->srcMemoryType, p->srcDevice, p->dstMemoryType, p->dstDevice);
    done(&c, &g, sym, r, flags | (async ? CT_APIF_ASYNC : 0), s,
         (uint64_t)p->WidthInBytes * p->Height * p->Depth, kind);
    return r;
}

CUresult ct_impl_cuMemcpy2D_v2(const CUDA_MEMCPY2D *p)
{
    return copy2d(CT_SYM_cuMemcpy2D_v2, 0, p, NULL, 0);
}
CUresult ct_impl_cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *p)
{
    return copy2d(CT_SYM_cuMemcpy2D_v2_ptds, CT_APIF_PER_THREAD, p, NULL, 0);
}
CUresult ct_impl_cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *p)
{
    return copy2d(CT_SYM_cuMemcpy2DUnaligned_v2, 0, p, NULL, 0);
}
CUresult ct_impl_cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *p)
{
    return copy2d(CT_SYM_cuMemcpy2DUnaligned_v2_ptds, CT_APIF_PER_THREAD, p, NULL, 0);
}
CUresult ct_impl_cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *p, CUstream s)
{
    return copy2d(CT_SYM_cuMemcpy2DAsync_v2, 0, p, s, 1);
}
CUresult ct_impl_cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *p, CUstream s)
{
    return copy2d(CT_SYM_cuMemcpy2DAsync_v2_ptsz, CT_APIF_PER_THREAD, p, s, 1);
}
CUresult ct_impl_cuMemcpy3D_v2(const CUDA_MEMCPY3D *p)
{
    return copy3d(CT_SYM_cuMemcpy3D_v2, 0, p, NULL, 0);
}
CUresult ct_impl_cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *p)
{
    return copy3d(CT_SYM_cuMemcpy3D_v2_ptds, CT_APIF_PER_THREAD, p, NULL, 0);
}
CUresult ct_impl_cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *p, CUstream s)
{
    return copy3d(CT_SYM_cuMemcpy3DAsync_v2, 0, p, s, 1);
}
CUresult ct_impl_cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *p, CUstream s)
{
    return copy3d(CT_SYM_cuMemcpy3DAsync_v2_ptsz, CT_APIF_PER_THREAD, p, s, 1);
}
