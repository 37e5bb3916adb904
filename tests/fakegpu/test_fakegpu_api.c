/*
 * test_fakegpu_api.c - entry-point behaviour of the simulated driver that
 * does not depend on time: cuGetProcAddress and cuGetExportTable, devices
 * and contexts, handles and their errors, modules and names, memory
 * attributes, error strings.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include "test_fakegpu.h"

#include <cudaTypedefs.h>
#include <ctype.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CUDA_TYPEDEFS_H_PATH
#define CUDA_TYPEDEFS_H_PATH "/usr/local/cuda/include/cudaTypedefs.h"
#endif

static void *libcuda(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(h);
    return h;
}

/* ------------------------------------------------------ cuGetProcAddress */

typedef struct pa_case {
    const char *symbol;
    int version;
    cuuint64_t flags;
    const char *expect; /* exported name, or NULL for version-not-sufficient */
} pa_case;

static const pa_case pa_cases[] = {
    {"cuMemcpyHtoD", 13000, CU_GET_PROC_ADDRESS_DEFAULT, "cuMemcpyHtoD_v2"},
    {"cuMemcpyHtoD", 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, "cuMemcpyHtoD_v2"},
    {"cuMemcpyHtoD", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuMemcpyHtoD_v2_ptds"},
    {"cuMemcpyHtoD", 6050, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuMemcpyHtoD_v2"},
    {"cuMemcpyHtoD", 3010, CU_GET_PROC_ADDRESS_DEFAULT, NULL},
    {"cuMemcpyHtoDAsync", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
     "cuMemcpyHtoDAsync_v2_ptsz"},
    {"cuLaunchKernel", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuLaunchKernel_ptsz"},
    {"cuLaunchKernel", 4000, CU_GET_PROC_ADDRESS_DEFAULT, "cuLaunchKernel"},
    {"cuLaunchKernel", 3020, CU_GET_PROC_ADDRESS_DEFAULT, NULL},
    {"cuInit", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuInit"},
    {"cuStreamSynchronize", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
     "cuStreamSynchronize_ptsz"},
    {"cuEventRecord", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuEventRecord_ptsz"},
    {"cuGraphLaunch", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuGraphLaunch_ptsz"},
    {"cuMemsetD8Async", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
     "cuMemsetD8Async_ptsz"},
    {"cuMemsetD8", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuMemsetD8_v2_ptds"},
    {"cuStreamGetCaptureInfo", 10010, CU_GET_PROC_ADDRESS_DEFAULT, "cuStreamGetCaptureInfo"},
    {"cuStreamGetCaptureInfo", 11030, CU_GET_PROC_ADDRESS_DEFAULT, "cuStreamGetCaptureInfo_v2"},
    {"cuStreamGetCaptureInfo", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
     "cuStreamGetCaptureInfo_v3_ptsz"},
    {"cuStreamBeginCapture", 10000, CU_GET_PROC_ADDRESS_DEFAULT, "cuStreamBeginCapture"},
    {"cuStreamBeginCapture", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
     "cuStreamBeginCapture_v2_ptsz"},
    {"cuCtxCreate", 11040, CU_GET_PROC_ADDRESS_DEFAULT, "cuCtxCreate_v3"},
    {"cuCtxCreate", 13000, CU_GET_PROC_ADDRESS_DEFAULT, "cuCtxCreate_v4"},
    {"cuCtxSynchronize", 12090, CU_GET_PROC_ADDRESS_DEFAULT, "cuCtxSynchronize"},
    {"cuCtxSynchronize", 13000, CU_GET_PROC_ADDRESS_DEFAULT, "cuCtxSynchronize_v2"},
    {"cuEventElapsedTime", 12000, CU_GET_PROC_ADDRESS_DEFAULT, "cuEventElapsedTime"},
    {"cuEventElapsedTime", 12080, CU_GET_PROC_ADDRESS_DEFAULT, "cuEventElapsedTime_v2"},
    {"cuGraphInstantiate", 11000, CU_GET_PROC_ADDRESS_DEFAULT, "cuGraphInstantiate_v2"},
    {"cuGraphInstantiate", 12000, CU_GET_PROC_ADDRESS_DEFAULT, "cuGraphInstantiateWithFlags"},
    {"cuGetProcAddress", 11030, CU_GET_PROC_ADDRESS_DEFAULT, "cuGetProcAddress"},
    {"cuGetProcAddress", 12000, CU_GET_PROC_ADDRESS_DEFAULT, "cuGetProcAddress_v2"},
    {"cuGetExportTable", 13000, CU_GET_PROC_ADDRESS_DEFAULT, "cuGetExportTable"},
};

START_TEST(get_proc_address_picks_newest_abi_variant_for_version_and_flags)
{
    void *h = libcuda();
    for (size_t i = 0; i < sizeof pa_cases / sizeof pa_cases[0]; i++) {
        const pa_case *c = &pa_cases[i];
        void *fn = (void *)&fn;
        CUdriverProcAddressQueryResult st = -1;
        CUresult rc = cuGetProcAddress_v2(c->symbol, &fn, c->version, c->flags, &st);
        if (c->expect) {
            ck_assert_msg(rc == CUDA_SUCCESS && st == CU_GET_PROC_ADDRESS_SUCCESS,
                          "%s@%d: rc %d st %d", c->symbol, c->version, rc, st);
            void *want = dlsym(h, c->expect);
            ck_assert_ptr_nonnull(want);
            ck_assert_msg(fn == want, "%s@%d flags %llu: not %s", c->symbol, c->version,
                          (unsigned long long)c->flags, c->expect);
        } else {
            ck_assert_int_eq(rc, CUDA_ERROR_NOT_FOUND);
            ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
            ck_assert_ptr_null(fn);
        }
    }
}
END_TEST

START_TEST(get_proc_address_reports_unknown_and_invalid_requests)
{
    void *fn = (void *)&fn;
    CUdriverProcAddressQueryResult st = -1;
    ck_assert_int_eq(cuGetProcAddress_v2("cuNoSuchFunction", &fn, 13000, 0, &st),
                     CUDA_ERROR_NOT_FOUND);
    ck_assert_ptr_null(fn);
    ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    /* libcudart's first call. */
    fn = (void *)&fn;
    ck_assert_int_ne(cuGetProcAddress_v2("", &fn, 0, 0, &st), CUDA_SUCCESS);
    ck_assert_ptr_null(fn);
    ck_assert_int_eq(cuGetProcAddress_v2("cuInit", &fn, 13010, 0, &st), CUDA_ERROR_INVALID_VALUE);
    ck_assert_ptr_null(fn);
    ck_assert_int_eq(cuGetProcAddress_v2(NULL, &fn, 13000, 0, &st), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuGetProcAddress_v2("cuInit", NULL, 13000, 0, &st), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuGetProcAddress_v2("cuInit", &fn, 13000, 0, NULL)); /* status is optional */

    /* The 4-argument cuGetProcAddress, as exported. */
    void *p = dlsym(libcuda(), "cuGetProcAddress");
    ck_assert_ptr_nonnull(p);
    PFN_cuGetProcAddress_v11030 gpa;
    memcpy(&gpa, &p, sizeof p);
    CU_OK(gpa("cuLaunchKernel", &fn, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM));
    ck_assert_ptr_eq(fn, dlsym(libcuda(), "cuLaunchKernel_ptsz"));
    ck_assert_int_eq(gpa("cuNoSuchFunction", &fn, 12000, 0), CUDA_ERROR_NOT_FOUND);
}
END_TEST

/* Every PFN_<base>_v<ver>[_ptds|_ptsz] of cudaTypedefs.h that the fake
 * resolves must come back as an exported symbol of this library (dladdr
 * names it, dlsym of that name gives the same address) whose name is the
 * base name with a version and/or stream suffix. */
START_TEST(every_resolved_pointer_is_an_exported_symbol)
{
    FILE *f = fopen(CUDA_TYPEDEFS_H_PATH, "r");
    ck_assert_ptr_nonnull(f);
    void *h = libcuda();
    char line[4096];
    int resolved = 0;
    while (fgets(line, sizeof line, f)) {
        char *p = strstr(line, "(CUDAAPI *PFN_");
        if (!p)
            continue;
        char name[256];
        if (sscanf(p + strlen("(CUDAAPI *PFN_"), "%255[A-Za-z0-9_]", name) != 1)
            continue;
        char *v = NULL; /* the last "_v<digit>" */
        for (char *q = strstr(name, "_v"); q; q = strstr(q + 1, "_v"))
            if (isdigit((unsigned char)q[2]))
                v = q;
        ck_assert_ptr_nonnull(v);
        int version = atoi(v + 2);
        bool pt = strstr(v, "_pt") != NULL;
        *v = '\0';
        void *fn = NULL;
        if (cuGetProcAddress_v2(name, &fn, version,
                                pt ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0,
                                NULL) != CUDA_SUCCESS)
            continue;
        Dl_info info;
        ck_assert_int_ne(dladdr(fn, &info), 0);
        ck_assert_ptr_nonnull(info.dli_sname);
        ck_assert_ptr_eq(dlsym(h, info.dli_sname), fn);
        ck_assert_msg(strncmp(info.dli_sname, name, strlen(name)) == 0 ||
                          strcmp(name, "cuGraphInstantiate") == 0,
                      "%s resolved to %s", name, info.dli_sname);
        ck_assert_msg(!pt || strstr(info.dli_sname, "_pt"), "%s per-thread resolved to %s", name,
                      info.dli_sname);
        resolved++;
    }
    fclose(f);
    ck_assert_int_gt(resolved, 150);
}
END_TEST

START_TEST(get_export_table_is_not_supported)
{
    const void *table = (const void *)&table;
    CUuuid id = {{0}};
    ck_assert_int_eq(cuGetExportTable(&table, &id), CUDA_ERROR_NOT_SUPPORTED);
    ck_assert_ptr_null(table);
}
END_TEST

TCase *tf_api_procaddr(void)
{
    TCase *tc = tcase_create("procaddr");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, get_proc_address_picks_newest_abi_variant_for_version_and_flags);
    tcase_add_test(tc, get_proc_address_reports_unknown_and_invalid_requests);
    tcase_add_test(tc, every_resolved_pointer_is_an_exported_symbol);
    tcase_add_test(tc, get_export_table_is_not_supported);
    return tc;
}

/* ------------------------------------------------------ devices & objects */

START_TEST(multiple_devices_via_env)
{
    setenv("FAKEGPU_DEVICES", "3", 1);
    CU_OK(cuInit(0));
    int n = 0;
    CU_OK(cuDeviceGetCount(&n));
    ck_assert_int_eq(n, 3);
    CUuuid u0, u2;
    CU_OK(cuDeviceGetUuid(&u0, 0));
    CU_OK(cuDeviceGetUuid(&u2, 2));
    ck_assert_int_ne(memcmp(&u0, &u2, sizeof u0), 0);
    char name[64], bus[32];
    CU_OK(cuDeviceGetName(name, sizeof name, 2));
    ck_assert_str_eq(name, "FakeGPU 2");
    CU_OK(cuDeviceGetPCIBusId(bus, sizeof bus, 2));
    CUdevice byBus = -1;
    CU_OK(cuDeviceGetByPCIBusId(&byBus, bus));
    ck_assert_int_eq(byBus, 2);
    CUdevice d;
    ck_assert_int_eq(cuDeviceGet(&d, 3), CUDA_ERROR_INVALID_DEVICE);
    int major, minor, sms;
    CU_OK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 1));
    CU_OK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 1));
    CU_OK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 1));
    ck_assert_int_eq(major * 10 + minor, 90);
    ck_assert_int_eq(sms, 132);
    size_t total;
    CU_OK(cuDeviceTotalMem(&total, 1));
    ck_assert_uint_gt(total, 1ull << 30);

    /* One context per device, each with its own streams. */
    CUcontext c[3];
    unsigned long long ids[3];
    for (int i = 0; i < 3; i++) {
        CU_OK(cuCtxCreate(&c[i], NULL, 0, i));
        CUdevice cur;
        CU_OK(cuCtxGetDevice(&cur));
        ck_assert_int_eq(cur, i);
        CU_OK(cuCtxGetId(c[i], &ids[i]));
    }
    ck_assert_uint_ne(ids[0], ids[1]);
    CU_OK(cuCtxSetCurrent(c[1]));
    CUstream s;
    CU_OK(cuStreamCreate(&s, 0));
    CUcontext sc;
    CU_OK(cuStreamGetCtx(s, &sc));
    ck_assert_ptr_eq(sc, c[1]);
    for (int i = 0; i < 3; i++)
        CU_OK(cuCtxDestroy(c[i]));
    ck_assert_int_eq(cuStreamQuery(s), CUDA_ERROR_INVALID_HANDLE); /* died with its context */
}
END_TEST

