/*
 * The NCCL profiler-plugin ABI, versions 3 to 6, as far as cutrace reads it.
 * NCCL does not install these headers; the layouts below are transcribed
 * from the interface NCCL documents for plugins (plugins/profiler in the
 * NCCL sources): an event descriptor is {type, parentObj, rank, union},
 * where type is a uint8_t before v5 and a uint64_t from v5 on, and the union
 * holds one struct per event type. Only the members cutrace reads are named;
 * each struct keeps every member before them so the offsets are NCCL's.
 * v6 adds copy-engine collective members to v5's union and changes nothing
 * else (its init, state arguments and functions are v5's), so one
 * descriptor type serves both; ceColl is read only from v6 events.
 * v7 (NCCL's profiler_v7.h) appends a user tag (and kernel-variant
 * members) to its Coll, P2p and CeColl members and adds KernelPhase
 * events: every v6 member is a prefix of v7's, so a v7 descriptor read as
 * a v6 one is a v6 descriptor, and a v6 plugin can be handed one but for
 * the KernelPhase events and their stop state.
 */
#ifndef CT_NCCL_PROFILER_ABI_H
#define CT_NCCL_PROFILER_ABI_H

#include <nccl.h>
#include <stdint.h>

enum {
    CT_NPROF_GROUP = 1 << 0,
    CT_NPROF_COLL = 1 << 1,
    CT_NPROF_P2P = 1 << 2,
    CT_NPROF_PROXY_OP = 1 << 3,
    CT_NPROF_PROXY_STEP = 1 << 4,
    CT_NPROF_KERNEL_CH = 1 << 6,
    CT_NPROF_NET_PLUGIN = 1 << 7,    /* events of the network plugin, under a ProxyStep */
    CT_NPROF_CE_COLL = 1 << 12,      /* v6 */
    CT_NPROF_KERNEL_PHASE = 1 << 15, /* v7: a kernel channel's barrier phases */
};
/* recordEventState ids (NCCL's ncclProfilerEventState_t) */
enum {
    CT_NPROF_STEP_SEND_GPU_WAIT = 8,
    CT_NPROF_STEP_SEND_WAIT = 9,
    CT_NPROF_STEP_RECV_WAIT = 10,
    CT_NPROF_STEP_RECV_FLUSH_WAIT = 11,
    CT_NPROF_STEP_RECV_GPU_WAIT = 12,
    CT_NPROF_STEP_SEND_PEER_WAIT = 20, /* v4 */
    CT_NPROF_STATE_KERNEL_CH_STOP = 22,
    CT_NPROF_STATE_KERNEL_PHASE_STOP = 31, /* v7, with the kernelCh timer argument */
};

typedef void (*ct_nprof_logger)(void);

/* v4 and v5 share the Coll, P2p and KernelCh member layouts up to what we
 * read (v5 appends parentGroup to Coll and P2p). */
struct ct_nprof_coll_v4 {
    uint64_t seq;
    const char *func;
    const void *sendbuff;
    void *recvbuff;
    size_t count;
    int root;
    const char *datatype;
    uint8_t nchannels, nwarps;
    const char *algo, *proto;
};
struct ct_nprof_p2p_v4 {
    const char *func;
    void *buff;
    const char *datatype;
    size_t count;
    int peer;
    uint8_t nchannels;
};
struct ct_nprof_kernel_ch_v4 {
    uint8_t channel;
    uint64_t ptimer; /* GPU globaltimer at the channel's start */
};
/* ProxyOp: the same in v3..v6 */
struct ct_nprof_proxy_op {
    int pid; /* pid_t of the process whose op it is (PXN: maybe not ours) */
    uint8_t channel;
    int peer;
    int nsteps;
    int chunk_size;
    int is_send;
};
/* A ProxyStep (v3 on): the step's index in its ProxyOp */
struct ct_nprof_proxy_step {
    int step;
};
/* A network plugin's event (NetPlugin, v3 on): the plugin's own descriptor,
 * named by an id of a type (high 16 bits) and a version (low 16). */
