/*
 * ct_synth: writes a trace through the real recorder without a GPU, for the
 * golden file, the size benchmark and the demo before the shim exists.
 *
 * The "training loop" it writes states its own mix (per iteration, per
 * rank): 40 layers x (1 forward + 2 backward) kernel launches, each an API
 * span (cuLaunchKernel, 3-8 us) and a GPU kernel interval (10-400 us by
 * layer, +-2% jitter); 1 input copy HtoD (API span + GPU interval); 4
 * gradient all-reduces (NCCL op + GPU interval); 2 dataset preads; 1
 * cuStreamSynchronize; 1 NVTX ProfilerStep#N range. Timestamps are ns with
 * uniform jitter of a few hundred ns, as real host clocks show.
 *
 * usage: ct_synth -o FILE [--iterations N] [--zstd-level L] [--golden [--salvaged]]
 *   --golden writes a small fixed trace whose record contents (not pid/tid
 *   or clock pairs) are the same on every run (with a few counter records
 *   since format v2).
 *   --salvaged (format v3): then the process "dies" in step 1: three marks
 *   and an I/O span reach its ring but not the file, and the trace is
 *   completed from its live mapping by the salvage, as after a SIGKILL
 *   (signal 9 known).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/live.h"
#include "src/recorder.h"
#include "src/salvage.h"

static uint64_t g_rng = 88172645463325252ull;
static uint64_t rnd(uint64_t n)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return n ? g_rng % n : 0;
}

struct synth {
    uint64_t now; /* host time, ns */
    uint64_t gpu; /* when the stream is free, ns */
    uint64_t corr;
    uint64_t seq;
    uint32_t launch, sync, htod, allreduce, pread, domain;
    uint32_t kernels[120];
    uint32_t path;
    /* the last all-reduce: its corr and GPU interval (golden format v4) */
    uint64_t ar_corr, ar_s, ar_e;
};

static void emit(unsigned kind, const uint64_t *f, unsigned n)
{
    /* Times here are already ns; a full ring is retried (never in the shim). */
    while (ct_emit(kind, CT_RF_NS, f, n) != 0)
        usleep(100);
}

static void api_and_gpu(struct synth *s, uint32_t name, unsigned family, uint32_t kernel,
                        uint64_t gpu_dur, uint64_t bytes, unsigned copy, unsigned gpu_type)
{
    uint64_t a[CT_API_NFIELDS] = {0};
    s->now += 500 + rnd(700);
    a[CT_API_START] = s->now;
    s->now += 3000 + rnd(5000);
    a[CT_API_END] = s->now;
    a[CT_API_NAME] = name;
    a[CT_API_CORR] = ++s->corr;
    a[CT_API_FAMILY] = family;
    a[CT_API_STREAM] = 7;
    a[CT_API_KERNEL] = kernel;
    if (family == CT_FAM_LAUNCH) {
        a[CT_API_GRID_X] = 108 * (1 + kernel % 4);
        a[CT_API_GRID_Y] = a[CT_API_GRID_Z] = 1;
        a[CT_API_BLOCK_X] = 256;
        a[CT_API_BLOCK_Y] = a[CT_API_BLOCK_Z] = 1;
    }
    a[CT_API_BYTES] = bytes;
    a[CT_API_COPY_KIND] = copy;
    emit(CT_REC_API, a, CT_API_NFIELDS);
    uint64_t g[CT_GPU_NFIELDS] = {0};
    uint64_t start = s->gpu > a[CT_API_START] + 2000 ? s->gpu : a[CT_API_START] + 2000;
    start += rnd(300);
    g[CT_GPU_START] = start;
    g[CT_GPU_END] = start + gpu_dur;
    g[CT_GPU_STREAM] = 7;
    g[CT_GPU_CORR] = s->corr;
    g[CT_GPU_TYPE] = gpu_type;
    g[CT_GPU_NAME] = kernel;
    g[CT_GPU_BYTES] = bytes;
    g[CT_GPU_COPY_KIND] = copy;
    g[CT_GPU_SOURCE] = CT_SRC_CUPTI;
    emit(CT_REC_GPU, g, CT_GPU_NFIELDS);
    s->gpu = g[CT_GPU_END];
}

static uint64_t jitter(uint64_t d)
{
    return d - d / 50 + rnd(d / 25 + 1);
}

