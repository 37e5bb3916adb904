/*
 * Allocation: synchronous and stream-ordered device memory. Records bytes
 * allocated; frees carry CT_APIF_FREE (their size is not known here).
 */
#include "shim/cuda_record.h"

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *, size_t, CUstream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr, CUstream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *, size_t, CUmemoryPool, CUstream);

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*alloc_async_fn)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*free_async_fn)(CUdeviceptr, CUstream);
typedef CUresult (*alloc_pool_fn)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);

static void alloc_done(struct ct_call *c, enum ct_sym sym, CUresult r, unsigned flags, CUstream s,
                       int has_stream, uint64_t bytes)
{
    int dev = -1;
    uint64_t sid = has_stream ? ct_stream_id(s, flags & CT_APIF_PER_THREAD, &dev) : 0;
    ct_call_simple(c, sym, CT_FAM_ALLOC, r, sid, dev, flags, bytes, 0);
    ct_call_leave(c);
}

CUresult ct_impl_cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
    alloc_fn real = CT_REAL(alloc_fn, CT_SYM_cuMemAlloc_v2);
    if (!real)
        return CT_NOT_AVAILABLE;
    if (!ct_shim_recording())
        return real(p, n);
    struct ct_call c;
    ct_call_enter(&c);
    CUresult r = real(p, n);
    alloc_done(&c, CT_SYM_cuMemAlloc_v2, r, 0, NULL, 0, n);
    return r;
}

CUresult ct_impl_cuMemFree_v2(CUdeviceptr p)
{
    free_fn real = CT_REAL(free_fn, CT_SYM_cuMemFree_v2);
    if (!real)
        return CT_NOT_AVAILABLE;
    if (!ct_shim_recording())
        return real(p);
    struct ct_call c;
    ct_call_enter(&c);
    CUresult r = real(p);
    alloc_done(&c, CT_SYM_cuMemFree_v2, r, CT_APIF_FREE, NULL, 0, 0);
    return r;
}

static CUresult alloc_async(enum ct_sym sym, unsigned flags, CUdeviceptr *p, size_t n, CUstream s)
{
    alloc_async_fn real = CT_REAL(alloc_async_fn, sym);
    if (!real)
        return CT_NOT_AVAILABLE;
    if (!ct_shim_recording())
        return real(p, n, s);
    struct ct_call c;
    ct_call_enter(&c);
    CUresult r = real(p, n, s);
    alloc_done(&c, sym, r, flags | CT_APIF_ASYNC, s, 1, n);
    return r;
}

CUresult ct_impl_cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s)
{
    return alloc_async(CT_SYM_cuMemAllocAsync, 0, p, n, s);
}

CUresult ct_impl_cuMemAllocAsync_ptsz(CUdeviceptr *p, size_t n, CUstream s)
{
    return alloc_async(CT_SYM_cuMemAllocAsync_ptsz, CT_APIF_PER_THREAD, p, n, s);
}

static CUresult free_async(enum ct_sym sym, unsigned flags, CUdeviceptr p, CUstream s)
{
    free_async_fn real = CT_REAL(free_async_fn, sym);
    if (!real)
        return CT_NOT_AVAILABLE;
    if (!ct_shim_recording())
        return real(p, s);
    struct ct_call c;
    ct_call_enter(&c);
    CUresult r = real(p, s);
    alloc_done(&c, sym, r, flags | CT_APIF_ASYNC | CT_APIF_FREE, s, 1, 0);
    return r;
}

CUresult ct_impl_cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
    return free_async(CT_SYM_cuMemFreeAsync, 0, p, s);
}

CUresult ct_impl_cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s)
{
    return free_async(CT_SYM_cuMemFreeAsync_ptsz, CT_APIF_PER_THREAD, p, s);
}

static CUresult alloc_pool(enum ct_sym sym, unsigned flags, CUdeviceptr *p, size_t n,
                           CUmemoryPool pool, CUstream s)
{
    alloc_pool_fn real = CT_REAL(alloc_pool_fn, sym);
    if (!real)
        return CT_NOT_AVAILABLE;
    if (!ct_shim_recording())
        return real(p, n, pool, s);
    struct ct_call c;
    ct_call_enter(&c);
    CUresult r = real(p, n, pool, s);
    alloc_done(&c, sym, r, flags | CT_APIF_ASYNC, s, 1, n);
    return r;
}

CUresult ct_impl_cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s)
{
    return alloc_pool(CT_SYM_cuMemAllocFromPoolAsync, 0, p, n, pool, s);
}

CUresult ct_impl_cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *p, size_t n, CUmemoryPool pool,
                                              CUstream s)
{
    return alloc_pool(CT_SYM_cuMemAllocFromPoolAsync_ptsz, CT_APIF_PER_THREAD, p, n, pool, s);
}
