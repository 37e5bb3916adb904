/*
 * What the report derives from a trace's health counters (health.h): the
 * series themselves are read with the trace (decoder/read/counters.h), the
 * report's health section is written by decoder/export/health_out.c.
 * Never prints.
 */
#include "decoder/analysis/health.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/analysis.h"
#include "decoder/util/stats.h"
#include "decoder/read/timeline.h"

static const char *const reason_names[CT_THROTTLE_NREASONS] = {
    "gpu_idle",   "applications_clocks", "sw_power_cap",   "hw_slowdown",    "sync_boost",
    "sw_thermal", "hw_thermal",          "hw_power_brake", "display_clocks",
};

const char *ct_throttle_reason_name(int bit)
{
    return bit >= 0 && bit < CT_THROTTLE_NREASONS ? reason_names[bit] : "?";
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

/* ------------------------------------------------ labels for diff --by */

const char *ct_health_label(const struct ct_hproc *hc, const char *key)
{
    /* the labels are filled in h once, at the first ask (one thread) */
    struct ct_hproc *h = (struct ct_hproc *)hc;
    if (!h || !h->ns)
        return NULL;
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
    const char *v = !strcmp(key, "power_limit")    ? h->power_label
                    : !strcmp(key, "clock_policy") ? h->clock_policy
                                                   : "";
    return *v && strcmp(v, "-") ? v : NULL;
}
