/* Interval-set algebra: normalisation by sort + merge, set operations by one
 * two-pointer sweep over normalised inputs. */
#include "decoder/util/intervals.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int ct_ivset_reserve(struct ct_ivset *a, size_t n)
{
    if (n <= a->cap)
        return 0;
    size_t cap = a->cap ? a->cap : 16;
    while (cap < n)
        cap *= 2;
    struct ct_iv *v = realloc(a->v, cap * sizeof(*v));
    if (!v)
        return -ENOMEM;
    a->v = v;
    a->cap = cap;
    return 0;
}

void ct_ivset_shrink(struct ct_ivset *a)
{
    if (a->n == a->cap || !a->n)
        return;
    struct ct_iv *v = realloc(a->v, a->n * sizeof(*v));
    if (v) { /* a shrink that fails leaves the set as it was */
        a->v = v;
        a->cap = a->n;
    }
}

static int cmp_iv(const void *x, const void *y)
{
    const struct ct_iv *a = x, *b = y;
    if (a->s != b->s)
        return a->s < b->s ? -1 : 1;
    return (a->e > b->e) - (a->e < b->e);
}

void ct_ivset_normalize(struct ct_ivset *a)
{
    if (a->n < 2)
        return;
    int sorted = 1;
    for (size_t i = 1; i < a->n && sorted; i++)
        sorted = a->v[i].s >= a->v[i - 1].s;
    if (!sorted)
        qsort(a->v, a->n, sizeof(*a->v), cmp_iv);
    size_t w = 0;
    for (size_t i = 1; i < a->n; i++) {
        if (a->v[i].s <= a->v[w].e) { /* overlapping or touching */
            if (a->v[i].e > a->v[w].e)
                a->v[w].e = a->v[i].e;
        } else {
            a->v[++w] = a->v[i];
        }
    }
    a->n = w + 1;
}

int ct_ivset_union(const struct ct_ivset *a, const struct ct_ivset *b, struct ct_ivset *out)
{
    out->n = 0;
    if (ct_ivset_reserve(out, a->n + b->n))
        return -ENOMEM;
    size_t i = 0, j = 0;
    while (i < a->n || j < b->n) {
        const struct ct_iv *x;
        if (j >= b->n || (i < a->n && a->v[i].s <= b->v[j].s))
            x = &a->v[i++];
        else
            x = &b->v[j++];
        ct_ivset_put(out, x->s, x->e); /* capacity reserved: cannot fail */
    }
    return 0;
}

/* First index from i on whose interval ends after t, galloping: a
 * normalised set's ends increase, and a sweep that skips a long run of one
 * set (a small class set against all compute) costs O(log run). */
