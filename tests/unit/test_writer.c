/* Suite "writer": recorder -> file -> reader round trips and lifecycle. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "src/ownfd.h"
#include "src/recorder_int.h"
#include "tests/unit/helpers.h"

static const struct ct_record *find_kind(const struct th_trace *t, unsigned kind, size_t nth)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->recs[i].kind == kind && nth-- == 0)
            return &t->recs[i];
    return NULL;
}

START_TEST(every_kind_round_trips_through_the_file)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    ck_assert_int_eq(th_start(path, 1 << 16, 50), 0);
    uint64_t api[CT_API_NFIELDS] = {0};
    api[CT_API_START] = 1000000000123ull;
    api[CT_API_END] = 1000000005123ull;
    api[CT_API_NAME] = ct_intern("cuLaunchKernel_ptsz");
    api[CT_API_CORR] = 77;
    api[CT_API_FAMILY] = CT_FAM_LAUNCH;
    api[CT_API_RESULT] = (uint64_t)-1;
    api[CT_API_DEVICE] = 1;
    api[CT_API_STREAM] = 13;
    api[CT_API_KERNEL] = ct_intern("gemm__20us");
    api[CT_API_GRID_X] = 65535;
    api[CT_API_BLOCK_X] = 1024;
    api[CT_API_SHMEM] = 49152;
    api[CT_API_FLAGS] = CT_APIF_PER_THREAD;
    ck_assert_int_eq(ct_emit(CT_REC_API, CT_RF_NS, api, CT_API_NFIELDS), 0);
    uint64_t nccl[CT_NCCL_NFIELDS] = {0};
    nccl[CT_NCCL_START] = 1000000006000ull;
    nccl[CT_NCCL_END] = 1000000007000ull;
    nccl[CT_NCCL_OP] = CT_NCCL_OP_ALLREDUCE;
    nccl[CT_NCCL_COMM] = 0xfedcba9876543210ull;
    nccl[CT_NCCL_SEQ] = 5;
    nccl[CT_NCCL_ROOT] = (uint64_t)-1;
    nccl[CT_NCCL_GPU_START] = 1000000006500ull;
    nccl[CT_NCCL_GPU_END] = 1000000009000ull;
    ck_assert_int_eq(ct_emit(CT_REC_NCCL, CT_RF_NS, nccl, CT_NCCL_NFIELDS), 0);
    uint64_t io[CT_IO_NFIELDS] = {1000000010000ull,
                                  1000000020000ull,
                                  ct_intern("pread64"),
                                  7,
                                  CT_FD_FILE,
                                  ct_intern("/data/shard-0001.bin"),
                                  4096,
                                  (uint64_t)-EIO,
                                  1ull << 40};
    ck_assert_int_eq(ct_emit(CT_REC_IO, CT_RF_NS, io, CT_IO_NFIELDS), 0);
    /* a record on the raw clock: the writer converts it to monotonic ns */
    uint64_t before = ct_clock_mono_ns();
    uint64_t mark[CT_MARK_NFIELDS] = {ct_clock_now(), ct_intern("app"), ct_intern("step")};
    ck_assert_int_eq(ct_emit(CT_REC_NVTX_MARK, 0, mark, CT_MARK_NFIELDS), 0);
    uint64_t after = ct_clock_mono_ns();
    ct_emit_error("something of ours failed", -ENOSPC);
    ck_assert_int_eq(ct_recorder_stop(5000), 0);

    struct th_trace t;
    th_trace_read_file(&t, path);
    ck_assert_int_eq(t.open_rc, 0);
    ck_assert(t.rd.has_footer);
    ck_assert(!t.rd.truncated);
    ck_assert_uint_eq(t.rd.hdr.version, CT_FORMAT_VERSION);
    ck_assert_uint_eq(t.rd.hdr.pid, (uint32_t)getpid());
    /* metadata comes first, in the first chunk */
    ck_assert_uint_eq(t.recs[0].kind, CT_REC_META);
    ck_assert_str_eq(ct_reader_string(&t.rd, t.recs[0].f[CT_META_KEY]), "host");
    ck_assert_str_eq(ct_reader_string(&t.rd, t.recs[1].f[CT_META_VALUE]), "3");
    const struct ct_record *r = find_kind(&t, CT_REC_API, 0);
    ck_assert_ptr_nonnull(r);
    for (int i = 0; i < CT_API_NFIELDS; i++)
        if (ct_kind_table[CT_REC_API].codec[i] != CT_CODEC_STR)
            ck_assert_uint_eq(r->f[i], api[i]);
    ck_assert_str_eq(ct_reader_string(&t.rd, r->f[CT_API_NAME]), "cuLaunchKernel_ptsz");
    ck_assert_str_eq(ct_reader_string(&t.rd, r->f[CT_API_KERNEL]), "gemm__20us");
    r = find_kind(&t, CT_REC_NCCL, 0);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(memcmp(r->f, nccl, sizeof(nccl)), 0);
    r = find_kind(&t, CT_REC_IO, 0);
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(ct_reader_string(&t.rd, r->f[CT_IO_PATH]), "/data/shard-0001.bin");
    ck_assert_int_eq((int64_t)r->f[CT_IO_RESULT], -EIO);
    ck_assert_uint_eq(r->f[CT_IO_OFFSET], 1ull << 40);
    r = find_kind(&t, CT_REC_NVTX_MARK, 0);
    ck_assert_ptr_nonnull(r);
    /* conversion error well under a microsecond plus the bracket */
    ck_assert_uint_ge(r->f[CT_MARK_TIME] + 1000, before);
    ck_assert_uint_le(r->f[CT_MARK_TIME], after + 1000);
    r = find_kind(&t, CT_REC_ERROR, 0);
    ck_assert_str_eq(ct_reader_string(&t.rd, r->f[CT_ERROR_WHAT]), "something of ours failed");
    /* clock pairs at start and at the end */
    ck_assert_uint_ge(th_count_kind(&t, CT_REC_CLOCK), 2);
    th_trace_free(&t);
}
END_TEST

