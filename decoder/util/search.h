/*
 * Searches of a sorted int64 array for a sequence of keys that mostly rise
 * (ops in GPU order looked up by their host launch times): each search
 * gallops out from the previous answer and then bisects, a few probes
 * instead of log n over the whole array.
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

#endif
