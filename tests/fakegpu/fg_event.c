/*
 * fg_event.c - events and cross-stream waits.
 *
 * Recording an event enqueues a zero-length marker op on the stream; the
 * event keeps a reference to it, so the event's time is the marker's end:
 * max(record time, completion of everything enqueued before it on that
 * stream, including the legacy stream's implicit dependencies).  A stream
 * wait enqueues a marker that depends on the event's marker, which makes
 * every later op of the waiting stream start no earlier than the event.
 *
 * During stream capture a record does not enqueue anything: it tags the
 * event with the capture and copies the stream's capture dependency set;
 * a stream waiting on such an event joins the capture with that set, or
 * adds it to its own when already capturing (CUDA's fork/join pattern,
 * fg_capture.c).
 */
#include "fg_graph.h"

#include <stdlib.h>

typedef struct fg_event {
    fg_ctx *ctx;
    unsigned resets; /* ctx->resets at creation: the event died with a later teardown */
    uint32_t id;     /* reported to a fake CUPTI as cudaEventId */
    unsigned flags;
    fg_op *op;                     /* last record's marker; NULL until recorded */
    fg_graph *capture;             /* set when last recorded into a capturing stream */
    unsigned long long capture_id; /* ... the capture it was recorded in */
    fg_capdeps capdeps;            /* ... that stream's dependency set then */
} fg_event;

static uint32_t fg_event_ids; /* under fg.lock; apart from fg_next_id */

/* NULL also for an event of a destroyed or reset context: CUDA destroys a
 * context's events with it (CUDA_ERROR_INVALID_HANDLE afterwards). */
static fg_event *fg_event_get(CUevent h)
{
    fg_event *e = fg_handle_type(h) == FG_H_EVENT ? (fg_event *)h : NULL;
    if (e && (e->ctx->destroyed || e->resets != e->ctx->resets))
        return NULL;
    return e;
}

CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    FG_ENTER();
    fg_ctx *c;
    const unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
    if (!phEvent || (Flags & ~known))
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (fg_require_ctx(&c) != CUDA_SUCCESS)
        FG_RETURN(CUDA_ERROR_INVALID_CONTEXT);
    fg_event *e = calloc(1, sizeof *e);
    if (!e)
        FG_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    e->ctx = c;
    e->resets = c->resets;
    e->id = ++fg_event_ids;
    e->flags = Flags;
    fg_handle_add(e, FG_H_EVENT);
    *phEvent = (CUevent)e;
    FG_RETURN(CUDA_SUCCESS);
}

static CUresult fg_event_destroy(CUevent h)
{
    FG_ENTER();
    fg_event *e = fg_event_get(h);
    if (!e)
        FG_RETURN(CUDA_ERROR_INVALID_HANDLE);
    fg_handle_del(e);
    fg_op_unref(e->op);
    fg_capdeps_free(&e->capdeps);
    free(e);
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuEventDestroy(CUevent hEvent)
{
    return fg_event_destroy(hEvent);
}

CUresult CUDAAPI cuEventDestroy_v2(CUevent hEvent)
{
    return fg_event_destroy(hEvent);
}

static CUresult fg_event_record(CUevent h, CUstream hs, unsigned flags, bool pt)
{
    FG_ENTER();
    fg_event *e = fg_event_get(h);
    if (!e)
        FG_RETURN(CUDA_ERROR_INVALID_HANDLE);
    if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    CUresult rc;
    fg_stream *s = fg_stream_get(hs, pt, &rc);
    if (!s)
        FG_RETURN(rc);
    if (s->capture) {
        if (!fg_capdeps_set(&e->capdeps, &s->capdeps, false))
            FG_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
        e->capture = s->capture;
        e->capture_id = s->capture->capture_id;
        FG_RETURN(CUDA_SUCCESS);
    }
    fg_desc d = {.kind = FG_OP_MARKER, .name = "eventRecord"};
    fg_op *op = fg_enqueue(s, &d, NULL, 0);
    fg_op_ref(op);
    fg_op_unref(e->op);
    e->op = op;
    e->capture = NULL;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream)
{
    return fg_event_record(hEvent, hStream, 0, false);
}

CUresult CUDAAPI cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
    return fg_event_record(hEvent, hStream, 0, true);
}

