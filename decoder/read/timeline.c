/*
 * Timeline building: per-process extraction from decoded records, folding
 * processes into ranks, communication classes, interval sets. Clock
 * alignment lives in clock.c. Never prints.
 */
#include "decoder/read/timeline.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/read/clock.h"
#include "decoder/util/array.h"
#include "decoder/util/stats.h"

#define CKPT_COPY_BYTES (16ull << 20)

const char *ct_class_name(int cls)
{
    static const char *const n[CT_CL_COUNT] = {"compute", "memory", "dp", "tp", "pp", "other"};
    return cls >= 0 && cls < CT_CL_COUNT ? n[cls] : "?";
}

int ct_nccl_op_from_kernel(const char *name)
{
    static const struct {
        const char *s;
        int op;
    } t[] = {
        {"AllReduce", CT_NCCL_OP_ALLREDUCE}, {"ReduceScatter", CT_NCCL_OP_REDUCESCATTER},
        {"AllGather", CT_NCCL_OP_ALLGATHER}, {"AlltoAll", CT_NCCL_OP_ALLTOALL},
        {"Broadcast", CT_NCCL_OP_BROADCAST}, {"SendRecv", CT_NCCL_OP_SEND},
        {"Send", CT_NCCL_OP_SEND},           {"Recv", CT_NCCL_OP_RECV},
        {"Reduce", CT_NCCL_OP_REDUCE},       {"Gather", CT_NCCL_OP_GATHER},
        {"Scatter", CT_NCCL_OP_SCATTER},
    };
    const char *p = NULL;
    if (!strncmp(name, "ncclDevKernel_", 14))
        p = name + 14;
    else if (!strncmp(name, "ncclKernel_", 11))
        p = name + 11;
    else if (!strncmp(name, "nccl", 4))
        p = name + 4;
    if (!p)
        return 0;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (!strncmp(p, t[i].s, strlen(t[i].s)))
            return t[i].op;
    return CT_NCCL_OP_COUNT; /* an NCCL kernel of unknown op: "other" */
}

/* ---- growable arrays ---- */

/* Per-process name table: string id of the trace -> local index. */
struct names {
    uint32_t *map; /* trace string id -> index + 1 */
    size_t mapn;
    size_t cap;
};

static int name_index(struct ct_proc *p, struct names *nm, struct ct_trace *t, uint64_t id,
                      uint32_t *out)
{
    if (id >= nm->mapn) {
        size_t n = nm->mapn ? nm->mapn : 64;
        while (n <= id)
            n *= 2;
        uint32_t *m = realloc(nm->map, n * sizeof(*m));
        if (!m)
            return -ENOMEM;
        memset(m + nm->mapn, 0, (n - nm->mapn) * sizeof(*m));
        nm->map = m;
        nm->mapn = n;
    }
    if (!nm->map[id]) {
        if (ct_grow((void **)&p->names, &nm->cap, p->nnames, sizeof(char *)))
            return -ENOMEM;
        p->names[p->nnames] = strdup(ct_reader_string(&t->rd, id));
        if (!p->names[p->nnames])
            return -ENOMEM;
        nm->map[id] = (uint32_t)++p->nnames;
    }
    *out = nm->map[id] - 1;
    return 0;
}

static int has_u64(const uint64_t *v, size_t n, uint64_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && v[lo] == x;
}

int ct_step_matches(const char *msg, const char *step)
{
    size_t n = strlen(step);
    return !strncmp(msg, step, n) && (msg[n] == 0 || msg[n] == '#');
}

int64_t ct_step_number(const char *msg)
{
    const char *h = strrchr(msg, '#');
    if (!h || !h[1])
        return CT_STEP_NONE;
    char *end;
    long long v = strtoll(h + 1, &end, 10);
    return *end ? CT_STEP_NONE : v;
}

