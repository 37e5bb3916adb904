/* Loading a trace file into a sorted record array. */
#include "decoder/read/tracefile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/util/comm_kernels.h"
#include "src/config.h"

struct load_ctx {
    struct ct_trace *t;
    int keep;
};

static uint64_t record_end(const struct ct_record *r)
{
    const struct ct_kind_desc *d = &ct_kind_table[r->kind];
    if (d->nfields > 1 && d->codec[1] == CT_CODEC_END)
        return r->f[1];
    return r->f[0];
}

static int on_record(void *ctx, const struct ct_record *r)
{
    struct load_ctx *lc = ctx;
    struct ct_trace *t = lc->t;
    t->count[r->kind]++;
    uint64_t start = r->f[0], end = record_end(r);
    if (t->first_ns == 0 || start < t->first_ns)
        t->first_ns = start;
    if (end > t->last_ns)
        t->last_ns = end;
    if (r->kind == CT_REC_DROP)
        t->dropped += r->f[CT_DROP_COUNT];
    if (r->kind == CT_REC_META && r->f[CT_META_SCOPE] == CT_SCOPE_PROCESS &&
        strcmp(ct_reader_string(&t->rd, r->f[CT_META_KEY]), "rank") == 0) {
        long long v;
        if (ct_parse_int(ct_reader_string(&t->rd, r->f[CT_META_VALUE]), 0, INT32_MAX, &v) == 0)
            t->rank = v;
    }
    if (r->kind == CT_REC_META) {
        if (t->nmeta == t->meta_cap) {
            size_t cap = t->meta_cap ? t->meta_cap * 2 : 64;
            struct ct_record *nm = realloc(t->meta, cap * sizeof(*nm));
            if (!nm)
                return -ENOMEM;
            t->meta = nm;
            t->meta_cap = cap;
        }
        t->meta[t->nmeta++] = *r;
    }
    if (!lc->keep)
        return 0;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 1024;
        struct ct_record *nr = realloc(t->recs, cap * sizeof(*nr));
        if (!nr)
            return -ENOMEM;
        t->recs = nr;
        t->cap = cap;
    }
    t->recs[t->n++] = *r;
    return 0;
}

struct sort_key {
    uint64_t time;
    size_t idx;
};

static int cmp_key(const void *a, const void *b)
{
    const struct sort_key *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Stable sort by start time: qsort is not stable, so sort (time, index). */
static int sort_records(struct ct_trace *t)
{
    int sorted = 1;
    for (size_t i = 1; i < t->n && sorted; i++)
        sorted = t->recs[i].f[0] >= t->recs[i - 1].f[0];
    if (sorted)
        return 0;
    struct sort_key *k = malloc(t->n * sizeof(*k));
    struct ct_record *out = malloc(t->n * sizeof(*out));
    if (!k || !out) {
        free(k);
        free(out);
        return -ENOMEM;
    }
    for (size_t i = 0; i < t->n; i++) {
        k[i].time = t->recs[i].f[0];
        k[i].idx = i;
    }
    qsort(k, t->n, sizeof(*k), cmp_key);
    for (size_t i = 0; i < t->n; i++)
        out[i] = t->recs[k[i].idx];
    free(k);
    free(t->recs);
    t->recs = out;
    t->cap = t->n;
    return 0;
}

int ct_trace_load(struct ct_trace *t, const char *path, int keep_records, char *err, size_t errlen)
{
    memset(t, 0, sizeof(*t));
    t->rank = -1;
    t->path = strdup(path);
    if (!t->path) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -ENOMEM;
    }
    int rc = ct_reader_open(&t->rd, t->path);
    if (rc) {
        snprintf(err, errlen, "%s", t->rd.err);
        free(t->path);
        t->path = NULL;
        return rc;
    }
    /* Without the records (`cutrace info`), on_record reads only times of
     * most kinds: their other fields are not decoded (a third less time) */
    uint32_t summary[CT_REC_KIND_COUNT] = {0};
    summary[CT_REC_META] = summary[CT_REC_DROP] = UINT32_MAX;
    struct load_ctx lc = {t, keep_records};
    struct ct_chunk_sink sink = {&lc, NULL, on_record, keep_records ? NULL : summary, NULL};
    while ((rc = ct_reader_next(&t->rd, &sink)) > 0)
        ;
    if (rc < 0) {
        if (rc == -ENOMEM)
            snprintf(err, errlen, "%s: out of memory", path);
        else
            snprintf(err, errlen, "%s", t->rd.err[0] ? t->rd.err : strerror(-rc));
        ct_trace_free(t);
        return rc;
    }
    ct_reader_release_io(&t->rd);
    if (keep_records && sort_records(t) != 0) {
        snprintf(err, errlen, "%s: out of memory", path);
        ct_trace_free(t);
        return -ENOMEM;
    }
    return 0;
}

