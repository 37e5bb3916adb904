/*
 * Suite "shim": real programs run under LD_PRELOAD=libcutrace.so on the
 * simulated driver, and their traces compared with the programs' own
 * statement of what they called (tests/workloads).
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

/* Runs argv with preload (NULL: none) and extra env "K=V" entries. */
static void run(struct th_run *r, const char *preload, const char *const *extra_env,
                const char *const *argv)
{
    struct th_run_opts o = {.preload = preload, .env = extra_env};
    th_run(r, &o, argv);
}

static const char *S(const struct th_trace *t, uint64_t id)
{
    return ct_reader_string(&t->rd, id);
}

/* Compares the API records of the trace, in order, with the EXPECT lines. */
static void compare_with_expectations(const struct th_run *r)
{
    struct th_trace t;
    th_run_read_trace(r, 0, &t);
    ck_assert(t.rd.has_footer);
    char *out = th_slurp(r->out);
    char *all = strdup(out);
    size_t k = 0, nexp = 0;
    char *save = NULL;
    for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char name[64], family[16], kind[16], kernel[64];
        unsigned long long bytes, stream;
        unsigned gx, bx, shmem, flags;
        if (sscanf(line, "EXPECT %63s %15s %llu %15s %llu %u %u %u %63s %u", name, family, &bytes,
                   kind, &stream, &gx, &bx, &shmem, kernel, &flags) != 10)
            continue;
        nexp++;
        while (k < t.n && t.recs[k].kind != CT_REC_API)
            k++;
        ck_assert_msg(k < t.n, "trace ends before expected %s", name);
        const uint64_t *f = t.recs[k].f;
        ck_assert_str_eq(S(&t, f[CT_API_NAME]), name);
        ck_assert_str_eq(ct_name_family(f[CT_API_FAMILY]), family);
        ck_assert_msg(f[CT_API_BYTES] == bytes, "%s: bytes %llu, expected %llu", name,
                      (unsigned long long)f[CT_API_BYTES], bytes);
        if (strcmp(kind, "-") != 0)
            ck_assert_str_eq(ct_name_copy_kind(f[CT_API_COPY_KIND]), kind);
        ck_assert_msg(f[CT_API_STREAM] == stream, "%s: stream %llu, expected %llu", name,
                      (unsigned long long)f[CT_API_STREAM], stream);
        ck_assert_msg(f[CT_API_FLAGS] == flags, "%s: flags %llu, expected %u", name,
                      (unsigned long long)f[CT_API_FLAGS], flags);
        if (!strcmp(family, "launch") && gx) {
            ck_assert_uint_eq(f[CT_API_GRID_X], gx);
            ck_assert_uint_eq(f[CT_API_BLOCK_X], bx);
            ck_assert_uint_eq(f[CT_API_SHMEM], shmem);
        }
        if (strcmp(kernel, "-") != 0)
            ck_assert_str_eq(S(&t, f[CT_API_KERNEL]), kernel);
        ck_assert_uint_gt(f[CT_API_CORR], 0);
        k++;
    }
    /* every wrapped entry point was exercised (the lookup rows, and
     * cuStreamDestroy_v2 and the context teardown rows, which record
     * nothing, aside: the teardown rows are exercised by
     * event_pairs_are_read_before_their_context_is_destroyed) */
    static const char *const rows[] = {
#define CT_SYM(exported, base, ver, pt) #exported,
#include "shim/cuda_syms.h"
#undef CT_SYM
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        if (!strncmp(rows[i], "cuGetProcAddress", 16) || !strcmp(rows[i], "cuStreamDestroy_v2") ||
            !strncmp(rows[i], "cuCtxDestroy", 12) || !strncmp(rows[i], "cuDevicePrimaryCtxRe", 20))
            continue;
        char needle[80];
        snprintf(needle, sizeof(needle), "EXPECT %s ", rows[i]);
        ck_assert_msg(strstr(all, needle), "no test calls %s", rows[i]);
    }
    ck_assert_uint_ge(nexp, 85);
    while (k < t.n && t.recs[k].kind != CT_REC_API)
        k++;
    ck_assert_msg(k == t.n, "trace holds calls that were not made");
    free(out);
    free(all);
    th_trace_free(&t);
}

static void families(const char *mode)
{
    char exe[512];
    snprintf(exe, sizeof(exe), "%s/w_families", th_env("CT_WORKLOADS"));
    const char *argv[] = {exe, mode, NULL};
    struct th_run r;
    run(&r, th_env("CT_SHIM"), NULL, argv);
    char *out = th_run_clean(&r);
    /* the bad launch: the driver's error comes back unchanged, errno too */
    ck_assert_ptr_nonnull(strstr(out, "RESULT bad_launch=400 errno=4321"));
    free(out);
    compare_with_expectations(&r);
}

START_TEST(linked_program_records_every_family_exactly)
{
    families("linked");
}
END_TEST

