/*
 * dlsym() override, x86-64. RTLD_NEXT lookups are resolved by glibc relative
 * to the caller's return address, so they must reach the real dlsym by a tail
 * jump that leaves our caller's frame in place (a C call would make the search
 * start after libcutrace and break a second interposer below us); the target
 * is ct_real_dlsym_ptr, resolved by ct_dlsym_next_target (both in
 * dlsym_real.c). Every other handle goes to ct_dlsym_impl in dlsym.c, which
 * may hand out wrappers.
 */
    .text
    .globl  dlsym
    .type   dlsym, @function
    .hidden ct_dlsym_impl
    .hidden ct_dlsym_next_target
dlsym:
    cmpq    $-1, %rdi               /* RTLD_NEXT is (void *)-1 */
    jne     ct_dlsym_impl
    movq    ct_real_dlsym_ptr(%rip), %rax
    testq   %rax, %rax
    jz      1f
    jmp     *%rax
1:  pushq   %rdi                    /* first use: resolve, keeping the arguments */
    pushq   %rsi
    subq    $8, %rsp                /* 16-byte alignment for the call */
    call    ct_dlsym_next_target
    addq    $8, %rsp
    popq    %rsi
    popq    %rdi
    testq   %rax, %rax
    jz      2f
    jmp     *%rax
2:  xorl    %eax, %eax
    ret
    .size   dlsym, .-dlsym

    .hidden ct_real_dlsym_ptr
    .section .note.GNU-stack,"",@progbits
