/*
 * Per-rank summaries (decoder/read/summary.h; the byte layout is in
 * docs/summary.md). Every field of struct ct_proc is written one by one,
 * little-endian and fixed-width (no struct padding reaches the file, so
 * the same timeline always gives the same bytes), and the whole is one
 * zstd frame with its size in the header. Reading checks every count
 * against the bytes left before allocating, so a damaged or hostile file
 * gives an error naming the byte where it went wrong, never a crash or a
 * huge allocation. The encoding of values, strings and lists is in
 * summary_codec.c.
 */
#include "decoder/read/summary.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "decoder/read/counters.h"
#include "decoder/read/facts.h"
#include "decoder/read/life.h"
#include "decoder/read/nccl_acct.h"

static const char magic[8] = {'C', 'T', 'S', 'U', 'M', 0, 0, 0};
static const char end_magic[8] = {'C', 'T', 'S', 'U', 'M', 'E', 'N', 'D'};

/* The largest summary read back: far above any rank's (a few MB). */
#define SUMMARY_MAX_BYTES (4ull << 30)
/* Decompressed over compressed bytes beyond which a frame is not a
 * summary (they compress 5-20x; zstd can reach far more on runs of one
 * byte, which no summary is). */
#define SUMMARY_MAX_RATIO 1000ull

static void put_ivset(struct ct_sum_wbuf *b, const struct ct_ivset *a)
{
    ct_sum_put_u64(b, a->n);
    for (size_t i = 0; i < a->n; i++) {
        ct_sum_put_u64(b, (uint64_t)a->v[i].s);
        ct_sum_put_u64(b, (uint64_t)a->v[i].e);
    }
}

static void put_cov(struct ct_sum_wbuf *b, const struct ct_coverage *c)
{
    const uint64_t v[] = {
        c->gpu_cupti, c->gpu_events, c->gpu_plugin,    c->gpu_nccl_record, c->gpu_events_blocking,
        c->dropped,   c->untimed,    c->unmatched_p2p, c->processes,       c->truncated,
        c->damaged,   c->superseded, c->bytes};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        ct_sum_put_u64(b, v[i]);
}

static void put_health(struct ct_sum_wbuf *b, const struct ct_hproc *h)
{
    ct_sum_put_u8(b, h != NULL);
    if (!h)
        return;
    ct_sum_put_str(b, h->status);
    ct_sum_put_u64(b, h->ns);
    for (size_t i = 0; i < h->ns; i++) {
        const struct ct_hseries *x = &h->s[i];
        ct_sum_put_u32(b, (uint32_t)x->dev);
        ct_sum_put_str(b, x->name);
        ct_sum_put_str(b, x->unit);
        ct_sum_put_u64(b, x->n);
        for (size_t k = 0; k < x->n; k++) {
            ct_sum_put_u64(b, (uint64_t)x->t[k]);
            ct_sum_put_u64(b, (uint64_t)x->v[k]);
        }
    }
}

