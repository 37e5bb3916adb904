/* Running a program as the shim, io, nvtx and process suites do: in a fresh
 * directory, under the preloaded shim, its traces in that directory's
 * traces/, its output captured; then reading back what it left. */
#ifndef CT_TEST_RUN_H
#define CT_TEST_RUN_H

#include <stddef.h>
#include <sys/types.h>

#include "tests/unit/helpers.h"

/* Room for a trace path in the run's directory. */
#define TH_RUN_PATH 600

/* Where the child's stdout and stderr go. */
enum th_output {
    TH_OUT_FILES,   /* into r->out and r->err (the default) */
    TH_OUT_INHERIT, /* both left as the test's own */
    TH_OUT_FD,      /* stdout onto out_fd, stderr left as the test's own */
};

struct th_run_opts {
    /* LD_PRELOAD, after the runtimes in CT_SANITIZER_PRELOAD when that is
     * set; NULL: LD_PRELOAD unset. */
    const char *preload;
    int gpu_timing_off; /* CUTRACE_GPU_TIMING=off */
    enum th_output output;
    int out_fd; /* TH_OUT_FD only */
    /* "K=V" entries put into the child's environment last, so they override
     * all of the above; a bare "K" unsets K. NULL-terminated, or NULL. */
    const char *const *env;
};

struct th_run {
    char dir[256];           /* fresh for each run */
    char traces[300];        /* dir/traces, the child's CUTRACE_OUTPUT */
    char out[512], err[512]; /* dir/stdout, dir/stderr (TH_OUT_FILES) */
    pid_t pid;
    int status; /* wait status, once waited for */
};

/* The value of a variable the test environment must set; fails the test
 * when it is unset. */
const char *th_env(const char *name);

/* A whole file as a NUL-terminated string; fails the test when it cannot
 * be read. Caller frees. */
char *th_slurp(const char *path);

/* The standard output of `$CT_CUTRACE ARGS` (printf-style), run by the
 * shell; fails the test on a non-zero status. Caller frees. */
char *th_cutrace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Starts argv[0] with argv and o (NULL: all defaults) in a fresh directory;
 * does not wait. Returns the child's pid, also in r->pid. */
pid_t th_run_start(struct th_run *r, const struct th_run_opts *o, const char *const *argv);

/* Waits for the started child; its wait status in r->status, returned. */
int th_run_wait(struct th_run *r);

/* th_run_start, then th_run_wait. */
void th_run(struct th_run *r, const struct th_run_opts *o, const char *const *argv);

/* Requires a TH_OUT_FILES run to have exited 0 with nothing on stderr;
 * returns its stdout (caller frees). */
char *th_run_clean(const struct th_run *r);

/* How many traces the run wrote for process pid (any process when pid is
 * 0); the paths of the first max of them into paths. */
int th_run_traces(const struct th_run *r, int pid, char (*paths)[TH_RUN_PATH], int max);

/* The run's one trace for pid (0: any process): fails the test when there
 * are several; returns 0 when there is none, else 1 with its path in buf. */
int th_run_trace(const struct th_run *r, int pid, char *buf, size_t n);

/* Reads the run's one trace for pid (0: any process) into t, failing the
 * test unless there is exactly one and it opens. */
void th_run_read_trace(const struct th_run *r, int pid, struct th_trace *t);

#endif
