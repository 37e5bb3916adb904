/*
 * Job assembly: processes fold into ranks (a process without rank metadata
 * joins the rank of its parent process on the same host: DataLoader workers,
 * checkpoint writers), communication ops get their class (rule in
 * timeline.h), clocks are aligned, interval sets are built.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/read/clock.h"
#include "decoder/read/counters.h"
#include "decoder/read/facts.h"
#include "decoder/read/hta.h"
#include "decoder/read/nccl_acct.h"
#include "decoder/read/spill.h"
#include "decoder/read/timeline.h"
#include "decoder/read/devices.h"
#include "decoder/read/job.h"
#include "decoder/read/life.h"

void ct_proc_free(struct ct_proc *p)
{
    free(p->path);
    free(p->host);
    free(p->ops);
    free(p->nccl);
    free(p->launches);
    ct_ivset_free(&p->sync);
    ct_ivset_free(&p->cuda_call);
    ct_ivset_free(&p->data_wait);
    ct_ivset_free(&p->file_read);
    ct_ivset_free(&p->htod);
    ct_ivset_free(&p->ckpt);
    ct_ivset_free(&p->capture);
    free(p->sdev);
    free(p->steps);
    for (size_t i = 0; i < p->nnames; i++)
        free(p->names[i]);
    free(p->names);
    if (p->reader_free)
        p->reader_free(p->reader_data);
    ct_hta_free(p->hta);
    ct_life_free(&p->life);
    ct_hproc_free(p->health);
    ct_nacct_free(p->nacct);
    ct_facts_free(p->facts);
    free(p->spill);
    free(p->edges);
    free(p->gedges);
    free(p->syncs);
    free(p->nonblock);
    memset(p, 0, sizeof(*p));
}

/* The rank of process i: its own, else its parent's (up to 8 levels). */
/* The processes by (pid, host, index): a process's parent is found by a
 * search, not a pass over every process (jobs of 10 000 ranks and their
 * loader workers). */
struct pid_of {
    uint32_t pid;
    const char *host;
    size_t i;
};

static int cmp_pid_of(const void *a, const void *b)
{
    const struct pid_of *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    int c = strcmp(x->host, y->host);
    return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* The parent of process i (pid ppid on its host, not i itself): the first
 * in input order, or the last when `last`; -1 when none. */
static int64_t parent_of(const struct pid_of *v, size_t n, const struct ct_proc *ps, size_t i,
                         int last)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].pid < ps[i].ppid ||
            (v[mid].pid == ps[i].ppid && strcmp(v[mid].host, ps[i].host) < 0))
            lo = mid + 1;
        else
            hi = mid;
    }
    int64_t found = -1;
    for (; lo < n && v[lo].pid == ps[i].ppid && !strcmp(v[lo].host, ps[i].host); lo++)
        if (v[lo].i != i) {
            found = (int64_t)v[lo].i;
            if (!last)
                break;
        }
    return found;
}

static int64_t resolve_rank(const struct pid_of *v, size_t n, const struct ct_proc *ps, size_t i)
{
    for (int depth = 0; depth < 8; depth++) {
        if (ps[i].rank >= 0)
            return ps[i].rank;
        int64_t k = parent_of(v, n, ps, i, 0);
        if (k < 0)
            return -1;
        i = (size_t)k;
    }
    return -1;
}

static void cov_add(struct ct_coverage *a, const struct ct_coverage *b)
{
    a->gpu_cupti += b->gpu_cupti;
    a->gpu_events += b->gpu_events;
    a->gpu_events_blocking += b->gpu_events_blocking;
    a->gpu_plugin += b->gpu_plugin;
    a->gpu_nccl_record += b->gpu_nccl_record;
    a->dropped += b->dropped;
    a->untimed += b->untimed;
    a->processes += b->processes;
    a->truncated += b->truncated;
    a->damaged += b->damaged;
    a->superseded += b->superseded;
    a->bytes += b->bytes;
}

