/*
 * HTA-compatible figures of a rank whose input is a PyTorch profiler trace
 * read in HTA-compatible mode (docs/kineto.md): what Holistic Trace
 * Analysis would report for it, computed by the Kineto reader
 * (decoder/kineto/) and kept on the process (struct ct_proc.hta); the
 * report writes them (decoder/export/hta_out.c). Plain data: nothing here
 * reads or prints.
 */
#ifndef CT_HTA_H
#define CT_HTA_H

#include <stddef.h>
#include <stdint.h>

struct ct_hta_stream {
    int64_t stream;
    int64_t wait[3]; /* host_wait, kernel_wait, other (trace units x 1000) */
    int present[3];  /* the category occurs (HTA prints only those) */
    /* HTA sums overlapping events' negative gaps: a category whose sum is
     * negative is no idle time (null), and the stream's ratios then are no
     * shares (null) */
    int negative;
};

/* The figures of struct ct_hta that are null (bits of ct_hta.bad): HTA
 * would fail an assertion on them, or they would be negative time or a
 * share outside [0, 100] % (HTA's µs rounding can make a row's length
 * negative). The rank's `unavailable` list says why (ct_hta_unavailable). */
enum {
    CT_HB_KERNEL_TIME = 1u << 0,
    CT_HB_IDLE = 1u << 1,
    CT_HB_COMPUTE = 1u << 2,
    CT_HB_NON_COMPUTE = 1u << 3,
    CT_HB_UNION_ALL = 1u << 4,
    CT_HB_COMM = 1u << 5,
    CT_HB_MEMORY = 1u << 6,
    CT_HB_OVERLAP = 1u << 7,
    CT_HB_IDLE_BREAKDOWN = 1u << 8,
};
#define CT_HB_N 9

/* HTA's numbers for one rank, in ns (HTA's µs x 1000). */
struct ct_hta {
    int valid;           /* 0: no GPU event (HTA raises) */
    int64_t gpu_events;  /* rows in G after the filter */
    int64_t kernel_time; /* max end - min ts over G */
    int64_t idle, compute, non_compute;
    int64_t union_all, union_comm, union_mem, comp_comm;
    int rounded;       /* µs rounding applied */
    int filtered;      /* last step dropped (>= 2 step names in the job) */
    int64_t step_last; /* N of the step the filter cut at, -1 */
    /* GPU rows (HTA's split) and those the last-step filter dropped: their
     * launch starts at or after the last step's, or is not in the trace */
    int64_t gpu_rows, drop_last_step, drop_no_launch;
    unsigned bad;           /* CT_HB_* figures given as null */
    int64_t negative_rows;  /* rows of G that HTA's rounding left with end < start */
    char why[CT_HB_N][320]; /* the reason for each bit of bad */
    struct ct_hta_stream *streams;
    size_t nstreams;
};

/* The i-th figure of h given as null, with the reason: HTA would fail its
 * assertion on it, it would be negative time or a share outside
 * [0, 100] %, or it has no data (no GPU event, no communication). 0 past
 * the last (or for h NULL: not Kineto input in HTA-compatible mode). */
int ct_hta_unavailable(const struct ct_hta *h, size_t i, const char **figure, const char **reason);

/* Frees h and what it holds (NULL: nothing). */
void ct_hta_free(struct ct_hta *h);

#endif
