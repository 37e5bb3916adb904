/*
 * fg_capture.c - stream capture: recording work into a graph instead of
 * running it, with CUDA's per-node dependencies.
 *
 * Every capturing stream has a dependency set (fg_capdeps): the nodes its
 * next captured node will depend on.  It is empty on the origin stream
 * when capture begins; a node captured on a stream depends on its set,
 * which then becomes {that node}.  An event recorded on a capturing stream
 * takes a copy of the stream's set (fg_event.c); a stream waiting on such
 * an event joins the capture with the event's set (fork) or, already in
 * it, adds the event's set to its own (join).  So a fork/join capture
 * A -> {B on s1, C on s2} -> D gives the edges A->B, A->C, B->D, C->D, as
 * the real driver builds them.
 *
 * What this file must not do: enqueue anything.  Captured work runs only
 * when an instantiation of the graph is launched (fg_graph.c).
 */
#include "fg_graph.h"

#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------- dependencies */

static bool fg_capdeps_has(const fg_capdeps *d, const fg_node *n)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->v[i] == n)
            return true;
    return false;
}

bool fg_capdeps_set(fg_capdeps *dst, const fg_capdeps *src, bool merge)
{
    if (dst == src)
        return true;
    if (!merge)
        dst->n = 0;
    for (size_t i = 0; i < src->n; i++) {
        if (merge && fg_capdeps_has(dst, src->v[i]))
            continue;
        if (!fg_grow((void **)&dst->v, &dst->cap, dst->n + 1, sizeof *dst->v))
            return false;
        dst->v[dst->n++] = src->v[i];
    }
    return true;
}

void fg_capdeps_free(fg_capdeps *d)
{
    free(d->v);
    *d = (fg_capdeps){0};
}

static bool fg_capdeps_one(fg_capdeps *d, fg_node *n)
{
    if (!fg_grow((void **)&d->v, &d->cap, 1, sizeof *d->v))
        return false;
    d->v[0] = n;
    d->n = 1;
    return true;
}

/* The first edge into node `to` (edges are sorted by target). */
static size_t fg_edges_into(const fg_graph *g, uint32_t to)
{
    size_t lo = 0, hi = g->nedges;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->edges[mid].to < to)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Whether node a is an ancestor of node b.  Only nodes between the two
 * can be on a path (edges go forward), so the walk stays above a. */
static bool fg_is_ancestor(const fg_graph *g, uint32_t a, uint32_t b, uint8_t *seen)
{
    if (b <= a)
        return false;
    for (size_t e = fg_edges_into(g, b); e < g->nedges && g->edges[e].to == b; e++) {
        uint32_t p = g->edges[e].from;
        if (p == a)
            return true;
        if (p > a && !seen[p]) {
            seen[p] = 1;
            if (fg_is_ancestor(g, a, p, seen))
                return true;
        }
    }
    return false;
}

bool fg_capture_join_locked(fg_stream *s, const fg_capdeps *add)
{
    fg_graph *g = s->capture;
    if (!fg_capdeps_set(&s->capdeps, add, true))
        return false;
    uint8_t *seen = calloc(g->n ? g->n : 1, 1);
    if (!seen)
        return false;
    /* A node that another member already follows adds only a redundant
     * edge: the real driver drops it too (A->D in A -> {B, C} -> D). */
    size_t k = 0;
    for (size_t i = 0; i < s->capdeps.n; i++) {
        bool redundant = false;
        for (size_t j = 0; j < s->capdeps.n && !redundant; j++) {
            if (j == i)
                continue;
            memset(seen, 0, g->n);
            redundant = fg_is_ancestor(g, s->capdeps.v[i]->index, s->capdeps.v[j]->index, seen);
        }
        if (!redundant)
            s->capdeps.v[k++] = s->capdeps.v[i];
    }
    s->capdeps.n = k;
    free(seen);
    return true;
}

bool fg_graph_capturing(fg_graph *g)
{
    return fg_graph_get((CUgraph)g) && g->capturing;
}

bool fg_capture_live(fg_graph *g, unsigned long long capture_id)
{
    return fg_graph_capturing(g) && g->capture_id == capture_id;
}