/* NCCL's own account of the process's ops (decoder/read/nccl_acct.h). */
static void put_nacct(struct ct_sum_wbuf *b, const struct ct_nacct *a)
{
    ct_sum_put_u64(b, a ? a->ninfo : 0);
    for (size_t i = 0; a && i < a->ninfo; i++) {
        const struct ct_ninfo *x = &a->info[i];
        ct_sum_put_u64(b, x->corr);
        ct_sum_put_str(b, x->algo);
        ct_sum_put_str(b, x->proto);
        ct_sum_put_u32(b, x->channels);
        ct_sum_put_u32(b, x->warps);
        ct_sum_put_u32(b, x->flags);
    }
    ct_sum_put_u64(b, a ? a->npx : 0);
    for (size_t i = 0; a && i < a->npx; i++) {
        const struct ct_nproxy *x = &a->px[i];
        const uint64_t v[] = {x->corr,      (uint64_t)x->s, (uint64_t)x->e, x->bytes, x->gpu_wait,
                              x->peer_wait, x->net,         x->flush,       x->busy};
        for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++)
            ct_sum_put_u64(b, v[k]);
        ct_sum_put_u32(b, x->channel);
        ct_sum_put_u32(b, x->steps);
        ct_sum_put_u32(b, (uint32_t)x->peer);
        ct_sum_put_u8(b, x->send);
    }
    ct_sum_put_u64(b, a ? a->nch : 0); /* version 10 */
    for (size_t i = 0; a && i < a->nch; i++) {
        ct_sum_put_u64(b, a->ch[i].corr);
        ct_sum_put_u64(b, (uint64_t)a->ch[i].s);
        ct_sum_put_u64(b, (uint64_t)a->ch[i].e);
        ct_sum_put_u32(b, a->ch[i].channel);
    }
    ct_sum_put_u64(b, a ? a->nnic : 0); /* version 11 */
    for (size_t i = 0; a && i < a->nnic; i++) {
        const struct ct_nnic *n = &a->nic[i];
        ct_sum_put_u8(b, n->transport);
        ct_sum_put_u8(b, n->send);
        ct_sum_put_u32(b, (uint32_t)n->device);
        const uint64_t v[] = {n->proxy_ops, n->wrs,       n->bytes,
                              n->busy,      n->other_wrs, n->other_bytes};
        for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++)
            ct_sum_put_u64(b, v[k]);
    }
    ct_sum_put_u64(b, a ? a->nph : 0); /* version 11: v7's kernel phases and user tags */
    for (size_t i = 0; a && i < a->nph; i++) {
        ct_sum_put_u64(b, a->ph[i].corr);
        ct_sum_put_u64(b, (uint64_t)a->ph[i].s);
        ct_sum_put_u64(b, (uint64_t)a->ph[i].e);
        ct_sum_put_u32(b, a->ph[i].channel);
        ct_sum_put_u8(b, a->ph[i].phase);
    }
    ct_sum_put_u64(b, a ? a->ntag : 0);
    for (size_t i = 0; a && i < a->ntag; i++) {
        ct_sum_put_u64(b, a->tag[i].corr);
        ct_sum_put_u64(b, a->tag[i].tag);
    }
    ct_sum_put_u64(b, a ? a->raw_steps : 0); /* version 12: the raw proxy steps' count */
}

