/*
 * `cutrace summarize -o OUT TRACE|DIR...`: each trace decoded and extracted
 * into its per-rank summary, OUT/<trace name>.ctsum (decoder/read/
 * summary.h, docs/summary.md), on several threads. `report`, `diagnose`,
 * `diff` and `export` read summaries in place of traces with the same
 * output, so a large job's traces can be summarized where they are, in
 * parallel (srun tasks or a job array under Slurm, or `xargs -P`:
 * docs/summary.md), and only the summaries travel.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "decoder/cmd/cli.h"
#include "decoder/load/load.h"
#include "decoder/read/inputs.h"
#include "decoder/read/summary.h"
#include "decoder/util/options.h"
#include "decoder/util/progress.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: cutrace summarize -o OUT [--step NAME] [-j N] TRACE|DIR...\n"
               "  -o OUT        folder for the summaries (made if missing): OUT/<trace>.ctsum\n"
               "  --step NAME   NVTX range or mark naming iterations (default ProfilerStep);\n"
               "                the commands reading the summaries must use the same\n"
               "  -j N          traces decoded at once (default: the CPUs online)\n"
               "  --comm-kernels FILE  kernel-name patterns that count as communication\n"
               "                (docs/nccl.md); the summaries keep what it made communication\n");
}

struct job {
    struct ct_inputs *in;
    const char *out, *step;
    char **dest;
    atomic_size_t next, done, failed;
    atomic_ullong in_bytes, out_bytes;
    pthread_mutex_t lock;
};

static unsigned long long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (unsigned long long)st.st_size : 0;
}

static void *worker(void *arg)
{
    struct job *J = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&J->next, 1);
        if (i >= J->in->n)
            return NULL;
        char err[512];
        struct ct_proc p;
        /* the timeline, and what the trace says about itself (the facts
         * diagnose and diff read), from one pass */
        const struct ct_load_opts lo = {.step = J->step, .no_kineto = 1};
        int rc = ct_load_input(&lo, J->in->paths[i], &p, err, sizeof(err));
        if (!rc) {
            rc = ct_summary_write(J->dest[i], &p, J->step, err, sizeof(err));
            ct_proc_free(&p);
        }
        if (rc) {
            /* the others go on: every trace that decodes gets its summary */
            pthread_mutex_lock(&J->lock);
            fprintf(stderr, "cutrace summarize: %s\n", err);
            pthread_mutex_unlock(&J->lock);
            atomic_fetch_add(&J->failed, 1);
        } else {
            atomic_fetch_add(&J->in_bytes, file_size(J->in->paths[i]));
            atomic_fetch_add(&J->out_bytes, file_size(J->dest[i]));
        }
        atomic_fetch_add(&J->done, 1);
    }
}

