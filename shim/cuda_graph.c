/*
 * Graph instantiation: where a CUDA graph's dependencies are read, so that
 * the decoder's critical path follows a replayed graph's own edges instead
 * of its launch stream's order (decoder/analysis/critical_path.c).
 *
 * CUPTI names a replayed op by the executable graph's node (graphNodeId of
 * the cloned node), while the edges are the source graph's. So around the
 * real call the wrapper collects, on its own thread, the clones CUPTI
 * reports as the driver makes them (CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED,
 * gpu_cupti.c), then reads the source graph's edges (cuGraphGetEdges) and
 * writes them in the clones' ids (CT_SCOPE_GRAPH in cutrace/format.h).
 * Instantiation is a set-up call, not the hot path: it may allocate. With
 * event timing there are no node ids to join, and nothing is written.
 */
#include <stdio.h>
#include <stdlib.h>

#include "shim/gpu.h"

CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *, CUgraph, CUDA_GRAPH_INSTANTIATE_PARAMS *);

typedef CUresult (*inst_fn)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t);
typedef CUresult (*inst_flags_fn)(CUgraphExec *, CUgraph, unsigned long long);
typedef CUresult (*inst_params_fn)(CUgraphExec *, CUgraph, CUDA_GRAPH_INSTANTIATE_PARAMS *);
typedef CUresult (*edges_fn)(CUgraph, CUgraphNode *, CUgraphNode *, size_t *);
typedef CUresult (*edges2_fn)(CUgraph, CUgraphNode *, CUgraphNode *, CUgraphEdgeData *, size_t *);

__thread struct ct_clones *ct_tls_clones;

/* The driver's cuGraphGetEdges, looked up once (a failed lookup stays so). */
static struct {
    atomic_int state; /* 0 not looked up, 1 done */
    edges_fn v1;
    edges2_fn v2;
} g_edges;

static void find_edges(void)
{
    if (atomic_load(&g_edges.state))
        return;
    g_edges.v2 = (edges2_fn)ct_fn(ct_driver_sym("cuGraphGetEdges_v2"));
    g_edges.v1 = (edges_fn)ct_fn(ct_driver_sym("cuGraphGetEdges"));
    atomic_store(&g_edges.state, 1);
}

static CUresult get_edges(CUgraph g, CUgraphNode *from, CUgraphNode *to, size_t *n)
{
    if (g_edges.v2)
        return g_edges.v2(g, from, to, NULL, n);
    return g_edges.v1 ? g_edges.v1(g, from, to, n) : CUDA_ERROR_NOT_SUPPORTED;
}

static int cmp_clone(const void *a, const void *b)
{
    uintptr_t x = ((const struct ct_clone *)a)->orig, y = ((const struct ct_clone *)b)->orig;
    return (x > y) - (x < y);
}

/* The clone of source node `orig`, 0 when CUPTI reported none. */
static uint64_t clone_of(const struct ct_clones *cl, CUgraphNode orig)
{
    struct ct_clone k = {(uintptr_t)orig, 0};
    const struct ct_clone *c = bsearch(&k, cl->v, cl->n, sizeof(k), cmp_clone);
    return c ? c->id : 0;
}

static void emit_edges(const char *text)
{
    uint64_t f[CT_META_NFIELDS] = {ct_clock_now(), CT_SCOPE_GRAPH, 0, ct_intern("edges"),
                                   ct_intern(text)};
    ct_emit(CT_REC_META, 0, f, CT_META_NFIELDS);
}

#define CT_EDGES_TEXT 4096 /* bytes of one edges record's text */

/* Writes graph g's edges in its clones' ids; what fails is said in the
 * trace and leaves the graph to the decoder's stream-order rule. */
static void write_edges(CUgraph g, struct ct_clones *cl)
{
    if (cl->lost) {
        ct_emit_error("graph: clone ids lost (out of memory): its edges are not recorded", 0);
        return;
    }
    if (!cl->n)
        return; /* CUPTI reported no clone: no ids to join (or an empty graph) */
    find_edges();
    size_t n = 0;
    CUresult r = get_edges(g, NULL, NULL, &n);
    if (r != CUDA_SUCCESS) {
        ct_emit_error("graph: cuGraphGetEdges failed: its edges are not recorded", (int64_t)r);
        return;
    }
    CUgraphNode *from = malloc((n ? n : 1) * sizeof(*from));
    CUgraphNode *to = malloc((n ? n : 1) * sizeof(*to));
    char *text = malloc(CT_EDGES_TEXT);
    if (!from || !to || !text || (n && get_edges(g, from, to, &n) != CUDA_SUCCESS)) {
        ct_emit_error("graph: its edges could not be read: they are not recorded", 0);
        goto out;
    }
    qsort(cl->v, cl->n, sizeof(*cl->v), cmp_clone);
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t t = clone_of(cl, to[i]), s = clone_of(cl, from[i]);
        if (!t || !from[i])
            continue; /* an op the trace will not name, or no edge */
        char one[48];
        int k = s ? snprintf(one, sizeof(one), "%llx>%llx ", (unsigned long long)s,
                             (unsigned long long)t)
                  : snprintf(one, sizeof(one), "?>%llx ", (unsigned long long)t);
        if (len + (size_t)k >= CT_EDGES_TEXT) {
            text[len] = 0;
            emit_edges(text);
            len = 0;
        }
        memcpy(text + len, one, (size_t)k);
        len += (size_t)k;
    }
    if (len) {
        text[len] = 0;
        emit_edges(text);
    }
