/*
 * `cutrace export`: writes a job's traces as a Chrome trace-event JSON file
 * (ui.perfetto.dev, chrome://tracing; decoder/export/chrome.c) or an SQLite
 * database shaped like Nsight Systems' export (decoder/export/sqlite.c).
 * Formats and schema: docs/export.md. This file parses options, builds the
 * job (first pass, see decoder/export/export.h) and hands it to a writer.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "decoder/analysis/critical_path.h"
#include "decoder/cmd/cli.h"
#include "decoder/read/summary.h"
#include "decoder/export/export.h"
#include "decoder/read/inputs.h"
#include "decoder/load/load.h"
#include "decoder/util/options.h"
#include "decoder/util/outfile.h"
#include "decoder/read/job.h"

/*
 * The largest Chrome file written without --max-size: 1 GB. chrome://tracing
 * stops at 256 MB, and Perfetto UI's trace processor runs in the browser
 * with about 2 GB of memory for the whole trace (Perfetto, "Visualising
 * large traces"), a 900 MB JSON file having already crashed it (Perfetto
 * issue 99). Past 1 GB the user is better served by a slice (--ranks,
 * --iterations, --window), or by Perfetto's native trace_processor --httpd
 * with --max-size raised.
 */
#define CT_EXPORT_MAX_BYTES 1000000000ull

/* SIZE: bytes, or a number with k, M, G, T (powers of 1000, as the size
 * is reported), e.g. 500M, 2.5G; "none": no limit (UINT64_MAX). 0 or -1. */
static int parse_size(const char *s, uint64_t *out)
{
    if (!strcmp(s, "none")) {
        *out = UINT64_MAX;
        return 0;
    }
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v > 0) || v > 1e18)
        return -1;
    double mul = 1;
    if (*end) {
        const char *u = strchr("kMGT", *end);
        if (!u || end[1])
            return -1;
        for (const char *q = "kMGT"; q <= u; q++)
            mul *= 1000;
    }
    if (v * mul > 1.8e19)
        return -1;
    *out = (uint64_t)(v * mul);
    return *out ? 0 : -1;
}

/* "6.7 GB" */
static void human_bytes(uint64_t b, char *buf, size_t n)
{
    static const char *const unit[] = {"bytes", "kB", "MB", "GB", "TB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1000 && u < 4) {
        v /= 1000;
        u++;
    }
    if (u)
        snprintf(buf, n, "%.1f %s", v, unit[u]);
    else
        snprintf(buf, n, "%" PRIu64 " bytes", b);
}

static int cmp_src(const void *a, const void *b)
{
    const struct ct_export_src *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return strcmp(x->path, y->path);
}

/* First pass: the job as `cutrace report` builds it, and each trace's clock
 * shift. Returns 0 or a negative errno with err set. */
static int build_job(struct ct_export_job *x, struct ct_inputs *in, const struct ct_load_opts *opts,
                     struct ct_progress *pr, char *err, size_t errlen)
{
    memset(x, 0, sizeof(*x));
    (void)pr; /* the loader shows its own progress */
    struct ct_load_opts lo = *opts;
    lo.hta = 1;
    lo.progress = 1;
    int rc = ct_load_job(&lo, in, &x->job, err, errlen);
    if (rc && rc != -ENOMEM) /* err says which trace or which option */
        return rc;
    struct ct_iter_opts io = {0, 0, -1, 0};
    if (!rc)
        rc = ct_report_analyze(&x->job, &io, &x->rep);
    if (!rc) {
        x->src = calloc(in->n ? in->n : 1, sizeof(*x->src));
        rc = x->src ? 0 : -ENOMEM;
    }
    if (rc) {
        snprintf(err, errlen, "out of memory");
        return rc;
    }
    for (size_t r = 0; r < x->job.nranks; r++) {
        const struct ct_rank *R = &x->job.ranks[r];
        for (size_t k = 0; k < R->nprocs; k++) {
            const struct ct_proc *p = R->procs[k];
            struct ct_export_src *s = &x->src[x->nsrc++];
            s->path = p->path;
            s->health = p->health;
            s->host = p->host ? p->host : R->host;
            s->rank = R->rank;
            s->pid = p->pid;
            s->shift = p->clock_offset + R->skew_ns; /* to the job clock */
        }
    }
    qsort(x->src, x->nsrc, sizeof(*x->src), cmp_src);
    return 0;
}

