/*
 * `cutrace goodput [--json] [-o FILE] [--job ID] [--step NAME] DIR...`:
 * where one job's wall time went over all its attempts (docs/goodput.md).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/analysis.h"
#include "decoder/analysis/goodput.h"
#include "decoder/cmd/cli.h"
#include "decoder/util/options.h"
#include "decoder/util/progress.h"
#include "decoder/export/goodput_out.h"
#include "decoder/load/load.h"
#include "decoder/util/outfile.h"
#include "decoder/read/job.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: cutrace goodput [--json] [-o FILE] [--job ID] [--step NAME] TRACE|DIR...\n"
               "  --json       the JSON document (docs/goodput.md)\n"
               "  -o FILE      write it to FILE\n"
               "  --job ID     the job to measure when the traces hold several\n"
               "  --run ID     the run to read when the operands hold several (see docs/runs.md)\n"
               "  --step NAME  the NVTX range or mark naming iterations (default ProfilerStep)\n"
               "  --comm-kernels FILE  kernel-name patterns that count as communication\n"
               "               (docs/nccl.md)\n");
}

/* The distinct job ids of the job's processes, as "a, b, c" in buf; their count. */
static size_t job_ids(const struct ct_job *job, char *buf, size_t n)
{
    size_t count = 0, used = 0;
    buf[0] = 0;
    for (size_t i = 0; i < job->nprocs; i++) {
        const char *id = job->procs[i].life.job;
        int seen = !id;
        for (size_t k = 0; k < i && !seen; k++)
            seen = job->procs[k].life.job && !strcmp(job->procs[k].life.job, id);
        if (seen)
            continue;
        count++;
        int w = snprintf(buf + used, n - used, "%s%s", count > 1 ? ", " : "", id);
        if (w > 0 && (size_t)w < n - used)
            used += (size_t)w;
    }
    return count;
}

int ct_cmd_goodput(int argc, char **argv)
{
    const struct option *opts = ct_options_of(CT_CMD_GOODPUT);
    struct ct_shared_opts so = {0};
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "jo:h", opts, NULL)) != -1) {
        int shared = ct_shared_opt(CT_CMD_GOODPUT, "cutrace goodput", c, optarg, &so);
        if (shared < 0)
            return CT_EXIT_USAGE;
        if (shared)
            continue;
        switch (c) {
        case 'h':
            usage(stdout);
            ct_help_tail(stdout, "goodput");
            return 0;
        default:
            fprintf(stderr,
                    "cutrace goodput: unknown or incomplete option '%s'; allowed: --json, "
                    "-o FILE, --job ID, --step NAME, --run ID\n",
                    argv[optind - 1]);
            return CT_EXIT_USAGE;
        }
    }
    int json = so.json;
    const char *out = so.out, *jobid = so.job, *step = so.step, *run = so.run;
    char **ops;
    int nops = ct_cli_operands("goodput", argc, argv, optind, &ops);
    if (!nops)
        return CT_EXIT_USAGE;
    struct ct_inputs in = {0};
    char err[512];
    struct ct_load_opts lo = {.cmd = "cutrace goodput",
                              .step = step,
                              .progress = 1,
                              .job = jobid,
                              .spill = 1,
                              .run = run};
    int rc = ct_load_operands(&lo, &in, ops, nops, err, sizeof(err));
    if (rc) {
        fprintf(stderr, "cutrace goodput: %s\n", err);
        ct_inputs_free(&in);
        return ct_load_usage_error(rc) ? CT_EXIT_USAGE : CT_EXIT_BAD_INPUT;
    }
    size_t ntraces = in.n;
    struct ct_job job;
    struct ct_report rep = {0};
    struct ct_outfile of;
    if ((rc = ct_out_check(out, "-o", in.paths, in.n, err, sizeof(err))) ||
        (rc = ct_out_open(&of, out, "-o", err, sizeof(err)))) {
        fprintf(stderr, "cutrace goodput: %s\n", err);
        ct_inputs_free(&in);
        return rc == -EEXIST || rc == -EISDIR ? CT_EXIT_USAGE : CT_EXIT_BAD_INPUT;
    }
    rc = ct_load_job(&lo, &in, &job, err, sizeof(err));
    ct_inputs_free(&in);
    if (rc)
        ct_out_abort(&of);
    if (rc) {
        fprintf(stderr, "cutrace goodput: %s\n", rc == -ENOMEM ? "out of memory" : err);
        return ct_load_usage_error(rc) ? CT_EXIT_USAGE : CT_EXIT_BAD_INPUT;
    }
    for (size_t i = 0; i < job.nprocs; i++)
        if (job.procs[i].source == CT_SOURCE_KINETO) { /* one line, once */
            fprintf(stderr, "cutrace goodput: PyTorch profiler traces hold their capture window "
                            "only: the goodput is over their GPU window (first kernel start to "
                            "last kernel end), not the processes' lives\n");
            break;
        }
    char ids[1024];
    size_t nids = job_ids(&job, ids, sizeof(ids));
    if (jobid && !job.nprocs) {
        fprintf(stderr, "cutrace goodput: --job %s: none of the %zu traces is of that job\n", jobid,
                ntraces);
        ct_out_abort(&of);
        ct_job_free(&job);
        return CT_EXIT_USAGE;
    }
    if (nids > 1) {
        fprintf(stderr,
                "cutrace goodput: the traces are of %zu jobs (%s): goodput is one job's; pass "
                "--job ID\n",
                nids, ids);
        ct_out_abort(&of);
        ct_job_free(&job);
        return CT_EXIT_USAGE;
    }
    struct ct_iter_opts io = {0, 0, -1, 0};
    ct_progress_phase("cutrace goodput", "analysing the job");
    rc = ct_report_analyze(&job, &io, &rep); /* the goodput is one of its analyses */
    if (rc) {
        fprintf(stderr, "cutrace goodput: out of memory\n");
        ct_out_abort(&of);
        ct_report_free(&rep);
        ct_job_free(&job);
        return CT_EXIT_BAD_INPUT;
    }
    FILE *f = of.f;
    int status = CT_EXIT_OK;
    if (json) {
        ct_goodput_json(f, rep.goodput);
        fputc('\n', f);
    } else {
        ct_goodput_text(f, rep.goodput);
    }
    if (ct_out_commit(&of, err, sizeof(err))) {
        fprintf(stderr, "cutrace goodput: %s\n", err);
        status = CT_EXIT_BAD_INPUT;
    }
    ct_report_free(&rep);
    ct_job_free(&job);
    ct_progress_finish("cutrace goodput");
    return status;
}
