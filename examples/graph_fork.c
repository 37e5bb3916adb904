/*
 * graph_fork: a CUDA graph with two branches, captured once on two streams
 * (forked and joined through events, as torch.cuda.graph captures a side
 * stream) and replayed every iteration, then a stream synchronize:
 *
 *   main: g_head (1 ms) -+- g_branch (B) -- g_body (3 ms) -+- g_tail (1 ms)
 *   side:                +- g_side (4.5 ms) ---------------+
 *
 * The graph's edges are head->branch, head->side, branch->body,
 * side->tail, body->tail. With B = 3 ms the path is head, branch, body,
 * tail (8 ms), and g_side has 1.5 ms of slack although it overlaps both
 * branch and body; with B = 1 ms the path moves onto g_side (6.5 ms).
 * scripts/gpu-check-graph.py records the first under `cutrace run`,
 * predicts the second with `cutrace whatif`, and runs it for real. The
 * kernels spin on %globaltimer for what their names say (spin_ptx.h); on
 * the simulated device the names alone set the durations.
 *
 * usage: graph_fork [ITERATIONS [BRANCH_US]]   (default 20, 3000)
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#include "spin_ptx.h"

static void check(CUresult r, const char *what)
{
    if (r != CUDA_SUCCESS) {
        const char *name = "?";
        cuGetErrorName(r, &name);
        fprintf(stderr, "graph_fork: %s failed: %s\n", what, name);
        exit(1);
    }
}

static void launch(CUfunction f, CUstream s)
{
    check(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL), "cuLaunchKernel");
}

int main(int argc, char **argv)
{
    int iterations = argc > 1 ? atoi(argv[1]) : 20;
    unsigned branch_us = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 3000;
    char branch[64];
    snprintf(branch, sizeof(branch), "g_branch__%uus", branch_us);
    const char *const names[] = {"g_head__1000us", branch, "g_side__4500us", "g_body__3000us",
                                 "g_tail__1000us"};
    enum { HEAD, BRANCH, SIDE, BODY, TAIL, N };
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn[N];
    CUstream main_s, side_s;
    CUevent fork, join;
    check(cuInit(0), "cuInit");
    check(cuDeviceGet(&dev, 0), "cuDeviceGet");
    check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    char *ptx = make_ptx(names, N);
    if (!ptx)
        return 1;
    check(cuModuleLoadData(&mod, ptx), "cuModuleLoadData");
    free(ptx);
    for (int i = 0; i < N; i++)
        check(cuModuleGetFunction(&fn[i], mod, names[i]), "cuModuleGetFunction");
    check(cuStreamCreate(&main_s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    check(cuStreamCreate(&side_s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    check(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    check(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING), "cuEventCreate");

    CUgraph graph;
    CUgraphExec exec;
    check(cuStreamBeginCapture(main_s, CU_STREAM_CAPTURE_MODE_GLOBAL), "cuStreamBeginCapture");
    launch(fn[HEAD], main_s);
    check(cuEventRecord(fork, main_s), "cuEventRecord");
    check(cuStreamWaitEvent(side_s, fork, 0), "cuStreamWaitEvent");
    launch(fn[BRANCH], main_s);
    launch(fn[SIDE], side_s);
    launch(fn[BODY], main_s);
    check(cuEventRecord(join, side_s), "cuEventRecord");
    check(cuStreamWaitEvent(main_s, join, 0), "cuStreamWaitEvent");
    launch(fn[TAIL], main_s);
    check(cuStreamEndCapture(main_s, &graph), "cuStreamEndCapture");
    check(cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiateWithFlags");

    for (int it = 0; it < iterations; it++) {
        check(cuGraphLaunch(exec, main_s), "cuGraphLaunch");
        check(cuStreamSynchronize(main_s), "cuStreamSynchronize");
    }
    check(cuGraphExecDestroy(exec), "cuGraphExecDestroy");
    check(cuGraphDestroy(graph), "cuGraphDestroy");
    cuEventDestroy(fork);
    cuEventDestroy(join);
    cuStreamDestroy(main_s);
    cuStreamDestroy(side_s);
    cuDevicePrimaryCtxRelease(dev);
    printf("graph_fork: %d replays of a %d-node graph (g_branch %u us)\n", iterations, N,
           branch_us);
    return 0;
}
