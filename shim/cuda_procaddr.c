/*
 * The cuGetProcAddress layer: libcudart, NCCL, cuBLAS and cuDNN resolve
 * their ~440 driver entry points through cuGetProcAddress(_v2) rather than
 * by symbol. We call the real lookup with the same arguments and, only when
 * it succeeded, swap in the wrapper for exactly that (symbol, ABI version,
 * per-thread) row. Anything newer than our headers, anything we do not wrap,
 * and any pointer that is not the driver's exported function for that row
 * (another interposer below us) passes through untouched.
 */
#include <string.h>

#include "shim/cuda_record.h"

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*gpa2_fn)(const char *, void **, int, cuuint64_t,
                            CUdriverProcAddressQueryResult *);

/* Written into the trace at exit: how many lookups the layer saw and how
 * many it answered with a wrapper (not the hot path: cudart does ~440 per
 * instance at start-up). */
static _Atomic uint64_t g_lookups, g_wrapped;

void ct_procaddr_stats(uint64_t *lookups, uint64_t *wrapped)
{
    *lookups = atomic_load(&g_lookups);
    *wrapped = atomic_load(&g_wrapped);
}

/* Replaces *pfn with our wrapper when that is provably right. */
static void substitute(const char *sym, void **pfn, int version, cuuint64_t flags)
{
    atomic_fetch_add(&g_lookups, 1);
    if (!sym || !pfn || !*pfn || version > CUDA_VERSION)
        return;
    int row;
    if (strcmp(sym, "cuGetProcAddress") == 0)
        row = version >= 12000 ? CT_SYM_cuGetProcAddress_v2 : CT_SYM_cuGetProcAddress;
    else if (strcmp(sym, "cuGraphInstantiate") == 0 && version >= 12000)
        row = CT_SYM_cuGraphInstantiateWithFlags; /* cuda.h: #define ... WithFlags, no PFN row */
    else
        row = ct_sym_select(sym, version, flags);
    if (row < 0)
        return;
    void *h = ct_libcuda();
    void *exported = h ? ct_dlsym_real(h, ct_sym_rows[row].exported) : NULL;
    if (exported != *pfn && *pfn != ct_sym_wrapper(row))
        return; /* not the driver's own function for this row: hands off */
    if (!ct_real_claim((enum ct_sym)row, *pfn))
        return;
    *pfn = ct_sym_wrapper(row);
    atomic_fetch_add(&g_wrapped, 1);
}

CUresult ct_impl_cuGetProcAddress(const char *sym, void **pfn, int version, cuuint64_t flags)
{
    gpa_fn real = CT_REAL(gpa_fn, CT_SYM_cuGetProcAddress);
    if (!real)
        return CT_NOT_AVAILABLE;
    CUresult r = real(sym, pfn, version, flags);
    if (r != CUDA_SUCCESS)
        atomic_fetch_add(&g_lookups, 1);
    if (r == CUDA_SUCCESS && !ct_tls_guard && atomic_load(&ct_shim_state) != CT_SHIM_OFF) {
        int saved = errno;
        substitute(sym, pfn, version, flags);
        errno = saved;
    }
    return r;
}

CUresult ct_impl_cuGetProcAddress_v2(const char *sym, void **pfn, int version, cuuint64_t flags,
                                     CUdriverProcAddressQueryResult *st)
{
    gpa2_fn real = CT_REAL(gpa2_fn, CT_SYM_cuGetProcAddress_v2);
    if (!real)
        return CT_NOT_AVAILABLE;
    CUresult r = real(sym, pfn, version, flags, st);
    if (r != CUDA_SUCCESS || (st && *st != CU_GET_PROC_ADDRESS_SUCCESS))
        atomic_fetch_add(&g_lookups, 1);
    if (r == CUDA_SUCCESS && (!st || *st == CU_GET_PROC_ADDRESS_SUCCESS) && !ct_tls_guard &&
        atomic_load(&ct_shim_state) != CT_SHIM_OFF) {
        int saved = errno;
        substitute(sym, pfn, version, flags);
        errno = saved;
    }
    return r;
}
