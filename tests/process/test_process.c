/*
 * Suite "process": what a trace keeps when its process ends in each way a
 * production job's processes end, and that a forked child gets its own.
 * Buffers are flushed only every 60 s in these runs (CUTRACE_FLUSH_MS), so
 * any record on disk got there through the path under test.
 */
#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "decoder/read/symbols.h"
#include "tests/unit/helpers.h"
#include "tests/unit/run.h"

/* Starts w_life mode arg under the shim (GPU timing off, buffers flushed
 * every flush_ms), stdout onto out_fd when it is not -1; extra env "K=V"
 * entries. Does not wait. */
static pid_t spawn_env(struct th_run *l, const char *mode, const char *arg, const char *flush_ms,
                       int out_fd, const char *const *env)
{
    char flush[64];
    snprintf(flush, sizeof(flush), "CUTRACE_FLUSH_MS=%s", flush_ms);
    const char *kv[8] = {flush};
    for (size_t i = 1; env && *env && i < 7; i++)
        kv[i] = *env++;
    struct th_run_opts o = {.preload = th_env("CT_SHIM"),
                            .gpu_timing_off = 1,
                            .output = out_fd >= 0 ? TH_OUT_FD : TH_OUT_INHERIT,
                            .out_fd = out_fd,
                            .env = kv};
    const char *argv[] = {th_env("CT_LIFE"), mode, arg, NULL};
    return th_run_start(l, &o, argv);
}

static pid_t spawn(struct th_run *l, const char *mode, const char *flush_ms, int out_fd)
{
    return spawn_env(l, mode, "50", flush_ms, out_fd, NULL);
}

static void run_life(struct th_run *l, const char *mode)
{
    spawn(l, mode, "60000", -1);
    th_run_wait(l);
}

static size_t launches(const struct th_trace *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += t->recs[i].kind == CT_REC_API && t->recs[i].f[CT_API_FAMILY] == CT_FAM_LAUNCH;
    return n;
}

static void one_trace(const struct th_run *l, struct th_trace *t)
{
    th_run_read_trace(l, 0, t);
    ck_assert_uint_eq(t->rd.damage_total, 0);
}

/* The image's start (start_mono_ns) comes before every record of it:
 * `cutrace goodput` counts start-up from there. */
static void starts_before_its_records(const struct th_trace *t)
{
    const char *v = th_proc_meta(t, "start_mono_ns", NULL);
    ck_assert_msg(v != NULL, "no start_mono_ns");
    unsigned long long start = strtoull(v, NULL, 10);
    ck_assert_uint_gt(start, 0);
    for (size_t i = 0; i < t->n; i++)
        if (t->recs[i].kind == CT_REC_API)
            ck_assert_uint_le(start, t->recs[i].f[CT_API_START]);
}

START_TEST(segfault_finishes_the_trace_then_dies_as_it_would)
{
    struct th_run l;
    run_life(&l, "segv");
    const char *san = getenv("CT_SANITIZER_PRELOAD");
    if (san && *san) {
        /* ASan's own SEGV handler was there first: ours chains to it, and it
         * reports and exits non-zero instead of dying by the signal */
        ck_assert(WIFEXITED(l.status) && WEXITSTATUS(l.status) != 0);
    } else {
        ck_assert(WIFSIGNALED(l.status));
        ck_assert_int_eq(WTERMSIG(l.status), SIGSEGV);
    }
    struct th_trace t;
    one_trace(&l, &t);
    if (!(san && *san))
        ck_assert(t.rd.has_footer); /* the default action: the trace was finished first */
    ck_assert_uint_eq(launches(&t), 50);
    th_trace_free(&t);
}
END_TEST

START_TEST(sigterm_finishes_the_trace_then_dies_as_it_would)
{
    struct th_run l;
    run_life(&l, "term");
    ck_assert(WIFSIGNALED(l.status));
    ck_assert_int_eq(WTERMSIG(l.status), SIGTERM);
    struct th_trace t;
    one_trace(&l, &t);
    ck_assert(t.rd.has_footer);
    ck_assert_uint_eq(launches(&t), 50);
    /* what ended it, when (after its last call), for cutrace goodput */
    uint64_t when = 0;
    const char *sig = th_proc_meta(&t, "signal", &when);
    ck_assert_msg(sig && !strcmp(sig, "15"), "signal: %s", sig ? sig : "(none)");
    for (size_t i = 0; i < t.n; i++)
        if (t.recs[i].kind == CT_REC_API)
            ck_assert_uint_ge(when, t.recs[i].f[CT_API_END]);
    starts_before_its_records(&t);
    th_trace_free(&t);
}
END_TEST

/* A job's own handlers run as without the shim, and the job sees its
 * dispositions as it set them; its normal exit finishes the trace. */
START_TEST(job_handlers_run_as_without_the_shim)
{
    const char *env[] = {"CUTRACE_FLUSH_MS=60000", NULL};
    struct th_run_opts o = {.preload = th_env("CT_SHIM"), .gpu_timing_off = 1, .env = env};
    const char *argv[] = {th_env("CT_LIFE"), "handler", "50", NULL};
    struct th_run l;
    th_run(&l, &o, argv);
    char *out = th_run_clean(&l);
    ck_assert_str_eq(out, "HANDLED\n");
    free(out);
    struct th_trace t;
    one_trace(&l, &t);
    ck_assert(t.rd.has_footer);
    ck_assert_uint_eq(launches(&t), 50);
    ck_assert_ptr_null(th_proc_meta(&t, "signal", NULL)); /* handled: not an end */
    th_trace_free(&t);
}
END_TEST

/* SIG_DFL set back by the job: the default action again, and the trace
 * finished before it (Python does this to die by SIGINT after a
 * KeyboardInterrupt). */
START_TEST(default_action_set_back_by_the_job_still_finishes_the_trace)
{
    struct th_run l;
    run_life(&l, "redefault");
    ck_assert(WIFSIGNALED(l.status));
    ck_assert_int_eq(WTERMSIG(l.status), SIGTERM);
    struct th_trace t;
    one_trace(&l, &t);
    ck_assert(t.rd.has_footer);
    ck_assert_uint_eq(launches(&t), 50);
    const char *sig = th_proc_meta(&t, "signal", NULL);
    ck_assert_msg(sig && !strcmp(sig, "15"), "signal: %s", sig ? sig : "(none)");
    th_trace_free(&t);
}
END_TEST

/* `cutrace run -o DIR -- JOB...` (through sh's exec, so that DIR is the
 * run's traces/), its stdout onto a pipe until the job prints READY; then
 * sig to cutrace run, which forwards it. Returns 0 after saying why the
 * test is skipped. */