static int cmp_gop(const void *a, const void *b)
{
    const struct ct_gpu_op *x = a, *y = b;
    if (x->s != y->s)
        return x->s < y->s ? -1 : 1;
    return (x->e > y->e) - (x->e < y->e);
}

/* The rank's ops from its processes' (names and NCCL indexes made the
 * rank's), sorted by start then end. 0 or -ENOMEM. */
static int merge_ops(struct ct_rank *r)
{
    size_t nops = 0;
    for (size_t k = 0; k < r->nprocs; k++)
        nops += r->procs[k]->nops;
    /* A rank of one process takes that process's ops as they are (the
     * offsets below are 0): no second copy of the largest array. */
    struct ct_proc *only = r->nprocs == 1 && r->procs[0]->ops ? r->procs[0] : NULL;
    r->nops = 0;
    r->ops = only ? only->ops : malloc((nops ? nops : 1) * sizeof(*r->ops));
    if (!r->ops)
        return -ENOMEM;
    if (only) {
        only->ops = NULL;
        only->nops = 0;
        r->nops = nops;
    }
    size_t nnames = 0;
    int32_t nnccl = 0;
    for (size_t k = 0; k < r->nprocs; k++) {
        const struct ct_proc *p = r->procs[k];
        for (size_t i = 0; i < p->nops; i++) {
            struct ct_gpu_op g = p->ops[i];
            g.name += (uint32_t)nnames;
            if (g.nccl >= 0)
                g.nccl += nnccl;
            r->ops[r->nops++] = g;
        }
        nnames += p->nnames;
        nnccl += (int32_t)p->nnccl;
    }
    /* one process's ops arrive sorted by start (every reader leaves them so): then
     * skip the sort, which costs as much as all the extraction */
    size_t run = 1, first = r->nops; /* the first op before its equal start's by end */
    for (; run < r->nops && r->ops[run - 1].s <= r->ops[run].s; run++)
        if (r->ops[run - 1].s == r->ops[run].s && r->ops[run - 1].e > r->ops[run].e &&
            first == r->nops)
            first = run;
    if (run < r->nops) {
        qsort(r->ops, r->nops, sizeof(*r->ops), cmp_gop);
    } else if (first < r->nops) {
        /* sorted by start: order each run of equal starts by end, stably
         * as glibc's merge sort would (insertion sort: such runs are short;
         * a long one, from odd input, goes to qsort as before), from the
         * run of the first out of order (those before are in order) */
        while (first > 0 && r->ops[first - 1].s == r->ops[first].s)
            first--;
        for (size_t i = first, j; i < r->nops; i = j) {
            for (j = i + 1; j < r->nops && r->ops[j].s == r->ops[i].s;)
                j++;
            if (j - i > 64) {
                qsort(r->ops + i, j - i, sizeof(*r->ops), cmp_gop);
                continue;
            }
            for (size_t k = i + 1; k < j; k++) {
                struct ct_gpu_op x = r->ops[k];
                size_t m = k;
                while (m > i && r->ops[m - 1].e > x.e) {
                    r->ops[m] = r->ops[m - 1];
                    m--;
                }
                r->ops[m] = x;
            }
        }
    }
    return 0;
}

/* The rank's NCCL ops, names and coverage from its processes'; its ops
 * too unless it is spilled (then only their count: ct_rank_open builds
 * them, and a single process's count moves to the rank as its ops would). */
