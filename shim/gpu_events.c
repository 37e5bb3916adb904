/*
 * Event-pair GPU timing (--gpu-timing=events, and the fallback when CUPTI
 * cannot be had). Around each op the wrapper records a start and an end
 * event on the op's own stream (taken from a per-context pool, never
 * created on the hot path) and queues the pair; a poller thread resolves
 * pairs in FIFO order with cuEventQuery/cuEventElapsedTime against an
 * anchor event recorded on a private non-blocking stream, whose host time
 * is known, and writes GPU-interval records. Streams under capture are not
 * timed (an event record would become a graph node); their graph launch is.
 * When the pool or the queue is exhausted the op goes untimed and the loss
 * is counted: nothing here waits.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "shim/gpu.h"
#include "shim/mpmc.h"

#define CT_EV_MAX_CTX      16
#define CT_EV_POOL_LOG2    12 /* events per context: 2048 pairs in flight at most */
#define CT_EV_ITEMS_LOG2   13
#define CT_EV_INITIAL      256           /* events created at a context's first timed op */
#define CT_EV_REANCHOR_NS  1000000000ull /* an anchor is replaced at least this often (drift) */
#define CT_EV_SAMPLE_NS    50000000ull   /* a candidate anchor is taken this often */
#define CT_EV_STREAM_SLOTS 1024          /* in-flight counters, by stream handle hash */
#define CT_EV_STREAM_CAP   512           /* pairs in flight per stream before ops go untimed */

typedef CUresult (*ctx_get_fn)(CUcontext *);
typedef CUresult (*ctx_device_fn)(CUdevice *);
typedef CUresult (*ctx_set_fn)(CUcontext);
typedef CUresult (*ev_create_fn)(CUevent *, unsigned);
typedef CUresult (*ev_record_fn)(CUevent, CUstream);
typedef CUresult (*ev_query_fn)(CUevent);
typedef CUresult (*ev_elapsed_fn)(float *, CUevent, CUevent);
typedef CUresult (*capturing_fn)(CUstream, CUstreamCaptureStatus *);
typedef CUresult (*stream_create_fn)(CUstream *, unsigned);
typedef CUresult (*capture_mode_fn)(CUstreamCaptureMode *);

static struct {
    ctx_get_fn ctx_get;
    ctx_device_fn ctx_device;
    ctx_set_fn ctx_set;
    ev_create_fn create;
    ev_record_fn record, record_ptsz;
    ev_query_fn query;
    ev_elapsed_fn elapsed;
    capturing_fn capturing, capturing_ptsz;
    stream_create_fn stream_create;
    capture_mode_fn capture_mode;
} d;

struct ev_ctx {
    _Atomic(CUcontext) ctx; /* claimed slot */
    atomic_int ready;       /* pool filled, anchor stream made */
    struct ct_mpmc free;    /* CUevent handles */
    CUstream anchor_stream; /* poller only from here on */
    CUevent anchor, next_anchor;
    uint64_t anchor_ns, next_anchor_ns, anchored_at,
        sampled_at; /* next_anchor_ns 0: none pending */
    atomic_int created;
    atomic_int gone;   /* its context was destroyed or reset: never used again */
    atomic_int device; /* of its context, -1 when unknown */
};

struct ev_item {
    CUevent start, end;
    int ctx;
    int stream_slot;
    int device;
    uint64_t corr, stream_id, bytes;
    uint32_t name;
    uint8_t type, copy_kind;
    uint8_t blocking; /* brackets a blocking host call: CT_SRC_EVENTS_BLOCKING */
};

static struct ev_ctx g_ctx[CT_EV_MAX_CTX];
static struct ev_item *g_items;
static struct ct_mpmc g_free_items, g_pending;
static _Atomic uint64_t g_untimed;
/* Pairs in flight per stream (streams sharing a slot share the cap, which
 * only makes the cap stricter for them). */
