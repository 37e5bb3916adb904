/*
 * fn_api.c - the fake NCCL's communicator API: versions, errors, unique
 * ids, ncclCommInitRank/InitRankConfig/InitAll/Split, Destroy/Abort/
 * Finalize and the queries; plus loading the simulated driver, whose entry
 * points are all obtained through cuGetProcAddress_v2 as real NCCL does.
 *
 * Never exits or prints (unless NCCL_DEBUG asks for log lines); bad
 * arguments give ncclInvalidArgument, never a crash on NULL.
 */
#include "fn_internal.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define FN_ID_MAGIC "FGNCCL01"

pthread_mutex_t fn_lock = PTHREAD_MUTEX_INITIALIZER;
struct fn_cu fn_cu;

static struct ncclComm *fn_comms; /* registry of live communicators, fn_lock */
static __thread char fn_last_error[256];

/* ---------------------------------------------------------------- helpers */

int64_t fn_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

double fn_env_double(const char *name, double def, double lo, double hi)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end;
    double d = strtod(v, &end);
    if (*end || !(d >= lo && d <= hi))
        return def;
    return d;
}

void fn_set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fn_last_error, sizeof fn_last_error, fmt, ap);
    va_end(ap);
    fn_log(fnLogWarn, 0, __FILE__, __LINE__, "%s", fn_last_error);
}

/* NCCL_DEBUG=WARN|INFO|TRACE prints log lines (plugin ones included) on
 * stderr; unset, nothing is printed. */
void fn_log(fn_log_level level, unsigned long flags, const char *file, int line, const char *fmt,
            ...)
{
    (void)flags;
    const char *dbg = getenv("NCCL_DEBUG");
    if (!dbg)
        return;
    fn_log_level max = !strcasecmp(dbg, "TRACE")  ? fnLogTrace
                       : !strcasecmp(dbg, "INFO") ? fnLogInfo
                       : !strcasecmp(dbg, "WARN") ? fnLogWarn
                                                  : fnLogNone;
    if (level > max || level == fnLogNone)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "fake NCCL %d %s:%d %s\n", (int)getpid(), file ? file : "?", line, msg);
}

bool fn_comm_valid(const struct ncclComm *c)
{
    if (!c)
        return false;
    pthread_mutex_lock(&fn_lock);
    const struct ncclComm *p = fn_comms;
    while (p && p != c)
        p = p->next;
    pthread_mutex_unlock(&fn_lock);
    return p != NULL;
}

static uint64_t fn_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t fn_key_word(const unsigned char *key, int i)
{
    uint64_t w;
    memcpy(&w, key + 8 * i, 8);
    return w;
}

/* ------------------------------------------------------------ the driver */

static pthread_once_t fn_cu_once = PTHREAD_ONCE_INIT;
static ncclResult_t fn_cu_status = ncclSystemError;

static const struct {
    const char *name;
    size_t off;
    int version;
} fn_cu_table[] = {
    {"cuInit", offsetof(struct fn_cu, init), 2000},
    {"cuCtxGetCurrent", offsetof(struct fn_cu, ctx_get_current), 4000},
    {"cuCtxSetCurrent", offsetof(struct fn_cu, ctx_set_current), 4000},
    {"cuCtxPushCurrent", offsetof(struct fn_cu, ctx_push), 4000},
    {"cuCtxPopCurrent", offsetof(struct fn_cu, ctx_pop), 4000},
    {"cuCtxGetDevice", offsetof(struct fn_cu, ctx_get_device), 2000},
    {"cuDevicePrimaryCtxRetain", offsetof(struct fn_cu, primary_retain), 7000},
    {"cuDeviceGetCount", offsetof(struct fn_cu, device_count), 2000},
    {"cuModuleLoadData", offsetof(struct fn_cu, module_load_data), 2000},
    {"cuModuleGetFunction", offsetof(struct fn_cu, module_get_function), 2000},
    {"cuLaunchKernelEx", offsetof(struct fn_cu, launch_kernel_ex), 11060},
    {"cuStreamIsCapturing", offsetof(struct fn_cu, stream_is_capturing), 10000},
    {"cuMemcpyDtoDAsync", offsetof(struct fn_cu, memcpy_dtod_async), 3020},
};

