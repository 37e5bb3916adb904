/*
 * fn_proxy_steps.c - the ProxyOp and ProxyStep events of the fake NCCL's
 * proxy thread (profiler ABI v4 on), derived from each ring op's schedule
 * (struct fn_plan, fn_links.c), so the truth of every link is known.
 *
 * Per op and channel, two ProxyOps (parent: the Coll event): a send to
 * the next rank of the ring and a receive from the previous one (CollNet,
 * fn_algos.c: both with the collective network, whose peer is the
 * communicator's size, on the heads that talk to it), each
 * with nSteps = the ring's steps and chunkSize = the chunk of one channel.
 * The op's transfer begins at T0 = its end - ksteps x step; step k lasts
 * [T0 + k x step, T0 + (k+1) x step]. In it:
 *   send ProxyStep: started at the step's start in SendGPUWait (the GPU
 *     has not yet produced the chunk: it waits on the ring's slowest
 *     link), SendPeerWait_v4 then SendWait (transSize = chunk) at
 *     step end - send_ns, stopped at the step's end: the time in SendWait
 *     is exactly this rank's link latency + chunk / bandwidth;
 *   receive ProxyStep: started at the step's start in RecvWait, then
 *     RecvFlushWait (transSize = chunk) and RecvGPUWait at the step's end,
 *     stopped there.
 * Under each step, unless FAKEGPU_NCCL_NET=none, the network plugin's
 * event of its transfer (NetPlugin, parent: the step): IB (default) one
 * work request of the chunk on queue pair 0x100 + 2 x channel + (0 send,
 * 1 receive) of device channel mod FAKEGPU_NCCL_NET_DEVS, a send's from
 * its SendWait to the step's end (the link's latency + chunk / bandwidth),
 * a receive's from the step's start to its end; with socket, the same
 * spans as one socket operation each on descriptor 100 + 2 x channel + dir.
 * Events are made when their virtual time has come (the plugin reads its
 * own clock, as with NCCL's proxy), in schedule order; the ProxyOps stop
 * at the op's end, before its KernelCh events.
 *
 * Runs on the proxy thread only, without fn_lock.
 */
#include "fn_internal.h"

#include <limits.h>
#include <math.h>

static bool fn_has_steps(const struct fn_op *op)
{
    return fn_prof_version >= 4 && op->plan.ksteps > 0 && op->comm->prof_ctx &&
           (op->comm->prof_mask & (fnProfileProxyOp | fnProfileProxyStep));
}

/* When phase ph of op is due: 0 starts the ProxyOps, 1 + 3k, 2 + 3k and
 * 3 + 3k are step k's start, send transfer start and end, 3K + 1 stops
 * the ProxyOps. */
static int64_t fn_phase_time(const struct fn_op *op, int ph)
{
    const struct fn_plan *p = &op->plan;
    /* the ring's schedule ends before a slow channel's extra (fn_kphases.c) */
    int64_t t0 = op->p_end_ns - p->slow_extra_ns - llround(p->ksteps * p->step_ns);
    if (ph == 0)
        return t0;
    if (ph > 3 * p->ksteps)
        return op->p_end_ns;
    int k = (ph - 1) / 3, j = (ph - 1) % 3;
    int64_t a = t0 + llround(k * p->step_ns), e = t0 + llround((k + 1) * p->step_ns);
    if (j == 0)
        return a;
    if (j == 2)
        return e;
    int64_t b = a + llround(p->step_ns - p->send_ns);
    return b < e ? b : e;
}

/* The network plugin's event of channel ch's transfer in direction dir
 * (0 send, 1 receive), under step handle parent. The descriptor lives for
 * the start call only, as a transport's request data may not. */