static int interrupt_cutrace_run(struct th_run *r, const char *job, int sig)
{
    if (getenv("CT_SANITIZER_PRELOAD") && *getenv("CT_SANITIZER_PRELOAD")) {
        fprintf(stderr, "skipped: cutrace run cannot preload the sanitizer runtime before the "
                        "shim\n");
        return 0;
    }
    char cmd[2048], cuda[600];
    snprintf(cmd, sizeof(cmd),
             "exec %s run -o \"$CUTRACE_OUTPUT\" --gpu-timing=off -- %s "
             "2>\"$CUTRACE_OUTPUT/../job.err\"",
             th_env("CT_CUTRACE"), job);
    snprintf(cuda, sizeof(cuda), "CT_FAKE_CUDA=%s/libcuda.so.1", th_env("CT_FAKEGPU_DIR"));
    const char *env[] = {cuda, NULL};
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    struct th_run_opts o = {.output = TH_OUT_FD, .out_fd = fds[1], .env = env};
    const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    th_run_start(r, &o, argv);
    close(fds[1]);
    char buf[16] = "";
    ck_assert_int_gt(read(fds[0], buf, sizeof(buf) - 1), 0);
    ck_assert_msg(!strncmp(buf, "READY", 5), "the job printed %s", buf);
    close(fds[0]);
    kill(r->pid, sig);
    th_run_wait(r);
    return 1;
}

/* What the trace of an interrupted job shows: whole, with its footer, its
 * 50 launches and the signal, and `cutrace info` says so. */
static void stopped_by(const struct th_run *r, int sig, const char *name)
{
    char errpath[700];
    snprintf(errpath, sizeof(errpath), "%s/job.err", r->dir);
    char *err = th_slurp(errpath);
    char paths[2][TH_RUN_PATH];
    int n = th_run_traces(r, 0, paths, 2);
    ck_assert_msg(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 128 + sig && n == 1,
                  "cutrace run's status %d, %d traces; its stderr: %.1500s", r->status, n, err);
    free(err);
    struct th_trace t;
    one_trace(r, &t);
    ck_assert(t.rd.has_footer);
    ck_assert_uint_eq(launches(&t), 50);
    char want[8];
    snprintf(want, sizeof(want), "%d", sig);
    const char *v = th_proc_meta(&t, "signal", NULL);
    ck_assert_msg(v && !strcmp(v, want), "signal: %s", v ? v : "(none)");
    th_trace_free(&t);
    char *info = th_cutrace("info %s", r->traces);
    char line[64];
    snprintf(line, sizeof(line), "status:     complete, stopped by %s\n", name);
    ck_assert_msg(strstr(info, line), "cutrace info: %s", info);
    free(info);
    /* without its footer (a handler that ran out of time), info says the
     * trace was cut, and what had stopped the process */
    char path[TH_RUN_PATH], cut[700];
    ck_assert_int_eq(th_run_trace(r, 0, path, sizeof(path)), 1);
    snprintf(cut, sizeof(cut), "%s/cut.cutrace", r->dir);
    size_t len = 0;
    uint8_t *bytes = th_read_file(path, &len);
    ck_assert_ptr_nonnull(bytes);
    ck_assert_uint_gt(len, 8 + 40);
    ck_assert_int_eq(th_write_file(cut, bytes, len - (8 + 40)), 0); /* the footer's frame */
    free(bytes);
    info = th_cutrace("info %s", cut);
    snprintf(line, sizeof(line), "(no footer: the process was stopped by %s before", name);
    ck_assert_msg(strstr(info, "status:     truncated at offset ") && strstr(info, line),
                  "cutrace info: %s", info);
    free(info);
}

START_TEST(sigterm_to_cutrace_run_leaves_a_whole_trace_stopped_by_sigterm)
{
    struct th_run r;
    char job[700];
    snprintf(job, sizeof(job), "%s sleep 50", th_env("CT_LIFE"));
    if (interrupt_cutrace_run(&r, job, SIGTERM))
        stopped_by(&r, SIGTERM, "SIGTERM");
}
END_TEST

START_TEST(sigint_to_cutrace_run_leaves_a_whole_trace_stopped_by_sigint)
{
    struct th_run r;
    char job[700];
    snprintf(job, sizeof(job), "%s sleep 50", th_env("CT_LIFE"));
    if (interrupt_cutrace_run(&r, job, SIGINT))
        stopped_by(&r, SIGINT, "SIGINT");
}
END_TEST

/* The other two that `cutrace run` forwards (SIGQUIT's default action
 * dumps core: w_life sets its core size limit to 0). */
START_TEST(sighup_and_sigquit_to_cutrace_run_leave_whole_traces)
{
    static const int sigs[] = {SIGHUP, SIGQUIT};
    static const char *const names[] = {"SIGHUP", "SIGQUIT"};
    for (int i = 0; i < 2; i++) {
        struct th_run r;
        char job[700];
        snprintf(job, sizeof(job), "%s sleep 50", th_env("CT_LIFE"));
        if (!interrupt_cutrace_run(&r, job, sigs[i]))
            return;
        stopped_by(&r, sigs[i], names[i]);
    }
}
END_TEST

/* Python's own SIGINT handler raises KeyboardInterrupt; after it the
 * interpreter sets SIG_DFL and kills itself with SIGINT, skipping exit
 * handlers: the shim's handler, back in place, finishes the trace. */
START_TEST(interrupted_python_job_leaves_a_whole_trace_stopped_by_sigint)
{
    const char *py = getenv("CT_PYTHON");
    if (!py || !*py || access(py, X_OK) != 0) {
        fprintf(stderr, "skipped: no python3 interpreter (CT_PYTHON=%s)\n", py ? py : "");
        return;
    }
    if (th_emulated_skip("python3 is this machine's (x86-64)"))
        return;
    struct th_run r;
    char job[1400];
    snprintf(job, sizeof(job), "%s %s", py, th_env("CT_PY_SLEEP"));
    if (!interrupt_cutrace_run(&r, job, SIGINT))
        return;
    stopped_by(&r, SIGINT, "SIGINT");
    char err[700];
    snprintf(err, sizeof(err), "%s/job.err", r.dir);
    char *e = th_slurp(err);
    ck_assert_msg(strstr(e, "KeyboardInterrupt"), "the job's stderr: %s", e); /* Python's own */
    free(e);
}
END_TEST