START_TEST(dlsym_path_records_every_family_exactly)
{
    families("dlsym");
}
END_TEST

START_TEST(procaddr_v2_path_records_every_family_exactly)
{
    families("procaddr");
}
END_TEST

START_TEST(procaddr_v1_path_records_every_family_exactly)
{
    families("procaddr4");
}
END_TEST

START_TEST(procaddr_wraps_only_what_it_should)
{
    char exe[512];
    snprintf(exe, sizeof(exe), "%s/w_procaddr", th_env("CT_WORKLOADS"));
    const char *argv[] = {exe, NULL};
    struct th_run r;
    run(&r, th_env("CT_SHIM"), NULL, argv);
    char *out = th_slurp(r.out);
    ck_assert_msg(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s", out);
    ck_assert_ptr_null(strstr(out, "FAIL"));
    ck_assert_ptr_nonnull(strstr(out, "CHECK export_table_untouched ok"));
    free(out);
}
END_TEST

START_TEST(process_without_cuda_is_unaffected)
{
    char exe[512];
    snprintf(exe, sizeof(exe), "%s/w_nocuda", th_env("CT_WORKLOADS"));
    const char *argv[] = {exe, NULL};
    struct th_run r;
    run(&r, th_env("CT_SHIM"), NULL, argv);
    char *out = th_slurp(r.out), *err = th_slurp(r.err);
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(out, "hello\n");
    ck_assert_str_eq(err, "");
    free(out);
    free(err);
    /* A few bytes of I/O and no GPU work: not worth a trace of its own. */
    char path[512];
    ck_assert_int_eq(th_run_trace(&r, 0, path, sizeof(path)), 0);
    /* Asked to trace every process, its file I/O is recorded: the write and
     * close on its temp file, and no CUDA call. */
    const char *every[] = {"CUTRACE_HOST_TRACE_KB=0", NULL};
    run(&r, th_env("CT_SHIM"), every, argv);
    out = th_slurp(r.out);
    err = th_slurp(r.err);
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(out, "hello\n");
    ck_assert_str_eq(err, "");
    ck_assert_int_eq(th_run_trace(&r, 0, path, sizeof(path)), 1);
    struct th_trace t;
    th_trace_read_file(&t, path);
    ck_assert_int_eq(t.open_rc, 0);
    ck_assert_uint_eq(th_count_kind(&t, CT_REC_API), 0);
    ck_assert_uint_eq(th_count_kind(&t, CT_REC_IO), 2);
    th_trace_free(&t);
    free(out);
    free(err);
}
END_TEST

START_TEST(second_interposer_below_us_still_works)
{
    char exe[512], preload[1024];
    snprintf(exe, sizeof(exe), "%s/w_launches", th_env("CT_WORKLOADS"));
    snprintf(preload, sizeof(preload), "%s:%s", th_env("CT_SHIM"), th_env("CT_SECOND"));
    const char *argv[] = {exe, "7", NULL};
    struct th_run r;
    run(&r, preload, NULL, argv);
    char *out = th_slurp(r.out);
    ck_assert_msg(r.status == 0, "status %d", r.status);
    ck_assert_ptr_nonnull(strstr(out, "launched 7"));
    ck_assert_ptr_nonnull(strstr(out, "SECOND calls=7"));
    char path[512];
    ck_assert_int_eq(th_run_trace(&r, 0, path, sizeof(path)), 1);
    struct th_trace t;
    th_trace_read_file(&t, path);
    size_t launches = 0;
    for (size_t i = 0; i < t.n; i++)
        launches += t.recs[i].kind == CT_REC_API && t.recs[i].f[CT_API_FAMILY] == CT_FAM_LAUNCH;
    ck_assert_uint_eq(launches, 7);
    th_trace_free(&t);
    free(out);
}
END_TEST

START_TEST(threads_each_record_their_own_calls)
{
    char exe[512];
    snprintf(exe, sizeof(exe), "%s/w_launches", th_env("CT_WORKLOADS"));
    const char *argv[] = {exe, "500", "8", NULL};
    struct th_run r;
    run(&r, th_env("CT_SHIM"), NULL, argv);
    ck_assert_int_eq(r.status, 0);
    char path[512];
    ck_assert_int_eq(th_run_trace(&r, 0, path, sizeof(path)), 1);
    struct th_trace t;
    th_trace_read_file(&t, path);
    uint32_t tids[16];
    size_t ntids = 0, launches = 0;
    uint64_t streams[16];
    size_t nstreams = 0;
    for (size_t i = 0; i < t.n; i++) {
        const struct ct_record *rec = &t.recs[i];
        if (rec->kind != CT_REC_API || rec->f[CT_API_FAMILY] != CT_FAM_LAUNCH)
            continue;
        launches++;
        size_t j;
        for (j = 0; j < ntids && tids[j] != rec->tid; j++)
            ;
        if (j == ntids && ntids < 16)
            tids[ntids++] = rec->tid;
        for (j = 0; j < nstreams && streams[j] != rec->f[CT_API_STREAM]; j++)
            ;
        if (j == nstreams && nstreams < 16)
            streams[nstreams++] = rec->f[CT_API_STREAM];
    }
    ck_assert_uint_eq(launches, 4000);
    ck_assert_uint_eq(ntids, 8);
    ck_assert_uint_eq(nstreams, 8);
    /* no call record lost (GPU timing may leave a burst partly untimed) */
    for (size_t i = 0; i < t.n; i++)
        if (t.recs[i].kind == CT_REC_DROP)
            ck_assert_uint_eq(t.recs[i].f[CT_DROP_REASON], CT_DROP_GPU_UNTIMED);
    th_trace_free(&t);
}
END_TEST

START_TEST(real_cudart_fails_cleanly_through_the_wrapper)
{
    if (!strcmp(th_env("CT_HAVE_CUDART"), "0")) {
        /* an aarch64 cross build: the toolkit's libcudart here is x86-64 */
        fprintf(stderr, "real_cudart_fails_cleanly_through_the_wrapper: skipped (no libcudart "
                        "for this machine)\n");
        return;
    }
    char exe[512];
    snprintf(exe, sizeof(exe), "%s/w_cudart", th_env("CT_WORKLOADS"));
    const char *argv[] = {exe, NULL};
    struct th_run r;
    run(&r, th_env("CT_SHIM"), NULL, argv);
    char *out = th_slurp(r.out);
    ck_assert_msg(r.status == 0, "status %d: %s", r.status, out);
    /* an error code, not success and not a crash */
    ck_assert_ptr_nonnull(strstr(out, "CUDART cudaGetDeviceCount="));
    ck_assert_ptr_null(strstr(out, "CUDART cudaGetDeviceCount=0 "));
    char path[512];
    ck_assert_int_eq(th_run_trace(&r, 0, path, sizeof(path)), 1);
    struct th_trace t;
    th_trace_read_file(&t, path);
    uint64_t lookups = 0, wrapped = 0;
    for (size_t i = 0; i < t.n; i++) {
        const struct ct_record *m = &t.recs[i];
        if (m->kind != CT_REC_META || m->f[CT_META_SCOPE] != CT_SCOPE_RECORDER)
            continue;
        const char *k = S(&t, m->f[CT_META_KEY]);
        uint64_t v = strtoull(S(&t, m->f[CT_META_VALUE]), NULL, 10);
        if (!strcmp(k, "cuGetProcAddress_lookups"))
            lookups = v;
        if (!strcmp(k, "cuGetProcAddress_wrapped"))
            wrapped = v;
    }
    /* cudart 13.0 asks for ~440 entry points; we wrap a few dozen of them */
    ck_assert_msg(lookups >= 400, "only %llu lookups reached the wrapper",
                  (unsigned long long)lookups);
    ck_assert_msg(wrapped >= 40 && wrapped < lookups, "%llu of %llu wrapped",
                  (unsigned long long)wrapped, (unsigned long long)lookups);
    th_trace_free(&t);
    free(out);
}
END_TEST

START_TEST(bad_setting_gives_one_line_and_the_job_runs)
{
    char exe[512];
    snprintf(exe, sizeof(exe), "%s/w_launches", th_env("CT_WORKLOADS"));
    const char *argv[] = {exe, "3", NULL};
    const char *env[] = {"CUTRACE_FLUSH_MS=soon", NULL};
    struct th_run r;
    run(&r, th_env("CT_SHIM"), env, argv);
    char *out = th_slurp(r.out), *err = th_slurp(r.err);
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(out, "launched 3"));
    ck_assert_str_eq(err, "cutrace: CUTRACE_FLUSH_MS=soon: expected an integer from 1 to 60000; "
                          "recording is off\n");
    char path[512];
    ck_assert_int_eq(th_run_trace(&r, 0, path, sizeof(path)), 0);
    free(out);
    free(err);
}
END_TEST

