/*
 * ct_synth_job: writes a multi-rank job through the real recorder (one
 * forked process per rank, as a launcher would run them), with a schedule
 * simple enough that every report figure has a hand-computed truth. Times
 * are µs after the step start T of each iteration (all ranks alike):
 *
 *   host  pread64 of a file          [T, T+200)          data stall
 *         cuLaunchKernel k=0..9      [T+200+5k, +3)
 *         ncclAllReduce (1 MiB, all ranks' comm)  [T+260, +5)
 *         cuStreamSynchronize        [T+270, T+1475)
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
 *                     [--skew-us S]
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

static void api(uint64_t s, uint64_t e, uint32_t name, unsigned fam, uint32_t kernel)
{
    uint64_t a[CT_API_NFIELDS] = {0};
    a[CT_API_START] = s;
    a[CT_API_END] = e;
    a[CT_API_NAME] = name;
    a[CT_API_CORR] = ++g_corr;
    a[CT_API_FAMILY] = fam;
    a[CT_API_STREAM] = 7;
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

static int run_rank(const char *dir, int rank, int nranks, int iters, int slow, uint64_t skew)
{
    char path[4096], rs[16], ws[16];
    snprintf(path, sizeof(path), "%s/synthjob-host%d-r%d-p%d-0.cutrace", dir, rank / 2, rank,
             (int)getpid());
    snprintf(rs, sizeof(rs), "%d", rank);
    snprintf(ws, sizeof(ws), "%d", nranks);
    char host[32];
    snprintf(host, sizeof(host), "node%d", rank / 2);
    struct ct_recorder_config cfg = {.path = path,
                                     .ring_bytes = 8u << 20,
                                     .zstd_level = 3,
                                     .flush_ms = 100,
                                     .features = CT_FEAT_CUDA | CT_FEAT_NCCL | CT_FEAT_IO |
                                                 CT_FEAT_NVTX | CT_FEAT_GPU_TIMING,
                                     .pid = (uint32_t)getpid()};
    struct ct_meta_kv meta[] = {
        {CT_SCOPE_PROCESS, 0, "host", host},
        {CT_SCOPE_PROCESS, 0, "job", "synthjob"},
        {CT_SCOPE_PROCESS, 0, "rank", rs},
        {CT_SCOPE_PROCESS, 0, "world_size", ws},
    };
    if (ct_recorder_start(&cfg, meta, sizeof(meta) / sizeof(meta[0])))
        return 1;
    uint32_t launch = ct_intern("cuLaunchKernel"), sync = ct_intern("cuStreamSynchronize");
    uint32_t pread = ct_intern("pread64"), file = ct_intern("/data/shard-0.bin");
    uint32_t dom = ct_intern("pytorch"), ar = ct_intern("ncclDevKernel_AllReduce_Sum_f32_RING_LL");
    uint32_t kn[10];
    for (int k = 0; k < 10; k++) {
        char n[64];
        snprintf(n, sizeof(n), "_ZN5model6layer%dEPf", k); /* model::layer<k>(float*) */
        kn[k] = ct_intern(n);
    }
    uint64_t d = (rank == slow ? 120 : 100) * US;
    uint64_t max_d = slow >= 0 && slow < nranks ? 120 * US : 100 * US;
    uint64_t T = 2000000000000ull + skew * (uint64_t)rank;
    for (int it = 0; it < iters; it++, T += 1525 * US) {
        uint64_t io[CT_IO_NFIELDS] = {0};
        io[CT_IO_START] = T;
        io[CT_IO_END] = T + 200 * US;
        io[CT_IO_OP] = pread;
        io[CT_IO_FD] = 5;
        io[CT_IO_FD_TYPE] = CT_FD_FILE;
        io[CT_IO_PATH] = file;
        io[CT_IO_BYTES] = io[CT_IO_RESULT] = 1 << 20;
        emit(CT_REC_IO, io, CT_IO_NFIELDS);
        for (int k = 0; k < 10; k++) {
            uint64_t s = T + (200 + 5 * (uint64_t)k) * US;
            api(s, s + 3 * US, launch, CT_FAM_LAUNCH, kn[k]);
            gpu(T + 210 * US + (uint64_t)k * d, T + 210 * US + (uint64_t)(k + 1) * d, 7,
                CT_GPU_KERNEL, kn[k]);
        }
        uint64_t n[CT_NCCL_NFIELDS] = {0};
        n[CT_NCCL_START] = T + 260 * US;
        n[CT_NCCL_END] = T + 265 * US;
        n[CT_NCCL_OP] = CT_NCCL_OP_ALLREDUCE;
        n[CT_NCCL_COMM] = 0xabcdef0123456789ull;
        n[CT_NCCL_SEQ] = (uint64_t)it;
        n[CT_NCCL_COUNT] = 1u << 18;
        n[CT_NCCL_DTYPE] = 7;
        n[CT_NCCL_BYTES] = 1u << 20;
        n[CT_NCCL_ROOT] = n[CT_NCCL_PEER] = (uint64_t)-1;
        n[CT_NCCL_STREAM] = 9;
        n[CT_NCCL_CORR] = ++g_corr;
        n[CT_NCCL_RANK] = (uint64_t)rank;
        n[CT_NCCL_NRANKS] = (uint64_t)nranks;
        emit(CT_REC_NCCL, n, CT_NCCL_NFIELDS);
        gpu(T + 210 * US + 8 * d, T + 210 * US + 8 * max_d + 300 * US, 9, CT_GPU_NCCL, ar);
        api(T + 270 * US, T + 1475 * US, sync, CT_FAM_SYNC, 0);
        char msg[32];
        snprintf(msg, sizeof(msg), "ProfilerStep#%d", it);
        uint64_t r[CT_NVTX_NFIELDS] = {T, T + 1475 * US, dom, ct_intern(msg), 0};
        emit(CT_REC_NVTX_RANGE, r, CT_NVTX_NFIELDS);
        if (it % 64 == 63)
            ct_recorder_flush(30000);
    }
    return ct_recorder_stop(30000) ? 1 : 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"ranks", required_argument, NULL, 'n'},
                                         {"iterations", required_argument, NULL, 'i'},
                                         {"slow-rank", required_argument, NULL, 's'},
                                         {"skew-us", required_argument, NULL, 'k'},
                                         {NULL, 0, NULL, 0}};
    const char *dir = NULL;
    int nranks = 4, iters = 20, slow = -1, c;
    long skew = 0;
    while ((c = getopt_long(argc, argv, "d:", opts, NULL)) != -1) {
        switch (c) {
        case 'd': dir = optarg; break;
        case 'n': nranks = atoi(optarg); break;
        case 'i': iters = atoi(optarg); break;
        case 's': slow = atoi(optarg); break;
        case 'k': skew = atol(optarg); break;
        default: return 2;
        }
    }
    if (!dir || nranks < 1 || iters < 1 || skew < 0) {
        fprintf(stderr, "usage: ct_synth_job -d DIR [--ranks N] [--iterations K] "
                        "[--slow-rank R] [--skew-us S]\n");
        return 2;
    }
    for (int r = 0; r < nranks; r++) {
        pid_t pid = fork();
        if (pid < 0)
            return 1;
        if (pid == 0)
            _exit(run_rank(dir, r, nranks, iters, slow, (uint64_t)skew * US));
        int st;
        if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "ct_synth_job: rank %d failed\n", r);
            return 1;
        }
    }
    return 0;
}
