/*
 * CUPTI activity timing (--gpu-timing=cupti, the default of `cutrace run`).
 * We use the CUPTI library the job already has if it is loaded, else load
 * one (CUTRACE_CUPTI_LIB, the soname, the toolkit paths), register our clock
 * as CUPTI's timestamp source before enabling anything, and turn completed
 * activity buffers into GPU-interval records joined to our calls through
 * external correlation (the wrappers push our correlation id around each
 * real call). CUPTI 12.x and 13.x are read, each in its own record
 * layouts (layout_of). If CUPTI is missing, of another
 * version, or already held by another profiler, start fails with the
 * reason and the caller falls back to event timing.
 */
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "shim/cuda_table.h"
#include "shim/capture.h"
#include "shim/gpu.h"

#define CT_CUPTI_BUFFER    (1u << 20)
#define CT_CUPTI_CORR_LOG2 16

typedef CUptiResult (*subscribe_fn)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
typedef CUptiResult (*unsubscribe_fn)(CUpti_SubscriberHandle);
typedef CUptiResult (*reg_callbacks_fn)(CUpti_BuffersCallbackRequestFunc,
                                        CUpti_BuffersCallbackCompleteFunc);
typedef CUptiResult (*reg_timestamp_fn)(CUpti_TimestampCallbackFunc);
typedef CUptiResult (*enable_fn)(CUpti_ActivityKind);
typedef CUptiResult (*flush_fn)(uint32_t);
typedef CUptiResult (*next_fn)(uint8_t *, size_t, CUpti_Activity **);
typedef CUptiResult (*dropped_fn)(CUcontext, uint32_t, size_t *);
typedef CUptiResult (*push_fn)(CUpti_ExternalCorrelationKind, uint64_t);
typedef CUptiResult (*pop_fn)(CUpti_ExternalCorrelationKind, uint64_t *);
typedef CUptiResult (*result_string_fn)(CUptiResult, const char **);
typedef CUptiResult (*version_fn)(uint32_t *);
typedef CUptiResult (*period_fn)(uint32_t);
typedef CUptiResult (*enable_cb_fn)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
                                    CUpti_CallbackId);
typedef CUptiResult (*node_id_fn)(CUgraphNode, uint64_t *);

/* Which record layouts the loaded CUPTI writes (layout_of). */
enum ct_cupti_layout { CT_CUPTI_NONE, CT_CUPTI_12, CT_CUPTI_12_8, CT_CUPTI_13 };

static struct {
    void *lib;
    subscribe_fn subscribe;
    unsubscribe_fn unsubscribe;
    reg_callbacks_fn reg_callbacks;
    reg_timestamp_fn reg_timestamp;
    enable_fn enable, disable;
    flush_fn flush;
    next_fn next;
    dropped_fn dropped;
    push_fn push;
    pop_fn pop;
    result_string_fn result_string;
    version_fn version;
    enum ct_cupti_layout layout;
    period_fn period;
    enable_cb_fn enable_cb;
    node_id_fn node_id;
} c;

static CUpti_SubscriberHandle g_sub;
static atomic_int g_active;
static _Atomic uint64_t g_outside; /* records dropped outside the capture windows */

/* CUPTI correlation id -> our correlation id, direct-mapped (ids grow);
 * used only in buffer_completed, which CUPTI may run on its own thread and
 * on a flushing thread at once: g_corr_mu (never taken by job threads). */
static pthread_mutex_t g_corr_mu = PTHREAD_MUTEX_INITIALIZER;
static uint32_t g_corr_key[1u << CT_CUPTI_CORR_LOG2];
static uint64_t g_corr_val[1u << CT_CUPTI_CORR_LOG2];

void ct_cupti_push(uint64_t corr)
{
    c.push(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, corr);
}

void ct_cupti_pop(void)
{
    uint64_t id;
    c.pop(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &id);
}