START_TEST(unwritable_output_gives_one_line_and_the_job_runs)
{
    char exe[512];
    snprintf(exe, sizeof(exe), "%s/w_launches", th_env("CT_WORKLOADS"));
    const char *argv[] = {exe, "3", NULL};
    const char *env[] = {"CUTRACE_OUTPUT=/nonexistent/dir", NULL};
    struct th_run r;
    run(&r, th_env("CT_SHIM"), env, argv);
    char *out = th_slurp(r.out), *err = th_slurp(r.err);
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(out, "launched 3"));
    ck_assert_ptr_nonnull(strstr(err, "cutrace: cannot record to /nonexistent/dir/"));
    ck_assert_ptr_nonnull(strstr(err, "No such file or directory; recording is off\n"));
    ck_assert_ptr_eq(strchr(err, '\n'), err + strlen(err) - 1); /* one line */
    free(out);
    free(err);
}
END_TEST

START_TEST(launcher_environment_names_the_file_and_secrets_are_redacted)
{
    char exe[512];
    snprintf(exe, sizeof(exe), "%s/w_launches", th_env("CT_WORKLOADS"));
    const char *argv[] = {exe, "1", NULL};
    const char *env[] = {
        "RANK=3",          "LOCAL_RANK=1",        "WORLD_SIZE=8",        "SLURM_JOB_ID=4242",
        "NCCL_DEBUG=INFO", "NCCL_IB_KEY=hunter2", "TORCH_API_TOKEN=abc", NULL};
    struct th_run r;
    run(&r, th_env("CT_SHIM"), env, argv);
    ck_assert_int_eq(r.status, 0);
    char path[512];
    ck_assert_int_eq(th_run_trace(&r, 0, path, sizeof(path)), 1);
    ck_assert_ptr_nonnull(strstr(path, "/4242-"));
    ck_assert_ptr_nonnull(strstr(path, "-r3-p"));
    struct th_trace t;
    th_trace_read_file(&t, path);
    int seen = 0;
    for (size_t i = 0; i < t.n; i++) {
        const struct ct_record *m = &t.recs[i];
        if (m->kind != CT_REC_META || m->f[CT_META_SCOPE] != CT_SCOPE_PROCESS)
            continue;
        const char *k = S(&t, m->f[CT_META_KEY]), *v = S(&t, m->f[CT_META_VALUE]);
        if (!strcmp(k, "rank"))
            seen += !strcmp(v, "3");
        if (!strcmp(k, "local_rank"))
            seen += !strcmp(v, "1");
        if (!strcmp(k, "world_size"))
            seen += !strcmp(v, "8");
        if (!strcmp(k, "env.NCCL_DEBUG"))
            seen += !strcmp(v, "INFO");
        if (!strcmp(k, "env.NCCL_IB_KEY") || !strcmp(k, "env.TORCH_API_TOKEN"))
            seen += !strcmp(v, "<redacted>");
        ck_assert_ptr_null(strstr(v, "hunter2"));
    }
    ck_assert_int_eq(seen, 6);
    /* device metadata at first use */
    int device_meta = 0;
    for (size_t i = 0; i < t.n; i++)
        if (t.recs[i].kind == CT_REC_META && t.recs[i].f[CT_META_SCOPE] == CT_SCOPE_DEVICE &&
            !strcmp(S(&t, t.recs[i].f[CT_META_KEY]), "uuid"))
            device_meta++;
    ck_assert_int_eq(device_meta, 1);
    th_trace_free(&t);
}
END_TEST

