/*
 * ct_synth_job: writes a multi-rank job through the real recorder (one
 * forked process per rank, as a launcher would run them), with a schedule
 * simple enough that every report figure has a hand-computed truth. Times
 * are µs after the step start T of each iteration (all ranks alike):
 *
 *   host  pread64 of a file          [T, T+200)          data stall
 *         cuLaunchKernel k=0..9      [T+200+5k, +3)
 *         ncclAllReduce (1 MiB, all ranks' comm)  [T+260, +5)
 *         cuCtxSynchronize           [T+270, T+1475) (it waits for the all-reduce too)
 *         ProfilerStep#i range       [T, T+1475)
 *   GPU   kernel k on stream 7       [T+210+k*d, +d), d = 100 (slow rank 120)
 *         AllReduce on stream 9      [T+210+8d, E), E = max over ranks of its
 *                                    start + 300: it ends together everywhere
 *   next  T' = T + 1525 (50 µs from the sync's return to the next step).
 *
 * Rank r's whole trace is shifted by r * --skew-us (a host clock off by
 * that much), which the report's alignment must take out.
 *
 * usage: ct_synth_job -d DIR [--ranks N] [--iterations K] [--slow-rank R]
 *                     [--skew-us S] [options below]
 *
 * Options for labelled diagnosis cases and run comparisons (defaults give
 * the schedule above exactly). Generalised schedule: the host reads for
 * R = --read-us, makes an optional copy, then issues N = --kernels launches
 * G = --launch-gap-us apart from B = T + R + copy call; kernel k runs from
 * max(end of k-1, its launch + 10 us) for D = --kernel-us (x1.2 on the slow
 * rank, x --kernel-scale, x jitter); the all-reduce starts with kernel N-2
 * and lasts --ar-us after the last rank's start; the sync returns at
 * max(T + 1475, last GPU end + 5) (without the 1475 floor when the compute
 * options are changed) and the next step begins --gap-us later.
 *   --read-us R          input read per step (0: none)
 *   --gap-us G           host time between the sync's return and the next step
 *   --ar-us A            all-reduce transfer time
 *   --ar2-bytes B --ar2-us X  a second all-reduce of B bytes, X us, after
 *                        the first (two message sizes: a bandwidth reference)
 *   --kernels N --kernel-us D --launch-gap-us G   the compute part
 *   --late-rank R --late-us X  rank R's host starts each step's launches X
 *                        later (a host-side straggler)
 *   --ckpt-every K --ckpt-us X  every K-th step writes and fsyncs a
 *                        checkpoint file for X us before the step ends
 *   --pageable-copy-us X an Async HtoD copy per step whose host call blocks
 *                        for its whole X us transfer (a pageable buffer)
 *   --pinned-copy-us X   the same copy returning after 3 us (pinned)
 *   --kernel-scale F --jitter-pct P --run-jitter-pct Q --seed S
 *                        kernel durations x F, x (1 + U(-P,P) %) per
 *                        kernel and x (1 + U(-Q,Q) %) per run, seeded
 *   --host NAME --gpu NAME --tag K=V (repeatable) --cmdline LINE   metadata
 *                        (LINE: the process's command line, as the shim
 *                        records it)
 *   --hosts H0,H1,...    rank r runs on host H[r * n / ranks] (contiguous blocks;
 *                        default node<r/2>); --host NAME puts every rank on one
 *   --host-scale H=F     the kernels of the ranks on host H x F (a slow host)
 *   --driver V --nccl V  device driver_version and process nccl_version metadata
 *   --start-s S          the first step starts at S s on the monotonic clock
 *                        (default 2000): its run start is that much later; the
 *                        processes then record that as their start
 *                        (start_mono_ns), so a job whose steps lie after the
 *                        recorder's own records (S past the machine's uptime)
 *                        has the life of its steps (goodput)
 *   --run-id ID --job ID --restart-count N   the run identity, the launcher's
 *                        job id (default synthjob) and restart count, as
 *                        the shim records them (none of the first and last
 *                        by default: a trace from before run identities)
 *
 * Health counters (format v2 counter records, docs/health.md), none by
 * default:
 *   --counters-us P      every P us: device 0's sm_clock 1980 MHz, mem_clock,
 *                        power 450 W of a 700 W limit, temperature, gpu/mem
 *                        utilisation, PCIe tx/rx, throttle_reasons 0; the
 *                        host's cpu_time, cpu_pressure 2 %, major_faults
 *   --throttle-rank R --throttle-from K   from step K on, rank R's device is
 *                        power-capped: sm_clock 1410 MHz, power at the limit,
 *                        throttle_reasons 0x4 (SW power cap), its kernels
 *                        x 1980/1410 longer
 *   --throttle-host H    every rank on host H power-capped from the first step
 *   --throttle-mhz M     the capped clock (default 1410; kernels x 1980/M)
 *   --contention-rank R --contention-every K --contention-us X
 *   --contention-pct P   every K-th step (it % K == K-1), rank R's host starts
 *                        its launches X us later and its cpu_pressure reads
 *                        P % (default 60) over that step
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "src/recorder.h"

#define US 1000ull

static void emit(unsigned kind, const uint64_t *f, unsigned n)
{
    while (ct_emit(kind, CT_RF_NS, f, n) != 0)
        usleep(100);
}

static uint64_t g_corr;

/* A call on stream 7; a sync (stream 0) waits for every stream. */
static void api(uint64_t s, uint64_t e, uint32_t name, unsigned fam, uint32_t kernel)
{
    uint64_t a[CT_API_NFIELDS] = {0};
    a[CT_API_START] = s;
    a[CT_API_END] = e;
    a[CT_API_NAME] = name;
    a[CT_API_CORR] = ++g_corr;
    a[CT_API_FAMILY] = fam;
    a[CT_API_STREAM] = fam == CT_FAM_SYNC ? 0 : 7;
    a[CT_API_KERNEL] = kernel;
    a[CT_API_DEVICE] = 0;
    emit(CT_REC_API, a, CT_API_NFIELDS);
}

