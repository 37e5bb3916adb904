/*
 * Streaming extraction of one trace file into a struct ct_proc, straight
 * from the reader's record callback: no record array, no sort of records.
 * Memory is the compact timeline (40-byte GPU intervals, 8-byte launch
 * times, NCCL ops, host interval sets) plus 16 bytes of join key per API
 * and GPU record, freed before returning.
 *
 * The result is exactly what ct_proc_extract() builds from a loaded trace
 * (tests/unit/test_extract.c checks it on shuffled traces), which walks the
 * records sorted by start time (stable: file order breaks ties). Here:
 *   - times are kept raw and the clock offset is added at the end, when
 *     every CLOCK record has been seen;
 *   - joins by correlation id (GPU interval -> launching call, NCCL op ->
 *     "has a GPU record", launch -> "was timed") are sort-merges of
 *     (corr, value) keys at the end; ids are a per-process counter, so the
 *     keys are nearly always sorted already and the sort is a check;
 *   - GPU intervals, NCCL ops and step ranges are appended in file order
 *     and stably sorted by their record's start time at the end (records of
 *     a file are time-ordered only per thread chunk), which reproduces the
 *     order of the sorted-record walk; name indexes are renumbered in order
 *     of first use in that order.
 * Never prints; safe to run concurrently on different files.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/health.h"
#include "decoder/stats.h"
#include "decoder/timeline.h"
#include "src/config.h"

#define NONE       UINT64_MAX
#define SYNTHETIC  UINT32_MAX /* provisional name of an op made from an NCCL record */
#define CKPT_BYTES (16ull << 20)

struct kv {
    uint64_t key, val;
};

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

/* A launch of an NCCL kernel: the call's span and correlation id. */
struct nccl_launch {
    struct span sp;
    uint64_t corr;
};

struct vec {
    void *p;
    size_t n, cap;
};

/* Room for one more element of `size` bytes. 0 or -ENOMEM. */
static int vec_room(struct vec *v, size_t size)
{
    if (v->n < v->cap)
        return 0;
    size_t cap = v->cap ? v->cap * 2 : 1024;
    void *q = realloc(v->p, cap * size);
    if (!q)
        return -ENOMEM;
    v->p = q;
    v->cap = cap;
    return 0;
}

static int push_kv(struct vec *v, uint64_t key, uint64_t val)
{
    if (vec_room(v, sizeof(struct kv)))
        return -ENOMEM;
    struct kv *e = (struct kv *)v->p + v->n++;
    e->key = key;
    e->val = val;
    return 0;
}

/*
 * Stable LSD radix sort of v[0..n) by key, 8 bits a pass over key - min:
 * only as many passes as the keys' range needs (time keys of one trace span
 * a few GB of nanoseconds, correlation ids are a small counter). Returns 0
 * or -ENOMEM. An already sorted array costs one read.
 */
static int sort_kv(struct kv *v, size_t n)
{
    size_t i = 1;
    while (i < n && v[i].key >= v[i - 1].key)
        i++;
    if (i >= n)
        return 0;
    struct kv *tmp = malloc(n * sizeof(*tmp));
    if (!tmp)
        return -ENOMEM;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (i = 0; i < n; i++) {
        lo = v[i].key < lo ? v[i].key : lo;
        hi = v[i].key > hi ? v[i].key : hi;
    }
    struct kv *src = v, *dst = tmp;
    for (unsigned sh = 0; sh < 64 && ((hi - lo) >> sh); sh += 8) {
        size_t pos[256] = {0};
        for (i = 0; i < n; i++)
            pos[((src[i].key - lo) >> sh) & 0xff]++;
        for (size_t d = 0, sum = 0; d < 256; d++) {
            size_t c = pos[d];
            pos[d] = sum;
            sum += c;
        }
        for (i = 0; i < n; i++)
            dst[pos[((src[i].key - lo) >> sh) & 0xff]++] = src[i];
        struct kv *t = src;
        src = dst;
        dst = t;
    }
    if (src != v)
        memcpy(v, src, n * sizeof(*v));
    free(tmp);
    return 0;
}

