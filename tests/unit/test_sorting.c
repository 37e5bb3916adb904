/* Suite "sorting": the radix sort of the extraction's joins (keys.h) and
 * the order statistics built on it (stats.h), against plain references. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/util/keys.h"
#include "decoder/util/stats.h"

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A key of one of several shapes: few distinct values (ties, for
 * stability), a counter's range, nanosecond times (3-4 radix passes), or
 * full 64-bit values. */
static uint64_t shaped_key(int shape)
{
    uint64_t r = ((uint64_t)rand() << 33) ^ ((uint64_t)rand() << 11) ^ (uint64_t)rand();
    switch (shape) {
    case 0: return r % 4;
    case 1: return 1000 + r % 5000;
    case 2: return UINT64_C(1700000000000000000) + r % (UINT64_C(1) << 36);
    default: return r;
    }
}

/* Reference: a stable insertion sort by key. */
static void ref_sort(struct ct_kv *v, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        struct ct_kv x = v[i];
        size_t m = i;
        while (m > 0 && v[m - 1].key > x.key) {
            v[m] = v[m - 1];
            m--;
        }
        v[m] = x;
    }
}

/* The radix sort (keys.c) is a stable sort by key for every input shape:
 * random, nearly sorted (the insertion path), sorted, reversed (the
 * insertion budget runs out and the radix passes finish), all within and
 * across pass counts; ct_kv_order gives the stable permutation. */
START_TEST(kv_sort_is_stable_sort_by_key)
{
    srand(11);
    enum { N = 3000 };
    static struct ct_kv v[N], want[N];
    for (int round = 0; round < 400; round++) {
        size_t n = (size_t)(round % 7 == 0 ? rand() % 5 : rand() % N);
        int shape = rand() % 4, order = rand() % 4;
        for (size_t i = 0; i < n; i++)
            v[i] = (struct ct_kv){shaped_key(shape), i};
        if (order >= 1) /* sorted first, then perturbed or reversed */
            ref_sort(v, n);
        if (order == 2)
            for (size_t k = 0; n > 1 && k < n / 50 + 1; k++) {
                size_t a = (size_t)rand() % (n - 1);
                struct ct_kv t = v[a];
                v[a] = v[a + 1];
                v[a + 1] = t;
            }
        if (order == 3)
            for (size_t i = 0; i < n / 2; i++) {
                struct ct_kv t = v[i];
                v[i] = v[n - 1 - i];
                v[n - 1 - i] = t;
            }
        for (size_t i = 0; i < n; i++)
            v[i].val = i; /* file order, the tie-break */
        memcpy(want, v, n * sizeof(*v));
        ref_sort(want, n);
        if (round % 2) {
            ck_assert_int_eq(ct_kv_sort(v, n), 0);
        } else {
            for (size_t i = 0; i < n; i++)
                v[i].val = 12345; /* overwritten by the permutation */
            ck_assert_int_eq(ct_kv_order(v, n), 0);
        }
        for (size_t i = 0; i < n; i++)
            ck_assert_msg(
                v[i].key == want[i].key && v[i].val == want[i].val,
                "round %d shape %d order %d n %zu: at %zu (%llu, %llu), want (%llu, %llu)", round,
                shape, order, n, i, (unsigned long long)v[i].key, (unsigned long long)v[i].val,
                (unsigned long long)want[i].key, (unsigned long long)want[i].val);
    }
}
END_TEST

/* Signed sorting puts negative values first, across the sign boundary. */
START_TEST(i64_sort_orders_negative_values_first)
{
    srand(5);
    enum { N = 2000 };
    static int64_t v[N], want[N];
    for (int round = 0; round < 50; round++) {
        size_t n = (size_t)(rand() % N);
        for (size_t i = 0; i < n; i++)
            v[i] = (int64_t)shaped_key(round % 4) * (rand() % 2 ? -1 : 1);
        memcpy(want, v, n * sizeof(*v));
        qsort(want, n, sizeof(*want), cmp_i64);
        ck_assert_int_eq(ct_i64_sort(v, n), 0);
        for (size_t i = 0; i < n; i++)
            ck_assert_int_eq(v[i], want[i]);
    }
}
END_TEST

struct rec3 {
    uint64_t a;
    int32_t b;
    uint32_t idx;
    uint64_t c;
};

static uint64_t rec_a(const void *e)
{
    return ((const struct rec3 *)e)->a;
}
static uint64_t rec_b(const void *e)
{
    return (uint64_t)(int64_t)((const struct rec3 *)e)->b ^ (UINT64_C(1) << 63);
}
static uint64_t rec_c(const void *e)
{
    return ((const struct rec3 *)e)->c;
}

