/*
 * The summary's encoding (decoder/read/summary.h; layout in
 * docs/summary.md): little-endian, fixed-width values, strings and lists
 * into a growing buffer, and read back with every length checked against
 * the bytes left; the GPU ops and launch times as columns of differences.
 * The parts of a summary and their order are summary.c's.
 */
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/read/summary.h"

/* Room for len more bytes at b->p + b->n; 0 when out of memory (oom set). */
static int reserve(struct ct_sum_wbuf *b, size_t len)
{
    if (b->oom)
        return 0;
    if (b->n + len > b->cap) {
        size_t cap = b->cap ? b->cap : 1 << 16;
        while (cap < b->n + len)
            cap *= 2;
        unsigned char *q = realloc(b->p, cap);
        if (!q) {
            b->oom = 1;
            return 0;
        }
        b->p = q;
        b->cap = cap;
    }
    return 1;
}

void ct_sum_put(struct ct_sum_wbuf *b, const void *v, size_t len)
{
    if (!reserve(b, len))
        return;
    memcpy(b->p + b->n, v, len);
    b->n += len;
}

/* Little-endian words at p: the encoding of ct_sum_put_u64/u32, for the
 * bulk arrays written and read in one go */
static inline void st64(unsigned char *p, uint64_t v)
{
    v = htole64(v);
    memcpy(p, &v, 8);
}

static inline void st32(unsigned char *p, uint32_t v)
{
    v = htole32(v);
    memcpy(p, &v, 4);
}

static inline uint64_t ld64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return le64toh(v);
}

static inline uint32_t ld32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return le32toh(v);
}

void ct_sum_put_u64(struct ct_sum_wbuf *b, uint64_t v)
{
    unsigned char x[8];
    for (int i = 0; i < 8; i++)
        x[i] = (unsigned char)(v >> (8 * i));
    ct_sum_put(b, x, 8);
}

void ct_sum_put_u32(struct ct_sum_wbuf *b, uint32_t v)
{
    unsigned char x[4];
    for (int i = 0; i < 4; i++)
        x[i] = (unsigned char)(v >> (8 * i));
    ct_sum_put(b, x, 4);
}

void ct_sum_put_u8(struct ct_sum_wbuf *b, uint8_t v)
{
    ct_sum_put(b, &v, 1);
}

void ct_sum_put_str(struct ct_sum_wbuf *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    ct_sum_put_u32(b, (uint32_t)n);
    ct_sum_put(b, s ? s : "", n);
}

/* An op's CT_SUM_OP_BYTES (ct_sum_get_ops's minimum) are reserved for all
 * ops at once, as a spilled process's half million ops made doubling
 * reallocs a fifth of the decode. Times as differences (from the previous
 * op's start; the end and the launch from the op's own start), which zstd
 * packs far tighter than absolute ns; wrapping arithmetic, exact both ways. */
void ct_sum_enc_ops(unsigned char *w, const struct ct_gpu_op *ops, size_t n, uint64_t *prev)
{
    uint64_t pv = *prev;
    for (size_t i = 0; i < n; i++, w += CT_SUM_OP_BYTES) {
        const struct ct_gpu_op *g = &ops[i];
        st64(w, (uint64_t)g->s - pv);
        st64(w + 8, (uint64_t)g->e - (uint64_t)g->s);
        st64(w + 16, (uint64_t)g->launch - (uint64_t)g->s);
        pv = (uint64_t)g->s;
        st32(w + 24, g->stream);
        st32(w + 28, g->name);
        st32(w + 32, (uint32_t)g->nccl);
        w[36] = g->cls;
        w[37] = g->type;
        w[38] = g->op;
        w[39] = (uint8_t)(g->blocking | g->nested << 1 | g->graph << 2);
        st64(w + 40, g->gnode);
    }
    *prev = pv;
}

void ct_sum_put_ops(struct ct_sum_wbuf *b, const struct ct_gpu_op *ops, size_t n)
{
    ct_sum_put_u64(b, n);
    if (!reserve(b, n * CT_SUM_OP_BYTES))
        return;
    uint64_t prev = 0;
    ct_sum_enc_ops(b->p + b->n, ops, n, &prev);
    b->n += n * CT_SUM_OP_BYTES;
}

void ct_sum_enc_times(unsigned char *w, const int64_t *v, size_t n, uint64_t *prev)
{
    uint64_t pv = *prev;
    for (size_t i = 0; i < n; i++) {
        st64(w + 8 * i, (uint64_t)v[i] - pv);
        pv = (uint64_t)v[i];
    }
    *prev = pv;
}

