/* Suite "intervals": the interval-set algebra every report metric rests on. */
#include <check.h>
#include <stdlib.h>

#include "decoder/util/intervals.h"
#include "decoder/util/search.h"

/* Builds a normalised set from pairs s0,e0,s1,e1,... */
static struct ct_ivset mk(int n, const int64_t *p)
{
    struct ct_ivset a = {0};
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(ct_ivset_add(&a, p[2 * i], p[2 * i + 1]), 0);
    ct_ivset_normalize(&a);
    return a;
}

static void expect(const struct ct_ivset *a, int n, const int64_t *p)
{
    ck_assert_uint_eq(a->n, (size_t)n);
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(a->v[i].s, p[2 * i]);
        ck_assert_int_eq(a->v[i].e, p[2 * i + 1]);
    }
}

START_TEST(normalize_sorts_merges_overlapping_and_touching)
{
    int64_t in[] = {30, 40, 0, 10, 10, 20, 5, 8, 50, 50, 60, 55};
    struct ct_ivset a = mk(6, in);
    int64_t want[] = {0, 20, 30, 40};
    expect(&a, 2, want); /* [10,20) touches [0,10); empty and inverted dropped */
    ck_assert_int_eq(ct_ivset_len(&a), 30);
    ct_ivset_free(&a);
}
END_TEST

START_TEST(empty_sets_give_empty_results)
{
    struct ct_ivset e = {0}, o = {0};
    int64_t p[] = {0, 10};
    struct ct_ivset a = mk(1, p);
    ck_assert_int_eq(ct_ivset_union(&e, &e, &o), 0);
    ck_assert_uint_eq(o.n, 0);
    ck_assert_int_eq(ct_ivset_intersect(&a, &e, &o), 0);
    ck_assert_uint_eq(o.n, 0);
    ck_assert_int_eq(ct_ivset_subtract(&e, &a, &o), 0);
    ck_assert_uint_eq(o.n, 0);
    ck_assert_int_eq(ct_ivset_subtract(&a, &e, &o), 0);
    expect(&o, 1, p);
    ck_assert_int_eq(ct_ivset_union(&e, &a, &o), 0);
    expect(&o, 1, p);
    ck_assert_int_eq(ct_ivset_len(&e), 0);
    ck_assert_int_eq(ct_ivset_len_in(&e, 0, 100), 0);
    ct_ivset_free(&a);
    ct_ivset_free(&o);
}
END_TEST

START_TEST(touching_intervals_union_merges_intersection_empty)
{
    int64_t pa[] = {0, 10}, pb[] = {10, 20};
    struct ct_ivset a = mk(1, pa), b = mk(1, pb), o = {0};
    ck_assert_int_eq(ct_ivset_union(&a, &b, &o), 0);
    int64_t u[] = {0, 20};
    expect(&o, 1, u);
    ck_assert_int_eq(ct_ivset_intersect(&a, &b, &o), 0);
    ck_assert_uint_eq(o.n, 0);
    ck_assert_int_eq(ct_ivset_subtract(&a, &b, &o), 0);
    expect(&o, 1, pa);
    ct_ivset_free(&a);
    ct_ivset_free(&b);
    ct_ivset_free(&o);
}
END_TEST

START_TEST(nested_interval_splits_on_difference)
{
    int64_t pa[] = {0, 100}, pb[] = {20, 30, 50, 60};
    struct ct_ivset a = mk(1, pa), b = mk(2, pb), o = {0};
    ck_assert_int_eq(ct_ivset_subtract(&a, &b, &o), 0);
    int64_t d[] = {0, 20, 30, 50, 60, 100};
    expect(&o, 3, d);
    ck_assert_int_eq(ct_ivset_intersect(&a, &b, &o), 0);
    expect(&o, 2, pb);
    ck_assert_int_eq(ct_ivset_subtract(&b, &a, &o), 0);
    ck_assert_uint_eq(o.n, 0);
    ck_assert_int_eq(ct_ivset_union(&a, &b, &o), 0);
    expect(&o, 1, pa);
    ct_ivset_free(&a);
    ct_ivset_free(&b);
    ct_ivset_free(&o);
}
END_TEST

START_TEST(identical_sets_intersect_to_themselves_subtract_to_nothing)
{
    int64_t p[] = {0, 5, 10, 15, 20, 25};
    struct ct_ivset a = mk(3, p), b = mk(3, p), o = {0};
    ck_assert_int_eq(ct_ivset_intersect(&a, &b, &o), 0);
    expect(&o, 3, p);
    ck_assert_int_eq(ct_ivset_union(&a, &b, &o), 0);
    expect(&o, 3, p);
    ck_assert_int_eq(ct_ivset_subtract(&a, &b, &o), 0);
    ck_assert_uint_eq(o.n, 0);
    ct_ivset_free(&a);
    ct_ivset_free(&b);
    ct_ivset_free(&o);
}
END_TEST

