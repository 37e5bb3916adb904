/*
 * The replay of the job's graph (decoder/analysis/critical_path.h) with
 * durations scaled by `cutrace whatif` selectors, and the walk back along
 * binding edges that gives each step's critical path: one walk, which both
 * the aggregation (ct_cp_paths) and the edge by edge enumeration that the
 * drawings use (ct_cp_path_edges) visit. It reads the graph only;
 * critical_path.c builds it.
 */
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "decoder/analysis/critical_path.h"
#include "decoder/analysis/critical_path_int.h"
#include "decoder/analysis/nccl_links.h"
#include "decoder/analysis/xfer_model.h"
#include "decoder/util/array.h"
#include "decoder/util/demangle.h"
#include "decoder/util/names.h"
#include "decoder/util/stats.h"

static int parse_factor(const char *s, double *f)
{
    char *end;
    *f = strtod(s, &end);
    return *s && !*end && isfinite(*f) && *f >= 0 ? 0 : -EINVAL;
}

int ct_cp_scale_parse(const char *spec, struct ct_cp_scale *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof(*s));
    const char *eq = strrchr(spec, '=');
    static const char allowed[] = "allowed: kernel=GLOB=F, rank=N=F, op=NAME[:BYTES]=F, "
                                  "host=N=F, data=F, ckpt=F, net=F, link=A-B=F (F a factor >= "
                                  "0)";
    if (!eq || parse_factor(eq + 1, &s->factor)) {
        snprintf(err, errlen, "--scale %s: expected SELECTOR=FACTOR; %s", spec, allowed);
        return -EINVAL;
    }
    size_t klen = strcspn(spec, "=");
    const char *arg = spec + klen + 1; /* the selector's argument, up to eq */
    int has_arg = arg <= eq;
    size_t alen = has_arg ? (size_t)(eq - arg) : 0;
    char a[256];
    if (alen >= sizeof(a)) {
        snprintf(err, errlen, "--scale %s: selector too long", spec);
        return -EINVAL;
    }
    memcpy(a, arg, alen);
    a[alen] = 0;
    char *end;
    if (klen == 4 && !strncmp(spec, "data", 4) && (size_t)(eq - spec) == 4) {
        s->kind = CT_SEL_DATA;
        return 0;
    }
    if (klen == 4 && !strncmp(spec, "ckpt", 4) && (size_t)(eq - spec) == 4) {
        s->kind = CT_SEL_CKPT;
        return 0;
    }
    if (klen == 3 && !strncmp(spec, "net", 3) && (size_t)(eq - spec) == 3) {
        s->kind = CT_SEL_NET;
        return 0;
    }
    if (has_arg && alen && klen == 4 && !strncmp(spec, "link", 4)) {
        s->kind = CT_SEL_LINK;
        s->rank = strtoll(a, &end, 10);
        if (end != a && *end == '-' && end[1]) {
            const char *b = end + 1;
            s->dst = strtoll(b, &end, 10);
            if (end != b && !*end && s->rank >= 0 && s->dst >= 0 && s->rank != s->dst)
                return 0;
        }
        snprintf(err, errlen,
                 "--scale %s: link=A-B=F needs two different rank numbers, the sender A and "
                 "the receiver B (link=5-6=0.25)",
                 spec);
        return -EINVAL;
    }
    if (has_arg && alen && klen == 6 && !strncmp(spec, "kernel", 6)) {
        s->kind = CT_SEL_KERNEL;
        s->glob = arg; /* the caller keeps spec; matching stops at eq */
        return 0;
    }
    if (has_arg && alen &&
        ((klen == 4 && !strncmp(spec, "rank", 4)) || (klen == 4 && !strncmp(spec, "host", 4)))) {
        s->kind = spec[0] == 'r' ? CT_SEL_RANK : CT_SEL_HOST;
        s->rank = strtoll(a, &end, 10);
        if (*end || s->rank < 0) {
            snprintf(err, errlen, "--scale %s: %.4s=N needs a rank number", spec, spec);
            return -EINVAL;
        }
        return 0;
    }
    if (has_arg && alen && klen == 2 && !strncmp(spec, "op", 2)) {
        s->kind = CT_SEL_OP;
        char *colon = strchr(a, ':');
        if (colon) {
            *colon = 0;
            s->bytes = strtoull(colon + 1, &end, 10);
            if (*end || !colon[1] || !s->bytes) {
                snprintf(err, errlen, "--scale %s: BYTES must be a positive integer", spec);
                return -EINVAL;
            }
        }
        /* NCCL's own names (ncclAlltoAll), in any case: AllToAll too */
        char names[256] = "";
        size_t at = 0;
        for (int op = 1; op < CT_NCCL_OP_COUNT; op++) {
            const char *name = ct_name_nccl_op((uint64_t)op);
            if (!name)
                continue;
            if (!strcasecmp(name, a)) {
                s->op = op;
                return 0;
            }
            int w = snprintf(names + at, sizeof(names) - at, "%s%s", at ? ", " : "", name);
            if (w > 0 && (size_t)w < sizeof(names) - at)
                at += (size_t)w;
        }
        snprintf(err, errlen, "--scale %s: unknown collective '%s'; allowed: %s", spec, a, names);
        return -EINVAL;
    }
    snprintf(err, errlen, "--scale %s: unknown selector; %s", spec, allowed);
    return -EINVAL;
}

