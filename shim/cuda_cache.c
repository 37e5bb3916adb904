/*
 * Caches behind the CUDA wrappers: stream handle -> stable id and device,
 * function/kernel handle -> interned name, and the device metadata written
 * the first time a device is seen. The misses call the real driver (never
 * through our wrappers) and so never happen twice for a handle.
 */
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "shim/cuda_record.h"
#include "shim/health.h"
#include "shim/ptrmap.h"

uint32_t ct_sym_name_id[CT_SYM_COUNT];

struct ct_ptrmap ct_stream_map = CT_PTRMAP_EMPTY;
struct ct_ptrmap ct_func_map = CT_PTRMAP_EMPTY;
static __thread uint64_t tls_pt_stream __attribute__((tls_model("initial-exec")));
static _Atomic uint64_t g_legacy_stream;
static atomic_uchar g_described[256];

typedef CUresult (*stream_get_id_fn)(CUstream, unsigned long long *);
typedef CUresult (*stream_get_device_fn)(CUstream, CUdevice *);
typedef CUresult (*stream_get_flags_fn)(CUstream, unsigned int *);
typedef CUresult (*ctx_get_device_fn)(CUdevice *);
typedef CUresult (*func_get_name_fn)(const char **, CUfunction);
typedef CUresult (*kernel_get_name_fn)(const char **, CUkernel);
typedef CUresult (*device_get_name_fn)(char *, int, CUdevice);
typedef CUresult (*device_get_uuid_fn)(CUuuid *, CUdevice);
typedef CUresult (*device_get_pci_fn)(char *, int, CUdevice);
typedef CUresult (*device_get_attr_fn)(int *, CUdevice_attribute, CUdevice);
typedef CUresult (*driver_get_version_fn)(int *);
typedef CUresult (*device_total_mem_fn)(size_t *, CUdevice);

struct driver_fns {
    stream_get_id_fn stream_get_id, stream_get_id_ptsz;
    stream_get_device_fn stream_get_device, stream_get_device_ptsz;
    stream_get_flags_fn stream_get_flags, stream_get_flags_ptsz;
    ctx_get_device_fn ctx_get_device;
    func_get_name_fn func_get_name;
    kernel_get_name_fn kernel_get_name;
    device_get_name_fn device_get_name;
    device_get_uuid_fn device_get_uuid;
    device_get_pci_fn device_get_pci;
    device_get_attr_fn device_get_attr;
    driver_get_version_fn driver_get_version;
    device_total_mem_fn device_total_mem;
};
static struct driver_fns g_fn;
static atomic_int g_fn_ready, g_fn_busy;

/* Resolved once, at the first miss (a wrapper of the driver runs: the job
 * has loaded it). What the driver lacks stays NULL for good: cuStreamGetId
 * came with CUDA 12.0, cuFuncGetName and cuKernelGetName with 12.3,
 * cuStreamGetDevice with 12.8, and asking again would cost 16 dlsym calls
 * a launch. Threads that miss at once each resolve (the same answers) and
 * the first publishes; the others wait only for that copy, never going
 * without (which recorded a first launch on a new stream with stream 0). */
static const struct driver_fns *fns(void)
{
    if (atomic_load_explicit(&g_fn_ready, memory_order_acquire))
        return &g_fn;
    struct driver_fns f;
    f.stream_get_id = (stream_get_id_fn)ct_fn(ct_driver_sym("cuStreamGetId"));
    f.stream_get_id_ptsz = (stream_get_id_fn)ct_fn(ct_driver_sym("cuStreamGetId_ptsz"));
    f.stream_get_device = (stream_get_device_fn)ct_fn(ct_driver_sym("cuStreamGetDevice"));
    f.stream_get_device_ptsz = (stream_get_device_fn)ct_fn(ct_driver_sym("cuStreamGetDevice_ptsz"));
    f.stream_get_flags = (stream_get_flags_fn)ct_fn(ct_driver_sym("cuStreamGetFlags"));
    f.stream_get_flags_ptsz = (stream_get_flags_fn)ct_fn(ct_driver_sym("cuStreamGetFlags_ptsz"));
    f.ctx_get_device = (ctx_get_device_fn)ct_fn(ct_driver_sym("cuCtxGetDevice"));
    f.func_get_name = (func_get_name_fn)ct_fn(ct_driver_sym("cuFuncGetName"));
    f.kernel_get_name = (kernel_get_name_fn)ct_fn(ct_driver_sym("cuKernelGetName"));
    f.device_get_name = (device_get_name_fn)ct_fn(ct_driver_sym("cuDeviceGetName"));
    f.device_get_uuid = (device_get_uuid_fn)ct_fn(ct_driver_sym("cuDeviceGetUuid_v2"));
    if (!f.device_get_uuid)
        f.device_get_uuid = (device_get_uuid_fn)ct_fn(ct_driver_sym("cuDeviceGetUuid"));
    f.device_get_pci = (device_get_pci_fn)ct_fn(ct_driver_sym("cuDeviceGetPCIBusId"));
    f.device_get_attr = (device_get_attr_fn)ct_fn(ct_driver_sym("cuDeviceGetAttribute"));
    f.driver_get_version = (driver_get_version_fn)ct_fn(ct_driver_sym("cuDriverGetVersion"));
    f.device_total_mem = (device_total_mem_fn)ct_fn(ct_driver_sym("cuDeviceTotalMem_v2"));
    if (!f.ctx_get_device && !f.driver_get_version) {
        /* no driver loaded at all (an NCCL or I/O path before CUDA): the
         * lookups wait for one, not for an entry point it lacks */
        return NULL;
    }
    if (!atomic_exchange(&g_fn_busy, 1)) {
        g_fn = f;
        atomic_store_explicit(&g_fn_ready, 1, memory_order_release);
    } else {
        while (!atomic_load_explicit(&g_fn_ready, memory_order_acquire))
            sched_yield(); /* the winner is copying its answers: nanoseconds */
    }
    return &g_fn;
}

