/*
 * NCCL profiler plugin: libcutrace.so exports ncclProfiler_v7, _v6, _v5, _v4
 * and _v3, and `cutrace run` points NCCL_PROFILER_PLUGIN at it, so NCCL (>= 2.23
 * for v3, 2.25 v4, 2.26 v5, 2.28 v6, v7 where it speaks it) reports each collective and
 * point-to-point op with per-channel kernel events. An op's GPU interval is
 * the earliest channel start to the latest channel stop; it becomes a
 * CT_REC_GPU record of type nccl and source nccl_plugin, correlated with
 * the op's NCCL record. A v6 copy-engine collective (CeColl) has no kernel:
 * NCCL starts and stops its event on the calling thread around enqueueing
 * its copies (ncclLaunchCeColl), so the event's times are the host's
 * enqueueing, not the GPU's work; only its descriptor is recorded (a
 * CT_REC_NCCL_INFO with CT_NINFO_F_CE), and the decoder takes the copies
 * NCCL enqueued inside the op's call, which CUPTI times, as the op's GPU
 * interval (docs/nccl.md, "Copy-engine collectives").
 *
 * NCCL's own account of each op (docs/nccl.md): its descriptor's
 * algorithm, protocol, channels and warps become a CT_REC_NCCL_INFO record
 * at its start; from v4 on, each kernel channel whose start and stop the
 * GPU's timer stamped becomes a CT_REC_NCCL_CHANNEL record when it stops
 * (v3's are the proxy thread's observations: none), and its ProxyOp
 * events (one per channel, peer and direction) and their ProxyStep events
 * are aggregated in place: each
 * step's time in each state, read on our clock when NCCL records the
 * state, is summed into its ProxyOp, and the ProxyOp becomes one
 * CT_REC_NCCL_PROXY record when it and its steps have stopped. Proxy steps
 * can be millions a second: a step costs TSC reads and a few atomic
 * adds, and writes nothing of its own (tests/bench/bench_nccl_proxy.c).
 * A ProxyOp of another process (PXN: NCCL's descriptor names its pid) is
 * not ours to read and is skipped.
 *
 * Tying an event to our record: NCCL starts Coll and P2p events on the
 * thread that called the outermost ncclGroupEnd (or the op itself, for its
 * implicit group), inside that call; the op wrappers keep that call's ops
 * per thread (shim/nccl.c), and the first not yet taken with the same
 * function, count (and peer) is the one. Events that match nothing (an op
 * issued while we were not recording) are counted as untimed.
 *
 * Times: v4 and v5 carry the GPU's globaltimer (nanoseconds on the host's
 * CLOCK_REALTIME base, as the driver sets it), converted to the trace's
 * CLOCK_MONOTONIC with the current offset between the two clocks. v3 has no
 * GPU timer: its kernel-channel start and stop are reported by NCCL's proxy
 * thread when it observes them, so the host clock at those calls is used.
 *
 * One file, past 800 lines, on purpose: every event kind here (op, kernel
 * channel and its v7 phases, ProxyOp, ProxyStep, network event) lives in
 * one fixed pool with one reference-counting rule (a child holds its op or
 * ProxyOp until it stops); splitting by kind would put the pool, struct ev
 * and those lifetimes behind a header every part reaches into.
 *
 * These callbacks run on NCCL's threads, never inside a job's wrapped call:
 * they may read the clock, but still take no lock and allocate nothing
 * (handles come from a fixed pool).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim/nccl_int.h"
#include "shim/nccl_profiler.h"
#include "shim/nccl_steps.h"

#define CT_NPROF_POOL 8192

enum ev_kind {
    EV_FREE = 0,
    EV_OP = 1,
    EV_CHANNEL = 2,
    EV_PROXY = 3,
    EV_STEP = 4,
    EV_NET = 5,
    EV_PHASE = 6 /* v7: a kernel channel's barrier phase (channel_state: its channel, phase) */
};

/* A ProxyOp's network work on one queue pair or socket (CT_REC_NCCL_NET):
 * filled on the proxy thread that progresses the ProxyOp and stops its
 * network events (NCCL's transports call the profiler from their isend,
 * irecv and test, which that thread makes), so in place without atomics;
 * read once the ProxyOp and its events have all stopped. */
struct net_acc {
    uint8_t transport; /* enum ct_nccl_net_transport, 0: slot unused */
    int32_t device;
    uint32_t qp;
    uint64_t first, last, wrs, bytes, busy;
};
/* Taken from a pool of their own (a ProxyOp of a transport that reports
 * nothing pays nothing: the ProxyOp pool stays 160 bytes a slot). */
struct net_block {
    _Atomic int used;
    struct net_acc qps[CT_NNET_MAX]; /* per queue pair or socket */
    uint64_t other_wrs, other_bytes; /* on queue pairs past the slots */
};
static _Atomic uint64_t g_pool_full; /* events or network blocks refused: pools full */
#define CT_NPROF_NET_POOL 1024
static struct net_block g_net_pool[CT_NPROF_NET_POOL];
static _Atomic unsigned g_net_next;

static struct net_block *net_block_alloc(void)
{
    for (unsigned tries = 0; tries < CT_NPROF_NET_POOL; tries++) {
        unsigned i =
            atomic_fetch_add_explicit(&g_net_next, 1, memory_order_relaxed) % CT_NPROF_NET_POOL;
        int expected = 0;
        if (atomic_compare_exchange_strong(&g_net_pool[i].used, &expected, 1)) {
            struct net_block *b = &g_net_pool[i];
            memset(b->qps, 0, sizeof(b->qps));
            b->other_wrs = b->other_bytes = 0;
            return b;
        }
    }
    atomic_fetch_add(&g_pool_full, 1); /* said at finalize, as a full event pool is */
    return NULL;
}

