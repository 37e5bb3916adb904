/*
 * The labelled job's cases that replay CUDA graphs (schedules in w_job.c's
 * top comment): serve (a captured decode graph per step) and graph (a
 * graph forked and joined through events, replayed each step).
 */
#include <unistd.h>

#include "cutrace/cutrace.h"
#include "tests/labelled/w_job.h"

/* ------------------------------------------------------------ serve */

void wj_serve(struct rank *k)
{
    CUfunction f;
    CHECK(cuModuleGetFunction(&f, k->mod, "decode__300us"));
    CUgraph g;
    CUgraphExec ge;
    CHECK(cuStreamBeginCapture(k->c, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int j = 0; j < 6; j++)
        CHECK(cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, k->c, NULL, NULL));
    CHECK(cuStreamEndCapture(k->c, &g));
    CHECK(cuGraphInstantiate(&ge, g, 0));
    for (int i = 0, n = wj_steps(60); i < n; i++) {
        wj_step_begin(i);
        if (i % 10 == 0)
            for (int j = 0; j < 1 + (i / 10) % 3; j++)
                wj_kernel(k, k->c, "prefill__2000us");
        CHECK(cuGraphLaunch(ge, k->c));
        CHECK(ncclAllReduce((void *)(uintptr_t)k->a, (void *)(uintptr_t)k->b, 16384, ncclFloat32,
                            ncclSum, k->comm, (cudaStream_t)k->c));
        CHECK(cuStreamSynchronize(k->c));
        wj_step_pop();
        int64_t t0 = wj_now_ns();
        usleep(200 + 100 * (unsigned)(i % 4));
        printf("HOST %d %d %.3f\n", k->r, i, (double)(wj_now_ns() - t0) / 1000.0);
    }
    CHECK(cuGraphExecDestroy(ge));
    CHECK(cuGraphDestroy(g));
}

/* ------------------------------------------------------------ graph */

void wj_graph(struct rank *k)
{
    const char *bu = getenv("W_JOB_GRAPH_B_US");
    char b[64];
    snprintf(b, sizeof(b), "g_branch__%sus", bu && *bu ? bu : "3000");
    CUevent fork, join;
    CHECK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
    CHECK(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
    CUgraph g;
    CUgraphExec ge;
    CHECK(cuStreamBeginCapture(k->c, CU_STREAM_CAPTURE_MODE_GLOBAL));
    wj_kernel(k, k->c, "g_head__1000us"); /* A */
    CHECK(cuEventRecord(fork, k->c));
    CHECK(cuStreamWaitEvent(k->m, fork, 0));
    wj_kernel(k, k->c, b);                /* B */
    wj_kernel(k, k->m, "g_side__4500us"); /* C */
    wj_kernel(k, k->c, "g_body__3000us"); /* D */
    CHECK(cuEventRecord(join, k->m));
    CHECK(cuStreamWaitEvent(k->c, join, 0));
    wj_kernel(k, k->c, "g_tail__1000us"); /* E */
    CHECK(cuStreamEndCapture(k->c, &g));
    CHECK(cuGraphInstantiate(&ge, g, 0));
    for (int i = 0, n = wj_steps(20); i < n; i++) {
        wj_step_begin(i);
        CHECK(cuGraphLaunch(ge, k->c));
        CHECK(ncclAllReduce((void *)(uintptr_t)k->a, (void *)(uintptr_t)k->b, 250000, ncclFloat32,
                            ncclSum, k->comm, (cudaStream_t)k->c));
        CHECK(cuStreamSynchronize(k->c));
        wj_step_pop();
    }
    CHECK(cuGraphExecDestroy(ge));
    CHECK(cuGraphDestroy(g));
    CHECK(cuEventDestroy(fork));
    CHECK(cuEventDestroy(join));
}
