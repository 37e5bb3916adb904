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
        p->spread = 0;
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
            p->spread = best_gap;
        }
    }
}

/* A knot every 50 ms, every 5 ms in the first second (while the rate's
 * baseline is short and its error moves the offset fastest). A knot's slope
 * takes up the offset from the newest pair over SLEW_KNOTS knots, by at most
 * MAX_SLEW of the rate: a pair's jitter (~0.1-1 us) over 200 ms is a few
 * ppm. An offset over STEP_NS (the rate's first estimate, a host resumed
 * from suspend) is stepped instead: continuity gives way there. A pair whose
 * bracket spread over MAX_SPREAD_NS (preempted between its reads) makes no
 * knot; the next pass's does. */
#define KNOT_NS       50000000ull
#define KNOT_EARLY_NS 5000000ull
#define EARLY_NS      1000000000ull
#define SLEW_KNOTS    4
#define MAX_SLEW      1e-3
#define STEP_NS       1000000.0
#define MAX_SPREAD_NS 20000.0

void ct_clock_conv_init(struct ct_clock_conv *c, const struct ct_clock_pair *first,
                        struct ct_clock_hist *hist)
{
    c->first = *first;
    c->anchor = *first;
    /* Until a second pair arrives assume a nominal 1 tick/ns; the writer
     * takes a second pair before it converts anything, and that pair
     * places the first knot. */
    c->ns_per_tick = 1.0;
    c->rate = 1.0;
    c->rate_base_ns = 0;
    c->knot_mono_ns = first->mono_ns;
    c->hist = hist;
    if (hist) {
        hist->nfine = 0;
        hist->ncoarse = 0;
        hist->coarse_every = 64;
    }
}

static void hist_add(struct ct_clock_hist *h, const struct ct_clock_knot *k)
{
    if (h->nfine % h->coarse_every == 0) {
        if (h->ncoarse == CT_CLOCK_COARSE) {
            /* full: keep every other one, at twice the spacing */
            for (uint32_t i = 0; i < CT_CLOCK_COARSE / 2; i++)
                h->coarse[i] = h->coarse[2 * i];
            h->ncoarse = CT_CLOCK_COARSE / 2;
            h->coarse_every *= 2;
        }
        if (h->nfine % h->coarse_every == 0)
            h->coarse[h->ncoarse++] = *k;
    }
    h->fine[h->nfine % CT_CLOCK_FINE] = *k;
    h->nfine++;
}

void ct_clock_conv_update(struct ct_clock_conv *c, const struct ct_clock_pair *now)
{
    if (!ct_clock_tsc) {
        c->anchor = *now;
        return;
    }
    uint64_t dt = now->ticks - c->first.ticks;
    uint64_t dn = now->mono_ns - c->first.mono_ns;
    /* Any baseline beats the nominal 1 tick/ns. Below 2 us the pairs'
     * jitter dominates and the previous estimate is kept. */
    int nominal = c->rate_base_ns == 0;
    if (now->ticks > c->first.ticks && dn >= 2000u) {
        c->rate = (double)dn / (double)dt;
        c->rate_base_ns = dn;
    }
    if (c->rate_base_ns == 0 || now->ticks <= c->anchor.ticks)
        return;
    uint64_t period = dn < EARLY_NS ? KNOT_EARLY_NS : KNOT_NS;
    if (!nominal &&
        (now->mono_ns - c->knot_mono_ns < period || (double)now->spread * c->rate > MAX_SPREAD_NS))
        return;
    struct ct_clock_knot k = {.ticks = now->ticks};
    double off;
    if (nominal) {
        off = STEP_NS * 2; /* nothing converted yet: the first knot is the pair */
    } else {
        k.ns = ct_clock_conv_at(c, now->ticks);
        off = (double)(int64_t)(now->mono_ns - k.ns);
    }
    if (off > STEP_NS || off < -STEP_NS) {
        k.ns = now->mono_ns;
        k.slope = c->rate;
    } else {
        double slew = off / (double)(SLEW_KNOTS * period);
        slew = slew > MAX_SLEW ? MAX_SLEW : slew < -MAX_SLEW ? -MAX_SLEW : slew;
        k.slope = c->rate * (1.0 + slew);
    }
    if (c->hist)
        hist_add(c->hist, &k);
    c->anchor.ticks = k.ticks;
    c->anchor.mono_ns = k.ns;
    c->anchor.real_ns = now->real_ns;
    c->ns_per_tick = k.slope;
    c->knot_mono_ns = now->mono_ns;
}

static uint64_t knot_ns(const struct ct_clock_knot *k, uint64_t ticks)
{
    int64_t d = (int64_t)(ticks - k->ticks);
    return k->ns + (uint64_t)(int64_t)((double)d * k->slope);
}