static uint64_t call_corr(const struct ct_record *r)
{
    return r->kind == CT_REC_API ? r->f[CT_API_CORR] : r->f[CT_NCCL_CORR];
}

static int cmp_corr(const void *a, const void *b, void *ctx)
{
    const struct ct_trace *t = ctx;
    uint64_t x = call_corr(&t->recs[*(const size_t *)a]);
    uint64_t y = call_corr(&t->recs[*(const size_t *)b]);
    return (x > y) - (x < y);
}

const struct ct_record *ct_trace_call(struct ct_trace *t, uint64_t corr)
{
    if (corr == 0)
        return NULL;
    if (!t->api_by_corr) {
        size_t n = 0;
        for (size_t i = 0; i < t->n; i++)
            n += t->recs[i].kind == CT_REC_API || t->recs[i].kind == CT_REC_NCCL;
        t->api_by_corr = malloc((n ? n : 1) * sizeof(size_t));
        if (!t->api_by_corr)
            return NULL;
        n = 0;
        for (size_t i = 0; i < t->n; i++)
            if (t->recs[i].kind == CT_REC_API || t->recs[i].kind == CT_REC_NCCL)
                t->api_by_corr[n++] = i;
        qsort_r(t->api_by_corr, n, sizeof(size_t), cmp_corr, t);
        t->napi = n;
    }
    size_t lo = 0, hi = t->napi;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint64_t c = call_corr(&t->recs[t->api_by_corr[mid]]);
        if (c < corr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < t->napi && call_corr(&t->recs[t->api_by_corr[lo]]) == corr)
        return &t->recs[t->api_by_corr[lo]];
    return NULL;
}

static int cmp_gpu_corr(const void *a, const void *b, void *ctx)
{
    const struct ct_trace *t = ctx;
    uint64_t x = t->recs[*(const size_t *)a].f[CT_GPU_CORR];
    uint64_t y = t->recs[*(const size_t *)b].f[CT_GPU_CORR];
    return (x > y) - (x < y);
}

int ct_gpu_source_rank(uint64_t source)
{
    switch (source) {
    case CT_SRC_NCCL_PLUGIN: return 3;
    case CT_SRC_CUPTI: return 2;
    case CT_SRC_EVENTS:
    case CT_SRC_EVENTS_BLOCKING: return 1;
    default: return 0;
    }
}

static int cmp_group(const void *a, const void *b, void *ctx)
{
    const struct ct_trace *t = ctx;
    uint64_t x = t->recs[*(const size_t *)a].f[CT_NCCL_GROUP];
    uint64_t y = t->recs[*(const size_t *)b].f[CT_NCCL_GROUP];
    return (x > y) - (x < y);
}

/* 1 when an NCCL op of group `group` has a GPU record ranked above mine. */
static int member_better(struct ct_trace *t, uint64_t group, int mine)
{
    if (!t->nccl_by_group) {
        size_t m = 0;
        t->nccl_by_group =
            malloc((t->count[CT_REC_NCCL] ? t->count[CT_REC_NCCL] : 1) * sizeof(size_t));
        if (!t->nccl_by_group)
            return 0; /* no memory: drawn twice rather than not at all */
        for (size_t i = 0; i < t->n; i++)
            if (t->recs[i].kind == CT_REC_NCCL && t->recs[i].f[CT_NCCL_GROUP])
                t->nccl_by_group[m++] = i;
        qsort_r(t->nccl_by_group, m, sizeof(size_t), cmp_group, t);
        t->ngrouped = m;
    }
    size_t lo = 0, hi = t->ngrouped;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->recs[t->nccl_by_group[mid]].f[CT_NCCL_GROUP] < group)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < t->ngrouped && t->recs[t->nccl_by_group[lo]].f[CT_NCCL_GROUP] == group; lo++) {
        size_t n;
        const size_t *g = ct_trace_gpu(t, t->recs[t->nccl_by_group[lo]].f[CT_NCCL_CORR], &n);
        for (size_t i = 0; i < n; i++)
            if (ct_gpu_source_rank(t->recs[g[i]].f[CT_GPU_SOURCE]) > mine)
                return 1;
    }
    return 0;
}

