/*
 * Stragglers.
 *
 * Lateness of rank r on a matched collective j: s_{j,r} - median_r' s_{j,r'};
 * its lateness is the median over its collectives. Robust scores, over the
 * ranks: z = (x_r - median x) / max(1.4826 * MAD(x), floor) with floor = 1%
 * of the median step time for lateness and 1% of the median slowness (which
 * is about 1) for slowness; score = max of the two. A rank is flagged when
 * score >= 3.5 and the lateness is persistent: it was late by more than
 * 3.5 scales on at least half of its collectives (slowness needs no
 * persistence test: it is already a median over kernels and iterations).
 * (The pipeline topology and the expected bubble are in bubbles.c.)
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
            const struct ct_nccl_call *o = &job->ranks[r].nccl[i];
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
            const struct ct_nccl_call *o = &job->ranks[r].nccl[i];
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
    rc = 0;
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
