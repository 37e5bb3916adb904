/*
 * Suite "salvage": the live mapping (src/live.c) and the salvage of a trace
 * from it (src/salvage.c), in process: the recorder runs with its writer
 * paused (nothing it takes is written: a SIGKILL at that moment), and the
 * salvage reads a copy of the mapping's bytes, as a process finding the
 * mapping after the death would.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/live.h"
#include "src/recorder_int.h"
#include "src/salvage.h"
#include "tests/unit/helpers.h"

/* Marks "step N" (a new string each) for N in [from, to). */
static void emit_steps(int from, int to)
{
    for (int i = from; i < to; i++) {
        char msg[32];
        snprintf(msg, sizeof(msg), "step %d", i);
        uint64_t f[CT_MARK_NFIELDS] = {ct_clock_now(), ct_intern("salvage-test"), ct_intern(msg)};
        ck_assert_int_eq(ct_emit(CT_REC_NVTX_MARK, 0, f, CT_MARK_NFIELDS), 0);
    }
}

/* The step numbers of a trace's marks, in order, into out (max); how many. */
static int steps_of(const struct th_trace *t, int *out, int max)
{
    int n = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct ct_record *r = &t->recs[i];
        int k;
        if (r->kind == CT_REC_NVTX_MARK &&
            sscanf(ct_reader_string(&t->rd, r->f[CT_MARK_MESSAGE]), "step %d", &k) == 1 && n < max)
            out[n++] = k;
    }
    return n;
}

/* The mapping's bytes, as they are now. */
static uint8_t *map_copy(size_t *len)
{
    ck_assert(ct_live_on());
    uint8_t *p = th_read_file(ct_live_where_path(), len);
    ck_assert_ptr_nonnull(p);
    return p;
}

/* The trace its salvage completes: the file's first prefix_len bytes (or
 * none) and the salvage's tail, read back. */
static void read_salvaged(const char *path, const struct ct_salvage *s, struct th_trace *t)
{
    size_t flen = 0;
    uint8_t *file = s->prefix_in_file ? th_read_file(path, &flen) : NULL;
    ck_assert(!s->prefix_in_file || (file && flen >= s->prefix_len));
    size_t pre = s->prefix_in_file ? (size_t)s->prefix_len : 0, n = pre + s->tail.len;
    uint8_t *all = malloc(n);
    if (pre) /* file is NULL when there is no prefix: memcpy's NULL is undefined even for 0 */
        memcpy(all, file, pre);
    memcpy(all + pre, s->tail.p, s->tail.len);
    th_trace_read_mem(t, all, n);
    free(all);
    free(file);
}

static int64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
}

START_TEST(records_left_in_the_rings_are_recovered_with_their_strings)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    ck_assert_int_eq(th_start(path, 1 << 16, 60000), 0);
    emit_steps(0, 10);
    ck_assert_int_eq(ct_recorder_flush(5000), 0); /* steps 0..9 written */
    ct_recorder_pause_writer(1);
    emit_steps(10, 300); /* in the ring alone, their strings new: the "killed" part */
    size_t len;
    uint8_t *map = map_copy(&len);
    struct ct_live_map m;
    ck_assert_int_eq(ct_live_map_mem(&m, map, len), 0);
    struct ct_salvage s;
    char err[256];
    ck_assert_int_eq(ct_salvage_build(&m, file_size(path), SIGKILL, &s, err, sizeof(err)), 0);
    ck_assert(s.prefix_in_file);
    ck_assert_uint_eq(s.prefix_len, (uint64_t)file_size(path));
    ck_assert_uint_eq(s.info.half_written, 0);
    ck_assert_int_eq(s.info.signal, SIGKILL);
    struct th_trace t;
    read_salvaged(path, &s, &t);
    ck_assert_int_eq(t.open_rc, 0);
    ck_assert_uint_eq(t.rd.damage_total, 0);
    ck_assert(t.rd.has_footer && t.rd.salvaged);
    ck_assert_uint_eq(t.rd.salvage.at, s.prefix_len);
    ck_assert_uint_eq(t.rd.salvage.records, s.info.records);
    ck_assert_int_eq(t.rd.salvage.signal, SIGKILL);
    int steps[400];
    ck_assert_int_eq(steps_of(&t, steps, 400), 300); /* every one, each once, in order */
    for (int i = 0; i < 300; i++)
        ck_assert_int_eq(steps[i], i);
    /* the death as process metadata, as a handler's signal is */
    ck_assert_str_eq(th_proc_meta(&t, "signal", NULL), "9");
    th_trace_free(&t);
    ct_salvage_free(&s);
    free(map);
    ct_recorder_pause_writer(0);
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
}
END_TEST

