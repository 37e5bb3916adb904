/*
 * Suite "ownfd": the recorder's own descriptors (src/ownfd.c) and its
 * file's lifecycle (src/writer_file.c), without the shim: a descriptor
 * taken over by the job is never written to, and a deferred file is created
 * exactly when the process becomes worth a trace.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/ownfd.h"
#include "src/recorder_int.h"
#include "tests/unit/helpers.h"

static void emit_marks(int n)
{
    ck_assert_int_eq(th_emit_marks(n), n);
}

/* One read span of `bytes` bytes on a file descriptor open on path. */
static void emit_read_of(const char *path, uint64_t bytes)
{
    uint64_t t = ct_clock_now();
    uint64_t io[CT_IO_NFIELDS] = {
        t, t + 1000, ct_intern("read"), 5, CT_FD_FILE, ct_intern(path), bytes, bytes, 0};
    ck_assert_int_eq(ct_emit(CT_REC_IO, 0, io, CT_IO_NFIELDS), 0);
}

static void emit_read(uint64_t bytes)
{
    emit_read_of("/etc/version", bytes);
}

static int start_deferred(const char *path, uint64_t defer_bytes)
{
    struct ct_recorder_config cfg = {
        .path = path,
        .ring_bytes = 1 << 16,
        .zstd_level = 3,
        .flush_ms = 10,
        .pid = (uint32_t)getpid(),
        .max_strings = 4096,
        .string_bytes = 1 << 20,
        .defer_bytes = defer_bytes,
    };
    struct ct_meta_kv meta[] = {{CT_SCOPE_PROCESS, 0, "host", "testhost"}};
    return ct_recorder_start(&cfg, meta, 1);
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

START_TEST(trace_descriptor_sits_above_the_numbers_jobs_reuse)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    ck_assert_int_eq(th_start(path, 1 << 16, 10), 0);
    int fd = atomic_load(&ct_own_slots[ct_rec.file_slot].fd);
    ck_assert_int_ge(fd, ct_own_high_base());
    ck_assert_int_eq(ct_own_is(fd), 1);
    ck_assert_int_eq(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
    ck_assert_int_eq(ct_own_find(fd), -1); /* closed and forgotten at stop */
}
END_TEST

START_TEST(taken_over_descriptor_is_never_written_and_the_file_is_reopened)
{
    char path[512], job_file[512];
    const char *dir = th_tmpdir();
    th_path(path, sizeof(path), dir, "t.cutrace");
    th_path(job_file, sizeof(job_file), dir, "job.dat");
    ck_assert_int_eq(th_start(path, 1 << 16, 10), 0);
    emit_marks(50);
    ck_assert_int_eq(ct_recorder_flush(5000), 0);
    /* what a raw close_range syscall and a new open do behind the shim's
     * back: the trace's number now names the job's file */
    int ours = atomic_load(&ct_own_slots[ct_rec.file_slot].fd);
    int job = open(job_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(job, 0);
    ck_assert_int_eq(dup2(job, ours), ours);
    close(job);
    emit_marks(70);
    ck_assert_int_eq(ct_recorder_flush(5000), 0);
    ck_assert_int_eq(write(ours, "user data", 9), 9);
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
    /* the job's file holds exactly what the job wrote */
    size_t len = 0;
    uint8_t *got = th_read_file(job_file, &len);
    ck_assert_uint_eq(len, 9);
    ck_assert_mem_eq(got, "user data", 9);
    free(got);
    ck_assert_int_eq(ct_own_find(ours), -1); /* the number is the job's now */
    struct th_trace t;
    th_trace_read_file(&t, path);
    ck_assert_uint_eq(t.rd.damage_total, 0);
    ck_assert(t.rd.has_footer);
    ck_assert_uint_eq(th_count_kind(&t, CT_REC_NVTX_MARK), 120);
    /* and the trace says what happened */
    int said = 0;
    for (size_t i = 0; i < t.n; i++)
        if (t.recs[i].kind == CT_REC_ERROR && (int64_t)t.recs[i].f[CT_ERROR_CODE] == -EBADF)
            said = 1;
    ck_assert(said);
    th_trace_free(&t);
}
END_TEST

START_TEST(descriptor_whose_file_is_gone_stops_recording_and_says_so)
{
    char path[512], moved[512];
    const char *dir = th_tmpdir();
    th_path(path, sizeof(path), dir, "t.cutrace");
    th_path(moved, sizeof(moved), dir, "elsewhere.cutrace");
    ck_assert_int_eq(th_start(path, 1 << 16, 10), 0);
    emit_marks(10);
    ck_assert_int_eq(ct_recorder_flush(5000), 0);
    ck_assert_int_eq(rename(path, moved), 0); /* nothing to reopen by the path */
    int ours = atomic_load(&ct_own_slots[ct_rec.file_slot].fd);
    int devnull = open("/dev/null", O_WRONLY);
    ck_assert_int_eq(dup2(devnull, ours), ours);
    close(devnull);
    emit_marks(10);
    ck_assert_int_eq(ct_recorder_flush(5000), 0);
    struct ct_recorder_stats st;
    ct_recorder_stats(&st);
    ck_assert_int_eq(st.write_error, -EBADF);
    ck_assert_int_eq(ct_recorder_stop(5000), -EBADF);
    ck_assert(!exists(path)); /* nothing created where the trace was */
    struct th_trace t;
    th_trace_read_file(&t, moved); /* what was written before still decodes */
    ck_assert_uint_eq(t.rd.damage_total, 0);
    ck_assert_uint_eq(th_count_kind(&t, CT_REC_NVTX_MARK), 10);
    th_trace_free(&t);
}
END_TEST

START_TEST(process_with_only_small_reads_leaves_no_file)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    ck_assert_int_eq(start_deferred(path, 1 << 20), 0);
    for (int i = 0; i < 20; i++)
        emit_read(4096); /* 80 KiB, under the 1 MiB that makes a trace */
    ck_assert_int_eq(ct_recorder_flush(5000), 0);
    ck_assert(!exists(path));
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
    ck_assert(!exists(path));
    struct ct_recorder_stats st;
    ct_recorder_stats(&st);
    ck_assert_int_eq(st.file_created, 0);
}
END_TEST

START_TEST(deferred_file_is_created_at_the_first_gpu_family_record_with_all_before_it)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    ck_assert_int_eq(start_deferred(path, 1 << 20), 0);
    emit_read(100);
    emit_read(200);
    ck_assert_int_eq(ct_recorder_flush(5000), 0);
    ck_assert(!exists(path));
    emit_marks(1); /* NVTX: the process is worth a trace */
    ck_assert_int_eq(ct_recorder_flush(5000), 0);
    ck_assert(exists(path));
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
    struct th_trace t;
    th_trace_read_file(&t, path);
    ck_assert_uint_eq(t.rd.damage_total, 0);
    ck_assert(t.rd.has_footer);
    ck_assert_uint_eq(th_count_kind(&t, CT_REC_IO), 2); /* nothing before it lost */
    ck_assert_uint_eq(th_count_kind(&t, CT_REC_NVTX_MARK), 1);
    ck_assert_uint_ge(th_count_kind(&t, CT_REC_META), 1);
    th_trace_free(&t);
}
END_TEST

