/*
 * Each collective kind's transfer as latency plus size over bandwidth,
 * fitted from the job's own matched ops of different sizes: what `cutrace
 * whatif --scale net=F` and `link=A-B=F` scale (the bandwidth term; the
 * latency stays). docs/critical-path.md, "The network in physical units",
 * states the rule. Never prints.
 */
#ifndef CT_XFER_MODEL_H
#define CT_XFER_MODEL_H

#include <stddef.h>
#include <stdint.h>

struct ct_report;

/* Two sizes a fit can tell latency from bandwidth with: the largest at
 * least this many times the smallest (closer, the slope is the difference
 * of two nearly equal times, and the latency its extrapolation far
 * outside them). */
#define CT_XFER_SIZE_SPREAD 2.0

enum ct_xfer_status {
    CT_XFER_FITTED = 0, /* lat_ns and ns_per_byte from two sizes or more */
    CT_XFER_ONE_SIZE,   /* sizes too few or too close: latency not separable */
    CT_XFER_NO_SLOPE,   /* the transfer does not grow with size: latency-bound */
    CT_XFER_UNMATCHED,  /* no instance matched across ranks: no transfer measured */
};

/* One collective kind (op, communicator size) over the job. */
struct ct_xfer_model {
    int op;       /* enum ct_nccl_op */
    int nranks;   /* 2 for point-to-point */
    size_t sizes; /* distinct sizes with matched instances */
    uint64_t min_bytes, max_bytes;
    uint64_t matched;   /* matched instances over those sizes */
    double lat_ns;      /* fitted latency (>= 0); NAN unless CT_XFER_FITTED */
    double ns_per_byte; /* fitted bandwidth term (> 0); NAN unless CT_XFER_FITTED */
    double fit_err_pct; /* rms relative residual over the sizes; NAN with 2 sizes */
    int status;         /* enum ct_xfer_status */
};

/* The models of rep's collectives (rep->coll, one per (op, ranks) that has
 * rows), in rep->coll's order of first appearance. 0 or -ENOMEM; *out NULL
 * when there are none. Free with free(). */
int ct_xfer_models(const struct ct_report *rep, struct ct_xfer_model **out, size_t *n);

/* The model of (op, nranks) in m[0..n), or NULL. */
const struct ct_xfer_model *ct_xfer_model_of(const struct ct_xfer_model *m, size_t n, int op,
                                             int nranks);

/* A transfer that took w ns with its bandwidth term scaled by f: the
 * fitted latency (up to w) kept, the rest times f. Without a fit (m NULL,
 * one size, unmatched) the whole transfer is scaled: the latency taken as
 * 0, the most a faster network could give; latency-bound, w unchanged. */
int64_t ct_xfer_scaled(const struct ct_xfer_model *m, int64_t w, double f);

/* The status's words for output ("fitted", "one size", ...). */
const char *ct_xfer_status_name(int status);

#endif
