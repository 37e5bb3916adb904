/*
 * Health counters on the report side (health.h). Counter records are
 * gathered during the timeline extraction's pass over each trace (a pass of
 * their own for a file that was not extracted), once per file, and kept
 * until exit: report, export, diagnose and diff ask for the same files.
 * Never prints except through the report functions at the end.
 */
#include "decoder/analysis/health.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/analysis.h"
#include "decoder/util/json.h"
#include "decoder/util/stats.h"
#include "decoder/read/timeline.h"
#include "src/reader.h"

static const char *const reason_names[CT_THROTTLE_NREASONS] = {
    "gpu_idle",   "applications_clocks", "sw_power_cap",   "hw_slowdown",    "sync_boost",
    "sw_thermal", "hw_thermal",          "hw_power_brake", "display_clocks",
};

const char *ct_throttle_reason_name(int bit)
{
    return bit >= 0 && bit < CT_THROTTLE_NREASONS ? reason_names[bit] : "?";
}

/* ------------------------------------------------ loading */

static struct ct_hseries *series_get(struct ct_hcollect *l, int dev, const char *name,
                                     const char *unit)
{
    struct ct_hproc *h = &l->h;
    for (size_t i = 0; i < h->ns; i++)
        if (h->s[i].dev == dev && !strcmp(h->s[i].name, name))
            return &h->s[i];
    if (h->ns == l->cap) {
        size_t c = l->cap ? l->cap * 2 : 16;
        void *q = realloc(h->s, c * sizeof(*h->s));
        if (!q)
            return NULL;
        h->s = q;
        l->cap = c;
    }
    struct ct_hseries *s = &h->s[h->ns++];
    memset(s, 0, sizeof(*s));
    s->dev = dev;
    snprintf(s->name, sizeof(s->name), "%s", name);
    snprintf(s->unit, sizeof(s->unit), "%s", unit);
    return s;
}

void ct_hcollect_init(struct ct_hcollect *c)
{
    memset(c, 0, sizeof(*c));
    c->h.power_limit = -1;
}

int ct_hcollect_record(struct ct_hcollect *l, struct ct_reader *rd, const struct ct_record *r)
{
    const uint64_t *f = r->f;
    if (r->kind == CT_REC_META && f[CT_META_SCOPE] == CT_SCOPE_RECORDER &&
        !strcmp(ct_reader_string(rd, f[CT_META_KEY]), "health")) {
        const char *v = ct_reader_string(rd, f[CT_META_VALUE]);
        /* the first "unavailable" wins over a later "nvml" of another device */
        if (!l->h.status[0] || strncmp(l->h.status, "unavailable", 11) != 0)
            snprintf(l->h.status, sizeof(l->h.status), "%s", v);
        return 0;
    }
    if (r->kind != CT_REC_COUNTER)
        return 0;
    struct ct_hseries *s =
        series_get(l, (int)(int64_t)f[CT_COUNTER_DEVICE], ct_reader_string(rd, f[CT_COUNTER_NAME]),
                   ct_reader_string(rd, f[CT_COUNTER_UNIT]));
    if (!s)
        return -ENOMEM;
    if (s->n == s->cap) {
        size_t c = s->cap ? s->cap * 2 : 64;
        int64_t *t = realloc(s->t, c * sizeof(*t));
        if (!t)
            return -ENOMEM;
        s->t = t;
        int64_t *v = realloc(s->v, c * sizeof(*v));
        if (!v)
            return -ENOMEM;
        s->v = v;
        s->cap = c;
    }
    s->t[s->n] = (int64_t)f[CT_COUNTER_TIME];
    s->v[s->n] = (int64_t)f[CT_COUNTER_VALUE];
    s->n++;
    return 0;
}

void ct_hcollect_free(struct ct_hcollect *c)
{
    ct_hproc_free(&c->h);
    c->cap = 0;
}

struct load {
    struct ct_reader *rd;
    struct ct_hcollect c;
};

static int on_record(void *ctx, const struct ct_record *r)
{
    struct load *l = ctx;
    return ct_hcollect_record(&l->c, l->rd, r);
}

