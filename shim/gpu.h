/*
 * GPU-side timing, dispatched from the wrappers of calls that put work on a
 * stream (launches, graph launches, copies, memsets). One predictable branch
 * when timing is off. CUPTI mode pushes our correlation id as CUPTI's
 * external correlation around the real call; event mode brackets the call
 * with a pair of timing events on the op's own stream (shim/gpu_events.c).
 */
#ifndef CT_GPU_H
#define CT_GPU_H

#include "shim/cuda_record.h"

enum ct_gpu_mode {
    CT_GPU_OFF = 0,
    CT_GPU_CUPTI = 1,
    CT_GPU_EVENTS = 2,
};

/* Set once at init (after any fallback); read by every wrapper. */
extern int ct_gpu_mode;
/* 1 when a launch may take its fast path: GPU timing off, no stack per
 * launch, the cycle counter as the clock (init.c, cuda_launch.c). */
extern int ct_launch_fast;

/* Per-call state of event mode. */
struct ct_gpu_op {
    uint64_t start; /* CUevent, 0 when this op is not timed */
    uint64_t end;
    int ctx; /* index of the context's pool */
    int stream_slot;
};

/* gpu_cupti.c */
void ct_cupti_push(uint64_t corr);
void ct_cupti_pop(void);
int ct_cupti_start(char *why, size_t whylen); /* 0, or -1 with the reason */
void ct_cupti_stop(void);
/* A source graph node and the id CUPTI gave its clone in an executable
 * graph (its records' graphNodeId), as CUPTI reports clones to gpu_cupti.c
 * during an instantiation the shim wraps (shim/cuda_graph.c), which sets
 * ct_tls_clones on its thread for the call. lost: one could not be kept. */
struct ct_clone {
    uintptr_t orig;
    uint64_t id;
};
struct ct_clones {
    struct ct_clone *v;
    size_t n, cap;
    int lost;
};
extern __thread struct ct_clones *ct_tls_clones;
/* Activity collection on or off with the capture window (capture.c): a
 * paused shim leaves CUPTI idle, so kernels run uninstrumented. */
void ct_cupti_activities(int on);
/* The dlopen handle of the CUPTI this process holds for GPU timing, NULL
 * when CUPTI timing is not on (another profiler holds CUPTI, or another
 * mode): what shim/pm_sampling.c may use. */
void *ct_cupti_lib(void);
/* GPU records CUPTI delivered outside every capture window (dropped). */
uint64_t ct_cupti_outside(void);

/* gpu_events.c */
void ct_events_before(CUstream s, unsigned flags, struct ct_gpu_op *op);
void ct_events_after(struct ct_gpu_op *op, CUstream s, unsigned flags, uint64_t corr,
                     uint64_t stream_id, int device, unsigned type, uint32_t name, uint64_t bytes,
                     unsigned copy_kind);
int ct_events_start(char *why, size_t whylen);
void ct_events_stop(unsigned timeout_ms);
/* Around a context's destruction (ctx) or its primary context's release or
 * reset (ctx NULL, device): before, the poller reads every pending pair
 * (with wait, the closing thread waits up to 200 ms for that pass); after,
 * the context's slot is given up, its pooled events having gone with it. */
void ct_events_before_teardown(CUcontext ctx, int device, int wait);
void ct_events_after_teardown(CUcontext ctx, int device);

static inline void ct_gpu_before(struct ct_call *c, CUstream s, unsigned flags,
                                 struct ct_gpu_op *op)
{
    op->start = 0;
    if (__builtin_expect(ct_gpu_mode == CT_GPU_OFF, 0))
        return;
    if (ct_gpu_mode == CT_GPU_CUPTI)
        ct_cupti_push(c->corr);
    else
        ct_events_before(s, flags, op);
}

/* ct_call_enter for calls that put work on a stream: the GPU hook runs
 * before the host clock is read, so the API span excludes its cost. */
static inline __attribute__((always_inline)) void
ct_call_enter_gpu(struct ct_call *c, CUstream s, unsigned flags, struct ct_gpu_op *op)
{
    ct_tls_guard = 1;
    c->corr = ct_next_corr();
    ct_gpu_before(c, s, flags, op);
    c->sp.t0 = ct_clock_now();
}

static inline void ct_gpu_after(struct ct_call *c, struct ct_gpu_op *op, CUstream s, unsigned flags,
                                uint64_t stream_id, int device, unsigned type, uint32_t name,
                                uint64_t bytes, unsigned copy_kind)
{
    if (__builtin_expect(ct_gpu_mode == CT_GPU_OFF, 0))
        return;
    if (ct_gpu_mode == CT_GPU_CUPTI)
        ct_cupti_pop();
    else if (op->start)
        ct_events_after(op, s, flags, c->corr, stream_id, device, type, name, bytes, copy_kind);
}

/* ct_call_enter for the synchronisations: with CUPTI, the call's
 * correlation id is pushed first (before the host clock is read, as for
 * GPU work), so CUPTI's synchronization records join the call that waited;
 * ct_call_sync_done pops it once the driver returns. */
static inline void ct_call_enter_sync(struct ct_call *c)
{
    ct_tls_guard = 1;
    c->corr = ct_next_corr();
    if (ct_gpu_mode == CT_GPU_CUPTI)
        ct_cupti_push(c->corr);
    c->sp.t0 = ct_clock_now();
}

static inline void ct_call_sync_done(void)
{
    if (ct_gpu_mode == CT_GPU_CUPTI)
        ct_cupti_pop();
}

#endif
