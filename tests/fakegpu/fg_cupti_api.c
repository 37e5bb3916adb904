/*
 * fg_cupti_api.c - the fake CUPTI's session-level entry points: version,
 * result strings, timestamps, buffer and timestamp callback registration,
 * activity kind enable/disable, cuptiFinalize, and finding and attaching
 * to the simulated driver (fakegpu_cupti_attach in the loaded
 * libcuda.so.1).  Subscription and callbacks: fg_cupti_callback.c.
 *
 * FAKEGPU_CUPTI_BUSY=1 (read on every call) simulates another profiler
 * (torch.profiler, Nsight) holding CUPTI: cuptiSubscribe,
 * cuptiActivityEnable and cuptiActivityRegisterCallbacks fail with
 * CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED.
 */
#include "fg_cupti_internal.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct fgc_global fgc = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .collect = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .idle = PTHREAD_COND_INITIALIZER,
};

/* ----------------------------------------------------------------- helpers */

int64_t fgc_mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* FAKEGPU_CUPTI_VERSION=N: the API version the fake presents (a CUPTI of
 * another release: 24 is CUDA 12.6's, 18 CUDA 11.8's), and with it that
 * release's record layout (fgc_record_size); the toolkit's by default. */
uint32_t fgc_api_version(void)
{
    static uint32_t v;
    if (!v) {
        const char *e = getenv("FAKEGPU_CUPTI_VERSION");
        char *end;
        unsigned long n = e && *e ? strtoul(e, &end, 10) : 0;
        v = n && !*end ? (uint32_t)n : CUPTI_API_VERSION;
    }
    return v;
}

/*
 * A CUPTI 12.x writes CUpti_ActivityKernel9 (12.0 to 12.9), and before
 * 12.8 (API version 26) CUpti_ActivityMemcpy5 and CUpti_ActivitySynchronization
 * (cupti_activity_deprecated.h): each is the first bytes of its CUDA 13
 * successor, which only adds fields at its end, so the fake fills the new
 * record and a 12.x buffer holds its 12.x-sized prefix. The asserts check
 * that prefix for every field the fake fills.
 */
#define FGC_SAME(A, B, f) _Static_assert(offsetof(A, f) == offsetof(B, f), #A "." #f)
FGC_SAME(CUpti_ActivityKernel9, CUpti_ActivityKernel10, start);
FGC_SAME(CUpti_ActivityKernel9, CUpti_ActivityKernel10, end);
FGC_SAME(CUpti_ActivityKernel9, CUpti_ActivityKernel10, completed);
FGC_SAME(CUpti_ActivityKernel9, CUpti_ActivityKernel10, deviceId);
FGC_SAME(CUpti_ActivityKernel9, CUpti_ActivityKernel10, contextId);
FGC_SAME(CUpti_ActivityKernel9, CUpti_ActivityKernel10, streamId);
FGC_SAME(CUpti_ActivityKernel9, CUpti_ActivityKernel10, gridX);
FGC_SAME(CUpti_ActivityKernel9, CUpti_ActivityKernel10, blockZ);
FGC_SAME(CUpti_ActivityKernel9, CUpti_ActivityKernel10, dynamicSharedMemory);
FGC_SAME(CUpti_ActivityKernel9, CUpti_ActivityKernel10, correlationId);
FGC_SAME(CUpti_ActivityKernel9, CUpti_ActivityKernel10, name);
FGC_SAME(CUpti_ActivityKernel9, CUpti_ActivityKernel10, graphNodeId);
FGC_SAME(CUpti_ActivityKernel9, CUpti_ActivityKernel10, graphId);
FGC_SAME(CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, copyKind);
FGC_SAME(CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, srcKind);
FGC_SAME(CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, dstKind);
FGC_SAME(CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, bytes);
FGC_SAME(CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, start);
FGC_SAME(CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, end);
FGC_SAME(CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, deviceId);
FGC_SAME(CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, streamId);
FGC_SAME(CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, correlationId);
FGC_SAME(CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, type);
FGC_SAME(CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, start);
FGC_SAME(CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, end);
FGC_SAME(CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, correlationId);
FGC_SAME(CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, contextId);
FGC_SAME(CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, streamId);
#undef FGC_SAME

