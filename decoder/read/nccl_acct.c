/*
 * NCCL profiler-plugin records of one trace (decoder/read/nccl_acct.h):
 * gathered in file order, sorted once at the end.
 */
#include "decoder/read/nccl_acct.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cutrace/format.h"
#include "src/reader.h"

static int grow(void **p, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? 2 * *cap : 64;
    void *q = realloc(*p, c * elem);
    if (!q)
        return -ENOMEM;
    *p = q;
    *cap = c;
    return 0;
}

int ct_nacct_record(struct ct_nacct_collect *c, struct ct_reader *rd, const struct ct_record *r)
{
    const uint64_t *f = r->f;
    if (r->kind == CT_REC_NCCL_STEP) { /* counted: the exports read them, not the analyses */
        c->a.raw_steps++;
        return 0;
    }
    if (r->kind == CT_REC_NCCL_INFO) {
        if (grow((void **)&c->a.info, &c->capi, c->a.ninfo, sizeof(*c->a.info)))
            return -ENOMEM;
        struct ct_ninfo *i = &c->a.info[c->a.ninfo++];
        memset(i, 0, sizeof(*i));
        i->corr = f[CT_NINFO_CORR];
        const char *a = ct_reader_string(rd, f[CT_NINFO_ALGO]);
        const char *p = ct_reader_string(rd, f[CT_NINFO_PROTO]);
        snprintf(i->algo, sizeof(i->algo), "%s", a ? a : "");
        snprintf(i->proto, sizeof(i->proto), "%s", p ? p : "");
        i->channels = (uint32_t)f[CT_NINFO_CHANNELS];
        i->warps = (uint32_t)f[CT_NINFO_WARPS];
        i->flags = (uint32_t)f[CT_NINFO_FLAGS];
    } else if (r->kind == CT_REC_NCCL_PROXY) {
        if (grow((void **)&c->a.px, &c->capp, c->a.npx, sizeof(*c->a.px)))
            return -ENOMEM;
        struct ct_nproxy *x = &c->a.px[c->a.npx++];
        memset(x, 0, sizeof(*x));
        x->corr = f[CT_NPROXY_CORR];
        x->s = (int64_t)f[CT_NPROXY_START];
        x->e = (int64_t)f[CT_NPROXY_END];
        x->channel = (uint32_t)f[CT_NPROXY_CHANNEL];
        x->peer = (int32_t)(int64_t)f[CT_NPROXY_PEER];
        x->send = f[CT_NPROXY_SEND] != 0;
        x->steps = (uint32_t)f[CT_NPROXY_STEPS];
        x->bytes = f[CT_NPROXY_BYTES];
        x->gpu_wait = f[CT_NPROXY_GPU_WAIT];
        x->peer_wait = f[CT_NPROXY_PEER_WAIT];
        x->net = f[CT_NPROXY_NET];
        x->flush = f[CT_NPROXY_FLUSH];
        x->busy = f[CT_NPROXY_NET_BUSY];
    } else if (r->kind == CT_REC_NCCL_NET) {
        uint8_t tr = (uint8_t)f[CT_NNET_TRANSPORT], send = f[CT_NNET_SEND] != 0;
        int32_t dev = (int32_t)(int64_t)f[CT_NNET_DEVICE];
        size_t i = 0;
        while (i < c->a.nnic && (c->a.nic[i].transport != tr || c->a.nic[i].device != dev ||
                                 c->a.nic[i].send != send))
            i++;
        if (i == c->a.nnic) {
            if (grow((void **)&c->a.nic, &c->capn, c->a.nnic, sizeof(*c->a.nic)))
                return -ENOMEM;
            c->a.nic[c->a.nnic++] = (struct ct_nnic){.transport = tr, .send = send, .device = dev};
        }
        struct ct_nnic *n = &c->a.nic[i];
        n->proxy_ops++;
        n->wrs += f[CT_NNET_WRS];
        n->bytes += f[CT_NNET_BYTES];
        n->busy += f[CT_NNET_BUSY];
        n->other_wrs += f[CT_NNET_OTHER_WRS];
        n->other_bytes += f[CT_NNET_OTHER_BYTES];
    } else if (r->kind == CT_REC_NCCL_PHASE) {
        if (grow((void **)&c->a.ph, &c->capph, c->a.nph, sizeof(*c->a.ph)))
            return -ENOMEM;
        c->a.ph[c->a.nph++] =
            (struct ct_nphase){f[CT_NPHASE_CORR], (int64_t)f[CT_NPHASE_START],
                               (int64_t)f[CT_NPHASE_END], (uint32_t)f[CT_NPHASE_CHANNEL],
                               (uint8_t)(f[CT_NPHASE_PHASE] > 255 ? 255 : f[CT_NPHASE_PHASE])};
    } else if (r->kind == CT_REC_NCCL_TAG) {
        if (grow((void **)&c->a.tag, &c->capt, c->a.ntag, sizeof(*c->a.tag)))
            return -ENOMEM;
        c->a.tag[c->a.ntag++] = (struct ct_ntag){f[CT_NTAG_CORR], f[CT_NTAG_TAG]};
    } else if (r->kind == CT_REC_NCCL_CHANNEL) {
        if (grow((void **)&c->a.ch, &c->capc, c->a.nch, sizeof(*c->a.ch)))
            return -ENOMEM;
        c->a.ch[c->a.nch++] =
            (struct ct_nchan){f[CT_NCHAN_CORR], (int64_t)f[CT_NCHAN_START],
                              (int64_t)f[CT_NCHAN_END], (uint32_t)f[CT_NCHAN_CHANNEL]};
    }
    return 0;
}

