/*
 * Communicators: creation and teardown wrappers, and the registry the op
 * wrappers read on every call.
 *
 * The communicator hash on op records must be the same on every rank, with
 * nothing exchanged between ranks: it is derived from what all ranks pass
 * alike — the ncclUniqueId for ncclCommInitRank*, and for ncclCommSplit /
 * ncclCommShrink the parent's hash, the color (or excluded ranks) and how
 * many splits the parent had made (splits are collective, so every member
 * counts the same). ncclCommInitAll makes all ranks in one call of one
 * process: they share a hash drawn from that call.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim/nccl_int.h"
#include "shim/ptrmap.h"

#define CT_NCCL_MAX_COMMS 4096

static struct ct_nccl_comm g_comms[CT_NCCL_MAX_COMMS];
static _Atomic unsigned g_ncomms;
static struct ct_ptrmap g_comm_map = CT_PTRMAP_EMPTY; /* handle -> index + 1 */
static pthread_mutex_t g_comm_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic unsigned g_full_reported;

uint64_t ct_nccl_hash_mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 27;
    return h ? h : 1; /* 0 means "unknown communicator" on records */
}

uint64_t ct_nccl_hash_bytes(const void *p, size_t n, uint64_t seed)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull ^ seed;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return ct_nccl_hash_mix(h, n);
}

struct ct_nccl_comm *ct_nccl_comm_get(ncclComm_t handle)
{
    uint64_t v = ct_ptrmap_get(&g_comm_map, (uintptr_t)handle);
    return v ? &g_comms[v - 1] : NULL;
}

static void comm_meta(const struct ct_nccl_comm *c, const char *key, long long v)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%lld", v);
    uint64_t f[CT_META_NFIELDS] = {ct_clock_now(), CT_SCOPE_COMM, c->hash, ct_intern(key),
                                   ct_intern(buf)};
    ct_emit(CT_REC_META, 0, f, CT_META_NFIELDS);
}

