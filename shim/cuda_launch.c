/*
 * Kernel, cooperative, host-function and graph launches. Each exported name
 * is a one-line wrapper passing its row and per-thread flag to the shared
 * recorder for its signature.
 */
#include "shim/gpu.h"

CUresult cuLaunchKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void **, void **);
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *, CUfunction, void **, void **);
CUresult cuLaunchCooperativeKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                        unsigned, unsigned, unsigned, CUstream, void **);
CUresult cuLaunchHostFunc_ptsz(CUstream, CUhostFn, void *);
CUresult cuGraphLaunch_ptsz(CUgraphExec, CUstream);

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*launch_ex_fn)(const CUlaunchConfig *, CUfunction, void **, void **);
typedef CUresult (*coop_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            unsigned, CUstream, void **);
typedef CUresult (*host_fn)(CUstream, CUhostFn, void *);
typedef CUresult (*graph_fn)(CUgraphExec, CUstream);

static inline __attribute__((always_inline)) void
record_launch(struct ct_call *c, struct ct_gpu_op *g, enum ct_sym sym, CUresult r, unsigned flags,
              const void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
              unsigned bz, unsigned shmem, CUstream s)
{
    int dev;
    uint64_t sid = ct_stream_id(s, flags & CT_APIF_PER_THREAD, &dev);
    uint32_t name = ct_func_name(f);
    ct_gpu_after(c, g, s, flags, sid, dev, CT_GPU_KERNEL, name, 0, 0);
    if (__builtin_expect(ct_cfg.stacks == 2, 0))
        ct_stack_capture(c->corr);
    uint64_t *w = ct_call_record(c, sym, CT_FAM_LAUNCH, r, sid, dev, flags, 0);
    if (!w)
        return;
    w[CT_PA_KERNEL_SHMEM] = name | (uint64_t)shmem << 32;
    w[CT_PA_GRID_XY] = gx | (uint64_t)gy << 32;
    w[CT_PA_GRID_Z_BLK_X] = gz | (uint64_t)bx << 32;
    w[CT_PA_BLK_YZ] = by | (uint64_t)bz << 32;
    w[CT_PA_BYTES] = 0;
    ct_call_commit();
}

/* The recorded path, kept out of line so that the pass-through path (paused
 * or off) stays a few instructions and a tail call. */