static int cmp_info(const void *a, const void *b)
{
    uint64_t x = ((const struct ct_ninfo *)a)->corr, y = ((const struct ct_ninfo *)b)->corr;
    return (x > y) - (x < y);
}

static int cmp_px(const void *a, const void *b)
{
    const struct ct_nproxy *x = a, *y = b;
    if (x->corr != y->corr)
        return (x->corr > y->corr) - (x->corr < y->corr);
    if (x->send != y->send)
        return (int)y->send - (int)x->send;
    if (x->peer != y->peer)
        return (x->peer > y->peer) - (x->peer < y->peer);
    return (x->channel > y->channel) - (x->channel < y->channel);
}

static int cmp_ch(const void *a, const void *b)
{
    const struct ct_nchan *x = a, *y = b;
    if (x->corr != y->corr)
        return (x->corr > y->corr) - (x->corr < y->corr);
    return (x->channel > y->channel) - (x->channel < y->channel);
}

static int cmp_nic(const void *a, const void *b)
{
    const struct ct_nnic *x = a, *y = b;
    if (x->transport != y->transport)
        return (int)x->transport - (int)y->transport;
    if (x->device != y->device)
        return (x->device > y->device) - (x->device < y->device);
    return (int)y->send - (int)x->send;
}

static int cmp_ph(const void *a, const void *b)
{
    const struct ct_nphase *x = a, *y = b;
    if (x->corr != y->corr)
        return (x->corr > y->corr) - (x->corr < y->corr);
    if (x->channel != y->channel)
        return (x->channel > y->channel) - (x->channel < y->channel);
    return (int)x->phase - (int)y->phase;
}

static int cmp_tag(const void *a, const void *b)
{
    uint64_t x = ((const struct ct_ntag *)a)->corr, y = ((const struct ct_ntag *)b)->corr;
    return (x > y) - (x < y);
}

/* Every array of a sorted (qsort of NULL, 0 is undefined: UBSan). */
static void sort_all(struct ct_nacct *a)
{
    if (a->ninfo)
        qsort(a->info, a->ninfo, sizeof(*a->info), cmp_info);
    if (a->npx)
        qsort(a->px, a->npx, sizeof(*a->px), cmp_px);
    if (a->nch)
        qsort(a->ch, a->nch, sizeof(*a->ch), cmp_ch);
    if (a->nnic)
        qsort(a->nic, a->nnic, sizeof(*a->nic), cmp_nic);
    if (a->nph)
        qsort(a->ph, a->nph, sizeof(*a->ph), cmp_ph);
    if (a->ntag)
        qsort(a->tag, a->ntag, sizeof(*a->tag), cmp_tag);
}

