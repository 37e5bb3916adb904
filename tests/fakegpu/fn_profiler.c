/*
 * fn_profiler.c - the NCCL profiler plugin interface of the fake NCCL.
 *
 * Loading (once per process, at the first communicator): NCCL_PROFILER_PLUGIN
 * names a library (dlopen'ed; a bare name that fails is retried as
 * libnccl-profiler-<name>.so) or is STATIC_PLUGIN (symbols looked up in the
 * global scope).  The newest of ncclProfiler_v6, _v5, _v4, _v3 found is
 * used, capped by FAKEGPU_NCCL_PROFILER_VERSION (3..7; 6 when unset, so
 * the tests run the ABI most NCCL releases speak; 7 looks for _v7 first).
 * At v7 each Coll, P2p and CeColl descriptor carries the user tag
 * FAKEGPU_NCCL_USER_TAG + the op's sequence number (unset: 0, untagged;
 * modulo FAKEGPU_NCCL_USER_TAG_MOD where set: tags that recur),
 * and with FAKEGPU_NCCL_KPHASES="I:F" each kernel channel gets its three
 * barrier phases (KernelPhase events under it, made as the op stops):
 * initial_sync its first I microseconds, final_sync its last F, compute
 * between.
 *
 * Events: the v5 API events on the calling thread around each call; at the
 * outermost ncclGroupEnd, on the calling thread and before the launch, one
 * Group event per communicator and one Coll/P2p event per op; KernelLaunch
 * around each launch (v5).  KernelCh events (one per channel) are started
 * and stopped by the proxy thread: started when the op's GPU start is known
 * (v4/v5, pTimer = globaltimer at the start) or has come (v3, no timers),
 * and stopped, after recordEventState(KernelChStop, pTimer = globaltimer at
 * the op's end) in v4/v5, once the op has resolved and its virtual end has
 * passed; then the Coll/P2p event stops, and the Group event after its last
 * member.  From v4 on, ring ops also get ProxyOp and ProxyStep events from
 * their schedule (fn_proxy_steps.c), before their KernelCh events stop.
 *
 * The simulated GPU globaltimer is virtual CLOCK_MONOTONIC time plus the
 * offset CLOCK_REALTIME - CLOCK_MONOTONIC sampled when the plugin loads.
 *
 * Plugin callbacks are never made with fn_lock held.
 */
#include "fn_internal.h"

#include <ctype.h>
#include <dlfcn.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FN_NWARPS 16 /* 512 threads per block */

int fn_prof_version;
int fn_prof_channels = 2;
int fn_prof_net = FN_NET_IB, fn_prof_net_devs = 1;
static char fn_prof_algo_buf[16];
static const char *fn_prof_algo = "RING";

static union {
    const fn_profiler_v3 *v3;
    const fn_profiler_v4 *v4;
    const fn_profiler_v5 *v5;
    const fn_profiler_v6 *v6;
    const fn_profiler_v7 *v7;
} fn_plugin;
static double fn_prof_tag_mod = 0;
static double fn_prof_tag_base = -1, fn_prof_kp_init_ns = -1, fn_prof_kp_final_ns = -1;
static int64_t fn_gtimer_offset; /* CLOCK_REALTIME - CLOCK_MONOTONIC */

static pthread_cond_t fn_prof_cond;
static struct fn_launch *fn_prof_head, *fn_prof_tail; /* fn_lock */
static bool fn_prof_thread;                           /* fn_lock */
/* Bumped with every wake-up (fn_lock): the proxy works on copies with the
 * lock released, so a signal sent meanwhile finds nobody waiting; it only
 * sleeps when nothing has changed since its copies were taken. */
static uint64_t fn_prof_news;

struct fn_pgroup {
    void *handle;
    int remaining; /* member ops not yet stopped (proxy thread) */
};

/* The calling thread's v5 API events. */
static __thread struct {
    void *group_api;
    void *op_api; /* CollApi/P2pApi of the call in progress */
    bool active;
} fn_api;

/* ------------------------------------------------------------------ load */

