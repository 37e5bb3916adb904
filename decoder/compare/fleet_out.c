/*
 * `fleet explain`'s outputs (fleet_pin.c's result): text, JSON (schema
 * cutrace.fleet.explain), JSON-lines rows for dashboards, and a
 * self-contained HTML page (no script: a factor table and a step-time plot
 * per workload, drawn as SVG). Layouts in docs/fleet.md. Never prints
 * anywhere but the FILE it is given.
 */
#include "decoder/compare/fleet_pin.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "decoder/util/json.h"

static const char *change_name(int c)
{
    switch (c) {
    case 2: return "slower";
    case 1: return "slower, possibly below min effect";
    case -1: return "faster, possibly below min effect";
    case -2: return "faster";
    }
    return "no evidence";
}

static const char *part_title(int k)
{
    static const char *const n[CT_FX_NPARTS] = {
        "the mean step", "compute",    "exposed communication", "waiting for a late rank",
        "data stalls",   "checkpoint", "other GPU idle"};
    return k >= 0 && k < CT_FX_NPARTS ? n[k] : "?";
}

static void when(char *b, size_t n, int64_t us)
{
    time_t s = (time_t)(us / 1000000);
    struct tm tm;
    if (us == INT64_MIN || !gmtime_r(&s, &tm))
        snprintf(b, n, "-");
    else
        strftime(b, n, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

static void factor_label(FILE *f, const struct ct_fx_finding *x)
{
    fprintf(f, "%s=%s", x->factor, x->value);
    if (x->baseline)
        fprintf(f, " (vs %s)", x->baseline);
    else
        fprintf(f, " (vs jobs without it)");
}

static void aliases_text(FILE *f, const struct ct_fx_finding *x)
{
    int same = 0, never = 0;
    for (size_t a = 0; a < x->nalias; a++) {
        if (x->aliases[a][0] != '=')
            continue;
        fprintf(f, "%s%s", same++ ? ", " : "; confounded, always seen with ", x->aliases[a] + 1);
    }
    for (size_t a = 0; a < x->nalias; a++) {
        if (x->aliases[a][0] != '!')
            continue;
        fprintf(f, "%s%s", never++ ? ", " : "; confounded, never seen with ", x->aliases[a] + 1);
    }
}

/* The main collective's bus bandwidth is named when it changed: its
 * interval holds no change and the change is 1 % or more. */
static int busbw_changed(const struct ct_fx_finding *x)
{
    return x->coll && x->busbw_ok && (x->busbw_lo > 0 || x->busbw_hi < 0) &&
           fabs(x->busbw_pct) >= 1;
}

static void carrier_text(FILE *f, const struct ct_fx_finding *x)
{
    if (x->carrier >= 0) {
        const struct ct_fx_part *p = &x->part[x->carrier];
        fprintf(f,
                "; carried by %s: %+.1f µs [%+.1f, %+.1f] per step, %.0f %% of the step's "
                "change",
                part_title(x->carrier), p->beta, p->lo, p->hi, 100 * p->share);
    }
    if (busbw_changed(x))
        fprintf(f, "; %s busbw %+.1f %% [%+.1f, %+.1f]", x->coll, x->busbw_pct, x->busbw_lo,
                x->busbw_hi);
}

void ct_fleet_explain_text(FILE *f, const struct ct_fleet_explain *x)
{
    size_t jobs = 0;
    for (size_t w = 0; w < x->nw; w++)
        jobs += x->w[w].n;
    fprintf(f,
            "fleet explain: %zu jobs with a step time in %zu workloads; %zu candidate factor "
            "values tried; alpha %.3g over all of them; intervals at %.3f %% (corrected for the "
            "%zu tried)\n",
            jobs, x->nw, x->m, x->o.alpha, 100 * x->level, x->m);
    for (int pass = 0; pass < 2; pass++) {
        int any = 0;
        for (size_t i = 0; i < x->nf;) {
            size_t k = i;
            while (k < x->nf && !strcmp(x->f[k].factor, x->f[i].factor) &&
                   !strcmp(x->f[k].value, x->f[i].value))
                k++;
            /* pass 0: pinned beyond the minimum effect; 1: the rest */
            int pinned = 0;
            for (size_t q = i; q < k; q++)
                pinned |= abs(x->f[q].change) == 2;
            if (pinned != !pass) {
                i = k;
                continue;
            }
            if (!any++)
                fprintf(f,
                        pass ? "\nsignificant, possibly below the minimum effect (%.3g %%):\n"
                             : "\npinned (beyond the minimum effect of %.3g %%):\n",
                        100 * x->o.min_effect);
            double lo = INFINITY, hi = -INFINITY;
            for (size_t q = i; q < k; q++) {
                lo = x->f[q].effect_pct < lo ? x->f[q].effect_pct : lo;
                hi = x->f[q].effect_pct > hi ? x->f[q].effect_pct : hi;
            }
            fprintf(f, "  ");
            factor_label(f, &x->f[i]);
            if (k - i == 1)
                fprintf(f, ": step %+.1f %% [%+.1f, %+.1f] on 1 workload\n", x->f[i].effect_pct,
                        x->f[i].lo_pct, x->f[i].hi_pct);
            else
                fprintf(f, ": step %+.1f %% to %+.1f %% on %zu workloads\n", lo, hi, k - i);
            for (size_t q = i; q < k; q++) {
                const struct ct_fx_finding *g = &x->f[q];
                fprintf(f,
                        "    %s (%zu jobs with, %zu without): %s, %+.1f %% [%+.1f, %+.1f], "
                        "q %.2g",
                        x->w[g->w].name, g->n_with, g->n_without, change_name(g->change),
                        g->effect_pct, g->lo_pct, g->hi_pct, g->q);
                carrier_text(f, g);
                aliases_text(f, g);
                fputc('\n', f);
            }
            i = k;
        }
        if (!any && !pass)
            fprintf(f, "\npinned: nothing (no factor's effect on a workload's step passes the "
                       "test)\n");
    }
    if (x->nc) {
        fprintf(f, "\nchange points (step time over run starts; %zu workloads tested):\n",
                x->cp_tested);
        for (size_t i = 0; i < x->nc; i++) {
            const struct ct_fx_change *c = &x->c[i];
            char t[64];
            when(t, sizeof(t), c->at_us);
            fprintf(f, "  %s: from %s (job %zu of %zu): step %+.1f %% [%+.1f, %+.1f]",
                    x->w[c->w].name, t, c->at + 1, x->w[c->w].n, c->effect_pct, c->lo_pct,
                    c->hi_pct);
            if (c->nchanged) {
                fprintf(f, "; changed there: ");
                for (size_t k = 0; k < c->nchanged; k++)
                    fprintf(f, "%s%s", k ? ", " : "", c->changed[k]);
            } else {
                fprintf(f, "; no recorded factor changed there");
            }
            fputc('\n', f);
        }
    } else if (x->cp_tested) {
        fprintf(f, "\nchange points: none (%zu workloads tested)\n", x->cp_tested);
    }
    fprintf(f, "\nworkloads:\n");
    for (size_t w = 0; w < x->nw; w++) {
        const struct ct_fx_workload *W = &x->w[w];
        fprintf(f, "  %-24s %5zu jobs, median step %.1f µs", W->name, W->n, W->median_step);
        if (W->skipped)
            fprintf(f, ": not modelled (%s: needs %zu)\n", W->skipped, x->o.min_jobs);
        else
            fprintf(f, ", %zu candidates, %zu in the model, residual scale %.2f %%\n", W->ncand,
                    W->nselected, 100 * W->sigma);
    }
}

static void num(FILE *f, const char *k, double v, int d)
{
    fputc(',', f);
    ct_json_member(f, k, v, d);
}

static void finding_json(FILE *f, const struct ct_fleet_explain *x, const struct ct_fx_finding *g)
{
    fprintf(f, "{\"workload\":");
    ct_json_str(f, x->w[g->w].name);
    fprintf(f, ",\"jobs_with\":%zu,\"jobs_without\":%zu", g->n_with, g->n_without);
    num(f, "effect_pct", g->effect_pct, 4);
    num(f, "ci_low_pct", g->lo_pct, 4);
    num(f, "ci_high_pct", g->hi_pct, 4);
    fprintf(f, ",\"p\":");
    ct_json_num_g(f, g->p);
    fprintf(f, ",\"q\":");
    ct_json_num_g(f, g->q);
    num(f, "df", g->df, 1);
    fprintf(f, ",\"change\":\"%s\",\"confounded_with\":[", change_name(g->change));
    int first = 1;
    for (size_t a = 0; a < g->nalias; a++)
        if (g->aliases[a][0] == '=') {
            fprintf(f, "%s", first ? "" : ",");
            ct_json_str(f, g->aliases[a] + 1);
            first = 0;
        }
    fprintf(f, "],\"never_with\":[");
    first = 1;
    for (size_t a = 0; a < g->nalias; a++)
        if (g->aliases[a][0] == '!') {
            fprintf(f, "%s", first ? "" : ",");
            ct_json_str(f, g->aliases[a] + 1);
            first = 0;
        }
    fprintf(f, "],\"carrier\":");
    if (g->carrier >= 0)
        ct_json_str(f, ct_fx_part_name(g->carrier));
    else
        fputs("null", f);
    fprintf(f, ",\"parts\":{");
    first = 1;
    for (int k = 0; k < CT_FX_NPARTS; k++) {
        const struct ct_fx_part *p = &g->part[k];
        fprintf(f, "%s\"%s\":", first ? "" : ",", ct_fx_part_name(k));
        first = 0;
        if (!p->ok) {
            fputs("null", f);
            continue;
        }
        fputc('{', f);
        ct_json_member(f, "effect_us", p->beta, 3);
        num(f, "ci_low_us", p->lo, 3);
        num(f, "ci_high_us", p->hi, 3);
        num(f, "share_pct", 100 * p->share, 2);
        fputc('}', f);
    }
    fprintf(f, "},\"collective\":");
    if (g->coll && g->busbw_ok) {
        fprintf(f, "{\"name\":");
        ct_json_str(f, g->coll);
        num(f, "busbw_pct", g->busbw_pct, 4);
        num(f, "ci_low_pct", g->busbw_lo, 4);
        num(f, "ci_high_pct", g->busbw_hi, 4);
        fputc('}', f);
    } else {
        fputs("null", f);
    }
    fputc('}', f);
}

void ct_fleet_explain_json(FILE *f, const struct ct_fleet_explain *x)
{
    fprintf(f, "{\"schema\":\"cutrace.fleet.explain\",\"version\":1,\"cutrace_version\":\"%s\"",
            CT_VERSION);
    num(f, "alpha", x->o.alpha, 4);
    num(f, "min_effect_pct", 100 * x->o.min_effect, 4);
    fprintf(f, ",\"candidates\":%zu", x->m);
    num(f, "interval_level_pct", 100 * x->level, 4);
    fprintf(f, ",\"seed\":%llu,\"workloads\":[", (unsigned long long)x->o.seed);
    for (size_t w = 0; w < x->nw; w++) {
        const struct ct_fx_workload *W = &x->w[w];
        fprintf(f, "%s{\"workload\":", w ? "," : "");
        ct_json_str(f, W->name);
        fprintf(f, ",\"jobs\":%zu", W->n);
        num(f, "median_step_us", W->median_step, 3);
        fprintf(f, ",\"candidates\":%zu,\"in_model\":%zu", W->ncand, W->nselected);
        num(f, "residual_scale_pct", W->skipped ? NAN : 100 * W->sigma, 4);
        fprintf(f, ",\"skipped\":");
        if (W->skipped)
            ct_json_str(f, W->skipped);
        else
            fputs("null", f);
        fputc('}', f);
    }
    fprintf(f, "],\"factors\":[");
    for (size_t i = 0, n = 0; i < x->nf; n++) {
        size_t k = i;
        while (k < x->nf && !strcmp(x->f[k].factor, x->f[i].factor) &&
               !strcmp(x->f[k].value, x->f[i].value))
            k++;
        fprintf(f, "%s{\"factor\":", n ? "," : "");
        ct_json_str(f, x->f[i].factor);
        fprintf(f, ",\"value\":");
        ct_json_str(f, x->f[i].value);
        fprintf(f, ",\"baseline\":");
        if (x->f[i].baseline)
            ct_json_str(f, x->f[i].baseline);
        else
            fputs("null", f);
        fprintf(f, ",\"workloads\":[");
        for (size_t q = i; q < k; q++) {
            if (q > i)
                fputc(',', f);
            finding_json(f, x, &x->f[q]);
        }
        fprintf(f, "]}");
        i = k;
    }
    fprintf(f, "],\"change_points_tested\":%zu,\"change_points\":[", x->cp_tested);
    for (size_t i = 0; i < x->nc; i++) {
        const struct ct_fx_change *c = &x->c[i];
        char t[64];
        when(t, sizeof(t), c->at_us);
        fprintf(f, "%s{\"workload\":", i ? "," : "");
        ct_json_str(f, x->w[c->w].name);
        fprintf(f, ",\"job_index\":%zu,\"at_utc\":", c->at);
        ct_json_str(f, t);
        num(f, "effect_pct", c->effect_pct, 4);
        num(f, "ci_low_pct", c->lo_pct, 4);
        num(f, "ci_high_pct", c->hi_pct, 4);
        fprintf(f, ",\"changed\":[");
        for (size_t k = 0; k < c->nchanged; k++) {
            if (k)
                fputc(',', f);
            ct_json_str(f, c->changed[k]);
        }
        fprintf(f, "]}");
    }
    fprintf(f, "]}\n");
}

void ct_fleet_explain_rows(FILE *f, const struct ct_fleet_explain *x)
{
    for (size_t i = 0; i < x->nf; i++) {
        const struct ct_fx_finding *g = &x->f[i];
        fprintf(f, "{\"schema\":\"cutrace.fleet.rows\",\"version\":1,\"row\":\"factor\","
                   "\"factor\":");
        ct_json_str(f, g->factor);
        fprintf(f, ",\"value\":");
        ct_json_str(f, g->value);
        fprintf(f, ",\"baseline\":");
        if (g->baseline)
            ct_json_str(f, g->baseline);
        else
            fputs("null", f);
        fprintf(f, ",\"workload\":");
        ct_json_str(f, x->w[g->w].name);
        fprintf(f, ",\"jobs_with\":%zu,\"jobs_without\":%zu", g->n_with, g->n_without);
        num(f, "effect_pct", g->effect_pct, 4);
        num(f, "ci_low_pct", g->lo_pct, 4);
        num(f, "ci_high_pct", g->hi_pct, 4);
        fprintf(f, ",\"q\":");
        ct_json_num_g(f, g->q);
        fprintf(f, ",\"change\":\"%s\",\"carrier\":", change_name(g->change));
        if (g->carrier >= 0)
            ct_json_str(f, ct_fx_part_name(g->carrier));
        else
            fputs("null", f);
        num(f, "carrier_share_pct", g->carrier >= 0 ? 100 * g->part[g->carrier].share : NAN, 2);
        fprintf(f, ",\"collective\":");
        if (g->coll && g->busbw_ok)
            ct_json_str(f, g->coll);
        else
            fputs("null", f);
        num(f, "busbw_pct", g->coll && g->busbw_ok ? g->busbw_pct : NAN, 4);
        fputs("}\n", f);
    }
    for (size_t i = 0; i < x->nc; i++) {
        const struct ct_fx_change *c = &x->c[i];
        char t[64];
        when(t, sizeof(t), c->at_us);
        fprintf(f, "{\"schema\":\"cutrace.fleet.rows\",\"version\":1,\"row\":\"change_point\","
                   "\"workload\":");
        ct_json_str(f, x->w[c->w].name);
        fprintf(f, ",\"at_utc\":");
        ct_json_str(f, t);
        num(f, "effect_pct", c->effect_pct, 4);
        fputs("}\n", f);
    }
    for (size_t w = 0; w < x->nw; w++)
        for (size_t i = 0; i < x->w[w].n; i++) {
            const struct ct_fleet_job *j = &x->js->j[x->w[w].jobs[i]];
            fprintf(f, "{\"schema\":\"cutrace.fleet.rows\",\"version\":1,\"row\":\"step\","
                       "\"workload\":");
            ct_json_str(f, x->w[w].name);
            fprintf(f, ",\"run_id\":");
            ct_json_str(f, j->run_id);
            fprintf(f, ",\"run_start_utc\":");
            if (j->start_utc)
                ct_json_str(f, j->start_utc);
            else
                fputs("null", f);
            num(f, "step_p50_us", j->step_p50, 3);
            fputs("}\n", f);
        }
}

/* ------------------------------------------------------------ HTML */

static void esc(FILE *f, const char *s)
{
    for (; s && *s; s++)
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
}

/* The workload's step time over its jobs in run-start order: one dot a
 * job (darker when it ran with a value pinned on this workload), a line at
 * each change point. */
static void plot(FILE *f, const struct ct_fleet_explain *x, size_t w)
{
    const struct ct_fx_workload *W = &x->w[w];
    const struct ct_fleet_jobs *js = x->js;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < W->n; i++) {
        double v = js->j[W->jobs[i]].step_p50;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    if (!(hi > lo)) {
        hi = lo + 1;
        lo -= 1;
    }
    double pad = (hi - lo) * 0.08;
    lo -= pad;
    hi += pad;
    const int Wd = 760, H = 220, L = 70, B = 30;
    fprintf(f,
            "<svg width=\"%d\" height=\"%d\" role=\"img\"><rect x=\"%d\" y=\"0\" width=\"%d\" "
            "height=\"%d\" fill=\"#fafafa\" stroke=\"#ccc\"/>",
            Wd, H, L, Wd - L - 10, H - B);
    for (int t = 0; t <= 4; t++) {
        double v = lo + (hi - lo) * t / 4;
        double y = (H - B) * (1 - (double)t / 4);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%.1f</text>",
                L - 4, y + 3, v);
    }
    fprintf(f,
            "<text x=\"%d\" y=\"%d\" font-size=\"11\">jobs in run-start order (%zu) "
            "&#8594;; step p50, &#181;s</text>",
            L, H - 8, W->n);
    for (size_t i = 0; i < x->nc; i++)
        if (x->c[i].w == w) {
            double cx = L + (Wd - L - 10) * ((double)x->c[i].at - 0.5) / (double)W->n;
            fprintf(f,
                    "<line x1=\"%.1f\" y1=\"0\" x2=\"%.1f\" y2=\"%d\" stroke=\"#d33\" "
                    "stroke-dasharray=\"4 3\"/>",
                    cx, cx, H - B);
        }
    for (size_t i = 0; i < W->n; i++) {
        const struct ct_fleet_job *j = &js->j[W->jobs[i]];
        int mark = 0;
        for (size_t k = 0; k < x->nf && !mark; k++) {
            if (x->f[k].w != w)
                continue;
            const char *vals[64];
            size_t nv = ct_fleet_values(j, x->f[k].factor, vals, 64);
            for (size_t v = 0; v < nv; v++)
                mark |= !strcmp(vals[v], x->f[k].value);
        }
        double cx = L + (Wd - L - 10) * ((double)i + 0.5) / (double)W->n;
        double cy = (H - B) * (1 - (j->step_p50 - lo) / (hi - lo));
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>", cx, cy,
                mark ? "#b03030" : "#4a78b0");
        esc(f, j->run_id);
        fprintf(f, " %.1f &#181;s</title></circle>", j->step_p50);
    }
    fprintf(f, "</svg>\n");
}

