/*
 * The dlsym layer: programs that dlopen libcuda.so.1 and dlsym its entry
 * points (Triton, JAX/XLA stubs, libcudart's own fallback) get our wrapper
 * for exactly the names we wrap, and only when the real lookup succeeded, so
 * feature probes and dlerror() behave as without us. RTLD_NEXT never comes
 * here (see dlsym_x86_64.S).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>

#include "shim/cuda_table.h"
#include "shim/nccl_table.h"
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

/*
 * NCCL names (JAX and vLLM resolve NCCL by dlsym). A lookup that found our
 * own definition while no NCCL is loaded is a probe that must fail as it
 * would without us.
 */
CT_NO_SANITIZE static void *ct_dlsym_nccl(const char *name, void *p)
{
    int row = ct_nccl_find(name);
    if (row < 0)
        return p;
    if (p == ct_nccl_wrapper(row))
        return ct_nccl_present() ? p : NULL;
    if (!ct_nccl_claim((enum ct_nccl_sym)row, p))
        return p; /* a second NCCL: pass it through unwrapped */
    return ct_nccl_wrapper(row);
}

void *ct_dlsym_impl(void *handle, const char *name);
CT_NO_SANITIZE void *ct_dlsym_impl(void *handle, const char *name)
{
    void *p = ct_dlsym_real(handle, name);
    if (!p || ct_tls_guard)
        return p;
    int row = ct_sym_find(name);
    if (row < 0)
        return ct_dlsym_nccl(name, p);
    if (!ct_real_claim((enum ct_sym)row, p))
        return p; /* a second driver: pass it through unwrapped */
    return ct_sym_wrapper(row);
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
