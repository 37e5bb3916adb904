/*
 * NVSHMEM's on-stream collectives (libnvshmem_host.so), recorded like NCCL
 * ops: nvshmemx_<TYPE>_<OP>_reduce_on_stream, _reducescatter_on_stream,
 * nvshmemx_<TYPE>_alltoall_on_stream, _fcollect_on_stream,
 * _broadcast_on_stream, their untyped *mem variants, and
 * nvshmemx_barrier_on_stream, nvshmemx_team_sync_on_stream,
 * nvshmemx_barrier_all_on_stream, nvshmemx_sync_all_on_stream.
 *
 * Each outermost call is one CT_REC_NCCL record written by the NCCL op
 * path (ct_nccl_op_enter/leave, shim/nccl.c), so every NCCL analysis takes
 * it; its dtype field carries CT_NCCL_DTYPE_NVSHMEM with the NVSHMEM type
 * (include/cutrace/format.h, version 7), so nothing calls it NCCL's. Its
 * GPU time is the work NVSHMEM enqueues inside the call on the op's stream
 * (the decoder takes the on-stream kernel launched inside the call, as it
 * takes an ncclDevKernel inside an NCCL call; an event pair in event mode).
 * When NVSHMEM runs the collective through NCCL, NCCL's calls inside ours
 * are not recorded (depth > 0) and its kernel is this op's.
 *
 * The team is the communicator: its rank and size are NVSHMEM's own
 * (nvshmem_team_my_pe, nvshmem_team_n_pes, resolved once and called
 * directly, never through our exports). Its hash must be the same on every
 * member with nothing exchanged: it is derived from the team's handle (a
 * split agrees on the handle's index across the parent team), its size and
 * the world PEs of its ranks 0 and 1 (two teams sharing a handle index on
 * different PEs, the halves of a split, differ in those). Registered on the
 * team's first recorded op; nvshmem_team_destroy bumps a generation so a
 * handle reused for a new team is registered afresh.
 *
 * The wrappers are generated from CT_SHMEM_TYPES (include/cutrace/
 * shmem_types.h): NVSHMEM's own type lists, one per collective family.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

#include <cutrace/shmem_types.h>

#include "shim/dlsym_real.h"
#include "shim/nccl_int.h"
#include "shim/nvshmem.h"

typedef int ct_shmem_team_t; /* nvshmem_team_t */
CT_EXPORT void nvshmem_team_destroy(ct_shmem_team_t team);

/* NVSHMEMX_ERROR_INTERNAL (nvshmemx_status.h): our wrapper was called but
 * no NVSHMEM is in the process. */
#define CT_SHMEM_ERR 7
/* NVSHMEM_TEAM_WORLD's handle. */
#define CT_SHMEM_TEAM_WORLD 0

typedef int (*coll_fn)(ct_shmem_team_t, void *, const void *, size_t, cudaStream_t);
typedef int (*bcast_fn)(ct_shmem_team_t, void *, const void *, size_t, int, cudaStream_t);
typedef int (*team_fn)(ct_shmem_team_t, cudaStream_t);
typedef void (*all_fn)(cudaStream_t);
typedef int (*team_int_fn)(ct_shmem_team_t);
typedef int (*translate_fn)(ct_shmem_team_t, int, ct_shmem_team_t);
typedef void (*destroy_fn)(ct_shmem_team_t);

/* ------------------------------------------------------ real functions */

/* A lookup that found nothing: never tried again. */
#define CT_SHMEM_NONE ((void *)1)

/* The real function of `name`: after us (RTLD_NEXT), else in a loaded
 * libnvshmem_host (never loads one). Looked up once per slot, failure
 * included; errno preserved. */
static void *shmem_real(const char *name, void *_Atomic *slot)
{
    void *p = atomic_load_explicit(slot, memory_order_acquire);
    if (__builtin_expect(p != NULL, 1))
        return p == CT_SHMEM_NONE ? NULL : p;
    CT_ERRNO_SAVE;
    int guard = ct_tls_guard;
    ct_tls_guard = 1;
    p = ct_dlsym_real(RTLD_NEXT, name);
    if (!p) {
        void *h = dlopen("libnvshmem_host.so.3", RTLD_LAZY | RTLD_NOLOAD);
        if (!h)
            h = dlopen("libnvshmem_host.so", RTLD_LAZY | RTLD_NOLOAD);
        p = h ? ct_dlsym_real(h, name) : NULL;
    }
    ct_tls_guard = guard;
    CT_ERRNO_RESTORE;
    atomic_store_explicit(slot, p ? p : CT_SHMEM_NONE, memory_order_release);
    return p;
}

