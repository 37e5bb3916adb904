/*
 * The cost of one NCCL proxy step to cutrace's profiler plugin
 * (shim/nccl_profiler.c, docs/nccl.md): run under the shim
 * (`cutrace run -- build/tests/bench/bench_nccl_proxy [STEPS]`), it finds
 * ncclProfiler_v5 in the process, starts a Coll event and a send ProxyOp
 * under it, and times STEPS proxy steps as NCCL's proxy makes them: start,
 * SendGPUWait, SendPeerWait, SendWait (with transSize), stop; the same
 * loop against an empty plugin is the baseline. Prints ns per step for
 * both; then the same with one IB work request's network event (start,
 * stop) inside each step, as NCCL's IB transport makes them; then the
 * plain step again under an op the shim recorded (its Coll event started
 * inside a wrapped ncclAllReduce: bench_nccl_stub.c), the only steps that
 * CUTRACE_NCCL_STEPS records raw: run it with the variable unset and with
 * a budget above 5 x STEPS to compare the per-step cost of raw steps off
 * and on (docs/nccl.md). Not run by the tests (it measures, it does not
 * check).
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

/* bench_nccl_stub.c: the "real" ncclAllReduce the shim wraps */
extern void (*bench_nccl_inside)(void);

static const struct ct_nprof_v5 *g_p;
static void *g_ctx, *g_coll;
static struct ct_nprof_descr_v5 *g_d;

static void start_coll_inside(void)
{
    g_p->start_event(g_ctx, &g_coll, g_d);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* ns per step of p over n steps (the best of 5 runs); net: with an IB
 * work request's event in each; rec: under an op the shim recorded */
static double steps(const struct ct_nprof_v5 *p, void *ctx, long n, int net, int rec)
{
    struct ct_nprof_net_ib_v1 wr = {.type = 1,
                                    .qp = {.device = 0, .qp_num = 0x100, .length = 1 << 20}};
    double best = 1e30;
    for (int run = 0; run < 5; run++) {
        struct ct_nprof_descr_v5 d;
        memset(&d, 0, sizeof d);
        d.type = CT_NPROF_COLL;
        d.coll.func = "AllReduce";
        d.coll.count = 1;
        void *coll = NULL, *pop = NULL;
        if (rec) {
            g_p = p, g_ctx = ctx, g_d = &d, g_coll = NULL;
            bench_nccl_inside = start_coll_inside;
            ncclAllReduce(NULL, NULL, 1, ncclFloat, ncclSum, NULL, NULL);
            bench_nccl_inside = NULL;
            coll = g_coll;
        } else {
            p->start_event(ctx, &coll, &d);
        }
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
            if (net) {
                struct ct_nprof_descr_v5 w;
                memset(&w, 0, sizeof w);
                w.type = CT_NPROF_NET_PLUGIN;
                w.parent = h;
                w.net.id = (int64_t)(CT_NPROF_NET_TYPE_IB | 1u);
                w.net.data = &wr;
                void *q = NULL;
                p->start_event(ctx, &q, &w);
                p->stop_event(q);
            }
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
    double base = steps(&nop, NULL, n, 0, 0), ours = steps(p, ctx, n, 0, 0);
    printf("proxy step (start, 3 states, stop): cutrace %.1f ns, empty plugin %.1f ns, added "
           "%.1f ns\n",
           ours, base, ours - base);
    base = steps(&nop, NULL, n, 1, 0), ours = steps(p, ctx, n, 1, 0);
    printf("proxy step with an IB work request's event: cutrace %.1f ns, empty plugin %.1f ns, "
           "added %.1f ns\n",
           ours, base, ours - base);
    const char *raw = getenv("CUTRACE_NCCL_STEPS");
    base = steps(&nop, NULL, n, 0, 1), ours = steps(p, ctx, n, 0, 1);
    printf("proxy step of a recorded op, CUTRACE_NCCL_STEPS=%s: cutrace %.1f ns, empty plugin "
           "%.1f ns, added %.1f ns\n",
           raw ? raw : "(unset)", ours, base, ours - base);
    p->finalize(ctx);
    return 0;
}