START_TEST(shim_depends_on_glibc_only)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "readelf -d %s", th_env("CT_SHIM"));
    FILE *p = popen(cmd, "r");
    char line[512];
    int needed = 0;
    while (fgets(line, sizeof(line), p)) {
        if (!strstr(line, "(NEEDED)"))
            continue;
        needed++;
        const char *san = getenv("CT_SANITIZER_PRELOAD");
        if (san && *san &&
            (strstr(line, "libasan") || strstr(line, "libubsan") || strstr(line, "libtsan")))
            continue; /* sanitizer builds link their runtimes, by design */
        ck_assert_msg(strstr(line, "[libc.so.6]") || strstr(line, "[libm.so.6]") ||
                          strstr(line, "[libpthread.so.0]") || strstr(line, "[libdl.so.2]") ||
                          strstr(line, "[ld-linux-x86-64.so.2]"),
                      "unexpected dependency: %s", line);
    }
    ck_assert_int_eq(pclose(p), 0);
    ck_assert_int_ge(needed, 1);
}
END_TEST

/* ---- GPU timing ---- */

struct expect_op {
    char type[16];
    uint64_t dur;
};

struct gpu_run {
    struct th_trace t;
    unsigned long long sid, pt, legacy;
    struct expect_op exp[16];
    int nexp;
    char timing[32], fallback[256];
};

static void gpu_run(struct gpu_run *g, const char *const *env)
{
    char exe[512];
    snprintf(exe, sizeof(exe), "%s/w_gputime", th_env("CT_WORKLOADS"));
    const char *argv[] = {exe, NULL};
    struct th_run r;
    run(&r, th_env("CT_SHIM"), env, argv);
    char *out = th_slurp(r.out), *err = th_slurp(r.err);
    ck_assert_msg(r.status == 0, "status %d: %s", r.status, err);
    ck_assert_msg(err[0] == 0, "stderr: %s", err);
    memset(g, 0, sizeof(*g));
    ck_assert(sscanf(strstr(out, "STREAMS"), "STREAMS s=%llu pt=%llu legacy=%llu", &g->sid, &g->pt,
                     &g->legacy) == 3);
    for (char *p = strstr(out, "EXPECT "); p && g->nexp < 16; p = strstr(p + 1, "EXPECT ")) {
        unsigned long long dur;
        ck_assert(sscanf(p, "EXPECT %15s %llu", g->exp[g->nexp].type, &dur) == 2);
        g->exp[g->nexp++].dur = dur;
    }
    char path[512];
    ck_assert_int_eq(th_run_trace(&r, 0, path, sizeof(path)), 1);
    th_trace_read_file(&g->t, path);
    for (size_t i = 0; i < g->t.n; i++) {
        const struct ct_record *m = &g->t.recs[i];
        if (m->kind != CT_REC_META || m->f[CT_META_SCOPE] != CT_SCOPE_RECORDER)
            continue;
        const char *k = S(&g->t, m->f[CT_META_KEY]);
        if (!strcmp(k, "gpu_timing"))
            snprintf(g->timing, sizeof(g->timing), "%s", S(&g->t, m->f[CT_META_VALUE]));
        if (!strcmp(k, "gpu_timing_fallback"))
            snprintf(g->fallback, sizeof(g->fallback), "%s", S(&g->t, m->f[CT_META_VALUE]));
    }
    free(out);
    free(err);
}