static void encode(struct ct_sum_wbuf *b, const struct ct_proc *p, const char *step)
{
    ct_sum_put(b, magic, sizeof(magic));
    ct_sum_put_u32(b, CT_SUMMARY_VERSION);
    ct_sum_put_u32(b, 0);
    ct_sum_put_str(b, step ? step : "");
    ct_sum_put_str(b, p->path);
    ct_sum_put_str(b, p->host);
    ct_sum_put_u64(b, (uint64_t)p->rank);
    ct_sum_put_u32(b, p->pid);
    ct_sum_put_u32(b, p->ppid);
    ct_sum_put_u64(b, (uint64_t)p->clock_offset);
    ct_sum_put_ops(b, p->ops, p->nops);
    ct_sum_put_u64(b, p->nnccl);
    for (size_t i = 0; i < p->nnccl; i++) {
        const struct ct_nccl_call *o = &p->nccl[i];
        const int64_t t[] = {o->host_s, o->host_e, o->s, o->e};
        for (int k = 0; k < 4; k++)
            ct_sum_put_u64(b, (uint64_t)t[k]);
        ct_sum_put_u64(b, o->comm);
        ct_sum_put_u64(b, o->seq);
        ct_sum_put_u64(b, o->bytes);
        ct_sum_put_u64(b, o->corr);
        ct_sum_put_u64(b, (uint64_t)o->all_s);
        ct_sum_put_u32(b, (uint32_t)o->comm_rank);
        ct_sum_put_u32(b, (uint32_t)o->peer);
        ct_sum_put_u32(b, (uint32_t)o->nranks);
        ct_sum_put_u32(b, o->stream);
        ct_sum_put_u8(b, o->op);
        ct_sum_put_u8(b, (uint8_t)(o->cls | o->lib << 4)); /* version 12: the library */
    }
    ct_sum_put_launches(b, p->launches, p->nlaunches);
    put_ivset(b, &p->sync);
    put_ivset(b, &p->cuda_call);
    put_ivset(b, &p->data_wait);
    put_ivset(b, &p->file_read);
    put_ivset(b, &p->htod);
    put_ivset(b, &p->ckpt);
    put_ivset(b, &p->capture);
    ct_sum_put_u64(b, p->nsteps);
    for (size_t i = 0; i < p->nsteps; i++) {
        ct_sum_put_u64(b, (uint64_t)p->steps[i].s);
        ct_sum_put_u64(b, (uint64_t)p->steps[i].e);
        ct_sum_put_u64(b, (uint64_t)p->steps[i].num);
    }
    ct_sum_put_u64(b, p->nedges);
    for (size_t i = 0; i < p->nedges; i++) {
        ct_sum_put_u64(b, (uint64_t)p->edges[i].rec);
        ct_sum_put_u64(b, (uint64_t)p->edges[i].wait);
        ct_sum_put_u32(b, p->edges[i].from);
        ct_sum_put_u32(b, p->edges[i].to);
    }
    ct_sum_put_u64(b, p->ngedges);
    for (size_t i = 0; i < p->ngedges; i++) {
        ct_sum_put_u64(b, p->gedges[i].to);
        ct_sum_put_u64(b, p->gedges[i].from);
    }
    ct_sum_put_u64(b, p->nsyncs);
    for (size_t i = 0; i < p->nsyncs; i++) {
        ct_sum_put_u64(b, (uint64_t)p->syncs[i].t);
        ct_sum_put_u64(b, (uint64_t)p->syncs[i].rec);
        ct_sum_put_u32(b, p->syncs[i].stream);
    }
    ct_sum_put_u64(b, p->nnonblock);
    for (size_t i = 0; i < p->nnonblock; i++)
        ct_sum_put_u32(b, p->nonblock[i]);
    ct_sum_put_u64(b, p->nnames);
    for (size_t i = 0; i < p->nnames; i++)
        ct_sum_put_str(b, p->names[i]);
    put_cov(b, &p->cov);
    ct_sum_put_u64(b, p->trunc_at);
    ct_sum_put_u64(b, (uint64_t)p->capture_open);
    ct_sum_put_u64(b, (uint64_t)p->last_ns);
    ct_sum_put_u8(b, p->windowed);
    ct_sum_put_u8(b, p->light);
    ct_sum_put_u8(b, p->at_step);
    ct_sum_put_u64(b, (uint64_t)p->first_host);
    ct_sum_put_u32(b, p->light_window_ms);
    ct_sum_put_u32(b, p->light_period_ms);
    ct_sum_put_u64(b, p->nsdev);
    for (size_t i = 0; i < p->nsdev; i++) {
        ct_sum_put_u32(b, p->sdev[i].stream);
        ct_sum_put_u32(b, (uint32_t)p->sdev[i].dev);
    }
    ct_sum_put_u32(b, (uint32_t)p->device);
    const struct ct_life *l = &p->life;
    ct_sum_put_str(b, l->job ? l->job : "");
    ct_sum_put_str(b, l->run ? l->run : "");
    ct_sum_put_u64(b, (uint64_t)l->start_ns);
    ct_sum_put_u64(b, (uint64_t)l->restart);
    ct_sum_put_u64(b, (uint64_t)l->signal_ns);
    ct_sum_put_u32(b, (uint32_t)l->signal);
    ct_sum_put_u32(b, l->flush_ms);
    ct_sum_put_u32(b, (uint32_t)l->salvaged);
    ct_sum_put_u64(b, (uint64_t)l->hang_ns);
    ct_sum_put_u64(b, p->undelivered);
    ct_sum_put_u64(b, (uint64_t)p->host_cut);
    ct_sum_put_u64(b, (uint64_t)p->gpu_cut);
    put_health(b, p->health);
    put_nacct(b, p->nacct);
    /* the facts as a section of their own, its length first: a reader that
     * wants only the timeline (or only the facts) steps over the rest */
    struct ct_sum_wbuf facts = {0};
    if (p->facts)
        ct_facts_encode(p->facts, &facts);
    b->oom |= facts.oom;
    ct_sum_put_u64(b, facts.n);
    if (facts.n)
        ct_sum_put(b, facts.p, facts.n);
    free(facts.p);
    ct_sum_put(b, end_magic, sizeof(end_magic));
}