START_TEST(file_is_private_and_never_clobbered)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    ck_assert_int_eq(th_start(path, 1 << 16, 50), 0);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0600);
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
    /* a second start on the same name fails with EEXIST instead of truncating */
    ck_assert_int_eq(th_start(path, 1 << 16, 50), -EEXIST);
    ck_assert(!ct_recorder_running());
    /* a symlink at the name is refused too */
    char link[512];
    th_path(link, sizeof(link), th_tmpdir(), "l.cutrace");
    ck_assert_int_eq(symlink("/tmp/elsewhere", link), 0);
    ck_assert_int_lt(th_start(link, 1 << 16, 50), 0);
}
END_TEST

/* Marks whether or not the recorder takes them (some tests emit while it
 * cannot). */
static void emit_marks(int n)
{
    (void)th_emit_marks(n);
}

START_TEST(partial_chunks_reach_the_file_within_the_flush_interval)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    ck_assert_int_eq(th_start(path, 1 << 20, 20), 0);
    emit_marks(10);
    if (th_emulated_skip("a chunk on disk within 10 flush intervals (real time)")) {
        ct_recorder_stop(5000);
        return;
    }
    /* 20 ms flush interval; wait 10x that so a busy CI machine passes too */
    struct timespec ts = {0, 200 * 1000000L};
    nanosleep(&ts, NULL);
    /* read the file while the recorder is still running, as after a SIGKILL */
    struct th_trace t;
    th_trace_read_file(&t, path);
    ck_assert_int_eq(t.open_rc, 0);
    ck_assert(t.rd.truncated);
    ck_assert(!t.rd.has_footer);
    ck_assert_uint_eq(t.rd.damage_total, 0);
    ck_assert_uint_eq(th_count_kind(&t, CT_REC_NVTX_MARK), 10);
    th_trace_free(&t);
    ct_recorder_stop(5000);
}
END_TEST

static void *short_lived(void *arg)
{
    (void)arg;
    emit_marks(1000);
    return NULL;
}

