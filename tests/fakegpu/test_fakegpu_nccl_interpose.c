/*
 * test_fakegpu_nccl_interpose.c - what a preloaded profiler sees of the
 * fake NCCL.  This executable interposes, as the cutrace shim does:
 *  - dlsym: the fake NCCL resolves cuGetProcAddress_v2 from libcuda.so.1
 *    with it; the wrapper hands out a wrapped cuGetProcAddress_v2, which
 *    wraps cuLaunchKernelEx and records every kernel launched through it;
 *  - ncclGroupStart, ncclGroupEnd, ncclBroadcast: counted, then forwarded,
 *    to show that the library's own nested calls go through the PLT.
 * The definitions live in the executable, which comes first in symbol
 * lookup, so no LD_PRELOAD is needed.
 */
#include <check.h>
#include <cuda.h>
#include <dlfcn.h>
#include <nccl.h>
#include <stdlib.h>
#include <string.h>

#define CU_OK(call) ck_assert_int_eq((call), CUDA_SUCCESS)
#define NC_OK(call) ck_assert_int_eq((call), ncclSuccess)

static int n_group_start, n_group_end, n_broadcast;

/* ASan's runtime calls dlsym while it initialises, before its own dlvsym
 * interceptor works: sanitizer builds do without this layer (and without
 * the tests that need it). */
#if defined(__SANITIZE_ADDRESS__)
#define FGT_WRAP_DLSYM 0
#else
#define FGT_WRAP_DLSYM 1
static int n_gpa_launch_ex, n_launches;
static char launched[8][96];
static CUstream launched_stream[8];
static void *(*real_dlsym)(void *, const char *);
static CUresult (*real_gpa)(const char *, void **, int, cuuint64_t,
                            CUdriverProcAddressQueryResult *);
static CUresult (*real_launch_ex)(const CUlaunchConfig *, CUfunction, void **, void **);

static void resolve_real_dlsym(void)
{
    if (!real_dlsym)
        *(void **)&real_dlsym = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!real_dlsym)
        *(void **)&real_dlsym = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
}

static CUresult wrap_launch_ex(const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra)
{
    const char *name = NULL;
    if (n_launches < 8 && cuFuncGetName(&name, f) == CUDA_SUCCESS) {
        strncpy(launched[n_launches], name, sizeof launched[0] - 1);
        launched_stream[n_launches] = cfg ? cfg->hStream : NULL;
    }
    n_launches++;
    return real_launch_ex(cfg, f, params, extra);
}

static CUresult wrap_gpa(const char *sym, void **pfn, int ver, cuuint64_t flags,
                         CUdriverProcAddressQueryResult *st)
{
    CUresult rc = real_gpa(sym, pfn, ver, flags, st);
    if (rc == CUDA_SUCCESS && sym && !strcmp(sym, "cuLaunchKernelEx")) {
        n_gpa_launch_ex++;
        *(void **)&real_launch_ex = *pfn;
        CUresult (*w)(const CUlaunchConfig *, CUfunction, void **, void **) = wrap_launch_ex;
        memcpy(pfn, &w, sizeof w);
    }
    return rc;
}

__attribute__((visibility("default"))) void *dlsym(void *handle, const char *name)
{
    resolve_real_dlsym();
    void *p = real_dlsym(handle, name);
    if (p && !strcmp(name, "cuGetProcAddress_v2")) {
        *(void **)&real_gpa = p;
        void *w;
        CUresult (*f)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *) =
            wrap_gpa;
        memcpy(&w, &f, sizeof w);
        return w;
    }
    return p;
}
#endif

static void *next(const char *name)
{
    return dlsym(RTLD_NEXT, name); /* through the wrapper above, if any */
}

__attribute__((visibility("default"))) ncclResult_t ncclGroupStart(void)
{
    ncclResult_t (*fn)(void);
    *(void **)&fn = next("ncclGroupStart");
    n_group_start++;
    return fn();
}

__attribute__((visibility("default"))) ncclResult_t ncclGroupEnd(void)
{
    ncclResult_t (*fn)(void);
    *(void **)&fn = next("ncclGroupEnd");
    n_group_end++;
    return fn();
}

__attribute__((visibility("default"))) ncclResult_t ncclBroadcast(const void *sb, void *rb,
                                                                  size_t count, ncclDataType_t t,
                                                                  int root, ncclComm_t comm,
                                                                  cudaStream_t stream)
{
    ncclResult_t (*fn)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
    *(void **)&fn = next("ncclBroadcast");
    n_broadcast++;
    return fn(sb, rb, count, t, root, comm, stream);
}

