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
    size_t budget = 2 * n, descents = 0;
    for (size_t j = i; j < n && descents <= n / 16; j++) /* far from sorted: no insertion */
        descents += key_at(v + j * size) < key_at(v + (j - 1) * size);
    if (descents > n / 16)
        budget = 0;
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

/* Copies one element of `size` bytes: the common sizes as fixed-size
 * copies (plain moves, no call per element). */
static inline void copy_elem(unsigned char *dst, const unsigned char *src, size_t size)
{
    switch (size) {
    case 16: memcpy(dst, src, 16); break;
    case 24: memcpy(dst, src, 24); break;
    case 32: memcpy(dst, src, 32); break;
    case 40: memcpy(dst, src, 40); break;
    case 48: memcpy(dst, src, 48); break;
    default: memcpy(dst, src, size); break;
    }
}

/* The order of elements a and b by keys[from..nkeys): < 0, 0 or > 0. */
static int keys_cmp(const void *a, const void *b, const ct_key_fn *keys, int from, int nkeys)
{
    for (int k = from; k < nkeys; k++) {
        uint64_t x = keys[k](a), y = keys[k](b);
        if (x != y)
            return x < y ? -1 : 1;
    }
    return 0;
}

/* Stable insertion sort of v by keys[from..nkeys), its moves within
 * *budget (SIZE_MAX: none); 1 when it finished. An element moves only
 * past greater ones: what it leaves unfinished keeps equal elements in
 * their first order. */
static int insertion_by(unsigned char *v, size_t n, size_t size, const ct_key_fn *keys, int from,
                        int nkeys, size_t *budget, unsigned char *x)
{
    for (size_t i = 1; i < n; i++) {
        if (keys_cmp(v + (i - 1) * size, v + i * size, keys, from, nkeys) <= 0)
            continue;
        memcpy(x, v + i * size, size);
        size_t m = i;
        for (; m > 0 && *budget && keys_cmp(v + (m - 1) * size, x, keys, from, nkeys) > 0;
             m--, (*budget)--)
            memcpy(v + m * size, v + (m - 1) * size, size);
        memcpy(v + m * size, x, size);
        if (!*budget)
            return 0;
    }
    return 1;
}

/* Stable sort by keys[from..nkeys) of v, with tmp room for n elements and
 * x for one: a radix sort of the elements' order by the first key, then
 * each run of equal first keys by the rest (insertion when short: equal
 * times are rare). The result is the LSD order (keys, then first order). */
static int sort_from(unsigned char *v, size_t n, size_t size, const ct_key_fn *keys, int from,
                     int nkeys, unsigned char *tmp, unsigned char *x)
{
    if (n < 2 || from >= nkeys)
        return 0;
    struct ct_kv *perm = malloc(n * sizeof(*perm));
    if (!perm)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        perm[i] = (struct ct_kv){keys[from](v + i * size), i};
    int rc = ct_kv_sort(perm, n);
    if (!rc) {
        for (size_t i = 0; i < n; i++)
            copy_elem(tmp + i * size, v + perm[i].val * size, size);
        memcpy(v, tmp, n * size);
    }
    for (size_t a = 0, b; a < n && !rc && from + 1 < nkeys; a = b) {
        for (b = a + 1; b < n && perm[b].key == perm[a].key; b++)
            ;
        size_t budget = SIZE_MAX;
        if (b - a <= 32)
            insertion_by(v + a * size, b - a, size, keys, from + 1, nkeys, &budget, x);
        else
            rc = sort_from(v + a * size, b - a, size, keys, from + 1, nkeys, tmp, x);
    }
    free(perm);
    return rc;
}

/* The order of elements i and j of a (first keys k0[i], k0[j]) by keys:
 * the first keys compared in place, the others only on a tie. */
static inline int order_at(const unsigned char *a, const uint64_t *k0, size_t i, size_t j,
                           size_t size, const ct_key_fn *keys, int nkeys)
{
    if (k0[i] != k0[j])
        return k0[i] < k0[j] ? -1 : 1;
    return nkeys > 1 ? keys_cmp(a + i * size, a + j * size, keys, 1, nkeys) : 0;
}

