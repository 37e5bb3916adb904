/*
 * Streaming extraction of one trace file into a struct ct_proc, straight
 * from the decoder's blocks of columns (struct ct_block): no record array,
 * no record copied, no sort of records.
 * Memory is the compact timeline (48-byte GPU intervals, 8-byte launch
 * times, NCCL ops, host interval sets) plus 16 bytes of join key per API
 * and GPU record, freed before returning.
 *
 * The result is what walking the records sorted by start time (stable: file
 * order breaks ties) would give, whatever order the file holds them in
 * (tests/unit/test_extract.c checks it on traces shuffled two ways). Here:
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
 * The joins and ordering at the end are in extract_join.c. Never prints;
 * safe to run concurrently on different files.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/read/devices.h"
#include "decoder/read/extract.h"
#include "decoder/read/extract_int.h"
#include "decoder/read/host_classes.h"
#include "decoder/read/life.h"
#include "decoder/util/array.h"
#include "decoder/util/comm_kernels.h"
#include "decoder/util/stats.h"
#include "src/config.h"

/* ------------------------------------------------ blocking calls */

int ct_calls_note(struct ct_calls *c, int64_t s, int64_t e, uint32_t tid, int64_t key)
{
    if (ct_grow((void **)&c->v, &c->cap, c->n, sizeof(*c->v)))
        return -ENOMEM;
    c->v[c->n++] = (struct ct_call_span){s, e, tid, key};
    return 0;
}

int ct_calls_first_grow(struct ct_calls *c, size_t key)
{
    size_t n = c->nfirst ? c->nfirst : 64;
    while (n <= key)
        n *= 2;
    int64_t *v = realloc(c->first, n * sizeof(*v));
    if (!v)
        return -ENOMEM;
    for (size_t i = c->nfirst; i < n; i++)
        v[i] = INT64_MAX;
    c->first = v;
    c->nfirst = n;
    return 0;
}

int ct_calls_launcher_add(struct ct_calls *c, uint32_t tid)
{
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
        /* a launch only as the first of its kernel (host_classes.h) */
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

/* ------------------------------------------------ the pass */

static void extraction_free(struct ct_extraction *x)
{
    ct_hcollect_free(&x->health);
    ct_nacct_collect_free(&x->nacct);
    ct_facts_collect_free(&x->facts);
    struct ct_vec *v[] = {&x->ops,  &x->gcorr, &x->calls,  &x->timed,    &x->nccl,   &x->nsynth,
                          &x->nord, &x->steps, &x->sord,   &x->launches, &x->clock,  &x->name_sid,
                          &x->nfb,  &x->gend,  &x->gendv,  &x->nkl,      &x->graphs, &x->evr,
                          &x->evw,  &x->evs,   &x->gedges, &x->gsrc};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        free(v[i]->p);
    free(x->name_map);
    free(x->kcls);
    free(x->iocls);
    ct_calls_free(&x->bcalls);
}

static int name_of(struct ct_extraction *x, uint64_t sid, uint32_t *out)
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
        if (ct_vec_room(&x->name_sid, sizeof(uint32_t)))
            return -ENOMEM;
        ((uint32_t *)x->name_sid.p)[x->name_sid.n++] = (uint32_t)sid;
        x->name_map[sid] = (uint32_t)x->name_sid.n;
    }
    *out = x->name_map[sid] - 1;
    return 0;
}

/* Field i of the row a handler is given: c is its kind's column block at
 * the row, st that block's row count (struct ct_block). */
#define FLD(i) c[(size_t)(i)*st]

/* Notes op `op` (start s) as thread tid's latest GPU op. */
static void last_gpu(struct ct_extraction *x, uint32_t tid, uint64_t op, int64_t s)
{
    unsigned i = 0;
    while (i < x->nlastg && x->lastg[i].tid != tid)
        i++;
    if (i == x->nlastg) {
        if (x->nlastg == sizeof(x->lastg) / sizeof(x->lastg[0]))
            i = tid % x->nlastg; /* more threads than slots: one forgets */
        else
            x->nlastg++;
    }
    x->lastg[i].tid = tid, x->lastg[i].op = op, x->lastg[i].s = s;
}

