/*
 * `cutrace fleet`: many jobs in one store (fleet_store.h), the fleet's
 * GPU time split into what it went to (fleet_report.c), and each
 * workload's step time modelled on the factors its jobs ran with, so that
 * a regression is pinned on the host, GPU model, driver, CUDA, NCCL or
 * cutrace version, configuration or tag that carries it (fleet_pin.c).
 * Definitions, schema and statistics: docs/fleet.md.
 *
 *   fleet_add.c       rows (docs/diff.md "Rows") into the store: one job per
 *                     "job" row, added once (its run identity), its parts
 *                     and per-step figures computed as it is read
 *   fleet_ingest.c    traces and summaries to rows, run by run
 *   fleet_workload.c  the workload fingerprint
 *   fleet_jobs.c      the jobs read back for report and explain
 *   fleet_report.c    GPU time, goodput and where the rest went, by key
 *   fleet_pin.c       the factor model, its tests and change points
 *   fleet_out.c       explain's text, JSON, rows and HTML
 *
 * Functions return 0 or a negative errno with err holding one message;
 * they never exit. Only the ingestion prints (progress, on stderr, when
 * asked).
 */
#ifndef CT_FLEET_H
#define CT_FLEET_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct ct_fdb;

/* ------------------------------------------------------------ adding */

struct ct_fleet_add_stats {
    size_t added;   /* jobs new to the store */
    size_t present; /* jobs the store had already (their run identity): unchanged */
};

/* The JSON-lines rows of one or more jobs, read from f (each job's rows
 * begin with its "job" row, as `report --rows` and `diff --rows` write
 * them). source says what they came from ("rows", "traces",
 * "summaries"). what names f in messages. */
int ct_fleet_add_rows(struct ct_fdb *db, FILE *f, const char *source, const char *what,
                      struct ct_fleet_add_stats *st, char *err, size_t errlen);

/* The same for rows handed over one line at a time (fleet_ingest.c writes
 * a job's rows straight into it): new, then line for each line (without
 * or with its '\n'), then end (0, or the first error). */
struct ct_fleet_adder;
int ct_fleet_adder_new(struct ct_fdb *db, const char *source, struct ct_fleet_adder **a);
int ct_fleet_adder_line(struct ct_fleet_adder *a, const char *line, size_t n);
int ct_fleet_adder_end(struct ct_fleet_adder *a, struct ct_fleet_add_stats *st, char *err,
                       size_t errlen);

/* 1 when path is a rows file: its first line is a cutrace.rows object (or
 * its name ends in .jsonl). */
int ct_fleet_is_rows(const char *path);

/*
 * Traces and summaries (files, folders of them) into the store, run by
 * run (decoder/load/run_identity.h: every run among the operands is a
 * job; traces that name no run are one job together): each run is loaded
 * and analysed as `cutrace report` does, its rows handed to the adder.
 * progress: one line per run on stderr. Returns 0, or a negative errno
 * with err naming the run that failed (the runs before it stay added).
 */
int ct_fleet_add_traces(struct ct_fdb *db, char *const *operands, int n, int progress,
                        struct ct_fleet_add_stats *st, char *err, size_t errlen);

/* ------------------------------------------------------------ jobs */

/* Where a job's GPU time went (docs/fleet.md "GPU time"), GPU-µs. */
enum ct_fleet_part {
    CT_FP_USEFUL = 0,
    CT_FP_STARTUP,
    CT_FP_RESTART, /* restarts and lost work: restore, lost steps, hang, down time */
    CT_FP_CHECKPOINT,
    CT_FP_DATA,
    CT_FP_COMM, /* exposed communication, waits for late peers left out */
    CT_FP_STRAGGLER,
    CT_FP_THROTTLE,
    CT_FP_IDLE,
    CT_FP_N
};
/* "useful", "startup", "restarts", ... (JSON keys take "_us"/"_pct"). */
const char *ct_fleet_part_name(int part);
/* "useful work", "start-up", "restarts and lost work", ... (text). */
const char *ct_fleet_part_title(int part);

struct ct_fleet_kv {
    char *key, *value;
};

/* The candidate factors of a job and the --by keys (fleet_jobs.c). */
struct ct_fleet_job {
    char *run_id, *job, *workload, *layout, *cmd, *start_utc;
    int64_t start_us; /* unix µs of the run's start, INT64_MIN unknown */
    int64_t ranks, iterations;
    /* step figures (µs): the median step; means over (rank, iteration) */
    double step_p50, step_mean, compute_step, exposed_step, idle_step, data_step, ckpt_step;
    double wait_step; /* of exposed_step: waiting in collectives for the last rank */
    double goodput_pct;
    double gpu_us, part[CT_FP_N]; /* NAN when the job has no goodput */
    int throttle_known;           /* health counters gave its throttling */
    double kept_share;            /* of its iterations' time, the steps kept (not lost) */
    /* factor values: "host", "gpu", "driver", "cuda_version", "nccl_version",
     * "cutrace_version", "tag.K", "env.NCCL_X", "config.clock_policy",
     * "config.power_limit"; a factor may have several values (a job's
     * hosts) */
    struct ct_fleet_kv *fv;
    size_t nfv;
    int64_t *host_ranks; /* ranks on each "host" value, in fv order */
    double *host_thr;    /* of part[CT_FP_THROTTLE], the GPU-µs of the ranks on each host
                          * (fv order; NULL when unknown) */
    /* the collective that took the most time: "AllReduce:BYTES", its busbw */
    char *coll;
    double coll_busbw;
    char **kernels; /* distinct kernel names, sorted (the workload's kernel mix) */
    size_t nkernels;
};

