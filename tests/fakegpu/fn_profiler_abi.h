/*
 * fn_profiler_abi.h - the NCCL profiler plugin ABI, versions 3 to 6,
 * as the fake NCCL (and the test plugin) see it.  Written from NCCL's
 * documented layouts (plugins/profiler in the NCCL tree); only the field
 * order and types matter, and they must match NCCL's exactly: a real
 * plugin built against NCCL's headers is loaded by this fake.
 *
 * Differences between versions that matter here:
 *  - v3/v4 descriptors start with a uint8_t type, v5 with a uint64_t;
 *  - v3 Coll/P2p carry the communicator's name and hash, v4/v5 do not
 *    (init gets them); v3 KernelCh has no GPU timer;
 *  - v5 Coll/P2p carry parentGroup, and parentObj is the CollApi/P2pApi
 *    event (the hierarchy changed in v5);
 *  - init's arguments: v3 (ctx, mask); v4 (ctx, mask, commName, commHash,
 *    nNodes, nranks, rank, logfn); v5 (ctx, commId, mask, commName,
 *    nNodes, nranks, rank, logfn);
 *  - v6 is v5 with three copy-engine members added to the descriptor's
 *    union (ceColl, ceCollSync, ceCollBatch): the v5 members keep their
 *    offsets, so a v6 descriptor is read correctly by a v5 plugin.
 */
#ifndef FN_PROFILER_ABI_H
#define FN_PROFILER_ABI_H

#include <nccl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Event types (bits of eActivationMask). */
enum {
    fnProfileGroup = 1 << 0,
    fnProfileColl = 1 << 1,
    fnProfileP2p = 1 << 2,
    fnProfileProxyOp = 1 << 3,
    fnProfileProxyStep = 1 << 4,
    fnProfileProxyCtrl = 1 << 5,
    fnProfileKernelCh = 1 << 6,
    fnProfileNetPlugin = 1 << 7,
    fnProfileGroupApi = 1 << 8,
    fnProfileCollApi = 1 << 9,
    fnProfileP2pApi = 1 << 10,
    fnProfileKernelLaunch = 1 << 11,
    fnProfileCeColl = 1 << 12, /* v6 */
    fnProfileCeSync = 1 << 13,
    fnProfileCeBatch = 1 << 14,
    fnProfileKernelPhase = 1 << 15, /* v7 */
};

/* Event states used by the fake (values of ncclProfilerEventState_t). */
typedef enum fn_prof_state {
    fnProfilerProxyStepSendGPUWait = 8,
    fnProfilerProxyStepSendWait = 9,
    fnProfilerProxyStepRecvWait = 10,
    fnProfilerProxyStepRecvFlushWait = 11,
    fnProfilerProxyStepRecvGPUWait = 12,
    fnProfilerProxyStepSendPeerWait_v4 = 20,
    fnProfilerKernelChStop = 22,
    fnProfilerKernelPhaseStop = 31, /* v7 */
    fnProfilerGroupStartApiStop = 23,
    fnProfilerGroupEndApiStart = 24,
} fn_prof_state;

typedef enum {
    fnLogNone = 0,
    fnLogVersion = 1,
    fnLogWarn = 2,
    fnLogInfo = 3,
    fnLogAbort = 4,
    fnLogTrace = 5
} fn_log_level;
typedef void (*fn_logger_t)(fn_log_level level, unsigned long flags, const char *file, int line,
                            const char *fmt, ...);

/* Union members common to v3..v6 (ProxyOp is filled from v4 on). */
struct fn_prof_proxy_op {
    pid_t pid;
    uint8_t channelId;
    int peer;
    int nSteps;
    int chunkSize;
    int isSend;
};
struct fn_prof_net_plugin {
    int64_t id;
    void *data;
};
/* The network plugins' own event descriptors (NCCL's net_ib_v1.h,
 * net_socket_v1.h): the id is a type (high 16 bits) | a version (low 16). */
