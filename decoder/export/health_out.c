/*
 * The report's health section (decoder/export/health_out.h): per rank the
 * window's summary of its counters (decoder/analysis/health.h), as the
 * JSON object and the text table. A figure the counters do not give is
 * null or "-", never a 0.
 */
#include "decoder/export/health_out.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "decoder/analysis/analysis.h"
#include "decoder/analysis/health.h"
#include "decoder/util/json.h"

static void num_or_null(FILE *f, const char *k, double v, int comma)
{
    ct_json_member(f, k, v, 3);
    if (comma)
        fputc(',', f);
}

void ct_health_json(FILE *f, const struct ct_report *rep, size_t r)
{
    const struct ct_rank_result *x = &rep->rr[r];
    const struct ct_hproc *h = x->rank->nprocs ? x->rank->procs[0]->health : NULL;
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
        num_or_null(f, ct_throttle_reason_name(b), 100 * s.reason_share[b],
                    b + 1 < CT_THROTTLE_NREASONS);
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
        const struct ct_hproc *h = x->rank->nprocs ? x->rank->procs[0]->health : NULL;
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
                used += (size_t)snprintf(why + used, sizeof(why) - used, "%s%s %.0f%%",
                                         used ? ", " : "", ct_throttle_reason_name(b),
                                         100 * s.reason_share[b]);
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