CUresult fg_graph_record_locked(fg_stream *s, const fg_desc *d)
{
    /* Room for the new set first: a failure leaves the graph unchanged. */
    if (!fg_grow((void **)&s->capdeps.v, &s->capdeps.cap, 1, sizeof *s->capdeps.v))
        return CUDA_ERROR_OUT_OF_MEMORY;
    fg_node *n = fg_graph_add_locked(s->capture, d, s->capdeps.v, s->capdeps.n);
    if (!n)
        return CUDA_ERROR_OUT_OF_MEMORY;
    fg_capdeps_one(&s->capdeps, n);
    return CUDA_SUCCESS;
}

CUresult fg_capture_exec_locked(fg_stream *s, fg_node *const *nodes, size_t n, const fg_edge *edges,
                                size_t nedges)
{
    fg_graph *g = s->capture;
    fg_node **added = calloc(n ? n : 1, sizeof *added);
    fg_node **deps = malloc((nedges + s->capdeps.n + 1) * sizeof *deps);
    bool *has_succ = calloc(n ? n : 1, sizeof *has_succ);
    fg_capdeps sinks = {0};
    CUresult rc = added && deps && has_succ ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    size_t e = 0;
    for (size_t i = 0; i < n && rc == CUDA_SUCCESS; i++) {
        size_t nd = 0;
        for (; e < nedges && edges[e].to == i; e++) {
            deps[nd++] = added[edges[e].from];
            has_succ[edges[e].from] = true;
        }
        if (!nd) /* a root of the launched graph: after what s has captured so far */
            for (size_t j = 0; j < s->capdeps.n; j++)
                deps[nd++] = s->capdeps.v[j];
        if (!(added[i] = fg_graph_add_locked(g, &nodes[i]->d, deps, nd)))
            rc = CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (size_t i = 0; i < n && rc == CUDA_SUCCESS; i++)
        if (!has_succ[i] && !fg_capdeps_set(&sinks, &(fg_capdeps){&added[i], 1, 1}, true))
            rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS && n && !fg_capdeps_set(&s->capdeps, &sinks, false))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    fg_capdeps_free(&sinks);
    free(added);
    free(deps);
    free(has_succ);
    return rc;
}

/* ------------------------------------------------------------ entry points */

static CUresult fg_begin_capture(CUstream hs, CUstreamCaptureMode mode, bool pt)
{
    FG_ENTER();
    if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
        mode != CU_STREAM_CAPTURE_MODE_RELAXED)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    CUresult rc;
    fg_stream *s = fg_stream_get(hs, pt, &rc);
    if (!s)
        FG_RETURN(rc);
    if (s->kind == FG_S_LEGACY)
        FG_RETURN(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    if (s->capture)
        FG_RETURN(CUDA_ERROR_ILLEGAL_STATE);
    fg_graph *g = fg_graph_new();
    if (!g)
        FG_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    g->capturing = true;
    g->capture_id = fg_next_id();
    s->capture = g;
    s->capture_origin = true;
    s->capdeps.n = 0;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuStreamBeginCapture(CUstream hStream)
{
    return fg_begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, false);
}

CUresult CUDAAPI cuStreamBeginCapture_ptsz(CUstream hStream)
{
    return fg_begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, true);
}

CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
    return fg_begin_capture(hStream, mode, false);
}

CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode)
{
    return fg_begin_capture(hStream, mode, true);
}

static CUresult fg_end_capture(CUstream hs, CUgraph *phGraph, bool pt)
{
    FG_ENTER();
    if (!phGraph)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    CUresult rc;
    fg_stream *s = fg_stream_get(hs, pt, &rc);
    if (!s)
        FG_RETURN(rc);
    if (!s->capture)
        FG_RETURN(CUDA_ERROR_ILLEGAL_STATE);
    if (!s->capture_origin)
        FG_RETURN(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
    fg_graph *g = s->capture;
    /* Streams that joined through events leave the capture with it. */
    for (size_t i = 0; i < fg.nctxs; i++)
        for (size_t j = 0; j < fg.ctxs[i]->nstreams; j++) {
            fg_stream *t = fg.ctxs[i]->streams[j];
            if (t->capture == g) {
                t->capture = NULL;
                fg_capdeps_free(&t->capdeps);
            }
        }
    s->capture = NULL;
    fg_capdeps_free(&s->capdeps);
    s->capture_origin = false;
    g->capturing = false;
    *phGraph = (CUgraph)g;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    return fg_end_capture(hStream, phGraph, false);
}

CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph)
{
    return fg_end_capture(hStream, phGraph, true);
}

