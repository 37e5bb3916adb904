/*
 * The links and the slow-link rule from NCCL's proxy observations
 * (decoder/analysis/nccl_links.h, docs/nccl.md "The slow-link rule"): each
 * directed link's achieved bandwidth over the job, the links slow against
 * their communicator's others in enough of the collective instances they
 * share, and what fixing them saves, alone and together (a ring is paced
 * by its slowest link). Works on observations only (struct ct_nlink_obs),
 * built from a job by nccl_links.c or by hand in the tests.
 *
 * A link's bandwidth is measured on its sender: the bytes of its send
 * ProxyOps over the time their steps spent on the network (SendWait, the
 * union over steps in flight). A link's channels share it and run at
 * once, so an op's time on the link is its longest channel's, and the
 * op's bandwidth is its bytes over that. Time the sender spent waiting
 * for its GPU or for credits is not the link's: in a ring paced by one
 * slow link every other link waits in those states and keeps its own
 * bandwidth, which is what lets the slow one stand out.
 */
#include "decoder/analysis/nccl_links.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cutrace/format.h"
#include "decoder/util/names.h"
#include "decoder/util/stats.h"

/* One op on one link: its channels folded. */
struct per_op {
    size_t link;
    uint64_t op_key, seq, op_bytes, bytes;
    uint8_t op;
    double busy, gpu_wait, peer_wait, op_ns, transfer;
};

static int cmp_obs(const void *a, const void *b)
{
    const struct ct_nlink_obs *x = a, *y = b;
    if (x->comm != y->comm)
        return (x->comm > y->comm) - (x->comm < y->comm);
    if (x->src != y->src)
        return (x->src > y->src) - (x->src < y->src);
    if (x->dst != y->dst)
        return (x->dst > y->dst) - (x->dst < y->dst);
    return (x->op_key > y->op_key) - (x->op_key < y->op_key);
}

static const struct per_op *g_per; /* cmp_inst's array (qsort has no context) */

static int cmp_inst(const void *a, const void *b)
{
    const struct per_op *x = &g_per[*(const size_t *)a], *y = &g_per[*(const size_t *)b];
    if (x->seq != y->seq)
        return (x->seq > y->seq) - (x->seq < y->seq);
    return (x->link > y->link) - (x->link < y->link);
}

/* Whether s or more of n tosses of a fair coin come up with a chance above
 * CT_SLOW_LINK_CHANCE (P(X >= s), X ~ Binomial(n, 1/2); the margin keeps
 * the exact boundaries, 4 of 4 = 1 in 16, from rounding). */
static int likely_by_chance(size_t n, size_t s)
{
    double p = 0;
    for (size_t k = s; k <= n; k++)
        p += exp(lgamma((double)n + 1) - lgamma((double)k + 1) - lgamma((double)(n - k) + 1) -
                 (double)n * M_LN2);
    return p > CT_SLOW_LINK_CHANCE * (1 + 1e-9);
}

/*
 * Whether link i is slow in most of the collective instances it shares
 * with at least two other links: ord holds the ops of its communicator
 * sorted by (sequence, link). 1 yes; 0 no; 2 when too few instances are
 * shared to tell (even all of them slow would be CT_SLOW_LINK_CHANCE or
 * likelier by chance): the job-wide figure of a link seen in a few ops can
 * be one late proxy wake-up, so the link is not named then (docs/nccl.md,
 * "Consistency"); -ENOMEM.
 */
static int consistently_slow(size_t i, const struct per_op *per, const size_t *ord, size_t nord)
{
    double *others = malloc((nord ? nord : 1) * sizeof(*others));
    if (!others)
        return -ENOMEM;
    size_t shared = 0, slow = 0;
    for (size_t x = 0; x < nord;) {
        size_t y = x;
        while (y < nord && per[ord[y]].seq == per[ord[x]].seq)
            y++;
        double mine = NAN;
        size_t k = 0;
        for (size_t z = x; z < y; z++) {
            const struct per_op *p = &per[ord[z]];
            double bw = (double)p->bytes / p->busy;
            if (p->link == i)
                mine = isnan(mine) ? bw : fmin(mine, bw);
            else
                others[k++] = bw;
        }
        if (!isnan(mine) && k >= 2) {
            shared++;
            slow += mine < (1 - CT_SLOW_LINK_TOL) * ct_median(others, k);
        }
        x = y;
    }
    free(others);
    if (likely_by_chance(shared, shared))
        return 2;
    return (double)slow >= CT_SLOW_LINK_MOST * (double)shared && !likely_by_chance(shared, slow);
}

