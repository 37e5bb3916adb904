/*
 * `cutrace report`: reads every trace of a job, builds per-rank timelines
 * and prints the report (text, or --json: schema in docs/report.md).
 * Traces are decoded on several threads, one file each, straight into their
 * compact timelines (ct_proc_extract_file: no record is kept), so memory is
 * about the compact timelines plus, per thread, one file's join keys.
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

#include "decoder/analysis.h"
#include "decoder/cli.h"
#include "decoder/export.h" /* export: ct_report_html */
#include "decoder/inputs.h"
#include "decoder/kineto.h"
#include "decoder/report_out.h"
#include "decoder/runs.h" /* diagnose: --rows */
#include "decoder/stats.h"

struct loader {
    struct ct_inputs *in;
    struct ct_proc *procs;
    const char *step;
    atomic_size_t next, done;
    atomic_int failed;
    char err[512];
    pthread_mutex_t lock;
};

static void *load_worker(void *arg)
{
    struct loader *L = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&L->next, 1);
        if (i >= L->in->n || atomic_load(&L->failed))
            return NULL;
        char err[512];
        int rc;
        /* kineto: a PyTorch profiler trace goes to its own reader */
        if (ct_kineto_is_path(L->in->paths[i])) {
            rc = ct_kineto_load(L->in->paths[i], &L->procs[i], err, sizeof(err));
        } else {
            rc = ct_proc_extract_file(L->in->paths[i], L->step, &L->procs[i], err, sizeof(err));
        }
        if (rc) {
            pthread_mutex_lock(&L->lock);
            if (!atomic_load(&L->failed))
                snprintf(L->err, sizeof(L->err), "%s", err);
            atomic_store(&L->failed, 1);
            pthread_mutex_unlock(&L->lock);
            return NULL;
        }
        atomic_fetch_add(&L->done, 1);
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int load_all(struct ct_inputs *in, const char *step, struct ct_proc **out, char *err,
                    size_t errlen)
{
    struct loader L = {.in = in, .step = step};
    pthread_mutex_init(&L.lock, NULL);
    L.procs = calloc(in->n ? in->n : 1, sizeof(*L.procs));
    if (!L.procs)
        return -ENOMEM;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    size_t nt = ncpu > 0 ? (size_t)ncpu : 1;
    if (nt > in->n)
        nt = in->n;
    if (nt > 64)
        nt = 64;
    pthread_t th[64];
    size_t started = 0;
    for (size_t i = 0; i < nt; i++)
        if (pthread_create(&th[i], NULL, load_worker, &L) == 0)
            started++;
    if (!started)
        load_worker(&L);
    double t0 = now_s(), last = t0;
    int shown = 0;
    while (atomic_load(&L.done) < in->n && !atomic_load(&L.failed) && started) {
        usleep(20000);
        double t = now_s();
        if (t - t0 > 1.0 && t - last >= 1.0) {
            fprintf(stderr, "\rcutrace report: decoded %zu/%zu traces", atomic_load(&L.done),
                    in->n);
            last = t;
            shown = 1;
        }
        if (atomic_load(&L.next) >= in->n + started) /* every worker has quit */
            break;
    }
    for (size_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    if (shown)
        fprintf(stderr, "\rcutrace report: decoded %zu/%zu traces\n", atomic_load(&L.done), in->n);
    pthread_mutex_destroy(&L.lock);
    if (atomic_load(&L.failed)) {
        snprintf(err, errlen, "%s", L.err);
        for (size_t i = 0; i < in->n; i++)
            ct_proc_free(&L.procs[i]);
        free(L.procs);
        return -EIO;
    }
    *out = L.procs;
    return 0;
}

void ct_report_free(struct ct_report *rep)
{
    for (size_t r = 0; r < rep->nr; r++) {
        free(rep->rr[r].iters);
        free(rep->rr[r].im);
    }
    free(rep->rr);
    free(rep->coll);
    for (size_t i = 0; i < rep->nkern; i++)
        free(rep->kern[i].name);
    free(rep->kern);
    memset(rep, 0, sizeof(*rep));
}

/* Runs every analysis on a built job. Returns 0 or -ENOMEM. */
int ct_report_analyze(struct ct_job *job, const struct ct_iter_opts *io, struct ct_report *rep)
{
    memset(rep, 0, sizeof(*rep));
    rep->job = job;
    rep->nr = job->nranks;
    rep->rr = calloc(job->nranks ? job->nranks : 1, sizeof(*rep->rr));
    if (!rep->rr)
        return -ENOMEM;
    int rc = ct_collectives_match(job);
    size_t total_it = 0;
    rep->iterations = job->nranks ? SIZE_MAX : 0;
    for (size_t r = 0; r < job->nranks && !rc; r++) {
        struct ct_rank_result *x = &rep->rr[r];
        x->rank = &job->ranks[r];
        x->bubble_pct = x->expected_bubble_pct = -1;
        rc = ct_iterations_find(x->rank, io, &x->iters, &x->niters, &x->iter_src);
        if (!rc)
            rc = ct_metrics_rank(x);
        if (!rc)
            rc = ct_attribution_rank(job, x);
        total_it += x->niters;
        if (x->niters < rep->iterations)
            rep->iterations = x->niters;
    }
    if (rep->iterations == SIZE_MAX)
        rep->iterations = 0;
    if (!rc && total_it) {
        double *d = malloc(total_it * sizeof(*d));
        if (!d)
            return -ENOMEM;
        size_t k = 0;
        for (size_t r = 0; r < rep->nr; r++)
            for (size_t i = 0; i < rep->rr[r].niters; i++)
                d[k++] = (double)(rep->rr[r].iters[i].e - rep->rr[r].iters[i].s);
        rep->step_p50 = ct_median(d, k);
        free(d);
    }
    if (!rc)
        rc = ct_collectives_table(rep);
    if (!rc)
        rc = ct_kernels_table(rep);
    if (!rc)
        rc = ct_stragglers(rep);
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: cutrace report [--json] [-o FILE] [--step NAME] [--steps A-B] [--skip N] "
               "TRACE|DIR...\n"
               "  --json        the versioned JSON document (docs/report.md) instead of text\n"
               "  -o FILE       write the report to FILE instead of stdout\n"
               "  --html        a self-contained HTML page (needs -o FILE; docs/export.md)\n"
               "  --step NAME   NVTX range or mark naming iterations (default ProfilerStep)\n"
               "  --steps A-B   keep iterations with index A..B (either side may be empty)\n"
               "  --skip N      drop the first N iterations of every rank\n"
               "  --hta         Kineto input (*.json, *.json.gz): HTA's preprocessing and\n"
               "                numbers (the default; docs/kineto.md)\n"
               "  --no-hta      Kineto input: exact ns times, every step, cutrace's rules\n"
               "  --rows FILE   also write per-rank/iteration JSON-lines rows (docs/diff.md)\n");
}

