/*
 * The real dlsym and the lookups built on it: the bottom of the shim's
 * symbol resolution. The wrap tables (shim/cuda_table.c, shim/nccl_table.c),
 * the dlsym override (shim/dlsym.c) and the libc wrappers all call down
 * here; nothing here calls up into them, so the tables never depend on the
 * dlsym override. Nothing here may hand out a wrapper or load a library.
 */
#ifndef CT_DLSYM_REAL_H
#define CT_DLSYM_REAL_H

#include <string.h>

/* Any function pointer: object and function pointers only meet through
 * ct_fn()/ct_fn_addr(), which ISO C allows and POSIX guarantees. */
typedef void (*ct_voidfn)(void);

__attribute__((always_inline,
               no_sanitize("address", "undefined", "thread"))) static inline ct_voidfn
ct_fn(void *p)
{
    ct_voidfn f;
    memcpy(&f, &p, sizeof(f));
    return f;
}

__attribute__((always_inline, no_sanitize("address", "undefined", "thread"))) static inline void *
ct_fn_addr(ct_voidfn f)
{
    void *p;
    memcpy(&p, &f, sizeof(p));
    return p;
}

/*
 * glibc's dlsym (the definition after libcutrace, resolved on first use and
 * cached), called with `handle` and `name`: exactly its result, which may be
 * one of our own exported definitions (callers that must exclude those
 * compare with the wrapper's address), or NULL when there is no real dlsym.
 * Any thread; safe before the shim is initialised and from sanitizer
 * start-up (not instrumented).
 */
void *ct_dlsym_real(void *handle, const char *name);

/*
 * The next definition of `name` after libcutrace (libc's, for the libc
 * functions we wrap), resolved once into *slot and cached; errno is kept.
 * NULL when there is none: the caller fails the call the way libc would.
 */
void *ct_next_sym(void *_Atomic *slot, const char *name);

#endif
