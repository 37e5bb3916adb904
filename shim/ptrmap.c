#include "shim/ptrmap.h"

#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>

int ct_ptrmap_init(struct ct_ptrmap *m, unsigned log2_slots)
{
    uint64_t n = 1ull << log2_slots;
    void *k = mmap(NULL, n * sizeof(uintptr_t), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    void *v = mmap(NULL, n * sizeof(uint64_t), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (k == MAP_FAILED || v == MAP_FAILED) {
        if (k != MAP_FAILED)
            munmap(k, n * sizeof(uintptr_t));
        if (v != MAP_FAILED)
            munmap(v, n * sizeof(uint64_t));
        return -ENOMEM;
    }
    m->vals = v;
    m->mask = n - 1;
    m->keys = k; /* before the shim turns on: readers see it after that */
    return 0;
}

int ct_ptrmap_put(struct ct_ptrmap *m, uintptr_t k, uint64_t v)
{
    if (!m->keys || k == 0)
        return -1;
    for (uint64_t i = ct_ptrmap_hash(k) & m->mask, n = 0; n <= m->mask;
         n++, i = (i + 1) & m->mask) {
        uintptr_t key = atomic_load_explicit(&m->keys[i], memory_order_acquire);
        if (key == 0) {
            uintptr_t expected = 0;
            if (!atomic_compare_exchange_strong(&m->keys[i], &expected, k)) {
                if (expected != k)
                    continue;
            }
            key = k;
        }
        if (key == k) {
            atomic_store_explicit(&m->vals[i], v, memory_order_release);
            return 0;
        }
    }
    return -1;
}

uint64_t ct_ptrmap_get_slow(const struct ct_ptrmap *m, uintptr_t k)
{
    for (uint64_t i = ct_ptrmap_hash(k) & m->mask, n = 0; n <= m->mask;
         n++, i = (i + 1) & m->mask) {
        uintptr_t key = atomic_load_explicit(&m->keys[i], memory_order_acquire);
        if (key == k)
            return atomic_load_explicit(&m->vals[i], memory_order_acquire);
        if (key == 0)
            return 0;
    }
    return 0;
}
