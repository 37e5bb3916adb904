/*
 * `cutrace diff --by nccl_tag` (docs/diff.md, "Per user tag"): the ops an
 * application tagged (NCCL profiler ABI v7's userProfilerTag) compared tag
 * by tag. Unlike the other --by keys, a tag is not a property of a run but
 * of its ops: every run is in every tag's segment, and a segment's rows are
 * the tag's own metrics,
 *
 *   ops     the tagged op instances over every rank (one sample per run);
 *   gpu_us  their GPU intervals summed (one sample per run);
 *   op_us   the median GPU interval of one instance (the primary); within
 *           one run its samples are the instances' transfer parts, as for
 *           collective:OP:BYTES (waiting on peers follows host jitter);
 *
 * compared by the same rules as every segment (ct_diff_segment_compare).
 * A metric a side has no sample of is a row all the same, its figures null
 * with the reason: a tag that side never used, or no tag at all (below ABI
 * v7, or an application that sets none). Never prints.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/compare/diff_segments.h"
#include "decoder/read/job.h"
#include "decoder/read/nccl_acct.h"
#include "decoder/util/stats.h"

#define PREFIX "nccl_tag:"

static const char *const tag_metrics[] = {"op_us", "gpu_us", "ops"};
#define N_TAG_METRICS (sizeof(tag_metrics) / sizeof(tag_metrics[0]))

/* One tag's ops in one run, gathered before they become samples. */
struct tag_acc {
    uint64_t tag, ops;
    double gpu_ns;
    double *op_us; /* per timed instance: GPU interval (or transfer part) */
    size_t n, cap;
};

static struct tag_acc *acc_of(struct tag_acc **v, size_t *n, uint64_t tag)
{
    for (size_t i = 0; i < *n; i++)
        if ((*v)[i].tag == tag)
            return &(*v)[i];
    struct tag_acc *q = realloc(*v, (*n + 1) * sizeof(*q));
    if (!q)
        return NULL;
    *v = q;
    q[*n] = (struct tag_acc){.tag = tag};
    return &q[(*n)++];
}

static int add_sample(struct ct_metric_set *s, uint64_t tag, const char *metric, double v)
{
    char name[64];
    snprintf(name, sizeof(name), PREFIX "%" PRIu64 ":%s", tag, metric);
    return ct_metric_add(s, name, v);
}

int ct_diff_collect_tags(const struct ct_report *rep, int per_iteration, struct ct_metric_set *s)
{
    struct tag_acc *v = NULL;
    size_t nv = 0;
    int rc = 0;
    for (size_t r = 0; r < rep->nr && !rc; r++) {
        const struct ct_rank *R = rep->rr[r].rank;
        /* a process's account against its own calls only (correlation ids
         * are per process): the rank's calls are its processes' in order,
         * as nccl_links.c reads them */
        for (size_t p = 0, off = 0; p < R->nprocs && !rc; off += R->procs[p++]->nnccl) {
            const struct ct_nacct *a = R->procs[p]->nacct;
            if (!a || !a->ntag)
                continue;
            size_t end = off + R->procs[p]->nnccl < R->nnccl ? off + R->procs[p]->nnccl : R->nnccl;
            for (size_t i = off; i < end; i++) {
                const struct ct_nccl_call *c = &R->nccl[i];
                uint64_t tag = ct_nacct_tag(a, c->corr);
                if (!tag)
                    continue;
                struct tag_acc *t = acc_of(&v, &nv, tag);
                if (!t) {
                    rc = -ENOMEM;
                    break;
                }
                t->ops++;
                if (c->e <= c->s)
                    continue; /* no GPU interval: counted, not timed */
                t->gpu_ns += (double)(c->e - c->s);
                int64_t from = per_iteration && c->all_s > c->s ? c->all_s : c->s;
                if (from >= c->e)
                    continue;
                if (t->n == t->cap) {
                    size_t cap = t->cap ? 2 * t->cap : 16;
                    double *q = realloc(t->op_us, cap * sizeof(*q));
                    if (!q) {
                        rc = -ENOMEM;
                        break;
                    }
                    t->op_us = q;
                    t->cap = cap;
                }
                t->op_us[t->n++] = (double)(c->e - from) / 1e3;
            }
        }
    }
    for (size_t i = 0; i < nv && !rc; i++) {
        struct tag_acc *t = &v[i];
        rc = add_sample(s, t->tag, "ops", (double)t->ops);
        if (!rc && t->n)
            rc = add_sample(s, t->tag, "gpu_us", t->gpu_ns / 1e3);
        if (rc || !t->n)
            continue;
        if (!per_iteration) {
            rc = add_sample(s, t->tag, "op_us", ct_median(t->op_us, t->n));
            continue;
        }
        for (size_t k = 0; k < t->n && !rc; k++)
            rc = add_sample(s, t->tag, "op_us", t->op_us[k]);
    }
    for (size_t i = 0; i < nv; i++)
        free(v[i].op_us);
    free(v);
    return rc;
}