/* A ProxyOp's sums (CT_NPROXY_* fields). Its steps run on one proxy
 * thread, in order (NCCL's proxy progresses a ProxyOp's steps in
 * sequence), so busy_end needs no compare-and-swap; the sums are atomic
 * all the same, being cheap. */
struct proxy_acc {
    uint32_t channel, nsteps, chunk;
    int32_t peer;
    uint8_t send;
    _Atomic uint64_t first, last; /* first step start, last step stop */
    _Atomic uint64_t steps, bytes, gpu_wait, peer_wait, net, flush, busy;
    uint64_t busy_end;      /* end of the union of net-state time so far */
    double rate;            /* the steps' times: TSC ticks of this many ns, or 0: monotonic ns */
    struct net_block *netb; /* its network work, from the first network event on */
    uint64_t raw[3];        /* CUTRACE_NCCL_STEPS: its raw steps' state slots so far (step_raw) */
};

/* A step's clock: the TSC when the writer has published its conversion
 * when the ProxyOp began (a read of a few ns, against clock_gettime's tens:
 * a step reads it five times), else monotonic ns. */
static inline uint64_t step_now(const struct proxy_acc *a)
{
    return a->rate ? ct_arch_ticks() : ct_clock_mono_ns();
}

/* A tick count or duration of a's steps in ns. */
static inline uint64_t step_ns(const struct proxy_acc *a, uint64_t d)
{
    return ct_nsteps_ns(a->rate, d); /* raw steps convert alike (shim/nccl_steps.h) */
}

/* A kernel channel: its id, and whether both of its ends came from the
 * GPU's timer (ABI v4 on), which alone makes its record (start/end). */
struct channel_state {
    uint32_t id;
    uint8_t timed_start, timed_end;
    uint8_t phase; /* EV_PHASE: NCCL's phaseId */
};

/* A network event in progress: where it runs, its bytes, since when. */
struct net_state {
    uint8_t transport;
    int32_t device;
    uint32_t qp;
    uint64_t bytes, start;
};

/* A step in progress: its current state and since when. */
struct step_state {
    int state; /* NCCL's state id, 0: none yet */
    uint64_t since, start, bytes;
    uint64_t d[3]; /* time in each state slot (CT_REC_NCCL_STEP's order), for its raw record */
    uint32_t step; /* NCCL's step index */
    uint8_t seen;  /* slots entered, bit i */
};

struct ev {
    _Atomic int kind;
    _Atomic int refs; /* op: itself + open channels and proxy ops; proxy op: itself + steps */
    struct ev *parent;
    uint64_t corr;
    uint32_t name;
    uint8_t ce;             /* op: a copy-engine collective: no GPU record of ours (above) */
    _Atomic uint64_t start; /* op: earliest channel start, UINT64_MAX none */
    _Atomic uint64_t end;   /* op: latest channel stop */
    union {
        struct proxy_acc px;
        struct step_state st;
        struct channel_state ch;
        struct net_state net;
    };
};

static struct ev g_pool[CT_NPROF_POOL];
static _Atomic unsigned g_next;
static _Atomic uint64_t g_untimed;
static int g_group_handle; /* Group events: a non-NULL handle we ignore */
static int g_ctx;

/* The slots ev_alloc uses: all of them, or fewer under
 * CUTRACE_TEST_NPROF_POOL (tests: a pool that fills), set at init. */
static unsigned g_pool_n = CT_NPROF_POOL;

static struct ev *ev_alloc(int kind)
{
    unsigned n = g_pool_n;
    for (unsigned tries = 0; tries < n; tries++) {
        unsigned i = atomic_fetch_add_explicit(&g_next, 1, memory_order_relaxed) % n;
        int expected = EV_FREE;
        if (atomic_compare_exchange_strong(&g_pool[i].kind, &expected, kind))
            return &g_pool[i];
    }
    atomic_fetch_add(&g_pool_full, 1);
    return NULL;
}

static int ours(void *h)
{
    return h && (struct ev *)h >= g_pool && (struct ev *)h < g_pool + CT_NPROF_POOL;
}

/*
 * CLOCK_REALTIME - CLOCK_MONOTONIC, read back to back (good to ~100 ns)
 * and kept for a second: one offset for both ends of an interval keeps its
 * length exact (offsets read for each end jitter by more than a short
 * kernel lasts), while NTP slewing the realtime clock is followed.
 */
static _Atomic uint64_t g_offset, g_offset_at;

static uint64_t gpu_to_mono(uint64_t ptimer)
{
    uint64_t mono = ct_clock_mono_ns();
    uint64_t off = atomic_load_explicit(&g_offset, memory_order_relaxed);
    if (!off || mono - atomic_load_explicit(&g_offset_at, memory_order_relaxed) > 1000000000u) {
        off = ct_clock_real_ns() - mono;
        atomic_store_explicit(&g_offset, off, memory_order_relaxed);
        atomic_store_explicit(&g_offset_at, mono, memory_order_relaxed);
    }
    return ptimer > off ? ptimer - off : 0;
}

