/*
 * fg_graph.c - CUDA graphs: nodes and edges, instantiation and replay.
 *
 * Graphs are built by stream capture (fg_capture.c; fg_graph.h has the
 * layout).  Instantiation clones them, as the real driver does: the
 * executable graph has its own id, from the same counter as graphs, and
 * its own node handles, node i being ((uint64_t)exec id << 32) | (i + 1);
 * it copies the edges.  A fake CUPTI that asked for
 * CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED hears of every clone before the
 * instantiation returns, with no lock held (fg_cupti_hooks.h).
 *
 * cuGraphLaunch enqueues each node after the work the launch stream had
 * before the launch and after the node's predecessors only, so independent
 * branches overlap in virtual time as on a GPU; a zero-length join op that
 * depends on every node becomes the stream's last op, so what follows the
 * launch waits for the whole graph.  Each node is reported to CUPTI on the
 * launch stream, with the launch's correlation id, the source graph's id
 * and the executable node's id (what real CUPTI's records name).
 *
 * Graph ids are counted apart from fg_next_id so that stream and context
 * ids do not depend on them.
 */
#include "fg_graph.h"

#include <stdlib.h>
#include <string.h>

typedef struct fg_graph_exec {
    fg_node **nodes; /* clones of the source graph's nodes, same order */
    size_t n;
    fg_edge *edges; /* the source graph's, same order */
    size_t nedges;
    uint32_t id, graph_id; /* its own; the source graph's (CUPTI's graphId) */
} fg_graph_exec;

static uint32_t fg_graph_ids; /* under fg.lock */

uint32_t fg_graph_next_id(void)
{
    return ++fg_graph_ids;
}

fg_graph *fg_graph_get(CUgraph h)
{
    return fg_handle_type(h) == FG_H_GRAPH ? (fg_graph *)h : NULL;
}

static fg_graph_exec *fg_exec_get(CUgraphExec h)
{
    return fg_handle_type(h) == FG_H_GRAPH_EXEC ? (fg_graph_exec *)h : NULL;
}

static fg_node *fg_node_get(const void *h)
{
    return fg_handle_type(h) == FG_H_GRAPH_NODE ? (fg_node *)(uintptr_t)h : NULL;
}

static fg_node *fg_node_new(const fg_desc *d, uint32_t owner_id, size_t index)
{
    fg_node *n = malloc(sizeof *n);
    if (n) {
        n->d = *d;
        n->index = (uint32_t)index;
        n->id = ((uint64_t)owner_id << 32) | (index + 1);
        fg_handle_add(n, FG_H_GRAPH_NODE);
    }
    return n;
}

static void fg_nodes_free(fg_node **nodes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        fg_handle_del(nodes[i]);
        free(nodes[i]);
    }
    free(nodes);
}

fg_graph *fg_graph_new(void)
{
    fg_graph *g = calloc(1, sizeof *g);
    if (g) {
        g->id = fg_graph_next_id();
        fg_handle_add(g, FG_H_GRAPH);
    }
    return g;
}

fg_node *fg_graph_add_locked(fg_graph *g, const fg_desc *d, fg_node *const *deps, size_t ndeps)
{
    if (g->n >= UINT32_MAX || !fg_grow((void **)&g->nodes, &g->cap, g->n + 1, sizeof *g->nodes) ||
        !fg_grow((void **)&g->edges, &g->capedges, g->nedges + ndeps, sizeof *g->edges))
        return NULL;
    fg_node *n = fg_node_new(d, g->id, g->n);
    if (!n)
        return NULL;
    /* Edges into the new node come last: the list stays sorted by target. */
    for (size_t i = 0; i < ndeps; i++)
        g->edges[g->nedges++] = (fg_edge){.from = deps[i]->index, .to = n->index};
    g->nodes[g->n++] = n;
    return n;
}

static void fg_graph_free(fg_graph *g)
{
    fg_handle_del(g);
    fg_nodes_free(g->nodes, g->n);
    free(g->edges);
    free(g);
}

static void fg_exec_free(fg_graph_exec *x)
{
    fg_handle_del(x);
    fg_nodes_free(x->nodes, x->n);
    free(x->edges);
    free(x);
}

/* ------------------------------------------------- CUPTI's graph look-ups */

bool fg_graph_node_id(const void *node, uint64_t *id)
{
    FG_LOCK();
    const fg_node *n = fg_node_get(node);
    if (n)
        *id = n->id;
    FG_UNLOCK();
    return n != NULL;
}

bool fg_graph_id(const void *graph, uint32_t *id)
{
    FG_LOCK();
    const fg_graph *g = fg_graph_get((CUgraph)(uintptr_t)graph);
    if (g)
        *id = g->id;
    FG_UNLOCK();
    return g != NULL;
}

bool fg_graph_exec_id(const void *exec, uint32_t *id)
{
    FG_LOCK();
    const fg_graph_exec *x = fg_exec_get((CUgraphExec)(uintptr_t)exec);
    if (x)
        *id = x->id;
    FG_UNLOCK();
    return x != NULL;
}

/* ---------------------------------------------------------------- graphs */

