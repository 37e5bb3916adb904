/*
 * A labelled job for GPU efficiency (docs/efficiency.md), on the simulated
 * device with the fake NVML's GPM (tests/fakegpu/README.md, "Fake NVML:
 * GPM"); tests/labelled/check_gpm.py holds the truth it implies.
 *
 * One process, one device, W_GPM_STEPS steps (default 2), each a
 * `ProfilerStep#k` range ending in a context synchronisation:
 *   a GEMM phase: W_GPM_GEMM kernels `gemm_bf16_tn__10000us` (default 100:
 *     1 s), then
 *   an elementwise phase: W_GPM_EW kernels
 *     `vectorized_elementwise_add__5000us` (default 200: 1 s),
 * back to back on one stream. The test gives each family its activity
 * profile with FAKEGPU_GPM_PROFILE, so the GPM metrics of each phase are
 * known exactly; the phases are long against the sampling period so that
 * the intervals they share are a small part of each (check_gpm.py argues
 * the tolerance).
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#include "cutrace/cutrace.h"

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        int rc_ = (int)(x);                                                                        \
        if (rc_ != 0) {                                                                            \
            fprintf(stderr, "w_gpm: %s failed: %d\n", #x, rc_);                                    \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

static void launch(CUmodule mod, CUstream s, const char *name, int n)
{
    CUfunction f;
    CHECK(cuModuleGetFunction(&f, mod, name));
    for (int i = 0; i < n; i++)
        CHECK(cuLaunchKernel(f, 132, 1, 1, 256, 1, 1, 0, s, NULL, NULL));
}

int main(void)
{
    int steps = env_int("W_GPM_STEPS", 2), gemm = env_int("W_GPM_GEMM", 100),
        ew = env_int("W_GPM_EW", 200);
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUstream s;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoadData(&mod, "w_gpm"));
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int k = 0; k < steps; k++) {
        char name[32];
        snprintf(name, sizeof(name), "ProfilerStep#%d", k);
        cutrace_range_push(name);
        launch(mod, s, "gemm_bf16_tn__10000us", gemm);
        launch(mod, s, "vectorized_elementwise_add__5000us", ew);
        CHECK(cuCtxSynchronize());
        cutrace_range_pop();
    }
    CHECK(cuStreamDestroy(s));
    CHECK(cuDevicePrimaryCtxRelease(dev));
    return 0;
}