/* The same for plain keys (order only: no payload). */
static int sort_u64(uint64_t *v, size_t n)
{
    size_t i = 1;
    while (i < n && v[i] >= v[i - 1])
        i++;
    if (i >= n)
        return 0;
    size_t(*count)[256] = calloc(8, sizeof(*count));
    uint64_t *tmp = malloc(n * sizeof(*tmp));
    if (!count || !tmp) {
        free(count);
        free(tmp);
        return -ENOMEM;
    }
    for (i = 0; i < n; i++)
        for (unsigned d = 0; d < 8; d++)
            count[d][(v[i] >> (8 * d)) & 0xff]++;
    uint64_t *src = v, *dst = tmp;
    for (unsigned d = 0; d < 8; d++) {
        if (count[d][(v[0] >> (8 * d)) & 0xff] == n)
            continue;
        size_t pos = 0;
        for (unsigned b = 0; b < 256; b++) {
            size_t c = count[d][b];
            count[d][b] = pos;
            pos += c;
        }
        for (i = 0; i < n; i++)
            dst[count[d][(src[i] >> (8 * d)) & 0xff]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != v)
        memcpy(v, src, n * sizeof(*v));
    free(tmp);
    free(count);
    return 0;
}

/* Ascending signed order: the sign bit flipped makes it unsigned order. */
static int sort_i64(int64_t *v, size_t n)
{
    size_t i = 1;
    while (i < n && v[i] >= v[i - 1])
        i++;
    if (i >= n)
        return 0;
    uint64_t *u = (uint64_t *)v;
    for (i = 0; i < n; i++)
        u[i] ^= 1ull << 63;
    int rc = sort_u64(u, n);
    for (i = 0; i < n; i++)
        u[i] ^= 1ull << 63;
    return rc;
}

struct ex {
    struct ct_proc *p;
    struct ct_reader *rd;
    const char *step;
    uint64_t ord;      /* records seen so far: file order */
    struct vec ops;    /* struct ct_gop, raw times; name = provisional index */
    struct vec gcorr;  /* kv (corr, op index or NONE) of every GPU record */
    struct vec calls;  /* kv (corr, raw host start) of every API record */
    struct vec timed;  /* kv (corr, 0) of launches/copies/memsets that want a GPU record */
    struct vec nccl;   /* struct ct_nop, raw times; stays in file order until the end */
    struct vec nsynth; /* op index made from each NCCL op's own interval, or NONE */
    struct vec nord;   /* kv (raw host start, file order) of each NCCL op */
    struct vec nfb;    /* struct nccl_fb of each NCCL op: what the fallbacks need */
    struct vec gend;   /* kv (corr, index into gendv) of ncclGroupEnd API records */
    struct vec gendv;  /* struct span of each ncclGroupEnd record */
    struct vec nkl;    /* struct nccl_launch: launches of ncclDevKernel_* kernels */
    uint8_t *kcls;     /* per kernel string id: 0 unknown, 1 not NCCL, 2 NCCL */
    size_t kclsn;
    uint64_t gend_sid;   /* string id of "ncclGroupEnd", 0 until seen */
    struct vec steps;    /* struct ct_range, raw times */
    struct vec sord;     /* file order of each step */
    struct vec launches; /* int64 raw host starts */
    struct vec clock;    /* int64 realtime - monotonic of each CLOCK record */
    uint32_t *name_map;  /* trace string id -> provisional name index + 1 */
    size_t name_mapn;
    struct vec name_sid; /* uint32 trace string id of each provisional name */
    uint64_t host_sid, ppid_sid;
    int have_host, have_ppid;
    struct ct_hcollect health; /* counters, for decoder/health.c's cache */
};

static void ex_free(struct ex *x)
{
    struct ct_range *st = x->steps.p;
    for (size_t i = 0; i < x->steps.n; i++)
        free(st[i].msg);
    ct_hcollect_free(&x->health);
    struct vec *v[] = {&x->ops,  &x->gcorr, &x->calls, &x->timed,    &x->nccl,  &x->nsynth,
                       &x->nord, &x->steps, &x->sord,  &x->launches, &x->clock, &x->name_sid,
                       &x->nfb,  &x->gend,  &x->gendv, &x->nkl};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        free(v[i]->p);
    free(x->name_map);
    free(x->kcls);
}

static int name_of(struct ex *x, uint64_t sid, uint32_t *out)
{
    if (sid >= x->name_mapn) {
        size_t n = x->name_mapn ? x->name_mapn : 64;
        while (n <= sid)
            n *= 2;
        uint32_t *m = realloc(x->name_map, n * sizeof(*m));
        if (!m)
            return -ENOMEM;
        memset(m + x->name_mapn, 0, (n - x->name_mapn) * sizeof(*m));
        x->name_map = m;
        x->name_mapn = n;
    }
    if (!x->name_map[sid]) {
        if (vec_room(&x->name_sid, sizeof(uint32_t)))
            return -ENOMEM;
        ((uint32_t *)x->name_sid.p)[x->name_sid.n++] = (uint32_t)sid;
        x->name_map[sid] = (uint32_t)x->name_sid.n;
    }
    *out = x->name_map[sid] - 1;
    return 0;
}

static int on_gpu(struct ex *x, const uint64_t *f)
{
    uint64_t idx = NONE;
    if (f[CT_GPU_TYPE] != CT_GPU_SYNC && f[CT_GPU_END] > f[CT_GPU_START]) {
        if (vec_room(&x->ops, sizeof(struct ct_gop)))
            return -ENOMEM;
        struct ct_gop *g = (struct ct_gop *)x->ops.p + x->ops.n;
        memset(g, 0, sizeof(*g));
        g->s = (int64_t)f[CT_GPU_START];
        g->e = (int64_t)f[CT_GPU_END];
        g->stream = (uint32_t)f[CT_GPU_STREAM];
        g->type = (uint8_t)f[CT_GPU_TYPE];
        g->source = (uint8_t)f[CT_GPU_SOURCE];
        if (name_of(x, f[CT_GPU_NAME], &g->name))
            return -ENOMEM;
        if (g->source == CT_SRC_CUPTI)
            x->p->cov.gpu_cupti++;
        else if (g->source == CT_SRC_EVENTS)
            x->p->cov.gpu_events++;
        else if (g->source == CT_SRC_NCCL_PLUGIN)
            x->p->cov.gpu_plugin++;
        idx = x->ops.n++;
    }
    return push_kv(&x->gcorr, f[CT_GPU_CORR], idx);
}

static int push_launch(struct ex *x, uint64_t t)
{
    if (vec_room(&x->launches, sizeof(int64_t)))
        return -ENOMEM;
    ((int64_t *)x->launches.p)[x->launches.n++] = (int64_t)t;
    return 0;
}

static int on_nccl(struct ex *x, const uint64_t *f, uint32_t tid)
{
    if (vec_room(&x->nccl, sizeof(struct ct_nop)) || vec_room(&x->nsynth, sizeof(uint64_t)) ||
        vec_room(&x->nfb, sizeof(struct nccl_fb)) || push_kv(&x->nord, f[CT_NCCL_START], x->ord))
        return -ENOMEM;
    ((struct nccl_fb *)x->nfb.p)[x->nfb.n++] =
        (struct nccl_fb){f[CT_NCCL_GROUP], (uint32_t)f[CT_NCCL_STREAM], tid};
    struct ct_nop *n = (struct ct_nop *)x->nccl.p + x->nccl.n;
    memset(n, 0, sizeof(*n));
    n->host_s = (int64_t)f[CT_NCCL_START];
    n->host_e = (int64_t)f[CT_NCCL_END];
    n->comm = f[CT_NCCL_COMM];
    n->seq = f[CT_NCCL_SEQ];
    n->bytes = f[CT_NCCL_BYTES];
    n->corr = f[CT_NCCL_CORR];
    n->comm_rank = (int32_t)f[CT_NCCL_RANK];
    n->peer = (int32_t)f[CT_NCCL_PEER];
    n->nranks = (int32_t)f[CT_NCCL_NRANKS];
    n->op = (uint8_t)f[CT_NCCL_OP];
    n->cls = CT_CL_OTHER;
    uint64_t synth = NONE;
    if (f[CT_NCCL_GPU_START] && f[CT_NCCL_GPU_END] > f[CT_NCCL_GPU_START]) {
        n->s = (int64_t)f[CT_NCCL_GPU_START];
        n->e = (int64_t)f[CT_NCCL_GPU_END];
        /* the op's own interval is its GPU time only if no GPU record
         * carries its correlation id, known at the end: add it in file
         * order now and drop it then if one does */
        if (vec_room(&x->ops, sizeof(struct ct_gop)))
            return -ENOMEM;
        struct ct_gop *g = (struct ct_gop *)x->ops.p + x->ops.n;
        memset(g, 0, sizeof(*g));
        g->s = n->s;
        g->e = n->e;
        g->launch = n->host_s;
        g->stream = (uint32_t)f[CT_NCCL_STREAM];
        g->type = CT_GPU_NCCL;
        g->op = n->op;
        g->cls = CT_CL_OTHER;
        g->nccl = (int32_t)x->nccl.n;
        g->name = SYNTHETIC;
        synth = x->ops.n++;
    }
    ((uint64_t *)x->nsynth.p)[x->nsynth.n++] = synth;
    x->nccl.n++;
    return push_launch(x, f[CT_NCCL_START]);
}

/* Whether kernel string id sid names an NCCL kernel (cached per id). */
static int is_nccl_kernel(struct ex *x, uint64_t sid, int *yes)
{
    if (sid >= x->kclsn) {
        size_t n = x->kclsn ? x->kclsn : 64;
        while (n <= sid)
            n *= 2;
        uint8_t *k = realloc(x->kcls, n);
        if (!k)
            return -ENOMEM;
        memset(k + x->kclsn, 0, n - x->kclsn);
        x->kcls = k;
        x->kclsn = n;
    }
    if (!x->kcls[sid]) {
        const char *name = ct_reader_string(x->rd, sid);
        x->kcls[sid] =
            name && (!strncmp(name, "ncclDevKernel", 13) || !strncmp(name, "ncclKernel", 10)) ? 2
                                                                                              : 1;
    }
    *yes = x->kcls[sid] == 2;
    return 0;
}

/* What the NCCL fallbacks need from API records: ncclGroupEnd spans (their
 * correlation id is the group's id) and launches of NCCL kernels. */
static int note_nccl_calls(struct ex *x, const uint64_t *f, uint32_t tid)
{
    uint64_t fam = f[CT_API_FAMILY];
    struct span sp = {(int64_t)f[CT_API_START], (int64_t)f[CT_API_END], tid};
    if (fam == CT_FAM_OTHER) {
        uint64_t sid = f[CT_API_NAME];
        if (!x->gend_sid) {
            const char *name = ct_reader_string(x->rd, sid);
            if (!name || strcmp(name, "ncclGroupEnd") != 0)
                return 0;
            x->gend_sid = sid;
        }
        if (sid != x->gend_sid || vec_room(&x->gendv, sizeof(struct span)))
            return sid != x->gend_sid ? 0 : -ENOMEM;
        ((struct span *)x->gendv.p)[x->gendv.n] = sp;
        return push_kv(&x->gend, f[CT_API_CORR], x->gendv.n++);
    }
    if (fam != CT_FAM_LAUNCH)
        return 0;
    int yes;
    if (is_nccl_kernel(x, f[CT_API_KERNEL], &yes))
        return -ENOMEM;
    if (!yes)
        return 0;
    if (vec_room(&x->nkl, sizeof(struct nccl_launch)))
        return -ENOMEM;
    ((struct nccl_launch *)x->nkl.p)[x->nkl.n++] = (struct nccl_launch){sp, f[CT_API_CORR]};
    return 0;
}

static int on_api(struct ex *x, const uint64_t *f, uint32_t tid)
{
    uint64_t fam = f[CT_API_FAMILY];
    struct ct_proc *p = x->p;
    int rc = push_kv(&x->calls, f[CT_API_CORR], f[CT_API_START]);
    if (!rc && (fam == CT_FAM_OTHER || fam == CT_FAM_LAUNCH))
        rc = note_nccl_calls(x, f, tid);
    if (!rc && (fam == CT_FAM_LAUNCH || fam == CT_FAM_MEMCPY || fam == CT_FAM_MEMSET)) {
        rc = push_launch(x, f[CT_API_START]);
        if (!rc && !(f[CT_API_FLAGS] & CT_APIF_CAPTURED))
            rc = push_kv(&x->timed, f[CT_API_CORR], 0);
    }
    int64_t s = (int64_t)f[CT_API_START], e = (int64_t)f[CT_API_END];
    if (!rc && (fam == CT_FAM_SYNC || (fam == CT_FAM_MEMCPY && !(f[CT_API_FLAGS] & CT_APIF_ASYNC))))
        rc = ct_ivset_add(&p->sync, s, e);
    if (!rc && fam == CT_FAM_MEMCPY && f[CT_API_COPY_KIND] == CT_COPY_DTOH &&
        f[CT_API_BYTES] >= CKPT_BYTES)
        rc = ct_ivset_add(&p->ckpt, s, e);
    return rc;
}

static int on_step(struct ex *x, const struct ct_record *r)
{
    int mark = r->kind == CT_REC_NVTX_MARK;
    const char *msg = ct_reader_string(x->rd, mark ? r->f[CT_MARK_MESSAGE] : r->f[CT_NVTX_MESSAGE]);
    if (!ct_step_matches(msg, x->step))
        return 0;
    if (vec_room(&x->steps, sizeof(struct ct_range)) || vec_room(&x->sord, sizeof(uint64_t)))
        return -ENOMEM;
    struct ct_range *g = (struct ct_range *)x->steps.p + x->steps.n;
    g->s = (int64_t)r->f[0];
    g->e = mark ? g->s : (int64_t)r->f[CT_NVTX_END];
    g->msg = strdup(msg);
    if (!g->msg)
        return -ENOMEM;
    ((uint64_t *)x->sord.p)[x->sord.n++] = x->ord;
    x->steps.n++;
    return 0;
}

static int on_meta(struct ex *x, const uint64_t *f)
{
    if (f[CT_META_SCOPE] != CT_SCOPE_PROCESS)
        return 0;
    const char *key = ct_reader_string(x->rd, f[CT_META_KEY]);
    if (!strcmp(key, "rank")) { /* the last valid one, as ct_trace_load */
        long long v;
        if (ct_parse_int(ct_reader_string(x->rd, f[CT_META_VALUE]), 0, INT32_MAX, &v) == 0)
            x->p->rank = v;
    } else if (!strcmp(key, "host") && !x->have_host) { /* the first, as ct_trace_meta */
        x->host_sid = f[CT_META_VALUE];
        x->have_host = 1;
    } else if (!strcmp(key, "ppid") && !x->have_ppid) {
        x->ppid_sid = f[CT_META_VALUE];
        x->have_ppid = 1;
    }
    return 0;
}

static int on_record(void *ctx, const struct ct_record *r)
{
    struct ex *x = ctx;
    const uint64_t *f = r->f;
    int rc = 0;
    switch (r->kind) {
    case CT_REC_GPU: rc = on_gpu(x, f); break;
    case CT_REC_API: rc = on_api(x, f, r->tid); break;
    case CT_REC_NCCL: rc = on_nccl(x, f, r->tid); break;
    case CT_REC_IO: {
        const char *op = ct_reader_string(x->rd, f[CT_IO_OP]);
        if (ct_is_data_wait(op, f[CT_IO_FD_TYPE]))
            rc = ct_ivset_add(&x->p->data_wait, (int64_t)f[CT_IO_START], (int64_t)f[CT_IO_END]);
        else if (ct_is_ckpt_io(op, f[CT_IO_FD_TYPE]))
            rc = ct_ivset_add(&x->p->ckpt, (int64_t)f[CT_IO_START], (int64_t)f[CT_IO_END]);
        break;
    }
    case CT_REC_NVTX_RANGE:
    case CT_REC_NVTX_MARK: rc = on_step(x, r); break;
    case CT_REC_CLOCK:
        if ((rc = vec_room(&x->clock, sizeof(int64_t))) == 0)
            ((int64_t *)x->clock.p)[x->clock.n++] = (int64_t)(f[CT_CLOCK_REAL] - f[CT_CLOCK_MONO]);
        break;
    case CT_REC_META:
        rc = on_meta(x, f);
        if (!rc)
            rc = ct_hcollect_record(&x->health, x->rd, r);
        break;
    case CT_REC_COUNTER: rc = ct_hcollect_record(&x->health, x->rd, r); break;
    case CT_REC_DROP: x->p->cov.dropped += f[CT_DROP_COUNT]; break;
    default: break;
    }
    x->ord++;
    return rc;
}

/* Is `key` among the sorted kv keys from *pos on? Advances *pos (keys are
 * asked in increasing order). */
static int seek(const struct vec *v, size_t *pos, uint64_t key)
{
    const struct kv *a = v->p;
    while (*pos < v->n && a[*pos].key < key)
        (*pos)++;
    return *pos < v->n && a[*pos].key == key;
}

/* Index of the first entry of sorted v with key k, or -1. */
static long find_kv(const struct vec *v, uint64_t k)
{
    const struct kv *a = v->p;
    size_t lo = 0, hi = v->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid].key < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < v->n && a[lo].key == k ? (long)lo : -1;
}

