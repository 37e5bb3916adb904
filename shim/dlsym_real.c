/*
 * The real dlsym: found once with dlvsym (which we do not override, so this
 * cannot recurse) and kept in ct_real_dlsym_ptr, which the dlsym override's
 * assembly stub (shim/dlsym_x86_64.S) jumps through for RTLD_NEXT; and
 * ct_next_sym, the cached next-definition lookup of the libc wrappers. Below
 * the wrap tables and the dlsym layer: this file must never call into
 * shim/cuda_table.c, shim/nccl_table.c or shim/dlsym.c, nor hand out a
 * wrapper. The dlsym path runs during sanitizer start-up, so it stays
 * CT_NO_SANITIZE.
 */
#include "shim/dlsym_real.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>

#include "shim/shim.h"

typedef void *(*dlsym_fn)(void *, const char *);

/* Read by the assembly stub. */
void *ct_real_dlsym_ptr;

void *ct_dlsym_next_target(void);
CT_NO_SANITIZE void *ct_dlsym_next_target(void)
{
    void *p = __atomic_load_n(&ct_real_dlsym_ptr, __ATOMIC_ACQUIRE);
    if (p)
        return p;
    /* The glibc 2.34+ name first, then the x86-64 base version; dlvsym is
     * not overridden, so this cannot recurse. */
    p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!p)
        p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    __atomic_store_n(&ct_real_dlsym_ptr, p, __ATOMIC_RELEASE);
    return p;
}

CT_NO_SANITIZE void *ct_dlsym_real(void *handle, const char *name)
{
    dlsym_fn real = (dlsym_fn)ct_fn(ct_dlsym_next_target());
    return real ? real(handle, name) : NULL;
}

void *ct_next_sym(void *_Atomic *slot, const char *name)
{
    void *p = atomic_load_explicit(slot, memory_order_acquire);
    if (!p) {
        int saved = errno;
        p = ct_dlsym_real(RTLD_NEXT, name);
        errno = saved;
        atomic_store_explicit(slot, p, memory_order_release);
    }
    return p;
}
