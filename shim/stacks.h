/* Host call stacks of selected calls (shim/stacks.c). */
#ifndef CT_STACKS_H
#define CT_STACKS_H

#include <stdint.h>

#include "shim/shim.h"

/* Records the calling thread's stack for the call with this correlation id. */
void ct_stack_capture(uint64_t corr);
/* Same with the record's time given: an I/O span's stack has corr 0 and the
 * span's start time, which is how the decoder finds it (format.h). */
void ct_stack_capture_at(uint64_t corr, uint64_t time);

/* Whether a call of this kind gets a stack: blocking ones (sync) or all. */
static inline int ct_stack_wanted(int blocking)
{
    return ct_cfg.stacks == 2 || (ct_cfg.stacks == 1 && blocking);
}

#endif