/* The GPU interval standing for NCCL op i when no GPU record carries its
 * own correlation id (the rules of ct_trace_nccl_gpu in tracefile.h): a
 * record of its group's id (an event pair around the outermost
 * ncclGroupEnd; the one on the op's stream if there are several), else the
 * ncclDevKernel launch made inside the op's call, or inside its group's
 * ncclGroupEnd, on the same thread. Returns an op index or NONE. */
static uint64_t nccl_fallback(struct ex *x, size_t i)
{
    const struct ct_nop *n = (const struct ct_nop *)x->nccl.p + i;
    const struct nccl_fb *fb = (const struct nccl_fb *)x->nfb.p + i;
    const struct kv *gc = x->gcorr.p;
    const struct ct_gop *ops = x->ops.p;
    struct span sp = {n->host_s, n->host_e, fb->tid};
    if (fb->group) {
        uint64_t pick = NONE;
        for (long k = find_kv(&x->gcorr, fb->group);
             k >= 0 && (size_t)k < x->gcorr.n && gc[k].key == fb->group; k++) {
            if (gc[k].val == NONE || ops[gc[k].val].type != CT_GPU_NCCL)
                continue;
            if (pick == NONE || ops[gc[k].val].stream == fb->stream)
                pick = gc[k].val;
        }
        if (pick != NONE)
            return pick;
        long gi = find_kv(&x->gend, fb->group);
        if (gi < 0)
            return NONE;
        sp = ((const struct span *)x->gendv.p)[((const struct kv *)x->gend.p)[gi].val];
    }
    const struct nccl_launch *kl = x->nkl.p;
    for (size_t k = 0; k < x->nkl.n; k++) {
        if (kl[k].sp.tid != sp.tid || kl[k].sp.s < sp.s || kl[k].sp.e > sp.e)
            continue;
        long g = find_kv(&x->gcorr, kl[k].corr);
        for (; g >= 0 && (size_t)g < x->gcorr.n && gc[g].key == kl[k].corr; g++)
            if (gc[g].val != NONE && ops[gc[g].val].type == CT_GPU_KERNEL)
                return gc[g].val;
    }
    return NONE;
}

