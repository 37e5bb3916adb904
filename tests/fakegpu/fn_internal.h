/*
 * fn_internal.h - shared state of the fake NCCL (libnccl.so.2).
 *
 * Files: fn_api.c (versions, errors, communicators), fn_shm.c (the
 * cross-process rendezvous in POSIX shared memory), fn_coll.c (collective
 * and p2p calls, groups, kernel launches and the resolver the simulated
 * driver polls), fn_links.c (per-peer links and the ring schedule of each
 * op), fn_profiler.c (profiler plugin loading, events, the proxy thread),
 * fn_proxy_steps.c (ProxyOp/ProxyStep events from the ring schedule),
 * fn_ce.c (copy-engine collectives: FAKEGPU_NCCL_CE), fn_algos.c (NVLS and
 * CollNet).  README.md, "Fake NCCL", is the contract.
 *
 * Locking: one mutex, fn_lock, protects the communicator registry, the
 * launch table and everything the resolver touches.  The resolver runs
 * under the driver's lock and takes fn_lock, so nothing here ever calls the
 * driver or a profiler plugin while holding fn_lock.
 *
 * Everything is hidden except the nccl and pnccl entry points (FN_API).
 */
#ifndef FN_INTERNAL_H
#define FN_INTERNAL_H

#include "fg_nccl_hooks.h"
#include "fn_profiler_abi.h"

#include <cuda.h>
#include <nccl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FN_API __attribute__((visibility("default")))
/* pnccl<name> as an alias of nccl<name>, as real NCCL exports them. */
#define FN_ALIAS(name)                                                                             \
    extern __typeof__(name) p##name __attribute__((alias(#name), visibility("default")))

#define FN_MAX_RANKS    256
#define FN_MAX_CHANNELS 32
#define FN_KEY_BYTES    16
#define FN_COMM_MAGIC   0x6d6d6f634e474631ull

typedef enum fn_func {
    FN_BROADCAST,
    FN_REDUCE,
    FN_ALLGATHER,
    FN_REDUCESCATTER,
    FN_ALLREDUCE,
    FN_ALLTOALL,
    FN_GATHER,
    FN_SCATTER,
    FN_SEND,
    FN_RECV,
} fn_func;

struct fn_shm;
struct fn_pgroup;

struct ncclComm {
    uint64_t magic;
    struct ncclComm *next; /* registry, fn_lock */
    struct fn_shm *shm;
    size_t shm_size;
    unsigned char key[FN_KEY_BYTES]; /* names the shared segment */
    uint64_t hash;                   /* commHash: identical on every rank */
    int nranks, rank, device;
    CUcontext ctx;
    char name[64];      /* config->commName, "" if none */
    double gbps_all;    /* smallest FAKEGPU_NET_GBPS of all ranks */
    uint64_t coll_seq;  /* next collective's sequence number */
    uint64_t *send_seq; /* per peer: next Send's index */
    uint64_t *recv_seq; /* per peer: next Recv's index */
    uint64_t split_seq;
    uint64_t ce_seq; /* copy-engine collectives launched (CeColl ceSeqNum) */
    int inflight;    /* ops launched and not finished (fn_lock) */
    int aborted;     /* __atomic */
    bool destroyed;
    void *prof_ctx; /* the plugin's context, NULL when none */
    int prof_mask;  /* eActivationMask the plugin returned */
};

/* The transfer schedule of one op (fn_links.c, README "Links and the
 * ring"): an op takes lat_ns, then ksteps ring steps of step_ns each; in
 * every step this rank's link to its next rank carries chunk bytes per
 * channel for send_ns (the rest of the step it waits for its GPU), and
 * its link from the previous rank delivers at the step's end. ksteps 0:
 * not a ring op (no proxy events). */
