/*
 * Linked against the toolkit's real libcudart.so.13. With the simulated
 * driver, cudart resolves its ~440 entry points through cuGetProcAddress_v2
 * (through the shim) and then fails cleanly at cuGetExportTable; without any
 * driver it fails at dlopen. Either way: an error code, never a crash. Then
 * one driver call through the shim's export so a trace is written with the
 * shim's lookup counters.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>

int main(void)
{
    int n = -1;
    cudaError_t e = cudaGetDeviceCount(&n);
    printf("CUDART cudaGetDeviceCount=%d name=%s\n", (int)e, cudaGetErrorName(e));
    void *p = NULL;
    e = cudaMalloc(&p, 16);
    printf("CUDART cudaMalloc=%d\n", (int)e);
    cuInit(0);
    cuCtxSynchronize(); /* no context: an error, but a recorded call */
    return 0;
}
