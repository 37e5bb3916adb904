/*
 * Suite "salvaged": how the decoder reads a trace completed from a dead
 * process's live mapping (decoder/read/tracefile.c): the GPU ops whose GPU
 * time died with the process (CUPTI's buffers) are named, not idle.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/read/tracefile.h"
#include "src/live.h"
#include "src/recorder.h"
#include "src/salvage.h"
#include "tests/unit/helpers.h"

static void launch(uint64_t corr, uint64_t t)
{
    uint64_t a[CT_API_NFIELDS] = {0};
    a[CT_API_START] = t;
    a[CT_API_END] = t + 10;
    a[CT_API_NAME] = ct_intern("cuLaunchKernel");
    a[CT_API_CORR] = corr;
    a[CT_API_FAMILY] = CT_FAM_LAUNCH;
    a[CT_API_STREAM] = 7;
    ck_assert_int_eq(ct_emit(CT_REC_API, CT_RF_NS, a, CT_API_NFIELDS), 0);
}

static void gpu(uint64_t corr, uint64_t t)
{
    uint64_t g[CT_GPU_NFIELDS] = {0};
    g[CT_GPU_START] = t;
    g[CT_GPU_END] = t + 50;
    g[CT_GPU_CORR] = corr;
    g[CT_GPU_TYPE] = CT_GPU_KERNEL;
    g[CT_GPU_STREAM] = 7;
    g[CT_GPU_SOURCE] = CT_SRC_CUPTI;
    ck_assert_int_eq(ct_emit(CT_REC_GPU, CT_RF_NS, g, CT_GPU_NFIELDS), 0);
}

/* The salvage of this process's mapping as it is now, written over path. */
static void salvage_into(const char *path)
{
    size_t mlen, flen;
    uint8_t *map = th_read_file(ct_live_where_path(), &mlen);
    uint8_t *file = th_read_file(path, &flen);
    ck_assert(map && file);
    struct ct_live_map m;
    struct ct_salvage s;
    char err[256];
    ck_assert_int_eq(ct_live_map_mem(&m, map, mlen), 0);
    ck_assert_int_eq(ct_salvage_build(&m, (int64_t)flen, 0, &s, err, sizeof(err)), 0);
    size_t n = (size_t)s.prefix_len + s.tail.len;
    uint8_t *all = malloc(n);
    memcpy(all, file, (size_t)s.prefix_len);
    memcpy(all + s.prefix_len, s.tail.p, s.tail.len);
    char out[600];
    snprintf(out, sizeof(out), "%s.salvaged", path);
    ck_assert_int_eq(th_write_file(out, all, n), 0);
    ck_assert_int_eq(rename(out, path), 0);
    free(all);
    ct_salvage_free(&s);
    free(map);
    free(file);
}

START_TEST(ops_launched_after_the_last_delivered_one_are_untimed_not_idle)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    ck_assert_int_eq(th_start(path, 1 << 16, 60000), 0);
    ct_live_gpu_mode(1); /* GPU times come from CUPTI: they wait in its buffers */
    /* launches 1..10 every 100 us from t0; CUPTI delivered 1, 2, 4..7 (3:
     * an op it never timed, as happens); 8..10 were in its buffers at the
     * kill */
    const uint64_t t0 = 5000000000ull;
    for (uint64_t c = 1; c <= 10; c++)
        launch(c, t0 + c * 100000);
    for (uint64_t c = 1; c <= 7; c++)
        if (c != 3)
            gpu(c, t0 + c * 100000 + 20000);
    ck_assert_int_eq(ct_recorder_flush(5000), 0);
    ct_recorder_pause_writer(1);
    launch(11, t0 + 11 * 100000); /* in the ring alone at the kill */
    salvage_into(path);
    struct ct_trace t;
    char err[512];
    ck_assert_int_eq(ct_trace_load(&t, path, 1, err, sizeof(err)), 0);
    ck_assert(t.rd.salvaged && (t.rd.salvage.flags & CT_SALVAGE_GPU_PENDING));
    uint64_t n;
    int64_t from;
    ck_assert_int_eq(ct_trace_undelivered(&t, &n, &from), 0);
    ck_assert_uint_eq(n, 4); /* 8, 9, 10, 11: after 7, the last delivered */
    ck_assert_int_eq(from, (int64_t)(t0 + 8 * 100000));
    ct_trace_free(&t);
    ct_recorder_pause_writer(0);
    ct_recorder_stop(5000);
}
END_TEST

START_TEST(without_gpu_times_queued_in_the_process_nothing_is_undelivered)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    ck_assert_int_eq(th_start(path, 1 << 16, 60000), 0);
    /* GPU timing off: no GPU record was ever coming */
    for (uint64_t c = 1; c <= 5; c++)
        launch(c, 5000000000ull + c * 100000);
    ct_recorder_pause_writer(1);
    salvage_into(path);
    struct ct_trace t;
    char err[512];
    ck_assert_int_eq(ct_trace_load(&t, path, 1, err, sizeof(err)), 0);
    ck_assert(t.rd.salvaged && !(t.rd.salvage.flags & CT_SALVAGE_GPU_PENDING));
    uint64_t n;
    int64_t from;
    ck_assert_int_eq(ct_trace_undelivered(&t, &n, &from), 0);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(from, INT64_MAX);
    ct_trace_free(&t);
    ct_recorder_pause_writer(0);
    ct_recorder_stop(5000);
}
END_TEST

Suite *salvaged_suite(void)
{
    Suite *s = suite_create("salvaged");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, ops_launched_after_the_last_delivered_one_are_untimed_not_idle);
    tcase_add_test(tc, without_gpu_times_queued_in_the_process_nothing_is_undelivered);
    suite_add_tcase(s, tc);
    return s;
}