struct ct_fleet_jobs {
    struct ct_fleet_job *j;
    size_t n;
    size_t without_goodput; /* jobs whose GPU time cannot be split (no goodput) */
};

/* Filters: run start in [since_us, until_us) (INT64_MIN/MAX: none), one
 * workload (NULL: all). */
struct ct_fleet_filter {
    int64_t since_us, until_us;
    const char *workload;
};

/*
 * Reads the jobs of the store that pass the filter, in run-start order
 * (then run identity), with their workloads resolved (fleet_workload.c:
 * the fingerprint, split by kernel mix). 0, -ENOENT with err when a
 * workload filter names none, or another negative errno.
 */
int ct_fleet_jobs_load(struct ct_fdb *db, const struct ct_fleet_filter *flt,
                       struct ct_fleet_jobs *js, char *err, size_t errlen);
void ct_fleet_jobs_free(struct ct_fleet_jobs *js);

/* The job's values of a --by key (aliases as diff's: gpu, driver, nccl,
 * cuda, cutrace, clock_policy, power_limit, a tag or NCCL_* name, or a
 * full "tag.K"/"env.K"/"config.K"; "workload", "host"), borrowed, into
 * vals (at most max): how many; 0 when the job has none. */
size_t ct_fleet_values(const struct ct_fleet_job *j, const char *key, const char **vals,
                       size_t max);
/* The factor name a --by key means ("nccl" -> "nccl_version"), or NULL. */
const char *ct_fleet_key(const char *key, char *buf, size_t len);

/* ------------------------------------------------------------ workload */

/*
 * The workload fingerprint's parts (docs/fleet.md "Workload"): the
 * command with what changes between runs of one workload left out (the
 * interpreter's and the script's folders, seeds, ports, output and log
 * folders, run names), into cmd; and its hash with the rank layout
 * ("16x8": ranks x most ranks on one host) into fp ("w-" and 10 hex
 * digits). A tag "workload" names the workload instead.
 */
void ct_fleet_command_signature(const char *cmdline, char *cmd, size_t len);
void ct_fleet_fingerprint(const char *cmd, const char *layout, char *fp, size_t len);
/* Jobs of one fingerprint whose kernel names share less than half
 * (Jaccard < CT_KERNEL_JACCARD_MIN) with the fingerprint's first job (in
 * run-start order) are another workload: fingerprint "/k2", "/k3"... */
int ct_fleet_workloads_split(struct ct_fleet_jobs *js);

/* ------------------------------------------------------------ report */

struct ct_fleet_report_opts {
    const char *const *by; /* --by keys */
    size_t nby;
};

/* Text, JSON (schema cutrace.fleet.report) and rows of the report. */
int ct_fleet_report_write(FILE *f, const struct ct_fleet_jobs *js,
                          const struct ct_fleet_report_opts *o, int json, char *err, size_t errlen);
int ct_fleet_report_rows(FILE *f, const struct ct_fleet_jobs *js,
                         const struct ct_fleet_report_opts *o, char *err, size_t errlen);

/* ------------------------------------------------------------ explain */

struct ct_fleet_explain_opts {
    double alpha;      /* 0.05: the family-wise level over every factor tried */
    double min_effect; /* 0.02: an effect must exceed 2 % to be "pinned" */
    uint64_t seed;     /* change points' permutations */
    unsigned perms;    /* 999 */
    size_t min_jobs;   /* a workload needs this many jobs (8) */
};

struct ct_fleet_explain;
int ct_fleet_explain_run(const struct ct_fleet_jobs *js, const struct ct_fleet_explain_opts *o,
                         struct ct_fleet_explain **out, char *err, size_t errlen);
void ct_fleet_explain_free(struct ct_fleet_explain *x);
void ct_fleet_explain_text(FILE *f, const struct ct_fleet_explain *x);
void ct_fleet_explain_json(FILE *f, const struct ct_fleet_explain *x);
void ct_fleet_explain_rows(FILE *f, const struct ct_fleet_explain *x);
void ct_fleet_explain_html(FILE *f, const struct ct_fleet_explain *x,
                           const struct ct_fleet_jobs *js);

#endif