static atomic_int g_in_flight[CT_EV_STREAM_SLOTS];
static pthread_t g_poller;
static atomic_int g_stop;
static atomic_int g_running;
static __thread int tls_ctx __attribute__((tls_model("initial-exec"))) = -1;
static __thread CUcontext tls_ctx_handle __attribute__((tls_model("initial-exec")));

static int resolve(void)
{
#define SYM(field, type, name) d.field = (type)ct_fn(ct_driver_sym(name))
    SYM(ctx_get, ctx_get_fn, "cuCtxGetCurrent");
    SYM(ctx_set, ctx_set_fn, "cuCtxSetCurrent");
    SYM(ctx_device, ctx_device_fn, "cuCtxGetDevice");
    SYM(create, ev_create_fn, "cuEventCreate");
    SYM(record, ev_record_fn, "cuEventRecord");
    SYM(record_ptsz, ev_record_fn, "cuEventRecord_ptsz");
    SYM(query, ev_query_fn, "cuEventQuery");
    SYM(elapsed, ev_elapsed_fn, "cuEventElapsedTime_v2");
    if (!d.elapsed)
        SYM(elapsed, ev_elapsed_fn, "cuEventElapsedTime");
    SYM(capturing, capturing_fn, "cuStreamIsCapturing");
    SYM(capturing_ptsz, capturing_fn, "cuStreamIsCapturing_ptsz");
    SYM(stream_create, stream_create_fn, "cuStreamCreate");
    SYM(capture_mode, capture_mode_fn, "cuThreadExchangeStreamCaptureMode");
#undef SYM
    return d.ctx_get && d.ctx_set && d.create && d.record && d.query && d.elapsed && d.stream_create
               ? 0
               : -1;
}

static void untimed(void)
{
    atomic_fetch_add_explicit(&g_untimed, 1, memory_order_relaxed);
}