CUresult CUDAAPI cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    FG_ENTER();
    if (!phGraph || flags != 0)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    fg_graph *g = fg_graph_new();
    if (!g)
        FG_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    *phGraph = (CUgraph)g;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph)
{
    FG_ENTER();
    fg_graph *g = fg_graph_get(hGraph);
    if (!g || g->capturing)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    fg_graph_free(g);
    FG_RETURN(CUDA_SUCCESS);
}

/* CUDA's rule for both queries: NULL arrays ask for the count; otherwise up
 * to *count entries are filled, the rest of a larger array is set to NULL,
 * and *count becomes the number returned. */
CUresult CUDAAPI cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
    FG_ENTER();
    fg_graph *g = fg_graph_get(hGraph);
    if (!g || !numNodes)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!nodes) {
        *numNodes = g->n;
        FG_RETURN(CUDA_SUCCESS);
    }
    size_t k = *numNodes < g->n ? *numNodes : g->n;
    for (size_t i = 0; i < *numNodes; i++)
        nodes[i] = i < k ? (CUgraphNode)g->nodes[i] : NULL;
    *numNodes = k;
    FG_RETURN(CUDA_SUCCESS);
}

static CUresult fg_get_edges(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to,
                             CUgraphEdgeData *data, size_t *numEdges)
{
    FG_ENTER();
    fg_graph *g = fg_graph_get(hGraph);
    if (!g || !numEdges || !from != !to || (data && !from))
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    if (!from) {
        *numEdges = g->nedges;
        FG_RETURN(CUDA_SUCCESS);
    }
    size_t k = *numEdges < g->nedges ? *numEdges : g->nedges;
    for (size_t i = 0; i < *numEdges; i++) {
        from[i] = i < k ? (CUgraphNode)g->nodes[g->edges[i].from] : NULL;
        to[i] = i < k ? (CUgraphNode)g->nodes[g->edges[i].to] : NULL;
        if (data) /* every captured edge is a default (full) dependency */
            memset(&data[i], 0, sizeof data[i]);
    }
    *numEdges = k;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphGetEdges(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to,
                                 size_t *numEdges)
{
    return fg_get_edges(hGraph, from, to, NULL, numEdges);
}

CUresult CUDAAPI cuGraphGetEdges_v2(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to,
                                    CUgraphEdgeData *edgeData, size_t *numEdges)
{
    return fg_get_edges(hGraph, from, to, edgeData, numEdges);
}

/* --------------------------------------------------------- instantiation */

static int fg_node_type(const fg_desc *d)
{
    switch (d->kind) {
    case FG_OP_KERNEL:
    case FG_OP_EXTERNAL: return CU_GRAPH_NODE_TYPE_KERNEL; /* fake NCCL kernels */
    case FG_OP_COPY: return CU_GRAPH_NODE_TYPE_MEMCPY;
    case FG_OP_MEMSET: return CU_GRAPH_NODE_TYPE_MEMSET;
    case FG_OP_HOSTFN: return CU_GRAPH_NODE_TYPE_HOST;
    case FG_OP_FREE: return CU_GRAPH_NODE_TYPE_MEM_FREE;
    default: return CU_GRAPH_NODE_TYPE_EMPTY;
    }
}

/* Locked: the executable graph of g, not yet registered. */
static fg_graph_exec *fg_exec_clone(const fg_graph *g)
{
    fg_graph_exec *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->id = fg_graph_next_id();
    x->graph_id = g->id;
    x->nodes = calloc(g->n ? g->n : 1, sizeof *x->nodes);
    x->edges = malloc((g->nedges ? g->nedges : 1) * sizeof *x->edges);
    bool ok = x->nodes && x->edges;
    for (size_t i = 0; ok && i < g->n; i++) {
        ok = (x->nodes[i] = fg_node_new(&g->nodes[i]->d, x->id, i)) != NULL;
        x->n += ok;
    }
    if (!ok) {
        fg_nodes_free(x->nodes, x->n);
        free(x->edges);
        free(x);
        return NULL;
    }
    if (g->nedges)
        memcpy(x->edges, g->edges, g->nedges * sizeof *x->edges);
    x->nedges = g->nedges;
    return x;
}

/* What CUPTI hears of each clone, gathered under the lock and told after it
 * is released (the client may call the driver and CUPTI back). */
static struct fg_cupti_clone *fg_clone_reports(const fg_graph *g, const fg_graph_exec *x)
{
    struct fg_cupti_clone *r = calloc(x->n ? x->n : 1, sizeof *r);
    if (!r)
        return NULL;
    void *ctx = fg_current_ctx();
    for (size_t i = 0; i < x->n; i++)
        r[i] = (struct fg_cupti_clone){
            .context = ctx,
            .graph = NULL, /* the exec's internal graph: none is simulated */
            .original_graph = (void *)(uintptr_t)g,
            .node = x->nodes[i],
            .original_node = g->nodes[i],
            .node_type = fg_node_type(&x->nodes[i]->d),
        };
    return r;
}

static CUresult fg_instantiate(CUgraphExec *phExec, CUgraph hGraph)
{
    FG_ENTER();
    fg_graph *g = fg_graph_get(hGraph);
    if (!phExec || !g || g->capturing)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    fg_graph_exec *x = fg_exec_clone(g);
    if (!x)
        FG_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    const struct fg_cupti_hooks *h = fg_cupti();
    struct fg_cupti_clone *clones = NULL;
    if (__builtin_expect(h != NULL, 0) && h->node_cloned && x->n &&
        !(clones = fg_clone_reports(g, x))) {
        fg_exec_free(x); /* not registered yet: unregistering is a no-op */
        FG_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    }
    fg_handle_add(x, FG_H_GRAPH_EXEC);
    FG_UNLOCK();
    /* Nobody else knows x yet, so its clones stay valid meanwhile. */
    for (size_t i = 0; clones && i < x->n; i++)
        h->node_cloned(&clones[i]);
    free(clones);
    *phExec = (CUgraphExec)x;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
                                    CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize)
{
    if (logBuffer && bufferSize)
        logBuffer[0] = '\0';
    if (phErrorNode)
        *phErrorNode = NULL;
    return fg_instantiate(phGraphExec, hGraph);
}

CUresult CUDAAPI cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
                                       CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize)
{
    return cuGraphInstantiate(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}

CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                             unsigned long long flags)
{
    (void)flags;
    return fg_instantiate(phGraphExec, hGraph);
}