static void op_release(struct ev *op)
{
    if (atomic_fetch_sub(&op->refs, 1) != 1)
        return;
    uint64_t s = atomic_load(&op->start), e = atomic_load(&op->end);
    if (e < s && s != UINT64_MAX)
        e = s; /* an offset update between start and stop */
    /* corr 0: the call was not recorded (paused between capture windows),
     * so its GPU time is not ours to give or to miss; with a recorded call
     * it is the window's even when it ran after the window closed */
    if (op->corr && !op->ce && s != UINT64_MAX && ct_shim_live()) {
        uint64_t f[CT_GPU_NFIELDS] = {0};
        f[CT_GPU_START] = s;
        f[CT_GPU_END] = e;
        f[CT_GPU_DEVICE] = (uint64_t)(int64_t)-1;
        f[CT_GPU_CORR] = op->corr;
        f[CT_GPU_TYPE] = CT_GPU_NCCL;
        f[CT_GPU_NAME] = op->name;
        f[CT_GPU_SOURCE] = CT_SRC_NCCL_PLUGIN;
        int guard = ct_tls_guard;
        ct_tls_guard = 1;
        ct_emit(CT_REC_GPU, CT_RF_NS, f, CT_GPU_NFIELDS);
        ct_tls_guard = guard;
    } else if (op->corr && !op->ce) {
        atomic_fetch_add(&g_untimed, 1);
    }
    atomic_store(&op->kind, EV_FREE);
}

/* What the descriptor says of an op (CT_REC_NCCL_INFO). */
struct op_info {
    const char *algo, *proto;
    unsigned channels, warps, flags;
};

static struct ev *op_start(void **handle, const char *func, uint64_t count, int peer,
                           const struct op_info *info)
{
    struct ev *e = ev_alloc(EV_OP);
    *handle = e;
    if (!e)
        return NULL;
    e->parent = NULL;
    e->ce = 0;
    e->corr = ct_nccl_take_pending(func, count, peer);
    char name[48];
    snprintf(name, sizeof(name), "nccl%s", func ? func : "?");
    int guard = ct_tls_guard;
    ct_tls_guard = 1;
    int live = ct_shim_live();
    e->name = live ? ct_intern(name) : 0;
    if (live && e->corr && info) {
        uint64_t f[CT_NINFO_NFIELDS] = {0};
        f[CT_NINFO_TIME] = ct_clock_mono_ns();
        f[CT_NINFO_CORR] = e->corr;
        f[CT_NINFO_ALGO] = ct_intern(info->algo ? info->algo : "");
        f[CT_NINFO_PROTO] = ct_intern(info->proto ? info->proto : "");
        f[CT_NINFO_CHANNELS] = info->channels;
        f[CT_NINFO_WARPS] = info->warps;
        f[CT_NINFO_FLAGS] = info->flags;
        ct_emit(CT_REC_NCCL_INFO, CT_RF_NS, f, CT_NINFO_NFIELDS);
    }
    ct_tls_guard = guard;
    atomic_store(&e->start, UINT64_MAX);
    atomic_store(&e->end, 0);
    atomic_store(&e->refs, 1);
    return e;
}

/* ------------------------------------------------------------ proxy steps */

static void proxy_emit(struct ev *p)
{
    struct proxy_acc *a = &p->px;
    struct ev *op = p->parent;
    if (!op->corr || !ct_shim_live() || !atomic_load(&a->steps))
        return;
    uint64_t f[CT_NPROXY_NFIELDS] = {0};
    f[CT_NPROXY_START] = atomic_load(&a->first);
    f[CT_NPROXY_END] = atomic_load(&a->last);
    if (a->rate) {
        f[CT_NPROXY_START] = ct_clock_ticks_ns(f[CT_NPROXY_START]);
        f[CT_NPROXY_END] = ct_clock_ticks_ns(f[CT_NPROXY_END]);
    }
    if (f[CT_NPROXY_END] < f[CT_NPROXY_START])
        f[CT_NPROXY_END] = f[CT_NPROXY_START];
    f[CT_NPROXY_CORR] = op->corr;
    f[CT_NPROXY_CHANNEL] = a->channel;
    f[CT_NPROXY_PEER] = (uint64_t)(int64_t)a->peer;
    f[CT_NPROXY_SEND] = a->send;
    f[CT_NPROXY_STEPS] = atomic_load(&a->steps);
    f[CT_NPROXY_BYTES] = atomic_load(&a->bytes);
    f[CT_NPROXY_GPU_WAIT] = step_ns(a, atomic_load(&a->gpu_wait));
    f[CT_NPROXY_PEER_WAIT] = step_ns(a, atomic_load(&a->peer_wait));
    f[CT_NPROXY_NET] = step_ns(a, atomic_load(&a->net));
    f[CT_NPROXY_FLUSH] = step_ns(a, atomic_load(&a->flush));
    f[CT_NPROXY_NET_BUSY] = step_ns(a, atomic_load(&a->busy));
    f[CT_NPROXY_NSTEPS] = a->nsteps;
    f[CT_NPROXY_CHUNK] = a->chunk;
    int guard = ct_tls_guard;
    ct_tls_guard = 1;
    ct_emit(CT_REC_NCCL_PROXY, CT_RF_NS, f, CT_NPROXY_NFIELDS);
    const struct net_block *nb = a->netb;
    int last = -1;
    for (int i = 0; i < CT_NNET_MAX; i++)
        if (nb && nb->qps[i].transport)
            last = i;
    for (int i = 0; i <= last; i++) {
        const struct net_acc *n = &nb->qps[i];
        uint64_t g[CT_NNET_NFIELDS] = {0};
        g[CT_NNET_START] = a->rate ? ct_clock_ticks_ns(n->first) : n->first;
        g[CT_NNET_END] = a->rate ? ct_clock_ticks_ns(n->last) : n->last;
        if (g[CT_NNET_END] < g[CT_NNET_START])
            g[CT_NNET_END] = g[CT_NNET_START];
        g[CT_NNET_CORR] = op->corr;
        g[CT_NNET_CHANNEL] = a->channel;
        g[CT_NNET_PEER] = (uint64_t)(int64_t)a->peer;
        g[CT_NNET_SEND] = a->send;
        g[CT_NNET_TRANSPORT] = n->transport;
        g[CT_NNET_DEVICE] = (uint64_t)(int64_t)n->device;
        g[CT_NNET_QP] = n->qp;
        g[CT_NNET_WRS] = n->wrs;
        g[CT_NNET_BYTES] = n->bytes;
        g[CT_NNET_BUSY] = step_ns(a, n->busy);
        if (i == last) {
            g[CT_NNET_OTHER_WRS] = nb->other_wrs;
            g[CT_NNET_OTHER_BYTES] = nb->other_bytes;
        }
        ct_emit(CT_REC_NCCL_NET, CT_RF_NS, g, CT_NNET_NFIELDS);
    }
    ct_tls_guard = guard;
}