struct ct_nprof_net_plugin {
    int64_t id;
    void *data;
};
#define CT_NPROF_NET_VER_MASK  0xffffu
#define CT_NPROF_NET_TYPE_MASK 0xffff0000u
#define CT_NPROF_NET_TYPE_IB   (1u << 16)
#define CT_NPROF_NET_TYPE_SOCK (2u << 16)
/* NCCL's IB transport, version 1: one event per work request posted on a
 * queue pair (type 1, ncclProfileQp), from its post to its completion */
struct ct_nprof_net_ib_v1 {
    uint8_t type;
    union {
        struct {
            int device; /* the transport's device index (a NIC port) */
            uint64_t wr_id;
            int opcode;
            int qp_num;
            size_t length;
        } qp;
    };
};
/* NCCL's socket transport, version 1: one event per socket operation
 * (type 1, ncclProfileSocket) */
struct ct_nprof_net_sock_v1 {
    uint8_t type;
    union {
        struct {
            int fd;
            int op;
            size_t length;
        } sock;
    };
};

/* v6 copy-engine collective, up to what we read */
struct ct_nprof_ce_coll_v6 {
    uint64_t seq;
    const char *func;
    const void *sendbuff;
    void *recvbuff;
    size_t count;
};

/* v7's members that add to v6's, up to what we read */
struct ct_nprof_coll_v7 {
    struct ct_nprof_coll_v4 v4;
    void *parent_group;
    const char *kernel_variant;
    _Bool is_sym_coll;
    uint64_t user_tag; /* 0: untagged */
};
struct ct_nprof_p2p_v7 {
    struct ct_nprof_p2p_v4 v4;
    void *parent_group;
    uint64_t user_tag;
};
struct ct_nprof_ce_coll_v7 {
    struct ct_nprof_ce_coll_v6 v6;
    int root;
    const char *datatype, *sync_strategy;
    _Bool intra_batch_sync;
    uint32_t batch_size, num_batches, ce_seq;
    void *stream;
    uint64_t user_tag;
};
/* v7's KernelPhase: a child of a KernelCh event, one of its barrier
 * phases (0 initial sync, 1 compute, 2 final sync), from the GPU's
 * timer at its start to the KernelPhaseStop state's */
struct ct_nprof_kernel_phase_v7 {
    uint8_t channel, phase;
    const char *name;
    uint64_t ptimer;
};
struct ct_nprof_descr_v7 {
    uint64_t type;
    void *parent;
    int rank;
    union {
        struct ct_nprof_coll_v7 coll;
        struct ct_nprof_p2p_v7 p2p;
        struct ct_nprof_proxy_op proxy_op;
        struct ct_nprof_proxy_step proxy_step;
        struct ct_nprof_kernel_ch_v4 kernel_ch;
        struct ct_nprof_net_plugin net;
        struct ct_nprof_ce_coll_v7 ce_coll;
        struct ct_nprof_kernel_phase_v7 kernel_phase;
        uint64_t align_;
    };
};

/* v5 and v6 (v6's union only adds ceColl and its siblings) */
struct ct_nprof_descr_v5 {
    uint64_t type;
    void *parent;
    int rank;
    union {
        struct ct_nprof_coll_v4 coll;
        struct ct_nprof_p2p_v4 p2p;
        struct ct_nprof_proxy_op proxy_op;
        struct ct_nprof_proxy_step proxy_step;
        struct ct_nprof_kernel_ch_v4 kernel_ch;
        struct ct_nprof_net_plugin net;
        struct ct_nprof_ce_coll_v6 ce_coll;
        uint64_t align_;
    };
};

struct ct_nprof_descr_v4 {
    uint8_t type;
    void *parent;
    int rank;
    union {
        struct ct_nprof_coll_v4 coll;
        struct ct_nprof_p2p_v4 p2p;
        struct ct_nprof_proxy_op proxy_op;
        struct ct_nprof_proxy_step proxy_step;
        struct ct_nprof_kernel_ch_v4 kernel_ch;
        struct ct_nprof_net_plugin net;
        uint64_t align_;
    };
};

