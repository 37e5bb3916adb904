/*
 * fg_throttle.h - the power cap the simulated driver and the fake NVML
 * agree on (README.md, "Fake NVML"). FAKEGPU_NVML_CAP=DEV:T[,DEV:T...]:
 * from T seconds after the process's first cuInit, device DEV runs
 * power-capped: its SM clock drops from FG_CLOCK_MHZ to FG_CAP_CLOCK_MHZ,
 * so the part of each kernel after that instant takes FG_CLOCK_MHZ /
 * FG_CAP_CLOCK_MHZ times longer; the fake NVML reports the lower clock,
 * power at the limit and the SW power cap throttle reason. Header-only:
 * both libraries parse the variable the same way.
 */
#ifndef FG_THROTTLE_H
#define FG_THROTTLE_H

#include <stdint.h>
#include <stdlib.h>

#define FG_CLOCK_MHZ     1980
#define FG_CAP_CLOCK_MHZ 1410
#define FG_THROTTLE_MAX  64

/* Cap start per device, in ns after the first cuInit; -1 when never. */
static inline void fg_throttle_parse(const char *v, int64_t after_ns[FG_THROTTLE_MAX])
{
    for (int i = 0; i < FG_THROTTLE_MAX; i++)
        after_ns[i] = -1;
    while (v && *v) {
        char *end;
        long dev = strtol(v, &end, 10);
        if (end == v || *end != ':')
            return;
        v = end + 1;
        double t = strtod(v, &end);
        if (end == v || t < 0)
            return;
        if (dev >= 0 && dev < FG_THROTTLE_MAX)
            after_ns[dev] = (int64_t)(t * 1e9);
        v = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return;
    }
}

/* The end of work of duration dur_ns starting at start_ns on a device capped
 * from cap_ns on (cap_ns < 0: never): the part after cap_ns runs slower. */
static inline int64_t fg_throttle_end(int64_t start_ns, int64_t dur_ns, int64_t cap_ns)
{
    const double f = (double)FG_CLOCK_MHZ / FG_CAP_CLOCK_MHZ;
    if (cap_ns < 0 || start_ns + dur_ns <= cap_ns)
        return start_ns + dur_ns;
    if (start_ns >= cap_ns)
        return start_ns + (int64_t)((double)dur_ns * f + 0.5);
    return cap_ns + (int64_t)((double)(start_ns + dur_ns - cap_ns) * f + 0.5);
}

#endif
