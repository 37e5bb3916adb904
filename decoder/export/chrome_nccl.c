/*
 * NCCL's own account of its ops in the Chrome trace-event export
 * (decoder/export/chrome.c; docs/export.md, docs/nccl.md): the index that
 * gives each op's slice its profiler-plugin descriptor (algorithm,
 * protocol, channels, warps: CT_REC_NCCL_INFO), and, with `export
 * --nccl-proxy`, the proxy tracks: per rank a track per (communicator,
 * channel, peer, direction) holding a slice per ProxyOp (CT_REC_NCCL_PROXY)
 * from its first step's start to its last step's stop, its args the
 * recorded state sums, and, where the trace has raw steps (format v6
 * CT_REC_NCCL_STEP, CUTRACE_NCCL_STEPS), beside each such track one of its
 * steps: a slice per step, its states' begins and times as args (steps in
 * flight overlap, so they cannot nest in the ProxyOp's slice). The proxy
 * tracks are written after the trace's
 * other events, so that a file without them is the same file with their
 * events left out (the export test checks exactly that).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/export/chrome_int.h"
#include "decoder/read/nccl_steps.h"
#include "decoder/util/json.h"
#include "decoder/util/names.h"

/* A proxy track's tid: below the GPU streams' (CT_GPU_TID, from 2^30) and
 * above any Linux thread id (pid_max is at most 2^22); the trace's index
 * in bits 20-27, so that two traces of one rank (a child process) keep
 * their tracks apart; CT_LANES per track. */
#define CT_PROXY_TID(w, track, lane)                                                               \
    (0x30000000u + ((uint32_t)((w)->flow_base >> 40) & 0xffu) * 0x100000u +                        \
     ((uint32_t)(track)*CT_LANES + (uint32_t)(lane)) % 0x100000u)

/* A kernel-channel track's tid: as a proxy track's, below theirs. */
#define CT_CHAN_TID(w, track, lane)                                                                \
    (0x20000000u + ((uint32_t)((w)->flow_base >> 40) & 0xffu) * 0x100000u +                        \
     ((uint32_t)(track)*CT_LANES + (uint32_t)(lane)) % 0x100000u)

/* A proxy-steps track's tid: as a proxy track's, below the channels'. */
#define CT_STEP_TID(w, track, lane)                                                                \
    (0x10000000u + ((uint32_t)((w)->flow_base >> 40) & 0xffu) * 0x100000u +                        \
     ((uint32_t)(track)*CT_LANES + (uint32_t)(lane)) % 0x100000u)

static int cmp_info(const void *a, const void *b, void *ctx)
{
    const struct ct_trace *t = ctx;
    uint64_t x = t->recs[*(const size_t *)a].f[CT_NINFO_CORR];
    uint64_t y = t->recs[*(const size_t *)b].f[CT_NINFO_CORR];
    return (x > y) - (x < y);
}

static int cmp_tag(const void *a, const void *b, void *ctx)
{
    const struct ct_trace *t = ctx;
    uint64_t x = t->recs[*(const size_t *)a].f[CT_NTAG_CORR];
    uint64_t y = t->recs[*(const size_t *)b].f[CT_NTAG_CORR];
    return (x > y) - (x < y);
}

/* w->tags: the trace's user-tag records (v7) by correlation id. */
static int tag_index(struct ct_chrome_writer *w)
{
    const struct ct_trace *t = w->t;
    size_t n = t->count[CT_REC_NCCL_TAG];
    w->tags = NULL;
    w->ntags = 0;
    if (!n)
        return 0; /* below ABI v7, or no op tagged */
    w->tags = malloc(n * sizeof(*w->tags));
    if (!w->tags)
        return -ENOMEM;
    for (size_t i = 0; i < t->n && w->ntags < n; i++)
        if (t->recs[i].kind == CT_REC_NCCL_TAG)
            w->tags[w->ntags++] = i;
    qsort_r(w->tags, w->ntags, sizeof(*w->tags), cmp_tag, w->t);
    return 0;
}