/* Samples of one series arrive in time order from one thread (the writer);
 * sort anyway, cheaply, for traces merged or written otherwise. */
static void series_sort(struct ct_hseries *s)
{
    for (size_t i = 1; i < s->n; i++) {
        int64_t t = s->t[i], v = s->v[i];
        size_t j = i;
        for (; j > 0 && s->t[j - 1] > t; j--) {
            s->t[j] = s->t[j - 1];
            s->v[j] = s->v[j - 1];
        }
        s->t[j] = t;
        s->v[j] = v;
    }
}

int ct_hproc_load(const char *path, struct ct_hproc *h, char *err, size_t errlen)
{
    struct ct_reader rd;
    struct load l = {&rd, {.cap = 0}};
    ct_hcollect_init(&l.c);
    *h = l.c.h;
    int rc = ct_reader_open(&rd, path);
    if (rc) {
        snprintf(err, errlen, "%s", rd.err);
        return rc;
    }
    struct ct_chunk_sink sink = {&l, NULL, on_record, NULL, NULL};
    while ((rc = ct_reader_next(&rd, &sink)) > 0)
        ;
    if (rc < 0) {
        snprintf(err, errlen, "%s", rd.err[0] ? rd.err : "out of memory");
        ct_reader_close(&rd);
        ct_hcollect_free(&l.c);
        return rc;
    }
    ct_reader_close(&rd);
    for (size_t i = 0; i < l.c.h.ns; i++)
        series_sort(&l.c.h.s[i]);
    *h = l.c.h;
    return 0;
}

void ct_hproc_free(struct ct_hproc *h)
{
    for (size_t i = 0; i < h->ns; i++) {
        free(h->s[i].t);
        free(h->s[i].v);
    }
    free(h->s);
    memset(h, 0, sizeof(*h));
}

const struct ct_hseries *ct_hproc_find(const struct ct_hproc *h, int dev, const char *name)
{
    for (size_t i = 0; h && i < h->ns; i++)
        if (h->s[i].dev == dev && !strcmp(h->s[i].name, name))
            return &h->s[i];
    return NULL;
}

/* ------------------------------------------------ the cache */

/* Each entry is its own allocation: callers keep the returned pointer while
 * later ranks are loaded, so growing the index must never move an entry. */
struct cached {
    char *path;
    int ok;
    struct ct_hproc h;
};
static struct cached **g_cache;
static size_t g_ncache;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static void cache_free(void)
{
    for (size_t i = 0; i < g_ncache; i++) {
        free(g_cache[i]->path);
        ct_hproc_free(&g_cache[i]->h);
        free(g_cache[i]);
    }
    free(g_cache);
    g_cache = NULL;
    g_ncache = 0;
}

static const struct ct_hproc *health_of_path(const char *path)
{
    if (!path)
        return NULL;
    const struct ct_hproc *out = NULL;
    pthread_mutex_lock(&g_mu);
    for (size_t i = 0; i < g_ncache; i++)
        if (!strcmp(g_cache[i]->path, path)) {
            out = g_cache[i]->ok ? &g_cache[i]->h : NULL;
            pthread_mutex_unlock(&g_mu);
            return out;
        }
    if (!g_ncache)
        atexit(cache_free);
    struct cached **q = realloc(g_cache, (g_ncache + 1) * sizeof(*g_cache));
    if (q)
        g_cache = q;
    struct cached *c = q ? calloc(1, sizeof(*c)) : NULL;
    char *p = c ? strdup(path) : NULL;
    if (!p) {
        free(c);
        pthread_mutex_unlock(&g_mu);
        return NULL;
    }
    c->path = p;
    char err[300];
    c->ok = ct_hproc_load(path, &c->h, err, sizeof(err)) == 0;
    g_cache[g_ncache++] = c;
    out = c->ok ? &c->h : NULL;
    pthread_mutex_unlock(&g_mu);
    return out;
}