static const struct ct_record *api_of(const struct th_trace *t, uint64_t corr)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->recs[i].kind == CT_REC_API && t->recs[i].f[CT_API_CORR] == corr)
            return &t->recs[i];
    return NULL;
}

static int cmp_gpu_start(const void *a, const void *b)
{
    const struct ct_record *x = *(const struct ct_record *const *)a;
    const struct ct_record *y = *(const struct ct_record *const *)b;
    return (x->f[CT_GPU_START] > y->f[CT_GPU_START]) - (x->f[CT_GPU_START] < y->f[CT_GPU_START]);
}

/*
 * Checks the intervals on stream S against the schedule: durations and
 * back-to-back starts within `tol` ns, every timed call joined to its
 * interval, captured launches untimed, default streams right. With CUPTI the
 * graph shows as its two kernels; with events as one interval.
 */
static void check_schedule(struct gpu_run *g, uint64_t tol, int cupti)
{
    const struct ct_record *on_s[64];
    size_t n = 0;
    int pt_seen = 0, legacy_seen = 0;
    for (size_t i = 0; i < g->t.n; i++) {
        const struct ct_record *r = &g->t.recs[i];
        if (r->kind != CT_REC_GPU || r->f[CT_GPU_TYPE] == CT_GPU_SYNC)
            continue;
        const struct ct_record *call = api_of(&g->t, r->f[CT_GPU_CORR]);
        ck_assert_msg(call != NULL, "GPU interval without its call (corr %llu)",
                      (unsigned long long)r->f[CT_GPU_CORR]);
        const char *kernel = S(&g->t, r->f[CT_GPU_NAME]);
        if (!strcmp(kernel, "P__20us")) {
            ck_assert_uint_eq(r->f[CT_GPU_STREAM], g->pt);
            pt_seen++;
        } else if (!strcmp(kernel, "L__10us")) {
            ck_assert_uint_eq(r->f[CT_GPU_STREAM], g->legacy);
            legacy_seen++;
        } else {
            ck_assert_msg(r->f[CT_GPU_STREAM] == g->sid, "%s on stream %llu", kernel,
                          (unsigned long long)r->f[CT_GPU_STREAM]);
            ck_assert_uint_lt(n, 64);
            on_s[n++] = r;
        }
    }
    ck_assert_int_eq(pt_seen, 1);
    ck_assert_int_eq(legacy_seen, 1);
    qsort(on_s, n, sizeof(on_s[0]), cmp_gpu_start);
    /* expected sequence; with CUPTI the graph is its nodes */
    struct expect_op exp[20];
    int ne = 0;
    for (int i = 0; i < g->nexp; i++) {
        if (cupti && !strcmp(g->exp[i].type, "graph")) {
            exp[ne++] = (struct expect_op){"kernel", 30000};
            exp[ne++] = (struct expect_op){"kernel", 40000};
        } else {
            exp[ne++] = g->exp[i];
        }
    }
    ck_assert_msg((int)n == ne, "%zu intervals on stream S, expected %d", n, ne);
    for (int i = 0; i < ne; i++) {
        const uint64_t *f = on_s[i]->f;
        uint64_t dur = f[CT_GPU_END] - f[CT_GPU_START];
        ck_assert_str_eq(ct_name_gpu_type(f[CT_GPU_TYPE]), exp[i].type);
        int64_t derr = (int64_t)dur - (int64_t)exp[i].dur;
        /* On an idle stream the start event runs as soon as it is recorded,
         * before the op itself is enqueued, so in event mode the first op
         * also holds the launch call's latency (one real GPUs show too). */
        if (i == 0 && !cupti && derr > 0)
            derr = 0;
        ck_assert_msg(derr <= (int64_t)tol && derr >= -(int64_t)tol,
                      "op %d (%s): %llu ns, expected %llu +- %llu", i, exp[i].type,
                      (unsigned long long)dur, (unsigned long long)exp[i].dur,
                      (unsigned long long)tol);
        if (i > 0) {
            int64_t gap = (int64_t)f[CT_GPU_START] - (int64_t)on_s[i - 1]->f[CT_GPU_END];
            ck_assert_msg(gap <= (int64_t)tol && gap >= -(int64_t)tol,
                          "op %d starts %lld ns after the previous ends", i, (long long)gap);
        }
    }
    /* the first op cannot start before its launch call (with CUPTI; the
     * start event of event mode is recorded just before the call's span) */
    const struct ct_record *first = api_of(&g->t, on_s[0]->f[CT_GPU_CORR]);
    if (cupti)
        ck_assert_uint_ge(on_s[0]->f[CT_GPU_START] + tol, first->f[CT_API_START]);
    /* every kernel, copy, memset and graph launch on a stream not capturing
     * has its interval; the two captured launches have none */
    for (size_t i = 0; i < g->t.n; i++) {
        const struct ct_record *r = &g->t.recs[i];
        if (r->kind != CT_REC_API)
            continue;
        uint64_t fam = r->f[CT_API_FAMILY];
        if (fam != CT_FAM_LAUNCH && fam != CT_FAM_MEMCPY && fam != CT_FAM_MEMSET &&
            fam != CT_FAM_GRAPH)
            continue;
        int timed = 0;
        for (size_t k = 0; k < g->t.n; k++)
            timed +=
                g->t.recs[k].kind == CT_REC_GPU && g->t.recs[k].f[CT_GPU_CORR] == r->f[CT_API_CORR];
        const char *kernel = S(&g->t, r->f[CT_API_KERNEL]);
        int captured = !strcmp(kernel, "C1__30us") || !strcmp(kernel, "C2__40us");
        int expect = captured ? 0 : (cupti && fam == CT_FAM_GRAPH ? 2 : 1);
        ck_assert_msg(timed == expect, "%s %s: %d intervals, expected %d",
                      S(&g->t, r->f[CT_API_NAME]), kernel, timed, expect);
    }
}