START_TEST(underscore_exit_finishes_the_trace)
{
    struct th_run l;
    run_life(&l, "exit");
    ck_assert(WIFEXITED(l.status));
    ck_assert_int_eq(WEXITSTATUS(l.status), 3);
    struct th_trace t;
    one_trace(&l, &t);
    ck_assert(t.rd.has_footer);
    ck_assert_uint_eq(launches(&t), 50);
    ck_assert_ptr_null(th_proc_meta(&t, "signal", NULL)); /* an exit, no signal */
    starts_before_its_records(&t);
    th_trace_free(&t);
}
END_TEST

START_TEST(exec_finishes_one_trace_and_the_new_image_starts_the_next)
{
    struct th_run l;
    run_life(&l, "exec");
    ck_assert(WIFEXITED(l.status));
    ck_assert_int_eq(WEXITSTATUS(l.status), 0);
    char paths[4][TH_RUN_PATH];
    ck_assert_int_eq(th_run_traces(&l, 0, paths, 4), 2);
    size_t counts[2];
    unsigned gens[2];
    for (int i = 0; i < 2; i++) {
        struct th_trace t;
        th_trace_read_file(&t, paths[i]);
        ck_assert(t.rd.has_footer);
        ck_assert_uint_eq(t.rd.hdr.pid, (uint32_t)l.pid); /* exec keeps the pid */
        counts[i] = launches(&t);
        gens[i] = t.rd.hdr.gen;
        th_trace_free(&t);
    }
    int first = gens[0] == 0 ? 0 : 1;
    ck_assert_uint_eq(gens[first], 0);
    ck_assert_uint_eq(gens[1 - first], 1);
    ck_assert_uint_eq(counts[first], 50);
    ck_assert_uint_eq(counts[1 - first], 5);
}
END_TEST

START_TEST(forked_child_gets_its_own_trace)
{
    struct th_run l;
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    spawn(&l, "fork", "60000", fds[1]);
    close(fds[1]);
    char out[128] = "";
    ssize_t n = read(fds[0], out, sizeof(out) - 1);
    close(fds[0]);
    ck_assert_int_gt(n, 0);
    th_run_wait(&l);
    ck_assert(WIFEXITED(l.status) && WEXITSTATUS(l.status) == 0);
    int child = 0;
    ck_assert(sscanf(out, "CHILD %d", &child) == 1);
    char paths[4][TH_RUN_PATH];
    ck_assert_int_eq(th_run_traces(&l, 0, paths, 4), 2);
    int seen_parent = 0, seen_child = 0;
    for (int i = 0; i < 2; i++) {
        struct th_trace t;
        th_trace_read_file(&t, paths[i]);
        ck_assert(t.rd.has_footer);
        if (t.rd.hdr.pid == (uint32_t)l.pid) {
            seen_parent = 1;
            ck_assert_uint_eq(launches(&t), 50);
        } else {
            seen_child = 1;
            ck_assert_uint_eq(t.rd.hdr.pid, (uint32_t)child);
            /* only the child's own call: none of the parent's records */
            ck_assert_uint_eq(launches(&t), 0);
            size_t syncs = 0;
            for (size_t k = 0; k < t.n; k++)
                syncs += t.recs[k].kind == CT_REC_API && t.recs[k].f[CT_API_FAMILY] == CT_FAM_SYNC;
            ck_assert_uint_eq(syncs, 1);
            /* and its metadata names its parent */
            int ppid_ok = 0;
            char want[32];
            snprintf(want, sizeof(want), "%d", (int)l.pid);
            for (size_t k = 0; k < t.n; k++)
                if (t.recs[k].kind == CT_REC_META &&
                    !strcmp(ct_reader_string(&t.rd, t.recs[k].f[CT_META_KEY]), "ppid"))
                    ppid_ok = !strcmp(ct_reader_string(&t.rd, t.recs[k].f[CT_META_VALUE]), want);
            ck_assert(ppid_ok);
        }
        th_trace_free(&t);
    }
    ck_assert(seen_parent && seen_child);
}
END_TEST

/* Starts w_life in mode (N = 50) and waits for its READY. */
static void start_ready(struct th_run *l, const char *mode, const char *flush_ms,
                        const char *const *env)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    spawn_env(l, mode, "50", flush_ms, fds[1], env);
    close(fds[1]);
    char buf[16];
    ck_assert_int_gt(read(fds[0], buf, sizeof(buf)), 0); /* READY */
    close(fds[0]);
}

/* The files in dir whose names end in suffix: how many, and the first's
 * path in first (when not NULL). */
static int count_suffix(const char *dir, const char *suffix, char *first, size_t n)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int k = 0;
    size_t sl = strlen(suffix);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < sl || strcmp(e->d_name + len - sl, suffix) != 0)
            continue;
        if (!k++ && first)
            snprintf(first, n, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    return k;
}

START_TEST(sigkill_loses_nothing_recorded_the_trace_is_salvaged)
{
    /* w_life hold under CUTRACE_FLUSH_MS=60000: 1 launch the writer took
     * at its first pass, then 50 in the process's ring alone when it is
     * killed; only its live mapping keeps them */
    struct th_run l;
    start_ready(&l, "hold", "60000", NULL);
    const char *shm = getenv("CUTRACE_TEST_SHM_DIR");
    ck_assert_ptr_nonnull(shm);
    char map[600], aside[700];
    ck_assert_int_eq(count_suffix(shm, ".live", map, sizeof(map)), 1); /* made at start */
    kill(l.pid, SIGKILL);
    th_run_wait(&l);
    ck_assert(WIFSIGNALED(l.status) && WTERMSIG(l.status) == SIGKILL);
    struct th_trace t;
    /* the file alone (its mapping moved aside): the launches are not in it */
    snprintf(aside, sizeof(aside), "%s.aside", l.dir);
    ck_assert_int_eq(rename(map, aside), 0);
    one_trace(&l, &t);
    ck_assert(!t.rd.has_footer && !t.rd.salvaged);
    ck_assert_uint_le(launches(&t), 1);
    th_trace_free(&t);
    ck_assert_int_eq(rename(aside, map), 0);
    /* read-only: the reader decodes the file and the mapping together */
    one_trace(&l, &t);
    ck_assert(t.rd.salvaged && t.rd.salvage_in_memory && t.rd.has_footer);
    ck_assert_uint_eq(launches(&t), 51);
    ck_assert_uint_ge(t.rd.salvage.records, 50);
    ck_assert_uint_eq(t.rd.salvage.half_written, 0);
    th_trace_free(&t);
    ck_assert_int_eq(count_suffix(shm, ".live", NULL, 0), 1); /* reading touched nothing */
    /* `cutrace salvage` writes it: the same records, from the file now */
    char *out = th_cutrace("salvage %s", l.traces);
    ck_assert_msg(strstr(out, "salvaged: ") && strstr(out, "(killed)"), "%s", out);
    free(out);
    ck_assert_int_eq(count_suffix(shm, ".live", NULL, 0), 0);
    one_trace(&l, &t);
    ck_assert(t.rd.salvaged && !t.rd.salvage_in_memory && t.rd.has_footer);
    ck_assert_uint_eq(launches(&t), 51);
    th_trace_free(&t);
    out = th_cutrace("info %s", l.traces);
    ck_assert_msg(strstr(out, "status:     complete, salvaged: the process was killed"), "%s", out);
    free(out);
}
END_TEST