START_TEST(deferred_file_is_created_once_io_moves_the_threshold)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    ck_assert_int_eq(start_deferred(path, 64 << 10), 0);
    for (int i = 0; i < 15; i++)
        emit_read(4096); /* 60 KiB: not yet */
    ck_assert_int_eq(ct_recorder_flush(5000), 0);
    ck_assert(!exists(path));
    emit_read(4096); /* 64 KiB */
    ck_assert_int_eq(ct_recorder_flush(5000), 0);
    ck_assert(exists(path));
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
    struct th_trace t;
    th_trace_read_file(&t, path);
    ck_assert_uint_eq(t.rd.damage_total, 0);
    ck_assert_uint_eq(th_count_kind(&t, CT_REC_IO), 16);
    th_trace_free(&t);
}
END_TEST

START_TEST(reading_code_is_start_up_and_never_makes_a_trace)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    ck_assert_int_eq(start_deferred(path, 1 << 20), 0);
    /* 2.5 MiB of an interpreter's imports and a loader's reads: code */
    static const char *const code[] = {
        "/usr/lib/python3.11/__pycache__/typing.cpython-311.pyc",
        "/usr/lib/python3.11/json/decoder.py",
        "/usr/lib/python3/dist-packages/distutils-precedence.pth",
        "/usr/lib/x86_64-linux-gnu/libfoo.so.1.2.3",
        "/opt/venv/lib/python3.11/site-packages/numpy/core/_multiarray_umath.so",
    };
    for (int i = 0; i < 5; i++)
        emit_read_of(code[i], 512 << 10);
    ck_assert_int_eq(ct_recorder_flush(5000), 0);
    ck_assert(!exists(path));
    /* names that only look like code are data: 1 MiB of them makes the trace */
    emit_read_of("/data/weights.json.1", 512 << 10);
    ck_assert_int_eq(ct_recorder_flush(5000), 0);
    ck_assert(!exists(path)); /* 512 KiB of data so far */
    emit_read_of("/data/train.sofa", 512 << 10);
    ck_assert_int_eq(ct_recorder_flush(5000), 0);
    ck_assert(exists(path));
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
    struct th_trace t;
    th_trace_read_file(&t, path);
    ck_assert_uint_eq(th_count_kind(&t, CT_REC_IO), 7); /* the imports kept too */
    th_trace_free(&t);
}
END_TEST

static _Atomic int g_ancestor;
static int ancestor_gpu(void)
{
    return atomic_load(&g_ancestor);
}

