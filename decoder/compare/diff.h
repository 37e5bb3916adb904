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
    /* run-level rows (ct_diff_compare_runs) */
    int primary;                 /* the primary metric: tested alone at alpha (q = p) */
    int run_level;               /* 1: the runs' model below; 0: one sample per value (U test) */
    size_t samples_a, samples_b; /* within-run samples (iterations) behind the runs' values */
    double df;                   /* Welch degrees of freedom of the run-level test */
};

/* Compares every metric present on both sides. *rows is malloc'ed; names
 * borrow from a. 0 or -ENOMEM. */
int ct_diff_compare(const struct ct_metric_set *a, const struct ct_metric_set *b,
                    const struct ct_diff_opts *o, struct ct_diff_row **rows, size_t *n);

/*
 * The comparison of runs with their iterations (docs/diff.md, "Few runs"):
 * every run of a side gives, per metric, its value (its summary: the median
 * over its samples) and the samples it came from. Per metric present in at
 * least 2 runs of each side with positive values: Welch's t on the log run
 * values, each side's variance at least what the runs' own iteration
 * scatter implies for their medians; the ratio is the ratio of geometric
 * means of the runs' values, its 95 % interval and p from the same t.
 * `primary` (NULL: "step_us") is tested alone at alpha; the others are
 * diagnostics, Benjamini-Hochberg among themselves. Metrics with a zero or
 * missing value fall back to the U test on the run values. *rows is
 * malloc'ed, the primary first; names borrow from the runs. 0 or -ENOMEM.
 */
struct ct_diff_run {
    const struct ct_metric_set *summary; /* one value per metric */
    const struct ct_metric_set *samples; /* the run's within-run samples (may be NULL) */
};
int ct_diff_compare_runs(const struct ct_diff_run *a, size_t na, const struct ct_diff_run *b,
                         size_t nb, const struct ct_diff_opts *o, const char *primary,
                         struct ct_diff_row **rows, size_t *n);

const char *ct_diff_verdict_name(int v);

#endif