static int64_t fn_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void fn_prof_load(void)
{
    fn_prof_channels = (int)fn_env_double("FAKEGPU_NCCL_NCHANNELS", 2, 1, FN_MAX_CHANNELS);
    const char *net = getenv("FAKEGPU_NCCL_NET");
    fn_prof_net = !net || !*net || !strcmp(net, "ib") ? FN_NET_IB
                  : !strcmp(net, "socket")            ? FN_NET_SOCKET
                                                      : FN_NET_NONE;
    fn_prof_net_devs = (int)fn_env_double("FAKEGPU_NCCL_NET_DEVS", 1, 1, 8);
    /* NCCL_ALGO names the algorithm the descriptors report (upper case, as
     * NCCL's are); the schedule stays the ring's (README, "Links and the ring") */
    const char *algo = getenv("NCCL_ALGO");
    if (algo && *algo) {
        size_t i = 0;
        for (; algo[i] && i < sizeof(fn_prof_algo_buf) - 1; i++)
            fn_prof_algo_buf[i] = (char)toupper((unsigned char)algo[i]);
        fn_prof_algo_buf[i] = 0;
        fn_prof_algo = fn_prof_algo_buf;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&fn_prof_cond, &ca);
    pthread_condattr_destroy(&ca);
    fn_gtimer_offset = fn_clock(CLOCK_REALTIME) - fn_clock(CLOCK_MONOTONIC);

    const char *name = getenv("NCCL_PROFILER_PLUGIN");
    if (!name || !*name)
        return;
    void *h;
    if (!strcmp(name, "STATIC_PLUGIN")) {
        h = RTLD_DEFAULT;
    } else {
        h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
        if (!h && !strchr(name, '/')) {
            char alt[512];
            snprintf(alt, sizeof alt, "libnccl-profiler-%s.so", name);
            h = dlopen(alt, RTLD_NOW | RTLD_LOCAL);
        }
        if (!h) {
            fn_log(fnLogWarn, 0, __FILE__, __LINE__, "profiler plugin %s: %s", name, dlerror());
            return;
        }
    }
    fn_prof_tag_base = fn_env_double("FAKEGPU_NCCL_USER_TAG", -1, 0, 1e15);
    fn_prof_tag_mod = floor(fn_env_double("FAKEGPU_NCCL_USER_TAG_MOD", 0, 0, 1e9));
    const char *kp = getenv("FAKEGPU_NCCL_KPHASES");
    if (kp && *kp) {
        char *end;
        fn_prof_kp_init_ns = strtod(kp, &end) * 1e3;
        fn_prof_kp_final_ns = *end == ':' ? strtod(end + 1, NULL) * 1e3 : -1;
        if (!(fn_prof_kp_init_ns >= 0) || !(fn_prof_kp_final_ns >= 0))
            fn_prof_kp_init_ns = fn_prof_kp_final_ns = -1; /* malformed: no phases */
    }
    int cap = (int)fn_env_double("FAKEGPU_NCCL_PROFILER_VERSION", 6, 3, 7);
    for (int v = cap; v >= 3; v--) {
        char sym[32];
        snprintf(sym, sizeof sym, "ncclProfiler_v%d", v);
        void *p = dlsym(h, sym);
        if (!p)
            continue;
        if (v == 7)
            fn_plugin.v7 = p;
        else if (v == 6)
            fn_plugin.v6 = p;
        else if (v == 5)
            fn_plugin.v5 = p;
        else if (v == 4)
            fn_plugin.v4 = p;
        else
            fn_plugin.v3 = p;
        fn_prof_version = v;
        return;
    }
}

void fn_prof_comm_init(struct ncclComm *c)
{
    ncclResult_t rc = ncclInternalError;
    int mask = 0;
    void *ctx = NULL;
    const char *name = c->name[0] ? c->name : NULL;
    switch (fn_prof_version) {
    case 3: rc = fn_plugin.v3->init(&ctx, &mask); break;
    case 4:
        rc = fn_plugin.v4->init(&ctx, &mask, name, c->hash, 1, c->nranks, c->rank, fn_log);
        break;
    case 5:
    case 6: /* v6's and v7's init are v5's */
    case 7:
        rc = fn_plugin.v5->init(&ctx, c->hash, &mask, name, 1, c->nranks, c->rank, fn_log);
        break;
    default: return;
    }
    if (rc == ncclSuccess && ctx) {
        c->prof_ctx = ctx;
        c->prof_mask = mask;
    }
}