size_t fgc_record_size(CUpti_ActivityKind kind)
{
    uint32_t v = fgc_api_version();
    int v12 = v < 130000, before_128 = v < 26;
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        return v12 ? sizeof(CUpti_ActivityKernel9) : sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
        return before_128 ? sizeof(CUpti_ActivityMemcpy5) : sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
        return before_128 ? sizeof(CUpti_ActivitySynchronization)
                          : sizeof(CUpti_ActivitySynchronization2);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(CUpti_ActivityExternalCorrelation);
    default: return 0;
    }
}

bool fgc_busy(void)
{
    const char *v = getenv("FAKEGPU_CUPTI_BUSY");
    return v && strcmp(v, "1") == 0;
}

void fgc_list_append(fgc_list *l, fgc_rec *r)
{
    r->next = NULL;
    if (l->tail)
        l->tail->next = r;
    else
        l->head = r;
    l->tail = r;
    l->n++;
}

void fgc_list_concat(fgc_list *a, fgc_list *b)
{
    if (!b->head)
        return;
    if (a->tail)
        a->tail->next = b->head;
    else
        a->head = b->head;
    a->tail = b->tail;
    a->n += b->n;
    *b = (fgc_list){0};
}

/* -------------------------------------------------------- version, strings */

FGC_EXPORT CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *version)
{
    if (!version)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *version = fgc_api_version();
    return CUPTI_SUCCESS;
}

static const char *const fgc_result_names[] = {
    [CUPTI_SUCCESS] = "CUPTI_SUCCESS",
    [CUPTI_ERROR_INVALID_PARAMETER] = "CUPTI_ERROR_INVALID_PARAMETER",
    [CUPTI_ERROR_INVALID_DEVICE] = "CUPTI_ERROR_INVALID_DEVICE",
    [CUPTI_ERROR_INVALID_CONTEXT] = "CUPTI_ERROR_INVALID_CONTEXT",
    [CUPTI_ERROR_INVALID_EVENT_DOMAIN_ID] = "CUPTI_ERROR_INVALID_EVENT_DOMAIN_ID",
    [CUPTI_ERROR_INVALID_EVENT_ID] = "CUPTI_ERROR_INVALID_EVENT_ID",
    [CUPTI_ERROR_INVALID_EVENT_NAME] = "CUPTI_ERROR_INVALID_EVENT_NAME",
    [CUPTI_ERROR_INVALID_OPERATION] = "CUPTI_ERROR_INVALID_OPERATION",
    [CUPTI_ERROR_OUT_OF_MEMORY] = "CUPTI_ERROR_OUT_OF_MEMORY",
    [CUPTI_ERROR_HARDWARE] = "CUPTI_ERROR_HARDWARE",
    [CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT] = "CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT",
    [CUPTI_ERROR_API_NOT_IMPLEMENTED] = "CUPTI_ERROR_API_NOT_IMPLEMENTED",
    [CUPTI_ERROR_MAX_LIMIT_REACHED] = "CUPTI_ERROR_MAX_LIMIT_REACHED",
    [CUPTI_ERROR_NOT_READY] = "CUPTI_ERROR_NOT_READY",
    [CUPTI_ERROR_NOT_COMPATIBLE] = "CUPTI_ERROR_NOT_COMPATIBLE",
    [CUPTI_ERROR_NOT_INITIALIZED] = "CUPTI_ERROR_NOT_INITIALIZED",
    [CUPTI_ERROR_INVALID_METRIC_ID] = "CUPTI_ERROR_INVALID_METRIC_ID",
    [CUPTI_ERROR_INVALID_METRIC_NAME] = "CUPTI_ERROR_INVALID_METRIC_NAME",
    [CUPTI_ERROR_QUEUE_EMPTY] = "CUPTI_ERROR_QUEUE_EMPTY",
    [CUPTI_ERROR_INVALID_HANDLE] = "CUPTI_ERROR_INVALID_HANDLE",
    [CUPTI_ERROR_INVALID_STREAM] = "CUPTI_ERROR_INVALID_STREAM",
    [CUPTI_ERROR_INVALID_KIND] = "CUPTI_ERROR_INVALID_KIND",
    [CUPTI_ERROR_INVALID_EVENT_VALUE] = "CUPTI_ERROR_INVALID_EVENT_VALUE",
    [CUPTI_ERROR_DISABLED] = "CUPTI_ERROR_DISABLED",
    [CUPTI_ERROR_INVALID_MODULE] = "CUPTI_ERROR_INVALID_MODULE",
    [CUPTI_ERROR_INVALID_METRIC_VALUE] = "CUPTI_ERROR_INVALID_METRIC_VALUE",
    [CUPTI_ERROR_HARDWARE_BUSY] = "CUPTI_ERROR_HARDWARE_BUSY",
    [CUPTI_ERROR_NOT_SUPPORTED] = "CUPTI_ERROR_NOT_SUPPORTED",
    [CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED] = "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED",
    [CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_DEVICE] =
        "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_DEVICE",
    [CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_NON_P2P_DEVICES] =
        "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_NON_P2P_DEVICES",
    [CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_WITH_MPS] =
        "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_WITH_MPS",
    [CUPTI_ERROR_CDP_TRACING_NOT_SUPPORTED] = "CUPTI_ERROR_CDP_TRACING_NOT_SUPPORTED",
    [CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED] = "CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED",
    [CUPTI_ERROR_CUDA_COMPILER_NOT_COMPATIBLE] = "CUPTI_ERROR_CUDA_COMPILER_NOT_COMPATIBLE",
    [CUPTI_ERROR_INSUFFICIENT_PRIVILEGES] = "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES",
    [CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED] = "CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED",
    [CUPTI_ERROR_OPENACC_UNDEFINED_ROUTINE] = "CUPTI_ERROR_OPENACC_UNDEFINED_ROUTINE",
    [CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED] = "CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED",
    [CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED] =
        "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED",
    [CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES] =
        "CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES",
    [CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED] =
        "CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED",
    [CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED] = "CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED",
    [CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED] = "CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED",
    [CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED] = "CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED",
    [CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED] = "CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED",
    [CUPTI_ERROR_INVALID_CHIP_NAME] = "CUPTI_ERROR_INVALID_CHIP_NAME",
};

