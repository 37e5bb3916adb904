/*
 * A schedule with known GPU timing for the GPU-timing tests. After a 200 ms
 * blocker kernel, everything on stream S is queued, so on the simulated
 * device each op starts exactly when the previous one ends:
 *   A__100us kernel, 1 MiB HtoD copy (pinned, async), 4 MiB memset (D32),
 *   a DtoD copy of 2 MiB, a graph (captured on stream C) of C1__30us and
 *   C2__40us launched on S, then B__50us kernel.
 * Separately: one kernel on the per-thread default stream (_ptsz) and one
 * on the legacy stream. Prints the stream ids and "EXPECT" lines with the
 * duration in ns of each op on S in order, then synchronises and exits.
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

CUresult cuLaunchKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void **, void **);

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        CUresult r_ = (x);                                                                         \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            fprintf(stderr, "%s failed: %d\n", #x, (int)r_);                                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static CUfunction fn(CUmodule m, const char *name)
{
    CUfunction f;
    CHECK(cuModuleGetFunction(&f, m, name));
    return f;
}

int main(void)
{
    CUdevice d;
    CUcontext ctx;
    CUmodule m;
    CUstream s, cap;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&d, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, d));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoadData(&m, "image"));
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamCreate(&cap, CU_STREAM_NON_BLOCKING));
    unsigned long long sid, pt, legacy;
    CHECK(cuStreamGetId(s, &sid));
    CHECK(cuStreamGetId(CU_STREAM_PER_THREAD, &pt));
    CHECK(cuStreamGetId(CU_STREAM_LEGACY, &legacy));
    printf("STREAMS s=%llu pt=%llu legacy=%llu\n", sid, pt, legacy);
    CUdeviceptr a, b;
    void *h;
    CHECK(cuMemAlloc(&a, 4 << 20));
    CHECK(cuMemAlloc(&b, 4 << 20));
    CHECK(cuMemAllocHost(&h, 1 << 20));
    /* a graph captured on its own stream: its kernels are not timed as ops */
    CUgraph g;
    CUgraphExec ge;
    CHECK(cuStreamBeginCapture(cap, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK(cuLaunchKernel(fn(m, "C1__30us"), 1, 1, 1, 32, 1, 1, 0, cap, NULL, NULL));
    CHECK(cuLaunchKernel(fn(m, "C2__40us"), 1, 1, 1, 32, 1, 1, 0, cap, NULL, NULL));
    CHECK(cuStreamEndCapture(cap, &g));
    CHECK(cuGraphInstantiateWithFlags(&ge, g, 0));

    CHECK(cuLaunchKernel(fn(m, "blocker__200000us"), 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
    printf("EXPECT kernel 200000000 blocker\n");
    CHECK(cuLaunchKernel(fn(m, "A__100us"), 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
    printf("EXPECT kernel 100000 A\n");
    CHECK(cuMemcpyHtoDAsync(a, h, 1 << 20, s)); /* 1 MiB at 25 GB/s */
    printf("EXPECT memcpy %llu htod\n", (1ull << 20) * 1000000000ull / 25000000000ull);
    CHECK(cuMemsetD32Async(a, 7, 1 << 20, s)); /* 4 MiB at 2000 GB/s */
    printf("EXPECT memset %llu set\n", (4ull << 20) * 1000000000ull / 2000000000000ull);
    CHECK(cuMemcpyDtoDAsync(b, a, 2 << 20, s)); /* 2 MiB at 2000 GB/s */
    printf("EXPECT memcpy %llu dtod\n", (2ull << 20) * 1000000000ull / 2000000000000ull);
    CHECK(cuGraphLaunch(ge, s));
    printf("EXPECT graph 70000 graph\n");
    CHECK(cuLaunchKernel(fn(m, "B__50us"), 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
    printf("EXPECT kernel 50000 B\n");
    CHECK(cuLaunchKernel_ptsz(fn(m, "P__20us"), 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    CHECK(cuLaunchKernel(fn(m, "L__10us"), 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    CHECK(cuStreamSynchronize(s));
    CHECK(cuCtxSynchronize());
    printf("done\n");
    return 0;
}