static void fn_cu_load(void)
{
    /* Like real NCCL: the driver is found at run time, never linked. */
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        fn_set_error("fake NCCL: cannot load libcuda.so.1: %s", dlerror());
        return;
    }
    CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
    *(void **)&gpa = dlsym(h, "cuGetProcAddress_v2");
    fg_nccl_attach_fn attach;
    *(void **)&attach = dlsym(h, "fakegpu_nccl_attach");
    *(void **)&fn_cu.ce_arm = dlsym(h, "fakegpu_nccl_ce_arm");
    if (!gpa || !attach || !fn_cu.ce_arm) {
        fn_set_error("fake NCCL: libcuda.so.1 is not the fakegpu driver");
        return;
    }
    for (size_t i = 0; i < sizeof fn_cu_table / sizeof fn_cu_table[0]; i++) {
        void *fn = NULL;
        CUdriverProcAddressQueryResult st;
        if (gpa(fn_cu_table[i].name, &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st) !=
                CUDA_SUCCESS ||
            !fn) {
            fn_set_error("fake NCCL: cuGetProcAddress_v2(%s) failed", fn_cu_table[i].name);
            return;
        }
        memcpy((char *)&fn_cu + fn_cu_table[i].off, &fn, sizeof fn);
    }
    /* optional: NCCL 2.28 enqueues a copy-engine collective's copies with
     * it where the driver has it (CUDA 12.8 on; fn_ce.c) */
    void *batch = NULL;
    CUdriverProcAddressQueryResult bst;
    if (gpa("cuMemcpyBatchAsync", &batch, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &bst) !=
            CUDA_SUCCESS ||
        bst != CU_GET_PROC_ADDRESS_SUCCESS)
        batch = NULL;
    memcpy(&fn_cu.memcpy_batch_async, &batch, sizeof batch);
    if (fn_cu.init(0) != CUDA_SUCCESS) {
        fn_set_error("fake NCCL: cuInit failed");
        fn_cu_status = ncclUnhandledCudaError;
        return;
    }
    if (attach(&fn_hooks) != FG_NCCL_ABI) {
        fn_set_error("fake NCCL: driver refused the NCCL hooks");
        return;
    }
    fn_prof_load();
    fn_cu_status = ncclSuccess;
}

static ncclResult_t fn_cu_ready(void)
{
    pthread_once(&fn_cu_once, fn_cu_load);
    return fn_cu_status;
}

/* --------------------------------------------------------- versions, ids */

FN_API ncclResult_t ncclGetVersion(int *version)
{
    if (!version)
        return ncclInvalidArgument;
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}

FN_API const char *ncclGetErrorString(ncclResult_t result)
{
    switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError:
        return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
        return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}

FN_API const char *ncclGetLastError(ncclComm_t comm)
{
    (void)comm;
    return fn_last_error;
}

/* The id: "FGNCCL01", 16 random bytes (the key), zeros. */
FN_API ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId)
{
    if (!uniqueId)
        return ncclInvalidArgument;
    memset(uniqueId, 0, sizeof *uniqueId);
    memcpy(uniqueId->internal, FN_ID_MAGIC, 8);
    unsigned char key[FN_KEY_BYTES];
    if (getrandom(key, sizeof key, 0) != (ssize_t)sizeof key) {
        uint64_t w[2] = {fn_mix((uint64_t)fn_now()), fn_mix((uint64_t)getpid() ^ (uint64_t)key)};
        memcpy(key, w, sizeof key);
    }
    memcpy(uniqueId->internal + 8, key, sizeof key);
    return ncclSuccess;
}

static ncclResult_t fn_comm_release(ncclComm_t comm, bool abort);

