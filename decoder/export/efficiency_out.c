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
#include "decoder/analysis/platforms.h"
#include "decoder/util/json.h"

#define NO_STREAM_WHY                                                                              \
    "no sample interval where this stream did 90 % of the work (docs/efficiency.md, \"Per "        \
    "stream\")"

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

static void stream_json(FILE *f, const struct ct_eff_stream *S, int first)
{
    fprintf(f, "%s{\"stream\":%u,", first ? "" : ",", S->stream);
    ct_json_member(f, "busy_us", (double)S->busy / 1e3, 3);
    fprintf(f, ",\"intervals\":%zu,", S->intervals);
    ct_json_member(f, "attributed_us", S->attributed / 1e3, 3);
    fputc(',', f);
    ct_json_member(f, "own_pct", share_pct(S->own, S->attributed), 2);
    fputc(',', f);
    values_json(f, S->v, 0);
    fprintf(f, ",\"class\":\"%s\",\"unavailable\":", ct_eff_class_name(S->cls));
    if (S->intervals)
        fputs("null}", f);
    else {
        ct_json_str(f, NO_STREAM_WHY);
        fputc('}', f);
    }
}

static void coll_json(FILE *f, const struct ct_eff *e)
{
    const struct ct_eff_coll *c = &e->coll;
    const struct ct_platform *p = NULL;
    double pct = e->why ? NAN : ct_efficiency_nvlink_pct(e, &p);
    fputs(",\"collectives\":{", f);
    ct_json_member(f, "total_us", e->why ? NAN : (double)c->total / 1e3, 3);
    fputc(',', f);
    ct_json_member(f, "seen_pct", e->why ? NAN : share_pct(c->seen, (double)c->total), 2);
    fprintf(f, ",\"intervals\":%zu", e->why ? 0 : c->intervals);
    const double v[4] = {c->pcie_tx, c->pcie_rx, c->nvlink_tx, c->nvlink_rx};
    const char *k[4] = {"pcie_tx_mib_s", "pcie_rx_mib_s", "nvlink_tx_mib_s", "nvlink_rx_mib_s"};
    for (int i = 0; i < 4; i++) {
        fputc(',', f);
        ct_json_member(f, k[i], e->why ? NAN : v[i], 2);
    }
    fputs(",\"platform\":", f);
    if (p)
        ct_json_str(f, p->label);
    else
        fputs("null", f);
    fputc(',', f);
    ct_json_member(f, "nvlink_peak_gbs", p ? p->nvlink_gbs : NAN, 1);
    fputc(',', f);
    ct_json_member(f, "nvlink_pct_of_peak", pct, 2);
    fputs(",\"unavailable\":", f);
    const char *why = e->why ? e->why : c->why;
    if (why)
        ct_json_str(f, why);
    else
        fputs("null", f);
    fputc('}', f);
}

