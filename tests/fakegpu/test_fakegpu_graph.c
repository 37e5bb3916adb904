/*
 * test_fakegpu_graph.c - graphs of the simulated driver: the per-node
 * dependencies stream capture builds (cuGraphGetNodes, cuGraphGetEdges,
 * cuStreamGetCaptureInfo) and concurrent replay of independent branches.
 *
 * Tolerance.  Replay durations are read from events recorded behind
 * BLOCKER, so they are the scheduler's arithmetic: start = max(enqueue
 * time, ends of dependencies), end = start + the duration named by the
 * kernel.  With every launch enqueued while BLOCKER runs, the enqueue
 * times never matter and the sums are exact in integer nanoseconds; 1 us
 * (EXACT_MS) covers only the float milliseconds of cuEventElapsedTime.
 */
#include "test_fakegpu.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define EXACT_MS 0.001

/* The diamond A -> {B on s1, C on s2} -> D, captured with events on the
 * origin stream s0 as CUDA programs fork and join. */
typedef struct diamond {
    CUstream s0, s1, s2;
    CUgraph g;
} diamond;

static diamond capture_diamond(const char *a, const char *b, const char *c, const char *d)
{
    diamond x;
    CU_OK(cuStreamCreate(&x.s0, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&x.s1, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&x.s2, CU_STREAM_NON_BLOCKING));
    CUevent fork = tf_event(), jb = tf_event(), jc = tf_event();
    CU_OK(cuStreamBeginCapture(x.s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
    tf_launch(a, x.s0);
    CU_OK(cuEventRecord(fork, x.s0));
    CU_OK(cuStreamWaitEvent(x.s1, fork, 0));
    CU_OK(cuStreamWaitEvent(x.s2, fork, 0));
    tf_launch(b, x.s1);
    tf_launch(c, x.s2);
    CU_OK(cuEventRecord(jb, x.s1));
    CU_OK(cuEventRecord(jc, x.s2));
    CU_OK(cuStreamWaitEvent(x.s0, jb, 0));
    CU_OK(cuStreamWaitEvent(x.s0, jc, 0));
    tf_launch(d, x.s0);
    CU_OK(cuStreamEndCapture(x.s0, &x.g));
    return x;
}

/* The 4-argument cuGraphGetEdges of CUDA 10.0 to 12.2: cuda.h renames the
 * name to cuGraphGetEdges_v2 for programs built against CUDA 12.3+. */
typedef CUresult (*edges_v1_fn)(CUgraph, CUgraphNode *, CUgraphNode *, size_t *);

static CUresult get_edges(CUgraph g, CUgraphNode *from, CUgraphNode *to, size_t *n)
{
    void *fn = NULL;
    CU_OK(cuGetProcAddress_v2("cuGraphGetEdges", &fn, 12000, 0, NULL));
    return ((edges_v1_fn)(uintptr_t)fn)(g, from, to, n);
}

/* Whether from[i] -> to[i] is an edge of the n listed. */
static bool has_edge(const CUgraphNode *from, const CUgraphNode *to, size_t n, CUgraphNode f,
                     CUgraphNode t)
{
    for (size_t i = 0; i < n; i++)
        if (from[i] == f && to[i] == t)
            return true;
    return false;
}

/* ----------------------------------------------------------------- edges */

START_TEST(fork_join_capture_gives_per_node_edges)
{
    tf_setup();
    diamond x = capture_diamond("A", "B", "C", "D");
    size_t n = 0;
    CU_OK(cuGraphGetNodes(x.g, NULL, &n));
    ck_assert_uint_eq(n, 4);
    CUgraphNode nodes[6];
    memset(nodes, 0xff, sizeof nodes);
    n = 6; /* more room than nodes: the rest is NULLed */
    CU_OK(cuGraphGetNodes(x.g, nodes, &n));
    ck_assert_uint_eq(n, 4);
    ck_assert_ptr_null(nodes[4]);
    ck_assert_ptr_null(nodes[5]);
    CUgraphNode A = nodes[0], B = nodes[1], C = nodes[2], D = nodes[3]; /* capture order */

    size_t ne = 0;
    CU_OK(get_edges(x.g, NULL, NULL, &ne));
    ck_assert_uint_eq(ne, 4);
    CUgraphNode from[5], to[5];
    memset(from, 0xff, sizeof from);
    memset(to, 0xff, sizeof to);
    ne = 5;
    CU_OK(get_edges(x.g, from, to, &ne));
    ck_assert_uint_eq(ne, 4);
    ck_assert(has_edge(from, to, 4, A, B));
    ck_assert(has_edge(from, to, 4, A, C));
    ck_assert(has_edge(from, to, 4, B, D));
    ck_assert(has_edge(from, to, 4, C, D));
    ck_assert_ptr_null(from[4]);
    ck_assert_ptr_null(to[4]);

    /* A smaller array gets the first edges only. */
    CUgraphNode f2[2], t2[2];
    ne = 2;
    CU_OK(get_edges(x.g, f2, t2, &ne));
    ck_assert_uint_eq(ne, 2);
    ck_assert(f2[0] == from[0] && t2[0] == to[0] && f2[1] == from[1] && t2[1] == to[1]);

    /* The v2 entry point: the same edges, all with default (zeroed) data. */
    CUgraphEdgeData data[4];
    memset(data, 0xff, sizeof data);
    CUgraphNode f3[4], t3[4];
    ne = 4;
    CU_OK(cuGraphGetEdges_v2(x.g, f3, t3, data, &ne));
    ck_assert_uint_eq(ne, 4);
    for (size_t i = 0; i < 4; i++) {
        ck_assert(f3[i] == from[i] && t3[i] == to[i]);
        ck_assert_uint_eq(data[i].from_port, 0);
        ck_assert_uint_eq(data[i].to_port, 0);
        ck_assert_uint_eq(data[i].type, 0);
    }
    ne = 0;
    CU_OK(cuGraphGetEdges_v2(x.g, NULL, NULL, NULL, &ne));
    ck_assert_uint_eq(ne, 4);
    ck_assert_int_eq(get_edges(x.g, from, NULL, &ne), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(get_edges(x.g, from, to, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuGraphDestroy(x.g));
}
END_TEST

START_TEST(capture_info_reports_the_dependency_set)
{
    tf_setup();
    CUstream s0, s1;
    CU_OK(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CUevent fork = tf_event(), join = tf_event();
    CU_OK(cuStreamBeginCapture(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUstreamCaptureStatus st;
    CUgraph g = NULL;
    const CUgraphNode *deps = NULL;
    size_t nd = 99;
    CU_OK(cuStreamGetCaptureInfo(s0, &st, NULL, &g, &deps, NULL, &nd));
    ck_assert_uint_eq(nd, 0); /* empty at the origin when capture begins */
    tf_launch("A", s0);
    CU_OK(cuStreamGetCaptureInfo(s0, &st, NULL, NULL, &deps, NULL, &nd));
    ck_assert_uint_eq(nd, 1);
    CUgraphNode a = deps[0];
    CU_OK(cuEventRecord(fork, s0));
    CU_OK(cuStreamWaitEvent(s1, fork, 0)); /* fork: s1 starts after A */
    CU_OK(cuStreamGetCaptureInfo(s1, &st, NULL, NULL, &deps, NULL, &nd));
    ck_assert_uint_eq(nd, 1);
    ck_assert_ptr_eq(deps[0], a);
    tf_launch("B", s1);
    tf_launch("C", s0);
    CU_OK(cuEventRecord(join, s1));
    CU_OK(cuStreamWaitEvent(s0, join, 0)); /* join: s0 after B and C */
    const CUgraphEdgeData *ed = (const CUgraphEdgeData *)&ed;
    CU_OK(cuStreamGetCaptureInfo(s0, &st, NULL, NULL, &deps, &ed, &nd));
    ck_assert_uint_eq(nd, 2);
    ck_assert_ptr_null(ed); /* default edges only */
    CUgraphNode nodes[3];
    size_t n = 3;
    CU_OK(cuGraphGetNodes(g, nodes, &n));
    ck_assert_uint_eq(n, 3);
    ck_assert(deps[0] != deps[1]);
    for (size_t i = 0; i < 2; i++)
        ck_assert(deps[i] == nodes[1] || deps[i] == nodes[2]);
    /* Waiting on the same event twice adds nothing. */
    CU_OK(cuStreamWaitEvent(s0, join, 0));
    CU_OK(cuStreamGetCaptureInfo(s0, &st, NULL, NULL, &deps, NULL, &nd));
    ck_assert_uint_eq(nd, 2);
    CUgraph out;
    CU_OK(cuStreamEndCapture(s0, &out));
    ck_assert_ptr_eq(out, g);
}
END_TEST

START_TEST(graph_edges_entry_points_by_version)
{
    tf_setup();
    void *fn = NULL;
    CU_OK(cuGetProcAddress_v2("cuGraphGetEdges", &fn, 12000, 0, NULL));
    ck_assert_ptr_eq(fn, dlsym(RTLD_DEFAULT, "cuGraphGetEdges"));
    CU_OK(cuGetProcAddress_v2("cuGraphGetEdges", &fn, 12030, 0, NULL));
    ck_assert_ptr_eq(fn, dlsym(RTLD_DEFAULT, "cuGraphGetEdges_v2"));
    CU_OK(cuGetProcAddress_v2("cuGraphGetNodes", &fn, 10000, 0, NULL));
    ck_assert_ptr_eq(fn, dlsym(RTLD_DEFAULT, "cuGraphGetNodes"));
}
END_TEST

START_TEST(bogus_graph_and_node_handles_are_refused)
{
    tf_setup();
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    int junk;
    CUgraph bogus = (CUgraph)(void *)&junk;
    size_t n = 0;
    CUgraphNode a[1], b[1];
    ck_assert_int_eq(cuGraphGetNodes(bogus, NULL, &n), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuGraphGetNodes(NULL, NULL, &n), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(get_edges(bogus, NULL, NULL, &n), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuGraphGetEdges_v2(bogus, a, b, NULL, &n), CUDA_ERROR_INVALID_VALUE);
    /* A graph's node handle is not a graph, and a destroyed graph is gone. */
    CUgraph g;
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    tf_launch("A", s);
    CU_OK(cuStreamEndCapture(s, &g));
    n = 1;
    CU_OK(cuGraphGetNodes(g, a, &n));
    ck_assert_int_eq(cuGraphGetNodes((CUgraph)(void *)a[0], NULL, &n), CUDA_ERROR_INVALID_VALUE);
    CUgraphExec x;
    CU_OK(cuGraphInstantiateWithFlags(&x, g, 0));
    ck_assert_int_eq(cuGraphGetNodes((CUgraph)(void *)x, NULL, &n), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuGraphDestroy(g));
    ck_assert_int_eq(cuGraphGetNodes(g, NULL, &n), CUDA_ERROR_INVALID_VALUE);
    /* The executable graph does not depend on its source. */
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuGraphExecDestroy(x));
}
END_TEST

START_TEST(graph_launched_into_a_capture_keeps_its_edges)
{
    tf_setup();
    diamond x = capture_diamond("A", "B", "C", "D");
    CUgraphExec gx;
    CU_OK(cuGraphInstantiateWithFlags(&gx, x.g, 0));
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    tf_launch("before", s);
    CU_OK(cuGraphLaunch(gx, s));
    tf_launch("after", s);
    CUgraph g2;
    CU_OK(cuStreamEndCapture(s, &g2));
    CUgraphNode nodes[6], from[6], to[6];
    size_t n = 6, ne = 6;
    CU_OK(cuGraphGetNodes(g2, nodes, &n));
    ck_assert_uint_eq(n, 6); /* before, A, B, C, D, after */
    CU_OK(get_edges(g2, from, to, &ne));
    ck_assert_uint_eq(ne, 6);
    ck_assert(has_edge(from, to, ne, nodes[0], nodes[1]));
    ck_assert(has_edge(from, to, ne, nodes[1], nodes[2]));
    ck_assert(has_edge(from, to, ne, nodes[1], nodes[3]));
    ck_assert(has_edge(from, to, ne, nodes[2], nodes[4]));
    ck_assert(has_edge(from, to, ne, nodes[3], nodes[4]));
    ck_assert(has_edge(from, to, ne, nodes[4], nodes[5]));
}
END_TEST

TCase *tf_graph_edges(void)
{
    TCase *tc = tcase_create("graph-edges");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, fork_join_capture_gives_per_node_edges);
    tcase_add_test(tc, capture_info_reports_the_dependency_set);
    tcase_add_test(tc, graph_edges_entry_points_by_version);
    tcase_add_test(tc, bogus_graph_and_node_handles_are_refused);
    tcase_add_test(tc, graph_launched_into_a_capture_keeps_its_edges);
    return tc;
}

/* ---------------------------------------------------------------- replay */

START_TEST(replay_overlaps_independent_branches)
{
    tf_setup();
    diamond x = capture_diamond("A__1000us", "B__20000us", "C__30000us", "D__2000us");
    CUgraphExec gx;
    CU_OK(cuGraphInstantiateWithFlags(&gx, x.g, 0));
    tf_launch(BLOCKER, x.s0);
    CUevent e0 = tf_record(x.s0);
    CU_OK(cuGraphLaunch(gx, x.s0));
    CUevent e1 = tf_record(x.s0);
    CU_OK(cuGraphLaunch(gx, x.s0));
    CUevent e2 = tf_record(x.s0);
    /* A + max(B, C) + D = 1 + 30 + 2 ms; serial replay would be 53 ms. */
    ck_assert_double_eq_tol(tf_elapsed(e0, e1), 33.0, EXACT_MS);
    /* The second launch waits for all of the first. */
    ck_assert_double_eq_tol(tf_elapsed(e1, e2), 33.0, EXACT_MS);
}
END_TEST

START_TEST(work_after_a_graph_waits_for_every_node)
{
    tf_setup();
    /* Two independent nodes: long X on a forked stream, short Y (captured
     * last) on the origin, which joins X without a node after the join. */
    CUstream s0, s1;
    CU_OK(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CUevent fork = tf_event(), join = tf_event();
    CU_OK(cuStreamBeginCapture(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuEventRecord(fork, s0));
    CU_OK(cuStreamWaitEvent(s1, fork, 0));
    tf_launch("X__30000us", s1);
    CU_OK(cuEventRecord(join, s1));
    tf_launch("Y__1000us", s0);
    CU_OK(cuStreamWaitEvent(s0, join, 0));
    CUgraph g;
    CU_OK(cuStreamEndCapture(s0, &g));
    size_t ne = 1;
    CU_OK(get_edges(g, NULL, NULL, &ne));
    ck_assert_uint_eq(ne, 0);
    CUgraphExec gx;
    CU_OK(cuGraphInstantiateWithFlags(&gx, g, 0));
    tf_launch(BLOCKER, s0);
    CUevent e0 = tf_record(s0);
    CU_OK(cuGraphLaunch(gx, s0));
    CUevent e1 = tf_record(s0);
    tf_launch("Z__1000us", s0);
    CUevent e2 = tf_record(s0);
    ck_assert_double_eq_tol(tf_elapsed(e0, e1), 30.0, EXACT_MS); /* max(X, Y) */
    ck_assert_double_eq_tol(tf_elapsed(e1, e2), 1.0, EXACT_MS);  /* Z after X */
}
END_TEST

START_TEST(graph_on_a_blocking_stream_follows_the_legacy_stream)
{
    tf_setup();
    diamond x = capture_diamond("A__1000us", "B__20000us", "C__30000us", "D__2000us");
    CUgraphExec gx;
    CU_OK(cuGraphInstantiateWithFlags(&gx, x.g, 0));
    CUstream blocking;
    CU_OK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
    tf_launch(BLOCKER, 0); /* on the legacy stream */
    CUevent e0 = tf_record(0);
    CU_OK(cuGraphLaunch(gx, blocking)); /* every root waits for the blocker */
    CUevent e1 = tf_record(0);          /* and the legacy stream for every node */
    ck_assert_double_eq_tol(tf_elapsed(e0, e1), 33.0, EXACT_MS);
}
END_TEST

TCase *tf_graph_replay(void)
{
    TCase *tc = tcase_create("graph-replay");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, replay_overlaps_independent_branches);
    tcase_add_test(tc, work_after_a_graph_waits_for_every_node);
    tcase_add_test(tc, graph_on_a_blocking_stream_follows_the_legacy_stream);
    return tc;
}
