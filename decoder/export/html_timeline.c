/*
 * The HTML report's timeline rows for one rank (decoder/export/html.c
 * writes the rest of the page): a row per GPU stream (its ops), then the
 * main process's NCCL calls, sync waits, data waits and checkpoint I/O.
 * Nothing is left out at any size: a rank whose rows hold more than the
 * page's per-rank limit of intervals is written aggregated, each row as
 * CT_HTML_TL_BINS equal bins over the rank's span with the exact busy time
 * (the union of the row's intervals) in each bin and the class with the
 * most time there; such a rank also gets the intervals of the slowest step
 * (raw again when they fit the limit, else binned over the step) for the
 * page's zoom into it. Each row carries its exact first start, last end,
 * interval count and busy time, so the page can say what it drew.
 *
 *   "rows":[{"k":"gpu"|"nccl"|"sync"|"data"|"ckpt","label":"...",
 *            "stream":S|null,"c":C,"n":N,"lo":NS,"hi":NS,"busy":NS,
 *            "raw":[s,e,c,x,...]                   (c: class, -1 on host rows;
 *                                                   x: name index, NCCL op, 0)
 *          | "b0":NS,"bw":NS,"bins":[b,busy,c,...]}, ...],
 *   (c of a row: the class with the most busy time, -1 on host rows; of a
 *   bin: the same within the bin)
 *   "zoom":{"lo":NS,"hi":NS,"rows":[the same rows over the step]}|null
 *
 * Times are ns since the job's time zero. Memory: the rank's intervals
 * (32 bytes each) while its rows are written.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/export/html_int.h"
#include "decoder/read/job.h"

/* About two bins per pixel of a full-width timeline: the whole run drawn
 * without a gap, and a zoom of 2x before a bin is wider than a pixel. */
#define CT_HTML_TL_BINS 2000

struct tl_item {
    int64_t s, e;
    uint32_t stream, x;
    int32_t c;
};

struct tl_row {
    const char *kind;
    char label[48];
    int has_stream;
    uint32_t stream;
    const struct tl_item *v;
    size_t n;
};

static int cmp_item(const void *a, const void *b)
{
    const struct tl_item *x = a, *y = b;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    if (x->s != y->s)
        return x->s < y->s ? -1 : 1;
    if (x->e != y->e)
        return x->e < y->e ? -1 : 1;
    if (x->x != y->x)
        return x->x < y->x ? -1 : 1;
    return (x->c > y->c) - (x->c < y->c);
}

/* Items of row w that overlap [lo, hi] (inclusive: an instant at an edge
 * counts), and the first of them. Rows are sorted by start, so the scan
 * stops at the first start past hi. */
static size_t in_window(const struct tl_row *w, int64_t lo, int64_t hi, size_t *first)
{
    size_t n = 0;
    *first = w->n;
    for (size_t i = 0; i < w->n && w->v[i].s <= hi; i++)
        if (w->v[i].e >= lo) {
            if (!n)
                *first = i;
            n++;
        }
    return n;
}

/* One row over [lo, hi]: raw intervals, or bins of width bw from lo
 * (busy: scratch of nb entries; cls: nb x CT_CL_COUNT). */