int ct_trace_gpu_superseded(struct ct_trace *t, const struct ct_record *r)
{
    size_t n;
    uint64_t corr = r->f[CT_GPU_CORR];
    const size_t *g = ct_trace_gpu(t, corr, &n);
    int mine = ct_gpu_source_rank(r->f[CT_GPU_SOURCE]);
    for (size_t i = 0; i < n; i++) {
        const struct ct_record *o = &t->recs[g[i]];
        if (o->f[CT_GPU_TYPE] == r->f[CT_GPU_TYPE] &&
            ct_gpu_source_rank(o->f[CT_GPU_SOURCE]) > mine)
            return 1;
    }
    /* a group's own interval: the correlation id of its ncclGroupEnd,
     * which the members carry as their group id */
    return r->f[CT_GPU_TYPE] == CT_GPU_NCCL && corr && member_better(t, corr, mine);
}

const size_t *ct_trace_gpu(struct ct_trace *t, uint64_t corr, size_t *n)
{
    *n = 0;
    if (corr == 0)
        return NULL;
    if (!t->gpu_by_corr) {
        size_t m = t->count[CT_REC_GPU];
        t->gpu_by_corr = malloc((m ? m : 1) * sizeof(size_t));
        if (!t->gpu_by_corr)
            return NULL;
        m = 0;
        for (size_t i = 0; i < t->n; i++)
            if (t->recs[i].kind == CT_REC_GPU)
                t->gpu_by_corr[m++] = i;
        qsort_r(t->gpu_by_corr, m, sizeof(size_t), cmp_gpu_corr, t);
        t->ngpu = m;
    }
    size_t lo = 0, hi = t->ngpu;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->recs[t->gpu_by_corr[mid]].f[CT_GPU_CORR] < corr)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t first = lo;
    while (lo < t->ngpu && t->recs[t->gpu_by_corr[lo]].f[CT_GPU_CORR] == corr)
        lo++;
    *n = lo - first;
    return *n ? &t->gpu_by_corr[first] : NULL;
}

/* Best GPU interval among the records of one correlation id: the plugin's,
 * else any other of type nccl. */
static unsigned nccl_interval(struct ct_trace *t, uint64_t corr, uint64_t *s, uint64_t *e)
{
    size_t n;
    const size_t *ix = ct_trace_gpu(t, corr, &n);
    unsigned best = 0;
    for (size_t i = 0; i < n; i++) {
        const uint64_t *f = t->recs[ix[i]].f;
        if (f[CT_GPU_TYPE] != CT_GPU_NCCL)
            continue;
        unsigned src = (unsigned)f[CT_GPU_SOURCE];
        if (!best || src == CT_SRC_NCCL_PLUGIN) {
            best = src;
            *s = f[CT_GPU_START];
            *e = f[CT_GPU_END];
        }
    }
    return best;
}

/* The ncclDevKernel launch, or the launch of a kernel the table of
 * communication kernels names (NVSHMEM's on-stream kernels: the decoder's
 * rule, decoder/read/extract_nccl.c), made on `tid` during [t0, t1], from
 * record index `from` on (records are sorted by start time); with `hull`
 * (an NVSHMEM op) the hull of every such kernel on `stream`. */
static unsigned nested_kernel(struct ct_trace *t, size_t from, uint32_t tid, uint64_t t0,
                              uint64_t t1, int hull, uint64_t stream, uint64_t *s, uint64_t *e)
{
    unsigned src = 0;
    for (size_t i = from; i < t->n && t->recs[i].f[0] <= t1; i++) {
        const struct ct_record *r = &t->recs[i];
        if (r->kind != CT_REC_API || r->tid != tid || r->f[CT_API_FAMILY] != CT_FAM_LAUNCH ||
            r->f[CT_API_START] < t0 || r->f[CT_API_END] > t1 ||
            (hull && r->f[CT_API_STREAM] != stream))
            continue;
        const char *k = ct_reader_string(&t->rd, r->f[CT_API_KERNEL]);
        if (!k || (strncmp(k, "ncclDevKernel", 13) != 0 && !ct_comm_kernel_op(k)))
            continue;
        size_t n;
        const size_t *ix = ct_trace_gpu(t, r->f[CT_API_CORR], &n);
        for (size_t j = 0; j < n; j++) {
            const uint64_t *f = t->recs[ix[j]].f;
            if (f[CT_GPU_TYPE] != CT_GPU_KERNEL)
                continue;
            if (!src || f[CT_GPU_START] < *s)
                *s = f[CT_GPU_START];
            if (!src || f[CT_GPU_END] > *e)
                *e = f[CT_GPU_END];
            src = src ? src : (unsigned)f[CT_GPU_SOURCE];
            if (!hull)
                return src;
            break;
        }
    }
    return src;
}