START_TEST(salvage_leaves_the_mapping_of_a_live_process_alone)
{
    struct th_run l;
    start_ready(&l, "hold", "60000", NULL);
    const char *shm = getenv("CUTRACE_TEST_SHM_DIR");
    char *out = th_cutrace("salvage %s", l.traces);
    ck_assert_msg(strstr(out, "is alive: its mapping is not touched"), "%s", out);
    free(out);
    ck_assert_int_eq(count_suffix(shm, ".live", NULL, 0), 1);
    struct th_trace t;
    one_trace(&l, &t); /* the file alone, read while it is being written */
    ck_assert(!t.rd.salvaged && !t.rd.has_footer && t.rd.live_left == 1);
    ck_assert_uint_le(launches(&t), 1); /* the rest is in the live process's ring */
    th_trace_free(&t);
    kill(l.pid, SIGKILL);
    th_run_wait(&l);
    one_trace(&l, &t);
    ck_assert(t.rd.salvaged);
    ck_assert_uint_eq(launches(&t), 51);
    th_trace_free(&t);
}
END_TEST

START_TEST(a_later_process_of_the_job_salvages_its_killed_predecessor)
{
    /* no `cutrace run` here: the next process recording into the folder
     * (a restarted attempt's rank) finds the killed one's mapping and
     * completes its trace, on a thread of its own */
    struct th_run a;
    start_ready(&a, "hold", "60000", NULL);
    kill(a.pid, SIGKILL);
    th_run_wait(&a);
    const char *shm = getenv("CUTRACE_TEST_SHM_DIR");
    ck_assert_int_eq(count_suffix(shm, ".live", NULL, 0), 1);
    char first[TH_RUN_PATH];
    ck_assert_int_eq(th_run_trace(&a, 0, first, sizeof(first)), 1);
    /* the next process, in the same folder */
    struct th_run b;
    char out[400];
    snprintf(out, sizeof(out), "CUTRACE_OUTPUT=%s", a.traces);
    const char *env[] = {out, NULL};
    start_ready(&b, "hold", "60000", env);
    int done = 0;
    for (int i = 0; i < 500 && !done; i++) { /* up to 5 s */
        done = ct_trace_has_footer(first) == 1;
        if (!done) {
            struct timespec ts = {0, 10 * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    ck_assert_msg(done, "the later process did not complete %s", first);
    kill(b.pid, SIGKILL);
    th_run_wait(&b);
    struct th_trace t;
    th_trace_read_file(&t, first);
    ck_assert_int_eq(t.open_rc, 0);
    ck_assert(t.rd.salvaged && !t.rd.salvage_in_memory && t.rd.has_footer);
    ck_assert_uint_eq(launches(&t), 51);
    th_trace_free(&t);
    /* only the second one's mapping is left (it was killed too) */
    ck_assert_int_eq(count_suffix(shm, ".live", NULL, 0), 1);
}
END_TEST

START_TEST(sigkill_with_private_buffers_decodes_to_its_last_frame)
{
    /* CUTRACE_BUFFERS=private (as before the live mapping): what the writer
     * wrote decodes, cut at its last frame; flushed every 20 ms */
    struct th_run l;
    const char *env[] = {"CUTRACE_BUFFERS=private", NULL};
    start_ready(&l, "sleep", "20", env);
    ck_assert_int_eq(count_suffix(getenv("CUTRACE_TEST_SHM_DIR"), ".live", NULL, 0), 0);
    ck_assert_int_eq(count_suffix(l.traces, "-live", NULL, 0), 0);
    struct timespec ts = {0, 300 * 1000000L}; /* 15 flush intervals */
    nanosleep(&ts, NULL);
    kill(l.pid, SIGKILL);
    th_run_wait(&l);
    ck_assert(WIFSIGNALED(l.status) && WTERMSIG(l.status) == SIGKILL);
    struct th_trace t;
    one_trace(&l, &t);
    ck_assert(t.rd.truncated);
    ck_assert(!t.rd.has_footer && !t.rd.salvaged);
    ck_assert_uint_eq(launches(&t), 50);
    th_trace_free(&t);
}
END_TEST

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void cutrace_cmd(const char *cmd, const struct th_run *l)
{
    char line[1024];
    snprintf(line, sizeof(line), "%s %s -o %s %d > /dev/null", getenv("CT_CUTRACE"), cmd, l->traces,
             (int)l->pid);
    ck_assert_int_eq(system(line), 0);
}

/* Window boundaries recorded as "capture" metadata, in order. */
static int windows(const struct th_trace *t, uint64_t *start, uint64_t *stop, int max)
{
    int n = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct ct_record *m = &t->recs[i];
        if (m->kind != CT_REC_META ||
            strcmp(ct_reader_string(&t->rd, m->f[CT_META_KEY]), "capture"))
            continue;
        const char *v = ct_reader_string(&t->rd, m->f[CT_META_VALUE]);
        if (!strcmp(v, "start") && n < max) {
            start[n] = m->f[CT_META_TIME];
            stop[n++] = UINT64_MAX;
        } else if (!strcmp(v, "stop") && n > 0) {
            stop[n - 1] = m->f[CT_META_TIME];
        }
    }
    return n;
}

/* A paused shim (env holds CUTRACE_START=paused) in 1.5 s of one launch per
 * ms, with a window opened 300 ms in and closed 400 ms later; its trace. */
static void paused_with_window(struct th_run *l, const char *const *env, struct th_trace *t)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    spawn_env(l, "loop", "15", "20", fds[1], env);
    close(fds[1]);
    char buf[16];
    ck_assert_int_gt(read(fds[0], buf, sizeof(buf)), 0); /* READY */
    close(fds[0]);
    sleep_ms(300);
    cutrace_cmd("start", l);
    sleep_ms(400);
    cutrace_cmd("stop", l);
    th_run_wait(l);
    ck_assert(WIFEXITED(l->status) && WEXITSTATUS(l->status) == 0);
    one_trace(l, t);
}

START_TEST(paused_shim_records_only_inside_the_window)
{
    struct th_run l;
    const char *env[] = {"CUTRACE_START=paused", NULL};
    struct th_trace t;
    paused_with_window(&l, env, &t);
    uint64_t a[4], b[4];
    ck_assert_int_eq(windows(&t, a, b, 4), 1);
    ck_assert_uint_ne(b[0], UINT64_MAX);
    size_t inside = launches(&t);
    for (size_t i = 0; i < t.n; i++) {
        const struct ct_record *r = &t.recs[i];
        if (r->kind == CT_REC_API) /* a call in flight at the stop may end after it */
            ck_assert_msg(r->f[CT_API_START] >= a[0] && r->f[CT_API_START] <= b[0],
                          "a call outside the window");
    }
    /* ~400 ms of one launch per ms (plus polling latency, 50 ms each way);
     * loose bounds: a loaded machine sleeps longer than asked */
    ck_assert_uint_gt(inside, 50);
    ck_assert_uint_lt(inside, 900);
    th_trace_free(&t);
}
END_TEST

/* The value of the last recorder metadata record `key`, or NULL. */
static const char *meta_value(const struct th_trace *t, const char *key)
{
    const char *v = NULL;
    for (size_t i = 0; i < t->n; i++) {
        const struct ct_record *m = &t->recs[i];
        if (m->kind == CT_REC_META && !strcmp(ct_reader_string(&t->rd, m->f[CT_META_KEY]), key))
            v = ct_reader_string(&t->rd, m->f[CT_META_VALUE]);
    }
    return v;
}

/* With CUPTI (the simulated one), a paused shim leaves it idle: kernels
 * launched outside the window are not collected at all (on a real GPU
 * that is CUPTI's instrumentation of every kernel saved), while the
 * window's kernels still get their GPU records. */
START_TEST(paused_shim_leaves_cupti_idle)
{
    struct th_run l;
    char lib[600];
    snprintf(lib, sizeof(lib), "CUTRACE_CUPTI_LIB=%s", th_env("CT_FAKE_CUPTI"));
    const char *env[] = {"CUTRACE_START=paused", "CUTRACE_GPU_TIMING=cupti", lib, NULL};
    struct th_trace t;
    paused_with_window(&l, env, &t);
    ck_assert_str_eq(meta_value(&t, "gpu_timing"), "cupti");
    size_t inside = launches(&t), timed = 0;
    for (size_t i = 0; i < t.n; i++)
        timed += t.recs[i].kind == CT_REC_GPU && t.recs[i].f[CT_GPU_SOURCE] == CT_SRC_CUPTI;
    ck_assert_uint_gt(inside, 50);
    /* every launch in the window timed, give or take the one in flight at
     * each boundary (under emulation, 10-50x slower and uneven, a few) */
    size_t slack = getenv("CT_EMULATED") ? 8 : 2;
    ck_assert_msg(timed + slack >= inside && timed <= inside + slack, "%zu launches, %zu timed",
                  inside, timed);
    /* ~1100 launches outside the window: with CUPTI left collecting, each
     * would have come back and been dropped; now at most the few in flight
     * when the window closed */
    const char *out = meta_value(&t, "cupti_outside_windows");
    ck_assert_ptr_nonnull(out);
    ck_assert_msg(strtoull(out, NULL, 10) <= 5, "cupti_outside_windows = %s", out);
    th_trace_free(&t);
}
END_TEST

START_TEST(duration_closes_the_window)
{
    struct th_run l;
    const char *env[] = {"CUTRACE_DURATION=1", NULL};
    spawn_env(&l, "loop", "25", "20", -1, env); /* 2.5 s of launches, 1 s recorded */
    th_run_wait(&l);
    ck_assert(WIFEXITED(l.status) && WEXITSTATUS(l.status) == 0);
    struct th_trace t;
    one_trace(&l, &t);
    uint64_t a[4], b[4];
    ck_assert_int_eq(windows(&t, a, b, 4), 1);
    ck_assert_uint_ne(b[0], UINT64_MAX);
    uint64_t len = b[0] - a[0];
    /* the writer checks the deadline every pass (<= 5 ms) */
    ck_assert_uint_ge(len, 1000000000ull);
    ck_assert_uint_lt(len, 1200000000ull);
    for (size_t i = 0; i < t.n; i++)
        if (t.recs[i].kind == CT_REC_API)
            ck_assert(t.recs[i].f[CT_API_START] <= b[0]);
    th_trace_free(&t);
}
END_TEST

START_TEST(blocking_call_carries_its_symbolised_call_stack)
{
    struct th_run l;
    run_life(&l, "stack");
    ck_assert(WIFEXITED(l.status) && WEXITSTATUS(l.status) == 0);
    char paths[4][TH_RUN_PATH];
    ck_assert_int_eq(th_run_traces(&l, 0, paths, 4), 1);
    struct ct_trace t;
    char err[512];
    ck_assert_int_eq(ct_trace_load(&t, paths[0], 1, err, sizeof(err)), 0);
    int found = 0, launch_stacks = 0;
    for (size_t i = 0; i < t.n; i++) {
        const struct ct_record *r = &t.recs[i];
        if (r->kind != CT_REC_API)
            continue;
        const char *frames = ct_trace_stack(&t, r->f[CT_API_CORR]);
        if (r->f[CT_API_FAMILY] == CT_FAM_LAUNCH) {
            launch_stacks += frames != NULL; /* not a blocking call: no stack */
            continue;
        }
        if (strcmp(ct_reader_string(&t.rd, r->f[CT_API_NAME]), "cuStreamSynchronize") != 0)
            continue;
        ck_assert_ptr_nonnull(frames);
        /* innermost first: the caller of the driver entry point comes first */
        char name[512];
        ct_symbolize(&t, strtoull(frames, NULL, 16), name, sizeof(name));
        ck_assert_msg(strstr(name, "sync_from_here+") == name, "innermost frame %s", name);
        found++;
    }
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(launch_stacks, 0);
    /* I/O: the 30 ms read has its caller (over CUTRACE_IO_STACK_NS, 1 ms by
     * default); the read that found its byte waiting has no stack */
    int slow = 0, quick = 0;
    for (size_t i = 0; i < t.n; i++) {
        const struct ct_record *r = &t.recs[i];
        if (r->kind != CT_REC_IO || strcmp(ct_reader_string(&t.rd, r->f[CT_IO_OP]), "read") != 0 ||
            ct_reader_string(&t.rd, r->f[CT_IO_PATH])[0] != 'p') /* pipe:[ino] */
            continue;
        const char *frames = ct_trace_io_stack(&t, r->tid, r->f[CT_IO_START]);
        uint64_t dur = r->f[CT_IO_END] - r->f[CT_IO_START];
        if (dur >= 20000000u) {
            ck_assert_ptr_nonnull(frames);
            /* the innermost frame that is not a sanitizer runtime's read
             * interceptor (sanitizer builds preload one before the shim) */
            char name[512] = "";
            for (const char *fr = frames; fr; fr = strchr(fr, ';') ? strchr(fr, ';') + 1 : NULL) {
                ct_symbolize(&t, strtoull(fr, NULL, 16), name, sizeof(name));
                if (!strstr(name, "(libasan") && !strstr(name, "(libubsan") &&
                    !strstr(name, "(libtsan"))
                    break;
            }
            ck_assert_msg(strstr(name, "read_slowly_here+") == name, "innermost frame %s", name);
            slow++;
        } else if (dur < 1000000u) {
            ck_assert_ptr_null(frames);
            quick++;
        }
    }
    ck_assert_int_eq(slow, 1);
    ck_assert_int_eq(quick, 1);
    ct_trace_free(&t);
}
END_TEST

START_TEST(disk_full_mid_run_stops_recording_and_the_job_runs_on)
{
    /* The trace may not grow past 5 KiB: the header and first frames fit,
     * then writes fail with EFBIG as on a full disk. */
    const char *env[] = {"CUTRACE_FLUSH_MS=10", "W_LIFE_FSIZE=5120", NULL};
    struct th_run_opts o = {.preload = th_env("CT_SHIM"), .gpu_timing_off = 1, .env = env};
    const char *argv[] = {th_env("CT_LIFE"), "loop", "5", NULL}; /* 0.5 s of launches */
    struct th_run l;
    th_run(&l, &o, argv);
    ck_assert(WIFEXITED(l.status) && WEXITSTATUS(l.status) == 0);
    char *out = th_slurp(l.out), *err = th_slurp(l.err);
    ck_assert_str_eq(out, "READY\n"); /* the job did all it does */
    /* one line, naming the file and the cause */
    ck_assert_msg(strstr(err, "cutrace: writing ") == err && strstr(err, "File too large") &&
                      strchr(err, '\n') == err + strlen(err) - 1,
                  "stderr: %s", err);
    free(out);
    free(err);
    struct th_trace t;
    th_run_read_trace(&l, 0, &t);
    ck_assert_uint_eq(t.rd.damage_total, 0); /* cut back to the last whole frame */
    ck_assert_uint_gt(launches(&t), 0);
    th_trace_free(&t);
}
END_TEST

/* The error record of a flight-recorder file saying why it was written. */
static int written_on(const struct th_trace *t, const char *why)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->recs[i].kind == CT_REC_ERROR &&
            strstr(ct_reader_string(&t->rd, t->recs[i].f[CT_ERROR_WHAT]), why))
            return 1;
    return 0;
}

