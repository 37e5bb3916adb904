/*
 * `cutrace report`: loads a job (decoder/load/load.c), runs every analysis
 * (decoder/analysis/report.c) and prints the report (text, or --json:
 * schema in docs/report.md; or --html, decoder/export/html.c).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "decoder/analysis/analysis.h"
#include "decoder/analysis/critical_path.h"
#include "decoder/cmd/cli.h"
#include "decoder/export/export.h" /* export: ct_report_html */
#include "decoder/read/inputs.h"
#include "decoder/load/load.h"
#include "decoder/util/options.h"
#include "decoder/util/progress.h"
#include "decoder/util/outfile.h"
#include "decoder/export/report_out.h"
#include "decoder/compare/runs.h"     /* diagnose: --rows; the page's identity */
#include "decoder/compare/diagnose.h" /* the page's findings */
#include "decoder/util/stats.h"
#include "decoder/read/job.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: cutrace report [--json [--rank-iterations]] [-o FILE] [--step NAME] "
               "[--steps A-B] [--skip N] "
               "TRACE|DIR...\n"
               "  --json        the versioned JSON document (docs/report.md) instead of text:\n"
               "                per-rank summaries and the job's steps\n"
               "  --rank-iterations  with --json: also every rank's iterations (a row per\n"
               "                (rank, iteration); large at thousands of ranks)\n"
               "  -o FILE       write the report to FILE instead of stdout\n"
               "  --html        a self-contained HTML page (needs -o FILE; docs/export.md)\n"
               "  --no-critical-path  with --html: leave out the critical path (its graph\n"
               "                costs a pass over the job per chunk of steps;\n"
               "                docs/critical-path.md)\n"
               "  --step NAME   NVTX range or mark naming iterations (default ProfilerStep)\n"
               "  --steps A-B   keep iterations with index A..B (either side may be empty)\n"
               "  --skip N      drop the first N iterations of every rank\n"
               "  --hta         Kineto input (*.json, *.json.gz): HTA's preprocessing and\n"
               "                numbers (the default; docs/kineto.md)\n"
               "  --no-hta      Kineto input: exact ns times, every step, cutrace's rules\n"
               "  --rows FILE   also write per-rank/iteration JSON-lines rows (docs/diff.md)\n"
               "  --run ID      the run to read when the operands hold several (see docs/runs.md)\n"
               "  --comm-kernels FILE  kernel-name patterns that count as communication, added\n"
               "                to (or replacing) the built-in table (docs/nccl.md)\n");
}

/* The HTML page's critical path (export: decoder/export/html_critical_path.c),
 * unless the option leaves it out: for a job in memory within the limit a
 * command that needs the graph takes (in chunks of steps past it); for a
 * spilled job, whose point is one rank's ops in memory at a time, within
 * the side budget diagnose's replay has. The reason when not computed. */
static void html_critical_path(const struct ct_job *job, const struct ct_report *rep, int no_cp,
                               struct ct_cp_result *res, struct ct_cp_path *path,
                               struct ct_html_cp *cp)
{
    int spilled = 0;
    for (size_t r = 0; r < job->nranks; r++)
        spilled |= job->ranks[r].spilled;
    size_t limit = spilled ? CT_CP_SIDE_BYTES : ct_cp_memory_limit();
    int rc = 0;
    if (no_cp) {
        cp->why = "Not computed: the page was written with --no-critical-path.";
    } else if (!rep->iterations) {
        cp->why = "No iterations found: a critical path is per step.";
    } else if ((rc = ct_cp_run_sets(rep, limit, spilled ? CT_CP_SIDE_CHUNKS : 0, NULL, 0, res, NULL,
                                    path))) {
        cp->why = rc != -E2BIG ? "Not computed: out of memory building the critical path's graph."
                  : spilled
                      ? "Not computed: this job was decoded spilled (64 traces or more, or "
                        "CUTRACE_SPILL=1), one rank in memory at a time, and its critical "
                        "path's graph (about 250 bytes per GPU op) would not fit in 8 "
                        "chunks of steps of 1 GiB each. cutrace critical-path computes it "
                        "within half this machine's memory, and cutrace critical-path "
                        "--iterations A-B or cutrace export --critical-path --iterations A-B "
                        "for a part of the run."
                      : "Not computed: one step's critical-path graph, every rank's ops in it, "
                        "would pass half this machine's memory (about 250 bytes per GPU op; "
                        "CUTRACE_CP_MAX_MIB sets the limit).";
    } else {
        cp->res = res;
        cp->path = path;
    }
}

/* What the HTML page shows of the layers above export: `cutrace
 * diagnose`'s findings on this very report (its --json document, with
 * diagnose's default --min-saving 2), and the traces' command lines, GPU
 * names and recorder versions (compare/runs.h, from the facts each trace's
 * extraction gathered). PyTorch profiler traces have neither: the page says
 * why. Everything set here is freed by html_in_free. */
struct html_extra {
    char *diag, *cmdlines;
    char gpus[512], recorder[128], why[600];
};

