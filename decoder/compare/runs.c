/*
 * Runs: grouping trace files into runs, what their traces' metadata says,
 * and loading one run into a report (contracts in runs.h) with the job
 * loader every command uses (decoder/load/load.c) and ct_report_analyze.
 */
#include "decoder/compare/runs.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "decoder/analysis/health.h"
#include "decoder/read/facts.h"
#include "decoder/read/inputs.h"
#include "decoder/load/load.h"
#include "decoder/load/run_identity.h"
#include "decoder/read/summary.h"
#include "decoder/read/job.h"
#include "decoder/read/nccl_acct.h"

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Does dir hold *.cutrace files itself (not in subfolders)? */
static int has_traces(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *de;
    int yes = 0;
    while (!yes && (de = readdir(d)) != NULL)
        yes = de->d_name[0] != '.' &&
              (ends_with(de->d_name, ".cutrace") || ends_with(de->d_name, CT_SUMMARY_SUFFIX));
    closedir(d);
    return yes;
}

/* Appends one run of the given paths (taken over, in.keys freed). */
static int push_run(struct ct_runset *rs, const char *name, struct ct_inputs *in)
{
    struct ct_run *v = realloc(rs->runs, (rs->n + 1) * sizeof(*v));
    if (!v) {
        ct_inputs_free(in);
        return -ENOMEM;
    }
    rs->runs = v;
    struct ct_run *r = &v[rs->n];
    memset(r, 0, sizeof(*r));
    r->name = strdup(name);
    r->paths = in->paths; /* ownership moves to the run */
    r->n = in->n;
    free(in->keys);
    memset(in, 0, sizeof(*in));
    if (!r->name) {
        for (size_t i = 0; i < r->n; i++)
            free(r->paths[i]);
        free(r->paths);
        return -ENOMEM;
    }
    rs->n++;
    return 0;
}

/* The traces under path, one run per run identity they name (a folder
 * that two `cutrace run`s wrote into holds two runs: never one;
 * decoder/load/run_identity.h), each named "path (run ID)" then; traces
 * that name no run are one more run beside them. */
static int add_run(struct ct_runset *rs, const char *path, char *err, size_t errlen)
{
    struct ct_inputs in = {0};
    char *const args[] = {(char *)path};
    const struct ct_load_opts all = {.no_kineto = 1, .keep_all = 1};
    int rc = ct_load_operands(&all, &in, args, 1, err, errlen);
    struct ct_run_list l = {0};
    if (!rc)
        rc = ct_run_list_read(&in, &l, NULL);
    size_t unnamed = 0;
    for (size_t i = 0; !rc && i < in.n; i++)
        unnamed += l.of[i] == SIZE_MAX;
    if (!rc && l.n + (unnamed && l.n) <= 1) {
        ct_run_list_free(&l);
        return push_run(rs, path, &in);
    }
    for (size_t k = 0; !rc && k <= l.n; k++) {
        if (k == l.n && !unnamed)
            break;
        struct ct_inputs part = {0};
        for (size_t i = 0; i < in.n && !rc; i++)
            if (l.of[i] == (k < l.n ? k : SIZE_MAX))
                rc = ct_inputs_add(&part, in.paths[i]);
        char name[1024];
        snprintf(name, sizeof(name), "%s (run %.200s)", path, k < l.n ? l.runs[k].ids : "unnamed");
        if (!rc)
            rc = push_run(rs, name, &part);
        else
            ct_inputs_free(&part);
    }
    ct_run_list_free(&l);
    ct_inputs_free(&in);
    if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    return rc;
}

int ct_runs_find(struct ct_runset *rs, const char *operand, char *err, size_t errlen)
{
    struct stat st;
    if (stat(operand, &st) != 0) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", operand, strerror(e));
        return -e;
    }
    if (!S_ISDIR(st.st_mode) || has_traces(operand))
        return add_run(rs, operand, err, errlen);
    DIR *d = opendir(operand);
    if (!d) {
        int e = errno;
        snprintf(err, errlen, "%s: cannot read directory: %s", operand, strerror(e));
        return -e;
    }
    char **subs = NULL;
    size_t n = 0;
    int rc = 0;
    struct dirent *de;
    while (!rc && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        size_t len = strlen(operand) + strlen(de->d_name) + 2;
        char *p = malloc(len);
        char **q = realloc(subs, (n + 1) * sizeof(*q));
        if (!p || !q) {
            free(p);
            if (q)
                subs = q;
            rc = -ENOMEM;
            break;
        }
        subs = q;
        snprintf(p, len, "%s/%s", operand, de->d_name);
        if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
            subs[n++] = p;
        else
            free(p);
    }
    closedir(d);
    if (n > 1)
        qsort(subs, n, sizeof(*subs), cmp_str);
    size_t before = rs->n;
    for (size_t i = 0; i < n; i++) {
        if (!rc) {
            char e2[512];
            int r2 = add_run(rs, subs[i], e2, sizeof(e2));
            if (r2 == -ENOMEM)
                rc = r2; /* a subfolder without traces is not a run */
        }
        free(subs[i]);
    }
    free(subs);
    if (!rc && rs->n == before) {
        snprintf(err, errlen, "%s: holds no *.cutrace files and no run folders with any", operand);
        return -ENOENT;
    }
    return rc;
}

void ct_runs_free(struct ct_runset *rs)
{
    for (size_t i = 0; i < rs->n; i++) {
        struct ct_run *r = &rs->runs[i];
        for (size_t k = 0; k < r->n; k++)
            free(r->paths[k]);
        free(r->paths);
        free(r->name);
    }
    free(rs->runs);
    memset(rs, 0, sizeof(*rs));
}