START_TEST(exiting_threads_hand_their_records_over)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    ck_assert_int_eq(th_start(path, 1 << 16, 1000), 0);
    for (int round = 0; round < 20; round++) {
        pthread_t th;
        pthread_create(&th, NULL, short_lived, NULL);
        pthread_join(th, NULL);
    }
    ck_assert_int_eq(ct_recorder_flush(5000), 0);
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
    struct th_trace t;
    th_trace_read_file(&t, path);
    ck_assert_uint_eq(th_count_kind(&t, CT_REC_NVTX_MARK), 20 * 1000);
    ck_assert_uint_eq(th_count_kind(&t, CT_REC_DROP), 0);
    th_trace_free(&t);
}
END_TEST

START_TEST(flush_and_stop_are_safe_to_repeat)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    ck_assert_int_eq(ct_recorder_flush(10), -ENODEV);
    ck_assert_int_eq(th_start(path, 1 << 16, 100), 0);
    ck_assert_int_eq(th_start(path, 1 << 16, 100), -EALREADY);
    emit_marks(3);
    ck_assert_int_eq(ct_recorder_flush(5000), 0);
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
    /* after stop, records are refused quietly */
    uint64_t mark[CT_MARK_NFIELDS] = {0};
    ct_emit(CT_REC_NVTX_MARK, 0, mark, CT_MARK_NFIELDS);
    struct th_trace t;
    th_trace_read_file(&t, path);
    ck_assert(t.rd.has_footer);
    ck_assert_uint_eq(th_count_kind(&t, CT_REC_NVTX_MARK), 3);
    th_trace_free(&t);
}
END_TEST

/*
 * Makes every later write of the trace fail, as a disk that fills mid-run
 * would; returns the negative errno the writer will see. With use_full,
 * /dev/full (every write fails with ENOSPC) is swapped in under the
 * writer's descriptor and made the file the descriptor table holds for it
 * (else the writer's identity check would see a descriptor taken over, and
 * reopen the trace). Without it, or where /dev/full is absent (containers,
 * some sandboxes), the file size limit is set to the trace's size now, so
 * every write past it fails with EFBIG (SIGXFSZ ignored, as a job that sets
 * such a limit does); restore_writes() puts the limit back, before any
 * assertion, since Check writes its own messages to a file.
 */
static struct rlimit g_fsize;
static int g_fsize_set;

static int make_writes_fail(const char *path, int use_full)
{
    int full = use_full ? open("/dev/full", O_WRONLY) : -1;
    if (full >= 0) {
        struct stat fst;
        ck_assert_int_eq(fstat(full, &fst), 0);
        struct ct_own_slot *own = &ct_own_slots[ct_rec.file_slot];
        atomic_store(&own->dev, (uint64_t)fst.st_dev);
        atomic_store(&own->ino, (uint64_t)fst.st_ino);
        ck_assert_int_ge(dup2(full, atomic_load(&own->fd)), 0);
        close(full);
        return -ENOSPC;
    }
    ck_assert_int_eq(ct_recorder_flush(5000), 0); /* the header and metadata are in the file */
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &g_fsize), 0);
    struct rlimit lim = g_fsize;
    lim.rlim_cur = (rlim_t)st.st_size;
    signal(SIGXFSZ, SIG_IGN);
    /* no passing assertion from here to restore_writes(): Check writes
     * one line to its own file for each, past the limit once that file is
     * longer than the trace */
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0)
        ck_abort_msg("setrlimit RLIMIT_FSIZE failed");
    g_fsize_set = 1;
    return -EFBIG;
}

static void restore_writes(void)
{
    if (g_fsize_set)
        setrlimit(RLIMIT_FSIZE, &g_fsize);
    g_fsize_set = 0;
}

/* Every write failing: the producer never learns or waits, the writer
 * reports the error once and counts what it could not write as dropped. */
static void write_failure_is_reported(int use_full)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "t.cutrace");
    ck_assert_int_eq(th_start(path, 1 << 16, 10), 0);
    int want = make_writes_fail(path, use_full);
    int emitted = th_emit_marks(100);
    int flushed = ct_recorder_flush(5000);
    emitted += th_emit_marks(100); /* still accepted */
    struct ct_recorder_stats st;
    ct_recorder_stats(&st);
    int stopped = ct_recorder_stop(5000);
    restore_writes();
    ck_assert_int_eq(emitted, 200);
    ck_assert_int_eq(flushed, 0);
    ck_assert_int_eq(st.write_error, want);
    ck_assert_int_eq(stopped, want);
    ct_recorder_stats(&st);
    ck_assert_uint_ge(st.dropped, 100);
}

