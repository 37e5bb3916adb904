/*
 * The dlsym layer: programs that dlopen libcuda.so.1 and dlsym its entry
 * points (Triton, JAX/XLA stubs, libcudart's own fallback) get our wrapper
 * for exactly the names we wrap, and only when the real lookup succeeded, so
 * feature probes and dlerror() behave as without us. RTLD_NEXT never comes
 * here (see dlsym_x86_64.S). The real dlsym is shim/dlsym_real.c; this file
 * only consults the wrap tables, which never call back into it.
 */
#include <stddef.h>

#include "shim/cuda_table.h"
#include "shim/dlsym_real.h"
#include "shim/nccl_table.h"
#include "shim/nvshmem.h"
#include "shim/shim.h"

/*
 * NCCL names (JAX and vLLM resolve NCCL by dlsym). A lookup that found our
 * own definition while no NCCL is loaded is a probe that must fail as it
 * would without us.
 */
CT_NO_SANITIZE static void *ct_dlsym_nccl(const char *name, void *p)
{
    int row = ct_nccl_find(name);
    if (row < 0)
        return ct_shmem_probe_fails(name, p) ? NULL : p; /* NVSHMEM's names, likewise */
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
