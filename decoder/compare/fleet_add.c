/*
 * Rows into the fleet store (`cutrace fleet add`): the JSON-lines rows of
 * docs/diff.md ("Rows", schema cutrace.rows version 2), whatever made them
 * (report --rows, diff --rows, fleet_ingest.c from traces and summaries).
 *
 * A job's rows begin with its "job" row. The job is claimed in the store by
 * its identity (the rows' run_id: every trace names its run; rows without
 * one are keyed by job id, start and run name) with INSERT ... ON CONFLICT
 * DO NOTHING inside a transaction: a job the store has is skipped whole, so
 * adding it again changes nothing, also when two hosts add it at once. Its
 * other rows are buffered per table and written in bulk; what report and
 * explain read of a job (its GPU time split, per-step figures, workload
 * fingerprint, labels) is computed as the rows pass and written with the
 * commit. Definitions: docs/fleet.md.
 */
#include "decoder/compare/fleet.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "decoder/compare/fleet_row.h"
#include "decoder/compare/fleet_store.h"

/* ------------------------------------------------------------ buffered tables */

/* Child rows of one table, values as text, written in bulk (COPY) when the
 * buffer passes a few MiB and at the job's end. */
struct table {
    const char *name;
    const char *const *cols;
    int ncols;
    char *buf; /* per row: ncols values, each a flag byte (0 NULL, 1 text) and a C string */
    size_t len, cap, rows;
};

static const char *const attempt_cols[] = {
    "run_id",   "attempt", "restart_count", "ended",         "ranks",         "lost_steps",
    "start_us", "end_us",  "startup_us",    "productive_us", "checkpoint_us", "restore_us",
    "lost_us",  "hang_us", "data_stall_us", "idle_us",       "shutdown_us",   "unclassified_us"};
static const char *const rank_cols[] = {"run_id",
                                        "rank",
                                        "host",
                                        "iterations",
                                        "window_us",
                                        "compute_us",
                                        "comm_us",
                                        "memory_us",
                                        "idle_us",
                                        "exposed_comm_us",
                                        "bubble_us",
                                        "data_stall_us",
                                        "checkpoint_stall_us",
                                        "cuda_call_us",
                                        "sync_drain_us",
                                        "launch_overhead_us",
                                        "unexplained_us",
                                        "lateness_us",
                                        "slowness"};
static const char *const iter_cols[] = {
    "run_id",  "rank",      "iteration", "start_us",        "duration_us", "compute_us",
    "comm_us", "memory_us", "idle_us",   "exposed_comm_us", "bubble_us"};
static const char *const kernel_cols[] = {"run_id", "name", "count", "total_us", "p50_us"};
static const char *const coll_cols[] = {"run_id",
                                        "op",
                                        "bytes",
                                        "nranks",
                                        "count",
                                        "matched",
                                        "p50_us",
                                        "transfer_p50_us",
                                        "wait_p50_us",
                                        "wait_total_us",
                                        "arrival_skew_p50_us",
                                        "algbw_gbps",
                                        "busbw_gbps"};
static const char *const health_cols[] = {"run_id",           "rank",          "host",
                                          "device",           "samples",       "sm_clock_mhz",
                                          "sm_clock_max_mhz", "power_w",       "power_limit_w",
                                          "temperature_c",    "throttled_pct", "clock_policy"};

#define NCOLS(a) ((int)(sizeof(a) / sizeof(a[0])))
enum { T_ATTEMPT, T_RANK, T_ITER, T_KERNEL, T_COLL, T_HEALTH, T_N };

static int tput(struct table *t, const char *v)
{
    size_t k = v ? strlen(v) + 1 : 0;
    if (t->len + k + 1 > t->cap) {
        size_t c = t->cap ? t->cap * 2 : 1 << 16;
        while (c < t->len + k + 1)
            c *= 2;
        char *b = realloc(t->buf, c);
        if (!b)
            return -ENOMEM;
        t->buf = b;
        t->cap = c;
    }
    t->buf[t->len++] = v ? 1 : 0;
    if (v) {
        memcpy(t->buf + t->len, v, k);
        t->len += k;
    }
    return 0;
}