static void *fn_net_start(struct fn_op *op, void *parent, int ch, int dir, int step)
{
    if (fn_prof_net == FN_NET_NONE || !parent)
        return NULL;
    fn_prof_net_ib_v1 ib = {.type = 1};
    fn_prof_net_sock_v1 so = {.type = 1};
    struct fn_ev e = {.type = fnProfileNetPlugin, .parent = parent};
    if (fn_prof_net == FN_NET_IB) {
        ib.qp.device = ch % fn_prof_net_devs;
        ib.qp.wr_id = (uint64_t)step;
        ib.qp.opcode = dir ? 2 : 1;
        ib.qp.qpNum = 0x100 + 2 * ch + dir;
        ib.qp.length = op->plan.chunk;
        e.net_id = (int64_t)(FN_NET_TYPE_IB | 1u);
        e.net_data = &ib;
    } else {
        so.sock.fd = 100 + 2 * ch + dir;
        so.sock.op = dir;
        so.sock.length = op->plan.chunk;
        e.net_id = (int64_t)(FN_NET_TYPE_SOCK | 1u);
        e.net_data = &so;
    }
    return fn_prof_start(op->comm, &e);
}

static void fn_phase_run(struct fn_op *op, int ph)
{
    const struct fn_plan *p = &op->plan;
    int chunk = p->chunk > INT_MAX ? INT_MAX : (int)p->chunk;
    for (int ch = 0; ch < fn_prof_channels; ch++) {
        void **pop = op->h_pop[ch], **pst = op->h_pst[ch];
        if (ph == 0) {
            for (int dir = 0; dir < 2; dir++) {
                struct fn_ev e = {.type = fnProfileProxyOp,
                                  .parent = op->h_op,
                                  .channel = (uint8_t)ch,
                                  .peer = dir ? p->prev : p->next,
                                  .nsteps = p->ksteps,
                                  .chunk = chunk,
                                  .is_send = !dir};
                pop[dir] = fn_prof_start(op->comm, &e);
            }
            continue;
        }
        if (ph > 3 * p->ksteps) {
            fn_prof_stop(pop[0]);
            fn_prof_stop(pop[1]);
            pop[0] = pop[1] = NULL;
            continue;
        }
        int k = (ph - 1) / 3, j = (ph - 1) % 3;
        if (j == 0) {
            struct fn_ev s = {.type = fnProfileProxyStep, .parent = pop[0], .step = k};
            pst[0] = fn_prof_start(op->comm, &s);
            fn_prof_record(pst[0], fnProfilerProxyStepSendGPUWait, 0);
            struct fn_ev r = {.type = fnProfileProxyStep, .parent = pop[1], .step = k};
            pst[1] = fn_prof_start(op->comm, &r);
            fn_prof_record(pst[1], fnProfilerProxyStepRecvWait, 0);
            op->h_pnet[ch][1] = fn_net_start(op, pst[1], ch, 1, k);
        } else if (j == 1) {
            fn_prof_record(pst[0], fnProfilerProxyStepSendPeerWait_v4, 0);
            fn_prof_record(pst[0], fnProfilerProxyStepSendWait, p->chunk);
            op->h_pnet[ch][0] = fn_net_start(op, pst[0], ch, 0, k);
        } else {
            fn_prof_stop(op->h_pnet[ch][0]);
            fn_prof_stop(op->h_pnet[ch][1]);
            op->h_pnet[ch][0] = op->h_pnet[ch][1] = NULL;
            fn_prof_stop(pst[0]);
            fn_prof_record(pst[1], fnProfilerProxyStepRecvFlushWait, p->chunk);
            fn_prof_record(pst[1], fnProfilerProxyStepRecvGPUWait, p->chunk);
            fn_prof_stop(pst[1]);
            pst[0] = pst[1] = NULL;
        }
    }
}

int64_t fn_steps_advance(struct fn_op *op, int64_t now)
{
    if (!fn_has_steps(op))
        return INT64_MAX;
    while (op->p_phase <= 3 * op->plan.ksteps + 1) {
        int64_t t = fn_phase_time(op, op->p_phase);
        if (t > now)
            return t;
        fn_phase_run(op, op->p_phase);
        op->p_phase++;
    }
    return INT64_MAX;
}
