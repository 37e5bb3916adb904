/* Ring creation: one mapping holding the control block and data (private
 * here; src/live.c carves them from the live mapping). */
#include "src/ring.h"

#include "src/live.h"

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
    r->slot = -1;
    atomic_store(&r->state, CT_RING_ACTIVE);
    return r;
}

void ct_ring_destroy(struct ct_ring *r)
{
    if (r && r->slot >= 0)
        ct_live_ring_free(r);
    else if (r)
        munmap(r, CT_RING_CTL + r->size);
}

uint64_t *ct_ring_begin_slow(struct ct_ring *r, unsigned kind, unsigned nwords, unsigned flags)
{
    uint64_t need = 8u + (uint64_t)nwords * 8u;
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t pos = head & r->mask;
    uint64_t pad = r->size - pos < need ? r->size - pos : 0;
    if (head + pad + need - r->cached_tail > r->size) {
        r->cached_tail = atomic_load_explicit(&r->tail, memory_order_acquire);
        if (head + pad + need - r->cached_tail > r->size) {
            atomic_store_explicit(&r->dropped,
                                  atomic_load_explicit(&r->dropped, memory_order_relaxed) + 1,
                                  memory_order_relaxed);
            return NULL;
        }
    }
    if (pad) {
        struct ct_rec_hdr *ph = (struct ct_rec_hdr *)(void *)(r->data + pos);
        ph->kind = 0;
        ph->nwords = (uint8_t)((pad - 8u) / 8u);
        ph->flags = 0;
        ph->reserved = 0;
        head += pad;
        pos = 0;
    }
    uint64_t free_end = r->cached_tail + r->size, lap_end = (head & ~r->mask) + r->size;
    r->limit = free_end < lap_end ? free_end : lap_end;
    return ct_ring_place(r, pos, head + need, kind, nwords, flags);
}