int ct_capture_mark(struct ct_proc *p, const char *value, int64_t t)
{
    p->windowed = 1;
    if (!strcmp(value, "start")) {
        if (p->capture_open == CT_OPEN_NONE)
            p->capture_open = t;
        return 0;
    }
    if (strcmp(value, "stop"))
        return 0;
    int64_t s = p->capture_open == CT_OPEN_NONE ? -CT_OPEN_END : p->capture_open;
    p->capture_open = CT_OPEN_NONE;
    return ct_ivset_add(&p->capture, s, t);
}

/* A schedule length in ms; 0 when not a plain decimal that fits. */
static uint32_t ms_value(const char *s)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    return *s >= '0' && *s <= '9' && !*end && v <= UINT32_MAX ? (uint32_t)v : 0;
}

void ct_capture_meta(struct ct_proc *p, const char *key, const char *value)
{
    if (!strcmp(key, "mode")) {
        p->light = !strcmp(value, "light");
        p->windowed |= p->light; /* a light trace may hold no window yet */
    } else if (!strcmp(key, "light_window_ms")) {
        p->light_window_ms = ms_value(value);
    } else if (!strcmp(key, "light_period_ms")) {
        p->light_period_ms = ms_value(value);
    }
}

int ct_capture_finish(struct ct_proc *p, int64_t off)
{
    if (p->capture_open != CT_OPEN_NONE &&
        ct_ivset_add(&p->capture, p->capture_open, CT_OPEN_END - off))
        return -ENOMEM;
    p->capture_open = CT_OPEN_NONE;
    for (size_t i = 0; i < p->capture.n; i++) {
        p->capture.v[i].s += off;
        p->capture.v[i].e += off;
    }
    ct_ivset_normalize(&p->capture);
    return 0;
}

int ct_calls_note(struct ct_calls *c, int64_t s, int64_t e, uint32_t tid, int64_t key)
{
    if (ct_grow((void **)&c->v, &c->cap, c->n, sizeof(*c->v)))
        return -ENOMEM;
    c->v[c->n++] = (struct ct_call_span){s, e, tid, key};
    return 0;
}

int ct_calls_launch(struct ct_calls *c, int64_t key, int64_t s)
{
    if (key < 0)
        return 0;
    if ((size_t)key >= c->nfirst) {
        size_t n = c->nfirst ? c->nfirst : 64;
        while (n <= (size_t)key)
            n *= 2;
        int64_t *v = realloc(c->first, n * sizeof(*v));
        if (!v)
            return -ENOMEM;
        for (size_t i = c->nfirst; i < n; i++)
            v[i] = INT64_MAX;
        c->first = v;
        c->nfirst = n;
    }
    if (s < c->first[key])
        c->first[key] = s;
    return 0;
}

int ct_calls_launcher(struct ct_calls *c, uint32_t tid)
{
    /* called for every launch: the last thread noted is nearly always it */
    if (c->ntids && c->tids[c->ntids - 1] == tid)
        return 0;
    for (size_t i = 0; i < c->ntids; i++)
        if (c->tids[i] == tid) {
            c->tids[i] = c->tids[c->ntids - 1];
            c->tids[c->ntids - 1] = tid;
            return 0;
        }
    if (ct_grow((void **)&c->tids, &c->captids, c->ntids, sizeof(*c->tids)))
        return -ENOMEM;
    c->tids[c->ntids++] = tid;
    return 0;
}

int ct_calls_finish(struct ct_calls *c, struct ct_ivset *out, int64_t off)
{
    int rc = 0;
    for (size_t i = 0; i < c->n && !rc; i++) {
        size_t k = 0;
        while (k < c->ntids && c->tids[k] != c->v[i].tid)
            k++;
        /* a launch only as the first of its kernel (timeline.h) */
        int64_t key = c->v[i].key;
        int first = key < 0 || ((size_t)key < c->nfirst && c->first[key] == c->v[i].s);
        if (k < c->ntids && first)
            rc = ct_ivset_add(out, c->v[i].s + off, c->v[i].e + off);
    }
    ct_ivset_normalize_unsorted(out);
    ct_calls_free(c);
    return rc;
}