void ct_sum_put_launches(struct ct_sum_wbuf *b, const int64_t *v, size_t n)
{
    ct_sum_put_u64(b, n);
    if (!reserve(b, n * 8))
        return;
    uint64_t prev = 0;
    ct_sum_enc_times(b->p + b->n, v, n, &prev);
    b->n += n * 8;
}

int ct_sum_need(struct ct_sum_rbuf *r, size_t len)
{
    if (r->bad || len > r->n - r->at) {
        r->bad = 1;
        return 0;
    }
    return 1;
}

uint64_t ct_sum_get_u64(struct ct_sum_rbuf *r)
{
    if (!ct_sum_need(r, 8))
        return 0;
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)r->p[r->at + i] << (8 * i);
    r->at += 8;
    return v;
}

uint32_t ct_sum_get_u32(struct ct_sum_rbuf *r)
{
    if (!ct_sum_need(r, 4))
        return 0;
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)r->p[r->at + i] << (8 * i);
    r->at += 4;
    return v;
}

uint8_t ct_sum_get_u8(struct ct_sum_rbuf *r)
{
    if (!ct_sum_need(r, 1))
        return 0;
    return r->p[r->at++];
}

/* A NUL-terminated copy, NULL on a short read or no memory (oom set). */
char *ct_sum_get_str(struct ct_sum_rbuf *r, int *oom)
{
    uint32_t n = ct_sum_get_u32(r);
    if (!ct_sum_need(r, n))
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s) {
        *oom = 1;
        return NULL;
    }
    memcpy(s, r->p + r->at, n);
    s[n] = 0;
    r->at += n;
    return s;
}

/* A count of elements of at least `min` bytes each, checked against the
 * bytes left, and room for them (NULL with *n == 0 is fine). */
void *ct_sum_get_array(struct ct_sum_rbuf *r, size_t *n, size_t min, size_t elem, int *oom)
{
    uint64_t c = ct_sum_get_u64(r);
    *n = 0;
    if (r->bad || c > (r->n - r->at) / min) {
        r->bad = 1;
        return NULL;
    }
    if (!c)
        return NULL;
    void *a = calloc((size_t)c, elem);
    if (!a) {
        *oom = 1;
        r->bad = 1;
        return NULL;
    }
    *n = (size_t)c;
    return a;
}

int ct_sum_dec_ops(const unsigned char *q, struct ct_gpu_op *ops, size_t n, uint64_t *prev)
{
    uint64_t pv = *prev;
    int bad = 0;
    for (size_t i = 0; i < n; i++, q += CT_SUM_OP_BYTES) {
        struct ct_gpu_op *g = &ops[i];
        g->s = (int64_t)(pv + ld64(q));
        g->e = (int64_t)((uint64_t)g->s + ld64(q + 8));
        g->launch = (int64_t)((uint64_t)g->s + ld64(q + 16));
        pv = (uint64_t)g->s;
        g->stream = ld32(q + 24);
        g->name = ld32(q + 28);
        g->nccl = (int32_t)ld32(q + 32);
        g->cls = q[36];
        g->type = q[37];
        g->op = q[38];
        g->blocking = q[39] & 1;
        g->nested = (q[39] >> 1) & 1;
        g->graph = (q[39] >> 2) & 1;
        g->gnode = ld64(q + 40);
        /* indexes that the analyses follow: checked here, once */
        bad |= g->cls >= CT_CL_COUNT || (g->nccl >= 0 && (uint64_t)g->nccl >= UINT32_MAX);
    }
    *prev = pv;
    return bad ? -1 : 0;
}

struct ct_gpu_op *ct_sum_get_ops(struct ct_sum_rbuf *r, size_t *n, int *oom)
{
    /* ct_sum_get_array has checked that n * CT_SUM_OP_BYTES bytes are there */
    struct ct_gpu_op *ops = ct_sum_get_array(r, n, CT_SUM_OP_BYTES, sizeof(*ops), oom);
    uint64_t prev = 0;
    if (ct_sum_dec_ops(r->p + r->at, ops, *n, &prev))
        r->bad = 1;
    r->at += *n * CT_SUM_OP_BYTES;
    return ops;
}

void ct_sum_dec_times(const unsigned char *q, int64_t *v, size_t n, uint64_t *prev)
{
    uint64_t pv = *prev;
    for (size_t i = 0; i < n; i++) {
        pv += ld64(q + 8 * i);
        v[i] = (int64_t)pv;
    }
    *prev = pv;
}

int64_t *ct_sum_get_launches(struct ct_sum_rbuf *r, size_t *n, int *oom)
{
    int64_t *v = ct_sum_get_array(r, n, 8, sizeof(*v), oom); /* n * 8 bytes there */
    uint64_t prev = 0;
    ct_sum_dec_times(r->p + r->at, v, *n, &prev);
    r->at += *n * 8;
    return v;
}