static void free_job(struct ct_export_job *x)
{
    ct_report_free(&x->rep);
    ct_job_free(&x->job);
    free(x->src);
    free(x->sel.ranks);
}

/* The selection against the job: ranks it does not have are an error (a
 * typo would export nothing), and --iterations A-B becomes the window from
 * the earliest start to the latest end of those iterations over the
 * selected ranks, on the job clock. Returns 0 or -EINVAL with err set. */
static int select_job(struct ct_export_job *x, int iters, int64_t first, int64_t last, char *err,
                      size_t errlen)
{
    struct ct_export_sel *s = &x->sel;
    for (size_t i = 0; i < s->nranks; i++) {
        size_t r = 0;
        while (r < x->job.nranks && x->job.ranks[r].rank != s->ranks[i])
            r++;
        if (r == x->job.nranks) {
            snprintf(err, errlen, "--ranks: the job has no rank %d (ranks %d..%d)", s->ranks[i],
                     x->job.nranks ? x->job.ranks[0].rank : 0,
                     x->job.nranks ? x->job.ranks[x->job.nranks - 1].rank : 0);
            return -EINVAL;
        }
    }
    if (!iters)
        return 0;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t r = 0; r < x->rep.nr; r++) {
        const struct ct_rank_result *rr = &x->rep.rr[r];
        if (!ct_export_rank_on(s, rr->rank->rank))
            continue;
        for (size_t k = 0; k < rr->niters; k++) {
            const struct ct_iter *it = &rr->iters[k];
            if (it->index < first || (last >= 0 && it->index > last))
                continue;
            if (it->s < lo)
                lo = it->s;
            if (it->e > hi)
                hi = it->e;
        }
    }
    if (lo > hi) {
        snprintf(err, errlen, "--iterations: no iteration in that range on the selected ranks");
        return -EINVAL;
    }
    s->lo = lo;
    s->hi = hi;
    return 0;
}

/* --critical-path: the unscaled path of every step and its edges (as
 * `cutrace critical-path`: in one graph, or in chunks of steps when the
 * graph would pass the memory limit); the edges borrow names from the
 * job. 0, or a negative errno with err set. */
static int critical_path(struct ct_export_job *x, struct ct_cp_path *path, char *err, size_t errlen)
{
    struct ct_cp_result res;
    int rc = ct_cp_run_sets(&x->rep, ct_cp_memory_limit(), 0, NULL, 0, &res, NULL, path);
    ct_cp_result_free(&res);
    if (rc == -E2BIG) {
        snprintf(err, errlen,
                 "--critical-path: one step's dependency graph, every rank's ops in it, "
                 "would pass half this machine's memory (about 250 bytes per GPU op; "
                 "CUTRACE_CP_MAX_MIB sets the limit): a step's path needs the whole step");
        return rc;
    }
    if (rc) {
        snprintf(err, errlen, "out of memory");
        return rc;
    }
    if (!path->nsteps) {
        snprintf(err, errlen,
                 "--critical-path: no iterations found (no ProfilerStep ranges or marks, no "
                 "repeating work): a critical path is per step");
        return -EINVAL;
    }
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: cutrace export --format chrome|sqlite -o FILE [--step NAME] [--ranks LIST]\n"
            "                      [--iterations A-B | --window START-END] [--critical-path]\n"
            "                      [--max-size SIZE] [--nccl-proxy] TRACE|DIR...\n"
            "  --format chrome  Chrome trace-event JSON (ui.perfetto.dev, chrome://tracing)\n"
            "  --format sqlite  SQLite database shaped like Nsight Systems' export\n"
            "  -o FILE          the file to write (replaced once complete; never an input or\n"
            "                   a trace; - for standard output)\n"
            "  --step NAME      NVTX range or mark naming iterations (default ProfilerStep)\n"
            "  --ranks LIST     only these ranks, e.g. 0-3,100\n"
            "  --iterations A-B only what overlaps iterations A..B (of the selected ranks)\n"
            "  --window S-E     only what overlaps S..E us on the job clock (report's start_us)\n"
            "  --critical-path  chrome: also each step's critical path, a slice per edge on a\n"
            "                   \"critical path\" track per rank, chained by flow arrows\n"
            "  --nccl-proxy     chrome: also NCCL's proxy activity, per rank a track per\n"
            "                   (communicator, channel, peer, direction), a slice per\n"
            "                   ProxyOp with its state sums as args (docs/nccl.md)\n"
            "  --max-size SIZE  chrome: refuse (exit 2) when the file would be larger than\n"
            "                   SIZE (default 1G; k/M/G/T: powers of 1000; none: no limit)\n"
            "  --run ID         the run to export when the operands hold several\n"
            "  --comm-kernels FILE  kernel-name patterns that count as communication\n"
            "                   (docs/nccl.md)\n"
            "Formats and schema: docs/export.md.\n");
}

