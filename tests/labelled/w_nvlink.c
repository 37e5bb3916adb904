/*
 * A collective-heavy job for the NVLink finding (docs/efficiency.md,
 * tests/labelled/check_gpm.py cases gpm_nvlink*): `w_nvlink launch N`
 * starts N rank processes (`w_nvlink rank R N IDHEX`, RANK/LOCAL_RANK/
 * WORLD_SIZE set, like torchrun) on the simulated device and NCCL, and
 * waits for them.
 *
 * Each rank runs W_NV_STEPS steps (default 3), each a `ProfilerStep#k`
 * range holding a 2 ms compute kernel and one float32 AllReduce of
 * W_NV_COUNT elements (default 2^30) on one stream, then a synchronize:
 * the collectives fill the steps. The simulated NCCL moves no data (small
 * buffers stand for large ops); with FAKEGPU_GPM_NVLINK=1 the simulated
 * NVML's NVLink rates follow its collectives (tests/fakegpu/README.md,
 * "Fake NVML: GPM"), whose time comes from FAKEGPU_NET_GBPS.
 */
#include <cuda.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cutrace/cutrace.h"

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        int rc_ = (int)(x);                                                                        \
        if (rc_ != 0) {                                                                            \
            fprintf(stderr, "w_nvlink: %s failed: %d\n", #x, rc_);                                 \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

static int launch(const char *self, int n)
{
    ncclUniqueId id;
    CHECK(ncclGetUniqueId(&id));
    char idhex[2 * sizeof(id.internal) + 1], rs[16], ns[16];
    for (size_t i = 0; i < sizeof(id.internal); i++)
        sprintf(idhex + 2 * i, "%02x", (unsigned char)id.internal[i]);
    snprintf(ns, sizeof(ns), "%d", n);
    pid_t pids[64];
    for (int r = 0; r < n && r < 64; r++) {
        snprintf(rs, sizeof(rs), "%d", r);
        pids[r] = fork();
        if (pids[r] == 0) {
            setenv("RANK", rs, 1);
            setenv("LOCAL_RANK", rs, 1);
            setenv("WORLD_SIZE", ns, 1);
            execl(self, self, "rank", rs, ns, idhex, (char *)NULL);
            _exit(127);
        }
    }
    int bad = 0;
    for (int r = 0; r < n && r < 64; r++) {
        int st;
        waitpid(pids[r], &st, 0);
        bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
    return bad;
}

static int rank_main(int r, int n, const char *idhex)
{
    ncclUniqueId id;
    for (size_t i = 0; i < sizeof(id.internal); i++) {
        unsigned v;
        if (sscanf(idhex + 2 * i, "%2x", &v) != 1)
            return 2;
        id.internal[i] = (char)v;
    }
    const char *se = getenv("W_NV_STEPS"), *ce = getenv("W_NV_COUNT");
    int steps = se && *se ? atoi(se) : 3;
    size_t count = ce && *ce ? strtoull(ce, NULL, 10) : (size_t)1 << 30;
    CUdevice d;
    CUcontext ctx;
    CUstream s;
    CUmodule mod;
    CUfunction compute;
    CUdeviceptr a, b;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&d, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, d));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuModuleLoadData(&mod, "w_nvlink"));
    CHECK(cuModuleGetFunction(&compute, mod, "w_compute__2000us"));
    CHECK(cuMemAlloc(&a, 1 << 16));
    CHECK(cuMemAlloc(&b, 1 << 16));
    ncclComm_t comm;
    CHECK(ncclCommInitRank(&comm, n, id, r));
    for (int k = 0; k < steps; k++) {
        char name[32];
        snprintf(name, sizeof(name), "ProfilerStep#%d", k);
        cutrace_range_push(name);
        CHECK(cuLaunchKernel(compute, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
        CHECK(ncclAllReduce((void *)(uintptr_t)a, (void *)(uintptr_t)b, count, ncclFloat32, ncclSum,
                            comm, (cudaStream_t)s));
        CHECK(cuStreamSynchronize(s));
        cutrace_range_pop();
    }
    CHECK(ncclCommDestroy(comm));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "launch"))
        return launch(argv[0], atoi(argv[2]));
    if (argc == 5 && !strcmp(argv[1], "rank"))
        return rank_main(atoi(argv[2]), atoi(argv[3]), argv[4]);
    fprintf(stderr, "usage: w_nvlink launch N | rank R N IDHEX\n");
    return 2;
}