/* Slot of the current context, set up at its first timed op (slow path). */
static int ctx_slot(void)
{
    CUcontext ctx = NULL;
    if (d.ctx_get(&ctx) != CUDA_SUCCESS || !ctx)
        return -1;
    if (ctx == tls_ctx_handle && tls_ctx >= 0 &&
        !atomic_load_explicit(&g_ctx[tls_ctx].gone, memory_order_relaxed))
        return tls_ctx;
    for (int i = 0; i < CT_EV_MAX_CTX; i++) {
        CUcontext cur = atomic_load(&g_ctx[i].ctx);
        if (cur == ctx && atomic_load(&g_ctx[i].gone))
            continue; /* a destroyed context whose handle came back */
        if (cur == ctx) {
            if (!atomic_load_explicit(&g_ctx[i].ready, memory_order_acquire))
                return -1; /* another thread is setting it up */
            tls_ctx = i;
            tls_ctx_handle = ctx;
            return i;
        }
        if (cur == NULL) {
            CUcontext expected = NULL;
            if (!atomic_compare_exchange_strong(&g_ctx[i].ctx, &expected, ctx)) {
                i--; /* re-examine this slot */
                continue;
            }
            struct ev_ctx *c = &g_ctx[i];
            CT_ERRNO_SAVE;
            CUdevice dev = -1;
            if (!d.ctx_device || d.ctx_device(&dev) != CUDA_SUCCESS)
                dev = -1;
            atomic_store(&c->device, (int)dev);
            int ok = ct_mpmc_init(&c->free, CT_EV_POOL_LOG2) == 0 &&
                     d.stream_create(&c->anchor_stream, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS;
            for (int k = 0; ok && k < CT_EV_INITIAL; k++) {
                CUevent ev;
                if (d.create(&ev, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
                    break;
                ct_mpmc_push(&c->free, (uint64_t)(uintptr_t)ev);
                atomic_fetch_add(&c->created, 1);
            }
            CT_ERRNO_RESTORE;
            if (!ok)
                return -1; /* the slot stays claimed and never ready: untimed */
            atomic_store_explicit(&c->ready, 1, memory_order_release);
            tls_ctx = i;
            tls_ctx_handle = ctx;
            return i;
        }
    }
    return -1;
}

static CUstream effective(CUstream s, unsigned flags)
{
    if (s == NULL)
        return (flags & CT_APIF_PER_THREAD) ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
    return s;
}

void ct_events_before(CUstream s, unsigned flags, struct ct_gpu_op *op)
{
    int i = ctx_slot();
    if (i < 0) {
        untimed();
        return;
    }
    CUstream es = effective(s, flags);
    int slot = (int)(ct_ptrmap_hash((uintptr_t)es) % CT_EV_STREAM_SLOTS);
    if (atomic_load_explicit(&g_in_flight[slot], memory_order_relaxed) >= CT_EV_STREAM_CAP) {
        untimed(); /* the GPU is far behind on this stream: never wait for it */
        return;
    }
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    if (d.capturing && d.capturing(es, &st) == CUDA_SUCCESS && st != CU_STREAM_CAPTURE_STATUS_NONE)
        return; /* captured: the graph launch is timed instead */
    uint64_t a, b;
    struct ev_ctx *c = &g_ctx[i];
    if (ct_mpmc_pop(&c->free, &a)) {
        untimed();
        return;
    }
    if (ct_mpmc_pop(&c->free, &b)) {
        ct_mpmc_push(&c->free, a);
        untimed();
        return;
    }
    CUresult rr = d.record((CUevent)(uintptr_t)a, es);
    if (rr != CUDA_SUCCESS) {
        ct_mpmc_push(&c->free, a);
        ct_mpmc_push(&c->free, b);
        if (rr == CUDA_ERROR_INVALID_HANDLE || rr == CUDA_ERROR_CONTEXT_IS_DESTROYED)
            atomic_store(&c->gone, 1); /* its context went (a released primary context
                                        * retained again has the same handle): the next
                                        * op takes a new slot */
        untimed();
        return;
    }
    op->start = a;
    op->end = b;
    op->ctx = i;
    op->stream_slot = slot;
}

void ct_events_after(struct ct_gpu_op *op, CUstream s, unsigned flags, uint64_t corr,
                     uint64_t stream_id, int device, unsigned type, uint32_t name, uint64_t bytes,
                     unsigned copy_kind)
{
    struct ev_ctx *c = &g_ctx[op->ctx];
    uint64_t idx;
    if (d.record((CUevent)(uintptr_t)op->end, effective(s, flags)) != CUDA_SUCCESS ||
        ct_mpmc_pop(&g_free_items, &idx)) {
        /* The start event may still be pending on the GPU; reusing it is
         * harmless (re-recording an event just moves it). */
        ct_mpmc_push(&c->free, op->start);
        ct_mpmc_push(&c->free, op->end);
        untimed();
        return;
    }
    struct ev_item *it = &g_items[idx];
    it->start = (CUevent)(uintptr_t)op->start;
    it->end = (CUevent)(uintptr_t)op->end;
    it->ctx = op->ctx;
    it->stream_slot = op->stream_slot;
    it->device = device;
    it->corr = corr;
    it->stream_id = stream_id;
    it->bytes = bytes;
    it->name = name;
    it->type = (uint8_t)type;
    it->copy_kind = (uint8_t)copy_kind;
    /* a synchronous copy with a host end returns when the copy is done,
     * staging a pageable buffer on the host meanwhile: the pair times the
     * host call (the decoder says so: memory_blocking_us) */
    it->blocking = type == CT_GPU_MEMCPY && !(flags & CT_APIF_ASYNC) && copy_kind != CT_COPY_DTOD;
    atomic_fetch_add_explicit(&g_in_flight[op->stream_slot], 1, memory_order_relaxed);
    if (ct_mpmc_push(&g_pending, idx)) {
        atomic_fetch_sub_explicit(&g_in_flight[op->stream_slot], 1, memory_order_relaxed);
        ct_mpmc_push(&g_free_items, idx);
        ct_mpmc_push(&c->free, op->start);
        ct_mpmc_push(&c->free, op->end);
        untimed();
    }
}

/* ---- poller ---- */

static CUcontext g_poller_ctx;

static int use_ctx(int i)
{
    CUcontext ctx = atomic_load(&g_ctx[i].ctx);
    if (ctx != g_poller_ctx) {
        if (d.ctx_set(ctx) != CUDA_SUCCESS)
            return -1;
        g_poller_ctx = ctx;
    }
    return 0;
}

/*
 * Keeps an anchor per context: an event on the private stream, and the
 * host time its record call began. The device stamps the event at or after
 * that instant (an idle stream, but its stamp can come late: a preempted
 * device thread, a busy driver), so host - GPU time of an anchor is never
 * above the true offset, and the candidate with the largest offset is the
 * closest: a candidate is taken every CT_EV_SAMPLE_NS and kept when its
 * offset is larger, and at least every CT_EV_REANCHOR_NS the anchor is
 * renewed (clock drift).
 */
static void anchor(int i, uint64_t now)
{
    struct ev_ctx *c = &g_ctx[i];
    if (c->next_anchor && c->next_anchor_ns && d.query(c->next_anchor) == CUDA_SUCCESS) {
        float ms = 0;
        /* offset(next) - offset(anchor) = host gap - GPU gap */
        int better = !c->anchor ||
                     (d.elapsed(&ms, c->anchor, c->next_anchor) == CUDA_SUCCESS &&
                      (double)(int64_t)(c->next_anchor_ns - c->anchor_ns) - (double)ms * 1e6 > 0);
        if (better || now - c->anchored_at >= CT_EV_REANCHOR_NS) {
            CUevent old = c->anchor;
            c->anchor = c->next_anchor;
            c->anchor_ns = c->next_anchor_ns;
            c->next_anchor = old; /* reuse */
            c->anchored_at = now;
        }
        c->next_anchor_ns = 0; /* taken: the next candidate is due */
        c->sampled_at = now;
    }
    if (c->anchor && (c->next_anchor_ns || now - c->sampled_at < CT_EV_SAMPLE_NS))
        return;
    if (!c->next_anchor && d.create(&c->next_anchor, CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
        c->next_anchor = NULL;
        return;
    }
    uint64_t t0 = ct_clock_ns_now();
    CUresult r = d.record(c->next_anchor, c->anchor_stream);
    if (r == CUDA_SUCCESS)
        c->next_anchor_ns = t0;
    if (!c->anchor && r == CUDA_SUCCESS) {
        c->anchored_at = now; /* first anchor: promoted as soon as complete */
    }
}

static void emit_interval(const struct ev_item *it, uint64_t start, uint64_t end)
{
    uint64_t f[CT_GPU_NFIELDS];
    f[CT_GPU_START] = start;
    f[CT_GPU_END] = end;
    f[CT_GPU_DEVICE] = (uint64_t)(int64_t)it->device;
    f[CT_GPU_STREAM] = it->stream_id;
    f[CT_GPU_CORR] = it->corr;
    f[CT_GPU_TYPE] = it->type;
    f[CT_GPU_NAME] = it->name;
    f[CT_GPU_BYTES] = it->bytes;
    f[CT_GPU_COPY_KIND] = it->copy_kind;
    f[CT_GPU_SOURCE] = it->blocking ? CT_SRC_EVENTS_BLOCKING : CT_SRC_EVENTS;
    ct_emit(CT_REC_GPU, CT_RF_NS, f, CT_GPU_NFIELDS);
}

/* Resolves completed pairs at the head of the queue. Returns how many. */
static int poll_once(int final)
{
    uint64_t now = ct_clock_ns_now();
    for (int i = 0; i < CT_EV_MAX_CTX; i++)
        if (atomic_load_explicit(&g_ctx[i].ready, memory_order_acquire) &&
            !atomic_load(&g_ctx[i].gone) && use_ctx(i) == 0)
            anchor(i, now);
    int done = 0;
    uint64_t idx;
    while (ct_mpmc_peek(&g_pending, &idx) == 0) {
        struct ev_item *it = &g_items[idx];
        struct ev_ctx *c = &g_ctx[it->ctx];
        int dead = atomic_load(&c->gone) || use_ctx(it->ctx) != 0;
        if (!dead && !c->anchor)
            break;
        /* a pair of a context that is gone can never be read: untimed, and
         * the pairs behind it go on (it must not hold the queue) */
        CUresult q = dead ? CUDA_ERROR_INVALID_CONTEXT : d.query(it->end);
        if (q == CUDA_ERROR_NOT_READY && !final)
            break; /* FIFO: later pairs wait for this one */
        float ms_start = 0, ms_end = 0;
        int ok = q == CUDA_SUCCESS && d.elapsed(&ms_start, c->anchor, it->start) == CUDA_SUCCESS &&
                 d.elapsed(&ms_end, c->anchor, it->end) == CUDA_SUCCESS;
        if (q == CUDA_ERROR_NOT_READY)
            break; /* final pass: give up on work still running */
        ct_mpmc_pop(&g_pending, &idx);
        if (ok) {
            uint64_t s = c->anchor_ns + (uint64_t)(int64_t)((double)ms_start * 1e6);
            uint64_t e = c->anchor_ns + (uint64_t)(int64_t)((double)ms_end * 1e6);
            emit_interval(it, s, e >= s ? e : s);
        } else {
            untimed();
        }
        atomic_fetch_sub_explicit(&g_in_flight[it->stream_slot], 1, memory_order_relaxed);
        ct_mpmc_push(&c->free, (uint64_t)(uintptr_t)it->start);
        ct_mpmc_push(&c->free, (uint64_t)(uintptr_t)it->end);
        ct_mpmc_push(&g_free_items, idx);
        done++;
    }
    /* Keep every pool topped up to its initial size as contexts get busier. */
    for (int i = 0; i < CT_EV_MAX_CTX; i++) {
        struct ev_ctx *c = &g_ctx[i];
        if (!atomic_load_explicit(&c->ready, memory_order_acquire) || atomic_load(&c->gone))
            continue;
        uint64_t free_now = atomic_load(&c->free.tail) - atomic_load(&c->free.head);
        int created = atomic_load(&c->created);
        if (free_now < CT_EV_INITIAL / 2 && created + 256 <= (int)(c->free.mask + 1) &&
            use_ctx(i) == 0) {
            for (int k = 0; k < 256; k++) {
                CUevent ev;
                if (d.create(&ev, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
                    break;
                ct_mpmc_push(&c->free, (uint64_t)(uintptr_t)ev);
                atomic_fetch_add(&c->created, 1);
            }
        }
    }
    return done;
}

static uint64_t g_untimed_reported;

static void report_untimed(void)
{
    uint64_t n = atomic_load(&g_untimed);
    if (n == g_untimed_reported)
        return;
    uint64_t f[CT_DROP_NFIELDS] = {ct_clock_ns_now(), n - g_untimed_reported, CT_DROP_GPU_UNTIMED};
    if (ct_emit(CT_REC_DROP, CT_RF_NS, f, CT_DROP_NFIELDS) == 0)
        g_untimed_reported = n;
}

/* Teardown passes asked for by ct_events_before_teardown. */
static _Atomic uint64_t g_drain_req, g_drain_done;
#define CT_EV_DRAIN_NS 150000000ull /* the poller reads pairs of a closing context this long */
#define CT_EV_WAIT_NS  200000000ull /* the closing thread waits this long for it, at most */

static void drain(void)
{
    uint64_t end = ct_clock_mono_ns() + CT_EV_DRAIN_NS, idx;
    while (ct_mpmc_peek(&g_pending, &idx) == 0 && ct_clock_mono_ns() < end)
        if (poll_once(0) == 0) {
            struct timespec ts = {0, 100000L};
            nanosleep(&ts, NULL);
        }
}

void ct_events_before_teardown(CUcontext ctx, int device, int wait)
{
    (void)ctx;
    (void)device; /* every pending pair is read: the queue is FIFO */
    uint64_t idx;
    if (!atomic_load(&g_running) || ct_mpmc_peek(&g_pending, &idx) != 0)
        return;
    uint64_t want = atomic_fetch_add(&g_drain_req, 1) + 1;
    if (!wait)
        return;
    uint64_t end = ct_clock_mono_ns() + CT_EV_WAIT_NS;
    while (atomic_load(&g_drain_done) < want && ct_clock_mono_ns() < end) {
        struct timespec ts = {0, 100000L};
        nanosleep(&ts, NULL);
    }
}

void ct_events_after_teardown(CUcontext ctx, int device)
{
    /* a destroyed context by its handle; a reset primary context (which
     * keeps its handle) by its device */
    for (int i = 0; i < CT_EV_MAX_CTX; i++)
        if ((ctx && atomic_load(&g_ctx[i].ctx) == ctx) ||
            (!ctx && device >= 0 && atomic_load(&g_ctx[i].ready) &&
             atomic_load(&g_ctx[i].device) == device))
            atomic_store(&g_ctx[i].gone, 1);
}

static void *poller_main(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    ct_tls_guard = 1;
    if (d.capture_mode) {
        /* relaxed: our event calls must never invalidate a job's capture */
        CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
        d.capture_mode(&m);
    }
    while (!atomic_load(&g_stop)) {
        uint64_t req = atomic_load(&g_drain_req);
        if (req != atomic_load(&g_drain_done)) {
            drain();
            atomic_store(&g_drain_done, req);
        }
        int n = poll_once(0);
        report_untimed();
        struct timespec ts = {0, n ? 200000L : 1000000L};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

int ct_events_start(char *why, size_t whylen)
{
    if (resolve() != 0) {
        snprintf(why, whylen, "event timing unavailable: the driver lacks event entry points");
        return -1;
    }
    size_t n = (size_t)1 << CT_EV_ITEMS_LOG2;
    void *p = mmap(NULL, n * sizeof(struct ev_item), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED || ct_mpmc_init(&g_free_items, CT_EV_ITEMS_LOG2) ||
        ct_mpmc_init(&g_pending, CT_EV_ITEMS_LOG2)) {
        snprintf(why, whylen, "event timing unavailable: out of memory");
        return -1;
    }
    g_items = p;
    for (uint64_t i = 0; i < n; i++)
        ct_mpmc_push(&g_free_items, i);
    if (pthread_create(&g_poller, NULL, poller_main, NULL) != 0) {
        snprintf(why, whylen, "event timing unavailable: cannot start its thread");
        return -1;
    }
    atomic_store(&g_running, 1);
    return 0;
}

void ct_events_stop(unsigned timeout_ms)
{
    if (!atomic_load(&g_running))
        return;
    atomic_store(&g_stop, 1);
    pthread_join(g_poller, NULL);
    atomic_store(&g_running, 0);
    /* Resolve what has finished (waiting up to timeout_ms for the rest). */
    uint64_t deadline = ct_clock_mono_ns() + (uint64_t)timeout_ms * 1000000u;
    uint64_t idx;
    while (ct_mpmc_peek(&g_pending, &idx) == 0 && ct_clock_mono_ns() < deadline) {
        if (poll_once(0) == 0) {
            struct timespec ts = {0, 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    poll_once(1);
    while (ct_mpmc_pop(&g_pending, &idx) == 0)
        untimed();
    report_untimed();
}