static int merge_rank(struct ct_rank *r)
{
    size_t nops = 0, nnccl = 0, nnames = 0;
    for (size_t k = 0; k < r->nprocs; k++) {
        nops += r->procs[k]->nops;
        nnccl += r->procs[k]->nnccl;
        nnames += r->procs[k]->nnames;
        cov_add(&r->cov, &r->procs[k]->cov);
        r->spilled |= r->procs[k]->spill != NULL;
    }
    /* A rank of one process shares that process's NCCL ops (one array,
     * clock refinement moves both views): a large job's second largest */
    struct ct_proc *one = r->nprocs == 1 && r->procs[0]->nccl ? r->procs[0] : NULL;
    r->nccl = one ? one->nccl : malloc((nnccl ? nnccl : 1) * sizeof(*r->nccl));
    r->names = malloc((nnames ? nnames : 1) * sizeof(*r->names));
    if (!r->nccl || !r->names)
        return -ENOMEM;
    for (size_t k = 0; k < r->nprocs; k++) {
        const struct ct_proc *p = r->procs[k];
        if (p->nnccl && !one) /* p->nccl may be NULL then: memcpy's arguments must not be */
            memcpy(r->nccl + r->nnccl, p->nccl, p->nnccl * sizeof(*p->nccl));
        r->nnccl += p->nnccl;
        if (p->nnames)
            memcpy(r->names + r->nnames, p->names, p->nnames * sizeof(*p->names));
        r->nnames += p->nnames;
    }
    if (!r->spilled)
        return merge_ops(r);
    r->nops = nops;
    if (r->nprocs == 1)
        r->procs[0]->nops = 0;
    return 0;
}

/* ---- communicator membership and classes ---- */

struct comm_info {
    uint64_t comm;
    int has_p2p;
    int *members; /* global ranks, sorted, unique */
    size_t n, cap;
};

static struct comm_info *comm_get(struct comm_info **v, size_t *n, size_t *cap, uint64_t comm)
{
    for (size_t i = 0; i < *n; i++)
        if ((*v)[i].comm == comm)
            return &(*v)[i];
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        struct comm_info *q = realloc(*v, c * sizeof(*q));
        if (!q)
            return NULL;
        *v = q;
        *cap = c;
    }
    struct comm_info *ci = &(*v)[(*n)++];
    memset(ci, 0, sizeof(*ci));
    ci->comm = comm;
    return ci;
}

static int comm_add_member(struct comm_info *c, int rank)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->members[i] == rank)
            return 0;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 8;
        int *m = realloc(c->members, cap * sizeof(*m));
        if (!m)
            return -ENOMEM;
        c->members = m;
        c->cap = cap;
    }
    size_t i = c->n++;
    while (i > 0 && c->members[i - 1] > rank) {
        c->members[i] = c->members[i - 1];
        i--;
    }
    c->members[i] = rank;
    return 0;
}

static int consecutive(const struct comm_info *c)
{
    for (size_t i = 1; i < c->n; i++)
        if (c->members[i] != c->members[i - 1] + 1)
            return 0;
    return 1;
}

static int is_dp_op(int op)
{
    return op == CT_NCCL_OP_ALLREDUCE || op == CT_NCCL_OP_REDUCESCATTER ||
           op == CT_NCCL_OP_ALLGATHER;
}

/* Each GPU op's class: its NCCL op's, else that of the op its kernel's
 * name says (rules 1, 2 and 5 of timeline.h; a kernel the communication
 * table names, decoder/util/comm_kernels.h, whichever reader left it:
 * looked up once per name), else as extracted. by_name: op + 1 by name
 * index (0: not looked up), or NULL; names: 0 for HTA-compatible input,
 * which keeps HTA's classes (decoder/read/hta.h). Applied by build_sets as
 * it puts each op in its sets: one walk of the ops for both. */
static inline void class_op(const struct ct_rank *rk, struct ct_gpu_op *g, uint8_t *by_name,
                            int names)
{
    if (names && !g->op && g->nccl < 0 && g->type == CT_GPU_KERNEL && g->name < rk->nnames) {
        if (!by_name || !by_name[g->name]) {
            int op = ct_nccl_op_from_kernel(rk->names[g->name]);
            if (by_name)
                by_name[g->name] = (uint8_t)(op + 1);
            g->op = (uint8_t)op;
        } else {
            g->op = (uint8_t)(by_name[g->name] - 1);
        }
    }
    if (g->nccl >= 0)
        g->cls = rk->nccl[g->nccl].cls;
    else if (g->op) /* none (0, a compute kernel's): as extracted */
        g->cls = g->op == CT_NCCL_OP_SEND || g->op == CT_NCCL_OP_RECV ? CT_CL_PP
                 : is_dp_op(g->op)                                    ? CT_CL_DP
                                                                      : CT_CL_OTHER;
}