static CUresult fg_is_capturing(CUstream hs, CUstreamCaptureStatus *status, bool pt)
{
    FG_ENTER();
    if (!status)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    CUresult rc;
    fg_stream *s = fg_stream_get(hs, pt, &rc);
    if (!s)
        FG_RETURN(rc);
    *status = s->capture ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    return fg_is_capturing(hStream, captureStatus, false);
}

CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    return fg_is_capturing(hStream, captureStatus, true);
}

/* All three generations of cuStreamGetCaptureInfo.  The dependencies are
 * the stream's set, as node handles; the array stays valid until the
 * stream's next captured node or the end of the capture, as in CUDA.  All
 * edges are default ones: edge data is reported as NULL. */
static CUresult fg_capture_info(CUstream hs, CUstreamCaptureStatus *status, cuuint64_t *id,
                                CUgraph *graph, const CUgraphNode **deps,
                                const CUgraphEdgeData **edges, size_t *ndeps, bool pt)
{
    FG_ENTER();
    if (!status)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    CUresult rc;
    fg_stream *s = fg_stream_get(hs, pt, &rc);
    if (!s)
        FG_RETURN(rc);
    *status = s->capture ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    if (s->capture) {
        if (id)
            *id = s->capture->capture_id;
        if (graph)
            *graph = (CUgraph)s->capture;
        if (deps)
            *deps = (const CUgraphNode *)s->capdeps.v;
        if (edges)
            *edges = NULL;
        if (ndeps)
            *ndeps = s->capdeps.n;
    }
    FG_RETURN(CUDA_SUCCESS);
}

CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                        cuuint64_t *id_out)
{
    return fg_capture_info(hStream, captureStatus_out, id_out, NULL, NULL, NULL, NULL, false);
}

CUresult CUDAAPI cuStreamGetCaptureInfo_ptsz(CUstream hStream,
                                             CUstreamCaptureStatus *captureStatus_out,
                                             cuuint64_t *id_out)
{
    return fg_capture_info(hStream, captureStatus_out, id_out, NULL, NULL, NULL, NULL, true);
}

CUresult CUDAAPI cuStreamGetCaptureInfo_v2(CUstream hStream,
                                           CUstreamCaptureStatus *captureStatus_out,
                                           cuuint64_t *id_out, CUgraph *graph_out,
                                           const CUgraphNode **dependencies_out,
                                           size_t *numDependencies_out)
{
    return fg_capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out, NULL,
                           numDependencies_out, false);
}

CUresult CUDAAPI cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream,
                                                CUstreamCaptureStatus *captureStatus_out,
                                                cuuint64_t *id_out, CUgraph *graph_out,
                                                const CUgraphNode **dependencies_out,
                                                size_t *numDependencies_out)
{
    return fg_capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out, NULL,
                           numDependencies_out, true);
}

CUresult CUDAAPI cuStreamGetCaptureInfo_v3(CUstream hStream,
                                           CUstreamCaptureStatus *captureStatus_out,
                                           cuuint64_t *id_out, CUgraph *graph_out,
                                           const CUgraphNode **dependencies_out,
                                           const CUgraphEdgeData **edgeData_out,
                                           size_t *numDependencies_out)
{
    return fg_capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out,
                           edgeData_out, numDependencies_out, false);
}

CUresult CUDAAPI cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream,
                                                CUstreamCaptureStatus *captureStatus_out,
                                                cuuint64_t *id_out, CUgraph *graph_out,
                                                const CUgraphNode **dependencies_out,
                                                const CUgraphEdgeData **edgeData_out,
                                                size_t *numDependencies_out)
{
    return fg_capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out,
                           edgeData_out, numDependencies_out, true);
}