struct fn_plan {
    int ksteps;
    int next, prev; /* ring neighbours of this rank */
    double lat_ns, step_ns, send_ns;
    uint64_t chunk;        /* bytes per step per channel */
    const char *proto;     /* the protocol the descriptors name (FAKEGPU_NCCL_PROTOS) */
    const char *algo;      /* the algorithm, when FAKEGPU_NCCL_ALGOS chose it (else NULL) */
    bool in_switch;        /* NVLS or CollNet (fn_algos.c): next/prev may be the network */
    int64_t slow_extra_ns; /* fn_kphases.c: how much later the slow channel stops */
};

/* One collective or p2p call, a member of a launch. */
struct fn_op {
    struct ncclComm *comm;
    fn_func func;
    ncclDataType_t dtype;
    ncclRedOp_t redop;
    const void *sendbuff;
    void *recvbuff;
    size_t count;
    int root, peer;
    uint64_t seq; /* collectives: comm->coll_seq; p2p: per-peer index */
    CUstream stream;
    bool ce;         /* run on copy engines (fn_ce.c): a copy, no kernel, no proxy steps */
    int64_t xfer_ns; /* fn_plan_op: latency + transfer */
    struct fn_plan plan;
    int64_t end_ns; /* fn_lock */
    bool end_known; /* fn_lock */
    /* profiler state, owned by the flushing thread, then the proxy */
    void *h_api; /* v5 CollApi/P2pApi event of the call */
    void *h_op;
    void *h_kch[FN_MAX_CHANNELS];
    struct fn_pgroup *pg;
    bool stopped;
    bool p_end_known; /* proxy's copy of end_known/end_ns */
    int64_t p_end_ns;
    int p_phase;                      /* proxy: next phase of the step schedule */
    void *h_pop[FN_MAX_CHANNELS][2];  /* ProxyOp events [channel][0 send, 1 recv] */
    void *h_pst[FN_MAX_CHANNELS][2];  /* the ProxyStep event in progress */
    void *h_pnet[FN_MAX_CHANNELS][2]; /* its network event (a work request) in progress */
};

/* One kernel launch: the ops of one stream in one outermost group. */
struct fn_launch {
    uint64_t token;
    struct fn_launch *hnext; /* token table chain, fn_lock */
    struct fn_launch *pnext; /* proxy list, fn_lock */
    size_t nops;
    struct fn_op *ops;
    int64_t start_ns, end_ns;
    bool start_known, resolved; /* fn_lock */
    bool profiled;              /* has plugin events to finish */
    bool kch_started;           /* proxy thread only */
    bool p_start_known;         /* proxy's copy of start_known */
    bool p_done;                /* proxy: every event stopped */
};

extern pthread_mutex_t fn_lock;

/* ------------------------------------------------------------- fn_api.c */

/* Driver entry points, all obtained through cuGetProcAddress_v2. */
struct fn_cu {
    CUresult (*init)(unsigned);
    CUresult (*ctx_get_current)(CUcontext *);
    CUresult (*ctx_set_current)(CUcontext);
    CUresult (*ctx_push)(CUcontext);
    CUresult (*ctx_pop)(CUcontext *);
    CUresult (*ctx_get_device)(CUdevice *);
    CUresult (*primary_retain)(CUcontext *, CUdevice);
    CUresult (*device_count)(int *);
    CUresult (*module_load_data)(CUmodule *, const void *);
    CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
    CUresult (*launch_kernel_ex)(const CUlaunchConfig *, CUfunction, void **, void **);
    CUresult (*stream_is_capturing)(CUstream, CUstreamCaptureStatus *);
    CUresult (*memcpy_dtod_async)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    /* cuMemcpyBatchAsync at ABI 13000 (its _v2), NULL when the driver lacks it */
    CUresult (*memcpy_batch_async)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t,
                                   CUmemcpyAttributes *, size_t *, size_t, CUstream);
    fg_nccl_ce_arm_fn ce_arm; /* the driver's fakegpu_nccl_ce_arm */
};
extern struct fn_cu fn_cu;