START_TEST(event_timing_matches_the_simulated_schedule)
{
    const char *env[] = {"CUTRACE_GPU_TIMING=events", NULL};
    struct gpu_run g;
    gpu_run(&g, env);
    ck_assert_str_eq(g.timing, "events");
    /* Tolerance: the anchor's host time is the midpoint of one cuEventRecord
     * call (error <= half of it, well under 1 us here) plus float-ms rounding
     * of cuEventElapsedTime (~0.06 us per second of anchor age); 2 us keeps
     * a loaded CI machine from flaking while still catching a missed op. */
    check_schedule(&g, 2000, 0);
    th_trace_free(&g.t);
}
END_TEST

/* Event-pair timing and a context destroyed right after its last
 * synchronous copy (tests/workloads/w_ctxdestroy.c, in the style of the
 * vectorAddDrv sample): the simulated driver, like CUDA, destroys the
 * context's events with it, so pairs read after cuCtxDestroy were lost
 * (about one run in two lost 1 to 3 of the 4 ops). The shim reads them
 * first: in each of 5 runs all four ops (2 HtoD copies, the launch, the
 * DtoH copy) have their interval and nothing is counted untimed. */
START_TEST(event_pairs_are_read_before_their_context_is_destroyed)
{
    char exe[512];
    snprintf(exe, sizeof(exe), "%s/w_ctxdestroy", th_env("CT_WORKLOADS"));
    const char *argv[] = {exe, NULL};
    const char *env[] = {"CUTRACE_GPU_TIMING=events", NULL};
    for (int k = 0; k < 5; k++) {
        struct th_run r;
        run(&r, th_env("CT_SHIM"), env, argv);
        ck_assert_msg(r.status == 0, "status %d", r.status);
        struct th_trace t;
        th_run_read_trace(&r, 0, &t);
        ck_assert(t.rd.has_footer);
        ck_assert_uint_eq(th_count_kind(&t, CT_REC_GPU), 4);
        for (size_t i = 0; i < t.n; i++)
            ck_assert_msg(
                t.recs[i].kind != CT_REC_DROP || t.recs[i].f[CT_DROP_REASON] != CT_DROP_GPU_UNTIMED,
                "run %d: %llu op(s) untimed", k, (unsigned long long)t.recs[i].f[CT_DROP_COUNT]);
        /* the three synchronous copies' pairs bracket their blocking host
         * call, and say so; the launch's does not */
        int blocking = 0, plain = 0;
        for (size_t i = 0; i < t.n; i++) {
            const struct ct_record *g = &t.recs[i];
            if (g->kind != CT_REC_GPU)
                continue;
            if (g->f[CT_GPU_TYPE] == CT_GPU_MEMCPY)
                blocking += g->f[CT_GPU_SOURCE] == CT_SRC_EVENTS_BLOCKING;
            else
                plain += g->f[CT_GPU_SOURCE] == CT_SRC_EVENTS;
        }
        ck_assert_int_eq(blocking, 3);
        ck_assert_int_eq(plain, 1);
        th_trace_free(&t);
        if (k == 0) { /* the report says how it counted them */
            char *out = th_cutrace("report %s", r.traces);
            ck_assert_msg(strstr(out, "of synchronous copies timed by CUDA event pairs around the "
                                      "host call"),
                          "%s", out);
            free(out);
        }
    }
}
END_TEST