/* OUT/<name of path without .cutrace>.ctsum */
static char *dest_of(const char *out, const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    if (ct_ends_with(base, ".cutrace"))
        n -= strlen(".cutrace");
    size_t len = strlen(out) + 1 + n + strlen(CT_SUMMARY_SUFFIX) + 1;
    char *d = malloc(len);
    if (d)
        snprintf(d, len, "%s/%.*s%s", out, (int)n, base, CT_SUMMARY_SUFFIX);
    return d;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int ct_cmd_summarize(int argc, char **argv)
{
    const struct option *opts = ct_options_of(CT_CMD_SUMMARIZE);
    struct ct_shared_opts so = {0};
    long threads = sysconf(_SC_NPROCESSORS_ONLN);
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "o:j:h", opts, NULL)) != -1) {
        int shared = ct_shared_opt(CT_CMD_SUMMARIZE, "cutrace summarize", c, optarg, &so);
        if (shared < 0)
            return CT_EXIT_USAGE;
        if (shared)
            continue;
        switch (c) {
        case 'j': {
            char *end;
            threads = strtol(optarg, &end, 10);
            if (*end || end == optarg || threads < 1 || threads > 256) {
                fprintf(stderr, "cutrace summarize: -j '%s': expected a count from 1 to 256\n",
                        optarg);
                return CT_EXIT_USAGE;
            }
            break;
        }
        case 'h':
            usage(stdout);
            ct_help_tail(stdout, "summarize");
            return 0;
        default:
            fprintf(stderr,
                    "cutrace summarize: unknown or incomplete option '%s'; allowed: -o OUT, "
                    "--step NAME, -j N\n",
                    argv[optind - 1]);
            return CT_EXIT_USAGE;
        }
    }
    const char *out = so.out, *step = so.step;
    if (!out || optind >= argc) {
        fprintf(stderr, "cutrace summarize: expected -o OUT and at least one trace file or "
                        "directory\n");
        usage(stderr);
        return CT_EXIT_USAGE;
    }
    for (int i = optind; i < argc; i++)
        if (ct_load_format(argv[i]) == CT_SOURCE_KINETO) {
            fprintf(stderr,
                    "cutrace summarize: %s: a PyTorch profiler trace has no summary form: "
                    "pass it to report as is\n",
                    argv[i]);
            return CT_EXIT_USAGE;
        }
    struct ct_inputs in = {0};
    char err[512];
    struct ct_load_opts lo = {.step = step, .no_kineto = 1, .keep_all = 1};
    int erc = ct_load_operands(&lo, &in, argv + optind, argc - optind, err, sizeof(err));
    if (erc) {
        fprintf(stderr, "cutrace summarize: %s\n", err);
        ct_inputs_free(&in);
        /* -EINVAL: an operand that is not a file or folder (a FIFO, a device) */
        return erc == -EINVAL ? CT_EXIT_USAGE : CT_EXIT_BAD_INPUT;
    }
    for (size_t i = 0; i < in.n; i++)
        if (ct_ends_with(in.paths[i], CT_SUMMARY_SUFFIX)) {
            fprintf(stderr, "cutrace summarize: %s is a summary already\n", in.paths[i]);
            ct_inputs_free(&in);
            return CT_EXIT_USAGE;
        }
    if (mkdir(out, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "cutrace summarize: -o %s: %s\n", out, strerror(errno));
        ct_inputs_free(&in);
        return CT_EXIT_BAD_INPUT;
    }
    struct job J = {.in = &in, .out = out, .step = step};
    J.dest = calloc(in.n ? in.n : 1, sizeof(*J.dest));
    char **sorted = calloc(in.n ? in.n : 1, sizeof(*sorted));
    int rc = !J.dest || !sorted;
    for (size_t i = 0; i < in.n && !rc; i++)
        rc = !(J.dest[i] = dest_of(out, in.paths[i]));
    if (rc) {
        fprintf(stderr, "cutrace summarize: out of memory\n");
    } else {
        /* two traces of the same name (from different folders) would
         * overwrite each other's summary */
        memcpy(sorted, J.dest, in.n * sizeof(*sorted));
        qsort(sorted, in.n, sizeof(*sorted), cmp_str);
        for (size_t i = 1; i < in.n && !rc; i++)
            if (!strcmp(sorted[i - 1], sorted[i])) {
                fprintf(stderr,
                        "cutrace summarize: two traces would both be summarized as %s: "
                        "summarize them into different -o folders\n",
                        sorted[i]);
                rc = 1;
            }
    }
    free(sorted);
    if (!rc) {
        pthread_mutex_init(&J.lock, NULL);
        size_t nt = (size_t)threads < in.n ? (size_t)threads : in.n;
        pthread_t *th = calloc(nt ? nt : 1, sizeof(*th));
        size_t started = 0;
        for (size_t i = 0; th && i < nt; i++)
            if (pthread_create(&th[i], NULL, worker, &J) == 0)
                started++;
        if (!started)
            worker(&J);
        struct ct_progress pr;
        ct_progress_start(&pr, "cutrace summarize");
        while (started && atomic_load(&J.done) < in.n) {
            usleep(20000);
            ct_progress_update(&pr, "summarized traces", atomic_load(&J.done), in.n, -1);
        }
        for (size_t i = 0; i < started; i++)
            pthread_join(th[i], NULL);
        ct_progress_end(&pr);
        free(th);
        pthread_mutex_destroy(&J.lock);
        size_t failed = atomic_load(&J.failed);
        fprintf(stderr,
                "cutrace summarize: %zu summar%s in %s (%.1f MB from %.1f MB of traces)%s\n",
                in.n - failed, in.n - failed == 1 ? "y" : "ies", out,
                (double)atomic_load(&J.out_bytes) / 1e6, (double)atomic_load(&J.in_bytes) / 1e6,
                failed ? "; see the errors above" : "");
        rc = failed ? CT_EXIT_BAD_INPUT : 0;
    } else {
        rc = CT_EXIT_USAGE;
    }
    for (size_t i = 0; J.dest && i < in.n; i++)
        free(J.dest[i]);
    free(J.dest);
    ct_inputs_free(&in);
    return rc;
}
