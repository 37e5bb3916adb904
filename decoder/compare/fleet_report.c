/*
 * `cutrace fleet report`: the fleet's GPU time, its goodput and where the
 * rest went (start-up, restarts and lost work, checkpoint, data stalls,
 * exposed communication, stragglers, throttling, idle), summed over the
 * jobs and broken down by key (workload, host, GPU model, driver, CUDA,
 * NCCL and cutrace versions, tags, configuration). Each job's split is
 * made when it is added (fleet_add.c, docs/fleet.md "GPU time"); this file
 * only adds them up, in C and in the jobs' order, so both back ends give
 * the same figures to the last bit.
 */
#include "decoder/compare/fleet.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "decoder/util/json.h"

#define US_PER_HOUR 3.6e9

struct group {
    char *value;
    double jobs; /* a job split over several values counts its share */
    double gpu, part[CT_FP_N];
    double thr_known_gpu; /* GPU time of the jobs whose throttling is known */
};

struct breakdown {
    const char *key;   /* as given */
    const char *field; /* what it means (ct_fleet_key) */
    char buf[160];
    struct group *g;
    size_t n;
};

static void group_free(struct breakdown *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->g[i].value);
    free(b->g);
    b->g = NULL;
    b->n = 0;
}

static struct group *group_of(struct breakdown *b, const char *v)
{
    for (size_t i = 0; i < b->n; i++)
        if (!strcmp(b->g[i].value, v))
            return &b->g[i];
    struct group *g = realloc(b->g, (b->n + 1) * sizeof(*g));
    if (!g)
        return NULL;
    b->g = g;
    memset(&g[b->n], 0, sizeof(g[b->n]));
    if (!(g[b->n].value = strdup(v)))
        return NULL;
    return &g[b->n++];
}

/* A job's share w of its GPU time to the group; thr, when not NAN, is the
 * throttling of the group's own ranks (a host's), which replaces its share
 * of the job's, the useful work taking the difference so that the job's
 * parts still sum to its share. */
static void add_to(struct group *g, const struct ct_fleet_job *j, double w, double thr)
{
    g->jobs += w;
    g->gpu += w * j->gpu_us;
    for (int k = 0; k < CT_FP_N; k++)
        g->part[k] += w * j->part[k];
    if (isfinite(thr)) {
        double d = thr - w * j->part[CT_FP_THROTTLE];
        g->part[CT_FP_THROTTLE] += d;
        g->part[CT_FP_USEFUL] -= d;
    }
    if (j->throttle_known)
        g->thr_known_gpu += w * j->gpu_us;
}

static int cmp_group(const void *x, const void *y)
{
    const struct group *a = x, *b = y;
    if (a->gpu != b->gpu)
        return a->gpu > b->gpu ? -1 : 1;
    return strcmp(a->value, b->value);
}

/* Groups of one key: a job's GPU time goes to each of its values, by its
 * ranks on each host for "host" (its throttling to the hosts whose ranks
 * were throttled), in equal shares otherwise; a job without the key to
 * "(none)". */
static int group_by(const struct ct_fleet_jobs *js, struct breakdown *b)
{
    const char *vals[256];
    for (size_t i = 0; i < js->n; i++) {
        const struct ct_fleet_job *j = &js->j[i];
        if (!isfinite(j->gpu_us))
            continue;
        size_t nv = ct_fleet_values(j, b->field, vals, 256);
        if (!nv) {
            struct group *g = group_of(b, "(none)");
            if (!g)
                return -ENOMEM;
            add_to(g, j, 1, NAN);
            continue;
        }
        int64_t total = 0;
        if (!strcmp(b->field, "host"))
            for (size_t k = 0; k < j->nfv; k++)
                total += !strcmp(j->fv[k].key, "host") ? j->host_ranks[k] : 0;
        for (size_t v = 0; v < nv; v++) {
            double w = 1.0 / (double)nv, thr = NAN;
            if (total > 0)
                for (size_t k = 0; k < j->nfv; k++)
                    if (!strcmp(j->fv[k].key, "host") && j->fv[k].value == vals[v]) {
                        w = (double)j->host_ranks[k] / (double)total;
                        thr = j->host_thr ? j->host_thr[k] : NAN;
                    }
            struct group *g = group_of(b, vals[v]);
            if (!g)
                return -ENOMEM;
            add_to(g, j, w, thr);
        }
    }
    if (b->n)
        qsort(b->g, b->n, sizeof(*b->g), cmp_group);
    return 0;
}

