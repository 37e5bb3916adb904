/*
 * Whether the architecture's cycle counter (src/clock_arch.h) can be the
 * record clock, one block per architecture. x86-64: the TSC only when
 * CPUID says it is invariant (leaf 0x80000007, EDX bit 8); otherwise its
 * rate changes with frequency scaling and the recorder falls back to
 * CLOCK_MONOTONIC. aarch64: the generic timer always is. Others: never.
 */
#include "clock_arch.h"

#if defined(__x86_64__)
#include <cpuid.h>

int ct_arch_ticks_invariant(void)
{
    unsigned a, b, c, d;
    if ((unsigned)__get_cpuid_max(0x80000000u, 0) < 0x80000007u)
        return 0;
    __cpuid(0x80000007u, a, b, c, d);
    (void)a;
    (void)b;
    (void)c;
    return (d >> 8) & 1;
}
#elif defined(__aarch64__)
/* The generic timer runs at a constant frequency on every ARMv8 system. */
int ct_arch_ticks_invariant(void)
{
    return 1;
}
#else
int ct_arch_ticks_invariant(void)
{
    return 0;
}
#endif