static void op_release(struct ev *op);

static void proxy_release(struct ev *p)
{
    if (atomic_fetch_sub(&p->refs, 1) != 1)
        return;
    proxy_emit(p);
    if (p->px.netb) {
        atomic_store(&p->px.netb->used, 0);
        p->px.netb = NULL;
    }
    struct ev *op = p->parent;
    atomic_store(&p->kind, EV_FREE);
    op_release(op);
}

static void proxy_start(void **handle, void *parent, const struct ct_nprof_proxy_op *d)
{
    *handle = NULL;
    if (d->pid != ct_shim_pid || !ours(parent) ||
        atomic_load(&((struct ev *)parent)->kind) != EV_OP)
        return;
    struct ev *e = ev_alloc(EV_PROXY);
    if (!e)
        return;
    struct ev *op = parent;
    atomic_fetch_add(&op->refs, 1);
    e->parent = op;
    struct proxy_acc *a = &e->px;
    a->channel = d->channel;
    a->peer = d->peer;
    a->send = d->is_send != 0;
    a->nsteps = d->nsteps > 0 ? (uint32_t)d->nsteps : 0;
    a->chunk = d->chunk_size > 0 ? (uint32_t)d->chunk_size : 0;
    atomic_store(&a->first, UINT64_MAX);
    atomic_store(&a->last, 0);
    atomic_store(&a->steps, 0);
    atomic_store(&a->bytes, 0);
    atomic_store(&a->gpu_wait, 0);
    atomic_store(&a->peer_wait, 0);
    atomic_store(&a->net, 0);
    atomic_store(&a->flush, 0);
    atomic_store(&a->busy, 0);
    a->busy_end = 0;
    a->rate = ct_clock_pub_rate();
    a->netb = NULL;
    a->raw[0] = a->raw[1] = a->raw[2] = 0;
    atomic_store(&e->refs, 1);
    *handle = e;
}

static void step_start(void **handle, void *parent, int step)
{
    *handle = NULL;
    if (!ours(parent) || atomic_load(&((struct ev *)parent)->kind) != EV_PROXY)
        return;
    struct ev *e = ev_alloc(EV_STEP);
    if (!e)
        return;
    struct ev *p = parent;
    atomic_fetch_add(&p->refs, 1);
    e->parent = p;
    e->st.state = 0;
    e->st.start = e->st.since = step_now(&p->px);
    e->st.bytes = 0;
    e->st.d[0] = e->st.d[1] = e->st.d[2] = 0;
    e->st.step = step > 0 ? (uint32_t)step : 0;
    e->st.seen = 0;
    *handle = e;
}

/* The time since the step entered its current state, to that state's sum. */
static void step_close_state(struct ev *e, uint64_t now)
{
    struct proxy_acc *a = &e->parent->px;
    uint64_t s = e->st.since, d = now > s ? now - s : 0;
    int slot = 2; /* the state's slot in the raw record: the order NCCL enters them */
    switch (e->st.state) {
    case CT_NPROF_STEP_SEND_GPU_WAIT: slot = 0; /* fall through */
    case CT_NPROF_STEP_RECV_GPU_WAIT: atomic_fetch_add(&a->gpu_wait, d); break;
    case CT_NPROF_STEP_SEND_PEER_WAIT:
        slot = 1;
        atomic_fetch_add(&a->peer_wait, d);
        break;
    case CT_NPROF_STEP_RECV_FLUSH_WAIT:
        slot = 1;
        atomic_fetch_add(&a->flush, d);
        break;
    case CT_NPROF_STEP_RECV_WAIT: slot = 0; /* fall through */
    case CT_NPROF_STEP_SEND_WAIT:
        atomic_fetch_add(e->st.state == CT_NPROF_STEP_SEND_WAIT ? &a->net : &a->peer_wait, d);
        if (now > a->busy_end) {
            atomic_fetch_add(&a->busy, now - (s > a->busy_end ? s : a->busy_end));
            a->busy_end = now;
        }
        break;
    default: return; /* none yet, or a state we do not know: in no sum */
    }
    e->st.d[slot] += d;
    e->st.seen |= (uint8_t)(1u << slot);
}