struct totals {
    struct group all;
    size_t jobs, workloads, hosts;
    int64_t first, last;
    size_t thr_known;
};

/* Distinct values of key over every job (with a goodput or not), "(none)"
 * left out. */
static int count_distinct(const struct ct_fleet_jobs *js, const char *key, size_t *out)
{
    const char *vals[256];
    const char **seen = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < js->n; i++) {
        size_t nv = ct_fleet_values(&js->j[i], key, vals, 256);
        for (size_t v = 0; v < nv; v++) {
            size_t k = 0;
            while (k < n && strcmp(seen[k], vals[v]))
                k++;
            if (k < n || !strcmp(vals[v], "(none)"))
                continue;
            if (n == cap) {
                cap = cap ? 2 * cap : 64;
                const char **x = realloc(seen, cap * sizeof(*x));
                if (!x) {
                    free(seen);
                    return -ENOMEM;
                }
                seen = x;
            }
            seen[n++] = vals[v];
        }
    }
    free(seen);
    *out = n;
    return 0;
}

static int totals(const struct ct_fleet_jobs *js, struct totals *t)
{
    memset(t, 0, sizeof(*t));
    t->first = INT64_MAX;
    t->last = INT64_MIN;
    for (size_t i = 0; i < js->n; i++) {
        const struct ct_fleet_job *j = &js->j[i];
        t->jobs++;
        if (j->start_us != INT64_MIN) {
            t->first = j->start_us < t->first ? j->start_us : t->first;
            t->last = j->start_us > t->last ? j->start_us : t->last;
        }
        if (isfinite(j->gpu_us)) {
            add_to(&t->all, j, 1, NAN);
            t->thr_known += j->throttle_known;
        }
    }
    int rc = count_distinct(js, "workload", &t->workloads);
    if (!rc)
        rc = count_distinct(js, "host", &t->hosts);
    return rc;
}

static void utc(char *b, size_t n, int64_t us)
{
    time_t s = (time_t)(us / 1000000);
    struct tm tm;
    if (us == INT64_MIN || us == INT64_MAX || !gmtime_r(&s, &tm))
        snprintf(b, n, "-");
    else
        strftime(b, n, "%Y-%m-%d %H:%M", &tm);
}

static double pct(double a, double b)
{
    return b > 0 ? 100 * a / b : NAN;
}

static void cell(FILE *f, const char *fmt, double v, int width)
{
    if (isfinite(v))
        fprintf(f, fmt, width, v);
    else
        fprintf(f, "%*s", width, "-");
}

static const char *const short_title[CT_FP_N] = {"useful", "start", "restart", "ckpt", "data",
                                                 "comm",   "strag", "thrtl",   "idle"};

static void text(FILE *f, const struct ct_fleet_jobs *js, const struct totals *t,
                 struct breakdown *bs, size_t nb)
{
    char a[32], b[32];
    utc(a, sizeof(a), t->first);
    utc(b, sizeof(b), t->last);
    double G = t->all.gpu;
    fprintf(f, "fleet: %zu jobs, %zu workloads, %zu hosts, runs started %s .. %s UTC\n", t->jobs,
            t->workloads, t->hosts, a, b);
    if (js->without_goodput)
        fprintf(f,
                "  %zu jobs left out of GPU time: no goodput (no rank process with a timed "
                "record, or no step found)\n",
                js->without_goodput);
    if (!(G > 0)) {
        fprintf(f, "GPU time: - (no job with a goodput)\n");
        return;
    }
    /* GPU-hours, or GPU-seconds for a fleet of less than one */
    double unit = G >= US_PER_HOUR ? US_PER_HOUR : 1e6;
    const char *un = G >= US_PER_HOUR ? "GPU-h" : "GPU-s";
    fprintf(f, "GPU time %.2f %s; goodput (useful work) %.1f %%; lost %.1f %%:\n", G / unit, un,
            pct(t->all.part[CT_FP_USEFUL], G), 100 - pct(t->all.part[CT_FP_USEFUL], G));
    for (int k = 1; k < CT_FP_N; k++) {
        fprintf(f, "  %-24s %6.2f %%  %10.3f %s", ct_fleet_part_title(k), pct(t->all.part[k], G),
                t->all.part[k] / unit, un);
        if (k == CT_FP_THROTTLE && t->thr_known < t->jobs - js->without_goodput)
            fprintf(f, "  (health counters in %zu of %zu jobs)", t->thr_known,
                    t->jobs - js->without_goodput);
        fputc('\n', f);
    }
    for (size_t i = 0; i < nb; i++) {
        const struct breakdown *x = &bs[i];
        fprintf(f, "\nby %s (lost GPU time in points of the fleet's; goodput within the group):\n",
                x->key);
        size_t w = 8;
        for (size_t g = 0; g < x->n; g++)
            w = strlen(x->g[g].value) > w ? strlen(x->g[g].value) : w;
        w = w > 40 ? 40 : w;
        fprintf(f, "  %-*s %7s %10s %6s %7s", (int)w, "value", "jobs", un, "share", "goodput");
        for (int k = 1; k < CT_FP_N; k++)
            fprintf(f, " %7s", short_title[k]);
        fputc('\n', f);
        for (size_t g = 0; g < x->n; g++) {
            const struct group *q = &x->g[g];
            fprintf(f, "  %-*.*s %7.1f %10.3f %5.1f%% ", (int)w, (int)w, q->value, q->jobs,
                    q->gpu / unit, pct(q->gpu, G));
            cell(f, "%*.1f%%", pct(q->part[CT_FP_USEFUL], q->gpu), 6);
            for (int k = 1; k < CT_FP_N; k++)
                cell(f, " %*.2f", pct(q->part[k], G), 7);
            fputc('\n', f);
        }
    }
}

