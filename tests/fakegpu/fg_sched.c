/*
 * fg_sched.c - virtual time and the op scheduler.
 *
 * Time model: virtual time is CLOCK_MONOTONIC.  An op starts at
 * max(enqueue time, end of every dependency) and ends start + duration.
 * Dependencies are: the previous op on the same stream (FIFO), the implicit
 * legacy-stream edges (see fg_enqueue), and explicit ones (stream waits on
 * events).  The nodes of a replayed graph are "detached" ops
 * (fg_enqueue_detached): they follow their graph predecessors only, not
 * each other, so that independent branches overlap.
 *
 * Because durations are known up front, most ops are fully "resolved"
 * (start and end known) the moment they are enqueued and never touch the
 * pending list; nothing runs anywhere, the GPU is just arithmetic.
 *
 * Two things make an op lazy and put it on the pending list:
 *  - its end is not known yet: host functions (end = when the function
 *    returns) and resolver ops (FG_OP_EXTERNAL, the seam for collectives);
 *    everything depending on them waits too;
 *  - its side effect (copy, memset, free, host call) cannot run yet because
 *    an earlier op's side effect has not run.  Side effects of copies and
 *    memsets run as soon as their dependencies' effects have run, i.e.
 *    usually inline at enqueue (bytes may move before the virtual end; any
 *    program that reads them only after a synchronize cannot tell).
 *
 * fg_progress() makes one pass over the pending list in enqueue order.
 * Dependencies are always older than their dependents, so one pass settles
 * everything that can be settled.  A detached worker thread runs host
 * functions once their virtual start has come and re-runs the pass; waiters
 * also run it (that is what makes resolvers lazy: they are polled from
 * queries and synchronizes).
 */
#include "fg_internal.h"
#include "fg_throttle.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FG_POLL_NS 1000000 /* resolver polling period while someone waits */

int64_t fg_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct timespec fg_ts(int64_t t)
{
    struct timespec ts = {.tv_sec = (time_t)(t / 1000000000), .tv_nsec = (long)(t % 1000000000)};
    return ts;
}