FGC_EXPORT CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char **str)
{
    if (!str)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (result == CUPTI_ERROR_UNKNOWN) {
        *str = "CUPTI_ERROR_UNKNOWN";
        return CUPTI_SUCCESS;
    }
    size_t n = sizeof fgc_result_names / sizeof fgc_result_names[0];
    if ((unsigned)result >= n || !fgc_result_names[result]) {
        *str = NULL;
        return CUPTI_ERROR_INVALID_PARAMETER;
    }
    *str = fgc_result_names[result];
    return CUPTI_SUCCESS;
}

/* -------------------------------------------------------------- timestamps */

FGC_EXPORT CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *timestamp)
{
    if (!timestamp)
        return CUPTI_ERROR_INVALID_PARAMETER;
    CUpti_TimestampCallbackFunc ts = __atomic_load_n(&fgc.timestamp, __ATOMIC_ACQUIRE);
    *timestamp = ts ? ts() : (uint64_t)fgc_mono_now();
    return CUPTI_SUCCESS;
}

FGC_EXPORT CUptiResult CUPTIAPI
cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc funcTimestamp)
{
    if (!funcTimestamp)
        return CUPTI_ERROR_INVALID_PARAMETER;
    __atomic_store_n(&fgc.timestamp, funcTimestamp, __ATOMIC_RELEASE);
    return CUPTI_SUCCESS;
}

/* -------------------------------------------------------- buffer callbacks */

FGC_EXPORT CUptiResult CUPTIAPI
cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc funcBufferRequested,
                               CUpti_BuffersCallbackCompleteFunc funcBufferCompleted)
{
    if (!funcBufferRequested || !funcBufferCompleted)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (fgc_busy())
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    pthread_mutex_lock(&fgc.lock);
    fgc.requested = funcBufferRequested;
    fgc.completed = funcBufferCompleted;
    pthread_mutex_unlock(&fgc.lock);
    return CUPTI_SUCCESS;
}

/* ----------------------------------------------------------- enable/disable */

static bool fgc_kind_supported(CUpti_ActivityKind kind)
{
    return fgc_record_size(kind) != 0;
}

/* The forked child of a process that used CUPTI has no delivery thread and
 * possibly locks held by threads that no longer exist. */
static void fgc_atfork_child(void)
{
    pthread_mutex_init(&fgc.lock, NULL);
    pthread_mutex_init(&fgc.collect, NULL);
    pthread_cond_init(&fgc.wake, NULL);
    pthread_cond_init(&fgc.idle, NULL);
    fgc.thread_started = false;
    fgc.inflight = 0;
}

/* fakegpu_cupti_attach of the loaded driver, once found. */
static fakegpu_cupti_attach_fn fgc_attach_fn;

