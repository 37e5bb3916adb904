/*
 * `cutrace run [-o DIR] -- CMD...`: runs CMD with libcutrace.so preloaded
 * (children inherit it: torchrun, mpirun and srun launch ranks as children),
 * forwards SIGINT/SIGTERM/SIGHUP/SIGQUIT, and exits with CMD's status.
 * Everything that would make the job run untraced (a bad option or
 * CUTRACE_* value, a misspelt variable, a folder the job cannot write) is
 * refused before CMD starts; every run gets an identity of its own
 * (CUTRACE_RUN_ID) and, unless -o names one, a new folder (cutrace-runN).
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "src/config.h"

#include "decoder/cmd/cli.h"
#include "decoder/util/options.h"
#include "decoder/load/load.h"
#include "decoder/load/run_identity.h"
#include "decoder/util/names.h"
#include "src/reader.h"
#include "src/salvage.h"

extern char **environ;

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
    /* the traces' own folder: this user's alone (the umask may narrow it) */
    if (mkdir(buf, 0700) != 0 && errno != EEXIST)
        return -errno;
    struct stat st;
    if (stat(buf, &st) != 0)
        return -errno;
    return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/* A new folder of this run's own in the current one: cutrace-runN, N one
 * more than the highest there (as nsys numbers report1, report2), made
 * with mkdir so that two runs started at once never share one. */
static int new_run_dir(char *out, size_t n)
{
    long next = ct_newest_run_dir(out, n) + 1;
    for (int tries = 0; tries < 1000; tries++, next++) {
        snprintf(out, n, "cutrace-run%ld", next);
        if (mkdir(out, 0700) == 0)
            return 0;
        if (errno != EEXIST)
            return -errno;
    }
    return -EEXIST;
}

/* This run's identity: when it started (UTC) and 32 random bits, so that
 * runs sort by time and two started in the same second differ. */
static void new_run_id(char *out, size_t n)
{
    uint32_t rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
        rnd = (uint32_t)getpid() ^ (uint32_t)time(NULL) * 2654435761u;
    time_t now = time(NULL);
    struct tm tm;
    char when[32] = "0";
    if (gmtime_r(&now, &tm))
        strftime(when, sizeof(when), "%Y%m%dT%H%M%SZ", &tm);
    snprintf(out, n, "%s-%08x", when, rnd);
}

/* The option that sets each CUTRACE_* variable: a bad value is named as
 * the user gave it. */
static const struct {
    const char *var, *opt;
} var_opts[] = {{"CUTRACE_BUFFER_KB", "--buffer-kb"},
                {"CUTRACE_FLUSH_MS", "--flush-ms"},
                {"CUTRACE_ZSTD_LEVEL", "--zstd-level"},
                {"CUTRACE_GPU_TIMING", "--gpu-timing"},
                {"CUTRACE_TAGS", "--tag"}};

/*
 * Everything the shim will read, checked as the shim will check it, before
 * the job starts: a value it would refuse turns recording off for the
 * whole job. opt_set[i]: var_opts[i] came from an option. 0, or -1 after
 * one message.
 */
static const char *env_get(const char *name)
{
    return getenv(name);
}

static int check_config(const int *opt_set)
{
    struct ct_config cfg;
    char err[512];
    ct_config_defaults(&cfg);
    if (ct_config_from_env(&cfg, env_get, err, sizeof(err)) != 0) {
        for (size_t i = 0; i < sizeof(var_opts) / sizeof(var_opts[0]); i++) {
            size_t len = strlen(var_opts[i].var);
            if (opt_set[i] && !strncmp(err, var_opts[i].var, len) && err[len] == '=') {
                fprintf(stderr, "cutrace run: %s %s\n", var_opts[i].opt, err + len + 1);
                return -1;
            }
        }
        fprintf(stderr, "cutrace run: %s\n", err);
        return -1;
    }
    if (cfg.nccl_steps_err[0]) { /* the shim would record without raw steps: refused here */
        fprintf(stderr, "cutrace run: %s\n", cfg.nccl_steps_err);
        return -1;
    }
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "CUTRACE_", 8) != 0)
            continue;
        char name[128];
        size_t len = strcspn(*e, "=");
        if (len >= sizeof(name))
            continue;
        memcpy(name, *e, len);
        name[len] = 0;
        const char *near;
        if (!ct_config_known(name, &near) && near) {
            fprintf(stderr,
                    "cutrace run: %s is not a variable cutrace reads: did you mean %s? (unset "
                    "it or correct it; the job would run without the setting)\n",
                    name, near);
            return -1;
        }
    }
    return 0;
}

/* A folder another user could tamper with: owned by someone else, or
 * writable by others without the sticky bit (which lets anyone remove or
 * replace what is in it). 0, or -1 after one message. A shared /tmp-like
 * folder (sticky) is fine: traces are created 0600 with O_EXCL. */
