/*
 * Stragglers and pipeline topology.
 *
 * Lateness of rank r on a matched collective j: s_{j,r} - median_r' s_{j,r'};
 * its lateness is the median over its collectives. Robust scores, over the
 * ranks: z = (x_r - median x) / max(1.4826 * MAD(x), floor) with floor = 1%
 * of the median step time for lateness and 1% of the median slowness (which
 * is about 1) for slowness; score = max of the two. A rank is flagged when
 * score >= 3.5 and the lateness is persistent: it was late by more than
 * 3.5 scales on at least half of its collectives (slowness needs no
 * persistence test: it is already a median over kernels and iterations).
 *
 * Pipeline topology: ranks joined by matched Send/Recv form pipelines. When
 * one is a chain of p ranks and every link carries the same number m of
 * sends per iteration in each direction, expected bubble = 100 (p-1)/(m+p-1)
 * (1F1B/GPipe, relative to the iteration); otherwise it is null.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/analysis.h"
#include "decoder/util/keys.h"
#include "decoder/util/stats.h"

#define Z_FLAG 3.5

struct lat {
    uint64_t comm, seq;
    int64_t s;
    uint32_t rank;
};

static int cmp_lat(const void *a, const void *b)
{
    const struct lat *x = a, *y = b;
    if (x->comm != y->comm)
        return x->comm < y->comm ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* cmp_lat's order for ct_sort_by (then rank: built in rank order). */
static uint64_t lat_comm(const void *e)
{
    return ((const struct lat *)e)->comm;
}
static uint64_t lat_seq(const void *e)
{
    return ((const struct lat *)e)->seq;
}
static const ct_key_fn lat_order[] = {lat_comm, lat_seq};

static double robust_z(double x, double med, double mad, double floor)
{
    double scale = 1.4826 * mad;
    if (scale < floor)
        scale = floor;
    return scale > 0 ? (x - med) / scale : 0;
}

static int pipeline_topology(struct ct_report *rep);