/* Find fakegpu_cupti_attach in the loaded driver (like real CUPTI, load
 * libcuda.so.1 if nobody has yet) and attach.  Called with no lock held. */
static const struct fg_cupti_driver *fgc_attach(void)
{
    fakegpu_cupti_attach_fn attach = __atomic_load_n(&fgc_attach_fn, __ATOMIC_ACQUIRE);
    if (!attach) {
        /* The handles are deliberately never closed: the driver stays. */
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        if (h)
            attach = (fakegpu_cupti_attach_fn)(uintptr_t)dlsym(h, FAKEGPU_CUPTI_ATTACH);
        if (!attach)
            attach = (fakegpu_cupti_attach_fn)(uintptr_t)dlsym(RTLD_DEFAULT, FAKEGPU_CUPTI_ATTACH);
        if (!attach && !h && (h = dlopen("libcuda.so.1", RTLD_NOW)))
            attach = (fakegpu_cupti_attach_fn)(uintptr_t)dlsym(h, FAKEGPU_CUPTI_ATTACH);
        if (!attach)
            return NULL;
        __atomic_store_n(&fgc_attach_fn, attach, __ATOMIC_RELEASE);
    }
    return attach(&fgc_hooks);
}

const struct fg_cupti_driver *fgc_driver(void)
{
    pthread_mutex_lock(&fgc.lock);
    const struct fg_cupti_driver *drv = fgc.drv;
    pthread_mutex_unlock(&fgc.lock);
    if (drv)
        return drv;
    if (!(drv = fgc_attach()))
        return NULL;
    pthread_mutex_lock(&fgc.lock);
    fgc.drv = drv;
    pthread_mutex_unlock(&fgc.lock);
    return drv;
}

FGC_EXPORT CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind)
{
    if (fgc_busy())
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    if ((unsigned)kind >= CUPTI_ACTIVITY_KIND_COUNT || kind == CUPTI_ACTIVITY_KIND_INVALID)
        return CUPTI_ERROR_INVALID_KIND;
    if (!fgc_kind_supported(kind))
        return CUPTI_ERROR_NOT_COMPATIBLE;
    if (!fgc_driver())
        return CUPTI_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&fgc.lock);
    if (!fgc.atfork_set) {
        pthread_atfork(NULL, NULL, fgc_atfork_child);
        fgc.atfork_set = true;
    }
    __atomic_store_n(&fgc.enabled[kind], true, __ATOMIC_RELAXED);
    fgc_start_thread_locked();
    pthread_mutex_unlock(&fgc.lock);
    return CUPTI_SUCCESS;
}

FGC_EXPORT CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind)
{
    if ((unsigned)kind >= CUPTI_ACTIVITY_KIND_COUNT || kind == CUPTI_ACTIVITY_KIND_INVALID)
        return CUPTI_ERROR_INVALID_KIND;
    if (!fgc_kind_supported(kind))
        return CUPTI_ERROR_NOT_COMPATIBLE;
    pthread_mutex_lock(&fgc.lock);
    __atomic_store_n(&fgc.enabled[kind], false, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&fgc.lock);
    return CUPTI_SUCCESS;
}

FGC_EXPORT CUptiResult CUPTIAPI cuptiFinalize(void)
{
    pthread_mutex_lock(&fgc.lock);
    for (int k = 0; k < CUPTI_ACTIVITY_KIND_COUNT; k++)
        __atomic_store_n(&fgc.enabled[k], false, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&fgc.lock);
    /* What is complete goes out; what is not is dropped (not counted). */
    fgc_collect();
    fgc_deliver_ready();
    fgc_wait_idle();
    fgc_discard_all();
    const struct fg_cupti_driver *drv = NULL;
    pthread_mutex_lock(&fgc.lock);
    drv = fgc.drv;
    fgc.drv = NULL;
    fgc.requested = NULL;
    fgc.completed = NULL;
    fgc.dropped = 0;
    __atomic_store_n(&fgc.timestamp, NULL, __ATOMIC_RELEASE);
    fgc_unsubscribe_locked();
    pthread_mutex_unlock(&fgc.lock);
    fakegpu_cupti_attach_fn attach = __atomic_load_n(&fgc_attach_fn, __ATOMIC_ACQUIRE);
    if (drv && attach)
        attach(NULL); /* back to the driver's untraced path; hooks already running
                       * finish harmlessly: nothing is enabled and this library
                       * is never unloaded (-z nodelete) */
    return CUPTI_SUCCESS;
}
