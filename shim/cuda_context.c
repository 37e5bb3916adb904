/*
 * Context teardown: cuCtxDestroy and the primary context's release and
 * reset destroy the context's events with it. Event-pair timing still has
 * pairs of that context's last ops in flight (a program that destroys its
 * context right after its last synchronous copy, as NVIDIA's driver-API
 * samples do): they are read first (ct_events_before_teardown), so no op
 * goes untimed. Not recorded as calls of their own.
 */
#include "shim/cuda_record.h"
#include "shim/gpu.h"

CUresult cuCtxDestroy(CUcontext);
CUresult cuDevicePrimaryCtxRelease(CUdevice);
CUresult cuDevicePrimaryCtxReset(CUdevice);

typedef CUresult (*ctx_fn)(CUcontext);
typedef CUresult (*dev_fn)(CUdevice);

static CUresult ctx_teardown(enum ct_sym sym, CUcontext ctx)
{
    ctx_fn real = CT_REAL(ctx_fn, sym);
    if (!real)
        return CT_NOT_AVAILABLE;
    if (ct_gpu_mode == CT_GPU_EVENTS && !ct_tls_guard)
        ct_events_before_teardown(ctx, -1, 1);
    CUresult r = real(ctx);
    if (r == CUDA_SUCCESS && ct_gpu_mode == CT_GPU_EVENTS && !ct_tls_guard)
        ct_events_after_teardown(ctx, -1);
    return r;
}

static CUresult dev_teardown(enum ct_sym sym, CUdevice dev, int reset)
{
    dev_fn real = CT_REAL(dev_fn, sym);
    if (!real)
        return CT_NOT_AVAILABLE;
    /* a release destroys the primary context only at its last reference,
     * which the driver does not tell: a reset waits for the pairs to be
     * read, a release only asks for the pass (programs that retain and
     * release around every use must not wait each time); a slot whose
     * context went with a release gives itself up at its next op */
    if (ct_gpu_mode == CT_GPU_EVENTS && !ct_tls_guard)
        ct_events_before_teardown(NULL, (int)dev, reset);
    CUresult r = real(dev);
    if (r == CUDA_SUCCESS && reset && ct_gpu_mode == CT_GPU_EVENTS && !ct_tls_guard)
        ct_events_after_teardown(NULL, (int)dev);
    return r;
}

CUresult ct_impl_cuCtxDestroy(CUcontext ctx)
{
    return ctx_teardown(CT_SYM_cuCtxDestroy, ctx);
}

CUresult ct_impl_cuCtxDestroy_v2(CUcontext ctx)
{
    return ctx_teardown(CT_SYM_cuCtxDestroy_v2, ctx);
}

CUresult ct_impl_cuDevicePrimaryCtxRelease(CUdevice dev)
{
    return dev_teardown(CT_SYM_cuDevicePrimaryCtxRelease, dev, 0);
}

CUresult ct_impl_cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    return dev_teardown(CT_SYM_cuDevicePrimaryCtxRelease_v2, dev, 0);
}

CUresult ct_impl_cuDevicePrimaryCtxReset(CUdevice dev)
{
    return dev_teardown(CT_SYM_cuDevicePrimaryCtxReset, dev, 1);
}

CUresult ct_impl_cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    return dev_teardown(CT_SYM_cuDevicePrimaryCtxReset_v2, dev, 1);
}
