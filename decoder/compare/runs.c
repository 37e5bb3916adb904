/*
 * Runs: grouping trace files into runs, their metadata and copy facts, and
 * loading one run into a report (contracts in runs.h) with the job loader
 * every command uses (decoder/read/load.c) and ct_report_analyze.
 */
#include "decoder/compare/runs.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "decoder/analysis/health.h"
#include "decoder/read/inputs.h"
#include "decoder/read/load.h"
#include "decoder/read/run_identity.h"
#include "decoder/read/summary.h"
#include "decoder/util/array.h"
#include "src/reader.h"
#include "decoder/read/job.h"

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
 * decoder/read/run_identity.h), each named "path (run ID)" then; traces
 * that name no run are one more run beside them. */
static int add_run(struct ct_runset *rs, const char *path, char *err, size_t errlen)
{
    struct ct_inputs in = {0};
    char *const args[] = {(char *)path};
    int rc = ct_inputs_expand(&in, args, 1, err, errlen);
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
        for (size_t k = 0; k < r->n; k++) {
            free(r->paths[k]);
            if (r->facts)
                ct_facts_free(&r->facts[k]);
        }
        free(r->paths);
        free(r->facts);
        free(r->name);
    }
    free(rs->runs);
    memset(rs, 0, sizeof(*rs));
}

/* ------------------------------------------------------------ facts */

struct scan {
    struct ct_reader *rd;
    struct ct_trace_facts *f;
    size_t meta_cap;
    struct ct_copy_fact *calls; /* copy calls; corr in gpu_s until joined */
    uint64_t *call_corr;
    size_t ncalls, calls_cap;
    struct gpu_copy {
        uint64_t corr;
        int64_t s, e;
    } * gpu;
    size_t ngpu, gpu_cap;
};

static int scan_meta(struct scan *s, const uint64_t *f)
{
    const char *key = ct_reader_string(s->rd, f[CT_META_KEY]);
    const char *val = ct_reader_string(s->rd, f[CT_META_VALUE]);
    char full[256];
    if (f[CT_META_SCOPE] == CT_SCOPE_DEVICE)
        snprintf(full, sizeof(full), "device.%s", key);
    else if (f[CT_META_SCOPE] == CT_SCOPE_PROCESS)
        snprintf(full, sizeof(full), "%s", key);
    else
        return 0;
    if (!strcmp(full, "rank"))
        s->f->rank = strtoll(val, NULL, 10);
    for (size_t i = 0; i < s->f->nmeta; i++)
        if (!strcmp(s->f->meta[i].key, full))
            return 0;
    if (ct_grow((void **)&s->f->meta, &s->meta_cap, s->f->nmeta, sizeof(struct ct_kv)))
        return -ENOMEM;
    struct ct_kv *kv = &s->f->meta[s->f->nmeta];
    kv->key = strdup(full);
    kv->value = strdup(val);
    if (!kv->key || !kv->value) {
        free(kv->key);
        free(kv->value);
        return -ENOMEM;
    }
    s->f->nmeta++;
    return 0;
}

static int scan_record(void *ctx, const struct ct_record *r)
{
    struct scan *s = ctx;
    const uint64_t *f = r->f;
    switch (r->kind) {
    case CT_REC_META: return scan_meta(s, f);
    case CT_REC_API:
        if (f[CT_API_FAMILY] != CT_FAM_MEMCPY)
            return 0;
        if (ct_grow((void **)&s->calls, &s->calls_cap, s->ncalls, sizeof(*s->calls)))
            return -ENOMEM;
        {
            size_t cap = s->calls_cap;
            uint64_t *q = realloc(s->call_corr, cap * sizeof(*q));
            if (!q)
                return -ENOMEM;
            s->call_corr = q;
        }
        s->call_corr[s->ncalls] = f[CT_API_CORR];
        s->calls[s->ncalls++] = (struct ct_copy_fact){
            .host_s = (int64_t)f[CT_API_START],
            .host_e = (int64_t)f[CT_API_END],
            .bytes = f[CT_API_BYTES],
            .kind = (uint8_t)f[CT_API_COPY_KIND],
            .async = (f[CT_API_FLAGS] & CT_APIF_ASYNC) != 0,
        };
        return 0;
    case CT_REC_GPU:
        if (f[CT_GPU_TYPE] != CT_GPU_MEMCPY)
            return 0;
        if (ct_grow((void **)&s->gpu, &s->gpu_cap, s->ngpu, sizeof(*s->gpu)))
            return -ENOMEM;
        s->gpu[s->ngpu++] =
            (struct gpu_copy){f[CT_GPU_CORR], (int64_t)f[CT_GPU_START], (int64_t)f[CT_GPU_END]};
        return 0;
    default: return 0;
    }
}

static int cmp_gpu(const void *a, const void *b)
{
    uint64_t x = ((const struct gpu_copy *)a)->corr, y = ((const struct gpu_copy *)b)->corr;
    return (x > y) - (x < y);
}