int ct_chrome_nccl_tag(const struct ct_chrome_writer *w, uint64_t corr, uint64_t *tag)
{
    size_t lo = 0, hi = w->ntags;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (w->t->recs[w->tags[mid]].f[CT_NTAG_CORR] < corr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < w->ntags && w->t->recs[w->tags[lo]].f[CT_NTAG_CORR] == corr) {
        *tag = w->t->recs[w->tags[lo]].f[CT_NTAG_TAG];
        return 1;
    }
    return 0;
}

int ct_chrome_nccl_index(struct ct_chrome_writer *w)
{
    const struct ct_trace *t = w->t;
    size_t n = t->count[CT_REC_NCCL_INFO];
    w->info = NULL;
    w->ninfo = 0;
    int rc = tag_index(w);
    if (!n || rc)
        return rc; /* the common case: no descriptor, nothing to join */
    w->info = malloc(n * sizeof(*w->info));
    if (!w->info)
        return -ENOMEM;
    for (size_t i = 0; i < t->n && w->ninfo < n; i++)
        if (t->recs[i].kind == CT_REC_NCCL_INFO)
            w->info[w->ninfo++] = i;
    qsort_r(w->info, w->ninfo, sizeof(*w->info), cmp_info, w->t);
    return 0;
}

const struct ct_record *ct_chrome_nccl_info(const struct ct_chrome_writer *w, uint64_t corr)
{
    size_t lo = 0, hi = w->ninfo;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (w->t->recs[w->info[mid]].f[CT_NINFO_CORR] < corr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < w->ninfo && w->t->recs[w->info[lo]].f[CT_NINFO_CORR] == corr)
        return &w->t->recs[w->info[lo]];
    return NULL;
}

struct ptrack {
    uint64_t comm;
    uint32_t channel;
    int32_t peer;
    uint8_t send;
    int named; /* lanes whose thread_name is written */
    int64_t lane_end[CT_LANES];
};

static void meta(struct ct_chrome_writer *w, uint32_t tid, const char *name, long sort)
{
    ct_chrome_ev(w, "M", tid, -w->shift, "thread_name");
    fputs(",\"args\":{\"name\":", w->f);
    ct_json_str(w->f, name);
    fputs("}}", w->f);
    ct_chrome_ev(w, "M", tid, -w->shift, "thread_sort_index");
    fprintf(w->f, ",\"args\":{\"sort_index\":%ld}}", sort);
}

/* The track of (comm, channel, peer, direction), added when new; index or
 * SIZE_MAX when out of memory. */
static size_t track_of(struct ptrack **v, size_t *n, size_t *cap, uint64_t comm, uint32_t channel,
                       int32_t peer, uint8_t send)
{
    for (size_t i = 0; i < *n; i++)
        if ((*v)[i].comm == comm && (*v)[i].channel == channel && (*v)[i].peer == peer &&
            (*v)[i].send == send)
            return i;
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 16;
        struct ptrack *q = realloc(*v, c * sizeof(*q));
        if (!q)
            return SIZE_MAX;
        *v = q;
        *cap = c;
    }
    struct ptrack *p = &(*v)[*n];
    memset(p, 0, sizeof(*p));
    p->comm = comm;
    p->channel = channel;
    p->peer = peer;
    p->send = send;
    for (int l = 0; l < CT_LANES; l++)
        p->lane_end[l] = INT64_MIN;
    return (*n)++;
}

static void arg_u(FILE *f, const char *k, uint64_t v)
{
    fprintf(f, ",\"%s\":%" PRIu64, k, v);
}

/* The first lane of track T free at s, taken up to e (Perfetto does not
 * nest slices that overlap without one holding the other). */
static int take_lane(struct ptrack *T, int64_t s, int64_t e)
{
    int l = 0;
    while (l < CT_LANES - 1 && T->lane_end[l] > s)
        l++;
    if (e > T->lane_end[l])
        T->lane_end[l] = e;
    return l;
}

/* What a lane track's name adds: which lane, and a rank's later trace's
 * pid (as the counters say it). */