START_TEST(one_interval_spanning_many_is_cut_by_each)
{
    int64_t pa[] = {0, 10, 20, 30, 40, 50}, pb[] = {5, 45};
    struct ct_ivset a = mk(3, pa), b = mk(1, pb), o = {0};
    ck_assert_int_eq(ct_ivset_intersect(&a, &b, &o), 0);
    int64_t i[] = {5, 10, 20, 30, 40, 45};
    expect(&o, 3, i);
    ck_assert_int_eq(ct_ivset_subtract(&a, &b, &o), 0);
    int64_t d[] = {0, 5, 45, 50};
    expect(&o, 2, d);
    ck_assert_int_eq(ct_ivset_subtract(&b, &a, &o), 0);
    int64_t d2[] = {10, 20, 30, 40};
    expect(&o, 2, d2);
    ct_ivset_free(&a);
    ct_ivset_free(&b);
    ct_ivset_free(&o);
}
END_TEST

START_TEST(length_inside_window_and_clip)
{
    int64_t p[] = {0, 10, 20, 30, 40, 50};
    struct ct_ivset a = mk(3, p), o = {0};
    ck_assert_int_eq(ct_ivset_len_in(&a, 5, 45), 5 + 10 + 5);
    ck_assert_int_eq(ct_ivset_len_in(&a, 10, 20), 0);
    ck_assert_int_eq(ct_ivset_len_in(&a, -100, 100), 30);
    ck_assert_int_eq(ct_ivset_clip(&a, 25, 45, &o), 0);
    int64_t c[] = {25, 30, 40, 45};
    expect(&o, 2, c);
    ct_ivset_free(&a);
    ct_ivset_free(&o);
}
END_TEST

/* Random sets against a bitmap over a small universe: the sweep must agree
 * with the pointwise definition for every operation. */
START_TEST(random_sets_match_pointwise_definition)
{
    unsigned seed = 12345;
    for (int round = 0; round < 200; round++) {
        struct ct_ivset a = {0}, b = {0}, o = {0};
        char ma[256] = {0}, mb[256] = {0};
        for (int k = 0; k < 2; k++) {
            struct ct_ivset *x = k ? &b : &a;
            char *m = k ? mb : ma;
            int n = rand_r(&seed) % 8;
            for (int i = 0; i < n; i++) {
                int s = rand_r(&seed) % 250, len = rand_r(&seed) % 30;
                int e = s + len > 256 ? 256 : s + len;
                ck_assert_int_eq(ct_ivset_add(x, s, e), 0);
                for (int t = s; t < e; t++)
                    m[t] = 1;
            }
            ct_ivset_normalize(x);
        }
        for (int op = 0; op < 3; op++) {
            if (op == 0)
                ck_assert_int_eq(ct_ivset_union(&a, &b, &o), 0);
            else if (op == 1)
                ck_assert_int_eq(ct_ivset_intersect(&a, &b, &o), 0);
            else
                ck_assert_int_eq(ct_ivset_subtract(&a, &b, &o), 0);
            int64_t want = 0;
            for (int t = 0; t < 256; t++) {
                int in = op == 0 ? (ma[t] | mb[t]) : op == 1 ? (ma[t] & mb[t]) : (ma[t] & !mb[t]);
                want += in;
            }
            ck_assert_int_eq(ct_ivset_len(&o), want);
            for (size_t i = 1; i < o.n; i++)
                ck_assert_int_gt(o.v[i].s, o.v[i - 1].e); /* disjoint, not touching */
        }
        ct_ivset_free(&a);
        ct_ivset_free(&b);
        ct_ivset_free(&o);
    }
}
END_TEST

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The galloping search (search.h) gives plain bisection's answer from any
 * starting hint, for both bounds, with duplicates and keys off either end. */
START_TEST(gallop_matches_bisection_from_any_hint)
{
    srand(3);
    for (int round = 0; round < 200000; round++) {
        size_t n = (size_t)(rand() % 24);
        int64_t v[24];
        for (size_t i = 0; i < n; i++)
            v[i] = rand() % 30;
        qsort(v, n, sizeof(*v), cmp_i64);
        size_t hint = (size_t)(rand() % 30), want = 0;
        int64_t x = rand() % 32 - 1;
        int upper = rand() % 2;
        while (want < n && (upper ? v[want] <= x : v[want] < x))
            want++;
        size_t got = ct_gallop(v, n, x, upper, &hint);
        ck_assert_msg(got == want && hint == got, "n %zu x %lld upper %d: %zu, want %zu", n,
                      (long long)x, upper, got, want);
    }
}
END_TEST

