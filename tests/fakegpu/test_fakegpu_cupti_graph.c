/*
 * test_fakegpu_cupti_graph.c - the fake CUPTI's graph support: the
 * GRAPHNODE_CLONED resource callback during instantiation, the ids of
 * cuptiGetGraphNodeId/cuptiGetGraphId/cuptiGetGraphExecId and how they
 * match the graphId/graphNodeId of replayed records, and the records'
 * times under concurrent replay.
 *
 * Times.  Every launch is enqueued while BLOCKER runs, so the replayed
 * records' times are the scheduler's arithmetic (start = max(ends of the
 * node's predecessors), end = start + the named duration), compared in
 * exact integer nanoseconds without a timestamp callback.
 */
#include "test_fakegpu_cupti.h"

#include <pthread.h>
#include <string.h>

#define BLOCKER "blocker__100000us"

/* What the subscriber's callback saw. */
#define MAX_CLONES 8
static struct {
    size_t n, other; /* clone callbacks; callbacks of any other kind */
    CUgraphNode node[MAX_CLONES], orig[MAX_CLONES];
    uint64_t node_id[MAX_CLONES], orig_id[MAX_CLONES];
    CUgraphNodeType type[MAX_CLONES];
    CUgraph graph[MAX_CLONES];
    bool exec_null, dep_null, ctx_ok, same_thread;
} seen;
static pthread_t test_thread;

static void CUPTIAPI on_callback(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId id,
                                 const void *data)
{
    ck_assert_ptr_eq(ud, &seen);
    if (dom != CUPTI_CB_DOMAIN_RESOURCE || id != CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
        seen.other++;
        return;
    }
    const CUpti_ResourceData *rd = data;
    const CUpti_GraphData *g = rd->resourceDescriptor;
    size_t i = seen.n++;
    ck_assert_uint_lt(i, MAX_CLONES);
    seen.node[i] = g->node;
    seen.orig[i] = g->originalNode;
    seen.type[i] = g->nodeType;
    seen.graph[i] = g->originalGraph;
    /* Both calls take the driver's lock: they would deadlock if the
     * callback ran under it. */
    CUPTI_OK(cuptiGetGraphNodeId(g->node, &seen.node_id[i]));
    CUPTI_OK(cuptiGetGraphNodeId(g->originalNode, &seen.orig_id[i]));
    CUcontext cur = NULL;
    CU_OK(cuCtxGetCurrent(&cur));
    seen.ctx_ok = (i == 0 || seen.ctx_ok) && cur == rd->context && cur;
    seen.exec_null = (i == 0 || seen.exec_null) && !g->graphExec;
    seen.dep_null = (i == 0 || seen.dep_null) && !g->dependency;
    seen.same_thread = (i == 0 || seen.same_thread) && pthread_equal(pthread_self(), test_thread);
}

