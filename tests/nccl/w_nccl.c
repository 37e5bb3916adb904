/*
 * A multi-process NCCL job on the simulated device, launched like torchrun
 * does: `w_nccl launch N MODE` makes a unique id, then starts N rank
 * processes (`w_nccl rank R N IDHEX MODE`, with RANK, LOCAL_RANK and
 * WORLD_SIZE set) and waits for them. Built twice: linked with libnccl, and
 * (CT_DLOPEN) finding every NCCL function with dlopen + dlsym as JAX and
 * vLLM do.
 *
 * Modes (the schedule the tests check against):
 *   mix    every collective once, with its own count and datatype, then a
 *          grouped ring Send/Recv, then a group fusing two AllReduces:
 *            0 AllReduce     262144 x float32 sum     (1 MiB)
 *            1 Broadcast       1000 x int32   root 0
 *            2 Bcast           4096 x int8    root 1 % N
 *            3 Reduce          3000 x float64 max root 0
 *            4 AllGather       2048 x float16 (per rank)
 *            5 ReduceScatter   1024 x bfloat16 sum (per rank)
 *            6 AlltoAll         512 x int64 (per peer)
 *            7 Gather           256 x uint8 root 0
 *            8 Scatter          128 x uint32 root 0
 *            group: Send 4096 x float32 to r+1, Recv 4096 x float32 from r-1
 *            group: 9 AllReduce 100 x float32, 10 AllReduce 200 x float32
 *   late   rank 1 sleeps 30 ms, then every rank runs one AllReduce of
 *          65536 x float32; the other ranks' kernels wait for rank 1
 *   split  ncclCommSplit(color = rank % 2), one AllReduce of 1024 x float32
 *          on the new communicator
 * `w_nccl mpi DIR MODE` is one rank of the same job started by mpirun.
 *   steps  (mpi only) steps until the job is killed: step k is an AllReduce
 *          of 1024 x float32 and a synchronize, then the line "k" appended
 *          to DIR/side-R (so a step in the side file was recorded before);
 *          after its first step the rank writes its pid to DIR/pid-R
 *
 *   hang   an AllReduce of 1024 x float32 on every rank, then rank 1 sleeps
 *          3 s before the second one, which the others wait in (a hang, for
 *          the flight recorder and CUTRACE_HANG_S); 2 s in, the launcher
 *          sends rank 1 SIGUSR2, as an operator dumping every rank would
 *   hang_quiet  the same without the SIGUSR2: rank 1, which has nothing
 *          pending, writes no window (the culprit is absent from the inputs)
 */
#include <cuda.h>
#include <fcntl.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef CT_DLOPEN
#include <dlfcn.h>
#include <string.h>

typedef void (*any_fn)(void);
static void *g_nccl;
static any_fn fn(const char *name)
{
    if (!g_nccl)
        g_nccl = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    void *p = g_nccl ? dlsym(g_nccl, name) : NULL;
    if (!p) {
        fprintf(stderr, "w_nccl: no %s\n", name);
        exit(3);
    }
    any_fn f;
    memcpy(&f, &p, sizeof(f)); /* POSIX: dlsym results are callable */
    return f;
}
/* every NCCL call below goes through a pointer dlsym returned */
#define NCCL(name, type) ((type)fn(#name))
#else
#define NCCL(name, type) name
#endif

typedef ncclResult_t (*uid_fn)(ncclUniqueId *);
typedef ncclResult_t (*init_fn)(ncclComm_t *, int, ncclUniqueId, int);
typedef ncclResult_t (*coll_fn)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                ncclComm_t, cudaStream_t);
typedef ncclResult_t (*rcoll_fn)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, int,
                                 ncclComm_t, cudaStream_t);
typedef ncclResult_t (*bcast_fn)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*bc_fn)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t,
                              cudaStream_t);
typedef ncclResult_t (*ag_fn)(const void *, void *, size_t, ncclDataType_t, ncclComm_t,
                              cudaStream_t);
typedef ncclResult_t (*send_fn)(const void *, size_t, ncclDataType_t, int, ncclComm_t,
                                cudaStream_t);
