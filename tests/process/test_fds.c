/*
 * Suite "fds": a job that takes every descriptor back, or replaces them,
 * keeps its own files exactly as it wrote them, and its trace stays whole;
 * processes that do nothing worth a trace leave none; a real launcher
 * (Open MPI's mpirun) gives one trace per rank and nothing else.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/helpers.h"
#include "tests/unit/run.h"

static size_t launches(const struct th_trace *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += t->recs[i].kind == CT_REC_API && t->recs[i].f[CT_API_FAMILY] == CT_FAM_LAUNCH;
    return n;
}

static const char *meta_value(const struct th_trace *t, const char *key)
{
    const char *v = NULL;
    for (size_t i = 0; i < t->n; i++)
        if (t->recs[i].kind == CT_REC_META &&
            !strcmp(ct_reader_string(&t->rd, t->recs[i].f[CT_META_KEY]), key))
            v = ct_reader_string(&t->rd, t->recs[i].f[CT_META_VALUE]);
    return v;
}

/* Runs w_fds MODE under the shim; checks the job's own verdict ("OK": its
 * file holds exactly the 9 bytes it wrote), that nothing reached stderr
 * (no "writing ... failed" line), and that its one trace decodes whole
 * with all 100 + 20000 launches. */
static void job_keeps_its_files(const char *mode)
{
    struct th_run r;
    char file[512];
    /* the writer writes throughout; the ring holds every launch (none dropped) */
    const char *env[] = {"CUTRACE_FLUSH_MS=5", "CUTRACE_BUFFER_KB=16384", NULL};
    struct th_run_opts o = {.preload = th_env("CT_SHIM"), .gpu_timing_off = 1, .env = env};
    snprintf(file, sizeof(file), "%s/job.dat", th_tmpdir());
    const char *argv[] = {th_env("CT_W_FDS"), mode, file, "20000", NULL};
    th_run(&r, &o, argv);
    char *out = th_run_clean(&r);
    ck_assert_str_eq(out, "OK\n");
    free(out);
    struct stat st;
    ck_assert_int_eq(stat(file, &st), 0);
    ck_assert_int_eq(st.st_size, 9);
    char paths[4][TH_RUN_PATH];
    ck_assert_int_eq(th_run_traces(&r, 0, paths, 4), 1); /* no trace of a pre-exec child */
    struct th_trace t;
    th_trace_read_file(&t, paths[0]);
    ck_assert_int_eq(t.open_rc, 0);
    ck_assert_uint_eq(t.rd.damage_total, 0);
    ck_assert(t.rd.has_footer);
    ck_assert_uint_eq(launches(&t), 20100);
    th_trace_free(&t);
}

START_TEST(close_loop_over_every_descriptor_leaves_the_trace_alone)
{
    job_keeps_its_files("closeloop");
}
END_TEST

START_TEST(close_range_over_every_descriptor_leaves_the_trace_alone)
{
    job_keeps_its_files("close_range");
}
END_TEST

START_TEST(closefrom_leaves_the_trace_alone)
{
    job_keeps_its_files("closefrom");
}
END_TEST

START_TEST(dup2_over_every_descriptor_moves_the_trace_aside)
{
    job_keeps_its_files("dup2");
}
END_TEST

START_TEST(fork_close_and_exec_children_leave_no_trace_and_the_parent_whole)
{
    if (th_emulated_skip("its children are this machine's programs (x86-64)"))
        return;
    job_keeps_its_files("spawn");
}
END_TEST

/* Leak reports of Python's or a shell's own at exit would fill stderr in a
 * sanitizer build (the runtime is preloaded into them too): they are not
 * cutrace's, so those two tests ask the runtime not to look. */
static const char *no_leak_check(void)
{
    const char *san = getenv("CT_SANITIZER_PRELOAD");
    return san && *san ? "ASAN_OPTIONS=detect_leaks=0:intercept_tls_get_addr=0" : "CT_UNUSED=1";
}

/* Python's own subprocess (vfork, close_range, dup2, execve in the child)
 * from a Python job that drives the simulated device through ctypes. */
