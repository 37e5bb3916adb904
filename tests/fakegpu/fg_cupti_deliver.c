/*
 * fg_cupti_deliver.c - getting records to the client: the collect and
 * deliver phases (see fg_cupti_internal.h), the background delivery thread,
 * cuptiActivityFlushAll, cuptiActivityFlushPeriod, cuptiActivityGetNextRecord
 * and cuptiActivityGetNumDroppedRecords.
 *
 * Buffers.  A delivery pass asks bufferRequested for a buffer when it has a
 * record to write, fills it back to back (8-byte aligned, as CUPTI does;
 * every record struct's size is a multiple of 8), hands it over through
 * bufferCompleted when the next record does not fit or maxNumRecords is
 * reached, and at the end of the pass hands over the partly filled one
 * too: no buffer is kept between passes.  A record for which
 * bufferRequested gives no buffer, or a fresh buffer too small to hold it,
 * is dropped and counted (cuptiActivityGetNumDroppedRecords); such a too
 * small buffer is returned at once with validSize 0.
 *
 * Timestamps are converted when a record is written: with a registered
 * timestamp callback, t + (cb() - CLOCK_MONOTONIC now), the offset sampled
 * once per record (start and end share it, so durations stay exact) as the
 * tightest of a few paired clock reads, so that a preemption between the
 * two reads does not skew it.
 */
#include "fg_cupti_internal.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static __thread int fgc_in_callback; /* this thread is inside a client callback */

/* ---------------------------------------------------------------- collect */

void fgc_collect(void)
{
    pthread_mutex_lock(&fgc.collect);
    pthread_mutex_lock(&fgc.lock);
    fgc_list taken = fgc.pending;
    fgc.pending = (fgc_list){0};
    const struct fg_cupti_driver *drv = fgc.drv;
    pthread_mutex_unlock(&fgc.lock);

    size_t n = 0;
    for (fgc_rec *r = taken.head; r; r = r->next)
        n += r->handle != NULL;
    if (n && drv) {
        void **h = malloc(n * sizeof *h);
        int64_t *st = malloc(n * sizeof *st), *en = malloc(n * sizeof *en);
        if (h && st && en) {
            size_t i = 0;
            for (fgc_rec *r = taken.head; r; r = r->next)
                if (r->handle)
                    h[i++] = r->handle;
            drv->poll(h, n, st, en); /* takes the driver's lock: we hold only collect */
            i = 0;
            for (fgc_rec *r = taken.head; r; r = r->next) {
                if (!r->handle)
                    continue;
                if (!h[i]) {
                    r->handle = NULL;
                    r->start_ns = st[i];
                    r->end_ns = en[i];
                }
                i++;
            }
        }
        free(h);
        free(st);
        free(en);
    }

    /* Complete: times known and the op has ended in virtual time. */
    int64_t now = fgc_mono_now();
    fgc_list keep = {0}, done = {0};
    for (fgc_rec *r = taken.head, *next; r; r = next) {
        next = r->next;
        r->next = NULL;
        bool complete = !r->handle && (!r->has_times || r->end_ns <= now);
        fgc_list_append(complete ? &done : &keep, r);
    }
    pthread_mutex_lock(&fgc.lock);
    fgc_list_concat(&keep, &fgc.pending); /* older records stay first */
    fgc.pending = keep;
    fgc_list_concat(&fgc.ready, &done);
    pthread_mutex_unlock(&fgc.lock);
    pthread_mutex_unlock(&fgc.collect);
}

void fgc_discard_all(void)
{
    pthread_mutex_lock(&fgc.collect);
    pthread_mutex_lock(&fgc.lock);
    fgc_list all = fgc.pending;
    fgc_list_concat(&all, &fgc.ready);
    fgc.pending = fgc.ready = (fgc_list){0};
    const struct fg_cupti_driver *drv = fgc.drv;
    pthread_mutex_unlock(&fgc.lock);
    for (fgc_rec *r = all.head, *next; r; r = next) {
        next = r->next;
        if (r->handle && drv)
            drv->release(&r->handle, 1);
        free(r);
    }
    pthread_mutex_unlock(&fgc.collect);
}

/* ---------------------------------------------------------------- deliver */