static void setup(CUstream *s, int n)
{
    CU_OK(cuInit(0));
    for (int r = 0; r < n; r++) {
        CUcontext ctx;
        CU_OK(cuDevicePrimaryCtxRetain(&ctx, r));
        CU_OK(cuCtxSetCurrent(ctx));
        CU_OK(cuStreamCreate(&s[r], CU_STREAM_NON_BLOCKING));
    }
}

#if FGT_WRAP_DLSYM
START_TEST(kernel_goes_through_cuGetProcAddress_v2_and_cuLaunchKernelEx)
{
    CUstream s;
    setup(&s, 1);
    ncclComm_t c;
    NC_OK(ncclCommInitAll(&c, 1, NULL));
    ck_assert_int_eq(n_gpa_launch_ex, 1);
    static char buf[64];
    NC_OK(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, c, s));
    NC_OK(ncclAllGather(buf, buf, 4, ncclBfloat16, c, s));
    NC_OK(ncclReduceScatter(buf, buf, 4, ncclInt64, ncclMax, c, s));
    NC_OK(ncclGroupStart()); /* a send to self must pair with its receive in a group */
    NC_OK(ncclSend(buf, 4, ncclInt8, 0, c, s));
    NC_OK(ncclRecv(buf, 4, ncclInt8, 0, c, s));
    NC_OK(ncclGroupEnd());
    CU_OK(cuStreamSynchronize(s));
    ck_assert_int_eq(n_launches, 4);
    ck_assert_str_eq(launched[0], "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
    ck_assert_str_eq(launched[1], "ncclDevKernel_AllGather_RING_LL");
    ck_assert_str_eq(launched[2], "ncclDevKernel_ReduceScatter_Max_i64_RING_LL");
    ck_assert_str_eq(launched[3], "ncclDevKernel_SendRecv");
    ck_assert_ptr_eq(launched_stream[0], s);
    NC_OK(ncclCommDestroy(c));
}
END_TEST
#endif

START_TEST(nested_api_calls_go_through_the_plt)
{
    CUstream s;
    setup(&s, 1);
    ncclComm_t c;
    NC_OK(ncclCommInitAll(&c, 1, NULL));
    static char buf[64];
    NC_OK(ncclBcast(buf, 4, ncclFloat32, 0, c, s));
    ck_assert_int_eq(n_broadcast, 1);   /* ncclBcast -> ncclBroadcast */
    ck_assert_int_eq(n_group_start, 1); /* the implicit group */
    ck_assert_int_eq(n_group_end, 1);
    NC_OK(ncclGroupStart());
    NC_OK(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, c, s));
    NC_OK(ncclGroupEnd());
    ck_assert_int_eq(n_group_start, 2); /* inside a group: no nested group */
    ck_assert_int_eq(n_group_end, 2);
    NC_OK(ncclCommDestroy(c));
}
END_TEST

#if FGT_WRAP_DLSYM
START_TEST(group_launches_one_kernel_per_stream)
{
    CUstream s[2];
    setup(s, 2);
    ncclComm_t c[2];
    NC_OK(ncclCommInitAll(c, 2, NULL));
    static char buf[64];
    NC_OK(ncclGroupStart());
    for (int r = 0; r < 2; r++) {
        NC_OK(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, c[r], s[r]));
        NC_OK(ncclAllGather(buf, buf, 4, ncclFloat32, c[r], s[r]));
        NC_OK(ncclSend(buf, 4, ncclFloat32, 1 - r, c[r], s[r]));
        NC_OK(ncclRecv(buf, 4, ncclFloat32, 1 - r, c[r], s[r]));
    }
    NC_OK(ncclGroupEnd());
    ck_assert_int_eq(n_launches, 2);
    ck_assert_ptr_eq(launched_stream[0], s[0]);
    ck_assert_ptr_eq(launched_stream[1], s[1]);
    ck_assert_str_eq(launched[0], "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
    CU_OK(cuStreamSynchronize(s[0]));
    CU_OK(cuStreamSynchronize(s[1]));
    for (int r = 0; r < 2; r++)
        NC_OK(ncclCommDestroy(c[r]));
}
END_TEST
#endif

int main(void)
{
    setenv("FAKEGPU_DEVICES", "2", 1);
    unsetenv("NCCL_PROFILER_PLUGIN");
    Suite *su = suite_create("fakegpu-nccl-interpose");
    TCase *tc = tcase_create("interpose");
    tcase_set_timeout(tc, 30);
#if FGT_WRAP_DLSYM
    tcase_add_test(tc, kernel_goes_through_cuGetProcAddress_v2_and_cuLaunchKernelEx);
    tcase_add_test(tc, group_launches_one_kernel_per_stream);
#endif
    tcase_add_test(tc, nested_api_calls_go_through_the_plt);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
