/*
 * Suite "reader": truncation anywhere, corruption, version checks. A trace
 * with several chunks is recorded once per test and then damaged in memory.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "tests/unit/helpers.h"

static uint8_t *g_file;
static size_t g_len;

/* Records a trace of 6 chunks of 50 marks (each flush makes one chunk). */
static void make_trace(void)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    ck_assert_int_eq(th_start(path, 1 << 16, 60000), 0);
    for (int c = 0; c < 6; c++) {
        for (int i = 0; i < 50; i++) {
            uint64_t mark[CT_MARK_NFIELDS] = {1000000 + (uint64_t)(c * 100 + i), ct_intern("d"),
                                              ct_intern(c % 2 ? "odd" : "even")};
            ct_emit(CT_REC_NVTX_MARK, CT_RF_NS, mark, CT_MARK_NFIELDS);
        }
        ck_assert_int_eq(ct_recorder_flush(5000), 0);
    }
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
    g_file = th_read_file(path, &g_len);
    ck_assert_ptr_nonnull(g_file);
}

/* Start offsets of every frame, the header's included. */
static size_t frame_starts(size_t *starts, size_t max)
{
    size_t n = 0, off = 0;
    while (off < g_len && n < max) {
        starts[n++] = off;
        uint32_t m;
        memcpy(&m, g_file + off, 4);
        if (m >= CT_SKIP_MAGIC_MIN && m <= CT_SKIP_MAGIC_MAX) {
            uint32_t sz;
            memcpy(&sz, g_file + off + 4, 4);
            off += 8 + sz;
        } else {
            size_t z = ZSTD_findFrameCompressedSize(g_file + off, g_len - off);
            ck_assert(!ZSTD_isError(z));
            off += z;
        }
    }
    ck_assert_uint_eq(off, g_len);
    return n;
}

static size_t marks_before(size_t cut)
{
    struct th_trace t;
    th_trace_read_mem(&t, g_file, cut);
    size_t n = th_count_kind(&t, CT_REC_NVTX_MARK);
    th_trace_free(&t);
    return n;
}

/* Message i of the test below: distinct, 7 i % 700 letters after a prefix
 * (the test recorder holds 1 MiB of strings). */
static const char *nth_msg(int i)
{
    static char msg[800];
    int len = snprintf(msg, sizeof(msg), "step#%d:", i);
    for (int k = 0; k < (i * 7) % 700; k++)
        msg[len++] = (char)('a' + (i + k) % 26);
    msg[len] = 0;
    return msg;
}

/* Thousands of distinct strings, of lengths up to 700 bytes (a dozen of the
 * reader's 64 KiB string blocks), all read back whole, each under its id. */
START_TEST(many_strings_read_back_whole)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "strings.cutrace");
    ck_assert_int_eq(th_start(path, 1 << 20, 60000), 0);
    for (int i = 0; i < 2000; i++) {
        uint64_t mark[CT_MARK_NFIELDS] = {1000000 + (uint64_t)i, ct_intern("d"),
                                          ct_intern(nth_msg(i))};
        while (ct_emit(CT_REC_NVTX_MARK, CT_RF_NS, mark, CT_MARK_NFIELDS) != 0)
            usleep(100);
        if (i % 500 == 499)
            ck_assert_int_eq(ct_recorder_flush(5000), 0);
    }
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
    struct th_trace t;
    th_trace_read_file(&t, path);
    ck_assert_int_eq(t.open_rc, 0);
    ck_assert_uint_eq(th_count_kind(&t, CT_REC_NVTX_MARK), 2000);
    size_t seen = 0;
    for (size_t r = 0; r < t.n; r++) {
        if (t.recs[r].kind != CT_REC_NVTX_MARK)
            continue;
        int i = (int)(t.recs[r].f[0] - 1000000);
        ck_assert_str_eq(ct_reader_string(&t.rd, t.recs[r].f[CT_MARK_MESSAGE]), nth_msg(i));
        seen++;
    }
    ck_assert_uint_eq(seen, 2000);
    th_trace_free(&t);
}
END_TEST

START_TEST(whole_trace_is_complete)
{
    make_trace();
    struct th_trace t;
    th_trace_read_mem(&t, g_file, g_len);
    ck_assert_int_eq(t.open_rc, 0);
    ck_assert(t.rd.has_footer);
    ck_assert(!t.rd.truncated);
    ck_assert_uint_eq(t.rd.damage_total, 0);
    ck_assert_uint_eq(th_count_kind(&t, CT_REC_NVTX_MARK), 300);
    ck_assert_uint_eq(t.rd.footer.records, t.rd.records);
    th_trace_free(&t);
    free(g_file);
}
END_TEST

