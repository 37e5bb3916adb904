/*
 * The one record helper every CUDA wrapper uses: an API span with the
 * stream's stable id, a correlation id and the call's result, plus the
 * caches that make stream ids and kernel names cheap after their first use.
 */
#ifndef CT_CUDA_RECORD_H
#define CT_CUDA_RECORD_H

#include "shim/cuda_api.h"
#include "shim/ptrmap.h"
#include "shim/stacks.h"

extern struct ct_ptrmap ct_stream_map; /* handle -> id | (device + 1) << 48 */
extern struct ct_ptrmap ct_func_map;   /* handle -> name id | 1 << 32 */

/* Interned entry-point names, by row (set at init). */
extern uint32_t ct_sym_name_id[CT_SYM_COUNT];

/* A call being recorded. */
struct ct_call {
    struct ct_span sp;
    uint64_t corr;
};

static inline __attribute__((always_inline)) void ct_call_enter(struct ct_call *c)
{
    ct_span_enter(&c->sp);
    c->corr = ct_next_corr();
}

/*
 * Stable id of a stream as the driver reports it (cuStreamGetId), and its
 * device (-1 unknown). Handle 0 means the per-thread default stream in a
 * _ptsz/_ptds call and the legacy stream otherwise. Cached per handle.
 */
uint64_t ct_stream_id_slow(CUstream s, int per_thread, int *device);
void ct_stream_forget(CUstream s);

/* Interned kernel name of a CUfunction or CUkernel handle (0 if unknown). */
uint32_t ct_func_name_slow(const void *handle);
static inline __attribute__((always_inline)) uint64_t ct_stream_id(CUstream s, int per_thread,
                                                                   int *device)
{
    if (__builtin_expect(s != NULL && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD, 1)) {
        uint64_t v = ct_ptrmap_get(&ct_stream_map, (uintptr_t)s);
        if (__builtin_expect(v != 0, 1)) {
            *device = (int)((v >> 48) & 0xffff) - 1;
            return v & ((1ull << 48) - 1);
        }
    }
    return ct_stream_id_slow(s, per_thread, device);
}

/* The same as one word, the stream cache's own: id | (device + 1) << 48,
 * what a record flagged CT_RF_SDEV carries in CT_PA_STREAM; 0 when it is
 * not cached yet. Never resolves: resolving records the stream's device
 * metadata, which a caller holding a ring reservation must not do
 * (ct_stream_word_peek: the legacy and per-thread default streams). */
uint64_t ct_stream_word_peek(CUstream s, int per_thread);
static inline __attribute__((always_inline)) uint64_t ct_stream_word_cached(CUstream s,
                                                                            int per_thread)
{
    if (__builtin_expect(s != NULL && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD, 1))
        return ct_ptrmap_get(&ct_stream_map, (uintptr_t)s);
    return ct_stream_word_peek(s, per_thread);
}

/* Its resolving twin: the word, resolving (and recording) on a miss. */
static inline uint64_t ct_stream_word(CUstream s, int per_thread)
{
    int dev;
    uint64_t id = ct_stream_id(s, per_thread, &dev);
    return id | (uint64_t)(uint16_t)(dev + 1) << 48;
}

/* The kernel name if cached, else 0 (never resolves, as above). */
static inline __attribute__((always_inline)) uint32_t ct_func_name_cached(const void *handle)
{
    return (uint32_t)ct_ptrmap_get(&ct_func_map, (uintptr_t)handle);
}

static inline __attribute__((always_inline)) uint32_t ct_func_name(const void *handle)
{
    uint64_t v = ct_ptrmap_get(&ct_func_map, (uintptr_t)handle);
    return __builtin_expect(v != 0, 1) ? (uint32_t)v : ct_func_name_slow(handle);
}

void ct_func_name_set(const void *handle, const char *name);
void ct_func_name_copy(const void *to, const void *from);

/* cuda_procaddr.c: lookups seen by the cuGetProcAddress layer, and wrapped. */
void ct_procaddr_stats(uint64_t *lookups, uint64_t *wrapped);

/* Caches and names: called by ct_shim_init once recording is on. */
int ct_cuda_record_init(void);

/*
 * Starts the API record of a call that just returned, in the ring's packed
 * layout (src/ring.h): writes the common words and returns the record so the
 * caller writes CT_PA_KERNEL_SHMEM .. CT_PA_BYTES, then ct_call_commit().
 * NULL when the record was dropped (counted).
 */
static inline __attribute__((always_inline)) uint64_t *
ct_call_record(struct ct_call *c, enum ct_sym sym, unsigned family, CUresult r, uint64_t stream,
               int device, unsigned flags, unsigned copy_kind)
{
    uint64_t t1 = ct_clock_now();
    struct ct_ring *ring = ct_thread_ring();
    uint64_t *w = ring ? ct_ring_begin(ring, CT_REC_API, CT_PA_NWORDS, CT_RF_PACKED) : NULL;
    if (!w)
        return NULL;
    w[CT_PA_START] = c->sp.t0;
    w[CT_PA_END] = t1;
    w[CT_PA_CORR] = c->corr;
    w[CT_PA_STREAM] = stream;
    w[CT_PA_NAME_FAMILY] = (uint64_t)ct_sym_name_id[sym] | (uint64_t)family << 32 |
                           (uint64_t)(flags & 0xff) << 40 | (uint64_t)(copy_kind & 0xff) << 48;
    w[CT_PA_RESULT_DEV] = (uint64_t)(uint32_t)r | (uint64_t)(uint32_t)device << 32;
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

/* A complete record for calls with nothing family-specific beyond bytes. */
static inline void ct_call_simple(struct ct_call *c, enum ct_sym sym, unsigned family, CUresult r,
                                  uint64_t stream, int device, unsigned flags, uint64_t bytes,
                                  unsigned copy_kind)
{
    /* blocking calls: synchronisations (not the stream-to-event wait),
     * synchronous copies, allocations */
    int blocking = (family == CT_FAM_SYNC && !(flags & CT_APIF_ASYNC)) ||
                   (family == CT_FAM_MEMCPY && !(flags & CT_APIF_ASYNC)) || family == CT_FAM_ALLOC;
    if (__builtin_expect(ct_cfg.stacks != 0, 1) && ct_stack_wanted(blocking))
        ct_stack_capture(c->corr);
    uint64_t *w = ct_call_record(c, sym, family, r, stream, device, flags, copy_kind);
    if (w) {
        w[CT_PA_KERNEL_SHMEM] = 0;
        w[CT_PA_GRID_XY] = 0;
        w[CT_PA_GRID_Z_BLK_X] = 0;
        w[CT_PA_BLK_YZ] = 0;
        w[CT_PA_BYTES] = bytes;
        ct_call_commit();
    }
}

#endif
