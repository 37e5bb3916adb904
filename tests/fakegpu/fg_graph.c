/*
 * fg_graph.c - stream capture and CUDA graphs.
 *
 * A graph is a list of op descriptions (fg_desc) in the order they were
 * issued to the capturing stream(s).  Capture records instead of enqueuing;
 * cuGraphLaunch enqueues the recorded ops in that order on the launch
 * stream, so a launched graph lasts the sum of its nodes (branches captured
 * on forked streams are serialised on replay).
 *
 * Graphs have ids of their own (reported to a fake CUPTI as graphId; node
 * i of a graph is graphNodeId (graphId << 32) | (i + 1)), counted apart
 * from fg_next_id so that stream and context ids do not depend on them.
 */
#include "fg_internal.h"

#include <stdlib.h>
#include <string.h>

struct fg_graph {
    fg_desc *nodes;
    size_t n, cap;
    bool capturing;
    unsigned long long capture_id;
    uint32_t id;
};

typedef struct fg_graph_exec {
    fg_desc *nodes;
    size_t n;
    uint32_t graph_id;
} fg_graph_exec;

static uint32_t fg_graph_ids; /* under fg.lock */

static fg_graph *fg_graph_get(CUgraph h)
{
    return fg_handle_type(h) == FG_H_GRAPH ? (fg_graph *)h : NULL;
}

static fg_graph_exec *fg_exec_get(CUgraphExec h)
{
    return fg_handle_type(h) == FG_H_GRAPH_EXEC ? (fg_graph_exec *)h : NULL;
}

bool fg_graph_capturing(fg_graph *g)
{
    return fg_graph_get((CUgraph)g) && g->capturing;
}

CUresult fg_graph_record_locked(fg_graph *g, const fg_desc *d)
{
    if (!fg_grow((void **)&g->nodes, &g->cap, g->n + 1, sizeof *g->nodes))
        return CUDA_ERROR_OUT_OF_MEMORY;
    g->nodes[g->n++] = *d;
    return CUDA_SUCCESS;
}

static fg_graph *fg_graph_new(void)
{
    fg_graph *g = calloc(1, sizeof *g);
    if (g) {
        g->id = ++fg_graph_ids;
        fg_handle_add(g, FG_H_GRAPH);
    }
    return g;
}

/* --------------------------------------------------------------- capture */

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
        for (size_t j = 0; j < fg.ctxs[i]->nstreams; j++)
            if (fg.ctxs[i]->streams[j]->capture == g)
                fg.ctxs[i]->streams[j]->capture = NULL;
    s->capture = NULL;
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

/* All three generations of cuStreamGetCaptureInfo.  Dependencies are not
 * tracked (the graph is a list), so they are reported as none. */
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
            *deps = NULL;
        if (edges)
            *edges = NULL;
        if (ndeps)
            *ndeps = 0;
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
    fg_handle_del(g);
    free(g->nodes);
    free(g);
    FG_RETURN(CUDA_SUCCESS);
}

static CUresult fg_instantiate(CUgraphExec *phExec, CUgraph hGraph)
{
    FG_ENTER();
    fg_graph *g = fg_graph_get(hGraph);
    if (!phExec || !g || g->capturing)
        FG_RETURN(CUDA_ERROR_INVALID_VALUE);
    fg_graph_exec *x = calloc(1, sizeof *x);
    if (!x || (g->n && !(x->nodes = malloc(g->n * sizeof *x->nodes)))) {
        free(x);
        FG_RETURN(CUDA_ERROR_OUT_OF_MEMORY);
    }
    if (g->n)
        memcpy(x->nodes, g->nodes, g->n * sizeof *x->nodes);
    x->n = g->n;
    x->graph_id = g->id;
    fg_handle_add(x, FG_H_GRAPH_EXEC);
    *phExec = (CUgraphExec)x;
    FG_RETURN(CUDA_SUCCESS);
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
    fg_handle_del(x);
    free(x->nodes);
    free(x);
    FG_RETURN(CUDA_SUCCESS);
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
    const struct fg_cupti_hooks *h = fg_cupti();
    if (__builtin_expect(h != NULL, 0) && !s->capture)
        fg_cupti_graph_begin(h, x->graph_id);
    for (size_t i = 0; i < x->n && rc == CUDA_SUCCESS; i++) {
        if (__builtin_expect(h != NULL, 0))
            fg_cupti_graph_node(((uint64_t)x->graph_id << 32) | (i + 1));
        rc = fg_submit(s, &x->nodes[i], false);
    }
    if (__builtin_expect(h != NULL, 0))
        fg_cupti_graph_end();
    FG_RETURN(rc);
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
