/*
 * An NVSHMEM job on the simulated device (tests/nvshmem/check_shmem.py,
 * docs/nccl.md "Communication kernels"): `w_shmem launch N` starts N PE
 * processes (`w_shmem pe R N`, with RANK, LOCAL_RANK, WORLD_SIZE and the
 * fake NVSHMEM's FAKEGPU_NVSHMEM_PE/NPES set) and waits for them.
 *
 * Each PE splits the world into its even and odd PEs (two strided teams,
 * every PE making both splits in the same order, as NVSHMEM requires),
 * then runs W_SHMEM_STEPS steps (default 4), each on one stream:
 *   compute   w_compute__<W_SHMEM_COMPUTE_US>us (default 30000)
 *   reduce    nvshmemx_float_sum_reduce_on_stream(world, W_SHMEM_NR floats)
 *             (default 4194304: 16 MiB), with a side kernel
 *             w_side__<W_SHMEM_SIDE_US>us (default 2000) on a second stream
 *             that waits for an event recorded after the compute kernel, so
 *             it starts with the reduction
 *   alltoall  nvshmemx_float_alltoall_on_stream(world, W_SHMEM_NA per PE)
 *             (default 262144: 1 MiB per PE)
 *   bcast     nvshmemx_float_broadcast_on_stream(own half, W_SHMEM_NB, root 0)
 *             (default 524288: 2 MiB)
 *   barrier   nvshmemx_barrier_on_stream(world)
 * then synchronises; then destroys both halves' teams and splits the world
 * into its first and second half (which reuse their handles), and runs one
 * more broadcast of W_SHMEM_NB floats on its half. After every NVSHMEM call
 * errno must be what the library left (EIO after a collective; after the
 * barrier the job's own ENOTTY, which the fake leaves alone): a wrapper that
 * clobbered it fails the job (exit 4). Built twice: linked with
 * libnvshmem_host, and (CT_DLOPEN) calling the collectives through dlsym on
 * the library's handle, which no preloaded wrapper sees (NVSHMEM's kernels
 * then run with no host call recorded).
 */
#include <cuda.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef int team_t;
typedef struct CUstream_st *cudaStream_t;
typedef int (*coll_fn)(team_t, void *, const void *, size_t, cudaStream_t);
typedef int (*bcast_fn)(team_t, void *, const void *, size_t, int, cudaStream_t);
typedef int (*sync_fn)(team_t, cudaStream_t);
typedef int (*init_fn)(void);
typedef void (*fini_fn)(void);
typedef void (*destroy_fn)(team_t);
typedef int (*split_fn)(team_t, int, int, int, const void *, long, team_t *);

int nvshmem_init(void);
void nvshmem_finalize(void);
int nvshmem_team_split_strided(team_t, int, int, int, const void *, long, team_t *);
void nvshmem_team_destroy(team_t);
/* float * in NVSHMEM's header: the same ABI */
int nvshmemx_float_sum_reduce_on_stream(team_t, void *, const void *, size_t, cudaStream_t);
int nvshmemx_float_alltoall_on_stream(team_t, void *, const void *, size_t, cudaStream_t);
int nvshmemx_float_broadcast_on_stream(team_t, void *, const void *, size_t, int, cudaStream_t);
int nvshmemx_barrier_on_stream(team_t, cudaStream_t);