START_TEST(timing_off_records_host_spans_only)
{
    const char *env[] = {"CUTRACE_GPU_TIMING=off", NULL};
    struct gpu_run g;
    gpu_run(&g, env);
    ck_assert_str_eq(g.timing, "off");
    ck_assert_uint_eq(th_count_kind(&g.t, CT_REC_GPU), 0);
    ck_assert_uint_gt(th_count_kind(&g.t, CT_REC_API), 10);
    th_trace_free(&g.t);
}
END_TEST

START_TEST(real_cupti_on_the_simulated_driver_falls_back_to_events)
{
    char lib[600];
    snprintf(lib, sizeof(lib), "CUTRACE_CUPTI_LIB=%s", th_env("CT_REAL_CUPTI"));
    const char *env[] = {lib, NULL};
    struct gpu_run g;
    gpu_run(&g, env);
    ck_assert_str_eq(g.timing, "events");
    ck_assert_msg(g.fallback[0] != 0, "no reason recorded");
    check_schedule(&g, 2000, 0);
    th_trace_free(&g.t);
}
END_TEST

START_TEST(cupti_timing_matches_the_simulated_schedule)
{
    const char *fake = getenv("CT_FAKE_CUPTI");
    if (!fake || !*fake)
        return; /* built without the simulated CUPTI */
    char lib[600];
    snprintf(lib, sizeof(lib), "CUTRACE_CUPTI_LIB=%s", fake);
    const char *env[] = {lib, NULL};
    struct gpu_run g;
    gpu_run(&g, env);
    ck_assert_msg(!strcmp(g.timing, "cupti"), "timing %s: %s", g.timing, g.fallback);
    /* CUPTI reports the device's own times: within 1 us */
    check_schedule(&g, 1000, 1);
    /* its synchronization records join the call that waited (the sync
     * wrappers push the call's correlation id) */
    size_t syncs = 0, joined = 0;
    for (size_t i = 0; i < g.t.n; i++) {
        const struct ct_record *r = &g.t.recs[i];
        if (r->kind != CT_REC_GPU || r->f[CT_GPU_TYPE] != CT_GPU_SYNC)
            continue;
        syncs++;
        for (size_t j = 0; j < g.t.n && r->f[CT_GPU_CORR]; j++)
            if (g.t.recs[j].kind == CT_REC_API && g.t.recs[j].f[CT_API_CORR] == r->f[CT_GPU_CORR] &&
                g.t.recs[j].f[CT_API_FAMILY] == CT_FAM_SYNC) {
                joined++;
                break;
            }
    }
    ck_assert_uint_gt(syncs, 0);
    ck_assert_msg(joined == syncs, "%zu of %zu synchronization records join their call", joined,
                  syncs);
    th_trace_free(&g.t);
}
END_TEST

START_TEST(busy_cupti_falls_back_to_events_visibly)
{
    const char *fake = getenv("CT_FAKE_CUPTI");
    if (!fake || !*fake)
        return;
    char lib[600];
    snprintf(lib, sizeof(lib), "CUTRACE_CUPTI_LIB=%s", fake);
    const char *env[] = {lib, "FAKEGPU_CUPTI_BUSY=1", NULL};
    struct gpu_run g;
    gpu_run(&g, env);
    ck_assert_str_eq(g.timing, "events");
    ck_assert_ptr_nonnull(strstr(g.fallback, "busy"));
    check_schedule(&g, 2000, 0);
    th_trace_free(&g.t);
}
END_TEST

/* A CUDA 12 stack's CUPTI (API version 19 for 12.0 to 28 for 12.9 update
 * 1) is read in its own record layouts (shim/gpu_cupti.c): the fake
 * presents 12.0's (19) and 12.6's (24) CUpti_ActivityKernel9, Memcpy5 and
 * Synchronization records, and 12.8's (26) Kernel9 with Memcpy6 and
 * Synchronization2: every op is CUPTI-timed to the device's schedule and
 * the synchronisation records join their calls. CUDA 11.8's (18) and an
 * unknown 14.x are refused, with the version in the reason, and event
 * pairs time the GPU. */
