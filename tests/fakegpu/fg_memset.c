/*
 * fg_memset.c - cuMemsetD8/D16/D32 and the 2D forms, synchronous (legacy
 * and _ptds) and Async (legacy and _ptsz).  A memset lasts
 * bytes / FAKEGPU_HBM_GBPS; the synchronous forms return once it has
 * completed in virtual time.  The destination must lie in memory the fake
 * allocated or registered (a bad pointer is an error, not a crash).
 */
#include "fg_internal.h"

typedef struct fg_memset_req {
    CUdeviceptr dst;
    size_t pitch, width, height; /* width in elements */
    uint32_t value;
    unsigned elsize;
    bool sync_api;
    CUstream stream;
    bool per_thread;
} fg_memset_req;

static CUresult fg_memset_submit(const fg_memset_req *r)
{
    FG_ENTER();
    size_t row = r->width * r->elsize;
    size_t pitch = r->height > 1 ? r->pitch : row;
    if (r->height > 1 && pitch < row)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (r->dst % r->elsize || (r->height > 1 && pitch % r->elsize))
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    size_t extent = row && r->height ? (r->height - 1) * pitch + row : 0;
    if (extent) {
        const fg_alloc *a = fg_mem_find((uintptr_t)r->dst);
        if (!a || extent > a->size - ((uintptr_t)r->dst - a->base))
            FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    }
    CUresult rc;
    fg_stream *s = fg_stream_get(r->stream, r->per_thread, &rc);
    if (!s)
        FG_RETURN(rc);
    if (r->sync_api && s->capture)
        FG_RETURN(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    fg_desc d = {.kind = FG_OP_MEMSET, .name = "memset"};
    d.duration_ns = fg_bytes_ns(row * r->height, fg.hbm_gbps);
    d.u.memset.dst = (char *)(uintptr_t)r->dst;
    d.u.memset.pitch = pitch;
    d.u.memset.width = r->width;
    d.u.memset.height = r->height;
    d.u.memset.value = r->value;
    d.u.memset.elsize = r->elsize;
    FG_RETURN(fg_submit(s, &d, r->sync_api));
}

static CUresult fg_memset(CUdeviceptr dst, size_t pitch, uint32_t value, unsigned elsize,
                          size_t width, size_t height, bool sync_api, CUstream hs, bool pt)
{
    fg_memset_req r = {
        .dst = dst,
        .pitch = pitch,
        .width = width,
        .height = height,
        .value = value,
        .elsize = elsize,
        .sync_api = sync_api,
        .stream = hs,
        .per_thread = pt,
    };
    return fg_memset_submit(&r);
}

/* ------------------------------------------------------------ synchronous */

CUresult CUDAAPI cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    return fg_memset(dstDevice, 0, uc, 1, N, 1, true, 0, false);
}

CUresult CUDAAPI cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    return fg_memset(dstDevice, 0, uc, 1, N, 1, true, 0, true);
}

CUresult CUDAAPI cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N)
{
    return fg_memset(dstDevice, 0, us, 2, N, 1, true, 0, false);
}

CUresult CUDAAPI cuMemsetD16_v2_ptds(CUdeviceptr dstDevice, unsigned short us, size_t N)
{
    return fg_memset(dstDevice, 0, us, 2, N, 1, true, 0, true);
}

CUresult CUDAAPI cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    return fg_memset(dstDevice, 0, ui, 4, N, 1, true, 0, false);
}

CUresult CUDAAPI cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    return fg_memset(dstDevice, 0, ui, 4, N, 1, true, 0, true);
}

CUresult CUDAAPI cuMemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc,
                                 size_t Width, size_t Height)
{
    return fg_memset(dstDevice, dstPitch, uc, 1, Width, Height, true, 0, false);
}

CUresult CUDAAPI cuMemsetD2D8_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc,
                                      size_t Width, size_t Height)
{
    return fg_memset(dstDevice, dstPitch, uc, 1, Width, Height, true, 0, true);
}

CUresult CUDAAPI cuMemsetD2D16_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us,
                                  size_t Width, size_t Height)
{
    return fg_memset(dstDevice, dstPitch, us, 2, Width, Height, true, 0, false);
}

CUresult CUDAAPI cuMemsetD2D16_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us,
                                       size_t Width, size_t Height)
{
    return fg_memset(dstDevice, dstPitch, us, 2, Width, Height, true, 0, true);
}

CUresult CUDAAPI cuMemsetD2D32_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,
                                  size_t Width, size_t Height)
{
    return fg_memset(dstDevice, dstPitch, ui, 4, Width, Height, true, 0, false);
}

CUresult CUDAAPI cuMemsetD2D32_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,
                                       size_t Width, size_t Height)
{
    return fg_memset(dstDevice, dstPitch, ui, 4, Width, Height, true, 0, true);
}

/* ------------------------------------------------------------------ async */

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N,
                                 CUstream hStream)
{
    return fg_memset(dstDevice, 0, uc, 1, N, 1, false, hStream, false);
}

CUresult CUDAAPI cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N,
                                      CUstream hStream)
{
    return fg_memset(dstDevice, 0, uc, 1, N, 1, false, hStream, true);
}

CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N,
                                  CUstream hStream)
{
    return fg_memset(dstDevice, 0, us, 2, N, 1, false, hStream, false);
}

CUresult CUDAAPI cuMemsetD16Async_ptsz(CUdeviceptr dstDevice, unsigned short us, size_t N,
                                       CUstream hStream)
{
    return fg_memset(dstDevice, 0, us, 2, N, 1, false, hStream, true);
}

CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N,
                                  CUstream hStream)
{
    return fg_memset(dstDevice, 0, ui, 4, N, 1, false, hStream, false);
}

CUresult CUDAAPI cuMemsetD32Async_ptsz(CUdeviceptr dstDevice, unsigned int ui, size_t N,
                                       CUstream hStream)
{
    return fg_memset(dstDevice, 0, ui, 4, N, 1, false, hStream, true);
}

CUresult CUDAAPI cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc,
                                   size_t Width, size_t Height, CUstream hStream)
{
    return fg_memset(dstDevice, dstPitch, uc, 1, Width, Height, false, hStream, false);
}

CUresult CUDAAPI cuMemsetD2D8Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc,
                                        size_t Width, size_t Height, CUstream hStream)
{
    return fg_memset(dstDevice, dstPitch, uc, 1, Width, Height, false, hStream, true);
}

CUresult CUDAAPI cuMemsetD2D16Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us,
                                    size_t Width, size_t Height, CUstream hStream)
{
    return fg_memset(dstDevice, dstPitch, us, 2, Width, Height, false, hStream, false);
}

CUresult CUDAAPI cuMemsetD2D16Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us,
                                         size_t Width, size_t Height, CUstream hStream)
{
    return fg_memset(dstDevice, dstPitch, us, 2, Width, Height, false, hStream, true);
}

CUresult CUDAAPI cuMemsetD2D32Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,
                                    size_t Width, size_t Height, CUstream hStream)
{
    return fg_memset(dstDevice, dstPitch, ui, 4, Width, Height, false, hStream, false);
}

CUresult CUDAAPI cuMemsetD2D32Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,
                                         size_t Width, size_t Height, CUstream hStream)
{
    return fg_memset(dstDevice, dstPitch, ui, 4, Width, Height, false, hStream, true);
}
