/*
 * What reports, exports and diagnoses derive from a trace's health counters
 * (format v2 CT_REC_COUNTER records, docs/health.md; the series are read
 * with the trace, decoder/read/counters.h, and kept on its process):
 * time-weighted means and the share of time under each clock-throttle
 * reason over a window, and the labels of `diff --by`.
 */
#ifndef CT_HEALTH_H
#define CT_HEALTH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "decoder/read/counters.h"

struct ct_report;

/* Throttle reasons (NVML clocks-event reason bits) by name. */
#define CT_THROTTLE_NREASONS 9
const char *ct_throttle_reason_name(int bit);
/* The bits that slow the clock below what the job asked for (power, thermal,
 * hardware slowdown): not idle, application clocks, sync boost, display. */
#define CT_THROTTLE_SLOWING 0xECull

/* A window's summary of one rank's device and host counters. Means are
 * time-weighted: each sample holds until the next one of its series (the
 * last for one median sampling interval); NaN when absent. */
struct ct_health_sum {
    int device;        /* the device summarised (lowest ordinal with counters), -1 none */
    size_t samples;    /* sm_clock samples inside the window */
    double covered_ns; /* time covered by throttle_reasons samples */
    double sm_clock, mem_clock, power_w, power_limit_w, temperature;
    double throttled_share;                    /* any CT_THROTTLE_SLOWING bit, 0..1 */
    double reason_share[CT_THROTTLE_NREASONS]; /* each bit, 0..1 (NaN when no samples) */
    double cpu_pressure_pct;                   /* host: PSI some avg10, NaN absent */
    double run_queue;                          /* host: runnable tasks per CPU, NaN absent */
};

/* Summary of h over [s, e) given in the job's aligned time; shift is added
 * to trace times to get there (clock offset + skew). */
void ct_health_summarise(const struct ct_hproc *h, int64_t shift, int64_t s, int64_t e,
                         struct ct_health_sum *out);

/* The shift of a rank's main process (trace time -> the report's time). */
int64_t ct_health_shift(const struct ct_report *rep, size_t r);

/* For `cutrace diff --by`: the trace's "clock_policy" (what held the SM
 * clock most of the time: default, power_capped, thermal_limited,
 * hw_slowdown, application_clocks) or "power_limit" ("<W>W", the enforced
 * limit) from its counters h; NULL when it has no device counters. The
 * string lives as long as h (it is computed once and kept in h: not
 * thread-safe). */
const char *ct_health_label(const struct ct_hproc *h, const char *key);

#endif