START_TEST(cupti_12_is_read_and_other_versions_fall_back_visibly)
{
    const char *fake = getenv("CT_FAKE_CUPTI");
    if (!fake || !*fake)
        return;
    char lib[600];
    snprintf(lib, sizeof(lib), "CUTRACE_CUPTI_LIB=%s", fake);
    static const struct {
        const char *env, *timing, *reason;
    } cases[] = {{"FAKEGPU_CUPTI_VERSION=24", "cupti", ""},
                 {"FAKEGPU_CUPTI_VERSION=19", "cupti", ""},
                 {"FAKEGPU_CUPTI_VERSION=26", "cupti", ""},
                 {"FAKEGPU_CUPTI_VERSION=18", "events", "CUPTI API version 18;"},
                 {"FAKEGPU_CUPTI_VERSION=140000", "events", "CUPTI API version 140000;"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *env[] = {lib, cases[i].env, NULL};
        struct gpu_run g;
        gpu_run(&g, env);
        ck_assert_msg(!strcmp(g.timing, cases[i].timing), "%s: timing %s (%s)", cases[i].env,
                      g.timing, g.fallback);
        ck_assert_msg(strstr(g.fallback, cases[i].reason), "%s: reason '%s'", cases[i].env,
                      g.fallback);
        check_schedule(&g, g.timing[0] == 'c' ? 1000 : 2000, g.timing[0] == 'c');
        size_t syncs = 0, joined = 0;
        for (size_t k = 0; k < g.t.n; k++) {
            const struct ct_record *r = &g.t.recs[k];
            if (r->kind != CT_REC_GPU || r->f[CT_GPU_TYPE] != CT_GPU_SYNC)
                continue;
            syncs++;
            const struct ct_record *call = api_of(&g.t, r->f[CT_GPU_CORR]);
            joined += call && call->f[CT_API_FAMILY] == CT_FAM_SYNC;
        }
        ck_assert_msg(g.timing[0] != 'c' || (syncs > 0 && joined == syncs),
                      "%s: %zu of %zu synchronization records join their call", cases[i].env,
                      joined, syncs);
        th_trace_free(&g.t);
    }
}
END_TEST

START_TEST(injection_path_alone_records_gpu_intervals)
{
    const char *fake = getenv("CT_FAKE_CUPTI");
    if (!fake || !*fake)
        return;
    /* No LD_PRELOAD: the driver loads the shim through CUDA_INJECTION64_PATH
     * at cuInit. Calls are not interposed then, but CUPTI's intervals are. */
    char inj[600], lib[600], exe[512];
    snprintf(inj, sizeof(inj), "CUDA_INJECTION64_PATH=%s", th_env("CT_SHIM"));
    snprintf(lib, sizeof(lib), "CUTRACE_CUPTI_LIB=%s", fake);
    snprintf(exe, sizeof(exe), "%s/w_gputime", th_env("CT_WORKLOADS"));
    const char *env[] = {inj, lib, NULL};
    const char *argv[] = {exe, NULL};
    struct th_run r;
    run(&r, NULL, env, argv);
    ck_assert_int_eq(r.status, 0);
    char path[512];
    ck_assert_int_eq(th_run_trace(&r, 0, path, sizeof(path)), 1);
    struct th_trace t;
    th_trace_read_file(&t, path);
    size_t kernels = 0;
    for (size_t i = 0; i < t.n; i++)
        kernels += t.recs[i].kind == CT_REC_GPU && t.recs[i].f[CT_GPU_TYPE] == CT_GPU_KERNEL;
    ck_assert_uint_eq(kernels, 7); /* blocker, A, C1, C2 (graph), B, P, L */
    ck_assert_uint_eq(th_count_kind(&t, CT_REC_API), 0);
    th_trace_free(&t);
}
END_TEST

Suite *shim_suite(void)
{
    Suite *s = suite_create("shim");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, linked_program_records_every_family_exactly);
    tcase_add_test(tc, dlsym_path_records_every_family_exactly);
    tcase_add_test(tc, procaddr_v2_path_records_every_family_exactly);
    tcase_add_test(tc, procaddr_v1_path_records_every_family_exactly);
    tcase_add_test(tc, procaddr_wraps_only_what_it_should);
    tcase_add_test(tc, process_without_cuda_is_unaffected);
    tcase_add_test(tc, second_interposer_below_us_still_works);
    tcase_add_test(tc, threads_each_record_their_own_calls);
    tcase_add_test(tc, real_cudart_fails_cleanly_through_the_wrapper);
    tcase_add_test(tc, bad_setting_gives_one_line_and_the_job_runs);
    tcase_add_test(tc, unwritable_output_gives_one_line_and_the_job_runs);
    tcase_add_test(tc, launcher_environment_names_the_file_and_secrets_are_redacted);
    tcase_add_test(tc, shim_depends_on_glibc_only);
    tcase_add_test(tc, event_timing_matches_the_simulated_schedule);
    tcase_add_test(tc, timing_off_records_host_spans_only);
    tcase_add_test(tc, event_pairs_are_read_before_their_context_is_destroyed);
    tcase_add_test(tc, real_cupti_on_the_simulated_driver_falls_back_to_events);
    tcase_add_test(tc, cupti_timing_matches_the_simulated_schedule);
    tcase_add_test(tc, busy_cupti_falls_back_to_events_visibly);
    tcase_add_test(tc, cupti_12_is_read_and_other_versions_fall_back_visibly);
    tcase_add_test(tc, injection_path_alone_records_gpu_intervals);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(shim_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