static int classify(struct ct_job *job)
{
    struct comm_info *cs = NULL;
    size_t nc = 0, capc = 0;
    int rc = 0;
    for (size_t r = 0; r < job->nranks && !rc; r++) {
        struct comm_info *last = NULL;
        for (size_t i = 0; i < job->ranks[r].nnccl && !rc; i++) {
            const struct ct_nccl_call *o = &job->ranks[r].nccl[i];
            if (!last || last->comm != o->comm)
                last = comm_get(&cs, &nc, &capc, o->comm);
            if (!last) {
                rc = -ENOMEM;
                break;
            }
            if (o->op == CT_NCCL_OP_SEND || o->op == CT_NCCL_OP_RECV)
                last->has_p2p = 1;
            rc = comm_add_member(last, job->ranks[r].rank);
        }
    }
    for (size_t r = 0; r < job->nranks && !rc; r++) {
        struct ct_rank *rk = &job->ranks[r];
        int strided = 0;
        for (size_t i = 0; i < rk->nnccl; i++) {
            const struct comm_info *c = comm_get(&cs, &nc, &capc, rk->nccl[i].comm);
            if (c && is_dp_op(rk->nccl[i].op) && !c->has_p2p && !consecutive(c))
                strided = 1;
        }
        for (size_t i = 0; i < rk->nnccl; i++) {
            struct ct_nccl_call *o = &rk->nccl[i];
            const struct comm_info *c = comm_get(&cs, &nc, &capc, o->comm);
            if (o->op == CT_NCCL_OP_SEND || o->op == CT_NCCL_OP_RECV)
                o->cls = CT_CL_PP;
            else if (!is_dp_op(o->op) || !c || c->has_p2p)
                o->cls = CT_CL_OTHER;
            else if (consecutive(c) && c->n < job->nranks && strided)
                o->cls = CT_CL_TP;
            else
                o->cls = CT_CL_DP;
        }
    }
    for (size_t i = 0; i < nc; i++)
        free(cs[i].members);
    free(cs);
    return rc;
}

/* Op g into its class set, the GPU set and, for communication, the
 * communication set: merged into their last intervals when the ops come in
 * start order. 0 or -ENOMEM. */
static inline int add_op(struct ct_rank *r, const struct ct_gpu_op *g, int sorted)
{
    int comm = CT_CL_IS_COMM(g->cls);
    if (sorted)
        return ct_ivset_put(&r->cls[g->cls], g->s, g->e) || ct_ivset_put(&r->gpu, g->s, g->e) ||
                       (comm && ct_ivset_put(&r->comm, g->s, g->e))
                   ? -ENOMEM
                   : 0;
    return ct_ivset_add(&r->cls[g->cls], g->s, g->e) || ct_ivset_add(&r->gpu, g->s, g->e) ||
                   (comm && ct_ivset_add(&r->comm, g->s, g->e))
               ? -ENOMEM
               : 0;
}

/* The ops' classes (class_op), their count with a known launch, and the
 * class sets, all GPU busy time and communication's (the unions of the
 * class sets). With the ops in start order (as merge_rank leaves them) one
 * pass merging each op into the last interval of its sets builds them
 * normalised; from an op out of that order on, the rest are added and the
 * sets normalised at the end (sort, then merge: the same sets). */