static void gpu(uint64_t s, uint64_t e, uint64_t stream, unsigned type, uint32_t name)
{
    uint64_t g[CT_GPU_NFIELDS] = {0};
    g[CT_GPU_START] = s;
    g[CT_GPU_END] = e;
    g[CT_GPU_STREAM] = stream;
    g[CT_GPU_CORR] = g_corr;
    g[CT_GPU_TYPE] = type;
    g[CT_GPU_NAME] = name;
    g[CT_GPU_SOURCE] = CT_SRC_CUPTI;
    emit(CT_REC_GPU, g, CT_GPU_NFIELDS);
}

struct opts {
    int nranks, iters, slow, late, ckpt_every, kernels;
    uint64_t skew, read, gap, ar, ar2_bytes, ar2, kernel, launch_gap, late_us, ckpt, pageable,
        pinned;
    uint64_t counters; /* sampling period, us; 0: none */
    int thr_rank, thr_from, cont_rank, cont_every;
    uint64_t cont_us, cont_pct;
    double scale, jitter, run_jitter;
    uint64_t seed;
    const char *host, *gpu, *cmdline, *run_id, *job, *restart;
    const char *hosts, *scale_host, *thr_host, *driver, *nccl;
    double host_scale, thr_mhz;
    uint64_t start_s;
    int start_given;
    const char *tags[16];
    int ntags;
};

