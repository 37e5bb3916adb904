/* Spilling a process's ops and launches (decoder/read/spill.h). */
#include "decoder/read/spill.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "decoder/read/summary.h"

int ct_spill_wanted(size_t n, char *err, size_t errlen)
{
    const char *e = getenv("CUTRACE_SPILL");
    if (!e || !*e)
        return n >= CT_SPILL_MIN_TRACES;
    if (!strcmp(e, "0") || !strcmp(e, "1"))
        return *e == '1';
    snprintf(err, errlen, "CUTRACE_SPILL='%s': expected 0 (never spill) or 1 (always)", e);
    return -EINVAL;
}

void ct_proc_settle(struct ct_proc *p)
{
    p->gpu_lo = p->busy_lo = p->launch_lo = INT64_MAX;
    p->gpu_hi = p->launch_hi = INT64_MIN;
    for (size_t i = 0; i < p->nops; i++) {
        const struct ct_gpu_op *g = &p->ops[i];
        if (g->s < p->gpu_lo)
            p->gpu_lo = g->s;
        if (g->e > p->gpu_hi)
            p->gpu_hi = g->e;
        if (g->e > g->s && g->s < p->busy_lo)
            p->busy_lo = g->s;
        if (g->nccl < 0 || g->nested || (size_t)g->nccl >= p->nnccl)
            continue;
        /* the latest op in (start, end) order wins, as it did when the
         * rank's sorted ops were walked: ops of one NCCL op are all of one
         * process, and ops alike in both give the same interval */
        struct ct_nccl_call *o = &p->nccl[g->nccl];
        if (!o->from_op || g->s > o->s || (g->s == o->s && g->e >= o->e)) {
            o->s = g->s;
            o->e = g->e;
            o->from_op = 1;
        }
    }
    for (size_t i = 0; i < p->nnccl; i++)
        p->nccl[i].from_op = 0;
    if (p->nlaunches) {
        p->launch_lo = p->launches[0];
        p->launch_hi = p->launches[p->nlaunches - 1];
    }
}

/* A spill: one zstd frame (its content size in its header) of the ops and
 * the launches in the summary's encoding. Level 1: a spill is written once
 * and read a few times in one run, so speed matters more than the last few
 * percent. Both ways stream through a buffer of SPILL_PIECE ops: a whole
 * encoding would be 48 bytes an op of fresh pages to fault in and throw
 * away, once per spill and once per rank opened by each pass, which was a
 * fifth of a spilled job's CPU. */
#define SPILL_PIECE 256

struct zout {
    ZSTD_CCtx *c;
    unsigned char *z;
    size_t cap, n;
    int bad;
};

/* Compresses n bytes of p into o (the frame's end with ZSTD_e_end). */
static void zput(struct zout *o, const void *p, size_t n, ZSTD_EndDirective end)
{
    ZSTD_inBuffer in = {p, n, 0};
    while (!o->bad) {
        if (o->cap - o->n < ZSTD_CStreamOutSize()) {
            size_t cap = o->cap ? 2 * o->cap : 2 * ZSTD_CStreamOutSize();
            unsigned char *q = realloc(o->z, cap);
            if (!q) {
                o->bad = 1;
                return;
            }
            o->z = q;
            o->cap = cap;
        }
        ZSTD_outBuffer out = {o->z, o->cap, o->n};
        size_t left = ZSTD_compressStream2(o->c, &out, &in, end);
        o->n = out.pos;
        if (ZSTD_isError(left))
            o->bad = 1; /* zstd fails here only for want of memory */
        else if (end == ZSTD_e_end ? left == 0 : in.pos == in.size)
            return;
    }
}

/* A count as the summary writes one (ct_sum_put_u64: 8 bytes, little
 * endian), which is a time column of one value after 0; no buffer of its
 * own to allocate for 8 bytes. */
static void zput_u64(struct zout *o, uint64_t v)
{
    unsigned char b[8];
    uint64_t prev = 0;
    ct_sum_enc_times(b, &(int64_t){(int64_t)v}, 1, &prev);
    zput(o, b, sizeof(b), ZSTD_e_continue);
}