START_TEST(calls_before_cuinit_fail_not_initialized)
{
    int n;
    ck_assert_int_eq(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
    ck_assert_int_eq(cuStreamSynchronize(0), CUDA_ERROR_NOT_INITIALIZED);
    ck_assert_int_eq(cuMemAlloc(&(CUdeviceptr){0}, 16), CUDA_ERROR_NOT_INITIALIZED);
    int v = 0;
    CU_OK(cuDriverGetVersion(&v));
    ck_assert_int_eq(v, 13000);
    ck_assert_int_eq(cuInit(1), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuInit(0));
    CU_OK(cuDeviceGetCount(&n));
    ck_assert_int_eq(n, 1);
}
END_TEST

START_TEST(context_stack_and_primary_context_state)
{
    CU_OK(cuInit(0));
    CUcontext cur = (CUcontext)1;
    CU_OK(cuCtxGetCurrent(&cur));
    ck_assert_ptr_null(cur);
    ck_assert_int_eq(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
    CUcontext p, p2;
    unsigned flags;
    int active;
    CU_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    ck_assert_int_eq(active, 0);
    CU_OK(cuDevicePrimaryCtxRetain(&p, 0));
    CU_OK(cuDevicePrimaryCtxRetain(&p2, 0));
    ck_assert_ptr_eq(p, p2);
    CU_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    ck_assert_int_eq(active, 1);
    CUcontext mine;
    CU_OK(cuCtxCreate(&mine, NULL, 0, 0));
    CU_OK(cuCtxGetCurrent(&cur));
    ck_assert_ptr_eq(cur, mine);
    CU_OK(cuCtxPushCurrent(p));
    CU_OK(cuCtxGetCurrent(&cur));
    ck_assert_ptr_eq(cur, p);
    CU_OK(cuCtxPopCurrent(&cur));
    ck_assert_ptr_eq(cur, p);
    CU_OK(cuCtxGetCurrent(&cur));
    ck_assert_ptr_eq(cur, mine);
    CU_OK(cuCtxDestroy(mine));
    ck_assert_int_eq(cuCtxDestroy(mine), CUDA_ERROR_INVALID_CONTEXT);
    CU_OK(cuDevicePrimaryCtxRelease(0));
    CU_OK(cuDevicePrimaryCtxRelease(0));
    CU_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    ck_assert_int_eq(active, 0);
}
END_TEST

START_TEST(stream_ids_are_unique_and_stable)
{
    tf_setup();
    CUstream a, b;
    CU_OK(cuStreamCreate(&a, 0));
    CU_OK(cuStreamCreateWithPriority(&b, CU_STREAM_NON_BLOCKING, -3));
    unsigned long long ia, ia2, ib, il, il2, ipt;
    CU_OK(cuStreamGetId(a, &ia));
    CU_OK(cuStreamGetId(a, &ia2));
    CU_OK(cuStreamGetId(b, &ib));
    CU_OK(cuStreamGetId(CU_STREAM_LEGACY, &il));
    CU_OK(cuStreamGetId(0, &il2));
    CU_OK(cuStreamGetId(CU_STREAM_PER_THREAD, &ipt));
    ck_assert_uint_eq(ia, ia2);
    ck_assert_uint_eq(il, il2);
    ck_assert_uint_ne(ia, ib);
    ck_assert_uint_ne(ia, il);
    ck_assert_uint_ne(ipt, il);
    ck_assert_uint_ne(ipt, ia);
    unsigned fl;
    int prio;
    CU_OK(cuStreamGetFlags(b, &fl));
    ck_assert_uint_eq(fl, CU_STREAM_NON_BLOCKING);
    CU_OK(cuStreamGetPriority(b, &prio));
    ck_assert_int_eq(prio, -3);
    CU_OK(cuStreamDestroy(a));
    ck_assert_int_eq(cuStreamGetId(a, &ia), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(cuStreamDestroy(CU_STREAM_LEGACY), CUDA_ERROR_INVALID_HANDLE);
}
END_TEST

START_TEST(functions_are_names_and_handles_are_stable)
{
    tf_setup();
    CUmodule m1, m2;
    CU_OK(cuModuleLoad(&m1, "/nonexistent/whatever.cubin"));
    CU_OK(cuModuleLoadDataEx(&m2,
                             "\x7f"
                             "ELF",
                             0, NULL, NULL));
    CUfunction f1, f1b, f2;
    CU_OK(cuModuleGetFunction(&f1, m1, "_Z6kernelPf"));
    CU_OK(cuModuleGetFunction(&f1b, m1, "_Z6kernelPf"));
    CU_OK(cuModuleGetFunction(&f2, m2, "_Z6kernelPf"));
    ck_assert_ptr_eq(f1, f1b);
    ck_assert_ptr_ne(f1, f2);
    const char *name = NULL;
    CU_OK(cuFuncGetName(&name, f1));
    ck_assert_str_eq(name, "_Z6kernelPf");

    CUlibrary lib;
    CU_OK(cuLibraryLoadData(&lib, "fatbin", NULL, NULL, 0, NULL, NULL, 0));
    CUkernel k, k2;
    CU_OK(cuLibraryGetKernel(&k, lib, "libkernel__1000us"));
    CU_OK(cuLibraryGetKernel(&k2, lib, "libkernel__1000us"));
    ck_assert_ptr_eq(k, k2);
    CU_OK(cuKernelGetName(&name, k));
    ck_assert_str_eq(name, "libkernel__1000us");
    CUfunction kf, kf2;
    CU_OK(cuKernelGetFunction(&kf, k));
    CU_OK(cuKernelGetFunction(&kf2, k));
    ck_assert_ptr_eq(kf, kf2);
    CU_OK(cuFuncGetName(&name, kf));
    ck_assert_str_eq(name, "libkernel__1000us");
    /* A CUkernel may be launched as a CUfunction. */
    CU_OK(cuLaunchKernel((CUfunction)k, 1, 1, 1, 1, 1, 1, 0, 0, NULL, NULL));
    CU_OK(cuLaunchKernel(kf, 1, 1, 1, 1, 1, 1, 0, 0, NULL, NULL));
    CU_OK(cuCtxSynchronize());

    CU_OK(cuModuleUnload(m1));
    ck_assert_int_eq(cuFuncGetName(&name, f1), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(cuModuleGetFunction(&f1, m1, "x"), CUDA_ERROR_INVALID_HANDLE);
    CU_OK(cuLibraryUnload(lib));
}
END_TEST

START_TEST(pointer_attributes_report_memory_type)
{
    CUcontext ctx = tf_setup();
    CUdeviceptr d;
    void *h;
    CU_OK(cuMemAlloc(&d, 1024));
    CU_OK(cuMemHostAlloc(&h, 1024, 0));
    unsigned type = 0;
    CU_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 100));
    ck_assert_uint_eq(type, CU_MEMORYTYPE_DEVICE);
    CU_OK(
        cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)h));
    ck_assert_uint_eq(type, CU_MEMORYTYPE_HOST);
    CUcontext owner;
    CU_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, d));
    ck_assert_ptr_eq(owner, ctx);
    CUdeviceptr base;
    size_t size;
    CU_OK(cuMemGetAddressRange(&base, &size, d + 10));
    ck_assert_uint_eq(base, d);
    ck_assert_uint_eq(size, 1024);
    int local;
    ck_assert_int_eq(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                           (CUdeviceptr)(uintptr_t)&local),
                     CUDA_ERROR_INVALID_VALUE);
    size_t free_b, total_b;
    CU_OK(cuMemGetInfo(&free_b, &total_b));
    ck_assert_uint_le(free_b, total_b - 1024);
    CU_OK(cuMemFree(d));
    ck_assert_int_eq(cuMemFree(d), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFreeHost(h));

    /* Stream-ordered allocation. */
    CUstream s;
    CUmemoryPool pool;
    CU_OK(cuStreamCreate(&s, 0));
    CU_OK(cuDeviceGetDefaultMemPool(&pool, 0));
    CU_OK(cuMemAllocFromPoolAsync(&d, 4096, pool, s));
    CU_OK(cuMemsetD8Async(d, 1, 4096, s));
    CU_OK(cuMemFreeAsync(d, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_int_eq(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d),
                     CUDA_ERROR_INVALID_VALUE);
}
END_TEST