void ct_efficiency_json(FILE *f, const struct ct_report *rep, size_t r)
{
    const struct ct_eff *e = rep->rr[r].eff;
    if (!e) {
        fprintf(f, "\"efficiency\":null,");
        return;
    }
    /* the source the figures rest on: the finer where there are both */
    fprintf(f, "\"efficiency\":{\"source\":\"%s\",", ct_eff_source_name(e->source));
    if (e->device >= 0)
        fprintf(f, "\"device\":%d,", e->device);
    else
        fprintf(f, "\"device\":null,");
    fputs("\"device_name\":", f);
    if (e->device_name[0])
        ct_json_str(f, e->device_name);
    else
        fputs("null", f);
    fputc(',', f);
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
            ct_json_str(f, ct_eff_missing_why(e->source));
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
    fprintf(f, "],\"stream_dominance_pct\":%.0f,\"streams\":[", 100 * CT_EFF_STREAM_DOMINANT);
    for (size_t k = 0; k < e->nstr; k++)
        stream_json(f, &e->str[k], k == 0);
    fputc(']', f);
    coll_json(f, e);
    fprintf(f, "},");
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
size_t ct_efficiency_job_families(const struct ct_report *rep, struct ct_eff_family **out)
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
    size_t n = ct_efficiency_job_families(rep, &v);
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

/* The rank's busiest streams: their figures over the intervals each did
 * 90 % of the work in, or why none. */
static void stream_rows(FILE *f, const struct ct_eff *e, size_t max)
{
    for (size_t k = 0; k < e->nstr && k < max; k++) {
        const struct ct_eff_stream *S = &e->str[k];
        if (!S->intervals) {
            fprintf(f, "    stream %u: busy %.1f ms, no interval it did 90%% of the work in: -\n",
                    S->stream, (double)S->busy / 1e6);
            continue;
        }
        char sm[16], tc[16], dram[16];
        cell(sm, sizeof(sm), S->v[CT_EFF_SM]);
        cell(tc, sizeof(tc), S->v[CT_EFF_TENSOR]);
        cell(dram, sizeof(dram), S->v[CT_EFF_DRAM]);
        fprintf(f,
                "    stream %u: busy %.1f ms, %zu intervals it did 90%%+ of the work in: SM %s%%, "
                "tensor %s%%, DRAM %s%%, %s\n",
                S->stream, (double)S->busy / 1e6, S->intervals, sm, tc, dram,
                ct_eff_class_name(S->cls));
    }
    if (e->nstr > max)
        fprintf(f, "    (%zu more streams in --json)\n", e->nstr - max);
}

/* The collectives' link traffic, against the platform's NVLink peak. */
static void coll_line(FILE *f, const struct ct_eff *e)
{
    const struct ct_eff_coll *c = &e->coll;
    if (!c->total)
        return;
    if (c->why) {
        fprintf(f, "    collectives (%.1f ms): link traffic -: %s\n", (double)c->total / 1e6,
                c->why);
        return;
    }
    const struct ct_platform *p = NULL;
    double pct = ct_efficiency_nvlink_pct(e, &p);
    char peak[160], pt[16], pr[16];
    cell(pt, sizeof(pt), c->pcie_tx * 1048576.0 / 1e9);
    cell(pr, sizeof(pr), c->pcie_rx * 1048576.0 / 1e9);
    if (p)
        snprintf(peak, sizeof(peak), "%.1f%% of the %s's %.0f GB/s", pct, p->label, p->nvlink_gbs);
    else
        snprintf(peak, sizeof(peak), "peak unknown for \"%.80s\"", e->device_name);
    fprintf(f,
            "    collectives (%.1f ms, %.1f%% in %zu intervals they filled): NVLink tx %.1f + rx "
            "%.1f GB/s (%s), PCIe tx %s + rx %s GB/s\n",
            (double)c->total / 1e6, share_pct(c->seen, (double)c->total), c->intervals,
            c->nvlink_tx * 1048576.0 / 1e9, c->nvlink_rx * 1048576.0 / 1e9, peak, pt, pr);
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
            fprintf(f, "\nGPU efficiency (%s): unavailable: %s\n", ct_eff_source_label(e->source),
                    e->why);
        return;
    }
    /* the source the figures rest on: one named in the title when every
     * rank's is the same, else each rank's line says */
    int srcs = 0;
    for (size_t r = 0; r < rep->nr; r++)
        if (rep->rr[r].eff && !rep->rr[r].eff->why)
            srcs |= 1 << rep->rr[r].eff->source;
    fprintf(f, "\nGPU efficiency (%s; per kernel family while it runs, docs/efficiency.md):\n",
            srcs == 3 ? "NVML GPM and CUPTI PM sampling" : ct_eff_source_label(srcs == 2));
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
                "  rank %d, device %d: %zu intervals of %.3g ms (%s), %.1f%% of its window; "
                "while busy: SM %s%%, occupancy %s%%, tensor %s%%, DRAM %s%%\n",
                rank, e->device, e->intervals, e->period_ns / 1e6, ct_eff_source_label(e->source),
                share_pct(e->covered, (double)win), sm, occ, tc, dram);
        family_rows(f, e->fam, e->nfam, 8);
        stream_rows(f, e, 4);
        coll_line(f, e);
    }
    if (rep->nr > 1) {
        struct ct_eff_family *v = NULL;
        size_t n = ct_efficiency_job_families(rep, &v);
        fprintf(f, "  job (%zu ranks):\n", rep->nr);
        family_rows(f, v, n, 8);
        free(v);
    }
}