/* The tag of metric name m ("nccl_tag:TAG:..."); 0 when not one. */
static uint64_t tag_of(const char *m)
{
    if (strncmp(m, PREFIX, strlen(PREFIX)))
        return 0;
    return strtoull(m + strlen(PREFIX), NULL, 10);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int ct_diff_tag_segments(const struct ct_diff_side s[2], struct ct_diff_segment **segs, size_t *n)
{
    uint64_t *tags = NULL;
    size_t nt = 0, cap = 0;
    int rc = 0;
    for (int k = 0; k < 2 && !rc; k++)
        for (size_t i = 0; i < s[k].rs.n && !rc; i++)
            for (size_t j = 0; j < s[k].tsum[i].n; j++) {
                uint64_t t = tag_of(s[k].tsum[i].m[j].name);
                size_t at = 0;
                while (at < nt && tags[at] != t)
                    at++;
                if (!t || at < nt)
                    continue;
                if (nt == cap) {
                    cap = cap ? 2 * cap : 16;
                    uint64_t *q = realloc(tags, cap * sizeof(*q));
                    if (!q) {
                        rc = -ENOMEM;
                        break;
                    }
                    tags = q;
                }
                tags[nt++] = t;
            }
    if (!rc && nt)
        qsort(tags, nt, sizeof(*tags), cmp_u64);
    /* no tag on either side: one segment, its rows null with the reason */
    size_t want = nt ? nt : 1;
    struct ct_diff_segment *g = rc ? NULL : calloc(want, sizeof(*g));
    if (!rc && !g)
        rc = -ENOMEM;
    for (size_t i = 0; i < want && !rc; i++) {
        char buf[32];
        snprintf(buf, sizeof(buf), "%" PRIu64, nt ? tags[i] : 0);
        g[i] = (struct ct_diff_segment){strdup(nt ? buf : "(none)"), s[0].rs.n, s[1].rs.n};
        if (!g[i].value)
            rc = -ENOMEM;
    }
    free(tags);
    if (rc) {
        ct_diff_segments_free(g, g ? want : 0);
        return rc;
    }
    *segs = g;
    *n = want;
    return 0;
}

/* Run i's metrics of tag `tag` from src (a run's tsum or tsamp) into dst,
 * named without their prefix. */
static int view(const struct ct_metric_set *src, const char *tag, struct ct_metric_set *dst)
{
    char pre[64];
    int np = snprintf(pre, sizeof(pre), PREFIX "%s:", tag);
    int rc = 0;
    for (size_t j = 0; j < src->n && !rc; j++) {
        const struct ct_metric *m = &src->m[j];
        if (strncmp(m->name, pre, (size_t)np))
            continue;
        for (size_t k = 0; k < m->n && !rc; k++)
            rc = ct_metric_add(dst, m->name + np, m->v[k]);
    }
    return rc;
}

/* The median of side v's run values of metric m into *med. 0 or -ENOMEM. */
static int side_median(const struct ct_diff_side *v, const char *m, double *med)
{
    double *x = malloc((v->rs.n + 1) * sizeof(*x));
    if (!x)
        return -ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < v->rs.n; i++) {
        const struct ct_metric *mm = ct_metric_find(&v->summary[i], m);
        if (mm && mm->n)
            x[n++] = mm->v[0];
    }
    *med = n ? ct_median(x, n) : NAN;
    free(x);
    return 0;
}

/* Whether any run of side s has a tag at all. */
static int side_tagged(const struct ct_diff_side *s)
{
    for (size_t i = 0; i < s->rs.n; i++)
        if (s->tsum[i].n)
            return 1;
    return 0;
}

static const char *const why_untagged =
    "no op of this side's runs has a user tag (NCCL profiler ABI v7's userProfilerTag; "
    "older NCCL, or an application that sets none)";
static const char *const why_tag_unused = "no op of this side's runs has this tag";
static const char *const why_none =
    "no op of either side's runs has a user tag (NCCL profiler ABI v7's userProfilerTag; "
    "older NCCL, or an application that sets none)";
static const char *const why_no_time = "no op with this tag has a GPU interval on this side";

/* A row for metric `name` that a side has no sample of: every figure null
 * with why. */
