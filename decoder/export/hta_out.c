/*
 * HTA-compatible results of Kineto input in the report (decoder/read/hta.h
 * holds them): the per-rank "hta" JSON object and the text section. Values
 * are µs (HTA's trace units); percentages and ratios are rounded to 2
 * decimals as HTA rounds them (printf's correctly rounded %.2f equals
 * Python's round(x, 2)).
 */
#include "decoder/export/hta_out.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "decoder/analysis/analysis.h"
#include "decoder/read/hta.h"

static const char *const cat_name[3] = {"host_wait", "kernel_wait", "other"};

/* The rank's HTA-compatible figures: its Kineto process's, read in
 * HTA-compatible mode; else NULL. */
static const struct ct_hta *hta_of(const struct ct_rank *r)
{
    return r->nprocs ? r->procs[0]->hta : NULL;
}

/* "key":v with v µs from ns, or null when the figure is given as null
 * (ct_hta_unavailable says why) */
static void us_or_null(FILE *f, const char *key, int64_t ns, int ok, const char *sep)
{
    if (ok)
        fprintf(f, "\"%s\":%.3f%s", key, (double)ns / 1e3, sep);
    else
        fprintf(f, "\"%s\":null%s", key, sep);
}

static void pct2(FILE *f, const char *key, double num, double den, int ok, const char *sep)
{
    if (ok && den > 0)
        fprintf(f, "\"%s\":%.2f%s", key, 100.0 * (num / den), sep);
    else
        fprintf(f, "\"%s\":null%s", key, sep);
}

void ct_hta_json(FILE *f, const struct ct_rank *r)
{
    const struct ct_hta *h = hta_of(r);
    if (!h)
        return;
    /* nothing to measure (HTA raises): every figure null */
    unsigned ok = h->valid ? ~h->bad : 0;
    fprintf(f,
            "\"hta\":{\"gpu_events\":%" PRId64 ",\"rounded_to_us\":%s,\"last_step_dropped\":%s,"
            "\"valid\":%s,\"gpu_rows\":%" PRId64 ",\"dropped_last_step\":%" PRId64
            ",\"dropped_no_launch\":%" PRId64 ",",
            h->gpu_events, h->rounded ? "true" : "false", h->filtered ? "true" : "false",
            h->valid ? "true" : "false", h->gpu_rows, h->drop_last_step, h->drop_no_launch);
    fprintf(f, "\"temporal\":{");
    us_or_null(f, "kernel_time_us", h->kernel_time, ok & CT_HB_KERNEL_TIME, ",");
    us_or_null(f, "idle_us", h->idle, ok & CT_HB_IDLE, ",");
    us_or_null(f, "compute_us", h->compute, ok & CT_HB_COMPUTE, ",");
    us_or_null(f, "non_compute_us", h->non_compute, ok & CT_HB_NON_COMPUTE, ",");
    double kt = (double)h->kernel_time;
    pct2(f, "idle_pct", (double)h->idle, kt, ok & CT_HB_IDLE, ",");
    pct2(f, "compute_pct", (double)h->compute, kt, ok & CT_HB_COMPUTE, ",");
    pct2(f, "non_compute_pct", (double)h->non_compute, kt, ok & CT_HB_NON_COMPUTE, "},");
    us_or_null(f, "union_all_us", h->union_all, ok & CT_HB_UNION_ALL, ",");
    us_or_null(f, "comm_us", h->union_comm, ok & CT_HB_COMM, ",");
    us_or_null(f, "memory_us", h->union_mem, ok & CT_HB_MEMORY, ",");
    us_or_null(f, "comp_comm_overlap_us", h->comp_comm, h->valid, ",");
    pct2(f, "overlap_pct", (double)h->comp_comm, (double)h->union_comm, ok & CT_HB_OVERLAP, ",");
    fprintf(f, "\"idle_breakdown\":[");
    int first = 1;
    for (size_t i = 0; i < h->nstreams; i++) {
        const struct ct_hta_stream *s = &h->streams[i];
        int64_t tot = s->wait[0] + s->wait[1] + s->wait[2];
        for (int c = 0; c < 3; c++) {
            if (!s->present[c])
                continue;
            fprintf(f, "%s{\"stream\":%" PRId64 ",\"category\":\"%s\",", first ? "" : ",",
                    s->stream, cat_name[c]);
            us_or_null(f, "idle_us", s->wait[c], s->wait[c] >= 0, ",");
            /* a share of the stream's idle time: none when a sum is
             * negative (overlapping events) or the stream has none */
            if (tot > 0 && !s->negative)
                fprintf(f, "\"ratio\":%.2f}", (double)s->wait[c] / (double)tot);
            else
                fprintf(f, "\"ratio\":null}");
            first = 0;
        }
    }
    fprintf(f, "]},");
}

