/*
 * Memsets: D8/D16/D32, their 2D forms, synchronous and asynchronous, legacy
 * and per-thread. Records the bytes set (elements x element size).
 *
 * The value argument is unsigned char, short or int depending on the
 * variant; on the x86-64 and aarch64 ABIs each travels in a full integer
 * register, so one helper calls all of them with an unsigned int.
 */
#include "shim/gpu.h"

CUresult cuMemsetD8_v2_ptds(CUdeviceptr, unsigned char, size_t);
CUresult cuMemsetD16_v2_ptds(CUdeviceptr, unsigned short, size_t);
CUresult cuMemsetD32_v2_ptds(CUdeviceptr, unsigned int, size_t);
CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr, size_t, unsigned char, size_t, size_t);
CUresult cuMemsetD2D16_v2_ptds(CUdeviceptr, size_t, unsigned short, size_t, size_t);
CUresult cuMemsetD2D32_v2_ptds(CUdeviceptr, size_t, unsigned int, size_t, size_t);
CUresult cuMemsetD8Async_ptsz(CUdeviceptr, unsigned char, size_t, CUstream);
CUresult cuMemsetD16Async_ptsz(CUdeviceptr, unsigned short, size_t, CUstream);
CUresult cuMemsetD32Async_ptsz(CUdeviceptr, unsigned int, size_t, CUstream);
CUresult cuMemsetD2D8Async_ptsz(CUdeviceptr, size_t, unsigned char, size_t, size_t, CUstream);
CUresult cuMemsetD2D16Async_ptsz(CUdeviceptr, size_t, unsigned short, size_t, size_t, CUstream);
CUresult cuMemsetD2D32Async_ptsz(CUdeviceptr, size_t, unsigned int, size_t, size_t, CUstream);

typedef CUresult (*set1_fn)(CUdeviceptr, unsigned, size_t);
typedef CUresult (*set1_async_fn)(CUdeviceptr, unsigned, size_t, CUstream);
typedef CUresult (*set2_fn)(CUdeviceptr, size_t, unsigned, size_t, size_t);
typedef CUresult (*set2_async_fn)(CUdeviceptr, size_t, unsigned, size_t, size_t, CUstream);

static CUresult set1(enum ct_sym sym, unsigned flags, unsigned elem, CUdeviceptr d, unsigned v,
                     size_t n, CUstream s, int async)
{
    ct_voidfn real = ct_fn(ct_real_get(sym));
    if (!real)
        return CT_NOT_AVAILABLE;
#define CALL_SET1 (async ? ((set1_async_fn)real)(d, v, n, s) : ((set1_fn)real)(d, v, n))
    if (!ct_shim_recording())
        return CALL_SET1;
    struct ct_call c;
    struct ct_gpu_op g;
    ct_call_enter_gpu(&c, s, flags, &g);
    CUresult r = CALL_SET1;
#undef CALL_SET1
    int dev;
    uint64_t sid = ct_stream_id(s, flags & CT_APIF_PER_THREAD, &dev);
    ct_gpu_after(&c, &g, s, flags, sid, dev, CT_GPU_MEMSET, 0, (uint64_t)n * elem, 0);
    ct_call_simple(&c, sym, CT_FAM_MEMSET, r, sid, dev, flags | (async ? CT_APIF_ASYNC : 0),
                   (uint64_t)n * elem, 0);
    ct_call_leave(&c);
    return r;
}

static CUresult set2(enum ct_sym sym, unsigned flags, unsigned elem, CUdeviceptr d, size_t pitch,
                     unsigned v, size_t w, size_t h, CUstream s, int async)
{
    ct_voidfn real = ct_fn(ct_real_get(sym));
    if (!real)
        return CT_NOT_AVAILABLE;
#define CALL_SET2                                                                                  \
    (async ? ((set2_async_fn)real)(d, pitch, v, w, h, s) : ((set2_fn)real)(d, pitch, v, w, h))
    if (!ct_shim_recording())
        return CALL_SET2;
    struct ct_call c;
    struct ct_gpu_op g;
    ct_call_enter_gpu(&c, s, flags, &g);
    CUresult r = CALL_SET2;
#undef CALL_SET2
    int dev;
    uint64_t sid = ct_stream_id(s, flags & CT_APIF_PER_THREAD, &dev);
    ct_gpu_after(&c, &g, s, flags, sid, dev, CT_GPU_MEMSET, 0, (uint64_t)w * h * elem, 0);
    ct_call_simple(&c, sym, CT_FAM_MEMSET, r, sid, dev, flags | (async ? CT_APIF_ASYNC : 0),
                   (uint64_t)w * h * elem, 0);
    ct_call_leave(&c);
    return r;
}

#define PT CT_APIF_PER_THREAD

