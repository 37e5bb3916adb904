/*
 * A device is a rank: a process that drives several GPUs (JAX/XLA's one
 * process per host, ncclCommInitAll) becomes one process per device before
 * the job is built, so every per-rank analysis is per (process, device)
 * and collectives match per device.
 *
 * An op's device is its stream's (ct_proc.sdev, from GPU records and the
 * shim's stream metadata; stream ids are unique in a process). The split
 * processes keep the host's evidence whole (launch calls, syncs, data and
 * checkpoint waits, steps, capture windows: one host drives them all), and
 * take each its device's GPU ops and NCCL ops. Global rank: the device's
 * rank in the largest communicator it is a member of (the world one: what
 * a framework calls the rank), else the process's rank × devices + the
 * device's index, else none (the job numbers it).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/read/devices.h"
#include "decoder/read/nccl_acct.h"
#include "decoder/read/counters.h"
#include "decoder/read/facts.h"
#include "decoder/util/search.h"

int ct_sdev_note(struct ct_proc *p, uint32_t stream, int32_t dev)
{
    if (dev < 0)
        return 0;
    for (size_t i = p->nsdev; i > 0; i--) /* few streams */
        if (p->sdev[i - 1].stream == stream) {
            /* to the end, where ct_sdev_seen looks first: records come in
             * runs of one stream */
            struct ct_sdev t = p->sdev[i - 1];
            memmove(&p->sdev[i - 1], &p->sdev[i], (p->nsdev - i) * sizeof(*p->sdev));
            t.dev = dev;
            p->sdev[p->nsdev - 1] = t;
            return 0;
        }
    if (p->nsdev == p->capsdev) {
        size_t cap = p->capsdev ? 2 * p->capsdev : 16;
        struct ct_sdev *v = realloc(p->sdev, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        p->sdev = v;
        p->capsdev = cap;
    }
    p->sdev[p->nsdev++] = (struct ct_sdev){stream, dev};
    return 0;
}

struct nonblock_key {
    const uint32_t *v;
    uint32_t stream;
};
static int nonblock_before(size_t i, const void *ctx)
{
    const struct nonblock_key *k = ctx;
    return k->v[i] < k->stream;
}

/* The first of p's non-blocking streams at or after `stream`. */
static size_t nonblock_at(const struct ct_proc *p, uint32_t stream)
{
    const struct nonblock_key k = {p->nonblock, stream};
    return ct_partition(p->nnonblock, nonblock_before, &k);
}

int ct_is_nonblocking(const struct ct_proc *p, uint32_t stream)
{
    size_t i = nonblock_at(p, stream);
    return i < p->nnonblock && p->nonblock[i] == stream;
}

