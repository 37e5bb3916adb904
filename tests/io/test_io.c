/*
 * Suite "io": programs doing file, pipe and socket I/O and host waits run
 * under LD_PRELOAD=libcutrace.so, and their traces are compared with what
 * the programs say they called (w_io.c prints one EXPECT line per call).
 *
 * CT_NO_FORK_TRACES=1 skips the checks of forked children's own traces in
 * the data-loader test, for a shim whose forked children record nothing
 * (per-process traces for fork are shim/process.c's work). Without it the
 * children's traces are required.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "decoder/util/names.h"
#include "tests/unit/helpers.h"
#include "tests/unit/run.h"

#define IO_DROP_BELOW_MIN 7 /* proposed CT_DROP_IO_BELOW_MIN (format.h) */

/* Runs argv under the shim (GPU timing off, traces in a fresh directory)
 * with extra env "K=V" entries; requires exit status 0 and an empty stderr
 * and returns stdout. */
static char *run_ok(struct th_run *r, const char *const *extra_env, const char *const *argv)
{
    struct th_run_opts o = {.preload = th_env("CT_SHIM"), .gpu_timing_off = 1, .env = extra_env};
    th_run(r, &o, argv);
    return th_run_clean(r);
}

static const char *S(const struct th_trace *t, uint64_t id)
{
    const char *s = ct_reader_string(&t->rd, id);
    return s ? s : "";
}

static const char *op_of(const struct th_trace *t, const struct ct_record *rec)
{
    return S(t, rec->f[CT_IO_OP]);
}

static int64_t I(const struct ct_record *rec, unsigned field)
{
    return (int64_t)rec->f[field];
}

static uint64_t dur(const struct ct_record *rec)
{
    return rec->f[CT_IO_END] - rec->f[CT_IO_START];
}

static int is_wait(const char *op)
{
    return !strcmp(op, "poll") || !strcmp(op, "ppoll") || !strcmp(op, "select") ||
           !strcmp(op, "pselect") || !strcmp(op, "epoll_wait");
}

/* The io records of the trace, in order, against the EXPECT lines. */
static size_t compare_with_expectations(const struct th_trace *t, const char *out)
{
    char *copy = strdup(out), *save = NULL;
    size_t k = 0, nexp = 0;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char op[32], type[16], path[512];
        int fd;
        unsigned long long bytes;
        long long result, offset;
        if (sscanf(line, "EXPECT %31s %d %15s %511s %llu %lld %lld", op, &fd, type, path, &bytes,
                   &result, &offset) != 7)
            continue;
        nexp++;
        while (k < t->n && t->recs[k].kind != CT_REC_IO)
            k++;
        ck_assert_msg(k < t->n, "trace ends before expected %s", line);
        const struct ct_record *rec = &t->recs[k++];
        const char *rpath = S(t, rec->f[CT_IO_PATH]);
        ck_assert_msg(!strcmp(op_of(t, rec), op) && I(rec, CT_IO_FD) == fd &&
                          !strcmp(ct_name_fd_type(rec->f[CT_IO_FD_TYPE]), type) &&
                          !strcmp(rpath[0] ? rpath : "-", path) && rec->f[CT_IO_BYTES] == bytes &&
                          I(rec, CT_IO_RESULT) == result && I(rec, CT_IO_OFFSET) == offset,
                      "%s\n   but recorded: %s %lld %s %s %llu %lld %lld", line, op_of(t, rec),
                      (long long)I(rec, CT_IO_FD), ct_name_fd_type(rec->f[CT_IO_FD_TYPE]),
                      rpath[0] ? rpath : "-", (unsigned long long)rec->f[CT_IO_BYTES],
                      (long long)I(rec, CT_IO_RESULT), (long long)I(rec, CT_IO_OFFSET));
        ck_assert_msg(rec->f[CT_IO_END] >= rec->f[CT_IO_START], "%s: end before start", line);
    }
    while (k < t->n && t->recs[k].kind != CT_REC_IO)
        k++;
    ck_assert_msg(k == t->n, "trace holds an io call that was not made: %s fd %lld",
                  op_of(t, &t->recs[k]), (long long)I(&t->recs[k], CT_IO_FD));
    free(copy);
    return nexp;
}

