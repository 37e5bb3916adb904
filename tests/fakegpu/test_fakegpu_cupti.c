/*
 * test_fakegpu_cupti.c - entry point and helpers of the "fakegpu-cupti"
 * Check suite, which verifies the fake CUPTI (README.md, "Fake CUPTI")
 * against the simulated driver's own schedule.  The cases live in
 * test_fakegpu_cupti_trace.c (records of a known schedule, correlation,
 * delivery), test_fakegpu_cupti_api.c (entry points, errors, buffers) and
 * test_fakegpu_cupti_graph.c (clone callbacks, graph ids).
 */
#include "test_fakegpu_cupti.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

size_t tc_buf_size = 64 * 1024;
size_t tc_buf_max;
bool tc_buf_none;

static pthread_mutex_t tc_lock = PTHREAD_MUTEX_INITIALIZER;
static tc_rec *tc_recs;
static size_t tc_n, tc_cap, tc_nbuf, tc_maxper;
static uint8_t *tc_raw;
static size_t tc_raw_n, tc_raw_recs;

int64_t tc_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

uint64_t CUPTIAPI tc_timestamp(void)
{
    return (uint64_t)(tc_now_ns() + TC_TS_OFFSET);
}

/* The policy is changed by the test thread while the fake's delivery
 * thread may be asking for buffers. */
void CUPTIAPI tc_buffer_requested(uint8_t **buffer, size_t *size, size_t *max)
{
    *max = __atomic_load_n(&tc_buf_max, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&tc_buf_none, __ATOMIC_SEQ_CST)) {
        *buffer = NULL;
        *size = 0;
        return;
    }
    size_t sz = __atomic_load_n(&tc_buf_size, __ATOMIC_SEQ_CST);
    *buffer = aligned_alloc(8, (sz + 7) & ~(size_t)7);
    *size = sz;
}

void CUPTIAPI tc_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                  size_t valid)
{
    (void)ctx;
    (void)stream;
    (void)size;
    int64_t now = tc_now_ns();
    CUpti_Activity *rec = NULL;
    size_t n = 0;
    pthread_mutex_lock(&tc_lock);
    CUptiResult rc;
    while ((rc = cuptiActivityGetNextRecord(buffer, valid, &rec)) == CUPTI_SUCCESS) {
        /* Records are 8-byte aligned and laid back to back. */
        ck_assert_uint_eq((uintptr_t)rec % 8, 0);
        if (tc_n == tc_cap) {
            tc_cap = tc_cap ? tc_cap * 2 : 256;
            tc_recs = realloc(tc_recs, tc_cap * sizeof *tc_recs);
            ck_assert_ptr_nonnull(tc_recs);
        }
        tc_rec *t = &tc_recs[tc_n++];
        memset(t, 0, sizeof *t);
        size_t sz = 0;
        switch (rec->kind) {
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: sz = sizeof(CUpti_ActivityKernel10); break;
        case CUPTI_ACTIVITY_KIND_MEMCPY: sz = sizeof(CUpti_ActivityMemcpy6); break;
        case CUPTI_ACTIVITY_KIND_MEMSET: sz = sizeof(CUpti_ActivityMemset4); break;
        case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
            sz = sizeof(CUpti_ActivitySynchronization2);
            break;
        case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
            sz = sizeof(CUpti_ActivityExternalCorrelation);
            break;
        default: ck_abort_msg("unexpected record kind %d", (int)rec->kind);
        }
        memcpy(&t->r, rec, sz);
        t->delivered_ns = now;
        n++;
    }
    ck_assert_int_eq(rc, CUPTI_ERROR_MAX_LIMIT_REACHED);
    if (n) {
        tc_nbuf++;
        if (n > tc_maxper)
            tc_maxper = n;
        free(tc_raw);
        tc_raw = malloc(valid);
        memcpy(tc_raw, buffer, valid);
        tc_raw_n = valid;
        tc_raw_recs = n;
    }
    pthread_mutex_unlock(&tc_lock);
    free(buffer);
}

void tc_init_cuda(CUcontext *ctx)
{
    CUdevice dev;
    CU_OK(cuInit(0));
    CU_OK(cuDeviceGet(&dev, 0));
    CU_OK(cuDevicePrimaryCtxRetain(ctx, dev));
    CU_OK(cuCtxSetCurrent(*ctx));
}

void tc_cupti_start(bool ts)
{
    if (ts)
        CUPTI_OK(cuptiActivityRegisterTimestampCallback(tc_timestamp));
    CUPTI_OK(cuptiActivityRegisterCallbacks(tc_buffer_requested, tc_buffer_completed));
    CUPTI_OK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    CUPTI_OK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY));
    CUPTI_OK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET));
    CUPTI_OK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION));
    CUPTI_OK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
}