#define FN_NET_TYPE_IB   (1u << 16)
#define FN_NET_TYPE_SOCK (2u << 16)
typedef struct {
    uint8_t type; /* 1: ncclProfileQp */
    union {
        struct {
            int device;
            uint64_t wr_id;
            int opcode;
            int qpNum;
            size_t length;
        } qp;
    };
} fn_prof_net_ib_v1;
typedef struct {
    uint8_t type; /* 1: ncclProfileSocket */
    union {
        struct {
            int fd;
            int op;
            size_t length;
        } sock;
    };
} fn_prof_net_sock_v1;

/* ------------------------------------------------------------------ v3 */

typedef struct {
    uint8_t type;
    void *parentObj;
    int rank;
    union {
        struct {
            const char *name;
            uint64_t commHash;
            uint64_t seqNumber;
            const char *func;
            void const *sendBuff;
            void *recvBuff;
            size_t count;
            int root;
            const char *datatype;
            uint8_t nMaxChannels;
            uint8_t nWarps;
            const char *algo;
            const char *proto;
        } coll;
        struct {
            const char *name;
            uint64_t commHash;
            const char *func;
            void *buff;
            const char *datatype;
            size_t count;
            int peer;
        } p2p;
        struct fn_prof_proxy_op proxyOp;
        struct {
            int step;
        } proxyStep;
        struct {
            uint8_t channelId;
        } kernelCh;
        struct fn_prof_net_plugin netPlugin;
    };
} fn_prof_descr_v3;

typedef union {
    struct {
        size_t transSize;
        int steps;
    } proxyOp;
    struct {
        int appendedProxyOps;
    } proxyCtrl;
} fn_prof_args_v3;

typedef struct {
    const char *name;
    ncclResult_t (*init)(void **context, int *eActivationMask);
    ncclResult_t (*startEvent)(void *context, void **eHandle, fn_prof_descr_v3 *eDescr);
    ncclResult_t (*stopEvent)(void *eHandle);
    ncclResult_t (*recordEventState)(void *eHandle, fn_prof_state eState,
                                     fn_prof_args_v3 *eStateArgs);
    ncclResult_t (*finalize)(void *context);
} fn_profiler_v3;

/* ------------------------------------------------------------------ v4 */

typedef struct {
    uint8_t type;
    void *parentObj;
    int rank;
    union {
        struct {
            uint64_t seqNumber;
            const char *func;
            void const *sendBuff;
            void *recvBuff;
            size_t count;
            int root;
            const char *datatype;
            uint8_t nChannels;
            uint8_t nWarps;
            const char *algo;
            const char *proto;
        } coll;
        struct {
            const char *func;
            void *buff;
            const char *datatype;
            size_t count;
            int peer;
            uint8_t nChannels;
        } p2p;
        struct fn_prof_proxy_op proxyOp;
        struct {
            int step;
        } proxyStep;
        struct {
            uint8_t channelId;
            uint64_t pTimer;
        } kernelCh;
        struct fn_prof_net_plugin netPlugin;
    };
} fn_prof_descr_v4;

/* v4 and v5 share the state-argument layout. */
typedef union {
    struct {
        size_t transSize;
    } proxyStep;
    struct {
        int appendedProxyOps;
    } proxyCtrl;
    struct {
        void *data;
    } netPlugin;
    struct {
        uint64_t pTimer;
    } kernelCh;
} fn_prof_args_v4;
typedef fn_prof_args_v4 fn_prof_args_v5;

typedef struct {
    const char *name;
    ncclResult_t (*init)(void **context, int *eActivationMask, const char *commName,
                         uint64_t commHash, int nNodes, int nranks, int rank, fn_logger_t logfn);
    ncclResult_t (*startEvent)(void *context, void **eHandle, fn_prof_descr_v4 *eDescr);
    ncclResult_t (*stopEvent)(void *eHandle);
    ncclResult_t (*recordEventState)(void *eHandle, fn_prof_state eState,
                                     fn_prof_args_v4 *eStateArgs);
    ncclResult_t (*finalize)(void *context);
} fn_profiler_v4;