/* API records of a window, and the span of their start times. */
static size_t window_calls(const struct th_trace *t, uint64_t *first, uint64_t *last)
{
    size_t n = 0;
    *first = UINT64_MAX;
    *last = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct ct_record *r = &t->recs[i];
        if (r->kind != CT_REC_API)
            continue;
        n++;
        *first = r->f[CT_API_START] < *first ? r->f[CT_API_START] : *first;
        *last = r->f[CT_API_START] > *last ? r->f[CT_API_START] : *last;
    }
    return n;
}

/* `cutrace dump-now` of a process that listens (a paused shim) but has no
 * flight recorder: the request is taken, nothing can be written, and the
 * command says so and exits 1 rather than "wrote its window". */
START_TEST(dump_now_without_a_flight_recorder_says_nothing_was_written)
{
    struct th_run l;
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    const char *env[] = {"CUTRACE_START=paused", NULL};
    spawn_env(&l, "loop", "15", "20", fds[1], env); /* 1.5 s of launches */
    close(fds[1]);
    char buf[16];
    ck_assert_int_gt(read(fds[0], buf, sizeof(buf)), 0); /* READY */
    close(fds[0]);
    char err[600], line[2048];
    snprintf(err, sizeof(err), "%s/dump-now.err", th_tmpdir());
    snprintf(line, sizeof(line), "%s dump-now -o %s %d > /dev/null 2> %s", getenv("CT_CUTRACE"),
             l.traces, (int)l.pid, err);
    int st = system(line);
    th_run_wait(&l);
    char *msg = th_slurp(err);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %d: %s", st, msg);
    ck_assert_msg(strstr(msg, "has no flight recorder (it started without CUTRACE_FLIGHT): "
                              "nothing written"),
                  "%s", msg);
    free(msg);
    char paths[2][TH_RUN_PATH];
    ck_assert_int_eq(th_run_traces(&l, 0, paths, 2), 0); /* paused throughout: no trace */
}
END_TEST