/* ------------------------------------------------------ communicator init */

/* The calling thread's device: its current context, or device 0's
 * primary context made current (what the CUDA runtime would do). */
static ncclResult_t fn_current_device(CUcontext *ctx, int *device)
{
    if (fn_cu.ctx_get_current(ctx) != CUDA_SUCCESS)
        return ncclUnhandledCudaError;
    if (!*ctx) {
        if (fn_cu.primary_retain(ctx, 0) != CUDA_SUCCESS ||
            fn_cu.ctx_set_current(*ctx) != CUDA_SUCCESS)
            return ncclUnhandledCudaError;
    }
    CUdevice d;
    if (fn_cu.ctx_get_device(&d) != CUDA_SUCCESS)
        return ncclUnhandledCudaError;
    *device = d;
    return ncclSuccess;
}

static void fn_comm_free(struct ncclComm *c)
{
    if (!c)
        return;
    free(c->send_seq);
    free(c->recv_seq);
    c->magic = 0;
    free(c);
}

/* First half of an init: claim the rank in the rendezvous. */
static ncclResult_t fn_comm_attach(const unsigned char *key, int nranks, int rank, CUcontext ctx,
                                   int device, const ncclConfig_t *config, struct ncclComm **out)
{
    struct ncclComm *c = calloc(1, sizeof *c);
    if (!c)
        return ncclSystemError;
    c->send_seq = calloc((size_t)nranks, sizeof *c->send_seq);
    c->recv_seq = calloc((size_t)nranks, sizeof *c->recv_seq);
    if (!c->send_seq || !c->recv_seq) {
        fn_comm_free(c);
        return ncclSystemError;
    }
    c->magic = FN_COMM_MAGIC;
    memcpy(c->key, key, FN_KEY_BYTES);
    c->hash = fn_mix(fn_key_word(key, 0) ^ fn_mix(fn_key_word(key, 1)));
    c->nranks = nranks;
    c->rank = rank;
    c->device = device;
    c->ctx = ctx;
    if (config && config->commName)
        snprintf(c->name, sizeof c->name, "%s", config->commName);
    double gbps = fn_env_double("FAKEGPU_NET_GBPS", 100, 1e-6, 1e9);
    ncclResult_t rc = fn_shm_attach(key, nranks, rank, device, gbps, &c->shm, &c->shm_size);
    if (rc != ncclSuccess) {
        fn_comm_free(c);
        return rc;
    }
    *out = c;
    return ncclSuccess;
}

/* Second half: wait for every rank, then register and start profiling. */
static ncclResult_t fn_comm_complete(struct ncclComm *c)
{
    ncclResult_t rc = fn_links_load() ? fn_shm_wait_all(c->shm, c->key) : ncclInvalidArgument;
    if (rc != ncclSuccess) {
        fn_shm_detach(c->shm, c->shm_size, c->key, c->rank);
        fn_comm_free(c);
        return rc;
    }
    c->gbps_all = fn_shm_gbps(c->shm, 0);
    for (int r = 1; r < c->nranks; r++)
        if (fn_shm_gbps(c->shm, r) < c->gbps_all)
            c->gbps_all = fn_shm_gbps(c->shm, r);
    pthread_mutex_lock(&fn_lock);
    c->next = fn_comms;
    fn_comms = c;
    pthread_mutex_unlock(&fn_lock);
    fn_prof_comm_init(c);
    return ncclSuccess;
}

static ncclResult_t fn_check_id(const ncclUniqueId *id)
{
    if (memcmp(id->internal, FN_ID_MAGIC, 8) != 0) {
        fn_set_error("fake NCCL: not a unique id from ncclGetUniqueId");
        return ncclInvalidArgument;
    }
    return ncclSuccess;
}

