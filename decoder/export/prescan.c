/*
 * The pass of `cutrace export` between building the job and writing it:
 * every trace of the job read once more, times and names only, for
 *
 *   - the exports' time zero, the job's earliest record (of the kinds that
 *     are exported: not metadata or clock pairs; on the job clock):
 *     Perfetto's trace processor drops events of negative time, so the
 *     zero is set where nothing exported precedes it; and
 *   - the Chrome file's expected size, before a byte of it is written
 *     (a 16-rank job of 1 M records a rank made a 6.7 GB file, which no
 *     viewer opens): the events each selected record becomes, at the bytes
 *     an event of its kind takes (measured on real exports: docs/export.md,
 *     "Size"), plus the names it carries.
 *
 * It decodes only the fields named below (src/chunk.h ct_chunk_sink.fields)
 * and keeps no record: memory is one trace's string table a thread (one
 * thread a CPU, each taking the next trace, as the first pass does).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decoder/export/export.h"
#include "decoder/util/demangle.h"
#include "src/reader.h"

/*
 * Bytes of the JSON text of the events of one record, without their "ts"
 * digits (counted once per event from the run's length, below) and the
 * names they carry (added from the string table): the means over the
 * events of each kind in the exports of examples/sim_train and the
 * labelled pipe job under `cutrace run` (tests/export/check_size.py
 * --show prints them; docs/export.md, "Size").
 */
enum {
    B_API = 148,      /* a driver call: X, cat cuda_api, correlation, family, result, stream */
    B_LAUNCH = 55,    /* ... its grid and block (and the kernel's name, added) */
    B_BYTES = 35,     /* ... bytes (and copy_kind) of a copy, memset or allocation */
    B_GPU = 174,      /* a kernel's X on its stream's track: device, stream, source, mangled */
    B_GPU_NAME = 25,  /* ... a copy's or memset's instead ("Memcpy HtoD", copy_kind) */
    B_NCCL_ON = 194,  /* ... an NCCL op's, with the op's fields */
    B_LAUNCHED = 361, /* its launch: flow s and f (one per call), queue depth +1 and -1 */
    B_NCCL = 329,     /* an NCCL call's X with its args */
    B_NCCL_GPU = 166, /* an NCCL op's GPU-side counters: algbw up and down */
    B_IO = 150,       /* an I/O span (op and path added) */
    B_RANGE = 108,    /* a push/pop range's X (message and domain added) */
    B_ASYNC = 190,    /* a start/end range's b and e (message twice, domain added) */
    B_MARK = 85,      /* an instant: mark, drop or recorder error */
    B_COUNTER = 80,   /* a health counter sample (one C event, name included) */
    B_TRACE = 2048,   /* per trace: process and thread names, sort indexes */
    B_CP = 232,       /* a critical-path slice with its flow binding (name added) */
    B_NINFO = 45,     /* an op's descriptor, on its call's and its GPU slice (names added) */
    B_PROXY = 339,    /* export --nccl-proxy: a ProxyOp's X with its state sums */
    B_CHANNEL = 170,  /* export --nccl-proxy: a kernel channel's X */
    B_PHASE = 175,    /* export --nccl-proxy: a channel's barrier phase's X (v7) */
    B_NTAG = 20,      /* an op's user tag, on its call's and its GPU slice (v7) */
    B_STEP = 340,     /* export --nccl-proxy: a raw proxy step's X with its states (335 measured) */
};

struct scan {
    struct ct_reader *rd;
    const struct ct_export_sel *sel;
    int64_t shift; /* to the job clock */
    int count;     /* the trace is selected: count its events */
    int proxy;     /* export --nccl-proxy: ProxyOps are events */
    int64_t lo, hi;
    uint64_t events, bytes, records;
    int64_t *dem; /* per string id: the demangled name's length + 1 (0: not yet) */
    size_t ndem;
};

static size_t slen(const struct scan *s, uint64_t id)
{
    return strlen(ct_reader_string(s->rd, id));
}

/* The length of a kernel's name as the writer shows it (demangled, at
 * most the 511 bytes its buffer holds), once per string. */