static void run_mode_and_compare(const char *mode, size_t min_expect)
{
    struct th_run r;
    char exe[512];
    snprintf(exe, sizeof(exe), "%s/w_io", th_env("CT_IO_WORKLOADS"));
    char dir[300];
    snprintf(dir, sizeof(dir), "%s", th_tmpdir());
    const char *argv[] = {exe, mode, dir, NULL};
    char *out = run_ok(&r, NULL, argv);
    struct th_trace t;
    th_run_read_trace(&r, 0, &t);
    ck_assert(t.rd.has_footer);
    ck_assert_uint_ge(compare_with_expectations(&t, out), min_expect);
    /* A wait that timed out (result 0) lasted its 20 ms timeout. */
    for (size_t i = 0; i < t.n; i++) {
        const struct ct_record *rec = &t.recs[i];
        if (rec->kind == CT_REC_IO && is_wait(op_of(&t, rec)) && I(rec, CT_IO_RESULT) == 0)
            ck_assert_msg(dur(rec) >= 19000000u, "%s timed out after %llu ns", op_of(&t, rec),
                          (unsigned long long)dur(rec));
    }
    th_trace_free(&t);
    free(out);
}

START_TEST(every_file_call_is_recorded_once_with_its_fields)
{
    run_mode_and_compare("files", 45);
}
END_TEST

START_TEST(pipes_sockets_and_waits_are_recorded_with_their_types)
{
    run_mode_and_compare("ipc", 22);
}
END_TEST

START_TEST(failures_record_minus_errno_and_leave_errno_as_libc_set_it)
{
    struct th_run r;
    char exe[512];
    snprintf(exe, sizeof(exe), "%s/w_io", th_env("CT_IO_WORKLOADS"));
    char dir[300];
    snprintf(dir, sizeof(dir), "%s", th_tmpdir());
    const char *argv[] = {exe, "files", dir, NULL};
    char *out = run_ok(&r, NULL, argv);
    char want[64];
    snprintf(want, sizeof(want), "ERRNO read_badfd=%d\n", EBADF);
    ck_assert_msg(strstr(out, want), "errno after read(999): %s", out);
    ck_assert_msg(strstr(out, "ERRNO write_ok=4321\n"), "a successful write changed errno: %s",
                  out);
    /* the records themselves are checked by the files test: -EBADF, -ENOENT */
    ck_assert_ptr_nonnull(strstr(out, "EXPECT read 999 unknown - 10 -9 -1"));
    free(out);
}
END_TEST

START_TEST(io_min_ns_skips_short_spans_and_counts_them_exactly)
{
    struct th_run r;
    char exe[512];
    snprintf(exe, sizeof(exe), "%s/w_io", th_env("CT_IO_WORKLOADS"));
    const char *argv[] = {exe, "minns", NULL};
    const char *env[] = {"CUTRACE_IO_MIN_NS=5000000", NULL};
    char *out = run_ok(&r, env, argv);
    long calls = 0;
    const char *c = strstr(out, "CALLS ");
    ck_assert_ptr_nonnull(c);
    calls = atol(c + 6);
    ck_assert_int_eq(calls, 1007);
    struct th_trace t;
    th_run_read_trace(&r, 0, &t);
    ck_assert(t.rd.has_footer);
    uint64_t recorded = 0, skipped = 0, drop_records = 0, polls = 0;
    for (size_t i = 0; i < t.n; i++) {
        const struct ct_record *rec = &t.recs[i];
        if (rec->kind == CT_REC_IO) {
            recorded++;
            /* only spans of at least 5 ms are kept */
            ck_assert_msg(dur(rec) >= 4900000u, "%s of %llu ns recorded", op_of(&t, rec),
                          (unsigned long long)dur(rec));
            polls += !strcmp(op_of(&t, rec), "poll");
        } else if (rec->kind == CT_REC_DROP) {
            ck_assert_uint_eq(rec->f[CT_DROP_REASON], IO_DROP_BELOW_MIN);
            skipped += rec->f[CT_DROP_COUNT];
            drop_records++;
        }
    }
    ck_assert_uint_eq(polls, 3);                 /* the 30 ms waits are all there */
    ck_assert_uint_eq(recorded + skipped, 1007); /* every call either recorded or counted */
    ck_assert_uint_ge(drop_records, 2);          /* one after the 1.1 s pause, one at exit */
    th_trace_free(&t);
    free(out);
}
END_TEST

