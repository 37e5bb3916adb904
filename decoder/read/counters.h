/*
 * Health counters as a trace holds them (format v2 CT_REC_COUNTER records
 * and the recorder's "health" status, docs/health.md): each counter's
 * series of samples, gathered while the trace is extracted
 * (decoder/read/extract.c) or read back from a summary, and kept on its
 * process (struct ct_proc.health). What the report derives from them
 * (time-weighted means, throttle shares) is decoder/analysis/health.h; the
 * report's health section is written by decoder/export/health_out.h.
 * Nothing here prints; not thread-safe per object.
 */
#ifndef CT_COUNTERS_H
#define CT_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

/* One counter of one device (-1: the host), samples in time order, times
 * on the trace's own clock (monotonic ns). */
struct ct_hseries {
    int dev;
    char name[40], unit[24];
    size_t n, cap;
    int64_t *t, *v;
};

/* Every counter series of one trace. */
struct ct_hproc {
    struct ct_hseries *s;
    size_t ns;
    char status[256];    /* recorder metadata "health": "nvml", "unavailable: ...", or "" */
    int64_t power_limit; /* unused, -1 */
    /* labels for `diff --by` (decoder/analysis/health.h ct_health_label),
     * computed at the first ask, "" before */
    char clock_policy[64], power_label[32];
};

/* The series (dev, name), or NULL. */
const struct ct_hseries *ct_hproc_find(const struct ct_hproc *h, int dev, const char *name);
/* A copy of h (NULL for NULL), or NULL with *oom set. */
struct ct_hproc *ct_hproc_copy(const struct ct_hproc *h, int *oom);
/* Frees h and what it holds (NULL: nothing). */
void ct_hproc_free(struct ct_hproc *h);

/*
 * Gathering the series during a pass over a trace: feed every META and
 * COUNTER record to ct_hcollect_record (other kinds are ignored), then
 * ct_hcollect_finish sorts each series by time and hands the result over.
 */
struct ct_hcollect {
    struct ct_hproc h;
    size_t cap;
};
struct ct_reader;
struct ct_record;
void ct_hcollect_init(struct ct_hcollect *c);
/* 0 or -ENOMEM. */
int ct_hcollect_record(struct ct_hcollect *c, struct ct_reader *rd, const struct ct_record *r);
/* The series gathered, in one allocation the caller owns (ct_hproc_free),
 * c emptied; NULL on allocation failure (c is then freed). */
struct ct_hproc *ct_hcollect_finish(struct ct_hcollect *c);
void ct_hcollect_free(struct ct_hcollect *c);

#endif