/* Links NCCL op i to GPU interval o; an interval already linked to another
 * op of the same group is copied (a fused kernel, or a group's event pair,
 * is each member's GPU time). */
static int link_nccl(struct ex *x, uint64_t o, size_t i)
{
    struct ct_gop *ops = x->ops.p;
    if (ops[o].nccl < 0) {
        ops[o].nccl = (int32_t)i;
        return 0;
    }
    if (vec_room(&x->ops, sizeof(struct ct_gop)))
        return -ENOMEM;
    ops = x->ops.p;
    ops[x->ops.n] = ops[o];
    ops[x->ops.n++].nccl = (int32_t)i;
    return 0;
}

/*
 * The kernels NCCL launched inside an op's call (or its group's
 * ncclGroupEnd) that are not the op's GPU time — the plugin or an event
 * pair timed the op — still belong to it: they are linked for their class
 * (nested), so one op's work is not data-parallel as a kernel and "other"
 * as an op.
 */
static int link_nested(struct ex *x)
{
    size_t nn = x->nccl.n, nl = x->nkl.n;
    if (!nn || !nl)
        return 0;
    const struct ct_nop *nccl = x->nccl.p;
    const struct nccl_fb *fb = x->nfb.p;
    const struct nccl_launch *kl = x->nkl.p;
    struct span *sp = malloc(nn * sizeof(*sp));
    struct kv *bys = malloc(nn * sizeof(*bys)), *byl = malloc(nl * sizeof(*byl));
    struct {
        uint32_t tid;
        size_t span;
    } last[64];
    size_t nlast = 0;
    int rc = sp && bys && byl ? 0 : -ENOMEM;
    for (size_t i = 0; i < nn && !rc; i++) {
        sp[i] = (struct span){nccl[i].host_s, nccl[i].host_e, fb[i].tid};
        long g = fb[i].group ? find_kv(&x->gend, fb[i].group) : -1;
        if (g >= 0)
            sp[i] = ((const struct span *)x->gendv.p)[((const struct kv *)x->gend.p)[g].val];
        bys[i] = (struct kv){(uint64_t)sp[i].s, i};
    }
    for (size_t k = 0; k < nl && !rc; k++)
        byl[k] = (struct kv){(uint64_t)kl[k].sp.s, k};
    if (!rc)
        rc = sort_kv(bys, nn) ? -ENOMEM : sort_kv(byl, nl) ? -ENOMEM : 0;
    const struct kv *gc = x->gcorr.p;
    struct ct_gop *ops = x->ops.p;
    for (size_t k = 0, s = 0; k < nl && !rc; k++) {
        const struct nccl_launch *l = &kl[byl[k].val];
        /* the latest span of each thread that starts at or before l */
        for (; s < nn && (int64_t)bys[s].key <= l->sp.s; s++) {
            uint32_t tid = sp[bys[s].val].tid;
            size_t j = 0;
            while (j < nlast && last[j].tid != tid)
                j++;
            if (j == nlast && nlast < sizeof(last) / sizeof(last[0]))
                last[nlast++].tid = tid;
            if (j < nlast)
                last[j].span = bys[s].val;
        }
        size_t j = 0;
        while (j < nlast && last[j].tid != l->sp.tid)
            j++;
        if (j == nlast || sp[last[j].span].e < l->sp.e)
            continue;
        for (long g = find_kv(&x->gcorr, l->corr);
             g >= 0 && (size_t)g < x->gcorr.n && gc[g].key == l->corr; g++) {
            struct ct_gop *o = gc[g].val == NONE ? NULL : &ops[gc[g].val];
            if (o && o->type == CT_GPU_KERNEL && o->nccl < 0) {
                o->nccl = (int32_t)last[j].span;
                o->nested = 1;
            }
        }
    }
    free(sp);
    free(bys);
    free(byl);
    return rc;
}

