/*
 * Where kernel names come from: the name asked for in cuModuleGetFunction
 * and cuLibraryGetKernel is cached for the handle, so a launch costs one
 * lookup. Stream destruction drops the stream's cached id, since the driver
 * may hand the same handle to a new stream.
 */
#include "shim/cuda_record.h"

typedef CUresult (*get_function_fn)(CUfunction *, CUmodule, const char *);
typedef CUresult (*get_kernel_fn)(CUkernel *, CUlibrary, const char *);
typedef CUresult (*kernel_function_fn)(CUfunction *, CUkernel);
typedef CUresult (*stream_destroy_fn)(CUstream);

static void module_done(struct ct_call *c, enum ct_sym sym, CUresult r, const void *handle)
{
    uint32_t name = handle ? ct_func_name(handle) : 0;
    uint64_t *w = ct_call_record(c, sym, CT_FAM_MODULE, r, 0, -1, 0, 0);
    if (w) {
        w[CT_PA_KERNEL_SHMEM] = name;
        w[CT_PA_GRID_XY] = 0;
        w[CT_PA_GRID_Z_BLK_X] = 0;
        w[CT_PA_BLK_YZ] = 0;
        w[CT_PA_BYTES] = 0;
        ct_call_commit();
    }
    ct_call_leave(c);
}

CUresult ct_impl_cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
    get_function_fn real = CT_REAL(get_function_fn, CT_SYM_cuModuleGetFunction);
    if (!real)
        return CT_NOT_AVAILABLE;
    if (!ct_shim_recording())
        return real(f, m, name);
    struct ct_call c;
    ct_call_enter(&c);
    CUresult r = real(f, m, name);
    void *h = r == CUDA_SUCCESS && f ? (void *)*f : NULL;
    if (h && name)
        ct_func_name_set(h, name);
    module_done(&c, CT_SYM_cuModuleGetFunction, r, h);
    return r;
}

CUresult ct_impl_cuLibraryGetKernel(CUkernel *k, CUlibrary lib, const char *name)
{
    get_kernel_fn real = CT_REAL(get_kernel_fn, CT_SYM_cuLibraryGetKernel);
    if (!real)
        return CT_NOT_AVAILABLE;
    if (!ct_shim_recording())
        return real(k, lib, name);
    struct ct_call c;
    ct_call_enter(&c);
    CUresult r = real(k, lib, name);
    void *h = r == CUDA_SUCCESS && k ? (void *)*k : NULL;
    if (h && name)
        ct_func_name_set(h, name);
    module_done(&c, CT_SYM_cuLibraryGetKernel, r, h);
    return r;
}

CUresult ct_impl_cuKernelGetFunction(CUfunction *f, CUkernel k)
{
    kernel_function_fn real = CT_REAL(kernel_function_fn, CT_SYM_cuKernelGetFunction);
    if (!real)
        return CT_NOT_AVAILABLE;
    if (!ct_shim_recording())
        return real(f, k);
    struct ct_call c;
    ct_call_enter(&c);
    CUresult r = real(f, k);
    void *h = r == CUDA_SUCCESS && f ? (void *)*f : NULL;
    if (h)
        ct_func_name_copy(h, k);
    module_done(&c, CT_SYM_cuKernelGetFunction, r, h);
    return r;
}

CUresult ct_impl_cuStreamDestroy_v2(CUstream s)
{
    stream_destroy_fn real = CT_REAL(stream_destroy_fn, CT_SYM_cuStreamDestroy_v2);
    if (!real)
        return CT_NOT_AVAILABLE;
    CUresult r = real(s);
    /* Not an event of its own: only keeps the stream-id cache honest. */
    if (r == CUDA_SUCCESS && ct_shim_live())
        ct_stream_forget(s);
    return r;
}
