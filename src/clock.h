/*
 * The record clock. Producers read raw ticks with ct_clock_now() (the TSC
 * when it is invariant, else CLOCK_MONOTONIC ns); the writer converts ticks
 * to CLOCK_MONOTONIC ns with a conversion anchored to (ticks, monotonic)
 * pairs it takes as it runs, so records on disk are always monotonic ns.
 */
#ifndef CT_CLOCK_H
#define CT_CLOCK_H

#include <stdint.h>
#include <time.h>

#include "cutrace/format.h"
#include "src/clock_arch.h"

/* Nonzero when ct_clock_now() reads the TSC. Set once by ct_clock_init(). */
extern int ct_clock_tsc;

/* Added to the realtime half of every clock pair the trace records: lets
 * tests pretend a host's clock is off (CUTRACE_TEST_CLOCK_OFFSET_NS). */
extern int64_t ct_clock_test_offset_ns;

static inline uint64_t ct_clock_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t ct_clock_real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Raw record time: TSC ticks or monotonic ns. Async-signal-safe, no locks. */
static inline uint64_t ct_clock_now(void)
{
    if (ct_clock_tsc)
        return ct_arch_ticks();
    return ct_clock_mono_ns();
}

enum ct_clock_pref {
    CT_CLOCK_PREF_AUTO = 0, /* TSC when invariant, else monotonic */
    CT_CLOCK_PREF_MONOTONIC,
    CT_CLOCK_PREF_TSC, /* TSC even when CPUID does not promise invariance */
};

/* Chooses the source. Idempotent; call before any ct_clock_now(). */
void ct_clock_init(enum ct_clock_pref pref);
enum ct_clock_source ct_clock_source(void);

/* A (ticks, monotonic, realtime) triple read as close together as we can;
 * spread: the ticks between the reads that bracket it (0 without the TSC). */
struct ct_clock_pair {
    uint64_t ticks;
    uint64_t mono_ns;
    uint64_t real_ns;
    uint64_t spread;
};
void ct_clock_pair_take(struct ct_clock_pair *p);

/*
 * Ticks -> monotonic ns. Owned by one thread (the writer) that feeds it
 * pairs. The conversion is one continuous, increasing function of the
 * ticks, the same whenever a tick is converted: a record written long after
 * its start (a range at its pop, a call that blocked) converts that start
 * exactly as the records written around it then did. It is piecewise
 * linear: a knot every CT_CLOCK_KNOT_NS, each segment's slope the rate
 * measured over the longest baseline, slewed to take up the newest pair's
 * offset over the next few knots (as NTP slews a clock rather than step
 * it). Knots stay in a history (hist) so older ticks find their segment;
 * without one (a published copy, a salvaged file) a tick before the anchor
 * is extrapolated from it. With the monotonic source it is the identity.
 */
struct ct_clock_knot {
    uint64_t ticks, ns;
    double slope; /* ns per tick from this knot on */
};
#define CT_CLOCK_FINE   2048 /* the newest knots: 102 s at one a 50 ms */
#define CT_CLOCK_COARSE 2048 /* every coarse_every-th knot since the first */
struct ct_clock_hist {
    struct ct_clock_knot fine[CT_CLOCK_FINE]; /* ring: knot i at i % CT_CLOCK_FINE */
    uint64_t nfine;                           /* knots made */
    struct ct_clock_knot coarse[CT_CLOCK_COARSE];
    uint32_t ncoarse, coarse_every;
};
struct ct_clock_conv {
    struct ct_clock_pair first;
    struct ct_clock_pair anchor; /* the newest knot: ticks and its ns (mono_ns) */
    double ns_per_tick;          /* the newest segment's slope */
    uint64_t rate_base_ns;       /* the baseline rate was measured over, 0: nominal */
    double rate;                 /* ns per tick over that baseline (durations) */
    uint64_t knot_mono_ns;       /* when the newest knot was made */
    struct ct_clock_hist *hist;  /* the writer's; NULL in copies */
};
/* hist: where the knots go (NULL: none kept). */
void ct_clock_conv_init(struct ct_clock_conv *c, const struct ct_clock_pair *first,
                        struct ct_clock_hist *hist);
void ct_clock_conv_update(struct ct_clock_conv *c, const struct ct_clock_pair *now);
/* A tick before the newest knot, from the history. */
uint64_t ct_clock_conv_past(const struct ct_clock_conv *c, uint64_t ticks);
/* Ticks -> ns whatever the process's source (a salvaged file's own). */
static inline uint64_t ct_clock_conv_at(const struct ct_clock_conv *c, uint64_t ticks)
{
    if (ticks < c->anchor.ticks && c->hist)
        return ct_clock_conv_past(c, ticks);
    int64_t d = (int64_t)(ticks - c->anchor.ticks);
    return c->anchor.mono_ns + (uint64_t)(int64_t)((double)d * c->ns_per_tick);
}
static inline uint64_t ct_clock_conv_ns(const struct ct_clock_conv *c, uint64_t ticks)
{
    return ct_clock_tsc ? ct_clock_conv_at(c, ticks) : ticks;
}
/* Estimated ticks per second (0 with the monotonic source). */
uint64_t ct_clock_conv_hz(const struct ct_clock_conv *c);

/*
 * A conversion any thread can use (e.g. to hand GPU timestamps to CUPTI on
 * our clock): the writer publishes its conversion here under a seqlock.
 */
void ct_clock_publish(const struct ct_clock_conv *c);
uint64_t ct_clock_ns_now(void);
/* The published ns per tick, 0 while there is none good for durations
 * (the monotonic source, or a rate measured over less than 10 ms: the
 * writer's first passes): a caller that will measure durations in ticks
 * checks it first. */
double ct_clock_pub_rate(void);
/* Ticks read with ct_arch_ticks() in monotonic ns by the published
 * conversion (unchanged when there is none). */
uint64_t ct_clock_ticks_ns(uint64_t ticks);

#endif
