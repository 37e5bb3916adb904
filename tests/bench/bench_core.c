/*
 * Core benchmarks (scripts/bench runs them; never a timed unit test):
 *
 *   record   cost of appending one API-span record (two clock reads and the
 *            append) against a baseline of the two clock reads alone,
 *            measured in the same run, for the clock this process chose;
 *            also the cost of one clock read, CLOCK_MONOTONIC and TSC.
 *   writer   sustained records/s of one writer thread with one producer that
 *            never lets its ring overflow (so nothing is dropped).
 *   size     bytes per record on disk for ct_synth's training-loop mix is
 *            measured by scripts/bench directly (ct_synth + stat).
 *
 * usage: bench_core record|writer [--clock tsc|monotonic] [--dir DIR]
 *        bench_core loop-record|loop-clocks N   (for instruction counts)
 * Output: "name value unit" lines, easy to grep.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "src/recorder_int.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static volatile uint64_t g_sink;

static int start(const char *dir, enum ct_clock_pref clock, size_t ring)
{
    static char path[4096];
    snprintf(path, sizeof(path), "%s/bench-%d.cutrace", dir, (int)getpid());
    unlink(path);
    struct ct_recorder_config cfg = {.path = path,
                                     .ring_bytes = ring,
                                     .zstd_level = 3,
                                     .flush_ms = 100,
                                     .pid = (uint32_t)getpid(),
                                     .clock = clock};
    int rc = ct_recorder_start(&cfg, NULL, 0);
    if (rc) {
        fprintf(stderr, "bench: cannot record to %s: %s\n", path, strerror(-rc));
        return rc;
    }
    return 0;
}

static void finish(const char *dir)
{
    ct_recorder_stop(60000);
    char path[4096];
    snprintf(path, sizeof(path), "%s/bench-%d.cutrace", dir, (int)getpid());
    unlink(path);
}

/* One API span as a wrapper records it: two clock reads and the append. */
static inline void record_one(uint64_t i, uint32_t name)
{
    uint64_t t0 = ct_clock_now();
    uint64_t t1 = ct_clock_now();
    struct ct_ring *r = ct_thread_ring();
    uint64_t *w = r ? ct_ring_begin(r, CT_REC_API, CT_API_NFIELDS, 0) : NULL;
    if (w) {
        w[CT_API_START] = t0;
        w[CT_API_END] = t1;
        w[CT_API_NAME] = name;
        w[CT_API_CORR] = i;
        w[CT_API_FAMILY] = CT_FAM_LAUNCH;
        w[CT_API_RESULT] = 0;
        w[CT_API_DEVICE] = 0;
        w[CT_API_STREAM] = 7;
        w[CT_API_KERNEL] = name;
        w[CT_API_GRID_X] = 108;
        w[CT_API_GRID_Y] = 1;
        w[CT_API_GRID_Z] = 1;
        w[CT_API_BLOCK_X] = 256;
        w[CT_API_BLOCK_Y] = 1;
        w[CT_API_BLOCK_Z] = 1;
        w[CT_API_SHMEM] = 0;
        w[CT_API_BYTES] = 0;
        w[CT_API_COPY_KIND] = 0;
        w[CT_API_FLAGS] = 0;
        ct_ring_commit(r);
    }
}