/*
 * Joins every GPU interval to the call that enqueued it (an NCCL op's or an
 * API record's correlation id) and classifies it; counts untimed launches;
 * drops NCCL ops' own intervals where a GPU record exists. All key arrays
 * sorted by correlation id.
 */
static int join(struct ex *x, const uint8_t *name_op)
{
    struct ct_proc *p = x->p;
    struct ct_gop *ops = x->ops.p;
    const struct kv *gc = x->gcorr.p;
    const struct ct_nop *nccl = x->nccl.p;
    struct vec ncorr = {0}; /* kv (corr, NCCL op index) */
    for (size_t i = 0; i < x->nccl.n; i++)
        if (push_kv(&ncorr, nccl[i].corr, i)) {
            free(ncorr.p);
            return -ENOMEM;
        }
    if (sort_kv(ncorr.p, ncorr.n) || sort_kv(x->gcorr.p, x->gcorr.n) ||
        sort_kv(x->gend.p, x->gend.n) || sort_kv(x->calls.p, x->calls.n) ||
        sort_kv(x->timed.p, x->timed.n)) {
        free(ncorr.p);
        return -ENOMEM;
    }
    size_t ia = 0, in = 0;
    for (size_t i = 0; i < x->gcorr.n; i++) {
        if (gc[i].val == NONE)
            continue;
        struct ct_gop *g = &ops[gc[i].val];
        uint64_t corr = gc[i].key;
        const struct ct_nop *call = NULL;
        g->launch = INT64_MIN;
        g->nccl = -1;
        /* ct_trace_call: never for id 0; an id on both an NCCL and an API
         * record (not written by the shim) joins the NCCL op */
        if (corr && seek(&ncorr, &in, corr)) {
            call = &nccl[((const struct kv *)ncorr.p)[in].val];
            g->launch = call->host_s;
            g->nccl = (int32_t)((const struct kv *)ncorr.p)[in].val;
        } else if (corr && seek(&x->calls, &ia, corr)) {
            g->launch = (int64_t)((const struct kv *)x->calls.p)[ia].val;
        }
        uint8_t kop = name_op[g->name];
        if (g->type == CT_GPU_MEMCPY || g->type == CT_GPU_MEMSET)
            g->cls = CT_CL_MEMORY;
        else if (g->type == CT_GPU_NCCL || call)
            g->cls = CT_CL_OTHER, g->op = call ? call->op : kop;
        else if ((g->op = kop) != 0)
            g->cls = CT_CL_OTHER;
        else
            g->cls = CT_CL_COMPUTE;
    }
    /* launches and copies without any GPU record (of any type) */
    size_t ig = 0;
    const struct kv *tm = x->timed.p;
    for (size_t i = 0; i < x->timed.n; i++)
        if (!seek(&x->gcorr, &ig, tm[i].key))
            p->cov.untimed++;
    /* NCCL ops without a GPU record of their own: their group's, or the
     * kernel launched inside their call (kept in nccl_fb) */
    uint8_t *fell = calloc(x->nccl.n ? x->nccl.n : 1, 1);
    if (!fell) {
        free(ncorr.p);
        return -ENOMEM;
    }
    ig = 0;
    const struct kv *nc = ncorr.p;
    for (size_t i = 0; i < ncorr.n; i++) {
        if (nc[i].key && seek(&x->gcorr, &ig, nc[i].key))
            continue;
        uint64_t o = nccl_fallback(x, nc[i].val);
        if (o != NONE) {
            if (link_nccl(x, o, nc[i].val)) {
                free(fell);
                free(ncorr.p);
                return -ENOMEM;
            }
            fell[nc[i].val] = 1;
        }
    }
    if (link_nested(x)) {
        free(fell);
        free(ncorr.p);
        return -ENOMEM;
    }
    ops = x->ops.p;
    /* an NCCL op's own interval stands only without a GPU record */
    ig = 0;
    uint64_t *synth = x->nsynth.p;
    for (size_t i = 0; i < ncorr.n; i++) {
        uint64_t o = synth[nc[i].val];
        if (o == NONE)
            continue;
        if (seek(&x->gcorr, &ig, nc[i].key) || fell[nc[i].val])
            ops[o].name = SYNTHETIC - 1; /* dropped below */
        else
            p->cov.gpu_nccl_record++;
    }
    free(fell);
    free(ncorr.p);
    size_t w = 0;
    for (size_t i = 0; i < x->ops.n; i++)
        if (ops[i].name != SYNTHETIC - 1)
            ops[w++] = ops[i];
    x->ops.n = w;
    return 0;
}

