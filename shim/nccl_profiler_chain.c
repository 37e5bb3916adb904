/*
 * nccl_profiler_chain.c - the exported ncclProfiler_v3..v7 tables, and the
 * forwarding of every call to a second profiler plugin (NCCL Inspector, a
 * site's own) when the user had named one.
 *
 * NCCL loads one profiler plugin, the one NCCL_PROFILER_PLUGIN names.
 * `cutrace run` points it at cutrace; when it already named another
 * plugin, `cutrace run` moves that name to CUTRACE_NCCL_PROFILER_CHAIN and
 * this file loads it (NCCL's own rule: the name as given, else
 * libnccl-profiler-NAME.so) at the first communicator, at the ABI version
 * NCCL asked of us (v5, v6 and v7 stand in for each other: v6 only adds
 * copy-engine events, never passed to a v5 plugin, and v7 kernel phases,
 * passed to v7 plugins only, and members after v6's in its descriptors,
 * which a v5 or v6 plugin does not read). Both plugins then see every
 * call:
 *
 *  - init: each its own; NCCL's activation mask becomes the union of
 *    ours and theirs (they get a mask of their own to write, folded into
 *    NCCL's at every event, so a mask they change later takes effect at
 *    the next event); the context NCCL keeps holds both contexts;
 *  - startEvent: each plugin gets the events its own mask asks for, with
 *    the descriptor's parent set to its own handle of the parent (swapped
 *    in NCCL's descriptor for the call, then put back); the handle NCCL
 *    gets is ours, theirs, or, when both have one, a pair from a pool;
 *  - stopEvent, recordEventState, finalize: to each its own handle.
 *
 * The pair pool is larger than our event pool: a pair holds one of our
 * pooled events (or a Group handle), so it cannot run out while ours has
 * room. A plugin that fails to load, lacks the version, or whose init
 * fails is left out, and the trace says why (process metadata
 * nccl_profiler_chain). Without a chained plugin each call goes straight
 * to ours. docs/nccl.md, "Another profiler plugin".
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim/dlsym_real.h"
#include "shim/nccl_int.h"
#include "shim/nccl_profiler.h"

#define CHAIN_PAIRS (8192 + 1024)

static struct {
    int loaded;                    /* their tables below are set */
    int version;                   /* their ABI */
    const struct ct_nprof_v6 *v56; /* v5, v6 and v7 share the layout */
    const struct ct_nprof_v4 *v4;
    const struct ct_nprof_v3 *v3;
} g_chain;
static pthread_once_t g_chain_once = PTHREAD_ONCE_INIT;
static int g_asked; /* the version NCCL asked of us, for the once */

static _Atomic int g_own_mask;   /* what our plugin asked for */
static int g_their_mask;         /* theirs: they write it */
static int *_Atomic g_nccl_mask; /* NCCL's, which it reads at each event */
static void *_Atomic g_own_ctx;  /* our plugin's context (one for all communicators) */

struct chain_ctx {
    void *ours, *theirs;
};

/* A handle of both plugins. */
static struct pair {
    _Atomic int used;
    void *ours, *theirs;
} g_pairs[CHAIN_PAIRS];
static _Atomic unsigned g_pair_next;
static _Atomic uint64_t g_pair_lost;

CT_EXPORT extern struct ct_nprof_v7 ncclProfiler_v7;
CT_EXPORT extern struct ct_nprof_v6 ncclProfiler_v6;
CT_EXPORT extern struct ct_nprof_v5 ncclProfiler_v5;
CT_EXPORT extern struct ct_nprof_v4 ncclProfiler_v4;
CT_EXPORT extern struct ct_nprof_v3 ncclProfiler_v3;

static void chain_meta(const char *value)
{
    if (!ct_shim_live())
        return;
    int guard = ct_tls_guard;
    ct_tls_guard = 1;
    uint64_t f[CT_META_NFIELDS] = {ct_clock_now(), CT_SCOPE_PROCESS, 0,
                                   ct_intern("nccl_profiler_chain"), ct_intern(value)};
    ct_emit(CT_REC_META, 0, f, CT_META_NFIELDS);
    ct_tls_guard = guard;
}