void fn_prof_comm_finalize(struct ncclComm *c)
{
    void *ctx = c->prof_ctx;
    c->prof_ctx = NULL;
    if (!ctx)
        return;
    switch (fn_prof_version) {
    case 3: fn_plugin.v3->finalize(ctx); break;
    case 4: fn_plugin.v4->finalize(ctx); break;
    case 5:
    case 6:
    case 7: fn_plugin.v5->finalize(ctx); break;
    default: break;
    }
}

/* -------------------------------------------------------------- events */

/* fn_prof_start turns a struct fn_ev (fn_internal.h) into the plugin's
 * version of the descriptor; the v6 form holds every field. */
static void fn_fill(fn_prof_descr_v6 *d, const struct fn_ev *e)
{
    const struct fn_op *op = e->op;
    switch (e->type) {
    case fnProfileColl:
        d->coll.seqNumber = op->seq;
        d->coll.func = fn_func_name(op->func);
        d->coll.sendBuff = op->sendbuff;
        d->coll.recvBuff = op->recvbuff;
        d->coll.count = op->count;
        d->coll.root = op->root;
        d->coll.datatype = fn_dtype_name(op->dtype);
        d->coll.nChannels = (uint8_t)fn_prof_channels;
        d->coll.nWarps = FN_NWARPS;
        d->coll.algo = op->plan.algo ? op->plan.algo : fn_prof_algo;
        d->coll.proto = op->plan.proto ? op->plan.proto : "LL";
        d->coll.parentGroup = e->parent_group;
        break;
    case fnProfileP2p:
        d->p2p.func = fn_func_name(op->func);
        d->p2p.buff = op->func == FN_SEND ? (void *)(uintptr_t)op->sendbuff : op->recvbuff;
        d->p2p.datatype = fn_dtype_name(op->dtype);
        d->p2p.count = op->count;
        d->p2p.peer = op->peer;
        d->p2p.nChannels = (uint8_t)fn_prof_channels;
        d->p2p.parentGroup = e->parent_group;
        break;
    case fnProfileKernelCh:
        d->kernelCh.channelId = e->channel;
        d->kernelCh.pTimer = e->ptimer;
        break;
    case fnProfileGroupApi: d->groupApi.groupDepth = e->depth; break;
    case fnProfileCollApi:
        d->collApi.func = fn_func_name(op->func);
        d->collApi.count = op->count;
        d->collApi.datatype = fn_dtype_name(op->dtype);
        d->collApi.root = op->root;
        d->collApi.stream = (void *)op->stream;
        break;
    case fnProfileP2pApi:
        d->p2pApi.func = fn_func_name(op->func);
        d->p2pApi.count = op->count;
        d->p2pApi.datatype = fn_dtype_name(op->dtype);
        d->p2pApi.stream = (void *)op->stream;
        break;
    case fnProfileKernelLaunch: d->kernelLaunch.stream = e->stream; break;
    case fnProfileProxyOp:
        d->proxyOp.pid = getpid();
        d->proxyOp.channelId = e->channel;
        d->proxyOp.peer = e->peer;
        d->proxyOp.nSteps = e->nsteps;
        d->proxyOp.chunkSize = e->chunk;
        d->proxyOp.isSend = e->is_send;
        break;
    case fnProfileProxyStep: d->proxyStep.step = e->step; break;
    case fnProfileNetPlugin:
        d->netPlugin.id = e->net_id;
        d->netPlugin.data = e->net_data;
        break;
    case fnProfileCeColl:
        d->ceColl.seqNumber = op->seq;
        d->ceColl.func = fn_func_name(op->func);
        d->ceColl.sendBuff = op->sendbuff;
        d->ceColl.recvBuff = op->recvbuff;
        d->ceColl.count = op->count;
        d->ceColl.root = op->root;
        d->ceColl.datatype = fn_dtype_name(op->dtype);
        d->ceColl.syncStrategy = "memop"; /* stream memory operations, as NCCL 2.28's */
        d->ceColl.batchSize = 1;
        d->ceColl.numBatches = 1;
        d->ceColl.ceSeqNum = (uint32_t)e->ce_seq;
        d->ceColl.stream = (void *)op->stream;
        break;
    default: break;
    }
}