/* ------------------------------------------------------------------ v5 */

typedef struct {
    uint64_t type;
    void *parentObj;
    int rank;
    union {
        struct {
            bool graphCaptured;
            int groupDepth;
        } groupApi;
        struct {
            const char *func;
            size_t count;
            const char *datatype;
            int root;
            void *stream;
            bool graphCaptured;
        } collApi;
        struct {
            const char *func;
            size_t count;
            const char *datatype;
            void *stream;
            bool graphCaptured;
        } p2pApi;
        struct {
            void *stream;
        } kernelLaunch;
        struct {
            uint64_t seqNumber;
            const char *func;
            void const *sendBuff;
            void *recvBuff;
            size_t count;
            int root;
            const char *datatype;
            uint8_t nChannels;
            uint8_t nWarps;
            const char *algo;
            const char *proto;
            void *parentGroup;
        } coll;
        struct {
            const char *func;
            void *buff;
            const char *datatype;
            size_t count;
            int peer;
            uint8_t nChannels;
            void *parentGroup;
        } p2p;
        struct fn_prof_proxy_op proxyOp;
        struct {
            int step;
        } proxyStep;
        struct {
            uint8_t channelId;
            uint64_t pTimer;
        } kernelCh;
        struct fn_prof_net_plugin netPlugin;
    };
} fn_prof_descr_v5;

typedef struct {
    const char *name;
    ncclResult_t (*init)(void **context, uint64_t commId, int *eActivationMask,
                         const char *commName, int nNodes, int nranks, int rank, fn_logger_t logfn);
    ncclResult_t (*startEvent)(void *context, void **eHandle, fn_prof_descr_v5 *eDescr);
    ncclResult_t (*stopEvent)(void *eHandle);
    ncclResult_t (*recordEventState)(void *eHandle, fn_prof_state eState,
                                     fn_prof_args_v5 *eStateArgs);
    ncclResult_t (*finalize)(void *context);
} fn_profiler_v5;

/* ------------------------------------------------------------------ v6 */

typedef struct {
    uint64_t type;
    void *parentObj;
    int rank;
    union {
        struct {
            bool graphCaptured;
            int groupDepth;
        } groupApi;
        struct {
            const char *func;
            size_t count;
            const char *datatype;
            int root;
            void *stream;
            bool graphCaptured;
        } collApi;
        struct {
            const char *func;
            size_t count;
            const char *datatype;
            void *stream;
            bool graphCaptured;
        } p2pApi;
        struct {
            void *stream;
        } kernelLaunch;
        struct {
            uint64_t seqNumber;
            const char *func;
            void const *sendBuff;
            void *recvBuff;
            size_t count;
            int root;
            const char *datatype;
            uint8_t nChannels;
            uint8_t nWarps;
            const char *algo;
            const char *proto;
            void *parentGroup;
        } coll;
        struct {
            const char *func;
            void *buff;
            const char *datatype;
            size_t count;
            int peer;
            uint8_t nChannels;
            void *parentGroup;
        } p2p;
        struct fn_prof_proxy_op proxyOp;
        struct {
            int step;
        } proxyStep;
        struct {
            uint8_t channelId;
            uint64_t pTimer;
        } kernelCh;
        struct fn_prof_net_plugin netPlugin;
        struct {
            uint64_t seqNumber;
            const char *func;
            void const *sendBuff;
            void *recvBuff;
            size_t count;
            int root;
            const char *datatype;
            const char *syncStrategy;
            bool intraBatchSync;
            uint32_t batchSize;
            uint32_t numBatches;
            uint32_t ceSeqNum;
            void *stream;
        } ceColl;
        struct {
            bool isComplete;
            int nRanks;
        } ceCollSync;
        struct {
            int numOps;
            size_t totalBytes;
            bool useIntraSync;
        } ceCollBatch;
    };
} fn_prof_descr_v6;
typedef fn_prof_args_v5 fn_prof_args_v6;