int ct_summary_write(const char *path, const struct ct_proc *p, const char *step, char *err,
                     size_t errlen)
{
    if (p->source == CT_SOURCE_KINETO) {
        snprintf(err, errlen, "%s: a PyTorch profiler trace has no summary form: pass it as is",
                 p->path ? p->path : path);
        return -EINVAL;
    }
    struct ct_sum_wbuf b = {0};
    encode(&b, p, step);
    if (b.oom) {
        free(b.p);
        snprintf(err, errlen, "%s: out of memory", path);
        return -ENOMEM;
    }
    size_t cap = ZSTD_compressBound(b.n);
    void *z = malloc(cap);
    if (!z) {
        free(b.p);
        snprintf(err, errlen, "%s: out of memory", path);
        return -ENOMEM;
    }
    size_t zn = ZSTD_compress(z, cap, b.p, b.n, 9);
    free(b.p);
    if (ZSTD_isError(zn)) {
        free(z);
        snprintf(err, errlen, "%s: compression failed: %s", path, ZSTD_getErrorName(zn));
        return -EIO;
    }
    FILE *f = fopen(path, "wb");
    if (!f) {
        int e = errno;
        free(z);
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    int bad = fwrite(z, 1, zn, f) != zn;
    bad |= fclose(f) != 0;
    free(z);
    if (bad) {
        snprintf(err, errlen, "%s: write failed", path);
        remove(path);
        return -EIO;
    }
    return 0;
}

static void get_ivset(struct ct_sum_rbuf *r, struct ct_ivset *a, int *oom)
{
    a->v = ct_sum_get_array(r, &a->n, 16, sizeof(*a->v), oom);
    a->cap = a->n;
    for (size_t i = 0; i < a->n; i++) {
        a->v[i].s = (int64_t)ct_sum_get_u64(r);
        a->v[i].e = (int64_t)ct_sum_get_u64(r);
    }
}

static void get_cov(struct ct_sum_rbuf *r, struct ct_coverage *c)
{
    uint64_t *v[] = {&c->gpu_cupti,
                     &c->gpu_events,
                     &c->gpu_plugin,
                     &c->gpu_nccl_record,
                     &c->gpu_events_blocking,
                     &c->dropped,
                     &c->untimed,
                     &c->unmatched_p2p,
                     &c->processes,
                     &c->truncated,
                     &c->damaged,
                     &c->superseded,
                     &c->bytes};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        *v[i] = ct_sum_get_u64(r);
}

/* The health series into c (*present: the summary has them). */
static void get_health(struct ct_sum_rbuf *r, struct ct_hcollect *c, int *present, int *oom)
{
    *present = ct_sum_get_u8(r) != 0;
    if (!*present || r->bad)
        return;
    char *status = ct_sum_get_str(r, oom);
    if (status)
        snprintf(c->h.status, sizeof(c->h.status), "%s", status);
    free(status);
    c->h.s = ct_sum_get_array(r, &c->h.ns, 28, sizeof(*c->h.s), oom);
    c->cap = c->h.ns;
    for (size_t i = 0; i < c->h.ns && !r->bad; i++) {
        struct ct_hseries *x = &c->h.s[i];
        x->dev = (int)ct_sum_get_u32(r);
        char *name = ct_sum_get_str(r, oom), *unit = ct_sum_get_str(r, oom);
        snprintf(x->name, sizeof(x->name), "%s", name ? name : "");
        snprintf(x->unit, sizeof(x->unit), "%s", unit ? unit : "");
        free(name);
        free(unit);
        size_t n;
        x->t = ct_sum_get_array(r, &n, 16, sizeof(*x->t), oom);
        x->v = n ? calloc(n, sizeof(*x->v)) : NULL;
        if (n && !x->v) {
            *oom = 1;
            r->bad = 1;
            free(x->t);
            x->t = NULL;
            n = 0;
        }
        x->n = x->cap = n;
        for (size_t k = 0; k < n; k++) {
            x->t[k] = (int64_t)ct_sum_get_u64(r);
            x->v[k] = (int64_t)ct_sum_get_u64(r);
        }
    }
}

/* The NCCL account into p->nacct (NULL when empty), sorted as the
 * extraction leaves it whatever order the file holds. */
static void get_nacct(struct ct_sum_rbuf *r, struct ct_proc *p, int *oom, uint32_t version)
{
    struct ct_nacct a = {0};
    a.info = ct_sum_get_array(r, &a.ninfo, 8 + 4 + 4 + 12, sizeof(*a.info), oom);
    for (size_t i = 0; i < a.ninfo && !r->bad; i++) {
        struct ct_ninfo *x = &a.info[i];
        x->corr = ct_sum_get_u64(r);
        char *algo = ct_sum_get_str(r, oom), *proto = ct_sum_get_str(r, oom);
        snprintf(x->algo, sizeof(x->algo), "%s", algo ? algo : "");
        snprintf(x->proto, sizeof(x->proto), "%s", proto ? proto : "");
        free(algo);
        free(proto);
        x->channels = ct_sum_get_u32(r);
        x->warps = ct_sum_get_u32(r);
        x->flags = ct_sum_get_u32(r);
    }
    a.px = ct_sum_get_array(r, &a.npx, 9 * 8 + 13, sizeof(*a.px), oom);
    for (size_t i = 0; i < a.npx && !r->bad; i++) {
        struct ct_nproxy *x = &a.px[i];
        uint64_t *v[] = {&x->corr,  (uint64_t *)&x->s, (uint64_t *)&x->e,
                         &x->bytes, &x->gpu_wait,      &x->peer_wait,
                         &x->net,   &x->flush,         &x->busy};
        for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++)
            *v[k] = ct_sum_get_u64(r);
        x->channel = ct_sum_get_u32(r);
        x->steps = ct_sum_get_u32(r);
        x->peer = (int32_t)ct_sum_get_u32(r);
        x->send = ct_sum_get_u8(r);
    }
    if (version >= 10) { /* the kernel channels */
        a.ch = ct_sum_get_array(r, &a.nch, 3 * 8 + 4, sizeof(*a.ch), oom);
        for (size_t i = 0; i < a.nch && !r->bad; i++) {
            a.ch[i].corr = ct_sum_get_u64(r);
            a.ch[i].s = (int64_t)ct_sum_get_u64(r);
            a.ch[i].e = (int64_t)ct_sum_get_u64(r);
            a.ch[i].channel = ct_sum_get_u32(r);
        }
    }
    if (version >= 11) { /* the network devices */
        a.nic = ct_sum_get_array(r, &a.nnic, 2 + 4 + 6 * 8, sizeof(*a.nic), oom);
        for (size_t i = 0; i < a.nnic && !r->bad; i++) {
            struct ct_nnic *n = &a.nic[i];
            n->transport = ct_sum_get_u8(r);
            n->send = ct_sum_get_u8(r);
            n->device = (int32_t)ct_sum_get_u32(r);
            uint64_t *v[] = {&n->proxy_ops, &n->wrs,       &n->bytes,
                             &n->busy,      &n->other_wrs, &n->other_bytes};
            for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++)
                *v[k] = ct_sum_get_u64(r);
        }
        a.ph = ct_sum_get_array(r, &a.nph, 3 * 8 + 4 + 1, sizeof(*a.ph), oom);
        for (size_t i = 0; i < a.nph && !r->bad; i++) {
            a.ph[i].corr = ct_sum_get_u64(r);
            a.ph[i].s = (int64_t)ct_sum_get_u64(r);
            a.ph[i].e = (int64_t)ct_sum_get_u64(r);
            a.ph[i].channel = ct_sum_get_u32(r);
            a.ph[i].phase = ct_sum_get_u8(r);
        }
        a.tag = ct_sum_get_array(r, &a.ntag, 2 * 8, sizeof(*a.tag), oom);
        for (size_t i = 0; i < a.ntag && !r->bad; i++) {
            a.tag[i].corr = ct_sum_get_u64(r);
            a.tag[i].tag = ct_sum_get_u64(r);
        }
    }
    if (version >= 12)
        a.raw_steps = ct_sum_get_u64(r);
    else
        a.raw_unknown = 1; /* older summaries did not count them */
    if (r->bad || (!a.ninfo && !a.npx && !a.nch && !a.nnic && !a.nph && !a.ntag && !a.raw_steps)) {
        free(a.info);
        free(a.px);
        free(a.ch);
        free(a.nic);
        free(a.ph);
        free(a.tag);
        return;
    }
    p->nacct = ct_nacct_adopt(&a, oom);
}