static int cmp_rec3(const void *x, const void *y)
{
    const struct rec3 *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    if (p->b != q->b)
        return p->b < q->b ? -1 : 1;
    if (p->c != q->c)
        return p->c < q->c ? -1 : 1;
    return (p->idx > q->idx) - (p->idx < q->idx);
}

/* ct_sort_by orders by several keys, most significant first, stably: the
 * order of a comparator over the same fields with input order last. */
START_TEST(sort_by_several_keys_is_lexicographic_and_stable)
{
    srand(9);
    enum { N = 4000 };
    static struct rec3 v[N], want[N];
    const ct_key_fn keys[] = {rec_a, rec_b, rec_c};
    for (int round = 0; round < 100; round++) {
        size_t n = (size_t)(rand() % N);
        for (size_t i = 0; i < n; i++)
            v[i] = (struct rec3){shaped_key(round % 2 ? 3 : 0), rand() % 7 - 3, (uint32_t)i,
                                 shaped_key(rand() % 3)};
        memcpy(want, v, n * sizeof(*v));
        qsort(want, n, sizeof(*want), cmp_rec3);
        ck_assert_int_eq(ct_sort_by(v, n, sizeof(*v), keys, 3), 0);
        for (size_t i = 0; i < n; i++)
            ck_assert_msg(!memcmp(&v[i], &want[i], sizeof(v[i])), "round %d n %zu: at %zu", round,
                          n, i);
    }
}
END_TEST

/* Input made of a few sorted runs (ops by launch time, then NCCL calls by
 * host start) takes ct_sort_by's merge path, up to 64 runs, the radix path
 * beyond: both give the comparator's order with input order last, equal
 * keys across runs included. */
START_TEST(sort_by_merges_a_few_sorted_runs_stably)
{
    srand(11);
    enum { N = 4000 };
    static struct rec3 v[N], want[N];
    const ct_key_fn keys[] = {rec_a, rec_b, rec_c};
    const size_t runs[] = {2, 3, 7, 63, 64, 65, 200};
    for (size_t t = 0; t < sizeof(runs) / sizeof(runs[0]); t++) {
        for (int round = 0; round < 10; round++) {
            size_t n = 1000 + (size_t)(rand() % (N - 1000)), per = n / runs[t];
            for (size_t i = 0; i < n; i++)
                v[i] = (struct rec3){(uint64_t)(rand() % 50), rand() % 3, (uint32_t)i,
                                     (uint64_t)(rand() % 2)};
            for (size_t r = 0; r < runs[t]; r++) { /* each run sorted by the keys */
                size_t a = r * per, b = r + 1 == runs[t] ? n : a + per;
                qsort(v + a, b - a, sizeof(*v), cmp_rec3);
            }
            for (size_t i = 0; i < n; i++)
                v[i].idx = (uint32_t)i; /* input order, after the runs were made */
            memcpy(want, v, n * sizeof(*v));
            qsort(want, n, sizeof(*want), cmp_rec3);
            ck_assert_int_eq(ct_sort_by(v, n, sizeof(*v), keys, 3), 0);
            for (size_t i = 0; i < n; i++)
                ck_assert_msg(!memcmp(&v[i], &want[i], sizeof(v[i])), "%zu runs, n %zu: at %zu",
                              runs[t], n, i);
        }
    }
}
END_TEST

/* Percentiles and medians equal those of a qsort'ed copy (numpy's linear
 * interpolation) for short arrays (insertion path) and long ones (radix
 * path), with negative values, duplicates and zeros of both signs, and
 * selection gives the same value bit for bit. */