static void lane_suffix(const struct ct_chrome_writer *w, int lane, char *buf, size_t n)
{
    buf[0] = 0;
    if (lane)
        snprintf(buf, n, " (overlapping, lane %d)", lane);
    if (w->later_proc)
        snprintf(buf + strlen(buf), n - strlen(buf), " (pid %" PRIu32 ")", w->src->pid);
}

/* One ProxyOp's slice on its track (the first lane free at its start:
 * ProxyOps of one track overlap only when one op's steps reach past the
 * next op's first, which Perfetto would not nest). */
static int proxy_slice(struct ct_chrome_writer *w, const struct ct_record *r, struct ptrack **v,
                       size_t *n, size_t *cap)
{
    const uint64_t *f = r->f;
    const struct ct_record *call = ct_trace_call(w->t, f[CT_NPROXY_CORR]);
    uint64_t comm = call && call->kind == CT_REC_NCCL ? call->f[CT_NCCL_COMM] : 0;
    uint8_t send = f[CT_NPROXY_SEND] != 0;
    int32_t peer = (int32_t)(int64_t)f[CT_NPROXY_PEER];
    size_t k = track_of(v, n, cap, comm, (uint32_t)f[CT_NPROXY_CHANNEL], peer, send);
    if (k == SIZE_MAX)
        return -ENOMEM;
    struct ptrack *T = &(*v)[k];
    int64_t s = (int64_t)f[CT_NPROXY_START], e = (int64_t)f[CT_NPROXY_END];
    int l = take_lane(T, s, e);
    for (; T->named <= l; T->named++) {
        char name[200], lane[64];
        lane_suffix(w, T->named, lane, sizeof(lane));
        snprintf(name, sizeof(name), "NCCL proxy comm %016" PRIx64 " ch %u %s %s peer %d%s", comm,
                 T->channel, send ? "send" : "recv", send ? "to" : "from", peer, lane);
        /* after the GPU streams (sort indexes below 10^9 / 10), before the
         * host threads (10^9 + tid) */
        meta(w, CT_PROXY_TID(w, k, T->named), name, 900000000L + (long)k * CT_LANES + T->named);
    }
    char nm[64];
    snprintf(nm, sizeof(nm), "nccl%s %s",
             call && call->kind == CT_REC_NCCL ? ct_name_nccl_op(call->f[CT_NCCL_OP]) : "Op",
             send ? "send" : "recv");
    ct_chrome_ev(w, "X", CT_PROXY_TID(w, k, l), s, nm);
    fputs(",\"cat\":\"nccl_proxy\",\"dur\":", w->f);
    ct_chrome_ts(w->f, e > s ? e - s : 0);
    FILE *o = w->f;
    fputs(",\"args\":{", o);
    fprintf(o, "\"correlation_id\":%" PRIu64, f[CT_NPROXY_CORR]);
    arg_u(o, "channel", f[CT_NPROXY_CHANNEL]);
    fprintf(o, ",\"peer\":%" PRId64 ",\"direction\":\"%s\"", (int64_t)f[CT_NPROXY_PEER],
            send ? "send" : "recv");
    arg_u(o, "steps", f[CT_NPROXY_STEPS]);
    arg_u(o, "bytes", f[CT_NPROXY_BYTES]);
    arg_u(o, "gpu_wait_ns", f[CT_NPROXY_GPU_WAIT]);
    arg_u(o, "peer_wait_ns", f[CT_NPROXY_PEER_WAIT]);
    arg_u(o, "net_ns", f[CT_NPROXY_NET]);
    arg_u(o, "flush_ns", f[CT_NPROXY_FLUSH]);
    arg_u(o, "net_busy_ns", f[CT_NPROXY_NET_BUSY]);
    arg_u(o, "nsteps", f[CT_NPROXY_NSTEPS]);
    arg_u(o, "chunk_size", f[CT_NPROXY_CHUNK]);
    fputs("}}", o);
    return 0;
}