/* The glob of a kernel selector, up to its '=FACTOR'. */
static int glob_match(const char *glob, const char *name)
{
    char pat[256], dm[512];
    const char *eq = strrchr(glob, '=');
    size_t n = eq ? (size_t)(eq - glob) : strlen(glob);
    if (n >= sizeof(pat) || !name)
        return 0;
    memcpy(pat, glob, n);
    pat[n] = 0;
    return !fnmatch(pat, name, 0) || !fnmatch(pat, ct_demangle(name, dm, sizeof(dm)), 0);
}

/* Appends ", name" to buf (len bytes, used so far *at), up to a few. */
static void list_add(char *buf, size_t len, size_t *at, size_t *count, const char *name)
{
    if ((*count)++ >= 6) {
        if (*count == 7 && *at + 6 < len)
            *at += (size_t)snprintf(buf + *at, len - *at, ", ...");
        return;
    }
    int w = snprintf(buf + *at, len - *at, "%s%s", *at ? ", " : "", name);
    if (w > 0 && (size_t)w < len - *at)
        *at += (size_t)w;
}

int ct_cp_scale_check(const struct ct_report *rep, const struct ct_cp_scale *s, const char *spec,
                      char *err, size_t errlen)
{
    char have[512] = "";
    size_t at = 0, count = 0;
    for (size_t r = 0; r < rep->nr; r++) {
        const struct ct_rank *R = rep->rr[r].rank;
        switch (s->kind) {
        case CT_SEL_KERNEL:
            for (size_t i = 0; i < R->nnames; i++)
                if (glob_match(s->glob, R->names[i]))
                    return 0;
            break;
        case CT_SEL_RANK:
        case CT_SEL_HOST:
            if (R->rank == s->rank)
                return 0;
            break;
        case CT_SEL_DATA:
        case CT_SEL_CKPT:
            for (size_t k = 0; k < R->nprocs; k++)
                if ((s->kind == CT_SEL_DATA ? R->procs[k]->data_wait : R->procs[k]->ckpt).n)
                    return 0;
            break;
        default: break;
        }
    }
    if (s->kind == CT_SEL_OP)
        for (size_t i = 0; i < rep->ncoll; i++)
            if (rep->coll[i].op == s->op && (!s->bytes || rep->coll[i].bytes == s->bytes))
                return 0;
    if (s->kind == CT_SEL_NET && rep->ncoll)
        return 0;
    const struct ct_nlinks *L = rep->nlinks;
    if (s->kind == CT_SEL_LINK && L)
        for (size_t i = 0; i < L->nl; i++)
            if (L->l[i].src_rank == s->rank && L->l[i].dst_rank == s->dst && isfinite(L->l[i].gbps))
                return 0;
    /* what there is instead */
    char num[32];
    switch (s->kind) {
    case CT_SEL_KERNEL:
        for (size_t i = 0; i < rep->nkern; i++)
            list_add(have, sizeof(have), &at, &count, rep->kern[i].name);
        snprintf(err, errlen, "--scale %s: matches no kernel of the run (its kernels: %s)", spec,
                 count ? have : "none");
        break;
    case CT_SEL_RANK:
    case CT_SEL_HOST:
        for (size_t r = 0; r < rep->nr; r++) {
            snprintf(num, sizeof(num), "%d", rep->rr[r].rank->rank);
            list_add(have, sizeof(have), &at, &count, num);
        }
        snprintf(err, errlen, "--scale %s: the run has no rank %lld (its ranks: %s)", spec,
                 (long long)s->rank, count ? have : "none");
        break;
    case CT_SEL_OP:
        for (size_t i = 0; i < rep->ncoll; i++) {
            char row[96];
            snprintf(row, sizeof(row), "%s:%llu", ct_name_nccl_op((uint64_t)rep->coll[i].op),
                     (unsigned long long)rep->coll[i].bytes);
            list_add(have, sizeof(have), &at, &count, row);
        }
        snprintf(err, errlen, "--scale %s: the run has no such collective (its collectives: %s)",
                 spec, count ? have : "none");
        break;
    case CT_SEL_DATA:
        snprintf(err, errlen, "--scale %s: the run has no data-loader waits to scale", spec);
        break;
    case CT_SEL_NET:
        snprintf(err, errlen, "--scale %s: the run has no NCCL operations to scale", spec);
        break;
    case CT_SEL_LINK:
        for (size_t i = 0; L && i < L->nl; i++) {
            char row[48];
            if (!isfinite(L->l[i].gbps))
                continue;
            snprintf(row, sizeof(row), "%d-%d", L->l[i].src_rank, L->l[i].dst_rank);
            list_add(have, sizeof(have), &at, &count, row);
        }
        if (count)
            snprintf(err, errlen, "--scale %s: the run has no link %lld-%lld (its links: %s)", spec,
                     (long long)s->rank, (long long)s->dst, have);
        else
            snprintf(err, errlen,
                     "--scale %s: the run has no per-link bandwidths (they come from NCCL's "
                     "proxy steps: profiler plugin ABI v4 or later, network transports; "
                     "docs/nccl.md); net=F scales every transfer",
                     spec);
        break;
    default:
        snprintf(err, errlen, "--scale %s: the run has no checkpoint I/O to scale", spec);
        break;
    }
    return -ESRCH;
}

