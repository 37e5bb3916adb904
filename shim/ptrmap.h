/*
 * Lock-free map from handle (pointer) to a 64-bit value, for the caches the
 * wrappers consult on every call (stream -> stable id, function -> name).
 * Insert-or-update with CAS, lookups are a few loads. Storage is mapped once;
 * when full, inserts fail and the caller resolves the slow way each time.
 */
#ifndef CT_PTRMAP_H
#define CT_PTRMAP_H

#include <stdatomic.h>
#include <stdint.h>

struct ct_ptrmap {
    _Atomic uintptr_t *keys;
    _Atomic uint64_t *vals; /* 0 = no value (never stored) */
    uint64_t mask;
};

int ct_ptrmap_init(struct ct_ptrmap *m, unsigned log2_slots); /* 0 or -ENOMEM */

static inline uint64_t ct_ptrmap_hash(uintptr_t k)
{
    uint64_t h = (uint64_t)k * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
}

uint64_t ct_ptrmap_get_slow(const struct ct_ptrmap *m, uintptr_t k);

/* The value stored for k, or 0. The first probe is inline: in a map kept at
 * most half full it is the one that hits. */
static inline __attribute__((always_inline)) uint64_t ct_ptrmap_get(const struct ct_ptrmap *m,
                                                                    uintptr_t k)
{
    if (__builtin_expect(!m->keys, 0))
        return 0;
    uint64_t i = ct_ptrmap_hash(k) & m->mask;
    uintptr_t key = atomic_load_explicit(&m->keys[i], memory_order_acquire);
    if (__builtin_expect(key == k, 1))
        return atomic_load_explicit(&m->vals[i], memory_order_acquire);
    if (key == 0)
        return 0;
    return ct_ptrmap_get_slow(m, k);
}

/* Stores v (nonzero) for k, replacing any value. 0, or -1 when full. */
int ct_ptrmap_put(struct ct_ptrmap *m, uintptr_t k, uint64_t v);

#endif