START_TEST(threads_each_record_their_own_reads)
{
    struct th_run r;
    char exe[512];
    snprintf(exe, sizeof(exe), "%s/w_io", th_env("CT_IO_WORKLOADS"));
    char dir[300];
    snprintf(dir, sizeof(dir), "%s", th_tmpdir());
    enum { N = 8, CHUNKS = 200 };
    const char *argv[] = {exe, "threads", dir, "8", "200", NULL};
    char *out = run_ok(&r, NULL, argv);
    ck_assert_ptr_nonnull(strstr(out, "total=6553600"));
    struct th_trace t;
    th_run_read_trace(&r, 0, &t);
    uint32_t main_tid = t.rd.hdr.pid; /* the main thread writes the files first */
    struct {
        uint32_t tid;
        unsigned opens, reads, eofs, closes;
        uint64_t bytes, path;
    } th[16];
    size_t nth = 0;
    for (size_t i = 0; i < t.n; i++) {
        const struct ct_record *rec = &t.recs[i];
        if (rec->kind != CT_REC_DROP)
            continue;
        ck_abort_msg("records dropped (reason %s)", ct_name_drop_reason(rec->f[CT_DROP_REASON]));
    }
    for (size_t i = 0; i < t.n; i++) {
        const struct ct_record *rec = &t.recs[i];
        if (rec->kind != CT_REC_IO)
            continue;
        if (rec->tid == main_tid)
            continue;
        size_t j;
        for (j = 0; j < nth && th[j].tid != rec->tid; j++)
            ;
        if (j == nth) {
            ck_assert_uint_lt(nth, 16);
            memset(&th[nth], 0, sizeof(th[nth]));
            th[nth++].tid = rec->tid;
        }
        const char *op = op_of(&t, rec);
        const char *path = S(&t, rec->f[CT_IO_PATH]);
        ck_assert_msg(strstr(path, "/t"), "thread %u: %s on %s", rec->tid, op, path);
        if (!th[j].path)
            th[j].path = rec->f[CT_IO_PATH];
        ck_assert_uint_eq(th[j].path, rec->f[CT_IO_PATH]); /* each its own file */
        if (!strncmp(op, "open", 4))
            th[j].opens++;
        else if (!strcmp(op, "close"))
            th[j].closes++;
        else if (!strcmp(op, "read")) {
            ck_assert_uint_eq(rec->f[CT_IO_BYTES], 4096);
            if (I(rec, CT_IO_RESULT) == 0)
                th[j].eofs++;
            else
                th[j].reads++;
            th[j].bytes += (uint64_t)I(rec, CT_IO_RESULT);
        } else
            ck_abort_msg("unexpected %s", op);
    }
    ck_assert_uint_eq(nth, N);
    for (size_t j = 0; j < nth; j++) {
        ck_assert_uint_eq(th[j].opens, 1);
        ck_assert_uint_eq(th[j].reads, CHUNKS);
        ck_assert_uint_eq(th[j].eofs, 1);
        ck_assert_uint_eq(th[j].closes, 1);
        ck_assert_uint_eq(th[j].bytes, CHUNKS * 4096);
    }
    th_trace_free(&t);
    free(out);
}
END_TEST

START_TEST(heavy_writer_runs_correctly_and_the_trace_never_records_itself)
{
    struct th_run r;
    char exe[512];
    snprintf(exe, sizeof(exe), "%s/w_io", th_env("CT_IO_WORKLOADS"));
    char dir[300];
    snprintf(dir, sizeof(dir), "%s", th_tmpdir());
    const char *argv[] = {exe, "big", dir, "64", NULL};
    char *out = run_ok(&r, NULL, argv);
    ck_assert_ptr_nonnull(strstr(out, "BIG ok 67108864"));
    struct th_trace t;
    th_run_read_trace(&r, 0, &t);
    ck_assert(t.rd.has_footer);
    uint64_t file_writes = 0, null_writes = 0, dropped = 0;
    for (size_t i = 0; i < t.n; i++) {
        const struct ct_record *rec = &t.recs[i];
        if (rec->kind == CT_REC_DROP) {
            dropped += rec->f[CT_DROP_COUNT];
            continue;
        }
        if (rec->kind != CT_REC_IO)
            continue;
        const char *path = S(&t, rec->f[CT_IO_PATH]);
        ck_assert_msg(!strstr(path, ".cutrace"), "the trace recorded its own %s on %s",
                      op_of(&t, rec), path);
        ck_assert_msg(!strstr(path, "/traces"), "%s on %s", op_of(&t, rec), path);
        if (!strcmp(op_of(&t, rec), "write")) {
            if (rec->f[CT_IO_BYTES] == 65536)
                file_writes++;
            else
                null_writes++;
        }
    }
    /* Every call is either recorded or counted as dropped. */
    ck_assert_uint_le(file_writes, 1024);
    ck_assert_uint_eq(file_writes + null_writes + dropped >= 1024 + 20000, 1);
    if (!dropped) {
        ck_assert_uint_eq(file_writes, 1024);
        ck_assert_uint_eq(null_writes, 20000);
    }
    th_trace_free(&t);
    free(out);
}
END_TEST

