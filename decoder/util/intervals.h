/*
 * Interval sets: sorted, disjoint, non-touching half-open [s, e) intervals
 * on one clock (int64 ns). Every analysis of the report (breakdown, overlap,
 * exposed communication, idle attribution, bubbles) is algebra on these.
 *
 * A set is built by adding intervals in any order and then normalising it
 * (sort + merge, O(n log n)); union, intersection and difference of two
 * normalised sets are one linear sweep each. Functions never print and never
 * exit; allocation failures return -ENOMEM. Not thread-safe per set.
 */
#ifndef CT_INTERVALS_H
#define CT_INTERVALS_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

struct ct_iv {
    int64_t s, e; /* half-open [s, e), s < e */
};

struct ct_ivset {
    struct ct_iv *v;
    size_t n, cap;
};

/* Room for at least n intervals. 0 or -ENOMEM. */
int ct_ivset_reserve(struct ct_ivset *a, size_t n);
/* Gives back the room past a->n (a set that stays resident: a spilled
 * process's host sets, decoder/read/spill.c). */
void ct_ivset_shrink(struct ct_ivset *a);

/* Appends [s, e); empty or inverted intervals (e <= s) are ignored.
 * Returns 0 or -ENOMEM. The set is no longer normalised. Inline: sets are
 * built an op or a record at a time (millions per report). */
static inline int ct_ivset_add(struct ct_ivset *a, int64_t s, int64_t e)
{
    if (e <= s)
        return 0;
    if (a->n == a->cap && ct_ivset_reserve(a, a->n + 1))
        return -ENOMEM;
    a->v[a->n].s = s;
    a->v[a->n].e = e;
    a->n++;
    return 0;
}

/* The index of the interval of normalised a that holds t (s <= t < e), or
 * -1: a binary search. */
static inline long ct_ivset_find(const struct ct_ivset *a, int64_t t)
{
    size_t lo = 0, hi = a->n; /* the last interval starting at or before t */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->v[mid].s <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && t < a->v[lo - 1].e ? (long)lo - 1 : -1;
}

/* Adds [s, e) to a normalised set whose intervals all start at or before
 * s, merging it into the last one when they overlap or touch: the set
 * stays normalised (what adding in start order and normalising gives).
 * Empty intervals are ignored. 0 or -ENOMEM. */
static inline int ct_ivset_put(struct ct_ivset *a, int64_t s, int64_t e)
{
    if (e <= s)
        return 0;
    if (a->n && s <= a->v[a->n - 1].e) {
        if (e > a->v[a->n - 1].e)
            a->v[a->n - 1].e = e;
        return 0;
    }
    return ct_ivset_add(a, s, e);
}

/* Sorts and merges overlapping and touching intervals. Never fails. */
void ct_ivset_normalize(struct ct_ivset *a);
/* The same for input in any order: sorted by start first with an LSD radix
 * sort (the merged set does not depend on the order of equal starts), which
 * beats qsort on sets that come in GPU order, far from host order. */
void ct_ivset_normalize_unsorted(struct ct_ivset *a);

/* out = a op b. a and b must be normalised; out is normalised. out may not
 * alias a or b; its previous contents are replaced. Return 0 or -ENOMEM. */
int ct_ivset_union(const struct ct_ivset *a, const struct ct_ivset *b, struct ct_ivset *out);
int ct_ivset_intersect(const struct ct_ivset *a, const struct ct_ivset *b, struct ct_ivset *out);
int ct_ivset_subtract(const struct ct_ivset *a, const struct ct_ivset *b, struct ct_ivset *out);

/* out = a clipped to [lo, hi). a normalised. */
int ct_ivset_clip(const struct ct_ivset *a, int64_t lo, int64_t hi, struct ct_ivset *out);

/* Total length of a normalised set. */
int64_t ct_ivset_len(const struct ct_ivset *a);

/* Length of a normalised set inside [lo, hi): O(log n + intervals inside). */
int64_t ct_ivset_len_in(const struct ct_ivset *a, int64_t lo, int64_t hi);

/* The same, for windows asked in increasing order: *at (0 at first) keeps
 * where the last one began, so a pass over all iterations is one sweep
 * (galloping from there) instead of a search each. Any order is still
 * answered right. */
int64_t ct_ivset_len_in_at(const struct ct_ivset *a, int64_t lo, int64_t hi, size_t *at);

/* |a ∩ b|, and |a ∩ b ∩ [lo, hi)| with positions kept as above (*ia, *ib,
 * 0 at first), for normalised a and b: lengths without building the
 * intersection (a rank's compute set has millions of intervals). */
int64_t ct_ivset_overlap(const struct ct_ivset *a, const struct ct_ivset *b);
int64_t ct_ivset_overlap_in(const struct ct_ivset *a, const struct ct_ivset *b, int64_t lo,
                            int64_t hi, size_t *ia, size_t *ib);

/* Copies a into out (replacing its contents). */
int ct_ivset_copy(const struct ct_ivset *a, struct ct_ivset *out);

void ct_ivset_clear(struct ct_ivset *a);
void ct_ivset_free(struct ct_ivset *a);

#endif