static double edge_factor(const struct ct_cp_graph *g, const struct cp_edge *e,
                          const struct ct_cp_scale *sc, size_t n)
{
    double f = 1;
    int rank = g->rep->rr[e->rank].rank->rank;
    for (size_t i = 0; i < n; i++) {
        const struct ct_cp_scale *s = &sc[i];
        int hit = 0;
        switch (s->kind) {
        case CT_SEL_KERNEL: hit = e->gpu && !e->xfer && glob_match(s->glob, e->name); break;
        /* a collective's transfer is shared with its peers: op= scales it */
        case CT_SEL_RANK: hit = e->gpu && !e->xfer && rank == s->rank; break;
        case CT_SEL_OP:
            hit = e->xfer && e->op == s->op && (!s->bytes || e->bytes == s->bytes);
            break;
        case CT_SEL_HOST: hit = e->cat == CT_CP_HOST && e->kind == CP_GAP && rank == s->rank; break;
        case CT_SEL_DATA: hit = e->cat == CT_CP_DATA; break;
        case CT_SEL_CKPT: hit = e->cat == CT_CP_CKPT && e->kind == CP_DUR; break;
        default: break; /* net=, link=: ct_cp_replay's bandwidth terms */
        }
        if (hit)
            f *= s->factor;
    }
    return f;
}

static int cmp_comm_factor(const void *a, const void *b)
{
    const struct ct_cp_comm_factor *x = a, *y = b;
    return (x->comm > y->comm) - (x->comm < y->comm);
}