START_TEST(io_in_constructors_before_main_works_and_is_recorded)
{
    struct th_run r;
    char exe[512];
    snprintf(exe, sizeof(exe), "%s/w_ctor", th_env("CT_IO_WORKLOADS"));
    char dir[300], envdir[400];
    snprintf(dir, sizeof(dir), "%s", th_tmpdir());
    snprintf(envdir, sizeof(envdir), "CT_IO_CTOR_DIR=%s", dir);
    const char *argv[] = {exe, NULL};
    const char *env[] = {envdir, NULL};
    char *out = run_ok(&r, env, argv);
    ck_assert_str_eq(out, "CTOR lib=0 exe=0\n");
    struct th_trace t;
    th_run_read_trace(&r, 0, &t);
    ck_assert(t.rd.has_footer);
    for (int which = 0; which < 2; which++) {
        const char *name = which ? "/ctor-exe" : "/ctor-lib";
        unsigned opens = 0, writes = 0, preads = 0, closes = 0;
        for (size_t i = 0; i < t.n; i++) {
            const struct ct_record *rec = &t.recs[i];
            if (rec->kind != CT_REC_IO)
                continue;
            const char *path = S(&t, rec->f[CT_IO_PATH]);
            size_t pl = strlen(path), nl = strlen(name);
            if (pl < nl || strcmp(path + pl - nl, name) != 0)
                continue;
            const char *op = op_of(&t, rec);
            ck_assert_str_eq(ct_name_fd_type(rec->f[CT_IO_FD_TYPE]), "file");
            if (!strncmp(op, "open", 4))
                opens++;
            else if (!strcmp(op, "write"))
                writes += I(rec, CT_IO_RESULT) == 4;
            else if (!strncmp(op, "pread", 5))
                preads += I(rec, CT_IO_RESULT) == 4 && I(rec, CT_IO_OFFSET) == 0;
            else if (!strcmp(op, "close"))
                closes += I(rec, CT_IO_RESULT) == 0;
        }
        ck_assert_msg(opens == 1 && writes == 1 && preads == 1 && closes == 1,
                      "%s: open %u write %u pread %u close %u", name, opens, writes, preads,
                      closes);
    }
    th_trace_free(&t);
    free(out);
}
END_TEST

static int field_int(const char *out, const char *key)
{
    const char *p = strstr(out, key);
    ck_assert_msg(p != NULL, "no %s in: %s", key, out);
    return atoi(p + strlen(key));
}

/*
 * The data loader: the parent's trace shows its poll waits (about 60 ms
 * each, the pace of the feeder) and the pipe reads that follow them; the
 * feeder thread's writes; the workers' own traces show the file reads and
 * the blocking pipe reads (children's traces: see CT_NO_FORK_TRACES above).
 */