START_TEST(a_record_being_written_is_dropped_by_the_commit_marker)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    ck_assert_int_eq(th_start(path, 1 << 16, 60000), 0);
    ck_assert_int_eq(ct_recorder_flush(5000), 0);
    ct_recorder_pause_writer(1);
    emit_steps(0, 5);
    /* the sixth record is begun, half its fields written, never committed */
    struct ct_ring *r = ct_thread_ring();
    uint64_t *w = ct_ring_begin(r, CT_REC_NVTX_MARK, CT_MARK_NFIELDS, 0);
    ck_assert_ptr_nonnull(w);
    w[0] = ct_clock_now();
    w[1] = 0xdeadbeefdeadbeefull;
    size_t len;
    uint8_t *map = map_copy(&len);
    struct ct_live_map m;
    ck_assert_int_eq(ct_live_map_mem(&m, map, len), 0);
    struct ct_salvage s;
    char err[256];
    ck_assert_int_eq(ct_salvage_build(&m, file_size(path), 0, &s, err, sizeof(err)), 0);
    ck_assert_uint_eq(s.info.half_written, 1);
    struct th_trace t;
    read_salvaged(path, &s, &t);
    ck_assert_uint_eq(t.rd.damage_total, 0);
    int steps[8];
    ck_assert_int_eq(steps_of(&t, steps, 8), 5);
    ck_assert_uint_eq(th_count_kind(&t, CT_REC_NVTX_MARK), 5); /* no garbage sixth */
    ck_assert_ptr_null(th_proc_meta(&t, "signal", NULL));      /* unknown: found dead */
    th_trace_free(&t);
    ct_salvage_free(&s);
    free(map);
    ct_ring_commit(r);
    ct_recorder_pause_writer(0);
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
}
END_TEST

/* The header field at off (struct ct_live_hdr) of a mapping copy. */
static void put64(uint8_t *map, size_t off, uint64_t v)
{
    memcpy(map + off, &v, 8);
}

START_TEST(a_frame_in_flight_at_death_counts_once)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    ck_assert_int_eq(th_start(path, 1 << 16, 60000), 0);
    ck_assert_int_eq(ct_recorder_flush(5000), 0);
    ct_recorder_pause_writer(1);
    emit_steps(0, 20);
    struct ct_ring *r = ct_thread_ring();
    ck_assert_int_ge(r->slot, 0);
    uint64_t head = atomic_load(&r->head), flen = (uint64_t)file_size(path);
    size_t len;
    uint8_t *map = map_copy(&len);
    /* the writer announced a frame holding this ring's records up to head,
     * ending the trace at flen + 1000 */
    put64(map, offsetof(struct ct_live_hdr, jr_slot), (uint64_t)r->slot);
    put64(map, offsetof(struct ct_live_hdr, jr_tail), head);
    put64(map, offsetof(struct ct_live_hdr, jr_end), flen + 1000);
    put64(map, offsetof(struct ct_live_hdr, jr_seq), 1);
    struct ct_live_map m;
    ck_assert_int_eq(ct_live_map_mem(&m, map, len), 0);
    struct ct_salvage s;
    char err[256];
    /* it made it (the file reaches its end): its records are the file's,
     * not recovered again, and the trace's valid part reaches its end */
    ck_assert_int_eq(ct_salvage_build(&m, (int64_t)flen + 1000, 0, &s, err, sizeof(err)), 0);
    ck_assert_uint_eq(s.prefix_len, flen + 1000);
    ck_assert_uint_eq(s.info.records, 0);
    ct_salvage_free(&s);
    /* it was cut (the file ends inside it): the records come from the ring */
    ck_assert_int_eq(ct_salvage_build(&m, (int64_t)flen + 999, 0, &s, err, sizeof(err)), 0);
    ck_assert_uint_eq(s.prefix_len, flen);
    ck_assert_uint_eq(s.info.records, 20);
    struct th_trace t;
    read_salvaged(path, &s, &t);
    int steps[32];
    ck_assert_int_eq(steps_of(&t, steps, 32), 20);
    th_trace_free(&t);
    ct_salvage_free(&s);
    free(map);
    ct_recorder_pause_writer(0);
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
}
END_TEST

