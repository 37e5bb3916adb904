/*
 * Parsers of the /proc files the health sampler reads (shim/health.c), kept
 * apart so that unit tests can feed them text. Pure functions: no I/O, no
 * allocation, safe on any thread.
 */
#ifndef CT_HEALTH_PROC_H
#define CT_HEALTH_PROC_H

#include <stddef.h>
#include <stdint.h>

/*
 * /proc/<pid>/stat: utime and stime (fields 14 and 15, clock ticks) and
 * majflt (field 12). The command name (field 2) may hold spaces and
 * parentheses: fields are counted after its last ')'. 0, or -EINVAL.
 */
int ct_proc_parse_stat(const char *buf, uint64_t *utime, uint64_t *stime, uint64_t *majflt);

/*
 * /proc/pressure/cpu: the "some" line's avg10 (a percentage with two
 * decimals) in hundredths of a percent ("some avg10=1.23 ..." -> 123).
 * 0, or -EINVAL.
 */
int ct_proc_parse_psi_some_avg10(const char *buf, int64_t *centi_pct);

/*
 * /proc/loadavg: the running count of "R/T" (field 4: runnable tasks,
 * this reader included). 0, or -EINVAL.
 */
int ct_proc_parse_loadavg_running(const char *buf, int64_t *running);

#endif
