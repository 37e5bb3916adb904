/*
 * `cutrace fleet add|report|explain`: many jobs in one store, the fleet's
 * GPU time split by factor, and regressions pinned on the factor that
 * carries them (docs/fleet.md). This file parses options, opens the store
 * and prints; the work is in decoder/compare/fleet*.c.
 *
 * The store is an SQLite file (a path) or a PostgreSQL database
 * (postgresql://... through libpq). A password is never taken from the
 * command line: a URL that holds one is refused with how to pass it
 * instead (fleet_store.c), and nothing here prints the connection string.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "decoder/cmd/cli.h"
#include "decoder/compare/fleet.h"
#include "decoder/compare/fleet_store.h"
#include "decoder/read/inputs.h"
#include "decoder/util/options.h"
#include "decoder/util/outfile.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: cutrace fleet add [--db DB] DB TRACE|DIR|SUMMARY|ROWS...\n"
            "       cutrace fleet report [--db DB] DB [--since T] [--until T] [--workload W]\n"
            "                            [--by KEY]... [--json] [-o FILE] [--rows FILE]\n"
            "       cutrace fleet explain [--db DB] DB [--workload W] [--since T] [--until T]\n"
            "                            [--alpha Q] [--min-effect PCT] [--min-jobs N] [--seed N]\n"
            "                            [--json | --html] [-o FILE] [--rows FILE]\n"
            "  DB             the fleet store: an SQLite file (made by add), or a PostgreSQL\n"
            "                 database, postgresql://[USER@]HOST[:PORT]/DB or\n"
            "                 postgresql:///DB?host=/socket/dir, never with a password in it:\n"
            "                 the password comes from PGPASSFILE, PGSERVICE or PGPASSWORD\n"
            "  add            loads jobs: cutrace traces and summaries (every run among them\n"
            "                 is a job) and rows files (report --rows, diff --rows); a job\n"
            "                 the store has (its run identity) is left as it is\n"
            "  report         GPU-hours, goodput and where the rest went, summed and --by\n"
            "                 workload, host, gpu, driver, cuda, nccl, cutrace, a tag, an\n"
            "                 NCCL_* setting, clock_policy, power_limit (repeatable)\n"
            "  explain        each workload's step time modelled on its factors: the factor\n"
            "                 values that carry a regression, with intervals corrected for the\n"
            "                 number tried; change points over time\n"
            "  --since T, --until T  runs started from / before T: 2024-05-01,\n"
            "                 2024-05-01T12:00[:00][Z] (UTC), or 7d, 12h, 2w ago\n"
            "  --workload W   one workload (a fingerprint, or the start of one)\n"
            "  --alpha Q      the level over every factor value tried (default 0.05)\n"
            "  --min-effect PCT  an effect must pass it to be pinned (default 2)\n"
            "  --min-jobs N   a workload needs N jobs to be modelled (default 8)\n"
            "  --seed N       change points' permutations (default 1)\n"
            "  --json, -o FILE, --rows FILE, --html (explain; with -o FILE)\n");
}

static int bad(const char *sub, const char *msg)
{
    fprintf(stderr, "cutrace fleet %s: %s\n", sub, msg);
    return CT_EXIT_USAGE;
}

/* "2024-05-01[THH:MM[:SS]][Z]" (UTC) or "7d", "12h", "2w", "30m" before
 * now, as unix µs: 0, or -1. */
static int parse_time(const char *s, int64_t *us)
{
    char *end;
    double v = strtod(s, &end);
    if (end != s && v >= 0 && end[0] && !end[1] && strchr("mhdw", end[0])) {
        double sec = v * (end[0] == 'm'   ? 60
                          : end[0] == 'h' ? 3600
                          : end[0] == 'd' ? 86400
                                          : 604800);
        *us = (int64_t)time(NULL) * 1000000 - (int64_t)(sec * 1e6);
        return 0;
    }
    static const char *const fmts[] = {"%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S",
                                       "%Y-%m-%d %H:%M", "%Y-%m-%d"};
    for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
        struct tm tm = {0};
        const char *p = strptime(s, fmts[i], &tm);
        if (p && (!*p || !strcmp(p, "Z"))) {
            *us = (int64_t)timegm(&tm) * 1000000;
            return 0;
        }
    }
    return -1;
}

struct common {
    const char *db;
    struct ct_shared_opts so;
    struct ct_fleet_filter flt;
    const char *by[32];
    size_t nby;
    int html;
    struct ct_fleet_explain_opts xo;
};

