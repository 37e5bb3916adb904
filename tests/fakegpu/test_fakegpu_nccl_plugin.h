/*
 * test_fakegpu_nccl_plugin.h - what the test profiler plugin
 * (libfgtestprof.so, test_fakegpu_nccl_plugin.c) records: every call the
 * fake NCCL makes into it, in order, with the descriptor fields decoded
 * from whichever ABI version was used.  Handles it returns are event ids
 * (1, 2, ...) cast to pointers, so parents can be compared with ids.
 */
#ifndef TEST_FAKEGPU_NCCL_PLUGIN_H
#define TEST_FAKEGPU_NCCL_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

enum fgtp_call { FGTP_INIT, FGTP_START, FGTP_STOP, FGTP_STATE, FGTP_FINALIZE };

struct fgtp_rec {
    enum fgtp_call call;
    int version;     /* ABI version of the callback */
    uint64_t id;     /* START: the new handle's id; STOP/STATE: the handle's */
    uint64_t type;   /* START */
    uint64_t parent; /* START: parentObj as an id (0 = NULL) */
    uint64_t pgroup; /* START v5 Coll/P2p: parentGroup as an id */
    int rank;        /* START: descriptor rank; INIT: rank argument */
    int nranks;      /* INIT */
    uint64_t hash;   /* INIT: commHash (v4) / commId (v5); START v3: commHash */
    char name[32];   /* INIT: commName; START v3: name */
    uint64_t seq;    /* Coll */
    char func[24], dtype[24], algo[16], proto[8]; /* CeColl: syncStrategy in algo */
    const void *sendbuff, *recvbuff;              /* Coll; P2p buff in recvbuff */
    size_t count;                                 /* ProxyOp (v4 on): nSteps */
    int root, peer, depth; /* depth: GroupApi's; CeColl: ceSeqNum; ProxyOp: isSend in root */
    unsigned nchannels, nwarps, channel;
    uint64_t ptimer;   /* KernelCh START (v4/v5), STATE KernelChStop */
    int state;         /* STATE */
    void *stream;      /* API events, KernelLaunch */
    uint64_t ctx;      /* START: the context (INIT order + 1) */
    int64_t host_ns;   /* CLOCK_MONOTONIC when the callback ran */
    int64_t offset_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC then */
};

/* Snapshot of the records so far (the array stays valid until reset). */
const struct fgtp_rec *fgtp_records(size_t *n);
void fgtp_reset(void);

#endif