START_TEST(data_loader_waits_and_pipe_reads_show_the_delays)
{
    if (th_emulated_skip("real-time bounds on the loader's waits"))
        return;
    struct th_run r;
    char exe[512];
    snprintf(exe, sizeof(exe), "%s/w_io", th_env("CT_IO_WORKLOADS"));
    char dir[300];
    snprintf(dir, sizeof(dir), "%s", th_tmpdir());
    const char *argv[] = {exe, "loader", dir, NULL};
    char *out = run_ok(&r, NULL, argv);
    ck_assert_msg(strstr(out, "LOADER ok"), "%s", out);
    int parent = field_int(out, "PARENT "), w1 = field_int(out, "WORKER1 "),
        w2 = field_int(out, "WORKER2 ");

    struct th_trace t;
    th_run_read_trace(&r, parent, &t);
    ck_assert(t.rd.has_footer);
    unsigned polls = 0, long_polls = 0, pipe_reads = 0, feeds = 0;
    uint64_t poll_ns = 0;
    for (size_t i = 0; i < t.n; i++) {
        const struct ct_record *rec = &t.recs[i];
        if (rec->kind != CT_REC_IO)
            continue;
        const char *op = op_of(&t, rec), *path = S(&t, rec->f[CT_IO_PATH]);
        if (!strcmp(op, "poll")) {
            polls++;
            poll_ns += dur(rec);
            long_polls += dur(rec) >= 40000000u;
        } else if (!strcmp(op, "read")) {
            ck_assert_str_eq(ct_name_fd_type(rec->f[CT_IO_FD_TYPE]), "pipe");
            ck_assert_msg(!strncmp(path, "pipe:[", 6), "read on %s", path);
            pipe_reads++;
        } else if (!strcmp(op, "write") && rec->tid != (uint32_t)parent) {
            ck_assert_str_eq(ct_name_fd_type(rec->f[CT_IO_FD_TYPE]), "pipe");
            ck_assert_uint_eq(rec->f[CT_IO_BYTES], 64);
            feeds++;
        }
    }
    ck_assert_uint_ge(polls, 4);
    ck_assert_msg(long_polls >= 3, "%u of %u polls waited 40 ms or more", long_polls, polls);
    ck_assert_uint_ge(poll_ns, 180000000u); /* 4 feeds 60 ms apart */
    ck_assert_uint_ge(pipe_reads, 5 + 2);   /* 4 batches, 1 file result, 2 EOFs */
    ck_assert_uint_eq(feeds, 4);
    th_trace_free(&t);

    const char *nofork = getenv("CT_NO_FORK_TRACES");
    if (nofork && !strcmp(nofork, "1")) {
        free(out);
        return;
    }
    /* worker 1: the data file, in 4 KiB reads */
    th_run_read_trace(&r, w1, &t);
    uint64_t file_bytes = 0;
    unsigned opened = 0;
    for (size_t i = 0; i < t.n; i++) {
        const struct ct_record *rec = &t.recs[i];
        if (rec->kind != CT_REC_IO)
            continue;
        const char *op = op_of(&t, rec), *path = S(&t, rec->f[CT_IO_PATH]);
        size_t pl = strlen(path);
        int data = pl >= 5 && !strcmp(path + pl - 5, "/data");
        if (!strcmp(op, "open") && data)
            opened++;
        if (!strcmp(op, "read") && data) {
            ck_assert_str_eq(ct_name_fd_type(rec->f[CT_IO_FD_TYPE]), "file");
            file_bytes += (uint64_t)I(rec, CT_IO_RESULT);
        }
    }
    ck_assert_uint_eq(opened, 1);
    ck_assert_uint_eq(file_bytes, 65536);
    th_trace_free(&t);
    /* worker 2: reads that block until the feeder's next batch */
    th_run_read_trace(&r, w2, &t);
    unsigned batches = 0, blocked = 0;
    for (size_t i = 0; i < t.n; i++) {
        const struct ct_record *rec = &t.recs[i];
        if (rec->kind != CT_REC_IO || strcmp(op_of(&t, rec), "read") != 0)
            continue;
        ck_assert_str_eq(ct_name_fd_type(rec->f[CT_IO_FD_TYPE]), "pipe");
        if (I(rec, CT_IO_RESULT) == 64) {
            batches++;
            blocked += dur(rec) >= 40000000u;
        }
    }
    ck_assert_uint_eq(batches, 4);
    ck_assert_msg(blocked >= 3, "%u of 4 reads blocked 40 ms or more", blocked);
    th_trace_free(&t);
    free(out);
}
END_TEST

static void add(Suite *s, const char *name, const TTest *test, double timeout)
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, timeout);
    tcase_add_test(tc, test);
    suite_add_tcase(s, tc);
}

int main(void)
{
    Suite *s = suite_create("io");
    add(s, "files", every_file_call_is_recorded_once_with_its_fields, 60);
    add(s, "ipc", pipes_sockets_and_waits_are_recorded_with_their_types, 60);
    add(s, "errno", failures_record_minus_errno_and_leave_errno_as_libc_set_it, 60);
    add(s, "min_ns", io_min_ns_skips_short_spans_and_counts_them_exactly, 60);
    add(s, "threads", threads_each_record_their_own_reads, 60);
    add(s, "big", heavy_writer_runs_correctly_and_the_trace_never_records_itself, 120);
    add(s, "ctor", io_in_constructors_before_main_works_and_is_recorded, 60);
    add(s, "loader", data_loader_waits_and_pipe_reads_show_the_delays, 60);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