FN_API ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId,
                                           int rank, ncclConfig_t *config)
{
    if (!comm)
        return ncclInvalidArgument;
    *comm = NULL;
    if (nranks < 1 || nranks > FN_MAX_RANKS || rank < 0 || rank >= nranks) {
        fn_set_error("fake NCCL: invalid rank %d of %d (at most %d ranks)", rank, nranks,
                     FN_MAX_RANKS);
        return ncclInvalidArgument;
    }
    ncclResult_t rc = fn_check_id(&commId);
    if (rc == ncclSuccess)
        rc = fn_cu_ready();
    CUcontext ctx = NULL;
    int device = 0;
    if (rc == ncclSuccess)
        rc = fn_current_device(&ctx, &device);
    struct ncclComm *c = NULL;
    if (rc == ncclSuccess)
        rc = fn_comm_attach((const unsigned char *)commId.internal + 8, nranks, rank, ctx, device,
                            config, &c);
    if (rc == ncclSuccess)
        rc = fn_comm_complete(c);
    if (rc == ncclSuccess)
        *comm = c;
    return rc;
}

FN_API ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
    return ncclCommInitRankConfig(comm, nranks, commId, rank, NULL);
}

FN_API ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
    if (!comms || ndev < 1 || ndev > FN_MAX_RANKS)
        return ncclInvalidArgument;
    memset(comms, 0, (size_t)ndev * sizeof *comms);
    ncclResult_t rc = fn_cu_ready();
    if (rc != ncclSuccess)
        return rc;
    int ndevices = 0;
    if (fn_cu.device_count(&ndevices) != CUDA_SUCCESS)
        return ncclUnhandledCudaError;
    for (int i = 0; i < ndev; i++) {
        int d = devlist ? devlist[i] : i;
        if (d < 0 || d >= ndevices) {
            fn_set_error("fake NCCL: device %d does not exist (FAKEGPU_DEVICES=%d)", d, ndevices);
            return ncclInvalidArgument;
        }
    }
    ncclUniqueId id;
    ncclGetUniqueId(&id);
    const unsigned char *key = (const unsigned char *)id.internal + 8;
    for (int i = 0; i < ndev && rc == ncclSuccess; i++) {
        CUcontext ctx;
        int d = devlist ? devlist[i] : i;
        if (fn_cu.primary_retain(&ctx, d) != CUDA_SUCCESS)
            rc = ncclUnhandledCudaError;
        else
            rc = fn_comm_attach(key, ndev, i, ctx, d, NULL, &comms[i]);
    }
    for (int i = 0; i < ndev; i++) {
        if (rc != ncclSuccess) {
            if (comms[i])
                fn_shm_detach(comms[i]->shm, comms[i]->shm_size, key, i);
            fn_comm_free(comms[i]);
            comms[i] = NULL;
            continue;
        }
        rc = fn_comm_complete(comms[i]);
        if (rc != ncclSuccess) {
            comms[i] = NULL;
            for (int j = 0; j < i; j++) {
                fn_comm_release(comms[j], false);
                comms[j] = NULL;
            }
        }
    }
    return rc;
}

/* The child key: a mix of the parent's key, the split's number and the
 * color, identical on every member. */
static void fn_split_key(const struct ncclComm *p, uint64_t seq, int color, unsigned char *key)
{
    uint64_t w[2];
    w[0] = fn_mix(fn_key_word(p->key, 0) ^ fn_mix(seq * 2 + 1) ^ fn_mix((uint64_t)color << 1));
    w[1] = fn_mix(fn_key_word(p->key, 1) ^ w[0]);
    memcpy(key, w, FN_KEY_BYTES);
}