int ct_stragglers(struct ct_report *rep)
{
    struct ct_job *job = rep->job;
    size_t n = 0, nr = rep->nr;
    size_t *nl = calloc(nr ? nr : 1, sizeof(*nl));
    int64_t **late = calloc(nr ? nr : 1, sizeof(*late));
    double *x = malloc((nr ? nr : 1) * sizeof(*x));
    struct lat *v = NULL;
    int64_t *tmp = NULL;
    int rc = -ENOMEM;
    if (!nl || !late || !x)
        goto out;
    /* each rank's list is sized by its own matched collectives: the count
     * over all ranks for each would reserve ranks x collectives (tens of GB
     * of address space at 1024 ranks, refused where overcommit is strict) */
    for (size_t r = 0; r < nr; r++) {
        for (size_t i = 0; i < job->ranks[r].nnccl; i++) {
            const struct ct_nop *o = &job->ranks[r].nccl[i];
            nl[r] += o->all_s && o->op != CT_NCCL_OP_SEND && o->op != CT_NCCL_OP_RECV;
        }
        n += nl[r];
        if (!(late[r] = malloc((nl[r] ? nl[r] : 1) * sizeof(int64_t))))
            goto out;
        nl[r] = 0;
    }
    v = malloc((n ? n : 1) * sizeof(*v));
    if (!v)
        goto out;
    n = 0;
    for (size_t r = 0; r < nr; r++)
        for (size_t i = 0; i < job->ranks[r].nnccl; i++) {
            const struct ct_nop *o = &job->ranks[r].nccl[i];
            if (o->all_s && o->op != CT_NCCL_OP_SEND && o->op != CT_NCCL_OP_RECV)
                v[n++] = (struct lat){o->comm, o->seq, o->s, (uint32_t)r};
        }
    if (ct_sort_by(v, n, sizeof(*v), lat_order, 2))
        qsort(v, n, sizeof(*v), cmp_lat);
    /* the median's scratch is one group's starts: a group is a rank's
     * members or more (duplicates), not the job's n */
    size_t widest = 1;
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i; j < n && v[j].comm == v[i].comm && v[j].seq == v[i].seq; j++)
            ;
        widest = j - i > widest ? j - i : widest;
    }
    if (!(tmp = malloc(widest * sizeof(*tmp))))
        goto out;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && v[j].comm == v[i].comm && v[j].seq == v[i].seq)
            j++;
        for (size_t k = i; k < j; k++)
            tmp[k - i] = v[k].s;
        int64_t m = ct_median_i64(tmp, j - i);
        for (size_t k = i; k < j; k++)
            late[v[k].rank][nl[v[k].rank]++] = v[k].s - m;
        i = j;
    }
    for (size_t r = 0; r < nr; r++) {
        /* median without disturbing the order-free list */
        int64_t *c = malloc((nl[r] ? nl[r] : 1) * sizeof(int64_t));
        if (!c)
            goto out;
        memcpy(c, late[r], nl[r] * sizeof(int64_t));
        rep->rr[r].lateness = ct_median_i64(c, nl[r]);
        free(c);
    }
    /* scores */
    double floor_late = 0.01 * rep->step_p50;
    for (size_t r = 0; r < nr; r++)
        x[r] = (double)rep->rr[r].lateness;
    double *y = malloc((nr ? nr : 1) * sizeof(*y));
    if (!y)
        goto out;
    memcpy(y, x, nr * sizeof(double));
    double med_l = ct_median(y, nr);
    for (size_t r = 0; r < nr; r++)
        y[r] = fabs(x[r] - med_l);
    double mad_l = ct_median(y, nr);
    for (size_t r = 0; r < nr; r++)
        y[r] = rep->rr[r].slowness;
    double med_s = ct_median(y, nr);
    for (size_t r = 0; r < nr; r++)
        y[r] = fabs(rep->rr[r].slowness - med_s);
    double mad_s = ct_median(y, nr);
    free(y);
    for (size_t r = 0; r < nr; r++) {
        struct ct_rank_result *rr = &rep->rr[r];
        double zl = robust_z(x[r], med_l, mad_l, floor_late);
        double zs = robust_z(rr->slowness, med_s, mad_s, 0.01 * med_s);
        rr->score = zl > zs ? zl : zs;
        if (!isfinite(rr->score) || nr < 3)
            rr->score = isfinite(rr->score) ? rr->score : 0;
        double scale = 1.4826 * mad_l > floor_late ? 1.4826 * mad_l : floor_late;
        size_t hits = 0;
        for (size_t k = 0; k < nl[r]; k++)
            hits += scale > 0 && (double)late[r][k] - med_l >= Z_FLAG * scale;
        rr->persistence = nl[r] ? (double)hits / (double)nl[r] : 0;
        rr->flagged = (zl >= Z_FLAG && rr->persistence >= 0.5) || zs >= Z_FLAG;
        if (zs >= Z_FLAG && zl < Z_FLAG)
            rr->persistence = 1;
    }
    rc = pipeline_topology(rep);
out:
    if (late)
        for (size_t r = 0; r < nr; r++)
            free(late[r]);
    free(late);
    free(nl);
    free(tmp);
    free(x);
    free(v);
    return rc;
}

/* Global rank of comm rank `cr` in communicator `comm`, -1 if unknown. */
static int global_rank(const struct ct_job *job, uint64_t comm, int32_t cr)
{
    for (size_t r = 0; r < job->nranks; r++)
        for (size_t i = 0; i < job->ranks[r].nnccl; i++)
            if (job->ranks[r].nccl[i].comm == comm) {
                if (job->ranks[r].nccl[i].comm_rank == cr)
                    return (int)r;
                break;
            }
    return -1;
}