/*
 * A ring is paced by its slowest link (a step lasts as long as the slowest
 * link carries its chunk), so a communicator's bandwidth term scales by
 * its slowest link's time per byte after the change over the slowest
 * before: speeding a link that is not the slowest gives nothing, slowing
 * any link past the slowest costs in full (docs/critical-path.md, "The
 * network in physical units").
 */
int ct_cp_bandwidth_factors(const struct ct_report *rep, const struct ct_cp_scale *sc, size_t n,
                            double *net, struct ct_cp_comm_factor **cf, size_t *ncf)
{
    *net = 1;
    *cf = NULL;
    *ncf = 0;
    int links = 0;
    for (size_t i = 0; i < n; i++) {
        if (sc[i].kind == CT_SEL_NET)
            *net *= sc[i].factor;
        links |= sc[i].kind == CT_SEL_LINK;
    }
    const struct ct_nlinks *L = rep->nlinks;
    if (!links || !L)
        return 0;
    for (size_t a = 0, b; a < L->nl; a = b) {
        struct ct_cp_comm_factor c = {.comm = L->l[a].comm};
        double before = 0, after = 0;
        int hit = 0;
        for (b = a; b < L->nl && L->l[b].comm == L->l[a].comm; b++) {
            const struct ct_nlink *l = &L->l[b];
            if (!(l->gbps > 0) || !isfinite(l->gbps))
                continue;
            double t = 1 / l->gbps, f = *net;
            for (size_t i = 0; i < n; i++)
                if (sc[i].kind == CT_SEL_LINK && sc[i].rank == l->src_rank &&
                    sc[i].dst == l->dst_rank) {
                    f *= sc[i].factor;
                    hit = 1;
                }
            if (t > before) {
                before = t;
                c.before_src = l->src_rank;
                c.before_dst = l->dst_rank;
            }
            if (t * f > after) {
                after = t * f;
                c.after_src = l->src_rank;
                c.after_dst = l->dst_rank;
            }
        }
        if (!hit || !(before > 0))
            continue;
        c.before_gbps = 1 / before;
        c.after_gbps = after > 0 ? 1 / after : INFINITY;
        c.f = after / before;
        struct ct_cp_comm_factor *g = realloc(*cf, (*ncf + 1) * sizeof(**cf));
        if (!g) {
            free(*cf);
            *cf = NULL;
            *ncf = 0;
            return -ENOMEM;
        }
        *cf = g;
        g[(*ncf)++] = c;
    }
    if (*ncf)
        qsort(*cf, *ncf, sizeof(**cf), cmp_comm_factor);
    return 0;
}

int ct_cp_replay(struct ct_cp_graph *g, const struct ct_cp_scale *sc, size_t n)
{
    double net;
    struct ct_cp_comm_factor *cf;
    size_t ncf;
    if (ct_cp_bandwidth_factors(g->rep, sc, n, &net, &cf, &ncf))
        return -ENOMEM;
    int phys = 0;
    for (size_t i = 0; i < n; i++)
        phys |= sc[i].kind == CT_SEL_NET || sc[i].kind == CT_SEL_LINK;
    for (size_t i = 0; i < g->ned; i++) {
        struct cp_edge *e = &g->ed[i];
        e->wr = e->w;
        if (n && e->w > 0 && (e->kind == CP_DUR || (e->cat == CT_CP_HOST && e->bind))) {
            int64_t w = e->w;
            if (phys && e->xfer && e->kind == CP_DUR) {
                struct ct_cp_comm_factor key = {.comm = e->comm}, *c = NULL;
                if (ncf)
                    c = bsearch(&key, cf, ncf, sizeof(*cf), cmp_comm_factor);
                const struct ct_report *rep = g->rep;
                w = ct_xfer_scaled(ct_xfer_model_of(rep->xfer, rep->nxfer, e->op, e->nranks), w,
                                   c ? c->f : net);
            }
            double f = edge_factor(g, e, sc, n);
            if (f != 1 || w != e->w)
                e->wr = (int64_t)llround((double)w * f);
        }
    }
    free(cf);
    for (size_t p = 0; p < g->npt; p++)
        g->pt[p].v = g->pt[p].t; /* points in a cycle (none in order) keep theirs */
    for (size_t k = 0; k < g->norder; k++) {
        uint32_t p = g->order[k];
        int64_t v = INT64_MIN;
        for (uint32_t j = g->in_off[p]; j < g->in_off[p + 1]; j++) {
            const struct cp_edge *e = &g->ed[g->in_idx[j]];
            int64_t c = g->pt[e->src].v + e->wr;
            if (c > v)
                v = c;
        }
        if (v != INT64_MIN)
            g->pt[p].v = v;
    }
    return 0;
}

