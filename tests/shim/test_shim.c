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
#include "tests/shim/shim_run.h"

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
        /* a copy's count (batches; 0 for the others) and a failed batch's
         * failIdx + 1 sit in the grid x and y columns (docs/recording.md) */
        if (!strcmp(family, "memcpy")) {
            ck_assert_msg(f[CT_API_GRID_X] == gx, "%s: count %llu, expected %u", name,
                          (unsigned long long)f[CT_API_GRID_X], gx);
            ck_assert_msg(f[CT_API_GRID_Y] == bx, "%s: failIdx+1 %llu, expected %u", name,
                          (unsigned long long)f[CT_API_GRID_Y], bx);
        }
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
    ck_assert_ptr_nonnull(strstr(out, "RESULT bad_batch=1 fail=1 errno=4321"));
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
                          strstr(line, "[ld-linux-x86-64.so.2]") ||
                          strstr(line, "[ld-linux-aarch64.so.1]"),
                      "unexpected dependency: %s", line);
    }
    ck_assert_int_eq(pclose(p), 0);
    ck_assert_int_ge(needed, 1);
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
    shim_gpu_tests(tc);    /* test_shim_gpu.c */
    shim_launch_tests(tc); /* test_shim_launch.c */
    shim_events_tests(tc); /* test_shim_events.c */
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
