/*
 * Chrome trace-event JSON (the "JSON Object Format" that ui.perfetto.dev and
 * chrome://tracing open), written as a stream: one decoded trace at a time.
 *
 *   pid  = the rank (process_name "rank N (host)"); tid = the Linux thread
 *          id for host threads, CT_GPU_TID(device, stream) for GPU streams
 *          (thread_name "GPU d stream s"; sorted above the host threads);
 *   X    driver calls, NCCL calls, I/O spans, push/pop NVTX ranges on their
 *        thread; GPU intervals on their stream; start/end NVTX ranges, which
 *        need not nest with the calls of their thread, are async b/e pairs;
 *   s/f  a flow from each call to the first GPU interval it enqueued (same
 *        correlation id), id = (trace index + 1) << 40 | correlation id;
 *   i    NVTX marks, dropped-record and recorder-error notes;
 *   C    per rank "NCCL algbw (GB/s)" (sum over the collectives running on
 *        the GPU) and per stream "queue depth GPU d stream s" (ops enqueued
 *        and not finished: +1 at the enqueuing call's start, -1 at the end
 *        of its last GPU interval); health counters (format v2 counter
 *        records, docs/health.md), one C event per sample: per device
 *        "GPU d SM clock" {"MHz"}, power {"W"}, "GPU d throttled"
 *        {"slowing", one 0/1 series per reason bit seen}, ...; per host
 *        "host CPU use" {"%"}, "host CPU pressure", "host major faults".
 * With `export --critical-path`, each step's critical path follows on
 * tracks of its own (decoder/export/chrome_critical_path.c); with
 * `--nccl-proxy`, each trace's NCCL ProxyOps after its other events
 * (decoder/export/chrome_nccl.c, which also gives an NCCL op's slices the
 * profiler plugin's algorithm, protocol and channels).
 * Times are µs with three decimals (exact ns) since the export's time zero,
 * the job's earliest record (decoder/export/export.h): none is negative,
 * which Perfetto would drop; "displayTimeUnit":"ns". Per track, X events
 * come in start order (records are sorted by start; the GPU intervals that
 * only an NCCL record carries are merged in), counters in time order.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/util/demangle.h"
#include "decoder/export/chrome_int.h"
#include "decoder/export/export.h"
#include "decoder/analysis/health.h"
#include "decoder/util/json.h"
#include "decoder/util/names.h"
#include "decoder/read/tracefile.h"

static void sep(struct ct_chrome_writer *w)
{
    fputs(*w->first ? "" : ",\n", w->f);
    *w->first = 0;
}

/* Unique in the file: the trace's index above bit 40, the correlation id
 * (unique per process) below. */
static uint64_t flow_id(const struct ct_chrome_writer *w, uint64_t corr)
{
    return w->flow_base | (corr & (((uint64_t)1 << 40) - 1));
}

void ct_chrome_ts(FILE *f, int64_t ns)
{
    if (ns < 0) {
        fputc('-', f);
        ns = -ns;
    }
    fprintf(f, "%" PRId64 ".%03d", ns / 1000, (int)(ns % 1000));
}

/* Starts an event: {"ph":..,"pid":..,"tid":..,"ts":..,"name":.. */
void ct_chrome_ev(struct ct_chrome_writer *w, const char *ph, uint32_t tid, int64_t ts_trace,
                  const char *name)
{
    FILE *f = w->f;
    sep(w);
    fprintf(f, "{\"ph\":\"%s\",\"pid\":%d,\"tid\":%" PRIu32 ",\"ts\":", ph, w->src->rank, tid);
    ct_chrome_ts(f, ts_trace + w->shift);
    fputs(",\"name\":", f);
    ct_json_str(f, name);
}

static void dur(struct ct_chrome_writer *w, uint64_t s, uint64_t e)
{
    fputs(",\"dur\":", w->f);
    ct_chrome_ts(w->f, e > s ? (int64_t)(e - s) : 0);
}

static void cat(struct ct_chrome_writer *w, const char *c)
{
    fprintf(w->f, ",\"cat\":\"%s\"", c);
}

/* args writers: first one opens the object */
struct args {
    FILE *f;
    int n;
};

static void akey(struct args *a, const char *k)
{
    fputs(a->n++ ? "," : ",\"args\":{", a->f);
    fprintf(a->f, "\"%s\":", k);
}

static void a_u(struct args *a, const char *k, uint64_t v)
{
    akey(a, k);
    fprintf(a->f, "%" PRIu64, v);
}

static void a_i(struct args *a, const char *k, int64_t v)
{
    akey(a, k);
    fprintf(a->f, "%" PRId64, v);
}

static void a_s(struct args *a, const char *k, const char *v)
{
    akey(a, k);
    ct_json_str(a->f, v);
}

static void a_end(struct args *a)
{
    if (a->n)
        fputc('}', a->f);
    fputc('}', a->f);
}

