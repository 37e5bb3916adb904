/*
 * fg_graph.h - CUDA graphs of the simulated driver, shared by stream capture
 * (fg_capture.c), graphs and their replay (fg_graph.c) and events
 * (fg_event.c).  Everything here is used with fg.lock held.
 *
 * A graph is an array of nodes in the order they were added (captured),
 * plus an edge list.  Every edge goes from an earlier node to a later one
 * (a captured node can only depend on nodes captured before it), and edges
 * are kept sorted by their target: the edges into node i are contiguous and
 * come after those into node i - 1.  Replay relies on both.
 */
#ifndef FG_GRAPH_H
#define FG_GRAPH_H

#include "fg_internal.h"

/* A CUgraphNode: a node of a graph, or a clone of one in an executable
 * graph.  Registered as FG_H_GRAPH_NODE. */
struct fg_node {
    fg_desc d;   /* what replaying the node does */
    uint64_t id; /* ((uint64_t)graph or exec id << 32) | (index + 1), as CUPTI's graphNodeId */
    uint32_t index;
};

typedef struct fg_edge {
    uint32_t from, to; /* node indices, from < to */
} fg_edge;

struct fg_graph {
    fg_node **nodes;
    size_t n, cap;
    fg_edge *edges;
    size_t nedges, capedges;
    bool capturing;
    unsigned long long capture_id; /* unique per capture (fg_next_id) */
    uint32_t id;                   /* CUPTI's graphId; same counter as executable graphs */
};

fg_graph *fg_graph_new(void);      /* NULL: out of memory */
fg_graph *fg_graph_get(CUgraph h); /* NULL unless a live graph */
uint32_t fg_graph_next_id(void);   /* ids of graphs and executable graphs */
/* Append a copy of d to g, depending on deps (distinct nodes of g).
 * Returns the new node, NULL when out of memory (g unchanged). */
fg_node *fg_graph_add_locked(fg_graph *g, const fg_desc *d, fg_node *const *deps, size_t ndeps);
/* Locked.  s (capturing) also waits for the nodes of add: its set becomes
 * the union, less the nodes that another member already depends on.
 * False when out of memory. */
bool fg_capture_join_locked(fg_stream *s, const fg_capdeps *add);
/* g is live and still in the capture that capture_id names (a destroyed
 * graph's memory may hold another graph by now). */
bool fg_capture_live(fg_graph *g, unsigned long long capture_id);
/* Record the nodes of an executable graph (its edges included) into the
 * capture of s, after s's dependency set; s's set becomes the nodes that
 * nothing depends on. */
CUresult fg_capture_exec_locked(fg_stream *s, fg_node *const *nodes, size_t n, const fg_edge *edges,
                                size_t nedges);

#endif
