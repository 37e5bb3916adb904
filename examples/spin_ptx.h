/*
 * A PTX module with one kernel per name for the examples: on a real GPU each
 * kernel spins on %globaltimer for the microseconds its name carries
 * (`__<N>us`, 5 us without), the same durations the simulated device
 * (tests/fakegpu) gives those names. Header-only so each example still
 * builds from its one source file (scripts/gpu-check compiles them alone).
 */
#ifndef CT_EXAMPLES_SPIN_PTX_H
#define CT_EXAMPLES_SPIN_PTX_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The module's PTX text (caller frees). */
static char *make_ptx(const char *const *names, int n)
{
    size_t cap = 4096 + (size_t)n * 512;
    char *ptx = malloc(cap);
    if (!ptx)
        return NULL;
    size_t len = (size_t)snprintf(ptx, cap, ".version 7.0\n.target sm_70\n.address_size 64\n");
    for (int i = 0; i < n; i++) {
        const char *tag = strstr(names[i], "__");
        unsigned us = tag ? (unsigned)strtoul(tag + 2, NULL, 10) : 5;
        len += (size_t)snprintf(ptx + len, cap - len,
                                ".visible .entry %s()\n{\n"
                                "  .reg .u64 %%t<3>;\n  .reg .pred %%p;\n"
                                "  mov.u64 %%t0, %%globaltimer;\n"
                                "SPIN:\n  mov.u64 %%t1, %%globaltimer;\n"
                                "  sub.u64 %%t2, %%t1, %%t0;\n"
                                "  setp.lt.u64 %%p, %%t2, %u;\n"
                                "  @%%p bra SPIN;\n  ret;\n}\n",
                                names[i], us * 1000u);
    }
    return ptx;
}

#endif
