/*
 * fg_procaddr.c - cuGetProcAddress, cuGetProcAddress_v2 and cuGetExportTable.
 *
 * One table lists every (base name, ABI version, stream variant) the fake
 * implements together with the exported symbol that serves it.  ABI
 * versions are those of the PFN_<base>_v<version>[_ptds|_ptsz] typedefs in
 * cudaTypedefs.h (every row matches one of those typedefs);
 * the row cuGraphInstantiate@12000 -> cuGraphInstantiateWithFlags has no PFN
 * typedef but mirrors cuda.h's "#define cuGraphInstantiate
 * cuGraphInstantiateWithFlags" and what the real driver returns.  Pre-3.2
 * ABIs with 32-bit device pointers are not implemented, so asking for them
 * reports CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT.
 *
 * The addresses stored are the library's own definitions; the library is
 * linked with -Bsymbolic-functions, so they equal what
 * dlsym(handle_of_libcuda, exported_name) returns even when a preloaded
 * profiler interposes the same names.
 */
#include "fg_internal.h"

#include <string.h>

typedef void (*fg_fnptr)(void);

typedef enum fg_variant {
    FG_V_LEGACY, /* handle 0 is the legacy default stream */
    FG_V_PTDS,   /* per-thread default stream, synchronous API */
    FG_V_PTSZ,   /* per-thread default stream, asynchronous API */
} fg_variant;

typedef struct fg_sym {
    const char *base;
    int version;
    fg_variant variant;
    const char *exported;
    fg_fnptr fn;
} fg_sym;

#define FG_SYM(base, ver, variant, exported)                                                       \
    {                                                                                              \
#base, ver, variant, #exported, (fg_fnptr)exported                                         \
    }

