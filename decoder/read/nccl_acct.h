/*
 * NCCL's own account of a process's ops as its trace holds them (format v4
 * CT_REC_NCCL_INFO and CT_REC_NCCL_PROXY records, v5 CT_REC_NCCL_CHANNEL
 * and CT_REC_NCCL_NET,
 * docs/nccl.md): each op's algorithm, protocol and channels, its proxy
 * steps aggregated per channel, peer and direction, and each kernel
 * channel's start and stop, and the network transport's work per device.
 * Gathered while the trace is extracted
 * (decoder/read/extract.c) and kept on its process (struct ct_proc.nacct),
 * joined to the process's NCCL calls by correlation id. What the report
 * derives from them is decoder/analysis/nccl_links.h. Nothing here prints;
 * not thread-safe per object.
 */
#ifndef CT_NCCL_ACCT_H
#define CT_NCCL_ACCT_H

#include <stddef.h>
#include <stdint.h>

struct ct_ninfo {
    uint64_t corr;
    char algo[16], proto[16];
    uint32_t channels, warps, flags; /* CT_NINFO_F_* */
};

/* One ProxyOp (CT_NPROXY_* fields), times on the trace's clock. */
struct ct_nproxy {
    uint64_t corr;
    int64_t s, e;
    uint32_t channel, steps;
    int32_t peer;
    uint8_t send;
    uint64_t bytes, gpu_wait, peer_wait, net, flush, busy;
};

/* One kernel channel (CT_NCHAN_* fields), times on the trace's clock. */
struct ct_nchan {
    uint64_t corr;
    int64_t s, e;
    uint32_t channel;
};

/* The network transport's work on one device in one direction over the
 * process (CT_REC_NCCL_NET records summed): transport enum
 * ct_nccl_net_transport, device -1 for sockets. busy: the work requests'
 * own times summed, so bytes / busy is the rate a work request moved at. */
struct ct_nnic {
    uint8_t transport, send;
    int32_t device;
    uint64_t proxy_ops, wrs, bytes, busy, other_wrs, other_bytes;
};

/* One barrier phase of one kernel channel (CT_NPHASE_* fields, v7). */
struct ct_nphase {
    uint64_t corr;
    int64_t s, e;
    uint32_t channel;
    uint8_t phase; /* enum ct_nccl_phase_id */
};

/* An op's user tag (CT_NTAG_*, v7). */
struct ct_ntag {
    uint64_t corr, tag;
};

struct ct_nacct {
    struct ct_ninfo *info; /* by corr */
    size_t ninfo;
    struct ct_nproxy *px; /* by (corr, send, peer, channel) */
    size_t npx;
    struct ct_nchan *ch; /* by (corr, channel); summaries do not carry them (NULL) */
    size_t nch;
    struct ct_nnic *nic; /* by (transport, device, send); summaries from version 11 */
    size_t nnic;
    struct ct_nphase *ph; /* by (corr, channel, phase); summaries from version 11 */
    size_t nph;
    struct ct_ntag *tag; /* by corr; summaries from version 11 */
    size_t ntag;
    /* raw proxy step records (CUTRACE_NCCL_STEPS, format v6); raw_unknown
     * for a summary older than version 12, which did not count them */
    uint64_t raw_steps;
    int raw_unknown;
};

struct ct_nacct_collect {
    struct ct_nacct a;
    size_t capi, capp, capc, capn, capph, capt;
};
struct ct_reader;
struct ct_record;
/* Feed every record; kinds other than NCCL_INFO/NCCL_PROXY/NCCL_CHANNEL/NCCL_NET
 * are ignored.
 * 0 or -ENOMEM. */
int ct_nacct_record(struct ct_nacct_collect *c, struct ct_reader *rd, const struct ct_record *r);
/* The records gathered, sorted, in one object the caller owns
 * (ct_nacct_free); NULL when there were none or on allocation failure
 * (*oom set). c is emptied. */
struct ct_nacct *ct_nacct_finish(struct ct_nacct_collect *c, int *oom);
void ct_nacct_collect_free(struct ct_nacct_collect *c);
/* An account from arrays read elsewhere (a summary), sorted as
 * ct_nacct_finish sorts: a takes them; NULL with *oom set (and the arrays
 * freed) when no memory. */
struct ct_nacct *ct_nacct_adopt(struct ct_nacct *a, int *oom);
/* A copy (NULL for NULL; NULL with *oom set on failure). */
struct ct_nacct *ct_nacct_copy(const struct ct_nacct *a, int *oom);
void ct_nacct_free(struct ct_nacct *a);
/* The index of corr's first channel in a->ch (a->nch when it has none). */
size_t ct_nacct_chan_first(const struct ct_nacct *a, uint64_t corr);
/* The index of corr's first phase in a->ph (a->nph when it has none). */
size_t ct_nacct_phase_first(const struct ct_nacct *a, uint64_t corr);
/* corr's user tag, 0 when it has none. */
uint64_t ct_nacct_tag(const struct ct_nacct *a, uint64_t corr);
/* The info record of corr, or NULL. */
const struct ct_ninfo *ct_nacct_info(const struct ct_nacct *a, uint64_t corr);

#endif
