/*
 * What NCCL's own account says about a job's network (decoder/analysis/
 * nccl_links.h, docs/nccl.md), from a built job: the send ProxyOps joined
 * to their ops as observations for the links and the slow-link rule
 * (nccl_slow_links.c), each collective's time split into its own link's
 * transfer and waiting, the network devices' work, v7's kernel phases
 * and user tags.
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
    out->raw_known = 1;
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
            if (a->raw_unknown)
                out->raw_known = 0;
            out->proxy_records += a->npx;
            out->raw_steps += a->raw_steps;
            for (size_t k = 0; k < a->npx; k++)
                out->proxy_steps += a->px[k].steps;
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