void ct_hcollect_publish(struct ct_hcollect *c, const char *path)
{
    for (size_t i = 0; i < c->h.ns; i++)
        series_sort(&c->h.s[i]);
    struct cached *e = path ? calloc(1, sizeof(*e)) : NULL;
    char *p = e ? strdup(path) : NULL;
    pthread_mutex_lock(&g_mu);
    int have = 0;
    for (size_t i = 0; i < g_ncache && !have; i++)
        have = !strcmp(g_cache[i]->path, path);
    struct cached **q = p && !have ? realloc(g_cache, (g_ncache + 1) * sizeof(*g_cache)) : NULL;
    if (q) {
        if (!g_ncache)
            atexit(cache_free);
        g_cache = q;
        e->path = p;
        e->ok = 1;
        e->h = c->h;
        g_cache[g_ncache++] = e;
        memset(c, 0, sizeof(*c)); /* the cache owns the series now */
    }
    pthread_mutex_unlock(&g_mu);
    if (!q) { /* already there, or no memory: the cache reads the file when asked */
        free(p);
        free(e);
        ct_hcollect_free(c);
    }
}

const struct ct_hproc *ct_health_of_path(const char *path)
{
    return health_of_path(path);
}

const struct ct_hproc *ct_health_of(const struct ct_proc *p)
{
    /* Kineto input has no counters (and no cutrace file to read) */
    return p && !p->kin ? health_of_path(p->path) : NULL;
}

/* ------------------------------------------------ summaries */

/* The median spacing of a series' samples (how long the last one holds). */
static int64_t median_gap(const struct ct_hseries *s)
{
    if (s->n < 2)
        return 0;
    size_t m = s->n - 1 < 1024 ? s->n - 1 : 1024;
    double *g = malloc(m * sizeof(double));
    if (!g)
        return s->t[1] - s->t[0];
    for (size_t i = 0; i < m; i++)
        g[i] = (double)(s->t[s->n - m + i] - s->t[s->n - m + i - 1]);
    double med = ct_median(g, m);
    free(g);
    return (int64_t)med;
}

/* Calls fn(value, overlap ns) for each sample's holding interval within
 * [s, e) (aligned times: trace time + shift). Returns the time covered. */
static double walk(const struct ct_hseries *x, int64_t shift, int64_t s, int64_t e,
                   void (*fn)(void *, int64_t, double), void *arg)
{
    if (!x || !x->n)
        return 0;
    int64_t gap = median_gap(x), covered = 0;
    for (size_t i = 0; i < x->n; i++) {
        int64_t a = x->t[i] + shift;
        int64_t b = i + 1 < x->n ? x->t[i + 1] + shift : a + gap;
        if (a < s)
            a = s;
        if (b > e)
            b = e;
        if (b <= a)
            continue;
        fn(arg, x->v[i], (double)(b - a));
        covered += b - a;
    }
    return (double)covered;
}

struct wmean {
    double sum;
};
static void add_mean(void *arg, int64_t v, double w)
{
    ((struct wmean *)arg)->sum += (double)v * w;
}
static double tw_mean(const struct ct_hproc *h, int dev, const char *name, int64_t shift, int64_t s,
                      int64_t e, double scale)
{
    struct wmean m = {0};
    double cov = walk(ct_hproc_find(h, dev, name), shift, s, e, add_mean, &m);
    return cov > 0 ? m.sum / cov * scale : NAN;
}

struct reasons {
    double slow, bit[CT_THROTTLE_NREASONS];
};
static void add_reasons(void *arg, int64_t v, double w)
{
    struct reasons *r = arg;
    if ((uint64_t)v & CT_THROTTLE_SLOWING)
        r->slow += w;
    for (int b = 0; b < CT_THROTTLE_NREASONS; b++)
        if ((uint64_t)v & (1ull << b))
            r->bit[b] += w;
}