void *fn_prof_start(const struct ncclComm *c, const struct fn_ev *e)
{
    if (!c->prof_ctx || !(c->prof_mask & e->type) ||
        (e->type == fnProfileCeColl && fn_prof_version < 6))
        return NULL;
    void *h = NULL;
    if (fn_prof_version >= 5) {
        /* v5's members sit where v6's do: a v5 plugin reads its prefix */
        fn_prof_descr_v6 d;
        memset(&d, 0, sizeof d);
        d.type = (uint64_t)e->type;
        d.parentObj = e->parent;
        d.rank = c->rank;
        fn_fill(&d, e);
        if (fn_prof_version == 7) {
            /* each v6 member is the prefix of its v7 one */
            fn_prof_descr_v7 d7;
            memset(&d7, 0, sizeof d7);
            d7.type = d.type;
            d7.parentObj = d.parentObj;
            d7.rank = d.rank;
            memcpy(&d7.coll, &d.coll, sizeof d - offsetof(fn_prof_descr_v6, coll));
            uint64_t tag = fn_prof_tag_base >= 0 && e->op
                               ? (uint64_t)fn_prof_tag_base +
                                     (fn_prof_tag_mod >= 1 ? e->op->seq % (uint64_t)fn_prof_tag_mod
                                                           : e->op->seq)
                               : 0;
            if (e->type == fnProfileColl)
                d7.coll.userTag = tag;
            else if (e->type == fnProfileP2p)
                d7.p2p.userTag = tag;
            else if (e->type == fnProfileCeColl)
                d7.ceColl.userTag = tag;
            else if (e->type == fnProfileKernelPhase) {
                d7.kernelPhase.channelId = e->channel;
                d7.kernelPhase.phaseId = (uint8_t)e->step;
                d7.kernelPhase.phaseName = e->step == 0   ? "initial_sync"
                                           : e->step == 1 ? "compute"
                                                          : "final_sync";
                d7.kernelPhase.pTimer = e->ptimer;
            }
            fn_plugin.v7->startEvent(c->prof_ctx, &h, &d7);
        } else if (fn_prof_version == 6)
            fn_plugin.v6->startEvent(c->prof_ctx, &h, &d);
        else
            fn_plugin.v5->startEvent(c->prof_ctx, &h, (fn_prof_descr_v5 *)(void *)&d);
        return h;
    }
    /* v3/v4: translate from the v6 form, which holds every field. */
    fn_prof_descr_v6 f;
    memset(&f, 0, sizeof f);
    fn_fill(&f, e);
    if (fn_prof_version == 4) {
        fn_prof_descr_v4 d;
        memset(&d, 0, sizeof d);
        d.type = (uint8_t)e->type;
        d.parentObj = e->parent;
        d.rank = c->rank;
        if (e->type == fnProfileColl) {
            d.coll.seqNumber = f.coll.seqNumber;
            d.coll.func = f.coll.func;
            d.coll.sendBuff = f.coll.sendBuff;
            d.coll.recvBuff = f.coll.recvBuff;
            d.coll.count = f.coll.count;
            d.coll.root = f.coll.root;
            d.coll.datatype = f.coll.datatype;
            d.coll.nChannels = f.coll.nChannels;
            d.coll.nWarps = f.coll.nWarps;
            d.coll.algo = f.coll.algo;
            d.coll.proto = f.coll.proto;
        } else if (e->type == fnProfileP2p) {
            d.p2p.func = f.p2p.func;
            d.p2p.buff = f.p2p.buff;
            d.p2p.datatype = f.p2p.datatype;
            d.p2p.count = f.p2p.count;
            d.p2p.peer = f.p2p.peer;
            d.p2p.nChannels = f.p2p.nChannels;
        } else if (e->type == fnProfileKernelCh) {
            d.kernelCh.channelId = f.kernelCh.channelId;
            d.kernelCh.pTimer = f.kernelCh.pTimer;
        } else if (e->type == fnProfileProxyOp) {
            d.proxyOp = f.proxyOp;
        } else if (e->type == fnProfileProxyStep) {
            d.proxyStep.step = f.proxyStep.step;
        } else if (e->type == fnProfileNetPlugin) {
            d.netPlugin = f.netPlugin;
        } else if (e->type != fnProfileGroup) {
            return NULL; /* API events are v5 only */
        }
        fn_plugin.v4->startEvent(c->prof_ctx, &h, &d);
        return h;
    }
    fn_prof_descr_v3 d;
    memset(&d, 0, sizeof d);
    d.type = (uint8_t)e->type;
    d.parentObj = e->parent;
    d.rank = c->rank;
    if (e->type == fnProfileColl) {
        d.coll.name = c->name[0] ? c->name : NULL;
        d.coll.commHash = c->hash;
        d.coll.seqNumber = f.coll.seqNumber;
        d.coll.func = f.coll.func;
        d.coll.sendBuff = f.coll.sendBuff;
        d.coll.recvBuff = f.coll.recvBuff;
        d.coll.count = f.coll.count;
        d.coll.root = f.coll.root;
        d.coll.datatype = f.coll.datatype;
        d.coll.nMaxChannels = f.coll.nChannels;
        d.coll.nWarps = f.coll.nWarps;
        d.coll.algo = f.coll.algo;
        d.coll.proto = f.coll.proto;
    } else if (e->type == fnProfileP2p) {
        d.p2p.name = c->name[0] ? c->name : NULL;
        d.p2p.commHash = c->hash;
        d.p2p.func = f.p2p.func;
        d.p2p.buff = f.p2p.buff;
        d.p2p.datatype = f.p2p.datatype;
        d.p2p.count = f.p2p.count;
        d.p2p.peer = f.p2p.peer;
    } else if (e->type == fnProfileKernelCh) {
        d.kernelCh.channelId = f.kernelCh.channelId;
    } else if (e->type != fnProfileGroup) {
        return NULL;
    }
    fn_plugin.v3->startEvent(c->prof_ctx, &h, &d);
    return h;
}