/* Callback clock minus CLOCK_MONOTONIC, now. */
static int64_t fgc_offset(CUpti_TimestampCallbackFunc ts)
{
    if (!ts)
        return 0;
    int64_t best_gap = INT64_MAX, offset = 0;
    for (int i = 0; i < 4 && best_gap > 2000; i++) {
        int64_t a = fgc_mono_now();
        fgc_in_callback++;
        int64_t c = (int64_t)ts();
        fgc_in_callback--;
        int64_t b = fgc_mono_now();
        if (b - a < best_gap) {
            best_gap = b - a;
            offset = c - (a + (b - a) / 2);
        }
    }
    return offset;
}

static void fgc_write(uint8_t *dst, fgc_rec *r, CUpti_TimestampCallbackFunc ts)
{
    if (r->has_times) {
        int64_t off = fgc_offset(ts); /* one sample per record: durations stay exact */
        uint64_t s = (uint64_t)(r->start_ns + off), e = (uint64_t)(r->end_ns + off);
        switch (r->r.any.kind) {
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
            r->r.kernel.start = s;
            r->r.kernel.end = e;
            r->r.kernel.completed = e;
            break;
        case CUPTI_ACTIVITY_KIND_MEMCPY:
            r->r.memcpy.start = s;
            r->r.memcpy.end = e;
            break;
        case CUPTI_ACTIVITY_KIND_MEMSET:
            r->r.memset.start = s;
            r->r.memset.end = e;
            break;
        case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
            r->r.sync.start = s;
            r->r.sync.end = e;
            break;
        default: break;
        }
    }
    memcpy(dst, &r->r, r->size);
}

static void fgc_hand_over(CUpti_BuffersCallbackCompleteFunc completed, uint8_t *buf, size_t size,
                          size_t valid)
{
    fgc_in_callback++;
    completed(NULL, 0, buf, size, valid);
    fgc_in_callback--;
}

static size_t fgc_align_pad(const uint8_t *buf)
{
    return (size_t)(-(uintptr_t)buf & 7u);
}

void fgc_deliver_ready(void)
{
    pthread_mutex_lock(&fgc.lock);
    CUpti_BuffersCallbackRequestFunc requested = fgc.requested;
    CUpti_BuffersCallbackCompleteFunc completed = fgc.completed;
    CUpti_TimestampCallbackFunc ts = fgc.timestamp;
    if (!fgc.ready.head || !requested || !completed) {
        pthread_mutex_unlock(&fgc.lock);
        return;
    }
    fgc_list taken = fgc.ready;
    fgc.ready = (fgc_list){0};
    fgc.inflight++;
    pthread_mutex_unlock(&fgc.lock);

    uint8_t *buf = NULL;
    size_t size = 0, used = 0, max_records = 0, nrec = 0, dropped = 0;
    for (fgc_rec *r = taken.head, *next; r; r = next) {
        next = r->next;
        for (;;) {
            if (!buf) {
                uint8_t *b = NULL;
                size_t sz = 0, maxn = 0;
                fgc_in_callback++;
                requested(&b, &sz, &maxn);
                fgc_in_callback--;
                if (!b || sz < fgc_align_pad(b) + r->size) {
                    dropped++;
                    if (b)
                        fgc_hand_over(completed, b, sz, 0);
                    break;
                }
                buf = b;
                size = sz;
                max_records = maxn;
                used = fgc_align_pad(b);
                nrec = 0;
            }
            if (used + r->size > size || (max_records && nrec >= max_records)) {
                fgc_hand_over(completed, buf, size, used);
                buf = NULL;
                continue;
            }
            fgc_write(buf + used, r, ts);
            used += r->size;
            nrec++;
            break;
        }
        free(r);
    }
    if (buf)
        fgc_hand_over(completed, buf, size, used);

    pthread_mutex_lock(&fgc.lock);
    fgc.dropped += dropped;
    if (--fgc.inflight == 0)
        pthread_cond_broadcast(&fgc.idle);
    pthread_mutex_unlock(&fgc.lock);
}

void fgc_wait_idle(void)
{
    if (fgc_in_callback)
        return; /* our own pass is in flight: waiting would never end */
    pthread_mutex_lock(&fgc.lock);
    while (fgc.inflight)
        pthread_cond_wait(&fgc.idle, &fgc.lock);
    pthread_mutex_unlock(&fgc.lock);
}

/* -------------------------------------------------------- delivery thread */

