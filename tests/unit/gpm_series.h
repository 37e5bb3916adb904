/* GPM counter series built by hand for the efficiency suites
 * (test_efficiency.c, test_efficiency_streams.c), as the shim records
 * them: `gpm_interval` and each metric stamped at the interval's start,
 * percentages in 0.01 %. Times in µs. Failing allocations fail the test. */
#ifndef CT_TESTS_GPM_SERIES_H
#define CT_TESTS_GPM_SERIES_H

#include <stdint.h>

struct ct_hproc;

/* An empty set of a process's counter series. */
struct ct_hproc *tb_hp_new(void);
/* One sample of series `name` of device dev at t_ns. */
void tb_hp_add(struct ct_hproc *h, int dev, const char *name, const char *unit, int64_t t_ns,
               int64_t v);
/* One GPM interval [s, s + len) µs of device 0 with SM, tensor and DRAM
 * activity (%). */
void tb_gpm_interval(struct ct_hproc *h, int64_t s, int64_t len, double sm, double tc, double dram);
/* Sorts every series by time, as the reader leaves them
 * (decoder/read/counters.h); samples added in time order need not. */
void tb_hp_sort(struct ct_hproc *h);
/* The same as a CUPTI PM sample (shim/pm_sampling.c): `pm_interval`
 * beside the same metric series. */
void tb_pm_sample(struct ct_hproc *h, int64_t s, int64_t len, double sm, double tc, double dram);

#endif