/* Decodes the body after the header into p, the health series into hc and
 * the facts section's place into *facts_at, *facts_n; sets r->bad or *oom. */
static void decode(struct ct_sum_rbuf *r, struct ct_proc *p, struct ct_hcollect *hc, int *health,
                   size_t *facts_at, size_t *facts_n, int *oom, uint32_t version)
{
    p->source = CT_SOURCE_SUMMARY;
    p->path = ct_sum_get_str(r, oom);
    p->host = ct_sum_get_str(r, oom);
    p->rank = (int64_t)ct_sum_get_u64(r);
    p->pid = ct_sum_get_u32(r);
    p->ppid = ct_sum_get_u32(r);
    p->clock_offset = (int64_t)ct_sum_get_u64(r);
    p->ops = ct_sum_get_ops(r, &p->nops, oom);
    p->nccl = ct_sum_get_array(r, &p->nnccl, 90, sizeof(*p->nccl), oom);
    for (size_t i = 0; i < p->nnccl; i++) {
        struct ct_nccl_call *o = &p->nccl[i];
        o->host_s = (int64_t)ct_sum_get_u64(r);
        o->host_e = (int64_t)ct_sum_get_u64(r);
        o->s = (int64_t)ct_sum_get_u64(r);
        o->e = (int64_t)ct_sum_get_u64(r);
        o->comm = ct_sum_get_u64(r);
        o->seq = ct_sum_get_u64(r);
        o->bytes = ct_sum_get_u64(r);
        o->corr = ct_sum_get_u64(r);
        o->all_s = (int64_t)ct_sum_get_u64(r);
        o->comm_rank = (int32_t)ct_sum_get_u32(r);
        o->peer = (int32_t)ct_sum_get_u32(r);
        o->nranks = (int32_t)ct_sum_get_u32(r);
        o->stream = ct_sum_get_u32(r);
        o->op = ct_sum_get_u8(r);
        uint8_t cl = ct_sum_get_u8(r);
        o->cls = cl & 15;
        o->lib = cl >> 4; /* 0, NCCL, before version 12 */
        if (o->cls >= CT_CL_COUNT || o->lib > CT_LIB_NVSHMEM)
            r->bad = 1;
    }
    for (size_t i = 0; i < p->nops; i++)
        if (p->ops[i].nccl >= 0 && (size_t)p->ops[i].nccl >= p->nnccl)
            r->bad = 1;
    p->launches = ct_sum_get_launches(r, &p->nlaunches, oom);
    get_ivset(r, &p->sync, oom);
    get_ivset(r, &p->cuda_call, oom);
    get_ivset(r, &p->data_wait, oom);
    get_ivset(r, &p->file_read, oom);
    get_ivset(r, &p->htod, oom);
    get_ivset(r, &p->ckpt, oom);
    get_ivset(r, &p->capture, oom);
    p->steps = ct_sum_get_array(r, &p->nsteps, 24, sizeof(*p->steps), oom);
    for (size_t i = 0; i < p->nsteps; i++) {
        p->steps[i].s = (int64_t)ct_sum_get_u64(r);
        p->steps[i].e = (int64_t)ct_sum_get_u64(r);
        p->steps[i].num = (int64_t)ct_sum_get_u64(r);
    }
    p->edges = ct_sum_get_array(r, &p->nedges, 24, sizeof(*p->edges), oom);
    for (size_t i = 0; i < p->nedges; i++) {
        p->edges[i].rec = (int64_t)ct_sum_get_u64(r);
        p->edges[i].wait = (int64_t)ct_sum_get_u64(r);
        p->edges[i].from = ct_sum_get_u32(r);
        p->edges[i].to = ct_sum_get_u32(r);
    }
    p->gedges = ct_sum_get_array(r, &p->ngedges, 16, sizeof(*p->gedges), oom);
    for (size_t i = 0; i < p->ngedges; i++) {
        p->gedges[i].to = ct_sum_get_u64(r);
        p->gedges[i].from = ct_sum_get_u64(r);
        /* sorted by (to, from), as the critical path's search needs */
        if (i &&
            (p->gedges[i].to < p->gedges[i - 1].to ||
             (p->gedges[i].to == p->gedges[i - 1].to && p->gedges[i].from < p->gedges[i - 1].from)))
            r->bad = 1;
    }
    p->syncs = ct_sum_get_array(r, &p->nsyncs, 20, sizeof(*p->syncs), oom);
    for (size_t i = 0; i < p->nsyncs; i++) {
        p->syncs[i].t = (int64_t)ct_sum_get_u64(r);
        p->syncs[i].rec = (int64_t)ct_sum_get_u64(r);
        p->syncs[i].stream = ct_sum_get_u32(r);
    }
    p->nonblock = ct_sum_get_array(r, &p->nnonblock, 4, sizeof(*p->nonblock), oom);
    for (size_t i = 0; i < p->nnonblock; i++)
        p->nonblock[i] = ct_sum_get_u32(r);
    p->names = ct_sum_get_array(r, &p->nnames, 4, sizeof(*p->names), oom);
    for (size_t i = 0; i < p->nnames && !r->bad; i++)
        if (!(p->names[i] = ct_sum_get_str(r, oom)))
            r->bad = 1;
    for (size_t i = 0; i < p->nops; i++)
        if (p->ops[i].name >= p->nnames && (p->nnames || p->ops[i].name))
            r->bad = 1;
    get_cov(r, &p->cov);
    p->trunc_at = ct_sum_get_u64(r);
    p->capture_open = (int64_t)ct_sum_get_u64(r);
    p->last_ns = (int64_t)ct_sum_get_u64(r);
    p->windowed = ct_sum_get_u8(r);
    p->light = ct_sum_get_u8(r);
    p->at_step = ct_sum_get_u8(r);
    p->first_host = (int64_t)ct_sum_get_u64(r);
    p->light_window_ms = ct_sum_get_u32(r);
    p->light_period_ms = ct_sum_get_u32(r);
    p->sdev = ct_sum_get_array(r, &p->nsdev, 8, sizeof(*p->sdev), oom);
    p->capsdev = p->nsdev;
    for (size_t i = 0; i < p->nsdev; i++) {
        p->sdev[i].stream = ct_sum_get_u32(r);
        p->sdev[i].dev = (int32_t)ct_sum_get_u32(r);
    }
    p->device = (int32_t)ct_sum_get_u32(r);
    struct ct_life *l = &p->life;
    if (!(l->job = ct_sum_get_str(r, oom)))
        r->bad = 1;
    else if (!*l->job) {
        free(l->job);
        l->job = NULL;
    }
    if (!(l->run = ct_sum_get_str(r, oom)))
        r->bad = 1;
    else if (!*l->run) {
        free(l->run);
        l->run = NULL;
    }
    l->start_ns = (int64_t)ct_sum_get_u64(r);
    l->restart = (int64_t)ct_sum_get_u64(r);
    l->signal_ns = (int64_t)ct_sum_get_u64(r);
    l->signal = (int32_t)ct_sum_get_u32(r);
    l->flush_ms = ct_sum_get_u32(r);
    l->salvaged = (int32_t)ct_sum_get_u32(r);
    l->hang_ns = (int64_t)ct_sum_get_u64(r);
    p->undelivered = ct_sum_get_u64(r);
    p->host_cut = (int64_t)ct_sum_get_u64(r);
    p->gpu_cut = (int64_t)ct_sum_get_u64(r);
    get_health(r, hc, health, oom);
    get_nacct(r, p, oom, version);
    uint64_t fn = ct_sum_get_u64(r);
    if (!r->bad && fn <= r->n - r->at) {
        *facts_at = r->at;
        *facts_n = (size_t)fn;
        r->at += (size_t)fn;
    } else {
        r->bad = 1;
    }
    if (ct_sum_need(r, sizeof(end_magic)) &&
        memcmp(r->p + r->at, end_magic, sizeof(end_magic)) != 0)
        r->bad = 1;
    if (!r->bad)
        r->at += sizeof(end_magic);
    if (!r->bad && r->at != r->n)
        r->bad = 1; /* bytes after the end: not this version's layout */
    if (!p->path || !p->host)
        r->bad = 1;
}

