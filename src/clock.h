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

/* A (ticks, monotonic, realtime) triple read as close together as we can. */
struct ct_clock_pair {
    uint64_t ticks;
    uint64_t mono_ns;
    uint64_t real_ns;
};
void ct_clock_pair_take(struct ct_clock_pair *p);

/*
 * Ticks -> monotonic ns. Owned by one thread (the writer) that feeds it
 * pairs; the rate comes from the longest baseline seen, the offset from the
 * newest pair. With the monotonic source it is the identity.
 */
struct ct_clock_conv {
    struct ct_clock_pair first;
    struct ct_clock_pair anchor;
    double ns_per_tick;
    uint64_t rate_base_ns; /* the baseline ns_per_tick was measured over, 0: nominal */
};
void ct_clock_conv_init(struct ct_clock_conv *c, const struct ct_clock_pair *first);
void ct_clock_conv_update(struct ct_clock_conv *c, const struct ct_clock_pair *now);
static inline uint64_t ct_clock_conv_ns(const struct ct_clock_conv *c, uint64_t ticks)
{
    if (!ct_clock_tsc)
        return ticks;
    int64_t d = (int64_t)(ticks - c->anchor.ticks);
    return c->anchor.mono_ns + (uint64_t)(int64_t)((double)d * c->ns_per_tick);
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
