/*
 * Raw NCCL proxy steps (CUTRACE_NCCL_STEPS, docs/nccl.md "Raw proxy
 * steps"): a CT_REC_NCCL_STEP record per stopped ProxyStep, up to a
 * per-process budget, beside the ProxyOp's aggregate (shim/nccl_profiler.c).
 */
#ifndef CT_SHIM_NCCL_STEPS_H
#define CT_SHIM_NCCL_STEPS_H

#include <stdint.h>

/* The budget (CUTRACE_NCCL_STEPS), 0 off. Set at the shim's start, before
 * NCCL can report a step; read on NCCL's proxy threads. */
extern uint64_t ct_nsteps_budget;

/* A duration d of a step's clock in ns: d ticks of rate ns each, or d
 * itself (rate 0: the clock is monotonic ns). The ProxyOps' aggregates
 * convert with it too, so that the raw steps' sums are theirs exactly. */
static inline uint64_t ct_nsteps_ns(double rate, uint64_t d)
{
    return rate ? (uint64_t)((double)d * rate + 0.5) : d;
}

/* A stopped step, on its ProxyOp's clock (rate: ns per TSC tick, 0 when
 * the times are monotonic ns): its start and stop, its time in each of its
 * three state slots (format.h, CT_REC_NCCL_STEP), the ProxyOp's running
 * sums of those (updated by the write; the ProxyOp's steps stop on one
 * proxy thread), which slots it entered (bit i), its ProxyOp's identity. */
struct ct_nstep {
    uint64_t start, stop, d[3];
    double rate;
    uint64_t *sums;
    uint64_t corr, bytes;
    uint32_t channel, step;
    int32_t peer;
    uint8_t send, seen;
};

/* One step of the budget: 1 when this step is to be written, 0 when the
 * budget is spent (the step is counted as not recorded raw). One relaxed
 * atomic add: no lock, no syscall; any thread. */
int ct_nsteps_claim(void);

/* Writes s as a CT_REC_NCCL_STEP record, unless the thread's buffer is
 * half full (then counted as not raw): its stop converted to the trace
 * clock, each state's time in ns as the conversion of its ProxyOp's sum
 * after it less that of the sum before it (so that over all of a ProxyOp's
 * steps they add up to its CT_REC_NCCL_PROXY sums to the ns), the states'
 * begins from the stop backwards. NCCL's proxy thread: no lock, no
 * allocation, no syscall (the thread's ring). */
void ct_nsteps_write(const struct ct_nstep *s);

/* At the shim's start, with the trace open: the budget from the config,
 * and a recorder metadata entry saying it (nccl_steps_budget) or why a
 * bad CUTRACE_NCCL_STEPS was ignored (nccl_steps_ignored). */
void ct_nsteps_start(const char *bad_value_why, uint64_t budget);

/* At exit, with the trace open: how many steps were recorded raw and how
 * many not (nccl_steps_raw, nccl_steps_not_raw), when raw steps are on. */
void ct_nsteps_finish(void);

#endif