/* "%.*f" of v into buf, or "-" when the figure is null */
static const char *fmt_or_dash(char *buf, size_t n, int prec, double v, int ok)
{
    if (ok)
        snprintf(buf, n, "%.*f", prec, v);
    else
        snprintf(buf, n, "-");
    return buf;
}

void ct_hta_text(FILE *f, const struct ct_report *rep)
{
    int any = 0;
    for (size_t i = 0; i < rep->nr; i++) {
        const struct ct_hta *h = hta_of(rep->rr[i].rank);
        if (!h)
            continue;
        if (!any)
            fprintf(f, "\nHTA-compatible (Kineto input; us, %% of kernel time):\n"
                       "  rank   kernel_time      idle%%   compute%%  non-comp%%  overlap%%\n");
        any = 1;
        if (!h->valid) {
            fprintf(f, "  %-5d  no GPU events\n", rep->rr[i].rank->rank);
            continue;
        }
        double kt = (double)h->kernel_time;
        unsigned ok = ~h->bad;
        int okt = (ok & CT_HB_KERNEL_TIME) && kt > 0;
        char a[24], b[24], c[24], d[24], e[24];
        fprintf(
            f, "  %-5d %13s %9s %10s %10s %9s\n", rep->rr[i].rank->rank,
            fmt_or_dash(a, sizeof(a), 0, kt / 1e3, ok & CT_HB_KERNEL_TIME),
            fmt_or_dash(b, sizeof(b), 2, 100.0 * ((double)h->idle / kt), okt && (ok & CT_HB_IDLE)),
            fmt_or_dash(c, sizeof(c), 2, 100.0 * ((double)h->compute / kt),
                        okt && (ok & CT_HB_COMPUTE)),
            fmt_or_dash(d, sizeof(d), 2, 100.0 * ((double)h->non_compute / kt),
                        okt && (ok & CT_HB_NON_COMPUTE)),
            fmt_or_dash(e, sizeof(e), 2, 100.0 * ((double)h->comp_comm / (double)h->union_comm),
                        (ok & CT_HB_OVERLAP) && h->union_comm > 0));
        for (size_t s = 0; s < h->nstreams; s++) {
            const struct ct_hta_stream *st = &h->streams[s];
            fprintf(f,
                    "         stream %-6" PRId64 " idle: host_wait %s  kernel_wait %s  other %s\n",
                    st->stream,
                    fmt_or_dash(a, sizeof(a), 0, (double)st->wait[0] / 1e3, st->wait[0] >= 0),
                    fmt_or_dash(b, sizeof(b), 0, (double)st->wait[1] / 1e3, st->wait[1] >= 0),
                    fmt_or_dash(c, sizeof(c), 0, (double)st->wait[2] / 1e3, st->wait[2] >= 0));
        }
        /* what a "-" stands for: the JSON's unavailable list has it too */
        const char *fig, *why;
        for (size_t u = 0; ct_hta_unavailable(h, u, &fig, &why); u++)
            if (strcmp(fig, "hta.overlap_pct") || h->union_comm)
                fprintf(f, "         %s: %s\n", fig, why);
    }
}
