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
#include <sys/wait.h>
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

/* The shim's one line (here: its trace cannot be created, the output
 * directory being under a plain file) goes to standard error, and never
 * into a file of the job's that took descriptor 2 after the job closed its
 * standard error. */
START_TEST(shim_lines_never_go_into_a_job_file_that_took_descriptor_2)
{
    char plain[512], out[700], file[512];
    snprintf(plain, sizeof(plain), "%s/plain", th_tmpdir());
    ck_assert_int_eq(th_write_file(plain, (const uint8_t *)"x", 1), 0);
    snprintf(out, sizeof(out), "CUTRACE_OUTPUT=%s/traces", plain);
    snprintf(file, sizeof(file), "%s/job.dat", th_tmpdir());
    const char *env[] = {"CUTRACE_FLUSH_MS=5", out, NULL};
    struct th_run_opts o = {.preload = th_env("CT_SHIM"), .gpu_timing_off = 1, .env = env};
    struct th_run r;
    /* with descriptor 2 the job's standard error, the line is there */
    const char *keep[] = {th_env("CT_W_FDS"), "closeloop", file, "100", NULL};
    th_run(&r, &o, keep);
    ck_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0);
    char *err = th_slurp(r.err);
    ck_assert_msg(strstr(err, "cutrace: cannot record to ") == err &&
                      strchr(err, '\n') == err + strlen(err) - 1,
                  "stderr: %s", err);
    free(err);
    /* qemu-user answers a read of /proc/self/cmdline with a descriptor of
     * its own (an unlinked copy), which src/ownfd.c cannot tell from a file
     * of the job's that took the number and so leaves open: the job's next
     * file then does not land on 2 (w_fds exits 4). No CUDA job runs under
     * user-mode emulation. */
    if (th_emulated_skip("the job's file on descriptor 2 (emulated /proc descriptors)"))
        return;
    /* with the job's file there, the same line goes nowhere: the file holds
     * the 9 bytes the job wrote (w_fds reads them back), and only them */
    const char *swap[] = {th_env("CT_W_FDS"), "stderr", file, "100", NULL};
    th_run(&r, &o, swap);
    ck_assert(WIFEXITED(r.status));
    char *got = th_slurp(file);
    ck_assert_msg(!strcmp(got, "user data"), "the job's file holds: %s", got);
    free(got);
    char *o2 = th_slurp(r.out);
    ck_assert_str_eq(o2, "OK\n");
    free(o2);
    ck_assert_int_eq(WEXITSTATUS(r.status), 0);
}
END_TEST

/* The interpreter the Python tests run (meson's find_program), or NULL
 * after saying why the test is skipped. */
static const char *python(void)
{
    const char *py = getenv("CT_PYTHON");
    if (!py || !*py || access(py, X_OK) != 0) {
        fprintf(stderr, "skipped: no python3 interpreter (CT_PYTHON=%s)\n", py ? py : "");
        return NULL;
    }
    if (th_emulated_skip("python3 is this machine's (x86-64)"))
        return NULL;
    return py;
}

/* Bytes a run's traces show read from code files (.py, .pyc, .pth), all
 * processes together. */
static uint64_t code_bytes_read(const struct th_run *r)
{
    char paths[64][TH_RUN_PATH];
    int n = th_run_traces(r, 0, paths, 64);
    uint64_t sum = 0;
    for (int i = 0; i < n && i < 64; i++) {
        struct th_trace t;
        th_trace_read_file(&t, paths[i]);
        for (size_t k = 0; k < t.n; k++) {
            const struct ct_record *rec = &t.recs[k];
            if (rec->kind != CT_REC_IO || (int64_t)rec->f[CT_IO_RESULT] <= 0 ||
                strcmp(ct_reader_string(&t.rd, rec->f[CT_IO_OP]), "read") != 0)
                continue;
            const char *p = ct_reader_string(&t.rd, rec->f[CT_IO_PATH]);
            size_t len = strlen(p);
            if ((len > 3 && !strcmp(p + len - 3, ".py")) ||
                (len > 4 && (!strcmp(p + len - 4, ".pyc") || !strcmp(p + len - 4, ".pth"))))
                sum += rec->f[CT_IO_RESULT];
        }
        th_trace_free(&t);
    }
    return sum;
}