static void chain_load(void)
{
    const char *name = getenv(CT_NPROF_CHAIN_ENV);
    char buf[512];
    if (!name || !*name)
        return;
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h && !strchr(name, '/')) {
        char alt[320];
        snprintf(alt, sizeof(alt), "libnccl-profiler-%s.so", name);
        h = dlopen(alt, RTLD_NOW | RTLD_LOCAL);
    }
    if (!h) {
        const char *e = dlerror();
        snprintf(buf, sizeof(buf), "%s not loaded: %s", name, e ? e : "dlopen failed");
        chain_meta(buf);
        return;
    }
    const char *sym = NULL;
    if (g_asked >= 5) {
        /* a v6 plugin takes v5 calls and a v5 plugin v6 calls but for
         * copy-engine events; v7 calls, a v6 or v5 plugin but for kernel
         * phases: the version asked first, then the nearest */
        const char *order[3] = {"ncclProfiler_v7", "ncclProfiler_v6", "ncclProfiler_v5"};
        if (g_asked == 6)
            order[0] = "ncclProfiler_v6", order[1] = "ncclProfiler_v5",
            order[2] = "ncclProfiler_v7";
        else if (g_asked == 5)
            order[0] = "ncclProfiler_v5", order[1] = "ncclProfiler_v6",
            order[2] = "ncclProfiler_v7";
        for (int i = 0; i < 3 && !g_chain.v56; i++)
            if ((g_chain.v56 = ct_dlsym_real(h, order[i])))
                sym = order[i];
        g_chain.version = sym ? sym[sizeof("ncclProfiler_v") - 1] - '0' : 0;
    } else if (g_asked == 4) {
        g_chain.v4 = ct_dlsym_real(h, sym = "ncclProfiler_v4");
        g_chain.version = g_chain.v4 ? 4 : 0;
    } else {
        g_chain.v3 = ct_dlsym_real(h, sym = "ncclProfiler_v3");
        g_chain.version = g_chain.v3 ? 3 : 0;
    }
    if (!g_chain.version) {
        snprintf(buf, sizeof(buf), "%s not used: it has no ncclProfiler_v%d%s", name, g_asked,
                 g_asked >= 5 ? " or v5/v6/v7" : "");
        chain_meta(buf);
        return; /* left loaded: unloading a library is not ours to risk */
    }
    /* cutrace under another name (a copy of libcutrace.so is the same
     * library once loaded): forwarding to ourselves would never end */
    if ((const void *)g_chain.v56 == (const void *)&ncclProfiler_v7 ||
        (const void *)g_chain.v56 == (const void *)&ncclProfiler_v6 ||
        (const void *)g_chain.v56 == (const void *)&ncclProfiler_v5 ||
        (const void *)g_chain.v4 == (const void *)&ncclProfiler_v4 ||
        (const void *)g_chain.v3 == (const void *)&ncclProfiler_v3) {
        snprintf(buf, sizeof(buf), "%s not used: it is cutrace itself", name);
        chain_meta(buf);
        return;
    }
    snprintf(buf, sizeof(buf), "%s (%s)", name, sym);
    chain_meta(buf);
    g_chain.loaded = 1;
}

/* Whether a plugin is chained, loading it at the first call. */
static int chained(int version)
{
    if (!g_asked)
        g_asked = version; /* set before the once: the first init's */
    pthread_once(&g_chain_once, chain_load);
    return g_chain.loaded;
}

static void refresh_mask(void)
{
    int *m = atomic_load_explicit(&g_nccl_mask, memory_order_relaxed);
    if (m)
        *m = atomic_load_explicit(&g_own_mask, memory_order_relaxed) |
             __atomic_load_n(&g_their_mask, __ATOMIC_RELAXED);
}

/* Our init's outcome, then theirs into a context holding both. */
static ncclResult_t chained_ctx(void **ctx, int *mask, ncclResult_t own_rc, void *theirs,
                                ncclResult_t their_rc)
{
    atomic_store(&g_own_ctx, *ctx);
    atomic_store(&g_own_mask, *mask);
    struct chain_ctx *c = their_rc == ncclSuccess ? malloc(sizeof(*c)) : NULL;
    if (!c) {
        if (their_rc != ncclSuccess)
            chain_meta("the chained plugin's init failed: it gets no events of this "
                       "communicator");
        return own_rc; /* ours alone, NCCL's context and mask as ours set them */
    }
    c->ours = *ctx;
    c->theirs = theirs;
    *ctx = c;
    atomic_store(&g_nccl_mask, mask);
    refresh_mask();
    return own_rc;
}

static struct pair *pair_of(const void *h)
{
    return (const struct pair *)h >= g_pairs && (const struct pair *)h < g_pairs + CHAIN_PAIRS
               ? (struct pair *)h
               : NULL;
}

/* The handle NCCL passes back as ours and theirs. */
static void split(void *h, void **ours, void **theirs)
{
    struct pair *p = pair_of(h);
    if (p) {
        *ours = p->ours;
        *theirs = p->theirs;
    } else if (!h || ct_nprof_own_handle(h)) {
        *ours = h;
        *theirs = NULL;
    } else {
        *ours = NULL;
        *theirs = h;
    }
}

/* One handle for NCCL from both plugins' (the pool cannot run out while
 * ours has room; should it, theirs is kept and ours stopped at once). */
