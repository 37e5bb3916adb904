/*
 * test_fakegpu.h - helpers shared by the fakegpu Check suite.  Every test
 * runs in its own forked process (the suite forces CK_FORK), so each one
 * starts with a fresh simulated driver and may set FAKEGPU_* variables
 * before calling cuInit.
 */
#ifndef TEST_FAKEGPU_H
#define TEST_FAKEGPU_H

#include <check.h>
#include <cuda.h>

#define CU_OK(call) ck_assert_int_eq((call), CUDA_SUCCESS)

/* A kernel that occupies a stream long enough (100 ms) that everything
 * enqueued right after it is queued behind it; event times measured after it
 * are then exact virtual durations, free of host scheduling noise. */
#define BLOCKER "blocker__100000us"

CUcontext tf_setup(void);                     /* cuInit + primary context of device 0 */
CUfunction tf_kernel(const char *name);       /* function from a shared dummy module */
void tf_launch(const char *name, CUstream s); /* 1x1 launch of tf_kernel(name) */
CUevent tf_event(void);
CUevent tf_record(CUstream s); /* new event recorded on s */
float tf_elapsed(CUevent a, CUevent b);
double tf_now_ms(void); /* CLOCK_MONOTONIC, the fake's virtual clock */

TCase *tf_timing_kernels(void);
TCase *tf_timing_streams(void);
TCase *tf_timing_events(void);
TCase *tf_timing_copies(void);
TCase *tf_timing_graphs(void);
TCase *tf_graph_edges(void);
TCase *tf_graph_replay(void);
TCase *tf_api_procaddr(void);
TCase *tf_api_objects(void);
TCase *tf_api_errors(void);

#endif
