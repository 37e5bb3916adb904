/*
 * NVML GPM sampling (shim/health_gpm.c): GPU efficiency metrics sampled
 * by the writer thread every CUTRACE_GPM_MS, for the devices the health
 * sampler (shim/health.c) matched to NVML. Writer thread only.
 */
#ifndef CT_SHIM_HEALTH_GPM_H
#define CT_SHIM_HEALTH_GPM_H

#include <stdint.h>

#define CT_GPM_MAX_DEV 64

/* When recording starts (after_fork: in a forked child): interns the
 * names, forgets a parent's devices. Returns 0. */
int ct_gpm_start(int after_fork);
/* NVML was opened (its dlopen handle): looks up the GPM functions. */
void ct_gpm_bind(void *nvml_lib);
/* Every writer pass, for each device d matched to NVML handle h: the
 * support query at the first call, then a sample when its period is up
 * (the first at once). Does nothing when CUTRACE_GPM_MS=0. */
void ct_gpm_device(uint64_t now, int d, void *h);
/* Before the trace closes: samples taken and their writer-thread cost as
 * recorder metadata (gpm_samples, gpm_ns_per_sample). */
void ct_gpm_finish(void);

#endif
