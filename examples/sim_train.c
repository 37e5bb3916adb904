/*
 * sim_train: a small training loop written against the CUDA driver API, the
 * job scripts/demo profiles. On a machine without a GPU it runs on the
 * simulated device (tests/fakegpu), whose kernels last what their names say
 * (`__<N>us`); on a real GPU the same names are PTX kernels that spin on
 * %globaltimer for N microseconds, so both give the same known schedule.
 *
 * Per iteration, on one stream: input copy HtoD (pinned, async), LAYERS
 * forward kernels, 2 x LAYERS backward kernels, a gradient memset, the
 * optimizer kernel, the loss copy DtoH, then a stream synchronize.
 *
 * usage: sim_train [ITERATIONS]   (default 20)
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spin_ptx.h"

#define LAYERS      8
#define BATCH_BYTES (4u << 20)

static void check(CUresult r, const char *what)
{
    if (r != CUDA_SUCCESS) {
        const char *name = "?";
        cuGetErrorName(r, &name);
        fprintf(stderr, "sim_train: %s failed: %s\n", what, name);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    int iterations = argc > 1 ? atoi(argv[1]) : 20;
    static const char *const names[] = {
        "fwd_linear__120us",       "fwd_gelu__30us", "bwd_linear_dgrad__140us",
        "bwd_linear_wgrad__130us", "bwd_gelu__35us", "optimizer_adam__200us",
    };
    const int nnames = sizeof(names) / sizeof(names[0]);
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUstream stream;
    CUfunction fn[6];
    check(cuInit(0), "cuInit");
    check(cuDeviceGet(&dev, 0), "cuDeviceGet");
    check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    char *ptx = make_ptx(names, nnames);
    check(cuModuleLoadData(&mod, ptx), "cuModuleLoadData");
    free(ptx);
    for (int i = 0; i < nnames; i++)
        check(cuModuleGetFunction(&fn[i], mod, names[i]), "cuModuleGetFunction");
    check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    CUdeviceptr input, grads, loss;
    void *host_batch, *host_loss;
    check(cuMemAlloc(&input, BATCH_BYTES), "cuMemAlloc");
    check(cuMemAlloc(&grads, BATCH_BYTES), "cuMemAlloc");
    check(cuMemAlloc(&loss, 4096), "cuMemAlloc");
    check(cuMemAllocHost(&host_batch, BATCH_BYTES), "cuMemAllocHost");
    check(cuMemAllocHost(&host_loss, 4096), "cuMemAllocHost");
    memset(host_batch, 1, BATCH_BYTES);
    for (int it = 0; it < iterations; it++) {
        check(cuMemcpyHtoDAsync(input, host_batch, BATCH_BYTES, stream), "HtoD");
        for (int l = 0; l < LAYERS; l++) {
            check(cuLaunchKernel(fn[0], 132, 1, 1, 256, 1, 1, 0, stream, NULL, NULL), "fwd");
            check(cuLaunchKernel(fn[1], 132, 1, 1, 256, 1, 1, 0, stream, NULL, NULL), "fwd");
        }
        check(cuMemsetD32Async(grads, 0, BATCH_BYTES / 4, stream), "memset");
        for (int l = LAYERS - 1; l >= 0; l--) {
            check(cuLaunchKernel(fn[4], 132, 1, 1, 256, 1, 1, 0, stream, NULL, NULL), "bwd");
            check(cuLaunchKernel(fn[2], 264, 1, 1, 128, 1, 1, 0, stream, NULL, NULL), "bwd");
            check(cuLaunchKernel(fn[3], 264, 1, 1, 128, 1, 1, 0, stream, NULL, NULL), "bwd");
        }
        check(cuLaunchKernel(fn[5], 66, 1, 1, 512, 1, 1, 0, stream, NULL, NULL), "optimizer");
        check(cuMemcpyDtoHAsync(host_loss, loss, 4096, stream), "DtoH");
        check(cuStreamSynchronize(stream), "cuStreamSynchronize");
    }
    cuMemFreeHost(host_batch);
    cuMemFreeHost(host_loss);
    cuMemFree(input);
    cuMemFree(grads);
    cuMemFree(loss);
    cuStreamDestroy(stream);
    cuDevicePrimaryCtxRelease(dev);
    printf("sim_train: %d iterations done\n", iterations);
    return 0;
}
