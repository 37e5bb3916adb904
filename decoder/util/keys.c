/* Growable arrays and sorted key arrays (keys.h). */
#include "decoder/util/keys.h"

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
 * are the key, over key - min: only as many passes as the keys' range
 * needs (time keys of one trace span a few GB of nanoseconds, correlation
 * ids are a small counter), with 11-bit digits where that saves a pass
 * over 8-bit ones (a 2^32 ns range: 3 passes, not 4). The digit counts of
 * every pass come from one read of the keys, so a sort costs 1 + passes
 * sweeps. Always inlined, so each caller's constant size makes the key
 * reads and element moves plain loads and stores (a call with a variable
 * size doubled the sorting's cost).
 */
enum { RADIX_MAX_BITS = 11 };

__attribute__((always_inline)) static inline int radix(void *base, size_t n, size_t size)
{
    unsigned char *v = base;
    size_t i = 1;
    while (i < n && key_at(v + i * size) >= key_at(v + (i - 1) * size))
        i++;
    if (i >= n)
        return 0;
    /* Nearly sorted input (GPU records of a trace come in completion
     * order, a few places out of start order) is finished by an insertion
     * sort, while its moves stay within a budget of 2 per element; beyond
     * that the radix passes below sort what it left (insertion moves an
     * element only past greater keys, so the whole stays stable). */
    size_t budget = 2 * n;
    for (; i < n && budget; i++) {
        uint64_t k = key_at(v + i * size);
        if (key_at(v + (i - 1) * size) <= k)
            continue;
        unsigned char x[sizeof(struct ct_kv)]; /* the largest element sorted here */
        memcpy(x, v + i * size, size);
        size_t m = i;
        for (; m > 0 && key_at(v + (m - 1) * size) > k && budget; m--, budget--)
            memcpy(v + m * size, v + (m - 1) * size, size);
        memcpy(v + m * size, x, size);
    }
    if (i >= n && budget)
        return 0;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (i = 0; i < n; i++) {
        uint64_t k = key_at(v + i * size);
        lo = k < lo ? k : lo;
        hi = k > hi ? k : hi;
    }
    unsigned bits = 64 - (unsigned)__builtin_clzll(hi - lo); /* hi > lo: unsorted */
    unsigned passes = (bits + 7) / 8, digit = 8;
    if ((bits + RADIX_MAX_BITS - 1) / RADIX_MAX_BITS < passes) {
        passes = (bits + RADIX_MAX_BITS - 1) / RADIX_MAX_BITS;
        digit = RADIX_MAX_BITS;
    }
    const uint64_t mask = (UINT64_C(1) << digit) - 1;
    size_t(*pos)[1u << RADIX_MAX_BITS] = calloc(passes, sizeof(*pos));
    unsigned char *tmp = malloc(n * size);
    if (!tmp || !pos) {
        free(tmp);
        free(pos);
        return -ENOMEM;
    }
    for (i = 0; i < n; i++) {
        uint64_t k = key_at(v + i * size) - lo;
        for (unsigned p = 0; p < passes; p++)
            pos[p][(k >> (p * digit)) & mask]++;
    }
    unsigned char *src = v, *dst = tmp;
    for (unsigned p = 0; p < passes; p++) {
        unsigned sh = p * digit;
        size_t *c = pos[p];
        if (c[((key_at(v) - lo) >> sh) & mask] == n)
            continue; /* one digit value: this pass moves nothing */
        for (size_t d = 0, sum = 0; d <= mask; d++) {
            size_t x = c[d];
            c[d] = sum;
            sum += x;
        }
        for (i = 0; i < n; i++)
            memcpy(dst + size * c[((key_at(src + i * size) - lo) >> sh) & mask]++, src + i * size,
                   size);
        unsigned char *t = src;
        src = dst;
        dst = t;
    }
    if (src != v)
        memcpy(v, src, n * size);
    free(tmp);
    free(pos);
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

int ct_kv_order(struct ct_kv *keys, size_t n)
{
    for (size_t i = 0; i < n; i++)
        keys[i].val = i;
    return ct_kv_sort(keys, n);
}

int ct_sort_by(void *v, size_t n, size_t size, const ct_key_fn *keys, int nkeys)
{
    if (n < 2)
        return 0;
    struct ct_kv *perm = malloc(n * sizeof(*perm));
    unsigned char *tmp = malloc(n * size);
    int rc = perm && tmp ? 0 : -ENOMEM;
    for (size_t i = 0; i < n && !rc; i++)
        perm[i].val = i;
    for (int k = nkeys - 1; k >= 0 && !rc; k--) {
        for (size_t i = 0; i < n; i++)
            perm[i].key = keys[k]((const unsigned char *)v + perm[i].val * size);
        rc = ct_kv_sort(perm, n);
    }
    if (!rc) {
        for (size_t i = 0; i < n; i++)
            memcpy(tmp + i * size, (const unsigned char *)v + perm[i].val * size, size);
        memcpy(v, tmp, n * size);
    }
    free(perm);
    free(tmp);
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