#define REAL(type, name)                                                                           \
    __extension__({                                                                                \
        static void *_Atomic slot_;                                                                \
        (type) ct_fn(shmem_real(name, &slot_));                                                    \
    })

/* NVSHMEM in the process (our own exports excluded): a definition after
 * us or a loaded libnvshmem_host. */
static int shmem_present(const char *name)
{
    CT_ERRNO_SAVE;
    int guard = ct_tls_guard;
    ct_tls_guard = 1;
    int found = ct_dlsym_real(RTLD_NEXT, name) != NULL;
    if (!found) {
        void *h = dlopen("libnvshmem_host.so.3", RTLD_LAZY | RTLD_NOLOAD);
        if (!h)
            h = dlopen("libnvshmem_host.so", RTLD_LAZY | RTLD_NOLOAD);
        found = h != NULL;
    }
    ct_tls_guard = guard;
    CT_ERRNO_RESTORE;
    return found;
}

CT_NO_SANITIZE int ct_shmem_probe_fails(const char *name, void *p)
{
    if (strncmp(name, "nvshmem", 7) != 0)
        return 0;
    Dl_info a, b;
    void *self = ct_fn_addr((ct_voidfn)nvshmem_team_destroy);
    if (!dladdr(p, &a) || !dladdr(self, &b) || a.dli_fbase != b.dli_fbase)
        return 0; /* NVSHMEM's own definition (or another library's) */
    return !shmem_present(name);
}

/* ------------------------------------------------------------- teams */

#define CT_SHMEM_TEAMS 64
static _Atomic uint32_t team_gen[CT_SHMEM_TEAMS];

/* The registry key of a team: not a pointer any process can hold (user
 * space addresses have their top bits clear), with the handle's
 * generation. */
static ncclComm_t team_key(ct_shmem_team_t team)
{
    uint32_t gen = team >= 0 && team < CT_SHMEM_TEAMS
                       ? atomic_load_explicit(&team_gen[team], memory_order_relaxed)
                       : 0;
    return (ncclComm_t)(uintptr_t)(0xC75E000000000000ull | (uint64_t)(gen & 0xffff) << 32 |
                                   (uint32_t)team);
}

/* The team's registered communicator, registering it on first use (the
 * caller holds no guard and is recording or paused). NULL when NVSHMEM
 * cannot say (not a member, no team functions): recorded with hash 0. */
static struct ct_nccl_comm *team_comm(ct_shmem_team_t team, cudaStream_t stream)
{
    ncclComm_t key = team_key(team);
    struct ct_nccl_comm *cm = ct_nccl_comm_get(key);
    if (__builtin_expect(cm != NULL, 1) || !ct_shim_live())
        return cm;
    team_int_fn my_pe = REAL(team_int_fn, "nvshmem_team_my_pe");
    team_int_fn n_pes = REAL(team_int_fn, "nvshmem_team_n_pes");
    translate_fn tr = REAL(translate_fn, "nvshmem_team_translate_pe");
    if (!my_pe || !n_pes || !tr)
        return NULL;
    CT_ERRNO_SAVE;
    ct_tls_guard = 1; /* NVSHMEM's getters make no CUDA call; none recorded if they did */
    int me = my_pe(team), n = n_pes(team);
    int w0 = n > 0 ? tr(team, 0, CT_SHMEM_TEAM_WORLD) : -1;
    int w1 = n > 1 ? tr(team, 1, CT_SHMEM_TEAM_WORLD) : -1;
    int dev = -1;
    ct_stream_id((CUstream)stream, 0, &dev);
    ct_tls_guard = 0;
    if (me >= 0 && n > 0) {
        uint64_t h = ct_nccl_hash_bytes("nvshmem", 7, 0);
        h = ct_nccl_hash_mix(h, (uint64_t)(uint32_t)team);
        h = ct_nccl_hash_mix(h, (uint64_t)n);
        h = ct_nccl_hash_mix(h, (uint64_t)(uint32_t)w0);
        h = ct_nccl_hash_mix(h, (uint64_t)(uint32_t)w1);
        cm = ct_nccl_comm_add(key, h, me, n, dev);
    }
    CT_ERRNO_RESTORE;
    return cm;
}