typedef ncclResult_t (*recv_fn)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*void_fn)(void);
typedef ncclResult_t (*comm_fn)(ncclComm_t);
typedef ncclResult_t (*split_fn)(ncclComm_t, int, int, ncclComm_t *, ncclConfig_t *);

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        int rc_ = (int)(x);                                                                        \
        if (rc_ != 0) {                                                                            \
            fprintf(stderr, "w_nccl: %s failed: %d\n", #x, rc_);                                   \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

static void hex(const ncclUniqueId *id, char *out)
{
    for (size_t i = 0; i < sizeof(id->internal); i++)
        sprintf(out + 2 * i, "%02x", (unsigned char)id->internal[i]);
}

static void unhex(const char *s, ncclUniqueId *id)
{
    for (size_t i = 0; i < sizeof(id->internal); i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1)
            exit(2);
        id->internal[i] = (char)v;
    }
}

static int launch(const char *self, int n, const char *mode)
{
    ncclUniqueId id;
    CHECK(NCCL(ncclGetUniqueId, uid_fn)(&id));
    char idhex[2 * sizeof(id.internal) + 1];
    hex(&id, idhex);
    pid_t pids[64];
    for (int r = 0; r < n && r < 64; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            char rs[16], ns[16];
            snprintf(rs, sizeof(rs), "%d", r);
            snprintf(ns, sizeof(ns), "%d", n);
            setenv("RANK", rs, 1);
            setenv("LOCAL_RANK", rs, 1);
            setenv("WORLD_SIZE", ns, 1);
            execl(self, self, "rank", rs, ns, idhex, mode, (char *)NULL);
            _exit(127);
        }
    }
    if (!strcmp(mode, "hang") && n > 1) {
        struct timespec t = {2, 0};
        nanosleep(&t, NULL);
        kill(pids[1], SIGUSR2);
    }
    int bad = 0;
    for (int r = 0; r < n && r < 64; r++) {
        int st;
        waitpid(pids[r], &st, 0);
        bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
    return bad;
}

static void mix(ncclComm_t comm, cudaStream_t s, int r, int n, char *a, char *b)
{
    coll_fn allreduce = NCCL(ncclAllReduce, coll_fn);
    CHECK(allreduce(a, b, 262144, ncclFloat32, ncclSum, comm, s));
    CHECK(NCCL(ncclBroadcast, bc_fn)(a, b, 1000, ncclInt32, 0, comm, s));
    CHECK(NCCL(ncclBcast, bcast_fn)(a, 4096, ncclInt8, 1 % n, comm, s));
    CHECK(NCCL(ncclReduce, rcoll_fn)(a, b, 3000, ncclFloat64, ncclMax, 0, comm, s));
    CHECK(NCCL(ncclAllGather, ag_fn)(a, b, 2048, ncclFloat16, comm, s));
    CHECK(NCCL(ncclReduceScatter, coll_fn)(a, b, 1024, ncclBfloat16, ncclSum, comm, s));
    CHECK(NCCL(ncclAlltoAll, ag_fn)(a, b, 512, ncclInt64, comm, s));
    CHECK(NCCL(ncclGather, bc_fn)(a, b, 256, ncclUint8, 0, comm, s));
    CHECK(NCCL(ncclScatter, bc_fn)(a, b, 128, ncclUint32, 0, comm, s));
    CHECK(NCCL(ncclGroupStart, void_fn)());
    CHECK(NCCL(ncclSend, send_fn)(a, 4096, ncclFloat32, (r + 1) % n, comm, s));
    CHECK(NCCL(ncclRecv, recv_fn)(b, 4096, ncclFloat32, (r + n - 1) % n, comm, s));
    CHECK(NCCL(ncclGroupEnd, void_fn)());
    CHECK(NCCL(ncclGroupStart, void_fn)());
    CHECK(allreduce(a, b, 100, ncclFloat32, ncclSum, comm, s));
    CHECK(allreduce(a, b, 200, ncclFloat32, ncclSum, comm, s));
    CHECK(NCCL(ncclGroupEnd, void_fn)());
}

/* side: the folder of mpi's "steps" mode (NULL otherwise) */
static int rank_main(int r, int n, const char *idhex, const char *mode, const char *side)
{
    ncclUniqueId id;
    unhex(idhex, &id);
    CUdevice d;
    CUcontext ctx;
    CUstream s;
    CUdeviceptr a, b;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&d, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, d));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuMemAlloc(&a, 16 << 20));
    CHECK(cuMemAlloc(&b, 16 << 20));
    ncclComm_t comm;
    CHECK(NCCL(ncclCommInitRank, init_fn)(&comm, n, id, r));
    cudaStream_t cs = (cudaStream_t)s;
    char *pa = (char *)(uintptr_t)a, *pb = (char *)(uintptr_t)b;
    if (!strcmp(mode, "mix")) {
        mix(comm, cs, r, n, pa, pb);
    } else if (!strcmp(mode, "late")) {
        if (r == 1) {
            struct timespec t = {0, 30000000L};
            nanosleep(&t, NULL);
        }
        CHECK(NCCL(ncclAllReduce, coll_fn)(pa, pb, 65536, ncclFloat32, ncclSum, comm, cs));
    } else if (!strcmp(mode, "hang") || !strcmp(mode, "hang_quiet")) {
        CHECK(NCCL(ncclAllReduce, coll_fn)(pa, pb, 1024, ncclFloat32, ncclSum, comm, cs));
        CHECK(cuStreamSynchronize(s));
        if (r == 1) { /* all of it: SIGUSR2 interrupts a sleep */
            struct timespec t = {3, 0};
            while (nanosleep(&t, &t) != 0)
                ;
        }
        CHECK(NCCL(ncclAllReduce, coll_fn)(pa, pb, 1024, ncclFloat32, ncclSum, comm, cs));
    } else if (!strcmp(mode, "steps") && side) {
        char path[4200], line[32];
        snprintf(path, sizeof(path), "%s/side-%d", side, r);
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_TRUNC, 0600);
        for (long k = 0; fd >= 0 && k < 1000000; k++) {
            CHECK(NCCL(ncclAllReduce, coll_fn)(pa, pb, 1024, ncclFloat32, ncclSum, comm, cs));
            CHECK(cuStreamSynchronize(s));
            int len = snprintf(line, sizeof(line), "%ld\n", k);
            if (write(fd, line, (size_t)len) != len)
                return 3;
            if (k == 0) {
                snprintf(path, sizeof(path), "%s/pid-%d", side, r);
                FILE *f = fopen(path, "w");
                if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0)
                    return 3;
            }
        }
    } else if (!strcmp(mode, "split")) {
        ncclComm_t sub;
        CHECK(NCCL(ncclCommSplit, split_fn)(comm, r % 2, r, &sub, NULL));
        CHECK(NCCL(ncclAllReduce, coll_fn)(pa, pb, 1024, ncclFloat32, ncclSum, sub, cs));
        CHECK(cuStreamSynchronize(s));
        CHECK(NCCL(ncclCommDestroy, comm_fn)(sub));
    } else {
        fprintf(stderr, "w_nccl: unknown mode %s\n", mode);
        return 2;
    }
    CHECK(cuStreamSynchronize(s));
    CHECK(NCCL(ncclCommDestroy, comm_fn)(comm));
    CHECK(cuMemFree(a));
    CHECK(cuMemFree(b));
    return 0;
}

