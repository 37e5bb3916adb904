/*
 * Health counters on the report side (format v2 CT_REC_COUNTER records,
 * docs/health.md): each trace's counter series, read in a pass of their own
 * (the timeline extractors never see them), and what reports, exports and
 * diagnoses derive from them: time-weighted means and the share of time
 * under each clock-throttle reason over a window.
 */
#ifndef CT_HEALTH_H
#define CT_HEALTH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct ct_proc;
struct ct_report;

/* One counter of one device (-1: the host), samples in time order, times
 * on the trace's own clock (monotonic ns). */
struct ct_hseries {
    int dev;
    char name[40], unit[24];
    size_t n, cap;
    int64_t *t, *v;
};

struct ct_hproc {
    struct ct_hseries *s;
    size_t ns;
    char status[256];    /* recorder metadata "health": "nvml", "unavailable: ...", or "" */
    int64_t power_limit; /* unused, -1 */
    /* labels for `diff --by` (ct_health_label), computed once, "" before */
    char clock_policy[64], power_label[32];
};

/* Reads the counter series of a trace file. 0, or a negative errno with err
 * naming the file. A trace without counters gives ns == 0. */
int ct_hproc_load(const char *path, struct ct_hproc *h, char *err, size_t errlen);
void ct_hproc_free(struct ct_hproc *h);

/* The same series gathered during another pass over the file (the timeline
 * extraction, decoder/read/extract.c), so the file is not read twice: feed every
 * record to ct_hcollect_record, then ct_hcollect_publish hands the result to
 * ct_health_of_path's cache (or ct_hcollect_free drops it). */
struct ct_hcollect {
    struct ct_hproc h;
    size_t cap;
};
struct ct_reader;
struct ct_record;
void ct_hcollect_init(struct ct_hcollect *c);
int ct_hcollect_record(struct ct_hcollect *c, struct ct_reader *rd, const struct ct_record *r);
void ct_hcollect_publish(struct ct_hcollect *c, const char *path);
void ct_hcollect_free(struct ct_hcollect *c);
/* The series (dev, name), or NULL. */
const struct ct_hseries *ct_hproc_find(const struct ct_hproc *h, int dev, const char *name);

/* The counters of p's trace, read once and kept until exit (thread-safe).
 * NULL when p has no path or the file cannot be read. */
const struct ct_hproc *ct_health_of(const struct ct_proc *p);
/* The same for a trace file by path (the exports, which walk files). */
const struct ct_hproc *ct_health_of_path(const char *path);

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

/* `cutrace report`: per rank `"health":{...},` or `"health":null,` (JSON),
 * and a "GPU health" text section when any rank has counters. */
void ct_health_json(FILE *f, const struct ct_report *rep, size_t r);
void ct_health_text(FILE *f, const struct ct_report *rep);

/* For `cutrace diff --by`: the trace's "clock_policy" (what held the SM
 * clock most of the time: default, power_capped, thermal_limited,
 * hw_slowdown, application_clocks) or "power_limit" ("<W>W", the enforced
 * limit); NULL when the trace has no device counters. The string lives
 * until exit (buf is not used: callers compare values of many traces). */
const char *ct_health_label(const char *path, const char *key, char *buf, size_t len);

#endif