START_TEST(flight_recorder_writes_its_window_on_request)
{
    struct th_run l;
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    const char *env[] = {"CUTRACE_FLIGHT=1", NULL};
    spawn_env(&l, "loop", "25", "20", fds[1], env); /* 2.5 s of launches */
    close(fds[1]);
    char buf[16];
    ck_assert_int_gt(read(fds[0], buf, sizeof(buf)), 0); /* READY */
    close(fds[0]);
    sleep_ms(1500);
    ck_assert_int_eq(kill(l.pid, SIGUSR2), 0);
    sleep_ms(300);
    cutrace_cmd("dump-now", &l);
    th_run_wait(&l);
    ck_assert(WIFEXITED(l.status) && WEXITSTATUS(l.status) == 0);
    /* nothing but the two windows: the flight recorder writes on request */
    char paths[4][TH_RUN_PATH];
    ck_assert_int_eq(th_run_traces(&l, 0, paths, 4), 2);
    int usr2 = 0, now = 0;
    for (int i = 0; i < 2; i++) {
        ck_assert_ptr_nonnull(strstr(paths[i], "-flight"));
        struct th_trace t;
        th_trace_read_file(&t, paths[i]);
        ck_assert(t.rd.has_footer);
        ck_assert_uint_eq(t.rd.damage_total, 0);
        usr2 += written_on(&t, "written on SIGUSR2");
        now += written_on(&t, "written on cutrace dump-now");
        /* the last second (CUTRACE_FLIGHT=1), a launch every ms; a frame
         * is dropped whole, so up to one flush interval more */
        uint64_t a, b;
        size_t n = window_calls(&t, &a, &b);
        ck_assert_uint_gt(n, 200);
        ck_assert_uint_le(b - a, 1100000000ull);
        /* names survive the frames that first defined them */
        int named = 0;
        for (size_t k = 0; k < t.n; k++)
            named += t.recs[k].kind == CT_REC_API &&
                     !strcmp(ct_reader_string(&t.rd, t.recs[k].f[CT_API_NAME]), "cuLaunchKernel");
        ck_assert_int_gt(named, 200);
        th_trace_free(&t);
    }
    ck_assert_int_eq(usr2, 1);
    ck_assert_int_eq(now, 1);
}
END_TEST