START_TEST(python_subprocess_from_a_traced_job_leaves_one_whole_trace)
{
    if (th_emulated_skip("python3 is this machine's (x86-64)"))
        return;
    struct th_run r;
    char file[512], cuda[600];
    snprintf(file, sizeof(file), "%s/job.dat", th_tmpdir());
    snprintf(cuda, sizeof(cuda), "CT_FAKE_CUDA=%s/libcuda.so.1", th_env("CT_FAKEGPU_DIR"));
    const char *env[] = {"CUTRACE_FLUSH_MS=5", cuda, no_leak_check(), NULL};
    struct th_run_opts o = {.preload = th_env("CT_SHIM"), .gpu_timing_off = 1, .env = env};
    const char *argv[] = {th_env("CT_PYTHON"), th_env("CT_PY_SUBPROCESS"), file, NULL};
    th_run(&r, &o, argv);
    char *out = th_run_clean(&r);
    ck_assert_str_eq(out, "OK\n");
    free(out);
    char paths[8][TH_RUN_PATH];
    ck_assert_int_eq(th_run_traces(&r, 0, paths, 8), 1); /* python's: not sh's, not true's */
    struct th_trace t;
    th_trace_read_file(&t, paths[0]);
    ck_assert_uint_eq(t.rd.damage_total, 0);
    ck_assert(t.rd.has_footer);
    ck_assert_uint_eq(t.rd.hdr.pid, (uint32_t)r.pid);
    ck_assert_uint_eq(launches(&t), 2000);
    th_trace_free(&t);
}
END_TEST

/* A shell script that runs version probes and then the job: only the job's
 * process leaves a trace. */
START_TEST(shell_wrappers_and_probes_leave_no_trace)
{
    if (th_emulated_skip("sh and its probes are this machine's (x86-64)"))
        return;
    struct th_run r;
    char file[512], script[2048];
    snprintf(file, sizeof(file), "%s/job.dat", th_tmpdir());
    snprintf(script, sizeof(script),
             "v=$(cat /etc/os-release | head -1); for f in /etc/hostname /etc/passwd; do "
             "read -r x < $f || true; done; uname -a > /dev/null; exec %s closeloop %s 100",
             th_env("CT_W_FDS"), file);
    const char *quiet[] = {no_leak_check(), NULL};
    struct th_run_opts o = {.preload = th_env("CT_SHIM"), .gpu_timing_off = 1, .env = quiet};
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    th_run(&r, &o, argv);
    char *out = th_run_clean(&r);
    ck_assert_str_eq(out, "OK\n");
    free(out);
    char paths[8][TH_RUN_PATH];
    ck_assert_int_eq(th_run_traces(&r, 0, paths, 8), 1);
    struct th_trace t;
    th_trace_read_file(&t, paths[0]);
    ck_assert_uint_eq(launches(&t), 200);
    /* the shell's own image left no file: the job's image takes the first name */
    ck_assert_uint_eq(t.rd.hdr.gen, 0);
    th_trace_free(&t);
    /* asked for every process, the shell's small reads do get a trace */
    const char *every[] = {"CUTRACE_HOST_TRACE_KB=0", no_leak_check(), NULL};
    o.env = every;
    th_run(&r, &o, argv);
    free(th_run_clean(&r));
    ck_assert_int_ge(th_run_traces(&r, 0, paths, 8), 2);
}
END_TEST

/* Children forked before the parent's first CUDA call that read a little
 * and exit: no trace each, counted in the parent's. */
START_TEST(untraced_forked_children_are_counted_in_the_parent)
{
    struct th_run r;
    char file[512];
    snprintf(file, sizeof(file), "%s/job.dat", th_tmpdir());
    struct th_run_opts o = {.preload = th_env("CT_SHIM"), .gpu_timing_off = 1};
    const char *argv[] = {th_env("CT_W_FDS"), "helpers", file, "100", NULL};
    th_run(&r, &o, argv);
    char *out = th_run_clean(&r);
    ck_assert_str_eq(out, "OK\n");
    free(out);
    char paths[8][TH_RUN_PATH];
    ck_assert_int_eq(th_run_traces(&r, 0, paths, 8), 1);
    struct th_trace t;
    th_trace_read_file(&t, paths[0]);
    ck_assert_uint_eq(t.rd.hdr.pid, (uint32_t)r.pid);
    const char *n = meta_value(&t, "forked_children_untraced");
    ck_assert_ptr_nonnull(n);
    ck_assert_str_eq(n, "3");
    const char *recs = meta_value(&t, "forked_records_untraced");
    ck_assert_ptr_nonnull(recs);
    ck_assert_int_ge(atoi(recs), 3 * 2); /* an open and a read each, at least */
    th_trace_free(&t);
}
END_TEST

Suite *fds_suite(void)
{
    Suite *s = suite_create("fds");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, close_loop_over_every_descriptor_leaves_the_trace_alone);
    tcase_add_test(tc, close_range_over_every_descriptor_leaves_the_trace_alone);
    tcase_add_test(tc, closefrom_leaves_the_trace_alone);
    tcase_add_test(tc, dup2_over_every_descriptor_moves_the_trace_aside);
    tcase_add_test(tc, fork_close_and_exec_children_leave_no_trace_and_the_parent_whole);
    tcase_add_test(tc, python_subprocess_from_a_traced_job_leaves_one_whole_trace);
    tcase_add_test(tc, shell_wrappers_and_probes_leave_no_trace);
    tcase_add_test(tc, untraced_forked_children_are_counted_in_the_parent);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(fds_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