START_TEST(cut_at_every_byte_of_the_last_frames_decodes_what_is_complete)
{
    make_trace();
    size_t starts[64];
    size_t nf = frame_starts(starts, 64);
    ck_assert_uint_ge(nf, 5);
    size_t footer = starts[nf - 1];
    size_t last_chunk = starts[nf - 2];
    size_t complete_marks = marks_before(last_chunk);
    size_t all_marks = marks_before(g_len);
    ck_assert_uint_eq(all_marks, 300);
    for (size_t cut = last_chunk; cut < g_len; cut++) {
        struct th_trace t;
        th_trace_read_mem(&t, g_file, cut);
        ck_assert_int_eq(t.open_rc, 0);
        ck_assert_msg(t.rd.truncated, "cut at %zu not reported", cut);
        ck_assert(!t.rd.has_footer);
        ck_assert_uint_eq(t.rd.damage_total, 0);
        if (cut < footer) {
            ck_assert_uint_eq(t.rd.truncated_at, last_chunk);
            ck_assert_uint_eq(th_count_kind(&t, CT_REC_NVTX_MARK), complete_marks);
        } else {
            ck_assert_uint_eq(t.rd.truncated_at, footer);
            ck_assert_uint_eq(th_count_kind(&t, CT_REC_NVTX_MARK), all_marks);
        }
        th_trace_free(&t);
    }
    /* and inside the header: a clear error, not a crash */
    for (size_t cut = 0; cut < starts[1]; cut++) {
        struct ct_reader r;
        ck_assert_int_eq(ct_reader_open_mem(&r, g_file, cut), -EPROTO);
    }
    free(g_file);
}
END_TEST

static int same_record(const struct ct_record *a, const struct ct_record *b)
{
    return a->kind == b->kind && a->tid == b->tid &&
           memcmp(a->f, b->f, sizeof(uint64_t) * a->nfields) == 0;
}

START_TEST(random_corruption_never_yields_wrong_records)
{
    make_trace();
    size_t starts[64];
    size_t nf = frame_starts(starts, 64);
    struct th_trace orig;
    th_trace_read_mem(&orig, g_file, g_len);
    uint8_t *copy = malloc(g_len);
    srand(4242);
    for (int iter = 0; iter < 400; iter++) {
        memcpy(copy, g_file, g_len);
        size_t pos = starts[1] + (size_t)rand() % (g_len - starts[1]);
        copy[pos] ^= (uint8_t)(1u << (rand() % 8));
        struct th_trace t;
        th_trace_read_mem(&t, copy, g_len);
        ck_assert_int_eq(t.open_rc, 0);
        for (size_t i = 0; i < t.n; i++) {
            int found = 0;
            for (size_t k = 0; k < orig.n && !found; k++)
                found = same_record(&t.recs[i], &orig.recs[k]);
            ck_assert_msg(found, "flip at %zu produced a record not in the original", pos);
        }
        if (pos < starts[nf - 1] && t.n < orig.n) {
            /* Lost records are always accounted for: the damage is reported
             * at an offset no later than the flip, and only the chunk holding
             * the flip is lost. (A flip zstd does not need, such as in the
             * window size, may decode to the same checksummed content.) */
            ck_assert_msg(t.rd.damage_total > 0, "flip at %zu lost records silently", pos);
            ck_assert_uint_le(t.rd.damage[0].offset, pos);
            ck_assert_uint_ge(th_count_kind(&t, CT_REC_NVTX_MARK), 300 - 50);
        }
        (void)nf;
        th_trace_free(&t);
    }
    free(copy);
    th_trace_free(&orig);
    free(g_file);
}
END_TEST

START_TEST(garbage_between_frames_is_skipped_and_located)
{
    make_trace();
    size_t starts[64];
    frame_starts(starts, 64);
    size_t at = starts[3];
    uint8_t *bad = malloc(g_len + 100);
    memcpy(bad, g_file, at);
    memset(bad + at, 'x', 100);
    memcpy(bad + at + 100, g_file + at, g_len - at);
    struct th_trace t;
    th_trace_read_mem(&t, bad, g_len + 100);
    ck_assert_uint_eq(t.rd.damage_total, 1);
    ck_assert_uint_eq(t.rd.damage[0].offset, at);
    ck_assert_uint_eq(t.rd.damage[0].skipped, 100);
    ck_assert_uint_eq(th_count_kind(&t, CT_REC_NVTX_MARK), 300);
    ck_assert(t.rd.has_footer);
    th_trace_free(&t);
    free(bad);
    free(g_file);
}
END_TEST

/* Twenty runs of garbage, of 10 to 29 bytes, each before a copy of the
 * first chunk: every run is a place of damage, and the bytes skipped count
 * them all (390), past the 16 places whose details are kept. What `info`
 * prints and `report` counts (coverage.damaged_bytes) is this total. */