static void iteration(struct synth *s, int it)
{
    uint64_t step_start = s->now;
    for (int k = 0; k < 2; k++) {
        uint64_t io[CT_IO_NFIELDS] = {0};
        s->now += 1000 + rnd(2000);
        io[CT_IO_START] = s->now;
        s->now += 20000 + rnd(40000);
        io[CT_IO_END] = s->now;
        io[CT_IO_OP] = s->pread;
        io[CT_IO_FD] = 9;
        io[CT_IO_FD_TYPE] = CT_FD_FILE;
        io[CT_IO_PATH] = s->path;
        io[CT_IO_BYTES] = 1 << 20;
        io[CT_IO_RESULT] = 1 << 20;
        io[CT_IO_OFFSET] = (uint64_t)(it * 2 + k) << 20;
        emit(CT_REC_IO, io, CT_IO_NFIELDS);
    }
    api_and_gpu(s, s->htod, CT_FAM_MEMCPY, 0, jitter(80000), 2u << 20, CT_COPY_HTOD, CT_GPU_MEMCPY);
    for (int layer = 0; layer < 40; layer++)
        api_and_gpu(s, s->launch, CT_FAM_LAUNCH, s->kernels[layer],
                    jitter(10000 + (uint64_t)layer * 9000), 0, 0, CT_GPU_KERNEL);
    for (int layer = 39; layer >= 0; layer--) {
        for (int k = 0; k < 2; k++)
            api_and_gpu(s, s->launch, CT_FAM_LAUNCH, s->kernels[40 + layer * 2 + k],
                        jitter(15000 + (uint64_t)layer * 8000), 0, 0, CT_GPU_KERNEL);
        if (layer % 10 == 0) {
            uint64_t n[CT_NCCL_NFIELDS] = {0};
            s->now += 800 + rnd(500);
            n[CT_NCCL_START] = s->now;
            s->now += 6000 + rnd(4000);
            n[CT_NCCL_END] = s->now;
            n[CT_NCCL_OP] = CT_NCCL_OP_ALLREDUCE;
            n[CT_NCCL_COMM] = 0x5eed5eed12345678ull;
            n[CT_NCCL_SEQ] = ++s->seq;
            n[CT_NCCL_COUNT] = 25u << 20;
            n[CT_NCCL_DTYPE] = 7; /* float32 */
            n[CT_NCCL_BYTES] = 100u << 20;
            n[CT_NCCL_ROOT] = (uint64_t)-1;
            n[CT_NCCL_PEER] = (uint64_t)-1;
            n[CT_NCCL_STREAM] = 9;
            n[CT_NCCL_CORR] = ++s->corr;
            n[CT_NCCL_NRANKS] = 8;
            n[CT_NCCL_GPU_START] = s->gpu + rnd(2000);
            n[CT_NCCL_GPU_END] = n[CT_NCCL_GPU_START] + jitter(900000);
            emit(CT_REC_NCCL, n, CT_NCCL_NFIELDS);
            s->ar_corr = s->corr;
            s->ar_s = n[CT_NCCL_GPU_START];
            s->ar_e = n[CT_NCCL_GPU_END];
            uint64_t g[CT_GPU_NFIELDS] = {0};
            g[CT_GPU_START] = n[CT_NCCL_GPU_START];
            g[CT_GPU_END] = n[CT_NCCL_GPU_END];
            g[CT_GPU_STREAM] = 9;
            g[CT_GPU_CORR] = s->corr;
            g[CT_GPU_TYPE] = CT_GPU_NCCL;
            g[CT_GPU_NAME] = s->allreduce;
            g[CT_GPU_BYTES] = 100u << 20;
            g[CT_GPU_SOURCE] = CT_SRC_CUPTI;
            emit(CT_REC_GPU, g, CT_GPU_NFIELDS);
        }
    }
    uint64_t a[CT_API_NFIELDS] = {0};
    s->now += 500 + rnd(500);
    a[CT_API_START] = s->now;
    s->now = (s->gpu > s->now ? s->gpu : s->now) + 3000 + rnd(2000);
    a[CT_API_END] = s->now;
    a[CT_API_NAME] = s->sync;
    a[CT_API_CORR] = ++s->corr;
    a[CT_API_FAMILY] = CT_FAM_SYNC;
    a[CT_API_STREAM] = 7;
    emit(CT_REC_API, a, CT_API_NFIELDS);
    char msg[32];
    snprintf(msg, sizeof(msg), "ProfilerStep#%d", it);
    uint64_t r[CT_NVTX_NFIELDS] = {step_start, s->now, s->domain, ct_intern(msg), 0};
    emit(CT_REC_NVTX_RANGE, r, CT_NVTX_NFIELDS);
}

/* Format v4: NCCL's own account of the last all-reduce (its profiler
 * plugin's descriptor, and a ProxyOp per channel: a send to ring peer 1
 * and a receive from peer 7, two channels); v5: its kernel channels and
 * one ProxyOp's network work; v6: two raw proxy steps; v7: an NVSHMEM
 * collective. */