static int tflush(struct ct_fdb *db, struct table *t, char *err, size_t errlen)
{
    if (!t->rows)
        return 0;
    int rc = ct_fdb_bulk_begin(db, t->name, t->cols, t->ncols, err, errlen);
    if (rc)
        return rc;
    const char *vals[64];
    size_t o = 0;
    for (size_t r = 0; r < t->rows && !rc; r++) {
        for (int c = 0; c < t->ncols; c++) {
            int has = t->buf[o++];
            vals[c] = has ? t->buf + o : NULL;
            if (has)
                o += strlen(t->buf + o) + 1;
        }
        rc = ct_fdb_bulk_row(db, vals);
    }
    int rc2 = ct_fdb_bulk_end(db, err, errlen);
    if (rc && !rc2)
        snprintf(err, errlen, "%s", ct_fdb_errmsg(db));
    t->len = t->rows = 0;
    return rc ? rc : rc2;
}

/* ------------------------------------------------------------ the adder */

struct rank_acc {
    int seen;
    char *host;
    double S, E, I, C, M; /* iteration sums: duration, exposed comm, idle, compute, memory */
    double nit;
    double data, ckpt, compute; /* rank row */
    char *policy, *limit;       /* health row: what held its clock, its power limit */
};

struct ct_fleet_adder {
    struct ct_fdb *db;
    const char *source;
    struct ct_jrow row;
    int in_job, skip;
    char *run_id;
    struct ct_jrow job; /* the job row, kept (its own scratch) */
    char *job_line;     /* its text */
    struct table t[T_N];
    struct rank_acc *ra; /* by rank number */
    size_t nra;
    double att_parts[10], att_gpu, att_prod, att_lost; /* over attempts, GPU-µs */
    int att_missing;                                   /* an attempt without productive time */
    size_t natt;
    double wait; /* collectives: rank-µs waiting for the last member */
    char **kernels;
    size_t nkern, capk;
    struct ct_fleet_add_stats st;
    char err[512];
    size_t line;
    struct ct_fdb_stmt *ins, *upd, *lab;
};

int ct_fleet_adder_new(struct ct_fdb *db, const char *source, struct ct_fleet_adder **out)
{
    struct ct_fleet_adder *a = calloc(1, sizeof(*a));
    if (!a)
        return -ENOMEM;
    a->db = db;
    a->source = source;
    static const struct {
        const char *name;
        const char *const *cols;
        int n;
    } def[T_N] = {{"attempts", attempt_cols, NCOLS(attempt_cols)},
                  {"ranks", rank_cols, NCOLS(rank_cols)},
                  {"iterations", iter_cols, NCOLS(iter_cols)},
                  {"kernels", kernel_cols, NCOLS(kernel_cols)},
                  {"collectives", coll_cols, NCOLS(coll_cols)},
                  {"health", health_cols, NCOLS(health_cols)}};
    for (int i = 0; i < T_N; i++)
        a->t[i] = (struct table){.name = def[i].name, .cols = def[i].cols, .ncols = def[i].n};
    *out = a;
    return 0;
}

static void job_reset(struct ct_fleet_adder *a)
{
    for (size_t i = 0; i < a->nra; i++) {
        free(a->ra[i].host);
        free(a->ra[i].policy);
        free(a->ra[i].limit);
    }
    free(a->ra);
    a->ra = NULL;
    a->nra = 0;
    for (size_t i = 0; i < a->nkern; i++)
        free(a->kernels[i]);
    a->nkern = 0;
    for (int i = 0; i < T_N; i++)
        a->t[i].len = a->t[i].rows = 0;
    memset(a->att_parts, 0, sizeof(a->att_parts));
    a->att_gpu = a->att_prod = a->att_lost = a->wait = 0;
    a->att_missing = 0;
    a->natt = 0;
    free(a->run_id);
    a->run_id = NULL;
    free(a->job_line);
    a->job_line = NULL;
    a->in_job = a->skip = 0;
}

static struct rank_acc *rank_of(struct ct_fleet_adder *a, const struct ct_jrow *r)
{
    double v = ct_jrow_num(r, "rank");
    if (!(v >= 0 && v < (double)(1 << 24)))
        return NULL;
    size_t k = (size_t)v;
    if (k >= a->nra) {
        size_t n = k + 1 > 2 * a->nra ? k + 1 : 2 * a->nra;
        struct rank_acc *x = realloc(a->ra, n * sizeof(*x));
        if (!x)
            return NULL;
        memset(x + a->nra, 0, (n - a->nra) * sizeof(*x));
        a->ra = x;
        a->nra = n;
    }
    a->ra[k].seen = 1;
    return &a->ra[k];
}