static uint32_t track_of(struct ct_chrome_writer *w, int64_t dev, uint64_t stream)
{
    for (size_t i = 0; i < w->ntracks; i++)
        if (w->tracks[i].dev == dev && w->tracks[i].stream == stream)
            return (uint32_t)i;
    if (w->ntracks == w->tcap) {
        size_t cap = w->tcap ? w->tcap * 2 : 16;
        struct track *n = realloc(w->tracks, cap * sizeof(*n));
        if (!n)
            return UINT32_MAX;
        w->tracks = n;
        w->tcap = cap;
    }
    w->tracks[w->ntracks] = (struct track){.dev = dev, .stream = stream, .named = 1};
    for (int l = 0; l < CT_LANES; l++)
        w->tracks[w->ntracks].lane_end[l] = INT64_MIN;
    return (uint32_t)w->ntracks++;
}

static void meta_ev(struct ct_chrome_writer *w, uint32_t tid, const char *what, const char *name,
                    long sort);

/* The track id for a GPU interval [s, e) of (dev, stream): the first lane
 * whose previous interval has ended. */
static uint32_t gpu_tid(struct ct_chrome_writer *w, int64_t dev, uint64_t stream, int64_t s,
                        int64_t e)
{
    uint32_t tr = track_of(w, dev, stream);
    uint32_t base = CT_TRACK_TID(dev, stream);
    if (tr == UINT32_MAX)
        return base;
    struct track *T = &w->tracks[tr];
    int l = 0;
    while (l < CT_LANES - 1 && T->lane_end[l] > s)
        l++;
    if (e > T->lane_end[l])
        T->lane_end[l] = e;
    uint32_t tid = base + ((uint32_t)l << 28);
    if (l >= T->named) {
        char buf[128];
        snprintf(buf, sizeof(buf), "GPU %" PRId64 " stream %" PRIu64 "%s (overlapping, lane %d)",
                 dev, (uint64_t)(stream & ~CT_NCCL_TRACK),
                 stream & CT_NCCL_TRACK ? " NCCL ops" : "", l);
        for (; T->named <= l; T->named++) {
            uint32_t t = base + ((uint32_t)T->named << 28);
            meta_ev(w, t, "thread_name", buf, 0);
            meta_ev(w, t, "thread_sort_index", NULL,
                    (long)(dev * 100000 + (int64_t)(stream % 100000)) * 10 + T->named);
        }
    }
    return tid;
}

static int add_delta(struct ct_chrome_writer *w, int64_t ts, uint32_t series, int32_t dq, double bw)
{
    if (w->ncd == w->cdcap) {
        size_t cap = w->cdcap ? w->cdcap * 2 : 1024;
        struct cdelta *n = realloc(w->cd, cap * sizeof(*n));
        if (!n)
            return -ENOMEM;
        w->cd = n;
        w->cdcap = cap;
    }
    w->cd[w->ncd++] = (struct cdelta){ts, series, dq, bw};
    return 0;
}

/* The device of a stream: its STREAM metadata, else 0. */
static int64_t stream_device(struct ct_trace *t, uint64_t stream)
{
    for (size_t i = 0; i < t->nmeta; i++) {
        const uint64_t *f = t->meta[i].f;
        if (f[CT_META_SCOPE] == CT_SCOPE_STREAM && f[CT_META_SCOPE_ID] == stream &&
            !strcmp(ct_trace_str(t, f[CT_META_KEY]), "device"))
            return strtoll(ct_trace_str(t, f[CT_META_VALUE]), NULL, 10);
    }
    return 0;
}

/* Where a GPU record is drawn: its device and stream, except an NCCL op's
 * own interval (the plugin's, which knows neither: device -1, stream 0),
 * which goes to its op's stream and that stream's device, on the stream's
 * NCCL ops track. */
static void placement(struct ct_trace *t, const uint64_t *f, const struct ct_record *call,
                      int64_t *dev, uint64_t *key)
{
    *dev = (int64_t)f[CT_GPU_DEVICE];
    *key = f[CT_GPU_STREAM];
    if (f[CT_GPU_TYPE] != CT_GPU_NCCL || !call || call->kind != CT_REC_NCCL)
        return;
    if (*dev < 0 || !*key) {
        *key = call->f[CT_NCCL_STREAM];
        *dev = stream_device(t, *key);
    }
    *key |= CT_NCCL_TRACK;
}

