/*
 * fg_cupti_record.c - record creation: the hooks the simulated driver calls
 * (correlation ids, kernel/memcpy/memset/synchronization records) and the
 * per-thread external correlation stacks with
 * cuptiActivityPush/PopExternalCorrelationId.
 *
 * The hooks run on the API-calling thread with the driver's lock held: they
 * only allocate, fill and append under fgc.lock.  Timestamps stay on
 * CLOCK_MONOTONIC here; conversion to a registered timestamp clock happens
 * when a record is written into a client buffer (fg_cupti_deliver.c).
 */
#include "fg_cupti_internal.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------ external correlation */

typedef struct fgc_stack {
    uint64_t *ids;
    size_t n, cap;
} fgc_stack;

static __thread fgc_stack fgc_ext[CUPTI_EXTERNAL_CORRELATION_KIND_SIZE];
static pthread_key_t fgc_ext_key; /* frees a thread's stacks when it exits */
static pthread_once_t fgc_ext_once = PTHREAD_ONCE_INIT;

void fgc_ext_clear_thread(void)
{
    for (int k = 0; k < CUPTI_EXTERNAL_CORRELATION_KIND_SIZE; k++) {
        free(fgc_ext[k].ids);
        fgc_ext[k] = (fgc_stack){0};
    }
}

static void fgc_ext_destroy(void *arg)
{
    (void)arg;
    fgc_ext_clear_thread();
}

static void fgc_ext_key_init(void)
{
    pthread_key_create(&fgc_ext_key, fgc_ext_destroy);
}

static bool fgc_ext_kind_ok(CUpti_ExternalCorrelationKind kind)
{
    return kind > CUPTI_EXTERNAL_CORRELATION_KIND_INVALID &&
           kind < CUPTI_EXTERNAL_CORRELATION_KIND_SIZE;
}

FGC_EXPORT CUptiResult CUPTIAPI
cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t id)
{
    if (!fgc_ext_kind_ok(kind))
        return CUPTI_ERROR_INVALID_PARAMETER;
    fgc_stack *st = &fgc_ext[kind];
    if (st->n == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 8;
        uint64_t *ids = realloc(st->ids, cap * sizeof *ids);
        if (!ids)
            return CUPTI_ERROR_OUT_OF_MEMORY;
        if (!st->ids) {
            pthread_once(&fgc_ext_once, fgc_ext_key_init);
            pthread_setspecific(fgc_ext_key, &fgc_ext); /* any non-NULL value */
        }
        st->ids = ids;
        st->cap = cap;
    }
    st->ids[st->n++] = id;
    return CUPTI_SUCCESS;
}

FGC_EXPORT CUptiResult CUPTIAPI
cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t *lastId)
{
    if (!fgc_ext_kind_ok(kind))
        return CUPTI_ERROR_INVALID_PARAMETER;
    fgc_stack *st = &fgc_ext[kind];
    if (!st->n)
        return CUPTI_ERROR_QUEUE_EMPTY;
    st->n--;
    if (lastId)
        *lastId = st->ids[st->n];
    return CUPTI_SUCCESS;
}

/* ----------------------------------------------------------------- hooks */

static uint32_t fgc_next_corr; /* atomic; correlation ids start at 1 */

static fgc_rec *fgc_rec_new(CUpti_ActivityKind kind)
{
    fgc_rec *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->size = (uint32_t)fgc_record_size(kind);
    r->r.any.kind = kind;
    return r;
}

/* Under fgc.lock: queue r; wake the delivery thread when a lot is waiting
 * (and start it in a forked child, which has none). */
static void fgc_push_locked(fgc_rec *r)
{
    fgc_start_thread_locked();
    fgc_list_append(&fgc.pending, r);
    if (fgc.pending.n % FGC_WAKE_RECORDS == 0)
        pthread_cond_signal(&fgc.wake);
}

