/*
 * Suite "shim", the recorded launch's fast path (shim/cuda_launch.c): with
 * GPU timing off, w_mixlaunch's launches from three threads, over three
 * kernels, own streams created as it runs, the legacy and the per-thread
 * default streams, each launch's arguments saying what it is. Every
 * record must carry its own launch's kernel, stream, grid and shared
 * memory, whichever way it was recorded (the fast path; a first sight of
 * a stream or kernel; a ring lap's end, where the general begin pads).
 * In a ring far larger than the run nothing is dropped; in the smallest
 * ring (64 KiB, a few hundred launches a lap) every launch is present or
 * counted as dropped, and the trace has no damage.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/shim/shim_run.h"

#define N_PER_THREAD 6000
#define THREADS      3
#define MAX_B        67

struct mix_run {
    struct th_trace t;
    /* stream id by (thread, block y) from the program's STREAM lines */
    unsigned long long sid[THREADS][MAX_B];
};

/* One run; version/dir: a simulated older driver (NULL: the current). */
static void mix_run_at(struct mix_run *m, const char *buffer_kb, const char *version,
                       const char *dir)
{
    char exe[512], n[16], th[16], buf[64];
    snprintf(exe, sizeof(exe), "%s/w_mixlaunch", th_env("CT_WORKLOADS"));
    snprintf(n, sizeof(n), "%d", N_PER_THREAD);
    snprintf(th, sizeof(th), "%d", THREADS);
    snprintf(buf, sizeof(buf), "CUTRACE_BUFFER_KB=%s", buffer_kb);
    const char *argv[] = {exe, n, th, NULL};
    char lib[1024], ver[64];
    snprintf(lib, sizeof(lib), "LD_LIBRARY_PATH=%s:%s", dir ? dir : "", th_env("CT_FAKEGPU_DIR"));
    snprintf(ver, sizeof(ver), "FAKEGPU_DRIVER_VERSION=%s", version ? version : "13000");
    const char *env[] = {"CUTRACE_GPU_TIMING=off", buf, lib, ver, NULL};
    struct th_run r;
    run(&r, th_env("CT_SHIM"), env, argv);
    char *out = th_slurp(r.out), *err = th_slurp(r.err);
    ck_assert_msg(r.status == 0, "driver %s: status %d: %s", version ? version : "13000", r.status,
                  err);
    memset(m, 0, sizeof(*m));
    for (char *p = strstr(out, "STREAM "); p; p = strstr(p + 1, "STREAM ")) {
        unsigned t, b;
        unsigned long long id;
        ck_assert(sscanf(p, "STREAM %u %u %llu", &t, &b, &id) == 3);
        ck_assert(t < THREADS && b < MAX_B);
        m->sid[t][b] = id;
    }
    ck_assert_ptr_nonnull(strstr(out, "launched 18000"));
    th_run_read_trace(&r, 0, &m->t);
    free(out);
    free(err);
}

static void mix_run(struct mix_run *m, const char *buffer_kb)
{
    mix_run_at(m, buffer_kb, NULL, NULL);
}

