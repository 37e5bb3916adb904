/*
 * fg_memory.c - simulated memory.  Device memory is ordinary host memory,
 * so copies really move bytes and kernels' "results" can be inspected with
 * plain pointers.  A registry of ranges (device, pinned, registered,
 * managed) tells copies which side is device memory and whether host memory
 * is pinned (asynchronous copies) or pageable (synchronous copies), and
 * answers cuPointerGetAttribute.
 */
#include "fg_internal.h"

#include <stdlib.h>
#include <string.h>

#define FG_ALIGN 256 /* cudaMalloc's guaranteed alignment */

static fg_alloc *fg_allocs; /* sorted by base */
static size_t fg_nallocs, fg_capallocs;

/* Index of the last range starting at or before p, or -1. */
static long fg_mem_floor(uintptr_t p)
{
    long lo = 0, hi = (long)fg_nallocs - 1, ans = -1;
    while (lo <= hi) {
        long mid = lo + (hi - lo) / 2;
        if (fg_allocs[mid].base <= p) {
            ans = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return ans;
}

const fg_alloc *fg_mem_find(uintptr_t p)
{
    long i = fg_mem_floor(p);
    if (i < 0)
        return NULL;
    const fg_alloc *a = &fg_allocs[i];
    return p - a->base < (a->size ? a->size : 1) ? a : NULL;
}

static bool fg_mem_overlaps(uintptr_t base, size_t size)
{
    long i = fg_mem_floor(base + size - 1);
    return i >= 0 && fg_allocs[i].base + fg_allocs[i].size > base;
}

static bool fg_mem_insert(const fg_alloc *a)
{
    if (!fg_grow((void **)&fg_allocs, &fg_capallocs, fg_nallocs + 1, sizeof *fg_allocs))
        return false;
    size_t i = (size_t)(fg_mem_floor(a->base) + 1);
    memmove(&fg_allocs[i + 1], &fg_allocs[i], (fg_nallocs - i) * sizeof *fg_allocs);
    fg_allocs[i] = *a;
    fg_nallocs++;
    return true;
}

/* Forget the range starting at base and free what the fake allocated. */
void fg_mem_release_locked(uintptr_t base)
{
    long i = fg_mem_floor(base);
    if (i < 0 || fg_allocs[i].base != base)
        return;
    fg_alloc a = fg_allocs[i];
    memmove(&fg_allocs[i], &fg_allocs[i + 1], (fg_nallocs - (size_t)i - 1) * sizeof *fg_allocs);
    fg_nallocs--;
    if (a.kind == FG_MEM_DEVICE || a.kind == FG_MEM_MANAGED)
        fg.devices[a.device].used_mem -= a.size;
    if (a.kind != FG_MEM_HOST_REGISTERED)
        free((void *)a.base);
}

/* Device memory is host memory here, and its first touch faults each page
 * in: a copy into a fresh 200 KB buffer would take 1.3 ms of page faults
 * inside its host call, which a real GPU's memory never has. Allocations
 * up to FG_PREFAULT_MAX are faulted in when made (a real cuMemAlloc is not
 * free either); larger ones stay lazy, so an allocation that is never
 * touched costs nothing. Kernels without MADV_POPULATE_WRITE (before 5.14)
 * keep the faults. */
#define FG_PREFAULT_MAX (64u << 20)

static void fg_prefault(void *p, size_t size)
{
#ifdef MADV_POPULATE_WRITE
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)p & ~(pg - 1), hi = ((uintptr_t)p + size + pg - 1) & ~(pg - 1);
    (void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
#else
    (void)p;
    (void)size;
#endif
}

/* Locked; allocates and registers.  Device memory counts against the
 * simulated 80 GiB. */
static CUresult fg_alloc_range(void **out, size_t size, fg_mem_kind kind, fg_ctx *c)
{
    if (!out || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    fg_device *d = &fg.devices[c->device];
    bool counted = kind == FG_MEM_DEVICE || kind == FG_MEM_MANAGED;
    if (counted && size > FG_DEVICE_MEM_BYTES - d->used_mem)
        return CUDA_ERROR_OUT_OF_MEMORY;
    void *p = NULL;
    if (posix_memalign(&p, FG_ALIGN, size) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    fg_alloc a = {.base = (uintptr_t)p,
                  .size = size,
                  .kind = kind,
                  .device = c->device,
                  .ctx = c,
                  .id = fg_next_id()};
    if (!fg_mem_insert(&a)) {
        free(p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (counted)
        d->used_mem += size;
    if (counted && size <= FG_PREFAULT_MAX)
        fg_prefault(p, size);
    *out = p;
    return CUDA_SUCCESS;
}

static CUresult fg_alloc_entry(void **out, size_t size, fg_mem_kind kind)
{
    FG_ENTER();
    fg_ctx *c;
    if (fg_require_ctx(&c) != CUDA_SUCCESS)
        FG_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    FG_RETURN(fg_alloc_range(out, size, kind, c));
}

CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    void *p = NULL;
    CUresult rc = fg_alloc_entry(dptr ? &p : NULL, bytesize, FG_MEM_DEVICE);
    if (rc == CUDA_SUCCESS)
        *dptr = (CUdeviceptr)(uintptr_t)p;
    return rc;
}

CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    (void)flags;
    void *p = NULL;
    CUresult rc = fg_alloc_entry(dptr ? &p : NULL, bytesize, FG_MEM_MANAGED);
    if (rc == CUDA_SUCCESS)
        *dptr = (CUdeviceptr)(uintptr_t)p;
    return rc;
}

CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                    size_t Height, unsigned int ElementSizeBytes)
{
    if (!pPitch || !(ElementSizeBytes == 4 || ElementSizeBytes == 8 || ElementSizeBytes == 16))
        return __atomic_load_n(&fg.initialized, __ATOMIC_ACQUIRE) ? CUDA_ERROR_INVALID_VALUE
                                                                  : CUDA_ERROR_NOT_INITIALIZED;
    size_t pitch = (WidthInBytes + 511) & ~(size_t)511;
    CUresult rc = cuMemAlloc_v2(dptr, pitch * Height);
    if (rc == CUDA_SUCCESS)
        *pPitch = pitch;
    return rc;
}

/* Frees are deferred behind effects still pending (copies queued behind a
 * host function may still read the buffer); cuMemFree synchronises in CUDA
 * too. */
static CUresult fg_free_kind(uintptr_t p, bool host)
{
    FG_ENTER();
    const fg_alloc *a = fg_mem_find(p);
    bool ok = a && a->base == p &&
              (host ? a->kind == FG_MEM_HOST_PINNED
                    : (a->kind == FG_MEM_DEVICE || a->kind == FG_MEM_MANAGED));
    if (!ok)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    fg_drain_effects_locked();
    fg_mem_release_locked(p);
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr)
{
    return fg_free_kind((uintptr_t)dptr, false);
}

CUresult CUDAAPI cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    return fg_alloc_entry(pp, bytesize, FG_MEM_HOST_PINNED);
}

CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    (void)Flags; /* portable / mapped / write-combined make no difference here */
    return fg_alloc_entry(pp, bytesize, FG_MEM_HOST_PINNED);
}

CUresult CUDAAPI cuMemFreeHost(void *p)
{
    return fg_free_kind((uintptr_t)p, true);
}

static CUresult fg_host_register(void *p, size_t size)
{
    FG_ENTER();
    fg_ctx *c;
    if (!p || size == 0)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (fg_require_ctx(&c) != CUDA_SUCCESS)
        FG_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    if (fg_mem_overlaps((uintptr_t)p, size))
        FG_RETURN(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    fg_alloc a = {.base = (uintptr_t)p,
                  .size = size,
                  .kind = FG_MEM_HOST_REGISTERED,
                  .device = c->device,
                  .ctx = c,
                  .id = fg_next_id()};
    FG_RETURN(fg_mem_insert(&a) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY);
}

CUresult CUDAAPI cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
    (void)Flags;
    return fg_host_register(p, bytesize);
}

CUresult CUDAAPI cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    (void)Flags;
    return fg_host_register(p, bytesize);
}

