/*
 * Kernel, cooperative, host-function and graph launches. Each exported name
 * is a one-line wrapper passing its row and per-thread flag to the shared
 * recorder for its signature.
 */
#include <string.h>

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

/*
 * The general recorded path: every GPU timing mode, stacks on every
 * launch, the process's first event, the first use of the real function,
 * a build or state the entry stub did not send to the fast path below.
 */
static inline __attribute__((always_inline)) CUresult
launch_general(enum ct_sym sym, unsigned flags, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
               unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
               void **extra)
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

CUresult ct_impl_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
                                void **extra)
{
    return launch_general(CT_SYM_cuLaunchKernel, 0, f, gx, gy, gz, bx, by, bz, shmem, s, params,
                          extra);
}

CUresult ct_impl_cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                     unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                     CUstream s, void **params, void **extra)
{
    return launch_general(CT_SYM_cuLaunchKernel_ptsz, CT_APIF_PER_THREAD, f, gx, gy, gz, bx, by, bz,
                          shmem, s, params, extra);
}

/*
 * The recorded launch of a job's steady state, where the entry stub
 * (shim/cuda_stubs_*.S) sends it when the real function is known,
 * recording is on, the guard is down and ct_launch_fast holds (GPU timing
 * off, no stack per launch, the cycle counter as the clock). One call
 * level below the stub and no call before the real one, so no argument is
 * saved or copied but for the call itself: the record is reserved and its
 * argument words written before the driver runs. Correlation id, stream
 * id and kernel name (cached lookups) are taken after the call, outside
 * the span (stream and device as the stream cache's one word: CT_RF_SDEV).
 * Where the ring's lap has no room, the thread has no ring yet, or the
 * stream or kernel is seen for the first time (resolving it records
 * metadata on this thread), the words go to a scratch copy and the general
 * begin (which pads, waits for nothing or drops) takes them afterwards. The guard is up from the
 * reservation to the commit, so nothing else on this thread (a driver
 * callback, a signal handler's intercepted call) records in between.
 */
static inline __attribute__((always_inline)) CUresult
launch_fast(enum ct_sym sym, unsigned flags, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
            unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
            void **extra)
{
    launch_fn real = (launch_fn)ct_fn(atomic_load_explicit(&ct_real[sym], memory_order_acquire));
    ct_tls_guard = 1;
    struct ct_ring *ring = ct_tls_ring;
    uint64_t scratch[CT_PA_NWORDS];
    uint64_t *w = (uintptr_t)ring > 1 ? ct_ring_begin_fast(ring, CT_REC_API, CT_PA_NWORDS,
                                                           CT_RF_PACKED | CT_RF_SDEV)
                                      : NULL;
    uint64_t *d = __builtin_expect(w != NULL, 1) ? w : scratch;
    d[CT_PA_GRID_XY] = gx | (uint64_t)gy << 32;
    d[CT_PA_GRID_Z_BLK_X] = gz | (uint64_t)bx << 32;
    d[CT_PA_BLK_YZ] = by | (uint64_t)bz << 32;
    d[CT_PA_KERNEL_SHMEM] = (uint64_t)shmem << 32;
    ct_arch_ticks_store(&d[CT_PA_START]);
    CUresult r = real(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
    ct_arch_ticks_store(&d[CT_PA_END]);
    uint64_t sw = ct_stream_word_cached(s, flags & CT_APIF_PER_THREAD);
    uint32_t name = ct_func_name_cached(f);
    if (__builtin_expect(w == NULL || sw == 0 || name == 0, 0)) {
        /* A first sight (the stream's device metadata, the kernel's name)
         * records on this thread: give the reservation up (nothing was
         * committed), resolve, reserve again. */
        if (w)
            memcpy(scratch, w, sizeof(scratch));
        sw = ct_stream_word(s, flags & CT_APIF_PER_THREAD);
        name = ct_func_name(f);
        ring = ct_thread_ring();
        w = ring ? ct_ring_begin(ring, CT_REC_API, CT_PA_NWORDS, CT_RF_PACKED | CT_RF_SDEV) : NULL;
        if (!w) { /* dropped and counted, or no ring for this thread (counted) */
            ct_tls_guard = 0;
            return r;
        }
        memcpy(w, scratch, sizeof(scratch));
    }
    w[CT_PA_CORR] = ct_next_corr();
    w[CT_PA_NAME_FAMILY] = (uint64_t)ct_sym_name_id[sym] | (uint64_t)CT_FAM_LAUNCH << 32 |
                           (uint64_t)(flags & 0xff) << 40;
    w[CT_PA_STREAM] = sw;
    w[CT_PA_RESULT_DEV] = (uint32_t)r;
    w[CT_PA_KERNEL_SHMEM] |= name;
    w[CT_PA_BYTES] = 0;
    ct_ring_commit(ring);
    ct_tls_guard = 0;
    return r;
}

/* Reached from the entry stubs only (hidden): the fast path's two rows. */
CUresult ct_fast_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
                                void **extra);
CUresult ct_fast_cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                     unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                     CUstream s, void **params, void **extra);

CUresult ct_fast_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
                                void **extra)
{
    return launch_fast(CT_SYM_cuLaunchKernel, 0, f, gx, gy, gz, bx, by, bz, shmem, s, params,
                       extra);
}

CUresult ct_fast_cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                     unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                     CUstream s, void **params, void **extra)
{
    return launch_fast(CT_SYM_cuLaunchKernel_ptsz, CT_APIF_PER_THREAD, f, gx, gy, gz, bx, by, bz,
                       shmem, s, params, extra);
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
