/*
 * `cutrace start|stop [-o DIR] PID...`: opens or closes a capture window in
 * running processes whose shim records into DIR (CUTRACE_START=paused, or
 * any window). The process's writer polls DIR/.cutrace-control-PID about
 * every 50 ms; the command writes that file atomically and returns. Without
 * -o, DIR is the folder the process itself records into (its
 * CUTRACE_OUTPUT), as `cutrace run` makes a new folder per run.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "decoder/cmd/cli.h"
#include "decoder/util/options.h"
#include "src/config.h"

/* What /proc/PID/FILE holds (NUL-terminated, at most n - 1 bytes), or -1. */
static ssize_t proc_read(long long pid, const char *file, char *buf, size_t n)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%lld/%s", pid, file);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t got = fread(buf, 1, n - 1, f);
    fclose(f);
    buf[got] = 0;
    return (ssize_t)got;
}

/* The value of variable name in the process's environment as it started,
 * into out: 1 when set, 0 when not set, -1 when it cannot be read. */
static int proc_env(long long pid, const char *name, char *out, size_t n)
{
    static char env[1 << 17];
    ssize_t len = proc_read(pid, "environ", env, sizeof(env));
    if (len <= 0)
        return -1;
    size_t k = strlen(name);
    for (ssize_t i = 0; i < len; i += (ssize_t)strlen(env + i) + 1)
        if (!strncmp(env + i, name, k) && env[i + (ssize_t)k] == '=') {
            snprintf(out, n, "%s", env + i + k + 1);
            return 1;
        }
    return 0;
}

/* 1 when the process started with a flight recorder (CUTRACE_FLIGHT set,
 * not "0": src/config.c), 0 when not, -1 when its environment cannot be
 * read. */
static int proc_has_flight(long long pid)
{
    char v[64];
    int rc = proc_env(pid, "CUTRACE_FLIGHT", v, sizeof(v));
    return rc <= 0 ? rc : v[0] && strcmp(v, "0") != 0;
}

