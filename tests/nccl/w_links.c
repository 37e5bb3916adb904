/*
 * An all-reduce job on the simulated device and NCCL for NCCL's links
 * (tests/nccl/check_links.py, docs/nccl.md): `w_links launch N` starts N
 * rank processes (`w_links rank R N IDHEX`, RANK/LOCAL_RANK/WORLD_SIZE
 * set, like torchrun) and waits for them.
 *
 * Schedule (W_LINKS_STEPS steps, default 4): each step is a compute kernel
 * (W_LINKS_COMPUTE_US µs, default 2000), then one AllReduce per size of W_LINKS_COUNTS (float32
 * element counts, comma-separated, default 4194304), then a synchronize; no NVTX (the decoder finds
 * the repeating steps). W_LINKS_SIDE_US (unset: none): a kernel of that many µs on a second stream,
 * started when the compute kernel ends (an event), so that it runs under the all-reduces (overlap).
 * W_LINKS_CUSTOM_US (unset: none): after the all-reduces, a kernel of
 * that many µs named like vLLM's custom all-reduce
 * (vllm::cross_device_reduce_1stage), launched by the job itself, not by
 * NCCL (docs/nccl.md, "Communication kernels"). W_LINKS_AHEAD=1: no
 * synchronize between steps, only after the last (the host enqueues the
 * whole job ahead of the GPU, so a step's work starts when the previous
 * step's ends, on every rank alike). Links come from FAKEGPU_NCCL_LINKS /
 * FAKEGPU_NET_GBPS (tests/fakegpu/README.md, "Links and the ring"): the
 * test states each link's truth from them.
 */
#include <cuda.h>
#include <nccl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        int rc_ = (int)(x);                                                                        \
        if (rc_ != 0) {                                                                            \
            fprintf(stderr, "w_links: %s failed: %d\n", #x, rc_);                                  \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

static int launch(const char *self, int n)
{
    ncclUniqueId id;
    CHECK(ncclGetUniqueId(&id));
    char idhex[2 * sizeof(id.internal) + 1], rs[16], ns[16];
    for (size_t i = 0; i < sizeof(id.internal); i++)
        sprintf(idhex + 2 * i, "%02x", (unsigned char)id.internal[i]);
    snprintf(ns, sizeof(ns), "%d", n);
    pid_t pids[256];
    for (int r = 0; r < n && r < 256; r++) {
        snprintf(rs, sizeof(rs), "%d", r);
        pids[r] = fork();
        if (pids[r] == 0) {
            setenv("RANK", rs, 1);
            setenv("LOCAL_RANK", rs, 1);
            setenv("WORLD_SIZE", ns, 1);
            execl(self, self, "rank", rs, ns, idhex, (char *)NULL);
            _exit(127);
        }
    }
    int bad = 0;
    for (int r = 0; r < n && r < 256; r++) {
        int st;
        waitpid(pids[r], &st, 0);
        bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
    return bad;
}

static int rank_main(int r, int n, const char *idhex)
{
    ncclUniqueId id;
    for (size_t i = 0; i < sizeof(id.internal); i++) {
        unsigned v;
        if (sscanf(idhex + 2 * i, "%2x", &v) != 1)
            return 2;
        id.internal[i] = (char)v;
    }
    CUdevice d;
    CUcontext ctx;
    CUstream s;
    CUmodule mod;
    CUfunction compute, side = NULL, custom = NULL;
    CUstream s2;
    CUevent ev;
    CUdeviceptr a, b;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&d, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, d));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuModuleLoadData(&mod, "w_links"));
    const char *compute_us = getenv("W_LINKS_COMPUTE_US");
    char cname[64];
    snprintf(cname, sizeof(cname), "w_compute__%sus",
             compute_us && *compute_us ? compute_us : "2000");
    CHECK(cuModuleGetFunction(&compute, mod, cname));
    CHECK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CHECK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    const char *side_us = getenv("W_LINKS_SIDE_US"), *custom_us = getenv("W_LINKS_CUSTOM_US");
    char kname[96];
    if (side_us && *side_us) {
        snprintf(kname, sizeof(kname), "w_side__%sus", side_us);
        CHECK(cuModuleGetFunction(&side, mod, kname));
    }
    if (custom_us && *custom_us) {
        snprintf(kname, sizeof(kname), "vllm::cross_device_reduce_1stage__%sus", custom_us);
        CHECK(cuModuleGetFunction(&custom, mod, kname));
    }
    /* the simulated NCCL moves no data: small buffers stand for large ops */
    CHECK(cuMemAlloc(&a, 1 << 16));
    CHECK(cuMemAlloc(&b, 1 << 16));
    ncclComm_t comm;
    CHECK(ncclCommInitRank(&comm, n, id, r));
    const char *steps_env = getenv("W_LINKS_STEPS");
    const char *counts = getenv("W_LINKS_COUNTS");
    int steps = steps_env ? atoi(steps_env) : 4;
    if (!counts || !*counts)
        counts = "4194304";
    const char *ahead_env = getenv("W_LINKS_AHEAD");
    int ahead = ahead_env && !strcmp(ahead_env, "1");
    for (int k = 0; k < steps; k++) {
        CHECK(cuLaunchKernel(compute, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
        if (side) {
            CHECK(cuEventRecord(ev, s));
            CHECK(cuStreamWaitEvent(s2, ev, 0));
            CHECK(cuLaunchKernel(side, 1, 1, 1, 32, 1, 1, 0, s2, NULL, NULL));
        }
        char buf[256], *save = NULL;
        snprintf(buf, sizeof(buf), "%s", counts);
        for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
            CHECK(ncclAllReduce((void *)(uintptr_t)a, (void *)(uintptr_t)b, strtoull(t, NULL, 10),
                                ncclFloat32, ncclSum, comm, (cudaStream_t)s));
        if (custom)
            CHECK(cuLaunchKernel(custom, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
        if (!ahead || k == steps - 1) {
            CHECK(cuStreamSynchronize(s));
            CHECK(cuStreamSynchronize(s2));
        }
    }
    CHECK(ncclCommDestroy(comm));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "launch"))
        return launch(argv[0], atoi(argv[2]));
    if (argc == 5 && !strcmp(argv[1], "rank"))
        return rank_main(atoi(argv[2]), atoi(argv[3]), argv[4]);
    fprintf(stderr, "usage: w_links launch N | rank R N IDHEX\n");
    return 2;
}
