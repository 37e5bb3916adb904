/*
 * `cutrace diff`: metric samples of runs and their comparison. A metric is
 * a named time (µs); each side of a comparison holds its samples: one value
 * per run (the run's median), or, when each side is one run, one value per
 * (rank, iteration), per kernel instance or per collective instance.
 * Definitions and the JSON shape are in docs/diff.md.
 */
#ifndef CT_DIFF_H
#define CT_DIFF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "decoder/analysis/analysis.h"

struct ct_metric {
    char *name;
    double *v;
    size_t n, cap;
};

struct ct_metric_set {
    struct ct_metric *m;
    size_t n, cap;
};

/* Appends v to metric `name` (created on first use). 0 or -ENOMEM. */
int ct_metric_add(struct ct_metric_set *s, const char *name, double v);
struct ct_metric *ct_metric_find(const struct ct_metric_set *s, const char *name);
void ct_metric_set_free(struct ct_metric_set *s);

/*
 * Adds a report's metrics to s. per_iteration = 0: one value per metric
 * (the run's summary); 1: the samples within the run (iterations,
 * instances; collectives by their transfer part). 0 or -ENOMEM.
 */
int ct_diff_collect(const struct ct_report *rep, int per_iteration, struct ct_metric_set *s);

struct ct_diff_opts {
    double min_effect; /* 0.02: a change must exceed 2 % */
    double alpha;      /* 0.05: BH-adjusted significance */
    uint64_t seed;
    unsigned reps; /* bootstrap resamples */
};

struct ct_diff_row {
    const char *name;
    size_t na, nb;
    double med_a, med_b, ratio, lo, hi; /* ratio < 0: undefined (zero baseline) */
    double p, q;
    int verdict; /* -1 improved, 0 no evidence, 1 regressed */
};

/* Compares every metric present on both sides. *rows is malloc'ed; names
 * borrow from a. 0 or -ENOMEM. */
int ct_diff_compare(const struct ct_metric_set *a, const struct ct_metric_set *b,
                    const struct ct_diff_opts *o, struct ct_diff_row **rows, size_t *n);

const char *ct_diff_verdict_name(int v);

#endif