CUresult CUDAAPI cuMemHostUnregister(void *p)
{
    FG_ENTER();
    const fg_alloc *a = fg_mem_find((uintptr_t)p);
    if (!p || !a || a->base != (uintptr_t)p || a->kind != FG_MEM_HOST_REGISTERED)
        FG_RETURN(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    fg_drain_effects_locked();
    fg_mem_release_locked((uintptr_t)p);
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    FG_ENTER();
    if (!pdptr || Flags != 0)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    const fg_alloc *a = fg_mem_find((uintptr_t)p);
    if (!a || (a->kind != FG_MEM_HOST_PINNED && a->kind != FG_MEM_HOST_REGISTERED))
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    *pdptr = (CUdeviceptr)(uintptr_t)p; /* unified addressing: same address */
    FG_RETURN(CUDA_SUCCESS);
}

/* ------------------------------------------------ stream-ordered memory */

static CUresult fg_alloc_async(CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream hs,
                               bool pt)
{
    FG_ENTER();
    if (pool && fg_handle_type(pool) != FG_H_POOL)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    CUresult rc;
    fg_stream *s = fg_stream_get(hs, pt, &rc);
    if (!s)
        FG_RETURN(rc);
    /* Memory is available at once; being earlier than CUDA is harmless. */
    void *p = NULL;
    rc = fg_alloc_range(dptr ? &p : NULL, size, FG_MEM_DEVICE, s->ctx);
    if (rc == CUDA_SUCCESS)
        *dptr = (CUdeviceptr)(uintptr_t)p;
    FG_RETURN(rc);
}

CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return fg_alloc_async(dptr, bytesize, NULL, hStream, false);
}

CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return fg_alloc_async(dptr, bytesize, NULL, hStream, true);
}

CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                         CUstream hStream)
{
    return fg_alloc_async(dptr, bytesize, pool, hStream, false);
}

CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                              CUstream hStream)
{
    return fg_alloc_async(dptr, bytesize, pool, hStream, true);
}

static CUresult fg_free_async(CUdeviceptr dptr, CUstream hs, bool pt)
{
    FG_ENTER();
    CUresult rc;
    fg_stream *s = fg_stream_get(hs, pt, &rc);
    if (!s)
        FG_RETURN(rc);
    const fg_alloc *a = fg_mem_find((uintptr_t)dptr);
    if (!a || a->base != (uintptr_t)dptr || a->kind != FG_MEM_DEVICE)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    /* A captured free would be replayed once per launch; the memory is
     * instead left allocated (see README, limitations). */
    if (s->capture)
        FG_RETURN(CUDA_SUCCESS);
    fg_desc d = {.kind = FG_OP_FREE, .name = "memFreeAsync"};
    d.u.free.ptr = (void *)(uintptr_t)dptr;
    FG_RETURN(fg_submit(s, &d, false));
}

CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    return fg_free_async(dptr, hStream, false);
}

CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    return fg_free_async(dptr, hStream, true);
}

/* ---------------------------------------------------------------- queries */

CUresult CUDAAPI cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    FG_ENTER();
    fg_ctx *c;
    if (!free_bytes || !total)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (fg_require_ctx(&c) != CUDA_SUCCESS)
        FG_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    *total = (size_t)FG_DEVICE_MEM_BYTES;
    *free_bytes = (size_t)FG_DEVICE_MEM_BYTES - fg.devices[c->device].used_mem;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    FG_ENTER();
    const fg_alloc *a = fg_mem_find((uintptr_t)dptr);
    if (!a || (a->kind != FG_MEM_DEVICE && a->kind != FG_MEM_MANAGED))
        FG_RETURN(CUDA_ERROR_NOT_FOUND);
    if (pbase)
        *pbase = (CUdeviceptr)a->base;
    if (psize)
        *psize = a->size;
    FG_RETURN(CUDA_SUCCESS);
}

/* Locked.  Booleans are written as one byte, like the real driver, so that
 * callers passing either a bool or a zeroed int read the right value. */
static CUresult fg_pointer_attr(void *data, CUpointer_attribute attr, uintptr_t p)
{
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    const fg_alloc *a = fg_mem_find(p);
    if (!a)
        return CUDA_ERROR_INVALID_VALUE;
    bool dev = a->kind == FG_MEM_DEVICE || a->kind == FG_MEM_MANAGED;
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *)data = (CUcontext)a->ctx; break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned *)data = dev ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *(CUdeviceptr *)data = (CUdeviceptr)p; break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (a->kind == FG_MEM_DEVICE)
            return CUDA_ERROR_INVALID_VALUE;
        *(void **)data = (void *)p;
        break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID: *(unsigned long long *)data = a->id; break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(unsigned char *)data = a->kind == FG_MEM_MANAGED; break;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE: *(unsigned char *)data = 0; break;
    case CU_POINTER_ATTRIBUTE_MAPPED: *(unsigned char *)data = 1; break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = a->device; break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR: *(CUdeviceptr *)data = (CUdeviceptr)a->base; break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE: *(size_t *)data = a->size; break;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
        *(unsigned *)data = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
        break;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: *(CUmemoryPool *)data = NULL; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    FG_ENTER();
    FG_RETURN(fg_pointer_attr(data, attribute, (uintptr_t)ptr));
}

CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
                                        void **data, CUdeviceptr ptr)
{
    FG_ENTER();
    if (!attributes || !data)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    /* Unlike the single form, unknown pointers are not an error here: the
     * driver reports them as unregistered memory. */
    for (unsigned i = 0; i < numAttributes; i++) {
        if (!data[i])
            continue;
        if (fg_pointer_attr(data[i], attributes[i], (uintptr_t)ptr) != CUDA_SUCCESS &&
            attributes[i] == CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
            *(unsigned *)data[i] = 0;
    }
    FG_RETURN(CUDA_SUCCESS);
}