START_TEST(percentiles_match_sorted_reference)
{
    srand(7);
    enum { N = 5000 };
    static double v[N], want[N], sel[N];
    static int64_t iv[N], iwant[N];
    const double qs[] = {0, 2.5, 20, 50, 90, 97.5, 100};
    for (int round = 0; round < 300; round++) {
        size_t n = (size_t)(round % 3 == 0 ? rand() % 30 : rand() % N);
        int shape = rand() % 4;
        for (size_t i = 0; i < n; i++) {
            int64_t k = (int64_t)shaped_key(shape % 3) * (rand() % 3 == 0 ? -1 : 1);
            v[i] = shape == 3 ? (double)k / 7.0 : (double)k;
            if (rand() % 50 == 0)
                v[i] = rand() % 2 ? 0.0 : -0.0;
            iv[i] = k;
        }
        double q = qs[round % (sizeof(qs) / sizeof(qs[0]))];
        memcpy(want, v, n * sizeof(*v));
        memcpy(sel, v, n * sizeof(*v));
        qsort(want, n, sizeof(*want), cmp_d);
        double ref = 0;
        if (n) {
            double pos = q / 100.0 * (double)(n - 1);
            size_t i = (size_t)pos;
            ref = i + 1 >= n ? want[n - 1] : want[i] + (want[i + 1] - want[i]) * (pos - (double)i);
        }
        double got = ct_percentile(v, n, q);
        ck_assert_msg(got == ref, "round %d n %zu q %g: %.17g, want %.17g", round, n, q, got, ref);
        for (size_t i = 0; i < n; i++)
            ck_assert_msg(v[i] == want[i], "round %d: not sorted at %zu", round, i);
        ck_assert(ct_percentile_select(sel, n, q) == ref);
        memcpy(iwant, iv, n * sizeof(*iv));
        qsort(iwant, n, sizeof(*iwant), cmp_i64);
        int64_t m = 0;
        if (n % 2)
            m = iwant[n / 2];
        else if (n) /* the mean of the middle two, rounded down */
            m = (int64_t)floorl(((long double)iwant[n / 2 - 1] + (long double)iwant[n / 2]) / 2);
        ck_assert_int_eq(ct_median_i64(iv, n), m);
    }
}
END_TEST

/* NaN has no order: the percentile still comes from the other values'
 * qsort order and nothing crashes. */
START_TEST(percentile_with_nan_does_not_crash)
{
    double v[40];
    for (int i = 0; i < 40; i++)
        v[i] = i == 17 ? NAN : (double)(40 - i);
    double p = ct_percentile(v, 40, 50);
    ck_assert(isnan(p) || (p >= 1 && p <= 40));
}
END_TEST

/* Infinite values (a bootstrap of a ratio whose denominator is 0 in some
 * resamples) give the limit of the interpolation, never NaN: between two
 * +inf +inf, between a value and +inf +inf unless the position falls on the
 * value, between -inf and a value -inf. Both the sort and the selection. */
START_TEST(percentile_of_infinite_values_is_their_limit_not_nan)
{
    double v[5], w[5];
    const double src[] = {1, 2, INFINITY, INFINITY, INFINITY};
    /* q = 62.5: position 2.5, between two +inf (inf - inf was NaN) */
    memcpy(v, src, sizeof(v));
    memcpy(w, src, sizeof(w));
    ck_assert(ct_percentile(v, 5, 62.5) == INFINITY);
    ck_assert(ct_percentile_select(w, 5, 62.5) == INFINITY);
    /* q = 37.5: position 1.5, between 2 and +inf */
    memcpy(v, src, sizeof(v));
    memcpy(w, src, sizeof(w));
    ck_assert(ct_percentile(v, 5, 37.5) == INFINITY);
    ck_assert(ct_percentile_select(w, 5, 37.5) == INFINITY);
    /* q = 25: position exactly 1, the value 2 (0 * inf was NaN) */
    memcpy(v, src, sizeof(v));
    memcpy(w, src, sizeof(w));
    ck_assert(ct_percentile(v, 5, 25) == 2);
    ck_assert(ct_percentile_select(w, 5, 25) == 2);
    /* -inf below: position 0.5 between -inf and 3 */
    const double neg[] = {-INFINITY, 3, 4};
    memcpy(v, neg, sizeof(neg));
    memcpy(w, neg, sizeof(neg));
    ck_assert(ct_percentile(v, 3, 25) == -INFINITY);
    ck_assert(ct_percentile_select(w, 3, 25) == -INFINITY);
}
END_TEST

Suite *sorting_suite(void)
{
    Suite *s = suite_create("sorting");
    TCase *tc = tcase_create("sorting");
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, kv_sort_is_stable_sort_by_key);
    tcase_add_test(tc, i64_sort_orders_negative_values_first);
    tcase_add_test(tc, sort_by_several_keys_is_lexicographic_and_stable);
    tcase_add_test(tc, sort_by_merges_a_few_sorted_runs_stably);
    tcase_add_test(tc, percentiles_match_sorted_reference);
    tcase_add_test(tc, percentile_with_nan_does_not_crash);
    tcase_add_test(tc, percentile_of_infinite_values_is_their_limit_not_nan);
    suite_add_tcase(s, tc);
    return s;
}