void fn_prof_stop(void *h)
{
    if (!h)
        return;
    switch (fn_prof_version) {
    case 3: fn_plugin.v3->stopEvent(h); break;
    case 4: fn_plugin.v4->stopEvent(h); break;
    case 5:
    case 6:
    case 7: fn_plugin.v5->stopEvent(h); break;
    default: break;
    }
}

/* v4 on only (v3 has no KernelCh or API states, and other step states). */
void fn_prof_record(void *h, fn_prof_state st, uint64_t arg)
{
    if (!h)
        return;
    fn_prof_args_v5 a;
    memset(&a, 0, sizeof a);
    if (st == fnProfilerKernelChStop || st == fnProfilerKernelPhaseStop)
        a.kernelCh.pTimer = arg;
    else
        a.proxyStep.transSize = (size_t)arg;
    if (fn_prof_version == 4)
        fn_plugin.v4->recordEventState(h, st, &a);
    else if (fn_prof_version >= 5)
        fn_plugin.v5->recordEventState(h, st, &a);
}

/* ------------------------------------------------ calling-thread events */

void fn_prof_api_call_begin(struct fn_op *op, int depth)
{
    const struct ncclComm *c = op->comm;
    if (fn_prof_version < 5 || !c->prof_ctx)
        return;
    if (!fn_api.active) {
        struct fn_ev g = {.type = fnProfileGroupApi, .depth = depth};
        fn_api.group_api = fn_prof_start(c, &g);
        fn_api.active = true;
        fn_prof_record(fn_api.group_api, fnProfilerGroupStartApiStop, 0);
    }
    struct fn_ev e = {.type = (op->func == FN_SEND || op->func == FN_RECV) ? fnProfileP2pApi
                                                                           : fnProfileCollApi,
                      .parent = fn_api.group_api,
                      .op = op};
    op->h_api = fn_api.op_api = fn_prof_start(c, &e);
}

/* The handle stays the Coll/P2p event's parent, as in NCCL. */
void fn_prof_api_call_end(void)
{
    fn_prof_stop(fn_api.op_api);
    fn_api.op_api = NULL;
}

void fn_prof_group_end_begin(void)
{
    fn_prof_record(fn_api.group_api, fnProfilerGroupEndApiStart, 0);
}