static const char *thread_name(struct ct_trace *t, uint32_t tid)
{
    for (size_t i = t->nmeta; i-- > 0;) {
        const uint64_t *f = t->meta[i].f;
        if (f[CT_META_SCOPE] == CT_SCOPE_THREAD && f[CT_META_SCOPE_ID] == tid &&
            !strcmp(ct_trace_str(t, f[CT_META_KEY]), "name"))
            return ct_trace_str(t, f[CT_META_VALUE]);
    }
    return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_synth(const void *a, const void *b)
{
    const struct synth *x = a, *y = b;
    return x->s < y->s ? -1 : x->s > y->s;
}

static void meta_ev(struct ct_chrome_writer *w, uint32_t tid, const char *what, const char *name,
                    long sort)
{
    sep(w);
    fprintf(w->f, "{\"ph\":\"M\",\"pid\":%d,\"tid\":%" PRIu32 ",\"ts\":0,\"name\":\"%s\"",
            w->src->rank, tid, what);
    if (name) {
        fputs(",\"args\":{\"name\":", w->f);
        ct_json_str(w->f, name);
        fputs("}}", w->f);
    } else {
        fprintf(w->f, ",\"args\":{\"sort_index\":%ld}}", sort);
    }
}

/* thread_name / sort metadata for the host threads and GPU streams of t. */
static int thread_meta(struct ct_chrome_writer *w)
{
    struct ct_trace *t = w->t;
    uint32_t *tids = malloc((t->n ? t->n : 1) * sizeof(*tids));
    if (!tids)
        return -ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct ct_record *r = &t->recs[i];
        if (r->kind == CT_REC_GPU && r->f[CT_GPU_TYPE] != CT_GPU_SYNC &&
            !ct_trace_gpu_superseded(t, r)) {
            int64_t dev;
            uint64_t key;
            placement(t, r->f, ct_trace_call(t, r->f[CT_GPU_CORR]), &dev, &key);
            if (track_of(w, dev, key) == UINT32_MAX)
                goto oom;
        } else if (r->kind == CT_REC_API || r->kind == CT_REC_NCCL || r->kind == CT_REC_IO ||
                   r->kind == CT_REC_NVTX_RANGE || r->kind == CT_REC_NVTX_MARK) {
            if (!n || tids[n - 1] != r->tid)
                tids[n++] = r->tid;
        }
        if (r->kind == CT_REC_NCCL && r->f[CT_NCCL_GPU_END] &&
            track_of(w, stream_device(t, r->f[CT_NCCL_STREAM]),
                     r->f[CT_NCCL_STREAM] | CT_NCCL_TRACK) == UINT32_MAX)
            goto oom;
    }
    qsort(tids, n, sizeof(*tids), cmp_u32);
    char buf[256];
    for (size_t i = 0; i < n; i++) {
        if (i && tids[i] == tids[i - 1])
            continue;
        const char *nm = thread_name(t, tids[i]);
        if (nm && *nm)
            snprintf(buf, sizeof(buf), "%s (pid %" PRIu32 " tid %" PRIu32 ")", nm, w->src->pid,
                     tids[i]);
        else
            snprintf(buf, sizeof(buf), "%s %" PRIu32 " (pid %" PRIu32 ")",
                     tids[i] == w->src->pid ? "main thread" : "thread", tids[i], w->src->pid);
        meta_ev(w, tids[i], "thread_name", buf, 0);
        meta_ev(w, tids[i], "thread_sort_index", NULL, 1000000000L + (long)tids[i]);
    }
    for (size_t i = 0; i < w->ntracks; i++) {
        uint64_t key = w->tracks[i].stream, st = key & ~CT_NCCL_TRACK;
        uint32_t tid = CT_TRACK_TID(w->tracks[i].dev, key);
        snprintf(buf, sizeof(buf), "GPU %" PRId64 " stream %" PRIu64 "%s", w->tracks[i].dev, st,
                 key & CT_NCCL_TRACK ? " NCCL ops" : "");
        meta_ev(w, tid, "thread_name", buf, 0);
        meta_ev(w, tid, "thread_sort_index", NULL,
                (long)(w->tracks[i].dev * 100000 + (int64_t)(st % 100000)) * 10 +
                    (key & CT_NCCL_TRACK ? 5 : 0));
    }
    free(tids);
    return 0;
oom:
    free(tids);
    return -ENOMEM;
}

/* An NCCL op's fields; on_gpu: on its GPU interval, whose own args have
 * the stream and correlation id already (a key appears once). */