/* 1 when the process is gone or a zombie (ended, not reaped yet). */
static int proc_ended(long long pid)
{
    char stat[512];
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        return 1;
    ssize_t n = proc_read(pid, "stat", stat, sizeof(stat));
    const char *p = n > 0 ? strrchr(stat, ')') : NULL; /* the name may hold spaces */
    return n <= 0 || (p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'));
}

/* 0 when the process maps libcutrace.so (or its maps cannot be read or
 * are empty: the control file is then written anyway), -1 when it does
 * not. */
static int proc_has_shim(long long pid)
{
    static char maps[1 << 20];
    ssize_t len = proc_read(pid, "maps", maps, sizeof(maps));
    /* empty: a process that has exited and not been reaped yet (its
     * mappings are gone): nothing to tell, as before it ended */
    return len <= 0 || strstr(maps, "libcutrace") ? 0 : -1;
}

/* How long a request waits for the process's writer to take it: its poll
 * is every 50 ms (shim/capture.c), a loaded machine may delay it. */
#define CONTROL_WAIT_MS 3000

/* cmd: the command's name; word: what goes in the control file. */
static int control(const char *cmd, const char *word, int argc, char **argv)
{
    const struct option *opts = ct_options_of(CT_CMD_CONTROL);
    const char *dir = NULL;
    int c;
    optind = 1;
    opterr = 0; /* our message, not getopt's */
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        if (c == 'o') {
            dir = optarg;
        } else if (c == 'h') {
            printf("usage: cutrace %s [-o DIR] PID...\n"
                   "  start: open a capture window in each running process (recorded with\n"
                   "         CUTRACE_START=paused); stop: close it; dump-now: write the\n"
                   "         flight recorder's window now (CUTRACE_FLIGHT)\n"
                   "  -o, --output DIR  the trace folder the process writes to (default: the\n"
                   "                    process's own CUTRACE_OUTPUT, read from its\n"
                   "                    environment, else this one's, else .)\n"
                   "  returns once each process's writer took the request (up to 3 s each)\n",
                   cmd);
            ct_help_tail(stdout, cmd);
            return 0;
        } else {
            char name[32];
            snprintf(name, sizeof(name), "cutrace %s", cmd);
            ct_bad_option(CT_CMD_CONTROL, name, argv[optind - 1]);
            return CT_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "cutrace %s: expected the process id(s)\n", cmd);
        return CT_EXIT_USAGE;
    }
    struct stat st;
    if (dir && (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
        fprintf(stderr,
                "cutrace %s: %s: not a trace directory (use -o DIR as given to cutrace run)\n", cmd,
                dir);
        return CT_EXIT_USAGE;
    }
    int status = 0;
    /* every request written first, then every one waited for: a launcher
     * asking all its ranks opens their windows together, not one poll
     * period (50 ms) apart per rank */
    size_t n = (size_t)(argc - optind);
    struct request {
        long long pid;
        char path[PATH_MAX + 64];
        char dir[PATH_MAX - 64];
        int state; /* 0 waiting, 1 done */
    } *req = calloc(n ? n : 1, sizeof(*req));
    if (!req) {
        fprintf(stderr, "cutrace %s: out of memory\n", cmd);
        return CT_EXIT_BAD_INPUT;
    }
    for (size_t k = 0; k < n; k++) {
        struct request *q = &req[k];
        q->state = 1;
        const char *arg = argv[optind + (int)k];
        if (ct_parse_int(arg, 1, INT32_MAX, &q->pid) != 0) {
            fprintf(stderr, "cutrace %s: %s: expected a process id\n", cmd, arg);
            status = CT_EXIT_USAGE;
            continue;
        }
        if (kill((pid_t)q->pid, 0) != 0 && errno == ESRCH) {
            fprintf(stderr, "cutrace %s: no process %lld\n", cmd, q->pid);
            status = CT_EXIT_BAD_INPUT;
            continue;
        }
        if (proc_has_shim(q->pid) != 0) {
            fprintf(stderr,
                    "cutrace %s: process %lld has no libcutrace.so loaded (run it under "
                    "cutrace run or with LD_PRELOAD)\n",
                    cmd, q->pid);
            status = CT_EXIT_BAD_INPUT;
            continue;
        }
        if (dir) {
            snprintf(q->dir, sizeof(q->dir), "%s", dir);
        } else if (proc_env(q->pid, "CUTRACE_OUTPUT", q->dir, sizeof(q->dir)) != 1 || !q->dir[0]) {
            /* where the process records: its CUTRACE_OUTPUT, else the shim's "." */
            const char *env = getenv("CUTRACE_OUTPUT");
            snprintf(q->dir, sizeof(q->dir), "%s", env && *env ? env : ".");
        }
        char tmp[PATH_MAX + 64];
        snprintf(tmp, sizeof(tmp), "%s/.cutrace-control-%lld.tmp%d", q->dir, q->pid, (int)getpid());
        snprintf(q->path, sizeof(q->path), "%s/.cutrace-control-%lld", q->dir, q->pid);
        /* 0600 whatever the umask: the shim obeys only a control file of
         * its user's that no one else may write (shim/capture.c) */
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
        if (!f && fd >= 0)
            close(fd);
        if (!f || fprintf(f, "%s\n", word) < 0 || fclose(f) != 0 || rename(tmp, q->path) != 0) {
            fprintf(stderr, "cutrace %s: cannot write %s: %s\n", cmd, q->path, strerror(errno));
            unlink(tmp);
            status = CT_EXIT_BAD_INPUT;
            continue;
        }
        q->state = 0;
    }
    /* the writer takes the file (it removes it) at its next poll, about
     * every 50 ms: waiting for that makes the command's return the moment
     * the windows opened or closed, and says when nobody listens */
    for (int t = 0; t <= CONTROL_WAIT_MS / 5; t++) {
        size_t waiting = 0;
        for (size_t k = 0; k < n; k++) {
            struct request *q = &req[k];
            if (q->state)
                continue;
            if (access(q->path, F_OK) != 0 && errno == ENOENT) {
                q->state = 1;
                if (!strcmp(word, "dump") && proc_has_flight(q->pid) == 0) {
                    /* it took the request, and has nothing to write */
                    fprintf(stderr,
                            "cutrace %s: process %lld has no flight recorder (it started "
                            "without CUTRACE_FLIGHT): nothing written\n",
                            cmd, q->pid);
                    status = CT_EXIT_BAD_INPUT;
                    continue;
                }
                printf("cutrace: %lld %s\n", q->pid,
                       !strcmp(word, "start")  ? "started a capture window"
                       : !strcmp(word, "stop") ? "closed its capture window"
                                               : "wrote its flight recorder's window");
            } else if (proc_ended(q->pid)) {
                q->state = 1;
                unlink(q->path);
                /* its window closed with it: what a stop asked for */
                if (!strcmp(word, "stop")) {
                    printf("cutrace: %lld ended: its capture window closed with it\n", q->pid);
                } else {
                    fprintf(stderr, "cutrace %s: process %lld ended before it took the request\n",
                            cmd, q->pid);
                    status = CT_EXIT_BAD_INPUT;
                }
            } else if (t == CONTROL_WAIT_MS / 5) {
                q->state = 1;
                unlink(q->path);
                fprintf(stderr,
                        "cutrace %s: process %lld did not take the request within %d ms: its "
                        "shim listens only when it records in windows (CUTRACE_START=paused, "
                        "CUTRACE_DURATION, light mode) or with the flight recorder, into %s\n",
                        cmd, q->pid, CONTROL_WAIT_MS, q->dir);
                status = CT_EXIT_BAD_INPUT;
            } else {
                waiting++;
            }
        }
        if (!waiting)
            break;
        usleep(5000);
    }
    free(req);
    return status;
}

int ct_cmd_start(int argc, char **argv)
{
    return control("start", "start", argc, argv);
}

int ct_cmd_stop(int argc, char **argv)
{
    return control("stop", "stop", argc, argv);
}

/* Asks a process running the flight recorder (CUTRACE_FLIGHT) to write its
 * window now, as SIGUSR2 does. */
int ct_cmd_dump_now(int argc, char **argv)
{
    return control("dump-now", "dump", argc, argv);
}