/* ------------------------------------------------------------ facts */

/* The NCCL algorithms (or protocols) the process's ops ran with, from the
 * profiler plugin's descriptors: distinct, sorted, joined by '+' into buf
 * ("RING+TREE"); NULL when it has none. */
static const char *nccl_choices(const struct ct_proc *p, int proto, char *buf, size_t len)
{
    const struct ct_nacct *a = p->nacct;
    size_t used = 0;
    buf[0] = 0;
    const char *last = "";
    /* each round appends the smallest name above the last one appended */
    for (;;) {
        const char *next = NULL;
        for (size_t i = 0; a && i < a->ninfo; i++) {
            const char *v = proto ? a->info[i].proto : a->info[i].algo;
            if (*v && strcmp(v, last) > 0 && (!next || strcmp(v, next) < 0))
                next = v;
        }
        if (!next)
            break;
        int n = snprintf(buf + used, len - used, "%s%s", used ? "+" : "", next);
        if (n < 0 || (size_t)n >= len - used)
            break;
        used += (size_t)n;
        last = next;
    }
    return used ? buf : NULL;
}

/* The key a user's --by name means for this trace (buf: room for a value
 * computed from the trace's records). */
static const char *lookup(const struct ct_proc *p, const char *key, char *buf, size_t len)
{
    if (!strcmp(key, "nccl_algo") || !strcmp(key, "nccl_proto"))
        return nccl_choices(p, key[5] == 'p', buf, len);
    static const char *const alias[][2] = {
        {"gpu", "device.name"},
        {"gpu_model", "device.name"},
        {"driver", "device.driver_version"},
        {"driver_version", "device.driver_version"},
        {"nccl", "nccl_version"},
    };
    const struct ct_trace_facts *f = p->facts;
    const char *v = ct_facts_value(f, key);
    /* health counters (format v2): what held the SM clock, the power limit */
    if (!v && (!strcmp(key, "clock_policy") || !strcmp(key, "power_limit")))
        return ct_health_label(p->health, key);
    for (size_t i = 0; !v && i < sizeof(alias) / sizeof(alias[0]); i++)
        if (!strcmp(key, alias[i][0]))
            v = ct_facts_value(f, alias[i][1]);
    char k[256];
    if (!v) {
        snprintf(k, sizeof(k), "env.%s", key);
        v = ct_facts_value(f, k);
    }
    if (!v) {
        snprintf(k, sizeof(k), "tag.%s", key);
        v = ct_facts_value(f, k);
    }
    return v;
}

const char *ct_run_value(const struct ct_job *job, const char *key, char *buf, size_t len)
{
    buf[0] = 0;
    size_t used = 0;
    for (size_t i = 0; i < job->nprocs; i++) {
        const struct ct_proc *p = &job->procs[i];
        if (!p->facts) /* a later part of a process split by device, or Kineto input */
            continue;
        char vb[128], wb[128];
        const char *v = lookup(p, key, vb, sizeof(vb));
        if (!v)
            continue;
        /* distinct values, in first-seen order */
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) {
            const char *w =
                job->procs[j].facts ? lookup(&job->procs[j], key, wb, sizeof(wb)) : NULL;
            seen = w && !strcmp(v, w);
        }
        if (seen)
            continue;
        int n = snprintf(buf + used, len - used, "%s%s", used ? "+" : "", v);
        if (n < 0 || (size_t)n >= len - used)
            break;
        used += (size_t)n;
    }
    if (!used)
        snprintf(buf, len, "(none)");
    return buf;
}

/* Appends v to the '\n'-separated list *out unless it is there already. */
static int add_line(char **out, size_t *len, const char *v)
{
    size_t n = strlen(v);
    for (const char *p = *out; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == n && !memcmp(p, v, n))
            return 0;
        p += l + (e != NULL);
    }
    char *q = realloc(*out, *len + n + 2);
    if (!q)
        return -ENOMEM;
    *out = q;
    if (*len)
        q[(*len)++] = '\n';
    memcpy(q + *len, v, n + 1);
    *len += n;
    return 0;
}

int ct_run_cmdlines(const struct ct_job *job, char **out)
{
    size_t len = 0;
    int rc = 0;
    *out = NULL;
    for (size_t i = 0; i < job->nprocs && !rc; i++) {
        const char *v = ct_facts_value(job->procs[i].facts, "cmdline");
        if (v && *v)
            rc = add_line(out, &len, v);
    }
    if (!rc && !*out && !(*out = strdup("")))
        rc = -ENOMEM;
    if (rc) {
        free(*out);
        *out = NULL;
    }
    return rc;
}

int ct_run_report(const struct ct_run *run, const struct ct_iter_opts *io, struct ct_job *job,
                  struct ct_report *rep, char *err, size_t errlen)
{
    memset(job, 0, sizeof(*job));
    memset(rep, 0, sizeof(*rep));
    const struct ct_inputs in = {.paths = run->paths, .n = run->n};
    /* runs are cutrace traces (or their summaries) */
    struct ct_load_opts lo = {.cmd = "cutrace", .hta = 1, .spill = 1, .no_kineto = 1};
    int rc = ct_load_job(&lo, &in, job, err, errlen);
    if (rc == -EIO || rc == -EINVAL) /* err names the trace or the setting */
        return rc;
    if (!rc)
        rc = ct_report_analyze(job, io, rep);
    if (rc) {
        snprintf(err, errlen, "%s: out of memory", run->name);
        ct_report_free(rep);
        ct_job_free(job);
    }
    return rc;
}