static const fg_sym fg_syms[] = {
    FG_SYM(cuInit, 2000, FG_V_LEGACY, cuInit),
    FG_SYM(cuDriverGetVersion, 2020, FG_V_LEGACY, cuDriverGetVersion),
    FG_SYM(cuGetErrorString, 6000, FG_V_LEGACY, cuGetErrorString),
    FG_SYM(cuGetErrorName, 6000, FG_V_LEGACY, cuGetErrorName),
    FG_SYM(cuGetProcAddress, 11030, FG_V_LEGACY, cuGetProcAddress),
    FG_SYM(cuGetProcAddress, 12000, FG_V_LEGACY, cuGetProcAddress_v2),
    FG_SYM(cuGetExportTable, 3000, FG_V_LEGACY, cuGetExportTable),
    FG_SYM(cuDeviceGet, 2000, FG_V_LEGACY, cuDeviceGet),
    FG_SYM(cuDeviceGetCount, 2000, FG_V_LEGACY, cuDeviceGetCount),
    FG_SYM(cuDeviceGetName, 2000, FG_V_LEGACY, cuDeviceGetName),
    FG_SYM(cuDeviceGetUuid, 9020, FG_V_LEGACY, cuDeviceGetUuid),
    FG_SYM(cuDeviceGetUuid, 11040, FG_V_LEGACY, cuDeviceGetUuid_v2),
    FG_SYM(cuDeviceGetPCIBusId, 4010, FG_V_LEGACY, cuDeviceGetPCIBusId),
    FG_SYM(cuDeviceGetByPCIBusId, 4010, FG_V_LEGACY, cuDeviceGetByPCIBusId),
    FG_SYM(cuDeviceGetAttribute, 2000, FG_V_LEGACY, cuDeviceGetAttribute),
    FG_SYM(cuDeviceComputeCapability, 2000, FG_V_LEGACY, cuDeviceComputeCapability),
    FG_SYM(cuDeviceTotalMem, 3020, FG_V_LEGACY, cuDeviceTotalMem_v2),
    FG_SYM(cuDeviceCanAccessPeer, 4000, FG_V_LEGACY, cuDeviceCanAccessPeer),
    FG_SYM(cuDeviceGetDefaultMemPool, 11020, FG_V_LEGACY, cuDeviceGetDefaultMemPool),
    FG_SYM(cuDeviceGetMemPool, 11020, FG_V_LEGACY, cuDeviceGetMemPool),
    FG_SYM(cuDevicePrimaryCtxRetain, 7000, FG_V_LEGACY, cuDevicePrimaryCtxRetain),
    FG_SYM(cuDevicePrimaryCtxRelease, 7000, FG_V_LEGACY, cuDevicePrimaryCtxRelease),
    FG_SYM(cuDevicePrimaryCtxRelease, 11000, FG_V_LEGACY, cuDevicePrimaryCtxRelease_v2),
    FG_SYM(cuDevicePrimaryCtxReset, 7000, FG_V_LEGACY, cuDevicePrimaryCtxReset),
    FG_SYM(cuDevicePrimaryCtxReset, 11000, FG_V_LEGACY, cuDevicePrimaryCtxReset_v2),
    FG_SYM(cuDevicePrimaryCtxSetFlags, 7000, FG_V_LEGACY, cuDevicePrimaryCtxSetFlags),
    FG_SYM(cuDevicePrimaryCtxSetFlags, 11000, FG_V_LEGACY, cuDevicePrimaryCtxSetFlags_v2),
    FG_SYM(cuDevicePrimaryCtxGetState, 7000, FG_V_LEGACY, cuDevicePrimaryCtxGetState),
    FG_SYM(cuCtxCreate, 2000, FG_V_LEGACY, cuCtxCreate),
    FG_SYM(cuCtxCreate, 3020, FG_V_LEGACY, cuCtxCreate_v2),
    FG_SYM(cuCtxCreate, 11040, FG_V_LEGACY, cuCtxCreate_v3),
    FG_SYM(cuCtxCreate, 12050, FG_V_LEGACY, cuCtxCreate_v4),
    FG_SYM(cuCtxDestroy, 2000, FG_V_LEGACY, cuCtxDestroy),
    FG_SYM(cuCtxDestroy, 4000, FG_V_LEGACY, cuCtxDestroy_v2),
    FG_SYM(cuCtxPushCurrent, 2000, FG_V_LEGACY, cuCtxPushCurrent),
    FG_SYM(cuCtxPushCurrent, 4000, FG_V_LEGACY, cuCtxPushCurrent_v2),
    FG_SYM(cuCtxPopCurrent, 2000, FG_V_LEGACY, cuCtxPopCurrent),
    FG_SYM(cuCtxPopCurrent, 4000, FG_V_LEGACY, cuCtxPopCurrent_v2),
    FG_SYM(cuCtxSetCurrent, 4000, FG_V_LEGACY, cuCtxSetCurrent),
    FG_SYM(cuCtxGetCurrent, 4000, FG_V_LEGACY, cuCtxGetCurrent),
    FG_SYM(cuCtxGetDevice, 2000, FG_V_LEGACY, cuCtxGetDevice),
    FG_SYM(cuCtxGetDevice, 13000, FG_V_LEGACY, cuCtxGetDevice_v2),
    FG_SYM(cuCtxGetId, 12000, FG_V_LEGACY, cuCtxGetId),
    FG_SYM(cuCtxGetFlags, 7000, FG_V_LEGACY, cuCtxGetFlags),
    FG_SYM(cuCtxGetApiVersion, 3020, FG_V_LEGACY, cuCtxGetApiVersion),
    FG_SYM(cuCtxSynchronize, 2000, FG_V_LEGACY, cuCtxSynchronize),
    FG_SYM(cuCtxSynchronize, 13000, FG_V_LEGACY, cuCtxSynchronize_v2),
    FG_SYM(cuCtxEnablePeerAccess, 4000, FG_V_LEGACY, cuCtxEnablePeerAccess),
    FG_SYM(cuCtxDisablePeerAccess, 4000, FG_V_LEGACY, cuCtxDisablePeerAccess),
    FG_SYM(cuCtxGetStreamPriorityRange, 5050, FG_V_LEGACY, cuCtxGetStreamPriorityRange),
    FG_SYM(cuStreamCreate, 2000, FG_V_LEGACY, cuStreamCreate),
    FG_SYM(cuStreamCreateWithPriority, 5050, FG_V_LEGACY, cuStreamCreateWithPriority),
    FG_SYM(cuStreamDestroy, 2000, FG_V_LEGACY, cuStreamDestroy),
    FG_SYM(cuStreamDestroy, 4000, FG_V_LEGACY, cuStreamDestroy_v2),
    FG_SYM(cuStreamGetId, 12000, FG_V_LEGACY, cuStreamGetId),
    FG_SYM(cuStreamGetId, 12000, FG_V_PTSZ, cuStreamGetId_ptsz),
    FG_SYM(cuStreamGetFlags, 5050, FG_V_LEGACY, cuStreamGetFlags),
    FG_SYM(cuStreamGetFlags, 7000, FG_V_PTSZ, cuStreamGetFlags_ptsz),
    FG_SYM(cuStreamGetPriority, 5050, FG_V_LEGACY, cuStreamGetPriority),
    FG_SYM(cuStreamGetPriority, 7000, FG_V_PTSZ, cuStreamGetPriority_ptsz),
    FG_SYM(cuStreamGetCtx, 9020, FG_V_LEGACY, cuStreamGetCtx),
    FG_SYM(cuStreamGetCtx, 9020, FG_V_PTSZ, cuStreamGetCtx_ptsz),
    FG_SYM(cuStreamGetCtx, 12050, FG_V_LEGACY, cuStreamGetCtx_v2),
    FG_SYM(cuStreamGetCtx, 12050, FG_V_PTSZ, cuStreamGetCtx_v2_ptsz),
    FG_SYM(cuStreamGetDevice, 12080, FG_V_LEGACY, cuStreamGetDevice),
    FG_SYM(cuStreamGetDevice, 12080, FG_V_PTSZ, cuStreamGetDevice_ptsz),
    FG_SYM(cuStreamQuery, 2000, FG_V_LEGACY, cuStreamQuery),
    FG_SYM(cuStreamQuery, 7000, FG_V_PTSZ, cuStreamQuery_ptsz),
    FG_SYM(cuStreamSynchronize, 2000, FG_V_LEGACY, cuStreamSynchronize),
    FG_SYM(cuStreamSynchronize, 7000, FG_V_PTSZ, cuStreamSynchronize_ptsz),
    FG_SYM(cuStreamWaitEvent, 3020, FG_V_LEGACY, cuStreamWaitEvent),
    FG_SYM(cuStreamWaitEvent, 7000, FG_V_PTSZ, cuStreamWaitEvent_ptsz),
    FG_SYM(cuStreamAddCallback, 5000, FG_V_LEGACY, cuStreamAddCallback),
    FG_SYM(cuStreamAddCallback, 7000, FG_V_PTSZ, cuStreamAddCallback_ptsz),
    FG_SYM(cuLaunchHostFunc, 10000, FG_V_LEGACY, cuLaunchHostFunc),
    FG_SYM(cuLaunchHostFunc, 10000, FG_V_PTSZ, cuLaunchHostFunc_ptsz),
    FG_SYM(cuEventCreate, 2000, FG_V_LEGACY, cuEventCreate),
    FG_SYM(cuEventDestroy, 2000, FG_V_LEGACY, cuEventDestroy),
    FG_SYM(cuEventDestroy, 4000, FG_V_LEGACY, cuEventDestroy_v2),
    FG_SYM(cuEventRecord, 2000, FG_V_LEGACY, cuEventRecord),
    FG_SYM(cuEventRecord, 7000, FG_V_PTSZ, cuEventRecord_ptsz),
    FG_SYM(cuEventRecordWithFlags, 11010, FG_V_LEGACY, cuEventRecordWithFlags),
    FG_SYM(cuEventRecordWithFlags, 11010, FG_V_PTSZ, cuEventRecordWithFlags_ptsz),
    FG_SYM(cuEventQuery, 2000, FG_V_LEGACY, cuEventQuery),
    FG_SYM(cuEventSynchronize, 2000, FG_V_LEGACY, cuEventSynchronize),
    FG_SYM(cuEventElapsedTime, 2000, FG_V_LEGACY, cuEventElapsedTime),
    FG_SYM(cuEventElapsedTime, 12080, FG_V_LEGACY, cuEventElapsedTime_v2),
    FG_SYM(cuMemAlloc, 3020, FG_V_LEGACY, cuMemAlloc_v2),
    FG_SYM(cuMemFree, 3020, FG_V_LEGACY, cuMemFree_v2),
    FG_SYM(cuMemAllocPitch, 3020, FG_V_LEGACY, cuMemAllocPitch_v2),
    FG_SYM(cuMemAllocManaged, 6000, FG_V_LEGACY, cuMemAllocManaged),
    FG_SYM(cuMemAllocHost, 3020, FG_V_LEGACY, cuMemAllocHost_v2),
    FG_SYM(cuMemHostAlloc, 2020, FG_V_LEGACY, cuMemHostAlloc),
    FG_SYM(cuMemFreeHost, 2000, FG_V_LEGACY, cuMemFreeHost),
    FG_SYM(cuMemHostRegister, 4000, FG_V_LEGACY, cuMemHostRegister),
    FG_SYM(cuMemHostRegister, 6050, FG_V_LEGACY, cuMemHostRegister_v2),
    FG_SYM(cuMemHostUnregister, 4000, FG_V_LEGACY, cuMemHostUnregister),
    FG_SYM(cuMemHostGetDevicePointer, 3020, FG_V_LEGACY, cuMemHostGetDevicePointer_v2),
    FG_SYM(cuMemGetInfo, 3020, FG_V_LEGACY, cuMemGetInfo_v2),
    FG_SYM(cuMemGetAddressRange, 3020, FG_V_LEGACY, cuMemGetAddressRange_v2),
    FG_SYM(cuMemAllocAsync, 11020, FG_V_LEGACY, cuMemAllocAsync),
    FG_SYM(cuMemAllocAsync, 11020, FG_V_PTSZ, cuMemAllocAsync_ptsz),
    FG_SYM(cuMemFreeAsync, 11020, FG_V_LEGACY, cuMemFreeAsync),
    FG_SYM(cuMemFreeAsync, 11020, FG_V_PTSZ, cuMemFreeAsync_ptsz),
    FG_SYM(cuMemAllocFromPoolAsync, 11020, FG_V_LEGACY, cuMemAllocFromPoolAsync),
    FG_SYM(cuMemAllocFromPoolAsync, 11020, FG_V_PTSZ, cuMemAllocFromPoolAsync_ptsz),
    FG_SYM(cuPointerGetAttribute, 4000, FG_V_LEGACY, cuPointerGetAttribute),
    FG_SYM(cuPointerGetAttributes, 7000, FG_V_LEGACY, cuPointerGetAttributes),
    FG_SYM(cuMemcpy, 4000, FG_V_LEGACY, cuMemcpy),
    FG_SYM(cuMemcpy, 7000, FG_V_PTDS, cuMemcpy_ptds),
    FG_SYM(cuMemcpyAsync, 4000, FG_V_LEGACY, cuMemcpyAsync),
    FG_SYM(cuMemcpyAsync, 7000, FG_V_PTSZ, cuMemcpyAsync_ptsz),
    FG_SYM(cuMemcpyPeer, 4000, FG_V_LEGACY, cuMemcpyPeer),
    FG_SYM(cuMemcpyPeer, 7000, FG_V_PTDS, cuMemcpyPeer_ptds),
    FG_SYM(cuMemcpyPeerAsync, 4000, FG_V_LEGACY, cuMemcpyPeerAsync),
    FG_SYM(cuMemcpyPeerAsync, 7000, FG_V_PTSZ, cuMemcpyPeerAsync_ptsz),
    FG_SYM(cuMemcpyBatchAsync, 12080, FG_V_LEGACY, cuMemcpyBatchAsync),
    FG_SYM(cuMemcpyBatchAsync, 12080, FG_V_PTSZ, cuMemcpyBatchAsync_ptsz),
    FG_SYM(cuMemcpyBatchAsync, 13000, FG_V_LEGACY, cuMemcpyBatchAsync_v2),
    FG_SYM(cuMemcpyBatchAsync, 13000, FG_V_PTSZ, cuMemcpyBatchAsync_v2_ptsz),
    FG_SYM(cuMemcpyHtoD, 3020, FG_V_LEGACY, cuMemcpyHtoD_v2),
    FG_SYM(cuMemcpyHtoD, 7000, FG_V_PTDS, cuMemcpyHtoD_v2_ptds),
    FG_SYM(cuMemcpyDtoH, 3020, FG_V_LEGACY, cuMemcpyDtoH_v2),
    FG_SYM(cuMemcpyDtoH, 7000, FG_V_PTDS, cuMemcpyDtoH_v2_ptds),
    FG_SYM(cuMemcpyDtoD, 3020, FG_V_LEGACY, cuMemcpyDtoD_v2),
    FG_SYM(cuMemcpyDtoD, 7000, FG_V_PTDS, cuMemcpyDtoD_v2_ptds),
    FG_SYM(cuMemcpyHtoDAsync, 3020, FG_V_LEGACY, cuMemcpyHtoDAsync_v2),
    FG_SYM(cuMemcpyHtoDAsync, 7000, FG_V_PTSZ, cuMemcpyHtoDAsync_v2_ptsz),
    FG_SYM(cuMemcpyDtoHAsync, 3020, FG_V_LEGACY, cuMemcpyDtoHAsync_v2),
    FG_SYM(cuMemcpyDtoHAsync, 7000, FG_V_PTSZ, cuMemcpyDtoHAsync_v2_ptsz),
    FG_SYM(cuMemcpyDtoDAsync, 3020, FG_V_LEGACY, cuMemcpyDtoDAsync_v2),
    FG_SYM(cuMemcpyDtoDAsync, 7000, FG_V_PTSZ, cuMemcpyDtoDAsync_v2_ptsz),
    FG_SYM(cuMemcpy2D, 3020, FG_V_LEGACY, cuMemcpy2D_v2),
    FG_SYM(cuMemcpy2D, 7000, FG_V_PTDS, cuMemcpy2D_v2_ptds),
    FG_SYM(cuMemcpy2DUnaligned, 3020, FG_V_LEGACY, cuMemcpy2DUnaligned_v2),
    FG_SYM(cuMemcpy2DUnaligned, 7000, FG_V_PTDS, cuMemcpy2DUnaligned_v2_ptds),
    FG_SYM(cuMemcpy2DAsync, 3020, FG_V_LEGACY, cuMemcpy2DAsync_v2),
    FG_SYM(cuMemcpy2DAsync, 7000, FG_V_PTSZ, cuMemcpy2DAsync_v2_ptsz),
    FG_SYM(cuMemcpy3D, 3020, FG_V_LEGACY, cuMemcpy3D_v2),
    FG_SYM(cuMemcpy3D, 7000, FG_V_PTDS, cuMemcpy3D_v2_ptds),
    FG_SYM(cuMemcpy3DAsync, 3020, FG_V_LEGACY, cuMemcpy3DAsync_v2),
    FG_SYM(cuMemcpy3DAsync, 7000, FG_V_PTSZ, cuMemcpy3DAsync_v2_ptsz),
    FG_SYM(cuMemsetD8, 3020, FG_V_LEGACY, cuMemsetD8_v2),
    FG_SYM(cuMemsetD8, 7000, FG_V_PTDS, cuMemsetD8_v2_ptds),
    FG_SYM(cuMemsetD16, 3020, FG_V_LEGACY, cuMemsetD16_v2),
    FG_SYM(cuMemsetD16, 7000, FG_V_PTDS, cuMemsetD16_v2_ptds),
    FG_SYM(cuMemsetD32, 3020, FG_V_LEGACY, cuMemsetD32_v2),
    FG_SYM(cuMemsetD32, 7000, FG_V_PTDS, cuMemsetD32_v2_ptds),
    FG_SYM(cuMemsetD2D8, 3020, FG_V_LEGACY, cuMemsetD2D8_v2),
    FG_SYM(cuMemsetD2D8, 7000, FG_V_PTDS, cuMemsetD2D8_v2_ptds),
    FG_SYM(cuMemsetD2D16, 3020, FG_V_LEGACY, cuMemsetD2D16_v2),
    FG_SYM(cuMemsetD2D16, 7000, FG_V_PTDS, cuMemsetD2D16_v2_ptds),
    FG_SYM(cuMemsetD2D32, 3020, FG_V_LEGACY, cuMemsetD2D32_v2),
    FG_SYM(cuMemsetD2D32, 7000, FG_V_PTDS, cuMemsetD2D32_v2_ptds),
    FG_SYM(cuMemsetD8Async, 3020, FG_V_LEGACY, cuMemsetD8Async),
    FG_SYM(cuMemsetD8Async, 7000, FG_V_PTSZ, cuMemsetD8Async_ptsz),
    FG_SYM(cuMemsetD16Async, 3020, FG_V_LEGACY, cuMemsetD16Async),
    FG_SYM(cuMemsetD16Async, 7000, FG_V_PTSZ, cuMemsetD16Async_ptsz),
    FG_SYM(cuMemsetD32Async, 3020, FG_V_LEGACY, cuMemsetD32Async),
    FG_SYM(cuMemsetD32Async, 7000, FG_V_PTSZ, cuMemsetD32Async_ptsz),
    FG_SYM(cuMemsetD2D8Async, 3020, FG_V_LEGACY, cuMemsetD2D8Async),
    FG_SYM(cuMemsetD2D8Async, 7000, FG_V_PTSZ, cuMemsetD2D8Async_ptsz),
    FG_SYM(cuMemsetD2D16Async, 3020, FG_V_LEGACY, cuMemsetD2D16Async),
    FG_SYM(cuMemsetD2D16Async, 7000, FG_V_PTSZ, cuMemsetD2D16Async_ptsz),
    FG_SYM(cuMemsetD2D32Async, 3020, FG_V_LEGACY, cuMemsetD2D32Async),
    FG_SYM(cuMemsetD2D32Async, 7000, FG_V_PTSZ, cuMemsetD2D32Async_ptsz),
    FG_SYM(cuModuleLoad, 2000, FG_V_LEGACY, cuModuleLoad),
    FG_SYM(cuModuleLoadData, 2000, FG_V_LEGACY, cuModuleLoadData),
    FG_SYM(cuModuleLoadDataEx, 2010, FG_V_LEGACY, cuModuleLoadDataEx),
    FG_SYM(cuModuleLoadFatBinary, 2000, FG_V_LEGACY, cuModuleLoadFatBinary),
    FG_SYM(cuModuleUnload, 2000, FG_V_LEGACY, cuModuleUnload),
    FG_SYM(cuModuleGetFunction, 2000, FG_V_LEGACY, cuModuleGetFunction),
    FG_SYM(cuModuleGetLoadingMode, 11070, FG_V_LEGACY, cuModuleGetLoadingMode),
    FG_SYM(cuLibraryLoadData, 12000, FG_V_LEGACY, cuLibraryLoadData),
    FG_SYM(cuLibraryLoadFromFile, 12000, FG_V_LEGACY, cuLibraryLoadFromFile),
    FG_SYM(cuLibraryUnload, 12000, FG_V_LEGACY, cuLibraryUnload),
    FG_SYM(cuLibraryGetKernel, 12000, FG_V_LEGACY, cuLibraryGetKernel),
    FG_SYM(cuLibraryGetModule, 12000, FG_V_LEGACY, cuLibraryGetModule),
    FG_SYM(cuLibraryGetKernelCount, 12040, FG_V_LEGACY, cuLibraryGetKernelCount),
    FG_SYM(cuKernelGetFunction, 12000, FG_V_LEGACY, cuKernelGetFunction),
    FG_SYM(cuKernelGetLibrary, 12050, FG_V_LEGACY, cuKernelGetLibrary),
    FG_SYM(cuKernelGetName, 12030, FG_V_LEGACY, cuKernelGetName),
    FG_SYM(cuKernelGetAttribute, 12000, FG_V_LEGACY, cuKernelGetAttribute),
    FG_SYM(cuKernelSetAttribute, 12000, FG_V_LEGACY, cuKernelSetAttribute),
    FG_SYM(cuFuncGetName, 12030, FG_V_LEGACY, cuFuncGetName),
    FG_SYM(cuFuncGetAttribute, 2020, FG_V_LEGACY, cuFuncGetAttribute),
    FG_SYM(cuFuncSetAttribute, 9000, FG_V_LEGACY, cuFuncSetAttribute),
    FG_SYM(cuFuncSetCacheConfig, 3000, FG_V_LEGACY, cuFuncSetCacheConfig),
    FG_SYM(cuFuncGetModule, 11000, FG_V_LEGACY, cuFuncGetModule),
    FG_SYM(cuLaunchKernel, 4000, FG_V_LEGACY, cuLaunchKernel),
    FG_SYM(cuLaunchKernel, 7000, FG_V_PTSZ, cuLaunchKernel_ptsz),
    FG_SYM(cuLaunchKernelEx, 11060, FG_V_LEGACY, cuLaunchKernelEx),
    FG_SYM(cuLaunchKernelEx, 11060, FG_V_PTSZ, cuLaunchKernelEx_ptsz),
    FG_SYM(cuLaunchCooperativeKernel, 9000, FG_V_LEGACY, cuLaunchCooperativeKernel),
    FG_SYM(cuLaunchCooperativeKernel, 9000, FG_V_PTSZ, cuLaunchCooperativeKernel_ptsz),
    FG_SYM(cuStreamBeginCapture, 10000, FG_V_LEGACY, cuStreamBeginCapture),
    FG_SYM(cuStreamBeginCapture, 10000, FG_V_PTSZ, cuStreamBeginCapture_ptsz),
    FG_SYM(cuStreamBeginCapture, 10010, FG_V_LEGACY, cuStreamBeginCapture_v2),
    FG_SYM(cuStreamBeginCapture, 10010, FG_V_PTSZ, cuStreamBeginCapture_v2_ptsz),
    FG_SYM(cuStreamEndCapture, 10000, FG_V_LEGACY, cuStreamEndCapture),
    FG_SYM(cuStreamEndCapture, 10000, FG_V_PTSZ, cuStreamEndCapture_ptsz),
    FG_SYM(cuStreamIsCapturing, 10000, FG_V_LEGACY, cuStreamIsCapturing),
    FG_SYM(cuStreamIsCapturing, 10000, FG_V_PTSZ, cuStreamIsCapturing_ptsz),
    FG_SYM(cuStreamGetCaptureInfo, 10010, FG_V_LEGACY, cuStreamGetCaptureInfo),
    FG_SYM(cuStreamGetCaptureInfo, 10010, FG_V_PTSZ, cuStreamGetCaptureInfo_ptsz),
    FG_SYM(cuStreamGetCaptureInfo, 11030, FG_V_LEGACY, cuStreamGetCaptureInfo_v2),
    FG_SYM(cuStreamGetCaptureInfo, 11030, FG_V_PTSZ, cuStreamGetCaptureInfo_v2_ptsz),
    FG_SYM(cuStreamGetCaptureInfo, 12030, FG_V_LEGACY, cuStreamGetCaptureInfo_v3),
    FG_SYM(cuStreamGetCaptureInfo, 12030, FG_V_PTSZ, cuStreamGetCaptureInfo_v3_ptsz),
    FG_SYM(cuGraphCreate, 10000, FG_V_LEGACY, cuGraphCreate),
    FG_SYM(cuGraphDestroy, 10000, FG_V_LEGACY, cuGraphDestroy),
    FG_SYM(cuGraphExecDestroy, 10000, FG_V_LEGACY, cuGraphExecDestroy),
    FG_SYM(cuGraphGetNodes, 10000, FG_V_LEGACY, cuGraphGetNodes),
    FG_SYM(cuGraphGetEdges, 10000, FG_V_LEGACY, cuGraphGetEdges),
    FG_SYM(cuGraphGetEdges, 12030, FG_V_LEGACY, cuGraphGetEdges_v2),
    FG_SYM(cuGraphInstantiate, 10000, FG_V_LEGACY, cuGraphInstantiate),
    FG_SYM(cuGraphInstantiate, 11000, FG_V_LEGACY, cuGraphInstantiate_v2),
    FG_SYM(cuGraphInstantiate, 12000, FG_V_LEGACY, cuGraphInstantiateWithFlags),
    FG_SYM(cuGraphInstantiateWithFlags, 11040, FG_V_LEGACY, cuGraphInstantiateWithFlags),
    FG_SYM(cuGraphInstantiateWithParams, 12000, FG_V_LEGACY, cuGraphInstantiateWithParams),
    FG_SYM(cuGraphInstantiateWithParams, 12000, FG_V_PTSZ, cuGraphInstantiateWithParams_ptsz),
    FG_SYM(cuGraphLaunch, 10000, FG_V_LEGACY, cuGraphLaunch),
    FG_SYM(cuGraphLaunch, 10000, FG_V_PTSZ, cuGraphLaunch_ptsz),
    FG_SYM(cuGraphUpload, 11010, FG_V_LEGACY, cuGraphUpload),
    FG_SYM(cuGraphUpload, 11010, FG_V_PTSZ, cuGraphUpload_ptsz),
};

