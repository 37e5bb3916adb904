/*
 * What the fake NCCL's test files share (test_fakegpu_nccl.c and
 * test_fakegpu_nccl_profiler.c): checks and device helpers.
 */
#ifndef TEST_FAKEGPU_NCCL_H
#define TEST_FAKEGPU_NCCL_H

#include <check.h>
#include <cuda.h>
#include <nccl.h>

#include "fn_profiler_abi.h"
#include "test_fakegpu_nccl_plugin.h"

#define CU_OK(call) ck_assert_int_eq((call), CUDA_SUCCESS)
#define NC_OK(call) ck_assert_int_eq((call), ncclSuccess)
#define EXACT_MS    0.001
#define MB          1000000 /* floats: 4 MB */

/* A 1-thread launch of the simulated kernel `name` on s: 0 or an error. */
int tn_launch(const char *name, CUstream s);
/* A new event recorded on s (NULL on failure). */
CUevent tn_record(CUstream s);
/* ms from a to b once both completed, -1 on error. */
double tn_elapsed(CUevent a, CUevent b);
/* How much later than rank r's the latest of n ranks' starts e0[] is, ms. */
double tn_wait_for_latest(CUevent *e0, int n, int r);
/* cuInit, device dev's primary context current, a non-blocking stream. */
CUstream tn_setup_device(int dev);
/* FAKEGPU_DEVICES=2, a stream per device, ncclCommInitAll of two ranks. */
void tn_two_ranks(CUstream s[2], ncclComm_t c[2]);

/* test_fakegpu_nccl_profiler.c */
TCase *tn_plugin_tcase(void);
/* test_fakegpu_nccl_algos.c */
TCase *tn_algos_tcase(void);

#endif