struct ct_nacct *ct_nacct_finish(struct ct_nacct_collect *c, int *oom)
{
    struct ct_nacct *a = NULL;
    if (c->a.ninfo || c->a.npx || c->a.nch || c->a.nnic || c->a.nph || c->a.ntag ||
        c->a.raw_steps) {
        a = malloc(sizeof(*a));
        if (!a) {
            *oom = 1;
        } else {
            *a = c->a;
            c->a = (struct ct_nacct){0};
            sort_all(a);
        }
    }
    ct_nacct_collect_free(c);
    return a;
}

struct ct_nacct *ct_nacct_adopt(struct ct_nacct *a, int *oom)
{
    struct ct_nacct *b = malloc(sizeof(*b));
    if (!b) {
        free(a->info);
        free(a->px);
        free(a->ch);
        free(a->nic);
        free(a->ph);
        free(a->tag);
        *oom = 1;
        return NULL;
    }
    *b = *a;
    sort_all(b);
    return b;
}

void ct_nacct_collect_free(struct ct_nacct_collect *c)
{
    free(c->a.info);
    free(c->a.px);
    free(c->a.ch);
    free(c->a.nic);
    free(c->a.ph);
    free(c->a.tag);
    memset(c, 0, sizeof(*c));
}

struct ct_nacct *ct_nacct_copy(const struct ct_nacct *a, int *oom)
{
    if (!a)
        return NULL;
    struct ct_nacct *b = calloc(1, sizeof(*b));
    if (b) {
        b->info = malloc((a->ninfo ? a->ninfo : 1) * sizeof(*b->info));
        b->px = malloc((a->npx ? a->npx : 1) * sizeof(*b->px));
        b->ch = malloc((a->nch ? a->nch : 1) * sizeof(*b->ch));
        b->nic = malloc((a->nnic ? a->nnic : 1) * sizeof(*b->nic));
        b->ph = malloc((a->nph ? a->nph : 1) * sizeof(*b->ph));
        b->tag = malloc((a->ntag ? a->ntag : 1) * sizeof(*b->tag));
    }
    if (!b || !b->info || !b->px || !b->ch || !b->nic || !b->ph || !b->tag) {
        ct_nacct_free(b);
        *oom = 1;
        return NULL;
    }
    memcpy(b->info, a->info, a->ninfo * sizeof(*b->info));
    memcpy(b->px, a->px, a->npx * sizeof(*b->px));
    if (a->nch)
        memcpy(b->ch, a->ch, a->nch * sizeof(*b->ch));
    b->ninfo = a->ninfo;
    b->npx = a->npx;
    b->nch = a->nch;
    if (a->nnic)
        memcpy(b->nic, a->nic, a->nnic * sizeof(*b->nic));
    b->nnic = a->nnic;
    if (a->nph)
        memcpy(b->ph, a->ph, a->nph * sizeof(*b->ph));
    b->nph = a->nph;
    if (a->ntag)
        memcpy(b->tag, a->tag, a->ntag * sizeof(*b->tag));
    b->ntag = a->ntag;
    return b;
}

void ct_nacct_free(struct ct_nacct *a)
{
    if (!a)
        return;
    free(a->info);
    free(a->px);
    free(a->ch);
    free(a->nic);
    free(a->ph);
    free(a->tag);
    free(a);
}

const struct ct_ninfo *ct_nacct_info(const struct ct_nacct *a, uint64_t corr)
{
    size_t lo = 0, hi = a ? a->ninfo : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->info[mid].corr < corr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return a && lo < a->ninfo && a->info[lo].corr == corr ? &a->info[lo] : NULL;
}

size_t ct_nacct_chan_first(const struct ct_nacct *a, uint64_t corr)
{
    size_t lo = 0, hi = a ? a->nch : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->ch[mid].corr < corr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

size_t ct_nacct_phase_first(const struct ct_nacct *a, uint64_t corr)
{
    size_t lo = 0, hi = a ? a->nph : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->ph[mid].corr < corr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

uint64_t ct_nacct_tag(const struct ct_nacct *a, uint64_t corr)
{
    size_t lo = 0, hi = a ? a->ntag : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->tag[mid].corr < corr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return a && lo < a->ntag && a->tag[lo].corr == corr ? a->tag[lo].tag : 0;
}