static void nccl_internals(struct synth *s)
{
    uint64_t info[CT_NINFO_NFIELDS] = {
        s->ar_s, s->ar_corr, ct_intern("RING"), ct_intern("SIMPLE"), 2, 16, 0};
    emit(CT_REC_NCCL_INFO, info, CT_NINFO_NFIELDS);
    uint64_t len = s->ar_e - s->ar_s;
    for (unsigned ch = 0; ch < 2; ch++)
        for (unsigned send = 0; send < 2; send++) {
            uint64_t p[CT_NPROXY_NFIELDS] = {0};
            p[CT_NPROXY_START] = s->ar_s + 1000 * ch;
            p[CT_NPROXY_END] = s->ar_e - 500 * send;
            p[CT_NPROXY_CORR] = s->ar_corr;
            p[CT_NPROXY_CHANNEL] = ch;
            p[CT_NPROXY_PEER] = send ? 1 : 7;
            p[CT_NPROXY_SEND] = send;
            p[CT_NPROXY_STEPS] = 28;
            p[CT_NPROXY_BYTES] = 100u << 19; /* half the op's bytes a channel */
            p[CT_NPROXY_GPU_WAIT] = len / 10;
            p[CT_NPROXY_PEER_WAIT] = len / 5;
            p[CT_NPROXY_NET] = send ? len / 2 : 0;
            p[CT_NPROXY_FLUSH] = send ? 0 : len / 100;
            p[CT_NPROXY_NET_BUSY] = len / 2;
            p[CT_NPROXY_NSTEPS] = 28;
            p[CT_NPROXY_CHUNK] = 1u << 19;
            emit(CT_REC_NCCL_PROXY, p, CT_NPROXY_NFIELDS);
        }
    /* format v5: its kernel's two channels, the second starting 2 us later
     * and stopping with the op, the first 3 us before */
    for (unsigned ch = 0; ch < 2; ch++) {
        uint64_t c[CT_NCHAN_NFIELDS] = {s->ar_s + 2000 * ch, s->ar_e - 3000 * (1 - ch), s->ar_corr,
                                        ch};
        emit(CT_REC_NCCL_CHANNEL, c, CT_NCHAN_NFIELDS);
    }
    /* ... and its send's network work on one IB queue pair: 28 work
     * requests of its ProxyOp's bytes, busy half the op */
    uint64_t n[CT_NNET_NFIELDS] = {s->ar_s + len / 4,
                                   s->ar_e - len / 10,
                                   s->ar_corr,
                                   1,
                                   1,
                                   1,
                                   CT_NNET_IB,
                                   0,
                                   0x10b,
                                   28,
                                   100u << 19,
                                   len / 2,
                                   0,
                                   0};
    emit(CT_REC_NCCL_NET, n, CT_NNET_NFIELDS);
    /* ... and (profiler ABI v7) its user tag and channel 0's compute phase */
    uint64_t tag[CT_NTAG_NFIELDS] = {s->ar_s, s->ar_corr, 42};
    emit(CT_REC_NCCL_TAG, tag, CT_NTAG_NFIELDS);
    uint64_t ph[CT_NPHASE_NFIELDS] = {s->ar_s + 1000, s->ar_e - 4000, s->ar_corr, 0,
                                      CT_NPHASE_COMPUTE};
    emit(CT_REC_NCCL_PHASE, ph, CT_NPHASE_NFIELDS);
    /* format v6 (CUTRACE_NCCL_STEPS): channel 1's first raw steps, a send
     * (GPU wait 1 us, peer wait 2 us, network 40 us) and a receive that
     * never flushed (peer wait 30 us, GPU wait 5 us) */
    uint64_t t0 = s->ar_s + 1000;
    uint64_t st[CT_NSTEP_NFIELDS] = {t0, t0, t0 + 1000, t0 + 3000, t0 + 43000, s->ar_corr,
                                     1,  1,  1,         0,         1u << 19};
    emit(CT_REC_NCCL_STEP, st, CT_NSTEP_NFIELDS);
    uint64_t rt[CT_NSTEP_NFIELDS] = {t0 + 10, t0 + 10, 0, t0 + 30010, t0 + 35010, s->ar_corr,
                                     1,       7,       0, 0,          1u << 19};
    emit(CT_REC_NCCL_STEP, rt, CT_NSTEP_NFIELDS);
    /* format v7: an NVSHMEM collective (nvshmemx_float_sum_reduce_on_stream
     * of 1 Mi floats over a 4-PE team), marked in its dtype, timed by its
     * own interval */
    uint64_t v[CT_NCCL_NFIELDS] = {0};
    v[CT_NCCL_START] = s->ar_e + 5000;
    v[CT_NCCL_END] = s->ar_e + 12000;
    v[CT_NCCL_OP] = CT_NCCL_OP_ALLREDUCE;
    v[CT_NCCL_COMM] = 0x5e3e5e3e00000004ull;
    v[CT_NCCL_SEQ] = 0;
    v[CT_NCCL_COUNT] = 1u << 20;
    v[CT_NCCL_DTYPE] = CT_NCCL_DTYPE_NVSHMEM | 1; /* float: CT_SHMEM_TYPES' index 1 */
    v[CT_NCCL_BYTES] = 4u << 20;
    v[CT_NCCL_REDOP] = 5; /* sum: enum ct_shmem_redop */
    v[CT_NCCL_ROOT] = (uint64_t)-1;
    v[CT_NCCL_PEER] = (uint64_t)-1;
    v[CT_NCCL_STREAM] = 9;
    v[CT_NCCL_CORR] = ++s->corr;
    v[CT_NCCL_RANK] = 1;
    v[CT_NCCL_NRANKS] = 4;
    v[CT_NCCL_GPU_START] = s->ar_e + 20000;
    v[CT_NCCL_GPU_END] = s->ar_e + 120000;
    emit(CT_REC_NCCL, v, CT_NCCL_NFIELDS);
}

