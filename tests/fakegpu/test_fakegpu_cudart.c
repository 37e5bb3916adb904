/*
 * test_fakegpu_cudart.c - the CUDA toolkit's real libcudart running on the
 * simulated driver.  cudart resolves ~440 driver symbols through
 * cuGetProcAddress_v2 and then needs cuGetExportTable, which the fake does
 * not provide; the runtime must report an error, not crash.  Each test runs
 * in a forked child, so a crash shows up as a failed test.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include <check.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

START_TEST(cudart_get_device_count_fails_cleanly)
{
    int n = -1;
    cudaError_t e = cudaGetDeviceCount(&n);
    ck_assert_int_ne(e, cudaSuccess);
    ck_assert_ptr_nonnull(cudaGetErrorName(e));
}
END_TEST

START_TEST(cudart_malloc_fails_cleanly)
{
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, 256);
    ck_assert_int_ne(e, cudaSuccess);
    /* And again: the runtime caches its failed initialisation. */
    ck_assert_int_ne(cudaMalloc(&p, 256), cudaSuccess);
}
END_TEST

START_TEST(cudart_loaded_the_fake_driver)
{
    /* cudart dlopens "libcuda.so.1" and dlcloses it after failing, so look
     * it up the same way first; our reference keeps it loaded. */
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    ck_assert_ptr_nonnull(h);
    void *sym = dlsym(h, "cuGetProcAddress_v2");
    ck_assert_ptr_nonnull(sym);
    Dl_info info;
    ck_assert_int_ne(dladdr(sym, &info), 0);
    ck_assert_msg(strstr(info.dli_fname, "fakegpu") != NULL, "libcuda.so.1 is %s", info.dli_fname);
    /* Without a driver cudart reports cudaErrorInsufficientDriver or
     * cudaErrorNoDevice; cudaErrorNotSupported is the fake's
     * CUDA_ERROR_NOT_SUPPORTED from cuGetExportTable, i.e. cudart got that
     * far through the fake. */
    int n;
    ck_assert_int_eq(cudaGetDeviceCount(&n), cudaErrorNotSupported);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fakegpu-cudart");
    TCase *tc = tcase_create("cudart");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, cudart_get_device_count_fails_cleanly);
    tcase_add_test(tc, cudart_malloc_fails_cleanly);
    tcase_add_test(tc, cudart_loaded_the_fake_driver);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