static const char *result(CUptiResult r)
{
    const char *s = NULL;
    if (c.result_string && c.result_string(r, &s) == CUPTI_SUCCESS && s)
        return s;
    return "unknown CUPTI error";
}

static uint64_t timestamp(void)
{
    return ct_clock_ns_now();
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = aligned_alloc(8, CT_CUPTI_BUFFER);
    *size = *buffer ? CT_CUPTI_BUFFER : 0;
    *max_records = 0;
}

/*
 * GPU records whose external correlation has not arrived yet. CUPTI hands
 * the external-correlation records over in their own buffers (the calling
 * thread's), which may complete after the buffer that holds the activity
 * they name (a device's): such a record waits here, under g_corr_mu, until
 * a later buffer brings its mapping, and goes out with correlation 0 only
 * when the table is full or CUPTI stops. Found as NCCL kernels that joined
 * no op, in about one 4-rank job in three on the simulated CUPTI.
 */
#define CT_CUPTI_PENDING 1024
struct pending_gpu {
    uint32_t cupti_corr;
    uint64_t node;
    uint64_t f[CT_GPU_NFIELDS];
};
static struct pending_gpu g_pending[CT_CUPTI_PENDING];
static size_t g_npending;

static int corr_of(uint32_t cupti_corr, uint64_t *corr)
{
    uint32_t slot = cupti_corr & ((1u << CT_CUPTI_CORR_LOG2) - 1);
    if (g_corr_key[slot] != cupti_corr || !cupti_corr)
        return 0;
    *corr = g_corr_val[slot];
    return 1;
}

/* A GPU record, and the graph node it ran as (CT_SCOPE_GRAPH_NODE) right
 * after it on this thread, when it ran in a graph. */
static void emit_one(const uint64_t *f, uint64_t node)
{
    if (ct_emit(CT_REC_GPU, CT_RF_NS, f, CT_GPU_NFIELDS) || !node)
        return;
    /* CUPTI may deliver buffers on its thread and on a flushing one at once;
     * interning is idempotent, so two first calls agree */
    static _Atomic uint32_t key;
    uint32_t k = atomic_load_explicit(&key, memory_order_relaxed);
    if (!k)
        atomic_store_explicit(&key, k = ct_intern("node"), memory_order_relaxed);
    uint64_t m[CT_META_NFIELDS] = {f[CT_GPU_START], CT_SCOPE_GRAPH_NODE, node, k, 0};
    ct_emit(CT_REC_META, CT_RF_NS, m, CT_META_NFIELDS);
}

/* Emits the waiting records whose mapping is known now (all of them, with
 * correlation 0 for the rest, when `all`). Under g_corr_mu. */
static void pending_flush(int all)
{
    size_t kept = 0;
    for (size_t i = 0; i < g_npending; i++) {
        struct pending_gpu *p = &g_pending[i];
        uint64_t corr = 0;
        if (corr_of(p->cupti_corr, &corr) || all) {
            p->f[CT_GPU_CORR] = corr;
            emit_one(p->f, p->node);
        } else {
            g_pending[kept++] = *p;
        }
    }
    g_npending = kept;
}

static void emit_gpu(uint64_t start, uint64_t end, uint32_t device, uint32_t stream,
                     uint32_t cupti_corr, unsigned type, uint32_t name, uint64_t bytes,
                     unsigned copy_kind, uint64_t node)
{
    uint64_t corr = 0;
    int known = corr_of(cupti_corr, &corr);
    /* Outside every capture window, unless a recorded call launched it: the
     * GPU runs behind the host, so the work queued when a window closes
     * starts after it and is still the window's. */
    if (!known && !ct_capture_contains(start)) {
        atomic_fetch_add_explicit(&g_outside, 1, memory_order_relaxed);
        return;
    }
    uint64_t f[CT_GPU_NFIELDS];
    f[CT_GPU_START] = start;
    f[CT_GPU_END] = end >= start ? end : start;
    f[CT_GPU_DEVICE] = device;
    f[CT_GPU_STREAM] = stream;
    f[CT_GPU_CORR] = corr;
    f[CT_GPU_TYPE] = type;
    f[CT_GPU_NAME] = name;
    f[CT_GPU_BYTES] = bytes;
    f[CT_GPU_COPY_KIND] = copy_kind;
    f[CT_GPU_SOURCE] = CT_SRC_CUPTI;
    if (!known && cupti_corr && g_npending < CT_CUPTI_PENDING) {
        g_pending[g_npending].cupti_corr = cupti_corr;
        g_pending[g_npending].node = node;
        memcpy(g_pending[g_npending].f, f, sizeof(f));
        g_npending++;
        return;
    }
    emit_one(f, node);
}

