/* Ring creation: one anonymous mapping holding the control block and data. */
#include "src/ring.h"

#include <string.h>
#include <sys/mman.h>

#define CT_RING_CTL 4096u /* control block rounded to a page */

struct ct_ring *ct_ring_create(size_t bytes, uint32_t tid)
{
    uint64_t size = 4096;
    while (size < bytes && size < (1ull << 40))
        size <<= 1;
    void *p = mmap(NULL, CT_RING_CTL + size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    struct ct_ring *r = p;
    /* mmap gives zeroed memory: counters start at 0. */
    r->data = (uint8_t *)p + CT_RING_CTL;
    r->size = size;
    r->mask = size - 1;
    r->tid = tid;
    atomic_store(&r->state, CT_RING_ACTIVE);
    return r;
}

void ct_ring_destroy(struct ct_ring *r)
{
    if (r)
        munmap(r, CT_RING_CTL + r->size);
}
