/*
 * Searches of sorted arrays. ct_gallop: an int64 array for a sequence of
 * keys that mostly rise (ops in GPU order looked up by their host launch
 * times): each search gallops out from the previous answer and then
 * bisects, a few probes instead of log n over the whole array.
 * ct_partition: the plain lower bound over any array.
 */
#ifndef CT_SEARCH_H
#define CT_SEARCH_H

#include <stddef.h>
#include <stdint.h>

/* The first i with v[i] >= x (upper = 0) or v[i] > x (upper = 1), n when
 * none; *hint is where to start and becomes the answer. */
static inline size_t ct_gallop(const int64_t *v, size_t n, int64_t x, int upper, size_t *hint)
{
#define CT_BEFORE(i) (upper ? v[i] <= x : v[i] < x)
    size_t lo = *hint < n ? *hint : n, hi, step = 1;
    if (lo < n && CT_BEFORE(lo)) { /* the answer is right of lo */
        for (hi = lo + 1; hi < n && CT_BEFORE(hi); step *= 2) {
            lo = hi;
            hi = lo + step < n ? lo + step : n;
        }
        lo++;
    } else { /* at lo or left of it */
        hi = lo;
        while (lo > 0 && !CT_BEFORE(lo - 1)) {
            hi = lo - 1;
            lo = hi >= step ? hi - step : 0;
            step *= 2;
        }
    }
    while (lo < hi) { /* the answer lies in [lo, hi] */
        size_t mid = lo + (hi - lo) / 2;
        if (CT_BEFORE(mid))
            lo = mid + 1;
        else
            hi = mid;
    }
#undef CT_BEFORE
    *hint = lo;
    return lo;
}

/* The first i in [0, n) for which before(i, ctx) is false, where it holds
 * for a prefix of the indexes: the lower bound over any sorted array, by
 * whatever field its elements are sorted on. */
static inline size_t ct_partition(size_t n, int (*before)(size_t i, const void *ctx),
                                  const void *ctx)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (before(mid, ctx))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A 64-bit mix (splitmix64's finaliser) of h and v: token keys built from
 * several fields (repeats.c, step_phase.c). */
static inline uint64_t ct_mix64(uint64_t h, uint64_t v)
{
    uint64_t z = (h ^ v) + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#endif
