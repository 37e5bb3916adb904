/*
 * The pure part of CUPTI PM sampling (shim/pm_sampling.c): which CUPTI
 * metrics are asked for and which GPM counter each is recorded as, how a
 * metric's value becomes the counter's integer, how a sample's GPU
 * timestamps become trace-clock times, and how large a counter data image
 * is made. No CUPTI, no clock, no state: unit-tested on its own
 * (tests/shim/test_pm_sampling_decode.c).
 */
#ifndef CT_SHIM_PM_SAMPLING_DECODE_H
#define CT_SHIM_PM_SAMPLING_DECODE_H

#include <stdint.h>

/* One metric: CUPTI's name, the counter the GPM path records the same
 * figure as (shim/health_gpm.c), its unit, and the factor from CUPTI's
 * value to the counter (percentages to 0.01 %, bytes/s to KiB/s). */
struct ct_pm_metric {
    const char *cupti, *counter, *unit;
    double scale;
};
#define CT_PM_NMETRIC 11
extern const struct ct_pm_metric ct_pm_metrics[CT_PM_NMETRIC];

/* Metric m's value v as its counter's integer into *out: 0, or -1 when v
 * is no value to record (NaN, negative, m out of range). Percentages are
 * capped at 100 %: PM counters of concurrent units can add up past it. */
int ct_pm_counter_value(int m, double v, int64_t *out);

/* A GPU timestamp (the globaltimer: nanoseconds on the host's
 * CLOCK_REALTIME base, as the driver sets it) on the trace clock
 * (CLOCK_MONOTONIC), with off = CLOCK_REALTIME - CLOCK_MONOTONIC read
 * back to back; 0 for a stamp before the monotonic clock's origin. */
uint64_t ct_pm_gpu_to_mono(uint64_t gpu_ns, uint64_t off);

/* Sample [gpu_start, gpu_end) on the trace clock, *start and *len, with
 * one offset for both ends (its length stays exact). prev_end is where
 * the device's previous sample ended on the trace clock (0: none): the
 * offset is read again each decode pass, and its jitter (tens of ns) must
 * not make two samples overlap, so a start before it is moved up to it
 * (the sample shortened by as much). 0, or -1 for a sample to skip: no
 * length (CUPTI hands out empty samples as sampling stops), a start
 * before the clock's origin, or one wholly before prev_end. */
int ct_pm_sample_span(uint64_t gpu_start, uint64_t gpu_end, uint64_t off, uint64_t prev_end,
                      uint64_t *start, uint64_t *len);

/* Samples a counter data image holds: enough for four decode passes of
 * pass_ms at interval_us (a late writer pass still fits), at least 16, at
 * most CT_PM_MAX_SAMPLES. */
#define CT_PM_MAX_SAMPLES 8192
uint32_t ct_pm_max_samples(unsigned interval_us, unsigned pass_ms);

#endif