static size_t demangled_len(struct scan *s, uint64_t id)
{
    if (id >= s->ndem) {
        size_t n = s->ndem ? s->ndem : 256;
        while (n <= id)
            n *= 2;
        int64_t *d = realloc(s->dem, n * sizeof(*d));
        if (!d)
            return slen(s, id); /* an estimate still: the mangled length */
        memset(d + s->ndem, 0, (n - s->ndem) * sizeof(*d));
        s->dem = d;
        s->ndem = n;
    }
    if (!s->dem[id]) {
        char buf[512];
        s->dem[id] =
            (int64_t)strlen(ct_demangle(ct_reader_string(s->rd, id), buf, sizeof(buf))) + 1;
    }
    return (size_t)(s->dem[id] - 1);
}

static void add(struct scan *s, uint64_t events, uint64_t bytes)
{
    s->events += events;
    s->bytes += bytes;
}

/* The events a selected record in the window becomes (chrome.c). */
static void count(struct scan *s, const struct ct_record *r)
{
    const uint64_t *f = r->f;
    switch (r->kind) {
    case CT_REC_API: {
        uint64_t b = B_API + slen(s, f[CT_API_NAME]);
        if (f[CT_API_FAMILY] == CT_FAM_LAUNCH)
            b += B_LAUNCH + slen(s, f[CT_API_KERNEL]);
        else if (f[CT_API_FAMILY] == CT_FAM_MEMCPY || f[CT_API_FAMILY] == CT_FAM_MEMSET ||
                 f[CT_API_FAMILY] == CT_FAM_ALLOC)
            b += B_BYTES;
        add(s, 1, b);
        break;
    }
    case CT_REC_GPU:
        if (f[CT_GPU_TYPE] == CT_GPU_SYNC)
            break; /* not drawn: the sync call's span shows the wait */
        if (f[CT_GPU_TYPE] == CT_GPU_KERNEL)
            add(s, 1, B_GPU + demangled_len(s, f[CT_GPU_NAME]) + slen(s, f[CT_GPU_NAME]));
        else if (f[CT_GPU_TYPE] == CT_GPU_NCCL)
            add(s, 1, B_GPU + B_NCCL_ON);
        else
            add(s, 1, B_GPU + B_GPU_NAME + slen(s, f[CT_GPU_NAME]));
        if (f[CT_GPU_CORR])
            add(s, 4, B_LAUNCHED);
        break;
    case CT_REC_NCCL:
        add(s, 1, B_NCCL);
        if (f[CT_NCCL_GPU_END])
            add(s, 2, B_NCCL_GPU);
        break;
    case CT_REC_IO: add(s, 1, B_IO + slen(s, f[CT_IO_OP]) + slen(s, f[CT_IO_PATH])); break;
    case CT_REC_NVTX_RANGE:
        if (f[CT_NVTX_DEPTH])
            add(s, 1, B_RANGE + slen(s, f[CT_NVTX_MESSAGE]) + slen(s, f[CT_NVTX_DOMAIN]));
        else
            add(s, 2, B_ASYNC + 2 * slen(s, f[CT_NVTX_MESSAGE]) + slen(s, f[CT_NVTX_DOMAIN]));
        break;
    case CT_REC_NVTX_MARK:
        add(s, 1, B_MARK + slen(s, f[CT_MARK_MESSAGE]) + slen(s, f[CT_MARK_DOMAIN]));
        break;
    case CT_REC_DROP: add(s, 1, B_MARK); break;
    case CT_REC_ERROR: add(s, 1, B_MARK + slen(s, f[CT_ERROR_WHAT])); break;
    case CT_REC_COUNTER: add(s, 1, B_COUNTER); break;
    case CT_REC_NCCL_INFO: /* args of two slices, no event of its own */
        add(s, 0, 2 * (B_NINFO + slen(s, f[CT_NINFO_ALGO]) + slen(s, f[CT_NINFO_PROTO])));
        return;
    case CT_REC_NCCL_PROXY:
        if (!s->proxy)
            return;
        add(s, 1, B_PROXY);
        break;
    case CT_REC_NCCL_CHANNEL:
        if (!s->proxy)
            return;
        add(s, 1, B_CHANNEL);
        break;
    case CT_REC_NCCL_PHASE:
        if (!s->proxy)
            return;
        add(s, 1, B_PHASE);
        break;
    case CT_REC_NCCL_TAG: /* args of two slices, no event of its own */
        add(s, 0, 2 * B_NTAG);
        return;
    case CT_REC_NCCL_STEP:
        if (!s->proxy)
            return;
        add(s, 1, B_STEP);
        break;
    default: return; /* metadata, clock pairs: no event of their own */
    }
    s->records++;
}