void fn_prof_group_ops(struct fn_op *ops, size_t n)
{
    if (!fn_prof_version)
        return;
    for (size_t i = 0; i < n; i++) {
        struct ncclComm *c = ops[i].comm;
        if (!c->prof_ctx || ops[i].ce) /* a copy-engine op: its CeColl event (fn_ce.c) */
            continue;
        if (!ops[i].pg && (c->prof_mask & fnProfileGroup)) {
            /* First op of this communicator: its Group event. */
            struct fn_ev g = {.type = fnProfileGroup,
                              .parent = fn_prof_version >= 5 ? fn_api.group_api : NULL};
            void *h = fn_prof_start(c, &g);
            struct fn_pgroup *pg = h ? calloc(1, sizeof *pg) : NULL;
            if (pg) {
                pg->handle = h;
                for (size_t j = i; j < n; j++) {
                    if (ops[j].comm == c && !ops[j].ce) {
                        ops[j].pg = pg;
                        pg->remaining++;
                    }
                }
            } else {
                fn_prof_stop(h);
            }
        }
        bool p2p = ops[i].func == FN_SEND || ops[i].func == FN_RECV;
        void *group = ops[i].pg ? ops[i].pg->handle : NULL;
        struct fn_ev e = {.type = p2p ? fnProfileP2p : fnProfileColl,
                          .parent = fn_prof_version >= 5 ? ops[i].h_api : group,
                          .parent_group = group,
                          .op = &ops[i]};
        ops[i].h_op = fn_prof_start(c, &e);
    }
}

void *fn_prof_launch_begin(struct ncclComm *c, CUstream s)
{
    if (fn_prof_version < 5)
        return NULL;
    struct fn_ev e = {.type = fnProfileKernelLaunch, .parent = fn_api.group_api, .stream = s};
    return fn_prof_start(c, &e);
}

void fn_prof_launch_end(void *h)
{
    fn_prof_stop(h);
}

void fn_prof_group_end_done(void)
{
    fn_prof_stop(fn_api.group_api);
    fn_api.group_api = NULL;
    fn_api.active = false;
}

/* ---------------------------------------------------------- proxy thread */

static void fn_proxy_start_kch(struct fn_launch *l)
{
    for (size_t i = 0; i < l->nops; i++) {
        struct fn_op *op = &l->ops[i];
        for (int ch = 0; ch < fn_prof_channels; ch++) {
            struct fn_ev e = {.type = fnProfileKernelCh,
                              .parent = op->h_op,
                              .channel = (uint8_t)ch,
                              .ptimer = (uint64_t)(fn_kphases_ch_start(l, ch) + fn_gtimer_offset)};
            op->h_kch[ch] = fn_prof_start(op->comm, &e);
        }
    }
    l->kch_started = true;
}

/* v7 with FAKEGPU_NCCL_KPHASES: channel ch's three barrier phases over
 * [s, e] (virtual ns), under its KernelCh event, start, stop state and
 * stop each, as NCCL makes them once the kernel is done. */
static void fn_proxy_kphases(struct fn_op *op, int ch, int64_t s, int64_t e)
{
    if (fn_prof_version < 7 || fn_prof_kp_init_ns < 0 || !op->h_kch[ch])
        return;
    int64_t a = s + llround(fn_prof_kp_init_ns), b = e - llround(fn_prof_kp_final_ns);
    if (a > e)
        a = e;
    if (b < a)
        b = a;
    const int64_t at[4] = {s, a, b, e};
    for (int ph = 0; ph < 3; ph++) {
        struct fn_ev ev = {.type = fnProfileKernelPhase,
                           .parent = op->h_kch[ch],
                           .channel = (uint8_t)ch,
                           .step = ph,
                           .ptimer = (uint64_t)(at[ph] + fn_gtimer_offset)};
        void *h = fn_prof_start(op->comm, &ev);
        fn_prof_record(h, fnProfilerKernelPhaseStop, (uint64_t)(at[ph + 1] + fn_gtimer_offset));
        fn_prof_stop(h);
    }
}

static void fn_proxy_stop_op(const struct fn_launch *l, struct fn_op *op)
{
    for (int ch = 0; ch < fn_prof_channels; ch++) {
        fn_proxy_kphases(op, ch, fn_kphases_ch_start(l, ch), fn_kphases_ch_stop(op, ch));
        fn_prof_record(op->h_kch[ch], fnProfilerKernelChStop,
                       (uint64_t)(fn_kphases_ch_stop(op, ch) + fn_gtimer_offset));
        fn_prof_stop(op->h_kch[ch]);
    }
    fn_prof_stop(op->h_op);
    if (op->pg && --op->pg->remaining == 0) {
        fn_prof_stop(op->pg->handle);
        free(op->pg);
    }
    op->stopped = true;
}