void fg_sleep_until(int64_t t_ns)
{
    struct timespec ts = fg_ts(t_ns);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* A synchronous copy's host call returns when the copy is done: the driver
 * spins for it (staging pageable memory through its pinned buffers, it is
 * busy throughout). A sleep would add the host's timer latency, 60-600 us
 * on a loaded VM, to a 200 KB copy's 8 us: the last FG_SPIN_NS are spun. */
#define FG_SPIN_NS 300000

static void fg_return_at(int64_t t_ns)
{
    if (t_ns - fg_now() > FG_SPIN_NS)
        fg_sleep_until(t_ns - FG_SPIN_NS);
    while (fg_now() < t_ns)
        ;
}

static int64_t fg_max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* ------------------------------------------------------------------ ops */

void fg_op_ref(fg_op *op)
{
    op->refs++;
}

static void fg_op_drop_deps(fg_op *op)
{
    fg_op **deps = op->deps;
    size_t n = op->ndeps;
    op->deps = NULL;
    op->ndeps = 0;
    for (size_t i = 0; i < n; i++)
        fg_op_unref(deps[i]);
    free(deps);
}

void fg_op_unref(fg_op *op)
{
    if (op && --op->refs == 0) {
        fg_op_drop_deps(op);
        free(op);
    }
}

static bool fg_op_finished(const fg_op *op)
{
    return op->resolved && op->executed;
}

static void fg_op_add_dep(fg_op *op, fg_op *dep, size_t *cap)
{
    if (!dep || dep == op)
        return;
    if (fg_op_finished(dep)) {
        /* Only its end time matters any more: fold it in, keep no pointer. */
        op->min_start_ns = fg_max64(op->min_start_ns, dep->end_ns);
        return;
    }
    if (!fg_grow((void **)&op->deps, cap, op->ndeps + 1, sizeof *op->deps))
        abort();
    fg_op_ref(dep);
    op->deps[op->ndeps++] = dep;
}

static void fg_copy_effect(const fg_desc *d)
{
    if (!d->u.copy.dst || !d->u.copy.src || !d->u.copy.width)
        return;
    for (size_t z = 0; z < d->u.copy.depth; z++)
        for (size_t y = 0; y < d->u.copy.height; y++)
            memmove(d->u.copy.dst + z * d->u.copy.dslice + y * d->u.copy.dpitch,
                    d->u.copy.src + z * d->u.copy.sslice + y * d->u.copy.spitch, d->u.copy.width);
}

static void fg_memset_effect(const fg_desc *d)
{
    for (size_t y = 0; y < d->u.memset.height; y++) {
        char *row = d->u.memset.dst + y * d->u.memset.pitch;
        if (d->u.memset.elsize == 1) {
            memset(row, (int)(d->u.memset.value & 0xff), d->u.memset.width);
            continue;
        }
        uint16_t v16 = (uint16_t)d->u.memset.value;
        uint32_t v32 = d->u.memset.value;
        for (size_t x = 0; x < d->u.memset.width; x++) {
            if (d->u.memset.elsize == 2)
                memcpy(row + x * 2, &v16, 2);
            else
                memcpy(row + x * 4, &v32, 4);
        }
    }
}

/* Try to settle op's timing and side effect; true when something changed. */
static bool fg_op_advance(fg_op *op)
{
    bool changed = false;
    if (!op->start_known) {
        int64_t st = op->min_start_ns;
        bool ok = true;
        for (size_t i = 0; i < op->ndeps && ok; i++) {
            ok = op->deps[i]->resolved;
            st = fg_max64(st, op->deps[i]->end_ns);
        }
        if (ok) {
            op->start_ns = st;
            op->start_known = true;
            changed = true;
        }
    }
    if (op->start_known && !op->resolved && op->d.kind != FG_OP_HOSTFN) {
        int64_t end = op->start_ns + op->d.duration_ns;
        if (op->d.kind == FG_OP_KERNEL && !op->d.resolve) /* a power-capped device is slower */
            end = fg_throttle_end(op->start_ns, op->d.duration_ns, fg_cap_ns(op->device));
        if (!op->d.resolve || op->d.resolve(op->start_ns, &end, op->d.resolve_arg)) {
            op->end_ns = fg_max64(end, op->start_ns);
            op->resolved = true;
            changed = true;
            fg_activity_op_locked(op); /* GPM's activity integrals (fg_activity.c) */
        }
    }
    if (!op->executed && !op->deps_executed) {
        bool all = true;
        for (size_t i = 0; i < op->ndeps && all; i++)
            all = op->deps[i]->executed;
        op->deps_executed = all;
    }
    if (!op->executed && op->deps_executed) {
        switch (op->d.kind) {
        case FG_OP_HOSTFN: break; /* the worker runs it once its start time has come */
        case FG_OP_COPY:
            fg_copy_effect(&op->d);
            op->executed = true;
            break;
        case FG_OP_MEMSET:
            fg_memset_effect(&op->d);
            op->executed = true;
            break;
        case FG_OP_FREE:
            fg_mem_release_locked((uintptr_t)op->d.u.free.ptr);
            op->executed = true;
            break;
        default:
            /* Resolver ops count as executed once resolved, so that data
             * movement a resolver implies is ordered before later copies. */
            op->executed = op->d.resolve ? op->resolved : true;
            break;
        }
        changed |= op->executed;
    }
    if (fg_op_finished(op) && op->deps)
        fg_op_drop_deps(op);
    return changed;
}

/* --------------------------------------------------------------- worker */

static void fg_run_hostfn(fg_op *op)
{
    op->running = true;
    fg_op_ref(op);
    FG_UNLOCK();
    if (op->d.u.host.cb)
        op->d.u.host.cb(op->d.u.host.cb_stream, CUDA_SUCCESS, op->d.u.host.arg);
    else if (op->d.u.host.fn)
        op->d.u.host.fn(op->d.u.host.arg);
    FG_LOCK();
    op->end_ns = fg_max64(fg_now(), op->start_ns);
    op->resolved = true;
    op->executed = true;
    op->running = false;
    fg_op_unref(op);
}

static void *fg_worker_main(void *arg)
{
    (void)arg;
    FG_LOCK();
    for (;;) {
        fg_progress();
        int64_t now = fg_now();
        int64_t wake = INT64_MAX;
        fg_op *ready = NULL;
        for (fg_op *op = fg.pending_head; op; op = op->next) {
            if (op->d.kind == FG_OP_HOSTFN && !op->executed && !op->running && op->start_known &&
                op->deps_executed) {
                if (op->start_ns <= now) {
                    ready = op;
                    break;
                }
                if (op->start_ns < wake)
                    wake = op->start_ns;
            } else if (op->d.resolve && !op->resolved && now + FG_POLL_NS < wake) {
                wake = now + FG_POLL_NS;
            }
        }
        if (ready) {
            fg_run_hostfn(ready);
            continue;
        }
        if (wake == INT64_MAX) {
            pthread_cond_wait(&fg.worker_cond, &fg.lock);
        } else {
            struct timespec ts = fg_ts(wake);
            pthread_cond_timedwait(&fg.worker_cond, &fg.lock, &ts);
        }
    }
    return NULL;
}

static void fg_ensure_worker(void)
{
    if (fg.worker_started)
        return;
    pthread_attr_t a;
    pthread_attr_init(&a);
    /* Detached and never joined: process exit simply ends it. */
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* signals belong to the program's threads */
    pthread_t t;
    if (pthread_create(&t, &a, fg_worker_main, NULL) == 0)
        fg.worker_started = true;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&a);
}