static int build_sets(struct ct_rank *r)
{
    uint8_t *by_name = r->nnames ? calloc(r->nnames, 1) : NULL;
    int names = !(r->nprocs && r->procs[0]->hta), rc = 0;
    size_t i = 0, launched = 0;
    for (; i < r->nops && !rc; i++) {
        struct ct_gpu_op *g = &r->ops[i];
        if (i && g->s < g[-1].s)
            break;
        class_op(r, g, by_name, names);
        launched += g->launch != INT64_MIN;
        rc = add_op(r, g, 1);
    }
    int sorted = i == r->nops;
    for (; i < r->nops && !rc; i++) {
        class_op(r, &r->ops[i], by_name, names);
        launched += r->ops[i].launch != INT64_MIN;
        rc = add_op(r, &r->ops[i], 0);
    }
    r->nlaunched = launched;
    free(by_name);
    if (!sorted) {
        for (int c = 0; c < CT_CL_COUNT; c++)
            ct_ivset_normalize(&r->cls[c]);
        ct_ivset_normalize(&r->gpu);
        ct_ivset_normalize(&r->comm);
    }
    return rc;
}

/* Whether a process did GPU work of any kind: launches, GPU ops, NCCL. */
/* r->gcover from r->cover: per window, the GPU span of the ops launched in
 * it (an op without a known launch by its GPU start). */
static int gpu_cover(struct ct_rank *r)
{
    const struct ct_ivset *c = r->cover;
    if (r->gcut.n && (!c || !c->n)) { /* recorded throughout: its span, less the cuts */
        struct ct_ivset all = {0};
        int rc = r->gpu.n ? ct_ivset_add(&all, r->gpu.v[0].s, r->gpu.v[r->gpu.n - 1].e) : 0;
        if (!rc)
            rc = ct_ivset_subtract(&all, &r->gcut, &r->gcover);
        ct_ivset_free(&all);
        return rc;
    }
    if (!c || !c->n)
        return 0;
    struct ct_iv *span = malloc(c->n * sizeof(*span));
    if (!span)
        return -ENOMEM;
    for (size_t w = 0; w < c->n; w++)
        span[w] = (struct ct_iv){INT64_MAX, INT64_MIN};
    for (size_t i = 0; i < r->nops; i++) {
        const struct ct_gpu_op *g = &r->ops[i];
        long w = ct_ivset_find(c, g->launch != INT64_MIN ? g->launch : g->s);
        if (w < 0)
            continue;
        struct ct_iv *s = &span[w];
        if (g->s < s->s)
            s->s = g->s;
        if (g->e > s->e)
            s->e = g->e;
    }
    int rc = 0;
    for (size_t w = 0; w < c->n && !rc; w++)
        rc = ct_ivset_add(&r->gcover, span[w].s, span[w].e);
    free(span);
    ct_ivset_normalize(&r->gcover);
    if (!rc && r->gcut.n) {
        struct ct_ivset out = {0};
        rc = ct_ivset_subtract(&r->gcover, &r->gcut, &out);
        ct_ivset_free(&r->gcover);
        r->gcover = out;
    }
    return rc;
}

/* r->gcut and r->hcut from its salvaged processes' cuts (timeline.h): each
 * runs to the first GPU start (launch) of another process of the rank
 * after it, else to the open end. */
static int undelivered_cuts(struct ct_rank *r)
{
    int rc = 0;
    for (size_t k = 0; k < r->nprocs && !rc; k++) {
        const struct ct_proc *p = r->procs[k];
        if (!p->undelivered)
            continue;
        int64_t ge = CT_OPEN_END, he = CT_OPEN_END;
        for (size_t j = 0; j < r->nprocs; j++) {
            const struct ct_proc *q = r->procs[j];
            if (j == k)
                continue;
            if (q->gpu_lo != INT64_MAX && q->gpu_lo > p->gpu_cut && q->gpu_lo < ge)
                ge = q->gpu_lo;
            if (q->launch_lo != INT64_MAX && q->launch_lo > p->host_cut && q->launch_lo < he)
                he = q->launch_lo;
        }
        r->undelivered += p->undelivered;
        rc = ct_ivset_add(&r->gcut, p->gpu_cut, ge);
        if (!rc)
            rc = ct_ivset_add(&r->hcut, p->host_cut, he);
    }
    ct_ivset_normalize(&r->gcut);
    ct_ivset_normalize(&r->hcut);
    return rc;
}

