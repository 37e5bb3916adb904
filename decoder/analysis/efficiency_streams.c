/*
 * GPU efficiency per stream, and the link traffic of a rank's collectives
 * (efficiency.h, docs/efficiency.md "Per stream" and "Collectives' link
 * traffic"), from the GPM sample intervals efficiency.c read.
 *
 * Per stream. GPM is device-wide: an interval's value belongs to a stream
 * only when that stream did (nearly) all the work in it. Each interval's
 * per-stream busy time |U_s ∩ I| is summed over the streams (concurrent
 * streams share the interval, as concurrent families do); the stream
 * holding at least CT_EFF_STREAM_DOMINANT of that sum takes the interval
 * with weight |B ∩ I| at its while-busy value. The other streams' work is
 * then at most 1 - CT_EFF_STREAM_DOMINANT of the weight: a value off by at
 * most a tenth of the difference to theirs (10 points when a unit swings
 * from 0 to 100 %). Intervals nobody dominates are nobody's.
 *
 * Collectives. NVML's NVLink and PCIe rates are device means over an
 * interval; the bytes of interval I, v_I |I|, moved during the time C ∩ I
 * the rank's collectives ran there when collectives fill it (at least
 * CT_EFF_STREAM_DOMINANT of I): their rate is sum v_I |I| / sum |C ∩ I|
 * over such intervals. Traffic of other work in the rest of I (peer
 * copies) inflates it by at most (1 - 0.9) / 0.9 = 11 % of that work's
 * rate.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/analysis.h"
#include "decoder/analysis/efficiency_int.h"
#include "decoder/analysis/platforms.h"
#include "decoder/util/intervals.h"

struct sset { /* one stream's work */
    uint32_t stream;
    struct ct_ivset u;
    size_t at; /* ct_ivset_len_in_at's cursor */
};

static int stream_cmp(const void *a, const void *b)
{
    const struct ct_eff_stream *x = a, *y = b;
    if (x->busy != y->busy)
        return x->busy > y->busy ? -1 : 1;
    return (x->stream > y->stream) - (x->stream < y->stream);
}

/* The stream's set in ss (added when new); NULL on allocation failure.
 * *hint: the last one found (consecutive ops are mostly on one stream). */
static struct sset *sset_of(struct sset **ss, size_t *n, size_t *cap, uint32_t stream, size_t *hint)
{
    if (*hint < *n && (*ss)[*hint].stream == stream)
        return &(*ss)[*hint];
    for (size_t i = *n; i-- > 0;) /* a job has a few streams a rank */
        if ((*ss)[i].stream == stream)
            return &(*ss)[*hint = i];
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 8;
        struct sset *q = realloc(*ss, c * sizeof(*q));
        if (!q)
            return NULL;
        *ss = q;
        *cap = c;
    }
    *hint = *n;
    struct sset *x = &(*ss)[(*n)++];
    memset(x, 0, sizeof(*x));
    x->stream = stream;
    return x;
}