START_TEST(a_trace_never_created_is_built_from_the_mapping_alone)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    struct ct_recorder_config cfg = {.path = path,
                                     .ring_bytes = 1 << 16,
                                     .zstd_level = 3,
                                     .flush_ms = 60000,
                                     .pid = (uint32_t)getpid(),
                                     .max_strings = 4096,
                                     .string_bytes = 1 << 20,
                                     .defer_bytes = 1ull << 30};
    struct ct_meta_kv meta[] = {{CT_SCOPE_PROCESS, 0, "host", "testhost"}};
    ck_assert_int_eq(ct_recorder_start(&cfg, meta, 1), 0);
    /* small I/O: not worth a file yet; kept in memory and in the mapping */
    uint64_t io[CT_IO_NFIELDS] = {ct_clock_now(),
                                  ct_clock_now(),
                                  ct_intern("read"),
                                  5,
                                  CT_FD_FILE,
                                  ct_intern("/data/x"),
                                  10,
                                  10,
                                  0};
    ck_assert_int_eq(ct_emit(CT_REC_IO, 0, io, CT_IO_NFIELDS), 0);
    ck_assert_int_eq(ct_recorder_flush(5000), 0);
    ck_assert_int_eq(file_size(path), -1);
    ct_recorder_pause_writer(1);
    emit_steps(0, 7); /* would have made it worth a file: the writer never saw them */
    size_t len;
    uint8_t *map = map_copy(&len);
    struct ct_live_map m;
    ck_assert_int_eq(ct_live_map_mem(&m, map, len), 0);
    struct ct_salvage s;
    char err[256];
    ck_assert_int_eq(ct_salvage_build(&m, -1, 0, &s, err, sizeof(err)), 0);
    ck_assert(!s.prefix_in_file);
    struct th_trace t;
    read_salvaged(path, &s, &t);
    ck_assert_int_eq(t.open_rc, 0);
    ck_assert_uint_eq(t.rd.damage_total, 0);
    ck_assert(t.rd.has_footer && t.rd.salvaged);
    ck_assert_str_eq(th_proc_meta(&t, "host", NULL), "testhost");
    ck_assert_uint_eq(th_count_kind(&t, CT_REC_IO), 1);
    int steps[8];
    ck_assert_int_eq(steps_of(&t, steps, 8), 7);
    th_trace_free(&t);
    ct_salvage_free(&s);
    free(map);
    ct_recorder_pause_writer(0);
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
}
END_TEST