void fg_sched_atfork_child(void)
{
    fg.worker_started = false;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&fg.progress_cond, &ca);
    pthread_cond_init(&fg.worker_cond, &ca);
    pthread_condattr_destroy(&ca);
}

/* ------------------------------------------------------------ scheduling */

void fg_progress(void)
{
    bool changed = false;
    fg_op *prev = NULL;
    for (fg_op *op = fg.pending_head; op;) {
        changed |= fg_op_advance(op);
        fg_op *next = op->next;
        if (fg_op_finished(op)) {
            if (prev)
                prev->next = next;
            else
                fg.pending_head = next;
            if (fg.pending_tail == op)
                fg.pending_tail = prev;
            op->next = NULL;
            fg_op_unref(op);
        } else {
            prev = op;
        }
        op = next;
    }
    if (changed) {
        pthread_cond_broadcast(&fg.progress_cond);
        pthread_cond_signal(&fg.worker_cond);
    }
}

static fg_op *fg_op_new(const fg_stream *s, const fg_desc *d, int64_t min_start_ns)
{
    fg_op *op = calloc(1, sizeof *op);
    if (!op)
        abort();
    op->refs = 1;
    op->d = *d;
    op->min_start_ns = min_start_ns;
    op->device = s->ctx ? s->ctx->device : 0;
    return op;
}

/* Settle what can be settled now; what cannot waits on the pending list. */
static void fg_op_schedule(fg_op *op)
{
    fg_op_advance(op);
    if (!fg_op_finished(op)) {
        fg_op_ref(op); /* the pending list's reference */
        if (fg.pending_tail)
            fg.pending_tail->next = op;
        else
            fg.pending_head = op;
        fg.pending_tail = op;
        fg_ensure_worker();
        pthread_cond_signal(&fg.worker_cond);
    }
}