static int on_gpu(struct ct_extraction *x, const uint64_t *c, size_t st, uint32_t tid)
{
    /* loaded once, as on_api's */
    const uint64_t type = FLD(CT_GPU_TYPE), corr = FLD(CT_GPU_CORR), src = FLD(CT_GPU_SOURCE);
    const int64_t s = (int64_t)FLD(CT_GPU_START), e = (int64_t)FLD(CT_GPU_END);
    uint64_t idx = NONE;
    if (type == CT_GPU_MEMCPY && /* a copy's transfer: the facts' */
        ct_facts_gpu_copy(&x->facts, corr, s, e))
        return -ENOMEM;
    if (type != CT_GPU_SYNC && (uint64_t)e > (uint64_t)s) {
        if (ct_vec_room(&x->ops, sizeof(struct ct_gpu_op)))
            return -ENOMEM;
        struct ct_gpu_op *g = (struct ct_gpu_op *)x->ops.p + x->ops.n;
        memset(g, 0, sizeof(*g));
        g->s = s;
        g->e = e;
        g->stream = (uint32_t)FLD(CT_GPU_STREAM);
        g->type = (uint8_t)type;
        g->blocking = src == CT_SRC_EVENTS_BLOCKING;
        if (name_of(x, FLD(CT_GPU_NAME), &g->name))
            return -ENOMEM;
        ct_cov_source(&x->p->cov, src);
        if (type == CT_GPU_MEMCPY && FLD(CT_GPU_COPY_KIND) == CT_COPY_HTOD &&
            ct_ivset_add(&x->p->htod, s, e))
            return -ENOMEM;
        idx = x->ops.n++;
        /* by op index (ops made from NCCL records have none: 0) */
        while (x->gsrc.cap <= idx)
            if (ct_vec_grow(&x->gsrc, 1))
                return -ENOMEM;
        uint8_t *by = x->gsrc.p;
        if (x->gsrc.n < idx)
            memset(by + x->gsrc.n, 0, idx - x->gsrc.n);
        by[idx] = (uint8_t)src;
        x->gsrc.n = idx + 1;
        last_gpu(x, tid, idx, s);
        if (ct_sdev_seen(x->p, g->stream, (int32_t)(int64_t)FLD(CT_GPU_DEVICE)))
            return -ENOMEM;
    }
    return ct_kv_push(&x->gcorr, corr, idx);
}

static int push_launch(struct ct_extraction *x, uint64_t t)
{
    if (ct_vec_room(&x->launches, sizeof(int64_t)))
        return -ENOMEM;
    ((int64_t *)x->launches.p)[x->launches.n++] = (int64_t)t;
    return 0;
}

static int on_nccl(struct ct_extraction *x, const uint64_t *c, size_t st, uint32_t tid)
{
    if (ct_vec_room(&x->nccl, sizeof(struct ct_nccl_call)) ||
        ct_vec_room(&x->nsynth, sizeof(uint64_t)) || ct_vec_room(&x->nfb, sizeof(struct nccl_fb)) ||
        ct_kv_push(&x->nord, FLD(CT_NCCL_START), x->ord))
        return -ENOMEM;
    ((struct nccl_fb *)x->nfb.p)[x->nfb.n++] =
        (struct nccl_fb){FLD(CT_NCCL_GROUP), (uint32_t)FLD(CT_NCCL_STREAM), tid};
    struct ct_nccl_call *n = (struct ct_nccl_call *)x->nccl.p + x->nccl.n;
    memset(n, 0, sizeof(*n));
    n->host_s = (int64_t)FLD(CT_NCCL_START);
    n->host_e = (int64_t)FLD(CT_NCCL_END);
    n->comm = FLD(CT_NCCL_COMM);
    n->seq = FLD(CT_NCCL_SEQ);
    n->bytes = FLD(CT_NCCL_BYTES);
    n->corr = FLD(CT_NCCL_CORR);
    n->comm_rank = (int32_t)FLD(CT_NCCL_RANK);
    n->peer = (int32_t)FLD(CT_NCCL_PEER);
    n->nranks = (int32_t)FLD(CT_NCCL_NRANKS);
    n->stream = (uint32_t)FLD(CT_NCCL_STREAM);
    n->op = (uint8_t)FLD(CT_NCCL_OP);
    n->lib = (uint8_t)CT_COMM_LIB_OF(FLD(CT_NCCL_DTYPE));
    n->cls = CT_CL_OTHER;
    uint64_t synth = NONE;
    if (FLD(CT_NCCL_GPU_START) && FLD(CT_NCCL_GPU_END) > FLD(CT_NCCL_GPU_START)) {
        n->s = (int64_t)FLD(CT_NCCL_GPU_START);
        n->e = (int64_t)FLD(CT_NCCL_GPU_END);
        /* the op's own interval is its GPU time only if no GPU record
         * carries its correlation id, known at the end: add it in file
         * order now and drop it then if one does */
        if (ct_vec_room(&x->ops, sizeof(struct ct_gpu_op)))
            return -ENOMEM;
        struct ct_gpu_op *g = (struct ct_gpu_op *)x->ops.p + x->ops.n;
        memset(g, 0, sizeof(*g));
        g->s = n->s;
        g->e = n->e;
        g->launch = n->host_s;
        g->stream = (uint32_t)FLD(CT_NCCL_STREAM);
        g->type = CT_GPU_NCCL;
        g->op = n->op;
        g->cls = CT_CL_OTHER;
        g->nccl = (int32_t)x->nccl.n;
        g->name = SYNTHETIC;
        synth = x->ops.n++;
    }
    ((uint64_t *)x->nsynth.p)[x->nsynth.n++] = synth;
    x->nccl.n++;
    int rc = push_launch(x, FLD(CT_NCCL_START));
    return rc ? rc : ct_calls_launcher(&x->bcalls, tid);
}

