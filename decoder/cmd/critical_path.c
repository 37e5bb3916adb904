/*
 * `cutrace critical-path [--json] [-o FILE] [--step NAME] [--skip N]
 * [--top N] TRACE|DIR...`: per step and over the run, the cross-rank path
 * that set the step time and what it is made of (docs/critical-path.md).
 * With --scale (the same selectors as whatif) it is the path of the
 * replayed job; cutrace whatif adds the predicted step to that.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/analysis.h"
#include "decoder/analysis/critical_path.h"
#include "decoder/cmd/cli.h"
#include "decoder/util/options.h"
#include "decoder/util/progress.h"
#include "decoder/export/critical_path_out.h"
#include "decoder/load/load.h"
#include "decoder/util/outfile.h"
#include "decoder/read/job.h"

static void usage(FILE *f, const char *cmd)
{
    int w = !strcmp(cmd, "whatif");
    fprintf(f,
            "usage: cutrace %s [--json] [-o FILE] [--step NAME] [--skip N]%s TRACE|DIR...\n"
            "  --json       the JSON document (docs/critical-path.md)\n"
            "  -o FILE      write it to FILE\n"
            "  --step NAME  the NVTX range or mark naming iterations (default ProfilerStep)\n"
            "  --skip N     drop the first N iterations of every rank\n"
            "  --iterations A-B  only steps A..B (the graph holds only their work)\n"
            "  --top N      segments listed in text (default 10, 0 all)\n"
            "  --scale SELECTOR=FACTOR  scale durations in the replay%s; selectors:\n"
            "               kernel=GLOB  kernels whose name matches (raw or demangled)\n"
            "               rank=N       all GPU work of rank N but collectives' transfers\n"
            "               op=NAME[:BYTES]  a collective's transfer (op=AllReduce=0.5)\n"
            "               host=N       rank N's host time between host events\n"
            "               data         data-loader waits\n"
            "               ckpt         checkpoint I/O\n"
            "               net          the network's bandwidth term (net=0.25: 4x faster;\n"
            "                            each collective's latency, fitted over its sizes, kept)\n"
            "               link=A-B     the bandwidth of the link from rank A to rank B\n"
            "  --comm-kernels FILE  kernel-name patterns that count as communication\n"
            "               (docs/nccl.md)\n",
            cmd, w ? " --scale SELECTOR=FACTOR..." : " [--scale SELECTOR=FACTOR...]",
            w ? " (at least one; several combine)" : "");
}

/* Shared by both commands (whatif.c calls it with whatif = 1): both are
 * this one leaf's two faces, as goodput is report's. */