static uint32_t fgc_hook_api_call(void)
{
    uint32_t corr = __atomic_add_fetch(&fgc_next_corr, 1, __ATOMIC_RELAXED);
    if (!__atomic_load_n(&fgc.enabled[CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION], __ATOMIC_RELAXED))
        return corr;
    /* One record per kind whose stack (of this thread) is non-empty, as
     * CUPTI does for every API call made inside an external region. */
    for (int k = CUPTI_EXTERNAL_CORRELATION_KIND_INVALID + 1;
         k < CUPTI_EXTERNAL_CORRELATION_KIND_SIZE; k++) {
        const fgc_stack *st = &fgc_ext[k];
        if (!st->n)
            continue;
        fgc_rec *r = fgc_rec_new(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
        if (!r)
            break;
        r->r.ext.externalKind = (CUpti_ExternalCorrelationKind)k;
        r->r.ext.externalId = st->ids[st->n - 1];
        r->r.ext.correlationId = corr;
        pthread_mutex_lock(&fgc.lock);
        if (fgc.enabled[CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION]) {
            fgc_push_locked(r);
            r = NULL;
        }
        pthread_mutex_unlock(&fgc.lock);
        free(r);
    }
    return corr;
}

static CUpti_ActivityMemcpyKind fgc_copy_kind(fg_cupti_mem src, fg_cupti_mem dst)
{
    bool sdev = src == FG_CUPTI_MEM_DEVICE, ddev = dst == FG_CUPTI_MEM_DEVICE;
    if (sdev && ddev)
        return CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
    if (sdev)
        return CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
    if (ddev)
        return CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    return CUPTI_ACTIVITY_MEMCPY_KIND_HTOH;
}

static void fgc_fill_kernel(CUpti_ActivityKernel10 *k, const struct fg_cupti_op *op)
{
    k->deviceId = op->device_id;
    k->contextId = op->context_id;
    k->streamId = op->stream_id;
    k->correlationId = op->correlation_id;
    k->gridX = (int32_t)op->grid[0];
    k->gridY = (int32_t)op->grid[1];
    k->gridZ = (int32_t)op->grid[2];
    k->blockX = (int32_t)op->block[0];
    k->blockY = (int32_t)op->block[1];
    k->blockZ = (int32_t)op->block[2];
    k->dynamicSharedMemory = (int32_t)op->dynamic_smem;
    k->name = op->name ? op->name : "<unnamed>"; /* driver names are never freed */
    k->launchType = op->cooperative ? CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE
                                    : CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;
    k->graphId = op->graph_id;
    k->graphNodeId = op->graph_node_id;
    k->gridId = (int64_t)op->correlation_id; /* unique enough: one kernel per launch call */
    k->clusterX = k->clusterY = k->clusterZ = 1;
    k->channelType = CUPTI_CHANNEL_TYPE_COMPUTE;
    k->cacheConfig.config.requested = CU_FUNC_CACHE_PREFER_NONE;
    k->cacheConfig.config.executed = CU_FUNC_CACHE_PREFER_NONE;
    /* queued/submitted stay CUPTI_TIMESTAMP_UNKNOWN (0): not collected. */
}

static bool fgc_hook_op(const struct fg_cupti_op *op)
{
    CUpti_ActivityKind kind;
    pthread_mutex_lock(&fgc.lock);
    switch (op->kind) {
    case FG_CUPTI_OP_KERNEL:
        kind = fgc.enabled[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL]
                   ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
               : fgc.enabled[CUPTI_ACTIVITY_KIND_KERNEL] ? CUPTI_ACTIVITY_KIND_KERNEL
                                                         : CUPTI_ACTIVITY_KIND_INVALID;
        break;
    case FG_CUPTI_OP_MEMCPY: kind = CUPTI_ACTIVITY_KIND_MEMCPY; break;
    case FG_CUPTI_OP_MEMSET: kind = CUPTI_ACTIVITY_KIND_MEMSET; break;
    default: kind = CUPTI_ACTIVITY_KIND_INVALID; break;
    }
    bool on = kind != CUPTI_ACTIVITY_KIND_INVALID && fgc.enabled[kind];
    pthread_mutex_unlock(&fgc.lock);
    if (!on)
        return false;
    fgc_rec *r = fgc_rec_new(kind);
    if (!r)
        return false;
    r->has_times = true;
    r->handle = op->resolved ? NULL : op->handle;
    r->start_ns = op->start_ns;
    r->end_ns = op->end_ns;
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        CUpti_ActivityMemcpy6 *m = &r->r.memcpy;
        m->copyKind = (uint8_t)fgc_copy_kind(op->src_mem, op->dst_mem);
        m->srcKind = (uint8_t)op->src_mem; /* fg_cupti_mem values are CUpti_ActivityMemoryKind's */
        m->dstKind = (uint8_t)op->dst_mem;
        m->bytes = op->bytes;
        m->deviceId = op->device_id;
        m->contextId = op->context_id;
        m->streamId = op->stream_id;
        m->correlationId = op->correlation_id;
        m->graphId = op->graph_id;
        m->graphNodeId = op->graph_node_id;
        m->channelType = CUPTI_CHANNEL_TYPE_COMPUTE;
        m->copyCount = 1;
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        CUpti_ActivityMemset4 *s = &r->r.memset;
        s->value = op->value;
        s->bytes = op->bytes;
        s->deviceId = op->device_id;
        s->contextId = op->context_id;
        s->streamId = op->stream_id;
        s->correlationId = op->correlation_id;
        s->memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
        s->graphId = op->graph_id;
        s->graphNodeId = op->graph_node_id;
        s->channelType = CUPTI_CHANNEL_TYPE_COMPUTE;
        break;
    }
    default: fgc_fill_kernel(&r->r.kernel, op); break;
    }
    bool has_handle = r->handle != NULL; /* r is not ours to read once queued */
    pthread_mutex_lock(&fgc.lock);
    bool keep = fgc.enabled[kind]; /* it may have been disabled meanwhile */
    if (keep)
        fgc_push_locked(r);
    pthread_mutex_unlock(&fgc.lock);
    if (!keep)
        free(r);
    return keep && has_handle;
}