/* CUTRACE_NCCL_STEPS: the step's own record (shim/nccl_steps.c), while the
 * budget lasts; its state times to ns through the ProxyOp's running sums. */
static void step_raw(struct ev *e, uint64_t now)
{
    struct proxy_acc *a = &e->parent->px;
    const struct ev *op = e->parent->parent;
    if (op->corr && ct_shim_live() && ct_nsteps_claim())
        ct_nsteps_write(&(struct ct_nstep){e->st.start,
                                           now,
                                           {e->st.d[0], e->st.d[1], e->st.d[2]},
                                           a->rate,
                                           a->raw,
                                           op->corr,
                                           e->st.bytes,
                                           a->channel,
                                           e->st.step,
                                           a->peer,
                                           a->send,
                                           e->st.seen});
}

static void step_state(struct ev *e, int state, size_t trans_size)
{
    uint64_t now = step_now(&e->parent->px);
    step_close_state(e, now);
    e->st.state = state;
    e->st.since = now;
    if (trans_size > e->st.bytes)
        e->st.bytes = trans_size;
}

static void step_stop(struct ev *e)
{
    uint64_t now = step_now(&e->parent->px);
    step_close_state(e, now);
    struct ev *p = e->parent;
    struct proxy_acc *a = &p->px;
    uint64_t cur = atomic_load(&a->first);
    while (e->st.start < cur && !atomic_compare_exchange_weak(&a->first, &cur, e->st.start))
        ;
    cur = atomic_load(&a->last);
    while (now > cur && !atomic_compare_exchange_weak(&a->last, &cur, now))
        ;
    atomic_fetch_add(&a->bytes, e->st.bytes);
    atomic_fetch_add(&a->steps, 1);
    if (ct_nsteps_budget)
        step_raw(e, now);
    atomic_store(&e->kind, EV_FREE);
    proxy_release(p);
}

/* A network plugin's event under one of our steps: IB work requests and
 * socket operations (version 1 of each, the transports NCCL ships); other
 * plugins' events are not read. It holds its ProxyOp until it stops. */
static void net_start(void **handle, void *parent, const struct ct_nprof_net_plugin *d)
{
    *handle = NULL;
    if (!ours(parent) || atomic_load(&((struct ev *)parent)->kind) != EV_STEP || !d->data)
        return;
    uint32_t type = (uint32_t)d->id & CT_NPROF_NET_TYPE_MASK;
    uint32_t ver = (uint32_t)d->id & CT_NPROF_NET_VER_MASK;
    struct net_state n = {0};
    if (type == CT_NPROF_NET_TYPE_IB && ver == 1) {
        const struct ct_nprof_net_ib_v1 *ib = d->data;
        if (ib->type != 1) /* ncclProfileQp */
            return;
        n = (struct net_state){CT_NNET_IB, ib->qp.device, (uint32_t)ib->qp.qp_num, ib->qp.length,
                               0};
    } else if (type == CT_NPROF_NET_TYPE_SOCK && ver == 1) {
        const struct ct_nprof_net_sock_v1 *so = d->data;
        if (so->type != 1) /* ncclProfileSocket */
            return;
        n = (struct net_state){CT_NNET_SOCKET, -1, (uint32_t)so->sock.fd, so->sock.length, 0};
    } else {
        return;
    }
    struct ev *p = ((struct ev *)parent)->parent; /* the step's ProxyOp */
    struct ev *e = ev_alloc(EV_NET);
    if (!e)
        return;
    atomic_fetch_add(&p->refs, 1);
    e->parent = p;
    n.start = step_now(&p->px);
    e->net = n;
    *handle = e;
}

static void net_stop(struct ev *e)
{
    struct ev *p = e->parent;
    struct proxy_acc *a = &p->px;
    uint64_t now = step_now(a);
    const struct net_state *n = &e->net;
    struct net_acc *slot = NULL;
    if (!a->netb)
        a->netb = net_block_alloc(); /* NULL: the pool is out, the work goes unsaid */
    for (int i = 0; a->netb && i < CT_NNET_MAX && !slot; i++) {
        struct net_acc *t = &a->netb->qps[i];
        if (!t->transport) {
            *t = (struct net_acc){n->transport, n->device, n->qp, n->start, now, 0, 0, 0};
            slot = t;
        } else if (t->transport == n->transport && t->device == n->device && t->qp == n->qp) {
            slot = t;
        }
    }
    if (slot) {
        slot->first = n->start < slot->first ? n->start : slot->first;
        slot->last = now > slot->last ? now : slot->last;
        slot->wrs++;
        slot->bytes += n->bytes;
        slot->busy += now > n->start ? now - n->start : 0;
    } else if (a->netb) {
        a->netb->other_wrs++;
        a->netb->other_bytes += n->bytes;
    }
    atomic_store(&e->kind, EV_FREE);
    proxy_release(p);
}

static void channel_start(void **handle, void *parent, int has_timer, uint64_t ptimer, uint32_t id)
{
    *handle = NULL;
    if (!ours(parent) || atomic_load(&((struct ev *)parent)->kind) != EV_OP)
        return;
    struct ev *e = ev_alloc(EV_CHANNEL);
    if (!e)
        return;
    struct ev *op = parent;
    atomic_fetch_add(&op->refs, 1);
    e->parent = op;
    e->ch.id = id;
    e->ch.timed_start = has_timer && ptimer;
    e->ch.timed_end = 0;
    atomic_store(&e->start, e->ch.timed_start ? gpu_to_mono(ptimer) : ct_clock_mono_ns());
    atomic_store(&e->end, 0);
    *handle = e;
}

