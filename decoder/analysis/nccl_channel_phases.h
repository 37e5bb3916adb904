/*
 * An NCCL kernel's phases from its channels (format v5 nccl_channel
 * records: each channel's start and stop on the GPU's timer, docs/nccl.md
 * "Kernel channels"): per collective (communicator, op, size), medians over
 * its instances on every rank of the kernel's launch and setup (from the
 * kernel's start to its first channel's start), the channels' start
 * spread, the busiest channel and its run, and the stop spread (the
 * channels' imbalance: the op ends with its last channel). Never prints.
 */
#ifndef CT_NCCL_CHANNEL_PHASES_H
#define CT_NCCL_CHANNEL_PHASES_H

#include <stddef.h>
#include <stdint.h>

/* A channel that starts before its kernel by up to this much is taken to
 * start with it (setup 0): the channel's times are the GPU's globaltimer
 * converted with the host's realtime - monotonic offset, the kernel's
 * CUPTI's conversion of the same timer: two conversions that agree to
 * about a microsecond (the simulator: 0.3 us). Further off, the setup is
 * unknown (the clocks disagree), never negative. */
#define CT_NCHAN_CLOCK_TOL_NS 2000
/* Runs within this of the longest name no busiest channel in an instance:
 * the globaltimer ticks at 1 us on some GPUs (32 ns on others). */
#define CT_NCHAN_TIE_NS 1000

/* One op instance's channels, reduced (ct_nchan_obs_of). */
struct ct_nchan_obs {
    size_t row;        /* the collective it is an instance of */
    uint32_t nch;      /* channels recorded */
    int64_t setup;     /* first channel start - kernel start, >= 0; -1 unknown */
    uint8_t setup_why; /* enum ct_nchan_why when setup is -1 */
    int64_t start_spread, stop_spread;
    int64_t run;     /* the longest channel's stop - start */
    int32_t busiest; /* its channel id; -1: a tie within CT_NCHAN_TIE_NS */
};

enum ct_nchan_why {
    CT_NCHAN_WHY_NONE = 0,
    CT_NCHAN_WHY_NO_CHANNELS, /* no nccl_channel records for the op */
    CT_NCHAN_WHY_CE,          /* a copy-engine collective: no kernel */
    CT_NCHAN_WHY_NO_KERNEL,   /* no kernel record of the op's kernel */
    CT_NCHAN_WHY_CLOCKS,      /* its first channel before its kernel by > the tolerance */
    CT_NCHAN_WHY_NO_BUSIEST,  /* no channel the busiest in more than half the instances */
};
/* The reason's sentence (never NULL for a reason other than NONE). */
const char *ct_nchan_why_text(int why);

/* Per collective: medians over the instances with channel records (NAN
 * when none, with the reason). */
struct ct_nchan_row {
    uint64_t instances;                                         /* with channel records */
    double setup_p50_ns;                                        /* NAN: setup_why */
    double start_spread_p50_ns, stop_spread_p50_ns, run_p50_ns; /* NAN: why */
    int32_t busiest;    /* the channel busiest in most instances, -1: busiest_why */
    double busiest_pct; /* of the instances, the share where it was */
    uint8_t why, setup_why, busiest_why;
};

/* Reduces one op's channels (ch[0..n), any order) with its kernel's start
 * (kernel_s; INT64_MIN: none known) on the same clock. n > 0. */
void ct_nchan_obs_of(const int64_t *s, const int64_t *e, const uint32_t *id, size_t n,
                     int64_t kernel_s, struct ct_nchan_obs *o);
/* The medians of rows[0..nrows) from obs (any order; each obs->row <
 * nrows). Rows without an instance keep why = NO_CHANNELS unless set
 * already. 0 or -ENOMEM. */
int ct_nchan_rows(const struct ct_nchan_obs *obs, size_t n, struct ct_nchan_row *rows,
                  size_t nrows);
/* An empty row: NANs, why NO_CHANNELS. */
void ct_nchan_row_init(struct ct_nchan_row *r);

struct ct_job;
struct ct_nlinks;
/* Fills each collective row of L (ct_nccl_links's, L->split[].ch) from
 * the job's channel records and its ranks' kernels (it opens each rank).
 * 0, -ENOMEM or ct_rank_open's error. */
int ct_nccl_channel_phases(struct ct_job *job, struct ct_nlinks *L);

#endif