/* Whether kernel string id sid names an NCCL kernel, or one the table of
 * communication kernels names (decoder/util/comm_kernels.h: NVSHMEM's
 * on-stream kernels, NCCL's symmetric-memory ones), which launched inside
 * an op's call is that op's GPU work (cached per id). */
static int is_nccl_kernel(struct ct_extraction *x, uint64_t sid, int *yes)
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
        x->kcls[sid] = name && (!strncmp(name, "ncclDevKernel", 13) ||
                                !strncmp(name, "ncclKernel", 10) || ct_comm_kernel_op(name))
                           ? 2
                           : 1;
    }
    *yes = x->kcls[sid] == 2;
    return 0;
}

/* What the NCCL fallbacks need from API records: ncclGroupEnd spans (their
 * correlation id is the group's id), launches of NCCL kernels, and
 * device-to-device and peer copies (NCCL's copy-engine collectives enqueue
 * them inside the op's call: extract_join.c keeps those that are). */
static int note_nccl_calls(struct ct_extraction *x, const uint64_t *c, size_t st, uint32_t tid)
{
    uint64_t fam = FLD(CT_API_FAMILY);
    if (fam == CT_FAM_OTHER) {
        uint64_t sid = FLD(CT_API_NAME);
        if (!x->gend_sid) {
            const char *name = ct_reader_string(x->rd, sid);
            if (!name || strcmp(name, "ncclGroupEnd") != 0)
                return 0;
            x->gend_sid = sid;
        }
        if (sid != x->gend_sid || ct_vec_room(&x->gendv, sizeof(struct span)))
            return sid != x->gend_sid ? 0 : -ENOMEM;
        ((struct span *)x->gendv.p)[x->gendv.n] =
            (struct span){(int64_t)FLD(CT_API_START), (int64_t)FLD(CT_API_END), tid};
        return ct_kv_push(&x->gend, FLD(CT_API_CORR), x->gendv.n++);
    }
    int yes = 0, copy = 0;
    if (fam == CT_FAM_MEMCPY)
        copy = yes = FLD(CT_API_COPY_KIND) == CT_COPY_DTOD || FLD(CT_API_COPY_KIND) == CT_COPY_PEER;
    else if (fam == CT_FAM_LAUNCH && is_nccl_kernel(x, FLD(CT_API_KERNEL), &yes))
        return -ENOMEM;
    if (!yes)
        return 0;
    if (ct_vec_room(&x->nkl, sizeof(struct nccl_launch)))
        return -ENOMEM;
    struct span sp = {(int64_t)FLD(CT_API_START), (int64_t)FLD(CT_API_END), tid};
    ((struct nccl_launch *)x->nkl.p)[x->nkl.n++] =
        (struct nccl_launch){sp, FLD(CT_API_CORR), (uint32_t)FLD(CT_API_STREAM), (uint8_t)copy};
    return 0;
}

