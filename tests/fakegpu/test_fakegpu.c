/*
 * test_fakegpu.c - entry point and helpers of the "fakegpu" Check suite,
 * which verifies the simulated driver against its contract (README.md).
 * The test cases live in test_fakegpu_timing.c (virtual-time behaviour) and
 * test_fakegpu_api.c (entry points, handles, cuGetProcAddress) and
 * test_fakegpu_graph.c (graph dependencies and concurrent replay).
 */
#include "test_fakegpu.h"

#include <stdlib.h>
#include <time.h>

CUcontext tf_setup(void)
{
    CUcontext ctx = NULL;
    CUdevice dev;
    CU_OK(cuInit(0));
    CU_OK(cuDeviceGet(&dev, 0));
    CU_OK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU_OK(cuCtxSetCurrent(ctx));
    return ctx;
}

CUfunction tf_kernel(const char *name)
{
    static CUmodule mod;
    CUfunction f = NULL;
    if (!mod)
        CU_OK(cuModuleLoadData(&mod, "not a real cubin"));
    CU_OK(cuModuleGetFunction(&f, mod, name));
    return f;
}

void tf_launch(const char *name, CUstream s)
{
    CU_OK(cuLaunchKernel(tf_kernel(name), 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
}

CUevent tf_event(void)
{
    CUevent e = NULL;
    CU_OK(cuEventCreate(&e, CU_EVENT_DEFAULT));
    return e;
}

CUevent tf_record(CUstream s)
{
    CUevent e = tf_event();
    CU_OK(cuEventRecord(e, s));
    return e;
}

float tf_elapsed(CUevent a, CUevent b)
{
    float ms = -1;
    CU_OK(cuEventSynchronize(b));
    CU_OK(cuEventSynchronize(a));
    CU_OK(cuEventElapsedTime(&ms, a, b));
    return ms;
}

double tf_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(void)
{
    /* Tests set what they need; inherited settings must not leak in. */
    static const char *const vars[] = {"FAKEGPU_DEVICES", "FAKEGPU_KERNEL_SCALE",
                                       "FAKEGPU_PCIE_GBPS", "FAKEGPU_HBM_GBPS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);

    Suite *s = suite_create("fakegpu");
    suite_add_tcase(s, tf_timing_kernels());
    suite_add_tcase(s, tf_timing_streams());
    suite_add_tcase(s, tf_timing_events());
    suite_add_tcase(s, tf_timing_copies());
    suite_add_tcase(s, tf_timing_graphs());
    suite_add_tcase(s, tf_graph_edges());
    suite_add_tcase(s, tf_graph_replay());
    suite_add_tcase(s, tf_api_procaddr());
    suite_add_tcase(s, tf_api_objects());
    suite_add_tcase(s, tf_api_errors());
    SRunner *sr = srunner_create(s);
    /* Each test needs a fresh driver, i.e. its own process. */
    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