int64_t fn_now(void); /* CLOCK_MONOTONIC ns: the fake driver's virtual time */
double fn_env_double(const char *name, double def, double lo, double hi);
void fn_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
bool fn_comm_valid(const struct ncclComm *c);
void fn_log(fn_log_level level, unsigned long flags, const char *file, int line, const char *fmt,
            ...);

/* ------------------------------------------------------------- fn_shm.c */

/* Open or create the segment of key for nranks, claim rank and publish its
 * device and GBPS.  Does not wait for the others. */
ncclResult_t fn_shm_attach(const unsigned char *key, int nranks, int rank, int device, double gbps,
                           struct fn_shm **out, size_t *size);
/* Block until all ranks have attached (FAKEGPU_NCCL_TIMEOUT_S); the last
 * one to arrive unlinks the name.  ncclSystemError on timeout. */
ncclResult_t fn_shm_wait_all(struct fn_shm *s, const unsigned char *key);
/* Mark rank as gone and unmap; the last rank unlinks the name. */
void fn_shm_detach(struct fn_shm *s, size_t size, const unsigned char *key, int rank);
double fn_shm_gbps(const struct fn_shm *s, int rank);
void fn_shm_coll_publish(struct fn_shm *s, int rank, uint64_t seq, int64_t start_ns);
bool fn_shm_coll_start(const struct fn_shm *s, int rank, uint64_t seq, int64_t *start_ns);
void fn_shm_p2p_publish(struct fn_shm *s, int src, int dst, bool send, uint64_t seq,
                        int64_t start_ns);
bool fn_shm_p2p_start(const struct fn_shm *s, int src, int dst, bool send, uint64_t seq,
                      int64_t *start_ns);
/* Split rendezvous over the parent: publish (color, key) for split seq,
 * wait for every rank's, fill colors[]/keys[] (nranks entries each). */
ncclResult_t fn_shm_split_exchange(struct fn_shm *s, int rank, uint64_t seq, int color, int key,
                                   int *colors, int *keys);

/* ----------------------------------------------------------- fn_links.c */

/* Parses FAKEGPU_NCCL_LINKS once per process; false (with the error set)
 * when it is malformed. */
bool fn_links_load(void);
/* Fills op->plan and op->xfer_ns from the links of op's communicator. */
void fn_plan_op(struct fn_op *op);

/* ----------------------------------------------------------- fn_algos.c */

/* FAKEGPU_NCCL_RANKS_PER_NODE for c (its size when unset or larger). */
int fn_ranks_per_node(const struct ncclComm *c);
/* Plans op, an AllReduce of `bytes`, under algo ("NVLS", "COLLNET_DIRECT",
 * "COLLNET_CHAIN"); false when c's layout does not allow it (the caller
 * runs the ring, as NCCL disables it). */
bool fn_algo_plan(struct fn_op *op, const char *algo, double bytes, double op_lat);

/* --------------------------------------------------------- fn_kphases.c */

/* Parses FAKEGPU_NCCL_CH_SETUP_US and FAKEGPU_NCCL_SLOW_CHANNEL once per
 * process; false (with the error set) when one is malformed. */
bool fn_kphases_load(void);
/* Adds the channels' setup and the slow channel to op's plan and xfer_ns
 * (after fn_plan_op's schedule). */
void fn_kphases_plan(struct fn_op *op);
/* Channel ch's start in launch l, and its stop in op (once p_end_ns is
 * known), on the virtual clock. */
int64_t fn_kphases_ch_start(const struct fn_launch *l, int ch);
int64_t fn_kphases_ch_stop(const struct fn_op *op, int ch);

/* ------------------------------------------------------------ fn_coll.c */

/* Registers l in the token table (fn_lock held) and returns its token. */
uint64_t fn_token_register_locked(struct fn_launch *l);
/* A launch that will not be resolved by the driver (captured, failed, or
 * nothing to do): ends now, with no transfer (takes fn_lock). */
void fn_launch_finish_now(struct fn_launch *l);