static void html_in(const struct ct_report *rep, struct html_extra *x, struct ct_html_in *hi)
{
    const struct ct_job *job = rep->job;
    struct ct_diagnosis *d = NULL;
    size_t len = 0, ntraces = 0;
    for (size_t i = 0; i < job->nprocs; i++)
        ntraces += job->procs[i].source != CT_SOURCE_KINETO;
    if (!ntraces) {
        snprintf(x->why, sizeof(x->why),
                 "cutrace diagnose reads cutrace traces only; these are PyTorch profiler traces.");
        goto out;
    }
    hi->gpus = ct_run_value(job, "device.name", x->gpus, sizeof(x->gpus));
    hi->recorder = ct_run_value(job, "cutrace_version", x->recorder, sizeof(x->recorder));
    if (!ct_run_cmdlines(job, &x->cmdlines))
        hi->cmdlines = x->cmdlines;
    struct ct_diag_opts o = {.min_saving = 0.02};
    FILE *m = (d = calloc(1, sizeof(*d))) ? open_memstream(&x->diag, &len) : NULL;
    if (!m || ct_diagnose(rep, &o, d)) {
        snprintf(x->why, sizeof(x->why), "out of memory");
        if (m)
            fclose(m);
        free(x->diag);
        x->diag = NULL;
        goto out;
    }
    ct_diagnosis_json(m, d, o.min_saving);
    if (fclose(m)) {
        snprintf(x->why, sizeof(x->why), "out of memory");
        free(x->diag);
        x->diag = NULL;
    }
out:
    hi->diagnose = x->diag;
    hi->diagnose_why = x->why;
    if (d)
        ct_diagnosis_free(d);
    free(d);
}

static void html_in_free(struct html_extra *x)
{
    free(x->diag);
    free(x->cmdlines);
}