/* Options of report and explain; -1 after a message, else optind's next. */
static int parse(const char *sub, int argc, char **argv, struct common *c, int explain)
{
    const struct option *opts = ct_options_of(CT_CMD_FLEET);
    int ch;
    char msg[512];
    c->flt.since_us = INT64_MIN;
    c->flt.until_us = INT64_MAX;
    c->xo = (struct ct_fleet_explain_opts){
        .alpha = 0.05, .min_effect = 0.02, .seed = 1, .perms = 999, .min_jobs = 8};
    optind = 1;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "jo:h", opts, NULL)) != -1) {
        int shared = ct_shared_opt(CT_CMD_FLEET, "cutrace fleet", ch, optarg, &c->so);
        if (shared < 0)
            return -1;
        if (shared)
            continue; /* --json, -o, --rows */
        char *end;
        switch (ch) {
        case 'D': c->db = optarg; break;
        case 'S':
        case 'U':
            if (parse_time(optarg, ch == 'S' ? &c->flt.since_us : &c->flt.until_us)) {
                snprintf(msg, sizeof(msg),
                         "--%s '%s': expected a UTC date or time (2024-05-01, "
                         "2024-05-01T12:00[:00][Z]) or an age (30m, 12h, 7d, 2w)",
                         ch == 'S' ? "since" : "until", optarg);
                return bad(sub, msg), -1;
            }
            break;
        case 'W': c->flt.workload = optarg; break;
        case 'b':
            if (explain)
                return bad(sub, "--by is an option of fleet report (explain tries every "
                                "factor itself)"),
                       -1;
            if (c->nby == 32)
                return bad(sub, "--by: at most 32 keys"), -1;
            if (!*optarg)
                return bad(sub, "--by: expected a key (workload, host, gpu, driver, cuda, "
                                "nccl, cutrace, clock_policy, power_limit, a tag or NCCL_* "
                                "name)"),
                       -1;
            c->by[c->nby++] = optarg;
            break;
        case 'a':
            c->xo.alpha = strtod(optarg, &end);
            if (*end || end == optarg || !(c->xo.alpha > 0 && c->xo.alpha < 0.5)) {
                snprintf(msg, sizeof(msg), "--alpha '%s': expected a number in (0, 0.5)", optarg);
                return bad(sub, msg), -1;
            }
            break;
        case 'm': {
            double v;
            if (ct_parse_pct(optarg, 0, 100, &v)) {
                snprintf(msg, sizeof(msg),
                         "--min-effect '%s': expected a percentage in [0, 100], e.g. 2 or 2%%",
                         optarg);
                return bad(sub, msg), -1;
            }
            c->xo.min_effect = v / 100;
            break;
        }
        case 'n': {
            long v = strtol(optarg, &end, 10);
            if (*end || end == optarg || v < 7 || v > 1000000) {
                snprintf(msg, sizeof(msg),
                         "--min-jobs '%s': expected an integer >= 7 (3 jobs on each side of a "
                         "factor and the model's own)",
                         optarg);
                return bad(sub, msg), -1;
            }
            c->xo.min_jobs = (size_t)v;
            break;
        }
        case 's': {
            unsigned long long v = strtoull(optarg, &end, 10);
            if (*end || end == optarg || optarg[0] == '-') {
                snprintf(msg, sizeof(msg), "--seed '%s': expected an integer >= 0", optarg);
                return bad(sub, msg), -1;
            }
            c->xo.seed = v;
            break;
        }
        case 'T': c->html = 1; break;
        case 'h':
            usage(stdout);
            ct_help_tail(stdout, "fleet");
            return -2;
        default:
            snprintf(msg, sizeof(msg),
                     "unknown or incomplete option '%s'; allowed: --db DB, --since T, "
                     "--until T, --workload W, %s--json, -o FILE, --rows FILE",
                     argv[optind - 1],
                     explain ? "--alpha Q, --min-effect PCT, --min-jobs N, --seed N, --html, "
                             : "--by KEY, ");
            return bad(sub, msg), -1;
        }
    }
    if (!explain && c->html)
        return bad(sub, "--html is an option of fleet explain"), -1;
    if (c->html && (c->so.json || ct_out_is_stdout(c->so.out)))
        return bad(sub, "--html writes a file: use --html -o FILE (without --json)"), -1;
    if (!c->db) {
        if (optind >= argc)
            return bad(sub, "expected the fleet store (a file, or --db postgresql://...)"), -1;
        c->db = argv[optind++];
    }
    if (optind < argc) {
        snprintf(msg, sizeof(msg), "unexpected operand '%s' (one store only)", argv[optind]);
        return bad(sub, msg), -1;
    }
    if (c->so.rows && c->so.out && !ct_out_is_stdout(c->so.out) && !strcmp(c->so.rows, c->so.out))
        return bad(sub, "-o and --rows name the same file"), -1;
    return 0;
}