static void nccl_args(struct args *a, struct ct_chrome_writer *w, const struct ct_record *r,
                      int on_gpu)
{
    struct ct_trace *t = w->t;
    const uint64_t *f = r->f;
    char hex[24];
    a_s(a, "op", f[CT_NCCL_OP] == CT_NCCL_OP_COUNT ? "other" : ct_name_nccl_op(f[CT_NCCL_OP]));
    if (f[CT_NCCL_DTYPE] & CT_NCCL_DTYPE_NVSHMEM) /* format v7: not NCCL's */
        a_s(a, "lib", ct_name_comm_lib(f[CT_NCCL_DTYPE]));
    a_u(a, "bytes", f[CT_NCCL_BYTES]);
    a_u(a, "count", f[CT_NCCL_COUNT]);
    a_s(a, "dtype", ct_name_comm_dtype(f[CT_NCCL_DTYPE]));
    a_s(a, "redop", ct_name_comm_redop(f[CT_NCCL_DTYPE], f[CT_NCCL_REDOP]));
    snprintf(hex, sizeof(hex), "%016" PRIx64, f[CT_NCCL_COMM]);
    a_s(a, "comm_hash", hex);
    a_u(a, "seq", f[CT_NCCL_SEQ]);
    if ((int64_t)f[CT_NCCL_ROOT] >= 0)
        a_i(a, "root", (int64_t)f[CT_NCCL_ROOT]);
    if ((int64_t)f[CT_NCCL_PEER] >= 0)
        a_i(a, "peer", (int64_t)f[CT_NCCL_PEER]);
    a_i(a, "comm_rank", (int64_t)f[CT_NCCL_RANK]);
    a_u(a, "nranks", f[CT_NCCL_NRANKS]);
    if (!on_gpu)
        a_u(a, "stream", f[CT_NCCL_STREAM]);
    if (f[CT_NCCL_GROUP])
        a_u(a, "group", f[CT_NCCL_GROUP]);
    if (!on_gpu)
        a_u(a, "correlation_id", f[CT_NCCL_CORR]);
    uint64_t gs, ge;
    unsigned src = ct_trace_nccl_gpu(t, r, &gs, &ge);
    if (src)
        a_s(a, "gpu_source", ct_name_gpu_source(src));
    /* what NCCL's profiler plugin said it chose (docs/nccl.md) */
    const struct ct_record *in = ct_chrome_nccl_info(w, f[CT_NCCL_CORR]);
    if (in) {
        const char *algo = ct_trace_str(t, in->f[CT_NINFO_ALGO]);
        const char *proto = ct_trace_str(t, in->f[CT_NINFO_PROTO]);
        if (*algo)
            a_s(a, "algo", algo);
        if (*proto)
            a_s(a, "proto", proto);
        if (in->f[CT_NINFO_CHANNELS])
            a_u(a, "channels", in->f[CT_NINFO_CHANNELS]);
        if (in->f[CT_NINFO_WARPS])
            a_u(a, "warps", in->f[CT_NINFO_WARPS]);
    }
    uint64_t tag; /* the application's tag for it (v7) */
    if (ct_chrome_nccl_tag(w, f[CT_NCCL_CORR], &tag))
        a_u(a, "user_tag", tag);
}

/* "ncclAllReduce", or "nvshmem:AllReduce" for NVSHMEM's (format v7) */
static const char *nccl_call_name(const uint64_t *f, char *buf, size_t n)
{
    return ct_name_comm_call(f[CT_NCCL_DTYPE], f[CT_NCCL_OP], buf, n);
}

static int api_event(struct ct_chrome_writer *w, size_t i)
{
    struct ct_trace *t = w->t;
    const struct ct_record *r = &t->recs[i];
    const uint64_t *f = r->f;
    ct_chrome_ev(w, "X", r->tid, (int64_t)f[CT_API_START], ct_trace_str(t, f[CT_API_NAME]));
    cat(w, "cuda_api");
    dur(w, f[CT_API_START], f[CT_API_END]);
    struct args a = {w->f, 0};
    a_u(&a, "correlation_id", f[CT_API_CORR]);
    a_s(&a, "family", ct_name_family(f[CT_API_FAMILY]));
    a_i(&a, "result", (int64_t)f[CT_API_RESULT]);
    if (f[CT_API_STREAM])
        a_u(&a, "stream", f[CT_API_STREAM]);
    if (f[CT_API_FAMILY] == CT_FAM_LAUNCH) {
        a_s(&a, "kernel", ct_trace_str(t, f[CT_API_KERNEL]));
        akey(&a, "grid");
        fprintf(w->f, "[%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]", f[CT_API_GRID_X], f[CT_API_GRID_Y],
                f[CT_API_GRID_Z]);
        akey(&a, "block");
        fprintf(w->f, "[%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]", f[CT_API_BLOCK_X], f[CT_API_BLOCK_Y],
                f[CT_API_BLOCK_Z]);
    } else if (f[CT_API_FAMILY] == CT_FAM_MEMCPY) {
        a_u(&a, "bytes", f[CT_API_BYTES]);
        a_s(&a, "copy_kind", ct_name_copy_kind(f[CT_API_COPY_KIND]));
    } else if (f[CT_API_FAMILY] == CT_FAM_MEMSET || f[CT_API_FAMILY] == CT_FAM_ALLOC) {
        a_u(&a, "bytes", f[CT_API_BYTES]);
    }
    a_end(&a);
    size_t n;
    const size_t *ix = ct_trace_gpu(t, f[CT_API_CORR], &n);
    /* a synchronisation's CUPTI record is not drawn (gpu_event): no flow */
    if (!n || t->recs[ix[0]].f[CT_GPU_TYPE] == CT_GPU_SYNC)
        return 0;
    const uint64_t *g0 = t->recs[ix[0]].f;
    if (!ct_chrome_in(w, (int64_t)g0[CT_GPU_START], (int64_t)g0[CT_GPU_END]))
        return 0; /* its GPU interval is outside the window: no flow to start */
    ct_chrome_ev(w, "s", r->tid, (int64_t)f[CT_API_START], "launch");
    cat(w, "flow");
    fprintf(w->f, ",\"id\":%" PRIu64 "}", flow_id(w, f[CT_API_CORR]));
    uint64_t end = 0;
    for (size_t k = 0; k < n; k++)
        if (t->recs[ix[k]].f[CT_GPU_END] > end)
            end = t->recs[ix[k]].f[CT_GPU_END];
    const uint64_t *g = t->recs[ix[0]].f;
    uint32_t tr = track_of(w, (int64_t)g[CT_GPU_DEVICE], g[CT_GPU_STREAM]);
    if (tr == UINT32_MAX)
        return -ENOMEM;
    if (add_delta(w, (int64_t)f[CT_API_START], tr, 1, 0) || add_delta(w, (int64_t)end, tr, -1, 0))
        return -ENOMEM;
    return 0;
}

