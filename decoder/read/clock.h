/*
 * Clock alignment across ranks. Each trace's times are CLOCK_MONOTONIC of
 * its host; CLOCK records pair them with CLOCK_REALTIME, so every process is
 * first mapped onto realtime (median of realtime - monotonic over its pairs).
 * Hosts' realtime clocks disagree by NTP/PTP error, so the job build then
 * refines each rank by the ends of matched collectives: an op with the same
 * (comm_hash, seq) ends at about the same instant on every rank (it cannot
 * end before the last member arrives), so each rank is shifted by the median
 * of (its end - the median end over ranks) across its collectives, twice.
 */
#ifndef CT_CLOCK_H
#define CT_CLOCK_H

#include <stdint.h>

#include "decoder/read/tracefile.h"

struct ct_job;

/* ns to add to the trace's monotonic times to get realtime ns. */
int64_t ct_clock_offset(const struct ct_trace *t);

/* Refines rank clocks by collective ends; sets each rank's skew_ns and
 * residual_ns and shifts all its times. Returns 0 or -ENOMEM. */
int ct_clock_refine(struct ct_job *job);

/* Moves a rank's GPU ops and its processes' launch times by d ns, those it
 * holds (a closed spilled rank holds none: decoder/read/spill.h). */
struct ct_rank;
void ct_clock_shift_ops(struct ct_rank *r, int64_t d);

#endif