/* The channel's own record (CT_REC_NCCL_CHANNEL): only when the GPU's
 * timer stamped both ends; v3's are the proxy thread's observations, which
 * measure its polling, not the kernel (docs/nccl.md). One emit, from the
 * channel's own event: no per-op state, no lock. */
static void channel_emit(const struct ev *e, uint64_t s, uint64_t t)
{
    const struct ev *op = e->parent;
    if (!e->ch.timed_start || !e->ch.timed_end || !op->corr || op->ce || !ct_shim_live())
        return;
    uint64_t f[CT_NCHAN_NFIELDS] = {0};
    f[CT_NCHAN_START] = s;
    f[CT_NCHAN_END] = t < s ? s : t; /* an offset update between start and stop */
    f[CT_NCHAN_CORR] = op->corr;
    f[CT_NCHAN_CHANNEL] = e->ch.id;
    int guard = ct_tls_guard;
    ct_tls_guard = 1;
    ct_emit(CT_REC_NCCL_CHANNEL, CT_RF_NS, f, CT_NCHAN_NFIELDS);
    ct_tls_guard = guard;
}

static void channel_stop(struct ev *e)
{
    struct ev *op = e->parent;
    uint64_t s = atomic_load(&e->start);
    uint64_t t = atomic_load(&e->end);
    if (!t)
        t = ct_clock_mono_ns(); /* v3, or no stop timer given */
    else
        channel_emit(e, s, t);
    uint64_t cur = atomic_load(&op->start);
    while (s && s < cur && !atomic_compare_exchange_weak(&op->start, &cur, s))
        ;
    cur = atomic_load(&op->end);
    while (t > cur && !atomic_compare_exchange_weak(&op->end, &cur, t))
        ;
    atomic_store(&e->kind, EV_FREE);
    op_release(op);
}

/* v7: a barrier phase of one of our kernel channels (a KernelPhase event;
 * NCCL makes them for its symmetric kernels), from the GPU's timer at its
 * start to its KernelPhaseStop state's. It holds the channel's op, whose
 * correlation id its record carries, until it stops. */
static void phase_start(void **handle, void *parent, const struct ct_nprof_kernel_phase_v7 *d)
{
    *handle = NULL;
    if (!ours(parent) || atomic_load(&((struct ev *)parent)->kind) != EV_CHANNEL || !d->ptimer)
        return;
    struct ev *op = ((struct ev *)parent)->parent;
    struct ev *e = ev_alloc(EV_PHASE);
    if (!e)
        return;
    atomic_fetch_add(&op->refs, 1);
    e->parent = op;
    e->ch.id = ((struct ev *)parent)->ch.id;
    e->ch.phase = d->phase;
    atomic_store(&e->start, gpu_to_mono(d->ptimer));
    atomic_store(&e->end, 0);
    *handle = e;
}

static void phase_stop(struct ev *e)
{
    struct ev *op = e->parent;
    uint64_t s = atomic_load(&e->start), t = atomic_load(&e->end);
    if (t && op->corr && ct_shim_live()) { /* no stop timer: no phase to give */
        uint64_t f[CT_NPHASE_NFIELDS] = {s, t < s ? s : t, op->corr, e->ch.id, e->ch.phase};
        int guard = ct_tls_guard;
        ct_tls_guard = 1;
        ct_emit(CT_REC_NCCL_PHASE, CT_RF_NS, f, CT_NPHASE_NFIELDS);
        ct_tls_guard = guard;
    }
    atomic_store(&e->kind, EV_FREE);
    op_release(op);
}

/* v7: the tag the application gave op (0: none, nothing written). */
static void op_tag(const struct ev *op, uint64_t tag)
{
    if (!op || !op->corr || !tag || !ct_shim_live())
        return;
    uint64_t f[CT_NTAG_NFIELDS] = {ct_clock_mono_ns(), op->corr, tag};
    int guard = ct_tls_guard;
    ct_tls_guard = 1;
    ct_emit(CT_REC_NCCL_TAG, CT_RF_NS, f, CT_NTAG_NFIELDS);
    ct_tls_guard = guard;
}

static ncclResult_t stop_event(void *handle)
{
    if (!ours(handle))
        return ncclSuccess;
    struct ev *e = handle;
    int kind = atomic_load(&e->kind);
    if (kind == EV_STEP) {
        step_stop(e);
    } else if (kind == EV_PROXY) {
        proxy_release(e);
    } else if (kind == EV_CHANNEL) {
        channel_stop(e);
    } else if (kind == EV_NET) {
        net_stop(e);
    } else if (kind == EV_PHASE) {
        phase_stop(e);
    } else if (kind == EV_OP) {
        op_release(e);
    }
    return ncclSuccess;
}

