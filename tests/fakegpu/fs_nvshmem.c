/*
 * Fake NVSHMEM host library (libnvshmem_host.so.3) on the simulated
 * driver: the PE layout, teams, and the on-stream collectives, each a
 * kernel on the given stream, named as NVSHMEM names its on-stream kernels
 * (decoder/util/comm_kernels.c's patterns) and lasting what a bus
 * bandwidth model says (README.md, "Fake NVSHMEM"). No data moves and the
 * PEs do not meet: each PE's kernel lasts the model's time.
 *
 * Every typed collective is generated from CT_SHMEM_TYPES
 * (include/cutrace/shmem_types.h, NVSHMEM's own type lists), the same
 * table the shim's wrappers come from.
 */
#include <cuda.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cutrace/shmem_types.h>

#define EXPORT       __attribute__((visibility("default")))
#define TEAM_WORLD   0
#define TEAM_INVALID (-1)
#define MAX_TEAMS    32

typedef int team_t;
typedef struct CUstream_st *cudaStream_t;

struct team {
    int used, start, stride, size;
};

static int g_pe = -1, g_npes;
static struct team g_teams[MAX_TEAMS];
static CUmodule g_mod;

static double env_double(const char *name, double dflt)
{
    const char *v = getenv(name);
    char *end;
    double d = v && *v ? strtod(v, &end) : dflt;
    return v && *v && (*end || !(d >= 0)) ? dflt : d;
}

static void init_once(void)
{
    if (g_pe >= 0)
        return;
    g_pe = (int)env_double("FAKEGPU_NVSHMEM_PE", 0);
    g_npes = (int)env_double("FAKEGPU_NVSHMEM_NPES", 1);
    if (g_npes < 1)
        g_npes = 1;
    g_teams[TEAM_WORLD] = (struct team){1, 0, 1, g_npes};
}

EXPORT int nvshmem_init(void)
{
    init_once();
    return 0;
}

EXPORT void nvshmem_finalize(void)
{
}

EXPORT int nvshmem_my_pe(void)
{
    init_once();
    return g_pe;
}

EXPORT int nvshmem_n_pes(void)
{
    init_once();
    return g_npes;
}

static const struct team *team_of(team_t t)
{
    init_once();
    return t >= 0 && t < MAX_TEAMS && g_teams[t].used ? &g_teams[t] : NULL;
}

/* This PE's rank in the team, -1 when not a member. */
static int rank_in(const struct team *tm, int pe)
{
    int d = pe - tm->start;
    if (d < 0 || d % tm->stride || d / tm->stride >= tm->size)
        return -1;
    return d / tm->stride;
}

EXPORT int nvshmem_team_my_pe(team_t t)
{
    const struct team *tm = team_of(t);
    return tm ? rank_in(tm, g_pe) : -1;
}

EXPORT int nvshmem_team_n_pes(team_t t)
{
    const struct team *tm = team_of(t);
    return tm ? tm->size : -1;
}

EXPORT int nvshmem_team_translate_pe(team_t src, int pe, team_t dst)
{
    const struct team *a = team_of(src), *b = team_of(dst);
    if (!a || !b || pe < 0 || pe >= a->size)
        return -1;
    return rank_in(b, a->start + pe * a->stride);
}

/* Collective over the parent in NVSHMEM; here every PE makes the same
 * splits and destroys in the same order, so the handle (the lowest one
 * free) is the same on every PE, as NVSHMEM's agreement gives. */
EXPORT int nvshmem_team_split_strided(team_t parent, int start, int stride, int size,
                                      const void *config, long mask, team_t *new_team)
{
    (void)config;
    (void)mask;
    const struct team *p = team_of(parent);
    if (!new_team)
        return 1;
    *new_team = TEAM_INVALID;
    team_t h = 1;
    while (h < MAX_TEAMS && g_teams[h].used)
        h++;
    if (!p || size < 1 || stride < 1 || start < 0 || start + (size - 1) * stride >= p->size ||
        h == MAX_TEAMS)
        return 1;
    g_teams[h] = (struct team){1, p->start + start * p->stride, p->stride * stride, size};
    if (rank_in(&g_teams[h], g_pe) >= 0)
        *new_team = h;
    return 0;
}

/* Frees the handle for the next split (every PE calls it, members or not:
 * the fake's PEs keep every team, so all must free it alike). */
EXPORT void nvshmem_team_destroy(team_t t)
{
    if (t > TEAM_WORLD && t < MAX_TEAMS)
        g_teams[t].used = 0;
}

/*
 * The model: an op moving B bytes over n PEs lasts LAT + B x f / BW, f its
 * bus factor as nccl-tests counts it (a reduction 2(n-1)/n, alltoall,
 * fcollect and reducescatter (n-1)/n of n x the per-PE count, broadcast 1),
 * so its busbw is exactly FAKEGPU_NET_GBPS (up to the whole-ns duration).
 * A barrier or sync lasts LAT + 1 us.
 */