/* Slow links of links [a, b) (one communicator) from their ops; ord: the
 * communicator's ops by (sequence, link). */
static int find_slow_in(struct ct_nlinks *out, size_t a, size_t b, const struct per_op *per,
                        const size_t *ord, size_t nord)
{
    size_t n = 0;
    double *peers = malloc((b - a + 1) * sizeof(*peers));
    if (!peers)
        return -ENOMEM;
    for (size_t i = a; i < b; i++)
        n += isfinite(out->l[i].gbps);
    /* a slow link needs at least two others to be slow against */
    for (size_t i = a; i < b && n >= 3; i++) {
        struct ct_nlink *L = &out->l[i];
        if (!isfinite(L->gbps))
            continue;
        size_t k = 0;
        double lo = INFINITY, hi = 0;
        for (size_t j = a; j < b; j++) {
            if (j == i || !isfinite(out->l[j].gbps))
                continue;
            peers[k++] = out->l[j].gbps;
            lo = fmin(lo, out->l[j].gbps);
            hi = fmax(hi, out->l[j].gbps);
        }
        double med = ct_median(peers, k);
        if (!(L->gbps < (1 - CT_SLOW_LINK_TOL) * med))
            continue;
        int most = consistently_slow(i, per, ord, nord);
        if (most < 0) {
            free(peers);
            return most;
        }
        if (most == 2)
            out->undecided++;
        if (most != 1)
            continue;
        struct ct_nslow *s = realloc(out->slow, (out->nslow + 1) * sizeof(*s));
        if (!s) {
            free(peers);
            return -ENOMEM;
        }
        out->slow = s;
        s = &s[out->nslow++];
        memset(s, 0, sizeof(*s));
        s->link = i;
        s->peers_lo = lo;
        s->peers_hi = hi;
        s->peers_med = med;
    }
    free(peers);
    return 0;
}

/* Selector sums of one (op, size): per slow link of a group and for the
 * group (the last), the transfer recorded and the time saved. */
struct sel_key {
    uint8_t op;
    uint64_t bytes;
};

static void put_selectors(char *dst, size_t cap, const struct sel_key *key, size_t nkeys,
                          const double *acc, size_t stride, size_t j)
{
    size_t used = 0;
    dst[0] = 0;
    for (size_t q = 0; q < nkeys; q++) {
        double xfer = acc[q * stride + 2 * j], saved = acc[q * stride + 2 * j + 1];
        if (xfer <= 0)
            continue;
        double f = 1 - saved / xfer;
        f = f < 0 ? 0 : f > 1 ? 1 : f;
        char sel[64];
        int w = snprintf(sel, sizeof(sel), "%sop=%s:%llu=%.6f", used ? " " : "",
                         ct_name_nccl_op(key[q].op), (unsigned long long)key[q].bytes, f);
        if (w > 0 && used + (size_t)w < cap) {
            memcpy(dst + used, sel, (size_t)w + 1);
            used += (size_t)w;
        }
    }
}

/* The rank every link of slow[first, first + ns) touches: its
 * communicator rank, or -1. */
static int32_t common_end(const struct ct_nlinks *out, size_t first, size_t ns, int32_t *job)
{
    const struct ct_nlink *l0 = &out->l[out->slow[first].link];
    int32_t cand[2] = {l0->src, l0->dst}, jobr[2] = {l0->src_rank, l0->dst_rank};
    for (int c = 0; c < 2 && ns >= 2; c++) {
        int all = 1;
        for (size_t k = first + 1; k < first + ns && all; k++) {
            const struct ct_nlink *l = &out->l[out->slow[k].link];
            all = l->src == cand[c] || l->dst == cand[c];
        }
        if (all) {
            *job = jobr[c];
            return cand[c];
        }
    }
    *job = -1;
    return -1;
}

/*
 * The savings of the slow links slow[first..] of links [a, b) (one
 * communicator; ord: its ops by (sequence, link)). Each op instance is
 * paced by its slowest link (the longest network time of its links): a
 * slow link at its peers' median bandwidth takes busy x gbps / median, and
 * the instance then lasts as long as the slowest link left. Fixing link i
 * alone leaves the other slow links as measured; fixing the group fixes
 * them all. The links that are not slow count as their median in the
 * instance: healthy links run alike up to their measurement error (the
 * slow-link rule's premise), and the largest of several noisy readings
 * would take that error for a pace (a link read 15 % slow by a late proxy
 * wake-up is not what the ring waits for).
 */