START_TEST(write_failure_is_reported_not_fatal)
{
    write_failure_is_reported(1); /* /dev/full, or the size limit where it is absent */
}
END_TEST

START_TEST(write_failure_at_the_file_size_limit_is_reported_not_fatal)
{
    write_failure_is_reported(0); /* the fallback, on every machine */
}
END_TEST

/* Starts a recorder bounded to max_kb KiB with the given policy. */
static void start_bounded(const char *path, unsigned max_kb, int stop)
{
    struct ct_recorder_config cfg = {
        .path = path,
        .ring_bytes = 1 << 20,
        .zstd_level = 1,
        .flush_ms = 10,
        .pid = (uint32_t)getpid(),
        .max_strings = 4096,
        .string_bytes = 1 << 20,
        .max_bytes = (uint64_t)max_kb << 10,
        .max_stop = stop,
    };
    struct ct_meta_kv meta[] = {{CT_SCOPE_PROCESS, 0, "host", "testhost"}};
    ck_assert_int_eq(ct_recorder_start(&cfg, meta, 1), 0);
}

/* Emits n API records that compress badly (random fields), in batches the
 * writer drains, each named with a string interned for the batch. Returns
 * the sequence number of the last record (its correlation id). */
static uint64_t emit_noise(unsigned batches, unsigned per_batch)
{
    static uint64_t x = 88172645463325252ull, seq;
    for (unsigned b = 0; b < batches; b++) {
        char name[32];
        snprintf(name, sizeof(name), "batch%u", b);
        uint32_t id = ct_intern(name);
        for (unsigned i = 0; i < per_batch; i++) {
            uint64_t f[CT_API_NFIELDS];
            for (unsigned k = 0; k < CT_API_NFIELDS; k++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                f[k] = x;
            }
            f[CT_API_START] = 1000000 + ++seq * 1000;
            f[CT_API_END] = f[CT_API_START] + 500;
            f[CT_API_NAME] = id;
            f[CT_API_KERNEL] = id;
            f[CT_API_CORR] = seq;
            while (ct_emit(CT_REC_API, CT_RF_NS, f, CT_API_NFIELDS) != 0)
                usleep(1000);
        }
        ck_assert_int_eq(ct_recorder_flush(5000), 0);
    }
    return seq;
}

static uint64_t allocated_bytes(const char *path)
{
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    return (uint64_t)st.st_blocks * 512;
}

START_TEST(size_bound_drops_the_oldest_frames)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "bounded.cutrace");
    start_bounded(path, 512, 0);
    uint64_t last = emit_noise(40, 2000); /* ~12 MB of random fields */
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
    /* the file keeps its length but holds at most the bound (plus the
     * blocks of the dropped frames' headers and the footer) */
    uint64_t alloc = allocated_bytes(path);
    ck_assert_msg(alloc <= (512u << 10) + (64u << 10), "%llu bytes on disk",
                  (unsigned long long)alloc);
    struct th_trace t;
    th_trace_read_file(&t, path);
    ck_assert(t.rd.has_footer);
    ck_assert_uint_eq(t.rd.ndamage, 0); /* dropped frames are skipped, not damage */
    ck_assert_uint_gt(t.rd.dropped_bytes, 4u << 20);
    /* what is left is the newest records, with their names defined again */
    uint64_t newest = 0, kept = 0, errors = 0;
    for (size_t i = 0; i < t.n; i++) {
        const struct ct_record *r = &t.recs[i];
        if (r->kind == CT_REC_ERROR &&
            strstr(ct_reader_string(&t.rd, r->f[CT_ERROR_WHAT]), "CUTRACE_MAX_MB: dropped"))
            errors++;
        if (r->kind != CT_REC_API)
            continue;
        kept++;
        newest = r->f[CT_API_CORR] > newest ? r->f[CT_API_CORR] : newest;
        const char *name = ct_reader_string(&t.rd, r->f[CT_API_NAME]);
        ck_assert_msg(name && strncmp(name, "batch", 5) == 0, "record %llu named '%s'",
                      (unsigned long long)r->f[CT_API_CORR], name ? name : "(null)");
    }
    ck_assert_uint_eq(newest, last);
    ck_assert_uint_gt(kept, 1000);
    ck_assert_uint_lt(kept, 40u * 2000);
    ck_assert_uint_ge(errors, 1);
    th_trace_free(&t);
}
END_TEST