size_t tc_count(CUpti_ActivityKind kind)
{
    size_t n = 0;
    pthread_mutex_lock(&tc_lock);
    for (size_t i = 0; i < tc_n; i++)
        n += tc_recs[i].r.any.kind == kind;
    pthread_mutex_unlock(&tc_lock);
    return n;
}

size_t tc_buffers(void)
{
    pthread_mutex_lock(&tc_lock);
    size_t n = tc_nbuf;
    pthread_mutex_unlock(&tc_lock);
    return n;
}

size_t tc_max_per_buffer(void)
{
    pthread_mutex_lock(&tc_lock);
    size_t n = tc_maxper;
    pthread_mutex_unlock(&tc_lock);
    return n;
}

size_t tc_total(void)
{
    pthread_mutex_lock(&tc_lock);
    size_t n = tc_n;
    pthread_mutex_unlock(&tc_lock);
    return n;
}

tc_rec tc_get(size_t i)
{
    pthread_mutex_lock(&tc_lock);
    ck_assert_uint_lt(i, tc_n);
    tc_rec r = tc_recs[i];
    pthread_mutex_unlock(&tc_lock);
    return r;
}

const tc_rec *tc_kernel(const char *name)
{
    const tc_rec *found = NULL;
    pthread_mutex_lock(&tc_lock);
    for (size_t i = 0; i < tc_n; i++) {
        const tc_rec *t = &tc_recs[i];
        if ((t->r.any.kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
             t->r.any.kind == CUPTI_ACTIVITY_KIND_KERNEL) &&
            strcmp(t->r.kernel.name, name) == 0) {
            ck_assert_msg(!found, "two records for kernel %s", name);
            found = t;
        }
    }
    pthread_mutex_unlock(&tc_lock);
    return found;
}

size_t tc_ext_for(uint32_t corr, uint64_t *ext_id)
{
    size_t n = 0;
    uint64_t id = 0;
    pthread_mutex_lock(&tc_lock);
    for (size_t i = 0; i < tc_n; i++) {
        const tc_rec *t = &tc_recs[i];
        if (t->r.any.kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION &&
            t->r.ext.correlationId == corr) {
            n++;
            id = t->r.ext.externalId;
        }
    }
    pthread_mutex_unlock(&tc_lock);
    if (ext_id)
        *ext_id = id;
    return n;
}

size_t tc_last_raw(uint8_t **copy, size_t *nrec)
{
    pthread_mutex_lock(&tc_lock);
    size_t n = tc_raw_n;
    *nrec = tc_raw_recs;
    *copy = malloc(n ? n : 1);
    if (n)
        memcpy(*copy, tc_raw, n);
    pthread_mutex_unlock(&tc_lock);
    return n;
}

CUfunction tc_kernel_fn(const char *name)
{
    static CUmodule mod;
    static pthread_mutex_t mod_lock = PTHREAD_MUTEX_INITIALIZER;
    CUfunction f = NULL;
    pthread_mutex_lock(&mod_lock); /* launcher threads share it */
    if (!mod)
        CU_OK(cuModuleLoadData(&mod, "not a real cubin"));
    CUmodule m = mod;
    pthread_mutex_unlock(&mod_lock);
    CU_OK(cuModuleGetFunction(&f, m, name));
    return f;
}

void tc_launch(const char *name, CUstream s)
{
    CU_OK(cuLaunchKernel(tc_kernel_fn(name), 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
}

CUevent tc_record(CUstream s)
{
    CUevent e = NULL;
    CU_OK(cuEventCreate(&e, CU_EVENT_DEFAULT));
    CU_OK(cuEventRecord(e, s));
    return e;
}

int64_t tc_event_ns(CUevent from, CUevent to)
{
    float ms = -1;
    CU_OK(cuEventSynchronize(to));
    CU_OK(cuEventSynchronize(from));
    CU_OK(cuEventElapsedTime(&ms, from, to));
    return (int64_t)((double)ms * 1e6 + (ms >= 0 ? 0.5 : -0.5));
}

int main(void)
{
    static const char *const vars[] = {"FAKEGPU_DEVICES", "FAKEGPU_KERNEL_SCALE",
                                       "FAKEGPU_PCIE_GBPS", "FAKEGPU_HBM_GBPS",
                                       "FAKEGPU_CUPTI_BUSY"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);

    Suite *s = suite_create("fakegpu-cupti");
    suite_add_tcase(s, tc_trace_schedule());
    suite_add_tcase(s, tc_trace_delivery());
    suite_add_tcase(s, tc_api_session());
    suite_add_tcase(s, tc_api_buffers());
    suite_add_tcase(s, tc_graph_clones());
    SRunner *sr = srunner_create(s);
    /* Each test needs a fresh driver and CUPTI, i.e. its own process. */
    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