static void *join(void *ours, void *theirs)
{
    if (!theirs || !ours)
        return ours ? ours : theirs;
    for (unsigned tries = 0; tries < CHAIN_PAIRS; tries++) {
        unsigned i = atomic_fetch_add_explicit(&g_pair_next, 1, memory_order_relaxed) % CHAIN_PAIRS;
        int expected = 0;
        if (atomic_compare_exchange_strong(&g_pairs[i].used, &expected, 1)) {
            g_pairs[i].ours = ours;
            g_pairs[i].theirs = theirs;
            return &g_pairs[i];
        }
    }
    atomic_fetch_add(&g_pair_lost, 1);
    ct_nprof_own_v6.stop_event(ours);
    return theirs;
}

/* Whether event type t goes to a plugin asking mask (a v5 plugin never
 * gets v6's copy-engine events, a v5 or v6 one v7's kernel phases). */
static int wants(int mask, uint64_t t)
{
    return (mask & (int)t) && (t != CT_NPROF_CE_COLL || g_chain.version >= 6) &&
           (t != CT_NPROF_KERNEL_PHASE || g_chain.version >= 7);
}

/* startEvent of both, each with its own parent in d (swapped in place). */
#define CHAIN_START(fn, descr, own, theirs_start)                                                  \
    static ncclResult_t fn(void *ctx, void **handle, descr *d)                                     \
    {                                                                                              \
        if (!g_chain.loaded || ctx == atomic_load(&g_own_ctx) || !d)                               \
            return own.start_event(ctx, handle, d);                                                \
        struct chain_ctx *c = ctx;                                                                 \
        refresh_mask();                                                                            \
        void *parent = d->parent, *op, *tp, *mine = NULL, *yours = NULL;                           \
        split(parent, &op, &tp);                                                                   \
        if (atomic_load_explicit(&g_own_mask, memory_order_relaxed) & (int)d->type) {              \
            d->parent = op;                                                                        \
            own.start_event(c->ours, &mine, d);                                                    \
        }                                                                                          \
        if (c->theirs && wants(__atomic_load_n(&g_their_mask, __ATOMIC_RELAXED), d->type)) {       \
            d->parent = tp;                                                                        \
            theirs_start(c->theirs, &yours, d);                                                    \
        }                                                                                          \
        d->parent = parent;                                                                        \
        *handle = join(mine, yours);                                                               \
        return ncclSuccess;                                                                        \
    }

static ncclResult_t their_stop(void *h)
{
    return g_chain.version >= 5   ? g_chain.v56->stop_event(h)
           : g_chain.version == 4 ? g_chain.v4->stop_event(h)
                                  : g_chain.v3->stop_event(h);
}

static ncclResult_t chain_stop(void *h)
{
    if (!g_chain.loaded)
        return ct_nprof_own_v6.stop_event(h);
    void *op, *tp;
    split(h, &op, &tp);
    if (op)
        ct_nprof_own_v6.stop_event(op);
    if (tp)
        their_stop(tp);
    struct pair *p = pair_of(h);
    if (p)
        atomic_store(&p->used, 0);
    return ncclSuccess;
}

static ncclResult_t chain_state_v4(void *h, int state, union ct_nprof_state_args_v4 *a)
{
    if (!g_chain.loaded)
        return ct_nprof_own_v6.record_event_state(h, state, a);
    void *op, *tp;
    split(h, &op, &tp);
    if (op)
        ct_nprof_own_v6.record_event_state(op, state, a);
    if (tp && (state != CT_NPROF_STATE_KERNEL_PHASE_STOP || g_chain.version >= 7))
        (g_chain.version >= 5 ? g_chain.v56->record_event_state
                              : g_chain.v4->record_event_state)(tp, state, a);
    return ncclSuccess;
}

static ncclResult_t chain_state_v3(void *h, int state, void *a)
{
    if (!g_chain.loaded)
        return ct_nprof_own_v3.record_event_state(h, state, a);
    void *op, *tp;
    split(h, &op, &tp);
    if (op)
        ct_nprof_own_v3.record_event_state(op, state, a);
    if (tp)
        g_chain.v3->record_event_state(tp, state, a);
    return ncclSuccess;
}

static ncclResult_t chain_finalize(void *ctx)
{
    if (!g_chain.loaded || ctx == atomic_load(&g_own_ctx))
        return ct_nprof_own_v6.finalize(ctx);
    struct chain_ctx *c = ctx;
    ct_nprof_own_v6.finalize(c->ours);
    if (c->theirs)
        (g_chain.version >= 5   ? g_chain.v56->finalize
         : g_chain.version == 4 ? g_chain.v4->finalize
                                : g_chain.v3->finalize)(c->theirs);
    free(c);
    uint64_t lost = atomic_exchange(&g_pair_lost, 0);
    if (lost) {
        char buf[96];
        snprintf(buf, sizeof(buf), "%llu of our events stopped early: the pair pool was full",
                 (unsigned long long)lost);
        chain_meta(buf);
    }
    return ncclSuccess;
}

