/*
 * Entry stubs of the wrapped CUDA driver functions, aarch64 (Grace hosts):
 * the x86-64 file's logic (shim/cuda_stubs_x86_64.S says why a stub and
 * what it tests), one per row of shim/cuda_syms.h. Arguments are in x0-x7
 * and on the stack, untouched: the stub uses only x16/x17 (the
 * intra-procedure-call scratch registers, free at a call's entry) and x9
 * (a temporary the callee may clobber). ct_tls_guard is initial-exec TLS:
 * its offset from tpidr_el0 comes from the GOT.
 */
    .hidden ct_real
    .hidden ct_shim_state
    .hidden ct_launch_fast
    .set    ct_row, 0

.macro CT_STUB name, base
    .text
    .globl  \name
    .type   \name, %function
    .hidden ct_impl_\name
.ifc \base,cuLaunchKernel
    .hidden ct_fast_\name
.endif
    .p2align 4
\name:
.ifnc \base,cuGetProcAddress
    adrp    x16, ct_real+8*ct_row
    ldr     x16, [x16, :lo12:ct_real+8*ct_row]
    cbz     x16, 1f
    adrp    x17, ct_shim_state
    ldr     w17, [x17, :lo12:ct_shim_state]
    cmp     w17, #2                 /* ON: recorded unless the guard is up */
    b.eq    3f
    cbz     w17, 1f                 /* UNINIT: the first event starts recording */
    cmp     w17, #4                 /* FORKED: the child's first event */
    b.eq    1f
2:  br      x16                     /* INITING, OFF, PAUSED: no TLS touched */
3:  adrp    x9, :gottprel:ct_tls_guard
    ldr     x9, [x9, #:gottprel_lo12:ct_tls_guard]
    mrs     x17, tpidr_el0
    ldr     w17, [x17, x9]
    cbnz    w17, 2b
.ifc \base,cuLaunchKernel
    adrp    x17, ct_launch_fast     /* the steady state: shim/cuda_launch.c */
    ldr     w17, [x17, :lo12:ct_launch_fast]
    cbnz    w17, ct_fast_\name
.endif
.endif
1:  b       ct_impl_\name
    .size   \name, .-\name
    .set    ct_row, ct_row + 1
.endm

#define CT_SYM(exported, base, ver, pt) CT_STUB exported, base
#include "shim/cuda_syms.h"
#undef CT_SYM

    .section .note.GNU-stack,"",%progbits
