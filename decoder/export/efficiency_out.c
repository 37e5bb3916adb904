/*
 * The report's GPU efficiency section (efficiency_out.h): per rank its
 * GPM figures (decoder/analysis/efficiency.h) as the JSON object and the
 * text table, and the job's kernel families over all ranks. A figure the
 * samples do not give is null or "-" with its reason, never a 0.
 */
#include "decoder/export/efficiency_out.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/analysis.h"
#include "decoder/analysis/efficiency.h"
#include "decoder/util/json.h"

#define MISSING_WHY "not given by the device (NVML answered \"not supported\")"

static void values_json(FILE *f, const double v[CT_EFF_N], int pct_only)
{
    for (int m = 0; m < (pct_only ? CT_EFF_NPCT : CT_EFF_N); m++) {
        ct_json_member(f, ct_eff_json_name(m), v[m], 2);
        if (m + 1 < (pct_only ? CT_EFF_NPCT : CT_EFF_N))
            fputc(',', f);
    }
}

static double share_pct(double part, double whole)
{
    return whole > 0 ? 100 * part / whole : NAN;
}

static void family_json(FILE *f, const struct ct_eff_family *F, int first)
{
    fprintf(f, "%s{\"name\":", first ? "" : ",");
    ct_json_str(f, F->name);
    fputc(',', f);
    ct_json_member(f, "busy_us", (double)F->busy / 1e3, 3);
    fputc(',', f);
    ct_json_member(f, "attributed_us", F->attributed / 1e3, 3);
    fputc(',', f);
    ct_json_member(f, "mixed_pct", share_pct(F->mixed, F->attributed), 2);
    fputc(',', f);
    values_json(f, F->v, 0);
    fprintf(f, ",\"class\":\"%s\"}", ct_eff_class_name(F->cls));
}

void ct_efficiency_json(FILE *f, const struct ct_report *rep, size_t r)
{
    const struct ct_eff *e = rep->rr[r].eff;
    if (!e) {
        fprintf(f, "\"efficiency\":null,");
        return;
    }
    fprintf(f, "\"efficiency\":{\"source\":\"nvml_gpm\",");
    if (e->device >= 0)
        fprintf(f, "\"device\":%d,", e->device);
    else
        fprintf(f, "\"device\":null,");
    fprintf(f, "\"unavailable\":");
    if (e->why)
        ct_json_str(f, e->why);
    else
        fprintf(f, "null");
    fprintf(f, ",\"intervals\":%zu,", e->intervals);
    ct_json_member(f, "period_ms", e->why ? NAN : e->period_ns / 1e6, 3);
    fputc(',', f);
    int64_t win = rep->rr[r].we - rep->rr[r].ws;
    ct_json_member(f, "covered_pct", e->why ? NAN : share_pct(e->covered, (double)win), 2);
    fprintf(f, ",\"window\":{");
    values_json(f, e->window, 0);
    fprintf(f, "},\"busy\":{");
    values_json(f, e->busy, 1);
    fprintf(f, "},\"metrics_unavailable\":{");
    int first = 1;
    for (int m = 0; m < CT_EFF_N && !e->why; m++)
        if (e->metric_missing[m]) {
            fprintf(f, "%s\"%s\":", first ? "" : ",", ct_eff_json_name(m));
            ct_json_str(f, MISSING_WHY);
            first = 0;
        }
    fprintf(f, "},\"families\":[");
    for (size_t k = 0; k < e->nfam; k++)
        family_json(f, &e->fam[k], k == 0);
    fprintf(f, "],\"iterations\":[");
    for (size_t k = 0; k < e->nit; k++) {
        const struct ct_eff_iter *it = &e->it[k];
        fprintf(f, "%s{\"index\":%" PRId64 ",", k ? "," : "", it->index);
        ct_json_member(f, "covered_pct", share_pct(it->covered, (double)(it->e - it->s)), 2);
        fputc(',', f);
        values_json(f, it->v, 0);
        fputc('}', f);
    }
    fprintf(f, "]},");
}

/* ------------------------------------------------ the job's families */