static int group_savings(struct ct_nlinks *out, size_t a, size_t b, size_t first,
                         const struct per_op *per, const size_t *ord, size_t nord)
{
    size_t ns = out->nslow - first, stride = 2 * (ns + 1), nkeys = 0;
    if (!ns)
        return 0;
    struct ct_nslow *S = out->slow + first;
    double *v = malloc((b - a + 1) * sizeof(*v)), *keep = calloc(ns, sizeof(*keep));
    double *acc = NULL;
    struct sel_key *key = NULL;
    int rc = v && keep ? 0 : -ENOMEM;
    size_t nv = 0;
    double lo = INFINITY, hi = 0, group_op = 0, group_saved = 0;
    for (size_t i = a; i < b && !rc; i++) {
        int slow = 0;
        for (size_t k = 0; k < ns; k++)
            slow |= S[k].link == i;
        if (slow || !isfinite(out->l[i].gbps))
            continue;
        v[nv++] = out->l[i].gbps;
        lo = fmin(lo, out->l[i].gbps);
        hi = fmax(hi, out->l[i].gbps);
    }
    double med = nv ? ct_median(v, nv) : NAN;
    for (size_t k = 0; k < ns && !rc; k++) {
        if (nv) {
            S[k].peers_lo = lo, S[k].peers_hi = hi, S[k].peers_med = med;
        }
        double r = out->l[S[k].link].gbps / S[k].peers_med;
        keep[k] = r > 1 ? 1 : r;
        out->l[S[k].link].saving_ns = 0;
    }
    double *healthy = malloc((nord ? nord : 1) * sizeof(*healthy));
    if (!healthy)
        rc = -ENOMEM;
    for (size_t x = 0; x < nord && !rc;) {
        size_t y = x, top = SIZE_MAX, nh = 0;
        /* b1, b2: the two longest slow links' times; the healthy links' median */
        double b1 = 0, b2 = 0, after_all = 0, xfer_all = 0, op_ns = 0, before = 0;
        while (y < nord && per[ord[y]].seq == per[ord[x]].seq)
            y++;
        for (size_t z = x; z < y; z++) {
            const struct per_op *p = &per[ord[z]];
            size_t k = 0;
            while (k < ns && S[k].link != p->link)
                k++;
            if (k == ns) {
                healthy[nh++] = p->busy;
            } else if (p->busy > b1) {
                b2 = b1, b1 = p->busy, top = z;
            } else if (p->busy > b2) {
                b2 = p->busy;
            }
            if (k < ns)
                after_all = fmax(after_all, p->busy * keep[k]);
            xfer_all = fmax(xfer_all, p->transfer);
            op_ns = fmax(op_ns, p->op_ns);
        }
        if (top == SIZE_MAX) { /* no slow link in this instance */
            x = y;
            continue;
        }
        double hmed = nh ? ct_median(healthy, nh) : 0;
        before = fmax(b1, hmed);
        after_all = fmax(after_all, hmed);
        const struct per_op *p0 = &per[ord[x]];
        size_t q = 0;
        while (q < nkeys && (key[q].op != p0->op || key[q].bytes != p0->op_bytes))
            q++;
        if (q == nkeys) {
            struct sel_key *nk = realloc(key, (nkeys + 1) * sizeof(*nk));
            double *na = nk ? realloc(acc, (nkeys + 1) * stride * sizeof(*na)) : NULL;
            if (nk)
                key = nk;
            if (!na) {
                rc = -ENOMEM;
                break;
            }
            acc = na;
            key[nkeys] = (struct sel_key){.op = p0->op, .bytes = p0->op_bytes};
            memset(acc + nkeys * stride, 0, stride * sizeof(*acc));
            nkeys++;
        }
        for (size_t z = x; z < y; z++) {
            const struct per_op *p = &per[ord[z]];
            for (size_t k = 0; k < ns; k++) {
                if (S[k].link != p->link)
                    continue;
                double after = fmax(fmax(p->busy * keep[k], z == top ? b2 : b1), hmed);
                double saved = before > after ? before - after : 0;
                out->l[p->link].saving_ns += saved;
                acc[q * stride + 2 * k] += p->transfer;
                acc[q * stride + 2 * k + 1] += saved;
            }
        }
        double saved = before > after_all ? before - after_all : 0;
        group_saved += saved;
        group_op += op_ns;
        acc[q * stride + 2 * ns] += xfer_all;
        acc[q * stride + 2 * ns + 1] += saved;
        x = y;
    }
    int32_t job = -1, common = rc ? -1 : common_end(out, first, ns, &job);
    for (size_t k = 0; k < ns && !rc; k++) {
        const struct ct_nlink *L = &out->l[S[k].link];
        /* a saving above the ops' own time is a network time longer than
         * the ops (proxy observations late): no share, never above 100 % */
        S[k].share_pct =
            L->op_ns > 0 && L->saving_ns <= L->op_ns ? 100 * L->saving_ns / L->op_ns : NAN;
        put_selectors(S[k].whatif, sizeof(S[k].whatif), key, nkeys, acc, stride, k);
        put_selectors(S[k].group_whatif, sizeof(S[k].group_whatif), key, nkeys, acc, stride, ns);
        S[k].group = first;
        S[k].ngroup = ns;
        S[k].group_saving_ns = group_saved;
        S[k].group_share_pct =
            group_op > 0 && group_saved <= group_op ? 100 * group_saved / group_op : NAN;
        S[k].common = common;
        S[k].common_rank = job;
    }
    free(v);
    free(keep);
    free(healthy);
    free(acc);
    free(key);
    return rc;
}

