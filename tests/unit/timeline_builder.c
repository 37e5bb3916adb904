/* Hand-built timelines for the analysis suites (timeline_builder.h). */
#include "tests/unit/timeline_builder.h"
#include "decoder/read/devices.h"
#include "decoder/read/job.h"
#include "decoder/read/life.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

/* The array v of n elements of size sz, reallocated with room for one more,
 * that one zeroed. */
static void *grow(void *v, size_t n, size_t sz)
{
    char *q = realloc(v, (n + 1) * sz);
    ck_assert_ptr_nonnull(q);
    memset(q + n * sz, 0, sz);
    return q;
}

void tb_init(struct tb_job *b)
{
    b->procs = calloc(TB_MAX_PROCS, sizeof(*b->procs));
    ck_assert_ptr_nonnull(b->procs);
    b->n = 0;
}

struct ct_proc *tb_proc(struct tb_job *b, int64_t rank)
{
    ck_assert_uint_lt(b->n, TB_MAX_PROCS);
    struct ct_proc *p = &b->procs[b->n];
    p->path = strdup("mem");
    p->host = strdup("h");
    ck_assert(p->path && p->host);
    p->rank = rank;
    p->pid = 100 + (uint32_t)b->n;
    p->ppid = 1;
    p->cov.processes = 1;
    ct_life_init(&p->life); /* no start time, restart count, signal or hang recorded */
    b->n++;
    return p;
}

struct ct_proc *tb_child(struct tb_job *b, const struct ct_proc *parent)
{
    uint32_t ppid = parent->pid;
    struct ct_proc *p = tb_proc(b, -1);
    p->ppid = ppid;
    return p;
}

static uint32_t name_id(struct ct_proc *p, const char *name)
{
    for (size_t i = 0; i < p->nnames; i++)
        if (!strcmp(p->names[i], name))
            return (uint32_t)i;
    p->names = grow(p->names, p->nnames, sizeof(*p->names));
    p->names[p->nnames] = strdup(name);
    ck_assert_ptr_nonnull(p->names[p->nnames]);
    return (uint32_t)p->nnames++;
}

static void add_launch(struct ct_proc *p, int64_t t_ns)
{
    p->launches = grow(p->launches, p->nlaunches, sizeof(*p->launches));
    p->launches[p->nlaunches++] = t_ns;
}

static struct ct_gpu_op *add_op(struct ct_proc *p, uint32_t stream, int64_t s, int64_t e,
                                int64_t launch)
{
    p->ops = grow(p->ops, p->nops, sizeof(*p->ops));
    struct ct_gpu_op *g = &p->ops[p->nops++];
    g->s = TB_US(s);
    g->e = TB_US(e);
    g->launch = launch == TB_NOLAUNCH ? INT64_MIN : TB_US(launch);
    g->stream = stream;
    g->nccl = -1;
    if (launch != TB_NOLAUNCH)
        add_launch(p, TB_US(launch));
    return g;
}

void tb_kernel(struct ct_proc *p, const char *name, uint32_t stream, int64_t s, int64_t e,
               int64_t launch)
{
    uint32_t id = name_id(p, name);
    struct ct_gpu_op *g = add_op(p, stream, s, e, launch);
    g->name = id;
    g->cls = CT_CL_COMPUTE;
    g->type = CT_GPU_KERNEL;
}

void tb_graph_kernel(struct ct_proc *p, const char *name, uint32_t stream, int64_t s, int64_t e,
                     int64_t launch, uint64_t node)
{
    uint32_t id = name_id(p, name);
    struct ct_gpu_op *g = add_op(p, stream, s, e, TB_NOLAUNCH);
    g->launch = TB_US(launch);
    g->name = id;
    g->cls = CT_CL_COMPUTE;
    g->type = CT_GPU_KERNEL;
    g->graph = 1;
    g->gnode = node;
}

void tb_graph_edge(struct ct_proc *p, uint64_t from, uint64_t to)
{
    p->gedges = grow(p->gedges, p->ngedges, sizeof(*p->gedges));
    p->gedges[p->ngedges++] = (struct ct_gedge){to, from};
}

