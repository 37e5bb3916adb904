/* CUTRACE_* parsing. Every variable: its range, its default, one message. */
#include "src/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ct_config_defaults(struct ct_config *c)
{
    memset(c, 0, sizeof(*c));
    strcpy(c->output, ".");
    c->buffer_kb = 1024;
    c->zstd_level = 3;
    c->flush_ms = CT_FLUSH_MS_DEFAULT;
    c->clock = CT_CLOCK_PREF_AUTO;
    c->gpu_timing = 1;
    c->stacks = 1;
    c->io_stack_ns = 1000000;
    c->flight_mb = 256;
    c->light_window_ms = 3000;
    c->light_period_ms = 60000;
    c->health_ms = 100;
    c->gpm_ms = CT_GPM_MS_DEFAULT;
    c->host_trace_kb = 1024;
}

/* A word from a fixed list: index, or -EINVAL with the message written. */
static int get_word(const char *(*getenv_fn)(const char *), const char *name,
                    const char *const *words, int dflt, char *err, size_t errlen)
{
    const char *v = getenv_fn(name);
    if (!v)
        return dflt;
    for (int i = 0; words[i]; i++)
        if (!strcmp(v, words[i]))
            return i;
    int n = snprintf(err, errlen, "%s=%s: expected ", name, v);
    for (int i = 0; words[i] && n > 0 && (size_t)n < errlen; i++)
        n += snprintf(err + n, errlen - (size_t)n, "%s%s", i ? (words[i + 1] ? ", " : " or ") : "",
                      words[i]);
    return -EINVAL;
}

int ct_tags_check(const char *tags, char *err, size_t errlen)
{
    const char *p = tags;
    int n = 0;
    while (*p) {
        const char *k = p;
        while (*p && *p != '=' && *p != ',' &&
               ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                *p == '_' || *p == '-' || *p == '.'))
            p++;
        size_t klen = (size_t)(p - k);
        if (*p != '=' || klen == 0 || klen > 64) {
            snprintf(err, errlen,
                     "tag '%.80s': expected KEY=VALUE with a KEY of 1 to 64 letters, digits, '_', "
                     "'-' or '.'",
                     k);
            return -EINVAL;
        }
        const char *v = ++p;
        while (*p && *p != ',') {
            if ((unsigned char)*p < 0x20) {
                snprintf(err, errlen, "tag '%.*s': control character in its value", (int)klen, k);
                return -EINVAL;
            }
            p++;
        }
        if (p - v > 256) {
            snprintf(err, errlen, "tag '%.*s': value longer than 256 bytes", (int)klen, k);
            return -EINVAL;
        }
        if (++n > CT_MAX_TAGS) {
            snprintf(err, errlen, "more than %d tags", CT_MAX_TAGS);
            return -EINVAL;
        }
        if (*p == ',')
            p++;
    }
    return 0;
}

int ct_run_id_check(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n >= CT_RUN_ID_MAX || id[0] == '-' || id[0] == '.')
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return -EINVAL;
    }
    return 0;
}

/* The shim's (above and shim/), the decoder's (CUTRACE_SPILL,
 * CUTRACE_CP_MAX_MIB, CUTRACE_SHIM) and the launcher-facing ones
 * (CUTRACE_JOB, CUTRACE_RESTART_COUNT, CUTRACE_RUN_ID). */