struct ix {
    int64_t index;
    uint32_t r, k;
};
static int cmp_ix(const void *a, const void *b)
{
    const struct ix *x = a, *y = b;
    if (x->index != y->index)
        return (x->index > y->index) - (x->index < y->index);
    return (x->r > y->r) - (x->r < y->r);
}

static int cmp_seg_key(const void *a, const void *b)
{
    const struct ct_cp_seg *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank - y->rank;
    if (x->cat != y->cat)
        return x->cat - y->cat;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    if (x->name != y->name)
        return x->name ? y->name ? strcmp(x->name, y->name) : 1 : -1;
    return 0;
}
static int cmp_seg_dur(const void *a, const void *b)
{
    const struct ct_cp_seg *x = a, *y = b;
    if (x->dur != y->dur)
        return x->dur > y->dur ? -1 : 1;
    return cmp_seg_key(a, b);
}

/* What one walk reports each piece of a path to: the aggregation
 * (ct_cp_paths) and the enumeration (ct_cp_path_edges) are both this walk
 * with their own visitor, so they cannot disagree about the path. step()
 * opens a step before its walk; edge() gets [s, t) of edge e (NULL: the
 * host time before the first recorded event) on rank index `rank`, latest
 * first. Both return 0 or -ENOMEM. */
struct walker {
    int (*step)(void *ctx, int64_t index, int64_t lo, int64_t hi, int end_rank);
    int (*edge)(void *ctx, const struct cp_edge *e, int32_t rank, int64_t s, int64_t t);
    void *ctx;
};

/* The walk back from point p to time lo along binding edges. */
static int walk(const struct ct_cp_graph *g, uint32_t p, int64_t lo, const struct walker *w)
{
    int64_t t = g->pt[p].v;
    for (size_t n = 0; t > lo && n <= g->npt; n++) {
        const struct cp_edge *b = NULL;
        int64_t best = INT64_MIN;
        for (uint32_t j = g->in_off[p]; j < g->in_off[p + 1]; j++) {
            const struct cp_edge *e = &g->ed[g->in_idx[j]];
            int64_t c = g->pt[e->src].v + e->wr;
            if (c > best)
                best = c, b = e;
        }
        if (!b)
            break; /* the first event: the rest is before anything recorded */
        int64_t s = g->pt[b->src].v;
        int64_t nt = s < t ? s : t;
        if (nt < lo)
            nt = lo;
        if (t > nt && w->edge(w->ctx, b, b->rank, nt, t))
            return -ENOMEM;
        t = nt;
        p = b->src;
    }
    return t > lo ? w->edge(w->ctx, NULL, g->pt[p].rank, lo, t) : 0;
}

/* Every (rank, iteration) by iteration index, then rank: the job's steps
 * are its runs of one index. NULL on -ENOMEM; *n the count. */
static struct ix *step_order(const struct ct_cp_graph *g, size_t *n)
{
    const struct ct_report *rep = g->rep;
    *n = 0;
    for (size_t r = 0; r < rep->nr; r++)
        *n += rep->rr[r].niters;
    struct ix *v = malloc((*n ? *n : 1) * sizeof(*v));
    if (!v)
        return NULL;
    size_t k = 0;
    for (size_t r = 0; r < rep->nr; r++)
        for (size_t i = 0; i < rep->rr[r].niters; i++)
            if (rep->rr[r].iters[i].index >= g->first_index && /* else a chunk's context */
                rep->rr[r].iters[i].index <= g->last_index)
                v[k++] = (struct ix){rep->rr[r].iters[i].index, (uint32_t)r, (uint32_t)i};
    *n = k;
    if (k)
        qsort(v, k, sizeof(*v), cmp_ix);
    return v;
}