static void write_row(FILE *f, const struct tl_row *w, int64_t lo, int64_t hi, int raw, int64_t bw,
                      size_t nb, int64_t *busy, int64_t *cls)
{
    size_t first, n = in_window(w, lo, hi, &first);
    int64_t rlo = INT64_MAX, rhi = INT64_MIN, total = 0, cov = INT64_MIN;
    int64_t per[CT_CL_COUNT] = {0}; /* busy ns per class over the row */
    if (!raw) {
        memset(busy, 0, nb * sizeof(*busy));
        memset(cls, 0, nb * CT_CL_COUNT * sizeof(*cls));
    }
    for (size_t i = first; i < w->n && w->v[i].s <= hi; i++) {
        const struct tl_item *it = &w->v[i];
        if (it->e < lo)
            continue;
        int64_t s = it->s > lo ? it->s : lo, e = it->e < hi ? it->e : hi;
        rlo = s < rlo ? s : rlo;
        rhi = e > rhi ? e : rhi;
        /* the union: the part not covered by an earlier interval of the row */
        int64_t u = s > cov ? s : cov;
        if (e > cov)
            cov = e;
        if (e <= u)
            continue;
        total += e - u;
        per[it->c >= 0 && it->c < CT_CL_COUNT ? it->c : 0] += e - u;
        if (raw)
            continue;
        for (size_t b = (size_t)((u - lo) / bw); b < nb; b++) {
            int64_t bs = lo + (int64_t)b * bw, be = bs + bw;
            if (bs >= e)
                break;
            int64_t part = (e < be ? e : be) - (u > bs ? u : bs);
            busy[b] += part;
            cls[b * CT_CL_COUNT + (it->c >= 0 && it->c < CT_CL_COUNT ? it->c : 0)] += part;
        }
    }
    fprintf(f, "{\"k\":\"%s\",\"label\":", w->kind);
    ct_html_str(f, w->label);
    if (w->has_stream) { /* and the class with the most time on it */
        int best = 0;
        for (int c = 1; c < CT_CL_COUNT; c++)
            best = per[c] > per[best] ? c : best;
        fprintf(f, ",\"stream\":%" PRIu32 ",\"c\":%d", w->stream, best);
    } else {
        fputs(",\"stream\":null,\"c\":-1", f);
    }
    if (!n)
        rlo = rhi = 0;
    fprintf(f, ",\"n\":%zu,\"lo\":%" PRId64 ",\"hi\":%" PRId64 ",\"busy\":%" PRId64, n, rlo, rhi,
            total);
    if (raw) {
        fputs(",\"raw\":[", f);
        int k = 0;
        for (size_t i = first; i < w->n && w->v[i].s <= hi; i++) {
            const struct tl_item *it = &w->v[i];
            if (it->e < lo)
                continue;
            fprintf(f, "%s%" PRId64 ",%" PRId64 ",%" PRId32 ",%" PRIu32, k++ ? "," : "", it->s,
                    it->e, it->c, it->x);
        }
        fputs("]}", f);
        return;
    }
    fprintf(f, ",\"b0\":%" PRId64 ",\"bw\":%" PRId64 ",\"bins\":[", lo, bw);
    int k = 0;
    for (size_t b = 0; b < nb; b++) {
        if (!busy[b])
            continue;
        int best = -1;
        if (w->has_stream) { /* the class with the most time in the bin */
            best = 0;
            for (int c = 1; c < CT_CL_COUNT; c++)
                if (cls[b * CT_CL_COUNT + c] > cls[b * CT_CL_COUNT + best])
                    best = c;
        }
        fprintf(f, "%s%zu,%" PRId64 ",%d", k++ ? "," : "", b, busy[b], best);
    }
    fputs("]}", f);
}

/* "rows":[...] over [lo, hi]: raw when the rank's intervals there are at
 * most limit, else binned (busy, cls: scratch of CT_HTML_TL_BINS bins). */
static void write_rows(FILE *f, const struct tl_row *rows, size_t nrows, int64_t lo, int64_t hi,
                       size_t limit, int64_t *busy, int64_t *cls)
{
    size_t total = 0, first;
    for (size_t i = 0; i < nrows; i++)
        total += in_window(&rows[i], lo, hi, &first);
    int64_t span = hi > lo ? hi - lo : 1;
    int64_t bw = (span + CT_HTML_TL_BINS - 1) / CT_HTML_TL_BINS;
    size_t nb = (size_t)((span + bw - 1) / bw); /* at most CT_HTML_TL_BINS */
    fputs("\"rows\":[", f);
    for (size_t i = 0; i < nrows; i++) {
        fputs(i ? "," : "", f);
        write_row(f, &rows[i], lo, hi, total <= limit, bw, nb, busy, cls);
    }
    fputc(']', f);
}

/* The items of one interval set (host waits) as a row. */
static struct tl_item *ivset_items(const struct ct_ivset *v, int64_t t0, size_t *n)
{
    struct tl_item *a = malloc((v->n ? v->n : 1) * sizeof(*a));
    if (!a)
        return NULL;
    for (size_t i = 0; i < v->n; i++)
        a[i] = (struct tl_item){v->v[i].s - t0, v->v[i].e - t0, 0, 0, -1};
    *n = v->n;
    return a;
}