/* An event's record or a wait on it (CT_APIF_EVENT): which of the two by
 * the call's name, looked up once per string id. */
static int note_event(struct ct_extraction *x, const uint64_t *c, size_t st)
{
    if ((uint32_t)FLD(CT_API_RESULT) != 0 || !FLD(CT_API_BYTES) ||
        !(FLD(CT_API_FLAGS) & CT_APIF_ASYNC))
        return 0; /* refused by the driver: no dependency; an event's sync is a sync */
    uint64_t sid = FLD(CT_API_NAME);
    int wait;
    if (x->wait_sid[0] == sid + 1)
        wait = 1;
    else if (x->wait_sid[1] == sid + 1)
        wait = 0;
    else {
        const char *name = ct_reader_string(x->rd, sid);
        wait = name && !strncmp(name, "cuStreamWaitEvent", 17);
        x->wait_sid[!wait] = sid + 1;
    }
    struct ct_vec *v = wait ? &x->evw : &x->evr;
    if (ct_vec_room(v, sizeof(struct event_call)))
        return -ENOMEM;
    ((struct event_call *)v->p)[v->n++] = (struct event_call){
        FLD(CT_API_BYTES), (int64_t)FLD(CT_API_START), (uint32_t)FLD(CT_API_STREAM)};
    return 0;
}

/* What host sync c waited for (struct ct_syncon, resolved in
 * extract_join.c): an event's sync, its event; a stream's, its stream; a
 * legacy stream's, every blocking stream; a context's or a synchronous
 * copy, every stream. */
static int note_sync(struct ct_extraction *x, const uint64_t *c, size_t st, uint64_t fam)
{
    if (ct_vec_room(&x->evs, sizeof(struct event_call)))
        return -ENOMEM;
    uint64_t fl = FLD(CT_API_FLAGS);
    struct event_call v = {0, (int64_t)FLD(CT_API_START), 0};
    if (fam == CT_FAM_SYNC && (fl & CT_APIF_EVENT))
        v.event = FLD(CT_API_BYTES);
    else if (fam == CT_FAM_SYNC)
        v.stream = fl & CT_APIF_LEGACY ? CT_SYNCON_BLOCKING : (uint32_t)FLD(CT_API_STREAM);
    ((struct event_call *)x->evs.p)[x->evs.n++] = v;
    return 0;
}

static int on_api(struct ct_extraction *x, const uint64_t *c, size_t st, uint32_t tid)
{
    /* the fields every call reads, loaded once: stores to the extraction's
     * arrays may alias the column block (both uint64_t), so each use of
     * FLD after one would be a load again */
    const uint64_t fam = FLD(CT_API_FAMILY), corr = FLD(CT_API_CORR), flags = FLD(CT_API_FLAGS);
    const int64_t s = (int64_t)FLD(CT_API_START), e = (int64_t)FLD(CT_API_END);
    struct ct_proc *p = x->p;
    int rc = ct_kv_push(&x->calls, corr, (uint64_t)s);
    if (!rc && fam == CT_FAM_MEMCPY) { /* a copy's host call: the facts' */
        struct ct_copy_fact cf = {.host_s = s,
                                  .host_e = e,
                                  .bytes = FLD(CT_API_BYTES),
                                  .kind = (uint8_t)FLD(CT_API_COPY_KIND),
                                  .async = (flags & CT_APIF_ASYNC) != 0};
        rc = ct_facts_copy_call(&x->facts, corr, &cf);
    }
    if (!rc && fam == CT_FAM_GRAPH)
        rc = ct_u64_push(&x->graphs, corr);
    if (!rc && (flags & CT_APIF_EVENT))
        rc = note_event(x, c, st);
    if (!rc && (fam == CT_FAM_OTHER || fam == CT_FAM_LAUNCH || fam == CT_FAM_MEMCPY))
        rc = note_nccl_calls(x, c, st, tid);
    if (!rc && (fam == CT_FAM_LAUNCH || fam == CT_FAM_MEMCPY || fam == CT_FAM_MEMSET)) {
        rc = push_launch(x, (uint64_t)s);
        if (!rc && !(flags & CT_APIF_CAPTURED))
            rc = ct_kv_push(&x->timed, corr, (uint32_t)FLD(CT_API_STREAM));
        if (!rc)
            rc = ct_calls_launcher(&x->bcalls, tid);
    }
    int64_t key = fam == CT_FAM_LAUNCH ? (int64_t)FLD(CT_API_KERNEL) : fam == CT_FAM_GRAPH ? 0 : -1;
    if (!rc)
        rc = ct_calls_launch(&x->bcalls, key, s);
    if (!rc && ct_is_blocking_call(fam, flags, e - s))
        rc = ct_calls_note(&x->bcalls, s, e, tid, key);
    if (!rc && ct_is_host_sync(fam, flags) && !(rc = ct_ivset_add(&p->sync, s, e)))
        rc = note_sync(x, c, st, fam);
    if (!rc && fam == CT_FAM_MEMCPY && ct_is_ckpt_copy(FLD(CT_API_COPY_KIND), FLD(CT_API_BYTES)))
        rc = ct_ivset_add(&p->ckpt, s, e);
    if (!rc && fam == CT_FAM_MEMCPY && FLD(CT_API_COPY_KIND) == CT_COPY_HTOD)
        rc = ct_ivset_add(&p->htod, s, e);
    return rc;
}

