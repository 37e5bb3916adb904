/*
 * Health counters (shim/health.c): NVML device counters and host counters
 * sampled on the writer thread every CUTRACE_HEALTH_MS.
 */
#ifndef CT_SHIM_HEALTH_H
#define CT_SHIM_HEALTH_H

#include <stdint.h>

/* A device the job uses, as cuda_cache.c describes it (any thread, once per
 * device; copies the strings; never blocks). uuid "GPU-..." or "", pci bus
 * id or "". */
void ct_health_device(int dev, const char *uuid, const char *pci);

/* After recording started (after_fork: in a forked child): registers the
 * sampler on the writer thread unless CUTRACE_HEALTH_MS=0. 0 or -ENOSPC. */
int ct_health_start(int after_fork);

/* Before the trace closes: the sampler's cost as recorder metadata. */
void ct_health_finish(void);

/* Records recorder metadata KEY=VALUE now, and one counter sample (device
 * -1: the host) at `now` (ns): the writer thread's samplers' (health.c,
 * health_gpm.c) one way to write them. */
void ct_health_meta(const char *key, const char *value);
void ct_health_counter(uint64_t now, int dev, uint32_t name, int64_t value, uint32_t unit);

#endif
