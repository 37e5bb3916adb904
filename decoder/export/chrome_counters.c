/*
 * Counter tracks of the Chrome trace-event export (decoder/export/chrome.c):
 * per rank "NCCL algbw (GB/s)" and per stream "queue depth GPU d stream s"
 * from the deltas the writer gathered, and the health counters (format v2,
 * docs/health.md) one C event per sample.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/export/chrome_int.h"
#include "decoder/analysis/health.h"

static int cmp_delta(const void *a, const void *b)
{
    const struct cdelta *x = a, *y = b;
    if (x->series != y->series)
        return x->series < y->series ? -1 : 1;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

void ct_chrome_counters(struct ct_chrome_writer *w)
{
    if (w->ncd)
        qsort(w->cd, w->ncd, sizeof(*w->cd), cmp_delta);
    char name[96];
    for (size_t i = 0; i < w->ncd;) {
        uint32_t s = w->cd[i].series;
        int64_t depth = 0, running = 0;
        double bw = 0;
        for (; i < w->ncd && w->cd[i].series == s;) {
            int64_t ts = w->cd[i].ts;
            for (; i < w->ncd && w->cd[i].series == s && w->cd[i].ts == ts; i++) {
                depth += w->cd[i].dq;
                bw += w->cd[i].bw;
                running += w->cd[i].bw > 0 ? 1 : w->cd[i].bw < 0 ? -1 : 0;
            }
            if (s == UINT32_MAX) {
                if (running <= 0)
                    bw = 0; /* no drift when nothing runs */
                ct_chrome_ev(w, "C", 0, ts, "NCCL algbw (GB/s)");
                fprintf(w->f, ",\"args\":{\"GB/s\":%.3f}}", bw);
            } else {
                snprintf(name, sizeof(name), "queue depth GPU %" PRId64 " stream %" PRIu64,
                         w->tracks[s].dev, w->tracks[s].stream);
                ct_chrome_ev(w, "C", 0, ts, name);
                fprintf(w->f, ",\"args\":{\"ops\":%" PRId64 "}}", depth);
            }
        }
    }
}

/* Health counters as Perfetto counter tracks: counter name -> event name
 * (after "GPU d " for a device), the series key, the scale from the
 * recorded unit, and whether the series is a cumulative count shown as a
 * rate (each rate is written at the start of the interval it covers, so it
 * holds over that interval as Perfetto draws counters). */
static const struct hcounter {
    const char *counter, *label, *key;
    double scale;
    int decimals, rate, host;
} hcounters[] = {
    {"sm_clock", "SM clock", "MHz", 1, 0, 0, 0},
    {"mem_clock", "memory clock", "MHz", 1, 0, 0, 0},
    {"power", "power", "W", 1e-3, 3, 0, 0},
    {"power_limit", "power limit", "W", 1e-3, 3, 0, 0},
    {"temperature", "temperature", "C", 1, 0, 0, 0},
    {"gpu_util", "utilisation", "%", 1, 0, 0, 0},
    {"mem_util", "memory utilisation", "%", 1, 0, 0, 0},
    {"mem_used", "memory used", "MiB", 1.0 / 1048576, 1, 0, 0},
    {"pcie_tx", "PCIe tx", "KB/s", 1, 0, 0, 0},
    {"pcie_rx", "PCIe rx", "KB/s", 1, 0, 0, 0},
    {"cpu_time", "CPU use", "%", 1e8, 1, 1, 1},           /* ms per ns -> % of one CPU */
    {"cpu_pressure", "CPU pressure", "%", 0.01, 2, 0, 1}, /* PSI some avg10 */
    {"run_queue", "run queue", "tasks/CPU", 0.01, 2, 0, 1},
    {"major_faults", "major faults", "faults/s", 1e9, 1, 1, 1},
    /* GPM (docs/efficiency.md): stamped at the start of the interval each
     * value is the mean of, so it holds over that interval */
    {"gpm_sm_util", "SM active", "%", 0.01, 2, 0, 0},
    {"gpm_sm_occupancy", "SM occupancy", "%", 0.01, 2, 0, 0},
    {"gpm_tensor_util", "tensor active", "%", 0.01, 2, 0, 0},
    {"gpm_dram_bw_util", "DRAM bandwidth", "%", 0.01, 2, 0, 0},
    {"gpm_fp64_util", "FP64 active", "%", 0.01, 2, 0, 0},
    {"gpm_fp32_util", "FP32 active", "%", 0.01, 2, 0, 0},
    {"gpm_fp16_util", "FP16 active", "%", 0.01, 2, 0, 0},
    {"gpm_pcie_tx", "PCIe tx (GPM)", "MiB/s", 1.0 / 1024, 1, 0, 0},
    {"gpm_pcie_rx", "PCIe rx (GPM)", "MiB/s", 1.0 / 1024, 1, 0, 0},
    {"gpm_nvlink_tx", "NVLink tx", "MiB/s", 1.0 / 1024, 1, 0, 0},
    {"gpm_nvlink_rx", "NVLink rx", "MiB/s", 1.0 / 1024, 1, 0, 0},
};

