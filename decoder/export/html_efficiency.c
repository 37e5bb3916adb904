/*
 * The HTML report's GPU efficiency (docs/efficiency.md, docs/export.md):
 * per drawn rank its GPM activity lines for the timeline, and the job's
 * kernel-family table, as data for the page's script
 * (decoder/export/html_efficiency.js, drawn inside html_page.html's).
 *
 *   rank: "eff":{"dev":D,"why":null|"...","missing":{"sm":null|"...",
 *          "tensor":..,"dram":..,"nvlink":..},
 *          "iv":[s,e,sm,tensor,dram,nvlink,...]}|null
 *     six numbers per sample interval (ns since time zero; % of the
 *     device; NVLink tx + rx in GB/s), null where the device gave none;
 *     at most CT_HTML_EFF_PTS intervals (runs of k merged: their
 *     time-weighted mean, so a line's area is kept);
 *   page: "eff_fam":{"why":null|"...","rows":[[name,busy_ns,attributed_ns,
 *          mixed_pct,sm,tensor,dram,class],...]} (at most 50, by
 *          attributed time), null values where a figure is absent.
 * Absent figures are null here, never 0: the page shows them as absent
 * with their reason.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/analysis.h"
#include "decoder/analysis/efficiency.h"
#include "decoder/analysis/health.h"
#include "decoder/export/efficiency_out.h"
#include "decoder/export/html_int.h"
#include "decoder/read/counters.h"
#include "decoder/read/job.h"
#include "decoder/util/json.h"

#define CT_HTML_EFF_PTS 2000 /* about a point per pixel of a full-width timeline */
#define CT_HTML_EFF_FAM 50

/* A number, or null when absent. */
static void num(FILE *f, double v, int decimals)
{
    if (isfinite(v))
        fprintf(f, "%.*f", decimals, v);
    else
        fputs("null", f);
}

enum { A_SM, A_TC, A_DRAM, A_NVL, A_N };
static const char *const act_key[A_N] = {"sm", "tensor", "dram", "nvlink"};

/* Series of the four lines (NVLink: tx and rx, summed). */
struct act_src {
    const struct ct_hseries *s[A_N + 1];
    size_t at[A_N + 1];
};

/* The value of series q at the interval stamped t (NaN: none), walking
 * *at forward (series and intervals share their stamps, in order). */
static double at_stamp(const struct ct_hseries *q, size_t *at, int64_t t)
{
    while (q && *at < q->n && q->t[*at] < t)
        (*at)++;
    return q && *at < q->n && q->t[*at] == t ? (double)q->v[*at] : NAN;
}

