/*
 * `cutrace run [-o DIR] -- CMD...`: runs CMD with libcutrace.so preloaded
 * (children inherit it: torchrun, mpirun and srun launch ranks as children),
 * forwards SIGINT/SIGTERM/SIGHUP/SIGQUIT, and exits with CMD's status.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "src/config.h"

#include "decoder/cmd/cli.h"
#include "decoder/read/inputs.h"

static volatile sig_atomic_t g_child;

static void forward(int sig)
{
    if (g_child > 0)
        kill(g_child, sig);
}

/* mkdir -p */
static int make_dirs(const char *path)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
        return -ENAMETOOLONG;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
        return -errno;
    struct stat st;
    if (stat(buf, &st) != 0)
        return -errno;
    return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/* The shim beside this executable: build tree (../shim/) or install (../lib/cutrace/). */
static int find_shim(char *out, size_t n)
{
    const char *env = getenv("CUTRACE_SHIM");
    if (env && *env) {
        if (access(env, R_OK) != 0)
            return -errno;
        return realpath(env, out) ? 0 : -errno;
    }
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (len <= 0)
        return -ENOENT;
    exe[len] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash)
        return -ENOENT;
    *slash = 0;
    static const char *const rel[] = {"/../shim/libcutrace.so", "/../lib/cutrace/libcutrace.so",
                                      "/libcutrace.so"};
    for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
        char cand[PATH_MAX + 64];
        snprintf(cand, sizeof(cand), "%s%s", exe, rel[i]);
        if (access(cand, R_OK) == 0 && realpath(cand, out))
            return 0;
    }
    (void)n;
    return -ENOENT;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: cutrace run [-o DIR] [--gpu-timing=cupti|events|off] [--buffer-kb N] "
               "[--flush-ms N] [--zstd-level N] [--tag KEY=VALUE]... -- CMD [ARGS...]\n"
               "  -o, --output DIR   where traces go (created if needed; default cutrace-traces)\n"
               "  --tag KEY=VALUE    a run tag stored in every trace's metadata (repeatable;\n"
               "                     added to CUTRACE_TAGS)\n"
               "  the other options set the CUTRACE_* variable of the same name for CMD\n");
}

