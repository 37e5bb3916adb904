/*
 * Kineto decoding speed: `bench_kineto gen OUT.json N` writes a synthetic
 * Kineto trace of about N events (the mix of a real one: cpu_ops with
 * shapes, runtime launches, kernels with launch args, NCCL kernels with
 * collective metadata, memcpys, ac2g flows, ProfilerStep annotations);
 * `bench_kineto decode FILE...` parses each file (ct_kineto_load +
 * ct_kineto_finish in HTA mode) and prints events per second; for a .gz it
 * also prints the zlib-inflate-only rate over the same file, the ceiling
 * of any gzip reader. Run by scripts/bench, never by `meson test`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "decoder/kineto/kineto.h"
#include "decoder/kineto/kineto_int.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int gen(const char *path, long n)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return 1;
    fprintf(f, "{\n  \"schemaVersion\": 1,\n  \"distributedInfo\": {\"backend\": \"nccl\", "
               "\"rank\": 0, \"world_size\": 8},\n  \"displayTimeUnit\": \"ns\",\n"
               "  \"traceEvents\": [\n");
    double t = 4458676416431.397; /* µs since boot, as Kineto writes with ns precision */
    long corr = 1, step = 1, ev = 0;
    while (ev < n) {
        fprintf(f,
                "  {\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#%ld\", "
                "\"pid\": 100, \"tid\": 100, \"ts\": %.3f, \"dur\": 50000.0, \"args\": "
                "{\"External id\": %ld}},\n",
                step++, t, corr);
        ev++;
        for (int k = 0; k < 100 && ev < n; k++, corr++) {
            double g = t + 20.5 + k * 400;
            fprintf(f,
                    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::linear\", \"pid\": "
                    "100, \"tid\": 100, \"ts\": %.3f, \"dur\": 12.250, \"args\": {\"External id\": "
                    "%ld, \"Input Dims\": [[64, 1024], [1024, 1024], []], \"Input type\": "
                    "[\"float\", \"float\", \"\"], \"Sequence number\": %ld}},\n",
                    t + 10 + k * 400, corr, corr);
            fprintf(f,
                    "  {\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", "
                    "\"pid\": 100, \"tid\": 100, \"ts\": %.3f, \"dur\": 4.125, \"args\": "
                    "{\"External id\": %ld, \"cbid\": 211, \"correlation\": %ld}},\n",
                    t + 12 + k * 400, corr, corr);
            fprintf(f,
                    "  {\"ph\": \"s\", \"id\": %ld, \"pid\": 100, \"tid\": 100, \"ts\": %.3f, "
                    "\"cat\": \"ac2g\", \"name\": \"ac2g\"},\n",
                    corr, t + 12 + k * 400);
            if (k % 10 == 9)
                fprintf(f,
                        "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": "
                        "\"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, "
                        "ncclWork*)\", \"pid\": 0, \"tid\": 20, \"ts\": %.3f, \"dur\": 180.5, "
                        "\"args\": {\"External id\": %ld, \"queued\": 0, \"device\": 0, "
                        "\"context\": 1, \"stream\": 20, \"correlation\": %ld, \"registers per "
                        "thread\": 96, \"shared memory\": 87568, \"grid\": [8, 1, 1], \"block\": "
                        "[544, 1, 1], \"Collective name\": \"allreduce\", \"In msg nelems\": "
                        "1048576, \"Out msg nelems\": 1048576, \"Group size\": 8, \"dtype\": "
                        "\"Float\", \"Process Group Name\": \"0\", \"Process Group Ranks\": "
                        "\"[0, 1, 2, 3, 4, 5, 6, 7]\"}},\n",
                        g, corr, corr);
            else if (k % 10 == 5)
                fprintf(f,
                        "  {\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD "
                        "(Pinned -> Device)\", \"pid\": 0, \"tid\": 7, \"ts\": %.3f, \"dur\": 3.2, "
                        "\"args\": {\"External id\": %ld, \"device\": 0, \"context\": 1, "
                        "\"stream\": 7, \"correlation\": %ld, \"bytes\": 4096, \"memory bandwidth "
                        "(GB/s)\": 1.28}},\n",
                        g, corr, corr);
            else
                fprintf(f,
                        "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": "
                        "\"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_"
                        "align4>(cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4::Params)\", "
                        "\"pid\": 0, \"tid\": 7, \"ts\": %.3f, \"dur\": 350.25, \"args\": "
                        "{\"External id\": %ld, \"queued\": 0, \"device\": 0, \"context\": 1, "
                        "\"stream\": 7, \"correlation\": %ld, \"registers per thread\": 232, "
                        "\"shared memory\": 73728, \"blocks per SM\": 0.592593, \"warps per SM\": "
                        "2.370370, \"grid\": [8, 8, 1], \"block\": [128, 1, 1], \"est. achieved "
                        "occupancy %%\": 4}},\n",
                        g, corr, corr);
            fprintf(f,
                    "  {\"ph\": \"f\", \"id\": %ld, \"pid\": 0, \"tid\": 7, \"ts\": %.3f, "
                    "\"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"},\n",
                    corr, g);
            ev += 5;
        }
        t += 50000;
    }
    fprintf(f, "  {\"ph\": \"X\", \"cat\": \"Trace\", \"name\": \"PyTorch Profiler\", \"pid\": "
               "100, \"tid\": 100, \"ts\": 1700000000000000, \"dur\": 1}\n  ],\n"
               "  \"traceName\": \"synthetic\"\n}\n");
    return fclose(f) != 0;
}

static double inflate_rate(const char *path, double *mb)
{
    gzFile g = gzopen(path, "rb");
    if (!g)
        return 0;
    gzbuffer(g, 1u << 18);
    static char buf[1 << 20];
    double t0 = now(), n = 0;
    int got;
    while ((got = gzread(g, buf, sizeof(buf))) > 0)
        n += got;
    gzclose(g);
    *mb = n / 1e6;
    return n / (now() - t0);
}

static int decode(const char *path)
{
    double best = 1e30;
    uint64_t events = 0;
    for (int run = 0; run < 3; run++) {
        struct ct_proc p;
        char err[512];
        double t0 = now();
        if (ct_kineto_load(path, &p, err, sizeof(err))) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        events = ct_kin(&p)->events;
        if (ct_kineto_finish(&p, 1, 1))
            return 1;
        double dt = now() - t0;
        if (dt < best)
            best = dt;
        ct_proc_free(&p);
    }
    double mb = 0, ir = inflate_rate(path, &mb);
    printf("%s: %llu events, %.1f MB JSON, %.3f s: %.2f M events/s, %.0f MB/s", path,
           (unsigned long long)events, mb, best, (double)events / best / 1e6, mb / best);
    if (strstr(path, ".gz"))
        printf("; zlib inflate alone %.0f MB/s = %.2f M events/s ceiling", ir / 1e6,
               (double)events / (mb * 1e6 / ir) / 1e6);
    printf("\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "gen"))
        return gen(argv[2], atol(argv[3]));
    if (argc >= 3 && !strcmp(argv[1], "decode")) {
        for (int i = 2; i < argc; i++)
            if (decode(argv[i]))
                return 1;
        return 0;
    }
    fprintf(stderr, "usage: bench_kineto gen OUT.json N | decode FILE...\n");
    return 2;
}