static uint64_t rng(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double unit(uint64_t *s) /* uniform in [-1, 1) */
{
    return (double)(rng(s) >> 11) / (double)(1ull << 52) - 1.0;
}

/* One rank's GPU schedule of one step, relative to its T (ns). */
struct step {
    uint64_t base, copy_host, copy_s, copy_e; /* launches start at base */
    uint64_t ks[512], ke[512];
    uint64_t ar_s;
};

static int contended(const struct opts *o, int rank, int it)
{
    return rank == o->cont_rank && o->cont_every > 0 && it % o->cont_every == o->cont_every - 1;
}

/* Rank r's host name into buf (--host, --hosts, or node<r/2>). */
static const char *host_of(const struct opts *o, int rank, char *buf, size_t n)
{
    if (o->host)
        return o->host;
    if (o->hosts) {
        int nh = 1;
        for (const char *p = o->hosts; *p; p++)
            nh += *p == ',';
        int k = (int)((long)rank * nh / o->nranks);
        const char *p = o->hosts;
        for (int i = 0; i < k; i++)
            p = strchr(p, ',') + 1;
        size_t len = strcspn(p, ",");
        snprintf(buf, n, "%.*s", (int)len, p);
        return buf;
    }
    snprintf(buf, n, "node%d", rank / 2);
    return buf;
}

static int on_host(const struct opts *o, int rank, const char *h)
{
    char b[64];
    return h && !strcmp(host_of(o, rank, b, sizeof(b)), h);
}

static int throttled(const struct opts *o, int rank, int it)
{
    return (rank == o->thr_rank && it >= o->thr_from) || on_host(o, rank, o->thr_host);
}

static void schedule(const struct opts *o, int rank, int it, struct step *st)
{
    uint64_t seed = o->seed * 1000003ull + (uint64_t)rank * 7919ull + (uint64_t)it;
    uint64_t runs = o->seed * 1000003ull + 424242ull;
    double run_f = 1 + o->run_jitter / 100 * unit(&runs);
    uint64_t copy = o->pageable ? o->pageable * US : o->pinned ? 3 * US : 0;
    st->copy_host = copy;
    st->copy_s = o->read * US + 2 * US;
    st->copy_e = st->copy_s + (o->pageable ? o->pageable : o->pinned) * US;
    st->base = o->read * US + copy + (rank == o->late ? o->late_us * US : 0) +
               (contended(o, rank, it) ? o->cont_us * US : 0);
    uint64_t prev = o->pageable || o->pinned ? st->copy_e : 0;
    double d = (double)o->kernel * (rank == o->slow ? 1.2 : 1.0) * o->scale * run_f *
               (throttled(o, rank, it) ? 1980.0 / o->thr_mhz : 1.0) *
               (on_host(o, rank, o->scale_host) ? o->host_scale : 1.0);
    for (int k = 0; k < o->kernels; k++) {
        uint64_t launch = st->base + (uint64_t)k * o->launch_gap * US + 10 * US;
        uint64_t s = prev > launch ? prev : launch;
        double f = 1 + o->jitter / 100 * unit(&seed);
        st->ks[k] = s;
        st->ke[k] = s + (uint64_t)(d * f * (double)US + 0.5);
        prev = st->ke[k];
    }
    st->ar_s = st->ks[o->kernels >= 2 ? o->kernels - 2 : 0];
}

static void counter(uint64_t t, int dev, const char *name, int64_t v, const char *unit)
{
    uint64_t c[CT_COUNTER_NFIELDS] = {0};
    c[CT_COUNTER_TIME] = t;
    c[CT_COUNTER_DEVICE] = (uint64_t)(int64_t)dev;
    c[CT_COUNTER_NAME] = ct_intern(name);
    c[CT_COUNTER_VALUE] = (uint64_t)v;
    c[CT_COUNTER_UNIT] = ct_intern(unit);
    emit(CT_REC_COUNTER, c, CT_COUNTER_NFIELDS);
}

/* The counter samples from *t (on a grid that starts at the first step)
 * up to next, the end of step it: what the recorder's health sampler would
 * have read (file header, options). */
static void counters(const struct opts *o, int rank, int it, uint64_t next, uint64_t *t,
                     uint64_t *cpu_us)
{
    uint64_t p = o->counters * US;
    int thr = throttled(o, rank, it), cont = contended(o, rank, it);
    for (; *t < next; *t += p) {
        counter(*t, 0, "sm_clock", thr ? (int64_t)(o->thr_mhz + 0.5) : 1980, "MHz");
        counter(*t, 0, "mem_clock", 2619, "MHz");
        counter(*t, 0, "power", thr ? 700000 : 450000, "mW");
        counter(*t, 0, "power_limit", 700000, "mW");
        counter(*t, 0, "temperature", thr ? 71 : 62, "C");
        counter(*t, 0, "throttle_reasons", thr ? 0x4 : 0, "bitmask");
        counter(*t, 0, "gpu_util", 90, "%");
        counter(*t, 0, "mem_util", 40, "%");
        counter(*t, 0, "pcie_tx", 12000, "KB/s");
        counter(*t, 0, "pcie_rx", 48000, "KB/s");
        *cpu_us += o->counters * 9 / 10; /* 90 % of one CPU */
        counter(*t, -1, "cpu_time", (int64_t)(*cpu_us / 1000), "ms");
        counter(*t, -1, "cpu_pressure", cont ? (int64_t)o->cont_pct * 100 : 200, "0.01%");
        counter(*t, -1, "major_faults", it, "count");
    }
}

/* Per iteration, over every rank: the latest all-reduce arrival and GPU
 * end (collectives end together). Computed once, before the ranks fork:
 * a job of thousands of ranks would otherwise schedule every rank in
 * every rank. */
static uint64_t *g_ar_last, *g_gpu_end;

static int job_schedule(const struct opts *o)
{
    g_ar_last = calloc((size_t)o->iters, sizeof(*g_ar_last));
    g_gpu_end = calloc((size_t)o->iters, sizeof(*g_gpu_end));
    struct step *st = malloc(sizeof(*st));
    if (!g_ar_last || !g_gpu_end || !st)
        return -1;
    for (int it = 0; it < o->iters; it++)
        for (int r = 0; r < o->nranks; r++) {
            schedule(o, r, it, st);
            if (st->ar_s > g_ar_last[it])
                g_ar_last[it] = st->ar_s;
            if (st->ke[o->kernels - 1] > g_gpu_end[it])
                g_gpu_end[it] = st->ke[o->kernels - 1];
        }
    free(st);
    return 0;
}

static int run_rank(const char *dir, int rank, const struct opts *o)
{
    char path[4096], rs[16], ws[16];
    int nranks = o->nranks;
    snprintf(path, sizeof(path), "%s/synthjob-host%d-r%d-p%d-0.cutrace", dir, rank / 2, rank,
             (int)getpid());
    snprintf(rs, sizeof(rs), "%d", rank);
    snprintf(ws, sizeof(ws), "%d", nranks);
    char hostbuf[64];
    const char *host = host_of(o, rank, hostbuf, sizeof(hostbuf));
    struct ct_recorder_config cfg = {.path = path,
                                     .ring_bytes = 8u << 20,
                                     .zstd_level = 3,
                                     .flush_ms = 100,
                                     .features = CT_FEAT_CUDA | CT_FEAT_NCCL | CT_FEAT_IO |
                                                 CT_FEAT_NVTX | CT_FEAT_GPU_TIMING,
                                     .pid = (uint32_t)getpid()};
    struct ct_meta_kv meta[32] = {
        {CT_SCOPE_PROCESS, 0, "host", host},
        {CT_SCOPE_PROCESS, 0, "job", o->job ? o->job : "synthjob"},
        {CT_SCOPE_PROCESS, 0, "rank", rs},
        {CT_SCOPE_PROCESS, 0, "world_size", ws},
    };
    size_t nmeta = 4;
    char tagk[16][64];
    if (o->run_id)
        meta[nmeta++] = (struct ct_meta_kv){CT_SCOPE_PROCESS, 0, "run_id", o->run_id};
    if (o->restart)
        meta[nmeta++] = (struct ct_meta_kv){CT_SCOPE_PROCESS, 0, "restart_count", o->restart};
    if (o->gpu)
        meta[nmeta++] = (struct ct_meta_kv){CT_SCOPE_DEVICE, 0, "name", o->gpu};
    if (o->cmdline)
        meta[nmeta++] = (struct ct_meta_kv){CT_SCOPE_PROCESS, 0, "cmdline", o->cmdline};
    if (o->driver)
        meta[nmeta++] = (struct ct_meta_kv){CT_SCOPE_DEVICE, 0, "driver_version", o->driver};
    if (o->nccl)
        meta[nmeta++] = (struct ct_meta_kv){CT_SCOPE_PROCESS, 0, "nccl_version", o->nccl};
    char start[32];
    snprintf(start, sizeof(start), "%llu",
             (unsigned long long)(o->start_s * 1000000000ull + o->skew * (uint64_t)rank));
    if (o->start_given)
        meta[nmeta++] = (struct ct_meta_kv){CT_SCOPE_PROCESS, 0, "start_mono_ns", start};
    for (int i = 0; i < o->ntags; i++) {
        const char *eq = strchr(o->tags[i], '=');
        snprintf(tagk[i], sizeof(tagk[i]), "tag.%.*s", (int)(eq - o->tags[i]), o->tags[i]);
        meta[nmeta++] = (struct ct_meta_kv){CT_SCOPE_PROCESS, 0, tagk[i], eq + 1};
    }
    if (ct_recorder_start(&cfg, meta, nmeta))
        return 1;
    uint32_t launch = ct_intern("cuLaunchKernel"), sync = ct_intern("cuCtxSynchronize");
    uint32_t pread = ct_intern("pread64"), file = ct_intern("/data/shard-0.bin");
    uint32_t dom = ct_intern("pytorch"), ar = ct_intern("ncclDevKernel_AllReduce_Sum_f32_RING_LL");
    uint32_t write = ct_intern("write"), fsync = ct_intern("fsync"),
             ck = ct_intern("/ckpt/model.pt");
    uint32_t memcpy_name = ct_intern("cuMemcpyHtoDAsync_v2");
    uint32_t kn[10];
    for (int k = 0; k < 10; k++) {
        char n[64];
        snprintf(n, sizeof(n), "_ZN5model6layer%dEPf", k); /* model::layer<k>(float*) */
        kn[k] = ct_intern(n);
    }
    static struct step mine;
    uint64_t T = o->start_s * 1000000000ull + o->skew * (uint64_t)rank;
    uint64_t sample_t = T, cpu_us = 0;
    for (int it = 0; it < o->iters; it++) {
        /* every rank's schedule: collectives end together */
        uint64_t ar_last = g_ar_last[it], gpu_end = g_gpu_end[it];
        schedule(o, rank, it, &mine);
        const struct step *st = &mine;
        uint64_t ar_e = ar_last + o->ar * US, ar2_e = ar_e + o->ar2 * US;
        uint64_t last = o->ar2_bytes ? ar2_e : ar_e;
        if (last > gpu_end)
            gpu_end = last;
        /* the default compute part keeps the original fixed 1475 us step */
        uint64_t floor = o->kernels == 10 && o->kernel == 100 && o->launch_gap == 5 ? 1475 * US : 0;
        uint64_t sync_e = gpu_end + 5 * US > floor ? gpu_end + 5 * US : floor;
        int ckpt = o->ckpt_every > 0 && it % o->ckpt_every == o->ckpt_every - 1;
        uint64_t end = sync_e + (ckpt ? o->ckpt * US : 0);
        if (o->read) {
            uint64_t io[CT_IO_NFIELDS] = {0};
            io[CT_IO_START] = T;
            io[CT_IO_END] = T + o->read * US;
            io[CT_IO_OP] = pread;
            io[CT_IO_FD] = 5;
            io[CT_IO_FD_TYPE] = CT_FD_FILE;
            io[CT_IO_PATH] = file;
            io[CT_IO_BYTES] = io[CT_IO_RESULT] = 1 << 20;
            emit(CT_REC_IO, io, CT_IO_NFIELDS);
        }
        if (st->copy_host) {
            uint64_t a[CT_API_NFIELDS] = {0};
            a[CT_API_START] = T + o->read * US;
            a[CT_API_END] = T + o->read * US + st->copy_host;
            a[CT_API_NAME] = memcpy_name;
            a[CT_API_CORR] = ++g_corr;
            a[CT_API_FAMILY] = CT_FAM_MEMCPY;
            a[CT_API_STREAM] = 7;
            a[CT_API_BYTES] = 64u << 20;
            a[CT_API_COPY_KIND] = CT_COPY_HTOD;
            a[CT_API_FLAGS] = CT_APIF_ASYNC;
            emit(CT_REC_API, a, CT_API_NFIELDS);
            uint64_t g[CT_GPU_NFIELDS] = {0};
            g[CT_GPU_START] = T + st->copy_s;
            g[CT_GPU_END] = T + st->copy_e;
            g[CT_GPU_STREAM] = 7;
            g[CT_GPU_CORR] = g_corr;
            g[CT_GPU_TYPE] = CT_GPU_MEMCPY;
            g[CT_GPU_BYTES] = 64u << 20;
            g[CT_GPU_COPY_KIND] = CT_COPY_HTOD;
            g[CT_GPU_SOURCE] = CT_SRC_CUPTI;
            emit(CT_REC_GPU, g, CT_GPU_NFIELDS);
        }
        uint64_t lk = 0;
        for (int k = 0; k < o->kernels; k++) {
            uint64_t s = T + st->base + (uint64_t)k * o->launch_gap * US;
            api(s, s + 3 * US, launch, CT_FAM_LAUNCH, kn[k % 10]);
            gpu(T + st->ks[k], T + st->ke[k], 7, CT_GPU_KERNEL, kn[k % 10]);
            lk = s;
        }
        for (int c = 0; c < (o->ar2_bytes ? 2 : 1); c++) {
            uint64_t n[CT_NCCL_NFIELDS] = {0};
            n[CT_NCCL_START] = lk + (15 + 6 * (uint64_t)c) * US;
            n[CT_NCCL_END] = n[CT_NCCL_START] + 5 * US;
            n[CT_NCCL_OP] = CT_NCCL_OP_ALLREDUCE;
            n[CT_NCCL_COMM] = 0xabcdef0123456789ull;
            n[CT_NCCL_SEQ] = (uint64_t)it * (o->ar2_bytes ? 2 : 1) + (uint64_t)c;
            uint64_t bytes = c ? o->ar2_bytes : 1u << 20;
            n[CT_NCCL_COUNT] = bytes / 4;
            n[CT_NCCL_DTYPE] = 7;
            n[CT_NCCL_BYTES] = bytes;
            n[CT_NCCL_ROOT] = n[CT_NCCL_PEER] = (uint64_t)-1;
            n[CT_NCCL_STREAM] = 9;
            n[CT_NCCL_CORR] = ++g_corr;
            n[CT_NCCL_RANK] = (uint64_t)rank;
            n[CT_NCCL_NRANKS] = (uint64_t)nranks;
            emit(CT_REC_NCCL, n, CT_NCCL_NFIELDS);
            if (c)
                gpu(T + ar_e, T + ar2_e, 9, CT_GPU_NCCL, ar);
            else
                gpu(T + st->ar_s, T + ar_e, 9, CT_GPU_NCCL, ar);
        }
        api(lk + 25 * US, T + sync_e, sync, CT_FAM_SYNC, 0);
        if (ckpt) {
            uint64_t io[CT_IO_NFIELDS] = {0};
            io[CT_IO_START] = T + sync_e;
            io[CT_IO_END] = T + end - 20 * US;
            io[CT_IO_OP] = write;
            io[CT_IO_FD] = 9;
            io[CT_IO_FD_TYPE] = CT_FD_FILE;
            io[CT_IO_PATH] = ck;
            io[CT_IO_BYTES] = io[CT_IO_RESULT] = 256u << 20;
            emit(CT_REC_IO, io, CT_IO_NFIELDS);
            io[CT_IO_START] = T + end - 20 * US;
            io[CT_IO_END] = T + end;
            io[CT_IO_OP] = fsync;
            io[CT_IO_BYTES] = io[CT_IO_RESULT] = 0;
            emit(CT_REC_IO, io, CT_IO_NFIELDS);
        }
        char msg[32];
        snprintf(msg, sizeof(msg), "ProfilerStep#%d", it);
        uint64_t r[CT_NVTX_NFIELDS] = {T, T + end, dom, ct_intern(msg), 0};
        emit(CT_REC_NVTX_RANGE, r, CT_NVTX_NFIELDS);
        if (o->counters)
            counters(o, rank, it, T + end + o->gap * US, &sample_t, &cpu_us);
        if (it % 64 == 63)
            ct_recorder_flush(30000);
        T += end + o->gap * US;
    }
    return ct_recorder_stop(30000) ? 1 : 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"ranks", required_argument, NULL, 'n'},
                                         {"iterations", required_argument, NULL, 'i'},
                                         {"slow-rank", required_argument, NULL, 's'},
                                         {"skew-us", required_argument, NULL, 'k'},
                                         {"read-us", required_argument, NULL, 'R'},
                                         {"gap-us", required_argument, NULL, 'G'},
                                         {"ar-us", required_argument, NULL, 'A'},
                                         {"ar2-bytes", required_argument, NULL, 'b'},
                                         {"ar2-us", required_argument, NULL, 'B'},
                                         {"kernels", required_argument, NULL, 'N'},
                                         {"kernel-us", required_argument, NULL, 'D'},
                                         {"launch-gap-us", required_argument, NULL, 'L'},
                                         {"late-rank", required_argument, NULL, 'l'},
                                         {"late-us", required_argument, NULL, 'x'},
                                         {"ckpt-every", required_argument, NULL, 'c'},
                                         {"ckpt-us", required_argument, NULL, 'C'},
                                         {"pageable-copy-us", required_argument, NULL, 'P'},
                                         {"pinned-copy-us", required_argument, NULL, 'p'},
                                         {"kernel-scale", required_argument, NULL, 'S'},
                                         {"jitter-pct", required_argument, NULL, 'j'},
                                         {"run-jitter-pct", required_argument, NULL, 'J'},
                                         {"seed", required_argument, NULL, 'e'},
                                         {"host", required_argument, NULL, 'H'},
                                         {"gpu", required_argument, NULL, 'g'},
                                         {"cmdline", required_argument, NULL, 'K'},
                                         {"tag", required_argument, NULL, 't'},
                                         {"counters-us", required_argument, NULL, 'U'},
                                         {"throttle-rank", required_argument, NULL, 'T'},
                                         {"throttle-from", required_argument, NULL, 'F'},
                                         {"contention-rank", required_argument, NULL, 'r'},
                                         {"contention-every", required_argument, NULL, 'E'},
                                         {"contention-us", required_argument, NULL, 'X'},
                                         {"contention-pct", required_argument, NULL, 'Q'},
                                         {"run-id", required_argument, NULL, 'I'},
                                         {"job", required_argument, NULL, 'o'},
                                         {"restart-count", required_argument, NULL, 'y'},
                                         {"hosts", required_argument, NULL, 1001},
                                         {"host-scale", required_argument, NULL, 1002},
                                         {"throttle-host", required_argument, NULL, 1003},
                                         {"throttle-mhz", required_argument, NULL, 1004},
                                         {"driver", required_argument, NULL, 1005},
                                         {"nccl", required_argument, NULL, 1006},
                                         {"start-s", required_argument, NULL, 1007},
                                         {NULL, 0, NULL, 0}};
    const char *dir = NULL;
    struct opts o = {.nranks = 4,
                     .iters = 20,
                     .slow = -1,
                     .late = -1,
                     .kernels = 10,
                     .read = 200,
                     .gap = 50,
                     .ar = 300,
                     .kernel = 100,
                     .launch_gap = 5,
                     .scale = 1.0,
                     .thr_rank = -1,
                     .cont_rank = -1,
                     .cont_pct = 60,
                     .host_scale = 1.0,
                     .thr_mhz = 1410,
                     .start_s = 2000};
    int c, bad = 0;
    long skew = 0;
    while ((c = getopt_long(argc, argv, "d:", opts, NULL)) != -1) {
        switch (c) {
        case 'd': dir = optarg; break;
        case 'n': o.nranks = atoi(optarg); break;
        case 'i': o.iters = atoi(optarg); break;
        case 's': o.slow = atoi(optarg); break;
        case 'k': skew = atol(optarg); break;
        case 'R': o.read = strtoull(optarg, NULL, 10); break;
        case 'G': o.gap = strtoull(optarg, NULL, 10); break;
        case 'A': o.ar = strtoull(optarg, NULL, 10); break;
        case 'b': o.ar2_bytes = strtoull(optarg, NULL, 10); break;
        case 'B': o.ar2 = strtoull(optarg, NULL, 10); break;
        case 'N': o.kernels = atoi(optarg); break;
        case 'D': o.kernel = strtoull(optarg, NULL, 10); break;
        case 'L': o.launch_gap = strtoull(optarg, NULL, 10); break;
        case 'l': o.late = atoi(optarg); break;
        case 'x': o.late_us = strtoull(optarg, NULL, 10); break;
        case 'c': o.ckpt_every = atoi(optarg); break;
        case 'C': o.ckpt = strtoull(optarg, NULL, 10); break;
        case 'P': o.pageable = strtoull(optarg, NULL, 10); break;
        case 'p': o.pinned = strtoull(optarg, NULL, 10); break;
        case 'S': o.scale = atof(optarg); break;
        case 'j': o.jitter = atof(optarg); break;
        case 'J': o.run_jitter = atof(optarg); break;
        case 'e': o.seed = strtoull(optarg, NULL, 10); break;
        case 'H': o.host = optarg; break;
        case 'g': o.gpu = optarg; break;
        case 'K': o.cmdline = optarg; break;
        case 'U': o.counters = strtoull(optarg, NULL, 10); break;
        case 'T': o.thr_rank = atoi(optarg); break;
        case 'F': o.thr_from = atoi(optarg); break;
        case 'r': o.cont_rank = atoi(optarg); break;
        case 'E': o.cont_every = atoi(optarg); break;
        case 'X': o.cont_us = strtoull(optarg, NULL, 10); break;
        case 'Q': o.cont_pct = strtoull(optarg, NULL, 10); break;
        case 'I': o.run_id = optarg; break;
        case 'o': o.job = optarg; break;
        case 'y': o.restart = optarg; break;
        case 1001: o.hosts = optarg; break;
        case 1002: {
            const char *eq = strchr(optarg, '=');
            static char h[64];
            if (!eq || eq == optarg || (size_t)(eq - optarg) >= sizeof(h)) {
                bad = 1;
                break;
            }
            snprintf(h, sizeof(h), "%.*s", (int)(eq - optarg), optarg);
            o.scale_host = h;
            o.host_scale = atof(eq + 1);
            bad |= o.host_scale <= 0;
            break;
        }
        case 1003: o.thr_host = optarg; break;
        case 1004:
            o.thr_mhz = atof(optarg);
            bad |= o.thr_mhz <= 0;
            break;
        case 1005: o.driver = optarg; break;
        case 1006: o.nccl = optarg; break;
        case 1007:
            o.start_s = strtoull(optarg, NULL, 10);
            o.start_given = 1;
            break;
        case 't':
            if (o.ntags < 16 && strchr(optarg, '='))
                o.tags[o.ntags++] = optarg;
            else
                bad = 1;
            break;
        default: return 2;
        }
    }
    if (!dir || bad || o.nranks < 1 || o.iters < 1 || skew < 0 || o.kernels < 2 ||
        o.kernels > 512 || o.scale <= 0) {
        fprintf(stderr, "usage: ct_synth_job -d DIR [--ranks N] [--iterations K] "
                        "[--slow-rank R] [--skew-us S] [options: see the file's header]\n");
        return 2;
    }
    o.skew = (uint64_t)skew * US;
    if (job_schedule(&o))
        return 1;
    for (int r = 0; r < o.nranks; r++) {
        pid_t pid = fork();
        if (pid < 0)
            return 1;
        if (pid == 0)
            _exit(run_rank(dir, r, &o));
        int st;
        if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "ct_synth_job: rank %d failed\n", r);
            return 1;
        }
    }
    return 0;
}
