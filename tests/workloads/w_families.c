/*
 * Calls every wrapped CUDA driver family, legacy and per-thread, reaching
 * the driver by the path named on the command line:
 *   linked     through the symbols this program is linked against (-lcuda)
 *   dlsym      dlopen("libcuda.so.1") + dlsym of the exported name
 *   procaddr   cuGetProcAddress_v2(base, ABI version, flags) from dlsym
 *   procaddr4  the 4-argument cuGetProcAddress (ABI 11030)
 * Before each call it prints the record the trace must hold, as a line
 *   EXPECT name family bytes copy_kind stream grid block shmem kernel flags
 * so the test compares the trace with this program's own ground truth.
 * Exits non-zero if any call fails.
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/workloads/syms.h"

enum { LINKED, DLSYM, PROCADDR, PROCADDR4 };
static int g_mode;
static void *g_lib;
static CUstream g_s;
static unsigned long long g_sid, g_legacy, g_pt;
static int g_fail;

typedef void (*voidfn)(void);

static voidfn fn(const char *exported)
{
    const struct w_sym *s = w_sym_find(exported);
    if (!s) {
        fprintf(stderr, "no row %s\n", exported);
        exit(2);
    }
    void *p = NULL;
    if (g_mode == LINKED)
        return s->linked;
    if (g_mode == DLSYM) {
        p = dlsym(g_lib, exported);
    } else if (g_mode == PROCADDR) {
        PFN_cuGetProcAddress_v12000 gpa;
        *(void **)&gpa = dlsym(g_lib, "cuGetProcAddress_v2");
        CUdriverProcAddressQueryResult st;
        if (gpa(s->base, &p, s->version, s->per_thread ? 2 : 0, &st) != CUDA_SUCCESS ||
            st != CU_GET_PROC_ADDRESS_SUCCESS)
            p = NULL;
    } else {
        PFN_cuGetProcAddress_v11030 gpa;
        *(void **)&gpa = dlsym(g_lib, "cuGetProcAddress");
        if (gpa(s->base, &p, s->version, s->per_thread ? 2 : 0) != CUDA_SUCCESS)
            p = NULL;
    }
    if (!p) {
        fprintf(stderr, "cannot resolve %s\n", exported);
        exit(2);
    }
    voidfn f;
    memcpy(&f, &p, sizeof(f));
    return f;
}

/* cudaTypedefs.h keeps cuGraphInstantiate's legacy PFNs behind a guard */
typedef CUresult(CUDAAPI *inst_legacy_fn)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t);
#define CALL(type, name, ...) ((type)fn(#name))(__VA_ARGS__)

static void ok(CUresult r, const char *what)
{
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "%s failed: %d\n", what, (int)r);
        g_fail = 1;
    }
}

static void expect(const char *name, const char *family, unsigned long long bytes, const char *kind,
                   unsigned long long stream, unsigned gx, unsigned bx, unsigned shmem,
                   const char *kernel, unsigned flags)
{
    printf("EXPECT %s %s %llu %s %llu %u %u %u %s %u\n", name, family, bytes, kind, stream, gx, bx,
           shmem, kernel, flags);
}