struct ct_nprof_descr_v3 {
    uint8_t type;
    void *parent;
    int rank;
    union {
        struct {
            const char *name;
            uint64_t comm_hash;
            uint64_t seq;
            const char *func;
            const void *sendbuff;
            void *recvbuff;
            size_t count;
            int root;
            const char *datatype;
            uint8_t nchannels, nwarps; /* nMaxChannels, nWarps */
            const char *algo, *proto;
        } coll;
        struct {
            const char *name;
            uint64_t comm_hash;
            const char *func;
            void *buff;
            const char *datatype;
            size_t count;
            int peer;
        } p2p;
        struct {
            uint8_t channel;
        } kernel_ch;
        uint64_t align_;
    };
};

/* State arguments: in v4 to v6 the KernelCh stop timer and a ProxyStep's
 * transSize are the union's first word. */
union ct_nprof_state_args_v4 {
    struct {
        uint64_t ptimer;
    } kernel_ch;
    struct {
        size_t trans_size;
    } proxy_step;
    void *align_;
};

struct ct_nprof_v5 {
    const char *name;
    ncclResult_t (*init)(void **ctx, uint64_t comm_id, int *mask, const char *comm_name, int nnodes,
                         int nranks, int rank, ct_nprof_logger log);
    ncclResult_t (*start_event)(void *ctx, void **handle, struct ct_nprof_descr_v5 *d);
    ncclResult_t (*stop_event)(void *handle);
    ncclResult_t (*record_event_state)(void *handle, int state, union ct_nprof_state_args_v4 *a);
    ncclResult_t (*finalize)(void *ctx);
};

/* v7's are v6's but for the descriptor's (above). */
struct ct_nprof_v7 {
    const char *name;
    ncclResult_t (*init)(void **ctx, uint64_t comm_id, int *mask, const char *comm_name, int nnodes,
                         int nranks, int rank, ct_nprof_logger log);
    ncclResult_t (*start_event)(void *ctx, void **handle, struct ct_nprof_descr_v7 *d);
    ncclResult_t (*stop_event)(void *handle);
    ncclResult_t (*record_event_state)(void *handle, int state, union ct_nprof_state_args_v4 *a);
    ncclResult_t (*finalize)(void *ctx);
};

/* v6's functions are v5's but for the descriptor's extra members. */
struct ct_nprof_v6 {
    const char *name;
    ncclResult_t (*init)(void **ctx, uint64_t comm_id, int *mask, const char *comm_name, int nnodes,
                         int nranks, int rank, ct_nprof_logger log);
    ncclResult_t (*start_event)(void *ctx, void **handle, struct ct_nprof_descr_v5 *d);
    ncclResult_t (*stop_event)(void *handle);
    ncclResult_t (*record_event_state)(void *handle, int state, union ct_nprof_state_args_v4 *a);
    ncclResult_t (*finalize)(void *ctx);
};

struct ct_nprof_v4 {
    const char *name;
    ncclResult_t (*init)(void **ctx, int *mask, const char *comm_name, uint64_t comm_hash,
                         int nnodes, int nranks, int rank, ct_nprof_logger log);
    ncclResult_t (*start_event)(void *ctx, void **handle, struct ct_nprof_descr_v4 *d);
    ncclResult_t (*stop_event)(void *handle);
    ncclResult_t (*record_event_state)(void *handle, int state, union ct_nprof_state_args_v4 *a);
    ncclResult_t (*finalize)(void *ctx);
};

struct ct_nprof_v3 {
    const char *name;
    ncclResult_t (*init)(void **ctx, int *mask);
    ncclResult_t (*start_event)(void *ctx, void **handle, struct ct_nprof_descr_v3 *d);
    ncclResult_t (*stop_event)(void *handle);
    ncclResult_t (*record_event_state)(void *handle, int state, void *args);
    ncclResult_t (*finalize)(void *ctx);
};

#endif
