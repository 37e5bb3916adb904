/*
 * Growable arrays and sorted (key, value) arrays for the extraction's joins
 * (decoder/read/extract.c): records are gathered in file order and joined at the
 * end by sorting their keys (correlation ids, start times) and merging.
 */
#ifndef CT_KEYS_H
#define CT_KEYS_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

struct ct_kv {
    uint64_t key, val;
};

/* A growable array of elements of one size; all-zero is empty. */
struct ct_vec {
    void *p;
    size_t n, cap;
};

/* Doubles v's capacity. 0 or -ENOMEM. */
int ct_vec_grow(struct ct_vec *v, size_t size);

/* Room for one more element of `size` bytes. 0 or -ENOMEM. Inline: the
 * extraction calls it a few times per record. */
static inline int ct_vec_room(struct ct_vec *v, size_t size)
{
    return v->n < v->cap ? 0 : ct_vec_grow(v, size);
}

/* Appends (key, val) to a vector of struct ct_kv. 0 or -ENOMEM. */
static inline int ct_kv_push(struct ct_vec *v, uint64_t key, uint64_t val)
{
    if (ct_vec_room(v, sizeof(struct ct_kv)))
        return -ENOMEM;
    struct ct_kv *e = (struct ct_kv *)v->p + v->n++;
    e->key = key;
    e->val = val;
    return 0;
}

/* Appends x to a vector of uint64_t. 0 or -ENOMEM. */
static inline int ct_u64_push(struct ct_vec *v, uint64_t x)
{
    if (ct_vec_room(v, sizeof(uint64_t)))
        return -ENOMEM;
    ((uint64_t *)v->p)[v->n++] = x;
    return 0;
}

/* Stable ascending sorts by key (radix, only as many 8-bit passes as the
 * keys' range needs; an already sorted array costs one read). 0 or
 * -ENOMEM. */
int ct_kv_sort(struct ct_kv *v, size_t n);
int ct_u64_sort(uint64_t *v, size_t n);
int ct_i64_sort(int64_t *v, size_t n);

/* The stable sorting permutation of keys[0..n).key, in place: afterwards
 * keys[i].val is the original index of the i-th smallest key (the values
 * given are overwritten). 0 or -ENOMEM. */
int ct_kv_order(struct ct_kv *keys, size_t n);

/* Whether `key` is among the sorted kv keys of v from *pos on; advances
 * *pos (keys asked in increasing order). Inline: once per record. */
static inline int ct_kv_seek(const struct ct_vec *v, size_t *pos, uint64_t key)
{
    const struct ct_kv *a = v->p;
    while (*pos < v->n && a[*pos].key < key)
        (*pos)++;
    return *pos < v->n && a[*pos].key == key;
}
/* A sort key of an element: unsigned order (a signed value x gives
 * (uint64_t)x ^ (1 << 63)). */
typedef uint64_t (*ct_key_fn)(const void *elem);

/* Stable sort of n elements of `size` bytes by keys[0], then keys[1]...
 * (most significant first): nearly sorted input by a bounded insertion
 * sort, the rest by a radix sort on keys[0] and each run of equal keys[0]
 * by the others. For arrays whose order has several fields (collectives by
 * communicator, peers, sequence; ops by launch and kind), where qsort's
 * comparison calls cost a tenth of a report. 0 or -ENOMEM (on -ENOMEM v
 * holds the same elements, partly ordered). */
int ct_sort_by(void *v, size_t n, size_t size, const ct_key_fn *keys, int nkeys);

/* Index of the first entry of sorted v with key k, or -1. */
long ct_kv_find(const struct ct_vec *v, uint64_t k);

#endif
