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
/* 1 when name can be a metric of ct_diff_collect (`diff --primary`): one
 * of its fixed names, or kernel:NAME, collective:OP:BYTES; 0 otherwise,
 * with the fixed names, ", "-separated, in list (len bytes). */
int ct_diff_metric_name_ok(const char *name, char *list, size_t len);

struct ct_diff_opts {
    double min_effect; /* 0.02: a change must exceed 2 % */
    double alpha;      /* 0.05: BH-adjusted significance */
    uint64_t seed;
    unsigned reps; /* bootstrap resamples */
};

/* A figure of a row that cannot be computed (null in JSON, "-" in text),
 * with why. Both strings are static. */
struct ct_diff_unavail {
    const char *figure, *reason;
};

struct ct_diff_row {
    const char *name;
    size_t na, nb;
    /* ratio < 0: undefined (zero baseline); lo, hi NAN where a bound cannot
     * be computed. Each such figure is in na[] with its reason. */
    double med_a, med_b, ratio, lo, hi;
    double p, q;
    /* The three-way verdict with its direction (ct_diff_classify): +-2
     * regressed/improved beyond the minimum effect, +-1 changed but possibly
     * below it, 0 no evidence; positive is worse. */
    int change;
    int verdict;                       /* change / 2: -1 improved, 0 no evidence, 1 regressed */
    struct ct_diff_unavail unavail[7]; /* both medians and the five figures at most */
    size_t nunavail;
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

/*
 * The three-way verdict of a change with significance q (p, or its
 * Benjamini-Hochberg q) and 95 % interval [lo, hi] of the ratio B/A
 * (docs/diff.md, "Verdicts"): 0 (no evidence of change) unless q < alpha and
 * the interval excludes 1; then 2 when it lies entirely above
 * 1 + min_effect, 1 otherwise (a change, possibly smaller than the minimum
 * effect); the same negative below 1. A bound that is NaN (not computed)
 * excludes nothing on its side. higher_is_better flips the sign, so that
 * positive is always worse. With min_effect 0 the middle class is empty:
 * "any change" at min_effect m is the verdict at min_effect 0.
 */
int ct_diff_classify(double q, double alpha, double lo, double hi, double min_effect,
                     int higher_is_better);
/* "regressed", "worse, possibly below min effect", "no evidence",
 * "better, possibly below min effect", "improved" for 2 .. -2. */
const char *ct_diff_change_name(int c);
/* 1 for a metric where a larger value is better (goodput_pct), 0 for the
 * times. */
int ct_diff_higher_is_better(const char *metric);

/*
 * Whether the runs of the two sides look like one workload (diff_workload.c,
 * docs/diff.md "Not the same workload"). Per run: its ranks, its metrics
 * (the kernel:NAME ones name its compute kernels) and its processes'
 * command lines ('\n'-separated; "" or NULL when none was recorded).
 * Appends one malloc'ed line per difference to *w (*nw lines): the rank
 * counts differ; the kernel names' Jaccard index (shared / all names of
 * both sides) is below CT_KERNEL_JACCARD_MIN; some command-line word is in
 * every run of one side and in none of the other. 0 or -ENOMEM.
 */
struct ct_workload {
    size_t nranks;
    const struct ct_metric_set *summary;
    const char *cmdline;
};
/* Fewer than half of the kernel names the two sides use are shared: a
 * driver, library or GPU-model change renames the vendor-library kernels
 * (GEMM, attention, convolution), a minority of a step's distinct names;
 * the framework's own elementwise, reduction and optimizer kernels keep
 * theirs (docs/diff.md). */
#define CT_KERNEL_JACCARD_MIN 0.5
int ct_diff_workload(const struct ct_workload *a, size_t na, const struct ct_workload *b, size_t nb,
                     char ***w, size_t *nw);
/* |a ∩ b| / |a ∪ b| of two lists of distinct names (1 when both are empty);
 * *shared gets |a ∩ b|. */
double ct_kernel_jaccard(const char *const *a, size_t na, const char *const *b, size_t nb,
                         size_t *shared);

#endif