int ct_cmd_export(int argc, char **argv)
{
    const struct option *opts = ct_options_of(CT_CMD_EXPORT);
    struct ct_shared_opts so = {0};
    const char *format = NULL, *ranks = NULL;
    int64_t it_first = 0, it_last = -1;
    double w0 = 0, w1 = 0;
    int have_iters = 0, have_window = 0, cpath = 0, have_max = 0, nproxy = 0;
    uint64_t max_size = CT_EXPORT_MAX_BYTES;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "f:o:h", opts, NULL)) != -1) {
        int shared = ct_shared_opt(CT_CMD_EXPORT, "cutrace export", c, optarg, &so);
        if (shared < 0)
            return CT_EXIT_USAGE;
        if (shared)
            continue;
        switch (c) {
        case 'f': format = optarg; break;
        case 'r': ranks = optarg; break;
        case 'i':
            if (ct_parse_index_range(optarg, &it_first, &it_last)) {
                fprintf(stderr,
                        "cutrace export: --iterations '%s': expected A-B with integers "
                        "0 <= A <= B (A- and -B allowed)\n",
                        optarg);
                return CT_EXIT_USAGE;
            }
            have_iters = 1;
            break;
        case 'w':
            if (ct_parse_window_us(optarg, &w0, &w1)) {
                fprintf(stderr,
                        "cutrace export: --window '%s': expected START-END in us on the job "
                        "clock with START < END, e.g. 1000-25000 or -500-2000\n",
                        optarg);
                return CT_EXIT_USAGE;
            }
            have_window = 1;
            break;
        case 'c': cpath = 1; break;
        case 'p': nproxy = 1; break;
        case 'M':
            if (parse_size(optarg, &max_size)) {
                fprintf(stderr,
                        "cutrace export: --max-size '%s': expected a size in bytes > 0, with "
                        "k, M, G or T (powers of 1000), e.g. 2G, or none\n",
                        optarg);
                return CT_EXIT_USAGE;
            }
            have_max = 1;
            break;
        case 'h':
            usage(stdout);
            ct_help_tail(stdout, "export");
            return 0;
        default:
            fprintf(stderr,
                    "cutrace export: unknown or incomplete option '%s'; allowed: "
                    "--format chrome|sqlite, -o FILE, --step NAME, --ranks LIST, "
                    "--iterations A-B, --window START-END, --critical-path, --max-size SIZE, "
                    "--nccl-proxy, --run ID\n",
                    argv[optind - 1]);
            return CT_EXIT_USAGE;
        }
    }
    const char *out = so.out, *step = so.step, *run = so.run;
    if (have_iters && have_window) {
        fprintf(stderr, "cutrace export: --iterations and --window both select a time span: "
                        "give one\n");
        return CT_EXIT_USAGE;
    }
    struct ct_export_sel sel = {NULL, 0, INT64_MIN, INT64_MAX};
    if (ranks) {
        int prc = ct_parse_rank_list(ranks, &sel.ranks, &sel.nranks);
        if (prc) {
            if (prc == -1)
                fprintf(stderr,
                        "cutrace export: --ranks '%s': expected ranks and ranges, e.g. "
                        "0-3,100\n",
                        ranks);
            else
                fprintf(stderr, "cutrace export: out of memory\n");
            return CT_EXIT_USAGE;
        }
    }
    if (have_window) {
        sel.lo = (int64_t)(w0 * 1e3);
        sel.hi = (int64_t)(w1 * 1e3);
    }
    int sqlite = 0;
    if (!format) {
        fprintf(stderr, "cutrace export: --format is required; allowed: chrome, sqlite\n");
        return CT_EXIT_USAGE;
    } else if (!strcmp(format, "sqlite")) {
        sqlite = 1;
    } else if (strcmp(format, "chrome") != 0) {
        fprintf(stderr, "cutrace export: --format '%s': allowed: chrome, sqlite\n", format);
        return CT_EXIT_USAGE;
    }
    if (have_max && sqlite) {
        fprintf(stderr, "cutrace export: --max-size limits the Chrome JSON file (what a viewer "
                        "opens): use it with --format chrome\n");
        free(sel.ranks);
        return CT_EXIT_USAGE;
    }
    if (cpath && sqlite) {
        fprintf(stderr, "cutrace export: --critical-path draws into the Chrome JSON timeline: "
                        "use it with --format chrome (cutrace critical-path --json gives the "
                        "figures)\n");
        return CT_EXIT_USAGE;
    }
    if (nproxy && sqlite) {
        fprintf(stderr, "cutrace export: --nccl-proxy draws NCCL's proxy tracks into the Chrome "
                        "JSON timeline: use it with --format chrome (the SQLite file always has "
                        "them, in its NCCL_PROXY_OPS table)\n");
        free(sel.ranks);
        return CT_EXIT_USAGE;
    }
    if (!out || !*out) {
        fprintf(stderr, "cutrace export: -o FILE is required\n");
        return CT_EXIT_USAGE;
    }
    if (sqlite && ct_out_is_stdout(out)) {
        fprintf(stderr, "cutrace export: -o -: an SQLite database is a file: give its name\n");
        return CT_EXIT_USAGE;
    }
    char **ops;
    int nops = ct_cli_operands("export", argc, argv, optind, &ops);
    if (!nops)
        return CT_EXIT_USAGE;
    struct ct_inputs in = {0};
    char err[512];
    struct ct_load_opts lo = {.cmd = "cutrace export", .step = step, .run = run, .no_kineto = 1};
    int rc = ct_load_operands(&lo, &in, ops, nops, err, sizeof(err));
    if (rc) {
        fprintf(stderr, "cutrace export: %s\n", err);
        ct_inputs_free(&in);
        return ct_load_usage_error(rc) ? CT_EXIT_USAGE : CT_EXIT_BAD_INPUT;
    }
    for (size_t i = 0; i < in.n; i++)
        if (ct_ends_with(in.paths[i], CT_SUMMARY_SUFFIX)) {
            /* the timeline export draws every record (API calls, I/O, NVTX
             * ranges), which a summary does not keep */
            fprintf(stderr,
                    "cutrace export: %s is a summary: export needs the traces themselves "
                    "(report, diagnose and diff read summaries)\n",
                    in.paths[i]);
            ct_inputs_free(&in);
            return CT_EXIT_USAGE;
        }
    /* An input or a trace is never replaced, and an unwritable output
     * fails before the (long) read of the traces (util/outfile.h). */
    struct ct_outfile of;
    if ((rc = ct_out_check(out, "-o", in.paths, in.n, err, sizeof(err)))) {
        fprintf(stderr, "cutrace export: %s\n", err);
        ct_inputs_free(&in);
        return CT_EXIT_USAGE;
    }
    rc = sqlite ? ct_out_open_path(&of, out, "-o", err, sizeof(err))
                : ct_out_open(&of, out, "-o", err, sizeof(err));
    if (rc) {
        fprintf(stderr, "cutrace export: %s\n", err);
        ct_inputs_free(&in);
        return CT_EXIT_BAD_INPUT;
    }
    struct ct_progress pr;
    ct_progress_start(&pr, "cutrace export");
    struct ct_export_job x;
    rc = build_job(&x, &in, &lo, &pr, err, sizeof(err));
    ct_inputs_free(&in);
    if (!rc) {
        x.sel = sel;
        if (have_window) { /* µs on the report's clock: its zero is the job's t0 */
            x.sel.lo += x.job.t0;
            x.sel.hi += x.job.t0;
        }
        rc = select_job(&x, have_iters, it_first, it_last, err, sizeof(err));
    } else {
        free(sel.ranks);
    }
    if (rc) {
        ct_progress_end(&pr);
        fprintf(stderr, "cutrace export: %s\n", err);
        if (x.src)
            free_job(&x);
        ct_out_abort(&of);
        /* an option that selects nothing of the run (--step, --ranks,
         * --iterations) is the user's to fix */
        return ct_load_usage_error(rc) ? CT_EXIT_USAGE : CT_EXIT_BAD_INPUT;
    }
    struct ct_cp_path path = {0};
    if (cpath) {
        rc = critical_path(&x, &path, err, sizeof(err));
        if (rc) {
            ct_progress_end(&pr);
            fprintf(stderr, "cutrace export: %s\n", err);
            free_job(&x);
            ct_out_abort(&of);
            return CT_EXIT_BAD_INPUT;
        }
        x.cp = &path;
        x.cp_first = have_iters ? it_first : 0;
        x.cp_last = have_iters ? it_last : -1;
    }
    /* the time zero (the job's earliest record) and the Chrome file's size
     * before anything is written: a file no viewer opens is refused */
    x.nccl_proxy = nproxy;
    struct ct_export_size est = {0};
    rc = ct_export_prescan(&x, !sqlite, &est, &pr, err, sizeof(err));
    if (!rc && !sqlite && est.bytes > max_size) {
        char eb[32], lb[32];
        human_bytes(est.bytes, eb, sizeof(eb));
        human_bytes(max_size, lb, sizeof(lb));
        snprintf(err, sizeof(err),
                 "the Chrome file would be about %s (%" PRIu64 " bytes, %" PRIu64
                 " events), over the limit of "
                 "%s%s: export a part with --ranks LIST, --iterations A-B or --window "
                 "START-END, or raise the limit with --max-size SIZE (docs/export.md, \"Size\")",
                 eb, est.bytes, est.events, lb,
                 have_max ? " (--max-size)" : ", about what Perfetto UI opens in a browser");
        rc = -E2BIG;
    }
    if (rc) {
        ct_progress_end(&pr);
        fprintf(stderr, "cutrace export: %s\n", err);
        ct_cp_path_free(&path);
        free_job(&x);
        ct_out_abort(&of);
        return rc == -E2BIG ? CT_EXIT_USAGE : CT_EXIT_BAD_INPUT;
    }
    ct_export_rebase(&x);
    if (sqlite)
        rc = ct_export_sqlite(of.tmp, &x, &pr, err, sizeof(err));
    else
        rc = ct_export_chrome(of.f, &x, &pr, err, sizeof(err));
    if (!rc)
        rc = ct_out_commit(&of, err, sizeof(err));
    else
        ct_out_abort(&of);
    ct_progress_end(&pr);
    ct_cp_path_free(&path);
    free_job(&x);
    if (rc) {
        fprintf(stderr, "cutrace export: %s\n", err);
        return CT_EXIT_BAD_INPUT;
    }
    ct_progress_finish("cutrace export");
    return 0;
}