/*
 * `w_nccl mpi DIR MODE`: one rank started by a real launcher (mpirun, srun):
 * rank and size from Open MPI's environment or Slurm's; rank 0 makes the unique id and
 * publishes it as DIR/nccl-id (written aside, then renamed, so a reader
 * sees all of it or nothing); the others wait up to 30 s for it.
 */
static int mpi_main(const char *dir, const char *mode)
{
    const char *rs = getenv("OMPI_COMM_WORLD_RANK"), *ns = getenv("OMPI_COMM_WORLD_SIZE");
    if (!rs || !ns) { /* srun's tasks */
        rs = getenv("SLURM_PROCID");
        ns = getenv("SLURM_NTASKS");
    }
    if (!rs || !ns) {
        fprintf(stderr, "w_nccl: mpi needs OMPI_COMM_WORLD_RANK and _SIZE (run under mpirun) or "
                        "SLURM_PROCID and SLURM_NTASKS (srun)\n");
        return 2;
    }
    int r = atoi(rs), n = atoi(ns);
    char path[4096], tmp[4200], idhex[2 * sizeof(((ncclUniqueId *)0)->internal) + 1];
    snprintf(path, sizeof(path), "%s/nccl-id", dir);
    if (r == 0) {
        CHECK(cuInit(0));
        ncclUniqueId id;
        CHECK(NCCL(ncclGetUniqueId, uid_fn)(&id));
        hex(&id, idhex);
        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        FILE *f = fopen(tmp, "w");
        if (!f || fputs(idhex, f) < 0 || fclose(f) != 0 || rename(tmp, path) != 0)
            return 3;
    } else {
        struct timespec ms = {0, 1000000L};
        FILE *f = NULL;
        for (int i = 0; i < 30000 && !(f = fopen(path, "r")); i++)
            nanosleep(&ms, NULL);
        if (!f || !fgets(idhex, sizeof(idhex), f))
            return 3;
        fclose(f);
    }
    return rank_main(r, n, idhex, mode, dir);
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "mpi"))
        return mpi_main(argv[2], argv[3]);
    if (argc == 4 && !strcmp(argv[1], "launch"))
        return launch(argv[0], atoi(argv[2]), argv[3]);
    if (argc == 6 && !strcmp(argv[1], "rank"))
        return rank_main(atoi(argv[2]), atoi(argv[3]), argv[4], argv[5], NULL);
    fprintf(stderr, "usage: w_nccl launch N MODE | rank R N IDHEX MODE | mpi DIR MODE\n");
    return 2;
}