int ct_eff_streams(const struct ct_rank *R, int64_t ws, int64_t we, const struct ct_eff_smp *v,
                   size_t n, struct ct_eff *e)
{
    struct sset *ss = NULL;
    size_t ns = 0, cap = 0, hint = 0;
    double *len = NULL, *num = NULL, *den = NULL;
    int rc = -ENOMEM;
    for (size_t k = 0; k < R->nops; k++) {
        const struct ct_gpu_op *o = &R->ops[k];
        int64_t s = o->s > ws ? o->s : ws, t = o->e < we ? o->e : we;
        if (!ct_eff_sm_work(o) || t <= s)
            continue;
        struct sset *x = sset_of(&ss, &ns, &cap, o->stream, &hint);
        if (!x || ct_ivset_add(&x->u, s, t))
            goto out;
    }
    if (!ns) {
        rc = 0;
        goto out;
    }
    len = calloc(ns, sizeof(*len));
    num = calloc(ns * CT_EFF_N, sizeof(*num));
    den = calloc(ns * CT_EFF_N, sizeof(*den));
    if (!len || !num || !den || !(e->str = calloc(ns, sizeof(*e->str))))
        goto out;
    e->nstr = ns;
    for (size_t j = 0; j < ns; j++) {
        ct_ivset_normalize_unsorted(&ss[j].u);
        e->str[j].stream = ss[j].stream;
        e->str[j].busy = ct_ivset_len(&ss[j].u);
    }
    for (size_t i = 0; i < n; i++) {
        const struct ct_eff_smp *x = &v[i];
        if (!(x->busy > 0) || x->e <= ws || x->s >= we)
            continue;
        double sum = 0;
        size_t top = 0;
        for (size_t j = 0; j < ns; j++) {
            len[j] = (double)ct_ivset_len_in_at(&ss[j].u, x->s, x->e, &ss[j].at);
            sum += len[j];
            top = len[j] > len[top] ? j : top;
        }
        if (!(sum > 0) || len[top] < CT_EFF_STREAM_DOMINANT * sum)
            continue; /* shared: nobody's */
        struct ct_eff_stream *S = &e->str[top];
        double frac = x->busy / (double)(x->e - x->s);
        S->intervals++;
        S->attributed += x->busy;
        S->own += len[top];
        for (int m = 0; m < CT_EFF_N; m++) {
            double val = x->v[m];
            if (!isfinite(val))
                continue;
            if (m < CT_EFF_NPCT) /* while busy, as a family's */
                val = val / frac > 100 ? 100 : val / frac;
            num[top * CT_EFF_N + m] += x->busy * val;
            den[top * CT_EFF_N + m] += x->busy;
        }
    }
    for (size_t j = 0; j < ns; j++) {
        struct ct_eff_stream *S = &e->str[j];
        for (int m = 0; m < CT_EFF_N; m++)
            S->v[m] =
                den[j * CT_EFF_N + m] > 0 ? num[j * CT_EFF_N + m] / den[j * CT_EFF_N + m] : NAN;
        S->cls = S->intervals ? ct_eff_classify(S->v) : CT_EFF_UNCLASSIFIED;
    }
    qsort(e->str, e->nstr, sizeof(*e->str), stream_cmp);
    rc = 0;
out:
    for (size_t j = 0; j < ns; j++)
        ct_ivset_free(&ss[j].u);
    free(ss);
    free(len);
    free(num);
    free(den);
    return rc;
}

int ct_eff_collectives(const struct ct_rank *R, int64_t ws, int64_t we, const struct ct_eff_smp *v,
                       size_t n, struct ct_eff *e)
{
    struct ct_eff_coll *c = &e->coll;
    c->pcie_tx = c->pcie_rx = c->nvlink_tx = c->nvlink_rx = NAN;
    c->total = ct_ivset_len_in(&R->comm, ws, we);
    if (!c->total) {
        c->why = "no collective ran in the window";
        return 0;
    }
    static const int metric[4] = {CT_EFF_PCIE_TX, CT_EFF_PCIE_RX, CT_EFF_NVLINK_TX,
                                  CT_EFF_NVLINK_RX};
    double bytes[4] = {0}, time[4] = {0};
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        const struct ct_eff_smp *x = &v[i];
        int64_t a = x->s > ws ? x->s : ws, b = x->e < we ? x->e : we;
        if (b <= a)
            continue;
        double in = (double)ct_ivset_len_in_at(&R->comm, x->s, x->e, &at);
        if (in < CT_EFF_STREAM_DOMINANT * (double)(x->e - x->s))
            continue;
        c->intervals++;
        c->seen += (double)ct_ivset_len_in(&R->comm, a, b);
        for (int k = 0; k < 4; k++)
            if (isfinite(x->v[metric[k]])) {
                bytes[k] += x->v[metric[k]] * (double)(x->e - x->s);
                time[k] += in;
            }
    }
    double *out[4] = {&c->pcie_tx, &c->pcie_rx, &c->nvlink_tx, &c->nvlink_rx};
    for (int k = 0; k < 4; k++)
        *out[k] = time[k] > 0 ? bytes[k] / time[k] : NAN;
    if (!c->intervals)
        c->why = "the collectives fill no sample interval to 90 % (shorter than the GPM period, "
                 "or overlapped by other work): their traffic cannot be told from the rest";
    else if (!isfinite(c->nvlink_tx) || !isfinite(c->nvlink_rx))
        c->why = "NVLink rates not given by the device (NVML answered \"not supported\": no "
                 "NVLink, or a driver without the metrics)";
    return 0;
}

double ct_efficiency_nvlink_pct(const struct ct_eff *e, const struct ct_platform **pf)
{
    const struct ct_platform *p = ct_platform_of(e->device_name);
    if (pf)
        *pf = p;
    double mibs = e->coll.nvlink_tx + e->coll.nvlink_rx;
    return p && isfinite(mibs) ? 100 * mibs * 1048576.0 / (p->nvlink_gbs * 1e9) : NAN;
}
