/*
 * HTA-compatible results of Kineto input in the report: the per-rank "hta"
 * JSON object and the text section. Values are µs (HTA's trace units);
 * percentages and ratios are rounded to 2 decimals as HTA rounds them
 * (printf's correctly rounded %.2f equals Python's round(x, 2)).
 */
#include <inttypes.h>
#include <stdio.h>

#include "decoder/analysis/analysis.h"
#include "decoder/kineto/kineto_int.h"

static const char *const cat_name[3] = {"host_wait", "kernel_wait", "other"};

static const struct ct_kineto *kin_of(const struct ct_rank *r)
{
    if (!r->nprocs || !r->procs[0]->kin || !r->procs[0]->kin->hta_mode)
        return NULL;
    return r->procs[0]->kin;
}

static void pct2(FILE *f, const char *key, double num, double den, const char *sep)
{
    if (den > 0)
        fprintf(f, "\"%s\":%.2f%s", key, 100.0 * (num / den), sep);
    else
        fprintf(f, "\"%s\":null%s", key, sep);
}

void ct_kineto_hta_json(FILE *f, const struct ct_rank *r)
{
    const struct ct_kineto *k = kin_of(r);
    if (!k)
        return;
    const struct ct_hta *h = &k->hta;
    fprintf(f,
            "\"hta\":{\"gpu_events\":%" PRId64 ",\"rounded_to_us\":%s,\"last_step_dropped\":%s,"
            "\"valid\":%s,",
            h->gpu_events, h->rounded ? "true" : "false", h->filtered ? "true" : "false",
            h->valid ? "true" : "false");
    fprintf(f,
            "\"temporal\":{\"kernel_time_us\":%.3f,\"idle_us\":%.3f,\"compute_us\":%.3f,"
            "\"non_compute_us\":%.3f,",
            (double)h->kernel_time / 1e3, (double)h->idle / 1e3, (double)h->compute / 1e3,
            (double)h->non_compute / 1e3);
    double kt = (double)h->kernel_time;
    pct2(f, "idle_pct", (double)h->idle, kt, ",");
    pct2(f, "compute_pct", (double)h->compute, kt, ",");
    pct2(f, "non_compute_pct", (double)h->non_compute, kt, "},");
    fprintf(f,
            "\"union_all_us\":%.3f,\"comm_us\":%.3f,\"memory_us\":%.3f,"
            "\"comp_comm_overlap_us\":%.3f,",
            (double)h->union_all / 1e3, (double)h->union_comm / 1e3, (double)h->union_mem / 1e3,
            (double)h->comp_comm / 1e3);
    pct2(f, "overlap_pct", (double)h->comp_comm, (double)h->union_comm, ",");
    fprintf(f, "\"idle_breakdown\":[");
    int first = 1;
    for (size_t i = 0; i < h->nstreams; i++) {
        const struct ct_hta_stream *s = &h->streams[i];
        int64_t tot = s->wait[0] + s->wait[1] + s->wait[2];
        for (int c = 0; c < 3; c++) {
            if (!s->present[c])
                continue;
            fprintf(f, "%s{\"stream\":%" PRId64 ",\"category\":\"%s\",\"idle_us\":%.3f,",
                    first ? "" : ",", s->stream, cat_name[c], (double)s->wait[c] / 1e3);
            if (tot != 0)
                fprintf(f, "\"ratio\":%.2f}", (double)s->wait[c] / (double)tot);
            else
                fprintf(f, "\"ratio\":null}");
            first = 0;
        }
    }
    fprintf(f, "]},");
}

void ct_kineto_hta_text(FILE *f, const struct ct_report *rep)
{
    int any = 0;
    for (size_t i = 0; i < rep->nr; i++) {
        const struct ct_kineto *k = kin_of(rep->rr[i].rank);
        if (!k)
            continue;
        const struct ct_hta *h = &k->hta;
        if (!any)
            fprintf(f, "\nHTA-compatible (Kineto input; us, %% of kernel time):\n"
                       "  rank   kernel_time      idle%%   compute%%  non-comp%%  overlap%%\n");
        any = 1;
        if (!h->valid) {
            fprintf(f, "  %-5d  no GPU events\n", rep->rr[i].rank->rank);
            continue;
        }
        double kt = (double)h->kernel_time;
        char ov[16];
        if (h->union_comm > 0)
            snprintf(ov, sizeof(ov), "%.2f",
                     100.0 * ((double)h->comp_comm / (double)h->union_comm));
        else
            snprintf(ov, sizeof(ov), "-");
        fprintf(f, "  %-5d %13.0f %9.2f %10.2f %10.2f %9s\n", rep->rr[i].rank->rank, kt / 1e3,
                kt > 0 ? 100.0 * ((double)h->idle / kt) : 0.0,
                kt > 0 ? 100.0 * ((double)h->compute / kt) : 0.0,
                kt > 0 ? 100.0 * ((double)h->non_compute / kt) : 0.0, ov);
        for (size_t s = 0; s < h->nstreams; s++) {
            const struct ct_hta_stream *st = &h->streams[s];
            fprintf(f,
                    "         stream %-6" PRId64 " idle: host_wait %.0f  kernel_wait %.0f  "
                    "other %.0f\n",
                    st->stream, (double)st->wait[0] / 1e3, (double)st->wait[1] / 1e3,
                    (double)st->wait[2] / 1e3);
        }
    }
}