/* A GPU interval on its stream's track; its call's flow ends here when it is
 * the call's first interval. */
static void gpu_event(struct ct_chrome_writer *w, size_t i)
{
    struct ct_trace *t = w->t;
    const struct ct_record *r = &t->recs[i];
    const uint64_t *f = r->f;
    const struct ct_record *call = ct_trace_call(t, f[CT_GPU_CORR]);
    char name[512], buf[64];
    const char *nm = ct_trace_str(t, f[CT_GPU_NAME]);
    switch (f[CT_GPU_TYPE]) {
    case CT_GPU_KERNEL: nm = ct_demangle(nm, name, sizeof(name)); break;
    case CT_GPU_MEMCPY:
        snprintf(name, sizeof(name), "Memcpy %s", ct_name_copy_kind(f[CT_GPU_COPY_KIND]));
        nm = name;
        break;
    case CT_GPU_MEMSET: nm = "Memset"; break;
    case CT_GPU_NCCL:
        if (call && call->kind == CT_REC_NCCL)
            nm = nccl_call_name(call->f, buf, sizeof(buf));
        else if (!*nm)
            nm = "NCCL";
        break;
    default:
        if (!*nm)
            nm = ct_name_gpu_type(f[CT_GPU_TYPE]);
        break;
    }
    int64_t dev;
    uint64_t key;
    placement(t, f, call, &dev, &key);
    uint32_t tid = gpu_tid(w, dev, key, (int64_t)f[CT_GPU_START], (int64_t)f[CT_GPU_END]);
    ct_chrome_ev(w, "X", tid, (int64_t)f[CT_GPU_START], nm);
    cat(w, ct_name_gpu_type(f[CT_GPU_TYPE]));
    dur(w, f[CT_GPU_START], f[CT_GPU_END]);
    struct args a = {w->f, 0};
    a_u(&a, "correlation_id", f[CT_GPU_CORR]);
    a_i(&a, "device", dev);
    a_u(&a, "stream", key & ~CT_NCCL_TRACK);
    int nccl = call && call->kind == CT_REC_NCCL; /* its fields below, bytes included */
    if (f[CT_GPU_BYTES] && !nccl)
        a_u(&a, "bytes", f[CT_GPU_BYTES]);
    if (f[CT_GPU_TYPE] == CT_GPU_MEMCPY)
        a_s(&a, "copy_kind", ct_name_copy_kind(f[CT_GPU_COPY_KIND]));
    if (f[CT_GPU_TYPE] == CT_GPU_KERNEL)
        a_s(&a, "mangled", ct_trace_str(t, f[CT_GPU_NAME]));
    a_s(&a, "source", ct_name_gpu_source(f[CT_GPU_SOURCE]));
    if (nccl)
        nccl_args(&a, w, call, 1);
    a_end(&a);
    size_t n;
    const size_t *ix = ct_trace_gpu(t, f[CT_GPU_CORR], &n);
    if (call && n && ix[0] == i &&
        ct_chrome_in(w, (int64_t)call->f[0], (int64_t)ct_export_rec_end(call))) {
        ct_chrome_ev(w, "f", tid, (int64_t)f[CT_GPU_START], "launch");
        cat(w, "flow");
        fprintf(w->f, ",\"bp\":\"e\",\"id\":%" PRIu64 "}", flow_id(w, f[CT_GPU_CORR]));
    }
}

