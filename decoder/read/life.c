/*
 * A process's life as its trace states it (struct ct_life, timeline.h):
 * when its image started, which attempt of the job it belongs to, and what
 * ended it. Shared by both extractors (extract.c, timeline.c); times are
 * raw trace times until ct_life_finish moves them onto the job clock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/read/life.h"
#include "src/config.h"

void ct_life_init(struct ct_life *l)
{
    memset(l, 0, sizeof(*l));
    l->start_ns = INT64_MIN;
    l->restart = -1;
    l->signal_ns = INT64_MIN;
    l->hang_ns = INT64_MIN;
}

int ct_life_meta(struct ct_life *l, const char *key, const char *value, int64_t t)
{
    long long v;
    if (!strcmp(key, "job") && !l->job) { /* the first, as the rest of the metadata */
        if (!(l->job = strdup(value)))
            return -ENOMEM;
    } else if (!strcmp(key, "run_id") && !l->run) {
        if (!(l->run = strdup(value)))
            return -ENOMEM;
    } else if (!strcmp(key, "start_mono_ns")) {
        if (ct_parse_int(value, 1, INT64_MAX, &v) == 0)
            l->start_ns = v;
    } else if (!strcmp(key, "restart_count")) {
        if (ct_parse_int(value, 0, INT32_MAX, &v) == 0)
            l->restart = v;
    } else if (!strcmp(key, "signal")) {
        if (ct_parse_int(value, 1, 64, &v) == 0 && l->signal_ns == INT64_MIN) {
            l->signal = (int32_t)v;
            l->signal_ns = t;
        }
    } else if (!strcmp(key, "env.CUTRACE_FLUSH_MS")) {
        if (ct_parse_int(value, 1, 60000, &v) == 0)
            l->flush_ms = (uint32_t)v;
    }
    return 0;
}

void ct_life_free(struct ct_life *l)
{
    free(l->job);
    free(l->run);
    l->job = l->run = NULL;
}

void ct_life_error(struct ct_life *l, const char *what, int64_t t)
{
    /* the shim's hang detection (src/flight.c): "hang: no NCCL op completed ..." */
    if (!strncmp(what, "hang: ", 6) && l->hang_ns == INT64_MIN)
        l->hang_ns = t;
}

void ct_life_finish(struct ct_life *l, int64_t off)
{
    int64_t *t[] = {&l->start_ns, &l->signal_ns, &l->hang_ns};
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (*t[i] != INT64_MIN)
            *t[i] += off;
}