/* One kernel channel's slice (format v5 nccl_channel) on the track of
 * its communicator and channel: ops of two communicators on two streams
 * can run their channel c at once, hence lanes as for the proxies. */
static int channel_slice(struct ct_chrome_writer *w, const struct ct_record *r, struct ptrack **v,
                         size_t *n, size_t *cap, uint32_t *tid)
{
    const uint64_t *f = r->f;
    const struct ct_record *call = ct_trace_call(w->t, f[CT_NCHAN_CORR]);
    uint64_t comm = call && call->kind == CT_REC_NCCL ? call->f[CT_NCCL_COMM] : 0;
    size_t k = track_of(v, n, cap, comm, (uint32_t)f[CT_NCHAN_CHANNEL], -1, 0);
    if (k == SIZE_MAX)
        return -ENOMEM;
    struct ptrack *T = &(*v)[k];
    int64_t s = (int64_t)f[CT_NCHAN_START], e = (int64_t)f[CT_NCHAN_END];
    int l = take_lane(T, s, e);
    for (; T->named <= l; T->named++) {
        char name[200], lane[64];
        lane_suffix(w, T->named, lane, sizeof(lane));
        snprintf(name, sizeof(name), "NCCL kernel comm %016" PRIx64 " ch %u%s", comm, T->channel,
                 lane);
        /* just before the proxy tracks (above) */
        meta(w, CT_CHAN_TID(w, k, T->named), name, 890000000L + (long)k * CT_LANES + T->named);
    }
    char nm[64];
    snprintf(nm, sizeof(nm), "nccl%s ch %u",
             call && call->kind == CT_REC_NCCL ? ct_name_nccl_op(call->f[CT_NCCL_OP]) : "Op",
             T->channel);
    *tid = CT_CHAN_TID(w, k, l);
    ct_chrome_ev(w, "X", *tid, s, nm);
    fputs(",\"cat\":\"nccl_channel\",\"dur\":", w->f);
    ct_chrome_ts(w->f, e > s ? e - s : 0);
    fprintf(w->f, ",\"args\":{\"correlation_id\":%" PRIu64 ",\"channel\":%" PRIu64 "}}",
            f[CT_NCHAN_CORR], f[CT_NCHAN_CHANNEL]);
    return 0;
}

/* Phase records (v7) by (correlation id, channel, start). */
static int cmp_phase(const void *a, const void *b, void *ctx)
{
    const struct ct_trace *t = ctx;
    const uint64_t *x = t->recs[*(const size_t *)a].f, *y = t->recs[*(const size_t *)b].f;
    static const int key[] = {CT_NPHASE_CORR, CT_NPHASE_CHANNEL, CT_NPHASE_START, CT_NPHASE_END};
    for (size_t i = 0; i < sizeof(key) / sizeof(key[0]); i++)
        if (x[key[i]] != y[key[i]])
            return x[key[i]] < y[key[i]] ? -1 : 1;
    return 0;
}

/* The phase records of the trace sorted by cmp_phase into *ix (NULL, 0
 * when none). 0 or -ENOMEM. */
static int phase_index(const struct ct_trace *t, size_t **ix, size_t *n)
{
    size_t want = t->count[CT_REC_NCCL_PHASE];
    *ix = NULL;
    *n = 0;
    if (!want)
        return 0;
    if (!(*ix = malloc(want * sizeof(**ix))))
        return -ENOMEM;
    for (size_t i = 0; i < t->n && *n < want; i++)
        if (t->recs[i].kind == CT_REC_NCCL_PHASE)
            (*ix)[(*n)++] = i;
    qsort_r(*ix, *n, sizeof(**ix), cmp_phase, (void *)t);
    return 0;
}