static ncclResult_t record_state_v4(void *handle, int state, union ct_nprof_state_args_v4 *a)
{
    if (!ours(handle))
        return ncclSuccess;
    struct ev *e = handle;
    int kind = atomic_load(&e->kind);
    if (kind == EV_STEP)
        step_state(e, state, a ? a->proxy_step.trans_size : 0);
    else if (kind == EV_CHANNEL && state == CT_NPROF_STATE_KERNEL_CH_STOP && a &&
             a->kernel_ch.ptimer) {
        atomic_store(&e->end, gpu_to_mono(a->kernel_ch.ptimer));
        e->ch.timed_end = 1;
    } else if (kind == EV_PHASE && state == CT_NPROF_STATE_KERNEL_PHASE_STOP && a &&
               a->kernel_ch.ptimer) {
        atomic_store(&e->end, gpu_to_mono(a->kernel_ch.ptimer));
    }
    return ncclSuccess;
}

static ncclResult_t record_state_v3(void *handle, int state, void *a)
{
    (void)handle, (void)state, (void)a;
    return ncclSuccess;
}

/* Common init: what we want to hear about, and the link between NCCL's
 * own communicator id and ours (a "nccl_comm_hash" metadata entry). */
static ncclResult_t init_common(void **ctx, int *mask, uint64_t nccl_hash, int version)
{
    *ctx = &g_ctx;
    const char *tp = getenv("CUTRACE_TEST_NPROF_POOL");
    if (tp && atoi(tp) > 0 && atoi(tp) < CT_NPROF_POOL)
        g_pool_n = (unsigned)atoi(tp);
    if (!ct_shim_live()) {
        *mask = 0;
        return ncclSuccess;
    }
    *mask = CT_NPROF_GROUP | CT_NPROF_COLL | CT_NPROF_P2P | CT_NPROF_KERNEL_CH;
    /* v3's steps carry no transSize and lack the peer-wait state */
    if (version >= 4)
        *mask |= CT_NPROF_PROXY_OP | CT_NPROF_PROXY_STEP | CT_NPROF_NET_PLUGIN;
    if (version >= 6)
        *mask |= CT_NPROF_CE_COLL;
    if (version >= 7)
        *mask |= CT_NPROF_KERNEL_PHASE;
    uint64_t ours_hash = ct_nccl_tls()->init_hash;
    if (ours_hash && nccl_hash) {
        int guard = ct_tls_guard;
        ct_tls_guard = 1;
        char buf[24];
        snprintf(buf, sizeof(buf), "0x%016llx", (unsigned long long)nccl_hash);
        uint64_t f[CT_META_NFIELDS] = {ct_clock_now(), CT_SCOPE_COMM, ours_hash,
                                       ct_intern("nccl_comm_hash"), ct_intern(buf)};
        ct_emit(CT_REC_META, 0, f, CT_META_NFIELDS);
        ct_tls_guard = guard;
    }
    return ncclSuccess;
}

/* Ops that ended without a GPU interval and events refused by a full
 * pool, each under its own reason: a full pool is ours (events NCCL made
 * that we could not follow), an untimed op NCCL's (no timer reached us). */
static ncclResult_t finalize(void *ctx)
{
    (void)ctx;
    const struct {
        _Atomic uint64_t *n;
        uint64_t reason;
    } c[] = {{&g_untimed, CT_DROP_GPU_UNTIMED}, {&g_pool_full, CT_DROP_NCCL_POOL_FULL}};
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        uint64_t n = atomic_exchange(c[i].n, 0);
        if (!n || !ct_shim_live())
            continue;
        int guard = ct_tls_guard;
        ct_tls_guard = 1;
        uint64_t f[CT_DROP_NFIELDS] = {ct_clock_mono_ns(), n, c[i].reason};
        ct_emit(CT_REC_DROP, CT_RF_NS, f, CT_DROP_NFIELDS);
        ct_tls_guard = guard;
    }
    return ncclSuccess;
}

/* ------------------------------------------------------------------ v5 */

static ncclResult_t init_v5(void **ctx, uint64_t comm_id, int *mask, const char *comm_name,
                            int nnodes, int nranks, int rank, ct_nprof_logger log)
{
    (void)comm_name, (void)nnodes, (void)nranks, (void)rank, (void)log;
    return init_common(ctx, mask, comm_id, 5);
}

static ncclResult_t init_v6(void **ctx, uint64_t comm_id, int *mask, const char *comm_name,
                            int nnodes, int nranks, int rank, ct_nprof_logger log)
{
    (void)comm_name, (void)nnodes, (void)nranks, (void)rank, (void)log;
    return init_common(ctx, mask, comm_id, 6);
}

/* v4 to v6 name the fields alike; only the type field's width differs, and
 * v6 adds the copy-engine collective. */
#define CT_NPROF_START_V456(fn, descr)                                                             \
    static ncclResult_t fn(void *ctx, void **handle, descr *d)                                     \
    {                                                                                              \
        (void)ctx;                                                                                 \
        *handle = NULL;                                                                            \
        if (!d)                                                                                    \
            return ncclSuccess;                                                                    \
        if (d->type == CT_NPROF_GROUP)                                                             \
            *handle = &g_group_handle;                                                             \
        else if (d->type == CT_NPROF_COLL)                                                         \
            op_start(handle, d->coll.func, d->coll.count, -1,                                      \
                     &(struct op_info){d->coll.algo, d->coll.proto, d->coll.nchannels,             \
                                       d->coll.nwarps, 0});                                        \
        else if (d->type == CT_NPROF_P2P)                                                          \
            op_start(handle, d->p2p.func, d->p2p.count, d->p2p.peer,                               \
                     &(struct op_info){NULL, NULL, d->p2p.nchannels, 0, CT_NINFO_F_P2P});          \
        else if (d->type == CT_NPROF_KERNEL_CH)                                                    \
            channel_start(handle, d->parent, 1, d->kernel_ch.ptimer, d->kernel_ch.channel);        \
        else if (d->type == CT_NPROF_PROXY_OP)                                                     \
            proxy_start(handle, d->parent, &d->proxy_op);                                          \
        else if (d->type == CT_NPROF_PROXY_STEP)                                                   \
            step_start(handle, d->parent, d->proxy_step.step);                                     \
        else if (d->type == CT_NPROF_NET_PLUGIN)                                                   \
            net_start(handle, d->parent, &d->net);                                                 \
        return ncclSuccess;                                                                        \
    }
