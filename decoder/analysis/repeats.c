/*
 * Iterations of a rank that nobody annotated: found from the work that
 * repeats in every step (docs/report.md, "Iterations without annotations").
 *
 * The rank's GPU work in host launch order (GPU start where the launch is
 * unknown; such ops are left out when most ops have their launch) is a
 * sequence of tokens: a compute kernel or copy is its name,
 * an NCCL op its (op, bytes, communicator), the end of a host
 * synchronisation one token of its own. A candidate anchor is a token
 * seen at least 3 times; its occurrences cut the sequence into cycles. A
 * cycle is compared with the reference cycle, whose count of each token is
 * the median of that token's counts over the cycles:
 *   - interior cycles are good when they differ from it by at most two ops
 *     or 20 % of its ops (a kernel added or dropped in some steps counts
 *     one, one swapped for its variant two); the first and last cycles
 *     the same, and lacking at most 20 % of the reference's ops (a warm-up
 *     step or a partial step at the ends is not an iteration);
 *   - leading cycles that are not good are dropped as warm-up (at most a
 *     quarter of them, and at least one may go);
 *   - the anchor holds when >= 80 % of the kept cycles are good and the
 *     cycles' differing shares of their ops average <= 25 %;
 *   - a collective that the reference lacks but that recurs in every m-th
 *     cycle (m >= 2, regular) vetoes the anchor: the step is m cycles (one
 *     kernel launched 4 times per step is not the step when the all-reduce
 *     comes once per 4 launches). Compute kernels do not veto: a kernel in
 *     every k-th step (a prefill, an evaluation) is an irregular step.
 *   - a cycle is good only when it holds half the reference or more.
 * A sync is an anchor that ends its step (its cycles start after it) and
 * is not scored as work. When no anchor holds, every m-th occurrence of a
 * token seen m times per step is tried (group_period).
 * Of the anchors that hold, those within one cycle of the most kept cycles
 * (the shortest period; one more or less is a partial or warm-up step at an
 * end) compete on being a sync, then on the median host gap before the
 * anchor: the step boundary is where the host's loop comes round. Then more
 * cycles, then the earliest. A sync whose cycles agree better (confidence
 * 0.1 higher) than a shorter period's wins over it.
 * That shortest period may be a layer of the step. Every anchor that holds
 * is a level; a level above the best (1.5 times its period or more) is the
 * step instead when its cycles carry kinds of the job's synchronisation
 * structure (MK_*: collectives, optimizer, host copies, graph launches)
 * that the best's lack, or when the host pauses between its cycles
 * (pause_at) and not between the best's. Confidence is the good share of
 * kept cycles times (1 - the differing share), halved when the cycles
 * carry none of that structure, halved when nothing shows the loop coming
 * round between them (no pause, no sync), times 0.7 for two cycles or
 * fewer; the CT_ITER_WHY_* bits say which.
 * A capture of whole steps (ct_proc.at_step) fixes the phase instead
 * (rotation, head_rotation, at_step_starts), admits anchors seen twice and
 * needs a period that explains 2/3 of its ops; a level whose structure
 * shows only at the capture's ends, or that has neither structure nor
 * pause, is the layers of one step: no iterations (CT_ITER_WHY_PARTS).
 */
#include "decoder/analysis/iterations.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/util/search.h"
#include "decoder/util/stats.h"

struct ev {
    int64_t t;    /* host launch, or GPU start when unknown */
    int64_t e;    /* GPU end (0: unknown) */
    uint64_t key; /* token before densifying */
    uint32_t tok;
    uint8_t comm;
    uint8_t mark; /* MK_* kinds of the job's synchronisation structure it is */
};

/* The kinds of op that make a step's synchronisation structure (a step
 * repeats with them; a layer, a micro-batch or a chunk of a step repeats
 * between them): collectives, the optimizer's kernels, copies between host
 * and device (a batch fetched, a result read back), graph launches (a
 * decode step replayed), and host syncs. */
enum {
    MK_COLL = 1,
    MK_OPT = 2,
    MK_HOSTIO = 4,
    MK_GRAPH = 8,
    MK_SYNC = 16,
};

/* The kinds a GPU op of name n is, from its class and name: PyTorch's
 * optimizers run multi_tensor_apply or fused Adam/SGD kernels, and a
 * profiler names a copy by its direction ("Memcpy HtoD (Pageable ->
 * Device)"); a copy whose direction the trace does not say is none. */
static uint8_t name_marks(const char *n)
{
    if (!n)
        return 0;
    uint8_t m = 0;
    if (strcasestr(n, "adam") || strcasestr(n, "sgd") || strstr(n, "multi_tensor_apply") ||
        strcasestr(n, "optimizer"))
        m |= MK_OPT;
    if (strstr(n, "HtoD") || strstr(n, "DtoH") || strstr(n, "Host -> Device") ||
        strstr(n, "Device -> Host") || strstr(n, "Device -> Pinned") ||
        strstr(n, "Pinned -> Device") || strstr(n, "Pageable -> Device") ||
        strstr(n, "Device -> Pageable"))
        m |= MK_HOSTIO;
    return m;
}

