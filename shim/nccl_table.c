/*
 * The NCCL wrap table and real-function slots. Like shim/cuda_table.c this
 * file does not include nccl.h: it takes the wrappers' addresses under a
 * placeholder type, and resolves real functions with ct_dlsym_real only,
 * never through the dlsym override (shim/dlsym.c), which calls into it.
 */
#include "shim/nccl_table.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include "shim/dlsym_real.h"
#include "shim/shim.h"

#define CT_NCCL(name) extern void name(void);
#include "shim/nccl_syms.h"
#undef CT_NCCL

static const struct {
    const char *name;
    ct_voidfn wrapper;
} rows[CT_NS_COUNT] = {
#define CT_NCCL(name) {#name, name},
#include "shim/nccl_syms.h"
#undef CT_NCCL
};

static void *_Atomic real[CT_NS_COUNT];

/* A loaded libnccl (never loads one: a job without NCCL stays without). */
static void *libnccl(void)
{
    int guard = ct_tls_guard;
    ct_tls_guard = 1;
    void *h = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        h = dlopen("libnccl.so", RTLD_LAZY | RTLD_NOLOAD);
    ct_tls_guard = guard;
    return h;
}

CT_NO_SANITIZE void *ct_nccl_wrapper(int row)
{
    return ct_fn_addr(rows[row].wrapper);
}

void *ct_nccl_real_get(enum ct_nccl_sym s)
{
    void *p = atomic_load_explicit(&real[s], memory_order_acquire);
    if (p)
        return p;
    CT_ERRNO_SAVE;
    p = ct_dlsym_real(RTLD_NEXT, rows[s].name);
    if (!p) {
        void *h = libnccl();
        if (h) {
            p = ct_dlsym_real(h, rows[s].name);
            if (p == ct_nccl_wrapper((int)s))
                p = NULL;
        }
    }
    CT_ERRNO_RESTORE;
    if (!p)
        return NULL;
    void *expected = NULL;
    if (!atomic_compare_exchange_strong(&real[s], &expected, p))
        return expected;
    return p;
}

CT_NO_SANITIZE int ct_nccl_find(const char *name)
{
    if (!name || strncmp(name, "nccl", 4) != 0)
        return -1;
    for (int i = 0; i < CT_NS_COUNT; i++)
        if (strcmp(name, rows[i].name) == 0)
            return i;
    return -1;
}

CT_NO_SANITIZE int ct_nccl_claim(enum ct_nccl_sym s, void *p)
{
    if (p == ct_nccl_wrapper((int)s))
        return 1;
    void *expected = NULL;
    if (atomic_compare_exchange_strong(&real[s], &expected, p))
        return 1;
    return expected == p;
}

int ct_nccl_present(void)
{
    CT_ERRNO_SAVE;
    /* ncclGetVersion is not ours, so any definition found is NCCL's. */
    int found = ct_dlsym_real(RTLD_NEXT, "ncclGetVersion") != NULL || libnccl() != NULL;
    CT_ERRNO_RESTORE;
    return found;
}

void *ct_nccl_other(const char *name)
{
    CT_ERRNO_SAVE;
    void *p = ct_dlsym_real(RTLD_NEXT, name);
    if (!p) {
        void *h = libnccl();
        p = h ? ct_dlsym_real(h, name) : NULL;
    }
    CT_ERRNO_RESTORE;
    return p;
}
