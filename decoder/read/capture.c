/*
 * Capture windows of a trace recorded paused, in windows or in light mode
 * (extract_int.h): the recorder's "capture" marks into the process's
 * capture set, and light mode's schedule from its metadata. Called by the
 * extraction (extract.c) as it meets the records.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/read/extract_int.h"

int ct_capture_mark(struct ct_proc *p, const char *value, int64_t t)
{
    p->windowed = 1;
    if (!strcmp(value, "start")) {
        if (p->capture_open == CT_OPEN_NONE)
            p->capture_open = t;
        return 0;
    }
    if (strcmp(value, "stop"))
        return 0;
    int64_t s = p->capture_open == CT_OPEN_NONE ? -CT_OPEN_END : p->capture_open;
    p->capture_open = CT_OPEN_NONE;
    return ct_ivset_add(&p->capture, s, t);
}

/* A schedule length in ms; 0 when not a plain decimal that fits. */
static uint32_t ms_value(const char *s)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    return *s >= '0' && *s <= '9' && !*end && v <= UINT32_MAX ? (uint32_t)v : 0;
}

void ct_capture_meta(struct ct_proc *p, const char *key, const char *value)
{
    if (!strcmp(key, "mode")) {
        p->light = !strcmp(value, "light");
        p->windowed |= p->light; /* a light trace may hold no window yet */
    } else if (!strcmp(key, "light_window_ms")) {
        p->light_window_ms = ms_value(value);
    } else if (!strcmp(key, "light_period_ms")) {
        p->light_period_ms = ms_value(value);
    }
}

int ct_capture_finish(struct ct_proc *p, int64_t off)
{
    if (p->capture_open != CT_OPEN_NONE &&
        ct_ivset_add(&p->capture, p->capture_open, CT_OPEN_END - off))
        return -ENOMEM;
    p->capture_open = CT_OPEN_NONE;
    for (size_t i = 0; i < p->capture.n; i++) {
        p->capture.v[i].s += off;
        p->capture.v[i].e += off;
    }
    ct_ivset_normalize(&p->capture);
    return 0;
}