CT_EXPORT void nvshmem_team_destroy(ct_shmem_team_t team)
{
    destroy_fn real = REAL(destroy_fn, "nvshmem_team_destroy");
    if (team >= 0 && team < CT_SHMEM_TEAMS)
        atomic_fetch_add_explicit(&team_gen[team], 1, memory_order_relaxed);
    if (real)
        real(team);
}

/* ------------------------------------------------------------- calls */

static const uint8_t type_size[CT_SHMEM_T_COUNT] = {
#define TYPE_SIZE(name, size, kind) [CT_SHMEM_T_##name] = size,
    CT_SHMEM_TYPES(TYPE_SIZE)
#undef TYPE_SIZE
};

static void begin(struct ct_nccl_opcall *c, const char *api, _Atomic uint32_t *api_id, unsigned op,
                  uint64_t count, unsigned type, int redop, int root, ct_shmem_team_t team,
                  cudaStream_t stream)
{
    c->api = api;
    c->api_id = api_id;
    struct ct_nccl_comm *cm =
        ct_nccl_tls()->depth == 0 && !ct_tls_guard ? team_comm(team, stream) : NULL;
    uint64_t esize = op == CT_NCCL_OP_COUNT ? 0 : type_size[type];
    /* the caller's errno reaches the real call (a barrier leaves it be) */
    CT_ERRNO_SAVE;
    ct_nccl_op_enter(c, op, count, CT_NCCL_DTYPE_NVSHMEM | type, esize, redop, root, -1, cm,
                     stream);
    CT_ERRNO_RESTORE;
}

static int coll(coll_fn real, const char *api, _Atomic uint32_t *id, unsigned op, unsigned type,
                int redop, ct_shmem_team_t team, void *d, const void *s, size_t n, cudaStream_t st)
{
    if (!real)
        return CT_SHMEM_ERR;
    struct ct_nccl_opcall c;
    begin(&c, api, id, op, n, type, redop, -1, team, st);
    int r = real(team, d, s, n, st);
    ct_nccl_op_leave(&c, r != 0);
    return r;
}

static int bcast(bcast_fn real, const char *api, _Atomic uint32_t *id, unsigned type,
                 ct_shmem_team_t team, void *d, const void *s, size_t n, int root, cudaStream_t st)
{
    if (!real)
        return CT_SHMEM_ERR;
    struct ct_nccl_opcall c;
    begin(&c, api, id, CT_NCCL_OP_BROADCAST, n, type, -1, root, team, st);
    int r = real(team, d, s, n, root, st);
    ct_nccl_op_leave(&c, r != 0);
    return r;
}

static int sync_op(team_fn real, const char *api, _Atomic uint32_t *id, ct_shmem_team_t team,
                   cudaStream_t st)
{
    if (!real)
        return CT_SHMEM_ERR;
    struct ct_nccl_opcall c;
    begin(&c, api, id, CT_NCCL_OP_COUNT, 0, CT_SHMEM_T_mem, -1, -1, team, st);
    int r = real(team, st);
    ct_nccl_op_leave(&c, r != 0);
    return r;
}

static void sync_all(all_fn real, const char *api, _Atomic uint32_t *id, cudaStream_t st)
{
    if (!real)
        return;
    struct ct_nccl_opcall c;
    begin(&c, api, id, CT_NCCL_OP_COUNT, 0, CT_SHMEM_T_mem, -1, -1, CT_SHMEM_TEAM_WORLD, st);
    real(st);
    ct_nccl_op_leave(&c, 0);
}

/* ---------------------------------------------------------- wrappers */

#define API_ID static _Atomic uint32_t id_

