/*
 * `cutrace start|stop [-o DIR] PID...`: opens or closes a capture window in
 * running processes whose shim records into DIR (CUTRACE_START=paused, or
 * any window). The process's writer polls DIR/.cutrace-control-PID about
 * every 50 ms; the command writes that file atomically and returns.
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
#include "src/config.h"

/* cmd: the command's name; word: what goes in the control file. */
static int control(const char *cmd, const char *word, int argc, char **argv)
{
    static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *dir = getenv("CUTRACE_OUTPUT");
    if (!dir || !*dir)
        dir = "cutrace-traces";
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
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
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
        char tmp[PATH_MAX], path[PATH_MAX];
        snprintf(tmp, sizeof(tmp), "%s/.cutrace-control-%lld.tmp%d", dir, pid, (int)getpid());
        snprintf(path, sizeof(path), "%s/.cutrace-control-%lld", dir, pid);
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