int ct_cuda_record_init(void)
{
    for (int i = 0; i < CT_SYM_COUNT; i++)
        ct_sym_name_id[i] = ct_intern(ct_sym_rows[i].exported);
    if (ct_ptrmap_init(&ct_stream_map, 16) || ct_ptrmap_init(&ct_func_map, 16))
        return -1;
    return 0;
}

static uint64_t resolve_stream_inner(CUstream s, int per_thread, int *device);

static void meta(unsigned scope, uint64_t id, const char *key, const char *value)
{
    uint64_t f[CT_META_NFIELDS] = {ct_clock_now(), scope, id, ct_intern(key), ct_intern(value)};
    ct_emit(CT_REC_META, 0, f, CT_META_NFIELDS);
}

static void meta_int(unsigned scope, uint64_t id, const char *key, long long v)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%lld", v);
    meta(scope, id, key, buf);
}

/* Device and driver metadata, once per device, at its first use. */
static void describe_device(const struct driver_fns *f, int dev)
{
    if (dev < 0 || dev >= 256 || atomic_exchange(&g_described[dev], 1))
        return;
    char buf[256], uuid[96] = "", pci[32] = "";
    meta_int(CT_SCOPE_DEVICE, (uint64_t)dev, "ordinal", dev);
    if (f->device_get_name && f->device_get_name(buf, sizeof(buf), dev) == CUDA_SUCCESS) {
        buf[sizeof(buf) - 1] = 0;
        meta(CT_SCOPE_DEVICE, (uint64_t)dev, "name", buf);
    }
    CUuuid u;
    if (f->device_get_uuid && f->device_get_uuid(&u, dev) == CUDA_SUCCESS) {
        const unsigned char *b = (const unsigned char *)u.bytes;
        snprintf(buf, sizeof(buf),
                 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                 b[14], b[15]);
        meta(CT_SCOPE_DEVICE, (uint64_t)dev, "uuid", buf);
        snprintf(uuid, sizeof(uuid), "%.95s", buf);
    }
    if (f->device_get_pci && f->device_get_pci(buf, sizeof(buf), dev) == CUDA_SUCCESS) {
        buf[sizeof(buf) - 1] = 0;
        meta(CT_SCOPE_DEVICE, (uint64_t)dev, "pci_bus_id", buf);
        snprintf(pci, sizeof(pci), "%.31s", buf);
    }
    ct_health_device(dev, uuid, pci); /* health counters: NVML finds it by these */
    int v, major = 0, minor = 0;
    if (f->driver_get_version && f->driver_get_version(&v) == CUDA_SUCCESS)
        meta_int(CT_SCOPE_DEVICE, (uint64_t)dev, "driver_version", v);
    if (f->device_get_attr &&
        f->device_get_attr(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) == 0 &&
        f->device_get_attr(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) == 0) {
        snprintf(buf, sizeof(buf), "%d.%d", major, minor);
        meta(CT_SCOPE_DEVICE, (uint64_t)dev, "compute_capability", buf);
    }
    if (f->device_get_attr &&
        f->device_get_attr(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) == 0)
        meta_int(CT_SCOPE_DEVICE, (uint64_t)dev, "sm_count", v);
    size_t mem;
    if (f->device_total_mem && f->device_total_mem(&mem, dev) == CUDA_SUCCESS)
        meta_int(CT_SCOPE_DEVICE, (uint64_t)dev, "total_memory", (long long)mem);
}

static uint64_t resolve_stream(CUstream s, int per_thread, int *device)
{
    CT_ERRNO_SAVE;
    uint64_t v = resolve_stream_inner(s, per_thread, device);
    CT_ERRNO_RESTORE;
    return v;
}