/* Stable order of n items by (raw start time key, file order): items are
 * in file order, so a stable sort by key. perm[new] = old. */
static int order(const struct kv *keys, size_t n, size_t **perm)
{
    struct kv *k = malloc((n ? n : 1) * sizeof(*k));
    *perm = malloc((n ? n : 1) * sizeof(**perm));
    if (!k || !*perm) {
        free(k);
        return -ENOMEM;
    }
    memcpy(k, keys, n * sizeof(*k));
    for (size_t i = 0; i < n; i++)
        k[i].val = i;
    int rc = sort_kv(k, n);
    for (size_t i = 0; i < n && !rc; i++)
        (*perm)[i] = (size_t)k[i].val;
    free(k);
    return rc;
}

static int finish(struct ex *x)
{
    struct ct_proc *p = x->p;
    int rc = 0;
    /* the op of each kernel name, from the final strings */
    size_t nnames = x->name_sid.n;
    const uint32_t *sid = x->name_sid.p;
    uint8_t *name_op = malloc(nnames ? nnames : 1);
    if (!name_op)
        return -ENOMEM;
    for (size_t i = 0; i < nnames; i++)
        name_op[i] = (uint8_t)ct_nccl_op_from_kernel(ct_reader_string(x->rd, sid[i]));
    rc = join(x, name_op);
    free(name_op);
    if (rc)
        return rc;

    /* NCCL ops by host start; ops link to them through inv */
    size_t *perm = NULL, *inv = NULL;
    size_t nn = x->nccl.n;
    if ((rc = order(x->nord.p, nn, &perm)))
        goto out;
    inv = malloc((nn ? nn : 1) * sizeof(*inv));
    p->nccl = malloc((nn ? nn : 1) * sizeof(*p->nccl));
    if (!inv || !p->nccl) {
        rc = -ENOMEM;
        goto out;
    }
    const struct ct_nop *nsrc = x->nccl.p;
    for (size_t i = 0; i < nn; i++) {
        p->nccl[i] = nsrc[perm[i]];
        inv[perm[i]] = i;
    }
    p->nnccl = nn;
    free(perm);
    perm = NULL;

    /* ops by their record's start: a GPU record's GPU start, an NCCL
     * record's host start for an op made from it */
    size_t no = x->ops.n;
    struct ct_gop *ops = x->ops.p;
    struct kv *ok = malloc((no ? no : 1) * sizeof(*ok));
    if (!ok) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < no; i++)
        ok[i].key = (uint64_t)(ops[i].name == SYNTHETIC ? ops[i].launch : ops[i].s);
    rc = order(ok, no, &perm);
    free(ok);
    if (rc)
        goto out;
    p->ops = malloc((no ? no : 1) * sizeof(*p->ops));
    uint32_t *renum = calloc(nnames ? nnames : 1, sizeof(*renum));
    p->names = calloc(nnames ? nnames : 1, sizeof(*p->names));
    if (!p->ops || !renum || !p->names) {
        free(renum);
        rc = -ENOMEM;
        goto out;
    }
    const int64_t off = p->clock_offset;
    for (size_t i = 0; i < no; i++) {
        struct ct_gop g = ops[perm[i]];
        if (g.name == SYNTHETIC) {
            g.name = 0;
        } else {
            if (!renum[g.name]) {
                p->names[p->nnames] = strdup(ct_reader_string(x->rd, sid[g.name]));
                if (!p->names[p->nnames]) {
                    rc = -ENOMEM;
                    break;
                }
                renum[g.name] = (uint32_t)++p->nnames;
            }
            g.name = renum[g.name] - 1;
        }
        if (g.nccl >= 0)
            g.nccl = (int32_t)inv[g.nccl];
        g.s += off;
        g.e += off;
        if (g.launch != INT64_MIN)
            g.launch += off;
        p->ops[i] = g;
    }
    free(renum);
    if (rc)
        goto out;
    p->nops = no;
    for (size_t i = 0; i < nn; i++) {
        struct ct_nop *n = &p->nccl[i];
        n->host_s += off;
        n->host_e += off;
        if (n->e) {
            n->s += off;
            n->e += off;
        }
    }

    /* steps in record order */
    size_t ns = x->steps.n;
    struct kv *sk = malloc((ns ? ns : 1) * sizeof(*sk));
    if (!sk) {
        rc = -ENOMEM;
        goto out;
    }
    const struct ct_range *st = x->steps.p;
    for (size_t i = 0; i < ns; i++)
        sk[i].key = (uint64_t)st[i].s;
    free(perm);
    rc = order(sk, ns, &perm);
    free(sk);
    if (rc)
        goto out;
    p->steps = malloc((ns ? ns : 1) * sizeof(*p->steps));
    if (!p->steps) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < ns; i++) {
        p->steps[i] = st[perm[i]];
        p->steps[i].s += off;
        p->steps[i].e += off;
    }
    p->nsteps = ns;
    x->steps.n = 0; /* messages now owned by p */

    p->launches = x->launches.p;
    p->nlaunches = x->launches.n;
    x->launches.p = NULL;
    for (size_t i = 0; i < p->nlaunches; i++)
        p->launches[i] += off;
    if ((rc = sort_i64(p->launches, p->nlaunches)))
        goto out;
    struct ct_ivset *sets[] = {&p->sync, &p->data_wait, &p->ckpt};
    for (size_t k = 0; k < 3; k++) {
        for (size_t i = 0; i < sets[k]->n; i++) {
            sets[k]->v[i].s += off;
            sets[k]->v[i].e += off;
        }
        ct_ivset_normalize(sets[k]);
    }
