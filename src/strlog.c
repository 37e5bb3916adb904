/*
 * The string log (strlog.h): a multi-producer ring of string definitions in
 * shared memory. Producers reserve with one CAS and commit with a release
 * store of the id; the single consumer (the writer) only moves the tail.
 */
#include "src/strlog.h"

#include <string.h>

struct entry {
    _Atomic uint32_t id;
    uint32_t len;
};

static uint64_t entry_bytes(uint64_t len)
{
    return 8u + ((len + 7u) & ~(uint64_t)7u);
}

static uint8_t *area(struct ct_strlog *l)
{
    return (uint8_t *)l + CT_STRLOG_HDR;
}

struct ct_strlog *ct_strlog_init(void *mem, size_t bytes)
{
    if (!mem || bytes < CT_STRLOG_HDR + 4096u)
        return NULL;
    struct ct_strlog *l = mem;
    uint64_t size = 4096;
    while (size * 2 <= bytes - CT_STRLOG_HDR)
        size *= 2;
    atomic_store(&l->head, 0);
    atomic_store(&l->tail, 0);
    atomic_store(&l->lost, 0);
    l->size = size;
    return l;
}

void ct_strlog_append(struct ct_strlog *l, uint32_t id, const char *s, size_t len)
{
    if (!l || id == 0 || id == CT_STRLOG_PAD)
        return;
    uint64_t need = entry_bytes(len);
    if (need > l->size / 4) { /* never worth a quarter of the log */
        atomic_fetch_add_explicit(&l->lost, 1, memory_order_relaxed);
        return;
    }
    uint64_t h = atomic_load_explicit(&l->head, memory_order_relaxed), pad;
    for (;;) {
        uint64_t t = atomic_load_explicit(&l->tail, memory_order_acquire);
        uint64_t pos = h & (l->size - 1);
        pad = l->size - pos < need ? l->size - pos : 0;
        if (h + pad + need - t > l->size) {
            atomic_fetch_add_explicit(&l->lost, 1, memory_order_relaxed);
            return;
        }
        if (atomic_compare_exchange_weak_explicit(&l->head, &h, h + pad + need,
                                                  memory_order_acq_rel, memory_order_relaxed))
            break;
    }
    if (pad) {
        struct entry *p = (struct entry *)(void *)(area(l) + (h & (l->size - 1)));
        p->len = (uint32_t)(pad - 8u);
        atomic_store_explicit(&p->id, CT_STRLOG_PAD, memory_order_release);
        h += pad;
    }
    struct entry *e = (struct entry *)(void *)(area(l) + (h & (l->size - 1)));
    e->len = (uint32_t)len;
    memcpy(e + 1, s, len);
    atomic_store_explicit(&e->id, id, memory_order_release);
}

void ct_strlog_trim(struct ct_strlog *l, int (*defined)(void *ctx, uint32_t id), void *ctx)
{
    if (!l)
        return;
    uint64_t t = atomic_load_explicit(&l->tail, memory_order_relaxed);
    uint64_t h = atomic_load_explicit(&l->head, memory_order_acquire);
    uint64_t t0 = t;
    while (t < h) {
        struct entry *e = (struct entry *)(void *)(area(l) + (t & (l->size - 1)));
        uint32_t id = atomic_load_explicit(&e->id, memory_order_acquire);
        if (id == 0 || (id != CT_STRLOG_PAD && !defined(ctx, id)))
            break;
        uint64_t adv = entry_bytes(e->len);
        /* the space goes back zeroed: an id there is a new commit */
        memset(e, 0, (size_t)adv);
        t += adv;
    }
    if (t != t0)
        atomic_store_explicit(&l->tail, t, memory_order_release);
}

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

long ct_strlog_walk(const void *mem, size_t bytes,
                    int (*fn)(void *ctx, uint32_t id, const char *s, uint32_t len), void *ctx)
{
    const uint8_t *b = mem;
    if (!b || bytes < CT_STRLOG_HDR)
        return 0;
    uint64_t head = rd64(b), tail = rd64(b + 8), size = rd64(b + 24);
    if (size < 4096 || (size & (size - 1)) || size > bytes - CT_STRLOG_HDR || tail > head ||
        head - tail > size || (tail & 7))
        return 0;
    const uint8_t *a = b + CT_STRLOG_HDR;
    long n = 0;
    for (uint64_t t = tail; t < head;) {
        uint64_t pos = t & (size - 1);
        if (size - pos < 8)
            break;
        uint32_t id = rd32(a + pos), len = rd32(a + pos + 4);
        uint64_t adv = entry_bytes(len);
        if (id == 0 || adv > size - pos || adv > head - t)
            break; /* being written at the end, or damage: nothing after it is trusted */
        if (id != CT_STRLOG_PAD) {
            int rc = fn(ctx, id, (const char *)(a + pos + 8), len);
            if (rc < 0)
                return rc;
            n++;
        }
        t += adv;
    }
    return n;
}