START_TEST(size_bound_can_stop_recording_instead)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "stopped.cutrace");
    start_bounded(path, 512, 1);
    emit_noise(40, 2000);
    ck_assert_int_eq(ct_recorder_stop(5000), 0);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_le(st.st_size, (512 << 10) + 4096); /* + the note and the footer */
    struct th_trace t;
    th_trace_read_file(&t, path);
    ck_assert(t.rd.has_footer);
    ck_assert_uint_eq(t.rd.dropped_bytes, 0);
    ck_assert_uint_gt(t.rd.footer.dropped, 40000);
    int said = 0;
    for (size_t i = 0; i < t.n; i++)
        said += t.recs[i].kind == CT_REC_ERROR &&
                strstr(ct_reader_string(&t.rd, t.recs[i].f[CT_ERROR_WHAT]), "recording stopped");
    ck_assert_int_eq(said, 1);
    th_trace_free(&t);
}
END_TEST

START_TEST(write_failure_cuts_back_to_the_last_whole_frame)
{
    char path[512];
    th_path(path, sizeof(path), th_tmpdir(), "cut.cutrace");
    ck_assert_int_eq(th_start(path, 1 << 20, 10), 0);
    emit_noise(2, 1000);
    /* the file may grow by at most 100 more KiB: the next frames fail
     * part way with EFBIG, as on a disk that fills */
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = (rlim_t)st.st_size + (100 << 10);
    signal(SIGXFSZ, SIG_IGN);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    emit_noise(10, 2000);
    setrlimit(RLIMIT_FSIZE, &old);
    ck_assert_int_eq(ct_recorder_stop(5000), -EFBIG);
    struct th_trace t;
    th_trace_read_file(&t, path);
    /* no torn frame at the end: a clean cut after the last whole frame */
    ck_assert_uint_eq(t.rd.ndamage, 0);
    ck_assert(t.rd.truncated);
    ck_assert_uint_ge(th_count_kind(&t, CT_REC_API), 2000);
    th_trace_free(&t);
}
END_TEST

/* The hang rule alone (ct_flight_saw / ct_flight_hang_check): an op is
 * hung once it has waited CUTRACE_HANG_S since its issue with nothing
 * completing; a rank that idled and then issues an op is not hung. */
static void saw_issue(uint64_t t)
{
    uint64_t f[CT_NCCL_NFIELDS] = {0};
    f[CT_NCCL_START] = t;
    f[CT_NCCL_END] = t + 1000;
    ct_flight_saw(CT_REC_NCCL, f);
}

static void saw_completion(uint64_t t)
{
    uint64_t f[CT_GPU_NFIELDS] = {0};
    f[CT_GPU_START] = t - 1000;
    f[CT_GPU_END] = t;
    f[CT_GPU_TYPE] = CT_GPU_NCCL;
    ct_flight_saw(CT_REC_GPU, f);
}

