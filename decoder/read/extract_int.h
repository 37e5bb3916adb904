/*
 * What the two halves of the streaming extraction share (decoder/read/extract.c
 * gathers a file's records in one pass, extract_join.c joins and orders
 * them at the end): the gathering state and its element types.
 */
#ifndef CT_EXTRACT_INT_H
#define CT_EXTRACT_INT_H

#include <stdint.h>

#include "decoder/read/counters.h"
#include "decoder/read/facts.h"
#include "decoder/read/nccl_acct.h"
#include "decoder/util/keys.h"
#include "decoder/read/timeline.h"

struct ct_reader;

/* Folds one recorder "capture" mark (value "start" or "stop", raw time t)
 * or process metadata (mode, light_window_ms, light_period_ms) into p's
 * windows; ct_capture_finish closes a window left open and shifts the set
 * by the clock offset. 0 or -ENOMEM. */
int ct_capture_mark(struct ct_proc *p, const char *value, int64_t t);
void ct_capture_meta(struct ct_proc *p, const char *key, const char *value);
int ct_capture_finish(struct ct_proc *p, int64_t off);

/* The blocking CUDA calls of a process while its trace is read (the
 * extraction): each with its thread, and the threads that issued GPU work
 * (launch, copy, memset or NCCL calls). ct_calls_finish keeps the calls of
 * those threads (the ones that feed the GPU: a pinned-memory thread's
 * allocation does not hold the GPU back), moved by the clock offset, in
 * out, normalised; it frees c. ct_calls_note and ct_calls_launcher: 0 or
 * -ENOMEM. */
struct ct_calls {
    struct ct_call_span {
        int64_t s, e;
        uint32_t tid;
        int64_t key; /* a launch's kernel (string id; 0 a graph launch), -1 any other call */
    } * v;
    size_t n, cap;
    uint32_t *tids; /* the launching threads, unsorted, once each */
    size_t ntids, captids;
    int64_t *first; /* by key: the earliest start of a launch of it (INT64_MAX none) */
    size_t nfirst;
};
/* key: as ct_call_span's. */
int ct_calls_note(struct ct_calls *c, int64_t s, int64_t e, uint32_t tid, int64_t key);
/* The slow paths of the two below: c->first grown to hold key (new
 * entries INT64_MAX), tid looked up or added. 0 or -ENOMEM. */
int ct_calls_first_grow(struct ct_calls *c, size_t key);
int ct_calls_launcher_add(struct ct_calls *c, uint32_t tid);
/* Inline, as the two below: every launch passes here. */
static inline int ct_calls_launcher(struct ct_calls *c, uint32_t tid)
{
    /* the last thread noted is nearly always it (ct_calls_launcher_add
     * moves a thread found to the end) */
    if (c->ntids && c->tids[c->ntids - 1] == tid)
        return 0;
    return ct_calls_launcher_add(c, tid);
}
/* Every launch of kernel key (>= 0) starting at s, for ct_calls_finish's
 * first-launch rule; in any order. */
static inline int ct_calls_launch(struct ct_calls *c, int64_t key, int64_t s)
{
    if (key < 0)
        return 0;
    if ((size_t)key >= c->nfirst && ct_calls_first_grow(c, (size_t)key))
        return -ENOMEM;
    if (s < c->first[key])
        c->first[key] = s;
    return 0;
}
int ct_calls_finish(struct ct_calls *c, struct ct_ivset *out, int64_t off);
void ct_calls_free(struct ct_calls *c);

#define NONE      UINT64_MAX
#define SYNTHETIC UINT32_MAX /* provisional name of an op made from an NCCL record */

/* A host span on one thread (raw times). */
struct span {
    int64_t s, e;
    uint32_t tid;
};

/* Per NCCL op, for the GPU-time fallbacks (tracefile.h, ct_trace_nccl_gpu):
 * its group, stream and thread. */
struct nccl_fb {
    uint64_t group;
    uint32_t stream, tid;
};

/* A launch of an NCCL kernel, or a device-to-device or peer copy (copy
 * 1: what a copy-engine collective enqueues): the call's span, correlation
 * id and stream. */
struct nccl_launch {
    struct span sp;
    uint64_t corr;
    uint32_t stream;
    uint8_t copy;
};

struct event_call {
    uint64_t event;
    int64_t t; /* the call's raw host start */
    uint32_t stream;
};