CT_NPROF_START_V456(start_v5, struct ct_nprof_descr_v5)
CT_NPROF_START_V456(start_v4, struct ct_nprof_descr_v4)

/* v6: v5's events and the copy-engine collective, an op without kernel
 * channels whose GPU time is its copies' (above): its descriptor only. */
static ncclResult_t start_v6(void *ctx, void **handle, struct ct_nprof_descr_v5 *d)
{
    if (!d || d->type != CT_NPROF_CE_COLL)
        return start_v5(ctx, handle, d);
    struct ev *e = op_start(handle, d->ce_coll.func, d->ce_coll.count, -1,
                            &(struct op_info){"CE", NULL, 0, 0, CT_NINFO_F_CE});
    if (e)
        e->ce = 1;
    return ncclSuccess;
}

/* v7: v6's events read from v7's descriptor (each member a v6 one with
 * more after it), the ops' user tags, and the kernel channels' phases. */
static ncclResult_t init_v7(void **ctx, uint64_t comm_id, int *mask, const char *comm_name,
                            int nnodes, int nranks, int rank, ct_nprof_logger log)
{
    (void)comm_name, (void)nnodes, (void)nranks, (void)rank, (void)log;
    return init_common(ctx, mask, comm_id, 7);
}

static ncclResult_t start_v7(void *ctx, void **handle, struct ct_nprof_descr_v7 *d)
{
    *handle = NULL;
    if (!d)
        return ncclSuccess;
    if (d->type == CT_NPROF_KERNEL_PHASE) {
        phase_start(handle, d->parent, &d->kernel_phase);
        return ncclSuccess;
    }
    ncclResult_t rc = start_v6(ctx, handle, (struct ct_nprof_descr_v5 *)(void *)d);
    if (!ours(*handle) || atomic_load(&((struct ev *)*handle)->kind) != EV_OP)
        return rc;
    uint64_t tag = d->type == CT_NPROF_COLL      ? d->coll.user_tag
                   : d->type == CT_NPROF_P2P     ? d->p2p.user_tag
                   : d->type == CT_NPROF_CE_COLL ? d->ce_coll.user_tag
                                                 : 0;
    op_tag(*handle, tag);
    return rc;
}

/* ------------------------------------------------------------------ v4 */

static ncclResult_t init_v4(void **ctx, int *mask, const char *comm_name, uint64_t comm_hash,
                            int nnodes, int nranks, int rank, ct_nprof_logger log)
{
    (void)comm_name, (void)nnodes, (void)nranks, (void)rank, (void)log;
    return init_common(ctx, mask, comm_hash, 4);
}

/* ------------------------------------------------------------------ v3 */

static ncclResult_t init_v3(void **ctx, int *mask)
{
    return init_common(ctx, mask, 0, 3);
}

static ncclResult_t start_v3(void *ctx, void **handle, struct ct_nprof_descr_v3 *d)
{
    (void)ctx;
    *handle = NULL;
    if (!d)
        return ncclSuccess;
    if (d->type == CT_NPROF_GROUP)
        *handle = &g_group_handle;
    else if (d->type == CT_NPROF_COLL)
        op_start(
            handle, d->coll.func, d->coll.count, -1,
            &(struct op_info){d->coll.algo, d->coll.proto, d->coll.nchannels, d->coll.nwarps, 0});
    else if (d->type == CT_NPROF_P2P)
        op_start(handle, d->p2p.func, d->p2p.count, d->p2p.peer,
                 &(struct op_info){NULL, NULL, 0, 0, CT_NINFO_F_P2P});
    else if (d->type == CT_NPROF_KERNEL_CH)
        channel_start(handle, d->parent, 0, 0, 0);
    return ncclSuccess;
}

/* Our plugin's tables: exported by shim/nccl_profiler_chain.c, which
 * forwards every call to another plugin as well when the user named one. */
const struct ct_nprof_v7 ct_nprof_own_v7 = {
    "cutrace", init_v7, start_v7, stop_event, record_state_v4, finalize,
};
const struct ct_nprof_v6 ct_nprof_own_v6 = {
    "cutrace", init_v6, start_v6, stop_event, record_state_v4, finalize,
};
const struct ct_nprof_v5 ct_nprof_own_v5 = {
    "cutrace", init_v5, start_v5, stop_event, record_state_v4, finalize,
};
const struct ct_nprof_v4 ct_nprof_own_v4 = {
    "cutrace", init_v4, start_v4, stop_event, record_state_v4, finalize,
};
const struct ct_nprof_v3 ct_nprof_own_v3 = {
    "cutrace", init_v3, start_v3, stop_event, record_state_v3, finalize,
};

int ct_nprof_own_handle(const void *h)
{
    return h == &g_group_handle || ours((void *)h);
}