/* Each step's walk, from the rank that ended last back to the earliest
 * rank start, over the last replay. */
static int walk_steps(const struct ct_cp_graph *g, const struct ix *v, size_t n,
                      const struct walker *w)
{
    const struct ct_report *rep = g->rep;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        uint32_t endp = 0;
        int end_rank = 0;
        for (; j < n && v[j].index == v[i].index; j++) {
            uint32_t sp = g->itp[v[j].r][2 * v[j].k], ep = g->itp[v[j].r][2 * v[j].k + 1];
            if (g->pt[sp].v < lo)
                lo = g->pt[sp].v;
            if (g->pt[ep].v > hi)
                hi = g->pt[ep].v, endp = ep, end_rank = rep->rr[v[j].r].rank->rank;
        }
        if (w->step(w->ctx, v[i].index, lo, hi, end_rank) || walk(g, endp, lo, w))
            return -ENOMEM;
        i = j;
    }
    return 0;
}

/* The aggregation's visitor: steps and their composition, segment rows. */
struct agg {
    const struct ct_cp_graph *g;
    struct ct_cp_result *o;
    size_t cap;
    struct ct_cp_step *st;
};

static int agg_step(void *ctx, int64_t index, int64_t lo, int64_t hi, int end_rank)
{
    struct agg *a = ctx;
    a->st = &a->o->steps[a->o->nsteps++];
    *a->st = (struct ct_cp_step){.index = index, .start = lo, .end = hi, .end_rank = end_rank};
    return 0;
}

int ct_cp_cat_gpu(int cat)
{
    return cat <= CT_CP_PEER_WAIT || cat == CT_CP_LAUNCH || cat == CT_CP_GPU_GAP;
}

static int agg_edge(void *ctx, const struct cp_edge *e, int32_t rank, int64_t s, int64_t t)
{
    struct agg *a = ctx;
    struct ct_cp_result *o = a->o;
    int64_t d = t - s;
    int cat = e ? e->cat : CT_CP_HOST;
    a->st->cat[cat] += d;
    o->cat[cat] += d;
    o->total += d;
    o->rank_time[rank] += d;
    if (ct_grow((void **)&o->segs, &a->cap, o->nsegs, sizeof(*o->segs)))
        return -ENOMEM;
    int gpu = ct_cp_cat_gpu(cat);
    o->segs[o->nsegs++] = (struct ct_cp_seg){.rank = a->g->rep->rr[rank].rank->rank,
                                             .cat = cat,
                                             .stream = e && gpu ? e->stream : 0,
                                             .name = e && gpu ? e->name : NULL,
                                             .dur = d,
                                             .count = 1};
    return 0;
}

void ct_cp_segs_fold(struct ct_cp_result *o)
{
    if (o->nsegs)
        qsort(o->segs, o->nsegs, sizeof(*o->segs), cmp_seg_key);
    size_t m = 0;
    for (size_t i = 0; i < o->nsegs; i++) {
        if (m && !cmp_seg_key(&o->segs[m - 1], &o->segs[i])) {
            o->segs[m - 1].dur += o->segs[i].dur;
            o->segs[m - 1].count += o->segs[i].count;
        } else {
            o->segs[m++] = o->segs[i];
        }
    }
    o->nsegs = m;
    if (o->nsegs)
        qsort(o->segs, o->nsegs, sizeof(*o->segs), cmp_seg_dur);
}