/* The GPU interval that only an NCCL record carries (no GPU record). */
static void synth_event(struct ct_chrome_writer *w, const struct synth *s)
{
    struct ct_trace *t = w->t;
    const struct ct_record *r = &t->recs[s->rec];
    const uint64_t *f = r->f;
    char buf[64];
    if (!ct_chrome_in(w, s->s, s->e))
        return;
    uint32_t tid = gpu_tid(w, stream_device(t, f[CT_NCCL_STREAM]),
                           f[CT_NCCL_STREAM] | CT_NCCL_TRACK, s->s, s->e);
    ct_chrome_ev(w, "X", tid, s->s, nccl_call_name(f, buf, sizeof(buf)));
    cat(w, "nccl");
    dur(w, (uint64_t)s->s, (uint64_t)s->e);
    struct args a = {w->f, 0};
    a_s(&a, "source", "nccl_record");
    nccl_args(&a, w, r, 0);
    a_end(&a);
    if (!ct_chrome_in(w, (int64_t)f[CT_NCCL_START], (int64_t)f[CT_NCCL_END]))
        return; /* its call is outside the window: no flow to end */
    ct_chrome_ev(w, "f", tid, s->s, "launch");
    cat(w, "flow");
    fprintf(w->f, ",\"bp\":\"e\",\"id\":%" PRIu64 "}", flow_id(w, f[CT_NCCL_CORR]));
}

static int nccl_event(struct ct_chrome_writer *w, size_t i)
{
    struct ct_trace *t = w->t;
    const struct ct_record *r = &t->recs[i];
    const uint64_t *f = r->f;
    char buf[64];
    ct_chrome_ev(w, "X", r->tid, (int64_t)f[CT_NCCL_START], nccl_call_name(f, buf, sizeof(buf)));
    cat(w, "nccl");
    dur(w, f[CT_NCCL_START], f[CT_NCCL_END]);
    struct args a = {w->f, 0};
    nccl_args(&a, w, r, 0);
    a_end(&a);
    size_t n;
    const size_t *gx = ct_trace_gpu(t, f[CT_NCCL_CORR], &n);
    int gpu_in = n ? ct_chrome_in(w, (int64_t)t->recs[gx[0]].f[CT_GPU_START],
                                  (int64_t)t->recs[gx[0]].f[CT_GPU_END])
                   : ct_chrome_in(w, (int64_t)f[CT_NCCL_GPU_START], (int64_t)f[CT_NCCL_GPU_END]);
    if ((n || (f[CT_NCCL_GPU_END] && f[CT_NCCL_CORR])) && gpu_in) {
        ct_chrome_ev(w, "s", r->tid, (int64_t)f[CT_NCCL_START], "launch");
        cat(w, "flow");
        fprintf(w->f, ",\"id\":%" PRIu64 "}", flow_id(w, f[CT_NCCL_CORR]));
    }
    uint64_t gs, ge;
    if (ct_trace_nccl_gpu(t, r, &gs, &ge) && ge > gs) {
        uint32_t tr = track_of(w, stream_device(t, f[CT_NCCL_STREAM]), f[CT_NCCL_STREAM]);
        if (tr == UINT32_MAX)
            return -ENOMEM;
        double bw = f[CT_NCCL_BYTES] ? (double)f[CT_NCCL_BYTES] / (double)(ge - gs) : 0;
        if (add_delta(w, (int64_t)f[CT_NCCL_START], tr, 1, 0) ||
            add_delta(w, (int64_t)ge, tr, -1, 0) ||
            (bw > 0 && (add_delta(w, (int64_t)gs, UINT32_MAX, 0, bw) ||
                        add_delta(w, (int64_t)ge, UINT32_MAX, 0, -bw))))
            return -ENOMEM;
    }
    return 0;
}

static void io_event(struct ct_chrome_writer *w, const struct ct_record *r)
{
    struct ct_trace *t = w->t;
    const uint64_t *f = r->f;
    ct_chrome_ev(w, "X", r->tid, (int64_t)f[CT_IO_START], ct_trace_str(t, f[CT_IO_OP]));
    cat(w, "io");
    dur(w, f[CT_IO_START], f[CT_IO_END]);
    struct args a = {w->f, 0};
    a_i(&a, "fd", (int64_t)f[CT_IO_FD]);
    a_s(&a, "fd_type", ct_name_fd_type(f[CT_IO_FD_TYPE]));
    a_s(&a, "path", ct_trace_str(t, f[CT_IO_PATH]));
    a_u(&a, "bytes", f[CT_IO_BYTES]);
    a_i(&a, "result", (int64_t)f[CT_IO_RESULT]);
    if ((int64_t)f[CT_IO_OFFSET] >= 0)
        a_i(&a, "offset", (int64_t)f[CT_IO_OFFSET]);
    a_end(&a);
}