struct ct_nccl_comm *ct_nccl_comm_add(ncclComm_t handle, uint64_t hash, int rank, int nranks,
                                      int device)
{
    if (!handle || nranks <= 0 || !ct_shim_live())
        return NULL;
    int guard = ct_tls_guard;
    ct_tls_guard = 1;
    struct ct_nccl_comm *c = NULL;
    pthread_mutex_lock(&g_comm_lock);
    if (!ct_ptrmap_ready(&g_comm_map) && ct_ptrmap_init(&g_comm_map, 13) != 0)
        goto out;
    unsigned i = atomic_load(&g_ncomms);
    if (i >= CT_NCCL_MAX_COMMS) {
        if (!atomic_exchange(&g_full_reported, 1))
            ct_emit_error("cutrace: more than 4096 NCCL communicators; later ones are recorded "
                          "with comm_hash 0",
                          -ENOSPC);
        goto out;
    }
    c = &g_comms[i];
    c->hash = hash;
    c->rank = rank;
    c->nranks = nranks;
    c->device = device;
    c->p2p_seq = calloc(2 * (size_t)nranks, sizeof(*c->p2p_seq));
    atomic_store(&c->handle, (uintptr_t)handle);
    /* published last: readers find a complete entry or none */
    if (ct_ptrmap_put(&g_comm_map, (uintptr_t)handle, i + 1) != 0) {
        free((void *)c->p2p_seq);
        c = NULL;
        goto out;
    }
    atomic_store(&g_ncomms, i + 1);
out:
    pthread_mutex_unlock(&g_comm_lock);
    static _Atomic int version_told;
    if (c && !atomic_exchange(&version_told, 1)) {
        /* which NCCL this process runs, for comparing runs (process scope) */
        typedef ncclResult_t (*version_fn)(int *);
        void *p = ct_nccl_other("ncclGetVersion");
        int v = 0;
        if (p && ((version_fn)ct_fn(p))(&v) == ncclSuccess) {
            char buf[32];
            if (v >= 10000) /* NCCL_VERSION(): X*10000+Y*100+Z from 2.9 on, X*1000+Y*100+Z before */
                snprintf(buf, sizeof(buf), "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
            else
                snprintf(buf, sizeof(buf), "%d.%d.%d", v / 1000, v / 100 % 10, v % 100);
            uint64_t f[CT_META_NFIELDS] = {ct_clock_now(), CT_SCOPE_PROCESS, 0,
                                           ct_intern("nccl_version"), ct_intern(buf)};
            ct_emit(CT_REC_META, 0, f, CT_META_NFIELDS);
        }
    }
    if (c) {
        comm_meta(c, "rank", rank);
        comm_meta(c, "nranks", nranks);
        comm_meta(c, "device", device);
    }
    ct_tls_guard = guard;
    return c;
}

static __thread struct ct_nccl_tls g_tls;

#define CT_NCCL_THREADS 256
static struct ct_nccl_pending g_pending_pool[CT_NCCL_THREADS][CT_NCCL_PENDING];
static _Atomic unsigned g_pending_used;

struct ct_nccl_tls *ct_nccl_tls(void)
{
    return &g_tls;
}

struct ct_nccl_pending *ct_nccl_pending_slot(struct ct_nccl_tls *t)
{
    if (__builtin_expect(!t->pending, 0)) {
        unsigned i = atomic_fetch_add(&g_pending_used, 1);
        if (i >= CT_NCCL_THREADS) {
            t->overflow++;
            return NULL; /* plugin events of this thread's ops stay unmatched */
        }
        t->pending = g_pending_pool[i];
    }
    if (t->npending >= CT_NCCL_PENDING) {
        t->overflow++;
        return NULL;
    }
    return &t->pending[t->npending++];
}

uint32_t ct_nccl_name_id(const char *name, _Atomic uint32_t *cache)
{
    uint32_t id = atomic_load_explicit(cache, memory_order_relaxed);
    if (!id) {
        id = ct_intern(name);
        atomic_store_explicit(cache, id, memory_order_relaxed);
    }
    return id;
}

void ct_nccl_api_record(const char *name, uint64_t corr, uint64_t t0, int result, uint64_t stream)
{
    uint64_t f[CT_API_NFIELDS] = {0};
    f[CT_API_START] = t0;
    f[CT_API_END] = ct_clock_now();
    f[CT_API_NAME] = ct_intern(name);
    f[CT_API_CORR] = corr;
    f[CT_API_FAMILY] = CT_FAM_OTHER;
    f[CT_API_RESULT] = (uint64_t)(int64_t)result;
    f[CT_API_DEVICE] = (uint64_t)(int64_t)-1;
    f[CT_API_STREAM] = stream;
    ct_emit(CT_REC_API, 0, f, CT_API_NFIELDS);
}

/* ------------------------------------------------------------ wrappers */

typedef ncclResult_t (*count_fn)(const ncclComm_t, int *);

/* rank, size and device of a comm NCCL just made, asked of NCCL itself
 * (-1 where it cannot say yet, e.g. a non-blocking init in progress). */
static void describe(ncclComm_t c, int *rank, int *nranks, int *device)
{
    void *p;
    if ((p = ct_nccl_other("ncclCommUserRank")) && ((count_fn)ct_fn(p))(c, rank) != 0)
        *rank = -1;
    if ((p = ct_nccl_other("ncclCommCount")) && ((count_fn)ct_fn(p))(c, nranks) != 0)
        *nranks = -1;
    if ((p = ct_nccl_other("ncclCommCuDevice")) && ((count_fn)ct_fn(p))(c, device) != 0)
        *device = -1;
}

/* Around a creation call: the outermost one is timed and recorded. */
struct creation {
    int outer;
    uint64_t t0;
};

static int creation_enter(struct creation *k, uint64_t hash)
{
    struct ct_nccl_tls *t = ct_nccl_tls();
    k->outer = t->depth == 0 && !ct_tls_guard && (ct_shim_recording() || ct_shim_live());
    t->depth++;
    if (k->outer)
        t->init_hash = hash; /* for the profiler plugin's init, called inside */
    k->t0 = ct_clock_now();
    return k->outer;
}

static void creation_leave(struct creation *k, const char *name, ncclResult_t r)
{
    struct ct_nccl_tls *t = ct_nccl_tls();
    t->depth--;
    if (k->outer)
        t->init_hash = 0;
    if (k->outer && atomic_load(&ct_shim_state) == CT_SHIM_ON) {
        int guard = ct_tls_guard;
        ct_tls_guard = 1;
        ct_nccl_api_record(name, ct_next_corr(), k->t0, (int)r, 0);
        ct_tls_guard = guard;
    }
}

/* Registers a new comm whose rank/size NCCL can tell us. */
static void add_described(ncclComm_t c, uint64_t hash, int rank, int nranks)
{
    int r = rank, n = nranks, dev = -1;
    describe(c, &r, &n, &dev);
    if (r < 0)
        r = rank;
    if (n <= 0)
        n = nranks;
    ct_nccl_comm_add(c, hash, r, n, dev);
}

typedef ncclResult_t (*init_rank_fn)(ncclComm_t *, int, ncclUniqueId, int);
typedef ncclResult_t (*init_config_fn)(ncclComm_t *, int, ncclUniqueId, int, ncclConfig_t *);
typedef ncclResult_t (*init_scalable_fn)(ncclComm_t *, int, int, int, ncclUniqueId *,
                                         ncclConfig_t *);
typedef ncclResult_t (*init_all_fn)(ncclComm_t *, int, const int *);
typedef ncclResult_t (*split_fn)(ncclComm_t, int, int, ncclComm_t *, ncclConfig_t *);
typedef ncclResult_t (*shrink_fn)(ncclComm_t, int *, int, ncclComm_t *, ncclConfig_t *, int);
typedef ncclResult_t (*comm_fn)(ncclComm_t);

CT_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    init_rank_fn real = CT_NCCL_REAL(init_rank_fn, CT_NS_ncclCommInitRank);
    if (!real)
        return ncclSystemError;
    uint64_t h = ct_nccl_hash_bytes(&id, sizeof(id), 0);
    struct creation k;
    int outer = creation_enter(&k, h);
    ncclResult_t r = real(comm, nranks, id, rank);
    CT_ERRNO_SAVE;
    if (outer && (r == ncclSuccess || r == ncclInProgress) && comm)
        add_described(*comm, h, rank, nranks);
    creation_leave(&k, "ncclCommInitRank", r);
    CT_ERRNO_RESTORE;
    return r;
}