TCase *tf_api_objects(void)
{
    TCase *tc = tcase_create("objects");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, multiple_devices_via_env);
    tcase_add_test(tc, calls_before_cuinit_fail_not_initialized);
    tcase_add_test(tc, context_stack_and_primary_context_state);
    tcase_add_test(tc, stream_ids_are_unique_and_stable);
    tcase_add_test(tc, functions_are_names_and_handles_are_stable);
    tcase_add_test(tc, pointer_attributes_report_memory_type);
    return tc;
}

/* ----------------------------------------------------------------- errors */

START_TEST(unknown_handles_and_null_pointers_are_errors)
{
    tf_setup();
    CUstream bogus_s = (CUstream)(uintptr_t)0x1234;
    CUevent bogus_e = (CUevent)(uintptr_t)0x5678;
    ck_assert_int_eq(cuStreamQuery(bogus_s), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(cuStreamSynchronize(bogus_s), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(cuEventRecord(bogus_e, 0), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(cuEventQuery(bogus_e), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(cuLaunchKernel((CUfunction)bogus_e, 1, 1, 1, 1, 1, 1, 0, 0, NULL, NULL),
                     CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(cuLaunchKernel(tf_kernel("k"), 0, 1, 1, 1, 1, 1, 0, 0, NULL, NULL),
                     CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuCtxSetCurrent((CUcontext)bogus_s), CUDA_ERROR_INVALID_CONTEXT);
    ck_assert_int_eq(cuGraphLaunch((CUgraphExec)bogus_s, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuStreamCreate(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuEventCreate(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemAlloc(NULL, 16), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemAlloc(&(CUdeviceptr){0}, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuDeviceGetCount(NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuDeviceGetName(NULL, 10, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuModuleLoadData(NULL, "x"), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuFuncGetName(NULL, tf_kernel("k")), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuLaunchHostFunc(0, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemcpy2D(NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuLaunchKernelEx(NULL, tf_kernel("k"), NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuPointerGetAttribute(NULL, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, 0),
                     CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuStreamEndCapture(0, NULL), CUDA_ERROR_INVALID_VALUE);
}
END_TEST

START_TEST(error_names_and_strings_match_cuda)
{
    const char *s = NULL;
    CU_OK(cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &s));
    ck_assert_str_eq(s, "CUDA_ERROR_INVALID_VALUE");
    CU_OK(cuGetErrorName(CUDA_ERROR_NOT_READY, &s));
    ck_assert_str_eq(s, "CUDA_ERROR_NOT_READY");
    CU_OK(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s));
    ck_assert_ptr_nonnull(strstr(s, "memory"));
    ck_assert_int_eq(cuGetErrorName((CUresult)123456, &s), CUDA_ERROR_INVALID_VALUE);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(cuGetErrorString(CUDA_SUCCESS, NULL), CUDA_ERROR_INVALID_VALUE);
}
END_TEST

TCase *tf_api_errors(void)
{
    TCase *tc = tcase_create("errors");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, unknown_handles_and_null_pointers_are_errors);
    tcase_add_test(tc, error_names_and_strings_match_cuda);
    return tc;
}
