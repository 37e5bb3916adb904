/*
 * Every command's options in one table, parsed the same way for every
 * command (uftrace's shape; decoder/util/options.c): each option once, with
 * its long name, its argument, the code getopt returns and the commands
 * that take it. The options several commands take mean the same for each
 * and are checked in one place (ct_shared_opt):
 *   --json        the JSON document instead of text
 *   -o FILE       write it to FILE (--output; a folder for run, summarize)
 *   --rows FILE   also write the JSON-lines rows (docs/diff.md)
 *   --skip N      drop the first N iterations of every rank
 *   --step NAME   the NVTX range or mark that names iterations (not empty)
 *   --run ID      the run to read when the operands hold several
 *   --job ID      the launcher job to measure (goodput)
 *   --comm-kernels FILE  kernel-name patterns that count as communication
 *                 (decoder/util/comm_kernels.h; every analysis command)
 * Also the values they and `export` take: percentages ("2" or "2%"),
 * iteration ranges, time windows, rank lists.
 */
#ifndef CT_DECODER_OPTIONS_H
#define CT_DECODER_OPTIONS_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>

/* The commands that take options. */
enum ct_cmd_id {
    CT_CMD_INFO,
    CT_CMD_DUMP,
    CT_CMD_REPORT,
    CT_CMD_EXPORT,
    CT_CMD_DIFF,
    CT_CMD_DIAGNOSE,
    CT_CMD_SUMMARIZE,
    CT_CMD_GOODPUT,
    CT_CMD_CRITICAL_PATH, /* and whatif: one leaf's two faces */
    CT_CMD_RUN,
    CT_CMD_CONTROL, /* start, stop, dump-now */
    CT_CMD_SALVAGE,
    CT_CMD_FLEET,     /* fleet report and fleet explain */
    CT_CMD_FLEET_ADD, /* fleet add */
    CT_NCMDS
};

/* The getopt_long table of command cmd (its options, from the one table);
 * static storage, built at the first ask (the main thread's). */
const struct option *ct_options_of(enum ct_cmd_id cmd);

/* The values of the shared options, as parsed. */
struct ct_shared_opts {
    int json;
    const char *out;  /* -o FILE, or NULL: stdout */
    const char *rows; /* --rows FILE, or NULL */
    long skip;        /* --skip N */
    const char *step; /* --step NAME, or NULL: the default */
    const char *run;  /* --run ID, or NULL */
    const char *job;  /* --job ID, or NULL */
    /* --comm-kernels FILE (the last given), or NULL; each file given is
     * loaded into the table of decoder/util/comm_kernels.h as it is parsed */
    const char *comm_kernels;
};

/*
 * Takes getopt_long's result c with its argument for command cmd (named
 * name in messages: "cutrace report"). Returns 1 when c is one of the
 * shared options that cmd takes (stored in o), 0 when it is not (the
 * command's own), -1 for a bad value (one line on stderr: "cutrace report:
 * --skip 'x': expected an integer >= 0").
 */
int ct_shared_opt(enum ct_cmd_id cmd, const char *name, int c, const char *arg,
                  struct ct_shared_opts *o);

/* The one message for an option command cmd (named name: "cutrace info")
 * does not take, or one missing its value (arg: as given): the options it
 * takes, from the table, on stderr. The caller exits 2. */
void ct_bad_option(enum ct_cmd_id cmd, const char *name, const char *arg);

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