static const char *const known_vars[] = {"CUTRACE_BUFFER_KB",
                                         "CUTRACE_BUFFERS",
                                         "CUTRACE_CLOCK",
                                         "CUTRACE_CP_MAX_MIB",
                                         "CUTRACE_CUPTI_LIB",
                                         "CUTRACE_DURATION",
                                         "CUTRACE_FLIGHT",
                                         "CUTRACE_FLIGHT_MB",
                                         "CUTRACE_GPU_ANCESTOR",
                                         "CUTRACE_FLUSH_MS",
                                         "CUTRACE_GPM_MS",
                                         "CUTRACE_GPU_TIMING",
                                         "CUTRACE_HANG_S",
                                         "CUTRACE_HEALTH_MS",
                                         "CUTRACE_HOST_TRACE_KB",
                                         "CUTRACE_HUGEPAGES",
                                         "CUTRACE_INTERNAL_TUNABLES",
                                         "CUTRACE_IO_MIN_NS",
                                         "CUTRACE_IO_STACK_NS",
                                         "CUTRACE_JOB",
                                         "CUTRACE_LIGHT_PERIOD_MS",
                                         "CUTRACE_LIGHT_WINDOW_MS",
                                         "CUTRACE_MAX_MB",
                                         "CUTRACE_MAX_POLICY",
                                         "CUTRACE_MODE",
                                         "CUTRACE_NCCL_STEPS",
                                         "CUTRACE_NVML_LIB",
                                         "CUTRACE_OUTPUT",
                                         "CUTRACE_PM_SAMPLING_US",
                                         "CUTRACE_REDACT",
                                         "CUTRACE_RESTART_COUNT",
                                         "CUTRACE_RUN_ID",
                                         "CUTRACE_SHIM",
                                         "CUTRACE_SPILL",
                                         "CUTRACE_STACKS",
                                         "CUTRACE_START",
                                         "CUTRACE_TAGS",
                                         "CUTRACE_TEST_CLOCK_OFFSET_NS",
                                         "CUTRACE_TEST_NPROF_POOL",
                                         "CUTRACE_TEST_SHM_DIR",
                                         "CUTRACE_ZSTD_LEVEL",
                                         NULL};

/* Edit distance of a and b, or 3 when it is more than 2 (all that is asked). */
static int near_edits(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > m + 2 || m > n + 2 || m >= 64)
        return 3;
    int prev[64], cur[64];
    for (size_t j = 0; j <= m; j++)
        prev[j] = (int)j;
    for (size_t i = 1; i <= n; i++) {
        cur[0] = (int)i;
        int best = cur[0];
        for (size_t j = 1; j <= m; j++) {
            int d = prev[j - 1] + (a[i - 1] != b[j - 1]);
            if (prev[j] + 1 < d)
                d = prev[j] + 1;
            if (cur[j - 1] + 1 < d)
                d = cur[j - 1] + 1;
            cur[j] = d;
            if (d < best)
                best = d;
        }
        if (best > 2)
            return 3;
        memcpy(prev, cur, (m + 1) * sizeof(int));
    }
    return prev[m] > 2 ? 3 : prev[m];
}

int ct_config_known(const char *name, const char **near)
{
    if (near)
        *near = NULL;
    for (int i = 0; known_vars[i]; i++)
        if (!strcmp(name, known_vars[i]))
            return 1;
    for (int i = 0; near && known_vars[i]; i++)
        if (near_edits(name, known_vars[i]) <= 2) {
            *near = known_vars[i];
            break;
        }
    return 0;
}

int ct_parse_int(const char *s, long long lo, long long hi, long long *out)
{
    if (!s || !*s)
        return -EINVAL;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -EINVAL;
    *out = v;
    return 0;
}

struct int_var {
    const char *name;
    long long lo, hi;
};

static int get_int(const char *(*getenv_fn)(const char *), const struct int_var *v, long long *out,
                   char *err, size_t errlen)
{
    const char *s = getenv_fn(v->name);
    if (!s)
        return 1; /* unset: keep the default */
    if (ct_parse_int(s, v->lo, v->hi, out) == 0)
        return 0;
    snprintf(err, errlen, "%s=%s: expected an integer from %lld to %lld", v->name, s, v->lo, v->hi);
    return -EINVAL;
}

