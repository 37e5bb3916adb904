/*
 * The wrap table and real-function slots. This file deliberately does not
 * include cuda.h: it only takes the wrappers' addresses, declared below with
 * a placeholder type, so cuda.h's renaming macros cannot bend the names.
 * It resolves real functions with ct_dlsym_real only and must never call
 * into the dlsym override (shim/dlsym.c), which calls into it.
 */
#include "shim/cuda_table.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include "shim/dlsym_real.h"
#include "shim/shim.h"

#define CT_SYM(exported, base, ver, pt) extern void exported(void);
#include "shim/cuda_syms.h"
#undef CT_SYM

const struct ct_sym_row ct_sym_rows[CT_SYM_COUNT] = {
#define CT_SYM(exported, base, ver, pt) {#exported, #base, ver, pt, exported},
#include "shim/cuda_syms.h"
#undef CT_SYM
};

void *_Atomic ct_real[CT_SYM_COUNT];

void *ct_libcuda(void)
{
    static void *_Atomic handle;
    void *h = atomic_load_explicit(&handle, memory_order_acquire);
    if (h)
        return h;
    int guard = ct_tls_guard;
    ct_tls_guard = 1;
    /* RTLD_NOLOAD: find the driver the job loaded; never load it ourselves. */
    h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    ct_tls_guard = guard;
    if (h)
        atomic_store_explicit(&handle, h, memory_order_release);
    return h;
}

static atomic_ulong g_driver_lookups;

unsigned long ct_driver_sym_lookups(void)
{
    return atomic_load_explicit(&g_driver_lookups, memory_order_relaxed);
}

void *ct_driver_sym(const char *name)
{
    atomic_fetch_add_explicit(&g_driver_lookups, 1, memory_order_relaxed);
    void *p = ct_dlsym_real(RTLD_NEXT, name);
    int row = ct_sym_find(name);
    if (p && row >= 0 && p == ct_sym_wrapper(row))
        p = NULL; /* that is us */
    if (!p) {
        void *h = ct_libcuda();
        if (h)
            p = ct_dlsym_real(h, name);
    }
    return p;
}

void *ct_real_resolve(enum ct_sym s)
{
    CT_ERRNO_SAVE;
    void *p = ct_driver_sym(ct_sym_rows[s].exported);
    CT_ERRNO_RESTORE;
    if (!p)
        return NULL;
    void *expected = NULL;
    if (!atomic_compare_exchange_strong(&ct_real[s], &expected, p))
        return expected;
    return p;
}

CT_NO_SANITIZE int ct_real_claim(enum ct_sym s, void *real)
{
    if (real == ct_sym_wrapper(s))
        return 1; /* looked up through us: already wrapped */
    void *expected = NULL;
    if (atomic_compare_exchange_strong(&ct_real[s], &expected, real))
        return 1;
    return expected == real;
}

CT_NO_SANITIZE int ct_sym_find(const char *name)
{
    /* Cheap rejection first: dlsym runs for every symbol of every process. */
    if (!name || name[0] != 'c' || name[1] != 'u')
        return -1;
    for (int i = 0; i < CT_SYM_COUNT; i++)
        if (strcmp(name, ct_sym_rows[i].exported) == 0)
            return i;
    return -1;
}

int ct_sym_select(const char *base, int version, uint64_t flags)
{
    int want_pt = (flags & 2) != 0; /* CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM */
    for (int pass = 0; pass < 2; pass++) {
        int pt = pass == 0 ? want_pt : 0;
        if (pass == 1 && !want_pt)
            break;
        int best = -1;
        for (int i = 0; i < CT_SYM_COUNT; i++) {
            const struct ct_sym_row *r = &ct_sym_rows[i];
            if (r->per_thread != pt || r->version > version || strcmp(r->base, base) != 0)
                continue;
            if (best < 0 || r->version > ct_sym_rows[best].version)
                best = i;
        }
        if (best >= 0)
            return best;
    }
    return -1;
}
