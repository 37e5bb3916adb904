/*
 * `cutrace start|stop [-o DIR] PID...`: opens or closes a capture window in
 * running processes whose shim records into DIR (CUTRACE_START=paused, or
 * any window). The process's writer polls DIR/.cutrace-control-PID about
 * every 50 ms; the command writes that file atomically and returns. Without
 * -o, DIR is the folder the process itself records into (its
 * CUTRACE_OUTPUT), as `cutrace run` makes a new folder per run.
 */
#include <errno.h>
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

/* The process's own CUTRACE_OUTPUT (its environment as it started), into
 * out: 0, or -1 when it cannot be read or has none. */
static int proc_output(long long pid, char *out, size_t n)
{
    static char env[1 << 17];
    ssize_t len = proc_read(pid, "environ", env, sizeof(env));
    for (ssize_t i = 0; i < len; i += (ssize_t)strlen(env + i) + 1)
        if (!strncmp(env + i, "CUTRACE_OUTPUT=", 15) && env[i + 15]) {
            snprintf(out, n, "%s", env + i + 15);
            return 0;
        }
    return -1;
}

/* 0 when the process maps libcutrace.so (or its maps cannot be read: the
 * control file is then written anyway), -1 when it does not. */
static int proc_has_shim(long long pid)
{
    static char maps[1 << 20];
    ssize_t len = proc_read(pid, "maps", maps, sizeof(maps));
    return len < 0 || strstr(maps, "libcutrace") ? 0 : -1;
}

/* cmd: the command's name; word: what goes in the control file. */
static int control(const char *cmd, const char *word, int argc, char **argv)
{
    const struct option *opts = ct_options_of(CT_CMD_CONTROL);
    const char *dir = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        if (c == 'o') {
            dir = optarg;
        } else if (c == 'h') {
            printf("usage: cutrace %s [-o DIR] PID...\n", cmd);
            return 0;
        } else {
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
    for (int i = optind; i < argc; i++) {
        long long pid;
        if (ct_parse_int(argv[i], 1, INT32_MAX, &pid) != 0) {
            fprintf(stderr, "cutrace %s: %s: expected a process id\n", cmd, argv[i]);
            status = CT_EXIT_USAGE;
            continue;
        }
        if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
            fprintf(stderr, "cutrace %s: no process %lld\n", cmd, pid);
            status = CT_EXIT_BAD_INPUT;
            continue;
        }
        if (proc_has_shim(pid) != 0) {
            fprintf(stderr,
                    "cutrace %s: process %lld has no libcutrace.so loaded (run it under "
                    "cutrace run or with LD_PRELOAD)\n",
                    cmd, pid);
            status = CT_EXIT_BAD_INPUT;
            continue;
        }
        char own[PATH_MAX - 64];
        const char *d = dir;
        if (!d) { /* where the process records: its CUTRACE_OUTPUT, else the shim's "." */
            const char *env = getenv("CUTRACE_OUTPUT");
            d = proc_output(pid, own, sizeof(own)) == 0 ? own : env && *env ? env : ".";
        }
        char tmp[PATH_MAX + 64], path[PATH_MAX + 64];
        snprintf(tmp, sizeof(tmp), "%s/.cutrace-control-%lld.tmp%d", d, pid, (int)getpid());
        snprintf(path, sizeof(path), "%s/.cutrace-control-%lld", d, pid);
        FILE *f = fopen(tmp, "w");
        if (!f || fprintf(f, "%s\n", word) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
            fprintf(stderr, "cutrace %s: cannot write %s: %s\n", cmd, path, strerror(errno));
            unlink(tmp);
            status = CT_EXIT_BAD_INPUT;
            continue;
        }
        printf("cutrace: asked %lld to %s\n", pid, cmd);
    }
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