void tb_event_edge(struct ct_proc *p, uint32_t from, int64_t rec, uint32_t to, int64_t wait)
{
    p->edges = grow(p->edges, p->nedges, sizeof(*p->edges));
    p->edges[p->nedges++] = (struct ct_evedge){TB_US(rec), TB_US(wait), from, to};
}

void tb_copy(struct ct_proc *p, uint32_t stream, int64_t s, int64_t e, int64_t launch)
{
    tb_copy_named(p, "memcpy", stream, s, e, launch);
}

void tb_copy_named(struct ct_proc *p, const char *name, uint32_t stream, int64_t s, int64_t e,
                   int64_t launch)
{
    uint32_t id = name_id(p, name);
    struct ct_gpu_op *g = add_op(p, stream, s, e, launch);
    g->name = id;
    g->cls = CT_CL_MEMORY;
    g->type = CT_GPU_MEMCPY;
}

void tb_nccl(struct ct_proc *p, struct tb_coll o)
{
    p->nccl = grow(p->nccl, p->nnccl, sizeof(*p->nccl));
    struct ct_nccl_call *n = &p->nccl[p->nnccl++];
    n->op = (uint8_t)o.op;
    n->comm = o.comm;
    n->seq = o.seq;
    n->bytes = o.bytes;
    n->comm_rank = o.comm_rank;
    n->peer = o.peer;
    n->nranks = o.nranks;
    n->stream = o.stream;
    n->host_s = TB_US(o.launch ? o.launch : o.s);
    n->host_e = n->host_s + TB_US(1);
    if (!o.e)
        return; /* untimed: s = e = 0 */
    n->s = TB_US(o.s);
    n->e = TB_US(o.e);
    uint32_t id = name_id(p, "ncclDevKernel");
    struct ct_gpu_op *g = add_op(p, o.stream, o.s, o.e, o.launch ? o.launch : TB_NOLAUNCH);
    g->name = id;
    g->nccl = (int32_t)(p->nnccl - 1);
    g->cls = CT_CL_OTHER; /* ct_job_build classifies it */
    g->type = CT_GPU_KERNEL;
    g->op = (uint8_t)o.op;
}

void tb_launch(struct ct_proc *p, int64_t t)
{
    add_launch(p, TB_US(t));
}

static void add_iv(struct ct_ivset *a, int64_t s, int64_t e)
{
    ck_assert_int_eq(ct_ivset_add(a, TB_US(s), TB_US(e)), 0);
}

void tb_sync(struct ct_proc *p, int64_t s, int64_t e)
{
    add_iv(&p->sync, s, e);
}

void tb_sync_on(struct ct_proc *p, int64_t s, int64_t e, uint32_t stream, int64_t rec)
{
    add_iv(&p->sync, s, e);
    struct ct_syncon *v = realloc(p->syncs, (p->nsyncs + 1) * sizeof(*v));
    ck_assert_ptr_nonnull(v);
    p->syncs = v;
    v[p->nsyncs++] = (struct ct_syncon){TB_US(s), TB_US(rec), stream};
}

void tb_data_wait(struct ct_proc *p, int64_t s, int64_t e)
{
    add_iv(&p->data_wait, s, e);
}

void tb_file_read(struct ct_proc *p, int64_t s, int64_t e)
{
    add_iv(&p->data_wait, s, e);
    add_iv(&p->file_read, s, e);
}

void tb_htod(struct ct_proc *p, int64_t s, int64_t e)
{
    add_iv(&p->htod, s, e);
}

void tb_ckpt(struct ct_proc *p, int64_t s, int64_t e)
{
    add_iv(&p->ckpt, s, e);
}

void tb_cuda_call(struct ct_proc *p, int64_t s, int64_t e)
{
    add_iv(&p->cuda_call, s, e);
}

void tb_device(struct ct_proc *p, uint32_t stream, int32_t dev)
{
    ck_assert_int_eq(ct_sdev_note(p, stream, dev), 0);
}

void tb_capture(struct ct_proc *p, int64_t s, int64_t e)
{
    p->windowed = 1;
    add_iv(&p->capture, s, e);
}

void tb_range(struct ct_proc *p, int64_t s, int64_t e, int64_t num)
{
    p->steps = grow(p->steps, p->nsteps, sizeof(*p->steps));
    struct ct_range *r = &p->steps[p->nsteps++];
    r->s = TB_US(s);
    r->e = TB_US(e);
    r->num = num;
}