/* Opens the store; the exit status on failure (after its message). */
static int open_store(const char *sub, const char *spec, int flags, struct ct_fdb **db)
{
    char err[1024];
    if (ct_fdb_is_postgres(spec) && ct_fdb_check_credentials(spec, "--db", err, sizeof(err))) {
        fprintf(stderr, "cutrace fleet %s: %s\n", sub, err);
        return CT_EXIT_USAGE;
    }
    int rc = ct_fdb_open(spec, flags, db, err, sizeof(err));
    if (rc) {
        fprintf(stderr, "cutrace fleet %s: %s\n", sub, err);
        return rc == -ENOTSUP || rc == -EACCES ? CT_EXIT_USAGE : CT_EXIT_BAD_INPUT;
    }
    return 0;
}

static int cmd_add(int argc, char **argv)
{
    const struct option *opts = ct_options_of(CT_CMD_FLEET_ADD);
    const char *db = NULL;
    int ch, quiet = 0;
    optind = 1;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "qh", opts, NULL)) != -1)
        switch (ch) {
        case 'D': db = optarg; break;
        case 'q': quiet = 1; break;
        case 'h':
            usage(stdout);
            ct_help_tail(stdout, "fleet");
            return 0;
        default:
            fprintf(stderr,
                    "cutrace fleet add: unknown or incomplete option '%s'; allowed: --db DB, "
                    "--quiet\n",
                    argv[optind - 1]);
            return CT_EXIT_USAGE;
        }
    if (!db) {
        if (optind >= argc)
            return bad("add", "expected the fleet store (a file, or --db postgresql://...) "
                              "and what to add");
        db = argv[optind++];
    }
    if (optind >= argc)
        return bad("add", "expected traces, summaries, folders of them, or rows files to add");
    char err[1024];
    if (!ct_fdb_is_postgres(db) && ct_out_check(db, "the fleet store", argv + optind,
                                                (size_t)(argc - optind), err, sizeof(err))) {
        fprintf(stderr, "cutrace fleet add: %s\n", err);
        return CT_EXIT_USAGE;
    }
    /* operands: rows files apart, the rest (traces, summaries, folders) together */
    char **traces = malloc((size_t)(argc - optind) * sizeof(char *));
    if (!traces) {
        fprintf(stderr, "cutrace fleet add: out of memory\n");
        return CT_EXIT_BAD_INPUT;
    }
    int nt = 0;
    for (int i = optind; i < argc; i++) {
        if (!strcmp(argv[i], "-") || ct_fleet_is_rows(argv[i]))
            continue;
        if (ct_operand_check(argv[i], err, sizeof(err))) {
            fprintf(stderr, "cutrace fleet add: %s\n", err);
            free(traces);
            return CT_EXIT_USAGE;
        }
        traces[nt++] = argv[i];
    }
    struct ct_fdb *store;
    int rc = open_store("add", db, CT_FDB_CREATE, &store);
    if (rc) {
        free(traces);
        return rc;
    }
    struct ct_fleet_add_stats st = {0};
    for (int i = optind; i < argc && !rc; i++) {
        if (strcmp(argv[i], "-") && !ct_fleet_is_rows(argv[i]))
            continue;
        FILE *f = strcmp(argv[i], "-") ? fopen(argv[i], "r") : stdin;
        if (!f) {
            fprintf(stderr, "cutrace fleet add: %s: %s\n", argv[i], strerror(errno));
            rc = CT_EXIT_BAD_INPUT;
            break;
        }
        struct ct_fleet_add_stats s = {0};
        if (ct_fleet_add_rows(store, f, "rows", argv[i], &s, err, sizeof(err))) {
            fprintf(stderr, "cutrace fleet add: %s\n", err);
            rc = CT_EXIT_BAD_INPUT;
        }
        if (f != stdin)
            fclose(f);
        st.added += s.added;
        st.present += s.present;
        if (!quiet && !rc)
            fprintf(stderr, "cutrace fleet add: %s: %zu jobs added, %zu in the store already\n",
                    argv[i], s.added, s.present);
    }
    if (!rc && nt && ct_fleet_add_traces(store, traces, nt, !quiet, &st, err, sizeof(err))) {
        fprintf(stderr, "cutrace fleet add: %s\n", err);
        rc = CT_EXIT_BAD_INPUT;
    }
    free(traces);
    ct_fdb_close(store);
    printf("%zu jobs added, %zu in the store already\n", st.added, st.present);
    return rc;
}

/* -o and --rows opened (never the store itself), the document written by
 * fn, both committed. */