void ct_fleet_explain_html(FILE *f, const struct ct_fleet_explain *x,
                           const struct ct_fleet_jobs *js)
{
    (void)js;
    fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>cutrace fleet "
               "explain</title><style>body{font-family:sans-serif;margin:2em}"
               "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;"
               "text-align:right}td.l,th.l{text-align:left}</style></head><body>\n");
    fprintf(f,
            "<h1>Fleet: factors pinned per workload</h1><p>%zu candidate factor values "
            "tried; alpha %.3g over all of them; intervals at %.3f %%.</p>\n",
            x->m, x->o.alpha, 100 * x->level);
    for (size_t w = 0; w < x->nw; w++) {
        const struct ct_fx_workload *W = &x->w[w];
        fprintf(f, "<h2>");
        esc(f, W->name);
        fprintf(f, "</h2><p>%zu jobs, median step %.1f &#181;s", W->n, W->median_step);
        if (W->skipped) {
            fprintf(f, ": not modelled (");
            esc(f, W->skipped);
            fprintf(f, ")");
        }
        fprintf(f, ".</p>\n<table><tr><th class=\"l\">factor</th><th class=\"l\">vs</th>"
                   "<th>jobs with</th><th>step effect %%</th><th>interval %%</th><th>q</th>"
                   "<th class=\"l\">verdict</th><th class=\"l\">carried by</th>"
                   "<th class=\"l\">confounded with</th></tr>\n");
        int rows = 0;
        for (size_t k = 0; k < x->nf; k++) {
            const struct ct_fx_finding *g = &x->f[k];
            if (g->w != w)
                continue;
            rows++;
            fprintf(f, "<tr><td class=\"l\">");
            esc(f, g->factor);
            fputc('=', f);
            esc(f, g->value);
            fprintf(f, "</td><td class=\"l\">");
            esc(f, g->baseline ? g->baseline : "without it");
            fprintf(f,
                    "</td><td>%zu</td><td>%+.2f</td><td>[%+.2f, %+.2f]</td><td>%.2g</td>"
                    "<td class=\"l\">%s</td><td class=\"l\">",
                    g->n_with, g->effect_pct, g->lo_pct, g->hi_pct, g->q, change_name(g->change));
            if (g->carrier >= 0)
                fprintf(f, "%s (%.0f %%)", part_title(g->carrier), 100 * g->part[g->carrier].share);
            if (busbw_changed(g)) {
                fprintf(f, "; ");
                esc(f, g->coll);
                fprintf(f, " busbw %+.1f %%", g->busbw_pct);
            }
            fprintf(f, "</td><td class=\"l\">");
            for (size_t a = 0; a < g->nalias; a++) {
                fprintf(f, "%s%s", a ? ", " : "", g->aliases[a][0] == '!' ? "never with " : "");
                esc(f, g->aliases[a] + 1);
            }
            fprintf(f, "</td></tr>\n");
        }
        if (!rows)
            fprintf(f, "<tr><td class=\"l\" colspan=\"9\">no factor pinned</td></tr>\n");
        fprintf(f, "</table>\n");
        plot(f, x, w);
        for (size_t i = 0; i < x->nc; i++) {
            const struct ct_fx_change *c = &x->c[i];
            if (c->w != w)
                continue;
            char t[64];
            when(t, sizeof(t), c->at_us);
            fprintf(f, "<p>Change point from %s: step %+.1f %% [%+.1f, %+.1f]", t, c->effect_pct,
                    c->lo_pct, c->hi_pct);
            for (size_t k = 0; k < c->nchanged; k++) {
                fprintf(f, "%s", k ? ", " : "; changed there: ");
                esc(f, c->changed[k]);
            }
            fprintf(f, "</p>\n");
        }
    }
    fprintf(f, "</body></html>\n");
}