/* Decompresses, checks and decodes a summary into p, with its health
 * series and facts. The --step check only when check_step. */
static int parse(const void *buf, size_t len, const char *what, int check_step, const char *step,
                 struct ct_proc *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof(*p));
    struct ct_hcollect hcv, *hc = &hcv;
    int present = 0, *health = &present;
    ct_hcollect_init(hc);
    unsigned long long size = ZSTD_getFrameContentSize(buf, len);
    if (size == ZSTD_CONTENTSIZE_ERROR) {
        snprintf(err, errlen, "%s: not a cutrace summary (no zstd frame)", what);
        return -EINVAL;
    }
    if (size == ZSTD_CONTENTSIZE_UNKNOWN || size > SUMMARY_MAX_BYTES || size < 16) {
        snprintf(err, errlen, "%s: not a cutrace summary (frame size %s)", what,
                 size == ZSTD_CONTENTSIZE_UNKNOWN ? "unknown" : "out of range");
        return -EINVAL;
    }
    /* A frame's header can claim any size; a summary's fields (times,
     * counts, names) never shrink a thousandfold, so a claim beyond that
     * is refused before anything that large is allocated. */
    if (size > (unsigned long long)len * SUMMARY_MAX_RATIO + (1u << 20)) {
        snprintf(err, errlen,
                 "%s: not a cutrace summary (its frame claims %llu bytes from %zu: more than "
                 "a summary compresses)",
                 what, size, len);
        return -EINVAL;
    }
    unsigned char *raw = malloc((size_t)size);
    if (!raw) {
        snprintf(err, errlen, "%s: out of memory", what);
        return -ENOMEM;
    }
    size_t got = ZSTD_decompress(raw, (size_t)size, buf, len);
    if (ZSTD_isError(got) || got != size) {
        free(raw);
        snprintf(err, errlen, "%s: truncated or corrupt summary (%s)", what,
                 ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short frame");
        return -EINVAL;
    }
    if (memcmp(raw, magic, sizeof(magic)) != 0) {
        free(raw);
        snprintf(err, errlen, "%s: not a cutrace summary (bad magic)", what);
        return -EINVAL;
    }
    struct ct_sum_rbuf r = {raw, got, sizeof(magic), 0};
    uint32_t version = ct_sum_get_u32(&r);
    (void)ct_sum_get_u32(&r);
    if (version < CT_SUMMARY_VERSION_MIN || version > CT_SUMMARY_VERSION) {
        free(raw);
        snprintf(err, errlen,
                 "%s: summary version %u; this cutrace reads versions %d to %d: summarize the "
                 "traces again with this cutrace",
                 what, version, CT_SUMMARY_VERSION_MIN, CT_SUMMARY_VERSION);
        return -EINVAL;
    }
    int oom = 0;
    char *made_with = ct_sum_get_str(&r, &oom);
    if (check_step && made_with && strcmp(made_with, step ? step : "") != 0) {
        snprintf(err, errlen,
                 "%s: summarized with --step '%s', read with --step '%s': summarize again with "
                 "the same --step",
                 what, *made_with ? made_with : "(default)", step ? step : "(default)");
        free(made_with);
        free(raw);
        return -EINVAL;
    }
    free(made_with);
    size_t facts_at = 0, facts_n = 0;
    decode(&r, p, hc, health, &facts_at, &facts_n, &oom, version);
    size_t at = r.at;
    int bad = r.bad;
    if (!bad && !oom && facts_n) {
        int frc = ct_facts_decode(raw + facts_at, facts_n, &p->facts);
        oom |= frc == -ENOMEM;
        if (frc && !oom) {
            bad = 1;
            at = facts_at; /* the section that does not decode */
        }
    }
    if (!bad && !oom && present && !(p->health = ct_hcollect_finish(hc)))
        oom = 1;
    free(raw);
    if (oom || bad) {
        ct_proc_free(p);
        ct_hcollect_free(hc);
        if (oom)
            snprintf(err, errlen, "%s: out of memory", what);
        else
            snprintf(err, errlen, "%s: corrupt summary at byte %zu of its %llu", what, at, size);
        return oom ? -ENOMEM : -EINVAL;
    }
    return 0;
}