CT_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id,
                                              int rank, ncclConfig_t *config)
{
    init_config_fn real = CT_NCCL_REAL(init_config_fn, CT_NS_ncclCommInitRankConfig);
    if (!real)
        return ncclSystemError;
    uint64_t h = ct_nccl_hash_bytes(&id, sizeof(id), 0);
    struct creation k;
    int outer = creation_enter(&k, h);
    ncclResult_t r = real(comm, nranks, id, rank, config);
    CT_ERRNO_SAVE;
    if (outer && (r == ncclSuccess || r == ncclInProgress) && comm)
        add_described(*comm, h, rank, nranks);
    creation_leave(&k, "ncclCommInitRankConfig", r);
    CT_ERRNO_RESTORE;
    return r;
}

CT_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nid,
                                                ncclUniqueId *ids, ncclConfig_t *config)
{
    init_scalable_fn real = CT_NCCL_REAL(init_scalable_fn, CT_NS_ncclCommInitRankScalable);
    if (!real)
        return ncclSystemError;
    uint64_t h = ids && nid > 0 ? ct_nccl_hash_bytes(&ids[0], sizeof(ids[0]), 0) : 0;
    struct creation k;
    int outer = creation_enter(&k, h);
    ncclResult_t r = real(comm, nranks, rank, nid, ids, config);
    CT_ERRNO_SAVE;
    if (outer && h && (r == ncclSuccess || r == ncclInProgress) && comm)
        add_described(*comm, h, rank, nranks);
    creation_leave(&k, "ncclCommInitRankScalable", r);
    CT_ERRNO_RESTORE;
    return r;
}