static int pipeline_topology(struct ct_report *rep)
{
    struct ct_job *job = rep->job;
    size_t nr = rep->nr;
    /* sends[r][peer] per iteration: counted from matched sends */
    int *peer_a = malloc((nr ? nr : 1) * sizeof(int)),
        *peer_b = malloc((nr ? nr : 1) * sizeof(int));
    double *m_a = calloc(nr ? nr : 1, sizeof(double)), *m_b = calloc(nr ? nr : 1, sizeof(double));
    int *deg = calloc(nr ? nr : 1, sizeof(int)), *bad = calloc(nr ? nr : 1, sizeof(int));
    int rc = -ENOMEM;
    if (!peer_a || !peer_b || !m_a || !m_b || !deg || !bad)
        goto out;
    for (size_t r = 0; r < nr; r++) {
        peer_a[r] = peer_b[r] = -1;
        struct ct_rank *R = &job->ranks[r];
        uint64_t last_comm = 0;
        int last_peer = -2, last_g = -1;
        uint64_t cnt[2] = {0, 0};
        const struct ct_rank_result *x = &rep->rr[r];
        size_t at = 0; /* NCCL ops come by host start, as the iterations do */
        /* per iteration, so that the median (what every whole step has)
         * is the micro-batch count: a step whose peer's capture window
         * closed first has sends that match nothing */
        double *per = calloc(2 * (x->niters ? x->niters : 1), sizeof(*per));
        if (!per)
            goto out;
        for (size_t i = 0; i < R->nnccl; i++) {
            const struct ct_nop *o = &R->nccl[i];
            if (o->op != CT_NCCL_OP_SEND || !o->all_s)
                continue;
            /* micro-batches per iteration count the sends inside one: those
             * of a step a capture window cut, or before the first step,
             * would make the count no whole number */
            while (at < x->niters && x->iters[at].e <= o->host_s)
                at++;
            if (x->niters && (at == x->niters || o->host_s < x->iters[at].s))
                continue;
            int g;
            if (o->comm == last_comm && o->peer == last_peer)
                g = last_g;
            else
                g = global_rank(job, o->comm, o->peer);
            last_comm = o->comm, last_peer = o->peer, last_g = g;
            if (g < 0)
                continue;
            size_t slot = x->niters ? at : 0;
            if (peer_a[r] < 0 || peer_a[r] == g)
                peer_a[r] = g, cnt[0]++, per[2 * slot]++;
            else if (peer_b[r] < 0 || peer_b[r] == g)
                peer_b[r] = g, cnt[1]++, per[2 * slot + 1]++;
            else
                bad[r] = 1; /* more than two neighbours: not a chain */
        }
        if (x->niters) {
            double *va = malloc(2 * x->niters * sizeof(*va));
            if (!va) {
                free(per);
                goto out;
            }
            for (size_t k = 0; k < x->niters; k++)
                va[k] = per[2 * k], va[x->niters + k] = per[2 * k + 1];
            m_a[r] = ct_median(va, x->niters);
            m_b[r] = ct_median(va + x->niters, x->niters);
            free(va);
        } else {
            m_a[r] = (double)cnt[0];
            m_b[r] = (double)cnt[1];
        }
        free(per);
        deg[r] = (peer_a[r] >= 0) + (peer_b[r] >= 0);
    }
    /* components by walking neighbours */
    for (size_t r = 0; r < nr; r++) {
        if (!deg[r] || rep->rr[r].pp_stages)
            continue;
        int *comp = malloc(nr * sizeof(*comp)); /* a component: at most every rank */
        if (!comp)
            goto out;
        size_t nc = 0, head = 0;
        comp[nc++] = (int)r;
        rep->rr[r].pp_stages = -1;
        int chain = 1;
        double m = m_a[r];
        while (head < nc) {
            int x = comp[head++];
            if (bad[x] || deg[x] > 2)
                chain = 0;
            if (fabs(m_a[x] - m) > 1e-9 || (peer_b[x] >= 0 && fabs(m_b[x] - m) > 1e-9))
                chain = 0;
            int nb[2] = {peer_a[x], peer_b[x]};
            for (int k = 0; k < 2; k++)
                if (nb[k] >= 0 && rep->rr[nb[k]].pp_stages == 0) {
                    rep->rr[nb[k]].pp_stages = -1;
                    comp[nc++] = nb[k];
                }
        }
        size_t ends = 0;
        for (size_t k = 0; k < nc; k++)
            ends += deg[comp[k]] == 1;
        if (nc < 2 || (nc > 2 && ends != 2))
            chain = 0;
        int mi = (int)(m + 0.5);
        if (fabs(m - mi) > 1e-9 || mi < 1)
            chain = 0;
        for (size_t k = 0; k < nc; k++) {
            struct ct_rank_result *rr = &rep->rr[comp[k]];
            rr->pp_stages = (int)nc;
            rr->pp_microbatches = chain ? mi : 0;
            rr->expected_bubble_pct =
                chain ? 100.0 * (double)(nc - 1) / (double)(mi + (int)nc - 1) : -1;
        }
        free(comp);
    }
    for (size_t r = 0; r < nr; r++)
        if (rep->rr[r].pp_stages < 0)
            rep->rr[r].pp_stages = 0;
    rc = 0;
out:
    free(peer_a);
    free(peer_b);
    free(m_a);
    free(m_b);
    free(deg);
    free(bad);
    return rc;
}