static int on_step(struct ct_extraction *x, const struct ct_record *r)
{
    int mark = r->kind == CT_REC_NVTX_MARK;
    const char *msg = ct_reader_string(x->rd, mark ? r->f[CT_MARK_MESSAGE] : r->f[CT_NVTX_MESSAGE]);
    if (!ct_step_matches(msg, x->step))
        return 0;
    if (ct_vec_room(&x->steps, sizeof(struct ct_range)) || ct_vec_room(&x->sord, sizeof(uint64_t)))
        return -ENOMEM;
    struct ct_range *g = (struct ct_range *)x->steps.p + x->steps.n;
    g->s = (int64_t)r->f[0];
    g->e = mark ? g->s : (int64_t)r->f[CT_NVTX_END];
    g->num = ct_step_number(msg);
    ((uint64_t *)x->sord.p)[x->sord.n++] = x->ord;
    x->steps.n++;
    return 0;
}

static int cmp_gedge(const void *a, const void *b)
{
    const struct ct_gedge *x = a, *y = b;
    if (x->to != y->to)
        return x->to < y->to ? -1 : 1;
    return (x->from > y->from) - (x->from < y->from);
}

/* A graph node record: the op its thread recorded just before, at the
 * same start, ran as that node. */
static void on_graph_node(struct ct_extraction *x, const uint64_t *f, uint32_t tid)
{
    for (unsigned i = 0; i < x->nlastg; i++)
        if (x->lastg[i].tid == tid && x->lastg[i].s == (int64_t)f[CT_META_TIME] &&
            x->lastg[i].op < x->ops.n)
            ((struct ct_gpu_op *)x->ops.p)[x->lastg[i].op].gnode = f[CT_META_SCOPE_ID];
}

/* A graph's edges, "F>T F>T ..." in hex (F "?": not known). Text that does
 * not parse ends the list there: the edges before it are kept. */
static int on_graph_edges(struct ct_extraction *x, const char *s)
{
    while (s && *s) {
        while (*s == ' ')
            s++;
        if (!*s)
            break;
        char *end;
        uint64_t from = 0;
        if (*s == '?')
            end = (char *)s + 1;
        else
            from = strtoull(s, &end, 16);
        if (end == s || *end != '>')
            return 0;
        s = end + 1;
        uint64_t to = strtoull(s, &end, 16);
        if (end == s || !to || (*end && *end != ' '))
            return 0;
        s = end;
        if (ct_vec_room(&x->gedges, sizeof(struct ct_gedge)))
            return -ENOMEM;
        ((struct ct_gedge *)x->gedges.p)[x->gedges.n++] = (struct ct_gedge){to, from};
    }
    return 0;
}

