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

#include <stddef.h>
#include <stdint.h>

struct ct_iv {
    int64_t s, e; /* half-open [s, e), s < e */
};

struct ct_ivset {
    struct ct_iv *v;
    size_t n, cap;
};

/* Appends [s, e); empty or inverted intervals (e <= s) are ignored.
 * Returns 0 or -ENOMEM. The set is no longer normalised. */
int ct_ivset_add(struct ct_ivset *a, int64_t s, int64_t e);

/* Sorts and merges overlapping and touching intervals. Never fails. */
void ct_ivset_normalize(struct ct_ivset *a);

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

/* Copies a into out (replacing its contents). */
int ct_ivset_copy(const struct ct_ivset *a, struct ct_ivset *out);

void ct_ivset_clear(struct ct_ivset *a);
void ct_ivset_free(struct ct_ivset *a);

#endif