int ct_nonblocking_note(struct ct_proc *p, uint32_t stream)
{
    size_t i = nonblock_at(p, stream);
    if (i < p->nnonblock && p->nonblock[i] == stream)
        return 0;
    uint32_t *v = realloc(p->nonblock, (p->nnonblock + 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    memmove(v + i + 1, v + i, (p->nnonblock - i) * sizeof(*v));
    v[i] = stream;
    p->nonblock = v;
    p->nnonblock++;
    return 0;
}

int32_t ct_sdev_of(const struct ct_proc *p, uint32_t stream)
{
    for (size_t i = 0; i < p->nsdev; i++)
        if (p->sdev[i].stream == stream)
            return p->sdev[i].dev;
    return -1;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The distinct devices of p's ops and NCCL ops, sorted, into *out (malloc). */
static size_t devices_of(const struct ct_proc *p, int32_t **out)
{
    *out = NULL;
    int32_t *d = malloc((p->nsdev ? p->nsdev : 1) * sizeof(*d));
    if (!d)
        return 0;
    size_t n = 0;
    int several = 0; /* most processes drive one device: no pass over their ops */
    for (size_t i = 1; i < p->nsdev && !several; i++)
        several = p->sdev[i].dev != p->sdev[0].dev;
    if (!several) {
        if (p->nsdev)
            d[n++] = p->sdev[0].dev;
        *out = d;
        return n;
    }
    for (size_t i = 0; i < p->nsdev; i++) {
        int used = 0; /* a stream that carried work */
        for (size_t k = 0; k < p->nops && !used; k++)
            used = p->ops[k].stream == p->sdev[i].stream;
        for (size_t k = 0; k < p->nnccl && !used; k++)
            used = p->nccl[k].stream == p->sdev[i].stream;
        int seen = 0;
        for (size_t k = 0; k < n && !seen; k++)
            seen = d[k] == p->sdev[i].dev;
        if (used && !seen)
            d[n++] = p->sdev[i].dev;
    }
    qsort(d, n, sizeof(*d), cmp_i32);
    *out = d;
    return n;
}

static int copy_set(const struct ct_ivset *a, struct ct_ivset *out)
{
    memset(out, 0, sizeof(*out));
    return ct_ivset_copy(a, out);
}

static void *dup_mem(const void *p, size_t n)
{
    void *q = malloc(n ? n : 1);
    if (q && n)
        memcpy(q, p, n);
    return q;
}

/* The part of p that device devs[k] of ndev is: into q (empty on -ENOMEM). */
static int one_device(const struct ct_proc *p, const int32_t *devs, size_t ndev, size_t k,
                      struct ct_proc *q)
{
    int32_t dev = devs[k];
    memset(q, 0, sizeof(*q));
    q->rank = -1;
    q->pid = p->pid;
    q->ppid = p->ppid;
    q->source = p->source;
    q->clock_offset = p->clock_offset;
    q->device = dev;
    q->windowed = p->windowed;
    q->light = p->light;
    q->light_window_ms = p->light_window_ms;
    q->light_period_ms = p->light_period_ms;
    q->capture_open = CT_OPEN_NONE;
    q->last_ns = p->last_ns;
    /* which device the undelivered ops were on is not known: each part's
     * record ends at the process's cut */
    q->undelivered = p->undelivered;
    q->host_cut = p->host_cut;
    q->gpu_cut = p->gpu_cut;
    q->life = p->life;
    q->life.job = p->life.job ? strdup(p->life.job) : NULL;
    q->life.run = p->life.run ? strdup(p->life.run) : NULL;
    q->path = strdup(p->path ? p->path : "");
    q->host = strdup(p->host ? p->host : "");
    q->ops = malloc((p->nops ? p->nops : 1) * sizeof(*q->ops));
    q->nccl = malloc((p->nnccl ? p->nnccl : 1) * sizeof(*q->nccl));
    int32_t *remap = malloc((p->nnccl ? p->nnccl : 1) * sizeof(*remap));
    q->names = malloc((p->nnames ? p->nnames : 1) * sizeof(*q->names));
    q->launches = dup_mem(p->launches, p->nlaunches * sizeof(*p->launches));
    q->steps = dup_mem(p->steps, p->nsteps * sizeof(*p->steps));
    /* every device keeps the process's event edges and sync waits: their
     * streams find their ops on the device that has them */
    q->edges = dup_mem(p->edges, p->nedges * sizeof(*p->edges));
    q->gedges = dup_mem(p->gedges, p->ngedges * sizeof(*p->gedges));
    q->syncs = dup_mem(p->syncs, p->nsyncs * sizeof(*p->syncs));
    q->nonblock = dup_mem(p->nonblock, p->nnonblock * sizeof(*p->nonblock));
    q->sdev = dup_mem(p->sdev, p->nsdev * sizeof(*p->sdev));
    /* the counters are every device's (a rank reads its main process's);
     * the facts are the file's, kept once: on the first part */
    int oom = 0;
    q->health = ct_hproc_copy(p->health, &oom);
    q->facts = k == 0 ? ct_facts_copy(p->facts, &oom) : NULL;
    q->nacct = ct_nacct_copy(p->nacct, &oom);
    int rc = oom || !q->path || !q->host || (p->life.job && !q->life.job) ||
                     (p->life.run && !q->life.run) || !q->ops || !q->nccl || !remap || !q->names ||
                     !q->launches || !q->steps || !q->sdev || !q->edges || !q->syncs || !q->gedges
                 ? -ENOMEM
                 : 0;
    if (!rc)
        rc = copy_set(&p->sync, &q->sync);
    if (!rc)
        rc = copy_set(&p->cuda_call, &q->cuda_call);
    if (!rc)
        rc = copy_set(&p->data_wait, &q->data_wait);
    if (!rc)
        rc = copy_set(&p->file_read, &q->file_read);
    if (!rc)
        rc = copy_set(&p->htod, &q->htod);
    if (!rc)
        rc = copy_set(&p->ckpt, &q->ckpt);
    if (!rc)
        rc = copy_set(&p->capture, &q->capture);
    for (size_t i = 0; i < p->nnames && !rc; i++, q->nnames++)
        if (!(q->names[i] = strdup(p->names[i])))
            rc = -ENOMEM;
    if (rc) {
        free(remap);
        ct_proc_free(q);
        return -ENOMEM;
    }
    q->nlaunches = p->nlaunches;
    q->nsteps = p->nsteps;
    q->nedges = p->nedges;
    q->ngedges = p->ngedges;
    q->nsyncs = p->nsyncs;
    q->nnonblock = p->nnonblock;
    q->nsdev = q->capsdev = p->nsdev;
    /* an NCCL op of a stream without a known device goes with the first
     * device, as does a GPU op */
    int32_t big = -1, rank = -1;
    for (size_t i = 0; i < p->nnccl; i++) {
        int32_t d = ct_sdev_of(p, p->nccl[i].stream);
        remap[i] = -1;
        if (d == dev || (d < 0 && k == 0)) {
            remap[i] = (int32_t)q->nnccl;
            q->nccl[q->nnccl++] = p->nccl[i];
            if (p->nccl[i].nranks > big && p->nccl[i].comm_rank >= 0) {
                big = p->nccl[i].nranks;
                rank = p->nccl[i].comm_rank;
            }
        }
    }
    for (size_t i = 0; i < p->nops; i++) {
        const struct ct_gpu_op *g = &p->ops[i];
        int32_t d = ct_sdev_of(p, g->stream);
        if (d < 0 && g->nccl >= 0) /* an NCCL record's own interval: its op's stream */
            d = ct_sdev_of(p, p->nccl[g->nccl].stream);
        if (d != dev && !(d < 0 && k == 0))
            continue;
        struct ct_gpu_op c = *g;
        c.nccl = g->nccl >= 0 ? remap[g->nccl] : g->nccl;
        q->ops[q->nops++] = c;
    }
    free(remap);
    q->rank = rank >= 0 ? rank : p->rank >= 0 ? p->rank * (int64_t)ndev + (int64_t)k : -1;
    /* how the process was timed holds for each device; what it lost is
     * counted once, with its first device */
    q->cov = p->cov;
    q->trunc_at = p->trunc_at;
    if (k > 0)
        q->cov.dropped = q->cov.untimed = q->cov.unmatched_p2p = 0;
    return 0;
}

int ct_split_devices(struct ct_proc **procs, size_t *nprocs)
{
    size_t extra = 0;
    for (size_t i = 0; i < *nprocs; i++) {
        struct ct_proc *p = &(*procs)[i];
        if (p->spill)
            continue; /* split before it was spilled (decoder/load/load.c) */
        int32_t *devs;
        size_t n = p->source == CT_SOURCE_KINETO ? 0 : devices_of(p, &devs);
        if (p->source != CT_SOURCE_KINETO && !devs)
            return -ENOMEM;
        p->device = n ? devs[0] : -1;
        if (n > 1)
            extra += n - 1;
        if (p->source != CT_SOURCE_KINETO)
            free(devs);
    }
    if (!extra)
        return 0;
    size_t total = *nprocs + extra;
    struct ct_proc *v = calloc(total, sizeof(*v));
    if (!v)
        return -ENOMEM;
    size_t w = 0;
    int rc = 0;
    for (size_t i = 0; i < *nprocs; i++) {
        struct ct_proc *p = &(*procs)[i];
        int32_t *devs = NULL;
        size_t n = p->source == CT_SOURCE_KINETO || p->spill || rc ? 0 : devices_of(p, &devs);
        if (n <= 1) {
            v[w++] = *p; /* moved as it is */
            memset(p, 0, sizeof(*p));
        } else {
            for (size_t k = 0; k < n && !rc; k++)
                rc = one_device(p, devs, n, k, &v[w++]);
            ct_proc_free(p);
        }
        free(devs);
    }
    for (size_t i = 0; i < *nprocs; i++)
        ct_proc_free(&(*procs)[i]);
    free(*procs);
    *procs = v;
    *nprocs = w;
    return rc;
}