/*
 * The barrier phases (format v5 nccl_phase, profiler ABI v7) of kernel
 * channel record c, drawn on its slice's track (tid) right after it, so
 * that Perfetto nests them in it: "initial_sync", "compute", "final_sync",
 * cat nccl_phase. A phase and its channel are stamped by one GPU timer and
 * converted with one offset, but a refresh of the offset between the two
 * conversions can move one by up to the conversion's error (docs/nccl.md,
 * "Kernel channels": 1 us), and consecutive phases may touch: a slice must
 * lie inside its parent and not straddle its sibling, or Perfetto moves it
 * to an overflow track. So each phase is clamped into the channel and to
 * after the previous phase's end; the ns that moved are its arg
 * `clamped_ns` (absent when nothing moved). A phase entirely outside its
 * channel belongs to another instance of it (none in NCCL: one kernel per
 * op) and is left out.
 */
static void channel_phases(struct ct_chrome_writer *w, const struct ct_record *c, uint32_t tid,
                           const size_t *ix, size_t nix)
{
    const struct ct_trace *t = w->t;
    uint64_t corr = c->f[CT_NCHAN_CORR], ch = c->f[CT_NCHAN_CHANNEL];
    int64_t cs = (int64_t)c->f[CT_NCHAN_START], ce = (int64_t)c->f[CT_NCHAN_END];
    if (ce < cs)
        ce = cs;
    size_t lo = 0, hi = nix;
    while (lo < hi) { /* the first phase of (corr, ch) */
        size_t mid = (lo + hi) / 2;
        const uint64_t *f = t->recs[ix[mid]].f;
        if (f[CT_NPHASE_CORR] < corr || (f[CT_NPHASE_CORR] == corr && f[CT_NPHASE_CHANNEL] < ch))
            lo = mid + 1;
        else
            hi = mid;
    }
    int64_t prev = cs;
    for (size_t i = lo; i < nix; i++) {
        const uint64_t *f = t->recs[ix[i]].f;
        if (f[CT_NPHASE_CORR] != corr || f[CT_NPHASE_CHANNEL] != ch)
            break;
        int64_t s = (int64_t)f[CT_NPHASE_START], e = (int64_t)f[CT_NPHASE_END];
        if (e < cs || s > ce)
            continue;
        int64_t s2 = s < prev ? prev : s, e2 = e > ce ? ce : e;
        if (e2 < s2)
            e2 = s2;
        uint64_t moved = (uint64_t)(s2 - s) + (uint64_t)(e > e2 ? e - e2 : e2 - e);
        ct_chrome_ev(w, "X", tid, s2, ct_name_nccl_phase(f[CT_NPHASE_PHASE]));
        fputs(",\"cat\":\"nccl_phase\",\"dur\":", w->f);
        ct_chrome_ts(w->f, e2 - s2);
        fprintf(w->f, ",\"args\":{\"correlation_id\":%" PRIu64 ",\"channel\":%" PRIu64, corr, ch);
        fputs(",\"phase\":", w->f);
        ct_json_str(w->f, ct_name_nccl_phase(f[CT_NPHASE_PHASE]));
        if (moved)
            arg_u(w->f, "clamped_ns", moved);
        fputs("}}", w->f);
        prev = e2;
    }
}

/* One raw proxy step's slice (format v6 nccl_step) on the steps track of
 * its ProxyOp's (communicator, channel, peer, direction), the first lane
 * free at its start (the steps in flight overlap). Args: the step's
 * identity and, per state it entered, when it began (`*_at_us`, on the
 * export's time axis) and its ns, in the order it entered them. */