START_TEST(flight_recorder_writes_its_window_on_a_fatal_signal)
{
    struct th_run l;
    const char *env[] = {"CUTRACE_FLIGHT=5", NULL};
    /* SIGTERM (raised): a segfault would be UBSan's report in sanitizer builds */
    spawn_env(&l, "term", "2000", "20", -1, env);
    th_run_wait(&l);
    ck_assert(WIFSIGNALED(l.status) && WTERMSIG(l.status) == SIGTERM);
    char path[TH_RUN_PATH];
    ck_assert_int_eq(th_run_trace(&l, 0, path, sizeof(path)), 1);
    ck_assert_ptr_nonnull(strstr(path, "-flight0"));
    struct th_trace t;
    th_trace_read_file(&t, path);
    ck_assert(written_on(&t, "written on a fatal signal"));
    ck_assert_uint_eq(launches(&t), 2000); /* everything up to the fault */
    th_trace_free(&t);
}
END_TEST

/* CLOCK_REALTIME minus the trace clock, from the trace's first clock record. */
static int64_t real_minus_trace(const struct th_trace *t)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->recs[i].kind == CT_REC_CLOCK)
            return (int64_t)(t->recs[i].f[CT_CLOCK_REAL] - t->recs[i].f[CT_CLOCK_MONO]);
    ck_abort_msg("no clock record");
    return 0;
}

/* Light mode: complete windows, the first 200 ms of every 500 ms of the
 * realtime clock, everything recorded inside and nothing outside. */
START_TEST(light_mode_records_complete_windows_on_a_realtime_duty_cycle)
{
    struct th_run l;
    const char *env[] = {"CUTRACE_MODE=light", "CUTRACE_LIGHT_WINDOW_MS=200",
                         "CUTRACE_LIGHT_PERIOD_MS=500", NULL};
    spawn_env(&l, "loop", "25", "20", -1, env); /* 2.5 s, one launch per ms */
    th_run_wait(&l);
    ck_assert(WIFEXITED(l.status) && WEXITSTATUS(l.status) == 0);
    struct th_trace t;
    one_trace(&l, &t);
    uint64_t a[16], b[16];
    int n = windows(&t, a, b, 16);
    ck_assert_int_ge(n, 4);
    int64_t off = real_minus_trace(&t);
    const uint64_t P = 500000000ull, W = 200000000ull;
    /* The writer checks the schedule every pass (<= 5 ms); a loaded CI
     * machine can hold its thread longer, so 40 ms of slack, still far
     * from the 300 ms pause. */
    const uint64_t slack = 40000000ull;
    uint64_t covered = 0;
    for (int k = 0; k < n; k++) {
        uint64_t rs = a[k] + (uint64_t)off;
        int first = k == 0, last = b[k] == UINT64_MAX || k == n - 1;
        if (!first) /* the first may open at the start, inside a window */
            ck_assert_msg(rs % P < slack, "window %d opens %llu ms into its period", k,
                          (unsigned long long)(rs % P / 1000000));
        if (!first && !last) {
            ck_assert_uint_ge(b[k] - a[k], W - slack);
            ck_assert_uint_le(b[k] - a[k], W + slack);
        }
        if (b[k] != UINT64_MAX)
            covered += b[k] - a[k];
    }
    size_t inside = 0;
    for (size_t i = 0; i < t.n; i++) {
        const struct ct_record *r = &t.recs[i];
        if (r->kind != CT_REC_API)
            continue;
        int in = 0;
        for (int k = 0; k < n && !in; k++)
            in = r->f[CT_API_START] >= a[k] && r->f[CT_API_START] <= b[k];
        ck_assert_msg(in, "a call outside every window");
        inside += r->f[CT_API_FAMILY] == CT_FAM_LAUNCH;
    }
    /* one launch per ms of window, less a loaded machine's oversleeping */
    ck_assert_uint_gt(inside, covered / 1000000 / 3);
    ck_assert_str_eq(meta_value(&t, "mode"), "light");
    ck_assert_str_eq(meta_value(&t, "light_window_ms"), "200");
    ck_assert_str_eq(meta_value(&t, "light_period_ms"), "500");
    th_trace_free(&t);
}
END_TEST

/* The driver helper lookups of a run (driver_symbol_lookups at exit), and
 * its launches, their stream ids and kernel names. */
struct old_run {
    unsigned long lookups;
    size_t launches, unnamed, no_stream;
    char version[16];
};

static void old_driver_run(const char *version, const char *dir, const char *n, struct old_run *o)
{
    char lib[1024], ver[64];
    snprintf(lib, sizeof(lib), "LD_LIBRARY_PATH=%s:%s", dir, th_env("CT_FAKEGPU_DIR"));
    snprintf(ver, sizeof(ver), "FAKEGPU_DRIVER_VERSION=%s", version);
    const char *env[] = {lib, ver, NULL};
    struct th_run l;
    spawn_env(&l, "loop", n, "20", -1, env);
    th_run_wait(&l);
    ck_assert_msg(WIFEXITED(l.status) && WEXITSTATUS(l.status) == 0, "driver %s", version);
    struct th_trace t;
    one_trace(&l, &t);
    memset(o, 0, sizeof(*o));
    for (size_t i = 0; i < t.n; i++) {
        const struct ct_record *r = &t.recs[i];
        if (r->kind != CT_REC_API || r->f[CT_API_FAMILY] != CT_FAM_LAUNCH)
            continue;
        o->launches++;
        o->no_stream += r->f[CT_API_STREAM] == 0;
        o->unnamed += strcmp(ct_reader_string(&t.rd, r->f[CT_API_KERNEL]), "tick__1us") != 0;
    }
    const char *lk = meta_value(&t, "driver_symbol_lookups");
    ck_assert_ptr_nonnull(lk);
    o->lookups = strtoul(lk, NULL, 10);
    const char *dv = meta_value(&t, "driver_version");
    snprintf(o->version, sizeof(o->version), "%s", dv ? dv : "");
    th_trace_free(&t);
}