out:
    free(perm);
    free(inv);
    return rc;
}

#define F(x) (UINT32_C(1) << (x))

/* The fields the handlers above read, for the two kinds that are most of a
 * trace (calls and GPU records): the decoder skips the others (grid and
 * block sizes, results, devices...), a third of its work. Every other kind
 * is read whole. A handler that reads a new field must add it here: it
 * would otherwise see 0 (tests/unit's extract suite compares against a
 * full decode). */
static const uint32_t *extract_fields(void)
{
    static uint32_t m[CT_REC_KIND_COUNT];
    if (!m[0]) {
        for (unsigned k = 0; k < CT_REC_KIND_COUNT; k++)
            m[k] = UINT32_MAX;
        m[CT_REC_API] = F(CT_API_START) | F(CT_API_END) | F(CT_API_NAME) | F(CT_API_CORR) |
                        F(CT_API_FAMILY) | F(CT_API_KERNEL) | F(CT_API_BYTES) |
                        F(CT_API_COPY_KIND) | F(CT_API_FLAGS);
        m[CT_REC_GPU] = F(CT_GPU_START) | F(CT_GPU_END) | F(CT_GPU_STREAM) | F(CT_GPU_CORR) |
                        F(CT_GPU_TYPE) | F(CT_GPU_NAME) | F(CT_GPU_SOURCE);
    }
    return m;
}

