/*
 * What makes two jobs the same workload (docs/fleet.md "Workload"): the
 * command they ran, less what changes from one run of a workload to the
 * next; their rank layout; and their kernel mix. A factor is only ever
 * compared within a workload, so the fingerprint must stay the same
 * across every factor a regression could be pinned on: the host, GPU
 * model, driver, CUDA and NCCL versions rename some kernels (the vendor
 * libraries'), so the kernel mix splits a fingerprint only when fewer than
 * half of the kernel names are shared (the rule of `diff`'s "not the same
 * workload", CT_KERNEL_JACCARD_MIN), never on a single renamed kernel.
 */
#include "decoder/compare/fleet.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "decoder/compare/diff.h"

/* Options whose value differs between runs of one workload: where it
 * writes, how it is named, seeded and rendezvoused, which node it is. */
static const char *const volatile_opts[] = {"seed",
                                            "random_seed",
                                            "port",
                                            "master_port",
                                            "master_addr",
                                            "rdzv_endpoint",
                                            "rdzv_id",
                                            "run_id",
                                            "run_name",
                                            "job_id",
                                            "name",
                                            "exp_name",
                                            "experiment_name",
                                            "output",
                                            "output_dir",
                                            "out",
                                            "out_dir",
                                            "outdir",
                                            "save",
                                            "save_dir",
                                            "save_path",
                                            "checkpoint_dir",
                                            "ckpt_dir",
                                            "load",
                                            "resume",
                                            "resume_from",
                                            "resume_from_checkpoint",
                                            "log",
                                            "log_dir",
                                            "logdir",
                                            "logging_dir",
                                            "tensorboard_dir",
                                            "wandb_project",
                                            "wandb_run_name",
                                            "wandb_name",
                                            "node_rank",
                                            "local_rank",
                                            "rank",
                                            "timestamp",
                                            "date",
                                            NULL};

static int volatile_name(const char *name, size_t n)
{
    char k[64];
    if (n >= sizeof(k))
        return 0;
    for (size_t i = 0; i < n; i++)
        k[i] = name[i] == '-' ? '_' : (char)tolower((unsigned char)name[i]);
    k[n] = 0;
    for (const char *const *v = volatile_opts; *v; v++)
        if (!strcmp(k, *v))
            return 1;
    return 0;
}

/* The last path component of a word that is a path ("/opt/venv/bin/python3"
 * -> "python3"; "./train.py" -> "train.py"). */
static const char *base(const char *w, size_t n, size_t *bn)
{
    const char *b = w;
    for (size_t i = 0; i + 1 < n; i++)
        if (w[i] == '/')
            b = w + i + 1;
    *bn = n - (size_t)(b - w);
    return b;
}

void ct_fleet_command_signature(const char *cmdline, char *cmd, size_t len)
{
    size_t o = 0;
    cmd[0] = 0;
    if (!cmdline)
        return;
    const char *p = cmdline;
    int skip_next = 0;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            break;
        const char *w = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\n')
            p++;
        size_t n = (size_t)(p - w);
        if (skip_next) {
            skip_next = 0;
            if (w[0] != '-')
                continue; /* the value of a volatile option */
        }
        if (w[0] == '-') {
            const char *name = w + strspn(w, "-");
            const char *eq = memchr(name, '=', n - (size_t)(name - w));
            size_t nn = eq ? (size_t)(eq - name) : n - (size_t)(name - w);
            if (volatile_name(name, nn)) {
                skip_next = !eq;
                continue;
            }
            if (eq) {
                /* --data=/path/to/shard: the option and the value's last component */
                size_t bn;
                const char *b = base(eq + 1, n - (size_t)(eq + 1 - w), &bn);
                int k = snprintf(cmd + o, len - o, "%s%.*s=%.*s", o ? " " : "", (int)(eq - w), w,
                                 (int)bn, b);
                if (k < 0 || (size_t)k >= len - o)
                    return;
                o += (size_t)k;
                continue;
            }
        }
        size_t bn;
        const char *b = base(w, n, &bn);
        int k = snprintf(cmd + o, len - o, "%s%.*s", o ? " " : "", (int)bn, b);
        if (k < 0 || (size_t)k >= len - o)
            return;
        o += (size_t)k;
    }
}

void ct_fleet_fingerprint(const char *cmd, const char *layout, char *fp, size_t len)
{
    /* FNV-1a, 64 bits: a name for the pair, not a secret */
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *s = cmd ? cmd : ""; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    h = (h ^ 0xff) * 0x100000001b3ull;
    for (const char *s = layout ? layout : ""; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    snprintf(fp, len, "w-%010llx", (unsigned long long)(h >> 24));
}

int ct_fleet_workloads_split(struct ct_fleet_jobs *js)
{
    /* jobs are in run-start order: each fingerprint's clusters are led by
     * the first job that started one */
    size_t *lead = malloc((js->n ? js->n : 1) * sizeof(*lead));
    int *cluster = calloc(js->n ? js->n : 1, sizeof(*cluster));
    if (!lead || !cluster) {
        free(lead);
        free(cluster);
        return -ENOMEM;
    }
    size_t nlead = 0;
    for (size_t i = 0; i < js->n; i++) {
        struct ct_fleet_job *j = &js->j[i];
        int found = 0, k = 0;
        for (size_t l = 0; l < nlead && !found; l++) {
            struct ct_fleet_job *L = &js->j[lead[l]];
            if (strcmp(L->workload, j->workload))
                continue;
            k++;
            size_t shared;
            double jac = ct_kernel_jaccard((const char *const *)L->kernels, L->nkernels,
                                           (const char *const *)j->kernels, j->nkernels, &shared);
            /* a job without kernel rows (no GPU timing) joins the first */
            if (jac >= CT_KERNEL_JACCARD_MIN || !j->nkernels || !L->nkernels) {
                found = 1;
                cluster[i] = cluster[lead[l]];
            }
        }
        if (!found) {
            cluster[i] = k + 1;
            lead[nlead++] = i;
        }
    }
    int rc = 0;
    for (size_t i = 0; i < js->n && !rc; i++) {
        if (cluster[i] <= 1)
            continue;
        char b[128];
        snprintf(b, sizeof(b), "%s/k%d", js->j[i].workload, cluster[i]);
        char *w = strdup(b);
        if (!w) {
            rc = -ENOMEM;
            break;
        }
        free(js->j[i].workload);
        js->j[i].workload = w;
    }
    free(lead);
    free(cluster);
    return rc;
}
