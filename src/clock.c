/*
 * Clock source choice, calibration and the published conversion. Nothing here
 * blocks the job: calibration only needs pairs the writer takes over time.
 */
#include "src/clock.h"

#include <stdatomic.h>

int ct_clock_tsc;
int64_t ct_clock_test_offset_ns;

static atomic_int g_clock_ready;

void ct_clock_init(enum ct_clock_pref pref)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong(&g_clock_ready, &expected, 1))
        return;
    int tsc = 0;
    if (CT_ARCH_HAS_TICKS) {
        if (pref == CT_CLOCK_PREF_TSC)
            tsc = 1;
        else if (pref == CT_CLOCK_PREF_AUTO)
            tsc = ct_arch_ticks_invariant();
    }
    ct_clock_tsc = tsc;
}

enum ct_clock_source ct_clock_source(void)
{
    return ct_clock_tsc ? CT_CLOCK_TSC : CT_CLOCK_MONOTONIC;
}

void ct_clock_pair_take(struct ct_clock_pair *p)
{
    if (!ct_clock_tsc) {
        p->mono_ns = ct_clock_mono_ns();
        p->ticks = p->mono_ns;
        p->real_ns = ct_clock_real_ns() + (uint64_t)ct_clock_test_offset_ns;
        return;
    }
    /* Bracket the monotonic and realtime reads with two tick reads and keep
     * the tightest of a few tries, so preemption between the reads cannot
     * skew a pair. The realtime read is inside the bracket too: read after
     * it, a preemption there put tens of us between a pair's monotonic and
     * realtime halves, which moved a rank against its peers by as much (a
     * loaded CI host: e2e `report`, skew off by 22 us). */
    uint64_t best_gap = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t t0 = ct_arch_ticks();
        uint64_t mono = ct_clock_mono_ns();
        uint64_t real = ct_clock_real_ns();
        uint64_t t1 = ct_arch_ticks();
        if (t1 - t0 < best_gap) {
            best_gap = t1 - t0;
            p->ticks = t0 + (t1 - t0) / 2;
            p->mono_ns = mono;
            p->real_ns = real + (uint64_t)ct_clock_test_offset_ns;
        }
    }
}

void ct_clock_conv_init(struct ct_clock_conv *c, const struct ct_clock_pair *first)
{
    c->first = *first;
    c->anchor = *first;
    /* Until a second pair arrives assume a nominal 1 tick/ns; the writer
     * takes a second pair before it converts anything. */
    c->ns_per_tick = 1.0;
    c->rate_base_ns = 0;
}

void ct_clock_conv_update(struct ct_clock_conv *c, const struct ct_clock_pair *now)
{
    if (!ct_clock_tsc) {
        c->anchor = *now;
        return;
    }
    uint64_t dt = now->ticks - c->first.ticks;
    uint64_t dn = now->mono_ns - c->first.mono_ns;
    /* Any baseline beats the nominal 1 tick/ns: records lie between the
     * first pair and the newest, so the conversion error stays within about
     * twice the pair jitter whatever the baseline. Below 2 us that jitter
     * dominates and the previous estimate is kept. */
    if (now->ticks > c->first.ticks && dn >= 2000u) {
        c->ns_per_tick = (double)dn / (double)dt;
        c->rate_base_ns = dn;
    }
    c->anchor = *now;
}

uint64_t ct_clock_conv_hz(const struct ct_clock_conv *c)
{
    if (!ct_clock_tsc || c->ns_per_tick <= 0)
        return 0;
    return (uint64_t)(1e9 / c->ns_per_tick + 0.5);
}

/* Seqlock: even = stable. Readers retry while the writer is mid-update.
 * Fields are atomics so that the race the seqlock resolves is a defined one. */
static atomic_uint g_pub_seq;
static _Atomic uint64_t g_pub_ticks, g_pub_ns, g_pub_rate_bits, g_pub_base;
static atomic_int g_pub_valid;

void ct_clock_publish(const struct ct_clock_conv *c)
{
    union {
        double d;
        uint64_t u;
    } rate = {.d = c->ns_per_tick};
    unsigned s = atomic_load_explicit(&g_pub_seq, memory_order_relaxed);
    atomic_store_explicit(&g_pub_seq, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&g_pub_ticks, c->anchor.ticks, memory_order_relaxed);
    atomic_store_explicit(&g_pub_ns, c->anchor.mono_ns, memory_order_relaxed);
    atomic_store_explicit(&g_pub_rate_bits, rate.u, memory_order_relaxed);
    atomic_store_explicit(&g_pub_base, c->rate_base_ns, memory_order_relaxed);
    atomic_store_explicit(&g_pub_seq, s + 2, memory_order_release);
    atomic_store_explicit(&g_pub_valid, 1, memory_order_release);
}

/* The published conversion; 0 when there is none (monotonic source, or
 * the writer has not published yet). */
static int read_pub(struct ct_clock_conv *c)
{
    if (!ct_clock_tsc || !atomic_load_explicit(&g_pub_valid, memory_order_acquire))
        return 0;
    union {
        double d;
        uint64_t u;
    } rate;
    unsigned s0, s1;
    do {
        s0 = atomic_load_explicit(&g_pub_seq, memory_order_acquire);
        c->anchor.ticks = atomic_load_explicit(&g_pub_ticks, memory_order_relaxed);
        c->anchor.mono_ns = atomic_load_explicit(&g_pub_ns, memory_order_relaxed);
        rate.u = atomic_load_explicit(&g_pub_rate_bits, memory_order_relaxed);
        c->rate_base_ns = atomic_load_explicit(&g_pub_base, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        s1 = atomic_load_explicit(&g_pub_seq, memory_order_relaxed);
    } while ((s0 & 1) || s0 != s1);
    c->ns_per_tick = rate.d;
    return 1;
}

uint64_t ct_clock_ns_now(void)
{
    struct ct_clock_conv c;
    if (!read_pub(&c))
        return ct_clock_mono_ns();
    return ct_clock_conv_ns(&c, ct_arch_ticks());
}

double ct_clock_pub_rate(void)
{
    struct ct_clock_conv c;
    /* over 10 ms, a pair's ~100 ns of jitter is 1e-5 of the rate */
    return read_pub(&c) && c.rate_base_ns >= 10000000u ? c.ns_per_tick : 0;
}

uint64_t ct_clock_ticks_ns(uint64_t ticks)
{
    struct ct_clock_conv c;
    return read_pub(&c) ? ct_clock_conv_ns(&c, ticks) : ticks;
}