/* Slow links of links [a, b) (one communicator) from their ops. */
static int find_slow(struct ct_nlinks *out, size_t a, size_t b, const struct per_op *per,
                     size_t nper)
{
    size_t nord = 0;
    size_t *ord = malloc((nper ? nper : 1) * sizeof(*ord));
    if (!ord)
        return -ENOMEM;
    for (size_t p = 0; p < nper; p++)
        if (per[p].link >= a && per[p].link < b)
            ord[nord++] = p;
    g_per = per;
    qsort(ord, nord, sizeof(*ord), cmp_inst);
    size_t first = out->nslow;
    int rc = find_slow_in(out, a, b, per, ord, nord);
    if (!rc)
        rc = group_savings(out, a, b, first, per, ord, nord);
    free(ord);
    return rc;
}

int ct_nlinks_from_obs(const struct ct_nlink_obs *obs, size_t n, struct ct_nlinks *out)
{
    struct ct_nlink_obs *o = malloc((n ? n : 1) * sizeof(*o));
    struct per_op *per = malloc((n ? n : 1) * sizeof(*per));
    double *v = malloc((n ? n : 1) * sizeof(*v));
    int rc = o && per && v ? 0 : -ENOMEM;
    size_t nper = 0;
    if (!rc) {
        memcpy(o, obs, n * sizeof(*o));
        qsort(o, n, sizeof(*o), cmp_obs);
    }
    for (size_t i = 0; i < n && !rc;) {
        size_t j = i;
        while (j < n && o[j].comm == o[i].comm && o[j].src == o[i].src && o[j].dst == o[i].dst)
            j++;
        struct ct_nlink *l = realloc(out->l, (out->nl + 1) * sizeof(*l));
        if (!l) {
            rc = -ENOMEM;
            break;
        }
        out->l = l;
        l = &l[out->nl];
        memset(l, 0, sizeof(*l));
        l->comm = o[i].comm;
        l->src = o[i].src, l->dst = o[i].dst;
        l->src_rank = o[i].src_rank, l->dst_rank = o[i].dst_rank;
        size_t nv = 0;
        for (size_t k = i; k < j;) {
            size_t m = k;
            struct per_op p = {.link = out->nl,
                               .op_key = o[k].op_key,
                               .seq = o[k].seq,
                               .op = o[k].op,
                               .op_bytes = o[k].op_bytes,
                               .op_ns = o[k].op_ns >= 0 ? (double)o[k].op_ns : 0,
                               .transfer = o[k].op_transfer_ns >= 0 ? (double)o[k].op_transfer_ns
                                           : o[k].op_ns >= 0        ? (double)o[k].op_ns
                                                                    : 0};
            for (; m < j && o[m].op_key == o[k].op_key; m++) {
                p.bytes += o[m].bytes;
                p.busy = fmax(p.busy, (double)o[m].busy);
                p.gpu_wait += (double)o[m].gpu_wait;
                p.peer_wait += (double)o[m].peer_wait;
            }
            k = m;
            l->ops++;
            l->gpu_wait_ns += p.gpu_wait;
            l->peer_wait_ns += p.peer_wait;
            l->op_ns += p.op_ns;
            if (p.busy > 0 && p.bytes) {
                l->bytes += p.bytes;
                l->busy_ns += p.busy;
                v[nv++] = (double)p.bytes / p.busy;
                per[nper++] = p;
            }
        }
        l->gbps = l->busy_ns > 0 ? (double)l->bytes / l->busy_ns : NAN;
        l->p10 = nv ? ct_percentile(v, nv, 10) : NAN;
        l->p90 = nv ? ct_percentile(v, nv, 90) : NAN;
        l->p50 = nv ? ct_median(v, nv) : NAN;
        out->nl++;
        i = j;
    }
    for (size_t a = 0; a < out->nl && !rc;) {
        size_t b = a;
        while (b < out->nl && out->l[b].comm == out->l[a].comm)
            b++;
        rc = find_slow(out, a, b, per, nper);
        a = b;
    }
    free(o);
    free(per);
    free(v);
    return rc;
}

