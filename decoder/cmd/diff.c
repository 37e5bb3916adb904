/*
 * `cutrace diff A B`: compares two sets of runs metric by metric (docs/
 * diff.md), optionally per segment of a metadata key (--by). Text or
 * --json; --rows FILE also writes every run's JSON-lines rows. The runs,
 * segments and their comparison are decoder/compare/diff_segments.c; this
 * file parses the options and prints.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/cmd/cli.h"
#include "decoder/compare/diff.h"
#include "decoder/compare/diff_segments.h"
#include "decoder/util/json.h"
#include "decoder/util/options.h"
#include "decoder/util/outfile.h"
#include "decoder/compare/runs.h"
#include "decoder/read/job.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: cutrace diff [--json] [-o FILE] [--by KEY] [--primary METRIC]\n"
               "                    [--min-effect PCT] [--seed N] [--reps N] [--alpha Q]\n"
               "                    [--skip N] [--rows FILE] A B\n"
               "  A, B            a run folder (traces of one job) or a folder of run folders\n"
               "  --primary M     the metric tested alone at --alpha (default step_us); the\n"
               "                  others are diagnostics, corrected among themselves\n"
               "  --by KEY        compare per value of KEY: host, gpu, driver, nccl_version,\n"
               "                  nccl_algo, nccl_proto (what NCCL chose), an NCCL_* setting\n"
               "                  or a --tag key; nccl_tag: per NCCL user tag (profiler ABI\n"
               "                  v7), that tag's ops, gpu_us and op_us (primary op_us)\n"
               "  --min-effect P  smallest change that counts, percent (default 2)\n"
               "  --seed N        bootstrap seed (default 1; printed)\n"
               "  --reps N        bootstrap resamples (default 2000)\n"
               "  --alpha Q       false-discovery rate across metrics (default 0.05)\n"
               "  --skip N        drop the first N iterations of every rank (warm-up)\n"
               "  --rows FILE     also write per-run/rank/iteration JSON-lines rows\n"
               "  --comm-kernels FILE  kernel-name patterns that count as communication\n"
               "                  (docs/nccl.md)\n");
}

/* A p- or q-value; negative means "not tested" (null). */
static void jnum(FILE *f, const char *k, double v)
{
    fprintf(f, "\"%s\":", k);
    ct_json_num_g(f, v < 0 ? NAN : v);
}

static void print_rows_json(FILE *f, const struct ct_diff_row *r, size_t n, int run_level)
{
    fprintf(f, "\"metrics\":[");
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%s{\"metric\":", i ? "," : "");
        ct_json_str(f, r[i].name);
        fprintf(f, ",\"n_a\":%zu,\"n_b\":%zu,", r[i].na, r[i].nb);
        ct_json_member(f, "median_a", r[i].med_a, 3);
        fputc(',', f);
        ct_json_member(f, "median_b", r[i].med_b, 3);
        fputc(',', f);
        jnum(f, "ratio", r[i].ratio);
        fputc(',', f);
        jnum(f, "ci_low", r[i].lo);
        fputc(',', f);
        jnum(f, "ci_high", r[i].hi);
        fputc(',', f);
        jnum(f, "p", r[i].p);
        fputc(',', f);
        jnum(f, "q", r[i].q);
        fprintf(f, ",\"verdict\":\"%s\",\"change\":\"%s\"", ct_diff_verdict_name(r[i].verdict),
                ct_diff_change_name(r[i].change));
        if (run_level) {
            fprintf(f, ",\"role\":\"%s\",\"test\":\"%s\",\"samples_a\":%zu,\"samples_b\":%zu,",
                    r[i].primary ? "primary" : "diagnostic", r[i].run_level ? "welch" : "u",
                    r[i].samples_a, r[i].samples_b);
            jnum(f, "df", r[i].run_level ? r[i].df : -1);
        }
        fprintf(f, ",\"unavailable\":[");
        for (size_t k = 0; k < r[i].nunavail; k++) {
            fprintf(f, "%s{\"figure\":", k ? "," : "");
            ct_json_str(f, r[i].unavail[k].figure);
            fprintf(f, ",\"reason\":");
            ct_json_str(f, r[i].unavail[k].reason);
            fputc('}', f);
        }
        fprintf(f, "]}");
    }
    fprintf(f, "]");
}

