/*
 * `cutrace diagnose TRACE|DIR...`: one job's findings ranked by time saved
 * if fixed (docs/diff.md). Text, or --json; --rows FILE also writes the
 * job's JSON-lines rows.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/cmd/cli.h"
#include "decoder/compare/diagnose.h"
#include "decoder/read/inputs.h"
#include "decoder/compare/runs.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: cutrace diagnose [--json] [-o FILE] [--min-saving PCT] [--skip N]\n"
               "                        [--rows FILE] TRACE|DIR...\n"
               "  --min-saving P  report findings saving at least P%% of the step (default 2)\n"
               "  --skip N        drop the first N iterations of every rank (warm-up)\n"
               "  --rows FILE     also write per-rank/iteration JSON-lines rows\n");
}

int ct_cmd_diagnose(int argc, char **argv)
{
    static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"min-saving", required_argument, NULL, 'm'},
                                         {"skip", required_argument, NULL, 'k'},
                                         {"rows", required_argument, NULL, 'R'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int json = 0, c;
    const char *out = NULL, *rows_path = NULL;
    struct ct_diag_opts o = {.min_saving = 0.02};
    struct ct_iter_opts io = {0, 0, -1};
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "jo:h", opts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'j': json = 1; break;
        case 'o': out = optarg; break;
        case 'R': rows_path = optarg; break;
        case 'm': {
            double v = strtod(optarg, &end);
            if (end == optarg || (*end && strcmp(end, "%")) || !isfinite(v) || v < 0 || v > 100) {
                fprintf(stderr,
                        "cutrace diagnose: --min-saving '%s': expected a percentage "
                        "0..100, e.g. 2 or 2%%\n",
                        optarg);
                return CT_EXIT_USAGE;
            }
            o.min_saving = v / 100;
            break;
        }
        case 'k':
            io.skip = strtol(optarg, &end, 10);
            if (*end || !*optarg || io.skip < 0) {
                fprintf(stderr, "cutrace diagnose: --skip '%s': expected an integer >= 0\n",
                        optarg);
                return CT_EXIT_USAGE;
            }
            break;
        case 'h': usage(stdout); return 0;
        default:
            fprintf(stderr,
                    "cutrace diagnose: unknown or incomplete option '%s'; allowed: --json, "
                    "-o FILE, --min-saving PCT, --skip N, --rows FILE\n",
                    argv[optind - 1]);
            return CT_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "cutrace diagnose: expected at least one trace file or directory\n");
        usage(stderr);
        return CT_EXIT_USAGE;
    }
    char err[512] = "";
    struct ct_inputs in = {0};
    if (ct_inputs_expand(&in, argv + optind, argc - optind, err, sizeof(err))) {
        fprintf(stderr, "cutrace diagnose: %s\n", err);
        ct_inputs_free(&in);
        return CT_EXIT_BAD_INPUT;
    }
    /* the operands form one run */
    struct ct_run run = {.name = argv[optind], .paths = in.paths, .n = in.n};
    struct ct_job job;
    struct ct_report rep;
    struct ct_diagnosis *d = calloc(1, sizeof(*d));
    int status = CT_EXIT_BAD_INPUT, rc = d ? ct_run_scan(&run, err, sizeof(err)) : -ENOMEM;
    if (!rc)
        rc = ct_run_report(&run, &io, &job, &rep, err, sizeof(err));
    if (rc) {
        fprintf(stderr, "cutrace diagnose: %s\n", rc == -ENOMEM && !err[0] ? "out of memory" : err);
        goto out;
    }
    rc = ct_diagnose(&rep, run.facts, run.n, &o, d);
    FILE *f = rc ? NULL : out ? fopen(out, "w") : stdout;
    if (rc)
        fprintf(stderr, "cutrace diagnose: out of memory\n");
    else if (!f)
        fprintf(stderr, "cutrace diagnose: -o %s: %s\n", out, strerror(errno));
    if (f) {
        if (json)
            ct_diagnosis_json(f, d, o.min_saving);
        else
            ct_diagnosis_text(f, d, o.min_saving);
        status = fflush(f) == 0 && !ferror(f) ? 0 : CT_EXIT_BAD_INPUT;
        if (out)
            fclose(f);
    }
    if (!status && rows_path) {
        FILE *r = fopen(rows_path, "w");
        if (!r) {
            fprintf(stderr, "cutrace diagnose: --rows %s: %s\n", rows_path, strerror(errno));
            status = CT_EXIT_BAD_INPUT;
        } else {
            ct_rows_write(r, &run, NULL, &rep);
            if (fclose(r) != 0)
                status = CT_EXIT_BAD_INPUT;
        }
    }
    ct_report_free(&rep);
    ct_job_free(&job);
out:
    free(d);
    for (size_t i = 0; run.facts && i < run.n; i++)
        ct_facts_free(&run.facts[i]);
    free(run.facts);
    ct_inputs_free(&in);
    return status;
}