#ifdef CT_DLOPEN
#include <dlfcn.h>
typedef void (*any_fn)(void);
static any_fn sym(const char *name)
{
    static void *h;
    if (!h)
        h = dlopen("libnvshmem_host.so.3", RTLD_NOW | RTLD_LOCAL);
    void *p = h ? dlsym(h, name) : NULL;
    if (!p) {
        fprintf(stderr, "w_shmem: no %s\n", name);
        exit(3);
    }
    any_fn f;
    memcpy(&f, &p, sizeof(f)); /* POSIX: dlsym results are callable */
    return f;
}
#define SHMEM(name, type) ((type)sym(#name))
#else
#define SHMEM(name, type) name
#endif

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        CUresult r_ = (x);                                                                         \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            fprintf(stderr, "w_shmem: %s: %d\n", #x, (int)r_);                                     \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

/* An NVSHMEM call, errno `pre` before it: succeeds and leaves errno
 * `want`, what the library left (the fake: EIO after a sized collective,
 * untouched by a barrier). */
#define SHMEM_CALL_ERRNO(x, pre, want)                                                             \
    do {                                                                                           \
        errno = (pre);                                                                             \
        int r_ = (x);                                                                              \
        if (r_ != 0) {                                                                             \
            fprintf(stderr, "w_shmem: %s: %d\n", #x, r_);                                          \
            exit(2);                                                                               \
        }                                                                                          \
        if (errno != (want)) {                                                                     \
            fprintf(stderr, "w_shmem: errno after %s: %d, not %d\n", #x, errno, (want));           \
            exit(4);                                                                               \
        }                                                                                          \
    } while (0)
#define SHMEM_CALL(x) SHMEM_CALL_ERRNO(x, 0, EIO)

static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v && *v ? atol(v) : dflt;
}

static CUfunction fn(CUmodule m, const char *name)
{
    CUfunction f;
    CHECK(cuModuleGetFunction(&f, m, name));
    return f;
}

static int pe_main(int pe, int npes)
{
    long steps = env_long("W_SHMEM_STEPS", 4), compute = env_long("W_SHMEM_COMPUTE_US", 30000);
    long side = env_long("W_SHMEM_SIDE_US", 2000);
    size_t nr = (size_t)env_long("W_SHMEM_NR", 4194304);
    size_t na = (size_t)env_long("W_SHMEM_NA", 262144);
    size_t nb = (size_t)env_long("W_SHMEM_NB", 524288);
    CUdevice dev;
    CUcontext ctx;
    CUmodule m;
    CUstream s, s2;
    CUevent ev;
    CUdeviceptr buf;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoadData(&m, "image"));
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CHECK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    CHECK(cuMemAlloc(&buf, 1 << 20));
    float *d = (float *)(uintptr_t)buf;
    if (SHMEM(nvshmem_init, init_fn)() != 0)
        return 2;
    team_t even = -1, odd = -1;
    SHMEM(nvshmem_team_split_strided, split_fn)(0, 0, 2, (npes + 1) / 2, NULL, 0, &even);
    SHMEM(nvshmem_team_split_strided, split_fn)(0, 1, 2, npes / 2, NULL, 0, &odd);
    team_t half = pe % 2 ? odd : even;
    char cname[64], sname[64];
    snprintf(cname, sizeof(cname), "w_compute__%ldus", compute);
    snprintf(sname, sizeof(sname), "w_side__%ldus", side);
    for (long k = 0; k < steps; k++) {
        CHECK(cuLaunchKernel(fn(m, cname), 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
        CHECK(cuEventRecord(ev, s));
        CHECK(cuStreamWaitEvent(s2, ev, 0));
        CHECK(cuLaunchKernel(fn(m, sname), 1, 1, 1, 32, 1, 1, 0, s2, NULL, NULL));
        SHMEM_CALL(
            SHMEM(nvshmemx_float_sum_reduce_on_stream, coll_fn)(0, d, d, nr, (cudaStream_t)s));
        SHMEM_CALL(SHMEM(nvshmemx_float_alltoall_on_stream, coll_fn)(0, d, d, na, (cudaStream_t)s));
        SHMEM_CALL(SHMEM(nvshmemx_float_broadcast_on_stream, bcast_fn)(half, d, d, nb, 0,
                                                                       (cudaStream_t)s));
        SHMEM_CALL_ERRNO(SHMEM(nvshmemx_barrier_on_stream, sync_fn)(0, (cudaStream_t)s), ENOTTY,
                         ENOTTY);
        CHECK(cuStreamSynchronize(s));
        CHECK(cuStreamSynchronize(s2));
    }
    /* handles reused: both halves destroyed (by every PE, as the fake
     * wants), then the world split into its first and second half, which
     * take handles 1 and 2 again, and one more broadcast on each PE's */
    SHMEM(nvshmem_team_destroy, destroy_fn)(1);
    SHMEM(nvshmem_team_destroy, destroy_fn)(2);
    team_t first = -1, second = -1;
    SHMEM(nvshmem_team_split_strided, split_fn)(0, 0, 1, npes / 2, NULL, 0, &first);
    SHMEM(nvshmem_team_split_strided, split_fn)(0, npes / 2, 1, npes - npes / 2, NULL, 0, &second);
    SHMEM_CALL(SHMEM(nvshmemx_float_broadcast_on_stream, bcast_fn)(pe < npes / 2 ? first : second,
                                                                   d, d, nb, 0, (cudaStream_t)s));
    CHECK(cuStreamSynchronize(s));
    SHMEM(nvshmem_finalize, fini_fn)();
    return 0;
}

static int launch(const char *self, int n)
{
    pid_t pids[16];
    if (n < 1 || n > 16)
        return 2;
    for (int r = 0; r < n; r++) {
        char rs[16], ns[16];
        snprintf(rs, sizeof(rs), "%d", r);
        snprintf(ns, sizeof(ns), "%d", n);
        pids[r] = fork();
        if (pids[r] == 0) {
            setenv("RANK", rs, 1);
            setenv("LOCAL_RANK", rs, 1);
            setenv("WORLD_SIZE", ns, 1);
            setenv("FAKEGPU_NVSHMEM_PE", rs, 1);
            setenv("FAKEGPU_NVSHMEM_NPES", ns, 1);
            execl(self, self, "pe", rs, ns, (char *)NULL);
            _exit(127);
        }
    }
    int rc = 0;
    for (int r = 0; r < n; r++) {
        int st;
        if (waitpid(pids[r], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
            rc = 1;
    }
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "launch"))
        return launch(argv[0], atoi(argv[2]));
    if (argc == 4 && !strcmp(argv[1], "pe"))
        return pe_main(atoi(argv[2]), atoi(argv[3]));
    fprintf(stderr, "usage: w_shmem launch N | pe R N\n");
    return 2;
}
