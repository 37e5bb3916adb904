/*
 * The options `cutrace report`, `diff` and `diagnose` share, parsed once
 * (decoder/util/options.c) so they mean and say the same everywhere:
 *   --json        the JSON document instead of text
 *   -o FILE       write it to FILE (--output)
 *   --rows FILE   also write the JSON-lines rows (docs/diff.md)
 *   --skip N      drop the first N iterations of every rank
 * and the values they and `export` take: percentages ("2" or "2%"),
 * iteration ranges, time windows, rank lists.
 */
#ifndef CT_DECODER_OPTIONS_H
#define CT_DECODER_OPTIONS_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>

/* Their getopt_long entries (letters j, o, R, k), for a command's table. */
#define CT_SHARED_OPTIONS                                                                          \
    {"json", no_argument, NULL, 'j'}, {"output", required_argument, NULL, 'o'},                    \
        {"rows", required_argument, NULL, 'R'},                                                    \
    {                                                                                              \
        "skip", required_argument, NULL, 'k'                                                       \
    }

struct ct_shared_opts {
    int json;
    const char *out;  /* -o FILE, or NULL: stdout */
    const char *rows; /* --rows FILE, or NULL */
    long skip;        /* --skip N */
};

/*
 * Takes getopt_long's result c with its argument. Returns 1 when c is one
 * of the shared options (stored in o), 0 when it is not, -1 for a bad
 * value (one line on stderr: "CMD: --skip 'x': expected an integer >= 0").
 */
int ct_shared_opt(const char *cmd, int c, const char *arg, struct ct_shared_opts *o);

/* A number in [lo, hi], optionally followed by '%': 0 (in *out), or -1. */
int ct_parse_pct(const char *s, double lo, double hi, double *out);

/* Iteration indexes "A-B" with 0 <= A <= B; "A-" and "-B" leave that side
 * open (*last = -1: no bound): 0, or -1 (report --steps, export
 * --iterations). */
int ct_parse_index_range(const char *s, int64_t *first, int64_t *last);

/* "START-END" in µs on the job clock (START may be negative: host activity
 * before the job's first GPU start), START < END: 0, or -1. */
int ct_parse_window_us(const char *s, double *start, double *end);

/* Ranks "0-3,100,517": sorted, without repeats, into a malloc'd *out: 0,
 * -1 for a bad list, -ENOMEM. */
int ct_parse_rank_list(const char *s, int **out, size_t *n);

#endif