int ct_cmd_run(int argc, char **argv)
{
    static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                         {"buffer-kb", required_argument, NULL, 'b'},
                                         {"flush-ms", required_argument, NULL, 'f'},
                                         {"zstd-level", required_argument, NULL, 'z'},
                                         {"gpu-timing", required_argument, NULL, 'g'},
                                         {"tag", required_argument, NULL, 't'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *out = "cutrace-traces";
    int c;
    optind = 1;
    /* '+': stop at the first operand, CMD's own options are not ours */
    while ((c = getopt_long(argc, argv, "+o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'b': setenv("CUTRACE_BUFFER_KB", optarg, 1); break;
        case 'f': setenv("CUTRACE_FLUSH_MS", optarg, 1); break;
        case 'z': setenv("CUTRACE_ZSTD_LEVEL", optarg, 1); break;
        case 'g':
            if (strcmp(optarg, "cupti") && strcmp(optarg, "events") && strcmp(optarg, "off")) {
                fprintf(stderr, "cutrace run: --gpu-timing=%s: expected cupti, events or off\n",
                        optarg);
                return CT_EXIT_USAGE;
            }
            setenv("CUTRACE_GPU_TIMING", optarg, 1);
            break;
        case 't': {
            char why[256];
            if (ct_tags_check(optarg, why, sizeof(why)) != 0 || strchr(optarg, ',')) {
                fprintf(stderr, "cutrace run: --tag %s: %s\n", optarg,
                        strchr(optarg, ',') ? "one KEY=VALUE per --tag (no ',')" : why);
                return CT_EXIT_USAGE;
            }
            const char *old_tags = getenv("CUTRACE_TAGS");
            size_t need = strlen(optarg) + (old_tags ? strlen(old_tags) + 1 : 0) + 1;
            char *all = malloc(need);
            if (!all)
                return CT_EXIT_USAGE;
            snprintf(all, need, "%s%s%s", old_tags && *old_tags ? old_tags : "",
                     old_tags && *old_tags ? "," : "", optarg);
            setenv("CUTRACE_TAGS", all, 1);
            free(all);
            break;
        }
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return CT_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "cutrace run: expected a command after the options (cutrace run -- CMD)\n");
        return CT_EXIT_USAGE;
    }
    int rc = make_dirs(out);
    if (rc) {
        fprintf(stderr, "cutrace run: cannot create output directory %s: %s\n", out, strerror(-rc));
        return CT_EXIT_USAGE;
    }
    char dir[PATH_MAX], shim[PATH_MAX];
    if (!realpath(out, dir)) {
        fprintf(stderr, "cutrace run: %s: %s\n", out, strerror(errno));
        return CT_EXIT_USAGE;
    }
    if ((rc = find_shim(shim, sizeof(shim))) != 0) {
        fprintf(stderr, "cutrace run: cannot find libcutrace.so (set CUTRACE_SHIM): %s\n",
                strerror(-rc));
        return CT_EXIT_USAGE;
    }
    const char *old = getenv("LD_PRELOAD");
    size_t need = strlen(shim) + (old ? strlen(old) : 0) + 2;
    char *preload = malloc(need);
    if (!preload)
        return CT_EXIT_USAGE;
    snprintf(preload, need, "%s%s%s", shim, old && *old ? ":" : "", old ? old : "");
    setenv("LD_PRELOAD", preload, 1);
    setenv("CUTRACE_OUTPUT", dir, 1);
    /* NVTX ranges reach us through NVTX's own injection hook, unless the
     * user already points it at another tool. */
    const char *nvtx = getenv("NVTX_INJECTION64_PATH");
    if (!nvtx || !*nvtx)
        setenv("NVTX_INJECTION64_PATH", shim, 1);
    /* Per-op GPU times from NCCL's profiler plugin interface: the shim is
     * that plugin too (NCCL dlopens it; it is already loaded). */
    const char *prof = getenv("NCCL_PROFILER_PLUGIN");
    if (!prof || !*prof)
        setenv("NCCL_PROFILER_PLUGIN", shim, 1);
    free(preload);

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = forward;
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaction(sigs[i], &sa, NULL);

    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "cutrace run: fork: %s\n", strerror(errno));
        return CT_EXIT_USAGE;
    }
    if (pid == 0) {
        execvp(argv[optind], argv + optind);
        fprintf(stderr, "cutrace run: cannot run %s: %s\n", argv[optind], strerror(errno));
        _exit(127);
    }
    g_child = pid;
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "cutrace run: waitpid: %s\n", strerror(errno));
            return CT_EXIT_USAGE;
        }
    }
    g_child = 0;
    struct ct_inputs in = {0};
    char err[256];
    char *dirs[] = {dir};
    size_t ntraces = ct_inputs_expand(&in, dirs, 1, err, sizeof(err)) == 0 ? in.n : 0;
    ct_inputs_free(&in);
    fprintf(stderr, "cutrace: %zu trace%s in %s\n", ntraces, ntraces == 1 ? "" : "s", dir);
    const char *mode = getenv("CUTRACE_MODE"), *start = getenv("CUTRACE_START");
    if (!ntraces && mode && !strcmp(mode, "light")) {
        /* a process that no window reached records nothing, by design */
        const char *w = getenv("CUTRACE_LIGHT_WINDOW_MS"), *p = getenv("CUTRACE_LIGHT_PERIOD_MS");
        fprintf(stderr,
                "cutrace: light mode records the first %s ms of every %s ms of the clock: no "
                "window opened while the job did GPU work (for a short job, use "
                "CUTRACE_MODE=full)\n",
                w ? w : "3000", p ? p : "60000");
    } else if (!ntraces && start && !strcmp(start, "paused")) {
        fprintf(stderr,
                "cutrace: CUTRACE_START=paused: no window was opened (cutrace start PID)\n");
    }
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