static int fam_ptr_cmp(const void *a, const void *b)
{
    const struct ct_eff_family *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

static int by_attributed(const void *a, const void *b)
{
    const struct ct_eff_family *x = a, *y = b;
    if (x->attributed != y->attributed)
        return x->attributed > y->attributed ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Families of every rank merged by name (by sorting: a job of many ranks
 * and names): times summed, values weighted by attributed time. Returns
 * the count (0 on allocation failure), *out owned by the caller (names
 * borrowed from rep). */
static size_t job_families(const struct ct_report *rep, struct ct_eff_family **out)
{
    size_t total = 0, n = 0;
    for (size_t r = 0; r < rep->nr; r++)
        total += rep->rr[r].eff ? rep->rr[r].eff->nfam : 0;
    const struct ct_eff_family **all = malloc((total ? total : 1) * sizeof(*all));
    struct ct_eff_family *v = calloc(total ? total : 1, sizeof(*v));
    double *w = calloc((total ? total : 1) * CT_EFF_N, sizeof(*w)); /* each value's weight */
    if (!all || !v || !w) {
        free(all);
        free(v);
        free(w);
        return 0;
    }
    size_t k = 0;
    for (size_t r = 0; r < rep->nr; r++)
        for (size_t i = 0; rep->rr[r].eff && i < rep->rr[r].eff->nfam; i++)
            all[k++] = &rep->rr[r].eff->fam[i];
    qsort(all, total, sizeof(*all), fam_ptr_cmp);
    for (size_t i = 0; i < total; i++) {
        const struct ct_eff_family *F = all[i];
        if (!n || strcmp(v[n - 1].name, F->name))
            v[n++].name = F->name;
        struct ct_eff_family *J = &v[n - 1];
        J->busy += F->busy;
        J->attributed += F->attributed;
        J->mixed += F->mixed;
        for (int m = 0; m < CT_EFF_N; m++)
            if (isfinite(F->v[m]) && F->attributed > 0) {
                J->v[m] += F->v[m] * F->attributed;
                w[(n - 1) * CT_EFF_N + m] += F->attributed;
            }
    }
    for (size_t j = 0; j < n; j++) {
        for (int m = 0; m < CT_EFF_N; m++)
            v[j].v[m] = w[j * CT_EFF_N + m] > 0 ? v[j].v[m] / w[j * CT_EFF_N + m] : NAN;
        v[j].cls = ct_eff_family_class(&v[j]);
    }
    qsort(v, n, sizeof(*v), by_attributed);
    free(all);
    free(w);
    *out = v;
    return n;
}

void ct_efficiency_job_json(FILE *f, const struct ct_report *rep)
{
    struct ct_eff_family *v = NULL;
    size_t n = job_families(rep, &v);
    fprintf(f, "\"efficiency\":{\"families\":[");
    for (size_t k = 0; k < n; k++)
        family_json(f, &v[k], k == 0);
    fprintf(f, "]},");
    free(v);
}

/* ------------------------------------------------ text */

static void cell(char *buf, size_t n, double v)
{
    if (isfinite(v))
        snprintf(buf, n, "%.1f", v);
    else
        snprintf(buf, n, "-");
}

static void family_rows(FILE *f, const struct ct_eff_family *v, size_t n, size_t max)
{
    fprintf(f, "    %-40s %9s %7s %6s %6s %6s %6s %6s  %s\n", "kernel family", "busy ms", "seen %",
            "mixed%", "SM %", "occ %", "tensor", "DRAM %", "class");
    for (size_t k = 0; k < n && k < max; k++) {
        const struct ct_eff_family *F = &v[k];
        char seen[16], mixed[16], sm[16], occ[16], tc[16], dram[16];
        cell(seen, sizeof(seen), share_pct(F->attributed, (double)F->busy));
        cell(mixed, sizeof(mixed), share_pct(F->mixed, F->attributed));
        cell(sm, sizeof(sm), F->v[CT_EFF_SM]);
        cell(occ, sizeof(occ), F->v[CT_EFF_OCC]);
        cell(tc, sizeof(tc), F->v[CT_EFF_TENSOR]);
        cell(dram, sizeof(dram), F->v[CT_EFF_DRAM]);
        fprintf(f, "    %-40.40s %9.1f %7s %6s %6s %6s %6s %6s  %s\n", F->name,
                (double)F->busy / 1e6, seen, mixed, sm, occ, tc, dram, ct_eff_class_name(F->cls));
    }
    if (n > max)
        fprintf(f, "    (%zu more families in --json)\n", n - max);
}

void ct_efficiency_text(FILE *f, const struct ct_report *rep)
{
    int any = 0;
    for (size_t r = 0; r < rep->nr; r++)
        any |= rep->rr[r].eff && !rep->rr[r].eff->why;
    if (!any) {
        /* one line, not a section per rank, when no rank has GPM figures */
        const struct ct_eff *e = rep->nr ? rep->rr[0].eff : NULL;
        if (e && e->why && strncmp(e->why, "the trace has no counters", 25) &&
            strncmp(e->why, "GPM was not sampled", 19))
            fprintf(f, "\nGPU efficiency (NVML GPM): unavailable: %s\n", e->why);
        return;
    }
    fprintf(f,
            "\nGPU efficiency (NVML GPM; per kernel family while it runs, docs/efficiency.md):\n");
    for (size_t r = 0; r < rep->nr; r++) {
        const struct ct_eff *e = rep->rr[r].eff;
        int rank = rep->rr[r].rank->rank;
        if (!e || e->why) {
            fprintf(f, "  rank %d: unavailable: %s\n", rank, e ? e->why : "not analysed");
            continue;
        }
        char sm[16], occ[16], tc[16], dram[16];
        cell(sm, sizeof(sm), e->busy[CT_EFF_SM]);
        cell(occ, sizeof(occ), e->busy[CT_EFF_OCC]);
        cell(tc, sizeof(tc), e->busy[CT_EFF_TENSOR]);
        cell(dram, sizeof(dram), e->busy[CT_EFF_DRAM]);
        int64_t win = rep->rr[r].we - rep->rr[r].ws;
        fprintf(f,
                "  rank %d, device %d: %zu intervals of %.0f ms, %.1f%% of its window; while "
                "busy: SM %s%%, occupancy %s%%, tensor %s%%, DRAM %s%%\n",
                rank, e->device, e->intervals, e->period_ns / 1e6,
                share_pct(e->covered, (double)win), sm, occ, tc, dram);
        family_rows(f, e->fam, e->nfam, 8);
    }
    if (rep->nr > 1) {
        struct ct_eff_family *v = NULL;
        size_t n = job_families(rep, &v);
        fprintf(f, "  job (%zu ranks):\n", rep->nr);
        family_rows(f, v, n, 8);
        free(v);
    }
}