static int cmp_ev(const void *a, const void *b)
{
    const struct ev *x = a, *y = b;
    if (x->t != y->t)
        return (x->t > y->t) - (x->t < y->t);
    return (x->key > y->key) - (x->key < y->key);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

struct cand_key {
    size_t count, first; /* occurrences; position of the first */
    uint32_t tok;
};

static int cmp_cand(const void *a, const void *b)
{
    const struct cand_key *x = a, *y = b;
    if (x->count != y->count)
        return (x->count < y->count) - (x->count > y->count);
    return (x->first > y->first) - (x->first < y->first);
}

/* splitmix64's finaliser over h ^ v: every bit of v moves every bit */
/* The rank's events in order, with dense token ids. */
#define SYNC_KEY (ct_mix64(3, 0) & ~(1ull << 63))

static int events(const struct ct_rank *r, int64_t lo, int64_t hi, int with_sync, struct ev **out,
                  size_t *n, uint32_t *ntok, uint32_t *sync_tok)
{
    size_t k = 0;
    const struct ct_ivset *sync = &r->procs[0]->sync;
    struct ev *v = malloc((r->nops + r->nnccl + sync->n + 1) * sizeof(*v));
    uint8_t *nm = malloc(r->nnames + 1); /* name_marks of each name, once */
    if (!v || !nm) {
        free(v);
        free(nm);
        return -ENOMEM;
    }
    for (size_t i = 0; i < r->nnames; i++)
        nm[i] = name_marks(r->names[i]);
    /* An op whose launch is unknown goes in by its GPU start, another
     * clock: when most ops have their launch, those without one are left
     * out (a profiler that lost their launching calls, in one mode of
     * reading a trace and not the other, would change the cycles). */
    int need_launch = 2 * r->nlaunched > r->nops;
    /* the host's synchronisations, at their ends: a step that ends with a
     * loss.item() ends there, and a step of launches that repeat no token
     * of their own (one kernel, or the same kernel hundreds of times) is
     * cut by them */
    for (size_t i = 0; with_sync && i < sync->n; i++)
        if (sync->v[i].e >= lo && sync->v[i].e < hi)
            v[k++] = (struct ev){.t = sync->v[i].e, .key = SYNC_KEY, .mark = MK_SYNC};
    for (size_t i = 0; i < r->nops; i++) {
        const struct ct_gpu_op *g = &r->ops[i];
        if (g->nccl >= 0)
            continue; /* its NCCL op stands for it */
        int comm = CT_CL_IS_COMM(g->cls);
        if (!comm && g->cls != CT_CL_COMPUTE && g->cls != CT_CL_MEMORY)
            continue;
        if (need_launch && g->launch == INT64_MIN)
            continue;
        int64_t t = g->launch != INT64_MIN ? g->launch : g->s;
        if (t < lo || t >= hi)
            continue;
        uint8_t mark = (uint8_t)((comm ? MK_COLL : 0) | (g->graph ? MK_GRAPH : 0) |
                                 (g->name < r->nnames ? nm[g->name] : 0));
        v[k++] = (struct ev){.t = t,
                             .e = g->e,
                             .key = ct_mix64(ct_mix64(1, g->type), g->name) & ~(1ull << 63),
                             .comm = (uint8_t)comm,
                             .mark = mark};
    }
    for (size_t i = 0; i < r->nnccl; i++) {
        const struct ct_nccl_call *o = &r->nccl[i];
        if (o->host_s < lo || o->host_s >= hi)
            continue;
        v[k++] = (struct ev){.t = o->host_s,
                             .e = o->e,
                             .key = ct_mix64(ct_mix64(ct_mix64(2, o->op), o->bytes), o->comm) |
                                    (1ull << 63),
                             .comm = 1,
                             .mark = MK_COLL};
    }
    free(nm);
    qsort(v, k, sizeof(*v), cmp_ev);
    /* syncs with no work launched between them are one wait (two streams
     * synchronised in turn, a barrier between two syncs): the last stays */
    size_t kept = 0;
    for (size_t i = 0; i < k; i++)
        if (!(v[i].key == SYNC_KEY && i + 1 < k && v[i + 1].key == SYNC_KEY))
            v[kept++] = v[i];
    k = kept;
    uint64_t *keys = malloc((k + 1) * sizeof(*keys));
    if (!keys) {
        free(v);
        return -ENOMEM;
    }
    for (size_t i = 0; i < k; i++)
        keys[i] = v[i].key;
    qsort(keys, k, sizeof(*keys), cmp_u64);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (u == 0 || keys[u - 1] != keys[i])
            keys[u++] = keys[i];
    for (size_t i = 0; i < k; i++) {
        size_t a = 0, b = u;
        while (a < b) {
            size_t mid = (a + b) / 2;
            if (keys[mid] < v[i].key)
                a = mid + 1;
            else
                b = mid;
        }
        v[i].tok = (uint32_t)a;
    }
    free(keys);
    *out = v;
    *n = k;
    *ntok = (uint32_t)u;
    *sync_tok = UINT32_MAX;
    for (size_t i = 0; i < k && *sync_tok == UINT32_MAX; i++)
        if (v[i].key == SYNC_KEY)
            *sync_tok = v[i].tok;
    return 0;
}

/* A host pause this many median launch gaps long in every cycle is where
 * the job's loop comes round: on the real traces of tests/data/kineto and
 * others (docs/report.md) a step's longest pause is 46 to 7700 median
 * gaps (data loading, prof.step(), the optimizer's host work, a sync), a
 * transformer layer's 2.2 to 4.9 (the next module's call). 12 lies between,
 * by a factor of 2.5 or more from either side. */
#define LOOP_PAUSE 12.0

/* What one anchor gives. */
struct fit {
    int holds;
    size_t first, ncyc; /* kept cycles: anchor occurrences first .. first + ncyc - 1 */
    double good, differ, gap;
    double period; /* median time from one kept anchor to the next, ns */
};

struct work {
    const struct ev *v;
    uint32_t ntok;
    size_t *occ;              /* positions of the anchor */
    uint32_t *cnt;            /* per cycle, for the token being scored */
    uint32_t *seen;           /* cycles touched for that token */
    double *mis, *tot, *lack; /* per cycle: ops differing, compared, missing */
    size_t *tok_at;           /* CSR of positions by token */
    size_t *tok_off;
    size_t nv, nops;   /* events; of them GPU work (syncs are not) */
    uint32_t sync_tok; /* the token of a sync's end, UINT32_MAX: none */
    int at_step;       /* the capture ends at a step end (ct_proc.at_step) */
    double gmed;       /* median gap between consecutive launches, >= 1 µs */
};

/* An end cycle is a step, not a warm-up or a partial one, when it lacks at
 * most 20 % of the reference's ops and differs by no more than an interior
 * cycle may. */
static int edge_whole(const struct work *w, size_t c)
{
    double allow = 0.2 * w->tot[c] > 2 ? 0.2 * w->tot[c] : 2;
    return w->lack[c] <= 0.2 * w->tot[c] && w->mis[c] <= allow;
}

/*
 * A trace that begins and ends at a step (at_step) ends with a whole step.
 * When its last cycle is shorter than the one before by `shift` ops, and
 * the ops it lacks are the first `shift` of that cycle, the anchor sits
 * `shift` ops into every step: the step is the cycle rotated back by it.
 * Returns that shift (0: none; the anchor starts the step).
 */
static size_t rotation(const struct work *w, size_t c, uint32_t *cnt)
{
    size_t nv = w->nv, a = w->occ[c - 2], b = w->occ[c - 1], full = b - a, last = nv - b;
    if (last >= full)
        return 0;
    size_t shift = full - last;
    /* cnt[t]: count in the cycle before minus count in the last one */
    for (size_t i = a; i < nv; i++)
        cnt[w->v[i].tok] = 0;
    for (size_t i = a; i < b; i++)
        cnt[w->v[i].tok]++;
    for (size_t i = b; i < nv; i++)
        cnt[w->v[i].tok]--;
    size_t tail = 0; /* of the cycle's last `shift` ops, those the last lacks */
    for (size_t i = b - shift; i < b; i++)
        if ((int32_t)cnt[w->v[i].tok] > 0) {
            cnt[w->v[i].tok]--;
            tail++;
        }
    return (double)tail >= 0.8 * (double)shift ? shift : 0;
}

/*
 * The rotation again, when rotation() finds the last cycle's lack is not
 * the cycle before's tail op for op (a mode of reading the trace that
 * drops sub-µs kernels makes cycles differ by a few ops): the capture
 * begins at a step, so the ops before the first anchor are the first
 * step's head, and it ends at one, so the last cycle lacks as many ops
 * from the median cycle. When the two agree within 3 ops or 2 % of a
 * cycle, the head is the shift (0: none).
 */
static size_t head_rotation(const struct work *w, size_t c)
{
    if (c < 2 || w->occ[0] == 0)
        return 0;
    double *len = malloc(c * sizeof(*len));
    if (!len)
        return 0;
    for (size_t k = 0; k + 1 < c; k++)
        len[k] = (double)(w->occ[k + 1] - w->occ[k]);
    double med = ct_median(len, c - 1);
    free(len);
    double last = (double)(w->nv - w->occ[c - 1]), head = (double)w->occ[0];
    if (last >= med)
        return 0;
    double tol = 0.02 * med > 3 ? 0.02 * med : 3;
    double d = head - (med - last);
    return d <= tol && d >= -tol && head < med ? w->occ[0] : 0;
}

/* The op before event a, syncs passed over; SIZE_MAX when none. */
static size_t prev_op(const struct work *w, size_t a)
{
    while (a > 0 && w->v[a - 1].tok == w->sync_tok)
        a--;
    return a > 0 ? a - 1 : SIZE_MAX;
}

/* Scores the anchor whose occurrences are w->occ[0..m). */
static void score(struct work *w, size_t m, struct fit *f)
{
    memset(f, 0, sizeof(*f));
    size_t nc = m; /* cycle c: occ[c] .. occ[c + 1] (the last: to the end) */
    for (size_t c = 0; c < nc; c++)
        w->mis[c] = w->tot[c] = w->lack[c] = 0;
    int veto = 0;
    double base = 0; /* the reference's size: what every untouched cycle lacks */
    uint32_t *hist = NULL;
    for (uint32_t t = 0; t < w->ntok && !veto; t++) {
        if (t == w->sync_tok)
            continue; /* an anchor, not part of what a step does */
        size_t a = w->tok_off[t], b = w->tok_off[t + 1];
        size_t ns = 0;
        size_t c = 0;
        for (size_t i = a; i < b; i++) {
            size_t pos = w->tok_at[i];
            if (pos < w->occ[0])
                continue; /* before the first cycle */
            while (c + 1 < nc && w->occ[c + 1] <= pos)
                c++;
            if (ns == 0 || w->seen[ns - 1] != c) {
                w->seen[ns++] = (uint32_t)c;
                w->cnt[c] = 0;
            }
            w->cnt[c]++;
        }
        /* reference: the median count over cycles (zeros included) */
        uint32_t ref = 0;
        if (ns * 2 >= nc) {
            /* counts of the touched cycles, sorted; the others are 0 */
            uint32_t *h = realloc(hist, ns * sizeof(*h));
            if (!h) {
                f->holds = 0;
                free(hist);
                return;
            }
            hist = h;
            for (size_t j = 0; j < ns; j++)
                hist[j] = w->cnt[w->seen[j]];
            for (size_t j = 1; j < ns; j++) /* small counts: insertion sort */
                for (size_t q = j; q > 0 && hist[q - 1] > hist[q]; q--) {
                    uint32_t x = hist[q];
                    hist[q] = hist[q - 1];
                    hist[q - 1] = x;
                }
            size_t zeros = nc - ns, mid = nc / 2;
            ref = mid < zeros ? 0 : hist[mid - zeros];
        }
        if (ref == 0 && ns >= 3 && w->v[w->tok_at[a]].comm) {
            /* a collective in every m-th cycle: the step is m cycles */
            uint32_t d0 = w->seen[1] - w->seen[0];
            int regular = d0 >= 2;
            for (size_t j = 2; j < ns && regular; j++) {
                uint32_t d = w->seen[j] - w->seen[j - 1];
                regular = d + 1 >= d0 && d <= d0 + 1;
            }
            if (regular)
                veto = 1;
        }
        base += ref;
        for (size_t j = 0; j < ns; j++) {
            size_t cc = w->seen[j];
            uint32_t k = w->cnt[cc];
            w->mis[cc] += (double)(k > ref ? k - ref : ref - k) - ref;
            w->tot[cc] += (double)(k > ref ? k : ref) - ref;
            w->lack[cc] += (double)(k < ref ? ref - k : 0) - ref;
        }
    }
    free(hist);
    if (veto)
        return;
    for (size_t c = 0; c < nc; c++) {
        w->mis[c] += base;
        w->tot[c] += base;
        w->lack[c] += base;
    }
    /* ref mass: the tot of a cycle that matches exactly; per-cycle verdicts */
    size_t lo = 0, maxdrop = nc / 4 > 1 ? nc / 4 : 1;
    while (lo < maxdrop && lo + 2 < nc && !edge_whole(w, lo))
        lo++;
    size_t hi = nc; /* the last cycle runs to the end: kept only when whole */
    if (w->at_step && nc >= 2 && (rotation(w, nc, w->cnt) || head_rotation(w, nc))) {
        /* it is cut where the step that ends the capture ends: what it
         * lacks is the rotation (at_step_starts), what it has beyond the
         * reference counts */
        w->mis[hi - 1] -= w->lack[hi - 1];
        w->tot[hi - 1] -= w->lack[hi - 1];
        w->lack[hi - 1] = 0;
    } else if (hi > lo + 1 && !edge_whole(w, hi - 1)) {
        hi--;
    }
    if (hi < lo + 2)
        return;
    size_t good = 0;
    double mis = 0, tot = 0, share = 0;
    for (size_t c = lo; c < hi; c++) {
        double allow = 0.2 * w->tot[c];
        if (allow < 2 && c > lo && c + 1 < hi)
            allow = 2; /* a kernel swapped for its variant counts 2 */
        /* and it holds at least half the reference: a 1-op step's op
         * swapped for another is another cycle, not a variant */
        good += w->mis[c] <= allow && w->tot[c] - w->mis[c] >= 0.5 * base;
        mis += w->mis[c];
        tot += w->tot[c];
        share += w->tot[c] > 0 ? w->mis[c] / w->tot[c] : 1;
    }
    f->first = lo;
    f->ncyc = hi - lo;
    f->good = (double)good / (double)f->ncyc;
    /* each cycle's differing share, averaged: a step of one kernel whose
     * every fifth step adds two copies (a checkpoint) differs in 13 % of
     * its steps' work, not in the 29 % of all ops those copies are */
    f->differ = share / (double)f->ncyc;
    f->holds = f->good >= 0.8 && f->differ <= 0.25;
    /* a capture of whole steps is steps throughout: a period that explains
     * under 2/3 of its ops is a part of a longer step that does not repeat
     * (a copy, a memset and a kernel recur by chance) */
    if (w->at_step && (tot - mis) * 3 < 2 * (double)w->nops)
        f->holds = 0;
    /* the host gap before the anchor, median over kept cycles */
    double *g = malloc(f->ncyc * sizeof(*g));
    size_t ng = 0;
    for (size_t c = lo; g && c < hi; c++)
        if (w->occ[c] > 0)
            g[ng++] = (double)(w->v[w->occ[c]].t - w->v[w->occ[c] - 1].t);
    f->gap = g && ng ? ct_median(g, ng) : 0;
    ng = 0;
    for (size_t c = lo; g && c + 1 < hi; c++)
        g[ng++] = (double)(w->v[w->occ[c + 1]].t - w->v[w->occ[c]].t);
    f->period = g && ng ? ct_median(g, ng) : 0;
    free(g);
}

/* Where the step whose first op is v[a] begins: at that op's launch, or
 * where a synchronisation after the op before ended (a loss.item() waits
 * for the step's GPU work: the host is done with the step then). Of the
 * syncs between the two ops, those with no launch call before them since
 * the op before: a sync after launches is the next step's own wait (on
 * work a trace read in HTA's µs dropped, a copy under a µs), not the
 * previous step's end. */
static int64_t step_start(const struct work *w, const struct ct_rank *r, size_t a)
{
    const struct ev *v = w->v;
    int64_t t = v[a].t;
    size_t p = prev_op(w, a);
    if (p == SIZE_MAX)
        return t;
    const struct ct_proc *pr = r->procs[0];
    const struct ct_ivset *sync = &pr->sync;
    long i = ct_ivset_find(sync, v[p].t);
    size_t hint = 0;
    /* the first launch call after the op before's */
    size_t l = pr->launches ? ct_gallop(pr->launches, pr->nlaunches, v[p].t, 1, &hint) : 0;
    int64_t next_launch = l < pr->nlaunches ? pr->launches[l] : INT64_MAX;
    int64_t end = INT64_MIN;
    for (size_t j = i < 0 ? 0 : (size_t)i; j < sync->n && sync->v[j].s < t; j++) {
        if (sync->v[j].e <= v[p].t || sync->v[j].e > t)
            continue;
        if (sync->v[j].s > next_launch)
            break;
        end = sync->v[j].e;
    }
    return end != INT64_MIN ? end : t;
}

/*
 * The step starts of an at_step trace (positions into v, ascending, the
 * first 0): every anchor occurrence moved back by the rotation; a first
 * step is whatever precedes the second start (a warm-up step does more),
 * and a last cycle under 80 % of the median cycle is a part. Returns the
 * count of steps; b[count] is nv.
 */
static size_t at_step_starts(const struct work *w, size_t nv, size_t c, size_t shift, size_t *b)
{
    size_t nb = 0;
    b[nb++] = 0;
    for (size_t k = 0; k < c; k++)
        if (w->occ[k] >= shift + 1)
            b[nb++] = w->occ[k] - shift;
    /* the median cycle, in ops */
    double *len = malloc((c + 1) * sizeof(*len));
    if (!len)
        return 0;
    size_t nl = 0; /* after the first step, the last one included */
    for (size_t k = 1; k < nb; k++)
        len[nl++] = (double)((k + 1 < nb ? b[k + 1] : nv) - b[k]);
    double med = nl ? ct_median(len, nl) : (double)nv;
    free(len);
    while (nb > 2 && (double)b[1] < 0.8 * med) /* the first step's head */
        memmove(&b[1], &b[2], (--nb - 1) * sizeof(*b));
    if (nb > 1 && (double)(nv - b[nb - 1]) < 0.8 * med)
        nb--;
    b[nb] = nv;
    return nb;
}

/*
 * A token seen m times per step has no single occurrence to cut at; every
 * m-th one, from the first of each group, is one per step. m: the smallest
 * (2..64, at least 3 cycles) for which the distance (in ops) from each
 * occurrence to the m-th next is regular: >= 80 % of them within 10 % of
 * their median, where every occurrence (m = 1) is not (a step of 4
 * launches of one kernel is 5 ops from launch to 4th next, and 4 or 3 to the
 * 3rd next: a tolerance of an op would take m = 3). r: the
 * occurrence (mod m) after the longest median distance from the one
 * before: a group's first. Returns 0 when there is none.
 */
static int group_period(const size_t *pos, size_t c, size_t *m_out, size_t *r_out)
{
    size_t mmax = c / 3 < 64 ? c / 3 : 64;
    double *d = malloc(c * sizeof(*d));
    if (!d)
        return 0;
    size_t found = 0;
    for (size_t m = 1; m <= mmax && !found; m++) {
        size_t n = 0;
        for (size_t j = 0; j + m < c; j++)
            d[n++] = (double)(pos[j + m] - pos[j]);
        double med = ct_median(d, n), near = 0; /* ct_median sorts: read after */
        double tol = 0.1 * med;                 /* ops added or dropped in some steps */
        for (size_t j = 0; j + m < c; j++) {
            double x = (double)(pos[j + m] - pos[j]);
            near += x >= med - tol && x <= med + tol;
        }
        int regular = near >= 0.8 * (double)n;
        if (m == 1 && regular)
            break; /* the token's own period: no groups */
        if (m > 1 && regular)
            found = m;
    }
    size_t best_r = 0;
    double best_gap = -1;
    for (size_t r = 0; r < found; r++) {
        size_t n = 0;
        for (size_t j = r ? r : found; j < c; j += found)
            d[n++] = (double)(pos[j] - pos[j - 1]);
        double g = n ? ct_median(d, n) : 0;
        if (g > best_gap) {
            best_gap = g;
            best_r = r;
        }
    }
    free(d);
    *m_out = found;
    *r_out = best_r;
    return found > 0;
}

/* Fills w->occ with every m-th occurrence of tok from its r-th; the count.
 * A sync ends its step: its cycles start after it (and at the start). */
static size_t anchor_occ(struct work *w, uint32_t tok, size_t m, size_t r)
{
    size_t a = w->tok_off[tok], c = w->tok_off[tok + 1] - a, k = 0;
    int after = tok == w->sync_tok;
    if (after)
        w->occ[k++] = 0;
    for (size_t j = r; j < c; j += m) {
        size_t p = w->tok_at[a + j] + (size_t)after;
        if (p < w->nv && (k == 0 || p > w->occ[k - 1]))
            w->occ[k++] = p;
    }
    return k;
}

/* 1 when a cycle of `period` ns is the wanted one (want 0: any). */
static int period_fits(double period, int64_t want)
{
    return want <= 0 || (period >= 0.85 * (double)want && period <= 1.15 * (double)want);
}

/* One anchor that holds: a level of the work's repeats (a step, or a
 * layer, micro-batch or chunk inside one), with what says which. */
struct level {
    struct fit f;
    uint32_t tok;
    size_t m, r, at; /* every m-th occurrence from the r-th; position of the first kept */
    int described;
    unsigned marks; /* MK_* kinds in at least half of its kept cycles */
    unsigned edge;  /* MK_* kinds (syncs aside) of the trace seen in none of its interior
                     * cycles and in fewer than half of them: at its ends only */
    double pause;   /* host pause at its boundary, in median launch gaps (pause_at) */
};

/*
 * The host pause between the cycles of the level whose occurrences are
 * w->occ[0..k): each kept cycle's longest gap between consecutive
 * launches, the median over the cycles, in units of gmed (the median gap
 * between consecutive launches, at least 1 µs). The longest gap wherever it
 * falls in the cycle: the anchor need not sit at the loop's boundary.
 */
static double pause_at(const struct work *w, const struct fit *f, size_t k, double gmed)
{
    size_t lo = f->first, hi = f->first + f->ncyc;
    if (hi > k)
        hi = k;
    double *d = malloc((f->ncyc + 1) * sizeof(*d));
    if (!d)
        return 0;
    size_t nm = 0;
    for (size_t c = lo; c < hi; c++) {
        size_t end = c + 1 < k ? w->occ[c + 1] : w->nv;
        double mx = 0;
        for (size_t q = w->occ[c] > 0 ? w->occ[c] : 1; q < end; q++)
            if ((double)(w->v[q].t - w->v[q - 1].t) > mx)
                mx = (double)(w->v[q].t - w->v[q - 1].t);
        d[nm++] = mx;
    }
    double p = nm ? ct_median(d, nm) / gmed : 0;
    free(d);
    return p;
}

/* Fills in what says whether level L is the step: the kinds of the
 * synchronisation structure in its cycles, those at its ends only, and the
 * host pause at its boundary. In a capture of whole steps (at_step) the
 * host syncs are not events: each cycle's are counted from the rank's. */
static void describe(struct work *w, const struct ct_rank *r, struct level *L, double gmed)
{
    if (L->described)
        return;
    size_t k = anchor_occ(w, L->tok, L->m, L->r);
    const struct fit *f = &L->f;
    size_t lo = f->first, hi = f->first + f->ncyc;
    if (hi > k)
        hi = k;
    unsigned cnt[5] = {0}, any = 0, interior = 0;
    const struct ct_ivset *sync = &r->procs[0]->sync;
    for (size_t i = 0; i < w->nv; i++)
        any |= w->v[i].mark;
    for (size_t c = lo; c < hi; c++) {
        size_t a = w->occ[c], b = c + 1 < k ? w->occ[c + 1] : w->nv;
        unsigned m = 0;
        for (size_t i = a; i < b; i++)
            m |= w->v[i].mark;
        if (w->at_step && b > a) {
            int64_t ta = w->v[a].t, tb = b < w->nv ? w->v[b].t : INT64_MAX;
            long q = ct_ivset_find(sync, ta);
            for (size_t j = q < 0 ? 0 : (size_t)q; j < sync->n && sync->v[j].s < tb; j++)
                if (sync->v[j].e >= ta && sync->v[j].e < tb)
                    m |= MK_SYNC;
        }
        for (int b2 = 0; b2 < 5; b2++)
            cnt[b2] += (m >> b2) & 1;
        if (c > lo && c + 1 < hi)
            interior |= m;
    }
    L->marks = 0;
    for (int b2 = 0; b2 < 5; b2++)
        if (cnt[b2] && 2 * cnt[b2] >= f->ncyc)
            L->marks |= 1u << b2;
    L->edge = any & ~L->marks & ~interior & ~(unsigned)MK_SYNC;
    L->pause = L->tok == w->sync_tok ? LOOP_PAUSE * 1e6 : pause_at(w, f, k, gmed);
    L->described = 1;
}

/* 1 when fit f (anchor a sync when f_sync, first kept at f_at) is a better
 * cut than b: more cycles by more than one (a shorter period), else a sync
 * (a step that blocks on its GPU work ends there: the host cannot run
 * ahead of it), the longer host gap before the anchor, more cycles, the
 * cycle that starts first. */
static int better_fit(const struct fit *f, int f_sync, size_t f_at, const struct fit *b, int b_sync,
                      size_t b_at)
{
    if (!b->holds || f->ncyc > b->ncyc + 1)
        return 1;
    if (f->ncyc + 1 < b->ncyc)
        return 0;
    if (f_sync != b_sync)
        return f_sync;
    if (f->gap != b->gap)
        return f->gap > b->gap;
    if (f->ncyc != b->ncyc)
        return f->ncyc > b->ncyc;
    return f_at < b_at;
}

/* The levels above the best kept for the choice (ct_iterations_from_repeats),
 * and the candidates tried for them: each is a pass over the events. */
#define MAX_LEVELS  64
#define MAX_COARSER 48

int ct_iterations_from_repeats(const struct ct_rank *r, int64_t lo, int64_t hi, int64_t period_ns,
                               struct ct_iter **out, size_t *n, double *conf, unsigned *why)
{
    *out = NULL;
    *n = 0;
    *conf = 0;
    if (why)
        *why = 0;
    struct ev *v;
    size_t nv;
    uint32_t ntok, sync_tok;
    /* torch.profiler starts and stops recording in prof.step() (its
     * schedule changes state there): a Kineto trace begins at a step, and
     * that fixes the phase; elsewhere syncs are anchors too */
    int at_step = r->procs[0]->at_step != 0;
    int rc = events(r, lo, hi, !at_step, &v, &nv, &ntok, &sync_tok);
    if (rc)
        return rc;
    if (nv < 6) {
        free(v);
        return 0;
    }
    size_t nops = 0;
    for (size_t i = 0; i < nv; i++)
        nops += v[i].tok != sync_tok;
    struct work w = {
        .v = v, .ntok = ntok, .nv = nv, .nops = nops, .sync_tok = sync_tok, .at_step = at_step};
    struct level *lv = calloc(MAX_LEVELS, sizeof(*lv));
    w.tok_off = calloc((size_t)ntok + 1, sizeof(*w.tok_off));
    w.tok_at = malloc(nv * sizeof(*w.tok_at));
    w.occ = malloc(nv * sizeof(*w.occ));
    w.cnt = malloc(nv * sizeof(*w.cnt));
    w.seen = malloc(nv * sizeof(*w.seen));
    w.mis = malloc(nv * sizeof(*w.mis));
    w.tot = malloc(nv * sizeof(*w.tot));
    w.lack = malloc(nv * sizeof(*w.lack));
    rc = -ENOMEM;
    if (!lv || !w.tok_off || !w.tok_at || !w.occ || !w.cnt || !w.seen || !w.mis || !w.tot ||
        !w.lack)
        goto out;
    for (size_t i = 0; i < nv; i++)
        w.tok_off[v[i].tok + 1]++;
    for (uint32_t t = 0; t < ntok; t++)
        w.tok_off[t + 1] += w.tok_off[t];
    {
        size_t *fill = malloc(((size_t)ntok + 1) * sizeof(*fill));
        if (!fill)
            goto out;
        memcpy(fill, w.tok_off, ((size_t)ntok + 1) * sizeof(*fill));
        for (size_t i = 0; i < nv; i++)
            w.tok_at[fill[v[i].tok]++] = i;
        free(fill);
    }
    /* Candidates by count, most first (more cycles: a shorter period). At
     * most 3 tokens per count (tokens with the same count are mostly the
     * same period at another phase). The best is the shortest period that
     * holds; those with fewer cycles are the levels above it (a step
     * above its layers), kept for the choice below. */
    struct cand_key *cd = malloc(((size_t)ntok + 1) * sizeof(*cd));
    if (!cd)
        goto out;
    size_t ncd = 0;
    for (uint32_t t = 0; t < ntok; t++) {
        size_t c = w.tok_off[t + 1] - w.tok_off[t];
        if (c >= (at_step ? 2u : 3u))
            cd[ncd++] = (struct cand_key){c, w.tok_at[w.tok_off[t]], t};
    }
    qsort(cd, ncd, sizeof(*cd), cmp_cand);
    struct level best = {0};
    size_t nlv = 0, tried = 0, same = 0, coarser_tried = 0;
    /* every candidate is a pass over the events: 3e8 visits, at most */
    size_t budget = nv ? (size_t)3e8 / nv : 0;
    /* every occurrence of a token an anchor; when none holds, every m-th
     * (a kernel launched m times per step, no token once per step) */
    for (size_t i = 0; i < ncd * 2 && tried < budget; i++) {
        int grouped = i >= ncd;
        size_t ci = grouped ? i - ncd : i, c = cd[ci].count, m = 1, rr = 0;
        if (grouped && ci == 0) {
            if (best.f.holds)
                break;
            same = 0;
        }
        /* more than one cycle fewer than the best: a level above it when
         * it has a third fewer cycles or less (nested), else no level */
        int coarser = best.f.holds && c + 1 < best.f.ncyc;
        if (coarser && (3 * c > 2 * best.f.ncyc || coarser_tried >= MAX_COARSER))
            continue;
        same = ci > 0 && cd[ci - 1].count == c ? same + 1 : 0;
        if (same >= 3 && cd[ci].tok != sync_tok)
            continue;
        if (!grouped && c > nv / 2 + 1 && cd[ci].tok != sync_tok)
            continue; /* in every other op: a period of one op at most */
        if (grouped && !group_period(&w.tok_at[w.tok_off[cd[ci].tok]], c, &m, &rr))
            continue;
        tried++;
        coarser_tried += coarser;
        size_t k = anchor_occ(&w, cd[ci].tok, m, rr);
        if (k < (at_step ? 2u : 3u))
            continue;
        struct level L = {.tok = cd[ci].tok, .m = m, .r = rr};
        score(&w, k, &L.f);
        if (!L.f.holds || !period_fits(L.f.period, period_ns))
            continue;
        L.at = w.occ[L.f.first];
        if (nlv < MAX_LEVELS)
            lv[nlv++] = L;
        if (!coarser &&
            better_fit(&L.f, L.tok == sync_tok, L.at, &best.f, best.tok == sync_tok, best.at))
            best = L;
    }
    free(cd);
    /* A sync whose cuts agree better (confidence 0.1 higher) than a
     * shorter period's cycles do is where the steps end: that period is a
     * part of the step (a pipeline stage's micro-batch, which its warm-up
     * and drain change). A shorter period that agrees as well is the step
     * (a loss.item() every tenth step logs, it does not end a step). */
    if (sync_tok != UINT32_MAX && best.f.holds && best.tok != sync_tok) {
        size_t k = anchor_occ(&w, sync_tok, 1, 0);
        struct level L = {.tok = sync_tok, .m = 1, .r = 0};
        if (k >= (at_step ? 2u : 3u)) {
            score(&w, k, &L.f);
            if (L.f.holds && period_fits(L.f.period, period_ns) &&
                L.f.good * (1 - L.f.differ) >= best.f.good * (1 - best.f.differ) + 0.1) {
                L.at = w.occ[L.f.first];
                best = L;
            }
        }
    }
    rc = 0;
    if (!best.f.holds)
        goto out;
    /*
     * The step is the level that repeats with the job's synchronisation
     * structure. The best is the shortest period; a level above it (a
     * period 1.5 times as long or more) is the step instead when its
     * cycles carry kinds of that structure (collectives, optimizer, host
     * copies, graph launches) that the best's lack (the best is a layer,
     * the optimizer and the batch's copy come once per step), or when the
     * host's loop pauses between its cycles and not between the best's
     * (layers are launched back to back). Syncs alone do not lift the
     * level: a loss.item() every tenth step logs. Of a level's anchors,
     * the phase is chosen as for the best (better_fit).
     */
    double gmed;
    {
        double *g = malloc(nv * sizeof(*g));
        if (!g) {
            rc = -ENOMEM;
            goto out;
        }
        for (size_t i = 1; i < nv; i++)
            g[i - 1] = (double)(v[i].t - v[i - 1].t);
        gmed = ct_median(g, nv - 1);
        free(g);
        if (gmed < 1000)
            gmed = 1000; /* launches at one host time (a graph's): a µs */
        w.gmed = gmed;
    }
    describe(&w, r, &best, gmed);
    for (;;) {
        size_t pick = SIZE_MAX;
        for (size_t j = 0; j < nlv && pick == SIZE_MAX; j++) {
            struct level *L = &lv[j];
            if (L->f.period < 1.5 * best.f.period || 3 * L->f.ncyc > 2 * best.f.ncyc)
                continue;
            describe(&w, r, L, gmed);
            if ((L->marks & ~best.marks & ~(unsigned)MK_SYNC) ||
                (best.pause < LOOP_PAUSE && L->pause >= LOOP_PAUSE))
                pick = j;
        }
        if (pick == SIZE_MAX)
            break;
        struct level up = lv[pick];
        for (size_t j = 0; j < nlv; j++) { /* its phase */
            struct level *L = &lv[j];
            if (j == pick || L->f.ncyc + 1 < up.f.ncyc || L->f.ncyc > up.f.ncyc + 1 ||
                L->f.period < 0.85 * up.f.period || L->f.period > 1.15 * up.f.period)
                continue;
            if (better_fit(&L->f, L->tok == sync_tok, L->at, &up.f, up.tok == sync_tok, up.at)) {
                describe(&w, r, L, gmed);
                up = *L;
            }
        }
        describe(&w, r, &up, gmed);
        best = up;
    }
    /*
     * How far the cycles are steps. A capture of whole steps whose
     * synchronisation structure shows only at its ends (a prefill's input
     * copy before its 36 layers, the sampled token read back after them)
     * holds one step of repeating layers, unless the host waits for the
     * GPU in every cycle (a benchmark's forward passes after its weights
     * were copied in): no iterations. So does one whose cycles carry none
     * of that structure and no host pause between them. Elsewhere (a trace
     * cut anywhere) such cycles are kept with half the confidence for each
     * missing sign, and the reason.
     */
    unsigned reason = 0;
    double c0 = best.f.good * (1 - best.f.differ);
    /* a host that waits for its GPU in every cycle comes round there too */
    int pause = best.pause >= LOOP_PAUSE || (best.marks & MK_SYNC);
    if (at_step && ((best.edge && !(best.marks & MK_SYNC)) || (!pause && !best.marks))) {
        if (why)
            *why = CT_ITER_WHY_PARTS;
        goto out;
    }
    if (!best.marks)
        c0 *= 0.5, reason |= CT_ITER_WHY_NO_SYNC;
    if (!pause)
        c0 *= 0.5, reason |= CT_ITER_WHY_NO_PAUSE;
    size_t best_tok = best.tok, best_m = best.m, best_r = best.r;
    {
        size_t c = anchor_occ(&w, best_tok, best_m, best_r);
        struct ct_iter *it = malloc((c + 1) * sizeof(*it));
        size_t *b = at_step ? malloc((c + 2) * sizeof(*b)) : NULL;
        if (!it || (at_step && !b)) {
            free(it);
            free(b);
            rc = -ENOMEM;
            goto out;
        }
        size_t shift = at_step ? rotation(&w, c, w.cnt) : 0;
        if (at_step && !shift)
            shift = head_rotation(&w, c);
        size_t nb = at_step ? at_step_starts(&w, nv, c, shift, b) : 0;
        if (at_step && nb) {
            /* every cycle is a step: the job annotated none, but its
             * profiler started and stopped at steps */
            for (size_t k = 0; k < nb; k++) {
                int64_t end = b[k + 1] < nv ? step_start(&w, r, b[k + 1]) : v[nv - 1].t;
                for (size_t i = b[k]; i < b[k + 1]; i++)
                    if (v[i].e > end)
                        end = v[i].e;
                int64_t s0 = step_start(&w, r, b[k]);
                if (k == 0 && r->procs[0]->first_host < s0)
                    s0 = r->procs[0]->first_host; /* the capture began with it */
                it[k] = (struct ct_iter){s0, end, (int64_t)k, 0};
            }
            free(b);
            *out = it;
            *n = nb;
        } else {
            free(b);
            for (size_t k = 0; k < best.f.ncyc; k++) {
                size_t cyc = best.f.first + k;
                size_t a = w.occ[cyc], e = cyc + 1 < c ? w.occ[cyc + 1] : nv;
                int64_t end = e < nv ? step_start(&w, r, e) : v[nv - 1].t;
                for (size_t i = a; i < e; i++) /* its GPU work is part of it */
                    if (v[i].e > end)
                        end = v[i].e;
                it[k] = (struct ct_iter){step_start(&w, r, a), end, (int64_t)k, 0};
            }
            *out = it;
            *n = best.f.ncyc;
        }
    }
    /* two cycles or fewer: too few to tell a step from a part of one */
    if (*n <= 2)
        c0 *= 0.7, reason |= CT_ITER_WHY_FEW;
    *conf = c0;
    if (why)
        *why = reason;
out:
    free(lv);
    free(w.tok_off);
    free(w.tok_at);
    free(w.occ);
    free(w.cnt);
    free(w.seen);
    free(w.mis);
    free(w.tot);
    free(w.lack);
    free(v);
    return rc;
}
