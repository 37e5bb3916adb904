/*
 * CUPTI PM sampling (shim/pm_sampling.c, CUTRACE_PM_SAMPLING_US): the GPU
 * efficiency metrics of shim/health_gpm.c at a finer interval, for short
 * captures, taken only through the CUPTI this process holds (gpu_cupti.c).
 * Driven by the health sampler's writer-thread pass (shim/health.c).
 */
#ifndef CT_SHIM_PM_SAMPLING_H
#define CT_SHIM_PM_SAMPLING_H

#include <stdint.h>

#define CT_PM_MAX_DEV 64

/* When recording starts (after_fork: in a forked child, whose parent's
 * CUPTI objects are not its own): interns the names. Returns 0. */
int ct_pm_start(int after_fork);
/* GPU timing could not take CUPTI (init.c): why, kept for the trace's
 * "not taken" line. Any thread, before devices are described. */
void ct_pm_cupti_refused(const char *why);
/* Writer thread, every pass, for CUDA device d: sets sampling up at the
 * first call, then decodes what the device sampled once a pass period is
 * up. Returns 1 while d is being PM-sampled (GPM then leaves it alone),
 * else 0. Does nothing when CUTRACE_PM_SAMPLING_US=0. */
int ct_pm_device(uint64_t now, int d);
/* Before the trace closes (the finishing thread): the last samples, then
 * Stop, Disable and the host object's release; the samples taken and
 * their writer-thread cost as recorder metadata. Waits at most 200 ms for
 * a writer pass in progress, else leaves CUPTI to the process's exit. */
void ct_pm_finish(void);

#endif
