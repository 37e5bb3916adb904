/*
 * The wrap table (shim/cuda_syms.h) as data: names, ABI versions, wrapper
 * addresses and the slot holding each row's real driver function. Real
 * functions are found with ct_dlsym_real (shim/dlsym_real.h), never through
 * the dlsym override (shim/dlsym.c), which consults this table.
 */
#ifndef CT_CUDA_TABLE_H
#define CT_CUDA_TABLE_H

#include <stdatomic.h>
#include <stdint.h>

#include "shim/dlsym_real.h" /* ct_fn, ct_fn_addr, ct_dlsym_real */

enum ct_sym {
#define CT_SYM(exported, base, ver, pt) CT_SYM_##exported,
#include "shim/cuda_syms.h"
#undef CT_SYM
    CT_SYM_COUNT
};

struct ct_sym_row {
    const char *exported;
    const char *base;
    int version;
    int per_thread;
    ct_voidfn wrapper;
};

extern const struct ct_sym_row ct_sym_rows[CT_SYM_COUNT];

/* Real driver function of each row; NULL until resolved. */
extern void *_Atomic ct_real[CT_SYM_COUNT];

/*
 * The real function for a row: the slot if set, else resolved by its
 * exported name after our own definition (RTLD_NEXT) or in an already
 * loaded libcuda.so.1. NULL when there is none: the wrapper then returns
 * CUDA_ERROR_NOT_INITIALIZED rather than call through NULL.
 */
void *ct_real_resolve(enum ct_sym s);
static inline void *ct_real_get(enum ct_sym s)
{
    void *p = atomic_load_explicit(&ct_real[s], memory_order_acquire);
    return p ? p : ct_real_resolve(s);
}

/* The real function of a row as a callable of `type`. */
#define CT_REAL(type, sym) ((type)ct_fn(ct_real_get(sym)))

/* Address of a row's wrapper, comparable with dlsym results. */
__attribute__((always_inline, no_sanitize("address", "undefined", "thread"))) static inline void *
ct_sym_wrapper(int row)
{
    return ct_fn_addr(ct_sym_rows[row].wrapper);
}

/* Row of an exported name, or -1. Exact match only. */
int ct_sym_find(const char *name);

/*
 * Row that cuGetProcAddress(base, version, flags) selects: within the
 * per-thread family when flags ask for it (falling back to legacy), the row
 * with the largest ABI version <= version. -1 when we wrap none.
 */
int ct_sym_select(const char *base, int version, uint64_t flags);

/*
 * Records `real` as the row's real function. Returns 1 when the wrapper may
 * be handed out for it, 0 when the slot already holds a different function
 * (a second driver in the process): the caller then passes `real` through.
 */
int ct_real_claim(enum ct_sym s, void *real);

/* Handle of libcuda.so.1 if the process loaded it (never loads it). */
void *ct_libcuda(void);
/* A driver symbol that cutrace itself calls (cuStreamGetId, cuFuncGetName...);
 * how many such lookups the process made (recorded at exit: each helper is
 * looked up once, whatever the driver lacks). */
void *ct_driver_sym(const char *name);
unsigned long ct_driver_sym_lookups(void);

#endif