int ct_summary_read_mem(const void *buf, size_t len, const char *what, const char *step,
                        struct ct_proc *p, char *err, size_t errlen)
{
    return parse(buf, len, what, 1, step, p, err, errlen);
}

/* The whole file into *buf. */
static int read_file(const char *path, unsigned char **buf, size_t *n, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -EIO;
    }
    long len = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (len < 0 || (unsigned long long)len > SUMMARY_MAX_BYTES || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        snprintf(err, errlen, "%s: cannot read its size, or larger than a summary can be", path);
        return -EIO;
    }
    *buf = malloc(len ? (size_t)len : 1);
    if (!*buf) {
        fclose(f);
        snprintf(err, errlen, "%s: out of memory", path);
        return -ENOMEM;
    }
    *n = fread(*buf, 1, (size_t)len, f);
    int rerr = ferror(f) || *n != (size_t)len;
    fclose(f);
    if (rerr) {
        free(*buf);
        snprintf(err, errlen, "%s: read error", path);
        return -EIO;
    }
    return 0;
}

int ct_summary_read(const char *path, const char *step, struct ct_proc *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof(*p));
    unsigned char *buf;
    size_t n;
    int rc = read_file(path, &buf, &n, err, errlen);
    if (rc)
        return rc;
    rc = ct_summary_read_mem(buf, n, path, step, p, err, errlen);
    free(buf);
    return rc == -ENOMEM ? rc : rc ? -EIO : 0;
}

int ct_summary_life(const char *path, struct ct_life *life, char **host, char *err, size_t errlen)
{
    unsigned char *buf;
    size_t len;
    int rc = read_file(path, &buf, &len, err, errlen);
    if (rc)
        return rc;
    struct ct_proc p;
    rc = parse(buf, len, path, 0, NULL, &p, err, errlen);
    free(buf);
    if (rc)
        return rc == -ENOMEM ? rc : -EIO;
    *life = p.life;
    *host = p.host;
    memset(&p.life, 0, sizeof(p.life));
    p.host = NULL;
    ct_proc_free(&p);
    return 0;
}