static void nvtx_event(struct ct_chrome_writer *w, const struct ct_record *r, size_t i)
{
    struct ct_trace *t = w->t;
    const uint64_t *f = r->f;
    const char *msg = ct_trace_str(t, f[CT_NVTX_MESSAGE]);
    struct args a = {w->f, 0};
    if (f[CT_NVTX_DEPTH]) { /* push/pop: nests with the thread's calls */
        ct_chrome_ev(w, "X", r->tid, (int64_t)f[CT_NVTX_START], msg);
        cat(w, "nvtx");
        dur(w, f[CT_NVTX_START], f[CT_NVTX_END]);
    } else { /* start/end: an async pair, its own track */
        ct_chrome_ev(w, "b", r->tid, (int64_t)f[CT_NVTX_START], msg);
        cat(w, "nvtx");
        fprintf(w->f, ",\"id\":%" PRIu64, w->flow_base | i);
    }
    a_s(&a, "domain", ct_trace_str(t, f[CT_NVTX_DOMAIN]));
    a_u(&a, "depth", f[CT_NVTX_DEPTH]);
    a_end(&a);
    if (!f[CT_NVTX_DEPTH]) {
        ct_chrome_ev(w, "e", r->tid, (int64_t)f[CT_NVTX_END], msg);
        cat(w, "nvtx");
        fprintf(w->f, ",\"id\":%" PRIu64 "}", w->flow_base | i);
    }
}

static void instant(struct ct_chrome_writer *w, const struct ct_record *r)
{
    struct ct_trace *t = w->t;
    const uint64_t *f = r->f;
    char buf[160];
    if (r->kind == CT_REC_NVTX_MARK) {
        ct_chrome_ev(w, "i", r->tid, (int64_t)f[CT_MARK_TIME], ct_trace_str(t, f[CT_MARK_MESSAGE]));
        cat(w, "nvtx");
        fputs(",\"s\":\"t\"", w->f);
        struct args a = {w->f, 0};
        a_s(&a, "domain", ct_trace_str(t, f[CT_MARK_DOMAIN]));
        a_end(&a);
    } else if (r->kind == CT_REC_DROP) {
        snprintf(buf, sizeof(buf), "dropped %" PRIu64 " records (%s)", f[CT_DROP_COUNT],
                 ct_name_drop_reason(f[CT_DROP_REASON]));
        ct_chrome_ev(w, "i", r->tid, (int64_t)f[CT_DROP_TIME], buf);
        cat(w, "cutrace");
        fputs(",\"s\":\"p\"}", w->f);
    } else {
        ct_chrome_ev(w, "i", r->tid, (int64_t)f[CT_ERROR_TIME], ct_trace_str(t, f[CT_ERROR_WHAT]));
        cat(w, "cutrace");
        fputs(",\"s\":\"p\"", w->f);
        struct args a = {w->f, 0};
        a_i(&a, "code", (int64_t)f[CT_ERROR_CODE]);
        a_end(&a);
    }
}

/* The order events are written in: the records' (start order, ties in file
 * order), except that of records starting at the same ns the longer comes
 * first. A range is recorded when it ends, after the calls inside it, and a
 * call that starts on the very ns of its range's push would otherwise come
 * first and break nesting (Perfetto drops the range). Runs of equal starts
 * are short: insertion sort. */
static size_t *write_order(const struct ct_trace *t)
{
    size_t *o = malloc((t->n ? t->n : 1) * sizeof(*o));
    for (size_t i = 0; o && i < t->n; i++) {
        size_t j = i;
        const struct ct_record *r = &t->recs[i];
        for (; j > 0; j--) {
            const struct ct_record *q = &t->recs[o[j - 1]];
            if (q->f[0] != r->f[0] || ct_export_rec_end(q) >= ct_export_rec_end(r))
                break;
            o[j] = o[j - 1];
        }
        o[j] = i;
    }
    return o;
}

