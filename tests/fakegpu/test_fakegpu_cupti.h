/*
 * test_fakegpu_cupti.h - helpers shared by the "fakegpu-cupti" Check suite:
 * a program linked to both the simulated driver and the fake CUPTI that
 * collects every delivered activity record into a store it can search.
 * Every test runs in its own forked process (CK_FORK), so each starts with
 * a fresh driver and a fresh CUPTI.
 */
#ifndef TEST_FAKEGPU_CUPTI_H
#define TEST_FAKEGPU_CUPTI_H

#include <check.h>
#include <cuda.h>
#include <cupti.h>
#include <stdbool.h>
#include <stdint.h>

#define CU_OK(call)    ck_assert_int_eq((call), CUDA_SUCCESS)
#define CUPTI_OK(call) ck_assert_int_eq((call), CUPTI_SUCCESS)

/* What the test timestamp callback adds to CLOCK_MONOTONIC: records must
 * come out shifted by exactly this much. */
#define TC_TS_OFFSET 1000000000000LL /* 1000 s */

/* One delivered record, copied out of its buffer. */
typedef struct tc_rec {
    union {
        CUpti_Activity any;
        CUpti_ActivityKernel10 kernel;
        CUpti_ActivityMemcpy6 memcpy;
        CUpti_ActivityMemset4 memset;
        CUpti_ActivitySynchronization2 sync;
        CUpti_ActivityExternalCorrelation ext;
    } r;
    int64_t delivered_ns; /* CLOCK_MONOTONIC when bufferCompleted saw it */
} tc_rec;

/* Buffer policy of the test's bufferRequested. */
extern size_t tc_buf_size; /* bytes per buffer (default 64 KiB) */
extern size_t tc_buf_max;  /* maxNumRecords handed to CUPTI (default 0) */
extern bool tc_buf_none;   /* give no buffer at all */

void tc_init_cuda(CUcontext *ctx);
/* Register buffer callbacks (and the offset timestamp callback if ts), then
 * enable CONCURRENT_KERNEL, MEMCPY, MEMSET, SYNCHRONIZATION and
 * EXTERNAL_CORRELATION. */
void tc_cupti_start(bool ts);
void CUPTIAPI tc_buffer_requested(uint8_t **buffer, size_t *size, size_t *max);
void CUPTIAPI tc_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                  size_t valid);
uint64_t CUPTIAPI tc_timestamp(void);

/* The store (thread-safe). */
size_t tc_count(CUpti_ActivityKind kind);
size_t tc_buffers(void);        /* buffers handed over with at least one record */
size_t tc_max_per_buffer(void); /* most records seen in one buffer */
tc_rec tc_get(size_t i);        /* i-th record delivered */
size_t tc_total(void);
const tc_rec *tc_kernel(const char *name); /* NULL if absent; pointer valid until next delivery */
/* External correlation records with this correlation id: count, and the
 * id of the last one (0 if none). */
size_t tc_ext_for(uint32_t corr, uint64_t *ext_id);
/* Copy of the most recently completed non-empty buffer's valid bytes, and
 * how many records it held. */
size_t tc_last_raw(uint8_t **copy, size_t *nrec);

CUfunction tc_kernel_fn(const char *name);
void tc_launch(const char *name, CUstream s);
CUevent tc_record(CUstream s);
int64_t tc_event_ns(CUevent from, CUevent to); /* virtual ns between two completed events */
int64_t tc_now_ns(void);                       /* CLOCK_MONOTONIC */

TCase *tc_trace_schedule(void);
TCase *tc_trace_delivery(void);
TCase *tc_api_session(void);
TCase *tc_api_buffers(void);
TCase *tc_graph_clones(void);

#endif
