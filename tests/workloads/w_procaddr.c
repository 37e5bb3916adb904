/*
 * cuGetProcAddress semantics under the shim, printed as "CHECK name ok|FAIL"
 * lines: the wrapper is returned only for rows we wrap, newer versions and
 * unknown names pass through as the driver answers them, and cuGetProcAddress
 * itself resolves to the wrapper of the matching ABI.
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static int g_fail;

static void check(const char *name, int cond)
{
    printf("CHECK %s %s\n", name, cond ? "ok" : "FAIL");
    g_fail |= !cond;
}

int main(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    PFN_cuGetProcAddress_v12000 gpa2;
    PFN_cuGetProcAddress_v11030 gpa1;
    *(void **)&gpa2 = dlsym(lib, "cuGetProcAddress_v2");
    *(void **)&gpa1 = dlsym(lib, "cuGetProcAddress");
    void *ours_launch = dlsym(RTLD_DEFAULT, "cuLaunchKernel");
    void *ours_launch_pt = dlsym(RTLD_DEFAULT, "cuLaunchKernel_ptsz");
    void *drv_launch = dlsym(lib, "cuLaunchKernel");
    check("dlsym_of_wrapped_name_is_the_wrapper", drv_launch == ours_launch && drv_launch != NULL);
    check("dlsym_of_unknown_name_is_null", dlsym(lib, "cuNoSuchFunction") == NULL);
    void *drv_query = dlsym(lib, "cuEventQuery");
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    void *p = NULL;
    cuInit(0);
    check("v2_4000_flags0_is_wrapper", gpa2("cuLaunchKernel", &p, 4000, 0, &st) == CUDA_SUCCESS &&
                                           p == ours_launch && st == CU_GET_PROC_ADDRESS_SUCCESS);
    p = NULL;
    check("v2_7000_flags2_is_ptsz_wrapper",
          gpa2("cuLaunchKernel", &p, 7000, 2, &st) == CUDA_SUCCESS && p == ours_launch_pt);
    p = NULL;
    check("v1_4000_flags0_is_wrapper",
          gpa1("cuLaunchKernel", &p, 4000, 0) == CUDA_SUCCESS && p == ours_launch);
    p = NULL;
    check("v1_7000_flags2_is_ptsz_wrapper",
          gpa1("cuLaunchKernel", &p, 7000, 2) == CUDA_SUCCESS && p == ours_launch_pt);
    p = NULL;
    check("per_thread_flag_below_7000_falls_back_to_legacy",
          gpa2("cuLaunchKernel", &p, 6050, 2, &st) == CUDA_SUCCESS && p == ours_launch);
    p = NULL;
    check("unwrapped_symbol_passes_through",
          gpa2("cuEventQuery", &p, 2000, 0, &st) == CUDA_SUCCESS && p == drv_query);
    p = (void *)1;
    CUresult r = gpa2("cuNoSuchFunction", &p, 12000, 0, &st);
    /* cuda.h documents CUDA_SUCCESS with NULL; drivers also answer NOT_FOUND */
    check("unknown_symbol_is_null_with_status", (r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_FOUND) &&
                                                    p == NULL &&
                                                    st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    p = NULL;
    r = gpa2("cuLaunchKernel", &p, 99000, 0, &st);
    check("newer_version_than_driver_is_the_drivers_answer", r == CUDA_ERROR_INVALID_VALUE);
    p = NULL;
    r = gpa2("cuLaunchKernelEx", &p, 11000, 0, &st);
    check("too_old_version_is_not_sufficient",
          (r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_FOUND) && p == NULL &&
              st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    p = NULL;
    check("cuGetProcAddress_11030_is_the_4arg_wrapper",
          gpa2("cuGetProcAddress", &p, 11030, 0, &st) == CUDA_SUCCESS &&
              p == dlsym(RTLD_DEFAULT, "cuGetProcAddress"));
    p = NULL;
    check("cuGetProcAddress_12000_is_the_v2_wrapper",
          gpa2("cuGetProcAddress", &p, 12000, 0, &st) == CUDA_SUCCESS &&
              p == dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2"));
    p = NULL;
    check("empty_probe_passes_through", gpa2("", &p, 0, 0, &st) != CUDA_SUCCESS || p == NULL);
    p = NULL;
    check("export_table_untouched", gpa2("cuGetExportTable", &p, 3000, 0, &st) == CUDA_SUCCESS &&
                                        p == dlsym(lib, "cuGetExportTable"));
    return g_fail;
}