int ct_cmd_report(int argc, char **argv)
{
    const struct option *opts = ct_options_of(CT_CMD_REPORT);
    int html = 0, c, hta = 1; /* kineto: HTA-compatible mode for Kineto input */
    int rank_iters = 0, no_cp = 0;
    char sel_what[160] = "";
    struct ct_shared_opts so = {0};
    struct ct_iter_opts io = {0, 0, -1, 0};
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "jo:h", opts, NULL)) != -1) {
        int shared = ct_shared_opt(CT_CMD_REPORT, "cutrace report", c, optarg, &so);
        if (shared < 0)
            return CT_EXIT_USAGE;
        if (shared)
            continue;
        switch (c) {
        case 'S':
            snprintf(sel_what, sizeof(sel_what), "--steps %s", optarg);
            if (ct_parse_index_range(optarg, &io.first, &io.last)) {
                fprintf(stderr,
                        "cutrace report: --steps '%s': expected A-B with integers "
                        "0 <= A <= B (A- and -B allowed)\n",
                        optarg);
                return CT_EXIT_USAGE;
            }
            break;
        case 'h':
            usage(stdout);
            ct_help_tail(stdout, "report");
            return 0;
        case 'H': hta = 1; break;
        case 'N': hta = 0; break;
        case 'T': html = 1; break;
        case 'I': rank_iters = 1; break;
        case 'P': no_cp = 1; break;
        default:
            fprintf(stderr,
                    "cutrace report: unknown or incomplete option '%s'; allowed: "
                    "--json, --html, -o FILE, --step NAME, --steps A-B, --skip N, --hta, "
                    "--no-hta, --rows FILE, --rank-iterations, --no-critical-path, --run ID\n",
                    argv[optind - 1]);
            return CT_EXIT_USAGE;
        }
    }
    int json = so.json;
    const char *out = so.out, *rows = so.rows; /* diagnose: --rows FILE */
    const char *step = so.step, *run = so.run;
    io.skip = so.skip;
    if (!sel_what[0] && so.skip > 0)
        snprintf(sel_what, sizeof(sel_what), "--skip %ld", so.skip);
    if (rank_iters && !json) {
        fprintf(stderr, "cutrace report: --rank-iterations adds to the JSON document: use it "
                        "with --json\n");
        return CT_EXIT_USAGE;
    }
    if (html && (json || !out)) { /* export: the HTML page goes to a file */
        fprintf(stderr, "cutrace report: --html writes a file: use --html -o FILE (without "
                        "--json)\n");
        return CT_EXIT_USAGE;
    }
    if (no_cp && !html) {
        fprintf(stderr, "cutrace report: --no-critical-path is an option of the HTML page: use "
                        "it with --html -o FILE\n");
        return CT_EXIT_USAGE;
    }
    char **ops;
    int nops = ct_cli_operands("report", argc, argv, optind, &ops);
    if (!nops)
        return CT_EXIT_USAGE;
    struct ct_inputs in = {0};
    char err[512];
    struct ct_job job;
    struct ct_report rep = {0};
    struct ct_load_opts lo = {
        .cmd = "cutrace report", .step = step, .hta = hta, .progress = 1, .spill = 1, .run = run};
    int rc = ct_load_operands(&lo, &in, ops, nops, err, sizeof(err));
    if (rc) {
        fprintf(stderr, "cutrace report: %s\n", err);
        ct_inputs_free(&in);
        return ct_load_usage_error(rc) ? CT_EXIT_USAGE : CT_EXIT_BAD_INPUT;
    }
    /* the outputs are checked, and their temporary files made, before the
     * long part: an input or a trace is never replaced (util/outfile.h) */
    struct ct_outfile of, rf = {.slot = -1};
    if ((rc = ct_out_check(out, "-o", in.paths, in.n, err, sizeof(err))) ||
        (rc = ct_out_check(rows, "--rows", in.paths, in.n, err, sizeof(err)))) {
        fprintf(stderr, "cutrace report: %s\n", err);
        ct_inputs_free(&in);
        return CT_EXIT_USAGE;
    }
    if (rows && !ct_out_is_stdout(out) && !strcmp(rows, out)) {
        fprintf(stderr, "cutrace report: -o and --rows name the same file %s\n", out);
        ct_inputs_free(&in);
        return CT_EXIT_USAGE;
    }
    if ((rc = ct_out_open(&of, out, "-o", err, sizeof(err))) ||
        (rows && (rc = ct_out_open(&rf, rows, "--rows", err, sizeof(err))))) {
        fprintf(stderr, "cutrace report: %s\n", err);
        ct_out_abort(&of);
        ct_inputs_free(&in);
        return CT_EXIT_BAD_INPUT;
    }
    rc = ct_load_job(&lo, &in, &job, err, sizeof(err));
    if (rc) {
        fprintf(stderr, "cutrace report: %s\n", rc == -ENOMEM ? "out of memory" : err);
        ct_out_abort(&of);
        ct_out_abort(&rf);
        ct_inputs_free(&in);
        return ct_load_usage_error(rc) ? CT_EXIT_USAGE : CT_EXIT_BAD_INPUT;
    }
    ct_progress_phase("cutrace report", "analysing the job");
    rc = ct_report_analyze(&job, &io, &rep);
    if (rc) {
        fprintf(stderr, "cutrace report: out of memory\n");
        ct_out_abort(&of);
        ct_out_abort(&rf);
        ct_inputs_free(&in);
        ct_report_free(&rep);
        ct_job_free(&job);
        return CT_EXIT_BAD_INPUT;
    }
    if (ct_report_selected_none(&rep, &io, sel_what[0] ? sel_what : "--skip", err, sizeof(err))) {
        /* a selection outside the run would print an empty report, exit 0 */
        fprintf(stderr, "cutrace report: %s\n", err);
        ct_out_abort(&of);
        ct_out_abort(&rf);
        ct_inputs_free(&in);
        ct_report_free(&rep);
        ct_job_free(&job);
        return CT_EXIT_USAGE;
    }
    ct_progress_phase("cutrace report", html ? "writing the page" : "writing the report");
    FILE *f = of.f;
    /* a long job's JSON is tens of MB: 1 MiB writes to the file, not 4 KiB
     * ones (freed after the commit; stdout keeps its own buffer) */
    char *obuf = f != stdout ? malloc(1 << 20) : NULL;
    if (obuf)
        setvbuf(f, obuf, _IOFBF, 1 << 20);
    if (html) { /* export: decoder/export/html.c */
        struct ct_cp_result cres = {0};
        struct ct_cp_path cpath = {0};
        struct ct_html_cp cp = {0};
        struct html_extra hx = {0};
        struct ct_html_in hi = {.cp = &cp};
        html_critical_path(&job, &rep, no_cp, &cres, &cpath, &cp);
        html_in(&rep, &hx, &hi);
        ct_report_html(f, &rep, &hi);
        html_in_free(&hx);
        ct_cp_path_free(&cpath);
        ct_cp_result_free(&cres);
    } else if (json)
        ct_report_json(f, &rep, rank_iters);
    else
        ct_report_text(f, &rep);
    int werr = 0;
    if (ct_out_commit(&of, err, sizeof(err))) {
        fprintf(stderr, "cutrace report: %s\n", err);
        werr = 1;
    }
    free(obuf);
    /* diagnose: --rows FILE, the report's JSON-lines rows (decoder/compare/diff_rows.c) */
    if (rows) {
        ct_rows_write(rf.f, ops[0], NULL, &rep);
        if (ct_out_commit(&rf, err, sizeof(err))) {
            fprintf(stderr, "cutrace report: %s\n", err);
            ct_out_abort(&rf);
            werr = 1;
        }
    }
    ct_inputs_free(&in);
    /* diagnose: end */
    for (size_t r = 0; r < job.nranks; r++) {
        const struct ct_coverage *cv = &job.ranks[r].cov;
        if (cv->truncated || cv->damaged)
            fprintf(stderr, "cutrace report: rank %d: %llu truncated file(s), %llu damaged bytes\n",
                    job.ranks[r].rank, (unsigned long long)cv->truncated,
                    (unsigned long long)cv->damaged);
    }
    ct_report_free(&rep);
    ct_job_free(&job);
    ct_progress_finish("cutrace report");
    return werr ? CT_EXIT_BAD_INPUT : 0;
}
