/*
 * Per-link bandwidth, slow-link localisation and the per-collective split
 * into waiting and transfer, from NCCL's own account of its ops (the
 * profiler plugin's descriptors and proxy steps, decoder/read/nccl_acct.h;
 * docs/nccl.md states every rule). Never prints.
 */
#ifndef CT_NCCL_LINKS_H
#define CT_NCCL_LINKS_H

#include <stddef.h>
#include <stdint.h>

#include "decoder/analysis/nccl_channel_phases.h"
#include "decoder/read/nccl_acct.h"

struct ct_job;

/* A link is slow when its bandwidth is below (1 - CT_SLOW_LINK_TOL) of
 * the median of its communicator's other links (docs/nccl.md argues the
 * figure). */
#define CT_SLOW_LINK_TOL 0.2
/* ... and when it is slow so in at least CT_SLOW_LINK_MOST of the
 * collective instances (communicator, sequence) it shares with at least
 * two other links, a count that a link slow or not at the toss of a coin
 * in each reaches with a chance of at most CT_SLOW_LINK_CHANCE: per-op
 * noise (a proxy thread woken late, a step's latency in a small op) makes
 * some link the slowest of some ops, but a link slow in itself is slow in
 * nearly every op it carries (docs/nccl.md). At least 4 instances: 4 of 4
 * is 1 in 16. */
#define CT_SLOW_LINK_MOST   0.75
#define CT_SLOW_LINK_CHANCE (1.0 / 16)

/* One send ProxyOp of one op on one channel, joined to its op: what the
 * analysis reads (built from a job, or by hand in the tests). */
struct ct_nlink_obs {
    uint64_t comm;
    uint64_t op_key;            /* one op instance on its sender (same for its channels) */
    uint64_t seq;               /* the collective's sequence number in comm: the same
                                 * instance on every member */
    int32_t src, dst;           /* communicator ranks: src sends to dst */
    int32_t src_rank, dst_rank; /* job ranks, -1 unknown */
    uint8_t op;                 /* enum ct_nccl_op */
    uint64_t op_bytes;          /* the op's size (its NCCL record's bytes) */
    int64_t op_ns;              /* the op's GPU duration on src, -1 unknown */
    int64_t op_transfer_ns;     /* of it, from the latest member's start to its end, -1 unknown */
    uint64_t bytes, busy, gpu_wait, peer_wait;
};

/* One directed link of one communicator over the job. */
struct ct_nlink {
    uint64_t comm;
    int32_t src, dst, src_rank, dst_rank;
    uint64_t ops, bytes;
    double busy_ns;                   /* per op the longest channel's network time, summed */
    double gbps;                      /* bytes / busy_ns (GB/s = bytes per ns) */
    double p10, p50, p90;             /* per-op GB/s */
    double gpu_wait_ns, peer_wait_ns; /* summed over its steps */
    double op_ns;                     /* GPU time of the ops it carried, on its sender */
    double saving_ns; /* slow links: op time at the peers' bandwidth, saved; else 0 */
};

/* A slow link (struct ct_nlink index) and its evidence.
 *
 * A ring is paced by its slowest link, so two slow links of one
 * communicator (both links of a rank whose NIC is slow) each leave the
 * other pacing the ring: fixing one alone saves what separates it from
 * the next slowest, little or nothing, and only fixing both saves the
 * ring's time. So each op instance is replayed as its slowest link: the
 * link's saving_ns (and whatif) is the link fixed alone, the others as
 * measured; the group's is every slow link of the communicator fixed
 * together. For a link slow alone both are the same. */
struct ct_nslow {
    size_t link;
    /* the communicator's links that are not slow, GB/s (the other slow
     * links are not a healthy link's rate) */
    double peers_lo, peers_hi, peers_med;
    double share_pct; /* saving_ns / op_ns of the link's ops */
    /* the fix as whatif selectors: each (op, size) the link carried scaled
     * by its transfer at the peers' bandwidth over its recorded transfer */
    char whatif[160];
    /* its group: the communicator's slow links, first at slow[group] */
    size_t group, ngroup;
    double group_saving_ns, group_share_pct; /* all of them at the peers' bandwidth */
    char group_whatif[160];
    /* the rank every link of a group of two or more touches (a NIC, cable
     * or host of its own), communicator and job rank; -1 none, unknown */
    int32_t common, common_rank;
};

/* Per collective (communicator, op, size): NCCL's choices and the split of
 * the op's time on each rank into its own link's transfer (the longest
 * channel's network time) and the rest (waiting for peers, upstream links
 * or the GPU). */
