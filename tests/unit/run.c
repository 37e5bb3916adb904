#include "tests/unit/run.h"

#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

const char *th_env(const char *name)
{
    const char *v = getenv(name);
    ck_assert_msg(v != NULL, "test environment lacks %s", name);
    return v;
}

char *th_slurp(const char *path)
{
    size_t n;
    uint8_t *p = th_read_file(path, &n);
    ck_assert_ptr_nonnull(p);
    char *s = realloc(p, n + 1);
    s[n] = 0;
    return s;
}

char *th_cutrace(const char *fmt, ...)
{
    char args[2048], cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof(args), fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof(cmd), "%s %s", th_env("CT_CUTRACE"), args);
    FILE *f = popen(cmd, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = 0, cap = 1 << 16;
    char *out = malloc(cap);
    ck_assert_ptr_nonnull(out);
    for (size_t got; (got = fread(out + n, 1, cap - n - 1, f)) > 0;) {
        n += got;
        if (cap - n - 1 == 0) {
            out = realloc(out, cap *= 2);
            ck_assert_ptr_nonnull(out);
        }
    }
    out[n] = 0;
    ck_assert_msg(pclose(f) == 0, "%s failed", cmd);
    return out;
}

/* In the child: the environment o asks for. */
static void child_env(const struct th_run *r, const struct th_run_opts *o)
{
    setenv("CUTRACE_OUTPUT", r->traces, 1);
    if (o->gpu_timing_off)
        setenv("CUTRACE_GPU_TIMING", "off", 1);
    const char *san = getenv("CT_SANITIZER_PRELOAD");
    if (o->preload && san && *san) {
        char both[2048];
        snprintf(both, sizeof(both), "%s:%s", san, o->preload);
        setenv("LD_PRELOAD", both, 1);
    } else if (o->preload) {
        setenv("LD_PRELOAD", o->preload, 1);
    } else {
        unsetenv("LD_PRELOAD");
    }
    for (const char *const *kv = o->env; kv && *kv; kv++) {
        if (strchr(*kv, '='))
            putenv((char *)*kv);
        else
            unsetenv(*kv);
    }
}

pid_t th_run_start(struct th_run *r, const struct th_run_opts *o, const char *const *argv)
{
    static const struct th_run_opts defaults;
    if (!o)
        o = &defaults;
    snprintf(r->dir, sizeof(r->dir), "%s", th_tmpdir());
    snprintf(r->out, sizeof(r->out), "%s/stdout", r->dir);
    snprintf(r->err, sizeof(r->err), "%s/stderr", r->dir);
    snprintf(r->traces, sizeof(r->traces), "%s/traces", r->dir);
    ck_assert_int_eq(mkdir(r->traces, 0700), 0);
    r->status = -1;
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (o->output == TH_OUT_FILES) {
            int out = open(r->out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
            int err = open(r->err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
            dup2(out, 1);
            dup2(err, 2);
        } else if (o->output == TH_OUT_FD) {
            dup2(o->out_fd, 1);
        }
        child_env(r, o);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    r->pid = pid;
    return pid;
}

int th_run_wait(struct th_run *r)
{
    ck_assert_int_eq(waitpid(r->pid, &r->status, 0), r->pid);
    return r->status;
}

void th_run(struct th_run *r, const struct th_run_opts *o, const char *const *argv)
{
    th_run_start(r, o, argv);
    th_run_wait(r);
}

char *th_run_clean(const struct th_run *r)
{
    char *err = th_slurp(r->err);
    ck_assert_msg(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0, "exit status %d: %s",
                  r->status, err);
    ck_assert_msg(err[0] == 0, "the shim or program wrote to stderr: %s", err);
    free(err);
    return th_slurp(r->out);
}

int th_run_traces(const struct th_run *r, int pid, char (*paths)[TH_RUN_PATH], int max)
{
    DIR *d = opendir(r->traces);
    ck_assert_ptr_nonnull(d);
    char needle[32];
    snprintf(needle, sizeof(needle), "-p%d-", pid);
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 8 || strcmp(e->d_name + len - 8, ".cutrace") != 0)
            continue;
        if (pid && !strstr(e->d_name, needle))
            continue;
        if (found < max)
            snprintf(paths[found], TH_RUN_PATH, "%s/%s", r->traces, e->d_name);
        found++;
    }
    closedir(d);
    return found;
}

int th_run_trace(const struct th_run *r, int pid, char *buf, size_t n)
{
    char path[1][TH_RUN_PATH];
    int found = th_run_traces(r, pid, path, 1);
    ck_assert_msg(found <= 1, "%d traces for pid %d, expected at most 1", found, pid);
    if (found)
        snprintf(buf, n, "%s", path[0]);
    return found;
}

void th_run_read_trace(const struct th_run *r, int pid, struct th_trace *t)
{
    char path[TH_RUN_PATH];
    ck_assert_msg(th_run_trace(r, pid, path, sizeof(path)) == 1, "no trace for pid %d", pid);
    th_trace_read_file(t, path);
    ck_assert_int_eq(t->open_rc, 0);
}
