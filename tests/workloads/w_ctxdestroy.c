/*
 * A driver-API program in the style of NVIDIA's vectorAddDrv sample: a
 * context made with cuCtxCreate, two synchronous 200 KB host-to-device
 * copies, one launch, a synchronous device-to-host copy, and cuCtxDestroy
 * right after the last copy, then exit. With event-pair timing the pairs of
 * all four ops are still pending when the context goes: the shim must read
 * them before it does.
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        CUresult r_ = (x);                                                                         \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            fprintf(stderr, "%s failed: %d\n", #x, (int)r_);                                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define N (200 * 1024)

int main(void)
{
    static char ha[N], hb[N], hc[N];
    CUdevice d;
    CUcontext ctx;
    CUmodule m;
    CUfunction f;
    CUdeviceptr a, b, c;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&d, 0));
    CHECK(cuCtxCreate(&ctx, NULL, 0, d)); /* CUDA 13: cuCtxCreate_v4 */
    CHECK(cuModuleLoadData(&m, "x"));
    CHECK(cuModuleGetFunction(&f, m, "vecAdd__20us"));
    CHECK(cuMemAlloc(&a, N));
    CHECK(cuMemAlloc(&b, N));
    CHECK(cuMemAlloc(&c, N));
    CHECK(cuMemcpyHtoD(a, ha, N));
    CHECK(cuMemcpyHtoD(b, hb, N));
    void *args[] = {&a, &b, &c};
    CHECK(cuLaunchKernel(f, 100, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
    CHECK(cuMemcpyDtoH(hc, c, N));
    CHECK(cuCtxDestroy(ctx));
    printf("DONE\n");
    return 0;
}