static void host_cb(void *arg)
{
    (void)arg;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "linked";
    g_mode = !strcmp(mode, "dlsym")       ? DLSYM
             : !strcmp(mode, "procaddr")  ? PROCADDR
             : !strcmp(mode, "procaddr4") ? PROCADDR4
                                          : LINKED;
    g_lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!g_lib) {
        fprintf(stderr, "dlopen libcuda.so.1: %s\n", dlerror());
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* Set-up calls are not wrapped: they leave no records. */
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUlibrary lib;
    ok(cuInit(0), "cuInit");
    ok(cuDeviceGet(&dev, 0), "cuDeviceGet");
    ok(cuDevicePrimaryCtxRetain(&ctx, dev), "retain");
    ok(cuCtxSetCurrent(ctx), "set current");
    ok(cuModuleLoadData(&mod, "image"), "module");
    ok(cuLibraryLoadData(&lib, "image", NULL, NULL, 0, NULL, NULL, 0), "library");
    ok(cuStreamCreate(&g_s, CU_STREAM_NON_BLOCKING), "stream");
    ok(cuStreamGetId(g_s, &g_sid), "id");
    ok(cuStreamGetId(CU_STREAM_LEGACY, &g_legacy), "legacy id");
    ok(cuStreamGetId(CU_STREAM_PER_THREAD, &g_pt), "pt id");
    CUevent ev;
    ok(cuEventCreate(&ev, 0), "event");
    /* an event's id in the trace is its handle (cutrace/format.h) */
    unsigned long long evid = (unsigned long long)(uintptr_t)ev;
    CUgraph graph;
    CUgraphExec exec;
    ok(cuGraphCreate(&graph, 0), "graph");
    /* instantiation is wrapped (a graph's edges are read there) */
    expect("cuGraphInstantiateWithFlags", "other", 0, "-", 0, 0, 0, 0, "-", 0);
    ok(cuGraphInstantiateWithFlags(&exec, graph, 0), "instantiate");
    CUgraphExec other;
    CUDA_GRAPH_INSTANTIATE_PARAMS ip = {0};
    expect("cuGraphInstantiate", "other", 0, "-", 0, 0, 0, 0, "-", 0);
    ok(CALL(inst_legacy_fn, cuGraphInstantiate, &other, graph, NULL, NULL, 0), "instantiate");
    expect("cuGraphInstantiate_v2", "other", 0, "-", 0, 0, 0, 0, "-", 0);
    ok(CALL(inst_legacy_fn, cuGraphInstantiate_v2, &other, graph, NULL, NULL, 0), "instantiate");
    expect("cuGraphInstantiateWithParams", "other", 0, "-", 0, 0, 0, 0, "-", 0);
    ok(CALL(PFN_cuGraphInstantiateWithParams_v12000, cuGraphInstantiateWithParams, &other, graph,
            &ip),
       "instantiate");
    expect("cuGraphInstantiateWithParams_ptsz", "other", 0, "-", 0, 0, 0, 0, "-", 1);
    ok(CALL(PFN_cuGraphInstantiateWithParams_v12000_ptsz, cuGraphInstantiateWithParams_ptsz, &other,
            graph, &ip),
       "instantiate");
    CUmemoryPool pool;
    ok(cuDeviceGetDefaultMemPool(&pool, dev), "pool");
    CUdeviceptr d1, d2;
    void *h;
    /* cuMemAlloc is wrapped: linked set-up calls are recorded too */
    expect("cuMemAlloc_v2", "alloc", 1 << 20, "-", 0, 0, 0, 0, "-", 0);
    ok(cuMemAlloc(&d1, 1 << 20), "alloc");
    expect("cuMemAlloc_v2", "alloc", 1 << 20, "-", 0, 0, 0, 0, "-", 0);
    ok(cuMemAlloc(&d2, 1 << 20), "alloc");
    ok(cuMemAllocHost(&h, 1 << 20), "alloc host");

    /* names */
    CUfunction f, fk;
    CUkernel k;
    expect("cuModuleGetFunction", "module", 0, "-", 0, 0, 0, 0, "k_main__10us", 0);
    ok(CALL(PFN_cuModuleGetFunction_v2000, cuModuleGetFunction, &f, mod, "k_main__10us"), "mgf");
    expect("cuLibraryGetKernel", "module", 0, "-", 0, 0, 0, 0, "k_lib__3us", 0);
    ok(CALL(PFN_cuLibraryGetKernel_v12000, cuLibraryGetKernel, &k, lib, "k_lib__3us"), "lgk");
    expect("cuKernelGetFunction", "module", 0, "-", 0, 0, 0, 0, "k_lib__3us", 0);
    ok(CALL(PFN_cuKernelGetFunction_v12000, cuKernelGetFunction, &fk, k), "kgf");

    /* launches */
    expect("cuLaunchKernel", "launch", 0, "-", g_sid, 3, 64, 128, "k_main__10us", 0);
    ok(CALL(PFN_cuLaunchKernel_v4000, cuLaunchKernel, f, 3, 2, 1, 64, 1, 1, 128, g_s, NULL, NULL),
       "launch");
    expect("cuLaunchKernel_ptsz", "launch", 0, "-", g_pt, 1, 32, 0, "k_lib__3us", 1);
    ok(CALL(PFN_cuLaunchKernel_v7000_ptsz, cuLaunchKernel_ptsz, fk, 1, 1, 1, 32, 1, 1, 0, NULL,
            NULL, NULL),
       "launch ptsz");
    expect("cuLaunchKernel", "launch", 0, "-", g_legacy, 7, 16, 0, "k_lib__3us", 0);
    ok(CALL(PFN_cuLaunchKernel_v4000, cuLaunchKernel, (CUfunction)k, 7, 1, 1, 16, 1, 1, 0, NULL,
            NULL, NULL),
       "launch kernel handle");
    CUlaunchConfig cfg = {5, 1, 1, 128, 1, 1, 64, g_s, NULL, 0};
    expect("cuLaunchKernelEx", "launch", 0, "-", g_sid, 5, 128, 64, "k_main__10us", 0);
    ok(CALL(PFN_cuLaunchKernelEx_v11060, cuLaunchKernelEx, &cfg, f, NULL, NULL), "ex");
    cfg.hStream = NULL;
    expect("cuLaunchKernelEx_ptsz", "launch", 0, "-", g_pt, 5, 128, 64, "k_main__10us", 1);
    ok(CALL(PFN_cuLaunchKernelEx_v11060_ptsz, cuLaunchKernelEx_ptsz, &cfg, f, NULL, NULL), "ex pt");
    expect("cuLaunchCooperativeKernel", "launch", 0, "-", g_sid, 2, 64, 0, "k_main__10us", 0);
    ok(CALL(PFN_cuLaunchCooperativeKernel_v9000, cuLaunchCooperativeKernel, f, 2, 1, 1, 64, 1, 1, 0,
            g_s, NULL),
       "coop");
    expect("cuLaunchCooperativeKernel_ptsz", "launch", 0, "-", g_pt, 2, 64, 0, "k_main__10us", 1);
    ok(CALL(PFN_cuLaunchCooperativeKernel_v9000_ptsz, cuLaunchCooperativeKernel_ptsz, f, 2, 1, 1,
            64, 1, 1, 0, NULL, NULL),
       "coop pt");
    expect("cuLaunchHostFunc", "launch", 0, "-", g_sid, 0, 0, 0, "-", 0);
    ok(CALL(PFN_cuLaunchHostFunc_v10000, cuLaunchHostFunc, g_s, host_cb, NULL), "host");
    expect("cuLaunchHostFunc_ptsz", "launch", 0, "-", g_pt, 0, 0, 0, "-", 1);
    ok(CALL(PFN_cuLaunchHostFunc_v10000_ptsz, cuLaunchHostFunc_ptsz, NULL, host_cb, NULL), "host");
    expect("cuGraphLaunch", "graph", 0, "-", g_sid, 0, 0, 0, "-", 0);
    ok(CALL(PFN_cuGraphLaunch_v10000, cuGraphLaunch, exec, g_s), "graph");
    expect("cuGraphLaunch_ptsz", "graph", 0, "-", g_pt, 0, 0, 0, "-", 1);
    ok(CALL(PFN_cuGraphLaunch_v10000_ptsz, cuGraphLaunch_ptsz, exec, NULL), "graph pt");

    /* 1D copies */
    expect("cuMemcpyHtoD_v2", "memcpy", 4096, "HtoD", g_legacy, 0, 0, 0, "-", 0);
    ok(CALL(PFN_cuMemcpyHtoD_v3020, cuMemcpyHtoD_v2, d1, h, 4096), "htod");
    expect("cuMemcpyHtoD_v2_ptds", "memcpy", 4095, "HtoD", g_pt, 0, 0, 0, "-", 1);
    ok(CALL(PFN_cuMemcpyHtoD_v7000_ptds, cuMemcpyHtoD_v2_ptds, d1, h, 4095), "htod pt");
    expect("cuMemcpyDtoH_v2", "memcpy", 2048, "DtoH", g_legacy, 0, 0, 0, "-", 0);
    ok(CALL(PFN_cuMemcpyDtoH_v3020, cuMemcpyDtoH_v2, h, d1, 2048), "dtoh");
    expect("cuMemcpyDtoH_v2_ptds", "memcpy", 2047, "DtoH", g_pt, 0, 0, 0, "-", 1);
    ok(CALL(PFN_cuMemcpyDtoH_v7000_ptds, cuMemcpyDtoH_v2_ptds, h, d1, 2047), "dtoh pt");
    expect("cuMemcpyDtoD_v2", "memcpy", 1024, "DtoD", g_legacy, 0, 0, 0, "-", 0);
    ok(CALL(PFN_cuMemcpyDtoD_v3020, cuMemcpyDtoD_v2, d2, d1, 1024), "dtod");
    expect("cuMemcpyDtoD_v2_ptds", "memcpy", 1023, "DtoD", g_pt, 0, 0, 0, "-", 1);
    ok(CALL(PFN_cuMemcpyDtoD_v7000_ptds, cuMemcpyDtoD_v2_ptds, d2, d1, 1023), "dtod pt");
    expect("cuMemcpyHtoDAsync_v2", "memcpy", 512, "HtoD", g_sid, 0, 0, 0, "-", 2);
    ok(CALL(PFN_cuMemcpyHtoDAsync_v3020, cuMemcpyHtoDAsync_v2, d1, h, 512, g_s), "htod a");
    expect("cuMemcpyHtoDAsync_v2_ptsz", "memcpy", 511, "HtoD", g_pt, 0, 0, 0, "-", 3);
    ok(CALL(PFN_cuMemcpyHtoDAsync_v7000_ptsz, cuMemcpyHtoDAsync_v2_ptsz, d1, h, 511, NULL), "a");
    expect("cuMemcpyDtoHAsync_v2", "memcpy", 256, "DtoH", g_sid, 0, 0, 0, "-", 2);
    ok(CALL(PFN_cuMemcpyDtoHAsync_v3020, cuMemcpyDtoHAsync_v2, h, d1, 256, g_s), "dtoh a");
    expect("cuMemcpyDtoHAsync_v2_ptsz", "memcpy", 255, "DtoH", g_pt, 0, 0, 0, "-", 3);
    ok(CALL(PFN_cuMemcpyDtoHAsync_v7000_ptsz, cuMemcpyDtoHAsync_v2_ptsz, h, d1, 255, NULL), "a");
    expect("cuMemcpyDtoDAsync_v2", "memcpy", 128, "DtoD", g_sid, 0, 0, 0, "-", 2);
    ok(CALL(PFN_cuMemcpyDtoDAsync_v3020, cuMemcpyDtoDAsync_v2, d2, d1, 128, g_s), "dtod a");
    expect("cuMemcpyDtoDAsync_v2_ptsz", "memcpy", 127, "DtoD", g_pt, 0, 0, 0, "-", 3);
    ok(CALL(PFN_cuMemcpyDtoDAsync_v7000_ptsz, cuMemcpyDtoDAsync_v2_ptsz, d2, d1, 127, NULL), "a");
    /* unified addressing: direction from the pointers */
    expect("cuMemcpy", "memcpy", 64, "DtoD", g_legacy, 0, 0, 0, "-", 0);
    ok(CALL(PFN_cuMemcpy_v4000, cuMemcpy, d2, d1, 64), "memcpy");
    expect("cuMemcpy_ptds", "memcpy", 63, "HtoD", g_pt, 0, 0, 0, "-", 1);
    ok(CALL(PFN_cuMemcpy_v7000_ptds, cuMemcpy_ptds, d2, (CUdeviceptr)(uintptr_t)h, 63), "m");
    expect("cuMemcpyAsync", "memcpy", 62, "DtoH", g_sid, 0, 0, 0, "-", 2);
    ok(CALL(PFN_cuMemcpyAsync_v4000, cuMemcpyAsync, (CUdeviceptr)(uintptr_t)h, d1, 62, g_s), "m");
    expect("cuMemcpyAsync_ptsz", "memcpy", 61, "DtoD", g_pt, 0, 0, 0, "-", 3);
    ok(CALL(PFN_cuMemcpyAsync_v7000_ptsz, cuMemcpyAsync_ptsz, d2, d1, 61, NULL), "m");
    expect("cuMemcpyPeer", "memcpy", 32, "peer", g_legacy, 0, 0, 0, "-", 0);
    ok(CALL(PFN_cuMemcpyPeer_v4000, cuMemcpyPeer, d2, ctx, d1, ctx, 32), "peer");
    expect("cuMemcpyPeer_ptds", "memcpy", 31, "peer", g_pt, 0, 0, 0, "-", 1);
    ok(CALL(PFN_cuMemcpyPeer_v7000_ptds, cuMemcpyPeer_ptds, d2, ctx, d1, ctx, 31), "peer");
    expect("cuMemcpyPeerAsync", "memcpy", 30, "peer", g_sid, 0, 0, 0, "-", 2);
    ok(CALL(PFN_cuMemcpyPeerAsync_v4000, cuMemcpyPeerAsync, d2, ctx, d1, ctx, 30, g_s), "peer");
    expect("cuMemcpyPeerAsync_ptsz", "memcpy", 29, "peer", g_pt, 0, 0, 0, "-", 3);
    ok(CALL(PFN_cuMemcpyPeerAsync_v7000_ptsz, cuMemcpyPeerAsync_ptsz, d2, ctx, d1, ctx, 29, NULL),
       "peer");

    /* batches (CUDA 12.8's with failIdx, 13.0's _v2): one record a call,
     * its copies' total bytes, their count in the grid x column and, for a
     * failed 12.8 call, failIdx + 1 in the block x column (grid y) */
    CUdeviceptr bd[3] = {d2, d2 + 512, d2 + 1024}, bs[3] = {d1, d1 + 512, d1 + 1024};
    CUdeviceptr bh[2] = {(CUdeviceptr)(uintptr_t)h, (CUdeviceptr)(uintptr_t)h + 256};
    size_t bsz[3] = {100, 200, 300}, bidx[1] = {0}, fidx = 7;
    CUmemcpyAttributes battr;
    memset(&battr, 0, sizeof(battr));
    battr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    expect("cuMemcpyBatchAsync", "memcpy", 600, "DtoD", g_sid, 3, 0, 0, "-", 2);
    ok(CALL(PFN_cuMemcpyBatchAsync_v12080, cuMemcpyBatchAsync, bd, bs, bsz, 3, &battr, bidx, 1,
            &fidx, g_s),
       "batch");
    expect("cuMemcpyBatchAsync_ptsz", "memcpy", 300, "DtoD", g_pt, 2, 0, 0, "-", 3);
    ok(CALL(PFN_cuMemcpyBatchAsync_v12080_ptsz, cuMemcpyBatchAsync_ptsz, bd, bs, bsz, 2, &battr,
            bidx, 1, &fidx, NULL),
       "batch pt");
    expect("cuMemcpyBatchAsync_v2", "memcpy", 300, "HtoD", g_sid, 2, 0, 0, "-", 2);
    ok(CALL(PFN_cuMemcpyBatchAsync_v13000, cuMemcpyBatchAsync_v2, bd, bh, bsz, 2, &battr, bidx, 1,
            g_s),
       "batch v2");
    /* mixed directions: none */
    CUdeviceptr bm[2] = {d1, (CUdeviceptr)(uintptr_t)h};
    expect("cuMemcpyBatchAsync_v2_ptsz", "memcpy", 300, "none", g_pt, 2, 0, 0, "-", 3);
    ok(CALL(PFN_cuMemcpyBatchAsync_v13000_ptsz, cuMemcpyBatchAsync_v2_ptsz, bd, bm, bsz, 2, &battr,
            bidx, 1, NULL),
       "batch v2 pt");
    /* a batch whose second copy has no destination: the driver's error,
     * its failIdx and errno reach the caller unchanged; nothing enqueued */
    CUdeviceptr bbad[3] = {d2, 0, d2 + 1024};
    expect("cuMemcpyBatchAsync", "memcpy", 600, "-", g_sid, 3, 2, 0, "-", 2);
    errno = 4321;
    CUresult bad_batch = CALL(PFN_cuMemcpyBatchAsync_v12080, cuMemcpyBatchAsync, bbad, bs, bsz, 3,
                              &battr, bidx, 1, &fidx, g_s);
    printf("RESULT bad_batch=%d fail=%zu errno=%d\n", (int)bad_batch, fidx, errno);

    /* 2D and 3D copies */
    CUDA_MEMCPY2D c2;
    memset(&c2, 0, sizeof(c2));
    c2.srcMemoryType = CU_MEMORYTYPE_HOST;
    c2.srcHost = h;
    c2.srcPitch = 64;
    c2.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c2.dstDevice = d1;
    c2.dstPitch = 64;
    c2.WidthInBytes = 64;
    c2.Height = 4;
    expect("cuMemcpy2D_v2", "memcpy", 256, "HtoD", g_legacy, 0, 0, 0, "-", 0);
    ok(CALL(PFN_cuMemcpy2D_v3020, cuMemcpy2D_v2, &c2), "2d");
    expect("cuMemcpy2D_v2_ptds", "memcpy", 256, "HtoD", g_pt, 0, 0, 0, "-", 1);
    ok(CALL(PFN_cuMemcpy2D_v7000_ptds, cuMemcpy2D_v2_ptds, &c2), "2d");
    expect("cuMemcpy2DUnaligned_v2", "memcpy", 256, "HtoD", g_legacy, 0, 0, 0, "-", 0);
    ok(CALL(PFN_cuMemcpy2DUnaligned_v3020, cuMemcpy2DUnaligned_v2, &c2), "2du");
    expect("cuMemcpy2DUnaligned_v2_ptds", "memcpy", 256, "HtoD", g_pt, 0, 0, 0, "-", 1);
    ok(CALL(PFN_cuMemcpy2DUnaligned_v7000_ptds, cuMemcpy2DUnaligned_v2_ptds, &c2), "2du");
    expect("cuMemcpy2DAsync_v2", "memcpy", 256, "HtoD", g_sid, 0, 0, 0, "-", 2);
    ok(CALL(PFN_cuMemcpy2DAsync_v3020, cuMemcpy2DAsync_v2, &c2, g_s), "2da");
    expect("cuMemcpy2DAsync_v2_ptsz", "memcpy", 256, "HtoD", g_pt, 0, 0, 0, "-", 3);
    ok(CALL(PFN_cuMemcpy2DAsync_v7000_ptsz, cuMemcpy2DAsync_v2_ptsz, &c2, NULL), "2da");
    CUDA_MEMCPY3D c3;
    memset(&c3, 0, sizeof(c3));
    c3.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c3.srcDevice = d1;
    c3.srcPitch = 64;
    c3.srcHeight = 4;
    c3.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c3.dstDevice = d2;
    c3.dstPitch = 64;
    c3.dstHeight = 4;
    c3.WidthInBytes = 64;
    c3.Height = 4;
    c3.Depth = 2;
    expect("cuMemcpy3D_v2", "memcpy", 512, "DtoD", g_legacy, 0, 0, 0, "-", 0);
    ok(CALL(PFN_cuMemcpy3D_v3020, cuMemcpy3D_v2, &c3), "3d");
    expect("cuMemcpy3D_v2_ptds", "memcpy", 512, "DtoD", g_pt, 0, 0, 0, "-", 1);
    ok(CALL(PFN_cuMemcpy3D_v7000_ptds, cuMemcpy3D_v2_ptds, &c3), "3d");
    expect("cuMemcpy3DAsync_v2", "memcpy", 512, "DtoD", g_sid, 0, 0, 0, "-", 2);
    ok(CALL(PFN_cuMemcpy3DAsync_v3020, cuMemcpy3DAsync_v2, &c3, g_s), "3da");
    expect("cuMemcpy3DAsync_v2_ptsz", "memcpy", 512, "DtoD", g_pt, 0, 0, 0, "-", 3);
    ok(CALL(PFN_cuMemcpy3DAsync_v7000_ptsz, cuMemcpy3DAsync_v2_ptsz, &c3, NULL), "3da");

    /* memsets */
    expect("cuMemsetD8_v2", "memset", 100, "-", g_legacy, 0, 0, 0, "-", 0);
    ok(CALL(PFN_cuMemsetD8_v3020, cuMemsetD8_v2, d1, 1, 100), "d8");
    expect("cuMemsetD8_v2_ptds", "memset", 101, "-", g_pt, 0, 0, 0, "-", 1);
    ok(CALL(PFN_cuMemsetD8_v7000_ptds, cuMemsetD8_v2_ptds, d1, 1, 101), "d8");
    expect("cuMemsetD16_v2", "memset", 200, "-", g_legacy, 0, 0, 0, "-", 0);
    ok(CALL(PFN_cuMemsetD16_v3020, cuMemsetD16_v2, d1, 1, 100), "d16");
    expect("cuMemsetD16_v2_ptds", "memset", 202, "-", g_pt, 0, 0, 0, "-", 1);
    ok(CALL(PFN_cuMemsetD16_v7000_ptds, cuMemsetD16_v2_ptds, d1, 1, 101), "d16");
    expect("cuMemsetD32_v2", "memset", 400, "-", g_legacy, 0, 0, 0, "-", 0);
    ok(CALL(PFN_cuMemsetD32_v3020, cuMemsetD32_v2, d1, 1, 100), "d32");
    expect("cuMemsetD32_v2_ptds", "memset", 404, "-", g_pt, 0, 0, 0, "-", 1);
    ok(CALL(PFN_cuMemsetD32_v7000_ptds, cuMemsetD32_v2_ptds, d1, 1, 101), "d32");
    expect("cuMemsetD8Async", "memset", 10, "-", g_sid, 0, 0, 0, "-", 2);
    ok(CALL(PFN_cuMemsetD8Async_v3020, cuMemsetD8Async, d1, 1, 10, g_s), "d8a");
    expect("cuMemsetD8Async_ptsz", "memset", 11, "-", g_pt, 0, 0, 0, "-", 3);
    ok(CALL(PFN_cuMemsetD8Async_v7000_ptsz, cuMemsetD8Async_ptsz, d1, 1, 11, NULL), "d8a");
    expect("cuMemsetD16Async", "memset", 20, "-", g_sid, 0, 0, 0, "-", 2);
    ok(CALL(PFN_cuMemsetD16Async_v3020, cuMemsetD16Async, d1, 1, 10, g_s), "d16a");
    expect("cuMemsetD16Async_ptsz", "memset", 22, "-", g_pt, 0, 0, 0, "-", 3);
    ok(CALL(PFN_cuMemsetD16Async_v7000_ptsz, cuMemsetD16Async_ptsz, d1, 1, 11, NULL), "d16a");
    expect("cuMemsetD32Async", "memset", 40, "-", g_sid, 0, 0, 0, "-", 2);
    ok(CALL(PFN_cuMemsetD32Async_v3020, cuMemsetD32Async, d1, 1, 10, g_s), "d32a");
    expect("cuMemsetD32Async_ptsz", "memset", 44, "-", g_pt, 0, 0, 0, "-", 3);
    ok(CALL(PFN_cuMemsetD32Async_v7000_ptsz, cuMemsetD32Async_ptsz, d1, 1, 11, NULL), "d32a");
    expect("cuMemsetD2D8_v2", "memset", 64, "-", g_legacy, 0, 0, 0, "-", 0);
    ok(CALL(PFN_cuMemsetD2D8_v3020, cuMemsetD2D8_v2, d1, 64, 1, 16, 4), "2d8");
    expect("cuMemsetD2D8_v2_ptds", "memset", 64, "-", g_pt, 0, 0, 0, "-", 1);
    ok(CALL(PFN_cuMemsetD2D8_v7000_ptds, cuMemsetD2D8_v2_ptds, d1, 64, 1, 16, 4), "2d8");
    expect("cuMemsetD2D16_v2", "memset", 128, "-", g_legacy, 0, 0, 0, "-", 0);
    ok(CALL(PFN_cuMemsetD2D16_v3020, cuMemsetD2D16_v2, d1, 64, 1, 16, 4), "2d16");
    expect("cuMemsetD2D16_v2_ptds", "memset", 128, "-", g_pt, 0, 0, 0, "-", 1);
    ok(CALL(PFN_cuMemsetD2D16_v7000_ptds, cuMemsetD2D16_v2_ptds, d1, 64, 1, 16, 4), "2d16");
    expect("cuMemsetD2D32_v2", "memset", 256, "-", g_legacy, 0, 0, 0, "-", 0);
    ok(CALL(PFN_cuMemsetD2D32_v3020, cuMemsetD2D32_v2, d1, 64, 1, 16, 4), "2d32");
    expect("cuMemsetD2D32_v2_ptds", "memset", 256, "-", g_pt, 0, 0, 0, "-", 1);
    ok(CALL(PFN_cuMemsetD2D32_v7000_ptds, cuMemsetD2D32_v2_ptds, d1, 64, 1, 16, 4), "2d32");
    expect("cuMemsetD2D8Async", "memset", 64, "-", g_sid, 0, 0, 0, "-", 2);
    ok(CALL(PFN_cuMemsetD2D8Async_v3020, cuMemsetD2D8Async, d1, 64, 1, 16, 4, g_s), "2d8a");
    expect("cuMemsetD2D8Async_ptsz", "memset", 64, "-", g_pt, 0, 0, 0, "-", 3);
    ok(CALL(PFN_cuMemsetD2D8Async_v7000_ptsz, cuMemsetD2D8Async_ptsz, d1, 64, 1, 16, 4, NULL),
       "2d8a");
    expect("cuMemsetD2D16Async", "memset", 128, "-", g_sid, 0, 0, 0, "-", 2);
    ok(CALL(PFN_cuMemsetD2D16Async_v3020, cuMemsetD2D16Async, d1, 64, 1, 16, 4, g_s), "2d16a");
    expect("cuMemsetD2D16Async_ptsz", "memset", 128, "-", g_pt, 0, 0, 0, "-", 3);
    ok(CALL(PFN_cuMemsetD2D16Async_v7000_ptsz, cuMemsetD2D16Async_ptsz, d1, 64, 1, 16, 4, NULL),
       "2d16a");
    expect("cuMemsetD2D32Async", "memset", 256, "-", g_sid, 0, 0, 0, "-", 2);
    ok(CALL(PFN_cuMemsetD2D32Async_v3020, cuMemsetD2D32Async, d1, 64, 1, 16, 4, g_s), "2d32a");
    expect("cuMemsetD2D32Async_ptsz", "memset", 256, "-", g_pt, 0, 0, 0, "-", 3);
    ok(CALL(PFN_cuMemsetD2D32Async_v7000_ptsz, cuMemsetD2D32Async_ptsz, d1, 64, 1, 16, 4, NULL),
       "2d32a");

    /* synchronisation; the event's records and waits carry its id where
     * bytes go, flagged 16 */
    expect("cuEventRecord", "sync", evid, "-", g_sid, 0, 0, 0, "-", 18);
    ok(CALL(PFN_cuEventRecord_v2000, cuEventRecord, ev, g_s), "record");
    expect("cuEventRecord_ptsz", "sync", evid, "-", g_pt, 0, 0, 0, "-", 19);
    ok(CALL(PFN_cuEventRecord_v7000_ptsz, cuEventRecord_ptsz, ev, NULL), "record pt");
    expect("cuEventRecordWithFlags", "sync", evid, "-", g_legacy, 0, 0, 0, "-", 18);
    ok(CALL(PFN_cuEventRecordWithFlags_v11010, cuEventRecordWithFlags, ev, NULL, 0), "record f");
    expect("cuEventRecordWithFlags_ptsz", "sync", evid, "-", g_sid, 0, 0, 0, "-", 19);
    ok(CALL(PFN_cuEventRecordWithFlags_v11010_ptsz, cuEventRecordWithFlags_ptsz, ev, g_s, 0),
       "record f pt");
    expect("cuStreamWaitEvent", "sync", evid, "-", g_sid, 0, 0, 0, "-", 18);
    ok(CALL(PFN_cuStreamWaitEvent_v3020, cuStreamWaitEvent, g_s, ev, 0), "wait");
    expect("cuStreamWaitEvent_ptsz", "sync", evid, "-", g_pt, 0, 0, 0, "-", 19);
    ok(CALL(PFN_cuStreamWaitEvent_v7000_ptsz, cuStreamWaitEvent_ptsz, NULL, ev, 0), "wait pt");
    expect("cuStreamSynchronize", "sync", 0, "-", g_sid, 0, 0, 0, "-", 0);
    ok(CALL(PFN_cuStreamSynchronize_v2000, cuStreamSynchronize, g_s), "ssync");
    expect("cuStreamSynchronize_ptsz", "sync", 0, "-", g_pt, 0, 0, 0, "-", 1);
    ok(CALL(PFN_cuStreamSynchronize_v7000_ptsz, cuStreamSynchronize_ptsz, NULL), "ssync pt");
    /* a sync of the legacy stream is flagged 32: it waits for every
     * blocking stream */
    expect("cuStreamSynchronize", "sync", 0, "-", g_legacy, 0, 0, 0, "-", 32);
    ok(CALL(PFN_cuStreamSynchronize_v2000, cuStreamSynchronize, NULL), "ssync legacy");
    /* an event's sync carries the event, as its records do (16) */
    expect("cuEventSynchronize", "sync", evid, "-", 0, 0, 0, 0, "-", 16);
    ok(CALL(PFN_cuEventSynchronize_v2000, cuEventSynchronize, ev), "esync");
    expect("cuCtxSynchronize", "sync", 0, "-", 0, 0, 0, 0, "-", 0);
    /* no arguments: CALL's variadic part may not be empty in ISO C */
    ok(((PFN_cuCtxSynchronize_v2000)fn("cuCtxSynchronize"))(), "csync");
    expect("cuCtxSynchronize_v2", "sync", 0, "-", 0, 0, 0, 0, "-", 0);
    ok(CALL(PFN_cuCtxSynchronize_v13000, cuCtxSynchronize_v2, ctx), "csync2");

    /* allocation */
    CUdeviceptr a;
    expect("cuMemAlloc_v2", "alloc", 65536, "-", 0, 0, 0, 0, "-", 0);
    ok(CALL(PFN_cuMemAlloc_v3020, cuMemAlloc_v2, &a, 65536), "alloc");
    expect("cuMemFree_v2", "alloc", 0, "-", 0, 0, 0, 0, "-", 8);
    ok(CALL(PFN_cuMemFree_v3020, cuMemFree_v2, a), "free");
    expect("cuMemAllocAsync", "alloc", 4096, "-", g_sid, 0, 0, 0, "-", 2);
    ok(CALL(PFN_cuMemAllocAsync_v11020, cuMemAllocAsync, &a, 4096, g_s), "alloc a");
    expect("cuMemFreeAsync", "alloc", 0, "-", g_sid, 0, 0, 0, "-", 10);
    ok(CALL(PFN_cuMemFreeAsync_v11020, cuMemFreeAsync, a, g_s), "free a");
    expect("cuMemAllocAsync_ptsz", "alloc", 4097, "-", g_pt, 0, 0, 0, "-", 3);
    ok(CALL(PFN_cuMemAllocAsync_v11020_ptsz, cuMemAllocAsync_ptsz, &a, 4097, NULL), "alloc a");
    expect("cuMemFreeAsync_ptsz", "alloc", 0, "-", g_pt, 0, 0, 0, "-", 11);
    ok(CALL(PFN_cuMemFreeAsync_v11020_ptsz, cuMemFreeAsync_ptsz, a, NULL), "free a");
    expect("cuMemAllocFromPoolAsync", "alloc", 8192, "-", g_sid, 0, 0, 0, "-", 2);
    ok(CALL(PFN_cuMemAllocFromPoolAsync_v11020, cuMemAllocFromPoolAsync, &a, 8192, pool, g_s),
       "pool");
    expect("cuMemAllocFromPoolAsync_ptsz", "alloc", 8193, "-", g_pt, 0, 0, 0, "-", 3);
    ok(CALL(PFN_cuMemAllocFromPoolAsync_v11020_ptsz, cuMemAllocFromPoolAsync_ptsz, &a, 8193, pool,
            NULL),
       "pool pt");

    ok(cuCtxSynchronize(), "final sync (linked, recorded as well)");
    expect("cuCtxSynchronize", "sync", 0, "-", 0, 0, 0, 0, "-", 0);
    /* errno and results pass through untouched */
    errno = 4321;
    CUresult bad =
        CALL(PFN_cuLaunchKernel_v4000, cuLaunchKernel, NULL, 1, 1, 1, 1, 1, 1, 0, g_s, NULL, NULL);
    printf("RESULT bad_launch=%d errno=%d\n", (int)bad, errno);
    expect("cuLaunchKernel", "launch", 0, "-", g_sid, 1, 1, 0, "-", 0);
    return g_fail;
}