/* One pass over the tracked launches (fn_lock NOT held); returns the next
 * instant something is due, INT64_MAX if only news can help. */
static int64_t fn_proxy_pass(struct fn_launch *const *ls, size_t n)
{
    int64_t wake = INT64_MAX, now = fn_now();
    for (size_t k = 0; k < n; k++) {
        struct fn_launch *l = ls[k];
        if (!l->p_start_known)
            continue;
        if (!l->kch_started) {
            if (fn_prof_version >= 4 || now >= l->start_ns) {
                fn_proxy_start_kch(l);
            } else {
                wake = l->start_ns < wake ? l->start_ns : wake;
                continue;
            }
        }
        bool all = true;
        for (size_t i = 0; i < l->nops; i++) {
            struct fn_op *op = &l->ops[i];
            if (op->stopped)
                continue;
            int64_t due = op->p_end_known ? fn_steps_advance(op, now) : INT64_MAX;
            if (due < wake)
                wake = due;
            if (op->p_end_known && now >= op->p_end_ns && due == INT64_MAX) {
                fn_proxy_stop_op(l, op);
                continue;
            }
            all = false;
            if (op->p_end_known && op->p_end_ns < wake)
                wake = op->p_end_ns;
        }
        l->p_done = all;
    }
    return wake;
}

static void *fn_proxy_main(void *arg)
{
    (void)arg;
    struct fn_launch **ls = NULL;
    size_t cap = 0;
    pthread_mutex_lock(&fn_lock);
    for (;;) {
        size_t n = 0;
        for (struct fn_launch *l = fn_prof_head; l; l = l->pnext)
            n++;
        if (n > cap) {
            struct fn_launch **p = realloc(ls, n * sizeof *p);
            if (p) {
                ls = p;
                cap = n;
            }
        }
        n = 0;
        uint64_t seen = fn_prof_news;
        for (struct fn_launch *l = fn_prof_head; l && n < cap; l = l->pnext) {
            ls[n++] = l;
            l->p_start_known = l->start_known;
            for (size_t i = 0; i < l->nops; i++) {
                l->ops[i].p_end_known = l->ops[i].end_known;
                l->ops[i].p_end_ns = l->ops[i].end_ns;
            }
        }
        pthread_mutex_unlock(&fn_lock);
        int64_t wake = fn_proxy_pass(ls, n);
        pthread_mutex_lock(&fn_lock);
        struct fn_launch **pp = &fn_prof_head, *prev = NULL;
        while (*pp) {
            struct fn_launch *l = *pp;
            if (l->p_done && l->resolved) {
                *pp = l->pnext;
                if (fn_prof_tail == l)
                    fn_prof_tail = prev;
                fn_launch_free_locked(l);
            } else {
                prev = l;
                pp = &l->pnext;
            }
        }
        if (wake <= fn_now() || fn_prof_news != seen)
            continue;
        if (wake == INT64_MAX) {
            pthread_cond_wait(&fn_prof_cond, &fn_lock);
        } else {
            struct timespec ts = {.tv_sec = (time_t)(wake / 1000000000),
                                  .tv_nsec = (long)(wake % 1000000000)};
            pthread_cond_timedwait(&fn_prof_cond, &fn_lock, &ts);
        }
    }
    return NULL;
}

void fn_prof_track(struct fn_launch *l)
{
    pthread_mutex_lock(&fn_lock);
    l->pnext = NULL;
    if (fn_prof_tail)
        fn_prof_tail->pnext = l;
    else
        fn_prof_head = l;
    fn_prof_tail = l;
    fn_prof_news++;
    if (!fn_prof_thread) {
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pthread_t t;
        fn_prof_thread = pthread_create(&t, &a, fn_proxy_main, NULL) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        pthread_attr_destroy(&a);
    }
    pthread_cond_signal(&fn_prof_cond);
    pthread_mutex_unlock(&fn_lock);
}

void fn_prof_wake_locked(void)
{
    fn_prof_news++;
    pthread_cond_signal(&fn_prof_cond);
}