unsigned ct_trace_nccl_gpu(struct ct_trace *t, const struct ct_record *op, uint64_t *start,
                           uint64_t *end)
{
    if (op->f[CT_NCCL_GPU_START]) {
        *start = op->f[CT_NCCL_GPU_START];
        *end = op->f[CT_NCCL_GPU_END];
        return CT_SRC_NCCL_PLUGIN;
    }
    unsigned src = nccl_interval(t, op->f[CT_NCCL_CORR], start, end);
    if (src == CT_SRC_NCCL_PLUGIN)
        return src;
    uint64_t group = op->f[CT_NCCL_GROUP];
    if (!src && group)
        src = nccl_interval(t, group, start, end);
    if (src)
        return src;
    /* the kernel NCCL launched inside the op's call, or its group's end */
    const struct ct_record *span = op;
    uint64_t t0 = op->f[CT_NCCL_START], t1 = op->f[CT_NCCL_END];
    if (group) {
        span = ct_trace_call(t, group);
        if (!span || span->kind != CT_REC_API)
            return 0;
        t0 = span->f[CT_API_START];
        t1 = span->f[CT_API_END];
    }
    size_t lo = 0, hi = t->n; /* first record starting at or after t0 */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->recs[mid].f[0] < t0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return nested_kernel(t, lo, span->tid, t0, t1, !!(op->f[CT_NCCL_DTYPE] & CT_NCCL_DTYPE_NVSHMEM),
                         op->f[CT_NCCL_STREAM], start, end);
}

void ct_trace_free(struct ct_trace *t)
{
    free(t->gpu_by_corr);
    free(t->nccl_by_group);
    free(t->api_by_corr);
    free(t->mods);
    free(t->stacks);
    ct_reader_close(&t->rd);
    free(t->recs);
    free(t->meta);
    free(t->path);
    memset(t, 0, sizeof(*t));
}

const char *ct_trace_meta(const struct ct_trace *t, const char *key)
{
    for (size_t i = 0; i < t->nmeta; i++) {
        const struct ct_record *r = &t->meta[i];
        if (r->f[CT_META_SCOPE] == CT_SCOPE_PROCESS &&
            strcmp(ct_reader_string(&t->rd, r->f[CT_META_KEY]), key) == 0)
            return ct_reader_string(&t->rd, r->f[CT_META_VALUE]);
    }
    return NULL;
}

/* A launch that wants a GPU record: its stream, host start, and whether
 * its GPU interval arrived. */
struct pend {
    uint64_t stream;
    int64_t launch;
    int timed;
};

static int cmp_pend(const void *a, const void *b)
{
    const struct pend *x = a, *y = b;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    return (x->launch > y->launch) - (x->launch < y->launch);
}

int ct_trace_undelivered(struct ct_trace *t, uint64_t *n, int64_t *from)
{
    *n = 0;
    *from = INT64_MAX;
    if (!t->rd.salvaged || !(t->rd.salvage.flags & CT_SALVAGE_GPU_PENDING))
        return 0;
    struct pend *u = malloc((t->n ? t->n : 1) * sizeof(*u));
    if (!u)
        return -ENOMEM;
    size_t m = 0;
    int64_t any = INT64_MIN; /* the last delivered launch on any stream */
    for (size_t i = 0; i < t->n; i++) {
        const struct ct_record *r = &t->recs[i];
        uint64_t fam = r->f[CT_API_FAMILY];
        if (r->kind != CT_REC_API || (r->f[CT_API_FLAGS] & CT_APIF_CAPTURED) ||
            (fam != CT_FAM_LAUNCH && fam != CT_FAM_MEMCPY && fam != CT_FAM_MEMSET))
            continue;
        size_t k;
        struct pend e = {(uint32_t)r->f[CT_API_STREAM], (int64_t)r->f[CT_API_START],
                         ct_trace_gpu(t, r->f[CT_API_CORR], &k) != 0};
        if (e.timed && e.launch > any)
            any = e.launch;
        u[m++] = e;
    }
    if (m && !t->gpu_by_corr && t->count[CT_REC_GPU]) { /* its index could not be made */
        free(u);
        return -ENOMEM;
    }
    qsort(u, m, sizeof(*u), cmp_pend);
    /* on each stream, the ops after its last delivered one (a stream runs
     * in order); on a stream nothing timed, those after the last delivered
     * launch of any: the rule of extract_join.c `undelivered` */
    for (size_t a = 0, b; a < m; a = b) {
        size_t last = SIZE_MAX;
        for (b = a; b < m && u[b].stream == u[a].stream; b++)
            if (u[b].timed)
                last = b;
        for (size_t k = last == SIZE_MAX ? a : last + 1; k < b; k++) {
            if (last == SIZE_MAX && u[k].launch <= any)
                continue;
            (*n)++;
            if (u[k].launch < *from)
                *from = u[k].launch;
        }
    }
    free(u);
    return 0;
}