START_TEST(descendant_of_a_gpu_process_gets_its_file_at_its_first_data_byte)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    atomic_store(&g_ancestor, 1);
    ct_recorder_lineage(ancestor_gpu);
    ck_assert_int_eq(start_deferred(path, 1 << 20), 0);
    emit_read_of("/usr/lib/python3.11/__pycache__/os.cpython-311.pyc", 100 << 10);
    ck_assert_int_eq(ct_recorder_flush(5000), 0);
    ck_assert(!exists(path)); /* a spawned worker's imports: not yet */
    emit_read_of("pipe:[1234]", 10);
    ck_assert_int_eq(ct_recorder_flush(5000), 0);
    ck_assert(exists(path));
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
}
END_TEST

START_TEST(descendant_whose_ancestor_turned_to_the_gpu_later_gets_its_file_at_stop)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    atomic_store(&g_ancestor, 0);
    ct_recorder_lineage(ancestor_gpu);
    ck_assert_int_eq(start_deferred(path, 1 << 20), 0);
    emit_read(100);
    ck_assert_int_eq(ct_recorder_flush(5000), 0);
    ck_assert(!exists(path));
    atomic_store(&g_ancestor, 1); /* the parent's first CUDA call, after ours */
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
    ck_assert(exists(path));
    struct th_trace t;
    th_trace_read_file(&t, path);
    ck_assert(t.rd.has_footer);
    ck_assert_uint_eq(th_count_kind(&t, CT_REC_IO), 1);
    th_trace_free(&t);
}
END_TEST

START_TEST(deferred_name_already_taken_is_refused_at_start)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    ck_assert_int_eq(th_write_file(path, (const uint8_t *)"x", 1), 0);
    ck_assert_int_eq(start_deferred(path, 1 << 20), -EEXIST);
}
END_TEST

START_TEST(registered_number_closed_behind_our_back_is_given_up)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "f");
    int slot = ct_own_open(path, O_WRONLY | O_CREAT, 0600, 0);
    ck_assert_int_ge(slot, 0);
    int fd = atomic_load(&ct_own_slots[slot].fd);
    ck_assert_int_eq(ct_own_is(fd), 1);
    close(fd); /* no shim here: the job's close goes straight through */
    int other = open("/dev/null", O_RDONLY);
    ck_assert_int_eq(other, fd); /* the job's file at our old number */
    ck_assert_int_eq(ct_own_is(fd), 0);
    ck_assert_int_eq(ct_own_find(fd), -1);
    ct_own_close(slot); /* must not close the job's descriptor */
    ck_assert_int_ge(fcntl(other, F_GETFD), 0);
}
END_TEST

START_TEST(step_aside_moves_a_long_lived_descriptor_and_keeps_its_file)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "f");
    int slot = ct_own_open(path, O_WRONLY | O_CREAT, 0600, CT_OWN_HIGH);
    ck_assert_int_ge(slot, 0);
    int fd = atomic_load(&ct_own_slots[slot].fd);
    int old = ct_own_step_aside(slot);
    ck_assert_int_eq(old, fd);
    int now = atomic_load(&ct_own_slots[slot].fd);
    ck_assert_int_ne(now, fd);
    ck_assert_int_eq(ct_own_is(now), 1);
    /* the job's dup2 failed: the old number is closed again, not leaked */
    ct_own_release(old, slot);
    ck_assert_int_lt(fcntl(old, F_GETFD), 0);
    ct_own_close(slot);
    ck_assert_int_lt(fcntl(now, F_GETFD), 0);
}
END_TEST

Suite *ownfd_suite(void)
{
    Suite *s = suite_create("ownfd");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, trace_descriptor_sits_above_the_numbers_jobs_reuse);
    tcase_add_test(tc, taken_over_descriptor_is_never_written_and_the_file_is_reopened);
    tcase_add_test(tc, descriptor_whose_file_is_gone_stops_recording_and_says_so);
    tcase_add_test(tc, process_with_only_small_reads_leaves_no_file);
    tcase_add_test(tc, deferred_file_is_created_at_the_first_gpu_family_record_with_all_before_it);
    tcase_add_test(tc, deferred_file_is_created_once_io_moves_the_threshold);
    tcase_add_test(tc, reading_code_is_start_up_and_never_makes_a_trace);
    tcase_add_test(tc, descendant_of_a_gpu_process_gets_its_file_at_its_first_data_byte);
    tcase_add_test(tc, descendant_whose_ancestor_turned_to_the_gpu_later_gets_its_file_at_stop);
    tcase_add_test(tc, deferred_name_already_taken_is_refused_at_start);
    tcase_add_test(tc, registered_number_closed_behind_our_back_is_given_up);
    tcase_add_test(tc, step_aside_moves_a_long_lived_descriptor_and_keeps_its_file);
    suite_add_tcase(s, tc);
    return s;
}
