/*
 * Per-thread record ring: one producer (the recording thread), one consumer
 * (the writer). The producer's append path is a handful of loads and stores:
 * no locks, no allocation, no syscalls. When the ring is full the record is
 * dropped and counted; the producer never waits.
 *
 * A record in memory is a struct ct_rec_hdr followed by hdr.nwords u64
 * fields in the order of the kind's table in cutrace/format.h. Times are raw
 * ct_clock_now() values unless CT_RF_NS says they are already monotonic ns.
 * Records never wrap: a pad record (kind 0) fills the end of the ring.
 *
 * Not reentrant on one thread: a caller that can be interrupted by a signal
 * handler that also records must guard (the shim's reentry flag does).
 */
#ifndef CT_RING_H
#define CT_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "cutrace/format.h"

#define CT_RF_NS     0x01 /* time fields are already CLOCK_MONOTONIC ns */
#define CT_RF_PACKED 0x02 /* CT_REC_API in the packed layout below */
/* with CT_RF_PACKED: CT_PA_STREAM is stream id | (device + 1) << 48 (the
 * shim's stream cache word) and CT_PA_RESULT_DEV the result alone */
#define CT_RF_SDEV 0x04

/*
 * Packed in-memory layout of an API record (11 words instead of 19, so a
 * launch writes 1.5 cache lines, not 2.5); the writer unpacks it into the
 * format's fields. Values that do not fit their half-word are truncated:
 * names and kernels are string ids, dims and shmem are 32-bit in CUDA.
 */
enum ct_packed_api {
    CT_PA_START,        /* CT_API_START */
    CT_PA_END,          /* CT_API_END */
    CT_PA_CORR,         /* CT_API_CORR */
    CT_PA_STREAM,       /* CT_API_STREAM */
    CT_PA_NAME_FAMILY,  /* name | family << 32 | flags << 40 | copy_kind << 48 */
    CT_PA_RESULT_DEV,   /* (uint32)result | (uint32)device << 32 */
    CT_PA_KERNEL_SHMEM, /* kernel | shmem << 32 */
    CT_PA_GRID_XY,      /* grid x | grid y << 32 */
    CT_PA_GRID_Z_BLK_X, /* grid z | block x << 32 */
    CT_PA_BLK_YZ,       /* block y | block z << 32 */
    CT_PA_BYTES,        /* CT_API_BYTES */
    CT_PA_NWORDS
};

struct ct_rec_hdr {
    uint16_t kind;  /* enum ct_record_kind; 0 = pad */
    uint8_t nwords; /* fields that follow */
    uint8_t flags;  /* CT_RF_* */
    uint32_t reserved;
};

enum ct_ring_state {
    CT_RING_ACTIVE = 1,
    CT_RING_EXITED = 2, /* its thread is gone; the writer drains and frees it */
};

struct ct_ring {
    /* producer's cache line */
    _Atomic uint64_t head;    /* bytes ever committed */
    uint64_t cached_tail;     /* producer's last view of tail */
    uint64_t pending;         /* head after the record being built */
    _Atomic uint64_t dropped; /* written by the producer only */
    /* head may grow to limit with no other test: the lesser of the end of
     * the space known free (cached_tail + size) and the end of the ring's
     * current lap (a record there needs no pad). 0 until the first record;
     * ct_ring_begin_slow sets it. */
    uint64_t limit;
    char pad0[24];
    /* consumer's cache line */
    _Atomic uint64_t tail; /* bytes ever consumed */
    uint64_t dropped_reported;
    uint64_t last_drain_ns;
    char pad1[40];
    /* set at creation */
    uint8_t *data;
    uint64_t size; /* power of two */
    uint64_t mask;
    uint32_t tid;
    atomic_int state;
    int32_t slot;      /* its slot in the live mapping (src/live.h), -1 for private memory */
    uint32_t live_gen; /* which of this process's live mappings (a recorder restarted in the
                        * same image makes a new one; its rings stay the old one's) */
};

/* Maps a ring with `bytes` of data (rounded up to a power of two, at least
 * 4 KiB) in private memory. Returns NULL on failure. One mmap: safe in any
 * context. */
struct ct_ring *ct_ring_create(size_t bytes, uint32_t tid);
/* Unmaps a ring; one in the live mapping gives its slot back
 * (ct_live_ring_free). */
void ct_ring_destroy(struct ct_ring *r);

/* Writes a record's header at byte pos of the data, makes next the head
 * its commit publishes, and returns where its fields go (both begins). */
static inline uint64_t *ct_ring_place(struct ct_ring *r, uint64_t pos, uint64_t next, unsigned kind,
                                      unsigned nwords, unsigned flags)
{
    struct ct_rec_hdr *h = (struct ct_rec_hdr *)(void *)(r->data + pos);
    h->kind = (uint16_t)kind;
    h->nwords = (uint8_t)nwords;
    h->flags = (uint8_t)flags;
    h->reserved = 0;
    r->pending = next;
    return (uint64_t *)(void *)(h + 1);
}

/* ct_ring_begin's common case alone: NULL, with nothing counted, where
 * ct_ring_begin would have to pad, look at the tail or drop (the caller
 * then takes its general path, which calls ct_ring_begin). */
static inline uint64_t *ct_ring_begin_fast(struct ct_ring *r, unsigned kind, unsigned nwords,
                                           unsigned flags)
{
    uint64_t need = 8u + (uint64_t)nwords * 8u;
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    if (__builtin_expect(head + need > r->limit, 0))
        return NULL;
    return ct_ring_place(r, head & r->mask, head + need, kind, nwords, flags);
}

/* The rest of ct_ring_begin (ring.c): a pad to the end of the lap, a fresh
 * look at the consumer's tail, a drop. */
uint64_t *ct_ring_begin_slow(struct ct_ring *r, unsigned kind, unsigned nwords, unsigned flags);

/*
 * Starts a record of `nwords` fields; returns where to store them, or NULL
 * (the record is dropped and counted) when the ring is full. Must be followed
 * by ct_ring_commit() before the next begin.
 */
static inline uint64_t *ct_ring_begin(struct ct_ring *r, unsigned kind, unsigned nwords,
                                      unsigned flags)
{
    uint64_t *w = ct_ring_begin_fast(r, kind, nwords, flags);
    return __builtin_expect(w != NULL, 1) ? w : ct_ring_begin_slow(r, kind, nwords, flags);
}

static inline void ct_ring_commit(struct ct_ring *r)
{
    atomic_store_explicit(&r->head, r->pending, memory_order_release);
}

#endif