/* Reference length of a set inside [lo, hi): every interval clipped, no
 * search (independent of the code under test). */
static int64_t ref_len_in(const struct ct_ivset *a, int64_t lo, int64_t hi)
{
    int64_t n = 0;
    for (size_t i = 0; i < a->n; i++) {
        int64_t s = a->v[i].s > lo ? a->v[i].s : lo, e = a->v[i].e < hi ? a->v[i].e : hi;
        n += e > s ? e - s : 0;
    }
    return n;
}

/* Length inside a window, with a kept position or searched, equals the
 * clipped sum,
 * for windows in increasing order (overlapping, nested, empty) and for
 * windows that go back. */
START_TEST(length_in_window_from_hint_matches_search)
{
    srand(17);
    for (int round = 0; round < 2000; round++) {
        struct ct_ivset a = {0};
        int n = rand() % 30;
        for (int i = 0; i < n; i++) {
            int64_t s = rand() % 1000;
            ck_assert_int_eq(ct_ivset_add(&a, s, s + 1 + rand() % 60), 0);
        }
        ct_ivset_normalize(&a);
        size_t at = 0;
        int64_t lo = -50;
        for (int w = 0; w < 40; w++) {
            if (round % 4 == 3)
                lo = rand() % 1100 - 50; /* any order */
            else
                lo += rand() % 60;
            int64_t hi = lo + rand() % 120;
            ck_assert_int_eq(ct_ivset_len_in_at(&a, lo, hi, &at), ref_len_in(&a, lo, hi));
            ck_assert_int_eq(ct_ivset_len_in(&a, lo, hi), ref_len_in(&a, lo, hi));
        }
        ct_ivset_free(&a);
    }
}
END_TEST

/* Overlap lengths without building the intersection equal those of the
 * built intersection: whole, and inside windows asked in increasing order
 * (with kept positions) or in any order. */
START_TEST(overlap_lengths_match_built_intersection)
{
    srand(23);
    for (int round = 0; round < 2000; round++) {
        struct ct_ivset a = {0}, b = {0}, both = {0};
        int n = rand() % 30, m = rand() % 30;
        for (int i = 0; i < n + m; i++) {
            int64_t s = rand() % 1000;
            ck_assert_int_eq(ct_ivset_add(i < n ? &a : &b, s, s + 1 + rand() % 80), 0);
        }
        ct_ivset_normalize(&a);
        ct_ivset_normalize(&b);
        ck_assert_int_eq(ct_ivset_intersect(&a, &b, &both), 0);
        ck_assert_int_eq(ct_ivset_overlap(&a, &b), ct_ivset_len(&both));
        size_t ia = 0, ib = 0;
        int64_t lo = -50;
        for (int w = 0; w < 40; w++) {
            if (round % 4 == 3)
                lo = rand() % 1100 - 50; /* any order */
            else
                lo += rand() % 60;
            int64_t hi = lo + rand() % 150;
            ck_assert_int_eq(ct_ivset_overlap_in(&a, &b, lo, hi, &ia, &ib),
                             ref_len_in(&both, lo, hi));
        }
        ct_ivset_free(&a);
        ct_ivset_free(&b);
        ct_ivset_free(&both);
    }
}
END_TEST

Suite *intervals_suite(void)
{
    Suite *s = suite_create("intervals");
    TCase *tc = tcase_create("algebra");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, normalize_sorts_merges_overlapping_and_touching);
    tcase_add_test(tc, empty_sets_give_empty_results);
    tcase_add_test(tc, touching_intervals_union_merges_intersection_empty);
    tcase_add_test(tc, nested_interval_splits_on_difference);
    tcase_add_test(tc, identical_sets_intersect_to_themselves_subtract_to_nothing);
    tcase_add_test(tc, one_interval_spanning_many_is_cut_by_each);
    tcase_add_test(tc, length_inside_window_and_clip);
    tcase_add_test(tc, random_sets_match_pointwise_definition);
    tcase_add_test(tc, gallop_matches_bisection_from_any_hint);
    tcase_add_test(tc, length_in_window_from_hint_matches_search);
    tcase_add_test(tc, overlap_lengths_match_built_intersection);
    suite_add_tcase(s, tc);
    return s;
}
