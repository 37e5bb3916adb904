/*
 * Suite "ring": per-thread buffers under many threads, and exact drop
 * accounting when the writer cannot keep up. Run under TSan as well.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/helpers.h"

#define NTHREADS   8
#define PER_THREAD 40000

struct worker {
    uint64_t base;
    uint64_t emitted, accepted;
    uint32_t tid;
};

static void *produce(void *arg)
{
    struct worker *w = arg;
    uint64_t f[CT_API_NFIELDS] = {0};
    for (uint64_t k = 0; k < PER_THREAD; k++) {
        f[CT_API_START] = ct_clock_now();
        f[CT_API_END] = ct_clock_now();
        f[CT_API_CORR] = w->base + k;
        w->emitted++;
        if (ct_emit(CT_REC_API, 0, f, CT_API_NFIELDS) == 0)
            w->accepted++;
    }
    struct ct_ring *r = ct_thread_ring();
    w->tid = r ? r->tid : 0;
    return NULL;
}

START_TEST(many_threads_lose_nothing_unaccounted_and_duplicate_nothing)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    ck_assert_int_eq(th_start(path, 1 << 20, 10), 0);
    pthread_t th[NTHREADS];
    struct worker w[NTHREADS];
    memset(w, 0, sizeof(w));
    for (int i = 0; i < NTHREADS; i++) {
        w[i].base = (uint64_t)(i + 1) << 40;
        pthread_create(&th[i], NULL, produce, &w[i]);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    ck_assert_int_eq(ct_recorder_stop(10000), 0);

    struct th_trace t;
    th_trace_read_file(&t, path);
    ck_assert_int_eq(t.open_rc, 0);
    ck_assert(t.rd.has_footer);
    ck_assert_uint_eq(t.rd.damage_total, 0);
    for (int i = 0; i < NTHREADS; i++) {
        uint64_t seen = 0, last = 0, drops = 0;
        int first = 1;
        for (size_t k = 0; k < t.n; k++) {
            const struct ct_record *r = &t.recs[k];
            if (r->tid != w[i].tid)
                continue;
            if (r->kind == CT_REC_DROP) {
                drops += r->f[CT_DROP_COUNT];
                continue;
            }
            if (r->kind != CT_REC_API)
                continue;
            uint64_t c = r->f[CT_API_CORR];
            ck_assert_uint_eq(c >> 40, (uint64_t)(i + 1)); /* only this thread's */
            if (!first)
                ck_assert_uint_gt(c, last); /* in order, no duplicates */
            first = 0;
            last = c;
            seen++;
        }
        ck_assert_uint_eq(seen, w[i].accepted);
        ck_assert_uint_eq(seen + drops, PER_THREAD);
    }
    th_trace_free(&t);
}
END_TEST

START_TEST(stalled_writer_drops_exactly_what_did_not_fit)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    ck_assert_int_eq(th_start(path, 64 * 1024, 10), 0);
    ct_recorder_pause_writer(1);
    struct worker w = {.base = 1};
    produce(&w);
    /* API records take 8 + 19 * 8 bytes: exactly this many fit in 64 KiB. */
    ck_assert_uint_eq(w.accepted, (64 * 1024) / (8 + 8 * CT_API_NFIELDS));
    ct_recorder_pause_writer(0);
    ck_assert_int_eq(ct_recorder_stop(10000), 0);
    struct th_trace t;
    th_trace_read_file(&t, path);
    uint64_t drops = 0, api = 0;
    for (size_t k = 0; k < t.n; k++) {
        if (t.recs[k].tid != w.tid)
            continue;
        if (t.recs[k].kind == CT_REC_DROP) {
            ck_assert_uint_eq(t.recs[k].f[CT_DROP_REASON], CT_DROP_RING_FULL);
            drops += t.recs[k].f[CT_DROP_COUNT];
        }
        api += t.recs[k].kind == CT_REC_API;
    }
    ck_assert_uint_eq(api, w.accepted);
    ck_assert_uint_eq(drops, PER_THREAD - w.accepted);
    ck_assert_uint_eq(t.rd.footer.dropped, PER_THREAD - w.accepted);
    th_trace_free(&t);
}
END_TEST

START_TEST(ring_pads_at_the_end_and_never_splits_a_record)
{
    struct ct_ring *r = ct_ring_create(4096, 1);
    ck_assert_ptr_nonnull(r);
    /* 3-field records (32 B) then a 19-field one that cannot fit at the end */
    for (int round = 0; round < 50; round++) {
        unsigned n = round % 2 ? CT_API_NFIELDS : CT_DROP_NFIELDS;
        uint64_t *w = ct_ring_begin(r, round % 2 ? CT_REC_API : CT_REC_DROP, n, 0);
        if (!w) {
            /* consume everything, as the writer would */
            atomic_store(&r->tail, atomic_load(&r->head));
            w = ct_ring_begin(r, round % 2 ? CT_REC_API : CT_REC_DROP, n, 0);
        }
        ck_assert_ptr_nonnull(w);
        ck_assert_uint_le((uint64_t)((uint8_t *)(w + n) - r->data), r->size);
        ct_ring_commit(r);
    }
    ct_ring_destroy(r);
}
END_TEST

Suite *ring_suite(void)
{
    Suite *s = suite_create("ring");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, many_threads_lose_nothing_unaccounted_and_duplicate_nothing);
    tcase_add_test(tc, stalled_writer_drops_exactly_what_did_not_fit);
    tcase_add_test(tc, ring_pads_at_the_end_and_never_splits_a_record);
    suite_add_tcase(s, tc);
    return s;
}