static int cmp_copy(const void *a, const void *b)
{
    int64_t x = ((const struct ct_copy_fact *)a)->host_s;
    int64_t y = ((const struct ct_copy_fact *)b)->host_s;
    return (x > y) - (x < y);
}

/* Keeps the calls with a GPU transfer (joined by correlation id). */
static int join_copies(struct scan *s)
{
    if (s->ngpu > 1)
        qsort(s->gpu, s->ngpu, sizeof(*s->gpu), cmp_gpu);
    size_t k = 0;
    for (size_t i = 0; i < s->ncalls; i++) {
        size_t lo = 0, hi = s->ngpu;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (s->gpu[mid].corr < s->call_corr[i])
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < s->ngpu && s->gpu[lo].corr == s->call_corr[i]) {
            struct ct_copy_fact c = s->calls[i];
            c.gpu_s = s->gpu[lo].s;
            c.gpu_e = s->gpu[lo].e;
            s->calls[k++] = c;
        }
    }
    if (k > 1)
        qsort(s->calls, k, sizeof(*s->calls), cmp_copy);
    s->f->copies = s->calls;
    s->f->ncopies = k;
    s->calls = NULL;
    return 0;
}

void ct_facts_encode(const struct ct_trace_facts *f, struct ct_sum_wbuf *b)
{
    ct_sum_put_u64(b, (uint64_t)f->rank);
    ct_sum_put_u64(b, f->nmeta);
    for (size_t i = 0; i < f->nmeta; i++) {
        ct_sum_put_str(b, f->meta[i].key);
        ct_sum_put_str(b, f->meta[i].value);
    }
    ct_sum_put_u64(b, f->ncopies);
    for (size_t i = 0; i < f->ncopies; i++) {
        const struct ct_copy_fact *c = &f->copies[i];
        ct_sum_put_u64(b, (uint64_t)c->host_s);
        ct_sum_put_u64(b, (uint64_t)c->host_e);
        ct_sum_put_u64(b, (uint64_t)c->gpu_s);
        ct_sum_put_u64(b, (uint64_t)c->gpu_e);
        ct_sum_put_u64(b, c->bytes);
        ct_sum_put_u8(b, c->kind);
        ct_sum_put_u8(b, c->async);
    }
}

/* The facts a summary carries (ct_facts_encode's), f->path the trace's. */
static int facts_of_summary(const char *path, struct ct_trace_facts *f, char *err, size_t errlen)
{
    unsigned char *blob = NULL;
    size_t n = 0;
    char *trace_path = NULL;
    int rc = ct_summary_facts(path, &trace_path, &blob, &n, err, errlen);
    if (rc)
        return rc;
    free(f->path);
    f->path = trace_path;
    struct ct_sum_rbuf r = {blob, n, 0, 0};
    int oom = 0;
    f->rank = (int64_t)ct_sum_get_u64(&r);
    f->meta = ct_sum_get_array(&r, &f->nmeta, 8, sizeof(*f->meta), &oom);
    for (size_t i = 0; i < f->nmeta && !r.bad; i++) {
        f->meta[i].key = ct_sum_get_str(&r, &oom);
        f->meta[i].value = ct_sum_get_str(&r, &oom);
        if (!f->meta[i].key || !f->meta[i].value)
            r.bad = 1;
    }
    f->copies = ct_sum_get_array(&r, &f->ncopies, 42, sizeof(*f->copies), &oom);
    for (size_t i = 0; i < f->ncopies; i++) {
        struct ct_copy_fact *c = &f->copies[i];
        c->host_s = (int64_t)ct_sum_get_u64(&r);
        c->host_e = (int64_t)ct_sum_get_u64(&r);
        c->gpu_s = (int64_t)ct_sum_get_u64(&r);
        c->gpu_e = (int64_t)ct_sum_get_u64(&r);
        c->bytes = ct_sum_get_u64(&r);
        c->kind = ct_sum_get_u8(&r);
        c->async = ct_sum_get_u8(&r);
    }
    int bad = r.bad || r.at != r.n;
    free(blob);
    if (oom || bad) {
        snprintf(err, errlen, "%s: %s", path, oom ? "out of memory" : "corrupt facts section");
        ct_facts_free(f);
        return oom ? -ENOMEM : -EIO;
    }
    return 0;
}

int ct_facts_scan(const char *path, struct ct_trace_facts *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof(*f));
    f->rank = -1;
    f->path = strdup(path);
    if (!f->path)
        return -ENOMEM;
    if (ct_ends_with(path, CT_SUMMARY_SUFFIX)) /* a summary carries its trace's facts */
        return facts_of_summary(path, f, err, errlen);
    struct ct_reader rd;
    int rc = ct_reader_open(&rd, path);
    if (rc) {
        snprintf(err, errlen, "%s", rd.err);
        ct_facts_free(f);
        return rc;
    }
    struct scan s = {.rd = &rd, .f = f};
    struct ct_chunk_sink sink = {&s, NULL, scan_record, NULL, NULL};
    while ((rc = ct_reader_next(&rd, &sink)) > 0)
        ;
    if (rc < 0)
        snprintf(err, errlen, "%s", rc == -ENOMEM ? "out of memory" : rd.err);
    else
        rc = join_copies(&s);
    free(s.calls);
    free(s.call_corr);
    free(s.gpu);
    ct_reader_close(&rd);
    if (rc)
        ct_facts_free(f);
    return rc;
}