static void act_json(FILE *f, const struct ct_report *rep, size_t r)
{
    const struct ct_rank_result *x = &rep->rr[r];
    const struct ct_eff *e = x->eff;
    const struct ct_hproc *h = x->rank->nprocs ? x->rank->procs[0]->health : NULL;
    fputs(",\"eff\":", f);
    if (!e) {
        fputs("null", f);
        return;
    }
    fprintf(f, "{\"dev\":%d,\"why\":", e->device);
    if (e->why || !h) {
        ct_html_str(f, e->why ? e->why : "no counters");
        fputs(",\"missing\":{},\"iv\":[]}", f);
        return;
    }
    fputs("null,\"missing\":{", f);
    const int m_of[A_N] = {CT_EFF_SM, CT_EFF_TENSOR, CT_EFF_DRAM, CT_EFF_NVLINK_TX};
    for (int a = 0; a < A_N; a++) {
        int miss =
            e->metric_missing[m_of[a]] || (a == A_NVL && e->metric_missing[CT_EFF_NVLINK_RX]);
        fprintf(f, "%s\"%s\":", a ? "," : "", act_key[a]);
        if (miss)
            ct_html_str(f, ct_eff_missing_why(e->source));
        else
            fputs("null", f);
    }
    fputs("},\"iv\":[", f);
    const struct ct_hseries *iv = ct_hproc_find(h, e->device, ct_eff_interval_series(e->source));
    struct act_src src = {{ct_hproc_find(h, e->device, "gpm_sm_util"),
                           ct_hproc_find(h, e->device, "gpm_tensor_util"),
                           ct_hproc_find(h, e->device, "gpm_dram_bw_util"),
                           ct_hproc_find(h, e->device, "gpm_nvlink_tx"),
                           ct_hproc_find(h, e->device, "gpm_nvlink_rx")},
                          {0}};
    int64_t shift = ct_health_shift(rep, r), t0 = rep->job->t0;
    size_t n = 0;
    for (size_t i = 0; iv && i < iv->n; i++) /* the intervals over the window */
        n += iv->v[i] > 0 && iv->t[i] + shift < x->we && iv->t[i] + shift + iv->v[i] > x->ws;
    size_t k = n > CT_HTML_EFF_PTS ? (n + CT_HTML_EFF_PTS - 1) / CT_HTML_EFF_PTS : 1, in = 0,
           out = 0;
    double sum[A_N] = {0}, w[A_N] = {0};
    int64_t s0 = 0, e0 = 0;
    for (size_t i = 0; iv && i < iv->n; i++) {
        int64_t s = iv->t[i] + shift, len = iv->v[i];
        double v[A_N];
        v[A_SM] = at_stamp(src.s[0], &src.at[0], iv->t[i]) / 100;
        v[A_TC] = at_stamp(src.s[1], &src.at[1], iv->t[i]) / 100;
        v[A_DRAM] = at_stamp(src.s[2], &src.at[2], iv->t[i]) / 100;
        /* KiB/s recorded: tx + rx in GB/s */
        v[A_NVL] =
            (at_stamp(src.s[3], &src.at[3], iv->t[i]) + at_stamp(src.s[4], &src.at[4], iv->t[i])) *
            1024.0 / 1e9;
        if (len <= 0 || s >= x->we || s + len <= x->ws)
            continue;
        if (!in)
            s0 = s;
        e0 = s + len;
        for (int a = 0; a < A_N; a++)
            if (isfinite(v[a])) {
                sum[a] += v[a] * (double)len;
                w[a] += (double)len;
            }
        if (++in < k && i + 1 < iv->n)
            continue;
        fprintf(f, "%s%" PRId64 ",%" PRId64, out++ ? "," : "", s0 - t0, e0 - t0);
        for (int a = 0; a < A_N; a++) {
            fputc(',', f);
            num(f, w[a] > 0 ? sum[a] / w[a] : NAN, a == A_NVL ? 3 : 2);
            sum[a] = w[a] = 0;
        }
        in = 0;
    }
    if (in) { /* the last run, cut short by the window */
        fprintf(f, "%s%" PRId64 ",%" PRId64, out ? "," : "", s0 - t0, e0 - t0);
        for (int a = 0; a < A_N; a++) {
            fputc(',', f);
            num(f, w[a] > 0 ? sum[a] / w[a] : NAN, a == A_NVL ? 3 : 2);
        }
    }
    fputs("]}", f);
}

void ct_html_eff_rank_json(FILE *f, const struct ct_report *rep, size_t r)
{
    act_json(f, rep, r);
}

void ct_html_eff_json(FILE *f, const struct ct_report *rep)
{
    const char *why = NULL;
    int any = 0;
    for (size_t r = 0; r < rep->nr; r++) {
        const struct ct_eff *e = rep->rr[r].eff;
        any |= e && !e->why;
        if (e && e->why && !why)
            why = e->why;
    }
    fputs("\"eff_fam\":{\"why\":", f);
    if (any)
        fputs("null", f);
    else
        ct_html_str(f, why ? why : "no rank was analysed");
    fputs(",\"rows\":[", f);
    struct ct_eff_family *v = NULL;
    size_t n = any ? ct_efficiency_job_families(rep, &v) : 0;
    for (size_t k = 0; k < n && k < CT_HTML_EFF_FAM; k++) {
        const struct ct_eff_family *F = &v[k];
        fputs(k ? ",[" : "[", f);
        ct_html_str(f, F->name);
        fprintf(f, ",%" PRId64 ",%.0f,", F->busy, F->attributed);
        num(f, F->attributed > 0 ? 100 * F->mixed / F->attributed : NAN, 2);
        fputc(',', f);
        num(f, F->v[CT_EFF_SM], 2);
        fputc(',', f);
        num(f, F->v[CT_EFF_TENSOR], 2);
        fputc(',', f);
        num(f, F->v[CT_EFF_DRAM], 2);
        fprintf(f, ",\"%s\"]", ct_eff_class_name(F->cls));
    }
    fprintf(f, "],\"total\":%zu}", n);
    free(v);
}

/* The page's efficiency script (decoder/export/html_efficiency.js, one
 * string per line), written where html_page.html has "@EFFJS@". */
static const char *const script[] = {
#include "decoder/html_efficiency.inc" /* generated from export/html_efficiency.js */
};

void ct_html_eff_script(FILE *f)
{
    for (size_t i = 0; i < sizeof(script) / sizeof(script[0]); i++)
        fputs(script[i], f);
}