static int parse_steps(const char *s, struct ct_iter_opts *o)
{
    const char *dash = strchr(s, '-');
    if (!dash || strchr(dash + 1, '-'))
        return -1;
    char *end;
    if (dash != s) {
        o->first = strtoll(s, &end, 10);
        if (end != dash || o->first < 0)
            return -1;
    }
    if (dash[1]) {
        o->last = strtoll(dash + 1, &end, 10);
        if (*end || o->last < o->first)
            return -1;
    }
    return 0;
}

int ct_cmd_report(int argc, char **argv)
{
    static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"step", required_argument, NULL, 's'},
                                         {"steps", required_argument, NULL, 'S'},
                                         {"skip", required_argument, NULL, 'k'},
                                         {"help", no_argument, NULL, 'h'},
                                         {"hta", no_argument, NULL, 'H'},
                                         {"no-hta", no_argument, NULL, 'N'},
                                         {"html", no_argument, NULL, 'T'},       /* export: HTML */
                                         {"rows", required_argument, NULL, 'R'}, /* diagnose */
                                         {NULL, 0, NULL, 0}};
    int json = 0, html = 0, c, hta = 1; /* kineto: HTA-compatible mode for Kineto input */
    const char *out = NULL, *step = NULL, *rows = NULL; /* diagnose: --rows FILE */
    struct ct_iter_opts io = {0, 0, -1};
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "jo:h", opts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'j': json = 1; break;
        case 'o': out = optarg; break;
        case 's':
            if (!*optarg) {
                fprintf(stderr, "cutrace report: --step: expected a range or mark name, e.g. "
                                "--step ProfilerStep\n");
                return CT_EXIT_USAGE;
            }
            step = optarg;
            break;
        case 'S':
            if (parse_steps(optarg, &io)) {
                fprintf(stderr,
                        "cutrace report: --steps '%s': expected A-B with integers "
                        "0 <= A <= B (A- and -B allowed)\n",
                        optarg);
                return CT_EXIT_USAGE;
            }
            break;
        case 'k':
            io.skip = strtol(optarg, &end, 10);
            if (*end || !*optarg || io.skip < 0) {
                fprintf(stderr, "cutrace report: --skip '%s': expected an integer >= 0\n", optarg);
                return CT_EXIT_USAGE;
            }
            break;
        case 'h': usage(stdout); return 0;
        case 'H': hta = 1; break;
        case 'N': hta = 0; break;
        case 'T': html = 1; break;
        case 'R': rows = optarg; break; /* diagnose: --rows FILE */
        default:
            fprintf(stderr,
                    "cutrace report: unknown or incomplete option '%s'; allowed: "
                    "--json, --html, -o FILE, --step NAME, --steps A-B, --skip N, --hta, "
                    "--no-hta, --rows FILE\n",
                    argv[optind - 1]);
            return CT_EXIT_USAGE;
        }
    }
    if (html && (json || !out)) { /* export: the HTML page goes to a file */
        fprintf(stderr, "cutrace report: --html writes a file: use --html -o FILE (without "
                        "--json)\n");
        return CT_EXIT_USAGE;
    }
    if (optind >= argc) {
        fprintf(stderr, "cutrace report: expected at least one trace file or directory\n");
        usage(stderr);
        return CT_EXIT_USAGE;
    }
    struct ct_inputs in = {0};
    char err[512];
    int bad = 0;
    /* kineto: Kineto operands (files, folders of them) go to its expansion */
    for (int i = optind; i < argc && !bad; i++)
        bad = ct_kineto_operand(argv[i]) ? ct_kineto_expand(&in, argv[i], err, sizeof(err))
                                         : ct_inputs_expand(&in, argv + i, 1, err, sizeof(err));
    if (bad) {
        fprintf(stderr, "cutrace report: %s\n", err);
        ct_inputs_free(&in);
        return CT_EXIT_BAD_INPUT;
    }
    struct ct_proc *procs = NULL;
    int rc = load_all(&in, step, &procs, err, sizeof(err));
    size_t nprocs = in.n;
    ct_inputs_free(&in);
    if (rc) {
        fprintf(stderr, "cutrace report: %s\n", rc == -ENOMEM ? "out of memory" : err);
        return CT_EXIT_BAD_INPUT;
    }
    /* kineto: complete Kineto processes (HTA's filter spans all ranks) */
    if (ct_kineto_finish(procs, nprocs, hta)) {
        fprintf(stderr, "cutrace report: out of memory\n");
        for (size_t i = 0; i < nprocs; i++)
            ct_proc_free(&procs[i]);
        free(procs);
        return CT_EXIT_BAD_INPUT;
    }
    for (size_t i = 0; i < nprocs; i++)
        if (ct_kineto_warning(&procs[i]))
            fprintf(stderr, "cutrace report: %s\n", ct_kineto_warning(&procs[i]));
    struct ct_job job;
    struct ct_report rep = {0};
    rc = ct_job_build(&job, procs, nprocs);
    if (!rc)
        rc = ct_report_analyze(&job, &io, &rep);
    if (rc) {
        fprintf(stderr, "cutrace report: out of memory\n");
        ct_report_free(&rep);
        ct_job_free(&job);
        return CT_EXIT_BAD_INPUT;
    }
    FILE *f = out ? fopen(out, "w") : stdout;
    if (!f) {
        fprintf(stderr, "cutrace report: -o %s: %s\n", out, strerror(errno));
        ct_report_free(&rep);
        ct_job_free(&job);
        return CT_EXIT_BAD_INPUT;
    }
    /* a long job's JSON is tens of MB: 1 MiB writes to the file, not 4 KiB
     * ones (freed after fclose; stdout keeps its own buffer) */
    char *obuf = out ? malloc(1 << 20) : NULL;
    if (obuf)
        setvbuf(f, obuf, _IOFBF, 1 << 20);
    if (html)
        ct_report_html(f, &rep); /* export: decoder/report_html.c */
    else if (json)
        ct_report_json(f, &rep);
    else
        ct_report_text(f, &rep);
    int werr = fflush(f) != 0 || ferror(f);
    if (out && fclose(f) != 0)
        werr = 1;
    free(obuf);
    /* diagnose: --rows FILE, the report's JSON-lines rows (decoder/diff_rows.c) */
    if (rows && ct_report_rows(rows, argv + optind, argc - optind, &rep, err, sizeof(err))) {
        fprintf(stderr, "cutrace report: %s\n", err);
        werr = 2;
    }
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
    if (werr) {
        fprintf(stderr, "cutrace report: error writing output\n");
        return CT_EXIT_BAD_INPUT;
    }
    return 0;
}
