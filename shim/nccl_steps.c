/*
 * Raw NCCL proxy steps, on request and bounded (CUTRACE_NCCL_STEPS,
 * docs/nccl.md "Raw proxy steps"). The profiler plugin
 * (shim/nccl_profiler.c) aggregates every ProxyStep into its ProxyOp's
 * CT_REC_NCCL_PROXY record whatever this says; with a budget of N, the
 * first N steps a process stops (of ops it records) are each written as a
 * CT_REC_NCCL_STEP record too, from the step's own state when it stops.
 * Past the budget a step costs one atomic add more than with raw steps off,
 * and the count of such steps is written at exit.
 *
 * Why a count and not a time window: a count bounds the trace whatever the
 * step rate (at ~5-10 bytes a step after zstd, the default 1 M steps is
 * under 10 MB a process), where a window's size grows with the rate; the
 * capture windows (CUTRACE_START=paused and `cutrace control`, or
 * CUTRACE_DURATION) already choose when: steps of ops outside a window are
 * neither recorded nor counted, so the budget is spent inside them.
 *
 * The proxy thread's buffer is shared with the ProxyOps' aggregates: a raw
 * step is written only while that buffer is less than half full, so that
 * when the writer falls behind a burst of steps (millions a second) the
 * steps are left out, counted as not recorded raw, and the aggregates
 * still find the room they found without raw steps.
 *
 * Runs on NCCL's proxy threads: no lock, no allocation, no syscall.
 */
#include "shim/nccl_steps.h"

#include <stdatomic.h>
#include <stdio.h>

#include "shim/shim.h"

uint64_t ct_nsteps_budget;
static _Atomic uint64_t g_claimed; /* steps that asked for the budget, recorded or not */
static _Atomic uint64_t g_skipped; /* of the budget's, left out: the buffer half full */

/* This thread's ring is less than half full (the producer's view of the
 * consumer's tail, refreshed only when it says otherwise). */
static int ring_has_room(struct ct_ring *r)
{
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    if (head - r->cached_tail <= r->size / 2)
        return 1;
    r->cached_tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    return head - r->cached_tail <= r->size / 2;
}

int ct_nsteps_claim(void)
{
    return atomic_fetch_add_explicit(&g_claimed, 1, memory_order_relaxed) < ct_nsteps_budget;
}

void ct_nsteps_write(const struct ct_nstep *s)
{
    uint64_t f[CT_NSTEP_NFIELDS] = {0}, dur[3];
    for (int i = 0; i < 3; i++) {
        uint64_t before = s->sums[i];
        s->sums[i] += s->d[i];
        dur[i] = ct_nsteps_ns(s->rate, s->sums[i]) - ct_nsteps_ns(s->rate, before);
    }
    /* one clock conversion: the stop; the start from the step's run */
    uint64_t stop = s->rate ? ct_clock_ticks_ns(s->stop) : s->stop;
    uint64_t run = ct_nsteps_ns(s->rate, s->stop > s->start ? s->stop - s->start : 0);
    uint64_t start = stop > run ? stop - run : 0;
    /* each state begins where the next present one (or the stop) begins
     * less its own time; time in no known state comes first */
    uint64_t t = stop;
    for (int i = 2; i >= 0; i--) {
        t = t > dur[i] ? t - dur[i] : 0;
        if (s->seen & (1u << i))
            f[CT_NSTEP_STATE0 + i] = t;
    }
    f[CT_NSTEP_START] = start < t ? start : t;
    f[CT_NSTEP_END] = stop;
    f[CT_NSTEP_CORR] = s->corr;
    f[CT_NSTEP_CHANNEL] = s->channel;
    f[CT_NSTEP_PEER] = (uint64_t)(int64_t)s->peer;
    f[CT_NSTEP_SEND] = s->send;
    f[CT_NSTEP_STEP] = s->step;
    f[CT_NSTEP_BYTES] = s->bytes;
    struct ct_ring *r = ct_thread_ring();
    if (!r || !ring_has_room(r)) {
        atomic_fetch_add_explicit(&g_skipped, 1, memory_order_relaxed);
        return;
    }
    int guard = ct_tls_guard;
    ct_tls_guard = 1;
    ct_emit(CT_REC_NCCL_STEP, CT_RF_NS, f, CT_NSTEP_NFIELDS);
    ct_tls_guard = guard;
}

static void meta(const char *key, const char *value)
{
    uint64_t f[CT_META_NFIELDS] = {ct_clock_now(), CT_SCOPE_RECORDER, 0, ct_intern(key),
                                   ct_intern(value)};
    ct_emit(CT_REC_META, 0, f, CT_META_NFIELDS);
}

void ct_nsteps_start(const char *bad_value_why, uint64_t budget)
{
    char buf[256];
    ct_nsteps_budget = budget;
    atomic_store(&g_claimed, 0);
    atomic_store(&g_skipped, 0);
    if (bad_value_why && *bad_value_why) {
        snprintf(buf, sizeof(buf), "%s; raw steps are off", bad_value_why);
        meta("nccl_steps_ignored", buf);
    } else if (budget) {
        snprintf(buf, sizeof(buf), "%llu", (unsigned long long)budget);
        meta("nccl_steps_budget", buf);
    }
}

void ct_nsteps_finish(void)
{
    if (!ct_nsteps_budget)
        return;
    uint64_t n = atomic_load(&g_claimed);
    uint64_t raw = n < ct_nsteps_budget ? n : ct_nsteps_budget;
    uint64_t skipped = atomic_load(&g_skipped);
    raw = raw > skipped ? raw - skipped : 0;
    char buf[32];
    snprintf(buf, sizeof(buf), "%llu", (unsigned long long)raw);
    meta("nccl_steps_raw", buf);
    snprintf(buf, sizeof(buf), "%llu", (unsigned long long)(n - raw));
    meta("nccl_steps_not_raw", buf);
}