FN_API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                  ncclConfig_t *config)
{
    if (!newcomm || !fn_comm_valid(comm) || (color < 0 && color != NCCL_SPLIT_NOCOLOR))
        return ncclInvalidArgument;
    *newcomm = NULL;
    int n = comm->nranks;
    int *colors = calloc((size_t)n, sizeof *colors), *keys = calloc((size_t)n, sizeof *keys);
    if (!colors || !keys) {
        free(colors);
        free(keys);
        return ncclSystemError;
    }
    uint64_t seq = comm->split_seq++;
    ncclResult_t rc = fn_shm_split_exchange(comm->shm, comm->rank, seq, color, key, colors, keys);
    int nnew = 0, newrank = 0;
    for (int r = 0; rc == ncclSuccess && r < n; r++) {
        if (color == NCCL_SPLIT_NOCOLOR || colors[r] != color)
            continue;
        nnew++;
        if (keys[r] < key || (keys[r] == key && r < comm->rank))
            newrank++;
    }
    free(colors);
    free(keys);
    if (rc != ncclSuccess || color == NCCL_SPLIT_NOCOLOR)
        return rc;
    unsigned char child[FN_KEY_BYTES];
    fn_split_key(comm, seq, color, child);
    /* The child lives on the parent's device, whatever the current one. */
    struct ncclComm *c = NULL;
    rc = fn_comm_attach(child, nnew, newrank, comm->ctx, comm->device, config, &c);
    if (rc == ncclSuccess)
        rc = fn_comm_complete(c);
    if (rc == ncclSuccess)
        *newcomm = c;
    return rc;
}

/* ------------------------------------------------------ destroy, queries */

static ncclResult_t fn_comm_release(ncclComm_t comm, bool abort)
{
    if (!fn_comm_valid(comm))
        return ncclInvalidArgument;
    if (abort)
        __atomic_store_n(&comm->aborted, 1, __ATOMIC_RELEASE);
    bool drained = fn_comm_drain(comm);
    pthread_mutex_lock(&fn_lock);
    struct ncclComm **pp = &fn_comms;
    while (*pp && *pp != comm)
        pp = &(*pp)->next;
    if (*pp)
        *pp = comm->next;
    comm->destroyed = true;
    pthread_mutex_unlock(&fn_lock);
    fn_prof_comm_finalize(comm);
    fn_shm_detach(comm->shm, comm->shm_size, comm->key, comm->rank);
    comm->shm = NULL;
    if (drained)
        fn_comm_free(comm);
    /* else: ops that never completed still point at comm; keep it. */
    return ncclSuccess;
}

FN_API ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    if (!comm)
        return ncclSuccess; /* as NCCL: destroying NULL is a no-op */
    return fn_comm_release(comm, false);
}

FN_API ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    if (!comm)
        return ncclSuccess;
    return fn_comm_release(comm, true);
}

FN_API ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
    if (!fn_comm_valid(comm))
        return ncclInvalidArgument;
    fn_comm_drain(comm);
    return ncclSuccess;
}

FN_API ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
    if (!fn_comm_valid(comm) || !count)
        return ncclInvalidArgument;
    *count = comm->nranks;
    return ncclSuccess;
}

FN_API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
    if (!fn_comm_valid(comm) || !rank)
        return ncclInvalidArgument;
    *rank = comm->rank;
    return ncclSuccess;
}

FN_API ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)
{
    if (!fn_comm_valid(comm) || !device)
        return ncclInvalidArgument;
    *device = comm->device;
    return ncclSuccess;
}

FN_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
    if (!fn_comm_valid(comm) || !asyncError)
        return ncclInvalidArgument;
    *asyncError = ncclSuccess;
    return ncclSuccess;
}

FN_ALIAS(ncclGetVersion);
FN_ALIAS(ncclGetUniqueId);
FN_ALIAS(ncclGetErrorString);
FN_ALIAS(ncclGetLastError);
FN_ALIAS(ncclCommInitRank);
FN_ALIAS(ncclCommInitRankConfig);
FN_ALIAS(ncclCommInitAll);
FN_ALIAS(ncclCommSplit);
FN_ALIAS(ncclCommDestroy);
FN_ALIAS(ncclCommAbort);
FN_ALIAS(ncclCommFinalize);
FN_ALIAS(ncclCommCount);
FN_ALIAS(ncclCommUserRank);
FN_ALIAS(ncclCommCuDevice);
FN_ALIAS(ncclCommGetAsyncError);