int ct_proc_spill(struct ct_proc *p)
{
    ct_proc_settle(p);
    struct zout o = {.c = ZSTD_createCCtx()};
    unsigned char piece[SPILL_PIECE * CT_SUM_OP_BYTES];
    if (!o.c || ZSTD_isError(ZSTD_CCtx_setParameter(o.c, ZSTD_c_compressionLevel, 1)) ||
        ZSTD_isError(
            ZSTD_CCtx_setPledgedSrcSize(o.c, 16 + p->nops * CT_SUM_OP_BYTES + p->nlaunches * 8)))
        o.bad = 1;
    uint64_t prev = 0;
    zput_u64(&o, p->nops);
    for (size_t i = 0; i < p->nops && !o.bad; i += SPILL_PIECE) {
        size_t k = p->nops - i < SPILL_PIECE ? p->nops - i : SPILL_PIECE;
        ct_sum_enc_ops(piece, p->ops + i, k, &prev);
        zput(&o, piece, k * CT_SUM_OP_BYTES, ZSTD_e_continue);
    }
    prev = 0;
    zput_u64(&o, p->nlaunches);
    for (size_t i = 0; i < p->nlaunches && !o.bad; i += SPILL_PIECE) {
        size_t k = p->nlaunches - i < SPILL_PIECE ? p->nlaunches - i : SPILL_PIECE;
        ct_sum_enc_times(piece, p->launches + i, k, &prev);
        zput(&o, piece, k * 8, ZSTD_e_continue);
    }
    zput(&o, NULL, 0, ZSTD_e_end);
    ZSTD_freeCCtx(o.c);
    if (o.bad) {
        free(o.z);
        return -ENOMEM;
    }
    unsigned char *z = o.z;
    size_t zn = o.n;
    unsigned char *q = realloc(z, zn); /* shrinks: cannot fail in practice */
    p->spill = q ? q : z;
    p->nspill = zn;
    free(p->ops);
    free(p->launches);
    p->ops = NULL;
    p->launches = NULL;
    /* what stays: the host sets, grown by doubling while extracted */
    ct_ivset_shrink(&p->sync);
    ct_ivset_shrink(&p->cuda_call);
    ct_ivset_shrink(&p->data_wait);
    ct_ivset_shrink(&p->ckpt);
    ct_ivset_shrink(&p->file_read);
    ct_ivset_shrink(&p->htod);
    ct_ivset_shrink(&p->capture);
    return 0;
}

struct zin {
    ZSTD_DCtx *d;
    ZSTD_inBuffer in;
    size_t last; /* ZSTD_decompressStream's last answer: 0 at the frame's end */
};

/* Exactly n bytes of the frame's content into q: 0, or -EIO when the
 * frame is corrupt or ends first. */
static int zget(struct zin *z, void *q, size_t n)
{
    ZSTD_outBuffer out = {q, n, 0};
    while (out.pos < out.size) {
        size_t in0 = z->in.pos, out0 = out.pos;
        z->last = ZSTD_decompressStream(z->d, &out, &z->in);
        if (ZSTD_isError(z->last) || (out.pos == out0 && z->in.pos == in0))
            return -EIO;
    }
    return 0;
}

/* A count (8 bytes) of elements of at least `min` bytes each, checked
 * against the frame's content size. */
static int zget_count(struct zin *z, unsigned long long raw, size_t min, size_t *n)
{
    unsigned char b[8];
    if (zget(z, b, sizeof(b)))
        return -EIO;
    struct ct_sum_rbuf r = {.p = b, .n = sizeof(b)};
    uint64_t c = ct_sum_get_u64(&r);
    if (c > raw / min)
        return -EIO;
    *n = (size_t)c;
    return 0;
}

static int unspill(const struct ct_proc *p, struct zin *z, struct ct_gpu_op **ops, size_t *nops,
                   int64_t **launches, size_t *nlaunches)
{
    unsigned long long raw = ZSTD_getFrameContentSize(p->spill, p->nspill);
    if (raw == ZSTD_CONTENTSIZE_ERROR || raw == ZSTD_CONTENTSIZE_UNKNOWN)
        return -EIO;
    unsigned char piece[SPILL_PIECE * CT_SUM_OP_BYTES];
    size_t n;
    uint64_t prev = 0;
    if (zget_count(z, raw, CT_SUM_OP_BYTES, &n))
        return -EIO;
    if (n && !(*ops = calloc(n, sizeof(**ops))))
        return -ENOMEM;
    *nops = n;
    for (size_t i = 0; i < n; i += SPILL_PIECE) {
        size_t k = n - i < SPILL_PIECE ? n - i : SPILL_PIECE;
        if (zget(z, piece, k * CT_SUM_OP_BYTES) || ct_sum_dec_ops(piece, *ops + i, k, &prev))
            return -EIO;
    }
    prev = 0;
    if (zget_count(z, raw, 8, &n))
        return -EIO;
    if (n && !(*launches = calloc(n, sizeof(**launches))))
        return -ENOMEM;
    *nlaunches = n;
    for (size_t i = 0; i < n; i += SPILL_PIECE) {
        size_t k = n - i < SPILL_PIECE ? n - i : SPILL_PIECE;
        if (zget(z, piece, k * 8))
            return -EIO;
        ct_sum_dec_times(piece, *launches + i, k, &prev);
    }
    /* the frame ends here, with nothing after it */
    return z->last == 0 && z->in.pos == z->in.size ? 0 : -EIO;
}

int ct_proc_unspill(const struct ct_proc *p, struct ct_gpu_op **ops, size_t *nops,
                    int64_t **launches, size_t *nlaunches)
{
    *ops = NULL;
    *launches = NULL;
    *nops = *nlaunches = 0;
    struct zin z = {.d = ZSTD_createDCtx(), .in = {p->spill, p->nspill, 0}, .last = 1};
    int rc = z.d ? unspill(p, &z, ops, nops, launches, nlaunches) : -ENOMEM;
    ZSTD_freeDCtx(z.d);
    if (rc) {
        free(*ops);
        free(*launches);
        *ops = NULL;
        *launches = NULL;
        *nops = *nlaunches = 0;
    }
    return rc;
}