void ct_health_summarise(const struct ct_hproc *h, int64_t shift, int64_t s, int64_t e,
                         struct ct_health_sum *o)
{
    memset(o, 0, sizeof(*o));
    o->device = -1;
    for (size_t i = 0; h && i < h->ns; i++)
        if (h->s[i].dev >= 0 && (o->device < 0 || h->s[i].dev < o->device))
            o->device = h->s[i].dev;
    int d = o->device;
    o->sm_clock = tw_mean(h, d, "sm_clock", shift, s, e, 1);
    o->mem_clock = tw_mean(h, d, "mem_clock", shift, s, e, 1);
    o->power_w = tw_mean(h, d, "power", shift, s, e, 1e-3);
    o->power_limit_w = tw_mean(h, d, "power_limit", shift, s, e, 1e-3);
    o->temperature = tw_mean(h, d, "temperature", shift, s, e, 1);
    o->cpu_pressure_pct = tw_mean(h, -1, "cpu_pressure", shift, s, e, 0.01);
    o->run_queue = tw_mean(h, -1, "run_queue", shift, s, e, 0.01);
    const struct ct_hseries *sm = ct_hproc_find(h, d, "sm_clock");
    for (size_t i = 0; sm && i < sm->n; i++)
        o->samples += sm->t[i] + shift >= s && sm->t[i] + shift < e;
    struct reasons r;
    memset(&r, 0, sizeof(r));
    o->covered_ns = walk(ct_hproc_find(h, d, "throttle_reasons"), shift, s, e, add_reasons, &r);
    o->throttled_share = o->covered_ns > 0 ? r.slow / o->covered_ns : NAN;
    for (int b = 0; b < CT_THROTTLE_NREASONS; b++)
        o->reason_share[b] = o->covered_ns > 0 ? r.bit[b] / o->covered_ns : NAN;
}

int64_t ct_health_shift(const struct ct_report *rep, size_t r)
{
    const struct ct_rank *R = rep->rr[r].rank;
    return (R->nprocs ? R->procs[0]->clock_offset : 0) + R->skew_ns;
}

/* ------------------------------------------------ report output */

static void num_or_null(FILE *f, const char *k, double v, int comma)
{
    ct_json_member(f, k, v, 3);
    if (comma)
        fputc(',', f);
}

void ct_health_json(FILE *f, const struct ct_report *rep, size_t r)
{
    const struct ct_rank_result *x = &rep->rr[r];
    const struct ct_hproc *h = x->rank->nprocs ? ct_health_of(x->rank->procs[0]) : NULL;
    if (!h || (!h->ns && !h->status[0])) {
        fprintf(f, "\"health\":null,");
        return;
    }
    struct ct_health_sum s;
    ct_health_summarise(h, ct_health_shift(rep, r), x->ws, x->we, &s);
    fprintf(f, "\"health\":{");
    if (s.device >= 0)
        fprintf(f, "\"device\":%d,", s.device);
    else
        fprintf(f, "\"device\":null,");
    fprintf(f, "\"samples\":%zu,", s.samples);
    num_or_null(f, "covered_us", s.covered_ns / 1e3, 1);
    num_or_null(f, "sm_clock_mhz", s.sm_clock, 1);
    num_or_null(f, "mem_clock_mhz", s.mem_clock, 1);
    num_or_null(f, "power_w", s.power_w, 1);
    num_or_null(f, "power_limit_w", s.power_limit_w, 1);
    num_or_null(f, "temperature_c", s.temperature, 1);
    num_or_null(f, "throttled_pct", 100 * s.throttled_share, 1);
    fprintf(f, "\"throttle_pct\":{");
    for (int b = 0; b < CT_THROTTLE_NREASONS; b++)
        num_or_null(f, reason_names[b], 100 * s.reason_share[b], b + 1 < CT_THROTTLE_NREASONS);
    fprintf(f, "},\"host\":{");
    num_or_null(f, "cpu_pressure_pct", s.cpu_pressure_pct, 1);
    num_or_null(f, "run_queue_per_cpu", s.run_queue, 0);
    fprintf(f, "},\"counters_unavailable\":");
    if (!strncmp(h->status, "unavailable: ", 13))
        ct_json_str(f, h->status + 13);
    else if (s.device < 0)
        ct_json_str(f, h->status[0] ? h->status : "no device counters in the trace");
    else
        fprintf(f, "null");
    fprintf(f, "},");
}