/* A bound or ratio in text: "-" where it cannot be computed. */
static void fmt_num(char *buf, size_t len, double v)
{
    if (isfinite(v) && v >= 0)
        snprintf(buf, len, "%.4f", v);
    else
        snprintf(buf, len, "-");
}

/* The ratio and its interval as the text shows them: "1.0340" and
 * "[1.0170, 1.0510]", "-" for what cannot be computed. */
static void fmt_ratio(const struct ct_diff_row *r, char *ratio, size_t rlen, char *ci, size_t clen)
{
    char lo[16], hi[16];
    fmt_num(ratio, rlen, r->ratio);
    if (r->ratio < 0) {
        snprintf(ci, clen, "-");
        return;
    }
    fmt_num(lo, sizeof(lo), r->lo);
    fmt_num(hi, sizeof(hi), r->hi);
    snprintf(ci, clen, "[%s, %s]", lo, hi);
}

/* A median, p or q in text: "-" where it is not computed (NaN, or a p or
 * q of -1: not tested). */
static void fmt_fig(char *buf, size_t len, const char *fmt, double v)
{
    if (isfinite(v) && v >= 0)
        snprintf(buf, len, fmt, v);
    else
        snprintf(buf, len, "-");
}

/* --by KEY: the keys cutrace computes start "nccl_" (NCCL's own settings
 * are NCCL_*, a --tag key is reached by its full name tag.KEY): another
 * one is a typo that would make every run "(none)". 1 when KEY is usable. */
static int by_ok(const char *by)
{
    static const char *const ours[] = {"nccl_algo", "nccl_proto", "nccl_tag", "nccl_version",
                                       "nccl"};
    if (!*by)
        return 0;
    if (strncmp(by, "nccl_", 5))
        return 1;
    for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
        if (!strcmp(by, ours[i]))
            return 1;
    return 0;
}

/* A JSON figure name as the text table heads it. */
static const char *text_figure(const char *figure)
{
    return !strcmp(figure, "ratio")     ? "B/A"
           : !strcmp(figure, "ci_low")  ? "95% CI low end"
           : !strcmp(figure, "ci_high") ? "95% CI high end"
                                        : figure;
}

static void print_rows_text(FILE *f, const struct ct_diff_row *r, size_t n)
{
    fprintf(f, "  %-40s %12s %12s %8s %19s %9s %9s  %s\n", "metric", "A median", "B median", "B/A",
            "95% CI", "p", "q", "verdict");
    /* the primary, the other verdicts, then the rest in collection order */
    for (int pass = 0; pass < 3; pass++)
        for (size_t i = 0; i < n; i++) {
            int in = pass == 0 ? r[i].primary : !r[i].primary && (r[i].change != 0) == (pass == 1);
            if (!in)
                continue;
            char ratio[16], ci[40], ma[24], mb[24], p[16], q[16];
            fmt_ratio(&r[i], ratio, sizeof(ratio), ci, sizeof(ci));
            fmt_fig(ma, sizeof(ma), "%.3f", r[i].med_a);
            fmt_fig(mb, sizeof(mb), "%.3f", r[i].med_b);
            fmt_fig(p, sizeof(p), "%.3g", r[i].p);
            fmt_fig(q, sizeof(q), "%.3g", r[i].q);
            fprintf(f, "  %-40.40s %12s %12s %8s %19s %9s %9s  %s\n", r[i].name, ma, mb, ratio, ci,
                    p, q, ct_diff_change_name(r[i].change));
        }
    /* the figures shown as "-", with why: one line per metric and reason */
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < r[i].nunavail; k++) {
            const struct ct_diff_unavail *u = r[i].unavail;
            if (k && u[k].reason == u[k - 1].reason)
                continue;
            fprintf(f, "  - %s: %s", r[i].name, text_figure(u[k].figure));
            for (size_t j = k + 1; j < r[i].nunavail && u[j].reason == u[k].reason; j++)
                fprintf(f, ", %s", text_figure(u[j].figure));
            fprintf(f, ": %s\n", u[k].reason);
        }
}

