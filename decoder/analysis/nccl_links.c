/*
 * What NCCL's proxy steps say about the network (decoder/analysis/
 * nccl_links.h, docs/nccl.md): each directed link's achieved bandwidth,
 * the link that is slow against its communicator's others, and each
 * collective's time split into its own link's transfer and waiting.
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
#include <strings.h>

#include "cutrace/format.h"
#include "decoder/read/nccl_acct.h"
#include "decoder/read/timeline.h"
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

void ct_nlinks_free(struct ct_nlinks *l)
{
    free(l->l);
    free(l->slow);
    free(l->split);
    free(l->nics);
    free(l->tags);
    memset(l, 0, sizeof(*l));
}

const char *ct_nsplit_why(const struct ct_nlinks *L, const struct ct_nsplit *s)
{
    if (isfinite(s->wait_p50_ns) && isfinite(s->transfer_p50_ns))
        return NULL;
    if (!L->proxy_records)
        return CT_NSPLIT_NO_PROXY;
    if (!strncasecmp(s->algo, "NVLS", 4) && strcasecmp(s->algo, "NVLS_TREE"))
        return CT_NSPLIT_NVLS;
    return CT_NSPLIT_NO_STEPS;
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
        S[k].share_pct = L->op_ns > 0 ? 100 * L->saving_ns / L->op_ns : NAN;
        put_selectors(S[k].whatif, sizeof(S[k].whatif), key, nkeys, acc, stride, k);
        put_selectors(S[k].group_whatif, sizeof(S[k].group_whatif), key, nkeys, acc, stride, ns);
        S[k].group = first;
        S[k].ngroup = ns;
        S[k].group_saving_ns = group_saved;
        S[k].group_share_pct = group_op > 0 ? 100 * group_saved / group_op : NAN;
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

static const char *who(char *b, size_t n, int32_t job_rank, int32_t comm_rank)
{
    if (job_rank >= 0)
        snprintf(b, n, "rank %d", job_rank);
    else
        snprintf(b, n, "comm rank %d", comm_rank);
    return b;
}

void ct_nlinks_evidence(char *buf, size_t n, const struct ct_nlinks *L, size_t k)
{
    const struct ct_nslow *s = &L->slow[k];
    const struct ct_nlink *l = &L->l[s->link];
    char a[32], b[32];
    int w =
        snprintf(buf, n, "link %s -> %s: %.3g GB/s, peers %.3g-%.3g GB/s, %.1f %% of its ops' time",
                 who(a, sizeof(a), l->src_rank, l->src), who(b, sizeof(b), l->dst_rank, l->dst),
                 l->gbps, s->peers_lo, s->peers_hi, isfinite(s->share_pct) ? s->share_pct : 0);
    if (s->ngroup < 2 || w < 0 || (size_t)w >= n)
        return;
    snprintf(buf + w, n - (size_t)w,
             " alone, %.1f %% with the %zu other slow link%s of its communicator%s%s",
             isfinite(s->group_share_pct) ? s->group_share_pct : 0, s->ngroup - 1,
             s->ngroup > 2 ? "s" : "", s->common >= 0 ? " (all through " : "",
             s->common >= 0 ? who(a, sizeof(a), s->common_rank, s->common) : "");
    if (s->common >= 0 && strlen(buf) + 1 < n)
        strcat(buf, ")");
}

void ct_nlinks_group_evidence(char *buf, size_t n, const struct ct_nlinks *L, size_t k)
{
    const struct ct_nslow *s = &L->slow[k];
    size_t used = 0;
    char a[32], b[32];
    buf[0] = 0;
    for (size_t j = s->group; j < s->group + s->ngroup && used < n; j++) {
        const struct ct_nlink *l = &L->l[L->slow[j].link];
        int w = snprintf(buf + used, n - used, "%s%s -> %s (%.3g GB/s)",
                         j == s->group ? (s->ngroup > 1 ? "links " : "link ") : ", ",
                         who(a, sizeof(a), l->src_rank, l->src),
                         who(b, sizeof(b), l->dst_rank, l->dst), l->gbps);
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
                     who(a, sizeof(a), s->common_rank, s->common));
        used += w > 0 ? (size_t)w : 0;
    }
    if (used < n)
        snprintf(buf + used, n - used, "; %s%.1f %% of their ops' time",
                 s->ngroup > 1 ? "together " : "",
                 isfinite(s->group_share_pct) ? s->group_share_pct : 0);
}

/* ------------------------------------------------------------- from a job */

struct rmap {
    uint64_t comm;
    int32_t comm_rank, rank;
};