static void parts_json(FILE *f, const struct group *g, double G, int with_points)
{
    fprintf(f, "\"parts\":{");
    for (int k = 0; k < CT_FP_N; k++) {
        fprintf(f, "%s\"%s\":{", k ? "," : "", ct_fleet_part_name(k));
        ct_json_member(f, "gpu_hours", g->part[k] / US_PER_HOUR, 6);
        fputc(',', f);
        ct_json_member(f, "pct", pct(g->part[k], g->gpu), 4);
        if (with_points) {
            fputc(',', f);
            ct_json_member(f, "points_of_fleet", pct(g->part[k], G), 4);
        }
        fputc('}', f);
    }
    fputc('}', f);
}

static void json(FILE *f, const struct ct_fleet_jobs *js, const struct totals *t,
                 struct breakdown *bs, size_t nb)
{
    double G = t->all.gpu;
    char a[32], b[32];
    utc(a, sizeof(a), t->first);
    utc(b, sizeof(b), t->last);
    fprintf(f,
            "{\"schema\":\"cutrace.fleet.report\",\"version\":1,\"cutrace_version\":\"%s\","
            "\"jobs\":%zu,\"jobs_without_goodput\":%zu,\"jobs_with_health\":%zu,"
            "\"workloads\":%zu,\"hosts\":%zu,\"first_start_utc\":",
            CT_VERSION, t->jobs, js->without_goodput, t->thr_known, t->workloads, t->hosts);
    if (t->first != INT64_MAX)
        ct_json_str(f, a);
    else
        fputs("null", f);
    fprintf(f, ",\"last_start_utc\":");
    if (t->last != INT64_MIN)
        ct_json_str(f, b);
    else
        fputs("null", f);
    fputc(',', f);
    ct_json_member(f, "gpu_hours", G > 0 ? G / US_PER_HOUR : NAN, 6);
    fputc(',', f);
    ct_json_member(f, "goodput_pct", pct(t->all.part[CT_FP_USEFUL], G), 4);
    fputc(',', f);
    ct_json_member(f, "lost_pct", G > 0 ? 100 - pct(t->all.part[CT_FP_USEFUL], G) : NAN, 4);
    fputc(',', f);
    parts_json(f, &t->all, G, 0);
    fprintf(f, ",\"unavailable\":[");
    int first = 1;
    if (!(G > 0)) {
        fprintf(f, "{\"figure\":\"gpu_hours\",\"reason\":\"no job with a goodput\"}");
        first = 0;
    }
    if (t->thr_known < t->jobs - js->without_goodput)
        fprintf(f,
                "%s{\"figure\":\"throttling\",\"reason\":\"%zu of %zu jobs have no GPU health "
                "counters: their throttling is counted as useful work\"}",
                first ? "" : ",", t->jobs - js->without_goodput - t->thr_known,
                t->jobs - js->without_goodput);
    fprintf(f, "],\"by\":[");
    for (size_t i = 0; i < nb; i++) {
        const struct breakdown *x = &bs[i];
        fprintf(f, "%s{\"key\":", i ? "," : "");
        ct_json_str(f, x->key);
        fprintf(f, ",\"field\":");
        ct_json_str(f, x->field);
        fprintf(f, ",\"groups\":[");
        for (size_t g = 0; g < x->n; g++) {
            const struct group *q = &x->g[g];
            fprintf(f, "%s{\"value\":", g ? "," : "");
            ct_json_str(f, q->value);
            fputc(',', f);
            ct_json_member(f, "jobs", q->jobs, 3);
            fputc(',', f);
            ct_json_member(f, "gpu_hours", q->gpu / US_PER_HOUR, 6);
            fputc(',', f);
            ct_json_member(f, "share_pct", pct(q->gpu, G), 4);
            fputc(',', f);
            ct_json_member(f, "goodput_pct", pct(q->part[CT_FP_USEFUL], q->gpu), 4);
            fputc(',', f);
            parts_json(f, q, G, 1);
            fputc('}', f);
        }
        fprintf(f, "]}");
    }
    fprintf(f, "]}\n");
}