static unsigned copy_kind(uint8_t k)
{
    switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return CT_COPY_HTOD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return CT_COPY_DTOH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return CT_COPY_DTOD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return CT_COPY_HTOH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return CT_COPY_PEER;
    default: return CT_COPY_NONE;
    }
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid)
{
    (void)size;
    int guard = ct_tls_guard;
    ct_tls_guard = 1;
    pthread_mutex_lock(&g_corr_mu);
    CUpti_Activity *rec = NULL;
    /* External correlations first: they map CUPTI's ids to ours. */
    while (buffer && c.next(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
            const CUpti_ActivityExternalCorrelation *x = (const void *)rec;
            uint32_t slot = x->correlationId & ((1u << CT_CUPTI_CORR_LOG2) - 1);
            g_corr_key[slot] = x->correlationId;
            g_corr_val[slot] = x->externalId;
        }
    }
    pending_flush(0); /* records of earlier buffers this one has the mapping of */
    rec = NULL;
    while (buffer && c.next(buffer, valid, &rec) == CUPTI_SUCCESS) {
        switch (rec->kind) {
            /* each record in the layout of the CUPTI that wrote it (layouts) */
#define KERNEL(T)                                                                                  \
    do {                                                                                           \
        const T *k = (const void *)rec;                                                            \
        emit_gpu(k->start, k->end, k->deviceId, k->streamId, k->correlationId, CT_GPU_KERNEL,      \
                 k->name ? ct_intern(k->name) : 0, 0, 0, k->graphNodeId);                          \
    } while (0)
#define MEMCPY(T)                                                                                  \
    do {                                                                                           \
        const T *m = (const void *)rec;                                                            \
        emit_gpu(m->start, m->end, m->deviceId, m->streamId, m->correlationId, CT_GPU_MEMCPY, 0,   \
                 m->bytes, copy_kind(m->copyKind), m->graphNodeId);                                \
    } while (0)
#define SYNC(T)                                                                                    \
    do {                                                                                           \
        const T *y = (const void *)rec;                                                            \
        emit_gpu(y->start, y->end, (uint32_t)-1, y->streamId, y->correlationId, CT_GPU_SYNC, 0, 0, \
                 0, 0);                                                                            \
    } while (0)
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
            if (c.layout >= CT_CUPTI_13)
                KERNEL(CUpti_ActivityKernel10);
            else
                KERNEL(CUpti_ActivityKernel9);
            break;
        case CUPTI_ACTIVITY_KIND_MEMCPY:
            if (c.layout >= CT_CUPTI_12_8)
                MEMCPY(CUpti_ActivityMemcpy6);
            else
                MEMCPY(CUpti_ActivityMemcpy5);
            break;
        case CUPTI_ACTIVITY_KIND_MEMSET: {
            const CUpti_ActivityMemset4 *m = (const void *)rec;
            emit_gpu(m->start, m->end, m->deviceId, m->streamId, m->correlationId, CT_GPU_MEMSET, 0,
                     m->bytes, 0, m->graphNodeId);
            break;
        }
        case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
            if (c.layout >= CT_CUPTI_12_8)
                SYNC(CUpti_ActivitySynchronization2);
            else
                SYNC(CUpti_ActivitySynchronization);
            break;
#undef KERNEL
#undef MEMCPY
#undef SYNC
        default: break;
        }
    }
    size_t dropped = 0;
    if (c.dropped && c.dropped(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped) {
        uint64_t f[CT_DROP_NFIELDS] = {ct_clock_ns_now(), dropped, CT_DROP_CUPTI};
        ct_emit(CT_REC_DROP, CT_RF_NS, f, CT_DROP_NFIELDS);
    }
    pthread_mutex_unlock(&g_corr_mu);
    free(buffer);
    ct_tls_guard = guard;
}

static void CUPTIAPI on_callback(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId id,
                                 const void *data)
{
    (void)ud;
    /* Besides claiming CUPTI, the one callback enabled: the clones an
     * instantiation makes, collected for the wrapper on this thread. */
    struct ct_clones *cl = ct_tls_clones;
    if (dom != CUPTI_CB_DOMAIN_RESOURCE || id != CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED || !cl ||
        !data || !c.node_id)
        return;
    const CUpti_GraphData *g = ((const CUpti_ResourceData *)data)->resourceDescriptor;
    uint64_t nid = 0;
    if (!g || !g->originalNode || c.node_id(g->node, &nid) != CUPTI_SUCCESS || !nid)
        return;
    CT_ERRNO_SAVE;
    if (cl->n == cl->cap) {
        size_t cap = cl->cap ? 2 * cl->cap : 64;
        struct ct_clone *v = realloc(cl->v, cap * sizeof(*v));
        if (!v) {
            cl->lost = 1;
            CT_ERRNO_RESTORE;
            return;
        }
        cl->v = v, cl->cap = cap;
    }
    cl->v[cl->n++] = (struct ct_clone){(uintptr_t)g->originalNode, nid};
    CT_ERRNO_RESTORE;
}

/*
 * Which CUPTI: the job's own when it loaded one, else CUTRACE_CUPTI_LIB,
 * else the one of the driver's major version (a CUPTI needs a driver at
 * least as new as itself: CUPTI 13 on a CUDA 12 driver cannot subscribe),
 * then the other, by soname and at the toolkit's paths.
 */
static void *load(void)
{
    static const char *const loaded[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
    for (size_t i = 0; i < sizeof(loaded) / sizeof(loaded[0]); i++) {
        void *h = dlopen(loaded[i], RTLD_NOW | RTLD_NOLOAD);
        if (h)
            return h;
    }
    const char *env = getenv("CUTRACE_CUPTI_LIB");
    if (env && *env)
        return dlopen(env, RTLD_NOW | RTLD_LOCAL);
    int v = 0;
    CUresult (*drv)(int *) = (CUresult(*)(int *))ct_fn(ct_driver_sym("cuDriverGetVersion"));
    if (!drv || drv(&v) != CUDA_SUCCESS)
        v = 0;
    static const char *const paths[2][3] = {
        {"libcupti.so.13", "/usr/local/cuda/lib64/libcupti.so.13",
         "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13"},
        {"libcupti.so.12", "/usr/local/cuda/lib64/libcupti.so.12",
         "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.12"}};
    int first = v > 0 && v < 13000; /* a CUDA 12 driver: CUPTI 12 first */
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < 3; i++) {
            void *h = dlopen(paths[k ^ first][i], RTLD_NOW | RTLD_LOCAL);
            if (h)
                return h;
        }
    return NULL;
}

/*
 * Record layouts by the CUPTI API version (cupti_version.h's history; the
 * older records are in the toolkit's cupti_activity_deprecated.h):
 * kernels are CUpti_ActivityKernel9 from CUDA 12.0 (version 19) to 12.9
 * (28 and later 12.x) and CUpti_ActivityKernel10 from 13.0 (130000);
 * copies and synchronisations CUpti_ActivityMemcpy5 and
 * CUpti_ActivitySynchronization before 12.8 (26), CUpti_ActivityMemcpy6
 * and CUpti_ActivitySynchronization2 from it; memsets CUpti_ActivityMemset4
 * throughout. Records are walked with the library's own
 * cuptiActivityGetNextRecord, which knows their sizes. A new record
 * version adds fields at its end: the asserts check that the fields read
 * sit where they did, so a reader of one layout is right for the other.
 */
static enum ct_cupti_layout layout_of(uint32_t v)
{
    if (v >= 130000 && v < 140000)
        return CT_CUPTI_13;
    if (v >= 26 && v < 100)
        return CT_CUPTI_12_8;
    if (v >= 19 && v < 26)
        return CT_CUPTI_12;
    return CT_CUPTI_NONE; /* CUDA 11 and older, or a release after 13.x */
}

#define CT_SAME(A, B, f) _Static_assert(offsetof(A, f) == offsetof(B, f), #A "." #f " moved")
CT_SAME(CUpti_ActivityKernel9, CUpti_ActivityKernel10, start);
CT_SAME(CUpti_ActivityKernel9, CUpti_ActivityKernel10, end);
CT_SAME(CUpti_ActivityKernel9, CUpti_ActivityKernel10, deviceId);
CT_SAME(CUpti_ActivityKernel9, CUpti_ActivityKernel10, streamId);
CT_SAME(CUpti_ActivityKernel9, CUpti_ActivityKernel10, correlationId);
CT_SAME(CUpti_ActivityKernel9, CUpti_ActivityKernel10, name);
CT_SAME(CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, copyKind);
CT_SAME(CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, bytes);
CT_SAME(CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, start);
CT_SAME(CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, end);
CT_SAME(CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, deviceId);
CT_SAME(CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, streamId);
CT_SAME(CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, correlationId);
CT_SAME(CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, start);
CT_SAME(CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, end);
CT_SAME(CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, correlationId);
CT_SAME(CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, streamId);
#undef CT_SAME

static const CUpti_ActivityKind g_kinds[] = {
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION};

int ct_cupti_start(char *why, size_t whylen)
{
    CT_ERRNO_SAVE;
    c.lib = load();
    CT_ERRNO_RESTORE;
    if (!c.lib) {
        snprintf(why, whylen, "CUPTI not found (set CUTRACE_CUPTI_LIB)");
        return -1;
    }
#define SYM(field, type, name) c.field = (type)ct_fn(dlsym(c.lib, name))
    SYM(subscribe, subscribe_fn, "cuptiSubscribe");
    SYM(unsubscribe, unsubscribe_fn, "cuptiUnsubscribe");
    SYM(reg_callbacks, reg_callbacks_fn, "cuptiActivityRegisterCallbacks");
    SYM(reg_timestamp, reg_timestamp_fn, "cuptiActivityRegisterTimestampCallback");
    SYM(enable, enable_fn, "cuptiActivityEnable");
    SYM(disable, enable_fn, "cuptiActivityDisable");
    SYM(flush, flush_fn, "cuptiActivityFlushAll");
    SYM(next, next_fn, "cuptiActivityGetNextRecord");
    SYM(dropped, dropped_fn, "cuptiActivityGetNumDroppedRecords");
    SYM(push, push_fn, "cuptiActivityPushExternalCorrelationId");
    SYM(pop, pop_fn, "cuptiActivityPopExternalCorrelationId");
    SYM(result_string, result_string_fn, "cuptiGetResultString");
    SYM(version, version_fn, "cuptiGetVersion");
    SYM(period, period_fn, "cuptiActivityFlushPeriod");
    SYM(enable_cb, enable_cb_fn, "cuptiEnableCallback");
    SYM(node_id, node_id_fn, "cuptiGetGraphNodeId");
#undef SYM
    if (!c.subscribe || !c.reg_callbacks || !c.reg_timestamp || !c.enable || !c.disable ||
        !c.flush || !c.next || !c.push || !c.pop || !c.version) {
        snprintf(why, whylen, "CUPTI lacks the activity API entry points cutrace needs");
        return -1;
    }
    uint32_t v = 0;
    if (c.version(&v) != CUPTI_SUCCESS || (c.layout = layout_of(v)) == CT_CUPTI_NONE) {
        snprintf(why, whylen,
                 "CUPTI API version %u; cutrace reads the records of CUPTI 12.0 (API version "
                 "19) to 13.x",
                 v);
        return -1;
    }
    CUptiResult r = c.subscribe(&g_sub, on_callback, NULL);
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        snprintf(why, whylen, "CUPTI busy: another profiler holds it (cuptiSubscribe: %s)",
                 result(r));
        return -1;
    }
    if (r != CUPTI_SUCCESS) {
        snprintf(why, whylen, "CUPTI unusable: cuptiSubscribe: %s", result(r));
        return -1;
    }
    /* Our clock first, so every record is on the trace clock. */
    r = c.reg_timestamp(timestamp);
    if (r == CUPTI_SUCCESS)
        r = c.reg_callbacks(buffer_requested, buffer_completed);
    size_t enabled = 0;
    for (; r == CUPTI_SUCCESS && enabled < sizeof(g_kinds) / sizeof(g_kinds[0]); enabled++)
        r = c.enable(g_kinds[enabled]);
    if (r != CUPTI_SUCCESS) {
        snprintf(why, whylen, "CUPTI refused activity recording: %s", result(r));
        for (size_t i = 0; i + 1 < enabled; i++)
            c.disable(g_kinds[i]);
        c.unsubscribe(g_sub);
        return -1;
    }
    /* CUPTI keeps completed intervals in its buffers until a flush; they
     * die with a killed process (the host records survive in the live
     * mapping). A CUTRACE_FLUSH_MS below CUPTI's 100 ms asks for less to
     * be lost that way: CUPTI flushes as often. */
    uint32_t period = ct_cfg.flush_ms && ct_cfg.flush_ms < 100 ? ct_cfg.flush_ms : 100;
    if (c.period && c.period(period) == CUPTI_SUCCESS) {
        char ms[16];
        snprintf(ms, sizeof(ms), "%u", period);
        uint64_t f[CT_META_NFIELDS] = {ct_clock_now(), CT_SCOPE_RECORDER, 0,
                                       ct_intern("cupti_flush_ms"), ct_intern(ms)};
        ct_emit(CT_REC_META, 0, f, CT_META_NFIELDS);
    }
    /* graph edges in replayed nodes' ids (shim/cuda_graph.c); without the
     * callback a graph's ops fall back to their stream's order */
    if (c.enable_cb && c.node_id &&
        c.enable_cb(1, g_sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) !=
            CUPTI_SUCCESS)
        c.node_id = NULL;
    atomic_store(&g_active, 1);
    return 0;
}

void ct_cupti_activities(int on)
{
    if (!atomic_load(&g_active))
        return;
    for (size_t i = 0; i < sizeof(g_kinds) / sizeof(g_kinds[0]); i++)
        (on ? c.enable : c.disable)(g_kinds[i]);
}

void *ct_cupti_lib(void)
{
    return atomic_load(&g_active) ? c.lib : NULL;
}

uint64_t ct_cupti_outside(void)
{
    return atomic_load_explicit(&g_outside, memory_order_relaxed);
}

void ct_cupti_stop(void)
{
    if (!atomic_exchange(&g_active, 0))
        return;
    c.flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    for (size_t i = 0; i < sizeof(g_kinds) / sizeof(g_kinds[0]); i++)
        c.disable(g_kinds[i]);
    c.flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (c.unsubscribe)
        c.unsubscribe(g_sub);
    pthread_mutex_lock(&g_corr_mu);
    pending_flush(1); /* whatever never got its mapping goes out as it is */
    pthread_mutex_unlock(&g_corr_mu);
}