static int has_gpu_work(const struct ct_proc *p)
{
    return p->nops || p->nnccl || p->nlaunches;
}

struct rank_of {
    int64_t rank;
    size_t i; /* the process's index */
};

static int cmp_rank_of(const void *a, const void *b)
{
    const struct rank_of *x = a, *y = b;
    if (x->rank != y->rank)
        return (x->rank > y->rank) - (x->rank < y->rank);
    return (x->i > y->i) - (x->i < y->i);
}

int ct_job_build(struct ct_job *job, struct ct_proc *procs, size_t nprocs)
{
    memset(job, 0, sizeof(*job));
    int src = ct_split_devices(&procs, &nprocs); /* a device is a rank */
    job->procs = procs;
    job->nprocs = nprocs;
    if (src)
        return src;
    for (size_t i = 0; i < nprocs; i++)
        if (!procs[i].spill) /* a spilled process was settled before its spill */
            ct_proc_settle(&procs[i]);
    int64_t *rk = malloc((nprocs ? nprocs : 1) * sizeof(*rk));
    struct pid_of *pids = malloc((nprocs ? nprocs : 1) * sizeof(*pids));
    job->ranks = calloc(nprocs ? nprocs : 1, sizeof(*job->ranks));
    if (!rk || !pids || !job->ranks) {
        free(rk);
        free(pids);
        return -ENOMEM;
    }
    for (size_t i = 0; i < nprocs; i++)
        pids[i] = (struct pid_of){procs[i].pid, procs[i].host, i};
    if (nprocs)
        qsort(pids, nprocs, sizeof(*pids), cmp_pid_of);
    int64_t maxrank = -1;
    int gpu_job = 0;
    for (size_t i = 0; i < nprocs; i++) {
        rk[i] = resolve_rank(pids, nprocs, procs, i);
        if (rk[i] > maxrank)
            maxrank = rk[i];
        gpu_job |= has_gpu_work(&procs[i]);
    }
    /* INT64_MIN marks a host process; a job where no process has GPU work
     * (host-only traces) keeps every process a rank, as it always did */
    for (size_t i = 0; i < nprocs && gpu_job; i++)
        if (rk[i] < 0 && !has_gpu_work(&procs[i])) {
            if (!job->hosts && !(job->hosts = malloc(nprocs * sizeof(*job->hosts)))) {
                free(rk);
                free(pids);
                return -ENOMEM;
            }
            job->hosts[job->nhosts++] = &procs[i];
            rk[i] = INT64_MIN;
        }
    /* a process with no rank and no ranked parent is a rank of its own */
    for (size_t i = 0; i < nprocs; i++)
        if (rk[i] < 0 && rk[i] != INT64_MIN) {
            int64_t parent = parent_of(pids, nprocs, procs, i, 1);
            rk[i] = parent >= 0 && rk[parent] >= 0 ? rk[parent] : ++maxrank;
        }
    free(pids);
    /* the processes by (rank, input order): each rank's group at once, so
     * 10 000 ranks cost a sort, not a search per process and an array of
     * every process per rank */
    struct rank_of *by = malloc((nprocs ? nprocs : 1) * sizeof(*by));
    if (!by) {
        free(rk);
        return -ENOMEM;
    }
    size_t nby = 0;
    for (size_t i = 0; i < nprocs; i++)
        if (rk[i] != INT64_MIN) /* not a host process */
            by[nby++] = (struct rank_of){rk[i], i};
    free(rk);
    if (nby)
        qsort(by, nby, sizeof(*by), cmp_rank_of);
    int rc = 0;
    for (size_t a = 0, b; a < nby && !rc; a = b) {
        for (b = a; b < nby && by[b].rank == by[a].rank; b++)
            ;
        struct ct_rank *R = &job->ranks[job->nranks++];
        R->rank = (int)by[a].rank;
        R->procs = malloc((b - a) * sizeof(*R->procs));
        if (!R->procs) {
            rc = -ENOMEM;
            break;
        }
        for (size_t k = a; k < b; k++) {
            struct ct_proc *p = &procs[by[k].i];
            R->procs[R->nprocs++] = p;
            /* the process driving the GPU comes first */
            if (R->procs[0]->nops < p->nops) {
                R->procs[R->nprocs - 1] = R->procs[0];
                R->procs[0] = p;
            }
        }
    }
    free(by);
    if (rc)
        return rc;
    for (size_t r = 0; r < job->nranks && !rc; r++) {
        job->ranks[r].host = job->ranks[r].procs[0]->host;
        if (job->ranks[r].procs[0]->windowed)
            job->ranks[r].cover = &job->ranks[r].procs[0]->capture;
        rc = merge_rank(&job->ranks[r]);
    }
    if (!rc)
        rc = classify(job);
    if (!rc)
        rc = ct_clock_refine(job);
    job->t0 = INT64_MAX;
    for (size_t r = 0; r < job->nranks && !rc; r++) {
        struct ct_rank *R = &job->ranks[r];
        rc = undelivered_cuts(R);
        if (rc)
            break;
        if (R->spilled) { /* the GPU set's first start is its earliest busy op's */
            for (size_t k = 0; k < R->nprocs; k++)
                if (R->procs[k]->busy_lo < job->t0)
                    job->t0 = R->procs[k]->busy_lo;
            continue;
        }
        rc = build_sets(R);
        if (!rc)
            rc = gpu_cover(R);
        R->gcover_built = 1;
        if (R->gpu.n && R->gpu.v[0].s < job->t0)
            job->t0 = R->gpu.v[0].s;
    }
    if (job->t0 == INT64_MAX)
        job->t0 = 0;
    return rc;
}