/* ------------------------------------------------------------ v5, v6, v7 */

static ncclResult_t their_start_v56(void *ctx, void **h, struct ct_nprof_descr_v5 *d)
{
    return g_chain.v56->start_event(ctx, h, d);
}
/* a v7 descriptor to their plugin: v7's own if it is one, else its v6
 * prefix (wants() kept the kernel phases from it) */
static ncclResult_t their_start_v7(void *ctx, void **h, struct ct_nprof_descr_v7 *d)
{
    return g_chain.v56->start_event(ctx, h, (struct ct_nprof_descr_v5 *)(void *)d);
}
CHAIN_START(chain_start_v7, struct ct_nprof_descr_v7, ct_nprof_own_v7, their_start_v7)
CHAIN_START(chain_start_v6, struct ct_nprof_descr_v5, ct_nprof_own_v6, their_start_v56)
CHAIN_START(chain_start_v5, struct ct_nprof_descr_v5, ct_nprof_own_v5, their_start_v56)

#define CHAIN_INIT_V56(fn, own, v)                                                                 \
    static ncclResult_t fn(void **ctx, uint64_t id, int *mask, const char *name, int nnodes,       \
                           int nranks, int rank, ct_nprof_logger log)                              \
    {                                                                                              \
        ncclResult_t rc = own.init(ctx, id, mask, name, nnodes, nranks, rank, log);                \
        if (!chained(v))                                                                           \
            return rc;                                                                             \
        void *theirs = NULL;                                                                       \
        ncclResult_t trc =                                                                         \
            g_chain.v56->init(&theirs, id, &g_their_mask, name, nnodes, nranks, rank, log);        \
        return chained_ctx(ctx, mask, rc, theirs, trc);                                            \
    }
CHAIN_INIT_V56(chain_init_v7, ct_nprof_own_v7, 7)
CHAIN_INIT_V56(chain_init_v6, ct_nprof_own_v6, 6)
CHAIN_INIT_V56(chain_init_v5, ct_nprof_own_v5, 5)

/* ------------------------------------------------------------------ v4 */

static ncclResult_t their_start_v4(void *ctx, void **h, struct ct_nprof_descr_v4 *d)
{
    return g_chain.v4->start_event(ctx, h, d);
}
CHAIN_START(chain_start_v4, struct ct_nprof_descr_v4, ct_nprof_own_v4, their_start_v4)

static ncclResult_t chain_init_v4(void **ctx, int *mask, const char *name, uint64_t hash,
                                  int nnodes, int nranks, int rank, ct_nprof_logger log)
{
    ncclResult_t rc = ct_nprof_own_v4.init(ctx, mask, name, hash, nnodes, nranks, rank, log);
    if (!chained(4))
        return rc;
    void *theirs = NULL;
    ncclResult_t trc =
        g_chain.v4->init(&theirs, &g_their_mask, name, hash, nnodes, nranks, rank, log);
    return chained_ctx(ctx, mask, rc, theirs, trc);
}

/* ------------------------------------------------------------------ v3 */

static ncclResult_t their_start_v3(void *ctx, void **h, struct ct_nprof_descr_v3 *d)
{
    return g_chain.v3->start_event(ctx, h, d);
}
CHAIN_START(chain_start_v3, struct ct_nprof_descr_v3, ct_nprof_own_v3, their_start_v3)

static ncclResult_t chain_init_v3(void **ctx, int *mask)
{
    ncclResult_t rc = ct_nprof_own_v3.init(ctx, mask);
    if (!chained(3))
        return rc;
    void *theirs = NULL;
    ncclResult_t trc = g_chain.v3->init(&theirs, &g_their_mask);
    return chained_ctx(ctx, mask, rc, theirs, trc);
}

CT_EXPORT struct ct_nprof_v7 ncclProfiler_v7 = {
    "cutrace", chain_init_v7, chain_start_v7, chain_stop, chain_state_v4, chain_finalize,
};
CT_EXPORT struct ct_nprof_v6 ncclProfiler_v6 = {
    "cutrace", chain_init_v6, chain_start_v6, chain_stop, chain_state_v4, chain_finalize,
};
CT_EXPORT struct ct_nprof_v5 ncclProfiler_v5 = {
    "cutrace", chain_init_v5, chain_start_v5, chain_stop, chain_state_v4, chain_finalize,
};
CT_EXPORT struct ct_nprof_v4 ncclProfiler_v4 = {
    "cutrace", chain_init_v4, chain_start_v4, chain_stop, chain_state_v4, chain_finalize,
};
CT_EXPORT struct ct_nprof_v3 ncclProfiler_v3 = {
    "cutrace", chain_init_v3, chain_start_v3, chain_stop, chain_state_v3, chain_finalize,
};