START_TEST(damaged_bytes_count_every_place_past_the_16_kept)
{
    make_trace();
    size_t starts[64];
    frame_starts(starts, 64);
    size_t c0 = starts[1], c1 = starts[2], chunk = c1 - c0, n = 0, want = 0;
    uint8_t *bad = malloc(g_len + 20 * (29 + chunk));
    memcpy(bad, g_file, c0);
    n = c0;
    for (size_t k = 0; k < 20; k++) {
        memset(bad + n, 'x', 10 + k);
        n += 10 + k;
        want += 10 + k;
        memcpy(bad + n, g_file + c0, chunk);
        n += chunk;
    }
    memcpy(bad + n, g_file + c0, g_len - c0);
    n += g_len - c0;
    struct th_trace t;
    th_trace_read_mem(&t, bad, n);
    ck_assert_uint_eq(t.rd.damage_total, 20);
    ck_assert_uint_eq(t.rd.ndamage, CT_READER_MAX_DAMAGE);
    ck_assert_uint_eq(t.rd.damage_bytes, want);
    ck_assert_uint_eq(want, 390);
    ck_assert_uint_eq(t.rd.size, n);
    ck_assert_uint_eq(t.rd.damage[15].skipped, 25);
    ck_assert(t.rd.has_footer);
    th_trace_free(&t);
    free(bad);
    free(g_file);
}
END_TEST

/* A corrupt chunk is skipped whole: its frame's bytes are the damage (the
 * reader resyncs at the next frame magic; compressed bytes hold one by
 * chance about once in 10^6 frames of this size). */
START_TEST(a_corrupt_chunk_counts_its_frame_as_damaged_bytes)
{
    make_trace();
    size_t starts[64];
    frame_starts(starts, 64);
    size_t at = starts[3], len = starts[4] - at;
    uint8_t *bad = malloc(g_len);
    memcpy(bad, g_file, g_len);
    bad[at + len / 2] ^= 0x55; /* the checksum fails */
    struct th_trace t;
    th_trace_read_mem(&t, bad, g_len);
    ck_assert_uint_eq(t.rd.damage_total, 1);
    ck_assert_uint_eq(t.rd.damage[0].offset, at);
    ck_assert_uint_eq(t.rd.damage[0].skipped, len);
    ck_assert_uint_eq(t.rd.damage_bytes, len);
    ck_assert(t.rd.has_footer);
    th_trace_free(&t);
    free(bad);
    free(g_file);
}
END_TEST

START_TEST(newer_versions_are_refused_clearly)
{
    make_trace();
    g_file[16] = CT_FORMAT_VERSION + 1;
    struct ct_reader r;
    ck_assert_int_eq(ct_reader_open_mem(&r, g_file, g_len), -EPROTONOSUPPORT);
    char want[96];
    snprintf(want, sizeof(want), "version %u is newer than this cutrace supports (%u)",
             CT_FORMAT_VERSION + 1, CT_FORMAT_VERSION);
    ck_assert_ptr_nonnull(strstr(r.err, want));
    free(g_file);
}
END_TEST

START_TEST(versions_one_to_three_are_all_read)
{
    for (unsigned v = 1; v <= 3; v++) {
        make_trace();
        g_file[16] = (uint8_t)v;
        struct ct_reader r;
        ck_assert_int_eq(ct_reader_open_mem(&r, g_file, g_len), 0);
        ck_assert_uint_eq(r.hdr.version, v);
        ct_reader_close(&r);
        free(g_file);
    }
    make_trace();
    g_file[16] = 0;
    struct ct_reader r;
    ck_assert_int_eq(ct_reader_open_mem(&r, g_file, g_len), -EPROTO);
    free(g_file);
}
END_TEST

START_TEST(other_files_are_not_traces)
{
    static const uint8_t text[] = "{\"traceEvents\": []}\n";
    struct ct_reader r;
    ck_assert_int_eq(ct_reader_open_mem(&r, text, sizeof(text) - 1), -EPROTO);
    ck_assert_ptr_nonnull(strstr(r.err, "not a cutrace trace: offset 0"));
    ck_assert_int_eq(ct_reader_open_mem(&r, text, 0), -EPROTO);
    ck_assert_int_eq(ct_reader_open(&r, "/nonexistent/x.cutrace"), -ENOENT);
    ck_assert_ptr_nonnull(strstr(r.err, "/nonexistent/x.cutrace: cannot open"));
}
END_TEST

Suite *reader_suite(void)
{
    Suite *s = suite_create("reader");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, whole_trace_is_complete);
    tcase_add_test(tc, many_strings_read_back_whole);
    tcase_add_test(tc, cut_at_every_byte_of_the_last_frames_decodes_what_is_complete);
    tcase_add_test(tc, random_corruption_never_yields_wrong_records);
    tcase_add_test(tc, garbage_between_frames_is_skipped_and_located);
    tcase_add_test(tc, damaged_bytes_count_every_place_past_the_16_kept);
    tcase_add_test(tc, a_corrupt_chunk_counts_its_frame_as_damaged_bytes);
    tcase_add_test(tc, newer_versions_are_refused_clearly);
    tcase_add_test(tc, versions_one_to_three_are_all_read);
    tcase_add_test(tc, other_files_are_not_traces);
    suite_add_tcase(s, tc);
    return s;
}
