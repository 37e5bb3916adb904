/*
 * The architecture-specific half of the clock: reading the cycle counter and
 * deciding whether it can stand in for CLOCK_MONOTONIC. One small block per
 * architecture so aarch64 (cntvct_el0) can be added beside x86-64.
 */
#ifndef CT_CLOCK_ARCH_H
#define CT_CLOCK_ARCH_H

#include <stdint.h>

#if defined(__x86_64__)
static inline uint64_t ct_arch_ticks(void)
{
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}
/* The same stored at *p as its two halves: no shift and or to join them.
 * Addressed through p's register, not as "4+%0": clang's assembler cannot
 * offset a memory operand (the shim did not build with clang). */
static inline void ct_arch_ticks_store(uint64_t *p)
{
    __asm__ __volatile__("rdtsc\n\tmovl %%eax, (%1)\n\tmovl %%edx, 4(%1)"
                         : "=m"(*p)
                         : "r"(p)
                         : "eax", "edx");
}
#define CT_ARCH_HAS_TICKS 1
#elif defined(__aarch64__)
/* The generic timer's virtual count: a constant rate (cntfrq_el0) by the
 * architecture, readable at EL0 on Linux. The isb keeps the read from
 * being taken early, before the instructions it times. */
static inline uint64_t ct_arch_ticks(void)
{
    uint64_t v;
    __asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r"(v)::"memory");
    return v;
}
static inline void ct_arch_ticks_store(uint64_t *p)
{
    *p = ct_arch_ticks();
}
#define CT_ARCH_HAS_TICKS 1
#else
static inline uint64_t ct_arch_ticks(void)
{
    return 0;
}
static inline void ct_arch_ticks_store(uint64_t *p)
{
    *p = 0;
}
#define CT_ARCH_HAS_TICKS 0
#endif

/* 1 when the counter is invariant (constant rate, runs in deep C-states). */
int ct_arch_ticks_invariant(void);

#endif
