/*
 * `cutrace salvage DIR|TRACE...`: completes, from their live mappings, the
 * traces of processes that died without finishing them (SIGKILL), and
 * removes the mappings (src/salvage.h; docs/salvage.md). Each trace is
 * replaced whole (a temporary file renamed into place); a mapping whose
 * process lives, or that is someone else's, is left alone. Commands that
 * only read a folder decode the same salvage in memory without it.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "decoder/cmd/cli.h"
#include "decoder/util/options.h"
#include "decoder/util/names.h"
#include "src/salvage.h"

struct tally {
    int salvaged, left, failed;
};

/* One line per mapping, as `cutrace run` prints them after its job too. */
static void report(void *ctx, const struct ct_salvage_result *r)
{
    struct tally *t = ctx;
    const char *trace = r->trace[0] ? r->trace : r->map_path;
    if (r->rc == 0) {
        char sig[32] = "";
        if (r->info.signal)
            ct_name_signal(r->info.signal, sig, sizeof(sig));
        printf("%s: salvaged: %llu records recovered after offset %llu (killed%s%s)\n", trace,
               (unsigned long long)r->info.records, (unsigned long long)r->info.at,
               sig[0] ? " by " : "", sig);
        t->salvaged++;
    } else if (r->rc == -EBUSY || r->rc == -EALREADY || r->rc == -ESTALE || r->rc == -ENOENT) {
        /* alive, done, another folder's, or its trace deleted: nothing to do here */
        printf("%s: %s\n", trace, r->err);
        t->left++;
    } else {
        fprintf(stderr, "cutrace salvage: %s\n", r->err[0] ? r->err : strerror(-r->rc));
        t->failed++;
    }
}

static int salvage_trace(const char *path, struct tally *t)
{
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        fprintf(stderr, "cutrace salvage: %s: not a trace file or folder\n", path);
        return CT_EXIT_USAGE;
    }
    struct ct_live_map m;
    char err[512] = "", dir[PATH_MAX], trace[PATH_MAX + 300];
    int rc = ct_live_map_find(&m, path, st.st_uid, err, sizeof(err));
    if (rc == -ENOENT) {
        printf("%s: no live mapping: nothing to salvage\n", path);
        return 0;
    }
    if (rc) {
        fprintf(stderr, "cutrace salvage: %s\n", err);
        t->failed++;
        return 0;
    }
    char map_path[sizeof(m.path)];
    snprintf(map_path, sizeof(map_path), "%s", m.path);
    ct_live_map_close(&m);
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == path)
        snprintf(dir, sizeof(dir), "/");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    struct ct_salvage_result r = {map_path, trace, 0, err, {0}};
    r.rc = ct_salvage_commit(dir, map_path, NULL, NULL, &r.info, trace, sizeof(trace), err,
                             sizeof(err));
    report(t, &r);
    return 0;
}

int ct_cmd_salvage(int argc, char **argv)
{
    const struct option *opts = ct_options_of(CT_CMD_SALVAGE);
    int c;
    optind = 1;
    opterr = 0; /* our message, not getopt's */
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h') {
            printf("usage: cutrace salvage DIR|TRACE...\n"
                   "  completes the traces of processes that died without finishing them\n"
                   "  (SIGKILL) from their live mappings, and removes the mappings; a live\n"
                   "  process's mapping, or one of another machine or boot, is never touched\n"
                   "  (no options)\n");
            ct_help_tail(stdout, "salvage");
            return 0;
        }
        ct_bad_option(CT_CMD_SALVAGE, "cutrace salvage", argv[optind - 1]);
        return CT_EXIT_USAGE;
    }
    if (optind >= argc) {
        fprintf(stderr, "cutrace salvage: expected at least one folder or trace file\n");
        return CT_EXIT_USAGE;
    }
    struct tally t = {0, 0, 0};
    for (int i = optind; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "cutrace salvage: %s: %s\n", argv[i], strerror(errno));
            return CT_EXIT_BAD_INPUT; /* as every command's operand that cannot be read */
        }
        if (S_ISDIR(st.st_mode)) {
            int rc = ct_salvage_dir(argv[i], NULL, report, &t);
            if (rc < 0) {
                fprintf(stderr, "cutrace salvage: %s: %s\n", argv[i], strerror(-rc));
                return CT_EXIT_USAGE;
            }
        } else {
            int rc = salvage_trace(argv[i], &t);
            if (rc)
                return rc;
        }
    }
    if (!t.salvaged && !t.left && !t.failed)
        printf("no live mapping: nothing to salvage\n");
    return t.failed ? CT_EXIT_BAD_INPUT : 0;
}