uint64_t ct_clock_conv_past(const struct ct_clock_conv *c, uint64_t ticks)
{
    const struct ct_clock_hist *h = c->hist;
    uint64_t n = h->nfine;
    uint64_t lo = n > CT_CLOCK_FINE ? n - CT_CLOCK_FINE : 0;
    if (n && ticks >= h->fine[lo % CT_CLOCK_FINE].ticks) {
        /* the last knot at or before ticks: its segment is the one every
         * conversion of these ticks used */
        uint64_t a = lo, b = n - 1;
        while (a < b) {
            uint64_t m = a + (b - a + 1) / 2;
            if (h->fine[m % CT_CLOCK_FINE].ticks <= ticks)
                a = m;
            else
                b = m - 1;
        }
        return knot_ns(&h->fine[a % CT_CLOCK_FINE], ticks);
    }
    if (!h->ncoarse || ticks < h->coarse[0].ticks) {
        /* before the first knot: nothing was converted there by a knot */
        const struct ct_clock_knot *k = h->ncoarse ? &h->coarse[0] : NULL;
        if (!k) {
            int64_t d = (int64_t)(ticks - c->anchor.ticks);
            return c->anchor.mono_ns + (uint64_t)(int64_t)((double)d * c->ns_per_tick);
        }
        return knot_ns(k, ticks);
    }
    /* older than the newest knots: the chord between the coarse knots
     * around it (off the segments by their slopes' slew over the spacing) */
    uint32_t a = 0, b = h->ncoarse - 1;
    while (a < b) {
        uint32_t m = a + (b - a + 1) / 2;
        if (h->coarse[m].ticks <= ticks)
            a = m;
        else
            b = m - 1;
    }
    const struct ct_clock_knot *k0 = &h->coarse[a];
    const struct ct_clock_knot *k1 = a + 1 < h->ncoarse ? &h->coarse[a + 1]
                                     : n                ? &h->fine[lo % CT_CLOCK_FINE]
                                                        : NULL;
    if (!k1 || k1->ticks <= k0->ticks || ticks >= k1->ticks)
        return knot_ns(k0, ticks);
    double f = (double)(ticks - k0->ticks) / (double)(k1->ticks - k0->ticks);
    return k0->ns + (uint64_t)(f * (double)(k1->ns - k0->ns));
}

uint64_t ct_clock_conv_hz(const struct ct_clock_conv *c)
{
    if (!ct_clock_tsc || c->rate <= 0)
        return 0;
    return (uint64_t)(1e9 / c->rate + 0.5);
}

/* Seqlock: even = stable. Readers retry while the writer is mid-update.
 * Fields are atomics so that the race the seqlock resolves is a defined one. */
static atomic_uint g_pub_seq;
static _Atomic uint64_t g_pub_ticks, g_pub_ns, g_pub_slope_bits, g_pub_rate_bits, g_pub_base;
static atomic_int g_pub_valid;

void ct_clock_publish(const struct ct_clock_conv *c)
{
    union {
        double d;
        uint64_t u;
    } slope = {.d = c->ns_per_tick}, rate = {.d = c->rate};
    unsigned s = atomic_load_explicit(&g_pub_seq, memory_order_relaxed);
    atomic_store_explicit(&g_pub_seq, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&g_pub_ticks, c->anchor.ticks, memory_order_relaxed);
    atomic_store_explicit(&g_pub_ns, c->anchor.mono_ns, memory_order_relaxed);
    atomic_store_explicit(&g_pub_slope_bits, slope.u, memory_order_relaxed);
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
    } slope, rate;
    unsigned s0, s1;
    do {
        s0 = atomic_load_explicit(&g_pub_seq, memory_order_acquire);
        c->anchor.ticks = atomic_load_explicit(&g_pub_ticks, memory_order_relaxed);
        c->anchor.mono_ns = atomic_load_explicit(&g_pub_ns, memory_order_relaxed);
        slope.u = atomic_load_explicit(&g_pub_slope_bits, memory_order_relaxed);
        rate.u = atomic_load_explicit(&g_pub_rate_bits, memory_order_relaxed);
        c->rate_base_ns = atomic_load_explicit(&g_pub_base, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        s1 = atomic_load_explicit(&g_pub_seq, memory_order_relaxed);
    } while ((s0 & 1) || s0 != s1);
    c->ns_per_tick = slope.d;
    c->rate = rate.d;
    c->hist = NULL;
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
    return read_pub(&c) && c.rate_base_ns >= 10000000u ? c.rate : 0;
}

uint64_t ct_clock_ticks_ns(uint64_t ticks)
{
    struct ct_clock_conv c;
    return read_pub(&c) ? ct_clock_conv_ns(&c, ticks) : ticks;
}