static int cmp_rmap(const void *a, const void *b)
{
    const struct rmap *x = a, *y = b;
    if (x->comm != y->comm)
        return (x->comm > y->comm) - (x->comm < y->comm);
    return (x->comm_rank > y->comm_rank) - (x->comm_rank < y->comm_rank);
}

static int32_t job_rank(const struct rmap *m, size_t n, uint64_t comm, int32_t comm_rank)
{
    size_t lo = 0, hi = n;
    struct rmap k = {comm, comm_rank, 0};
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp_rmap(&m[mid], &k) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && !cmp_rmap(&m[lo], &k) ? m[lo].rank : -1;
}

/* The first proxy record of corr in a, or a->npx. */
static size_t px_first(const struct ct_nacct *a, uint64_t corr)
{
    size_t lo = 0, hi = a->npx;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->px[mid].corr < corr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

struct split_val {
    size_t row;
    double wait, xfer;
};

static int cmp_split_val(const void *a, const void *b)
{
    size_t x = ((const struct split_val *)a)->row, y = ((const struct split_val *)b)->row;
    return (x > y) - (x < y);
}

/* The split row of (comm, op, bytes), added when new; SIZE_MAX on -ENOMEM. */
static size_t split_row(struct ct_nlinks *out, const struct ct_nccl_call *c,
                        const struct ct_ninfo *info)
{
    for (size_t i = 0; i < out->nsplit; i++) {
        struct ct_nsplit *s = &out->split[i];
        if (s->comm == c->comm && s->op == c->op && s->bytes == c->bytes) {
            if (info && !s->algo[0] && !s->channels) {
                memcpy(s->algo, info->algo, sizeof(s->algo));
                memcpy(s->proto, info->proto, sizeof(s->proto));
                s->channels = info->channels, s->warps = info->warps;
            }
            return i;
        }
    }
    struct ct_nsplit *s = realloc(out->split, (out->nsplit + 1) * sizeof(*s));
    if (!s)
        return SIZE_MAX;
    out->split = s;
    s = &s[out->nsplit];
    memset(s, 0, sizeof(*s));
    s->comm = c->comm, s->op = c->op, s->bytes = c->bytes, s->nranks = c->nranks;
    s->wait_p50_ns = s->transfer_p50_ns = NAN;
    s->phase_p50_ns[0] = s->phase_p50_ns[1] = s->phase_p50_ns[2] = NAN;
    s->ce = info && (info->flags & CT_NINFO_F_CE);
    ct_nchan_row_init(&s->ch);
    if (info) {
        memcpy(s->algo, info->algo, sizeof(s->algo));
        memcpy(s->proto, info->proto, sizeof(s->proto));
        s->channels = info->channels, s->warps = info->warps;
    }
    return out->nsplit++;
}

/* Per rank, its processes' network work summed per (transport, device,
 * direction), in the accounts' order. 0 or -ENOMEM. */
static int nic_rows(const struct ct_job *job, struct ct_nlinks *out)
{
    size_t cap = 0;
    for (size_t r = 0; r < job->nranks; r++)
        for (size_t p = 0; p < job->ranks[r].nprocs; p++)
            if (job->ranks[r].procs[p]->nacct)
                cap += job->ranks[r].procs[p]->nacct->nnic;
    if (!cap)
        return 0;
    out->nics = calloc(cap, sizeof(*out->nics));
    if (!out->nics)
        return -ENOMEM;
    for (size_t r = 0; r < job->nranks; r++) {
        size_t first = out->nnics;
        for (size_t p = 0; p < job->ranks[r].nprocs; p++) {
            const struct ct_nacct *a = job->ranks[r].procs[p]->nacct;
            for (size_t k = 0; a && k < a->nnic; k++) {
                const struct ct_nnic *n = &a->nic[k];
                size_t i = first;
                while (i < out->nnics &&
                       (out->nics[i].n.transport != n->transport ||
                        out->nics[i].n.device != n->device || out->nics[i].n.send != n->send))
                    i++;
                struct ct_nnic_row *w = &out->nics[i];
                if (i == out->nnics) {
                    out->nnics++;
                    *w = (struct ct_nnic_row){.rank = job->ranks[r].rank, .n = *n};
                    continue;
                }
                w->n.proxy_ops += n->proxy_ops;
                w->n.wrs += n->wrs;
                w->n.bytes += n->bytes;
                w->n.busy += n->busy;
                w->n.other_wrs += n->other_wrs;
                w->n.other_bytes += n->other_bytes;
            }
        }
    }
    for (size_t i = 0; i < out->nnics; i++) {
        const struct ct_nnic *n = &out->nics[i].n;
        out->nics[i].wr_gbps = n->busy ? (double)n->bytes / (double)n->busy : NAN;
    }
    return 0;
}

/* An op instance's barrier phases: its row and per phase the longest
 * channel's time (-1: none of that phase). */
struct phase_obs {
    size_t row;
    int64_t ns[3];
};

static int cmp_phase_obs(const void *a, const void *b)
{
    size_t x = ((const struct phase_obs *)a)->row, y = ((const struct phase_obs *)b)->row;
    return (x > y) - (x < y);
}

/* The op's phases (a's records of corr) into *o; 0 when it has none. The
 * channels run at once: the op spends in a phase its slowest channel's. */
static int op_phases(const struct ct_nacct *a, uint64_t corr, struct phase_obs *o)
{
    o->ns[0] = o->ns[1] = o->ns[2] = -1;
    int any = 0;
    for (size_t k = ct_nacct_phase_first(a, corr); k < a->nph && a->ph[k].corr == corr; k++) {
        const struct ct_nphase *p = &a->ph[k];
        if (p->phase > 2 || p->e < p->s)
            continue;
        if (p->e - p->s > o->ns[p->phase])
            o->ns[p->phase] = p->e - p->s;
        any = 1;
    }
    return any;
}

/* Medians per row and phase of obs (sorted here). 0 or -ENOMEM. */
static int phase_rows(struct ct_nlinks *out, struct phase_obs *obs, size_t n)
{
    if (!n)
        return 0;
    qsort(obs, n, sizeof(*obs), cmp_phase_obs);
    double *w = malloc(n * sizeof(*w));
    if (!w)
        return -ENOMEM;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && obs[j].row == obs[i].row)
            j++;
        struct ct_nsplit *s = &out->split[obs[i].row];
        s->phase_instances = j - i;
        for (int ph = 0; ph < 3; ph++) {
            size_t m = 0;
            for (size_t k = i; k < j; k++)
                if (obs[k].ns[ph] >= 0)
                    w[m++] = (double)obs[k].ns[ph];
            s->phase_p50_ns[ph] = m ? ct_median(w, m) : NAN;
        }
        i = j;
    }
    free(w);
    return 0;
}

