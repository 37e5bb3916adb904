/* Host call stacks of selected calls (shim/stacks.c). */
#ifndef CT_STACKS_H
#define CT_STACKS_H

#include <stdint.h>

#include "shim/shim.h"

/* Records the calling thread's stack for the call with this correlation id. */
void ct_stack_capture(uint64_t corr);

/* Whether a call of this kind gets a stack: blocking ones (sync) or all. */
static inline int ct_stack_wanted(int blocking)
{
    return ct_cfg.stacks == 2 || (ct_cfg.stacks == 1 && blocking);
}

#endif