/* A figure in a text column of width given by fmt, or "-" when not finite. */
static void cell(char *buf, size_t n, const char *fmt, double v)
{
    if (isfinite(v))
        snprintf(buf, n, fmt, v);
    else
        snprintf(buf, n, "-");
}

void ct_health_text(FILE *f, const struct ct_report *rep)
{
    int any = 0;
    for (size_t r = 0; r < rep->nr; r++) {
        const struct ct_rank_result *x = &rep->rr[r];
        const struct ct_hproc *h = x->rank->nprocs ? ct_health_of(x->rank->procs[0]) : NULL;
        if (!h || (!h->ns && !h->status[0]))
            continue;
        if (!any)
            fprintf(f, "\nGPU health (time-weighted over each rank's window):\n"
                       "  rank  device  SM MHz  power W  temp C  throttled  reasons\n");
        any = 1;
        struct ct_health_sum s;
        ct_health_summarise(h, ct_health_shift(rep, r), x->ws, x->we, &s);
        if (s.device < 0) {
            fprintf(f, "  %-5d counters unavailable: %s\n", x->rank->rank,
                    !strncmp(h->status, "unavailable: ", 13) ? h->status + 13
                                                             : "no device counters");
            continue;
        }
        char why[256] = "";
        size_t used = 0;
        for (int b = 0; b < CT_THROTTLE_NREASONS && used < sizeof(why) - 40; b++)
            if (s.reason_share[b] > 0.005)
                used +=
                    (size_t)snprintf(why + used, sizeof(why) - used, "%s%s %.0f%%",
                                     used ? ", " : "", reason_names[b], 100 * s.reason_share[b]);
        /* a counter the device did not give is "-", never nan or a 0 */
        char clk[16], pw[16], temp[16], thr[16];
        cell(clk, sizeof(clk), "%7.0f", s.sm_clock);
        cell(pw, sizeof(pw), "%8.1f", s.power_w);
        cell(temp, sizeof(temp), "%7.1f", s.temperature);
        cell(thr, sizeof(thr), "%9.1f%%", 100 * s.throttled_share);
        fprintf(f, "  %-5d %6d %7s %8s %7s %10s  %s\n", x->rank->rank, s.device, clk, pw, temp, thr,
                used ? why : "-");
    }
}

/* ------------------------------------------------ labels for diff --by */

const char *ct_health_label(const char *path, const char *key, char *buf, size_t len)
{
    (void)buf;
    (void)len;
    /* the cached entry is ours: labels are filled in place once */
    struct ct_hproc *h = (struct ct_hproc *)health_of_path(path);
    if (!h || !h->ns)
        return NULL;
    pthread_mutex_lock(&g_mu);
    if (!h->clock_policy[0]) {
        struct ct_health_sum s;
        ct_health_summarise(h, 0, INT64_MIN / 4, INT64_MAX / 4, &s);
        if (s.device >= 0 && isfinite(s.power_limit_w))
            snprintf(h->power_label, sizeof(h->power_label), "%.0fW", s.power_limit_w);
        /* what held the clock most of the time */
        const char *p = "-";
        if (s.device >= 0 && isfinite(s.throttled_share)) {
            p = "default";
            if (s.reason_share[2] >= 0.5)
                p = "power_capped";
            else if (s.reason_share[5] + s.reason_share[6] >= 0.5)
                p = "thermal_limited";
            else if (s.reason_share[3] + s.reason_share[7] >= 0.5)
                p = "hw_slowdown";
            else if (s.reason_share[1] >= 0.5)
                p = "application_clocks";
        }
        snprintf(h->clock_policy, sizeof(h->clock_policy), "%s", p);
    }
    pthread_mutex_unlock(&g_mu);
    const char *v = !strcmp(key, "power_limit")    ? h->power_label
                    : !strcmp(key, "clock_policy") ? h->clock_policy
                                                   : "";
    return *v && strcmp(v, "-") ? v : NULL;
}