void tb_mark(struct ct_proc *p, int64_t t, int64_t num)
{
    tb_range(p, t, t, num);
}

static void shift_set(struct ct_ivset *a, int64_t d)
{
    for (size_t i = 0; i < a->n; i++) {
        a->v[i].s += d;
        a->v[i].e += d;
    }
}

void tb_shift(struct ct_proc *p, int64_t d_us)
{
    int64_t d = TB_US(d_us);
    for (size_t i = 0; i < p->nops; i++) {
        p->ops[i].s += d;
        p->ops[i].e += d;
        if (p->ops[i].launch != INT64_MIN)
            p->ops[i].launch += d;
    }
    for (size_t i = 0; i < p->nnccl; i++) {
        p->nccl[i].host_s += d;
        p->nccl[i].host_e += d;
        if (p->nccl[i].e) {
            p->nccl[i].s += d;
            p->nccl[i].e += d;
        }
    }
    for (size_t i = 0; i < p->nlaunches; i++)
        p->launches[i] += d;
    for (size_t i = 0; i < p->nsteps; i++) {
        p->steps[i].s += d;
        p->steps[i].e += d;
    }
    shift_set(&p->sync, d);
    shift_set(&p->data_wait, d);
    shift_set(&p->ckpt, d);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Extraction order: ops by GPU start (stable: insertion), launch calls by
 * time, host sets normalised. */
static void finish(struct ct_proc *p)
{
    for (size_t i = 1; i < p->nops; i++)
        for (size_t j = i; j > 0 && p->ops[j - 1].s > p->ops[j].s; j--) {
            struct ct_gpu_op t = p->ops[j];
            p->ops[j] = p->ops[j - 1];
            p->ops[j - 1] = t;
        }
    if (p->nlaunches)
        qsort(p->launches, p->nlaunches, sizeof(*p->launches), cmp_i64);
    ct_ivset_normalize(&p->sync);
    ct_ivset_normalize(&p->cuda_call);
    ct_ivset_normalize(&p->data_wait);
    ct_ivset_normalize(&p->file_read);
    ct_ivset_normalize(&p->htod);
    ct_ivset_normalize(&p->ckpt);
    ct_ivset_normalize(&p->capture);
}

void tb_build(struct tb_job *b, struct ct_job *job)
{
    for (size_t i = 0; i < b->n; i++)
        finish(&b->procs[i]);
    ck_assert_int_eq(ct_job_build(job, b->procs, b->n), 0);
    b->procs = NULL;
    b->n = 0;
}

void tb_analyze(struct ct_job *job, const struct ct_iter_opts *o, struct ct_report *rep)
{
    struct ct_iter_opts all = {0, 0, -1, 0};
    ck_assert_int_eq(ct_report_analyze(job, o ? o : &all, rep), 0);
}

struct ct_rank *tb_rank(struct ct_job *job, int rank)
{
    for (size_t r = 0; r < job->nranks; r++)
        if (job->ranks[r].rank == rank)
            return &job->ranks[r];
    ck_abort_msg("no rank %d in the job", rank);
    return NULL;
}

struct ct_rank_result *tb_result(struct ct_report *rep, int rank)
{
    for (size_t r = 0; r < rep->nr; r++)
        if (rep->rr[r].rank->rank == rank)
            return &rep->rr[r];
    ck_abort_msg("no rank %d in the report", rank);
    return NULL;
}

void tb_metrics(struct ct_job *job, int rank, const struct ct_iter *it, size_t n,
                struct ct_rank_result *res)
{
    memset(res, 0, sizeof(*res));
    res->rank = tb_rank(job, rank);
    if (n) {
        res->iters = malloc(n * sizeof(*it));
        ck_assert_ptr_nonnull(res->iters);
        memcpy(res->iters, it, n * sizeof(*it));
        res->niters = n;
    }
    ck_assert_int_eq(ct_metrics_rank(res), 0);
}

void tb_result_free(struct ct_rank_result *res)
{
    free(res->iters);
    free(res->im);
    memset(res, 0, sizeof(*res));
}