out:
    free(from);
    free(to);
    free(text);
}

/* An instantiation being recorded: its call and the clones CUPTI reports
 * on this thread while the real call runs. */
struct inst {
    int on; /* 0: not recorded (shim paused, or an instantiation inside one) */
    struct ct_call c;
    struct ct_clones cl;
};

/* Before the real call: sets the clone collector. */
static void inst_begin(struct inst *s)
{
    s->on = ct_shim_recording() && !ct_tls_clones;
    if (!s->on)
        return;
    s->cl = (struct ct_clones){0};
    ct_call_enter(&s->c);
    ct_tls_clones = &s->cl;
}

/* After it (r its result): records the call and graph g's edges, and
 * returns r; errno as the real call left it. */
static CUresult inst_end(struct inst *s, enum ct_sym sym, unsigned flags, CUgraph g, CUresult r)
{
    if (!s->on)
        return r;
    ct_tls_clones = NULL;
    CT_ERRNO_SAVE;
    ct_call_simple(&s->c, sym, CT_FAM_OTHER, r, 0, -1, flags, 0, 0);
    if (r == CUDA_SUCCESS)
        write_edges(g, &s->cl);
    free(s->cl.v);
    CT_ERRNO_RESTORE;
    ct_call_leave(&s->c);
    return r;
}

CUresult ct_impl_cuGraphInstantiate(CUgraphExec *x, CUgraph g, CUgraphNode *err, char *log,
                                    size_t n)
{
    inst_fn real = CT_REAL(inst_fn, CT_SYM_cuGraphInstantiate);
    if (!real)
        return CT_NOT_AVAILABLE;
    struct inst s;
    inst_begin(&s);
    return inst_end(&s, CT_SYM_cuGraphInstantiate, 0, g, real(x, g, err, log, n));
}

CUresult ct_impl_cuGraphInstantiate_v2(CUgraphExec *x, CUgraph g, CUgraphNode *err, char *log,
                                       size_t n)
{
    inst_fn real = CT_REAL(inst_fn, CT_SYM_cuGraphInstantiate_v2);
    if (!real)
        return CT_NOT_AVAILABLE;
    struct inst s;
    inst_begin(&s);
    return inst_end(&s, CT_SYM_cuGraphInstantiate_v2, 0, g, real(x, g, err, log, n));
}

CUresult ct_impl_cuGraphInstantiateWithFlags(CUgraphExec *x, CUgraph g, unsigned long long fl)
{
    inst_flags_fn real = CT_REAL(inst_flags_fn, CT_SYM_cuGraphInstantiateWithFlags);
    if (!real)
        return CT_NOT_AVAILABLE;
    struct inst s;
    inst_begin(&s);
    return inst_end(&s, CT_SYM_cuGraphInstantiateWithFlags, 0, g, real(x, g, fl));
}

CUresult ct_impl_cuGraphInstantiateWithParams(CUgraphExec *x, CUgraph g,
                                              CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    inst_params_fn real = CT_REAL(inst_params_fn, CT_SYM_cuGraphInstantiateWithParams);
    if (!real)
        return CT_NOT_AVAILABLE;
    struct inst s;
    inst_begin(&s);
    return inst_end(&s, CT_SYM_cuGraphInstantiateWithParams, 0, g, real(x, g, p));
}

CUresult ct_impl_cuGraphInstantiateWithParams_ptsz(CUgraphExec *x, CUgraph g,
                                                   CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    inst_params_fn real = CT_REAL(inst_params_fn, CT_SYM_cuGraphInstantiateWithParams_ptsz);
    if (!real)
        return CT_NOT_AVAILABLE;
    struct inst s;
    inst_begin(&s);
    return inst_end(&s, CT_SYM_cuGraphInstantiateWithParams_ptsz, CT_APIF_PER_THREAD, g,
                    real(x, g, p));
}
