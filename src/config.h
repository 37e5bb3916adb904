/*
 * CUTRACE_* environment configuration: parsed and validated in one place so
 * that a bad value gives one message naming the variable and what it
 * accepts. Parsing allocates nothing and never exits.
 */
#ifndef CT_CONFIG_H
#define CT_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "src/clock.h"

/* CUTRACE_FLUSH_MS when it is not set: partial chunks are written at least
 * this often (ms). A trace records the value only when it was set: the
 * decoder reads 0 as this (decoder/analysis/goodput.c). */
#define CT_FLUSH_MS_DEFAULT 100

/* docs/efficiency.md, "Cost": the default GPM period */
#define CT_GPM_MS_DEFAULT 100

/* CUTRACE_PM_SAMPLING_US: CUPTI PM sampling's interval, 0 (off, the
 * default) or within these bounds (src/config.c says why) */
#define CT_PM_SAMPLING_US_MIN 10
#define CT_PM_SAMPLING_US_MAX 100000

/* CUTRACE_NCCL_STEPS: raw NCCL proxy steps (docs/nccl.md, "Raw proxy
 * steps"): off (0, the default), on (CT_NCCL_STEPS_ON), or a budget of
 * 1..CT_NCCL_STEPS_MAX step records a process */
#define CT_NCCL_STEPS_ON  1000000
#define CT_NCCL_STEPS_MAX 100000000

struct ct_config {
    char output[4096];        /* CUTRACE_OUTPUT: directory for traces (default ".") */
    size_t buffer_kb;         /* CUTRACE_BUFFER_KB: per-thread ring, 64..1048576, default 1024 */
    int zstd_level;           /* CUTRACE_ZSTD_LEVEL: -7..19, default 3 */
    unsigned flush_ms;        /* CUTRACE_FLUSH_MS: 1..60000, default CT_FLUSH_MS_DEFAULT */
    enum ct_clock_pref clock; /* CUTRACE_CLOCK: auto|tsc|monotonic */
    int gpu_timing;           /* CUTRACE_GPU_TIMING: 0 off, 1 cupti (default), 2 events */
    uint64_t io_min_ns;       /* CUTRACE_IO_MIN_NS: shorter I/O spans are counted, not recorded */
    int64_t test_clock_offset_ns; /* CUTRACE_TEST_CLOCK_OFFSET_NS (tests of clock alignment) */
    uint64_t io_stack_ns; /* CUTRACE_IO_STACK_NS: I/O spans this long get a call stack (sync) */
    int stacks;           /* CUTRACE_STACKS: 0 off, 1 sync (default), 2 all */
    int start_paused;     /* CUTRACE_START: 0 running (default), 1 paused */
    unsigned duration_s;  /* CUTRACE_DURATION: seconds per capture window, 0 = unbounded */
    unsigned max_mb;      /* CUTRACE_MAX_MB: bound on the trace file, 0 = none */
    int max_stop;         /* CUTRACE_MAX_POLICY: 0 oldest (drop oldest frames), 1 stop */
    unsigned flight_s;    /* CUTRACE_FLIGHT: flight recorder window, 0 = off */
    unsigned flight_mb;   /* CUTRACE_FLIGHT_MB: its memory bound (default 256) */
    unsigned hang_s;      /* CUTRACE_HANG_S: NCCL hang detection, 0 = off */
    int light;            /* CUTRACE_MODE: 0 full (default), 1 light */
    /* Light mode records complete capture windows on a duty cycle: the
     * first light_window_ms of every light_period_ms of CLOCK_REALTIME
     * (shim/capture.c), paused in between. */
    unsigned light_window_ms; /* CUTRACE_LIGHT_WINDOW_MS: 10..3600000, default 3000 */
    unsigned light_period_ms; /* CUTRACE_LIGHT_PERIOD_MS: 20..86400000, default 60000 */
    unsigned health_ms;       /* CUTRACE_HEALTH_MS: health counter period, 0 = off (default 100) */
    unsigned
        gpm_ms; /* CUTRACE_GPM_MS: NVML GPM sampling period, 0 = off (default CT_GPM_MS_DEFAULT) */
    unsigned pm_sampling_us; /* CUTRACE_PM_SAMPLING_US: CUPTI PM sampling interval, 0 = off */
    /* CUTRACE_HOST_TRACE_KB: a process without CUDA, NCCL or NVTX work gets a
     * trace once its I/O moved this much (default 1024); 0: every process */
    unsigned host_trace_kb;
    /* CUTRACE_BUFFERS: where the per-thread buffers live, shm (default: a
     * live mapping in /dev/shm), dir (beside the trace) or private (process
     * memory: a SIGKILL loses what was not written); enum ct_live_where */
    int buffers;
    /* CUTRACE_NCCL_STEPS: raw proxy steps a process may record, 0 off */
    uint64_t nccl_steps;
    /* A bad CUTRACE_NCCL_STEPS is not fatal to recording (the aggregates
     * do not need it): raw steps stay off and this says why, for the
     * trace (shim/nccl_steps.c) and for `cutrace run`, which refuses it. */
    char nccl_steps_err[192];
};

void ct_config_defaults(struct ct_config *c);

/*
 * Reads the variables through getenv_fn (getenv, or a test's lookup).
 * Returns 0, or -EINVAL with err holding "CUTRACE_X=value: expected ...".
 */
int ct_config_from_env(struct ct_config *c, const char *(*getenv_fn)(const char *), char *err,
                       size_t errlen);

/*
 * Run tags "KEY=VALUE[,KEY=VALUE...]" (CUTRACE_TAGS, `cutrace run --tag`):
 * KEY of 1..64 letters, digits, '_', '-', '.'; VALUE of 0..256 bytes
 * without ',' or control characters; at most CT_MAX_TAGS tags. 0, or
 * -EINVAL with a message naming what is wrong.
 */
#define CT_MAX_TAGS 64
int ct_tags_check(const char *tags, char *err, size_t errlen);

/*
 * A run identity (CUTRACE_RUN_ID, `cutrace run`; the shim's metadata
 * run_id): 1 to CT_RUN_ID_MAX - 1 letters, digits, '_', '-', '.', not
 * starting with '-' or '.'. 0, or -EINVAL.
 */
#define CT_RUN_ID_MAX 80
int ct_run_id_check(const char *id);

/*
 * Every CUTRACE_* variable the shim or the cutrace command reads, so that a
 * misspelt one is caught before a job runs untraced as asked: 1 when name
 * is one, else 0; *near (when not NULL) is set to the known name within two
 * edits of name, or NULL.
 */
int ct_config_known(const char *name, const char **near);

/* Parses a decimal integer in [lo, hi]; 0 or -EINVAL. */
int ct_parse_int(const char *s, long long lo, long long hi, long long *out);

#endif