/* Checks every launch record on its own; returns how many there were. */
static size_t check_launches(const struct mix_run *m)
{
    const struct th_trace *t = &m->t;
    ck_assert_msg(t->rd.ndamage == 0, "damaged trace");
    size_t launches = 0;
    uint64_t last_gx[THREADS] = {0}, last_corr[THREADS] = {0};
    uint32_t tid_of[THREADS] = {0};
    for (size_t i = 0; i < t->n; i++) {
        const struct ct_record *rec = &t->recs[i];
        if (rec->kind != CT_REC_API)
            continue;
        const uint64_t *f = rec->f;
        const char *name = S(t, f[CT_API_NAME]);
        if (strncmp(name, "cuLaunchKernel", 14) != 0)
            continue;
        launches++;
        unsigned thread = (unsigned)f[CT_API_GRID_Y] - 1, k = (unsigned)f[CT_API_GRID_Z] - 1;
        unsigned b = (unsigned)f[CT_API_BLOCK_Y];
        ck_assert_uint_lt(thread, THREADS);
        ck_assert_uint_lt(k, 3);
        ck_assert_uint_lt(b, MAX_B);
        /* one OS thread per program thread, launches in program order */
        if (!tid_of[thread])
            tid_of[thread] = rec->tid;
        ck_assert_uint_eq(rec->tid, tid_of[thread]);
        ck_assert_uint_gt(f[CT_API_GRID_X], last_gx[thread]);
        ck_assert_uint_gt(f[CT_API_CORR], last_corr[thread]);
        last_gx[thread] = f[CT_API_GRID_X];
        last_corr[thread] = f[CT_API_CORR];
        char kernel[16];
        snprintf(kernel, sizeof(kernel), "k%u__1us", k);
        ck_assert_str_eq(S(t, f[CT_API_KERNEL]), kernel);
        ck_assert_uint_eq(f[CT_API_SHMEM], 16 * k);
        ck_assert_uint_eq(f[CT_API_BLOCK_X], 1);
        ck_assert_str_eq(name, b == 66 ? "cuLaunchKernel_ptsz" : "cuLaunchKernel");
        ck_assert_msg(m->sid[thread][b] != 0, "no stream id printed for block y %u", b);
        ck_assert_msg(f[CT_API_STREAM] == m->sid[thread][b],
                      "thread %u launch %llu: stream %llu, expected %llu", thread,
                      (unsigned long long)f[CT_API_GRID_X], (unsigned long long)f[CT_API_STREAM],
                      m->sid[thread][b]);
        ck_assert_int_eq((int64_t)f[CT_API_DEVICE], 0);
        ck_assert_int_eq((int64_t)f[CT_API_RESULT], 0);
        ck_assert_uint_le(f[CT_API_START], f[CT_API_END]);
    }
    return launches;
}

/* Records lost in the ring (full, or no ring for a thread), from the trace's
 * DROP records. */
static uint64_t ring_drops(const struct th_trace *t)
{
    uint64_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        if (t->recs[i].kind == CT_REC_DROP && (t->recs[i].f[CT_DROP_REASON] == CT_DROP_RING_FULL ||
                                               t->recs[i].f[CT_DROP_REASON] == CT_DROP_NO_BUFFER))
            n += t->recs[i].f[CT_DROP_COUNT];
    return n;
}

START_TEST(fast_path_records_every_launch_as_it_was_made)
{
    struct mix_run m;
    mix_run(&m, "16384");
    ck_assert_uint_eq(ring_drops(&m.t), 0);
    ck_assert_uint_eq(check_launches(&m), THREADS * N_PER_THREAD);
    th_trace_free(&m.t);
}
END_TEST

START_TEST(fast_path_in_a_small_ring_pads_drops_and_counts)
{
    struct mix_run m;
    mix_run(&m, "64");
    size_t n = check_launches(&m);
    /* drops count every kind of record lost (the threads' stream calls
     * too): every launch is either present or among them */
    uint64_t dropped = ring_drops(&m.t);
    ck_assert_uint_le(n, THREADS * N_PER_THREAD);
    ck_assert_uint_ge(n + dropped, THREADS * N_PER_THREAD);
    ck_assert_uint_gt(n, 3 * 64 * 1024 / 104); /* more than a lap of each ring (104-byte records) */
    fprintf(stderr, "small ring: %zu recorded, %llu dropped\n", n, (unsigned long long)dropped);
    th_trace_free(&m.t);
}
END_TEST

/* The same at every simulated older driver level (CUDA 11.8: no
 * cuStreamGetId, ids are handles; 12.2: no cuFuncGetName; 12.4: no
 * cuStreamGetDevice): what the driver lacks changes where ids and names
 * come from, not the records. */
START_TEST(fast_path_records_every_launch_at_every_driver_level)
{
    char buf[4096];
    snprintf(buf, sizeof(buf), "%s", th_env("CT_OLD_DRIVERS")); /* "V=DIR V=DIR ..." */
    int levels = 0;
    for (char *save = NULL, *tok = strtok_r(buf, " ", &save); tok;
         tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        ck_assert_ptr_nonnull(eq);
        *eq = 0;
        struct mix_run m;
        mix_run_at(&m, "16384", tok, eq + 1);
        ck_assert_uint_eq(ring_drops(&m.t), 0);
        ck_assert_uint_eq(check_launches(&m), THREADS * N_PER_THREAD);
        th_trace_free(&m.t);
        levels++;
    }
    ck_assert_int_eq(levels, 3);
}
END_TEST

void shim_launch_tests(TCase *tc)
{
    tcase_add_test(tc, fast_path_records_every_launch_at_every_driver_level);
    tcase_add_test(tc, fast_path_records_every_launch_as_it_was_made);
    tcase_add_test(tc, fast_path_in_a_small_ring_pads_drops_and_counts);
}