START_TEST(hang_counts_from_the_waiting_ops_issue)
{
    const uint64_t s = 1000000000ull;
    struct ct_recorder_config cfg = {.path = "x.cutrace", .hang_ns = 1 * s};
    ct_flight_init(&cfg);
    char what[256];
    saw_issue(10 * s);
    ck_assert_int_eq(ct_flight_hang_check(20 * s, what, sizeof(what)), 0); /* nothing seen yet */
    saw_completion(10 * s + 5);
    /* idle for 3 s, then an op: not hung while it runs, even 3 s after the
     * last completion */
    saw_issue(13 * s);
    ck_assert_int_eq(ct_flight_hang_check(13 * s + 10000000, what, sizeof(what)), 0);
    ck_assert_int_eq(ct_flight_hang_check(13 * s + s - 1, what, sizeof(what)), 0);
    /* a second op issued later does not move the wait's start */
    saw_issue(13 * s + s / 2);
    ck_assert_int_eq(ct_flight_hang_check(14 * s + 1, what, sizeof(what)), 1);
    ck_assert_ptr_nonnull(strstr(what, "no NCCL op completed for 4.0 s"));
    ck_assert_int_eq(ct_flight_hang_check(15 * s, what, sizeof(what)), 0); /* said once */
    /* completions re-arm it; an op issued before the completion is done */
    saw_completion(16 * s);
    ck_assert_int_eq(ct_flight_hang_check(30 * s, what, sizeof(what)), 0);
    saw_issue(31 * s);
    ck_assert_int_eq(ct_flight_hang_check(32 * s + 1, what, sizeof(what)), 1);
    ct_flight_free();
    cfg.hang_ns = 0;
    ct_flight_init(&cfg);
    ct_flight_free();
}
END_TEST

/* Durations measured in TSC ticks need a rate measured over a real
 * baseline (shim/nccl_profiler.c's proxy steps): until the conversion has
 * one of 10 ms or more, none is published, and ticks stay ticks. */
START_TEST(a_tick_rate_is_published_for_durations_once_measured)
{
    int was = ct_clock_tsc;
    ct_clock_tsc = 1;
    struct ct_clock_pair p0 = {.ticks = 1000000, .mono_ns = 5000000, .real_ns = 9000000};
    struct ct_clock_conv c;
    ct_clock_conv_init(&c, &p0, NULL);
    ct_clock_publish(&c); /* nominal 1 tick/ns */
    ck_assert(ct_clock_pub_rate() == 0);
    /* 2.5 ticks a ns over 4 ms: measured, but too short for durations */
    struct ct_clock_pair p1 = {.ticks = 1000000 + 10000000, .mono_ns = 5000000 + 4000000};
    ct_clock_conv_update(&c, &p1);
    ct_clock_publish(&c);
    ck_assert(ct_clock_pub_rate() == 0);
    struct ct_clock_pair p2 = {.ticks = 1000000 + 50000000, .mono_ns = 5000000 + 20000000};
    ct_clock_conv_update(&c, &p2);
    ct_clock_publish(&c);
    ck_assert_double_eq_tol(ct_clock_pub_rate(), 0.4, 1e-12);
    /* a tick count on the published conversion: 2.5 M ticks after p2 */
    ck_assert_uint_eq(ct_clock_ticks_ns(p2.ticks + 2500000), p2.mono_ns + 1000000);
    ct_clock_tsc = was;
}
END_TEST

/* The record clock converts a tick the same whenever it is converted: a
 * range's start, written at its pop 12 ms on, against the calls converted
 * while it was open (export-labelled: a step's range began 0.7 us after the
 * call that followed its push, the conversion re-anchored between them).
 * The host's monotonic clock drifts against the TSC (a 60 s wave of 2 us)
 * and every pair has up to 300 ns of jitter; 300 s of 5 ms writer passes,
 * beyond the 102 s of knots kept whole. Within those the second conversion
 * is exact; older ones move by the coarse knots' chord: the slopes' slew,
 * under 2e-6 of a 3.2 s spacing. The conversion stays within 3 us of the
 * host clock (jitter, and the drift over the 200 ms the slew takes it up
 * in) and never goes back. */
static uint64_t drift_mono(uint64_t ticks)
{
    double s = (double)ticks * 0.4 * 1e-9;
    return (uint64_t)((double)ticks * 0.4 + 2000.0 * sin(2 * 3.14159265358979 * s / 60.0)) +
           1000000000u;
}