static int bench_record(const char *dir, enum ct_clock_pref clock)
{
    /* The default 1 MiB ring, filled to about 2/3 per batch and drained
     * between batches (untimed), as the writer keeps it in a real job: no
     * drops, no waiting, and the ring as warm as it is in practice. */
    const uint64_t batch = 4000;
    const int batches = 1000;
    if (start(dir, clock, 1u << 20))
        return 1;
    uint32_t name = ct_intern("cuLaunchKernel");
    double t_rec = 0, t_base = 0, t_mono = 0, t_tsc = 0;
    for (int b = 0; b < batches; b++) {
        /* Alternate the measured loops so drift affects both alike. */
        double t0 = now_s();
        for (uint64_t i = 0; i < batch; i++) {
            uint64_t a = ct_clock_now();
            uint64_t c = ct_clock_now();
            g_sink += a ^ c;
        }
        double t1 = now_s();
        for (uint64_t i = 0; i < batch; i++)
            record_one(i, name);
        double t2 = now_s();
        for (uint64_t i = 0; i < batch; i++)
            g_sink += ct_clock_mono_ns();
        double t3 = now_s();
        for (uint64_t i = 0; i < batch; i++)
            g_sink += ct_arch_ticks();
        double t4 = now_s();
        t_base += t1 - t0;
        t_rec += t2 - t1;
        t_mono += t3 - t2;
        t_tsc += t4 - t3;
        ct_recorder_flush(60000); /* untimed: drain so the ring never fills */
    }
    struct ct_recorder_stats st;
    ct_recorder_stats(&st);
    double n = (double)batch * batches;
    printf("clock %s\n", ct_clock_tsc ? "tsc" : "monotonic");
    printf("clock_read_monotonic_ns %.2f\n", t_mono / n * 1e9);
    printf("clock_read_tsc_ns %.2f\n", t_tsc / n * 1e9);
    printf("two_clock_reads_ns %.2f\n", t_base / n * 1e9);
    printf("record_api_span_ns %.2f\n", t_rec / n * 1e9);
    printf("record_added_over_clock_reads_pct %.1f\n", (t_rec / t_base - 1.0) * 100.0);
    printf("record_dropped %llu\n", (unsigned long long)st.dropped);
    finish(dir);
    return 0;
}

static int bench_writer(const char *dir)
{
    const uint64_t total = 20000000;
    if (start(dir, CT_CLOCK_PREF_AUTO, 16u << 20))
        return 1;
    uint32_t name = ct_intern("cuLaunchKernel");
    record_one(0, name); /* create the ring */
    struct ct_ring *r = ct_thread_ring();
    const uint64_t rec = 8 + 8 * CT_API_NFIELDS;
    double t0 = now_s();
    for (uint64_t i = 1; i < total; i++) {
        /* Producer-side pacing for the benchmark only: wait for room, so the
         * figure is the writer's sustained rate without drops. */
        while (atomic_load_explicit(&r->head, memory_order_relaxed) + 2 * rec -
                   atomic_load_explicit(&r->tail, memory_order_acquire) >
               r->size)
            ;
        record_one(i, name);
    }
    ct_recorder_stop(120000);
    double t1 = now_s();
    struct ct_recorder_stats st;
    ct_recorder_stats(&st);
    printf("writer_records %llu\n", (unsigned long long)st.records);
    printf("writer_dropped %llu\n", (unsigned long long)st.dropped);
    printf("writer_seconds %.3f\n", t1 - t0);
    printf("writer_records_per_s %.0f\n", (double)total / (t1 - t0));
    printf("writer_bytes_per_record %.3f\n", (double)st.bytes_written / (double)st.records);
    finish(dir);
    return 0;
}

/* For instruction counting under callgrind: N records, or N clock pairs. */
static int bench_loop(const char *dir, int record, long n)
{
    if (start(dir, CT_CLOCK_PREF_TSC, 64u << 20))
        return 1;
    uint32_t name = ct_intern("cuLaunchKernel");
    for (long i = 0; i < n; i++) {
        if (record) {
            record_one((uint64_t)i, name);
        } else {
            uint64_t a = ct_clock_now();
            uint64_t c = ct_clock_now();
            g_sink += a ^ c;
        }
    }
    finish(dir);
    return 0;
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    const char *dir = "/tmp";
    enum ct_clock_pref clock = CT_CLOCK_PREF_AUTO;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--clock"))
            clock = !strcmp(argv[i + 1], "tsc") ? CT_CLOCK_PREF_TSC : CT_CLOCK_PREF_MONOTONIC;
        else if (!strcmp(argv[i], "--dir"))
            dir = argv[i + 1];
    }
    if (!strcmp(what, "record"))
        return bench_record(dir, clock);
    if (!strcmp(what, "writer"))
        return bench_writer(dir);
    if (!strcmp(what, "loop-record") || !strcmp(what, "loop-clocks"))
        return bench_loop(dir, !strcmp(what, "loop-record"), argc > 2 ? atol(argv[2]) : 100000);
    fprintf(stderr, "usage: bench_core record|writer [--clock tsc|monotonic] [--dir DIR]\n");
    return 2;
}