/* Per-thread requests take the newest per-thread variant the version
 * allows and fall back to the newest legacy one (functions without a
 * stream argument have only that). */
static CUresult fg_proc_lookup(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                               CUdriverProcAddressQueryResult *status)
{
    if (status)
        *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (pfn)
        *pfn = NULL;
    if (!symbol || !pfn || cudaVersion > FG_DRIVER_VERSION ||
        (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                               CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)))
        return CUDA_ERROR_INVALID_VALUE;
    bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    const fg_sym *legacy = NULL, *pt = NULL;
    bool known = false;
    int driver = fg_driver_version(); /* an older driver knows no newer entry point */
    for (size_t i = 0; i < sizeof fg_syms / sizeof fg_syms[0]; i++) {
        const fg_sym *s = &fg_syms[i];
        if (strcmp(s->base, symbol) != 0 || s->version > driver)
            continue;
        known = true;
        if (s->version > cudaVersion)
            continue;
        const fg_sym **best = s->variant == FG_V_LEGACY ? &legacy : &pt;
        if (!*best || s->version > (*best)->version)
            *best = s;
    }
    if (!known)
        return CUDA_ERROR_NOT_FOUND;
    const fg_sym *s = per_thread && pt ? pt : legacy;
    if (!s) {
        if (status)
            *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
        return CUDA_ERROR_NOT_FOUND;
    }
    /* ISO C has no function-to-object pointer conversion; a union does it. */
    union {
        fg_fnptr fn;
        void *obj;
    } u = {.fn = s->fn};
    *pfn = u.obj;
    if (status)
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return fg_proc_lookup(symbol, pfn, cudaVersion, flags, NULL);
}

CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                     cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
    return fg_proc_lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}

/* The runtime's private interfaces are not simulated: libcudart fails its
 * initialisation cleanly here. */
CUresult CUDAAPI cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
    (void)pExportTableId;
    if (ppExportTable)
        *ppExportTable = NULL;
    return CUDA_ERROR_NOT_SUPPORTED;
}