/* A -> {B, C} -> memset M, captured with events; B and C on forks. */
static CUgraph capture_diamond(CUstream s0, CUdeviceptr d)
{
    CUstream s1, s2;
    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CUevent fork, jb, jc;
    CU_OK(cuEventCreate(&fork, 0));
    CU_OK(cuEventCreate(&jb, 0));
    CU_OK(cuEventCreate(&jc, 0));
    CU_OK(cuStreamBeginCapture(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
    tc_launch("gA__1000us", s0);
    CU_OK(cuEventRecord(fork, s0));
    CU_OK(cuStreamWaitEvent(s1, fork, 0));
    CU_OK(cuStreamWaitEvent(s2, fork, 0));
    tc_launch("gB__20000us", s1);
    tc_launch("gC__30000us", s2);
    CU_OK(cuEventRecord(jb, s1));
    CU_OK(cuEventRecord(jc, s2));
    CU_OK(cuStreamWaitEvent(s0, jb, 0));
    CU_OK(cuStreamWaitEvent(s0, jc, 0));
    CU_OK(cuMemsetD8Async(d, 7, 4096, s0));
    CUgraph g;
    CU_OK(cuStreamEndCapture(s0, &g));
    return g;
}

START_TEST(clone_callback_ids_name_the_replayed_records)
{
    CUcontext ctx;
    tc_init_cuda(&ctx);
    tc_cupti_start(false);
    test_thread = pthread_self();
    CUpti_SubscriberHandle sub;
    CUPTI_OK(cuptiSubscribe(&sub, on_callback, &seen));
    CUPTI_OK(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE,
                                 CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED));
    uint32_t on = 0;
    CUPTI_OK(cuptiGetCallbackState(&on, sub, CUPTI_CB_DOMAIN_RESOURCE,
                                   CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED));
    ck_assert_uint_eq(on, 1);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr d;
    CU_OK(cuMemAlloc(&d, 4096));
    CUgraph g = capture_diamond(s, d);
    CUgraphNode nodes[4];
    size_t n = 4;
    CU_OK(cuGraphGetNodes(g, nodes, &n));
    ck_assert_uint_eq(n, 4);
    uint32_t gid = 0;
    CUPTI_OK(cuptiGetGraphId(g, &gid));
    ck_assert_uint_ne(gid, 0);
    ck_assert_uint_eq(seen.n, 0); /* capture clones nothing */

    CUgraphExec x;
    CU_OK(cuGraphInstantiateWithFlags(&x, g, 0));
    /* Once per node, on this thread, before the call returned. */
    ck_assert_uint_eq(seen.n, 4);
    ck_assert(seen.same_thread && seen.ctx_ok && seen.exec_null && seen.dep_null);
    ck_assert_uint_eq(seen.other, 0);
    uint32_t xid = 0;
    CUPTI_OK(cuptiGetGraphExecId(x, &xid));
    ck_assert_uint_ne(xid, gid);
    for (size_t i = 0; i < 4; i++) {
        ck_assert_ptr_eq(seen.orig[i], nodes[i]);
        ck_assert_ptr_ne(seen.node[i], nodes[i]);
        ck_assert_ptr_eq(seen.graph[i], g);
        ck_assert_uint_eq(seen.orig_id[i], ((uint64_t)gid << 32) | (i + 1));
        ck_assert_uint_eq(seen.node_id[i], ((uint64_t)xid << 32) | (i + 1));
        ck_assert_uint_ne(seen.node_id[i], seen.orig_id[i]);
        ck_assert_int_eq(seen.type[i],
                         i < 3 ? CU_GRAPH_NODE_TYPE_KERNEL : CU_GRAPH_NODE_TYPE_MEMSET);
    }

    tc_launch(BLOCKER, s);
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    CUPTI_OK(cuptiActivityFlushAll(0));
    const char *names[3] = {"gA__1000us", "gB__20000us", "gC__30000us"};
    CUpti_ActivityKernel10 k[3];
    unsigned long long sid = 0;
    CU_OK(cuStreamGetId(s, &sid));
    for (size_t i = 0; i < 3; i++) {
        const tc_rec *r = tc_kernel(names[i]);
        ck_assert_ptr_nonnull(r);
        k[i] = r->r.kernel;
        ck_assert_uint_eq(k[i].graphId, gid); /* the source graph's id */
        ck_assert_uint_eq(k[i].graphNodeId, seen.node_id[i]);
        ck_assert_uint_eq(k[i].streamId, sid); /* the launch stream, also for forked branches */
        ck_assert_uint_eq(k[i].correlationId, k[0].correlationId);
    }
    tc_rec m = {0};
    for (size_t i = 0; i < tc_total(); i++)
        if (tc_get(i).r.any.kind == CUPTI_ACTIVITY_KIND_MEMSET)
            m = tc_get(i);
    ck_assert_uint_eq(m.r.memset.graphNodeId, seen.node_id[3]);
    ck_assert_uint_eq(m.r.memset.correlationId, k[0].correlationId);
    /* Concurrent replay: B and C both start when A ends; the memset when
     * the longer, C, ends (4096 bytes at the default HBM rate take under
     * 1 us: only its start is checked). */
    ck_assert_uint_eq(k[1].start, k[0].end);
    ck_assert_uint_eq(k[2].start, k[0].end);
    ck_assert_uint_eq(k[0].end - k[0].start, 1000000);
    ck_assert_uint_eq(k[2].end - k[2].start, 30000000);
    ck_assert_uint_eq(m.r.memset.start, k[2].end);

    /* Disabled: a second instantiation clones silently. */
    CUPTI_OK(cuptiEnableCallback(0, sub, CUPTI_CB_DOMAIN_RESOURCE,
                                 CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED));
    CUgraphExec x2;
    CU_OK(cuGraphInstantiateWithFlags(&x2, g, 0));
    ck_assert_uint_eq(seen.n, 4);
    uint32_t xid2 = 0;
    CUPTI_OK(cuptiGetGraphExecId(x2, &xid2));
    ck_assert_uint_ne(xid2, xid);
    /* The domain switch enables it too. */
    CUPTI_OK(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RESOURCE));
    CUgraphExec x3;
    CUDA_GRAPH_INSTANTIATE_PARAMS p = {0};
    CU_OK(cuGraphInstantiateWithParams(&x3, g, &p));
    ck_assert_int_eq(p.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
    ck_assert_uint_eq(seen.n, 8);
    CUPTI_OK(cuptiUnsubscribe(sub));
}
END_TEST

START_TEST(graph_id_queries_refuse_bogus_handles)
{
    CUcontext ctx;
    tc_init_cuda(&ctx);
    CUpti_SubscriberHandle sub;
    CUPTI_OK(cuptiSubscribe(&sub, on_callback, &seen));
    int junk;
    uint64_t nid = 0;
    uint32_t id = 0;
    ck_assert_int_eq(cuptiGetGraphNodeId(NULL, &nid), CUPTI_ERROR_INVALID_PARAMETER);
    ck_assert_int_eq(cuptiGetGraphNodeId((CUgraphNode)(void *)&junk, &nid),
                     CUPTI_ERROR_INVALID_PARAMETER);
    ck_assert_int_eq(cuptiGetGraphId(NULL, &id), CUPTI_ERROR_INVALID_PARAMETER);
    ck_assert_int_eq(cuptiGetGraphId((CUgraph)(void *)&junk, &id), CUPTI_ERROR_INVALID_PARAMETER);
    ck_assert_int_eq(cuptiGetGraphExecId((CUgraphExec)(void *)&junk, &id),
                     CUPTI_ERROR_INVALID_PARAMETER);

    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    tc_launch("one", s);
    CUgraph g;
    CU_OK(cuStreamEndCapture(s, &g));
    CUgraphNode node;
    size_t n = 1;
    CU_OK(cuGraphGetNodes(g, &node, &n));
    ck_assert_int_eq(cuptiGetGraphNodeId(node, NULL), CUPTI_ERROR_INVALID_PARAMETER);
    ck_assert_int_eq(cuptiGetGraphId(g, NULL), CUPTI_ERROR_INVALID_PARAMETER);
    /* A node is not a graph, nor a graph a node. */
    ck_assert_int_eq(cuptiGetGraphId((CUgraph)(void *)node, &id), CUPTI_ERROR_INVALID_PARAMETER);
    ck_assert_int_eq(cuptiGetGraphNodeId((CUgraphNode)(void *)g, &nid),
                     CUPTI_ERROR_INVALID_PARAMETER);
    CUPTI_OK(cuptiGetGraphNodeId(node, &nid));
    CU_OK(cuGraphDestroy(g));
    ck_assert_int_eq(cuptiGetGraphNodeId(node, &nid), CUPTI_ERROR_INVALID_PARAMETER);
    ck_assert_int_eq(cuptiGetGraphId(g, &id), CUPTI_ERROR_INVALID_PARAMETER);

    /* Callback switches: only our subscriber, only real domains; other
     * callbacks are accepted and never fire. */
    int other;
    CUpti_SubscriberHandle bogus = (CUpti_SubscriberHandle)(void *)&other;
    ck_assert_int_eq(cuptiEnableCallback(1, bogus, CUPTI_CB_DOMAIN_RESOURCE,
                                         CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED),
                     CUPTI_ERROR_INVALID_PARAMETER);
    ck_assert_int_eq(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_INVALID, 0),
                     CUPTI_ERROR_INVALID_PARAMETER);
    ck_assert_int_eq(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_SIZE),
                     CUPTI_ERROR_INVALID_PARAMETER);
    CUPTI_OK(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, 1));
    CUPTI_OK(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_SYNCHRONIZE));
    tc_launch("two", s);
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_eq(seen.other, 0);
    CUPTI_OK(cuptiUnsubscribe(sub));
    ck_assert_int_eq(
        cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED),
        CUPTI_ERROR_INVALID_PARAMETER);
}
END_TEST

TCase *tc_graph_clones(void)
{
    TCase *tc = tcase_create("graphs");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, clone_callback_ids_name_the_replayed_records);
    tcase_add_test(tc, graph_id_queries_refuse_bogus_handles);
    return tc;
}