void ct_facts_free(struct ct_trace_facts *f)
{
    for (size_t i = 0; i < f->nmeta; i++) {
        free(f->meta[i].key);
        free(f->meta[i].value);
    }
    free(f->meta);
    free(f->copies);
    free(f->path);
    memset(f, 0, sizeof(*f));
}

int ct_run_scan(struct ct_run *run, char *err, size_t errlen)
{
    if (run->facts)
        return 0;
    run->facts = calloc(run->n ? run->n : 1, sizeof(*run->facts));
    if (!run->facts)
        return -ENOMEM;
    for (size_t i = 0; i < run->n; i++) {
        int rc = ct_facts_scan(run->paths[i], &run->facts[i], err, errlen);
        if (rc)
            return rc; /* facts scanned so far are freed with the run */
    }
    return 0;
}

static const char *trace_value(const struct ct_trace_facts *f, const char *key)
{
    for (size_t i = 0; i < f->nmeta; i++)
        if (!strcmp(f->meta[i].key, key))
            return f->meta[i].value;
    return NULL;
}

/* The key a user's --by name means for this trace. */
static const char *lookup(const struct ct_trace_facts *f, const char *key)
{
    static const char *const alias[][2] = {
        {"gpu", "device.name"},
        {"gpu_model", "device.name"},
        {"driver", "device.driver_version"},
        {"driver_version", "device.driver_version"},
        {"nccl", "nccl_version"},
    };
    const char *v = trace_value(f, key);
    /* health counters (format v2): what held the SM clock, the power limit */
    if (!v && (!strcmp(key, "clock_policy") || !strcmp(key, "power_limit")))
        return ct_health_label(f->path, key, NULL, 0);
    for (size_t i = 0; !v && i < sizeof(alias) / sizeof(alias[0]); i++)
        if (!strcmp(key, alias[i][0]))
            v = trace_value(f, alias[i][1]);
    char k[256];
    if (!v) {
        snprintf(k, sizeof(k), "env.%s", key);
        v = trace_value(f, k);
    }
    if (!v) {
        snprintf(k, sizeof(k), "tag.%s", key);
        v = trace_value(f, k);
    }
    return v;
}

const char *ct_run_value(const struct ct_run *run, const char *key, char *buf, size_t len)
{
    buf[0] = 0;
    size_t used = 0;
    for (size_t i = 0; run->facts && i < run->n; i++) {
        const char *v = lookup(&run->facts[i], key);
        if (!v)
            continue;
        /* distinct values, in first-seen order */
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) {
            const char *w = lookup(&run->facts[j], key);
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

static int scan_meta_only(void *ctx, const struct ct_record *r)
{
    return r->kind == CT_REC_META ? scan_meta(ctx, r->f) : 0;
}

/* A trace's metadata from its first chunk alone: the recorder writes a
 * process's metadata there, before any event (src/writer.c). A summary's
 * facts are read whole (they are small). */
static int head_facts(const char *path, struct ct_trace_facts *f, char *err, size_t errlen)
{
    if (ct_ends_with(path, CT_SUMMARY_SUFFIX))
        return ct_facts_scan(path, f, err, errlen);
    memset(f, 0, sizeof(*f));
    f->rank = -1;
    if (!(f->path = strdup(path)))
        return -ENOMEM;
    struct ct_reader rd;
    int rc = ct_reader_open(&rd, path);
    if (rc) {
        snprintf(err, errlen, "%s", rd.err);
        ct_facts_free(f);
        return rc;
    }
    struct scan s = {.rd = &rd, .f = f};
    struct ct_chunk_sink sink = {&s, NULL, scan_meta_only, NULL, NULL};
    rc = ct_reader_next(&rd, &sink);
    if (rc < 0)
        snprintf(err, errlen, "%s", rc == -ENOMEM ? "out of memory" : rd.err);
    ct_reader_close(&rd);
    if (rc < 0) {
        ct_facts_free(f);
        return rc;
    }
    return 0;
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

int ct_run_cmdlines(const struct ct_run *run, char **out, char *err, size_t errlen)
{
    size_t len = 0;
    int rc = 0;
    *out = NULL;
    for (size_t i = 0; i < run->n && !rc; i++) {
        struct ct_trace_facts head, *f = run->facts ? &run->facts[i] : &head;
        if (!run->facts && (rc = head_facts(run->paths[i], &head, err, errlen)))
            break;
        const char *v = trace_value(f, "cmdline");
        if (v && *v)
            rc = add_line(out, &len, v);
        if (!run->facts)
            ct_facts_free(&head);
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
    struct ct_load_opts lo = {.cmd = "cutrace", .hta = 1, .spill = 1};
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