static void fgc_hook_sync(const struct fg_cupti_sync *s)
{
    if (!__atomic_load_n(&fgc.enabled[CUPTI_ACTIVITY_KIND_SYNCHRONIZATION], __ATOMIC_RELAXED))
        return;
    fgc_rec *r = fgc_rec_new(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
    if (!r)
        return;
    r->has_times = true;
    r->start_ns = s->enter_ns;
    r->end_ns = s->exit_ns;
    CUpti_ActivitySynchronization2 *y = &r->r.sync;
    y->type = (CUpti_ActivitySynchronizationType)s->type;
    y->correlationId = s->correlation_id;
    y->contextId = s->context_id;
    y->streamId = s->stream_id;
    y->cudaEventId = s->event_id;
    y->cudaEventSyncId = s->event_id == FG_CUPTI_NA ? CUPTI_SYNCHRONIZATION_INVALID_VALUE
                                                    : (uint64_t)s->correlation_id;
    y->returnValue = 0; /* only successful calls are reported */
    pthread_mutex_lock(&fgc.lock);
    bool keep = fgc.enabled[CUPTI_ACTIVITY_KIND_SYNCHRONIZATION];
    if (keep)
        fgc_push_locked(r);
    pthread_mutex_unlock(&fgc.lock);
    if (!keep)
        free(r);
}

const struct fg_cupti_hooks fgc_hooks = {
    .abi = FG_CUPTI_ABI,
    .api_call = fgc_hook_api_call,
    .op = fgc_hook_op,
    .sync = fgc_hook_sync,
    .node_cloned = fgc_hook_node_cloned,
};
