/* Growable arrays and sorted key arrays (keys.h). */
#include "decoder/keys.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int ct_vec_grow(struct ct_vec *v, size_t size)
{
    size_t cap = v->cap ? v->cap * 2 : 1024;
    void *q = realloc(v->p, cap * size);
    if (!q)
        return -ENOMEM;
    v->p = q;
    v->cap = cap;
    return 0;
}

static inline uint64_t key_at(const unsigned char *p)
{
    uint64_t k;
    memcpy(&k, p, sizeof(k));
    return k;
}

/*
 * Stable LSD radix sort of n elements of `size` bytes whose first 8 bytes
 * are the key, 8 bits a pass over key - min: only as many passes as the
 * keys' range needs (time keys of one trace span a few GB of nanoseconds,
 * correlation ids are a small counter). Always inlined, so each caller's
 * constant size makes the key reads and element moves plain loads and
 * stores (a call with a variable size doubled the sorting's cost).
 */
__attribute__((always_inline)) static inline int radix(void *base, size_t n, size_t size)
{
    unsigned char *v = base;
    size_t i = 1;
    while (i < n && key_at(v + i * size) >= key_at(v + (i - 1) * size))
        i++;
    if (i >= n)
        return 0;
    unsigned char *tmp = malloc(n * size);
    if (!tmp)
        return -ENOMEM;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (i = 0; i < n; i++) {
        uint64_t k = key_at(v + i * size);
        lo = k < lo ? k : lo;
        hi = k > hi ? k : hi;
    }
    unsigned char *src = v, *dst = tmp;
    for (unsigned sh = 0; sh < 64 && ((hi - lo) >> sh); sh += 8) {
        size_t pos[256] = {0};
        for (i = 0; i < n; i++)
            pos[((key_at(src + i * size) - lo) >> sh) & 0xff]++;
        for (size_t d = 0, sum = 0; d < 256; d++) {
            size_t c = pos[d];
            pos[d] = sum;
            sum += c;
        }
        for (i = 0; i < n; i++)
            memcpy(dst + size * pos[((key_at(src + i * size) - lo) >> sh) & 0xff]++, src + i * size,
                   size);
        unsigned char *t = src;
        src = dst;
        dst = t;
    }
    if (src != v)
        memcpy(v, src, n * size);
    free(tmp);
    return 0;
}

int ct_kv_sort(struct ct_kv *v, size_t n)
{
    return radix(v, n, sizeof(*v));
}

int ct_u64_sort(uint64_t *v, size_t n)
{
    return radix(v, n, sizeof(*v));
}

/* Ascending signed order: the sign bit flipped makes it unsigned order. */
int ct_i64_sort(int64_t *v, size_t n)
{
    size_t i = 1;
    while (i < n && v[i] >= v[i - 1])
        i++;
    if (i >= n)
        return 0;
    uint64_t *u = (uint64_t *)v;
    for (i = 0; i < n; i++)
        u[i] ^= 1ull << 63;
    int rc = ct_u64_sort(u, n);
    for (i = 0; i < n; i++)
        u[i] ^= 1ull << 63;
    return rc;
}

int ct_kv_order(const struct ct_kv *keys, size_t n, size_t **perm)
{
    struct ct_kv *k = malloc((n ? n : 1) * sizeof(*k));
    *perm = malloc((n ? n : 1) * sizeof(**perm));
    if (!k || !*perm) {
        free(k);
        return -ENOMEM;
    }
    memcpy(k, keys, n * sizeof(*k));
    for (size_t i = 0; i < n; i++)
        k[i].val = i;
    int rc = ct_kv_sort(k, n);
    for (size_t i = 0; i < n && !rc; i++)
        (*perm)[i] = (size_t)k[i].val;
    free(k);
    return rc;
}

long ct_kv_find(const struct ct_vec *v, uint64_t k)
{
    const struct ct_kv *a = v->p;
    size_t lo = 0, hi = v->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid].key < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < v->n && a[lo].key == k ? (long)lo : -1;
}
