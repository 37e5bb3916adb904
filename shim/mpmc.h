/*
 * Bounded lock-free MPMC queue of 64-bit values (Vyukov's sequence-number
 * ring). Push and pop never block: a full queue refuses the push, an empty
 * one the pop. Used by the event-timing path, where wrappers on any thread
 * take and hand over work without locks.
 */
#ifndef CT_MPMC_H
#define CT_MPMC_H

#include <stdatomic.h>
#include <stdint.h>

struct ct_mpmc_cell {
    _Atomic uint64_t seq;
    uint64_t value;
};

struct ct_mpmc {
    struct ct_mpmc_cell *cells;
    uint64_t mask;
    char pad0[48];
    _Atomic uint64_t head; /* next pop */
    char pad1[56];
    _Atomic uint64_t tail; /* next push */
};

/* Maps room for 2^log2 values. 0 or -ENOMEM. */
int ct_mpmc_init(struct ct_mpmc *q, unsigned log2);

static inline int ct_mpmc_push(struct ct_mpmc *q, uint64_t v)
{
    uint64_t pos = atomic_load_explicit(&q->tail, memory_order_relaxed);
    for (;;) {
        struct ct_mpmc_cell *c = &q->cells[pos & q->mask];
        uint64_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
        int64_t dif = (int64_t)(seq - pos);
        if (dif == 0) {
            if (atomic_compare_exchange_weak_explicit(&q->tail, &pos, pos + 1, memory_order_relaxed,
                                                      memory_order_relaxed)) {
                c->value = v;
                atomic_store_explicit(&c->seq, pos + 1, memory_order_release);
                return 0;
            }
        } else if (dif < 0) {
            return -1; /* full */
        } else {
            pos = atomic_load_explicit(&q->tail, memory_order_relaxed);
        }
    }
}

static inline int ct_mpmc_pop(struct ct_mpmc *q, uint64_t *v)
{
    uint64_t pos = atomic_load_explicit(&q->head, memory_order_relaxed);
    for (;;) {
        struct ct_mpmc_cell *c = &q->cells[pos & q->mask];
        uint64_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
        int64_t dif = (int64_t)(seq - (pos + 1));
        if (dif == 0) {
            if (atomic_compare_exchange_weak_explicit(&q->head, &pos, pos + 1, memory_order_relaxed,
                                                      memory_order_relaxed)) {
                *v = c->value;
                atomic_store_explicit(&c->seq, pos + q->mask + 1, memory_order_release);
                return 0;
            }
        } else if (dif < 0) {
            return -1; /* empty */
        } else {
            pos = atomic_load_explicit(&q->head, memory_order_relaxed);
        }
    }
}

/* The value at the head without removing it (single consumer only). */
static inline int ct_mpmc_peek(struct ct_mpmc *q, uint64_t *v)
{
    uint64_t pos = atomic_load_explicit(&q->head, memory_order_relaxed);
    struct ct_mpmc_cell *c = &q->cells[pos & q->mask];
    if (atomic_load_explicit(&c->seq, memory_order_acquire) != pos + 1)
        return -1;
    *v = c->value;
    return 0;
}

#endif
