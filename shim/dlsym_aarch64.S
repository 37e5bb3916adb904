/*
 * dlsym() override, aarch64 (Grace hosts): the x86-64 file's logic
 * (shim/dlsym_x86_64.S says why). RTLD_NEXT lookups are resolved by glibc
 * relative to the caller's return address, the link register here, so they
 * reach the real dlsym by a branch that leaves x30 as our caller set it;
 * the first use saves it around the call that resolves the target. Every
 * other handle goes to ct_dlsym_impl (a tail branch: its own return goes
 * straight back to our caller).
 */
    .text
    .globl  dlsym
    .type   dlsym, %function
    .hidden ct_dlsym_impl
    .hidden ct_dlsym_next_target
    .hidden ct_real_dlsym_ptr
    .p2align 2
dlsym:
    cmn     x0, #1                  /* RTLD_NEXT is (void *)-1 */
    b.eq    0f
    b       ct_dlsym_impl
0:  adrp    x16, ct_real_dlsym_ptr
    ldr     x16, [x16, :lo12:ct_real_dlsym_ptr]
    cbz     x16, 1f
    br      x16
1:  stp     x29, x30, [sp, #-32]!   /* first use: resolve, keeping the arguments */
    mov     x29, sp
    stp     x0, x1, [sp, #16]
    bl      ct_dlsym_next_target
    mov     x16, x0
    ldp     x0, x1, [sp, #16]
    ldp     x29, x30, [sp], #32
    cbz     x16, 2f
    br      x16
2:  mov     x0, #0
    ret
    .size   dlsym, .-dlsym

    .section .note.GNU-stack,"",%progbits