CT_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
    init_all_fn real = CT_NCCL_REAL(init_all_fn, CT_NS_ncclCommInitAll);
    if (!real)
        return ncclSystemError;
    static _Atomic uint64_t calls;
    uint64_t h = ct_nccl_hash_mix(ct_nccl_hash_mix(0x494e4954414c4cull, (uint64_t)getpid()),
                                  atomic_fetch_add(&calls, 1));
    struct creation k;
    int outer = creation_enter(&k, h);
    ncclResult_t r = real(comms, ndev, devlist);
    CT_ERRNO_SAVE;
    if (outer && r == ncclSuccess && comms) {
        for (int i = 0; i < ndev; i++)
            add_described(comms[i], h, i, ndev);
    }
    creation_leave(&k, "ncclCommInitAll", r);
    CT_ERRNO_RESTORE;
    return r;
}

CT_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                     ncclConfig_t *config)
{
    split_fn real = CT_NCCL_REAL(split_fn, CT_NS_ncclCommSplit);
    if (!real)
        return ncclSystemError;
    struct ct_nccl_comm *parent = ct_nccl_comm_get(comm);
    /* every member counts this split, whatever its color */
    uint64_t n = parent ? atomic_fetch_add(&parent->splits, 1) : 0;
    uint64_t h =
        parent ? ct_nccl_hash_mix(ct_nccl_hash_mix(parent->hash, n), (uint64_t)(int64_t)color) : 0;
    struct creation k;
    int outer = creation_enter(&k, h);
    ncclResult_t r = real(comm, color, key, newcomm, config);
    CT_ERRNO_SAVE;
    if (outer && parent && (r == ncclSuccess || r == ncclInProgress) && newcomm && *newcomm)
        add_described(*newcomm, h, -1, -1);
    creation_leave(&k, "ncclCommSplit", r);
    CT_ERRNO_RESTORE;
    return r;
}

CT_EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int *exclude, int nexclude,
                                      ncclComm_t *newcomm, ncclConfig_t *config, int flags)
{
    shrink_fn real = CT_NCCL_REAL(shrink_fn, CT_NS_ncclCommShrink);
    if (!real)
        return ncclSystemError;
    struct ct_nccl_comm *parent = ct_nccl_comm_get(comm);
    uint64_t n = parent ? atomic_fetch_add(&parent->splits, 1) : 0;
    uint64_t h = parent ? ct_nccl_hash_mix(ct_nccl_hash_mix(parent->hash, n), 0x5348524b) : 0;
    for (int i = 0; h && exclude && i < nexclude; i++)
        h = ct_nccl_hash_mix(h, (uint64_t)(int64_t)exclude[i]);
    struct creation k;
    int outer = creation_enter(&k, h);
    ncclResult_t r = real(comm, exclude, nexclude, newcomm, config, flags);
    CT_ERRNO_SAVE;
    if (outer && parent && (r == ncclSuccess || r == ncclInProgress) && newcomm && *newcomm)
        add_described(*newcomm, h, -1, -1);
    creation_leave(&k, "ncclCommShrink", r);
    CT_ERRNO_RESTORE;
    return r;
}

static ncclResult_t teardown(enum ct_nccl_sym sym, const char *name, ncclComm_t comm)
{
    comm_fn real = CT_NCCL_REAL(comm_fn, sym);
    if (!real)
        return ncclSystemError;
    struct creation k;
    creation_enter(&k, 0);
    ncclResult_t r = real(comm);
    CT_ERRNO_SAVE;
    creation_leave(&k, name, r);
    CT_ERRNO_RESTORE;
    return r;
}

CT_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
    return teardown(CT_NS_ncclCommFinalize, "ncclCommFinalize", comm);
}

CT_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    return teardown(CT_NS_ncclCommDestroy, "ncclCommDestroy", comm);
}

CT_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    return teardown(CT_NS_ncclCommAbort, "ncclCommAbort", comm);
}