/* The op's user tag into out->tags. 0 or -ENOMEM. */
static int tag_add(struct ct_nlinks *out, uint64_t tag, int64_t gpu_ns)
{
    size_t i = 0;
    while (i < out->ntags && out->tags[i].tag != tag)
        i++;
    if (i == out->ntags) {
        struct ct_ntag_row *t = realloc(out->tags, (out->ntags + 1) * sizeof(*t));
        if (!t)
            return -ENOMEM;
        out->tags = t;
        t[out->ntags++] = (struct ct_ntag_row){.tag = tag};
    }
    out->tags[i].ops++;
    if (gpu_ns >= 0) {
        out->tags[i].timed++;
        out->tags[i].gpu_ns += (double)gpu_ns;
    }
    return 0;
}

static int cmp_tag_row(const void *a, const void *b)
{
    uint64_t x = ((const struct ct_ntag_row *)a)->tag, y = ((const struct ct_ntag_row *)b)->tag;
    return (x > y) - (x < y);
}

int ct_nccl_links(const struct ct_job *job, struct ct_nlinks *out)
{
    memset(out, 0, sizeof(*out));
    /* nsplit: the calls of the processes with NCCL's account, which the
     * loop below visits once each */
    size_t ncalls = 0, npx = 0, nsplit = 0;
    for (size_t r = 0; r < job->nranks; r++) {
        ncalls += job->ranks[r].nnccl;
        for (size_t p = 0; p < job->ranks[r].nprocs; p++)
            if (job->ranks[r].procs[p]->nacct) {
                npx += job->ranks[r].procs[p]->nacct->npx;
                nsplit += job->ranks[r].procs[p]->nnccl;
            }
    }
    struct rmap *map = malloc((ncalls ? ncalls : 1) * sizeof(*map));
    struct ct_nlink_obs *obs = malloc((npx ? npx : 1) * sizeof(*obs));
    struct split_val *sv = malloc((nsplit ? nsplit : 1) * sizeof(*sv));
    struct phase_obs *pobs = malloc((nsplit ? nsplit : 1) * sizeof(*pobs));
    size_t npobs = 0;
    int rc = map && obs && sv && pobs ? 0 : -ENOMEM;
    size_t nmap = 0, nobs = 0, nsv = 0;
    for (size_t r = 0; r < job->nranks && !rc; r++)
        for (size_t i = 0; i < job->ranks[r].nnccl; i++)
            map[nmap++] = (struct rmap){job->ranks[r].nccl[i].comm, job->ranks[r].nccl[i].comm_rank,
                                        job->ranks[r].rank};
    if (!rc)
        qsort(map, nmap, sizeof(*map), cmp_rmap);
    for (size_t r = 0; r < job->nranks && !rc; r++) {
        const struct ct_rank *R = &job->ranks[r];
        /* the rank's calls are its processes' in process order (merge_rank,
         * decoder/read/job.c): a process's account is read against its own
         * calls only, correlation ids being per process */
        for (size_t p = 0, off = 0; p < R->nprocs && !rc; off += R->procs[p++]->nnccl) {
            const struct ct_nacct *a = R->procs[p]->nacct;
            if (!a)
                continue;
            out->proxy_records += a->npx;
            size_t end = off + R->procs[p]->nnccl < R->nnccl ? off + R->procs[p]->nnccl : R->nnccl;
            for (size_t i = off; i < end && !rc; i++) {
                const struct ct_nccl_call *c = &R->nccl[i];
                const struct ct_ninfo *info = ct_nacct_info(a, c->corr);
                size_t k = px_first(a, c->corr);
                if (!info && (k == a->npx || a->px[k].corr != c->corr))
                    continue;
                out->info_ops += info != NULL;
                int64_t op_ns = c->e > c->s ? c->e - c->s : -1;
                int64_t xfer =
                    op_ns >= 0 && c->all_s ? c->e - (c->all_s > c->s ? c->all_s : c->s) : -1;
                double busy = 0;
                int any = 0;
                for (; k < a->npx && a->px[k].corr == c->corr; k++) {
                    const struct ct_nproxy *x = &a->px[k];
                    if (!x->send || nobs == npx) /* npx: a corr two processes share */
                        continue;
                    any = 1;
                    busy = fmax(busy, (double)x->busy);
                    /* CollNet's ProxyOps go to the collective network,
                     * whose peer NCCL gives as the communicator's size
                     * (connect.cc: collnetDirect.out, a chain root's
                     * collnetChain.up): no rank is at the other end, so
                     * no rank-to-rank link; its time is still the op's
                     * network transfer (the split above) */
                    if (x->peer < 0 || (c->nranks > 0 && x->peer >= c->nranks)) {
                        out->collnet_ops++;
                        continue;
                    }
                    obs[nobs++] =
                        (struct ct_nlink_obs){.comm = c->comm,
                                              .op_key = ((uint64_t)r << 40) ^ i,
                                              .seq = c->seq,
                                              .src = c->comm_rank,
                                              .dst = x->peer,
                                              .src_rank = R->rank,
                                              .dst_rank = job_rank(map, nmap, c->comm, x->peer),
                                              .op = c->op,
                                              .op_bytes = c->bytes,
                                              .op_ns = op_ns,
                                              .op_transfer_ns = xfer,
                                              .bytes = x->bytes,
                                              .busy = x->busy,
                                              .gpu_wait = x->gpu_wait,
                                              .peer_wait = x->peer_wait};
                }
                size_t row = split_row(out, c, info);
                if (row == SIZE_MAX) {
                    rc = -ENOMEM;
                    break;
                }
                out->split[row].count++;
                if (a->nph && npobs < nsplit && op_phases(a, c->corr, &pobs[npobs]))
                    pobs[npobs++].row = row;
                uint64_t tag = a->ntag ? ct_nacct_tag(a, c->corr) : 0;
                if (tag && (rc = tag_add(out, tag, op_ns)))
                    break;
                if (any && op_ns >= 0 && nsv < nsplit)
                    sv[nsv++] = (struct split_val){row, fmax(0, (double)op_ns - busy), busy};
            }
        }
    }
    if (!rc)
        rc = ct_nlinks_from_obs(obs, nobs, out);
    if (!rc)
        rc = nic_rows(job, out);
    if (!rc)
        rc = phase_rows(out, pobs, npobs);
    if (!rc && out->ntags > 1)
        qsort(out->tags, out->ntags, sizeof(*out->tags), cmp_tag_row);
    if (!rc) {
        qsort(sv, nsv, sizeof(*sv), cmp_split_val);
        for (size_t i = 0; i < nsv;) {
            size_t j = i;
            while (j < nsv && sv[j].row == sv[i].row)
                j++;
            double *w = malloc((j - i) * 2 * sizeof(*w));
            if (!w) {
                rc = -ENOMEM;
                break;
            }
            for (size_t k = i; k < j; k++)
                w[k - i] = sv[k].wait, w[j - i + k - i] = sv[k].xfer;
            out->split[sv[i].row].wait_p50_ns = ct_median(w, j - i);
            out->split[sv[i].row].transfer_p50_ns = ct_median(w + (j - i), j - i);
            free(w);
            i = j;
        }
    }
    free(map);
    free(obs);
    free(sv);
    free(pobs);
    if (rc)
        ct_nlinks_free(out);
    return rc;
}