/* The golden salvaged trace: what is written stays, the writer stops
 * (as a killed process's), records reach the ring only, and the salvage
 * completes the file in place (the recorder's later footer goes to the
 * replaced file, unlinked). */
static int die_and_salvage(struct synth *s, const char *out)
{
    ct_recorder_flush(30000);
    ct_recorder_pause_writer(1);
    for (int i = 0; i < 3; i++) {
        char msg[32];
        snprintf(msg, sizeof(msg), "killed in step %d", i);
        uint64_t mark[CT_MARK_NFIELDS] = {s->now + 1000u * (uint64_t)i, s->domain, ct_intern(msg)};
        emit(CT_REC_NVTX_MARK, mark, CT_MARK_NFIELDS);
    }
    uint64_t io[CT_IO_NFIELDS] = {s->now + 5000, s->now + 9000, s->pread, 9,   CT_FD_FILE,
                                  s->path,       4096,          4096,     8192};
    emit(CT_REC_IO, io, CT_IO_NFIELDS);
    size_t flen = 0, mlen = 0;
    FILE *f = fopen(ct_live_where_path(), "rb");
    uint8_t *map = NULL, *file = NULL;
    if (f && fseek(f, 0, SEEK_END) == 0 && (mlen = (size_t)ftell(f)) > 0 && (map = malloc(mlen)) &&
        fseek(f, 0, SEEK_SET) == 0)
        mlen = fread(map, 1, mlen, f);
    if (f)
        fclose(f);
    f = fopen(out, "rb");
    if (f && fseek(f, 0, SEEK_END) == 0 && (flen = (size_t)ftell(f)) > 0 && (file = malloc(flen)) &&
        fseek(f, 0, SEEK_SET) == 0)
        flen = fread(file, 1, flen, f);
    if (f)
        fclose(f);
    struct ct_live_map m;
    struct ct_salvage sv;
    char err[256] = "";
    int rc = map && file ? ct_live_map_mem(&m, map, mlen) : -EIO;
    if (!rc)
        rc = ct_salvage_build(&m, (int64_t)flen, 9, &sv, err, sizeof(err));
    if (rc) {
        fprintf(stderr, "ct_synth: salvage failed: %s\n", err);
        return 1;
    }
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp", out);
    f = fopen(tmp, "wb");
    int ok = f && fwrite(file, 1, (size_t)sv.prefix_len, f) == sv.prefix_len &&
             fwrite(sv.tail.p, 1, sv.tail.len, f) == sv.tail.len;
    if (f)
        ok &= fclose(f) == 0;
    ok = ok && rename(tmp, out) == 0;
    ct_salvage_free(&sv);
    free(map);
    free(file);
    ct_recorder_pause_writer(0);
    if (!ok) {
        fprintf(stderr, "ct_synth: cannot write %s\n", out);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"iterations", required_argument, NULL, 'n'},
                                         {"zstd-level", required_argument, NULL, 'z'},
                                         {"golden", no_argument, NULL, 'g'},
                                         {"salvaged", no_argument, NULL, 's'},
                                         {NULL, 0, NULL, 0}};
    const char *out = NULL;
    int iterations = 100, level = 3, golden = 0, salvaged = 0, c;
    while ((c = getopt_long(argc, argv, "o:n:z:gs", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'n': iterations = atoi(optarg); break;
        case 'z': level = atoi(optarg); break;
        case 'g': golden = 1; break;
        case 's': salvaged = 1; break;
        default: return 2;
        }
    }
    if (!out || iterations < 1) {
        fprintf(stderr, "usage: ct_synth -o FILE [--iterations N] [--zstd-level L] [--golden "
                        "[--salvaged]]\n");
        return 2;
    }
    struct ct_recorder_config cfg = {.path = out,
                                     .ring_bytes = 8u << 20,
                                     .zstd_level = level,
                                     .flush_ms = 100,
                                     .features = CT_FEAT_CUDA | CT_FEAT_NCCL | CT_FEAT_IO |
                                                 CT_FEAT_NVTX | CT_FEAT_GPU_TIMING,
                                     .pid = (uint32_t)getpid(),
                                     .buffers = salvaged ? CT_LIVE_DIR : CT_LIVE_SHM};
    struct ct_meta_kv meta[] = {
        {CT_SCOPE_PROCESS, 0, "host", golden ? "golden-host" : "synth-host"},
        {CT_SCOPE_PROCESS, 0, "job", "synth"},
        {CT_SCOPE_PROCESS, 0, "rank", "0"},
        {CT_SCOPE_PROCESS, 0, "world_size", "8"},
        {CT_SCOPE_PROCESS, 0, "cmdline", "ct_synth"},
        {CT_SCOPE_DEVICE, 0, "name", "Simulated H200"},
    };
    int rc = ct_recorder_start(&cfg, meta, sizeof(meta) / sizeof(meta[0]));
    if (rc) {
        fprintf(stderr, "ct_synth: cannot start recording to %s: %s\n", out, strerror(-rc));
        return 1;
    }
    struct synth s = {.now = 1000000000000ull};
    s.gpu = s.now;
    s.launch = ct_intern("cuLaunchKernel");
    s.sync = ct_intern("cuStreamSynchronize");
    s.htod = ct_intern("cuMemcpyHtoDAsync_v2");
    s.allreduce = ct_intern("ncclDevKernel_AllReduce_Sum_f32_RING_LL");
    s.pread = ct_intern("pread64");
    s.domain = ct_intern("torch");
    s.path = ct_intern("/data/train-00001.bin");
    static const char *const ops[] = {"gemm", "layernorm", "gelu", "softmax", "attn"};
    for (int i = 0; i < 120; i++) {
        char name[64];
        snprintf(name, sizeof(name), "%s_%s_%d", i < 40 ? "fwd" : "bwd", ops[i % 5], i % 7);
        s.kernels[i] = ct_intern(name);
    }
    if (golden) {
        iterations = 1;
        uint64_t mark[CT_MARK_NFIELDS] = {s.now, s.domain, ct_intern("golden \"quoted\" \\ \t")};
        emit(CT_REC_NVTX_MARK, mark, CT_MARK_NFIELDS);
        ct_emit_error("example error", -28);
        /* format v2: health counters of device 0 (clock going down under a
         * power cap) and of the host */
        static const struct {
            int64_t dev;
            const char *name;
            int64_t value;
            const char *unit;
        } counters[] = {
            {0, "sm_clock", 1980, "MHz"},          {0, "power", 512000, "mW"},
            {0, "throttle_reasons", 0, "bitmask"}, {-1, "cpu_time", 120, "ms"},
            {0, "sm_clock", 1410, "MHz"},          {0, "power", 700000, "mW"},
            {0, "throttle_reasons", 4, "bitmask"}, {-1, "cpu_pressure", 250, "0.01%"},
        };
        for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
            uint64_t cf[CT_COUNTER_NFIELDS] = {
                s.now + (i / 4) * 100000000ull, (uint64_t)counters[i].dev,
                ct_intern(counters[i].name), (uint64_t)counters[i].value,
                ct_intern(counters[i].unit)};
            emit(CT_REC_COUNTER, cf, CT_COUNTER_NFIELDS);
        }
    }
    for (int it = 0; it < iterations; it++) {
        iteration(&s, it);
        if (it % 32 == 31) /* keep the 8 MiB ring from filling: no drops here */
            ct_recorder_flush(30000);
    }
    if (golden)
        nccl_internals(&s);
    if (salvaged && (rc = die_and_salvage(&s, out)) != 0)
        return rc;
    rc = ct_recorder_stop(30000);
    if (rc) {
        fprintf(stderr, "ct_synth: writing %s failed: %s\n", out, strerror(-rc));
        return 1;
    }
    return 0;
}