START_TEST(a_process_never_worth_a_trace_leaves_none)
{
    /* deferred and killed before anything made it worth a file (a launcher's
     * shell, a probe): its salvage makes none, as a clean end would not */
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    struct ct_recorder_config cfg = {.path = path,
                                     .ring_bytes = 1 << 16,
                                     .zstd_level = 3,
                                     .flush_ms = 60000,
                                     .pid = (uint32_t)getpid(),
                                     .max_strings = 4096,
                                     .string_bytes = 1 << 20,
                                     .defer_bytes = 1ull << 30};
    struct ct_meta_kv meta[] = {{CT_SCOPE_PROCESS, 0, "host", "testhost"}};
    ck_assert_int_eq(ct_recorder_start(&cfg, meta, 1), 0);
    ck_assert_int_eq(ct_recorder_flush(5000), 0);
    ct_recorder_pause_writer(1);
    /* an open and a close: no data moved */
    uint64_t io[CT_IO_NFIELDS] = {ct_clock_now(),
                                  ct_clock_now(),
                                  ct_intern("close"),
                                  5,
                                  CT_FD_FILE,
                                  ct_intern("/etc/x"),
                                  0,
                                  0,
                                  (uint64_t)-1};
    ck_assert_int_eq(ct_emit(CT_REC_IO, 0, io, CT_IO_NFIELDS), 0);
    size_t len;
    uint8_t *map = map_copy(&len);
    struct ct_live_map m;
    ck_assert_int_eq(ct_live_map_mem(&m, map, len), 0);
    struct ct_salvage s;
    char err[256];
    ck_assert_int_eq(ct_salvage_build(&m, -1, SIGKILL, &s, err, sizeof(err)), -ENODATA);
    ck_assert_ptr_nonnull(strstr(err, "not worth a trace"));
    /* one NVTX mark more, and it would have been */
    emit_steps(0, 1);
    free(map);
    map = map_copy(&len);
    ck_assert_int_eq(ct_live_map_mem(&m, map, len), 0);
    ck_assert_int_eq(ct_salvage_build(&m, -1, SIGKILL, &s, err, sizeof(err)), 0);
    ct_salvage_free(&s);
    free(map);
    ct_recorder_pause_writer(0);
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
}
END_TEST

START_TEST(a_mapping_cut_anywhere_decodes_up_to_the_cut)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    ck_assert_int_eq(th_start(path, 1 << 16, 60000), 0);
    ck_assert_int_eq(ct_recorder_flush(5000), 0);
    ct_recorder_pause_writer(1);
    emit_steps(0, 600);
    size_t len;
    uint8_t *map = map_copy(&len);
    int64_t flen = file_size(path);
    /* every cut from the header's end to the mapping's end, in steps of a
     * 16th of the main thread's ring: a salvage, or a clear refusal; the
     * steps recovered are always a prefix of what was there */
    size_t step = (64u << 10) / 16;
    int full = -1;
    for (size_t cut = CT_LIVE_HDR_BYTES; cut <= len + step; cut += step) {
        size_t at = cut < len ? cut : len;
        struct ct_live_map m;
        ck_assert_int_eq(ct_live_map_mem(&m, map, at), 0);
        struct ct_salvage s;
        char err[256];
        if (ct_salvage_build(&m, flen, 0, &s, err, sizeof(err)) != 0)
            continue;
        struct th_trace t;
        read_salvaged(path, &s, &t);
        ck_assert_uint_eq(t.rd.damage_total, 0);
        int steps[700];
        int n = steps_of(&t, steps, 700);
        for (int i = 0; i < n; i++)
            ck_assert_int_eq(steps[i], i);
        if (at == len)
            full = n;
        th_trace_free(&t);
        ct_salvage_free(&s);
    }
    ck_assert_int_eq(full, 600);
    /* damaged bytes (a seeded walk of single-byte changes over the header,
     * the string log and the rings): never a crash, never a record
     * delivered from damage the reader would call corrupt */
    uint8_t *bad = malloc(len);
    unsigned seed = 12345;
    for (int i = 0; i < 300; i++) {
        memcpy(bad, map, len);
        seed = seed * 1103515245u + 12345u;
        size_t off = (seed >> 4) % (len < (4u << 20) ? len : (4u << 20));
        if (i % 3 == 0) /* the rings' region too */
            off = len - 1 - off % (len / 2);
        bad[off] ^= (uint8_t)(1u << (seed % 8));
        struct ct_live_map m;
        if (ct_live_map_mem(&m, bad, len) != 0)
            continue;
        struct ct_salvage s;
        char err[256];
        if (ct_salvage_build(&m, flen, 0, &s, err, sizeof(err)) != 0)
            continue;
        struct th_trace t;
        read_salvaged(path, &s, &t);
        ck_assert_int_eq(t.open_rc, 0);
        th_trace_free(&t);
        ct_salvage_free(&s);
    }
    free(bad);
    free(map);
    ct_recorder_pause_writer(0);
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
}
END_TEST