void ct_calls_free(struct ct_calls *c)
{
    free(c->v);
    free(c->tids);
    free(c->first);
    memset(c, 0, sizeof(*c));
}

struct gkv {
    uint64_t corr;
    size_t op;
};

static int cmp_gkv(const void *a, const void *b)
{
    const struct gkv *x = a, *y = b;
    if (x->corr != y->corr)
        return (x->corr > y->corr) - (x->corr < y->corr);
    return (x->op > y->op) - (x->op < y->op);
}

int ct_proc_extract(struct ct_trace *t, const char *step_name, struct ct_proc *p)
{
    memset(p, 0, sizeof(*p));
    ct_life_init(&p->life);
    p->capture_open = CT_OPEN_NONE;
    p->last_ns = INT64_MIN;
    p->rank = t->rank;
    p->pid = t->rd.hdr.pid;
    const char *h = ct_trace_meta(t, "host");
    const char *pp = ct_trace_meta(t, "ppid");
    p->ppid = pp ? (uint32_t)strtoul(pp, NULL, 10) : 0;
    p->path = strdup(t->path);
    p->host = strdup(h ? h : "");
    if (!p->path || !p->host)
        return -ENOMEM;
    p->clock_offset = ct_clock_offset(t);
    p->cov.processes = 1;
    p->cov.dropped = t->dropped;
    p->cov.truncated = !t->rd.has_footer;
    p->life.salvaged = t->rd.salvaged;
    p->cov.damaged = t->rd.damage_bytes;
    p->cov.bytes = t->rd.size;
    p->trunc_at = t->rd.truncated ? t->rd.truncated_at : 0;
    const char *step = step_name ? step_name : "ProfilerStep";
    const int64_t off = p->clock_offset;

    /* correlation ids that have a GPU interval: NCCL records' own GPU times
     * are used only when no GPU record carries them */
    size_t ngpu = t->count[CT_REC_GPU];
    uint64_t *gcorr = malloc((ngpu ? ngpu : 1) * sizeof(*gcorr));
    if (!gcorr)
        return -ENOMEM;
    size_t ng = 0;
    for (size_t i = 0; i < t->n; i++)
        if (t->recs[i].kind == CT_REC_GPU && ng < ngpu)
            gcorr[ng++] = t->recs[i].f[CT_GPU_CORR];
    qsort(gcorr, ng, sizeof(*gcorr), ct_cmp_u64);

    struct names nm = {0};
    size_t cap_ops = 0, cap_nccl = 0, cap_l = 0, cap_s = 0, cap_nrec = 0;
    size_t *nrec = NULL;    /* record index of each NCCL op */
    struct gkv *grp = NULL; /* GPU ops of a group's id (event pairs around ncclGroupEnd) */
    size_t ngrp = 0, cap_grp = 0;
    struct ct_calls calls = {0};
    int rc = 0;
    for (size_t i = 0; i < t->n && !rc; i++) {
        const struct ct_record *r = &t->recs[i];
        const uint64_t *f = r->f;
        switch (r->kind) {
        case CT_REC_GPU: {
            if (f[CT_GPU_TYPE] == CT_GPU_SYNC || f[CT_GPU_END] <= f[CT_GPU_START])
                break;
            if ((rc = ct_grow((void **)&p->ops, &cap_ops, p->nops, sizeof(*p->ops))))
                break;
            struct ct_gop *g = &p->ops[p->nops];
            memset(g, 0, sizeof(*g));
            g->s = (int64_t)f[CT_GPU_START] + off;
            g->e = (int64_t)f[CT_GPU_END] + off;
            g->stream = (uint32_t)f[CT_GPU_STREAM];
            g->type = (uint8_t)f[CT_GPU_TYPE];
            g->blocking = f[CT_GPU_SOURCE] == CT_SRC_EVENTS_BLOCKING;
            if (g->type == CT_GPU_MEMCPY && f[CT_GPU_COPY_KIND] == CT_COPY_HTOD &&
                (rc = ct_ivset_add(&p->htod, g->s, g->e)))
                break;
            g->nccl = -1;
            g->launch = INT64_MIN;
            const struct ct_record *call = ct_trace_call(t, f[CT_GPU_CORR]);
            if (call)
                g->launch = (int64_t)call->f[0] + off;
            g->graph = g->type == CT_GPU_GRAPH ||
                       (call && call->kind == CT_REC_API && call->f[CT_API_FAMILY] == CT_FAM_GRAPH);
            if ((rc = name_index(p, &nm, t, f[CT_GPU_NAME], &g->name)))
                break;
            const char *name = p->names[g->name];
            if (g->type == CT_GPU_MEMCPY || g->type == CT_GPU_MEMSET)
                g->cls = CT_CL_MEMORY;
            else if (g->type == CT_GPU_NCCL || (call && call->kind == CT_REC_NCCL))
                g->cls = CT_CL_OTHER, g->op = call && call->kind == CT_REC_NCCL
                                                  ? (uint8_t)call->f[CT_NCCL_OP]
                                                  : (uint8_t)ct_nccl_op_from_kernel(name);
            else if ((g->op = (uint8_t)ct_nccl_op_from_kernel(name)) != 0)
                g->cls = CT_CL_OTHER;
            else
                g->cls = CT_CL_COMPUTE;
            /* the NCCL op is linked by correlation id in ct_job_build */
            g->nccl = call && call->kind == CT_REC_NCCL ? -2 - (int32_t)(call - t->recs) : -1;
            if (!g->stream && call && call->kind == CT_REC_NCCL) /* the plugin's: its op's */
                g->stream = (uint32_t)call->f[CT_NCCL_STREAM];
            if (g->type == CT_GPU_NCCL && g->nccl == -1 && /* a group's event pair */
                (rc = ct_grow((void **)&grp, &cap_grp, ngrp, sizeof(*grp))) == 0)
                grp[ngrp++] = (struct gkv){f[CT_GPU_CORR], p->nops};
            ct_cov_source(&p->cov, (uint8_t)f[CT_GPU_SOURCE]);
            p->nops++;
            rc = ct_sdev_seen(p, g->stream, (int32_t)(int64_t)f[CT_GPU_DEVICE]);
            break;
        }
        case CT_REC_NCCL: {
            if ((rc = ct_grow((void **)&p->nccl, &cap_nccl, p->nnccl, sizeof(*p->nccl))) ||
                (rc = ct_grow((void **)&nrec, &cap_nrec, p->nnccl, sizeof(*nrec))))
                break;
            nrec[p->nnccl] = i;
            struct ct_nop *n = &p->nccl[p->nnccl++];
            memset(n, 0, sizeof(*n));
            n->host_s = (int64_t)f[CT_NCCL_START] + off;
            n->host_e = (int64_t)f[CT_NCCL_END] + off;
            n->comm = f[CT_NCCL_COMM];
            n->seq = f[CT_NCCL_SEQ];
            n->bytes = f[CT_NCCL_BYTES];
            n->corr = f[CT_NCCL_CORR];
            n->comm_rank = (int32_t)f[CT_NCCL_RANK];
            n->peer = (int32_t)f[CT_NCCL_PEER];
            n->nranks = (int32_t)f[CT_NCCL_NRANKS];
            n->stream = (uint32_t)f[CT_NCCL_STREAM];
            n->op = (uint8_t)f[CT_NCCL_OP];
            n->cls = CT_CL_OTHER;
            if (f[CT_NCCL_GPU_START] && f[CT_NCCL_GPU_END] > f[CT_NCCL_GPU_START]) {
                n->s = (int64_t)f[CT_NCCL_GPU_START] + off;
                n->e = (int64_t)f[CT_NCCL_GPU_END] + off;
                if (!has_u64(gcorr, ng, n->corr)) {
                    /* no GPU record: the NCCL record's own interval is the GPU time */
                    if ((rc = ct_grow((void **)&p->ops, &cap_ops, p->nops, sizeof(*p->ops))))
                        break;
                    struct ct_gop *g = &p->ops[p->nops++];
                    memset(g, 0, sizeof(*g));
                    g->s = n->s;
                    g->e = n->e;
                    g->launch = n->host_s;
                    g->stream = (uint32_t)f[CT_NCCL_STREAM];
                    g->type = CT_GPU_NCCL;
                    g->op = n->op;
                    g->cls = CT_CL_OTHER;
                    g->nccl = -2 - (int32_t)i;
                    p->cov.gpu_nccl_record++;
                }
            }
            if ((rc = ct_grow((void **)&p->launches, &cap_l, p->nlaunches, sizeof(int64_t))))
                break;
            p->launches[p->nlaunches++] = n->host_s;
            rc = ct_calls_launcher(&calls, r->tid);
            break;
        }
        case CT_REC_API: {
            uint64_t fam = f[CT_API_FAMILY];
            int64_t s = (int64_t)f[CT_API_START] + off, e = (int64_t)f[CT_API_END] + off;
            if (fam == CT_FAM_LAUNCH || fam == CT_FAM_MEMCPY || fam == CT_FAM_MEMSET) {
                if ((rc = ct_grow((void **)&p->launches, &cap_l, p->nlaunches, sizeof(int64_t))))
                    break;
                p->launches[p->nlaunches++] = s;
                if (!has_u64(gcorr, ng, f[CT_API_CORR]) && !(f[CT_API_FLAGS] & CT_APIF_CAPTURED))
                    p->cov.untimed++;
                if ((rc = ct_calls_launcher(&calls, r->tid)))
                    break;
            }
            int64_t key = fam == CT_FAM_LAUNCH  ? (int64_t)f[CT_API_KERNEL]
                          : fam == CT_FAM_GRAPH ? 0
                                                : -1;
            if ((rc = ct_calls_launch(&calls, key, s)))
                break;
            if (ct_is_blocking_call(fam, f[CT_API_FLAGS], e - s) &&
                (rc = ct_calls_note(&calls, s, e, r->tid, key)))
                break;
            if (ct_is_host_sync(fam, f[CT_API_FLAGS]))
                rc = ct_ivset_add(&p->sync, s, e);
            if (!rc && fam == CT_FAM_MEMCPY && f[CT_API_COPY_KIND] == CT_COPY_DTOH &&
                f[CT_API_BYTES] >= CKPT_COPY_BYTES)
                rc = ct_ivset_add(&p->ckpt, s, e);
            if (!rc && fam == CT_FAM_MEMCPY && f[CT_API_COPY_KIND] == CT_COPY_HTOD)
                rc = ct_ivset_add(&p->htod, s, e);
            break;
        }
        case CT_REC_IO: {
            const char *op = ct_reader_string(&t->rd, f[CT_IO_OP]);
            int64_t s = (int64_t)f[CT_IO_START] + off, e = (int64_t)f[CT_IO_END] + off;
            if (ct_is_data_wait(op, f[CT_IO_FD_TYPE]) && f[CT_IO_FD_TYPE] == CT_FD_FILE)
                rc = ct_ivset_add(&p->file_read, s, e);
            if (!rc && ct_is_data_wait(op, f[CT_IO_FD_TYPE]))
                rc = ct_ivset_add(&p->data_wait, s, e);
            else if (ct_is_ckpt_io(op, f[CT_IO_FD_TYPE]))
                rc = ct_ivset_add(&p->ckpt, s, e);
            break;
        }
        case CT_REC_ERROR:
            ct_life_error(&p->life, ct_reader_string(&t->rd, f[CT_ERROR_WHAT]), (int64_t)f[0]);
            /* fall through */
        case CT_REC_CLOCK:
        case CT_REC_COUNTER:
        case CT_REC_DROP:
            if ((int64_t)f[0] + off > p->last_ns)
                p->last_ns = (int64_t)f[0] + off;
            break;
        case CT_REC_META: {
            if ((int64_t)f[0] + off > p->last_ns)
                p->last_ns = (int64_t)f[0] + off;
            const char *key = ct_reader_string(&t->rd, f[CT_META_KEY]);
            const char *val = ct_reader_string(&t->rd, f[CT_META_VALUE]);
            if (f[CT_META_SCOPE] == CT_SCOPE_RECORDER && !strcmp(key, "capture"))
                rc = ct_capture_mark(p, val, (int64_t)f[CT_META_TIME]);
            else if (f[CT_META_SCOPE] == CT_SCOPE_STREAM && !strcmp(key, "device"))
                rc = ct_sdev_note(p, (uint32_t)f[CT_META_SCOPE_ID], (int32_t)strtol(val, NULL, 10));
            else if (f[CT_META_SCOPE] == CT_SCOPE_PROCESS) {
                ct_capture_meta(p, key, val);
                rc = ct_life_meta(&p->life, key, val, (int64_t)f[CT_META_TIME]);
            }
            break;
        }
        case CT_REC_NVTX_RANGE:
        case CT_REC_NVTX_MARK: {
            int mark = r->kind == CT_REC_NVTX_MARK;
            const char *msg =
                ct_reader_string(&t->rd, mark ? f[CT_MARK_MESSAGE] : f[CT_NVTX_MESSAGE]);
            if (!ct_step_matches(msg, step))
                break;
            if ((rc = ct_grow((void **)&p->steps, &cap_s, p->nsteps, sizeof(*p->steps))))
                break;
            struct ct_range *g = &p->steps[p->nsteps];
            g->s = (int64_t)f[0] + off;
            g->e = mark ? g->s : (int64_t)f[CT_NVTX_END] + off;
            g->num = ct_step_number(msg);
            p->nsteps++;
            break;
        }
        default: break;
        }
    }
    free(gcorr);
    free(nm.map);
    if (!rc)
        rc = ct_calls_finish(&calls, &p->cuda_call, 0); /* times already moved */
    ct_calls_free(&calls);
    if (rc) {
        free(nrec);
        free(grp);
        return rc;
    }
    /* resolve NCCL links: -2 - record index -> index into p->nccl. NCCL ops
     * were appended in record order, so their record indexes are sorted. */
    for (size_t i = 0; i < p->nops; i++) {
        if (p->ops[i].nccl >= -1)
            continue;
        size_t want = (size_t)(-2 - p->ops[i].nccl), lo = 0, hi = p->nnccl;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (nrec[mid] < want)
                lo = mid + 1;
            else
                hi = mid;
        }
        p->ops[i].nccl = lo < p->nnccl && nrec[lo] == want ? (int32_t)lo : -1;
    }
    /* a group's pair that no member took is the members' work, for its
     * class (as extract_join.c link_groups) */
    if (ngrp)
        qsort(grp, ngrp, sizeof(*grp), cmp_gkv);
    uint64_t last_group = 0;
    for (size_t i = 0; i < p->nnccl && ngrp; i++) {
        uint64_t group = t->recs[nrec[i]].f[CT_NCCL_GROUP];
        if (!group || group == last_group)
            continue;
        last_group = group;
        size_t lo = 0, hi = ngrp;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (grp[mid].corr < group)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t k = lo; k < ngrp && grp[k].corr == group; k++)
            if (p->ops[grp[k].op].nccl < 0) {
                p->ops[grp[k].op].nccl = (int32_t)i;
                p->ops[grp[k].op].nested = 1;
            }
    }
    free(grp);
    free(nrec);
    qsort(p->launches, p->nlaunches, sizeof(int64_t), ct_cmp_i64);
    if ((rc = ct_capture_finish(p, off)))
        return rc;
    ct_life_finish(&p->life, off);
    ct_ivset_normalize(&p->sync);
    ct_ivset_normalize(&p->data_wait);
    ct_ivset_normalize(&p->file_read);
    ct_ivset_normalize(&p->htod);
    ct_ivset_normalize(&p->ckpt);
    return 0;
}