int ct_cmd_cp_main(int argc, char **argv, int whatif)
{
    const char *cmd = whatif ? "whatif" : "critical-path";
    const struct option *opts = ct_options_of(CT_CMD_CRITICAL_PATH);
    struct ct_shared_opts so = {0};
    char name[32];
    snprintf(name, sizeof(name), "cutrace %s", cmd);
    int c;
    long top = 10;
    int64_t it_first = 0, it_last = -1;
    char sel_what[160] = "";
    char err[512], *end;
    struct ct_cp_scale *sc = calloc((size_t)argc + 1, sizeof(*sc));
    char **specs = calloc((size_t)argc + 1, sizeof(*specs));
    size_t nsc = 0;
    int status = CT_EXIT_USAGE;
    if (!sc || !specs) {
        fprintf(stderr, "cutrace %s: out of memory\n", cmd);
        goto done;
    }
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "jo:h", opts, NULL)) != -1) {
        int shared = ct_shared_opt(CT_CMD_CRITICAL_PATH, name, c, optarg, &so);
        if (shared < 0)
            goto done;
        if (shared)
            continue;
        switch (c) {
        case 't': {
            long v = strtol(optarg, &end, 10);
            if (*end || !*optarg || v < 0) {
                fprintf(stderr, "cutrace %s: --top %s: expected an integer >= 0\n", cmd, optarg);
                goto done;
            }
            top = v;
            break;
        }
        case 'i':
            snprintf(sel_what, sizeof(sel_what), "--iterations %s", optarg);
            if (ct_parse_index_range(optarg, &it_first, &it_last)) {
                fprintf(stderr,
                        "cutrace %s: --iterations '%s': expected A-B with integers 0 <= A <= B "
                        "(A- and -B allowed)\n",
                        cmd, optarg);
                goto done;
            }
            break;
        case 'x':
            if (ct_cp_scale_parse(optarg, &sc[nsc], err, sizeof(err))) {
                fprintf(stderr, "cutrace %s: %s\n", cmd, err);
                goto done;
            }
            specs[nsc++] = optarg;
            break;
        case 'h':
            usage(stdout, cmd);
            ct_help_tail(stdout, cmd);
            status = CT_EXIT_OK;
            goto done;
        default:
            fprintf(stderr,
                    "cutrace %s: unknown or incomplete option '%s'; allowed: --json, -o FILE, "
                    "--step NAME, --skip N, --iterations A-B, --top N, --scale "
                    "SELECTOR=FACTOR, --run ID\n",
                    cmd, argv[optind - 1]);
            goto done;
        }
    }
    int json = so.json;
    long skip = so.skip;
    const char *out = so.out, *step = so.step, *run = so.run;
    if (whatif && !nsc) {
        fprintf(stderr, "cutrace whatif: expected at least one --scale SELECTOR=FACTOR (see "
                        "--help)\n");
        goto done;
    }
    char **ops;
    int nops = ct_cli_operands(cmd, argc, argv, optind, &ops);
    if (!nops)
        goto done;
    status = CT_EXIT_BAD_INPUT;
    struct ct_inputs in = {0};
    char what[64];
    snprintf(what, sizeof(what), "cutrace %s", cmd);
    struct ct_load_opts lo = {.cmd = what, .step = step, .progress = 1, .spill = 1, .run = run};
    int rc = ct_load_operands(&lo, &in, ops, nops, err, sizeof(err));
    if (rc) {
        fprintf(stderr, "cutrace %s: %s\n", cmd, err);
        ct_inputs_free(&in);
        if (ct_load_usage_error(rc))
            status = CT_EXIT_USAGE;
        goto done;
    }
    struct ct_job job;
    struct ct_report rep = {0};
    struct ct_outfile of;
    if ((rc = ct_out_check(out, "-o", in.paths, in.n, err, sizeof(err))) ||
        (rc = ct_out_open(&of, out, "-o", err, sizeof(err)))) {
        fprintf(stderr, "cutrace %s: %s\n", cmd, err);
        ct_inputs_free(&in);
        if (rc == -EEXIST || rc == -EISDIR)
            status = CT_EXIT_USAGE;
        goto done;
    }
    rc = ct_load_job(&lo, &in, &job, err, sizeof(err));
    ct_inputs_free(&in);
    if (rc) {
        fprintf(stderr, "cutrace %s: %s\n", cmd, rc == -ENOMEM ? "out of memory" : err);
        ct_out_abort(&of);
        if (ct_load_usage_error(rc))
            status = CT_EXIT_USAGE;
        goto done;
    }
    struct ct_iter_opts io = {skip, it_first, it_last, 0};
    if (!sel_what[0] && skip > 0)
        snprintf(sel_what, sizeof(sel_what), "--skip %ld", skip);
    struct ct_cp_result base = {0}, pred = {0};
    size_t limit = ct_cp_memory_limit();
    ct_progress_phase(what, "analysing the job");
    rc = ct_report_analyze(&job, &io, &rep);
    if (!rc &&
        ct_report_selected_none(&rep, &io, sel_what[0] ? sel_what : "--skip", err, sizeof(err))) {
        fprintf(stderr, "cutrace %s: %s\n", cmd, err);
        ct_out_abort(&of);
        status = CT_EXIT_USAGE;
        goto free_all;
    }
    for (size_t i = 0; !rc && i < nsc; i++)
        if ((rc = ct_cp_scale_check(&rep, &sc[i], specs[i], err, sizeof(err))) != 0) {
            /* a selector of nothing would predict "unchanged": refused */
            fprintf(stderr, "cutrace %s: %s\n", cmd, err);
            ct_out_abort(&of);
            status = CT_EXIT_USAGE;
            goto free_all;
        }
    if (!rc) {
        ct_progress_phase(what, nsc ? "replaying the steps' graphs" : "the steps' critical paths");
        rc = ct_cp_run(&rep, limit, sc, nsc, &base, &pred);
    }
    if (rc == -E2BIG) {
        fprintf(stderr,
                "cutrace %s: the dependency graph of a single step, with the step before it, "
                "would pass %.0f MiB (the limit: half this machine's memory, or "
                "CUTRACE_CP_MAX_MIB; about 250 bytes per GPU op)\n",
                cmd, (double)limit / (1 << 20));
    } else if (rc) {
        fprintf(stderr, "cutrace %s: out of memory\n", cmd);
    } else if (!base.nsteps) {
        fprintf(stderr,
                "cutrace %s: no iterations found (no ProfilerStep ranges or marks, no "
                "repeating work): a critical path is per step\n",
                cmd);
    } else {
        FILE *f = of.f;
        struct ct_whatif_out w = {rep.step_p50, &base, &pred, specs, nsc, NULL, 0, NULL, 0};
        struct ct_cp_comm_factor *cf = NULL;
        double net;
        for (size_t i = 0; i < nsc; i++)
            if (sc[i].kind == CT_SEL_NET || sc[i].kind == CT_SEL_LINK) {
                w.models = rep.xfer;
                w.nmodels = rep.nxfer;
            }
        if (w.models && ct_cp_bandwidth_factors(&rep, sc, nsc, &net, &cf, &w.nlinks)) {
            fprintf(stderr, "cutrace %s: out of memory\n", cmd);
        } else {
            status = CT_EXIT_OK;
            w.links = cf;
            if (whatif && json)
                ct_whatif_json(f, &w, job.t0);
            else if (whatif)
                ct_whatif_text(f, &w);
            else if (json)
                ct_cp_json(f, nsc ? &pred : &base, job.t0);
            else
                ct_cp_text(f, nsc ? &pred : &base, (size_t)top);
            if (json)
                fputc('\n', f);
            if (ct_out_commit(&of, err, sizeof(err))) {
                fprintf(stderr, "cutrace %s: %s\n", cmd, err);
                status = CT_EXIT_BAD_INPUT;
            }
        }
        free(cf);
    }
    ct_out_abort(&of); /* nothing written (no steps, no memory): the old file stays */
free_all:
    ct_cp_result_free(&base);
    ct_cp_result_free(&pred);
    ct_report_free(&rep);
    ct_job_free(&job);
    ct_progress_finish(what);
done:
    free(sc);
    free(specs);
    return status;
}

int ct_cmd_critical_path(int argc, char **argv)
{
    return ct_cmd_cp_main(argc, argv, 0);
}