static void *fgc_thread_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&fgc.lock);
    while (!fgc.exiting) {
        struct timespec ts;
        /* a flush period shorter than the background one is honoured */
        int64_t period =
            fgc.flush_period_ms && (int64_t)fgc.flush_period_ms * 1000000 < FGC_PERIOD_NS
                ? (int64_t)fgc.flush_period_ms * 1000000
                : FGC_PERIOD_NS;
        int64_t t = fgc_mono_now() + period;
        ts.tv_sec = (time_t)(t / 1000000000);
        ts.tv_nsec = (long)(t % 1000000000);
        pthread_cond_timedwait(&fgc.wake, &fgc.lock, &ts);
        if (fgc.exiting)
            break;
        bool work = (fgc.pending.head || fgc.ready.head) && fgc.requested && fgc.completed;
        if (!work)
            continue;
        pthread_mutex_unlock(&fgc.lock);
        fgc_collect();
        fgc_deliver_ready();
        pthread_mutex_lock(&fgc.lock);
    }
    pthread_mutex_unlock(&fgc.lock);
    return NULL;
}

/* At exit the client's state may be going away: stop calling it from this
 * thread (the destructor runs after the program's atexit handlers). */
__attribute__((destructor)) static void fgc_fini(void)
{
    pthread_mutex_lock(&fgc.lock);
    fgc.exiting = true;
    pthread_cond_signal(&fgc.wake);
    pthread_mutex_unlock(&fgc.lock);
}

void fgc_start_thread_locked(void)
{
    if (fgc.thread_started)
        return;
    pthread_attr_t a;
    pthread_attr_init(&a);
    /* Detached: process exit just ends it, nothing waits for it. */
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* signals belong to the program's threads */
    pthread_t t;
    if (pthread_create(&t, &a, fgc_thread_main, NULL) == 0)
        fgc.thread_started = true;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&a);
}

/* ------------------------------------------------------------ entry points */

FGC_EXPORT CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag)
{
    (void)flag; /* forced or not: only complete records are ever delivered */
    pthread_mutex_lock(&fgc.lock);
    bool registered = fgc.requested && fgc.completed;
    pthread_mutex_unlock(&fgc.lock);
    if (!registered)
        return CUPTI_ERROR_INVALID_OPERATION;
    fgc_collect();
    fgc_deliver_ready();
    fgc_wait_idle(); /* records another thread took are delivered too */
    return CUPTI_SUCCESS;
}

FGC_EXPORT CUptiResult CUPTIAPI cuptiActivityFlushPeriod(uint32_t time)
{
    pthread_mutex_lock(&fgc.lock);
    fgc.flush_period_ms = time;
    pthread_mutex_unlock(&fgc.lock);
    return CUPTI_SUCCESS;
}

FGC_EXPORT CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context,
                                                                  uint32_t streamId,
                                                                  size_t *dropped)
{
    (void)context; /* one global queue */
    (void)streamId;
    if (!dropped)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&fgc.lock);
    *dropped = fgc.dropped;
    fgc.dropped = 0;
    pthread_mutex_unlock(&fgc.lock);
    return CUPTI_SUCCESS;
}

FGC_EXPORT CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer,
                                                           size_t validBufferSizeBytes,
                                                           CUpti_Activity **record)
{
    if (!buffer || !record)
        return CUPTI_ERROR_INVALID_PARAMETER;
    uint8_t *end = buffer + validBufferSizeBytes;
    uint8_t *pos;
    if (!*record) {
        pos = buffer + fgc_align_pad(buffer);
    } else {
        uint8_t *cur = (uint8_t *)*record;
        if (cur < buffer || cur >= end)
            return CUPTI_ERROR_INVALID_PARAMETER;
        size_t sz = fgc_record_size((*record)->kind);
        if (!sz)
            return CUPTI_ERROR_INVALID_KIND;
        pos = cur + sz;
    }
    if (pos >= end || (size_t)(end - pos) < sizeof(CUpti_Activity)) {
        *record = NULL;
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    }
    CUpti_ActivityKind kind;
    memcpy(&kind, pos, sizeof kind);
    size_t sz = fgc_record_size(kind);
    if (!sz || (size_t)(end - pos) < sz)
        return CUPTI_ERROR_INVALID_KIND; /* garbage, or a truncated record */
    *record = (CUpti_Activity *)(void *)pos;
    return CUPTI_SUCCESS;
}
