/*
 * The MPMC queue's set-up (shim/mpmc.h holds the lock-free push and pop,
 * inline): its cells mapped once, never grown, so push and pop never
 * allocate on the wrappers' path.
 */
#include "shim/mpmc.h"

#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>

int ct_mpmc_init(struct ct_mpmc *q, unsigned log2)
{
    uint64_t n = 1ull << log2;
    void *p = mmap(NULL, n * sizeof(struct ct_mpmc_cell), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -ENOMEM;
    q->cells = p;
    q->mask = n - 1;
    for (uint64_t i = 0; i < n; i++)
        atomic_store_explicit(&q->cells[i].seq, i, memory_order_relaxed);
    atomic_store(&q->head, 0);
    atomic_store(&q->tail, 0);
    return 0;
}