static int step_slice(struct ct_chrome_writer *w, const struct ct_record *r, struct ptrack **v,
                      size_t *n, size_t *cap)
{
    const uint64_t *f = r->f;
    const struct ct_record *call = ct_trace_call(w->t, f[CT_NSTEP_CORR]);
    uint64_t comm = call && call->kind == CT_REC_NCCL ? call->f[CT_NCCL_COMM] : 0;
    uint8_t send = f[CT_NSTEP_SEND] != 0;
    int32_t peer = (int32_t)(int64_t)f[CT_NSTEP_PEER];
    size_t k = track_of(v, n, cap, comm, (uint32_t)f[CT_NSTEP_CHANNEL], peer, send);
    if (k == SIZE_MAX)
        return -ENOMEM;
    struct ptrack *T = &(*v)[k];
    int64_t s = (int64_t)f[CT_NSTEP_START], e = (int64_t)f[CT_NSTEP_END];
    int l = take_lane(T, s, e);
    for (; T->named <= l; T->named++) {
        char name[200], lane[64];
        lane_suffix(w, T->named, lane, sizeof(lane));
        snprintf(name, sizeof(name), "NCCL proxy steps comm %016" PRIx64 " ch %u %s %s peer %d%s",
                 comm, T->channel, send ? "send" : "recv", send ? "to" : "from", peer, lane);
        /* after the proxy tracks, before the host threads (10^9 + tid) */
        meta(w, CT_STEP_TID(w, k, T->named), name, 950000000L + (long)k * CT_LANES + T->named);
    }
    char nm[48];
    snprintf(nm, sizeof(nm), "%s step %" PRIu64, send ? "send" : "recv", f[CT_NSTEP_STEP]);
    ct_chrome_ev(w, "X", CT_STEP_TID(w, k, l), s, nm);
    fputs(",\"cat\":\"nccl_step\",\"dur\":", w->f);
    ct_chrome_ts(w->f, e > s ? e - s : 0);
    FILE *o = w->f;
    fprintf(o, ",\"args\":{\"correlation_id\":%" PRIu64, f[CT_NSTEP_CORR]);
    arg_u(o, "channel", f[CT_NSTEP_CHANNEL]);
    fprintf(o, ",\"peer\":%" PRId64 ",\"direction\":\"%s\"", (int64_t)peer, send ? "send" : "recv");
    arg_u(o, "step", f[CT_NSTEP_STEP]);
    arg_u(o, "bytes", f[CT_NSTEP_BYTES]);
    uint64_t at[CT_NSS_COUNT], dur[CT_NSS_COUNT];
    int order[3];
    int m = ct_nstep_states(f, at, dur, order);
    for (int i = 0; i < m; i++) {
        fprintf(o, ",\"%s_at_us\":", ct_nstep_state_name[order[i]]);
        ct_chrome_ts(o, (int64_t)at[order[i]] + w->shift);
        fprintf(o, ",\"%s_ns\":%" PRIu64, ct_nstep_state_name[order[i]], dur[order[i]]);
    }
    fputs("}}", o);
    return 0;
}

int ct_chrome_nccl_proxy(struct ct_chrome_writer *w)
{
    const struct ct_trace *t = w->t;
    if (!t->count[CT_REC_NCCL_PROXY] && !t->count[CT_REC_NCCL_CHANNEL] &&
        !t->count[CT_REC_NCCL_STEP])
        return 0;
    struct ptrack *v = NULL, *cv = NULL, *sv = NULL;
    size_t n = 0, cap = 0, cn = 0, ccap = 0, sn = 0, scap = 0, *ph = NULL, nph = 0;
    int rc = phase_index(t, &ph, &nph);
    /* records are in start order: each track's slices come in start order */
    for (size_t i = 0; i < t->n && !rc; i++) {
        const struct ct_record *r = &t->recs[i];
        if (r->kind == CT_REC_NCCL_PROXY &&
            ct_chrome_in(w, (int64_t)r->f[CT_NPROXY_START], (int64_t)r->f[CT_NPROXY_END]))
            rc = proxy_slice(w, r, &v, &n, &cap);
        else if (r->kind == CT_REC_NCCL_CHANNEL &&
                 ct_chrome_in(w, (int64_t)r->f[CT_NCHAN_START], (int64_t)r->f[CT_NCHAN_END])) {
            uint32_t tid;
            if (!(rc = channel_slice(w, r, &cv, &cn, &ccap, &tid)) && nph)
                channel_phases(w, r, tid, ph, nph);
        } else if (r->kind == CT_REC_NCCL_STEP &&
                   ct_chrome_in(w, (int64_t)r->f[CT_NSTEP_START], (int64_t)r->f[CT_NSTEP_END]))
            rc = step_slice(w, r, &sv, &sn, &scap);
    }
    free(v);
    free(cv);
    free(sv);
    free(ph);
    return rc;
}