const char *ct_nlinks_who(char *b, size_t n, int32_t job_rank, int32_t comm_rank)
{
    if (job_rank >= 0)
        snprintf(b, n, "rank %d", job_rank);
    else
        snprintf(b, n, "comm rank %d", comm_rank);
    return b;
}

/* "72.5 %", or "an unknown share" where the saving passed the ops' time. */
static const char *share(char *b, size_t n, double pct)
{
    if (isfinite(pct))
        snprintf(b, n, "%.1f %%", pct);
    else
        snprintf(b, n, "an unknown share");
    return b;
}

void ct_nlinks_evidence(char *buf, size_t n, const struct ct_nlinks *L, size_t k)
{
    const struct ct_nslow *s = &L->slow[k];
    const struct ct_nlink *l = &L->l[s->link];
    char a[32], b[32], p[32];
    int w = snprintf(buf, n, "link %s -> %s: %.3g GB/s, peers %.3g-%.3g GB/s, %s of its ops' time",
                     ct_nlinks_who(a, sizeof(a), l->src_rank, l->src),
                     ct_nlinks_who(b, sizeof(b), l->dst_rank, l->dst), l->gbps, s->peers_lo,
                     s->peers_hi, share(p, sizeof(p), s->share_pct));
    if (s->ngroup < 2 || w < 0 || (size_t)w >= n)
        return;
    snprintf(buf + w, n - (size_t)w,
             " alone, %s with the %zu other slow link%s of its communicator%s%s",
             share(p, sizeof(p), s->group_share_pct), s->ngroup - 1, s->ngroup > 2 ? "s" : "",
             s->common >= 0 ? " (all through " : "",
             s->common >= 0 ? ct_nlinks_who(a, sizeof(a), s->common_rank, s->common) : "");
    if (s->common >= 0 && strlen(buf) + 1 < n)
        strcat(buf, ")");
}

void ct_nlinks_group_evidence(char *buf, size_t n, const struct ct_nlinks *L, size_t k)
{
    const struct ct_nslow *s = &L->slow[k];
    size_t used = 0;
    char a[32], b[32], p[32];
    buf[0] = 0;
    for (size_t j = s->group; j < s->group + s->ngroup && used < n; j++) {
        const struct ct_nlink *l = &L->l[L->slow[j].link];
        int w = snprintf(buf + used, n - used, "%s%s -> %s (%.3g GB/s)",
                         j == s->group ? (s->ngroup > 1 ? "links " : "link ") : ", ",
                         ct_nlinks_who(a, sizeof(a), l->src_rank, l->src),
                         ct_nlinks_who(b, sizeof(b), l->dst_rank, l->dst), l->gbps);
        if (w < 0)
            return;
        used += (size_t)w;
    }
    if (used >= n)
        return;
    int w = snprintf(buf + used, n - used, ", peers %.3g-%.3g GB/s", s->peers_lo, s->peers_hi);
    used += w > 0 ? (size_t)w : 0;
    if (used < n && s->common >= 0) {
        w = snprintf(buf + used, n - used, ": every one through %s",
                     ct_nlinks_who(a, sizeof(a), s->common_rank, s->common));
        used += w > 0 ? (size_t)w : 0;
    }
    if (used < n)
        snprintf(buf + used, n - used, "; %s%s of their ops' time",
                 s->ngroup > 1 ? "together " : "", share(p, sizeof(p), s->group_share_pct));
}