static void counter_name(struct ct_chrome_writer *w, const struct ct_hseries *x, const char *label,
                         char *buf, size_t n)
{
    int k = x->dev >= 0 ? snprintf(buf, n, "GPU %d %s", x->dev, label)
                        : snprintf(buf, n, "host %s", label);
    if (w->later_proc && k > 0 && (size_t)k < n)
        snprintf(buf + k, n - (size_t)k, " (pid %" PRIu32 ")", w->src->pid);
}

/* "GPU d throttled": {"slowing": any CT_THROTTLE_SLOWING bit, then each
 * reason bit that the series ever shows}, 0 or 1. */
static void throttle_track(struct ct_chrome_writer *w, const struct ct_hseries *x)
{
    uint64_t seen = 0;
    for (size_t i = 0; i < x->n; i++)
        seen |= (uint64_t)x->v[i];
    char name[96];
    counter_name(w, x, "throttled", name, sizeof(name));
    for (size_t i = 0; i < x->n; i++) {
        uint64_t v = (uint64_t)x->v[i];
        if (!ct_chrome_in(w, x->t[i], x->t[i]))
            continue; /* --window */
        ct_chrome_ev(w, "C", 0, x->t[i], name);
        fprintf(w->f, ",\"args\":{\"slowing\":%d", (v & CT_THROTTLE_SLOWING) != 0);
        for (int b = 0; b < CT_THROTTLE_NREASONS; b++)
            if (seen >> b & 1)
                fprintf(w->f, ",\"%s\":%d", ct_throttle_reason_name(b), (int)(v >> b & 1));
        fputs("}}", w->f);
    }
}

void ct_chrome_health_counters(struct ct_chrome_writer *w)
{
    const struct ct_hproc *h = w->src->health;
    char name[96];
    for (size_t k = 0; h && k < h->ns; k++) {
        const struct ct_hseries *x = &h->s[k];
        if (x->dev >= 0 && !strcmp(x->name, "throttle_reasons")) {
            throttle_track(w, x);
            continue;
        }
        const struct hcounter *c = NULL;
        for (size_t j = 0; j < sizeof(hcounters) / sizeof(hcounters[0]) && !c; j++)
            if (!strcmp(hcounters[j].counter, x->name) && hcounters[j].host == (x->dev < 0))
                c = &hcounters[j];
        if (!c)
            continue; /* ECC, NVLink, replay counts: in `cutrace dump`, not drawn */
        counter_name(w, x, c->label, name, sizeof(name));
        for (size_t i = c->rate ? 1 : 0; i < x->n; i++) {
            double v = (double)x->v[i] * c->scale;
            int64_t t = x->t[i];
            if (c->rate) {
                int64_t dt = x->t[i] - x->t[i - 1];
                if (dt <= 0)
                    continue;
                v = (double)(x->v[i] - x->v[i - 1]) * c->scale / (double)dt;
                t = x->t[i - 1];
            }
            if (!ct_chrome_in(w, t, t))
                continue; /* --window */
            ct_chrome_ev(w, "C", 0, t, name);
            fprintf(w->f, ",\"args\":{\"%s\":%.*f}}", c->key, c->decimals, v);
        }
    }
}