static int check_dir_owner(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0)
        return 0; /* probe_dir says what is wrong */
    if (st.st_uid != geteuid()) {
        fprintf(stderr,
                "cutrace run: -o %s: the folder belongs to uid %u, not to you (uid %u): its "
                "owner could read, replace or remove the traces; give a folder of your own\n",
                dir, (unsigned)st.st_uid, (unsigned)geteuid());
        return -1;
    }
    if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
        fprintf(stderr,
                "cutrace run: -o %s: the folder is writable by every user without the sticky "
                "bit: anyone could replace the traces or plant control files; chmod o-w (or "
                "+t) it, or give another folder\n",
                dir);
        return -1;
    }
    return 0;
}

/* Whether the job will be able to create its traces in dir: a file made
 * and removed there (access() answers for root as if anything were
 * writable). 0, or a negative errno. */
static int probe_dir(const char *dir)
{
    char p[PATH_MAX];
    if (snprintf(p, sizeof(p), "%s/.cutrace-probe-XXXXXX", dir) >= (int)sizeof(p))
        return -ENAMETOOLONG;
    int fd = mkstemp(p);
    if (fd < 0)
        return -errno;
    close(fd);
    unlink(p);
    return 0;
}

/* Traces already in dir that are not of run `id`: how many, and of how
 * many runs. */
static size_t other_runs(const char *dir, const char *id, size_t *nruns)
{
    struct ct_inputs in = {0};
    char err[256];
    char *dirs[] = {(char *)dir};
    const struct ct_load_opts all = {.no_kineto = 1, .keep_all = 1};
    size_t other = 0;
    *nruns = 0;
    struct ct_run_list l;
    if (ct_load_operands(&all, &in, dirs, 1, err, sizeof(err)) == 0 &&
        ct_run_list_read(&in, &l, NULL) == 0) {
        for (size_t i = 0; i < l.n; i++)
            if (strcmp(l.runs[i].id, id) != 0) {
                other += l.runs[i].ntraces;
                (*nruns)++;
            }
        ct_run_list_free(&l);
    }
    ct_inputs_free(&in);
    return other;
}

/* The job's command, and how it ended: a mapping of its process is
 * salvaged with the signal that killed it. */
struct ended {
    pid_t pid;
    int status;
};

static int sig_of(void *ctx, uint32_t pid)
{
    const struct ended *e = ctx;
    return (pid_t)pid == e->pid && WIFSIGNALED(e->status) ? WTERMSIG(e->status) : 0;
}

static void salvaged(void *ctx, const struct ct_salvage_result *r)
{
    (void)ctx;
    if (r->rc == 0) {
        char sig[32] = "";
        if (r->info.signal)
            ct_name_signal(r->info.signal, sig, sizeof(sig));
        fprintf(stderr,
                "cutrace run: %s: its process was killed%s%s; salvaged from its live mapping "
                "(%llu records recovered)\n",
                r->trace, sig[0] ? " by " : "", sig, (unsigned long long)r->info.records);
    } else if (r->rc != -EALREADY && r->rc != -ESTALE && r->rc != -ENOENT) {
        fprintf(stderr, "cutrace run: %s\n", r->err[0] ? r->err : strerror(-r->rc));
    }
}

/*
 * After the job: this run's traces that did not end whole (no footer:
 * the process was killed, or the shim could not finish the file; the
 * trace's own error records say why recording stopped), one line each on
 * stderr, a few at most. Returns how many traces this run has.
 */
static size_t check_traces(const char *dir, const char *id)
{
    struct ct_inputs in = {0};
    char err[256];
    char *dirs[] = {(char *)dir};
    const struct ct_load_opts all = {.no_kineto = 1, .keep_all = 1};
    size_t mine = 0, said = 0;
    struct ct_run_list l;
    if (ct_load_operands(&all, &in, dirs, 1, err, sizeof(err)) != 0 ||
        ct_run_list_read(&in, &l, NULL) != 0) {
        ct_inputs_free(&in);
        return 0;
    }
    for (size_t i = 0; i < in.n; i++) {
        if (l.of[i] == SIZE_MAX || strcmp(l.runs[l.of[i]].id, id) != 0)
            continue;
        mine++;
        if (ct_trace_has_footer(in.paths[i]) == 0 && said++ < 4)
            fprintf(stderr,
                    "cutrace run: %s has no footer: its process was killed or stopped "
                    "recording early (cutrace info says how far it goes and why)\n",
                    in.paths[i]);
    }
    if (said > 4)
        fprintf(stderr, "cutrace run: ... and %zu more traces without a footer\n", said - 4);
    ct_run_list_free(&l);
    ct_inputs_free(&in);
    return mine;
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
               "  -o, --output DIR   where traces go (created if needed; default: a new folder\n"
               "                     cutrace-runN here, N one more than the highest there)\n"
               "  --tag KEY=VALUE    a run tag stored in every trace's metadata (repeatable;\n"
               "                     added to CUTRACE_TAGS)\n"
               "  the other options set the CUTRACE_* variable of the same name for CMD\n");
}