#undef F

int ct_proc_extract_file(const char *path, const char *step_name, struct ct_proc *p, char *err,
                         size_t errlen)
{
    memset(p, 0, sizeof(*p));
    p->rank = -1;
    struct ct_reader rd;
    struct ex x = {.p = p, .rd = &rd, .step = step_name ? step_name : "ProfilerStep"};
    ct_hcollect_init(&x.health);
    p->path = strdup(path);
    if (!p->path) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -ENOMEM;
    }
    int rc = ct_reader_open(&rd, p->path);
    if (rc) {
        snprintf(err, errlen, "%s", rd.err);
        ct_proc_free(p);
        return rc;
    }
    struct ct_chunk_sink sink = {&x, NULL, on_record, extract_fields()};
    while ((rc = ct_reader_next(&rd, &sink)) > 0)
        ;
    if (rc < 0) {
        if (rc == -ENOMEM)
            snprintf(err, errlen, "%s: out of memory", path);
        else
            snprintf(err, errlen, "%s", rd.err[0] ? rd.err : strerror(-rc));
        goto fail;
    }
    p->pid = rd.hdr.pid;
    p->cov.processes = 1;
    p->cov.truncated = !rd.has_footer;
    p->cov.damaged = rd.damage_total;
    p->clock_offset = x.clock.n ? ct_median_i64(x.clock.p, x.clock.n)
                                : (int64_t)(rd.hdr.start_real_ns - rd.hdr.start_mono_ns);
    const char *pp = x.have_ppid ? ct_reader_string(&rd, x.ppid_sid) : NULL;
    p->ppid = pp ? (uint32_t)strtoul(pp, NULL, 10) : 0;
    p->host = strdup(x.have_host ? ct_reader_string(&rd, x.host_sid) : "");
    rc = p->host ? finish(&x) : -ENOMEM;
    if (rc) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto fail;
    }
    ct_hcollect_publish(&x.health, p->path);
    ex_free(&x);
    ct_reader_close(&rd);
    return 0;
fail:
    ex_free(&x);
    ct_reader_close(&rd);
    ct_proc_free(p);
    return rc;
}
