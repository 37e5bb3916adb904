/*
 * Synchronisation: the calls where the host waits for the GPU (context,
 * stream, event) and the stream-to-event dependencies (an event's records
 * and the waits on it). Their host spans are what the decoder's sync-drain
 * and launch-overhead analyses read; the dependencies carry the event's id
 * (its handle's value, CT_APIF_EVENT in cutrace/format.h) in CT_API_BYTES,
 * so a record on one stream joins the waits on it from others.
 */
#include "shim/cuda_record.h"
#include "shim/gpu.h"

CUresult cuStreamSynchronize_ptsz(CUstream);
CUresult cuStreamWaitEvent_ptsz(CUstream, CUevent, unsigned int);
CUresult cuEventRecord_ptsz(CUevent, CUstream);
CUresult cuEventRecordWithFlags_ptsz(CUevent, CUstream, unsigned int);
CUresult cuCtxSynchronize_v2(CUcontext);

typedef CUresult (*ctx_sync_fn)(void);
typedef CUresult (*ctx_sync2_fn)(CUcontext);
typedef CUresult (*stream_sync_fn)(CUstream);
typedef CUresult (*event_sync_fn)(CUevent);
typedef CUresult (*wait_event_fn)(CUstream, CUevent, unsigned int);
typedef CUresult (*event_record_fn)(CUevent, CUstream);
typedef CUresult (*event_record_flags_fn)(CUevent, CUstream, unsigned int);

/* The record of a call that makes a stream wait for an event or records
 * one: it returns without waiting (CT_APIF_ASYNC), and CT_API_BYTES is the
 * event's id. */
static void event_done(struct ct_call *c, enum ct_sym sym, unsigned flags, CUresult r, CUstream s,
                       CUevent e)
{
    int dev;
    uint64_t sid = ct_stream_id(s, flags & CT_APIF_PER_THREAD, &dev);
    ct_call_simple(c, sym, CT_FAM_SYNC, r, sid, dev, flags | CT_APIF_ASYNC | CT_APIF_EVENT,
                   (uint64_t)(uintptr_t)e, 0);
}

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
    /* a sync of the legacy stream waits for the work every blocking stream
     * had before it, not for one stream's: the decoder must know */
    if (s == CU_STREAM_LEGACY || (s == NULL && !(flags & CT_APIF_PER_THREAD)))
        flags |= CT_APIF_LEGACY;
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
    /* the event's id, as on its records: the decoder joins the sync to the
     * record it waited for (the stream and the work before it) */
    ct_call_simple(&c, CT_SYM_cuEventSynchronize, CT_FAM_SYNC, r, 0, -1, CT_APIF_EVENT,
                   (uint64_t)(uintptr_t)e, 0);
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
    event_done(&c, sym, flags, r, s, e);
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

/* A record neither waits nor has a CUPTI synchronization record to join,
 * so it enters as an ordinary call (ct_call_enter), not as a sync. */
static CUresult event_record(enum ct_sym sym, unsigned flags, CUevent e, CUstream s)
{
    event_record_fn real = CT_REAL(event_record_fn, sym);
    if (!real)
        return CT_NOT_AVAILABLE;
    if (!ct_shim_recording())
        return real(e, s);
    struct ct_call c;
    ct_call_enter(&c);
    CUresult r = real(e, s);
    event_done(&c, sym, flags, r, s, e);
    ct_call_leave(&c);
    return r;
}

static CUresult event_record_flags(enum ct_sym sym, unsigned flags, CUevent e, CUstream s,
                                   unsigned f)
{
    event_record_flags_fn real = CT_REAL(event_record_flags_fn, sym);
    if (!real)
        return CT_NOT_AVAILABLE;
    if (!ct_shim_recording())
        return real(e, s, f);
    struct ct_call c;
    ct_call_enter(&c);
    CUresult r = real(e, s, f);
    event_done(&c, sym, flags, r, s, e);
    ct_call_leave(&c);
    return r;
}

CUresult ct_impl_cuEventRecord(CUevent e, CUstream s)
{
    return event_record(CT_SYM_cuEventRecord, 0, e, s);
}

CUresult ct_impl_cuEventRecord_ptsz(CUevent e, CUstream s)
{
    return event_record(CT_SYM_cuEventRecord_ptsz, CT_APIF_PER_THREAD, e, s);
}

CUresult ct_impl_cuEventRecordWithFlags(CUevent e, CUstream s, unsigned int f)
{
    return event_record_flags(CT_SYM_cuEventRecordWithFlags, 0, e, s, f);
}

CUresult ct_impl_cuEventRecordWithFlags_ptsz(CUevent e, CUstream s, unsigned int f)
{
    return event_record_flags(CT_SYM_cuEventRecordWithFlags_ptsz, CT_APIF_PER_THREAD, e, s, f);
}