#define COLL_WRAP(fname, op, type, redop)                                                          \
    CT_EXPORT int fname(ct_shmem_team_t team, void *d, const void *s, size_t n, cudaStream_t st)   \
    {                                                                                              \
        API_ID;                                                                                    \
        return coll(REAL(coll_fn, #fname), #fname, &id_, op, type, redop, team, d, s, n, st);      \
    }
#define BCAST_WRAP(fname, type)                                                                    \
    CT_EXPORT int fname(ct_shmem_team_t team, void *d, const void *s, size_t n, int root,          \
                        cudaStream_t st)                                                           \
    {                                                                                              \
        API_ID;                                                                                    \
        return bcast(REAL(bcast_fn, #fname), #fname, &id_, type, team, d, s, n, root, st);         \
    }

/* every type: alltoall, fcollect, broadcast */
#define RMA_WRAPS(name)                                                                            \
    COLL_WRAP(nvshmemx_##name##_alltoall_on_stream, CT_NCCL_OP_ALLTOALL, CT_SHMEM_T_##name, -1)    \
    COLL_WRAP(nvshmemx_##name##_fcollect_on_stream, CT_NCCL_OP_ALLGATHER, CT_SHMEM_T_##name, -1)   \
    BCAST_WRAP(nvshmemx_##name##_broadcast_on_stream, CT_SHMEM_T_##name)
#define RED_WRAPS(name, op)                                                                        \
    COLL_WRAP(nvshmemx_##name##_##op##_reduce_on_stream, CT_NCCL_OP_ALLREDUCE, CT_SHMEM_T_##name,  \
              CT_SHMEM_OP_##op)                                                                    \
    COLL_WRAP(nvshmemx_##name##_##op##_reducescatter_on_stream, CT_NCCL_OP_REDUCESCATTER,          \
              CT_SHMEM_T_##name, CT_SHMEM_OP_##op)
#define STD_WRAPS(name)                                                                            \
    RED_WRAPS(name, min) RED_WRAPS(name, max) RED_WRAPS(name, sum) RED_WRAPS(name, prod)
#define BIT_WRAPS(name) RED_WRAPS(name, and) RED_WRAPS(name, or) RED_WRAPS(name, xor)
/* by kind (shmem_types.h); "mem" is no TYPENAME: its three are below */
#define KIND_M(name)
#define KIND_R(name)                 RMA_WRAPS(name)
#define KIND_S(name)                 RMA_WRAPS(name) STD_WRAPS(name)
#define KIND_B(name)                 RMA_WRAPS(name) STD_WRAPS(name) BIT_WRAPS(name)
#define TYPE_WRAPS(name, size, kind) KIND_##kind(name)

CT_SHMEM_TYPES(TYPE_WRAPS)

COLL_WRAP(nvshmemx_alltoallmem_on_stream, CT_NCCL_OP_ALLTOALL, CT_SHMEM_T_mem, -1)
COLL_WRAP(nvshmemx_fcollectmem_on_stream, CT_NCCL_OP_ALLGATHER, CT_SHMEM_T_mem, -1)
BCAST_WRAP(nvshmemx_broadcastmem_on_stream, CT_SHMEM_T_mem)

CT_EXPORT int nvshmemx_barrier_on_stream(ct_shmem_team_t team, cudaStream_t st)
{
    API_ID;
    return sync_op(REAL(team_fn, "nvshmemx_barrier_on_stream"), "nvshmemx_barrier_on_stream", &id_,
                   team, st);
}

CT_EXPORT int nvshmemx_team_sync_on_stream(ct_shmem_team_t team, cudaStream_t st)
{
    API_ID;
    return sync_op(REAL(team_fn, "nvshmemx_team_sync_on_stream"), "nvshmemx_team_sync_on_stream",
                   &id_, team, st);
}

CT_EXPORT void nvshmemx_barrier_all_on_stream(cudaStream_t st)
{
    API_ID;
    sync_all(REAL(all_fn, "nvshmemx_barrier_all_on_stream"), "nvshmemx_barrier_all_on_stream", &id_,
             st);
}

CT_EXPORT void nvshmemx_sync_all_on_stream(cudaStream_t st)
{
    API_ID;
    sync_all(REAL(all_fn, "nvshmemx_sync_all_on_stream"), "nvshmemx_sync_all_on_stream", &id_, st);
}
