/*
 * fg_launch.c - kernel launches: cuLaunchKernel, cuLaunchKernelEx,
 * cuLaunchCooperativeKernel, each in legacy and _ptsz form.  A launch is an
 * op whose duration comes from the function's name (fg_kernel_duration_ns);
 * parameters are ignored, since no code runs, except that an ncclDevKernel_*
 * launch of the fake NCCL carries its token in kernelParams[0]
 * (fg_nccl_driver.c).
 */
#include "fg_internal.h"

static CUresult fg_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned by, unsigned bz, unsigned shmem, bool coop, CUstream hs, bool pt,
                          void **params)
{
    FG_ENTER();
    const char *name = fg_func_name(f);
    if (!name)
        FG_RETURN(CUDA_ERROR_INVALID_HANDLE);
    if (!gx || !gy || !gz || !bx || !by || !bz)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if ((unsigned long long)bx * by * bz > 1024 || bz > 64)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    CUresult rc;
    fg_stream *s = fg_stream_get(hs, pt, &rc);
    if (!s)
        FG_RETURN(rc);
    fg_desc d = {.kind = FG_OP_KERNEL, .name = name, .duration_ns = fg_kernel_duration_ns(name)};
    d.u.launch.grid[0] = gx;
    d.u.launch.grid[1] = gy;
    d.u.launch.grid[2] = gz;
    d.u.launch.block[0] = bx;
    d.u.launch.block[1] = by;
    d.u.launch.block[2] = bz;
    d.u.launch.shmem = shmem;
    d.u.launch.coop = coop;
    fg_nccl_launch_desc(&d, params);
    fg_throttle_launch_locked();
    FG_RETURN(fg_submit(s, &d, false));
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                unsigned int gridDimZ, unsigned int blockDimX,
                                unsigned int blockDimY, unsigned int blockDimZ,
                                unsigned int sharedMemBytes, CUstream hStream, void **kernelParams,
                                void **extra)
{
    (void)extra;
    return fg_launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                     sharedMemBytes, false, hStream, false, kernelParams);
}

CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                     unsigned int gridDimZ, unsigned int blockDimX,
                                     unsigned int blockDimY, unsigned int blockDimZ,
                                     unsigned int sharedMemBytes, CUstream hStream,
                                     void **kernelParams, void **extra)
{
    (void)extra;
    return fg_launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                     sharedMemBytes, false, hStream, true, kernelParams);
}

static CUresult fg_launch_ex(const CUlaunchConfig *config, CUfunction f, bool pt, void **params)
{
    if (!config)
        return __atomic_load_n(&fg.initialized, __ATOMIC_ACQUIRE) ? CUDA_ERROR_INVALID_VALUE
                                                                  : CUDA_ERROR_NOT_INITIALIZED;
    bool coop = false;
    for (unsigned i = 0; config->attrs && i < config->numAttrs; i++)
        if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE)
            coop = config->attrs[i].value.cooperative != 0;
    return fg_launch(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                     config->blockDimY, config->blockDimZ, config->sharedMemBytes, coop,
                     config->hStream, pt, params);
}

CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                                  void **extra)
{
    (void)extra;
    return fg_launch_ex(config, f, false, kernelParams);
}

CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                       void **kernelParams, void **extra)
{
    (void)extra;
    return fg_launch_ex(config, f, true, kernelParams);
}

CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
                                           unsigned int gridDimY, unsigned int gridDimZ,
                                           unsigned int blockDimX, unsigned int blockDimY,
                                           unsigned int blockDimZ, unsigned int sharedMemBytes,
                                           CUstream hStream, void **kernelParams)
{
    return fg_launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                     sharedMemBytes, true, hStream, false, kernelParams);
}

CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                                unsigned int gridDimY, unsigned int gridDimZ,
                                                unsigned int blockDimX, unsigned int blockDimY,
                                                unsigned int blockDimZ, unsigned int sharedMemBytes,
                                                CUstream hStream, void **kernelParams)
{
    return fg_launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                     sharedMemBytes, true, hStream, true, kernelParams);
}
