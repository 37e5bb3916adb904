/*
 * streams_nccl: a data-parallel step on every visible GPU of one process,
 * written against the CUDA driver API and NCCL: per device, two compute
 * streams run spinning PTX kernels whose names give their duration
 * (`__<N>us`, as in sim_train), and a third stream all-reduces a 4 MiB
 * gradient bucket after each backward pass (ncclCommInitAll over the
 * devices; a group of one all-reduce per device). On the simulated device
 * the kernel names alone set the durations.
 *
 * It prints what it did, for scripts/gpu-check to compare with the trace:
 *   EXPECT kernel NAME COUNT
 *   EXPECT nccl AllReduce COUNT
 *   EXPECT devices N
 *
 * usage: streams_nccl [ITERATIONS]   (default 20)
 */
#include <cuda.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spin_ptx.h"

#define MAX_DEV 16
#define BUCKET  (1u << 20) /* floats: 4 MiB */

static void check(CUresult r, const char *what)
{
    if (r != CUDA_SUCCESS) {
        const char *name = "?";
        cuGetErrorName(r, &name);
        fprintf(stderr, "streams_nccl: %s failed: %s\n", what, name);
        exit(1);
    }
}

static void nccheck(ncclResult_t r, const char *what)
{
    if (r != ncclSuccess) {
        fprintf(stderr, "streams_nccl: %s failed: %s\n", what, ncclGetErrorString(r));
        exit(1);
    }
}

struct gpu {
    CUcontext ctx;
    CUstream a, b, comm;
    CUfunction fwd, bwd, aux;
    CUevent done;
    CUdeviceptr grad;
};

int main(int argc, char **argv)
{
    int iterations = argc > 1 ? atoi(argv[1]) : 20;
    static const char *const names[] = {"dp_forward__300us", "dp_backward__500us",
                                        "dp_side_stream__200us"};
    check(cuInit(0), "cuInit");
    int ndev = 0;
    check(cuDeviceGetCount(&ndev), "cuDeviceGetCount");
    if (ndev > MAX_DEV)
        ndev = MAX_DEV;
    struct gpu g[MAX_DEV];
    char *ptx = make_ptx(names, 3);
    for (int d = 0; d < ndev; d++) {
        CUdevice dev;
        CUmodule mod;
        check(cuDeviceGet(&dev, d), "cuDeviceGet");
        check(cuDevicePrimaryCtxRetain(&g[d].ctx, dev), "cuDevicePrimaryCtxRetain");
        check(cuCtxSetCurrent(g[d].ctx), "cuCtxSetCurrent");
        check(cuModuleLoadData(&mod, ptx), "cuModuleLoadData");
        check(cuModuleGetFunction(&g[d].fwd, mod, names[0]), "cuModuleGetFunction");
        check(cuModuleGetFunction(&g[d].bwd, mod, names[1]), "cuModuleGetFunction");
        check(cuModuleGetFunction(&g[d].aux, mod, names[2]), "cuModuleGetFunction");
        check(cuStreamCreate(&g[d].a, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
        check(cuStreamCreate(&g[d].b, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
        check(cuStreamCreate(&g[d].comm, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
        check(cuEventCreate(&g[d].done, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
        check(cuMemAlloc(&g[d].grad, BUCKET * sizeof(float)), "cuMemAlloc");
        check(cuMemsetD32(g[d].grad, 0, BUCKET), "cuMemsetD32");
    }
    free(ptx);
    ncclComm_t comms[MAX_DEV];
    nccheck(ncclCommInitAll(comms, ndev, NULL), "ncclCommInitAll");
    for (int it = 0; it < iterations; it++) {
        for (int d = 0; d < ndev; d++) {
            check(cuCtxSetCurrent(g[d].ctx), "cuCtxSetCurrent");
            for (int k = 0; k < 2; k++)
                check(cuLaunchKernel(g[d].fwd, 66, 1, 1, 128, 1, 1, 0, g[d].a, NULL, NULL), "fwd");
            check(cuLaunchKernel(g[d].aux, 33, 1, 1, 128, 1, 1, 0, g[d].b, NULL, NULL), "aux");
            check(cuLaunchKernel(g[d].bwd, 66, 1, 1, 128, 1, 1, 0, g[d].a, NULL, NULL), "bwd");
            check(cuEventRecord(g[d].done, g[d].a), "cuEventRecord");
            check(cuStreamWaitEvent(g[d].comm, g[d].done, 0), "cuStreamWaitEvent");
        }
        nccheck(ncclGroupStart(), "ncclGroupStart");
        for (int d = 0; d < ndev; d++) {
            void *p = (void *)(uintptr_t)g[d].grad;
            nccheck(ncclAllReduce(p, p, BUCKET, ncclFloat32, ncclSum, comms[d],
                                  (cudaStream_t)g[d].comm),
                    "ncclAllReduce");
        }
        nccheck(ncclGroupEnd(), "ncclGroupEnd");
        for (int d = 0; d < ndev; d++) {
            check(cuCtxSetCurrent(g[d].ctx), "cuCtxSetCurrent");
            check(cuCtxSynchronize(), "cuCtxSynchronize");
        }
    }
    for (int d = 0; d < ndev; d++)
        ncclCommDestroy(comms[d]);
    printf("EXPECT devices %d\n", ndev);
    printf("EXPECT kernel %s %d\n", names[0], 2 * iterations * ndev);
    printf("EXPECT kernel %s %d\n", names[1], iterations * ndev);
    printf("EXPECT kernel %s %d\n", names[2], iterations * ndev);
    printf("EXPECT nccl AllReduce %d\n", iterations * ndev);
    return 0;
}