struct ct_extraction {
    struct ct_proc *p;
    struct ct_reader *rd;
    const char *step;
    uint64_t ord;         /* records seen so far: file order */
    int presized;         /* the large arrays were sized for the whole file */
    struct ct_vec ops;    /* struct ct_gpu_op, raw times; name = provisional index */
    struct ct_vec gcorr;  /* kv (corr, op index or NONE) of every GPU record */
    struct ct_vec gsrc;   /* uint8 source (enum ct_gpu_source) of each op a GPU record made */
    struct ct_vec calls;  /* kv (corr, raw host start) of every API record */
    struct ct_vec timed;  /* kv (corr, stream) of launches/copies/memsets that want a GPU record */
    struct ct_vec graphs; /* uint64 corr of graph launches: their GPU ops are replays */
    struct ct_vec nccl;   /* struct ct_nccl_call, raw times; stays in file order until the end */
    struct ct_vec nsynth; /* op index made from each NCCL op's own interval, or NONE */
    struct ct_vec nord;   /* kv (raw host start, file order) of each NCCL op */
    struct ct_vec nfb;    /* struct nccl_fb of each NCCL op: what the fallbacks need */
    struct ct_vec gend;   /* kv (corr, index into gendv) of ncclGroupEnd API records */
    struct ct_vec gendv;  /* struct span of each ncclGroupEnd record */
    struct ct_vec nkl;    /* struct nccl_launch: launches of ncclDevKernel_* kernels, and
                           * device-to-device and peer copies */
    uint8_t *kcls;        /* per kernel string id: 0 unknown, 1 not NCCL, 2 NCCL */
    size_t kclsn;
    uint8_t *iocls; /* per I/O op string id: 0 unknown, else 16 | ct_io_op_class */
    size_t iocln;
    uint64_t gend_sid;      /* string id of "ncclGroupEnd", 0 until seen */
    struct ct_vec evr;      /* struct event_call of each cuEventRecord*, raw times */
    struct ct_vec evw;      /* struct event_call of each cuStreamWaitEvent* */
    struct ct_vec evs;      /* struct event_call of each host sync: event 0 but for an event's
                             * sync, stream 0 for one that waits for every stream */
    uint64_t wait_sid[2];   /* string ids known to name a wait (1 + sid), a record */
    struct ct_vec steps;    /* struct ct_range, raw times */
    struct ct_vec sord;     /* file order of each step */
    struct ct_vec launches; /* int64 raw host starts */
    struct ct_calls bcalls; /* blocking CUDA calls (raw times) and the launching threads */
    struct ct_vec clock;    /* int64 realtime - monotonic of each CLOCK record */
    uint32_t *name_map;     /* trace string id -> provisional name index + 1 */
    size_t name_mapn;
    struct ct_vec name_sid; /* uint32 trace string id of each provisional name */
    uint64_t host_sid, ppid_sid;
    int have_host, have_ppid;
    struct ct_hcollect health;     /* counters: p->health at the end */
    struct ct_nacct_collect nacct; /* NCCL plugin records (format v4): p->nacct at the end */
    struct ct_facts_collect facts; /* metadata and copies: p->facts at the end */
    struct ct_vec gedges;          /* struct ct_gedge of the graphs' edge records */
    /* the latest GPU op of each recording thread, which a graph node record
     * right after it names (CT_SCOPE_GRAPH_NODE); a few threads write GPU
     * records (CUPTI's, a flushing one, the events poller) */
    struct {
        uint32_t tid;
        uint64_t op;
        int64_t s;
    } lastg[8];
    unsigned nlastg;
};

/* extract_join.c: the joins by correlation id, the NCCL GPU-time fallbacks
 * and the final ordering into x->p. 0 or -ENOMEM. */
int ct_extract_finish(struct ct_extraction *x);

/* extract_nccl.c, for the join (all key arrays sorted by correlation id):
 * the GPU interval standing for NCCL op i without a GPU record of its own
 * (its group's record, or the NCCL kernel launched inside its call), or
 * NONE; a copy-engine collective's copies made into one interval standing
 * for op i, or NONE; op i linked to interval o (copied when o is already
 * another op's), 0 or -ENOMEM; the kernels and copies NCCL made inside an
 * op's call linked to it for their class (nested), 0 or -ENOMEM; the
 * groups' intervals no member took, likewise. */
uint64_t ct_nccl_fallback(struct ct_extraction *x, size_t i);
uint64_t ct_nccl_copies(struct ct_extraction *x, size_t i);
int ct_nccl_link(struct ct_extraction *x, uint64_t o, size_t i);
int ct_nccl_link_nested(struct ct_extraction *x);
void ct_nccl_link_groups(struct ct_extraction *x);

#endif