/* A Python process that starts, imports and prints: start-up only, no
 * trace, however much code it reads (the heavy imports read ~4 MiB of
 * .pyc, past the 1 MiB that data I/O needs). */
START_TEST(python_that_only_starts_imports_and_prints_leaves_no_trace)
{
    const char *py = python();
    if (!py)
        return;
    static const char heavy[] =
        "import json, os, typing, zipfile, ipaddress, enum, shutil, pathlib, "
        "tempfile, random, argparse, decimal, email.message, http.client, "
        "unittest, asyncio, xml.dom.minidom";
    static const char *const progs[] = {"print(1)", "import json, os", heavy};
    struct th_run r;
    for (int i = 0; i < 3; i++) {
        const char *env[] = {no_leak_check(), NULL};
        struct th_run_opts o = {.preload = th_env("CT_SHIM"), .gpu_timing_off = 1, .env = env};
        const char *argv[] = {py, "-c", progs[i], NULL};
        th_run(&r, &o, argv);
        char *out = th_run_clean(&r);
        ck_assert_str_eq(out, i == 0 ? "1\n" : "");
        free(out);
        char paths[8][TH_RUN_PATH];
        ck_assert_msg(th_run_traces(&r, 0, paths, 8) == 0, "%s left a trace", progs[i]);
    }
    /* the same imports with every process traced: what they read is code,
     * and more than the threshold */
    const char *every[] = {"CUTRACE_HOST_TRACE_KB=0", no_leak_check(), NULL};
    struct th_run_opts o = {.preload = th_env("CT_SHIM"), .gpu_timing_off = 1, .env = every};
    const char *argv[] = {py, "-c", heavy, NULL};
    th_run(&r, &o, argv);
    free(th_run_clean(&r));
    uint64_t code = code_bytes_read(&r);
    ck_assert_msg(code > (1u << 20), "the imports read %llu bytes of code",
                  (unsigned long long)code);
}
END_TEST

/* Runs py -c PROG FILE under the shim, with the default threshold. */
static void run_python_reader(struct th_run *r, const char *py, const char *file)
{
    static const char prog[] = "import sys\n"
                               "n = 0\n"
                               "with open(sys.argv[1], 'rb') as f:\n"
                               "    while b := f.read(1 << 16):\n"
                               "        n += len(b)\n"
                               "print(n)\n";
    const char *env[] = {no_leak_check(), NULL};
    struct th_run_opts o = {.preload = th_env("CT_SHIM"), .gpu_timing_off = 1, .env = env};
    const char *argv[] = {py, "-c", prog, file, NULL};
    th_run(r, &o, argv);
}

/* Reading data after start-up is work: 2 MiB read leaves a trace with
 * every byte of it; 256 KiB (under CUTRACE_HOST_TRACE_KB) leaves none. */
START_TEST(python_reading_data_after_start_up_leaves_a_trace)
{
    const char *py = python();
    if (!py)
        return;
    static uint8_t buf[2 << 20];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (uint8_t)(i * 131u);
    char big[512], small[512];
    snprintf(big, sizeof(big), "%s/shard.bin", th_tmpdir());
    snprintf(small, sizeof(small), "%s/labels.bin", th_tmpdir());
    ck_assert_int_eq(th_write_file(big, buf, sizeof(buf)), 0);
    ck_assert_int_eq(th_write_file(small, buf, 256 << 10), 0);
    struct th_run r;
    run_python_reader(&r, py, small);
    char *out = th_run_clean(&r);
    ck_assert_str_eq(out, "262144\n");
    free(out);
    char paths[8][TH_RUN_PATH];
    ck_assert_int_eq(th_run_traces(&r, 0, paths, 8), 0);
    run_python_reader(&r, py, big);
    out = th_run_clean(&r);
    ck_assert_str_eq(out, "2097152\n");
    free(out);
    ck_assert_int_eq(th_run_traces(&r, 0, paths, 8), 1);
    struct th_trace t;
    th_trace_read_file(&t, paths[0]);
    ck_assert(t.rd.has_footer);
    uint64_t read_big = 0;
    for (size_t k = 0; k < t.n; k++)
        if (t.recs[k].kind == CT_REC_IO && (int64_t)t.recs[k].f[CT_IO_RESULT] > 0 &&
            !strcmp(ct_reader_string(&t.rd, t.recs[k].f[CT_IO_OP]), "read") &&
            !strcmp(ct_reader_string(&t.rd, t.recs[k].f[CT_IO_PATH]), big))
            read_big += t.recs[k].f[CT_IO_RESULT];
    ck_assert_uint_eq(read_big, sizeof(buf)); /* nothing before the threshold lost */
    th_trace_free(&t);
}
END_TEST