int ct_cp_paths(const struct ct_cp_graph *g, struct ct_cp_result *o)
{
    const struct ct_report *rep = g->rep;
    memset(o, 0, sizeof(*o));
    o->unordered = g->npt - g->norder;
    o->graph_ops = g->graph_ops, o->graph_ops_edges = g->graph_ops_edges;
    o->nranks = rep->nr;
    o->rank_time = calloc(rep->nr ? rep->nr : 1, sizeof(*o->rank_time));
    o->rank_num = calloc(rep->nr ? rep->nr : 1, sizeof(*o->rank_num));
    size_t n = 0;
    struct ix *v = step_order(g, &n);
    double *d = malloc((n ? n : 1) * sizeof(*d));
    struct agg a = {.g = g, .o = o};
    struct walker w = {agg_step, agg_edge, &a};
    int rc = -ENOMEM;
    if (!o->rank_time || !o->rank_num || !v || !d)
        goto out;
    for (size_t r = 0; r < rep->nr; r++)
        o->rank_num[r] = rep->rr[r].rank->rank;
    for (size_t k = 0; k < n; k++)
        d[k] =
            (double)(g->pt[g->itp[v[k].r][2 * v[k].k + 1]].v - g->pt[g->itp[v[k].r][2 * v[k].k]].v);
    o->step_p50 = n ? ct_median(d, n) : NAN;
    size_t groups = 0;
    for (size_t i = 0; i < n; i++)
        groups += !i || v[i].index != v[i - 1].index;
    o->steps = calloc(groups ? groups : 1, sizeof(*o->steps));
    if (!o->steps || walk_steps(g, v, n, &w))
        goto out;
    ct_cp_segs_fold(o);
    o->durs = d, o->ndurs = n;
    d = NULL;
    rc = 0;
out:
    free(v);
    free(d);
    if (rc)
        ct_cp_result_free(o);
    return rc;
}

void ct_cp_result_free(struct ct_cp_result *r)
{
    free(r->steps);
    free(r->segs);
    free(r->rank_time);
    free(r->rank_num);
    free(r->durs);
    memset(r, 0, sizeof(*r));
}

/* The enumeration's visitor: every edge, appended latest first per step
 * and turned round when the step is done. */
struct enm {
    const struct ct_cp_graph *g;
    struct ct_cp_path *p;
    size_t cap, first; /* the current step's first edge */
    size_t step;
    int64_t index;
};

static void reverse_from(struct ct_cp_path *p, size_t first)
{
    for (size_t i = first, j = p->n; i + 1 < j; i++, j--) {
        struct ct_cp_pedge x = p->v[i];
        p->v[i] = p->v[j - 1];
        p->v[j - 1] = x;
    }
}

static int enm_step(void *ctx, int64_t index, int64_t lo, int64_t hi, int end_rank)
{
    struct enm *m = ctx;
    (void)lo, (void)hi, (void)end_rank;
    if (m->p->nsteps)
        reverse_from(m->p, m->first);
    m->first = m->p->n;
    m->step = m->p->nsteps++;
    m->index = index;
    return 0;
}

static int enm_edge(void *ctx, const struct cp_edge *e, int32_t rank, int64_t s, int64_t t)
{
    struct enm *m = ctx;
    struct ct_cp_path *p = m->p;
    if (ct_grow((void **)&p->v, &m->cap, p->n, sizeof(*p->v)))
        return -ENOMEM;
    int cat = e ? e->cat : CT_CP_HOST;
    int gpu = ct_cp_cat_gpu(cat);
    p->v[p->n++] = (struct ct_cp_pedge){.step = m->step,
                                        .index = m->index,
                                        .rank = m->g->rep->rr[rank].rank->rank,
                                        .cat = cat,
                                        .stream = e && gpu ? e->stream : 0,
                                        .name = e && gpu ? e->name : NULL,
                                        .s = s,
                                        .e = t};
    return 0;
}

int ct_cp_path_edges(const struct ct_cp_graph *g, struct ct_cp_path *out)
{
    memset(out, 0, sizeof(*out));
    size_t n = 0;
    struct ix *v = step_order(g, &n);
    struct enm m = {.g = g, .p = out};
    struct walker w = {enm_step, enm_edge, &m};
    int rc = v ? walk_steps(g, v, n, &w) : -ENOMEM;
    free(v);
    if (rc) {
        ct_cp_path_free(out);
        return rc;
    }
    if (out->nsteps)
        reverse_from(out, m.first);
    return 0;
}

void ct_cp_path_free(struct ct_cp_path *p)
{
    free(p->v);
    memset(p, 0, sizeof(*p));
}