static int on_meta(struct ct_extraction *x, const uint64_t *f, uint32_t tid)
{
    if (f[CT_META_SCOPE] == CT_SCOPE_GRAPH_NODE) {
        on_graph_node(x, f, tid);
        return 0;
    }
    if (f[CT_META_SCOPE] == CT_SCOPE_GRAPH &&
        !strcmp(ct_reader_string(x->rd, f[CT_META_KEY]), "edges"))
        return on_graph_edges(x, ct_reader_string(x->rd, f[CT_META_VALUE]));
    if (f[CT_META_SCOPE] == CT_SCOPE_RECORDER &&
        !strcmp(ct_reader_string(x->rd, f[CT_META_KEY]), "capture"))
        return ct_capture_mark(x->p, ct_reader_string(x->rd, f[CT_META_VALUE]),
                               (int64_t)f[CT_META_TIME]);
    if (f[CT_META_SCOPE] == CT_SCOPE_STREAM &&
        !strcmp(ct_reader_string(x->rd, f[CT_META_KEY]), "device"))
        return ct_sdev_note(x->p, (uint32_t)f[CT_META_SCOPE_ID],
                            (int32_t)strtol(ct_reader_string(x->rd, f[CT_META_VALUE]), NULL, 10));
    if (f[CT_META_SCOPE] == CT_SCOPE_STREAM &&
        !strcmp(ct_reader_string(x->rd, f[CT_META_KEY]), "nonblocking") &&
        !strcmp(ct_reader_string(x->rd, f[CT_META_VALUE]), "1"))
        return ct_nonblocking_note(x->p, (uint32_t)f[CT_META_SCOPE_ID]);
    if (f[CT_META_SCOPE] != CT_SCOPE_PROCESS)
        return 0;
    const char *key = ct_reader_string(x->rd, f[CT_META_KEY]);
    ct_capture_meta(x->p, key, ct_reader_string(x->rd, f[CT_META_VALUE]));
    if (ct_life_meta(&x->p->life, key, ct_reader_string(x->rd, f[CT_META_VALUE]),
                     (int64_t)f[CT_META_TIME]))
        return -ENOMEM;
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

/* The class of I/O op string id sid (host_classes.h), worked out once per
 * id: a trace names a few ops many times. 0 or -ENOMEM. */
static int io_class(struct ct_extraction *x, uint64_t sid, unsigned *cls)
{
    if (sid >= x->iocln) {
        size_t n = x->iocln ? x->iocln : 64;
        while (n <= sid)
            n *= 2;
        uint8_t *k = realloc(x->iocls, n);
        if (!k)
            return -ENOMEM;
        memset(k + x->iocln, 0, n - x->iocln);
        x->iocls = k;
        x->iocln = n;
    }
    if (!x->iocls[sid])
        x->iocls[sid] = (uint8_t)(16 | ct_io_op_class(ct_reader_string(x->rd, sid)));
    *cls = x->iocls[sid] & 15u;
    return 0;
}

/* The kinds that are a small part of a trace, as whole records. */
static int on_other(struct ct_extraction *x, const struct ct_record *r)
{
    const uint64_t *f = r->f;
    if (r->kind != CT_REC_IO && r->kind != CT_REC_NVTX_RANGE && r->kind != CT_REC_NVTX_MARK &&
        (int64_t)f[0] > x->p->last_ns)
        x->p->last_ns = (int64_t)f[0];
    switch (r->kind) {
    case CT_REC_IO: {
        unsigned cls;
        if (io_class(x, f[CT_IO_OP], &cls))
            return -ENOMEM;
        int64_t s = (int64_t)f[CT_IO_START], e = (int64_t)f[CT_IO_END];
        int wait = ct_io_is_data_wait(cls, f[CT_IO_FD_TYPE]);
        if (wait && f[CT_IO_FD_TYPE] == CT_FD_FILE && ct_ivset_add(&x->p->file_read, s, e))
            return -ENOMEM;
        if (wait)
            return ct_ivset_add(&x->p->data_wait, s, e);
        if (ct_io_is_ckpt(cls, f[CT_IO_FD_TYPE]))
            return ct_ivset_add(&x->p->ckpt, s, e);
        return 0;
    }
    case CT_REC_NVTX_RANGE:
    case CT_REC_NVTX_MARK: return on_step(x, r);
    case CT_REC_CLOCK:
        if (ct_vec_room(&x->clock, sizeof(int64_t)))
            return -ENOMEM;
        ((int64_t *)x->clock.p)[x->clock.n++] = (int64_t)(f[CT_CLOCK_REAL] - f[CT_CLOCK_MONO]);
        return 0;
    case CT_REC_META: {
        int rc = on_meta(x, f, r->tid);
        if (!rc)
            rc = ct_facts_meta(&x->facts, f[CT_META_SCOPE], ct_reader_string(x->rd, f[CT_META_KEY]),
                               ct_reader_string(x->rd, f[CT_META_VALUE]));
        return rc ? rc : ct_hcollect_record(&x->health, x->rd, r);
    }
    case CT_REC_COUNTER: return ct_hcollect_record(&x->health, x->rd, r);
    case CT_REC_NCCL_INFO:
    case CT_REC_NCCL_PROXY:
    case CT_REC_NCCL_CHANNEL:
    case CT_REC_NCCL_NET:
    case CT_REC_NCCL_PHASE:
    case CT_REC_NCCL_TAG:
    case CT_REC_NCCL_STEP: return ct_nacct_record(&x->nacct, x->rd, r);
    case CT_REC_DROP: x->p->cov.dropped += f[CT_DROP_COUNT]; return 0;
    case CT_REC_ERROR:
        ct_life_error(&x->p->life, ct_reader_string(x->rd, f[CT_ERROR_WHAT]), (int64_t)f[0]);
        return 0;
    default: return 0;
    }
}

/* Room in v for what the whole file will hold, from what the part read so
 * far (done of size bytes) gave it, when that is 1 MiB or more. Growing by
 * doubling touched twice the final size in fresh memory and copied it once:
 * the kernel zeroing fresh pages was a sixth of a report's CPU time. A file
 * whose mix changes over time is sized too small (the doubling goes on from
 * there) or too large (pages never written are never faulted in). */
static int presize(struct ct_vec *v, size_t elem, uint64_t done, uint64_t size)
{
    double want = (double)v->n * (double)size / (double)done * 1.125 + 1024;
    if (want * (double)elem < (double)(1 << 20) || want <= (double)v->cap ||
        want * (double)elem > (double)SIZE_MAX / 2)
        return 0;
    void *q = realloc(v->p, (size_t)want * elem);
    if (!q)
        return -ENOMEM;
    v->p = q;
    v->cap = (size_t)want;
    return 0;
}

/* Once a thirty-second of the file (and 4096 records) is read: the large
 * arrays sized for the whole file. */
static int presize_all(struct ct_extraction *x)
{
    uint64_t done = x->rd->buf_off + x->rd->buf_pos, size = x->rd->size;
    if (x->presized || x->ord < 4096 || !done || done < size / 32)
        return 0;
    x->presized = 1;
    if (done >= size)
        return 0;
    return presize(&x->ops, sizeof(struct ct_gpu_op), done, size) ||
                   presize(&x->gcorr, sizeof(struct ct_kv), done, size) ||
                   presize(&x->gsrc, 1, done, size) ||
                   presize(&x->calls, sizeof(struct ct_kv), done, size) ||
                   presize(&x->timed, sizeof(struct ct_kv), done, size) ||
                   presize(&x->launches, sizeof(int64_t), done, size)
               ? -ENOMEM
               : 0;
}

/* A block of decoded rows in file order: calls, GPU records and NCCL ops
 * read straight from the decoder's columns; the rest as records. */
static int on_block(void *ctx, const struct ct_block *b)
{
    struct ct_extraction *x = ctx;
    if (!x->presized && presize_all(x))
        return -ENOMEM;
    size_t pos[CT_REC_KIND_COUNT] = {0};
    for (size_t t = 0; t < b->n; t++) {
        unsigned k = b->kinds[t];
        size_t st = b->cnt[k];
        const uint64_t *c = b->col[k] + pos[k]++;
        int rc;
        if (k == CT_REC_GPU) {
            rc = on_gpu(x, c, st, b->tid);
        } else if (k == CT_REC_API) {
            rc = on_api(x, c, st, b->tid);
        } else if (k == CT_REC_NCCL) {
            rc = on_nccl(x, c, st, b->tid);
        } else {
            struct ct_record r = {.kind = (uint16_t)k, .tid = b->tid};
            r.nfields = ct_kind_table[k].nfields;
            for (unsigned i = 0; i < r.nfields; i++)
                r.f[i] = c[i * st];
            rc = on_other(x, &r);
        }
        x->ord++;
        if (rc)
            return rc;
    }
    return 0;
}

#define F(x) (UINT32_C(1) << (x))

/* The fields the handlers above read, for the two kinds that are most of a
 * trace (calls and GPU records): the decoder skips the others (grid and
 * block sizes, results, devices...), a third of its work. Every other kind
 * is read whole. A handler that reads a new field must add it here: it
 * would otherwise see 0 (tests/unit's extract suite checks the ops against a
 * full decode). */
static const uint32_t *extract_fields(void)
{
    static uint32_t m[CT_REC_KIND_COUNT];
    if (!m[0]) {
        for (unsigned k = 0; k < CT_REC_KIND_COUNT; k++)
            m[k] = UINT32_MAX;
        m[CT_REC_API] = F(CT_API_START) | F(CT_API_END) | F(CT_API_NAME) | F(CT_API_CORR) |
                        F(CT_API_FAMILY) | F(CT_API_KERNEL) | F(CT_API_BYTES) |
                        F(CT_API_COPY_KIND) | F(CT_API_FLAGS) | F(CT_API_STREAM) |
                        F(CT_API_RESULT); /* stream and result: event edges */
        m[CT_REC_GPU] = F(CT_GPU_START) | F(CT_GPU_END) | F(CT_GPU_STREAM) | F(CT_GPU_CORR) |
                        F(CT_GPU_TYPE) | F(CT_GPU_NAME) | F(CT_GPU_SOURCE) | F(CT_GPU_DEVICE) |
                        F(CT_GPU_COPY_KIND);
    }
    return m;
}

#undef F

int ct_proc_extract_file(const char *path, const char *step_name, struct ct_proc *p, char *err,
                         size_t errlen)
{
    memset(p, 0, sizeof(*p));
    ct_life_init(&p->life);
    p->rank = -1;
    p->capture_open = CT_OPEN_NONE;
    p->last_ns = INT64_MIN;
    struct ct_reader rd;
    struct ct_extraction x = {.p = p, .rd = &rd, .step = step_name ? step_name : "ProfilerStep"};
    ct_hcollect_init(&x.health);
    p->path = strdup(path);
    if (!p->path || ct_facts_collect_init(&x.facts)) {
        free(p->path);
        p->path = NULL;
        extraction_free(&x);
        snprintf(err, errlen, "%s: out of memory", path);
        return -ENOMEM;
    }
    int rc = ct_reader_open(&rd, p->path);
    if (rc) {
        snprintf(err, errlen, "%s", rd.err);
        extraction_free(&x); /* the counters and facts begun above */
        ct_proc_free(p);
        return rc;
    }
    struct ct_chunk_sink sink = {&x, NULL, NULL, extract_fields(), on_block};
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
    p->life.salvaged = rd.salvaged;
    p->cov.damaged = rd.damage_bytes;
    p->cov.bytes = rd.size;
    p->trunc_at = rd.truncated ? rd.truncated_at : 0;
    p->clock_offset = x.clock.n ? ct_median_i64(x.clock.p, x.clock.n)
                                : (int64_t)(rd.hdr.start_real_ns - rd.hdr.start_mono_ns);
    const char *pp = x.have_ppid ? ct_reader_string(&rd, x.ppid_sid) : NULL;
    p->ppid = pp ? (uint32_t)strtoul(pp, NULL, 10) : 0;
    p->host = strdup(x.have_host ? ct_reader_string(&rd, x.host_sid) : "");
    rc = p->host ? ct_extract_finish(&x) : -ENOMEM;
    if (rc) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto fail;
    }
    p->health = ct_hcollect_finish(&x.health);
    p->facts = ct_facts_collect_finish(&x.facts);
    int oom = 0;
    p->nacct = ct_nacct_finish(&x.nacct, &oom);
    if (!p->health || !p->facts || oom) {
        snprintf(err, errlen, "%s: out of memory", path);
        rc = -ENOMEM;
        goto fail;
    }
    p->gedges = x.gedges.p, p->ngedges = x.gedges.n;
    x.gedges = (struct ct_vec){0};
    if (p->ngedges > 1)
        qsort(p->gedges, p->ngedges, sizeof(*p->gedges), cmp_gedge);
    extraction_free(&x);
    ct_reader_close(&rd);
    return 0;
fail:
    extraction_free(&x);
    ct_reader_close(&rd);
    ct_proc_free(p);
    return rc;
}