static size_t skip_ending_by(const struct ct_ivset *a, size_t i, int64_t t)
{
    size_t lo = i, step = 1;
    while (i + step < a->n && a->v[i + step].e <= t) {
        lo = i + step;
        step *= 2;
    }
    size_t hi = i + step < a->n ? i + step : a->n; /* a->v[lo].e <= t */
    lo++;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->v[mid].e <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int ct_ivset_intersect(const struct ct_ivset *a, const struct ct_ivset *b, struct ct_ivset *out)
{
    out->n = 0;
    size_t i = 0, j = 0;
    while (i < a->n && j < b->n) {
        if (a->v[i].e <= b->v[j].s) {
            i = skip_ending_by(a, i, b->v[j].s);
            continue;
        }
        if (b->v[j].e <= a->v[i].s) {
            j = skip_ending_by(b, j, a->v[i].s);
            continue;
        }
        int64_t s = a->v[i].s > b->v[j].s ? a->v[i].s : b->v[j].s;
        int64_t e = a->v[i].e < b->v[j].e ? a->v[i].e : b->v[j].e;
        if (ct_ivset_put(out, s, e)) /* they overlap: s < e */
            return -ENOMEM;
        if (a->v[i].e < b->v[j].e)
            i++;
        else
            j++;
    }
    return 0;
}

int ct_ivset_subtract(const struct ct_ivset *a, const struct ct_ivset *b, struct ct_ivset *out)
{
    out->n = 0;
    size_t j = 0;
    for (size_t i = 0; i < a->n; i++) {
        int64_t s = a->v[i].s, e = a->v[i].e;
        while (j < b->n && b->v[j].e <= s)
            j++;
        size_t k = j;
        while (k < b->n && b->v[k].s < e) {
            if (b->v[k].s > s && ct_ivset_put(out, s, b->v[k].s))
                return -ENOMEM;
            if (b->v[k].e > s)
                s = b->v[k].e;
            if (s >= e)
                break;
            k++;
        }
        if (s < e && ct_ivset_put(out, s, e))
            return -ENOMEM;
    }
    return 0;
}

/* First interval whose end is after t (galloping from the first: as
 * cheap as bisection, and one search to maintain). */
static size_t first_ending_after(const struct ct_ivset *a, int64_t t)
{
    return a->n && a->v[0].e <= t ? skip_ending_by(a, 0, t) : 0;
}

int ct_ivset_clip(const struct ct_ivset *a, int64_t lo, int64_t hi, struct ct_ivset *out)
{
    out->n = 0;
    for (size_t i = first_ending_after(a, lo); i < a->n && a->v[i].s < hi; i++) {
        int64_t s = a->v[i].s > lo ? a->v[i].s : lo;
        int64_t e = a->v[i].e < hi ? a->v[i].e : hi;
        if (ct_ivset_put(out, s, e))
            return -ENOMEM;
    }
    return 0;
}

int64_t ct_ivset_len(const struct ct_ivset *a)
{
    int64_t n = 0;
    for (size_t i = 0; i < a->n; i++)
        n += a->v[i].e - a->v[i].s;
    return n;
}

int64_t ct_ivset_len_in(const struct ct_ivset *a, int64_t lo, int64_t hi)
{
    size_t at = 0;
    return ct_ivset_len_in_at(a, lo, hi, &at);
}

/* The first interval of a ending after lo, found from the kept position
 * *at (galloping forward, or searching when lo went back), kept again. */
static size_t seek_window(const struct ct_ivset *a, int64_t lo, size_t *at)
{
    size_t i = *at;
    if (i > a->n || (i > 0 && a->v[i - 1].e > lo))
        i = first_ending_after(a, lo); /* a window before the last one: search */
    else if (i < a->n && a->v[i].e <= lo)
        i = skip_ending_by(a, i, lo);
    return *at = i;
}

int64_t ct_ivset_overlap_in(const struct ct_ivset *a, const struct ct_ivset *b, int64_t lo,
                            int64_t hi, size_t *ia, size_t *ib)
{
    size_t i = seek_window(a, lo, ia), j = seek_window(b, lo, ib);
    int64_t n = 0;
    while (i < a->n && j < b->n && a->v[i].s < hi && b->v[j].s < hi) {
        if (a->v[i].e <= b->v[j].s) {
            i = skip_ending_by(a, i, b->v[j].s);
            continue;
        }
        if (b->v[j].e <= a->v[i].s) {
            j = skip_ending_by(b, j, a->v[i].s);
            continue;
        }
        int64_t s = a->v[i].s > b->v[j].s ? a->v[i].s : b->v[j].s;
        int64_t e = a->v[i].e < b->v[j].e ? a->v[i].e : b->v[j].e;
        s = s > lo ? s : lo;
        e = e < hi ? e : hi;
        if (e > s)
            n += e - s;
        if (a->v[i].e < b->v[j].e)
            i++;
        else
            j++;
    }
    return n;
}

int64_t ct_ivset_overlap(const struct ct_ivset *a, const struct ct_ivset *b)
{
    size_t i = 0, j = 0;
    return ct_ivset_overlap_in(a, b, INT64_MIN, INT64_MAX, &i, &j);
}

int64_t ct_ivset_len_in_at(const struct ct_ivset *a, int64_t lo, int64_t hi, size_t *at)
{
    size_t i = seek_window(a, lo, at);
    int64_t n = 0;
    for (; i < a->n && a->v[i].s < hi; i++) {
        int64_t s = a->v[i].s > lo ? a->v[i].s : lo;
        int64_t e = a->v[i].e < hi ? a->v[i].e : hi;
        if (e > s)
            n += e - s;
    }
    return n;
}

int ct_ivset_copy(const struct ct_ivset *a, struct ct_ivset *out)
{
    out->n = 0;
    if (ct_ivset_reserve(out, a->n))
        return -ENOMEM;
    if (a->n)
        memcpy(out->v, a->v, a->n * sizeof(*a->v));
    out->n = a->n;
    return 0;
}

void ct_ivset_clear(struct ct_ivset *a)
{
    a->n = 0;
}

void ct_ivset_free(struct ct_ivset *a)
{
    free(a->v);
    memset(a, 0, sizeof(*a));
}

/* ct_ivset_normalize, with unsorted input first put in start order by an LSD
 * radix sort (the merged set does not depend on the order of equal starts,
 * and the launch intervals come in GPU order, far from host order). */
void ct_ivset_normalize_unsorted(struct ct_ivset *a)
{
    size_t n = a->n, i = 1;
    while (i < n && a->v[i - 1].s <= a->v[i].s)
        i++;
    struct ct_iv *tmp = i < n ? malloc(n * sizeof(*tmp)) : NULL;
    if (tmp) {
        uint64_t lo = UINT64_MAX, hi = 0;
        for (i = 0; i < n; i++) {
            uint64_t k = (uint64_t)a->v[i].s ^ (UINT64_C(1) << 63);
            lo = k < lo ? k : lo;
            hi = k > hi ? k : hi;
        }
        struct ct_iv *src = a->v, *dst = tmp;
        for (unsigned sh = 0; sh < 64 && ((hi - lo) >> sh); sh += 8) {
            size_t pos[256] = {0};
            for (i = 0; i < n; i++)
                pos[((((uint64_t)src[i].s ^ (UINT64_C(1) << 63)) - lo) >> sh) & 255]++;
            for (size_t b = 0, sum = 0; b < 256; b++) {
                size_t c = pos[b];
                pos[b] = sum;
                sum += c;
            }
            for (i = 0; i < n; i++)
                dst[pos[((((uint64_t)src[i].s ^ (UINT64_C(1) << 63)) - lo) >> sh) & 255]++] =
                    src[i];
            struct ct_iv *t = src;
            src = dst;
            dst = t;
        }
        if (src != a->v)
            memcpy(a->v, src, n * sizeof(*src));
        free(tmp);
    }
    ct_ivset_normalize(a); /* sorted now (or by its qsort when out of memory) */
}
