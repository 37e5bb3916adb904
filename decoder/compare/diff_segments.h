/*
 * `cutrace diff`'s runs and segments (decoder/compare/diff_segments.c):
 * each side's runs loaded once (their --by value, summary metrics,
 * within-run samples, ranks and command lines), the runs grouped by --by
 * value into segments, and each segment compared at the level its runs
 * allow (docs/diff.md): iterations of one run per side, runs (at least
 * CT_DIFF_MIN_RUNS per side for a verdict), or runs with their iterations
 * behind them when both sides have two or more. Functions return 0 or a
 * negative errno (err names the trace or says what failed); nothing here
 * prints but the rows a caller asks for.
 */
#ifndef CT_DIFF_SEGMENTS_H
#define CT_DIFF_SEGMENTS_H

#include <stddef.h>
#include <stdio.h>

#include "decoder/compare/diff.h"
#include "decoder/compare/runs.h"

/* Fewer runs per side (but not one each) give no verdict: a run-to-run
 * variance from two runs has one degree of freedom (docs/diff.md). */
#define CT_DIFF_MIN_RUNS 3

/* One side (A or B) of a comparison. */
struct ct_diff_side {
    struct ct_runset rs;
    char **value;                  /* per run: its --by value ("all" without --by) */
    struct ct_metric_set *summary; /* per run: one value per metric */
    struct ct_metric_set *samples; /* per run: its within-run samples */
    size_t *nranks;                /* per run: its ranks */
    char **cmdline;                /* per run: its command lines (ct_run_cmdlines) */
    /* --by nccl_tag (diff_tags.c): per run its tags' metrics, as a summary
     * (tsum) and as within-run samples (tsamp); NULL otherwise */
    struct ct_metric_set *tsum, *tsamp;
    int tag_view; /* a tag's view of a side: its samples are in samples[], not reloaded */
};

/*
 * Loads every run of s->rs (found with ct_runs_find): its --by value (by
 * NULL: "all"), summary metrics, within-run samples (the run-level model's
 * floor), ranks and command lines; with rows not NULL its JSON-lines rows
 * go there, side `name` ("A", "B").
 */
int ct_diff_side_load(struct ct_diff_side *s, const char *by, const struct ct_iter_opts *io,
                      FILE *rows, const char *name, char *err, size_t errlen);
void ct_diff_side_free(struct ct_diff_side *s);

/* Lines saying A and B may not be one workload (ct_diff_workload's), over
 * all their runs whatever --by: *w (malloc'd strings), *nw of them. */
int ct_diff_side_warnings(const struct ct_diff_side s[2], char ***w, size_t *nw);

/* A --by value and how many runs of each side have it. */
struct ct_diff_segment {
    char *value;
    size_t na, nb;
};
/* The segments of the two sides, in first-seen order (A's runs first). */
int ct_diff_segments(const struct ct_diff_side s[2], struct ct_diff_segment **segs, size_t *n);
void ct_diff_segments_free(struct ct_diff_segment *segs, size_t n);

/* One segment compared (rows as ct_diff_compare or ct_diff_compare_runs
 * give them; no verdict with too few runs); ct_diff_segment_result_free
 * frees it (the rows name metrics of a and b). */
struct ct_diff_segment_result {
    struct ct_diff_row *rows; /* malloc'd */
    size_t nrows;
    struct ct_metric_set a, b; /* the samples compared, below run level */
    int per_iteration;         /* one run per side: samples are iterations */
    int run_level;             /* runs with their iterations (2 or more per side) */
    int primary_change;        /* the primary metric's change at run level, else 0 */
    char explained[1024];      /* the diagnostics that changed with the primary, ", "-separated */
    char warn[512];            /* "" or one warning */
    struct ct_metric_set *own; /* --by nccl_tag: the tag's views the rows name (diff_tags.c) */
    size_t nown;
};
/* Compares segment g: per_iteration samples reload each of its runs. */
int ct_diff_segment_compare(struct ct_diff_side s[2], const struct ct_diff_segment *g,
                            const struct ct_diff_opts *o, const char *primary,
                            const struct ct_iter_opts *io, struct ct_diff_segment_result *res,
                            char *err, size_t errlen);

void ct_diff_segment_result_free(struct ct_diff_segment_result *res);

/* --by nccl_tag (diff_tags.c, docs/diff.md "Per user tag"): the key, the
 * tags' metrics of a run's report ("nccl_tag:TAG:ops", ":gpu_us",
 * ":op_us"; per_iteration as ct_diff_collect), a segment per tag seen on
 * either side in numeric order (every run in each; one "(none)" segment
 * when neither has a tag), and one segment compared on its tag's metrics
 * with op_us as the primary, a metric a side lacks a null row with the
 * reason. 0 or a negative errno. */
#define CT_DIFF_BY_TAG "nccl_tag"
int ct_diff_collect_tags(const struct ct_report *rep, int per_iteration, struct ct_metric_set *s);
int ct_diff_tag_segments(const struct ct_diff_side s[2], struct ct_diff_segment **segs, size_t *n);
int ct_diff_tag_compare(struct ct_diff_side s[2], const struct ct_diff_segment *g,
                        const struct ct_diff_opts *o, const struct ct_iter_opts *io,
                        struct ct_diff_segment_result *res, char *err, size_t errlen);

/* Whether two changes (ct_diff_row.change) go the same way. */
int ct_diff_same_sign(int x, int y);

#endif