static int launch(const char *kind, double bus_bytes, cudaStream_t stream)
{
    double gbps = env_double("FAKEGPU_NET_GBPS", 100);
    double lat_ns = env_double("FAKEGPU_NVSHMEM_LAT_US", 0) * 1e3;
    if (!(gbps > 0))
        gbps = 100;
    uint64_t ns = (uint64_t)llround(lat_ns + (bus_bytes > 0 ? bus_bytes / gbps : 1000));
    int caller_errno = errno;
    if (!g_mod && cuModuleLoadData(&g_mod, "nvshmem") != CUDA_SUCCESS)
        return 7;
    char name[128];
    snprintf(name, sizeof(name), "%s_on_stream_kernel__%lluns", kind, (unsigned long long)ns);
    CUfunction f;
    if (cuModuleGetFunction(&f, g_mod, name) != CUDA_SUCCESS ||
        cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, (CUstream)stream, NULL, NULL) != CUDA_SUCCESS)
        return 7;
    /* a library may leave errno set, or leave it alone: the tests check
     * that a wrapper around the call hands the caller what the library
     * left (EIO after a sized collective; a barrier's or sync's caller's
     * own errno) */
    errno = bus_bytes > 0 ? EIO : caller_errno;
    return 0;
}

static int coll(const char *kind, team_t t, size_t bytes, double factor, cudaStream_t st)
{
    const struct team *tm = team_of(t);
    if (!tm || rank_in(tm, g_pe) < 0)
        return 1;
    return launch(kind, (double)bytes * factor, st);
}

static double ring(const struct team *tm, double k)
{
    return tm && tm->size > 0 ? k * (tm->size - 1) / tm->size : 0;
}

#define NPES(t) (team_of(t) ? (size_t)team_of(t)->size : 0)

#define TYPED_COLLS(name, size, kind) TYPED_##kind(name, size)
#define TYPED_M(name, size)
#define TYPED_R(name, size) RMA(name, size)
#define TYPED_S(name, size) RMA(name, size) STD(name, size)
#define TYPED_B(name, size) RMA(name, size) STD(name, size) BIT(name, size)

#define RMA(name, size)                                                                            \
    EXPORT int nvshmemx_##name##_alltoall_on_stream(team_t t, void *d, const void *s, size_t n,    \
                                                    cudaStream_t st)                               \
    {                                                                                              \
        (void)d, (void)s;                                                                          \
        return coll("nvshmemi_alltoall_" #name, t, n * size * NPES(t), ring(team_of(t), 1), st);   \
    }                                                                                              \
    EXPORT int nvshmemx_##name##_fcollect_on_stream(team_t t, void *d, const void *s, size_t n,    \
                                                    cudaStream_t st)                               \
    {                                                                                              \
        (void)d, (void)s;                                                                          \
        return coll("nvshmemi_fcollect_" #name, t, n * size * NPES(t), ring(team_of(t), 1), st);   \
    }                                                                                              \
    EXPORT int nvshmemx_##name##_broadcast_on_stream(team_t t, void *d, const void *s, size_t n,   \
                                                     int root, cudaStream_t st)                    \
    {                                                                                              \
        (void)d, (void)s;                                                                          \
        if (root < 0 || (size_t)root >= NPES(t))                                                   \
            return 1;                                                                              \
        return coll("nvshmemi_broadcast_" #name, t, n * size, 1, st);                              \
    }
#define RED(name, size, op)                                                                        \
    EXPORT int nvshmemx_##name##_##op##_reduce_on_stream(team_t t, void *d, const void *s,         \
                                                         size_t n, cudaStream_t st)                \
    {                                                                                              \
        (void)d, (void)s;                                                                          \
        return coll("nvshmemi_" #name "_" #op "_rdxn", t, n * size, ring(team_of(t), 2), st);      \
    }                                                                                              \
    EXPORT int nvshmemx_##name##_##op##_reducescatter_on_stream(team_t t, void *d, const void *s,  \
                                                                size_t n, cudaStream_t st)         \
    {                                                                                              \
        (void)d, (void)s;                                                                          \
        return coll("nvshmemi_" #name "_" #op "_reducescatter", t, n * size * NPES(t),             \
                    ring(team_of(t), 1), st);                                                      \
    }
#define STD(name, size)                                                                            \
    RED(name, size, min) RED(name, size, max) RED(name, size, sum) RED(name, size, prod)
#define BIT(name, size) RED(name, size, and) RED(name, size, or) RED(name, size, xor)

CT_SHMEM_TYPES(TYPED_COLLS)

EXPORT int nvshmemx_alltoallmem_on_stream(team_t t, void *d, const void *s, size_t n,
                                          cudaStream_t st)
{
    (void)d, (void)s;
    return coll("nvshmemi_alltoall_mem", t, n * NPES(t), ring(team_of(t), 1), st);
}

EXPORT int nvshmemx_fcollectmem_on_stream(team_t t, void *d, const void *s, size_t n,
                                          cudaStream_t st)
{
    (void)d, (void)s;
    return coll("nvshmemi_fcollect_mem", t, n * NPES(t), ring(team_of(t), 1), st);
}

EXPORT int nvshmemx_broadcastmem_on_stream(team_t t, void *d, const void *s, size_t n, int root,
                                           cudaStream_t st)
{
    (void)d, (void)s;
    if (root < 0 || (size_t)root >= NPES(t))
        return 1;
    return coll("nvshmemi_broadcast_mem", t, n, 1, st);
}

EXPORT int nvshmemx_barrier_on_stream(team_t t, cudaStream_t st)
{
    return coll("nvshmemi_barrier", t, 0, 0, st);
}

EXPORT int nvshmemx_team_sync_on_stream(team_t t, cudaStream_t st)
{
    return coll("nvshmemi_sync", t, 0, 0, st);
}

EXPORT void nvshmemx_barrier_all_on_stream(cudaStream_t st)
{
    coll("nvshmemi_barrier_all", TEAM_WORLD, 0, 0, st);
}

EXPORT void nvshmemx_sync_all_on_stream(cudaStream_t st)
{
    coll("nvshmemi_sync_all", TEAM_WORLD, 0, 0, st);
}