static CUresult fg_instantiate_params(CUgraphExec *phExec, CUgraph hGraph,
                                      CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    CUresult rc = fg_instantiate(phExec, hGraph);
    if (p) {
        p->result_out =
            rc == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
        p->hErrNode_out = NULL;
    }
    return rc;
}

CUresult CUDAAPI cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                                              CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    return fg_instantiate_params(phGraphExec, hGraph, instantiateParams);
}

CUresult CUDAAPI cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                   CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    return fg_instantiate_params(phGraphExec, hGraph, instantiateParams);
}

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    FG_ENTER();
    fg_graph_exec *x = fg_exec_get(hGraphExec);
    if (!x)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    fg_exec_free(x);
    FG_RETURN(CUDA_SUCCESS);
}

/* ---------------------------------------------------------------- replay */

/* Locked: enqueue x's nodes on s (not capturing) as described at the top. */
static CUresult fg_exec_replay_locked(fg_graph_exec *x, fg_stream *s)
{
    fg_op **ops = calloc(x->n ? x->n : 1, sizeof *ops);
    fg_op **deps = malloc((x->nedges + 1) * sizeof *deps);
    if (!ops || !deps) {
        free(ops);
        free(deps);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    /* The graph as a whole follows the stream's order and the legacy
     * stream's implicit rules: a marker takes them, every node follows it. */
    int64_t t0 = fg_now();
    fg_desc mark = {.kind = FG_OP_MARKER, .name = "graphLaunch"};
    fg_op *begin = fg_enqueue(s, &mark, NULL, 0);
    fg_op_ref(begin);
    const struct fg_cupti_hooks *h = fg_cupti();
    if (__builtin_expect(h != NULL, 0))
        fg_cupti_graph_begin(h, x->graph_id);
    size_t e = 0;
    for (size_t i = 0; i < x->n; i++) {
        size_t nd = 0;
        deps[nd++] = begin;
        for (; e < x->nedges && x->edges[e].to == i; e++) /* sorted by target */
            deps[nd++] = ops[x->edges[e].from];
        ops[i] = fg_enqueue_detached(s, &x->nodes[i]->d, deps, nd, t0);
        if (__builtin_expect(h != NULL, 0)) {
            fg_cupti_graph_node(x->nodes[i]->id);
            fg_cupti_op_locked(h, s, ops[i]);
        }
    }
    if (__builtin_expect(h != NULL, 0))
        fg_cupti_graph_end();
    mark.name = "graphJoin"; /* a marker: never reported to CUPTI */
    fg_enqueue(s, &mark, ops, x->n);
    for (size_t i = 0; i < x->n; i++)
        fg_op_unref(ops[i]);
    fg_op_unref(begin);
    free(ops);
    free(deps);
    return CUDA_SUCCESS;
}

static CUresult fg_graph_launch(CUgraphExec hx, CUstream hs, bool pt, bool upload_only)
{
    FG_ENTER();
    fg_graph_exec *x = fg_exec_get(hx);
    if (!x)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    CUresult rc;
    fg_stream *s = fg_stream_get(hs, pt, &rc);
    if (!s)
        FG_RETURN(rc);
    if (upload_only)
        FG_RETURN(CUDA_SUCCESS);
    if (s->capture) /* a launch inside a capture: its nodes join that graph */
        FG_RETURN(fg_capture_exec_locked(s, x->nodes, x->n, x->edges, x->nedges));
    FG_RETURN(fg_exec_replay_locked(x, s));
}

CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    return fg_graph_launch(hGraphExec, hStream, false, false);
}

CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    return fg_graph_launch(hGraphExec, hStream, true, false);
}

CUresult CUDAAPI cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
    return fg_graph_launch(hGraphExec, hStream, false, true);
}

CUresult CUDAAPI cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    return fg_graph_launch(hGraphExec, hStream, true, true);
}