static uint64_t resolve_stream_inner(CUstream s, int per_thread, int *device)
{
    const struct driver_fns *f = fns();
    unsigned long long id = 0;
    CUdevice dev = -1;
    if (!f)
        return 0;
    stream_get_id_fn get_id =
        per_thread && f->stream_get_id_ptsz ? f->stream_get_id_ptsz : f->stream_get_id;
    /* Without cuStreamGetId (drivers before 12.0) the handle is the id: it
     * is stable while the stream lives (ct_stream_forget drops it when the
     * stream is destroyed), and the legacy (1) and per-thread (2) streams
     * keep theirs. Its low 48 bits: user-space addresses fit. */
    if (!get_id || get_id(s, &id) != CUDA_SUCCESS)
        id = (unsigned long long)(uintptr_t)s & ((1ull << 48) - 1);
    stream_get_device_fn get_dev =
        per_thread && f->stream_get_device_ptsz ? f->stream_get_device_ptsz : f->stream_get_device;
    if (!get_dev || get_dev(s, &dev) != CUDA_SUCCESS) {
        if (!f->ctx_get_device || f->ctx_get_device(&dev) != CUDA_SUCCESS)
            dev = -1;
    }
    *device = dev;
    describe_device(f, dev);
    meta_int(CT_SCOPE_STREAM, id, "device", dev);
    /* a non-blocking stream's work is not waited for by a sync of the
     * legacy stream (the decoder's sync waits) */
    unsigned int fl;
    stream_get_flags_fn get_fl =
        per_thread && f->stream_get_flags_ptsz ? f->stream_get_flags_ptsz : f->stream_get_flags;
    if (get_fl && get_fl(s, &fl) == CUDA_SUCCESS)
        meta_int(CT_SCOPE_STREAM, id, "nonblocking", !!(fl & CU_STREAM_NON_BLOCKING));
    return (uint64_t)id | ((uint64_t)(dev + 1) & 0xffff) << 48;
}

uint64_t ct_stream_id_slow(CUstream s, int per_thread, int *device)
{
    uint64_t v;
    if (s == NULL)
        s = per_thread ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
    if (s == CU_STREAM_PER_THREAD) {
        v = tls_pt_stream;
        if (!v)
            v = tls_pt_stream = resolve_stream(s, 1, device);
    } else if (s == CU_STREAM_LEGACY) {
        v = atomic_load_explicit(&g_legacy_stream, memory_order_relaxed);
        if (!v) {
            v = resolve_stream(s, 0, device);
            atomic_store_explicit(&g_legacy_stream, v, memory_order_relaxed);
        }
    } else {
        v = ct_ptrmap_get(&ct_stream_map, (uintptr_t)s);
        if (!v) {
            v = resolve_stream(s, 0, device);
            if (v)
                ct_ptrmap_put(&ct_stream_map, (uintptr_t)s, v);
        }
    }
    *device = (int)((v >> 48) & 0xffff) - 1;
    return v & ((1ull << 48) - 1);
}

uint64_t ct_stream_word_peek(CUstream s, int per_thread)
{
    if (s == NULL)
        s = per_thread ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
    if (s == CU_STREAM_PER_THREAD)
        return tls_pt_stream;
    if (s == CU_STREAM_LEGACY)
        return atomic_load_explicit(&g_legacy_stream, memory_order_relaxed);
    return ct_ptrmap_get(&ct_stream_map, (uintptr_t)s);
}

void ct_stream_forget(CUstream s)
{
    /* The handle may be reused for a new stream: make the next use resolve. */
    if (s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD &&
        ct_ptrmap_get(&ct_stream_map, (uintptr_t)s))
        ct_ptrmap_put(&ct_stream_map, (uintptr_t)s, 0);
}

uint32_t ct_func_name_slow(const void *handle)
{
    uint64_t v = ct_ptrmap_get(&ct_func_map, (uintptr_t)handle);
    if (v)
        return (uint32_t)v;
    CT_ERRNO_SAVE;
    const struct driver_fns *f = fns();
    const char *name = NULL;
    if (f && f->func_get_name &&
        f->func_get_name(&name, (CUfunction)(uintptr_t)handle) != CUDA_SUCCESS)
        name = NULL;
    /* cuLaunchKernel also takes a CUkernel cast to CUfunction */
    if (!name && f && f->kernel_get_name &&
        f->kernel_get_name(&name, (CUkernel)(uintptr_t)handle) != CUDA_SUCCESS)
        name = NULL;
    /* No name from the driver (before 12.3, or a handle it does not know)
     * and none from a module call seen: the handle names it, once. */
    char fallback[40];
    if (!name) {
        snprintf(fallback, sizeof(fallback), "kernel@%#llx", (unsigned long long)(uintptr_t)handle);
        name = fallback;
    }
    uint32_t id = ct_intern(name);
    if (id)
        ct_ptrmap_put(&ct_func_map, (uintptr_t)handle, id | 1ull << 32);
    CT_ERRNO_RESTORE;
    return id;
}

void ct_func_name_set(const void *handle, const char *name)
{
    uint32_t id = ct_intern(name);
    if (handle && id)
        ct_ptrmap_put(&ct_func_map, (uintptr_t)handle, id | 1ull << 32);
}

void ct_func_name_copy(const void *to, const void *from)
{
    uint32_t id = ct_func_name(from);
    if (to && id)
        ct_ptrmap_put(&ct_func_map, (uintptr_t)to, id | 1ull << 32);
}