CUresult CUDAAPI cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{
    return fg_event_record(hEvent, hStream, flags, false);
}

CUresult CUDAAPI cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags)
{
    return fg_event_record(hEvent, hStream, flags, true);
}

CUresult CUDAAPI cuEventQuery(CUevent hEvent)
{
    FG_ENTER();
    fg_event *e = fg_event_get(hEvent);
    if (!e)
        FG_RETURN(CUDA_ERROR_INVALID_HANDLE);
    /* Never recorded: complete, as in CUDA. */
    FG_RETURN(!e->op || fg_op_done(e->op, fg_now()) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY);
}

CUresult CUDAAPI cuEventSynchronize(CUevent hEvent)
{
    FG_ENTER();
    int64_t t0 = 0;
    uint32_t corr = fg_cupti_sync_begin(&t0);
    fg_event *e = fg_event_get(hEvent);
    if (!e)
        FG_RETURN(CUDA_ERROR_INVALID_HANDLE);
    fg_op *op = e->op; /* the event may be re-recorded while we wait */
    fg_ctx *c = e->ctx;
    uint32_t id = e->id; /* ... or destroyed */
    if (op)
        fg_wait_ops_locked(&op, 1);
    if (corr)
        fg_cupti_sync_end(corr, t0, FG_CUPTI_SYNC_EVENT, c, FG_CUPTI_NA, id);
    FG_RETURN(CUDA_SUCCESS);
}

static CUresult fg_elapsed(float *ms, CUevent hStart, CUevent hEnd)
{
    FG_ENTER();
    if (!ms)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    fg_event *a = fg_event_get(hStart), *b = fg_event_get(hEnd);
    if (!a || !b || !a->op || !b->op)
        FG_RETURN(CUDA_ERROR_INVALID_HANDLE);
    if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)
        FG_RETURN(CUDA_ERROR_INVALID_HANDLE);
    int64_t now = fg_now();
    if (!fg_op_done(a->op, now) || !fg_op_done(b->op, now))
        FG_RETURN(CUDA_ERROR_NOT_READY);
    *ms = (float)((double)(b->op->end_ns - a->op->end_ns) / 1e6);
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    return fg_elapsed(pMilliseconds, hStart, hEnd);
}

CUresult CUDAAPI cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    return fg_elapsed(pMilliseconds, hStart, hEnd);
}

static CUresult fg_stream_wait_event(CUstream hs, CUevent h, unsigned flags, bool pt)
{
    FG_ENTER();
    int64_t t0 = 0;
    uint32_t corr = fg_cupti_sync_begin(&t0);
    CUresult rc;
    fg_stream *s = fg_stream_get(hs, pt, &rc);
    if (!s)
        FG_RETURN(rc);
    fg_event *e = fg_event_get(h);
    if (!e)
        FG_RETURN(CUDA_ERROR_INVALID_HANDLE);
    if (flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (e->capture && fg_capture_live(e->capture, e->capture_id)) {
        if (!s->capture) { /* fork: s joins the capture after the event's nodes */
            if (!fg_capdeps_set(&s->capdeps, &e->capdeps, false))
                FG_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
            s->capture = e->capture;
            s->capture_origin = false;
        } else if (s->capture == e->capture && !fg_capture_join_locked(s, &e->capdeps)) {
            FG_RETURN(CUDA_ERROR_OUT_OF_MEMORY); /* join: after both */
        }
        FG_RETURN(CUDA_SUCCESS);
    }
    /* An ordinary event waited on inside a capture adds nothing to the
     * graph (README.md, Limitations). */
    if (s->capture)
        FG_RETURN(CUDA_SUCCESS);
    if (e->op) {
        fg_desc d = {.kind = FG_OP_MARKER, .name = "streamWaitEvent"};
        fg_enqueue(s, &d, &e->op, 1);
    }
    if (corr)
        fg_cupti_sync_end(corr, t0, FG_CUPTI_SYNC_STREAM_WAIT, e->ctx, (uint32_t)s->id, e->id);
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    return fg_stream_wait_event(hStream, hEvent, Flags, false);
}

CUresult CUDAAPI cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    return fg_stream_wait_event(hStream, hEvent, Flags, true);
}