static int breakdowns(const struct ct_fleet_jobs *js, const struct ct_fleet_report_opts *o,
                      struct breakdown **out)
{
    struct breakdown *bs = calloc(o->nby ? o->nby : 1, sizeof(*bs));
    if (!bs)
        return -ENOMEM;
    int rc = 0;
    for (size_t i = 0; i < o->nby && !rc; i++) {
        bs[i].key = o->by[i];
        bs[i].field = ct_fleet_key(o->by[i], bs[i].buf, sizeof(bs[i].buf));
        rc = group_by(js, &bs[i]);
    }
    if (rc) {
        for (size_t i = 0; i < o->nby; i++)
            group_free(&bs[i]);
        free(bs);
        return rc;
    }
    *out = bs;
    return 0;
}

int ct_fleet_report_write(FILE *f, const struct ct_fleet_jobs *js,
                          const struct ct_fleet_report_opts *o, int as_json, char *err,
                          size_t errlen)
{
    struct totals t;
    struct breakdown *bs = NULL;
    int rc = totals(js, &t);
    if (!rc)
        rc = breakdowns(js, o, &bs);
    if (rc) {
        free(t.all.value);
        snprintf(err, errlen, "out of memory");
        return rc;
    }
    if (as_json)
        json(f, js, &t, bs, o->nby);
    else
        text(f, js, &t, bs, o->nby);
    for (size_t i = 0; i < o->nby; i++)
        group_free(&bs[i]);
    free(bs);
    return 0;
}

/* Rows for dashboards: the fleet's split, then one row per group of each
 * key; columns in docs/fleet.md ("Rows"). */
static void row(FILE *f, const char *key, const struct group *g, double G)
{
    fprintf(f, "{\"schema\":\"cutrace.fleet.rows\",\"version\":1,\"row\":\"gpu_time\",\"key\":");
    if (key)
        ct_json_str(f, key);
    else
        fputs("null", f);
    fprintf(f, ",\"value\":");
    if (key)
        ct_json_str(f, g->value);
    else
        fputs("null", f);
    fputc(',', f);
    ct_json_member(f, "jobs", g->jobs, 3);
    fputc(',', f);
    ct_json_member(f, "gpu_hours", g->gpu / US_PER_HOUR, 6);
    fputc(',', f);
    ct_json_member(f, "share_pct", pct(g->gpu, G), 4);
    fputc(',', f);
    ct_json_member(f, "goodput_pct", pct(g->part[CT_FP_USEFUL], g->gpu), 4);
    for (int k = 0; k < CT_FP_N; k++) {
        char name[64];
        snprintf(name, sizeof(name), "%s_gpu_hours", ct_fleet_part_name(k));
        fputc(',', f);
        ct_json_member(f, name, g->part[k] / US_PER_HOUR, 6);
    }
    fputs("}\n", f);
}

int ct_fleet_report_rows(FILE *f, const struct ct_fleet_jobs *js,
                         const struct ct_fleet_report_opts *o, char *err, size_t errlen)
{
    struct totals t;
    struct breakdown *bs = NULL;
    int rc = totals(js, &t);
    if (!rc)
        rc = breakdowns(js, o, &bs);
    if (rc) {
        snprintf(err, errlen, "out of memory");
        return rc;
    }
    t.all.jobs = (double)(t.jobs - js->without_goodput);
    row(f, NULL, &t.all, t.all.gpu);
    for (size_t i = 0; i < o->nby; i++) {
        for (size_t g = 0; g < bs[i].n; g++)
            row(f, bs[i].field, &bs[i].g[g], t.all.gpu);
        group_free(&bs[i]);
    }
    free(bs);
    return 0;
}
