/*
 * fg_device.c - the simulated devices: count (FAKEGPU_DEVICES), identity
 * (name, UUID, PCI bus id), attributes of an H100-class part (compute
 * capability 9.0, 132 SMs), memory size and peer access.
 */
#include "fg_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool fg_device_valid(CUdevice d)
{
    return d >= 0 && d < fg.ndevices;
}

/* Bus numbers of the simulated devices, one per device, like a real board. */
static int fg_pci_bus(CUdevice d)
{
    return 0x18 + d * 0x10;
}

CUresult CUDAAPI cuDeviceGetCount(int *count)
{
    FG_ENTER();
    if (!count)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    *count = fg.ndevices;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal)
{
    FG_ENTER();
    if (!device)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!fg_device_valid(ordinal))
        FG_RETURN(CUDA_ERROR_INVALID_DEVICE);
    *device = ordinal;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev)
{
    FG_ENTER();
    if (!name || len <= 0)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!fg_device_valid(dev))
        FG_RETURN(CUDA_ERROR_INVALID_DEVICE);
    /* FAKEGPU_DEVICE_NAME: the name of a real part (a platform table keys
     * on it); default "FakeGPU N" */
    const char *n = getenv("FAKEGPU_DEVICE_NAME");
    if (n && *n)
        snprintf(name, (size_t)len, "%s", n);
    else
        snprintf(name, (size_t)len, "FakeGPU %d", dev);
    FG_RETURN(CUDA_SUCCESS);
}

/* Deterministic per ordinal, so that traces of two runs compare equal. */
static CUresult fg_uuid(CUuuid *uuid, CUdevice dev)
{
    FG_ENTER();
    if (!uuid)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!fg_device_valid(dev))
        FG_RETURN(CUDA_ERROR_INVALID_DEVICE);
    static const char tag[] = "FAKEGPU-UUID";
    memset(uuid->bytes, 0, sizeof uuid->bytes);
    memcpy(uuid->bytes, tag, sizeof tag - 1);
    uuid->bytes[15] = (char)dev;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    return fg_uuid(uuid, dev);
}

CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    return fg_uuid(uuid, dev);
}

CUresult CUDAAPI cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    FG_ENTER();
    if (!pciBusId || len <= 0)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!fg_device_valid(dev))
        FG_RETURN(CUDA_ERROR_INVALID_DEVICE);
    snprintf(pciBusId, (size_t)len, "00000000:%02X:00.0", fg_pci_bus(dev));
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId)
{
    FG_ENTER();
    if (!dev || !pciBusId)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    unsigned dom = 0, bus = 0, slot = 0;
    if (sscanf(pciBusId, "%x:%x:%x", &dom, &bus, &slot) != 3 &&
        sscanf(pciBusId, "%x:%x", &bus, &slot) != 2)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    for (int d = 0; d < fg.ndevices; d++) {
        if ((unsigned)fg_pci_bus(d) == bus) {
            *dev = d;
            FG_RETURN(CUDA_SUCCESS);
        }
    }
    FG_RETURN(CUDA_ERROR_INVALID_DEVICE);
}

typedef struct fg_attr_value {
    CUdevice_attribute attr;
    int value;
} fg_attr_value;

/* Values of an H100 SXM; attributes not listed read as 0 ("unsupported"). */
static const fg_attr_value fg_attrs[] = {
    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 49152},
    {CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 65536},
    {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
    {CU_DEVICE_ATTRIBUTE_MAX_PITCH, 2147483647},
    {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536},
    {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1980000},
    {CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 512},
    {CU_DEVICE_ATTRIBUTE_GPU_OVERLAP, 1},
    {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132},
    {CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 1},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, CU_COMPUTEMODE_DEFAULT},
    {CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT, 512},
    {CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 1},
    {CU_DEVICE_ATTRIBUTE_ECC_ENABLED, 1},
    {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 2619000},
    {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 5120},
    {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 52428800},
    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048},
    {CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 3},
    {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
    {CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, 32},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
    {CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 233472},
    {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 65536},
    {CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1},
    {CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO, 2},
    {CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 1},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 1},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 232448},
    {CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 32},
    {CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, 32505856},
    {CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE, 134213632},
    {CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, 1024},
    {CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, 1},
    {CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, 1},
    {CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR, 1},
    {CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT, 4},
    {CU_DEVICE_ATTRIBUTE_NUMA_ID, -1},
    {CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, -1},
};

CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    FG_ENTER();
    if (!pi || attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!fg_device_valid(dev))
        FG_RETURN(CUDA_ERROR_INVALID_DEVICE);
    *pi = 0;
    if (attrib == CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)
        *pi = fg_pci_bus(dev);
    for (size_t i = 0; i < sizeof fg_attrs / sizeof fg_attrs[0]; i++)
        if (fg_attrs[i].attr == attrib)
            *pi = fg_attrs[i].value;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
    FG_ENTER();
    if (!major || !minor)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!fg_device_valid(dev))
        FG_RETURN(CUDA_ERROR_INVALID_DEVICE);
    *major = 9;
    *minor = 0;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    FG_ENTER();
    if (!bytes)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!fg_device_valid(dev))
        FG_RETURN(CUDA_ERROR_INVALID_DEVICE);
    *bytes = (size_t)FG_DEVICE_MEM_BYTES;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
    FG_ENTER();
    if (!canAccessPeer)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!fg_device_valid(dev) || !fg_device_valid(peerDev))
        FG_RETURN(CUDA_ERROR_INVALID_DEVICE);
    *canAccessPeer = dev != peerDev;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    FG_ENTER();
    if (!pool_out)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!fg_device_valid(dev))
        FG_RETURN(CUDA_ERROR_INVALID_DEVICE);
    *pool_out = (CUmemoryPool)&fg.devices[dev].pool_tag;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    return cuDeviceGetDefaultMemPool(pool, dev);
}