/* The "NAME PID" line of name in py_family.py's output, its pid or 0. */
static int family_pid(const char *out, const char *name)
{
    char key[64];
    snprintf(key, sizeof(key), "\n%s ", name);
    const char *p = strstr(out, key);
    return p ? atoi(p + strlen(key)) : 0;
}

/* Workers that read a few bytes: traced when they descend from a process
 * that used CUDA (forked, spawned, forked again by a spawned one, forked
 * by a fork server), not otherwise. */
START_TEST(workers_of_a_gpu_job_leave_traces_and_those_of_a_cpu_job_none)
{
    const char *py = python();
    if (!py)
        return;
    char file[512], cuda[600];
    snprintf(file, sizeof(file), "%s/sample.txt", th_tmpdir());
    ck_assert_int_eq(th_write_file(file, (const uint8_t *)"one sample\n", 11), 0);
    snprintf(cuda, sizeof(cuda), "CT_FAKE_CUDA=%s/libcuda.so.1", th_env("CT_FAKEGPU_DIR"));
    const char *env[] = {"CUTRACE_FLUSH_MS=5", cuda, no_leak_check(), NULL};
    struct th_run_opts o = {.preload = th_env("CT_SHIM"), .gpu_timing_off = 1, .env = env};
    struct th_run r;
    const char *gpu[] = {py, th_env("CT_PY_FAMILY"), "gpu", file, NULL};
    th_run(&r, &o, gpu);
    char *out = th_run_clean(&r);
    char *lines = malloc(strlen(out) + 2);
    snprintf(lines, strlen(out) + 2, "\n%s", out);
    static const char *const names[] = {"job", "fork-worker", "spawn-worker", "spawn-grandchild",
                                        "forkserver-worker"};
    char paths[16][TH_RUN_PATH];
    for (int i = 0; i < 5; i++) {
        int pid = family_pid(lines, names[i]);
        ck_assert_msg(pid > 0, "no %s in: %s", names[i], out);
        ck_assert_msg(th_run_traces(&r, pid, paths, 16) == 1, "no trace of the %s", names[i]);
    }
    /* any other trace is multiprocessing's resource tracker or fork
     * server (spawned by the job: descendants too), which read the job's
     * messages */
    int n = th_run_traces(&r, 0, paths, 16);
    ck_assert_int_ge(n, 5);
    for (int i = 0; i < n && i < 16; i++) {
        struct th_trace t;
        th_trace_read_file(&t, paths[i]);
        int known = 0;
        for (int k = 0; k < 5; k++)
            known |= t.rd.hdr.pid == (uint32_t)family_pid(lines, names[k]);
        const char *cmd = th_proc_meta(&t, "cmdline", NULL);
        ck_assert_msg(known ||
                          (cmd && (strstr(cmd, "resource_tracker") || strstr(cmd, "forkserver"))),
                      "a trace of %s", cmd ? cmd : "?");
        th_trace_free(&t);
    }
    free(lines);
    free(out);
    /* the same job without CUDA: nothing */
    const char *cpu[] = {py, th_env("CT_PY_FAMILY"), "cpu", file, NULL};
    th_run(&r, &o, cpu);
    free(th_run_clean(&r));
    ck_assert_int_eq(th_run_traces(&r, 0, paths, 16), 0);
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
    tcase_add_test(tc, shim_lines_never_go_into_a_job_file_that_took_descriptor_2);
    tcase_add_test(tc, python_that_only_starts_imports_and_prints_leaves_no_trace);
    tcase_add_test(tc, python_reading_data_after_start_up_leaves_a_trace);
    tcase_add_test(tc, workers_of_a_gpu_job_leave_traces_and_those_of_a_cpu_job_none);
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