int ct_cmd_diff(int argc, char **argv)
{
    const struct option *opts = ct_options_of(CT_CMD_DIFF);
    int c;
    struct ct_shared_opts so = {0};
    const char *by = NULL, *primary = NULL;
    struct ct_diff_opts o = {.min_effect = 0.02, .alpha = 0.05, .seed = 1, .reps = 2000};
    struct ct_iter_opts io = {0, 0, -1, 0};
    double v;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "jo:h", opts, NULL)) != -1) {
        char *end;
        int shared = ct_shared_opt(CT_CMD_DIFF, "cutrace diff", c, optarg, &so);
        if (shared < 0)
            return CT_EXIT_USAGE;
        if (shared)
            continue;
        switch (c) {
        case 'b': by = optarg; break;
        case 'P':
            if (!*optarg) {
                fprintf(stderr, "cutrace diff: --primary: expected a metric name, e.g. step_us "
                                "or compute_us (docs/diff.md)\n");
                return CT_EXIT_USAGE;
            }
            primary = optarg;
            char names[512];
            if (!ct_diff_metric_name_ok(primary, names, sizeof(names))) {
                fprintf(stderr,
                        "cutrace diff: --primary %s: no such metric; expected one of %s, "
                        "kernel:NAME or collective:OP:BYTES (docs/diff.md)\n",
                        primary, names);
                return CT_EXIT_USAGE;
            }
            break;
        case 'm':
            if (ct_parse_pct(optarg, 0, 100, &v)) {
                fprintf(stderr,
                        "cutrace diff: --min-effect '%s': expected a percentage "
                        "0..100, e.g. 2 or 2%%\n",
                        optarg);
                return CT_EXIT_USAGE;
            }
            o.min_effect = v / 100;
            break;
        case 'a':
            if (ct_parse_pct(optarg, 1e-9, 1, &o.alpha)) {
                fprintf(stderr, "cutrace diff: --alpha '%s': expected 0 < Q <= 1\n", optarg);
                return CT_EXIT_USAGE;
            }
            break;
        case 's':
            o.seed = strtoull(optarg, &end, 0);
            if (*end || !*optarg) {
                fprintf(stderr, "cutrace diff: --seed '%s': expected an integer\n", optarg);
                return CT_EXIT_USAGE;
            }
            break;
        case 'r': {
            unsigned long r = strtoul(optarg, &end, 10);
            if (*end || r < 100 || r > 1000000) {
                fprintf(stderr, "cutrace diff: --reps '%s': expected 100..1000000\n", optarg);
                return CT_EXIT_USAGE;
            }
            o.reps = (unsigned)r;
            break;
        }
        case 'h':
            usage(stdout);
            ct_help_tail(stdout, "diff");
            return 0;
        default:
            fprintf(stderr,
                    "cutrace diff: unknown or incomplete option '%s'; allowed: --json, -o FILE, "
                    "--by KEY, --primary METRIC, --min-effect PCT, --seed N, --reps N, "
                    "--alpha Q, --skip N, --rows FILE\n",
                    argv[optind - 1]);
            return CT_EXIT_USAGE;
        }
    }
    if (by && !by_ok(by)) {
        fprintf(stderr,
                "cutrace diff: --by '%s': no such key; expected nccl_algo, nccl_proto, nccl_tag, "
                "nccl_version, host, gpu, driver, an NCCL_* setting, a metadata key or a --tag "
                "key (tag.KEY) (docs/diff.md)\n",
                by);
        return CT_EXIT_USAGE;
    }
    int by_tag = by && !strcmp(by, CT_DIFF_BY_TAG);
    if (by_tag && primary) {
        fprintf(stderr, "cutrace diff: --primary with --by nccl_tag: a tag's primary is its "
                        "op_us (docs/diff.md)\n");
        return CT_EXIT_USAGE;
    }
    const char *seg_primary = by_tag ? "op_us" : primary;
    int json = so.json;
    const char *out = so.out, *rows_path = so.rows;
    io.skip = so.skip;
    if (argc - optind != 2) {
        fprintf(stderr, "cutrace diff: expected two operands, A and B\n");
        usage(stderr);
        return CT_EXIT_USAGE;
    }
    char err[512] = "";
    struct ct_diff_side s[2] = {0};
    struct ct_diff_segment *segs = NULL;
    size_t nseg = 0, nwl = 0;
    char **wl = NULL;
    FILE *rows = NULL, *f = NULL;
    struct ct_outfile of = {.slot = -1}, rf = {.slot = -1};
    int rc = 0, status = CT_EXIT_BAD_INPUT, primary_seen = 0, run_levels = 0;
    for (int k = 0; k < 2 && !rc; k++)
        rc = ct_runs_find(&s[k].rs, argv[optind + k], err, sizeof(err));
    /* the outputs: never an input or a trace, written whole or not at all
     * (decoder/util/outfile.h) */
    char **paths = NULL;
    size_t npaths = 0;
    for (int k = 0; k < 2 && !rc; k++)
        for (size_t i = 0; i < s[k].rs.n && !rc; i++) {
            char **grown = realloc(paths, (npaths + s[k].rs.runs[i].n + 1) * sizeof(*grown));
            if (!grown) {
                rc = -ENOMEM;
                break;
            }
            paths = grown;
            for (size_t j = 0; j < s[k].rs.runs[i].n; j++)
                paths[npaths++] = s[k].rs.runs[i].paths[j];
        }
    if (!rc && ((rc = ct_out_check(out, "-o", paths, npaths, err, sizeof(err))) ||
                (rc = ct_out_check(rows_path, "--rows", paths, npaths, err, sizeof(err))))) {
        free(paths);
        fprintf(stderr, "cutrace diff: %s\n", err);
        status = CT_EXIT_USAGE;
        goto out;
    }
    free(paths);
    if (!rc && !(rc = ct_out_open(&of, out, "-o", err, sizeof(err))) && rows_path &&
        !(rc = ct_out_open(&rf, rows_path, "--rows", err, sizeof(err))))
        rows = rf.f;
    for (int k = 0; k < 2 && !rc; k++)
        rc = ct_diff_side_load(&s[k], by, &io, rows, k ? "B" : "A", err, sizeof(err));
    if (!rc)
        rc = by_tag ? ct_diff_tag_segments(s, &segs, &nseg) : ct_diff_segments(s, &segs, &nseg);
    if (!rc)
        rc = ct_diff_side_warnings(s, &wl, &nwl);
    if (rc) {
        fprintf(stderr, "cutrace diff: %s\n", rc == -ENOMEM && !err[0] ? "out of memory" : err);
        goto out;
    }
    /* one line each, whatever the output: the comparison still runs */
    for (size_t i = 0; i < nwl; i++)
        fprintf(stderr, "cutrace diff: warning: %s\n", wl[i]);
    f = of.f;
    if (json)
        fprintf(f,
                "{\"schema\":\"cutrace.diff\",\"version\":1,\"cutrace_version\":\"%s\",\"seed\":"
                "%" PRIu64 ",\"reps\":%u,\"min_effect_pct\":%.6g,\"alpha\":%.6g,\"by\":",
                CT_VERSION, o.seed, o.reps, o.min_effect * 100, o.alpha);
    else
        fprintf(f,
                "cutrace diff: A %zu run(s), B %zu run(s); min effect %.3g%%, alpha %.3g\n"
                "  runs on both sides: ratio of the runs' geometric mean, Welch's t on the runs "
                "(variance at least\n  what their iterations' scatter implies); primary %s alone "
                "at alpha, diagnostics BH q\n"
                "  otherwise: ratio of medians, 95%% bootstrap CI (seed %" PRIu64
                ", %u resamples), Mann-Whitney U, BH q\n",
                s[0].rs.n, s[1].rs.n, o.min_effect * 100, o.alpha,
                seg_primary ? seg_primary : "step_us", o.seed, o.reps);
    if (json) {
        if (by)
            ct_json_str(f, by);
        else
            fprintf(f, "null");
        fprintf(f, ",\"warnings\":[");
        for (size_t i = 0; i < nwl; i++) {
            if (i)
                fputc(',', f);
            ct_json_str(f, wl[i]);
        }
        fprintf(f, "],\"segments\":[");
    }
    for (size_t g = 0; g < nseg && !rc; g++) {
        struct ct_diff_segment *sg = &segs[g];
        struct ct_diff_segment_result res;
        rc = by_tag ? ct_diff_tag_compare(s, sg, &o, &io, &res, err, sizeof(err))
                    : ct_diff_segment_compare(s, sg, &o, primary, &io, &res, err, sizeof(err));
        int per_it = res.per_iteration, run_level = res.run_level, pchange = res.primary_change;
        struct ct_diff_row *r = res.rows;
        size_t nr = res.nrows;
        const char *warn = res.warn, *explained = res.explained;
        if (run_level) {
            run_levels++;
            primary_seen |= !rc && nr && r[0].primary;
        }
        if (json) {
            fprintf(f, "%s{\"value\":", g ? "," : "");
            ct_json_str(f, sg->value);
            fprintf(f, ",\"runs_a\":%zu,\"runs_b\":%zu,\"samples\":\"%s\",", sg->na, sg->nb,
                    per_it      ? "iterations"
                    : run_level ? "runs+iterations"
                                : "runs");
            if (run_level) {
                fprintf(f, "\"primary\":");
                ct_json_str(f, nr && r[0].primary ? r[0].name
                               : seg_primary      ? seg_primary
                                                  : "step_us");
                fprintf(f,
                        ",\"primary_verdict\":\"%s\",\"primary_change\":\"%s\",\"explained_by\":[",
                        ct_diff_verdict_name(nr && r[0].primary ? r[0].verdict : 0),
                        ct_diff_change_name(pchange));
                int first = 1;
                for (size_t i = 1; pchange && i < nr; i++)
                    if (ct_diff_same_sign(r[i].change, pchange)) {
                        if (!first)
                            fputc(',', f);
                        ct_json_str(f, r[i].name);
                        first = 0;
                    }
                fprintf(f, "],");
            }
            fprintf(f, "\"warnings\":[");
            if (warn[0])
                ct_json_str(f, warn);
            fprintf(f, "],");
            print_rows_json(f, r, nr, run_level);
            fputc('}', f);
        } else {
            const char *what = per_it ? "iterations" : run_level ? "runs+iterations" : "runs";
            if (by)
                fprintf(f, "\n%s = %s: A %zu run(s), B %zu run(s), samples: %s\n", by, sg->value,
                        sg->na, sg->nb, what);
            else
                fprintf(f, "\nsamples: %s\n", what);
            if (run_level && nr && r[0].primary) {
                char ratio[16], ci[40];
                fmt_ratio(&r[0], ratio, sizeof(ratio), ci, sizeof(ci));
                fprintf(f,
                        "  primary %s: %s: B/A %s, 95%% CI %s, p %.3g (Welch's t on %zu vs %zu "
                        "runs, %zu vs %zu iterations behind them)%s%s\n",
                        r[0].name, ct_diff_change_name(r[0].change), ratio, ci, r[0].p, r[0].na,
                        r[0].nb, r[0].samples_a, r[0].samples_b,
                        explained[0] ? "; explained by: " : "", explained);
            }
            if (warn[0])
                fprintf(f, "  warning: %s\n", warn);
            if (nr)
                print_rows_text(f, r, nr);
        }
        ct_diff_segment_result_free(&res);
    }
    if (json)
        fprintf(f, "]}\n");
    if (rc) {
        fprintf(stderr, "cutrace diff: %s\n", rc == -ENOMEM && !err[0] ? "out of memory" : err);
        goto out;
    }
    if (primary && run_levels && !primary_seen) {
        /* a kernel or collective that neither side has: the comparison of
         * the step alone would read as the answer */
        fprintf(stderr,
                "cutrace diff: --primary %s: neither side has that metric (kernel:NAME and "
                "collective:OP:BYTES name the runs' own kernels and collectives)\n",
                primary);
        status = CT_EXIT_USAGE;
        goto out;
    }
    status = 0;
    if (ct_out_commit(&of, err, sizeof(err)) || (rows && ct_out_commit(&rf, err, sizeof(err)))) {
        fprintf(stderr, "cutrace diff: %s\n", err);
        status = CT_EXIT_BAD_INPUT;
    }
out:
    ct_out_abort(&of); /* after a commit: nothing left to remove */
    ct_out_abort(&rf);
    ct_diff_segments_free(segs, nseg);
    for (size_t i = 0; i < nwl; i++)
        free(wl[i]);
    free(wl);
    ct_diff_side_free(&s[0]);
    ct_diff_side_free(&s[1]);
    return status;
}