static int on_record(void *ctx, const struct ct_record *r)
{
    struct scan *s = ctx;
    /* metadata and clock pairs are no event or row: their times (when the
     * recorder wrote them) place nothing */
    if (r->kind == CT_REC_META || r->kind == CT_REC_CLOCK)
        return 0;
    int64_t a = (int64_t)r->f[0] + s->shift, b = (int64_t)ct_export_rec_end(r) + s->shift;
    if (a < s->lo)
        s->lo = a;
    /* an NCCL op's GPU interval known only from its record is drawn too */
    if (r->kind == CT_REC_NCCL && r->f[CT_NCCL_GPU_END]) {
        int64_t g = (int64_t)r->f[CT_NCCL_GPU_START] + s->shift;
        if (g < s->lo)
            s->lo = g;
        if ((int64_t)r->f[CT_NCCL_GPU_END] + s->shift > b)
            b = (int64_t)r->f[CT_NCCL_GPU_END] + s->shift;
    }
    if (b > s->hi)
        s->hi = b;
    if (s->count && ct_export_rec_in(s->sel, r, s->shift))
        count(s, r);
    return 0;
}

/* Decimal digits of v > 0. */
static int digits(uint64_t v)
{
    int n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

/* The traces shared out to the scanning threads. */
struct pool {
    struct ct_export_job *x;
    int chrome;
    const uint32_t *fields;
    atomic_size_t next, done;
    atomic_int failed;
    pthread_mutex_t lock;
    struct scan sum; /* the traces' figures added up (under lock) */
    uint64_t ntraces;
    int rc;
    char err[512];
};

/* Scans trace i into s (its figures added to s's). 0 or a negative errno
 * with err set. */
static int scan_trace(struct pool *P, struct scan *s, size_t i, char *err, size_t errlen)
{
    const struct ct_export_src *src = &P->x->src[i];
    struct ct_reader rd;
    int rc = ct_reader_open(&rd, src->path);
    if (rc) {
        snprintf(err, errlen, "%s", rd.err);
        return rc;
    }
    struct ct_chunk_sink sink = {s, NULL, on_record, P->fields, NULL};
    s->rd = &rd;
    s->shift = src->shift;
    s->count = P->chrome && ct_export_rank_on(&P->x->sel, src->rank);
    s->proxy = P->x->nccl_proxy;
    s->ndem = 0; /* string ids are the trace's own */
    free(s->dem);
    s->dem = NULL;
    while ((rc = ct_reader_next(&rd, &sink)) > 0)
        ;
    if (rc < 0)
        snprintf(err, errlen, "%s", rc == -ENOMEM ? "out of memory" : rd.err);
    ct_reader_close(&rd);
    return rc < 0 ? rc : 0;
}

static void *scan_worker(void *arg)
{
    struct pool *P = arg;
    struct scan s = {.sel = &P->x->sel, .lo = INT64_MAX, .hi = INT64_MIN};
    uint64_t ntraces = 0;
    char err[512];
    for (;;) {
        size_t i = atomic_fetch_add(&P->next, 1);
        if (i >= P->x->nsrc || atomic_load(&P->failed))
            break;
        int rc = scan_trace(P, &s, i, err, sizeof(err));
        if (rc) {
            pthread_mutex_lock(&P->lock);
            if (!atomic_load(&P->failed)) {
                P->rc = rc;
                snprintf(P->err, sizeof(P->err), "%s", err);
            }
            atomic_store(&P->failed, 1);
            pthread_mutex_unlock(&P->lock);
            break;
        }
        ntraces += (uint64_t)s.count;
        atomic_fetch_add(&P->done, 1);
    }
    free(s.dem);
    pthread_mutex_lock(&P->lock);
    if (s.lo < P->sum.lo)
        P->sum.lo = s.lo;
    if (s.hi > P->sum.hi)
        P->sum.hi = s.hi;
    P->sum.events += s.events;
    P->sum.bytes += s.bytes;
    P->sum.records += s.records;
    P->ntraces += ntraces;
    pthread_mutex_unlock(&P->lock);
    return NULL;
}

int ct_export_prescan(struct ct_export_job *x, int chrome, struct ct_export_size *est,
                      struct ct_progress *pr, char *err, size_t errlen)
{
    /* the fields the counting reads; times always come (they chain) */
    uint32_t fields[CT_REC_KIND_COUNT] = {0};
    if (chrome) {
        fields[CT_REC_API] = 1u << CT_API_NAME | 1u << CT_API_FAMILY | 1u << CT_API_KERNEL;
        fields[CT_REC_GPU] = 1u << CT_GPU_TYPE | 1u << CT_GPU_NAME | 1u << CT_GPU_CORR;
        fields[CT_REC_IO] = 1u << CT_IO_OP | 1u << CT_IO_PATH;
        fields[CT_REC_NVTX_RANGE] =
            1u << CT_NVTX_MESSAGE | 1u << CT_NVTX_DOMAIN | 1u << CT_NVTX_DEPTH;
        fields[CT_REC_NVTX_MARK] = 1u << CT_MARK_MESSAGE | 1u << CT_MARK_DOMAIN;
        fields[CT_REC_ERROR] = 1u << CT_ERROR_WHAT;
        fields[CT_REC_NCCL_INFO] = 1u << CT_NINFO_ALGO | 1u << CT_NINFO_PROTO;
    }
    /* one trace a thread at a time, as the first pass reads them
     * (decoder/load/load.c): each keeps one reader and one string table */
    struct pool P = {.x = x, .chrome = chrome, .fields = fields};
    P.sum = (struct scan){.lo = INT64_MAX, .hi = INT64_MIN};
    atomic_init(&P.next, 0);
    atomic_init(&P.done, 0);
    atomic_init(&P.failed, 0);
    pthread_mutex_init(&P.lock, NULL);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    size_t nt = ncpu > 0 ? (size_t)ncpu : 1;
    if (nt > x->nsrc)
        nt = x->nsrc;
    if (nt > 64)
        nt = 64;
    pthread_t th[64];
    size_t started = 0;
    for (size_t i = 0; i < nt; i++)
        if (pthread_create(&th[i], NULL, scan_worker, &P) == 0)
            started++;
    if (!started)
        scan_worker(&P);
    while (started && atomic_load(&P.next) < x->nsrc + started && !atomic_load(&P.failed)) {
        ct_progress_update(pr, "sizing traces", atomic_load(&P.done), x->nsrc, -1);
        usleep(20000);
    }
    for (size_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&P.lock);
    if (atomic_load(&P.failed)) {
        snprintf(err, errlen, "%s", P.err);
        return P.rc;
    }
    const struct scan *s = &P.sum;
    /* no record at all (empty traces): the report's zero, which is then
     * the job's own start */
    x->origin = s->lo <= s->hi ? s->lo : x->job.t0;
    if (est) {
        uint64_t cp = 0, cpb = 0;
        for (size_t i = 0; x->cp && i < x->cp->n; i++) {
            const struct ct_cp_pedge *p = &x->cp->v[i];
            if (p->index < x->cp_first || (x->cp_last >= 0 && p->index > x->cp_last) ||
                !ct_export_rank_on(&x->sel, p->rank) || !ct_export_in(&x->sel, p->s, p->e))
                continue;
            cp++;
            cpb += B_CP + (p->name ? strlen(p->name) : 0);
        }
        /* "ts":N.NNN of a time late in the run (most are of its magnitude);
         * X events' "dur" is within B_* (durations are short) */
        uint64_t span_us = s->hi > x->origin ? (uint64_t)(s->hi - x->origin) / 1000 : 0;
        int tsw = digits(span_us ? span_us : 1) + 4;
        est->records = s->records;
        est->events = s->events + cp;
        est->bytes = 256 + P.ntraces * B_TRACE + s->bytes + cpb + est->events * (uint64_t)tsw;
    }
    return 0;
}

void ct_export_rebase(struct ct_export_job *x)
{
    for (size_t i = 0; i < x->nsrc; i++)
        x->src[i].shift -= x->origin;
    if (x->sel.lo != INT64_MIN)
        x->sel.lo -= x->origin;
    if (x->sel.hi != INT64_MAX)
        x->sel.hi -= x->origin;
    x->origin_realtime_ns = x->origin;
}
