/*
 * Entry stubs of the wrapped CUDA driver functions, x86-64: one per row of
 * shim/cuda_syms.h, exported under the driver's name. A call that only
 * passes through (recording paused or off, or made from inside cutrace)
 * jumps straight to the real driver function from here, with the caller's
 * registers and stack arguments untouched: in C the compiler saves
 * registers and copies stack arguments even for a tail call (cuLaunchKernel
 * has five on the stack), which is most of a paused shim's cost. Every
 * other call (recording, first use, real function not resolved yet) jumps
 * to the C wrapper, ct_impl_<name>, which decides for itself; a recorded
 * cuLaunchKernel (either row) with ct_launch_fast set jumps to its fast
 * path, ct_fast_<name> (shim/cuda_launch.c says what that covers).
 *
 * The test mirrors ct_shim_passthrough() in shim.h: pass through when
 * ct_shim_state is INITING (1), OFF (3) or PAUSED (5), or when it is ON (2)
 * and ct_tls_guard is set. The state comes first, so a paused call makes
 * two loads (the real function, the state) and no thread-local access.
 * cuGetProcAddress always goes to C: a lookup while paused must still hand
 * out wrappers, or the calls made through them later would be missed.
 */
    .hidden ct_real
    .hidden ct_shim_state
    .hidden ct_launch_fast
    .set    ct_row, 0

.macro CT_STUB name, base
    .text
    .globl  \name
    .type   \name, @function
    .hidden ct_impl_\name
.ifc \base,cuLaunchKernel
    .hidden ct_fast_\name
.endif
    .p2align 4
\name:
.ifnc \base,cuGetProcAddress
    movq    ct_real+8*ct_row(%rip), %rax
    testq   %rax, %rax
    jz      1f
    movl    ct_shim_state(%rip), %r11d
    cmpl    $2, %r11d               /* ON: recorded unless the guard is up */
    je      3f
    testl   %r11d, %r11d            /* UNINIT: the first event starts recording */
    jz      1f
    cmpl    $4, %r11d               /* FORKED: the child's first event */
    je      1f
2:  jmp     *%rax                   /* INITING, OFF, PAUSED: no TLS touched */
3:  movq    ct_tls_guard@gottpoff(%rip), %r11
    cmpl    $0, %fs:(%r11)
    jne     2b
.ifc \base,cuLaunchKernel
    cmpl    $0, ct_launch_fast(%rip) /* the steady state: shim/cuda_launch.c */
    jne     ct_fast_\name
.endif
.endif
1:  jmp     ct_impl_\name
    .size   \name, .-\name
    .set    ct_row, ct_row + 1
.endm

#define CT_SYM(exported, base, ver, pt) CT_STUB exported, base
#include "shim/cuda_syms.h"
#undef CT_SYM

    .section .note.GNU-stack,"",@progbits
