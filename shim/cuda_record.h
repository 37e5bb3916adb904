/*
 * The one record helper every CUDA wrapper uses: an API span with the
 * stream's stable id, a correlation id and the call's result, plus the
 * caches that make stream ids and kernel names cheap after their first use.
 */
#ifndef CT_CUDA_RECORD_H
#define CT_CUDA_RECORD_H

#include "shim/cuda_api.h"

/* Interned entry-point names, by row (set at init). */
extern uint32_t ct_sym_name_id[CT_SYM_COUNT];

/* A call being recorded. */
struct ct_call {
    struct ct_span sp;
    uint64_t corr;
};

static inline void ct_call_enter(struct ct_call *c)
{
    ct_span_enter(&c->sp);
    c->corr = ct_next_corr();
}

/*
 * Stable id of a stream as the driver reports it (cuStreamGetId), and its
 * device (-1 unknown). Handle 0 means the per-thread default stream in a
 * _ptsz/_ptds call and the legacy stream otherwise. Cached per handle.
 */
uint64_t ct_stream_id(CUstream s, int per_thread, int *device);
void ct_stream_forget(CUstream s);

/* Interned kernel name of a CUfunction or CUkernel handle (0 if unknown). */
uint32_t ct_func_name(const void *handle);
void ct_func_name_set(const void *handle, const char *name);
void ct_func_name_copy(const void *to, const void *from);

/* procaddr.c: lookups seen by the cuGetProcAddress layer, and wrapped. */
void ct_procaddr_stats(uint64_t *lookups, uint64_t *wrapped);

/* Caches and names: called by ct_shim_init once recording is on. */
int ct_cuda_record_init(void);

/*
 * Starts the API record of a call that just returned: fills the common
 * fields and zeroes the rest. Returns the fields to complete, then
 * ct_call_commit(); or NULL when the record was dropped (counted).
 */
static inline uint64_t *ct_call_record(struct ct_call *c, enum ct_sym sym, unsigned family,
                                       CUresult r, uint64_t stream, int device, unsigned flags)
{
    uint64_t t1 = ct_clock_now();
    struct ct_ring *ring = ct_thread_ring();
    uint64_t *w = ring ? ct_ring_begin(ring, CT_REC_API, CT_API_NFIELDS, 0) : NULL;
    if (!w)
        return NULL;
    w[CT_API_START] = c->sp.t0;
    w[CT_API_END] = t1;
    w[CT_API_NAME] = ct_sym_name_id[sym];
    w[CT_API_CORR] = c->corr;
    w[CT_API_FAMILY] = family;
    w[CT_API_RESULT] = (uint64_t)(int64_t)r;
    w[CT_API_DEVICE] = (uint64_t)(int64_t)device;
    w[CT_API_STREAM] = stream;
    for (unsigned i = CT_API_KERNEL; i < CT_API_FLAGS; i++)
        w[i] = 0;
    w[CT_API_FLAGS] = flags;
    return w;
}

static inline void ct_call_commit(void)
{
    ct_ring_commit(ct_tls_ring);
}

static inline void ct_call_leave(struct ct_call *c)
{
    ct_span_leave(&c->sp);
}

/* A complete record for calls with no family-specific fields beyond bytes. */
static inline void ct_call_simple(struct ct_call *c, enum ct_sym sym, unsigned family, CUresult r,
                                  uint64_t stream, int device, unsigned flags, uint64_t bytes,
                                  unsigned copy_kind)
{
    uint64_t *w = ct_call_record(c, sym, family, r, stream, device, flags);
    if (w) {
        w[CT_API_BYTES] = bytes;
        w[CT_API_COPY_KIND] = copy_kind;
        ct_call_commit();
    }
}

#endif