int ct_config_from_env(struct ct_config *c, const char *(*getenv_fn)(const char *), char *err,
                       size_t errlen)
{
    static const struct int_var buffer = {"CUTRACE_BUFFER_KB", 64, 1048576};
    static const struct int_var level = {"CUTRACE_ZSTD_LEVEL", -7, 19};
    static const struct int_var flush = {"CUTRACE_FLUSH_MS", 1, 60000};
    long long v;
    int rc;
    const char *out = getenv_fn("CUTRACE_OUTPUT");
    if (out) {
        if (!*out || strlen(out) >= sizeof(c->output) - 256) {
            snprintf(err, errlen, "CUTRACE_OUTPUT=%s: expected a directory path of 1 to %zu bytes",
                     out, sizeof(c->output) - 256);
            return -EINVAL;
        }
        strcpy(c->output, out);
    }
    if ((rc = get_int(getenv_fn, &buffer, &v, err, errlen)) < 0)
        return rc;
    if (rc == 0)
        c->buffer_kb = (size_t)v;
    if ((rc = get_int(getenv_fn, &level, &v, err, errlen)) < 0)
        return rc;
    if (rc == 0)
        c->zstd_level = (int)v;
    if ((rc = get_int(getenv_fn, &flush, &v, err, errlen)) < 0)
        return rc;
    if (rc == 0)
        c->flush_ms = (unsigned)v;
    const char *clk = getenv_fn("CUTRACE_CLOCK");
    if (clk) {
        if (!strcmp(clk, "auto"))
            c->clock = CT_CLOCK_PREF_AUTO;
        else if (!strcmp(clk, "tsc"))
            c->clock = CT_CLOCK_PREF_TSC;
        else if (!strcmp(clk, "monotonic"))
            c->clock = CT_CLOCK_PREF_MONOTONIC;
        else {
            snprintf(err, errlen, "CUTRACE_CLOCK=%s: expected auto, tsc or monotonic", clk);
            return -EINVAL;
        }
    }
    static const struct int_var io_min = {"CUTRACE_IO_MIN_NS", 0, 3600000000000ll};
    static const struct int_var duration = {"CUTRACE_DURATION", 0, 31536000};
    if ((rc = get_int(getenv_fn, &io_min, &v, err, errlen)) < 0)
        return rc;
    if (rc == 0)
        c->io_min_ns = (uint64_t)v;
    static const struct int_var host_kb = {"CUTRACE_HOST_TRACE_KB", 0, 16777216};
    if ((rc = get_int(getenv_fn, &host_kb, &v, err, errlen)) < 0)
        return rc;
    if (rc == 0)
        c->host_trace_kb = (unsigned)v;
    static const struct int_var io_stack = {"CUTRACE_IO_STACK_NS", 0, 3600000000000ll};
    if ((rc = get_int(getenv_fn, &io_stack, &v, err, errlen)) < 0)
        return rc;
    if (rc == 0)
        c->io_stack_ns = (uint64_t)v;
    /* test-only: pretends this host's realtime clock is off by that much */
    static const struct int_var offset = {"CUTRACE_TEST_CLOCK_OFFSET_NS", -1000000000000ll,
                                          1000000000000ll};
    if ((rc = get_int(getenv_fn, &offset, &v, err, errlen)) < 0)
        return rc;
    if (rc == 0)
        c->test_clock_offset_ns = v;
    if ((rc = get_int(getenv_fn, &duration, &v, err, errlen)) < 0)
        return rc;
    if (rc == 0)
        c->duration_s = (unsigned)v;
    const char *run = getenv_fn("CUTRACE_RUN_ID");
    if (run && ct_run_id_check(run) != 0) {
        snprintf(err, errlen,
                 "CUTRACE_RUN_ID=%.100s: expected 1 to %d letters, digits, '_', '-' or '.', not "
                 "starting with '-' or '.'",
                 run, CT_RUN_ID_MAX - 1);
        return -EINVAL;
    }
    const char *tags = getenv_fn("CUTRACE_TAGS");
    if (tags) {
        char why[256];
        if (ct_tags_check(tags, why, sizeof(why)) != 0) {
            snprintf(err, errlen, "CUTRACE_TAGS=%.200s: %s", tags, why);
            return -EINVAL;
        }
    }
    static const struct int_var max_mb = {"CUTRACE_MAX_MB", 0, 1048576};
    if ((rc = get_int(getenv_fn, &max_mb, &v, err, errlen)) < 0)
        return rc;
    if (rc == 0)
        c->max_mb = (unsigned)v;
    static const struct int_var flight = {"CUTRACE_FLIGHT", 0, 86400};
    static const struct int_var flight_mb = {"CUTRACE_FLIGHT_MB", 1, 1048576};
    static const struct int_var hang = {"CUTRACE_HANG_S", 0, 86400};
    if ((rc = get_int(getenv_fn, &flight, &v, err, errlen)) < 0)
        return rc;
    if (rc == 0)
        c->flight_s = (unsigned)v;
    if ((rc = get_int(getenv_fn, &flight_mb, &v, err, errlen)) < 0)
        return rc;
    if (rc == 0)
        c->flight_mb = (unsigned)v;
    if ((rc = get_int(getenv_fn, &hang, &v, err, errlen)) < 0)
        return rc;
    if (rc == 0)
        c->hang_s = (unsigned)v;
    static const char *const buffers[] = {"shm", "dir", "private", NULL};
    if ((rc = get_word(getenv_fn, "CUTRACE_BUFFERS", buffers, c->buffers, err, errlen)) < 0)
        return rc;
    c->buffers = rc;
    static const char *const modes[] = {"full", "light", NULL};
    if ((rc = get_word(getenv_fn, "CUTRACE_MODE", modes, c->light, err, errlen)) < 0)
        return rc;
    c->light = rc;
    /* Light mode samples whole windows, not kernels (src/config.h); the old
     * per-kernel variables are refused rather than ignored, so nobody reads
     * a report believing it rests on a sampling it does not have. */
    static const char *const gone[] = {"CUTRACE_SAMPLE", "CUTRACE_LIGHT_COPY_MIN", NULL};
    for (int i = 0; gone[i]; i++)
        if (getenv_fn(gone[i])) {
            snprintf(err, errlen,
                     "%s is no longer read: light mode records complete windows "
                     "(CUTRACE_LIGHT_WINDOW_MS of every CUTRACE_LIGHT_PERIOD_MS); unset it",
                     gone[i]);
            return -EINVAL;
        }
    static const struct int_var window = {"CUTRACE_LIGHT_WINDOW_MS", 10, 3600000};
    static const struct int_var period = {"CUTRACE_LIGHT_PERIOD_MS", 20, 86400000};
    if ((rc = get_int(getenv_fn, &window, &v, err, errlen)) < 0)
        return rc;
    if (rc == 0)
        c->light_window_ms = (unsigned)v;
    if ((rc = get_int(getenv_fn, &period, &v, err, errlen)) < 0)
        return rc;
    if (rc == 0)
        c->light_period_ms = (unsigned)v;
    if (c->light && c->light_window_ms >= c->light_period_ms) {
        snprintf(err, errlen,
                 "CUTRACE_LIGHT_WINDOW_MS=%u, CUTRACE_LIGHT_PERIOD_MS=%u: expected a window "
                 "shorter than its period (for recording throughout, use CUTRACE_MODE=full)",
                 c->light_window_ms, c->light_period_ms);
        return -EINVAL;
    }
    /* below 10 ms NVML's own averaging windows make samples repeat; above a
     * minute the counters say nothing about iterations */
    const char *hs = getenv_fn("CUTRACE_HEALTH_MS");
    if (hs) {
        if (ct_parse_int(hs, 0, 60000, &v) != 0 || (v > 0 && v < 10)) {
            snprintf(err, errlen,
                     "CUTRACE_HEALTH_MS=%s: expected 0 (off) or a sampling period from 10 to "
                     "60000 ms",
                     hs);
            return -EINVAL;
        }
        c->health_ms = (unsigned)v;
    }
    /* NVML refreshes GPM counters about every 100 ms: two samples closer
     * than that do not make a rate (nvmlGpmMetricsGet's documentation) */
    const char *gs = getenv_fn("CUTRACE_GPM_MS");
    if (gs) {
        if (ct_parse_int(gs, 0, 60000, &v) != 0 || (v > 0 && v < 100)) {
            snprintf(err, errlen,
                     "CUTRACE_GPM_MS=%s: expected 0 (off) or a GPM sampling period from 100 to "
                     "60000 ms",
                     gs);
            return -EINVAL;
        }
        c->gpm_ms = (unsigned)v;
    }
    /* CUPTI PM sampling (shim/pm_sampling.c, docs/efficiency.md): opt-in.
     * Below 10 us the writer decodes more samples than a pass can take at
     * the default flush period; above 100 ms GPM (CUTRACE_GPM_MS) gives the
     * same figures for less. */
    const char *ps = getenv_fn("CUTRACE_PM_SAMPLING_US");
    if (ps) {
        if (ct_parse_int(ps, 0, CT_PM_SAMPLING_US_MAX, &v) != 0 ||
            (v > 0 && v < CT_PM_SAMPLING_US_MIN)) {
            snprintf(err, errlen,
                     "CUTRACE_PM_SAMPLING_US=%s: expected 0 (off) or a CUPTI PM sampling interval "
                     "from %d to %d us",
                     ps, CT_PM_SAMPLING_US_MIN, CT_PM_SAMPLING_US_MAX);
            return -EINVAL;
        }
        c->pm_sampling_us = (unsigned)v;
    }
    /* Raw NCCL proxy steps (shim/nccl_steps.c): opt-in and bounded, as a
     * job can make millions a second. A bad value turns only them off
     * (nccl_steps_err), not the recording. */
    const char *ns = getenv_fn("CUTRACE_NCCL_STEPS");
    if (ns) {
        if (!strcmp(ns, "off"))
            c->nccl_steps = 0;
        else if (!strcmp(ns, "on"))
            c->nccl_steps = CT_NCCL_STEPS_ON;
        else if (ct_parse_int(ns, 0, CT_NCCL_STEPS_MAX, &v) == 0)
            c->nccl_steps = (uint64_t)v;
        else
            snprintf(c->nccl_steps_err, sizeof(c->nccl_steps_err),
                     "CUTRACE_NCCL_STEPS=%.40s: expected off (0), on (%d steps) or a number of "
                     "raw proxy steps a process records, from 1 to %d",
                     ns, CT_NCCL_STEPS_ON, CT_NCCL_STEPS_MAX);
    }
    static const char *const policy[] = {"oldest", "stop", NULL};
    if ((rc = get_word(getenv_fn, "CUTRACE_MAX_POLICY", policy, c->max_stop, err, errlen)) < 0)
        return rc;
    c->max_stop = rc;
    static const char *const stacks[] = {"off", "sync", "all", NULL};
    static const char *const start[] = {"running", "paused", NULL};
    if ((rc = get_word(getenv_fn, "CUTRACE_STACKS", stacks, c->stacks, err, errlen)) < 0)
        return rc;
    c->stacks = rc;
    if ((rc = get_word(getenv_fn, "CUTRACE_START", start, c->start_paused, err, errlen)) < 0)
        return rc;
    c->start_paused = rc;
    const char *gt = getenv_fn("CUTRACE_GPU_TIMING");
    if (gt) {
        if (!strcmp(gt, "cupti"))
            c->gpu_timing = 1;
        else if (!strcmp(gt, "events"))
            c->gpu_timing = 2;
        else if (!strcmp(gt, "off"))
            c->gpu_timing = 0;
        else {
            snprintf(err, errlen, "CUTRACE_GPU_TIMING=%s: expected cupti, events or off", gt);
            return -EINVAL;
        }
    }
    return 0;
}
