/*
 * fg_throttle.c - the simulated driver's side of FAKEGPU_NVML_CAP
 * (fg_throttle.h): when each device becomes power-capped, and the first
 * cuInit's time, which the fake NVML reads through fakegpu_init_ns() so that
 * both agree on "T seconds after cuInit".
 */
#include "fg_internal.h"
#include "fg_throttle.h"

#include <stdlib.h>

void fg_throttle_init_locked(void)
{
    int64_t after[FG_THROTTLE_MAX];
    fg.init_ns = fg_now();
    fg_throttle_parse(getenv("FAKEGPU_NVML_CAP"), after);
    for (int d = 0; d < FG_MAX_DEVICES; d++)
        fg.cap_ns[d] = d < FG_THROTTLE_MAX && after[d] >= 0 ? fg.init_ns + after[d] : -1;
}

int64_t fg_cap_ns(int device)
{
    return device >= 0 && device < FG_MAX_DEVICES ? fg.cap_ns[device] : -1;
}

/* For the fake NVML: CLOCK_MONOTONIC ns of the first cuInit, 0 before it. */
__attribute__((visibility("default"))) int64_t fakegpu_init_ns(void)
{
    return __atomic_load_n(&fg.initialized, __ATOMIC_ACQUIRE) ? fg.init_ns : 0;
}