static struct ct_diff_row null_row(const char *name, size_t na, size_t nb, const char *why_a,
                                   const char *why_b)
{
    struct ct_diff_row r = {.name = name, .na = na, .nb = nb, .med_a = NAN, .med_b = NAN};
    r.ratio = r.p = r.q = -1;
    r.lo = r.hi = NAN;
    static const char *const fig[] = {"ratio", "ci_low", "ci_high", "p", "q"};
    if (why_a)
        r.unavail[r.nunavail++] = (struct ct_diff_unavail){"median_a", why_a};
    if (why_b)
        r.unavail[r.nunavail++] = (struct ct_diff_unavail){"median_b", why_b};
    for (size_t k = 0; k < sizeof(fig) / sizeof(fig[0]); k++)
        r.unavail[r.nunavail++] =
            (struct ct_diff_unavail){fig[k], why_a && why_b && why_a == why_b ? why_a
                                             : why_b                          ? why_b
                                                                              : why_a};
    return r;
}

/* Why side s has no sample of metric m of tag `tag` (NULL: it has one). */
static const char *why_missing(const struct ct_diff_side *s, const struct ct_metric_set *views,
                               size_t nviews, const char *m, int none)
{
    for (size_t i = 0; i < nviews; i++)
        if (ct_metric_find(&views[i], m))
            return NULL;
    if (none)
        return why_none;
    if (!side_tagged(s))
        return why_untagged;
    for (size_t i = 0; i < nviews; i++)
        if (ct_metric_find(&views[i], "ops"))
            return why_no_time;
    return why_tag_unused;
}

int ct_diff_tag_compare(struct ct_diff_side s[2], const struct ct_diff_segment *g,
                        const struct ct_diff_opts *o, const struct ct_iter_opts *io,
                        struct ct_diff_segment_result *res, char *err, size_t errlen)
{
    /* each side as runs of this tag's metrics only (views), compared as
     * any segment; the views live in res, the rows name their metrics */
    memset(res, 0, sizeof(*res));
    size_t nrun = s[0].rs.n + s[1].rs.n;
    struct ct_metric_set *own = calloc(2 * nrun + 1, sizeof(*own));
    struct ct_diff_side v[2];
    memset(v, 0, sizeof(v));
    int rc = own ? 0 : -ENOMEM, none = !strcmp(g->value, "(none)");
    for (int k = 0, at = 0; k < 2 && !rc; k++) {
        size_t n = s[k].rs.n;
        v[k].rs = s[k].rs;
        v[k].tag_view = 1;
        v[k].summary = own + at;
        v[k].samples = own + nrun + at;
        v[k].value = calloc(n + 1, sizeof(char *));
        if (!v[k].value) {
            rc = -ENOMEM;
            break;
        }
        for (size_t i = 0; i < n && !rc; i++) {
            v[k].value[i] = g->value;
            if (!none)
                rc = view(&s[k].tsum[i], g->value, &v[k].summary[i]);
            if (!rc && !none)
                rc = view(&s[k].tsamp[i], g->value, &v[k].samples[i]);
        }
        at += (int)n;
    }
    if (!rc)
        rc = ct_diff_segment_compare(v, g, o, "op_us", io, res, err, errlen);
    /* a tag's per-op time is its primary: no "not on both sides" warning
     * for it, its null row says why */
    if (!rc && !strncmp(res->warn, "primary metric", 14))
        res->warn[0] = 0;
    res->own = own;
    res->nown = own ? 2 * nrun : 0;
    own = NULL;
    /* the metrics a side has no sample of: null rows with the reason */
    for (size_t m = 0; m < N_TAG_METRICS && !rc; m++) {
        const char *name = tag_metrics[m];
        int have = 0;
        for (size_t i = 0; i < res->nrows; i++)
            have |= !strcmp(res->rows[i].name, name);
        if (have)
            continue;
        const char *wa = why_missing(&s[0], v[0].summary, s[0].rs.n, name, none);
        const char *wb = why_missing(&s[1], v[1].summary, s[1].rs.n, name, none);
        if (!wa && !wb) /* on both sides, yet no row: too few runs with it */
            wa = wb = "too few runs with samples of it to compare";
        struct ct_diff_row *q = realloc(res->rows, (res->nrows + 1) * sizeof(*q));
        if (!q) {
            rc = -ENOMEM;
            break;
        }
        res->rows = q;
        size_t na = 0, nb = 0;
        for (size_t i = 0; i < s[0].rs.n; i++)
            na += ct_metric_find(&v[0].summary[i], name) != NULL;
        for (size_t i = 0; i < s[1].rs.n; i++)
            nb += ct_metric_find(&v[1].summary[i], name) != NULL;
        /* the name from the table: static */
        struct ct_diff_row *r = &q[res->nrows++];
        *r = null_row(name, na, nb, wa, wb);
        /* the side that has it keeps its median (of its runs' values) */
        for (int k = 0; k < 2 && (!wa || !wb); k++)
            if (!(k ? wb : wa) && (rc = side_median(&v[k], name, k ? &r->med_b : &r->med_a)))
                break;
    }
    for (int k = 0; k < 2; k++)
        free(v[k].value);
    free(own);
    return rc;
}