START_TEST(the_mapping_is_private_to_its_owner_and_goes_at_a_clean_stop)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    ck_assert_int_eq(th_start(path, 1 << 16, 50), 0);
    char map[4200];
    snprintf(map, sizeof(map), "%s", ct_live_where_path());
    struct stat st;
    ck_assert_int_eq(lstat(map, &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    ck_assert_uint_eq(st.st_mode & 0777, 0600);
    ck_assert_uint_eq(st.st_uid, geteuid());
    char want[4200];
    ck_assert_int_eq(ct_live_path(path, CT_LIVE_SHM, geteuid(), want, sizeof(want)), 0);
    ck_assert_str_eq(map, want);
    /* this process lives: its mapping is never touched */
    struct ct_live_map m;
    char err[256];
    ck_assert_int_eq(ct_live_map_open(&m, map, geteuid(), err, sizeof(err)), 0);
    uint32_t pid;
    ck_assert_int_eq(ct_live_map_owner(&m, &pid), CT_OWNER_ALIVE);
    ck_assert_uint_eq(pid, (uint32_t)getpid());
    ct_live_map_close(&m);
    char dir[512], trace[4400];
    snprintf(dir, sizeof(dir), "%s", path);
    *strrchr(dir, '/') = 0;
    ck_assert_int_eq(
        ct_salvage_commit(dir, map, NULL, NULL, NULL, trace, sizeof(trace), err, sizeof(err)),
        -EBUSY);
    /* someone else's is ignored, and so is a link to one */
    ck_assert_int_eq(ct_live_map_open(&m, map, geteuid() + 1, err, sizeof(err)), -EPERM);
    char link[600];
    th_path(link, sizeof(link), dir, "link.live");
    ck_assert_int_eq(symlink(map, link), 0);
    ck_assert_int_eq(ct_live_map_open(&m, link, geteuid(), err, sizeof(err)), -EPERM);
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
    ck_assert_int_eq(lstat(map, &st), -1); /* a clean end removes it */
    struct th_trace t;
    th_trace_read_file(&t, path);
    ck_assert(t.rd.has_footer && !t.rd.salvaged);
    th_trace_free(&t);
}
END_TEST

/* The error records of a trace naming what. */
static int errors_saying(const struct th_trace *t, const char *what)
{
    int n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += t->recs[i].kind == CT_REC_ERROR &&
             strstr(ct_reader_string(&t->rd, t->recs[i].f[CT_ERROR_WHAT]), what) != NULL;
    return n;
}

static const char *recorder_meta(const struct th_trace *t, const char *key)
{
    for (size_t i = 0; i < t->n; i++) {
        const struct ct_record *r = &t->recs[i];
        if (r->kind == CT_REC_META && r->f[CT_META_SCOPE] == CT_SCOPE_RECORDER &&
            !strcmp(ct_reader_string(&t->rd, r->f[CT_META_KEY]), key))
            return ct_reader_string(&t->rd, r->f[CT_META_VALUE]);
    }
    return NULL;
}

START_TEST(no_room_for_the_mapping_keeps_the_buffers_private_and_says_so_once)
{
    /* a folder that cannot hold the mapping's first megabyte (the file
     * size limit stands in for a full /dev/shm: fallocate fails alike) */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {256 << 10, 256 << 10};
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    ck_assert_int_eq(th_start(path, 1 << 16, 50), 0);
    ck_assert(!ct_live_on());
    emit_steps(0, 50);
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
    struct th_trace t;
    th_trace_read_file(&t, path);
    ck_assert(t.rd.has_footer);
    ck_assert_str_eq(recorder_meta(&t, "buffers"), "private");
    ck_assert_int_eq(errors_saying(&t, "no live mapping"), 1);
    ck_assert_int_eq(errors_saying(&t, "a SIGKILL loses the records not yet written"), 1);
    int steps[64];
    ck_assert_int_eq(steps_of(&t, steps, 64), 50); /* recording goes on as before */
    th_trace_free(&t);
}
END_TEST

START_TEST(a_taken_name_moves_the_mapping_beside_the_trace_or_keeps_the_buffers_private)
{
    char path[512], shm[4200], dir[4200];
    const char *tmp = th_tmpdir();
    th_path(path, sizeof(path), tmp, "t.cutrace");
    ck_assert_int_eq(ct_live_path(path, CT_LIVE_SHM, geteuid(), shm, sizeof(shm)), 0);
    ck_assert_int_eq(ct_live_path(path, CT_LIVE_DIR, geteuid(), dir, sizeof(dir)), 0);
    ck_assert_int_eq(th_write_file(shm, (const uint8_t *)"x", 1), 0);
    /* /dev/shm's name is someone else's file: beside the trace */
    ck_assert_int_eq(th_start(path, 1 << 16, 50), 0);
    ck_assert(ct_live_on());
    ck_assert_str_eq(ct_live_where_path(), dir);
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
    /* both taken: private memory, said once (O_EXCL: never someone else's file) */
    th_path(path, sizeof(path), tmp, "u.cutrace");
    ck_assert_int_eq(ct_live_path(path, CT_LIVE_SHM, geteuid(), shm, sizeof(shm)), 0);
    ck_assert_int_eq(ct_live_path(path, CT_LIVE_DIR, geteuid(), dir, sizeof(dir)), 0);
    ck_assert_int_eq(th_write_file(shm, (const uint8_t *)"x", 1), 0);
    ck_assert_int_eq(th_write_file(dir, (const uint8_t *)"y", 1), 0);
    ck_assert_int_eq(th_start(path, 1 << 16, 50), 0);
    ck_assert(!ct_live_on());
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
    size_t n;
    uint8_t *p = th_read_file(shm, &n);
    ck_assert(p && n == 1 && p[0] == 'x'); /* left as they were */
    free(p);
    p = th_read_file(dir, &n);
    ck_assert(p && n == 1 && p[0] == 'y');
    free(p);
    struct th_trace t;
    th_trace_read_file(&t, path);
    ck_assert_int_eq(errors_saying(&t, "cannot create"), 1);
    ck_assert_str_eq(recorder_meta(&t, "buffers"), "private");
    th_trace_free(&t);
}
END_TEST

Suite *salvage_suite(void)
{
    Suite *s = suite_create("salvage");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, records_left_in_the_rings_are_recovered_with_their_strings);
    tcase_add_test(tc, a_record_being_written_is_dropped_by_the_commit_marker);
    tcase_add_test(tc, a_frame_in_flight_at_death_counts_once);
    tcase_add_test(tc, a_trace_never_created_is_built_from_the_mapping_alone);
    tcase_add_test(tc, a_process_never_worth_a_trace_leaves_none);
    tcase_add_test(tc, a_mapping_cut_anywhere_decodes_up_to_the_cut);
    tcase_add_test(tc, the_mapping_is_private_to_its_owner_and_goes_at_a_clean_stop);
    tcase_add_test(tc, no_room_for_the_mapping_keeps_the_buffers_private_and_says_so_once);
    tcase_add_test(tc,
                   a_taken_name_moves_the_mapping_beside_the_trace_or_keeps_the_buffers_private);
    suite_add_tcase(s, tc);
    return s;
}