static int write_trace(struct ct_chrome_writer *w, struct ct_progress *pr, size_t idx, size_t ntr)
{
    struct ct_trace *t = w->t;
    int rc = thread_meta(w);
    if (!rc)
        rc = ct_chrome_nccl_index(w);
    if (rc)
        return rc;
    /* GPU intervals known only from an NCCL record, merged in start order */
    struct synth *sy = NULL;
    size_t nsy = 0, ksy = 0, sycap = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct ct_record *r = &t->recs[i];
        size_t n;
        if (r->kind != CT_REC_NCCL || !r->f[CT_NCCL_GPU_END] || !r->f[CT_NCCL_CORR])
            continue;
        ct_trace_gpu(t, r->f[CT_NCCL_CORR], &n);
        if (n)
            continue;
        if (nsy == sycap) {
            sycap = sycap ? sycap * 2 : 64;
            struct synth *ns = realloc(sy, sycap * sizeof(*ns));
            if (!ns) {
                free(sy);
                return -ENOMEM;
            }
            sy = ns;
        }
        sy[nsy++] =
            (struct synth){(int64_t)r->f[CT_NCCL_GPU_START], (int64_t)r->f[CT_NCCL_GPU_END], i};
    }
    if (nsy)
        qsort(sy, nsy, sizeof(*sy), cmp_synth);
    size_t *ord = write_order(t);
    if (!ord) {
        free(sy);
        return -ENOMEM;
    }
    for (size_t k = 0; k < t->n && !rc; k++) {
        size_t i = ord[k];
        const struct ct_record *r = &t->recs[i];
        if ((k & 0xffff) == 0)
            ct_progress_update(pr, "writing trace", idx + 1, ntr, 100.0 * (double)k / (double)t->n);
        if (!ct_export_rec_in(w->sel, r, w->shift))
            continue; /* outside --window / --iterations */
        switch (r->kind) {
        case CT_REC_API: rc = api_event(w, i); break;
        case CT_REC_GPU:
            while (ksy < nsy && sy[ksy].s <= (int64_t)r->f[CT_GPU_START])
                synth_event(w, &sy[ksy++]);
            /* CUPTI's synchronization records are host waits, on no stream:
             * the sync call's own span on its thread shows them */
            if (r->f[CT_GPU_TYPE] != CT_GPU_SYNC && !ct_trace_gpu_superseded(w->t, r))
                gpu_event(w, i); /* one interval per op, from its best source */
            break;
        case CT_REC_NCCL: rc = nccl_event(w, i); break;
        case CT_REC_IO: io_event(w, r); break;
        case CT_REC_NVTX_RANGE: nvtx_event(w, r, i); break;
        case CT_REC_NVTX_MARK:
        case CT_REC_DROP:
        case CT_REC_ERROR: instant(w, r); break;
        default: break;
        }
    }
    while (!rc && ksy < nsy)
        synth_event(w, &sy[ksy++]);
    free(ord);
    free(sy);
    if (!rc) {
        ct_chrome_counters(w);
        ct_chrome_health_counters(w);
        if (w->nccl_proxy)
            rc = ct_chrome_nccl_proxy(w);
    }
    return rc;
}

int ct_export_chrome(FILE *f, struct ct_export_job *x, struct ct_progress *pr, char *err,
                     size_t errlen)
{
    /* displayTimeUnit first: Perfetto reads the keys before traceEvents
     * from the file's first chunk (and ignores this one now; chrome://tracing
     * shows ns with it) */
    fprintf(f,
            "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"cutrace export\","
            "\"time_zero\":\"the job's earliest record\","
            "\"time_zero_realtime_ns\":%" PRId64 ",\"report_time_zero_ts\":",
            x->origin_realtime_ns);
    if (x->job.t0 >= x->origin)
        ct_chrome_ts(f, x->job.t0 - x->origin);
    else /* no GPU op: the report has no zero of its own (its times are from the epoch) */
        fputs("null", f);
    fprintf(f,
            ",\"ranks\":%zu,\"traces\":%zu},\n"
            "\"traceEvents\":[\n",
            x->job.nranks, x->nsrc);
    int rc = 0, last_rank = INT32_MIN, first = 1;
    for (size_t i = 0; i < x->nsrc && !rc; i++) {
        const struct ct_export_src *s = &x->src[i];
        if (!ct_export_rank_on(&x->sel, s->rank))
            continue; /* --ranks */
        struct ct_chrome_writer w = {.f = f,
                                     .src = s,
                                     .sel = &x->sel,
                                     .shift = s->shift,
                                     .flow_base = (uint64_t)(i + 1) << 40,
                                     .first = &first,
                                     .later_proc = s->rank == last_rank,
                                     .nccl_proxy = x->nccl_proxy};
        if (s->rank != last_rank) {
            char buf[300];
            snprintf(buf, sizeof(buf), "rank %d (%s)", s->rank, s->host ? s->host : "?");
            meta_ev(&w, 0, "process_name", buf, 0);
            meta_ev(&w, 0, "process_sort_index", NULL, s->rank);
            last_rank = s->rank;
        }
        struct ct_trace t;
        ct_progress_update(pr, "writing trace", i + 1, x->nsrc, 0);
        rc = ct_trace_load(&t, s->path, 1, err, errlen);
        if (rc)
            break;
        w.t = &t;
        rc = write_trace(&w, pr, i, x->nsrc);
        if (rc)
            snprintf(err, errlen, "out of memory");
        free(w.tracks);
        free(w.cd);
        free(w.info);
        free(w.tags);
        ct_trace_free(&t);
        if (ferror(f)) {
            snprintf(err, errlen, "error writing output");
            rc = -EIO;
        }
    }
    if (!rc && x->cp && (rc = ct_chrome_critical_path(f, x, &first)))
        snprintf(err, errlen, rc == -ENOMEM ? "out of memory" : "error writing output");
    fputs("\n]}\n", f);
    return rc;
}