/* Stable merge of the sorted runs [s, m) and [m, e) of a (first keys k)
 * into the same places of out (first keys ko): on equal keys the first
 * run's element goes first. */
static void merge_runs(const unsigned char *a, const uint64_t *k, size_t s, size_t m, size_t e,
                       size_t size, const ct_key_fn *keys, int nkeys, unsigned char *out,
                       uint64_t *ko)
{
    size_t i = s, j = m, w = s;
    while (i < m && j < e) {
        size_t t = order_at(a, k, j, i, size, keys, nkeys) < 0 ? j++ : i++;
        copy_elem(out + w * size, a + t * size, size);
        ko[w++] = k[t];
    }
    memcpy(out + w * size, a + i * size, (m - i) * size);
    memcpy(ko + w, k + i, (m - i) * sizeof(*k));
    w += m - i;
    memcpy(out + w * size, a + j * size, (e - j) * size);
    memcpy(ko + w, k + j, (e - j) * sizeof(*k));
}

/* Runs (maximal sorted stretches) beyond which the radix path wins. */
#define SORT_MERGE_RUNS 64

int ct_sort_by(void *v, size_t n, size_t size, const ct_key_fn *keys, int nkeys)
{
    if (n < 2)
        return 0;
    unsigned char *a = v;
    uint64_t *k0 = malloc(n * sizeof(*k0)); /* the first key of each element */
    if (!k0)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        k0[i] = keys[0](a + i * size);
    /* Input made of a few sorted runs (ops by launch then NCCL calls by
     * host start, records of a few threads by time) is merged run by run:
     * O(n log runs) moves. */
    size_t starts[SORT_MERGE_RUNS + 1], nruns = 1;
    starts[0] = 0;
    for (size_t i = 1; i < n && nruns <= SORT_MERGE_RUNS; i++)
        if (order_at(a, k0, i - 1, i, size, keys, nkeys) > 0) {
            if (nruns < SORT_MERGE_RUNS)
                starts[nruns] = i;
            nruns++;
        }
    if (nruns == 1) {
        free(k0);
        return 0;
    }
    unsigned char *tmp = malloc(n * size), *x = NULL;
    uint64_t *kt = nruns <= SORT_MERGE_RUNS ? malloc(n * sizeof(*kt)) : NULL;
    int rc = 0;
    if (!tmp || (nruns <= SORT_MERGE_RUNS && !kt)) {
        rc = -ENOMEM;
    } else if (nruns <= SORT_MERGE_RUNS) {
        /* merge neighbouring runs pairwise until one is left (stable: a
         * run is only ever merged with its neighbour) */
        starts[nruns] = n;
        unsigned char *src = a, *dst = tmp;
        uint64_t *ks = k0, *kd = kt;
        while (nruns > 1) {
            size_t w = 0;
            for (size_t r = 0; r < nruns; r += 2) {
                size_t s0 = starts[r];
                if (r + 1 < nruns) /* starts[nruns] is n */
                    merge_runs(src, ks, s0, starts[r + 1], starts[r + 2], size, keys, nkeys, dst,
                               kd);
                else {
                    memcpy(dst + s0 * size, src + s0 * size, (n - s0) * size);
                    memcpy(kd + s0, ks + s0, (n - s0) * sizeof(*ks));
                }
                starts[w++] = s0;
            }
            starts[w] = n;
            nruns = w;
            unsigned char *t = src;
            src = dst;
            dst = t;
            uint64_t *tk = ks;
            ks = kd;
            kd = tk;
        }
        if (src != a)
            memcpy(a, src, n * size);
    } else {
        x = malloc(size);
        rc = x ? sort_from(a, n, size, keys, 0, nkeys, tmp, x) : -ENOMEM;
    }
    free(tmp);
    free(x);
    free(k0);
    free(kt);
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
