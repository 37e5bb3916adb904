/*
 * Internal to the Kineto reader (kineto.c parses, kineto_model.c builds the
 * model and HTA's numbers, kineto_out.c prints them). Not for other modules.
 */
#ifndef CT_KINETO_INT_H
#define CT_KINETO_INT_H

#include <stddef.h>
#include <stdint.h>

#include "decoder/kineto/kineto.h"
#include "decoder/read/hta.h"

enum ct_kcat {
    CT_KC_NONE = 0, /* no cat: HTA drops the row */
    CT_KC_OTHER,
    CT_KC_KERNEL,
    CT_KC_MEMCPY,
    CT_KC_MEMSET,
    CT_KC_RUNTIME,
    CT_KC_DRIVER,
    CT_KC_CPU_OP,
    CT_KC_USER_ANN,
    CT_KC_GPU_USER_ANN,
    CT_KC_SYNC,
    CT_KC_TRACE,
    CT_KC_LEGACY_KERNEL, /* "Kernel" */
    CT_KC_LEGACY_MEMCPY, /* "Memcpy" */
    CT_KC_LEGACY_MEMSET, /* "Memset" */
    CT_KC_MTIA_CCP,      /* "mtia_ccp_events" */
    CT_KC_MTIA_RUNTIME,  /* "mtia_runtime" */
};

#define CT_KF_STEP 1u /* name matches ^ProfilerStep#\d+ */

/* One kept row ('X' event with cat and dur, stored when it can matter). */
struct ct_krow {
    double tsd, durd;      /* as Python's json parses them (for HTA's rounding) */
    int64_t ts_ns, dur_ns; /* exact from the decimal text */
    int64_t stream, corr;  /* -1 when absent (HTA's defaults) */
    uint32_t name;         /* index into kin->names */
    int32_t coll;          /* index into kin->colls, -1 */
    uint8_t cat, flags;
};

/* A `cuda_sync` row of kind "Stream Wait Event": stream `to` waits for the
 * event that the cudaEventRecord of correlation rec_corr recorded on stream
 * `from` (PyTorch >= 2.1 writes these; ct_kineto_build turns each into a
 * struct ct_evedge). */
struct ct_kwait {
    double tsd;    /* the wait's ts as Python parses it (HTA's rounding) */
    int64_t ts_ns; /* exact */
    int64_t rec_corr, from, to;
};

/* NCCL collective metadata of a kernel (args of NCCL kernels). */
struct ct_kcoll {
    uint8_t op;
    int32_t group;
    uint64_t in_nelems, out_nelems, elem_size;
    uint64_t pg; /* hash of Process Group Name, 0 */
};

struct ct_kineto {
    struct ct_krow *rows;
    size_t nrows, cap;
    struct ct_kcoll *colls;
    size_t ncolls, ccap;
    struct ct_kwait *waits;
    size_t nwaits, wcap;
    char **names;
    size_t nnames, ncap;
    uint32_t *hash; /* open addressing: name index + 1 */
    size_t hcap;
    /* CPU rows that were not stored (no stream, no correlation, not a
     * step): HTA's filter only needs their extent */
    double cpu_min_tsd, cpu_max_endd;
    int64_t cpu_min_ns, cpu_max_end_ns;
    uint64_t cpu_unstored;
    int ts_float;    /* some ts is not an int (or missing): HTA rounds */
    uint64_t events; /* traceEvents entries */
    int64_t world_size, base_ns;
    int display_ns;
    char warn[256];
    /* GPU rows the timeline leaves out: no length (after HTA's rounding) */
    int64_t drop_empty, model_rows; /* of model_rows: kernels, copies, memsets */
    char note[384];                 /* how many GPU rows each rule dropped, "" none */
    struct ct_hta hta;
    int hta_mode;
};

/* The Kineto reader's state of p (held in p->reader_data until the format
 * dispatch releases it), or NULL for any other input. */
static inline struct ct_kineto *ct_kin(const struct ct_proc *p)
{
    return p && p->source == CT_SOURCE_KINETO ? (struct ct_kineto *)p->reader_data : NULL;
}

int ct_kineto_intern(struct ct_kineto *k, const char *s, size_t n, uint32_t *out);
int ct_kineto_build(struct ct_proc *p, int hta, int filter_last);

/* HTA's kernel type of a name: 0 COMPUTATION, 1 COMMUNICATION, 2 MEMORY, 3 OTHER. */
enum { CT_HTA_COMP = 0, CT_HTA_COMM, CT_HTA_MEM, CT_HTA_OTHER };
int ct_hta_kernel_type(const char *name);

#endif