struct ct_nsplit {
    uint64_t comm, bytes;
    uint8_t op;
    int32_t nranks;
    uint64_t count;     /* op instances over every rank */
    double wait_p50_ns; /* NAN: no proxy steps */
    double transfer_p50_ns;
    char algo[16], proto[16]; /* "" unknown */
    uint32_t channels, warps;
    uint8_t ce; /* a copy-engine collective (no kernel channels) */
    /* the kernel's phases from its channels (nccl_channel_phases.h) */
    struct ct_nchan_row ch;
    /* v7's barrier phases (initial_sync, compute, final_sync): per op
     * instance the longest channel's, medians over the instances that
     * have them (NAN: none, phase_instances 0) */
    double phase_p50_ns[3];
    uint64_t phase_instances;
};

/* The ops an application tagged (v7's user tags) with one tag: how many
 * over every rank, and their GPU time summed (those with a GPU interval). */
struct ct_ntag_row {
    uint64_t tag, ops, timed;
    double gpu_ns;
};

/* One rank's network transport work on one device in one direction
 * (NCCL's network plugin events, docs/nccl.md "Network devices"): its
 * processes' accounts summed. wr_gbps: bytes over the work requests' own
 * times summed, the rate a work request moved at (NaN without busy time);
 * several in flight at once each count their own time, so it is not the
 * device's throughput. */
struct ct_nnic_row {
    int rank;
    struct ct_nnic n;
    double wr_gbps;
};

struct ct_nlinks {
    struct ct_nlink *l;
    size_t nl;
    struct ct_nnic_row *nics; /* by rank, transport, device, direction */
    size_t nnics;
    struct ct_ntag_row *tags; /* by tag */
    size_t ntags;
    struct ct_nslow *slow;
    size_t nslow;
    struct ct_nsplit *split;
    size_t nsplit;
    uint64_t info_ops, proxy_records;
    /* links below their peers over the job but sharing too few instances
     * with them to be named (fewer than 4: CT_SLOW_LINK_CHANCE) */
    size_t undecided;
    /* send ProxyOps whose peer is no rank of the communicator (CollNet's,
     * to the collective network: NCCL's peer is the communicator's size):
     * left out of the links, counted here */
    uint64_t collnet_ops;
    /* raw proxy step records (CUTRACE_NCCL_STEPS) against the steps the
     * ProxyOps' aggregates counted; raw_known 0 when a process was read
     * from a summary older than version 12, which did not count them */
    uint64_t raw_steps, proxy_steps;
    int raw_known;
};

/* Why a collectives row's wait/transfer split is null (NULL: it is not). */
#define CT_NSPLIT_NO_PROXY                                                                         \
    "no NCCL proxy-step records in the job (ABI v3, NCCL older than 2.25, not under `cutrace "     \
    "run`, or no network transport)"
#define CT_NSPLIT_NVLS                                                                             \
    "NVLS: the NVSwitch reduces over NVLink and NCCL runs no proxy steps for it (its NVLS "        \
    "channels have no network peer), so no transfer is measured; the collectives table's "         \
    "split from the ranks' arrivals stands"
#define CT_NSPLIT_NO_STEPS                                                                         \
    "no proxy steps for this collective: NCCL ran its transfers without a network proxy "          \
    "(NVLink, PCIe or shared memory) or the traces have none for it"
const char *ct_nsplit_why(const struct ct_nlinks *L, const struct ct_nsplit *s);

/* Links and slow links from observations (any order). 0 or -ENOMEM. */
int ct_nlinks_from_obs(const struct ct_nlink_obs *obs, size_t n, struct ct_nlinks *out);
/* Everything above for a built job (its collectives matched). 0 or -ENOMEM. */
int ct_nccl_links(const struct ct_job *job, struct ct_nlinks *out);
void ct_nlinks_free(struct ct_nlinks *l);
/* The one-line evidence of slow link k of L ("link rank 5 -> rank 6:
 * 1 GB/s, peers 4.04-4.18 GB/s, 74.1 % of its ops' time"; in a group, its
 * saving alone and the group's). */
void ct_nlinks_evidence(char *buf, size_t n, const struct ct_nlinks *L, size_t k);
/* "rank R" (the job rank) or, where it is unknown, "comm rank C", into b. */
const char *ct_nlinks_who(char *b, size_t n, int32_t job_rank, int32_t comm_rank);
/* The evidence of the group whose first link is slow[k] ("links rank 4 ->
 * rank 5 (1 GB/s), rank 5 -> rank 6 (1 GB/s), peers ...: every one through
 * rank 5; together 74.1 % of their ops' time"). */
void ct_nlinks_group_evidence(char *buf, size_t n, const struct ct_nlinks *L, size_t k);

#endif
