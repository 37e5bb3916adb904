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
#include "decoder/util/options.h"
#include "decoder/util/outfile.h"
#include "decoder/load/load.h"
#include "decoder/read/job.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: cutrace diagnose [--json] [-o FILE] [--min-saving PCT] [--skip N]\n"
               "                        [--rows FILE] TRACE|DIR...\n"
               "  --min-saving P  report findings saving at least P%% of the step (default 2)\n"
               "  --skip N        drop the first N iterations of every rank (warm-up)\n"
               "  --rows FILE     also write per-rank/iteration JSON-lines rows\n"
               "  --run ID        the run to read when the operands hold several\n"
               "  --comm-kernels FILE  kernel-name patterns that count as communication\n"
               "                  (docs/nccl.md)\n");
}

int ct_cmd_diagnose(int argc, char **argv)
{
    const struct option *opts = ct_options_of(CT_CMD_DIAGNOSE);
    int c;
    struct ct_shared_opts so = {0};
    struct ct_diag_opts o = {.min_saving = 0.02};
    struct ct_iter_opts io = {0, 0, -1, 0};
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "jo:h", opts, NULL)) != -1) {
        int shared = ct_shared_opt(CT_CMD_DIAGNOSE, "cutrace diagnose", c, optarg, &so);
        if (shared < 0)
            return CT_EXIT_USAGE;
        if (shared)
            continue;
        switch (c) {
        case 'm': {
            double v;
            if (ct_parse_pct(optarg, 0, 100, &v)) {
                fprintf(stderr,
                        "cutrace diagnose: --min-saving '%s': expected a percentage "
                        "0..100, e.g. 2 or 2%%\n",
                        optarg);
                return CT_EXIT_USAGE;
            }
            o.min_saving = v / 100;
            break;
        }
        case 'h':
            usage(stdout);
            ct_help_tail(stdout, "diagnose");
            return 0;
        default:
            fprintf(stderr,
                    "cutrace diagnose: unknown or incomplete option '%s'; allowed: --json, "
                    "-o FILE, --min-saving PCT, --skip N, --rows FILE, --run ID\n",
                    argv[optind - 1]);
            return CT_EXIT_USAGE;
        }
    }
    int json = so.json;
    const char *out = so.out, *rows_path = so.rows;
    io.skip = so.skip;
    char **ops;
    int nops = ct_cli_operands("diagnose", argc, argv, optind, &ops);
    if (!nops)
        return CT_EXIT_USAGE;
    char err[512] = "";
    struct ct_inputs in = {0};
    struct ct_load_opts lo = {.cmd = "cutrace diagnose", .run = so.run, .no_kineto = 1};
    int rc = ct_load_operands(&lo, &in, ops, nops, err, sizeof(err));
    if (rc) {
        fprintf(stderr, "cutrace diagnose: %s\n", err);
        ct_inputs_free(&in);
        return ct_load_usage_error(rc) ? CT_EXIT_USAGE : CT_EXIT_BAD_INPUT;
    }
    struct ct_outfile of = {.slot = -1}, rf = {.slot = -1};
    if ((rc = ct_out_check(out, "-o", in.paths, in.n, err, sizeof(err))) ||
        (rc = ct_out_check(rows_path, "--rows", in.paths, in.n, err, sizeof(err)))) {
        fprintf(stderr, "cutrace diagnose: %s\n", err);
        ct_inputs_free(&in);
        return CT_EXIT_USAGE;
    }
    if ((rc = ct_out_open(&of, out, "-o", err, sizeof(err))) ||
        (rows_path && (rc = ct_out_open(&rf, rows_path, "--rows", err, sizeof(err))))) {
        fprintf(stderr, "cutrace diagnose: %s\n", err);
        ct_out_abort(&of);
        ct_inputs_free(&in);
        return CT_EXIT_BAD_INPUT;
    }
    /* the operands form one run */
    struct ct_run run = {.name = ops[0], .paths = in.paths, .n = in.n};
    struct ct_job job;
    struct ct_report rep;
    struct ct_diagnosis *d = calloc(1, sizeof(*d));
    int status = CT_EXIT_BAD_INPUT;
    rc = d ? ct_run_report(&run, &io, &job, &rep, err, sizeof(err)) : -ENOMEM;
    if (rc) {
        fprintf(stderr, "cutrace diagnose: %s\n", rc == -ENOMEM && !err[0] ? "out of memory" : err);
        ct_out_abort(&of);
        ct_out_abort(&rf);
        goto out;
    }
    rc = ct_diagnose(&rep, &o, d);
    if (rc) {
        fprintf(stderr, "cutrace diagnose: out of memory\n");
        ct_out_abort(&of);
        ct_out_abort(&rf);
    } else {
        if (json)
            ct_diagnosis_json(of.f, d, o.min_saving);
        else
            ct_diagnosis_text(of.f, d, o.min_saving);
        status = 0;
        if (ct_out_commit(&of, err, sizeof(err))) {
            fprintf(stderr, "cutrace diagnose: %s\n", err);
            status = CT_EXIT_BAD_INPUT;
        }
        if (rows_path) {
            ct_rows_write(rf.f, run.name, NULL, &rep);
            if (ct_out_commit(&rf, err, sizeof(err))) {
                fprintf(stderr, "cutrace diagnose: %s\n", err);
                status = CT_EXIT_BAD_INPUT;
            }
        }
    }
    ct_report_free(&rep);
    ct_job_free(&job);
out:
    if (d)
        ct_diagnosis_free(d);
    free(d);
    ct_inputs_free(&in);
    return status;
}