int ct_html_timeline(FILE *f, const struct ct_report *rep, size_t r, size_t limit, int64_t zlo,
                     int64_t zhi)
{
    struct ct_rank *R = rep->rr[r].rank;
    const int64_t t0 = rep->job->t0;
    const struct ct_proc *p = R->nprocs ? R->procs[0] : NULL;
    static const struct ct_ivset empty;
    const struct ct_ivset *waits[3] = {p ? &p->sync : &empty, p ? &p->data_wait : &empty,
                                       p ? &p->ckpt : &empty};
    static const char *const wkind[3] = {"sync", "data", "ckpt"};
    static const char *const wlabel[3] = {"host sync wait", "host data wait",
                                          "host checkpoint I/O"};
    struct tl_item *ops = NULL, *nc = NULL, *wv[3] = {NULL, NULL, NULL};
    size_t nw[3] = {0, 0, 0};
    struct tl_row *rows = NULL;
    size_t nrows = 0;
    int64_t *busy = malloc(CT_HTML_TL_BINS * sizeof(*busy));
    int64_t *cls = malloc(CT_HTML_TL_BINS * CT_CL_COUNT * sizeof(*cls));
    int rc = -ENOMEM, opened = !ct_rank_open(R);
    if (!opened || !busy || !cls)
        goto out;
    ops = malloc((R->nops ? R->nops : 1) * sizeof(*ops));
    nc = malloc((R->nnccl ? R->nnccl : 1) * sizeof(*nc));
    if (!ops || !nc)
        goto out;
    for (size_t i = 0; i < R->nops; i++) {
        const struct ct_gpu_op *g = &R->ops[i];
        ops[i] = (struct tl_item){g->s - t0, (g->e > g->s ? g->e : g->s) - t0, g->stream, g->name,
                                  g->cls};
    }
    qsort(ops, R->nops, sizeof(*ops), cmp_item);
    for (size_t i = 0; i < R->nnccl; i++) {
        const struct ct_nccl_call *o = &R->nccl[i];
        nc[i] = (struct tl_item){
            o->host_s - t0, (o->host_e > o->host_s ? o->host_e : o->host_s) - t0, 0, o->op, -1};
    }
    for (int k = 0; k < 3; k++)
        if (!(wv[k] = ivset_items(waits[k], t0, &nw[k])))
            goto out;
    size_t nstreams = 0;
    for (size_t i = 0; i < R->nops; i++)
        nstreams += !i || ops[i].stream != ops[i - 1].stream;
    rows = calloc(nstreams + 4, sizeof(*rows));
    if (!rows)
        goto out;
    for (size_t i = 0; i < R->nops; i++) {
        if (i && ops[i].stream == ops[i - 1].stream) {
            rows[nrows - 1].n++;
            continue;
        }
        struct tl_row *w = &rows[nrows++];
        w->kind = "gpu";
        w->has_stream = 1;
        w->stream = ops[i].stream;
        snprintf(w->label, sizeof(w->label), "GPU stream %" PRIu32, ops[i].stream);
        w->v = &ops[i];
        w->n = 1;
    }
    if (R->nnccl)
        rows[nrows++] = (struct tl_row){"nccl", "host NCCL calls", 0, 0, nc, R->nnccl};
    for (int k = 0; k < 3; k++)
        if (nw[k]) {
            rows[nrows] = (struct tl_row){wkind[k], "", 0, 0, wv[k], nw[k]};
            snprintf(rows[nrows++].label, sizeof(rows->label), "%s", wlabel[k]);
        }
    /* the rank's span: every row's first start to last end */
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    size_t total = 0;
    for (size_t i = 0; i < nrows; i++)
        for (size_t j = 0; j < rows[i].n; j++) {
            lo = rows[i].v[j].s < lo ? rows[i].v[j].s : lo;
            hi = rows[i].v[j].e > hi ? rows[i].v[j].e : hi;
            total++;
        }
    if (!total)
        lo = hi = 0;
    write_rows(f, rows, nrows, lo, hi, limit, busy, cls);
    if (total > limit && zlo <= zhi) { /* aggregated: the slowest step as well */
        fprintf(f, ",\"zoom\":{\"lo\":%" PRId64 ",\"hi\":%" PRId64 ",", zlo, zhi);
        write_rows(f, rows, nrows, zlo, zhi, limit, busy, cls);
        fputc('}', f);
    } else {
        fputs(",\"zoom\":null", f);
    }
    rc = 0;
out:
    if (rc) /* out of memory: no rows rather than a part of them */
        fputs("\"rows\":[],\"zoom\":null,\"tl_why\":\"out of memory\"", f);
    if (opened)
        ct_rank_close(R);
    free(rows);
    free(busy);
    free(cls);
    free(ops);
    free(nc);
    for (int k = 0; k < 3; k++)
        free(wv[k]);
    return rc;
}