fg_op *fg_enqueue_detached(fg_stream *s, const fg_desc *d, fg_op *const *deps, size_t ndeps,
                           int64_t min_start_ns)
{
    fg_op *op = fg_op_new(s, d, min_start_ns);
    size_t cap = 0;
    for (size_t i = 0; i < ndeps; i++)
        fg_op_add_dep(op, deps[i], &cap);
    fg_op_schedule(op);
    return op;
}

fg_op *fg_enqueue(fg_stream *s, const fg_desc *d, fg_op *const *extra, size_t nextra)
{
    fg_op *op = fg_op_new(s, d, fg_now()); /* its reference is the stream's, as s->last */
    size_t cap = 0;
    fg_ctx *c = s->ctx;
    fg_op_add_dep(op, s->last, &cap);
    /* CUDA's implicit synchronisation: the legacy stream waits for all
     * blocking streams of its context, and blocking streams (including
     * per-thread default streams) wait for the legacy stream. */
    if (s->kind == FG_S_LEGACY) {
        for (size_t i = 0; i < c->nstreams; i++)
            if (fg_stream_blocking(c->streams[i]))
                fg_op_add_dep(op, c->streams[i]->last, &cap);
        for (size_t i = 0; i < c->norphans; i++)
            fg_op_add_dep(op, c->orphans[i], &cap);
    } else if (fg_stream_blocking(s) && c->legacy) {
        fg_op_add_dep(op, c->legacy->last, &cap);
    }
    for (size_t i = 0; i < nextra; i++)
        fg_op_add_dep(op, extra[i], &cap);
    fg_op_schedule(op);
    fg_op_unref(s->last);
    s->last = op;
    return op;
}

static void fg_wait_until(fg_op *const *ops, size_t n, int spin);

CUresult fg_submit(fg_stream *s, const fg_desc *d, int wait)
{
    if (s->capture)
        return fg_graph_record_locked(s, d);
    fg_op *op = fg_enqueue(s, d, NULL, 0);
    const struct fg_cupti_hooks *h = fg_cupti();
    if (__builtin_expect(h != NULL, 0))
        fg_cupti_op_locked(h, s, op);
    if (wait)
        fg_wait_until(&op, 1, wait == FG_WAIT_SPIN);
    return CUDA_SUCCESS;
}

bool fg_op_done(fg_op *op, int64_t now)
{
    fg_progress();
    return fg_op_finished(op) && op->end_ns <= now;
}

void fg_wait_ops_locked(fg_op *const *ops, size_t n)
{
    fg_wait_until(ops, n, 0);
}

static void fg_wait_until(fg_op *const *ops, size_t n, int spin)
{
    /* The ops may be dropped by their streams while the lock is released. */
    for (size_t i = 0; i < n; i++)
        fg_op_ref(ops[i]);
    for (;;) {
        fg_progress();
        bool all = true;
        for (size_t i = 0; i < n && all; i++)
            all = fg_op_finished(ops[i]);
        if (all)
            break;
        if (fg.pending_head)
            fg_ensure_worker();
        struct timespec ts = fg_ts(fg_now() + FG_POLL_NS);
        pthread_cond_timedwait(&fg.progress_cond, &fg.lock, &ts);
    }
    int64_t end = 0;
    for (size_t i = 0; i < n; i++) {
        end = fg_max64(end, ops[i]->end_ns);
        fg_op_unref(ops[i]);
    }
    FG_UNLOCK();
    if (spin)
        fg_return_at(end);
    else
        fg_sleep_until(end);
    FG_LOCK();
}

void fg_drain_effects_locked(void)
{
    for (;;) {
        fg_progress();
        bool busy = false;
        for (fg_op *op = fg.pending_head; op && !busy; op = op->next)
            busy = !op->executed;
        if (!busy)
            return;
        fg_ensure_worker();
        struct timespec ts = fg_ts(fg_now() + FG_POLL_NS);
        pthread_cond_timedwait(&fg.progress_cond, &fg.lock, &ts);
    }
}
