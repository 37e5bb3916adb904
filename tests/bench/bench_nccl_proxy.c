/*
 * The cost of one NCCL proxy step to cutrace's profiler plugin
 * (shim/nccl_profiler.c, docs/nccl.md): run under the shim
 * (`cutrace run -- build/tests/bench/bench_nccl_proxy [STEPS]`), it finds
 * ncclProfiler_v5 in the process, starts a Coll event and a send ProxyOp
 * under it, and times STEPS proxy steps as NCCL's proxy makes them: start,
 * SendGPUWait, SendPeerWait, SendWait (with transSize), stop; the same
 * loop against an empty plugin is the baseline. Prints ns per step for
 * both. Not run by the tests (it measures, it does not check).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shim/nccl_profiler_abi.h"

static ncclResult_t nop_start(void *c, void **h, struct ct_nprof_descr_v5 *d)
{
    (void)c, (void)d;
    *h = h;
    return ncclSuccess;
}
static ncclResult_t nop_stop(void *h)
{
    (void)h;
    return ncclSuccess;
}
static ncclResult_t nop_state(void *h, int s, union ct_nprof_state_args_v4 *a)
{
    (void)h, (void)s, (void)a;
    return ncclSuccess;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* ns per step of p over n steps (the best of 5 runs) */
static double steps(const struct ct_nprof_v5 *p, void *ctx, long n)
{
    double best = 1e30;
    for (int run = 0; run < 5; run++) {
        struct ct_nprof_descr_v5 d;
        memset(&d, 0, sizeof d);
        d.type = CT_NPROF_COLL;
        d.coll.func = "AllReduce";
        d.coll.count = 1;
        void *coll = NULL, *pop = NULL;
        p->start_event(ctx, &coll, &d);
        memset(&d, 0, sizeof d);
        d.type = CT_NPROF_PROXY_OP;
        d.parent = coll;
        d.proxy_op.pid = getpid();
        d.proxy_op.peer = 1;
        d.proxy_op.nsteps = (int)n;
        d.proxy_op.is_send = 1;
        p->start_event(ctx, &pop, &d);
        union ct_nprof_state_args_v4 a = {.proxy_step = {.trans_size = 1 << 20}};
        double t0 = now();
        for (long i = 0; i < n; i++) {
            struct ct_nprof_descr_v5 s;
            memset(&s, 0, sizeof s);
            s.type = CT_NPROF_PROXY_STEP;
            s.parent = pop;
            void *h = NULL;
            p->start_event(ctx, &h, &s);
            p->record_event_state(h, CT_NPROF_STEP_SEND_GPU_WAIT, &a);
            p->record_event_state(h, CT_NPROF_STEP_SEND_PEER_WAIT, &a);
            p->record_event_state(h, CT_NPROF_STEP_SEND_WAIT, &a);
            p->stop_event(h);
        }
        double dt = (now() - t0) / (double)n;
        best = dt < best ? dt : best;
        p->stop_event(pop);
        p->stop_event(coll);
    }
    return best;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    const struct ct_nprof_v5 *p = dlsym(RTLD_DEFAULT, "ncclProfiler_v5");
    if (!p) {
        fprintf(stderr, "bench_nccl_proxy: run it under the shim (cutrace run -- ...)\n");
        return 2;
    }
    /* the shim starts recording at its first event: an I/O call is one */
    FILE *f = fopen("/proc/self/stat", "r");
    if (f)
        fclose(f);
    void *ctx = NULL;
    int mask = 0;
    p->init(&ctx, 1, &mask, NULL, 1, 2, 0, NULL);
    if (!(mask & CT_NPROF_PROXY_STEP)) {
        fprintf(stderr, "bench_nccl_proxy: the plugin asks for no proxy steps (not recording?)\n");
        return 2;
    }
    struct ct_nprof_v5 nop = {"nop", NULL, nop_start, nop_stop, nop_state, NULL};
    double base = steps(&nop, NULL, n), ours = steps(p, ctx, n);
    printf("proxy step (start, 3 states, stop): cutrace %.1f ns, empty plugin %.1f ns, added "
           "%.1f ns\n",
           ours, base, ours - base);
    p->finalize(ctx);
    return 0;
}
