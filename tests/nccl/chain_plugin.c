/*
 * A second NCCL profiler plugin for tests/nccl/check_chain.py: what NCCL
 * Inspector or a site's own plugin is to cutrace (docs/nccl.md, "Another
 * profiler plugin"). Built twice: libchain_plugin.so exports
 * ncclProfiler_v4 and _v5, libchain_plugin_v6.so (CHAIN_V6 defined) _v6
 * too, with v5's functions (v6 only adds event kinds). It asks for the events
 * CHAIN_MASK names (default: every kind), and counts what it gets: starts
 * per event type, state records, stops; a parent that is not a live handle
 * of its own, a handle it never gave or already stopped. At finalize of
 * the last communicator it appends one JSON line to CHAIN_OUT. Locks and
 * allocation are fine here: it is a test's plugin, not cutrace.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim/nccl_profiler_abi.h"

#define MAGIC 0x43484149u /* "CHAI" */

struct handle {
    uint32_t magic;
    uint64_t type;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_starts[16], g_states, g_stops, g_bad_parent, g_bad_handle, g_open;
static int g_comms, g_ctx;

static int type_index(uint64_t t)
{
    for (int i = 0; i < 16; i++)
        if (t == (uint64_t)1 << i)
            return i;
    return 15;
}

static int live(const void *h)
{
    return h && ((const struct handle *)h)->magic == MAGIC;
}

static ncclResult_t init_any(void **ctx, int *mask)
{
    const char *m = getenv("CHAIN_MASK");
    *mask = m ? (int)strtol(m, NULL, 0) : 0xff;
    *ctx = &g_ctx;
    pthread_mutex_lock(&g_lock);
    g_comms++;
    pthread_mutex_unlock(&g_lock);
    return ncclSuccess;
}

static ncclResult_t start_any(void **handle, uint64_t type, void *parent)
{
    *handle = NULL;
    pthread_mutex_lock(&g_lock);
    g_starts[type_index(type)]++;
    if (parent && !live(parent))
        g_bad_parent++;
    struct handle *h = malloc(sizeof(*h));
    if (h) {
        h->magic = MAGIC;
        h->type = type;
        g_open++;
    }
    pthread_mutex_unlock(&g_lock);
    *handle = h;
    return ncclSuccess;
}

static ncclResult_t stop(void *handle)
{
    pthread_mutex_lock(&g_lock);
    if (!live(handle)) {
        g_bad_handle++;
    } else {
        ((struct handle *)handle)->magic = 0;
        free(handle);
        g_stops++;
        g_open--;
    }
    pthread_mutex_unlock(&g_lock);
    return ncclSuccess;
}

static ncclResult_t state(void *handle, int s, union ct_nprof_state_args_v4 *a)
{
    (void)s, (void)a;
    pthread_mutex_lock(&g_lock);
    if (live(handle))
        g_states++;
    else
        g_bad_handle++;
    pthread_mutex_unlock(&g_lock);
    return ncclSuccess;
}

static ncclResult_t finalize(void *ctx)
{
    (void)ctx;
    pthread_mutex_lock(&g_lock);
    int last = --g_comms == 0;
    const char *out = getenv("CHAIN_OUT");
    FILE *f = last && out ? fopen(out, "a") : NULL;
    if (f) {
        fprintf(f, "{\"pid\":%d,\"starts\":{", (int)getpid());
        for (int i = 0, n = 0; i < 16; i++)
            if (g_starts[i])
                fprintf(f, "%s\"%d\":%llu", n++ ? "," : "", 1 << i,
                        (unsigned long long)g_starts[i]);
        fprintf(f,
                "},\"states\":%llu,\"stops\":%llu,\"open\":%llu,\"bad_parent\":%llu,"
                "\"bad_handle\":%llu}\n",
                (unsigned long long)g_states, (unsigned long long)g_stops,
                (unsigned long long)g_open, (unsigned long long)g_bad_parent,
                (unsigned long long)g_bad_handle);
        fclose(f);
    }
    pthread_mutex_unlock(&g_lock);
    return ncclSuccess;
}

static ncclResult_t init_v5(void **ctx, uint64_t id, int *mask, const char *name, int nnodes,
                            int nranks, int rank, ct_nprof_logger log)
{
    (void)id, (void)name, (void)nnodes, (void)nranks, (void)rank, (void)log;
    return init_any(ctx, mask);
}

static ncclResult_t start_v5(void *ctx, void **handle, struct ct_nprof_descr_v5 *d)
{
    (void)ctx;
    return start_any(handle, d->type, d->parent);
}

static ncclResult_t init_v4(void **ctx, int *mask, const char *name, uint64_t hash, int nnodes,
                            int nranks, int rank, ct_nprof_logger log)
{
    (void)name, (void)hash, (void)nnodes, (void)nranks, (void)rank, (void)log;
    return init_any(ctx, mask);
}

static ncclResult_t start_v4(void *ctx, void **handle, struct ct_nprof_descr_v4 *d)
{
    (void)ctx;
    return start_any(handle, d->type, d->parent);
}

__attribute__((visibility("default"))) struct ct_nprof_v5 ncclProfiler_v5 = {
    "chain-test", init_v5, start_v5, stop, state, finalize,
};
#ifdef CHAIN_V6
__attribute__((visibility("default"))) struct ct_nprof_v6 ncclProfiler_v6 = {
    "chain-test", init_v5, start_v5, stop, state, finalize,
};
#endif
__attribute__((visibility("default"))) struct ct_nprof_v4 ncclProfiler_v4 = {
    "chain-test", init_v4, start_v4, stop, state, finalize,
};
