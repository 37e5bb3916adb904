/*
 * What the checks of `cutrace diagnose` share (decoder/compare/diagnose.c, and the
 * health-counter checks in diagnose_health.c): the run being diagnosed and
 * the helpers that record findings and their evidence.
 */
#ifndef CT_DIAGNOSE_INT_H
#define CT_DIAGNOSE_INT_H

#include "decoder/compare/diagnose.h"

#define SLOW_FACTOR 1.05 /* compute straggler: kernels >= 5 % slower than peers */

struct ctx {
    const struct ct_report *rep;
    const struct ct_diag_opts *o;
    struct ct_diagnosis *d;
    double step; /* ns */
};

/* A rank's total per iteration (0 without iterations). */
double ct_dg_per_iter(const struct ct_rank_result *x, int64_t total);
/* A new finding of `kind` saving saving_ns, with a confidence from how far
 * it clears the threshold times `quality` (1: measured, < 1: inferred);
 * NULL when below the threshold or out of room. */
struct ct_finding *ct_dg_add(struct ctx *c, int kind, double saving_ns, double quality);
/* A finding whose saving nothing in the trace can quantify (saving_us NaN,
 * written null), at the confidence given; listed after every quantified
 * one, whatever the threshold. NULL when out of room. */
struct ct_finding *ct_dg_add_unquantified(struct ctx *c, int kind, double confidence);
/* Evidence: a number, or a formatted string. */
void ct_dg_ev(struct ct_finding *f, const char *key, double v);
void ct_dg_evs(struct ct_finding *f, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void ct_dg_rank_add(struct ct_finding *f, int r);
/* Lowers each finding's confidence by the coverage of the ranks it rests
 * on (ct_coverage_factor: the worst of its ranks, of every rank with
 * iterations when it names none), with the reason in confidence_note. */
void ct_dg_coverage(struct ctx *c);
/* Why `kind` could not be judged. */
void ct_dg_insufficient(struct ctx *c, int kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* diagnose_replay.c: each finding with a whatif replayed on the job's
 * dependency graph (decoder/analysis/critical_path.h): its saving becomes
 * the predicted mean step's drop. Returns 0: a graph too large, with a
 * dependency cycle or without the memory to build it leaves the formulas,
 * and d->replay_note says why. */
int ct_dg_replay_savings(struct ctx *c);

/* diagnose_health.c: throttled_gpu and host_contention, and the links from
 * straggler findings to them. 0 or -ENOMEM. */
int ct_dg_check_health(struct ctx *c);

/* diagnose_efficiency.c: low_tensor_activity and memory_bound_phase from
 * the ranks' GPM figures. 0 or -ENOMEM. */
int ct_dg_check_efficiency(struct ctx *c);
/* diagnose_links.c: slow_link, from NCCL's proxy steps (docs/nccl.md). */
void ct_dg_check_links(struct ctx *c);
/* diagnose_links.c: a size NCCL's choice made slower than the next smaller */
void ct_dg_check_choices(struct ctx *c);

#endif