CUresult ct_impl_cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n)
{
    return set1(CT_SYM_cuMemsetD8_v2, 0, 1, d, v, n, NULL, 0);
}
CUresult ct_impl_cuMemsetD8_v2_ptds(CUdeviceptr d, unsigned char v, size_t n)
{
    return set1(CT_SYM_cuMemsetD8_v2_ptds, PT, 1, d, v, n, NULL, 0);
}
CUresult ct_impl_cuMemsetD16_v2(CUdeviceptr d, unsigned short v, size_t n)
{
    return set1(CT_SYM_cuMemsetD16_v2, 0, 2, d, v, n, NULL, 0);
}
CUresult ct_impl_cuMemsetD16_v2_ptds(CUdeviceptr d, unsigned short v, size_t n)
{
    return set1(CT_SYM_cuMemsetD16_v2_ptds, PT, 2, d, v, n, NULL, 0);
}
CUresult ct_impl_cuMemsetD32_v2(CUdeviceptr d, unsigned int v, size_t n)
{
    return set1(CT_SYM_cuMemsetD32_v2, 0, 4, d, v, n, NULL, 0);
}
CUresult ct_impl_cuMemsetD32_v2_ptds(CUdeviceptr d, unsigned int v, size_t n)
{
    return set1(CT_SYM_cuMemsetD32_v2_ptds, PT, 4, d, v, n, NULL, 0);
}
CUresult ct_impl_cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s)
{
    return set1(CT_SYM_cuMemsetD8Async, 0, 1, d, v, n, s, 1);
}
CUresult ct_impl_cuMemsetD8Async_ptsz(CUdeviceptr d, unsigned char v, size_t n, CUstream s)
{
    return set1(CT_SYM_cuMemsetD8Async_ptsz, PT, 1, d, v, n, s, 1);
}
CUresult ct_impl_cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream s)
{
    return set1(CT_SYM_cuMemsetD16Async, 0, 2, d, v, n, s, 1);
}
CUresult ct_impl_cuMemsetD16Async_ptsz(CUdeviceptr d, unsigned short v, size_t n, CUstream s)
{
    return set1(CT_SYM_cuMemsetD16Async_ptsz, PT, 2, d, v, n, s, 1);
}
CUresult ct_impl_cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream s)
{
    return set1(CT_SYM_cuMemsetD32Async, 0, 4, d, v, n, s, 1);
}
CUresult ct_impl_cuMemsetD32Async_ptsz(CUdeviceptr d, unsigned int v, size_t n, CUstream s)
{
    return set1(CT_SYM_cuMemsetD32Async_ptsz, PT, 4, d, v, n, s, 1);
}
CUresult ct_impl_cuMemsetD2D8_v2(CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h)
{
    return set2(CT_SYM_cuMemsetD2D8_v2, 0, 1, d, p, v, w, h, NULL, 0);
}
CUresult ct_impl_cuMemsetD2D8_v2_ptds(CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h)
{
    return set2(CT_SYM_cuMemsetD2D8_v2_ptds, PT, 1, d, p, v, w, h, NULL, 0);
}
CUresult ct_impl_cuMemsetD2D16_v2(CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h)
{
    return set2(CT_SYM_cuMemsetD2D16_v2, 0, 2, d, p, v, w, h, NULL, 0);
}
CUresult ct_impl_cuMemsetD2D16_v2_ptds(CUdeviceptr d, size_t p, unsigned short v, size_t w,
                                       size_t h)
{
    return set2(CT_SYM_cuMemsetD2D16_v2_ptds, PT, 2, d, p, v, w, h, NULL, 0);
}
CUresult ct_impl_cuMemsetD2D32_v2(CUdeviceptr d, size_t p, unsigned int v, size_t w, size_t h)
{
    return set2(CT_SYM_cuMemsetD2D32_v2, 0, 4, d, p, v, w, h, NULL, 0);
}
CUresult ct_impl_cuMemsetD2D32_v2_ptds(CUdeviceptr d, size_t p, unsigned int v, size_t w, size_t h)
{
    return set2(CT_SYM_cuMemsetD2D32_v2_ptds, PT, 4, d, p, v, w, h, NULL, 0);
}
CUresult ct_impl_cuMemsetD2D8Async(CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h,
                                   CUstream s)
{
    return set2(CT_SYM_cuMemsetD2D8Async, 0, 1, d, p, v, w, h, s, 1);
}
CUresult ct_impl_cuMemsetD2D8Async_ptsz(CUdeviceptr d, size_t p, unsigned char v, size_t w,
                                        size_t h, CUstream s)
{
    return set2(CT_SYM_cuMemsetD2D8Async_ptsz, PT, 1, d, p, v, w, h, s, 1);
}
CUresult ct_impl_cuMemsetD2D16Async(CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h,
                                    CUstream s)
{
    return set2(CT_SYM_cuMemsetD2D16Async, 0, 2, d, p, v, w, h, s, 1);
}
CUresult ct_impl_cuMemsetD2D16Async_ptsz(CUdeviceptr d, size_t p, unsigned short v, size_t w,
                                         size_t h, CUstream s)
{
    return set2(CT_SYM_cuMemsetD2D16Async_ptsz, PT, 2, d, p, v, w, h, s, 1);
}
CUresult ct_impl_cuMemsetD2D32Async(CUdeviceptr d, size_t p, unsigned int v, size_t w, size_t h,
                                    CUstream s)
{
    return set2(CT_SYM_cuMemsetD2D32Async, 0, 4, d, p, v, w, h, s, 1);
}
CUresult ct_impl_cuMemsetD2D32Async_ptsz(CUdeviceptr d, size_t p, unsigned int v, size_t w,
                                         size_t h, CUstream s)
{
    return set2(CT_SYM_cuMemsetD2D32Async_ptsz, PT, 4, d, p, v, w, h, s, 1);
}
