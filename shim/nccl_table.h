/*
 * The NCCL wrap table (shim/nccl_syms.h) as data. Kept apart from nccl.h so
 * that shim/nccl_table.c can take the wrappers' addresses under a
 * placeholder type, as shim/cuda_table.c does for the driver.
 */
#ifndef CT_NCCL_TABLE_H
#define CT_NCCL_TABLE_H

#include "shim/cuda_table.h"

enum ct_nccl_sym {
#define CT_NCCL(name) CT_NS_##name,
#include "shim/nccl_syms.h"
#undef CT_NCCL
    CT_NS_COUNT
};

/* Real NCCL function of a row: found after us (RTLD_NEXT) or in a loaded
 * libnccl.so.2, or claimed by the dlsym layer. NULL when there is no NCCL:
 * the wrapper then fails the call with ncclSystemError. */
void *ct_nccl_real_get(enum ct_nccl_sym s);
#define CT_NCCL_REAL(type, sym) ((type)ct_fn(ct_nccl_real_get(sym)))

/* dlsym layer: row of an exported name (-1), claim of a real function
 * (1 = hand out our wrapper), our wrapper's address. */
int ct_nccl_find(const char *name);
int ct_nccl_claim(enum ct_nccl_sym s, void *real);
void *ct_nccl_wrapper(int row);
/* 1 when a real NCCL can be found in the process (our own definitions
 * excluded): without one, a dlsym probe for nccl* must fail as it would
 * without cutrace. */
int ct_nccl_present(void);
/* NCCL's definition of a name we do not wrap (ncclCommCount...), or NULL. */
void *ct_nccl_other(const char *name);

#endif
