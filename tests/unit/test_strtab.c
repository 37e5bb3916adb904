/* Suite "strtab": lock-free interning. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "src/strtab.h"

START_TEST(same_string_same_id_and_empty_is_zero)
{
    struct ct_strtab t;
    ck_assert_int_eq(ct_strtab_init(&t, 100, 4096), 0);
    uint32_t a = ct_strtab_intern_cstr(&t, "ncclAllReduce");
    uint32_t b = ct_strtab_intern_cstr(&t, "cuLaunchKernel");
    ck_assert_uint_ne(a, 0);
    ck_assert_uint_ne(a, b);
    ck_assert_uint_eq(ct_strtab_intern_cstr(&t, "ncclAllReduce"), a);
    ck_assert_uint_eq(ct_strtab_intern(&t, "ncclAllReduceXYZ", 13), a); /* by length */
    ck_assert_uint_eq(ct_strtab_intern_cstr(&t, ""), 0);
    ck_assert_uint_eq(ct_strtab_intern_cstr(&t, NULL), 0);
    const char *s;
    uint32_t len;
    ck_assert_int_eq(ct_strtab_get(&t, b, &s, &len), 0);
    ck_assert_uint_eq(len, 14);
    ck_assert_int_eq(memcmp(s, "cuLaunchKernel", 14), 0);
    ck_assert_int_eq(ct_strtab_get(&t, 50, &s, &len), -22);
    ct_strtab_destroy(&t);
}
END_TEST

START_TEST(full_table_returns_zero_and_counts)
{
    struct ct_strtab t;
    ck_assert_int_eq(ct_strtab_init(&t, 4, 4096), 0);
    char buf[16];
    for (int i = 0; i < 4; i++) {
        snprintf(buf, sizeof(buf), "s%d", i);
        ck_assert_uint_ne(ct_strtab_intern_cstr(&t, buf), 0);
    }
    ck_assert_uint_eq(ct_strtab_intern_cstr(&t, "one too many"), 0);
    ck_assert_uint_eq(atomic_load(&t.failures), 1);
    ck_assert_uint_eq(ct_strtab_intern_cstr(&t, "s2"), 3); /* old ones still found */
    ct_strtab_destroy(&t);
}
END_TEST

START_TEST(full_arena_returns_zero)
{
    struct ct_strtab t;
    ck_assert_int_eq(ct_strtab_init(&t, 100, 8), 0);
    ck_assert_uint_ne(ct_strtab_intern_cstr(&t, "12345"), 0);
    ck_assert_uint_eq(ct_strtab_intern_cstr(&t, "6789ab"), 0);
    ct_strtab_destroy(&t);
}
END_TEST

#define NTHREADS 8
#define NSTRINGS 2000
static struct ct_strtab g_t;
static uint32_t g_ids[NTHREADS][NSTRINGS];

static void *intern_many(void *arg)
{
    long me = (long)arg;
    char buf[32];
    for (int i = 0; i < NSTRINGS; i++) {
        int k = (i * 7 + (int)me * 13) % NSTRINGS; /* different orders per thread */
        snprintf(buf, sizeof(buf), "kernel_%d", k);
        g_ids[me][k] = ct_strtab_intern_cstr(&g_t, buf);
    }
    return NULL;
}

START_TEST(concurrent_interning_gives_ids_that_name_the_string)
{
    ck_assert_int_eq(ct_strtab_init(&g_t, 1u << 16, 1u << 20), 0);
    pthread_t th[NTHREADS];
    for (long i = 0; i < NTHREADS; i++)
        pthread_create(&th[i], NULL, intern_many, (void *)i);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    char buf[32];
    for (int me = 0; me < NTHREADS; me++) {
        for (int k = 0; k < NSTRINGS; k++) {
            const char *s;
            uint32_t len;
            ck_assert_int_eq(ct_strtab_get(&g_t, g_ids[me][k], &s, &len), 0);
            int n = snprintf(buf, sizeof(buf), "kernel_%d", k);
            ck_assert_uint_eq(len, (uint32_t)n);
            ck_assert_int_eq(memcmp(s, buf, len), 0);
        }
    }
    /* duplicates from races are allowed but must be rare */
    ck_assert_uint_lt(ct_strtab_limit(&g_t) - 1, NSTRINGS * 2);
    ct_strtab_destroy(&g_t);
}
END_TEST

Suite *strtab_suite(void)
{
    Suite *s = suite_create("strtab");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, same_string_same_id_and_empty_is_zero);
    tcase_add_test(tc, full_table_returns_zero_and_counts);
    tcase_add_test(tc, full_arena_returns_zero);
    tcase_add_test(tc, concurrent_interning_gives_ids_that_name_the_string);
    suite_add_tcase(s, tc);
    return s;
}
