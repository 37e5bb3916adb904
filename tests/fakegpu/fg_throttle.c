/*
 * fg_throttle.c - the simulated driver's side of FAKEGPU_NVML_CAP
 * (fg_throttle.h): when each device becomes power-capped, and the first
 * cuInit's time; the fake NVML reads the cap instants through fakegpu_cap_ns()
 * so that both agree on when a device is capped.
 */
#include "fg_internal.h"
#include "fg_throttle.h"

#include <stdlib.h>
#include <string.h>

void fg_throttle_init_locked(void)
{
    int64_t after[FG_THROTTLE_MAX];
    fg.init_ns = fg_now();
    fg_throttle_parse(getenv("FAKEGPU_NVML_CAP"), after);
    const char *from = getenv("FAKEGPU_NVML_CAP_FROM");
    /* "launch": counted from the first kernel, so that a test's cap falls
     * a set time into its work however long the start-up took */
    fg.cap_pending = from && !strcmp(from, "launch");
    for (int d = 0; d < FG_MAX_DEVICES; d++) {
        fg.cap_after[d] = d < FG_THROTTLE_MAX ? after[d] : -1;
        fg.cap_ns[d] = !fg.cap_pending && fg.cap_after[d] >= 0 ? fg.init_ns + after[d] : -1;
    }
}

void fg_throttle_launch_locked(void)
{
    if (!fg.cap_pending)
        return;
    fg.cap_pending = 0;
    int64_t now = fg_now();
    for (int d = 0; d < FG_MAX_DEVICES; d++)
        if (fg.cap_after[d] >= 0)
            __atomic_store_n(&fg.cap_ns[d], now + fg.cap_after[d], __ATOMIC_RELEASE);
}

int64_t fg_cap_ns(int device)
{
    return device >= 0 && device < FG_MAX_DEVICES ? fg.cap_ns[device] : -1;
}

/* For the fake NVML: CLOCK_MONOTONIC ns from which device dev is capped;
 * -1 when never or not yet known; -2 before the first cuInit (then the fake
 * NVML counts from its own nvmlInit). */
__attribute__((visibility("default"))) int64_t fakegpu_cap_ns(int dev)
{
    if (!__atomic_load_n(&fg.initialized, __ATOMIC_ACQUIRE))
        return -2;
    return dev >= 0 && dev < FG_MAX_DEVICES ? __atomic_load_n(&fg.cap_ns[dev], __ATOMIC_ACQUIRE)
                                            : -1;
}
