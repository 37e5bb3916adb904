/*
 * The lock-free handle map (shim/ptrmap.h; lookups are inline there): its
 * set-up, slots mapped once and published with one release store, and the
 * insert by CAS. Never allocates after the set-up and never blocks: a full
 * table refuses the insert.
 */
#include "shim/ptrmap.h"

#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>

/* Slot -1 holds the mask (0), slot 0 key 0: "absent" to every lookup. */
struct ct_ptrmap_slot ct_ptrmap_empty[2];

int ct_ptrmap_init(struct ct_ptrmap *m, unsigned log2_slots)
{
    uint64_t n = 1ull << log2_slots;
    size_t len = (n + 1) * sizeof(struct ct_ptrmap_slot);
    struct ct_ptrmap_slot *t =
        mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (t == MAP_FAILED)
        return -ENOMEM;
    ((uint64_t *)(void *)t)[0] = n - 1; /* ct_ptrmap_mask */
    /* before the shim turns on: readers see it after that */
    atomic_store_explicit(&m->slots, t + 1, memory_order_release);
    return 0;
}

int ct_ptrmap_put(struct ct_ptrmap *m, uintptr_t k, uint64_t v)
{
    struct ct_ptrmap_slot *t = atomic_load_explicit(&m->slots, memory_order_acquire);
    if (t == CT_PTRMAP_EMPTY_TAB || k == 0)
        return -1;
    uint64_t mask = ct_ptrmap_mask(t);
    for (uint64_t i = ct_ptrmap_hash(k) & mask, n = 0; n <= mask; n++, i = (i + 1) & mask) {
        struct ct_ptrmap_slot *s = &t[i];
        uintptr_t key = atomic_load_explicit(&s->key, memory_order_acquire);
        if (key == 0) {
            uintptr_t expected = 0;
            if (!atomic_compare_exchange_strong(&s->key, &expected, k)) {
                if (expected != k)
                    continue;
            }
            key = k;
        }
        if (key == k) {
            atomic_store_explicit(&s->val, v, memory_order_release);
            return 0;
        }
    }
    return -1;
}

uint64_t ct_ptrmap_get_slow(const struct ct_ptrmap_slot *t, uintptr_t k)
{
    uint64_t mask = ct_ptrmap_mask(t);
    for (uint64_t i = ct_ptrmap_hash(k) & mask, n = 0; n <= mask; n++, i = (i + 1) & mask) {
        const struct ct_ptrmap_slot *s = &t[i];
        uintptr_t key = atomic_load_explicit(&s->key, memory_order_acquire);
        if (key == k)
            return atomic_load_explicit(&s->val, memory_order_acquire);
        if (key == 0)
            return 0;
    }
    return 0;
}