static int write_outputs(const char *sub, const struct common *c, const char *db,
                         int (*fn)(FILE *out, FILE *rows, void *ctx, char *err, size_t n),
                         void *ctx)
{
    char err[1024];
    char *inputs[1] = {(char *)db};
    size_t ni = ct_fdb_is_postgres(db) ? 0 : 1;
    struct ct_outfile of, rf = {.slot = -1};
    if (ct_out_check(c->so.out, "-o", inputs, ni, err, sizeof(err)) ||
        ct_out_check(c->so.rows, "--rows", inputs, ni, err, sizeof(err))) {
        fprintf(stderr, "cutrace fleet %s: %s\n", sub, err);
        return CT_EXIT_USAGE;
    }
    if (ct_out_open(&of, c->so.out, "-o", err, sizeof(err)) ||
        (c->so.rows && ct_out_open(&rf, c->so.rows, "--rows", err, sizeof(err)))) {
        fprintf(stderr, "cutrace fleet %s: %s\n", sub, err);
        ct_out_abort(&of);
        return CT_EXIT_BAD_INPUT;
    }
    err[0] = 0;
    int rc = fn(of.f, c->so.rows ? rf.f : NULL, ctx, err, sizeof(err));
    if (rc) {
        fprintf(stderr, "cutrace fleet %s: %s\n", sub, err[0] ? err : "failed");
        ct_out_abort(&of);
        ct_out_abort(&rf);
        return CT_EXIT_BAD_INPUT;
    }
    if (ct_out_commit(&of, err, sizeof(err)) ||
        (c->so.rows && ct_out_commit(&rf, err, sizeof(err)))) {
        fprintf(stderr, "cutrace fleet %s: %s\n", sub, err);
        ct_out_abort(&rf);
        return CT_EXIT_BAD_INPUT;
    }
    return 0;
}

struct report_ctx {
    const struct common *c;
    const struct ct_fleet_jobs *js;
};

static int report_out(FILE *out, FILE *rows, void *ctx, char *err, size_t n)
{
    struct report_ctx *r = ctx;
    struct ct_fleet_report_opts o = {.by = r->c->by, .nby = r->c->nby};
    int rc = ct_fleet_report_write(out, r->js, &o, r->c->so.json, err, n);
    if (!rc && rows)
        rc = ct_fleet_report_rows(rows, r->js, &o, err, n);
    return rc;
}

static int load(const char *sub, const struct common *c, struct ct_fleet_jobs *js)
{
    struct ct_fdb *db;
    int rc = open_store(sub, c->db, 0, &db);
    if (rc)
        return rc;
    char err[1024] = "";
    rc = ct_fleet_jobs_load(db, &c->flt, js, err, sizeof(err));
    ct_fdb_close(db);
    if (rc) {
        fprintf(stderr, "cutrace fleet %s: %s\n", sub, err[0] ? err : "failed");
        return rc == -ENOENT || rc == -EINVAL ? CT_EXIT_USAGE : CT_EXIT_BAD_INPUT;
    }
    return 0;
}

static int cmd_report(int argc, char **argv)
{
    struct common c = {0};
    int rc = parse("report", argc, argv, &c, 0);
    if (rc)
        return rc == -2 ? 0 : CT_EXIT_USAGE;
    struct ct_fleet_jobs js;
    if ((rc = load("report", &c, &js)))
        return rc;
    struct report_ctx r = {&c, &js};
    rc = write_outputs("report", &c, c.db, report_out, &r);
    ct_fleet_jobs_free(&js);
    return rc;
}

struct explain_ctx {
    const struct common *c;
    const struct ct_fleet_jobs *js;
};

static int explain_out(FILE *out, FILE *rows, void *ctx, char *err, size_t n)
{
    struct explain_ctx *e = ctx;
    struct ct_fleet_explain *x;
    int rc = ct_fleet_explain_run(e->js, &e->c->xo, &x, err, n);
    if (rc)
        return rc;
    if (e->c->html)
        ct_fleet_explain_html(out, x, e->js);
    else if (e->c->so.json)
        ct_fleet_explain_json(out, x);
    else
        ct_fleet_explain_text(out, x);
    if (rows)
        ct_fleet_explain_rows(rows, x);
    ct_fleet_explain_free(x);
    return 0;
}

static int cmd_explain(int argc, char **argv)
{
    struct common c = {0};
    int rc = parse("explain", argc, argv, &c, 1);
    if (rc)
        return rc == -2 ? 0 : CT_EXIT_USAGE;
    struct ct_fleet_jobs js;
    if ((rc = load("explain", &c, &js)))
        return rc;
    struct explain_ctx e = {&c, &js};
    rc = write_outputs("explain", &c, c.db, explain_out, &e);
    ct_fleet_jobs_free(&js);
    return rc;
}

int ct_cmd_fleet(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CT_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(stdout);
        ct_help_tail(stdout, "fleet");
        return 0;
    }
    if (!strcmp(argv[1], "add"))
        return cmd_add(argc - 1, argv + 1);
    if (!strcmp(argv[1], "report"))
        return cmd_report(argc - 1, argv + 1);
    if (!strcmp(argv[1], "explain"))
        return cmd_explain(argc - 1, argv + 1);
    fprintf(stderr, "cutrace fleet: unknown subcommand '%s'; expected add, report or explain\n",
            argv[1]);
    return CT_EXIT_USAGE;
}