extern const struct fg_nccl_hooks fn_hooks;
/* Wait (FAKEGPU_NCCL_TIMEOUT_S) until no launched op of c is unfinished. */
bool fn_comm_drain(struct ncclComm *c);
const char *fn_func_name(fn_func f);
const char *fn_dtype_name(ncclDataType_t t);
unsigned fn_dtype_bytes(ncclDataType_t t);
/* Locked.  Called by the proxy when a profiled launch is finished. */
void fn_launch_free_locked(struct fn_launch *l);

/* ---------------------------------------------------------------- fn_ce.c */

/* Whether op (its func set) runs on copy engines: FAKEGPU_NCCL_CE, parsed
 * once; false with the error set (*bad) when the variable is malformed. */
bool fn_ce_wanted(fn_func f, bool *bad);
/* Launches l (one copy-engine op): its CeColl event (v6) around a
 * device-to-device copy on its stream that the driver turns into a
 * resolver op of l's token. */
ncclResult_t fn_ce_launch(struct fn_launch *l);

/* -------------------------------------------------------- fn_profiler.c */

extern int fn_prof_version; /* 0 (no plugin), 3 to 6; set by fn_prof_load */
extern int fn_prof_channels;
/* The network plugin events the proxy makes under its steps
 * (FAKEGPU_NCCL_NET: ib (default), socket, none) and the IB devices a
 * rank's channels spread over (FAKEGPU_NCCL_NET_DEVS, channel c on device
 * c mod N). */
enum { FN_NET_NONE, FN_NET_IB, FN_NET_SOCKET };
extern int fn_prof_net, fn_prof_net_devs;
void fn_prof_load(void); /* once per process */
void fn_prof_comm_init(struct ncclComm *c);
void fn_prof_comm_finalize(struct ncclComm *c);
/* Calling thread, around one collective/p2p call (v5 API events). */
void fn_prof_api_call_begin(struct fn_op *op, int depth);
void fn_prof_api_call_end(void);
/* Calling thread, in the outermost ncclGroupEnd. */
void fn_prof_group_end_begin(void);
void fn_prof_group_ops(struct fn_op *ops, size_t n);
void *fn_prof_launch_begin(struct ncclComm *c, CUstream s);
void fn_prof_launch_end(void *h);
void fn_prof_group_end_done(void);
/* Hand a launch with profiled ops to the proxy thread (takes fn_lock). */
void fn_prof_track(struct fn_launch *l);
/* Locked: the resolver learnt something about a tracked launch. */
void fn_prof_wake_locked(void);
/* One event of the plugin (NULL when none or not in its mask). */
struct fn_ev {
    int type;
    void *parent;
    const struct fn_op *op;                 /* Coll, P2p, CollApi, P2pApi */
    void *parent_group;                     /* v5 Coll/P2p */
    uint8_t channel;                        /* KernelCh, ProxyOp */
    uint64_t ptimer;                        /* KernelCh (v4/v5) */
    int depth;                              /* GroupApi */
    void *stream;                           /* KernelLaunch */
    int peer, nsteps, chunk, is_send, step; /* ProxyOp, ProxyStep */
    uint64_t ce_seq;                        /* CeColl: the communicator's CE counter */
    int64_t net_id;                         /* NetPlugin: the plugin's type | version */
    void *net_data;                         /* NetPlugin: its descriptor */
};
void *fn_prof_start(const struct ncclComm *c, const struct fn_ev *e);
void fn_prof_stop(void *h);
/* recordEventState (v4 on) with the argument union's first word = arg
 * (KernelCh pTimer, ProxyStep transSize). */
void fn_prof_record(void *h, fn_prof_state st, uint64_t arg);

/* ---------------------------------------------------- fn_proxy_steps.c */

/* Proxy thread: the ProxyOp/ProxyStep events of op due by now; returns
 * the instant the next is due, INT64_MAX when all are done (or the op has
 * none). Needs op->p_end_known. */
int64_t fn_steps_advance(struct fn_op *op, int64_t now);

#endif
