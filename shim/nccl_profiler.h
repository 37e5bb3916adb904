/*
 * cutrace's NCCL profiler plugin (shim/nccl_profiler.c) as tables of its
 * own functions, and the exported ncclProfiler_v3..v7 that call them
 * (shim/nccl_profiler_chain.c), forwarding every call to a second plugin
 * too when the user had named one (docs/nccl.md, "Another profiler
 * plugin").
 */
#ifndef CT_NCCL_PROFILER_H
#define CT_NCCL_PROFILER_H

#include "shim/nccl_profiler_abi.h"

extern const struct ct_nprof_v7 ct_nprof_own_v7;
extern const struct ct_nprof_v6 ct_nprof_own_v6;
extern const struct ct_nprof_v5 ct_nprof_own_v5;
extern const struct ct_nprof_v4 ct_nprof_own_v4;
extern const struct ct_nprof_v3 ct_nprof_own_v3;

/* Whether h is a handle our own plugin gave NCCL. */
int ct_nprof_own_handle(const void *h);

/* The environment variable `cutrace run` moves the user's
 * NCCL_PROFILER_PLUGIN to, when it points NCCL at cutrace instead. */
#define CT_NPROF_CHAIN_ENV "CUTRACE_NCCL_PROFILER_CHAIN"

#endif