typedef struct {
    const char *name;
    ncclResult_t (*init)(void **context, uint64_t commId, int *eActivationMask,
                         const char *commName, int nNodes, int nranks, int rank, fn_logger_t logfn);
    ncclResult_t (*startEvent)(void *context, void **eHandle, fn_prof_descr_v6 *eDescr);
    ncclResult_t (*stopEvent)(void *eHandle);
    ncclResult_t (*recordEventState)(void *eHandle, fn_prof_state eState,
                                     fn_prof_args_v6 *eStateArgs);
    ncclResult_t (*finalize)(void *context);
} fn_profiler_v6;

/* ------------------------------------------------------------------ v7 */

/* NCCL's profiler_v7.h: v6's members with a user tag (and, on Coll, the
 * kernel's variant) after them, and the KernelPhase sub-event. */
typedef struct {
    uint64_t type;
    void *parentObj;
    int rank;
    union {
        struct {
            bool graphCaptured;
            int groupDepth;
        } groupApi;
        struct {
            const char *func;
            size_t count;
            const char *datatype;
            int root;
            void *stream;
            bool graphCaptured;
            uint64_t userTag;
        } collApi;
        struct {
            const char *func;
            size_t count;
            const char *datatype;
            void *stream;
            bool graphCaptured;
            uint64_t userTag;
        } p2pApi;
        struct {
            void *stream;
        } kernelLaunch;
        struct {
            uint64_t seqNumber;
            const char *func;
            void const *sendBuff;
            void *recvBuff;
            size_t count;
            int root;
            const char *datatype;
            uint8_t nChannels;
            uint8_t nWarps;
            const char *algo;
            const char *proto;
            void *parentGroup;
            const char *kernelVariant;
            bool isSymColl;
            uint64_t userTag;
        } coll;
        struct {
            const char *func;
            void *buff;
            const char *datatype;
            size_t count;
            int peer;
            uint8_t nChannels;
            void *parentGroup;
            uint64_t userTag;
        } p2p;
        struct fn_prof_proxy_op proxyOp;
        struct {
            int step;
        } proxyStep;
        struct {
            uint8_t channelId;
            uint64_t pTimer;
        } kernelCh;
        struct fn_prof_net_plugin netPlugin;
        struct {
            uint64_t seqNumber;
            const char *func;
            void const *sendBuff;
            void *recvBuff;
            size_t count;
            int root;
            const char *datatype;
            const char *syncStrategy;
            bool intraBatchSync;
            uint32_t batchSize;
            uint32_t numBatches;
            uint32_t ceSeqNum;
            void *stream;
            uint64_t userTag;
        } ceColl;
        struct {
            bool isComplete;
            int nRanks;
        } ceCollSync;
        struct {
            int numOps;
            size_t totalBytes;
            bool useIntraSync;
        } ceCollBatch;
        struct {
            uint8_t channelId;
            uint8_t phaseId; /* 0 initial_sync, 1 compute, 2 final_sync */
            const char *phaseName;
            uint64_t pTimer;
        } kernelPhase;
    };
} fn_prof_descr_v7;

typedef struct {
    const char *name;
    ncclResult_t (*init)(void **context, uint64_t commId, int *eActivationMask,
                         const char *commName, int nNodes, int nranks, int rank, fn_logger_t logfn);
    ncclResult_t (*startEvent)(void *context, void **eHandle, fn_prof_descr_v7 *eDescr);
    ncclResult_t (*stopEvent)(void *eHandle);
    ncclResult_t (*recordEventState)(void *eHandle, fn_prof_state eState,
                                     fn_prof_args_v6 *eStateArgs);
    ncclResult_t (*finalize)(void *context);
} fn_profiler_v7;

#endif
