/*
 * Lock-free map from handle (pointer) to a 64-bit value, for the caches the
 * wrappers consult on every call (stream -> stable id, function -> name).
 * Insert-or-update with CAS, lookups are a few loads. Storage is mapped once;
 * when full, inserts fail and the caller resolves the slow way each time.
 *
 * The table is reached through one pointer, published once: until
 * ct_ptrmap_init it points at a one-slot empty table (CT_PTRMAP_EMPTY), so
 * a lookup never tests for a missing table, and the mask it uses (stored
 * beside the slots) always belongs to the slots it reads. Key and value
 * share a slot: a hit is two loads from one cache line.
 */
#ifndef CT_PTRMAP_H
#define CT_PTRMAP_H

#include <stdatomic.h>
#include <stdint.h>

struct ct_ptrmap_slot {
    _Atomic uintptr_t key;
    _Atomic uint64_t val; /* 0 = no value (never stored) */
};

/* A table: its mask in the key of the slot before slot 0 (so a lookup
 * indexes the published pointer directly), then mask + 1 slots. */
struct ct_ptrmap {
    struct ct_ptrmap_slot *_Atomic slots;
};

/* Written before the table is published (release), read after it is
 * loaded (acquire): a plain load that folds into the index's arithmetic. */
static inline uint64_t ct_ptrmap_mask(const struct ct_ptrmap_slot *slots)
{
    return ((const uint64_t *)(const void *)slots)[-2];
}

/* The empty table every map starts at (ptrmap.c): mask 0, one slot, never
 * written. */
extern struct ct_ptrmap_slot ct_ptrmap_empty[2];
#define CT_PTRMAP_EMPTY_TAB (&ct_ptrmap_empty[1])
#define CT_PTRMAP_EMPTY                                                                            \
    {                                                                                              \
        CT_PTRMAP_EMPTY_TAB                                                                        \
    }

int ct_ptrmap_init(struct ct_ptrmap *m, unsigned log2_slots); /* 0 or -ENOMEM; log2_slots <= 32 */

/* 1 once ct_ptrmap_init has given m its table. */
static inline int ct_ptrmap_ready(const struct ct_ptrmap *m)
{
    return atomic_load_explicit(&m->slots, memory_order_acquire) != CT_PTRMAP_EMPTY_TAB;
}

/* Multiplicative hashing: bits 32.. of the product mix every bit of the
 * handle (heap handles share their low and high bits). */
static inline uint64_t ct_ptrmap_hash(uintptr_t k)
{
    return ((uint64_t)k * 0x9E3779B97F4A7C15ull) >> 32;
}

uint64_t ct_ptrmap_get_slow(const struct ct_ptrmap_slot *t, uintptr_t k);

/* The value stored for k, or 0. The first probe is inline: in a map kept at
 * most half full it is the one that hits. */
static inline __attribute__((always_inline)) uint64_t ct_ptrmap_get(const struct ct_ptrmap *m,
                                                                    uintptr_t k)
{
    const struct ct_ptrmap_slot *t = atomic_load_explicit(&m->slots, memory_order_acquire);
    const struct ct_ptrmap_slot *s = &t[ct_ptrmap_hash(k) & ct_ptrmap_mask(t)];
    uintptr_t key = atomic_load_explicit(&s->key, memory_order_acquire);
    if (__builtin_expect(key == k, 1))
        return atomic_load_explicit(&s->val, memory_order_acquire);
    if (key == 0)
        return 0;
    return ct_ptrmap_get_slow(t, k);
}

/* Stores v (nonzero) for k, replacing any value. 0, or -1 when full (or
 * before ct_ptrmap_init). */
int ct_ptrmap_put(struct ct_ptrmap *m, uintptr_t k, uint64_t v);

#endif