int ct_rank_open(struct ct_rank *r)
{
    if (!r->spilled || r->opens++)
        return 0;
    int rc = 0;
    for (size_t k = 0; k < r->nprocs && !rc; k++) {
        struct ct_proc *p = r->procs[k];
        if (p->spill)
            rc = ct_proc_unspill(p, &p->ops, &p->nops, &p->launches, &p->nlaunches);
    }
    if (!rc)
        rc = merge_ops(r);
    if (!rc) {
        ct_clock_shift_ops(r, r->skew_ns);
        rc = build_sets(r);
    }
    if (!rc && !r->gcover_built) {
        rc = gpu_cover(r);
        r->gcover_built = !rc;
    }
    if (rc) {
        r->opens = 1;
        ct_rank_close(r);
    }
    return rc;
}

void ct_rank_close(struct ct_rank *r)
{
    if (!r->spilled || !r->opens || --r->opens)
        return;
    free(r->ops);
    r->ops = NULL;
    for (size_t k = 0; k < r->nprocs; k++) {
        struct ct_proc *p = r->procs[k];
        free(p->ops);
        free(p->launches);
        p->ops = NULL;
        p->launches = NULL;
    }
    for (int c = 0; c < CT_CL_COUNT; c++)
        ct_ivset_free(&r->cls[c]);
    ct_ivset_free(&r->comm);
    ct_ivset_free(&r->gpu);
}

void ct_job_free(struct ct_job *job)
{
    for (size_t r = 0; r < job->nranks; r++) {
        struct ct_rank *R = &job->ranks[r];
        if (!(R->nprocs == 1 && R->nccl == R->procs[0]->nccl)) /* else the process's */
            free(R->nccl);
        free(R->procs);
        free(R->ops);
        free(R->names);
        for (int c = 0; c < CT_CL_COUNT; c++)
            ct_ivset_free(&R->cls[c]);
        ct_ivset_free(&R->comm);
        ct_ivset_free(&R->gpu);
        ct_ivset_free(&R->gcover);
        ct_ivset_free(&R->gcut);
        ct_ivset_free(&R->hcut);
    }
    free(job->ranks);
    free(job->hosts);
    for (size_t i = 0; i < job->nprocs; i++)
        ct_proc_free(&job->procs[i]);
    free(job->procs);
    memset(job, 0, sizeof(*job));
}