int ct_cmd_run(int argc, char **argv)
{
    const struct option *opts = ct_options_of(CT_CMD_RUN);
    const char *out = NULL;
    int c, opt_set[sizeof(var_opts) / sizeof(var_opts[0])] = {0};
    optind = 1;
    /* '+': stop at the first operand, CMD's own options are not ours */
    opterr = 0; /* our message, not getopt's */
    while ((c = getopt_long(argc, argv, "+o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'b':
            setenv("CUTRACE_BUFFER_KB", optarg, 1);
            opt_set[0] = 1;
            break;
        case 'f':
            setenv("CUTRACE_FLUSH_MS", optarg, 1);
            opt_set[1] = 1;
            break;
        case 'z':
            setenv("CUTRACE_ZSTD_LEVEL", optarg, 1);
            opt_set[2] = 1;
            break;
        case 'g':
            if (strcmp(optarg, "cupti") && strcmp(optarg, "events") && strcmp(optarg, "off")) {
                fprintf(stderr, "cutrace run: --gpu-timing=%s: expected cupti, events or off\n",
                        optarg);
                return CT_EXIT_USAGE;
            }
            setenv("CUTRACE_GPU_TIMING", optarg, 1);
            opt_set[3] = 1;
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
            opt_set[4] = 1;
            break;
        }
        case 'h':
            usage(stdout);
            ct_help_tail(stdout, "run");
            return 0;
        default: ct_bad_option(CT_CMD_RUN, "cutrace run", argv[optind - 1]); return CT_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "cutrace run: expected a command after the options (cutrace run -- CMD)\n");
        return CT_EXIT_USAGE;
    }
    /* this run's identity, in every trace it makes; one the user set for
     * several launches (CUTRACE_RUN_ID, docs/runs.md) is kept */
    char run_id[CT_RUN_ID_MAX];
    const char *given = getenv("CUTRACE_RUN_ID");
    if (given && *given && strncmp(given, "auto-", 5) != 0)
        snprintf(run_id, sizeof(run_id), "%s", given);
    else
        new_run_id(run_id, sizeof(run_id));
    setenv("CUTRACE_RUN_ID", run_id, 1);
    if (check_config(opt_set) != 0)
        return CT_EXIT_USAGE;
    char made[64];
    int rc = out ? make_dirs(out) : new_run_dir(made, sizeof(made));
    if (rc) {
        fprintf(stderr, "cutrace run: cannot create output directory %s: %s\n",
                out ? out : "cutrace-runN", strerror(-rc));
        return CT_EXIT_USAGE;
    }
    if (!out)
        out = made;
    char dir[PATH_MAX], shim[PATH_MAX];
    if (!realpath(out, dir)) {
        fprintf(stderr, "cutrace run: %s: %s\n", out, strerror(errno));
        return CT_EXIT_USAGE;
    }
    if (check_dir_owner(dir) != 0)
        return CT_EXIT_USAGE;
    if ((rc = probe_dir(dir)) != 0) {
        fprintf(stderr,
                "cutrace run: -o %s: the job could not create its traces there (%s); give a "
                "folder it can write\n",
                out, strerror(-rc));
        return CT_EXIT_USAGE;
    }
    size_t nruns, nother = other_runs(dir, run_id, &nruns);
    if (nother)
        fprintf(stderr,
                "cutrace run: note: %s already holds %zu trace%s of %zu other run%s: commands "
                "that read it will ask which run (--run %s for this one)\n",
                dir, nother, nother == 1 ? "" : "s", nruns, nruns == 1 ? "" : "s", run_id);
    if (out == made)
        fprintf(stderr, "cutrace: run %s: traces go to %s\n", run_id, dir);
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
     * that plugin too (NCCL dlopens it; it is already loaded). A plugin the
     * user named already (NCCL Inspector) is chained: the shim loads it and
     * forwards every call (shim/nccl_profiler_chain.c). "none" (plugins
     * off) and STATIC_PLUGIN (one linked into the program) stay as set. */
    const char *prof = getenv("NCCL_PROFILER_PLUGIN");
    if (prof && *prof && strcmp(prof, shim) && strcasecmp(prof, "none") &&
        strcmp(prof, "STATIC_PLUGIN")) {
        setenv("CUTRACE_NCCL_PROFILER_CHAIN", prof, 1);
        prof = NULL;
    }
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
    /* whatever died without finishing its trace (SIGKILL: the OOM killer, a
     * time limit, a launcher killing the other ranks) is completed from its
     * live mapping now; processes still alive are left alone */
    struct ended e = {pid, status};
    ct_salvage_dir(dir, sig_of, salvaged, &e);
    size_t ntraces = check_traces(dir, run_id);
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