/* The row's values for a table's columns (run_id from the job) into t. */
/* Row r into table t, its column `key` (NULL: none) as `val` instead of
 * the row's own. */
static int trow_as(struct ct_fleet_adder *a, struct table *t, const struct ct_jrow *r,
                   const char *key, const char *val)
{
    int rc = tput(t, a->run_id);
    for (int c = 1; c < t->ncols && !rc; c++)
        rc = tput(t, key && !strcmp(t->cols[c], key) ? val : ct_jrow_str(r, t->cols[c]));
    if (!rc)
        t->rows++;
    if (!rc && t->len > (8u << 20))
        rc = tflush(a->db, t, a->err, sizeof(a->err));
    return rc;
}

static int trow(struct ct_fleet_adder *a, struct table *t, const struct ct_jrow *r)
{
    return trow_as(a, t, r, NULL, NULL);
}

/* "2024-05-01T12:00:00.123456Z" as unix µs, INT64_MIN when not that. */
static int64_t utc_us(const char *s)
{
    struct tm tm = {0};
    if (!s)
        return INT64_MIN;
    const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!p)
        return INT64_MIN;
    int64_t us = 0;
    if (*p == '.') {
        int digits = 0;
        for (p++; *p >= '0' && *p <= '9'; p++, digits++)
            if (digits < 6)
                us = us * 10 + (*p - '0');
        for (; digits < 6; digits++)
            us *= 10;
    }
    time_t t = timegm(&tm);
    return (int64_t)t * 1000000 + us;
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* The identity a job is stored under: its run identities sorted (the
 * traces of a job's attempts name several), or, for rows without one, the
 * job id, start and run name. */
static char *identity(const struct ct_jrow *r)
{
    const char *id = ct_jrow_str(r, "run_id");
    if (!id) {
        const char *job = ct_jrow_str(r, "job"), *start = ct_jrow_str(r, "run_start_utc"),
                   *run = ct_jrow_str(r, "run");
        size_t n =
            64 + (job ? strlen(job) : 0) + (start ? strlen(start) : 0) + (run ? strlen(run) : 0);
        char *s = malloc(n);
        if (s)
            snprintf(s, n, "legacy:%s@%s/%s", job ? job : "", start ? start : "", run ? run : "");
        return s;
    }
    char *copy = strdup(id), *parts[256];
    if (!copy)
        return NULL;
    size_t np = 0;
    for (char *save, *t = strtok_r(copy, "+", &save); t && np < 256; t = strtok_r(NULL, "+", &save))
        parts[np++] = t;
    qsort(parts, np, sizeof(parts[0]), cmp_str);
    char *out = malloc(strlen(id) + 2);
    if (out) {
        out[0] = 0;
        for (size_t i = 0; i < np; i++) {
            if (i)
                strcat(out, "+");
            strcat(out, parts[i]);
        }
    }
    free(copy);
    return out;
}

static const char *const job_cols[] = {
    "run_id",       "job",         "run_name",        "source",       "run_start_utc",
    "run_start_us", "added_utc",   "cmdline",         "ranks",        "iterations",
    "gpu",          "driver",      "cuda_version",    "nccl_version", "cutrace_version",
    "step_p50_us",  "step_p90_us", "step_p99_us",     "window_us",    "compute_us",
    "comm_us",      "idle_us",     "exposed_comm_us", "goodput_pct",  "wall_us",
    "downtime_us",  "attempts"};

static int prepare_all(struct ct_fleet_adder *a)
{
    if (a->ins)
        return 0;
    char sql[2048];
    size_t o = (size_t)snprintf(sql, sizeof(sql), "INSERT INTO jobs (");
    for (int i = 0; i < NCOLS(job_cols); i++)
        o += (size_t)snprintf(sql + o, sizeof(sql) - o, "%s%s", i ? "," : "", job_cols[i]);
    o += (size_t)snprintf(sql + o, sizeof(sql) - o, ") VALUES (");
    for (int i = 0; i < NCOLS(job_cols); i++)
        o += (size_t)snprintf(sql + o, sizeof(sql) - o, "%s$%d", i ? "," : "", i + 1);
    snprintf(sql + o, sizeof(sql) - o, ") ON CONFLICT (run_id) DO NOTHING RETURNING run_id");
    int rc = ct_fdb_prepare(a->db, sql, &a->ins, a->err, sizeof(a->err));
    if (!rc)
        rc = ct_fdb_prepare(
            a->db,
            "UPDATE jobs SET workload = $1, workload_cmd = $2, layout = $3, hosts = $4, "
            "host = $5, gpu_us = $6, useful_us = $7, startup_us = $8, restart_us = $9, "
            "checkpoint_us = $10, data_stall_us = $11, comm_part_us = $12, straggler_us = $13, "
            "kept_share = $14, idle_part_us = $15, step_mean_us = $16, compute_step_us = $17, "
            "exposed_comm_step_us = $18, idle_step_us = $19, data_stall_step_us = $20, "
            "checkpoint_step_us = $21, wait_step_us = $22 WHERE run_id = $23",
            &a->upd, a->err, sizeof(a->err));
    if (!rc)
        rc = ct_fdb_prepare(a->db,
                            "INSERT INTO labels (run_id, key, value) VALUES ($1, $2, $3) "
                            "ON CONFLICT DO NOTHING",
                            &a->lab, a->err, sizeof(a->err));
    return rc;
}

/* A job row: claims the job's identity (-EEXIST when the store has it). */
static int job_begin(struct ct_fleet_adder *a, const char *line, size_t n)
{
    int rc;
    if ((rc = prepare_all(a)))
        return rc;
    if (!(a->run_id = identity(&a->row)) || !(a->job_line = malloc(n + 1)))
        return -ENOMEM;
    memcpy(a->job_line, line, n);
    a->job_line[n] = 0;
    if ((rc = ct_jrow_parse(&a->job, a->job_line, n)))
        return rc;
    if ((rc = ct_fdb_begin(a->db, a->err, sizeof(a->err))))
        return rc;
    a->in_job = 1;
    char now[32];
    time_t t = time(NULL);
    struct tm tm;
    strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
    const struct ct_jrow *j = &a->job;
    struct ct_fdb_stmt *s = a->ins;
    ct_fdb_bind_text(s, 1, a->run_id);
    ct_fdb_bind_text(s, 2, ct_jrow_str(j, "job"));
    ct_fdb_bind_text(s, 3, ct_jrow_str(j, "run"));
    ct_fdb_bind_text(s, 4, a->source);
    ct_fdb_bind_text(s, 5, ct_jrow_str(j, "run_start_utc"));
    int64_t us = utc_us(ct_jrow_str(j, "run_start_utc"));
    if (us == INT64_MIN)
        ct_fdb_bind_null(s, 6);
    else
        ct_fdb_bind_i64(s, 6, us);
    ct_fdb_bind_text(s, 7, now);
    for (int c = 7; c < NCOLS(job_cols); c++) {
        const struct ct_jv *v = ct_jrow_get(j, job_cols[c]);
        if (v && v->type == CT_JNUM &&
            (!strcmp(job_cols[c], "ranks") || !strcmp(job_cols[c], "iterations") ||
             !strcmp(job_cols[c], "attempts")))
            ct_fdb_bind_i64(s, c + 1, (int64_t)v->num);
        else if (v && v->type == CT_JNUM)
            ct_fdb_bind_double(s, c + 1, v->num);
        else
            ct_fdb_bind_text(s, c + 1, v ? v->s : NULL);
    }
    rc = ct_fdb_step(s);
    int inserted = rc == 1;
    while (rc == 1)
        rc = ct_fdb_step(s);
    ct_fdb_reset(s);
    if (rc < 0) {
        snprintf(a->err, sizeof(a->err), "%s", ct_fdb_errmsg(a->db));
        return rc;
    }
    if (!inserted) {
        ct_fdb_rollback(a->db);
        a->in_job = 0;
        a->skip = 1;
        a->st.present++;
        return 0;
    }
    return 0;
}

/* A child row of the current job. */
static int child(struct ct_fleet_adder *a, const char *kind)
{
    const struct ct_jrow *r = &a->row;
    if (!strcmp(kind, "attempt")) {
        static const char *const parts[10] = {
            "startup_us", "productive_us", "checkpoint_us", "restore_us",  "lost_us",
            "hang_us",    "data_stall_us", "idle_us",       "shutdown_us", "unclassified_us"};
        double ranks = ct_jrow_num(r, "ranks");
        if (!(ranks >= 0))
            ranks = 0;
        for (int k = 0; k < 10; k++) {
            double v = ct_jrow_num(r, parts[k]);
            if (!isfinite(v)) {
                a->att_missing |= k == 1 || k == 0;
                v = 0;
            }
            a->att_parts[k] += ranks * v;
        }
        a->natt++;
        return trow(a, &a->t[T_ATTEMPT], r);
    }
    if (!strcmp(kind, "iteration")) {
        struct rank_acc *x = rank_of(a, r);
        if (x) {
            double d = ct_jrow_num(r, "duration_us"), e = ct_jrow_num(r, "exposed_comm_us"),
                   i = ct_jrow_num(r, "idle_us");
            double c = ct_jrow_num(r, "compute_us"), m = ct_jrow_num(r, "memory_us");
            x->S += isfinite(d) ? d : 0;
            x->E += isfinite(e) ? e : 0;
            x->I += isfinite(i) ? i : 0;
            x->C += isfinite(c) ? c : 0;
            x->M += isfinite(m) ? m : 0;
            x->nit++;
        }
        return trow(a, &a->t[T_ITER], r);
    }
    if (!strcmp(kind, "rank")) {
        struct rank_acc *x = rank_of(a, r);
        if (x) {
            const char *h = ct_jrow_str(r, "host");
            free(x->host);
            x->host = h ? strdup(h) : NULL;
            double d = ct_jrow_num(r, "data_stall_us"), k = ct_jrow_num(r, "checkpoint_stall_us");
            double c = ct_jrow_num(r, "compute_us");
            x->data = isfinite(d) ? d : 0;
            x->ckpt = isfinite(k) ? k : 0;
            x->compute = isfinite(c) ? c : 0;
        }
        return trow(a, &a->t[T_RANK], r);
    }
    if (!strcmp(kind, "health")) {
        struct rank_acc *x = rank_of(a, r);
        if (x) {
            const char *p = ct_jrow_str(r, "clock_policy");
            free(x->policy);
            x->policy = p ? strdup(p) : NULL;
            double lim = ct_jrow_num(r, "power_limit_w");
            free(x->limit);
            x->limit = NULL;
            if (isfinite(lim)) {
                char b[32];
                snprintf(b, sizeof(b), "%.0fW", lim);
                x->limit = strdup(b);
            }
        }
        return trow(a, &a->t[T_HEALTH], r);
    }
    if (!strcmp(kind, "kernel")) {
        const char *n = ct_jrow_str(r, "name");
        if (n) {
            if (a->nkern == a->capk) {
                size_t c = a->capk ? a->capk * 2 : 64;
                char **k = realloc(a->kernels, c * sizeof(*k));
                if (!k)
                    return -ENOMEM;
                a->kernels = k;
                a->capk = c;
            }
            if (!(a->kernels[a->nkern] = strdup(n)))
                return -ENOMEM;
            a->nkern++;
        }
        return trow(a, &a->t[T_KERNEL], r);
    }
    if (!strcmp(kind, "collective")) {
        /* rank-µs waiting for the last member: the total when the rows have
         * it, else the median wait times the instances */
        double c = ct_jrow_num(r, "count"), w = ct_jrow_num(r, "wait_p50_us"),
               t = ct_jrow_num(r, "wait_total_us");
        if (t >= 0)
            a->wait += t;
        else if (c > 0 && w > 0)
            a->wait += c * w;
        /* an op of another library than NCCL (NVSHMEM's host collectives)
         * is stored as "LIB:OP", as the report and diff name it, so one op
         * and size of two libraries stay two collectives */
        const char *lib = ct_jrow_str(r, "lib"), *op = ct_jrow_str(r, "op");
        char named[96];
        if (lib && op && strcmp(lib, "nccl")) {
            snprintf(named, sizeof(named), "%s:%s", lib, op);
            return trow_as(a, &a->t[T_COLL], r, "op", named);
        }
        return trow(a, &a->t[T_COLL], r);
    }
    return 0; /* a row kind of a later version: not stored */
}

static int label(struct ct_fleet_adder *a, const char *k, const char *v)
{
    ct_fdb_bind_text(a->lab, 1, a->run_id);
    ct_fdb_bind_text(a->lab, 2, k);
    ct_fdb_bind_text(a->lab, 3, v);
    int rc = ct_fdb_step(a->lab);
    ct_fdb_reset(a->lab);
    if (rc < 0)
        snprintf(a->err, sizeof(a->err), "%s", ct_fdb_errmsg(a->db));
    return rc < 0 ? rc : 0;
}

/* The job's split, per-step figures, workload and labels; commit. */
static int job_end(struct ct_fleet_adder *a)
{
    int rc = 0;
    for (int i = 0; i < T_N && !rc; i++)
        rc = tflush(a->db, &a->t[i], a->err, sizeof(a->err));
    if (rc)
        return rc;
    const struct ct_jrow *j = &a->job;
    /* hosts: distinct, sorted; the layout: ranks x most ranks on a host */
    size_t nh = 0, most = 0;
    char **hv = calloc(a->nra ? a->nra : 1, sizeof(*hv));
    if (!hv)
        return -ENOMEM;
    for (size_t i = 0; i < a->nra; i++)
        if (a->ra[i].seen && a->ra[i].host)
            hv[nh++] = a->ra[i].host;
    qsort(hv, nh, sizeof(*hv), cmp_str);
    size_t distinct = 0, hlen = 1;
    for (size_t i = 0, k; i < nh; i = k) {
        for (k = i; k < nh && !strcmp(hv[i], hv[k]); k++)
            ;
        most = k - i > most ? k - i : most;
        hv[distinct++] = hv[i];
        hlen += strlen(hv[i]) + 1;
    }
    char *hosts = malloc(hlen);
    if (!hosts) {
        free(hv);
        return -ENOMEM;
    }
    hosts[0] = 0;
    for (size_t i = 0; i < distinct; i++) {
        if (i)
            strcat(hosts, "+");
        strcat(hosts, hv[i]);
    }
    double ranks = ct_jrow_num(j, "ranks");
    char layout[64], cmd[4096], fp[64];
    snprintf(layout, sizeof(layout), "%.0fx%zu", isfinite(ranks) ? ranks : 0, most ? most : 1);
    ct_fleet_command_signature(ct_jrow_str(j, "cmdline"), cmd, sizeof(cmd));
    const char *named = ct_jrow_str(j, "labels:tag.workload");
    if (named)
        snprintf(fp, sizeof(fp), "%s", named);
    else
        ct_fleet_fingerprint(cmd, layout, fp, sizeof(fp));

    /* per-step figures: means over (rank, iteration); stalls per
     * iteration over the ranks */
    double S = 0, E = 0, I = 0, C = 0, N = 0, data = 0, ckpt = 0;
    for (size_t i = 0; i < a->nra; i++) {
        const struct rank_acc *x = &a->ra[i];
        S += x->S, E += x->E, I += x->I, C += x->C, N += x->nit;
        data += x->data, ckpt += x->ckpt;
    }
    double nanv = NAN;
    double step_mean = N > 0 ? S / N : nanv, comp = N > 0 ? C / N : nanv;
    double expo = N > 0 ? E / N : nanv, idle = N > 0 ? I / N : nanv;
    double dstep = N > 0 ? data / N : nanv, kstep = N > 0 ? ckpt / N : nanv;

    /* the GPU time split (docs/fleet.md "GPU time"): goodput's parts of
     * each attempt times its ranks, the down time times the job's ranks;
     * the productive part split by the iterations' figures, scaled to the
     * steps kept (lost steps are in restarts) */
    double part[CT_FP_N];
    for (int k = 0; k < CT_FP_N; k++)
        part[k] = NAN;
    double gpu = NAN, kept_share = NAN;
    double down = ct_jrow_num(j, "downtime_us");
    if (a->natt && !a->att_missing && isfinite(ranks)) {
        const double *p = a->att_parts; /* startup, productive, checkpoint, restore, lost,
                                           hang, data, idle, shutdown, unclassified */
        double dt = isfinite(down) ? down * ranks : 0;
        gpu = dt;
        for (int k = 0; k < 10; k++)
            gpu += p[k];
        double P = p[1];
        double kept = S - p[4] > P ? S - p[4] : P;
        double scale = S > 0 ? kept / S : 0;
        double expo_k = E * scale, idle_k = I * scale, wait_k = a->wait * scale;
        double X = kept - P > 0 ? kept - P : 0;
        double ex = expo_k < P ? expo_k : P;
        double sg = wait_k < ex ? wait_k : ex;
        double is = idle_k - X;
        is = is < 0 ? 0 : is > P - ex ? P - ex : is;
        kept_share = S > 0 ? scale : NAN;
        part[CT_FP_STARTUP] = p[0];
        part[CT_FP_RESTART] = p[3] + p[4] + p[5] + dt;
        part[CT_FP_CHECKPOINT] = p[2];
        part[CT_FP_DATA] = p[6];
        part[CT_FP_COMM] = ex - sg;
        part[CT_FP_STRAGGLER] = sg;
        part[CT_FP_IDLE] = p[7] + p[8] + p[9] + is;
        /* throttling is taken out of it when the store is read
         * (fleet_jobs.c): the unthrottled clock is the GPU model's highest
         * over the whole store */
        part[CT_FP_USEFUL] = P - ex - is;
    }
    struct ct_fdb_stmt *s = a->upd;
    ct_fdb_bind_text(s, 1, fp);
    ct_fdb_bind_text(s, 2, cmd);
    ct_fdb_bind_text(s, 3, layout);
    ct_fdb_bind_i64(s, 4, (int64_t)distinct);
    ct_fdb_bind_text(s, 5, hosts);
    ct_fdb_bind_double(s, 6, gpu);
    static const int order[] = {CT_FP_USEFUL, CT_FP_STARTUP, CT_FP_RESTART,   CT_FP_CHECKPOINT,
                                CT_FP_DATA,   CT_FP_COMM,    CT_FP_STRAGGLER, -1,
                                CT_FP_IDLE};
    for (int k = 0; k < 9; k++)
        ct_fdb_bind_double(s, 7 + k, order[k] < 0 ? kept_share : part[order[k]]);
    ct_fdb_bind_double(s, 16, step_mean);
    ct_fdb_bind_double(s, 17, comp);
    ct_fdb_bind_double(s, 18, expo);
    ct_fdb_bind_double(s, 19, idle);
    ct_fdb_bind_double(s, 20, dstep);
    ct_fdb_bind_double(s, 21, kstep);
    ct_fdb_bind_double(s, 22, N > 0 ? a->wait / N : nanv);
    ct_fdb_bind_text(s, 23, a->run_id);
    rc = ct_fdb_step(s);
    ct_fdb_reset(s);
    if (rc < 0)
        snprintf(a->err, sizeof(a->err), "%s", ct_fdb_errmsg(a->db));
    rc = rc < 0 ? rc : 0;
    /* labels: the rows' tags and NCCL settings, and the configuration the
     * health counters recorded (every value a rank has) */
    for (size_t i = 0; i < j->n && !rc; i++)
        if (!strncmp(j->v[i].key, "labels:", 7) && j->v[i].s)
            rc = label(a, j->v[i].key + 7, j->v[i].s);
    for (size_t i = 0; i < a->nra && !rc; i++) {
        if (a->ra[i].policy)
            rc = label(a, "config.clock_policy", a->ra[i].policy);
        if (!rc && a->ra[i].limit)
            rc = label(a, "config.power_limit", a->ra[i].limit);
    }
    free(hv);
    free(hosts);
    if (!rc)
        rc = ct_fdb_commit(a->db, a->err, sizeof(a->err));
    if (!rc)
        a->st.added++;
    a->in_job = 0;
    return rc;
}

int ct_fleet_adder_line(struct ct_fleet_adder *a, const char *line, size_t n)
{
    a->line++;
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        n--;
    const char *p = line;
    while (p < line + n && (*p == ' ' || *p == '\t' || *p == '\r'))
        p++;
    if (p == line + n)
        return 0; /* blank */
    int rc = ct_jrow_parse(&a->row, line, n);
    if (rc) {
        snprintf(a->err, sizeof(a->err), "line %zu: %s", a->line,
                 rc == -ENOMEM ? "out of memory" : "not a JSON object of cutrace.rows");
        return rc;
    }
    const char *schema = ct_jrow_str(&a->row, "schema"), *kind = ct_jrow_str(&a->row, "row");
    double version = ct_jrow_num(&a->row, "version");
    if (!schema || strcmp(schema, "cutrace.rows") || !kind) {
        snprintf(a->err, sizeof(a->err),
                 "line %zu: not a cutrace.rows row (expected \"schema\":\"cutrace.rows\" and "
                 "\"row\")",
                 a->line);
        return -EINVAL;
    }
    if (version != 2) {
        snprintf(a->err, sizeof(a->err),
                 "line %zu: rows of version %g: this cutrace reads version 2 (write them again "
                 "with cutrace report --rows)",
                 a->line, version);
        return -EPROTO;
    }
    if (!strcmp(kind, "job")) {
        if (a->in_job && (rc = job_end(a)))
            return rc;
        job_reset(a);
        rc = job_begin(a, line, n);
        if (rc && !a->err[0])
            snprintf(a->err, sizeof(a->err), "line %zu: %s", a->line,
                     rc == -ENOMEM ? "out of memory" : "bad job row");
        return rc;
    }
    if (a->skip)
        return 0;
    if (!a->in_job) {
        snprintf(a->err, sizeof(a->err),
                 "line %zu: a \"%s\" row before any \"job\" row (a job's rows begin with it)",
                 a->line, kind);
        return -EINVAL;
    }
    rc = child(a, kind);
    if (rc && !a->err[0])
        snprintf(a->err, sizeof(a->err), "line %zu: %s", a->line,
                 rc == -ENOMEM ? "out of memory" : ct_fdb_errmsg(a->db));
    return rc;
}

int ct_fleet_adder_end(struct ct_fleet_adder *a, struct ct_fleet_add_stats *st, char *err,
                       size_t errlen)
{
    int rc = 0;
    if (a->in_job && !a->err[0])
        rc = job_end(a);
    else if (a->in_job)
        ct_fdb_rollback(a->db);
    if (a->err[0])
        snprintf(err, errlen, "%s", a->err);
    if (st) {
        st->added += a->st.added;
        st->present += a->st.present;
    }
    if (!rc && a->err[0])
        rc = -EIO;
    job_reset(a);
    for (int i = 0; i < T_N; i++)
        free(a->t[i].buf);
    free(a->kernels);
    free(a->row.v);
    free(a->row.scratch);
    free(a->job.v);
    free(a->job.scratch);
    ct_fdb_finalize(a->ins);
    ct_fdb_finalize(a->upd);
    ct_fdb_finalize(a->lab);
    free(a);
    return rc;
}

int ct_fleet_add_rows(struct ct_fdb *db, FILE *f, const char *source, const char *what,
                      struct ct_fleet_add_stats *st, char *err, size_t errlen)
{
    struct ct_fleet_adder *a;
    if (ct_fleet_adder_new(db, source, &a)) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 0;
    while (!rc && (n = getline(&line, &cap, f)) >= 0)
        rc = ct_fleet_adder_line(a, line, (size_t)n);
    free(line);
    if (!rc && ferror(f)) {
        snprintf(a->err, sizeof(a->err), "read error");
        rc = -EIO;
    }
    char e[512] = "";
    int rc2 = ct_fleet_adder_end(a, st, e, sizeof(e));
    if (rc || rc2)
        snprintf(err, errlen, "%s: %s", what, e[0] ? e : "failed");
    return rc ? rc : rc2;
}

int ct_fleet_is_rows(const char *path)
{
    size_t n = strlen(path);
    if (n > 6 && !strcmp(path + n - 6, ".jsonl"))
        return 1;
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char head[64] = "";
    size_t k = fread(head, 1, sizeof(head) - 1, f);
    head[k] = 0;
    fclose(f);
    return !strncmp(head, "{\"schema\":\"cutrace.rows\"", 24);
}
