/*
 * Synchronisation: the calls where the host waits for the GPU (context,
 * stream, event) and the stream-to-event dependency. Their host spans are
 * what the decoder's sync-drain and launch-overhead analyses read.
 */
#include "shim/cuda_record.h"
#include "shim/gpu.h"

CUresult cuStreamSynchronize_ptsz(CUstream);
CUresult cuStreamWaitEvent_ptsz(CUstream, CUevent, unsigned int);
CUresult cuCtxSynchronize_v2(CUcontext);

typedef CUresult (*ctx_sync_fn)(void);
typedef CUresult (*ctx_sync2_fn)(CUcontext);
typedef CUresult (*stream_sync_fn)(CUstream);
typedef CUresult (*event_sync_fn)(CUevent);
typedef CUresult (*wait_event_fn)(CUstream, CUevent, unsigned int);

CUresult ct_impl_cuCtxSynchronize(void)
{
    ctx_sync_fn real = CT_REAL(ctx_sync_fn, CT_SYM_cuCtxSynchronize);
    if (!real)
        return CT_NOT_AVAILABLE;
    if (!ct_shim_recording())
        return real();
    struct ct_call c;
    ct_call_enter_sync(&c);
    CUresult r = real();
    ct_call_sync_done();
    ct_call_simple(&c, CT_SYM_cuCtxSynchronize, CT_FAM_SYNC, r, 0, -1, 0, 0, 0);
    ct_call_leave(&c);
    return r;
}

CUresult ct_impl_cuCtxSynchronize_v2(CUcontext ctx)
{
    ctx_sync2_fn real = CT_REAL(ctx_sync2_fn, CT_SYM_cuCtxSynchronize_v2);
    if (!real)
        return CT_NOT_AVAILABLE;
    if (!ct_shim_recording())
        return real(ctx);
    struct ct_call c;
    ct_call_enter_sync(&c);
    CUresult r = real(ctx);
    ct_call_sync_done();
    ct_call_simple(&c, CT_SYM_cuCtxSynchronize_v2, CT_FAM_SYNC, r, 0, -1, 0, 0, 0);
    ct_call_leave(&c);
    return r;
}

static CUresult stream_sync(enum ct_sym sym, unsigned flags, CUstream s)
{
    stream_sync_fn real = CT_REAL(stream_sync_fn, sym);
    if (!real)
        return CT_NOT_AVAILABLE;
    if (!ct_shim_recording())
        return real(s);
    struct ct_call c;
    ct_call_enter_sync(&c);
    CUresult r = real(s);
    ct_call_sync_done();
    int dev;
    uint64_t sid = ct_stream_id(s, flags & CT_APIF_PER_THREAD, &dev);
    ct_call_simple(&c, sym, CT_FAM_SYNC, r, sid, dev, flags, 0, 0);
    ct_call_leave(&c);
    return r;
}

CUresult ct_impl_cuStreamSynchronize(CUstream s)
{
    return stream_sync(CT_SYM_cuStreamSynchronize, 0, s);
}

CUresult ct_impl_cuStreamSynchronize_ptsz(CUstream s)
{
    return stream_sync(CT_SYM_cuStreamSynchronize_ptsz, CT_APIF_PER_THREAD, s);
}

CUresult ct_impl_cuEventSynchronize(CUevent e)
{
    event_sync_fn real = CT_REAL(event_sync_fn, CT_SYM_cuEventSynchronize);
    if (!real)
        return CT_NOT_AVAILABLE;
    if (!ct_shim_recording())
        return real(e);
    struct ct_call c;
    ct_call_enter_sync(&c);
    CUresult r = real(e);
    ct_call_sync_done();
    ct_call_simple(&c, CT_SYM_cuEventSynchronize, CT_FAM_SYNC, r, 0, -1, 0, 0, 0);
    ct_call_leave(&c);
    return r;
}

static CUresult wait_event(enum ct_sym sym, unsigned flags, CUstream s, CUevent e, unsigned f)
{
    wait_event_fn real = CT_REAL(wait_event_fn, sym);
    if (!real)
        return CT_NOT_AVAILABLE;
    if (!ct_shim_recording())
        return real(s, e, f);
    struct ct_call c;
    ct_call_enter_sync(&c);
    CUresult r = real(s, e, f);
    ct_call_sync_done();
    int dev;
    uint64_t sid = ct_stream_id(s, flags & CT_APIF_PER_THREAD, &dev);
    ct_call_simple(&c, sym, CT_FAM_SYNC, r, sid, dev, flags | CT_APIF_ASYNC, 0, 0);
    ct_call_leave(&c);
    return r;
}

CUresult ct_impl_cuStreamWaitEvent(CUstream s, CUevent e, unsigned int f)
{
    return wait_event(CT_SYM_cuStreamWaitEvent, 0, s, e, f);
}

CUresult ct_impl_cuStreamWaitEvent_ptsz(CUstream s, CUevent e, unsigned int f)
{
    return wait_event(CT_SYM_cuStreamWaitEvent_ptsz, CT_APIF_PER_THREAD, s, e, f);
}
