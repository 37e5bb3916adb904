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
        const struct ct_gop *g = &p->ops[i];
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
        struct ct_nop *o = &p->nccl[g->nccl];
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
 * the launches in the summary's encoding. Level 1: a spill is written once and read a few
 * times in one run, so speed matters more than the last few percent. */
int ct_proc_spill(struct ct_proc *p)
{
    ct_proc_settle(p);
    struct ct_sum_wbuf b = {0};
    ct_sum_put_ops(&b, p->ops, p->nops);
    ct_sum_put_launches(&b, p->launches, p->nlaunches);
    if (b.oom) {
        free(b.p);
        return -ENOMEM;
    }
    size_t cap = ZSTD_compressBound(b.n);
    unsigned char *z = malloc(cap);
    if (!z) {
        free(b.p);
        return -ENOMEM;
    }
    size_t zn = ZSTD_compress(z, cap, b.p, b.n, 1);
    free(b.p);
    if (ZSTD_isError(zn)) {
        free(z);
        return -ENOMEM; /* zstd fails here only for want of memory */
    }
    unsigned char *q = realloc(z, zn); /* shrinks: cannot fail in practice */
    p->spill = q ? q : z;
    p->nspill = zn;
    free(p->ops);
    free(p->launches);
    p->ops = NULL;
    p->launches = NULL;
    /* what stays: the host sets, grown by doubling while extracted */
    ct_ivset_shrink(&p->sync);
    ct_ivset_shrink(&p->data_wait);
    ct_ivset_shrink(&p->ckpt);
    ct_ivset_shrink(&p->file_read);
    ct_ivset_shrink(&p->capture);
    return 0;
}

int ct_proc_unspill(const struct ct_proc *p, struct ct_gop **ops, size_t *nops, int64_t **launches,
                    size_t *nlaunches)
{
    *ops = NULL;
    *launches = NULL;
    *nops = *nlaunches = 0;
    unsigned long long raw = ZSTD_getFrameContentSize(p->spill, p->nspill);
    if (raw == ZSTD_CONTENTSIZE_ERROR || raw == ZSTD_CONTENTSIZE_UNKNOWN)
        return -EIO;
    unsigned char *buf = malloc(raw ? raw : 1);
    if (!buf)
        return -ENOMEM;
    size_t n = ZSTD_decompress(buf, raw, p->spill, p->nspill);
    if (ZSTD_isError(n) || n != raw) {
        free(buf);
        return -EIO;
    }
    struct ct_sum_rbuf r = {.p = buf, .n = n};
    int oom = 0;
    *ops = ct_sum_get_ops(&r, nops, &oom);
    *launches = ct_sum_get_launches(&r, nlaunches, &oom);
    free(buf);
    if (oom || r.bad || r.at != r.n) {
        free(*ops);
        free(*launches);
        *ops = NULL;
        *launches = NULL;
        *nops = *nlaunches = 0;
        return oom ? -ENOMEM : -EIO;
    }
    return 0;
}
