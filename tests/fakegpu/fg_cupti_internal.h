/*
 * fg_cupti_internal.h - shared state of the fake CUPTI (libcupti.so.13),
 * built on the simulated driver through fg_cupti_hooks.h.
 *
 * Records flow: the driver's hooks (on API threads, under the driver's
 * lock) append records to the pending list; a delivery pass (the background
 * thread every FGC_PERIOD_NS, cuptiActivityFlushAll, cuptiFinalize) first
 * "collects" - asks the driver for the times of ops still unresolved and
 * moves every record whose end has passed to the ready list - then
 * "delivers" - takes the ready list and copies records into client buffers
 * through the buffer callbacks.
 *
 * Locks (order: collect -> driver lock -> state lock):
 *  - fgc.lock guards every field below; hooks take it under the driver's
 *    lock, so nothing holding it may call the driver or a client callback;
 *  - fgc.collect serialises collect phases (it protects the op handles
 *    being polled); it is held across the driver's poll, never across a
 *    client callback.
 * Client callbacks (bufferRequested/Completed, timestamp, the subscriber's
 * callback) run with no lock held.
 *
 * The CUPTI headers are included with default visibility: the library is
 * built with hidden visibility, so exactly the cupti* entry points are
 * exported.
 */
#ifndef FG_CUPTI_INTERNAL_H
#define FG_CUPTI_INTERNAL_H

#pragma GCC visibility push(default)
#include <cupti.h>
#pragma GCC visibility pop

#include "fg_cupti_hooks.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define FGC_PERIOD_NS    10000000 /* background delivery period: 10 ms */
#define FGC_WAKE_RECORDS 4096     /* ready records that wake the thread early ("buffer full") */

/* One activity record on its way to a client buffer. */
typedef struct fgc_rec {
    struct fgc_rec *next;
    void *handle;             /* driver op whose times are not known yet, else NULL */
    bool has_times;           /* start_ns/end_ns meaningful (not for external correlation) */
    int64_t start_ns, end_ns; /* CLOCK_MONOTONIC, converted when written out */
    uint32_t size;            /* bytes of the record in a buffer */
    union {
        CUpti_Activity any;
        CUpti_ActivityKernel10 kernel;
        CUpti_ActivityMemcpy6 memcpy;
        CUpti_ActivityMemset4 memset;
        CUpti_ActivitySynchronization2 sync;
        CUpti_ActivityExternalCorrelation ext;
    } r;
} fgc_rec;

typedef struct fgc_list {
    fgc_rec *head, *tail;
    size_t n;
} fgc_list;

struct fgc_global {
    pthread_mutex_t lock;
    pthread_mutex_t collect;
    pthread_cond_t wake; /* background thread */
    pthread_cond_t idle; /* inflight dropped */
    bool enabled[CUPTI_ACTIVITY_KIND_COUNT];
    bool subscribed;
    bool cb_clone; /* the subscriber enabled RESOURCE / GRAPHNODE_CLONED */
    CUpti_BuffersCallbackRequestFunc requested;
    CUpti_BuffersCallbackCompleteFunc completed;
    CUpti_TimestampCallbackFunc timestamp;
    const struct fg_cupti_driver *drv; /* NULL until attached */
    fgc_list pending, ready;
    size_t dropped;
    int inflight; /* delivery passes between taking the ready list and finishing */
    bool thread_started, exiting, atfork_set;
    uint32_t flush_period_ms; /* cuptiActivityFlushPeriod: used when below FGC_PERIOD_NS */
};
extern struct fgc_global fgc;

#define FGC_EXPORT __attribute__((visibility("default")))

int64_t fgc_mono_now(void);
uint32_t fgc_api_version(void);
size_t fgc_record_size(CUpti_ActivityKind kind); /* 0: not a kind this library writes */
bool fgc_busy(void);                             /* FAKEGPU_CUPTI_BUSY=1 */
void fgc_list_append(fgc_list *l, fgc_rec *r);   /* appends one record */
void fgc_list_concat(fgc_list *a, fgc_list *b);  /* a += b; b emptied */
/* The driver table, attaching first if need be (no lock held); NULL when
 * no simulated driver is loaded or it speaks another FG_CUPTI_ABI. */
const struct fg_cupti_driver *fgc_driver(void);

/* fg_cupti_callback.c */
void fgc_unsubscribe_locked(void); /* under fgc.lock: forget the subscriber */
void fgc_hook_node_cloned(const struct fg_cupti_clone *clone);

/* fg_cupti_record.c */
extern const struct fg_cupti_hooks fgc_hooks;
void fgc_ext_clear_thread(void);

/* fg_cupti_deliver.c */
void fgc_collect(void);
void fgc_deliver_ready(void);
void fgc_wait_idle(void); /* unless called from a client callback */
void fgc_start_thread_locked(void);
void fgc_discard_all(void); /* drop every record (releasing op handles) */

#endif