static __attribute__((noinline)) CUresult launch_recorded(enum ct_sym sym, unsigned flags,
                                                          CUfunction f, unsigned gx, unsigned gy,
                                                          unsigned gz, unsigned bx, unsigned by,
                                                          unsigned bz, unsigned shmem, CUstream s,
                                                          void **params, void **extra)
{
    launch_fn real = CT_REAL(launch_fn, sym);
    if (!real)
        return CT_NOT_AVAILABLE;
    if (!ct_shim_recording())
        return real(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
    struct ct_call c;
    struct ct_gpu_op g;
    ct_call_enter_gpu(&c, s, flags, &g);
    CUresult r = real(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
    record_launch(&c, &g, sym, r, flags, f, gx, gy, gz, bx, by, bz, shmem, s);
    ct_call_leave(&c);
    return r;
}

/* Same signature as the exported names, so both exits of those are plain
 * tail jumps that leave the stack arguments where they are. */
static __attribute__((noinline)) CUresult launch_slow(CUfunction f, unsigned gx, unsigned gy,
                                                      unsigned gz, unsigned bx, unsigned by,
                                                      unsigned bz, unsigned shmem, CUstream s,
                                                      void **params, void **extra)
{
    return launch_recorded(CT_SYM_cuLaunchKernel, 0, f, gx, gy, gz, bx, by, bz, shmem, s, params,
                           extra);
}

static __attribute__((noinline)) CUresult launch_slow_ptsz(CUfunction f, unsigned gx, unsigned gy,
                                                           unsigned gz, unsigned bx, unsigned by,
                                                           unsigned bz, unsigned shmem, CUstream s,
                                                           void **params, void **extra)
{
    return launch_recorded(CT_SYM_cuLaunchKernel_ptsz, CT_APIF_PER_THREAD, f, gx, gy, gz, bx, by,
                           bz, shmem, s, params, extra);
}

CUresult ct_impl_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
                                void **extra)
{
    void *p = atomic_load_explicit(&ct_real[CT_SYM_cuLaunchKernel], memory_order_acquire);
    if (__builtin_expect(p != NULL, 1) && ct_shim_passthrough())
        return ((launch_fn)ct_fn(p))(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
    return launch_slow(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}

CUresult ct_impl_cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                     unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                     CUstream s, void **params, void **extra)
{
    void *p = atomic_load_explicit(&ct_real[CT_SYM_cuLaunchKernel_ptsz], memory_order_acquire);
    if (__builtin_expect(p != NULL, 1) && ct_shim_passthrough())
        return ((launch_fn)ct_fn(p))(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
    return launch_slow_ptsz(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}

static CUresult launch_ex(enum ct_sym sym, unsigned flags, const CUlaunchConfig *cfg, CUfunction f,
                          void **params, void **extra)
{
    launch_ex_fn real = CT_REAL(launch_ex_fn, sym);
    if (!real)
        return CT_NOT_AVAILABLE;
    if (!ct_shim_recording() || !cfg)
        return real(cfg, f, params, extra);
    struct ct_call c;
    struct ct_gpu_op g;
    ct_call_enter_gpu(&c, cfg->hStream, flags, &g);
    CUresult r = real(cfg, f, params, extra);
    record_launch(&c, &g, sym, r, flags, f, cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ,
                  cfg->blockDimX, cfg->blockDimY, cfg->blockDimZ, cfg->sharedMemBytes,
                  cfg->hStream);
    ct_call_leave(&c);
    return r;
}

CUresult ct_impl_cuLaunchKernelEx(const CUlaunchConfig *cfg, CUfunction f, void **params,
                                  void **extra)
{
    return launch_ex(CT_SYM_cuLaunchKernelEx, 0, cfg, f, params, extra);
}

CUresult ct_impl_cuLaunchKernelEx_ptsz(const CUlaunchConfig *cfg, CUfunction f, void **params,
                                       void **extra)
{
    return launch_ex(CT_SYM_cuLaunchKernelEx_ptsz, CT_APIF_PER_THREAD, cfg, f, params, extra);
}

static CUresult coop(enum ct_sym sym, unsigned flags, CUfunction f, unsigned gx, unsigned gy,
                     unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream s,
                     void **params)
{
    coop_fn real = CT_REAL(coop_fn, sym);
    if (!real)
        return CT_NOT_AVAILABLE;
    if (!ct_shim_recording())
        return real(f, gx, gy, gz, bx, by, bz, shmem, s, params);
    struct ct_call c;
    struct ct_gpu_op g;
    ct_call_enter_gpu(&c, s, flags, &g);
    CUresult r = real(f, gx, gy, gz, bx, by, bz, shmem, s, params);
    record_launch(&c, &g, sym, r, flags, f, gx, gy, gz, bx, by, bz, shmem, s);
    ct_call_leave(&c);
    return r;
}

CUresult ct_impl_cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                           unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                           CUstream s, void **params)
{
    return coop(CT_SYM_cuLaunchCooperativeKernel, 0, f, gx, gy, gz, bx, by, bz, shmem, s, params);
}

CUresult ct_impl_cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                                unsigned bx, unsigned by, unsigned bz,
                                                unsigned shmem, CUstream s, void **params)
{
    return coop(CT_SYM_cuLaunchCooperativeKernel_ptsz, CT_APIF_PER_THREAD, f, gx, gy, gz, bx, by,
                bz, shmem, s, params);
}

static CUresult host_func(enum ct_sym sym, unsigned flags, CUstream s, CUhostFn fn, void *data)
{
    host_fn real = CT_REAL(host_fn, sym);
    if (!real)
        return CT_NOT_AVAILABLE;
    if (!ct_shim_recording())
        return real(s, fn, data);
    struct ct_call c;
    ct_call_enter(&c);
    CUresult r = real(s, fn, data);
    int dev;
    uint64_t sid = ct_stream_id(s, flags & CT_APIF_PER_THREAD, &dev);
    ct_call_simple(&c, sym, CT_FAM_LAUNCH, r, sid, dev, flags, 0, 0);
    ct_call_leave(&c);
    return r;
}

CUresult ct_impl_cuLaunchHostFunc(CUstream s, CUhostFn fn, void *data)
{
    return host_func(CT_SYM_cuLaunchHostFunc, 0, s, fn, data);
}

CUresult ct_impl_cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void *data)
{
    return host_func(CT_SYM_cuLaunchHostFunc_ptsz, CT_APIF_PER_THREAD, s, fn, data);
}

static CUresult graph_launch(enum ct_sym sym, unsigned flags, CUgraphExec g, CUstream s)
{
    graph_fn real = CT_REAL(graph_fn, sym);
    if (!real)
        return CT_NOT_AVAILABLE;
    if (!ct_shim_recording())
        return real(g, s);
    struct ct_call c;
    struct ct_gpu_op op;
    ct_call_enter_gpu(&c, s, flags, &op);
    CUresult r = real(g, s);
    int dev;
    uint64_t sid = ct_stream_id(s, flags & CT_APIF_PER_THREAD, &dev);
    /* In event mode the whole replay is one interval; CUPTI reports its nodes. */
    ct_gpu_after(&c, &op, s, flags, sid, dev, CT_GPU_GRAPH, 0, 0, 0);
    ct_call_simple(&c, sym, CT_FAM_GRAPH, r, sid, dev, flags, 0, 0);
    ct_call_leave(&c);
    return r;
}

CUresult ct_impl_cuGraphLaunch(CUgraphExec g, CUstream s)
{
    return graph_launch(CT_SYM_cuGraphLaunch, 0, g, s);
}

CUresult ct_impl_cuGraphLaunch_ptsz(CUgraphExec g, CUstream s)
{
    return graph_launch(CT_SYM_cuGraphLaunch_ptsz, CT_APIF_PER_THREAD, g, s);
}