/* Drivers that lack cuStreamGetId (before 12.0), cuFuncGetName and
 * cuKernelGetName (before 12.3), cuStreamGetDevice (before 12.8): the
 * shim looks each helper up once, whatever the driver lacks (a failed
 * lookup is remembered: 14 dlsym calls a launch before), and every launch
 * still has its stream id and its kernel's name (from the module call). */
START_TEST(older_drivers_resolve_helpers_once_and_record_every_launch)
{
    const char *list = th_env("CT_OLD_DRIVERS"); /* "V=DIR V=DIR ..." */
    char buf[4096];
    snprintf(buf, sizeof(buf), "%s 13000=%s", list, th_env("CT_FAKEGPU_DIR"));
    int levels = 0;
    for (char *save = NULL, *tok = strtok_r(buf, " ", &save); tok;
         tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        ck_assert_ptr_nonnull(eq);
        *eq = 0;
        struct old_run a, b;
        old_driver_run(tok, eq + 1, "1", &a); /* 100 launches */
        old_driver_run(tok, eq + 1, "3", &b); /* 300 */
        ck_assert_str_eq(a.version, tok);
        ck_assert_uint_eq(b.launches, 300);
        ck_assert_msg(b.lookups == a.lookups && b.lookups < 40,
                      "driver %s: %lu lookups for 100 launches, %lu for 300", tok, a.lookups,
                      b.lookups);
        ck_assert_msg(b.no_stream == 0 && b.unnamed == 0,
                      "driver %s: %zu without stream, %zu unnamed", tok, b.no_stream, b.unnamed);
        levels++;
    }
    ck_assert_int_eq(levels, 4);
}
END_TEST

/* Runs w_life loop under the shim with extra env (and an extra preload);
 * requires a clean exit with READY printed; returns its stderr. */
static char *run_faulty(struct th_run *l, const char *const *env, const char *also_preload)
{
    char preload[1024];
    snprintf(preload, sizeof(preload), "%s%s%s", th_env("CT_SHIM"), also_preload ? ":" : "",
             also_preload ? also_preload : "");
    struct th_run_opts o = {.preload = preload, .gpu_timing_off = 1, .env = env};
    const char *argv[] = {th_env("CT_LIFE"), "loop", "2", NULL};
    th_run(l, &o, argv);
    ck_assert(WIFEXITED(l->status) && WEXITSTATUS(l->status) == 0);
    char *out = th_slurp(l->out);
    ck_assert_str_eq(out, "READY\n");
    free(out);
    return th_slurp(l->err);
}

/* Sanitizer runtimes need descriptors and threads of their own and
 * intercept pthread_create first: these fault injections only mean
 * something without them. */
static int sanitized(void)
{
    const char *san = getenv("CT_SANITIZER_PRELOAD");
    return san && *san;
}

START_TEST(no_file_descriptor_left_leaves_the_job_alone)
{
    if (sanitized())
        return;
    const char *env[] = {"W_LIFE_FILL_FDS=1", NULL};
    struct th_run l;
    char *err = run_faulty(&l, env, NULL);
    ck_assert_msg(strstr(err, "cutrace: cannot record to ") == err &&
                      strstr(err, "Too many open files") &&
                      strchr(err, '\n') == err + strlen(err) - 1,
                  "stderr: %s", err);
    free(err);
    char path[TH_RUN_PATH];
    ck_assert_int_eq(th_run_trace(&l, 0, path, sizeof(path)), 0);
}
END_TEST

START_TEST(no_writer_thread_leaves_the_job_alone)
{
    if (sanitized())
        return;
    struct th_run l;
    char *err = run_faulty(&l, NULL, th_env("CT_NOTHREAD"));
    ck_assert_msg(strstr(err, "cutrace: cannot record to ") == err &&
                      strstr(err, "Resource temporarily unavailable") &&
                      strchr(err, '\n') == err + strlen(err) - 1,
                  "stderr: %s", err);
    free(err);
    /* the file is created by the writer thread, once there is something to
     * write: none was started, so no file is left half made */
    char path[TH_RUN_PATH];
    ck_assert_int_eq(th_run_trace(&l, 0, path, sizeof(path)), 0);
}
END_TEST

Suite *process_suite(void)
{
    Suite *s = suite_create("process");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, segfault_finishes_the_trace_then_dies_as_it_would);
    tcase_add_test(tc, sigterm_finishes_the_trace_then_dies_as_it_would);
    tcase_add_test(tc, job_handlers_run_as_without_the_shim);
    tcase_add_test(tc, default_action_set_back_by_the_job_still_finishes_the_trace);
    tcase_add_test(tc, sigterm_to_cutrace_run_leaves_a_whole_trace_stopped_by_sigterm);
    tcase_add_test(tc, sigint_to_cutrace_run_leaves_a_whole_trace_stopped_by_sigint);
    tcase_add_test(tc, sighup_and_sigquit_to_cutrace_run_leave_whole_traces);
    tcase_add_test(tc, interrupted_python_job_leaves_a_whole_trace_stopped_by_sigint);
    tcase_add_test(tc, underscore_exit_finishes_the_trace);
    tcase_add_test(tc, exec_finishes_one_trace_and_the_new_image_starts_the_next);
    tcase_add_test(tc, forked_child_gets_its_own_trace);
    tcase_add_test(tc, sigkill_loses_nothing_recorded_the_trace_is_salvaged);
    tcase_add_test(tc, salvage_leaves_the_mapping_of_a_live_process_alone);
    tcase_add_test(tc, a_later_process_of_the_job_salvages_its_killed_predecessor);
    tcase_add_test(tc, sigkill_with_private_buffers_decodes_to_its_last_frame);
    tcase_add_test(tc, paused_shim_records_only_inside_the_window);
    tcase_add_test(tc, paused_shim_leaves_cupti_idle);
    tcase_add_test(tc, duration_closes_the_window);
    tcase_add_test(tc, blocking_call_carries_its_symbolised_call_stack);
    tcase_add_test(tc, disk_full_mid_run_stops_recording_and_the_job_runs_on);
    tcase_add_test(tc, no_file_descriptor_left_leaves_the_job_alone);
    tcase_add_test(tc, no_writer_thread_leaves_the_job_alone);
    tcase_add_test(tc, flight_recorder_writes_its_window_on_request);
    tcase_add_test(tc, dump_now_without_a_flight_recorder_says_nothing_was_written);
    tcase_add_test(tc, flight_recorder_writes_its_window_on_a_fatal_signal);
    tcase_add_test(tc, light_mode_records_complete_windows_on_a_realtime_duty_cycle);
    tcase_add_test(tc, older_drivers_resolve_helpers_once_and_record_every_launch);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(process_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