START_TEST(a_tick_converts_the_same_whenever_it_is_converted)
{
    static struct ct_clock_hist hist;
    enum { PASSES = 60000, PER = 4 };
    static uint64_t tk[PASSES * PER], ns[PASSES * PER];
    int was = ct_clock_tsc;
    ct_clock_tsc = 1;
    unsigned seed = 7;
    uint64_t tick_per_pass = 12500000; /* 5 ms at 0.4 ns a tick */
    struct ct_clock_pair p = {.ticks = 1000, .mono_ns = drift_mono(1000)};
    struct ct_clock_conv c;
    ct_clock_conv_init(&c, &p, &hist);
    size_t n = 0;
    double worst = 0;
    /* one assertion per check, not per value: Check records every
     * assertion it passes (a write each) */
    for (int i = 1; i <= PASSES; i++) {
        p.ticks = 1000 + (uint64_t)i * tick_per_pass;
        p.mono_ns = drift_mono(p.ticks) + (uint64_t)(rand_r(&seed) % 600) - 300;
        ct_clock_conv_update(&c, &p);
        for (int k = 0; k < PER; k++) {
            /* what the pass drains: records since the previous pass, and a
             * range's start 12 ms back */
            uint64_t t = p.ticks - (uint64_t)(rand_r(&seed) % tick_per_pass);
            if (k == 0 && i > 3)
                t = p.ticks - 30000000;
            tk[n] = t;
            ns[n] = ct_clock_conv_ns(&c, t);
            double err = (double)(int64_t)(ns[n] - drift_mono(t));
            if (i > 200 && fabs(err) > worst) /* the first second: the rate's estimate settles */
                worst = fabs(err);
            n++;
        }
    }
    ck_assert_msg(worst < 3000, "%.0f ns off the host clock", worst);
    uint64_t fine_from = c.hist->fine[(c.hist->nfine - CT_CLOCK_FINE) % CT_CLOCK_FINE].ticks;
    size_t exact = 0, moved = 0;
    int64_t old_worst = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t d = (int64_t)(ct_clock_conv_ns(&c, tk[i]) - ns[i]);
        if (tk[i] >= fine_from) {
            exact++;
            moved += d != 0;
        } else if (llabs(d) > old_worst) {
            old_worst = llabs(d);
        }
    }
    ck_assert_msg(moved == 0, "%zu of %zu recent ticks converted differently", moved, exact);
    ck_assert_msg(old_worst < 2000, "an old tick moved by %lld ns", (long long)old_worst);
    ck_assert_uint_gt(exact, (size_t)PER * CT_CLOCK_FINE * 9); /* ~100 s of them */
    /* increasing: across every knot, and a microsecond apart between */
    uint64_t prev = 0, back = 0;
    for (uint64_t t = 1000 + tick_per_pass; t < p.ticks; t += 2500) {
        uint64_t v = ct_clock_conv_ns(&c, t);
        if (v < prev && !back)
            back = t;
        prev = v;
        if ((t - 1000) % tick_per_pass == tick_per_pass - 2500 && !back &&
            ct_clock_conv_ns(&c, t + 2499) > ct_clock_conv_ns(&c, t + 2500))
            back = t + 2500; /* the last tick of a segment and the first of the next */
        if (t < p.ticks - 2 * tick_per_pass * CT_CLOCK_FINE)
            t += tick_per_pass - 2500; /* a knot's neighbours where coarse knots hold it */
    }
    ck_assert_msg(!back, "the conversion goes back at tick %llu", (unsigned long long)back);
    ct_clock_tsc = was;
}
END_TEST

Suite *writer_suite(void)
{
    Suite *s = suite_create("writer");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, every_kind_round_trips_through_the_file);
    tcase_add_test(tc, a_tick_rate_is_published_for_durations_once_measured);
    tcase_add_test(tc, a_tick_converts_the_same_whenever_it_is_converted);
    tcase_add_test(tc, file_is_private_and_never_clobbered);
    tcase_add_test(tc, partial_chunks_reach_the_file_within_the_flush_interval);
    tcase_add_test(tc, exiting_threads_hand_their_records_over);
    tcase_add_test(tc, flush_and_stop_are_safe_to_repeat);
    tcase_add_test(tc, size_bound_drops_the_oldest_frames);
    tcase_add_test(tc, size_bound_can_stop_recording_instead);
    tcase_add_test(tc, write_failure_cuts_back_to_the_last_whole_frame);
    tcase_add_test(tc, hang_counts_from_the_waiting_ops_issue);
    tcase_add_test(tc, write_failure_is_reported_not_fatal);
    tcase_add_test(tc, write_failure_at_the_file_size_limit_is_reported_not_fatal);
    suite_add_tcase(s, tc);
    return s;
}
