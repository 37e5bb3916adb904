/*
 * The speed of light of each collective: the bus bandwidth its links can
 * carry, from what the traces recorded of the hardware (shim/hw_links.c:
 * a device's active NVLink links, the host's RDMA ports), or the platform
 * table (platforms.h) where the reading is missing; docs/nccl.md, "Speed of
 * light", states the rule. A figure it cannot support is NAN with the
 * reason in the row.
 *
 * A collective whose ranks share one host moves its bytes over NVLink:
 * its bus bandwidth is bounded by the slowest member's NVLink rate in one
 * direction (NCCL's bus bandwidth is per GPU and direction: a ring's
 * all-reduce sends 2(n-1)/n of the size through each GPU's link, the
 * factor busbw already carries). One spanning hosts is bounded by the
 * network: each host's active RDMA rate over the job's GPUs on it (the
 * rail-optimised layout, one NIC per GPU or their share), the slowest
 * host's. NVLS and CollNet reduce in the switch and can pass the link rate:
 * no bound is claimed for them.
 */
#include "decoder/analysis/speed_of_light.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "decoder/analysis/analysis.h"
#include "decoder/analysis/platforms.h"
#include "decoder/read/facts.h"
#include "decoder/read/nccl_acct.h"

/* NVLink GB/s per link and direction by compute capability: NVLink 2
 * (V100), 3 (A100), 4 (H100, H200, GH200) carry 25, NVLink 5 (B200, GB200,
 * B300, GB300) 50 (docs/nccl.md gives NVIDIA's sources). */
static double per_link(const char *cc)
{
    static const struct {
        const char *cc;
        double gbps;
    } t[] = {{"7.0", 25}, {"8.0", 25}, {"9.0", 25}, {"10.0", 50}, {"10.3", 50}};
    for (size_t i = 0; cc && i < sizeof(t) / sizeof(t[0]); i++)
        if (!strcmp(cc, t[i].cc))
            return t[i].gbps;
    return NAN;
}

/* One rank's NVLink bound (GB/s one way) with its basis, or NAN and why. */
struct cap {
    const char *host;
    double nv;
    char basis[96], why[200];
};

static void rank_cap(const struct ct_rank *R, struct cap *c)
{
    const struct ct_trace_facts *f = R->nprocs ? R->procs[0]->facts : NULL;
    c->host = R->host ? R->host : "";
    c->nv = NAN;
    const char *links = ct_facts_value(f, "device.nvlink_links");
    const char *cc = ct_facts_value(f, "device.compute_capability");
    const char *name = ct_facts_value(f, "device.name");
    if (links) {
        long n = strtol(links, NULL, 10);
        double l = per_link(cc);
        if (n <= 0)
            snprintf(c->why, sizeof(c->why),
                     "rank %d's device has no active NVLink (NVML): its traffic on the host goes "
                     "over PCIe, whose rate is not recorded",
                     R->rank);
        else if (!isfinite(l))
            snprintf(c->why, sizeof(c->why),
                     "rank %d: the NVLink rate per link of compute capability %s is not in the "
                     "table",
                     R->rank, cc ? cc : "(unrecorded)");
        else {
            c->nv = (double)n * l;
            snprintf(c->basis, sizeof(c->basis), "%ld NVLink links x %g GB/s (NVML, sm %s)", n, l,
                     cc);
        }
        return;
    }
    const struct ct_platform *p = ct_platform_of(name);
    if (p) {
        c->nv = p->nvlink_gbs / 2;
        snprintf(c->basis, sizeof(c->basis), "%s, %s (platform table)", p->label, p->nvlink);
        return;
    }
    const char *un = ct_facts_value(f, "device.nvlink_unavailable");
    snprintf(c->why, sizeof(c->why),
             "rank %d: no NVLink reading (%s) and its device (%s) is not in the platform table",
             R->rank, un ? un : "NVML not read: health counters off or NVML not loadable",
             name ? name : "unrecorded");
}

/* A host's RDMA GB/s per GPU of the job on it, or NAN and why. */
static double host_nic(const struct ct_job *job, const char *host, char *why, size_t n, char *basis,
                       size_t bn)
{
    const char *gbps = NULL, *un = NULL;
    size_t gpus = 0;
    for (size_t r = 0; r < job->nranks; r++) {
        const struct ct_rank *R = &job->ranks[r];
        if (strcmp(R->host ? R->host : "", host))
            continue;
        gpus++;
        const struct ct_trace_facts *f = R->nprocs ? R->procs[0]->facts : NULL;
        if (!gbps)
            gbps = ct_facts_value(f, "nic_gbps");
        if (!un)
            un = ct_facts_value(f, "nic_unavailable");
    }
    double g = gbps ? strtod(gbps, NULL) : NAN;
    if (!(g > 0) || !gpus) {
        snprintf(why, n, "host %.100s: no RDMA rate recorded (%.150s)", host,
                 un ? un : "no reading: health counters off");
        return NAN;
    }
    snprintf(basis, bn, "%g Gb/s of RDMA ports over %zu GPUs on %.80s (sysfs)", g, gpus, host);
    return g / 8 / (double)gpus;
}

/* Whether the row's ops ran NVLS or CollNet (by NCCL's descriptors). */
static int in_switch(const struct ct_nacct *a, uint64_t corr)
{
    const struct ct_ninfo *i = a ? ct_nacct_info(a, corr) : NULL;
    return i && (!strncasecmp(i->algo, "NVLS", 4) || !strncasecmp(i->algo, "COLLNET", 7));
}

struct row_acc {
    const char *host; /* the first member's; multi when another shows */
    int multi, nvls;
    double nv; /* the slowest member's NVLink bound */
    const struct cap *nv_of;
    const struct cap *why_of; /* a member without one */
};

int ct_speed_of_light(struct ct_report *rep)
{
    const struct ct_job *job = rep->job;
    if (!rep->ncoll)
        return 0;
    size_t nr = job->nranks ? job->nranks : 1;
    struct cap *caps = calloc(nr, sizeof(*caps));
    struct row_acc *acc = calloc(rep->ncoll, sizeof(*acc));
    unsigned char *in = calloc(rep->ncoll * nr, 1); /* row i has rank r: in[i * nr + r] */
    if (!caps || !acc || !in) {
        free(caps);
        free(acc);
        free(in);
        return -ENOMEM;
    }
    for (size_t r = 0; r < job->nranks; r++)
        rank_cap(&job->ranks[r], &caps[r]);
    for (size_t i = 0; i < rep->ncoll; i++)
        acc[i].nv = INFINITY;
    size_t hit = 0;
    for (size_t r = 0; r < job->nranks; r++) {
        const struct ct_rank *R = &job->ranks[r];
        const struct ct_nacct *a = R->nprocs ? R->procs[0]->nacct : NULL;
        for (size_t k = 0; k < R->nnccl; k++) {
            const struct ct_nccl_call *o = &R->nccl[k];
            if (!o->e)
                continue;
            int p2p = o->op == CT_NCCL_OP_SEND || o->op == CT_NCCL_OP_RECV;
            int members = p2p ? 2 : o->nranks; /* the row's ranks, as ct_collectives_table keys */
            const struct ct_coll_row *c = &rep->coll[hit];
            if (c->op != o->op || c->bytes != o->bytes || c->nranks != members) {
                for (hit = 0; hit < rep->ncoll; hit++) {
                    c = &rep->coll[hit];
                    if (c->op == o->op && c->bytes == o->bytes && c->nranks == members)
                        break;
                }
                if (hit == rep->ncoll) {
                    hit = 0;
                    continue;
                }
            }
            struct row_acc *x = &acc[hit];
            in[hit * nr + r] = 1;
            if (!x->host)
                x->host = caps[r].host;
            else if (strcmp(x->host, caps[r].host))
                x->multi = 1;
            x->nvls |= in_switch(a, o->corr);
            if (isfinite(caps[r].nv)) {
                if (caps[r].nv < x->nv) {
                    x->nv = caps[r].nv;
                    x->nv_of = &caps[r];
                }
            } else if (!x->why_of) {
                x->why_of = &caps[r];
            }
        }
    }
    for (size_t i = 0; i < rep->ncoll; i++) {
        struct ct_coll_row *c = &rep->coll[i];
        struct row_acc *x = &acc[i];
        c->sol_gbps = c->sol_pct = NAN;
        c->sol_basis[0] = c->sol_reason[0] = 0;
        if (x->nvls) {
            snprintf(c->sol_reason, sizeof(c->sol_reason),
                     "NVLS or CollNet reduce in the switch: their bus bandwidth is not bounded "
                     "by the link rate");
        } else if (c->nranks < 2) {
            snprintf(c->sol_reason, sizeof(c->sol_reason), "one rank: nothing crosses a link");
        } else if (!x->host) {
            snprintf(c->sol_reason, sizeof(c->sol_reason), "no timed instance");
        } else if (!x->multi) {
            if (x->why_of)
                snprintf(c->sol_reason, sizeof(c->sol_reason), "%s", x->why_of->why);
            else {
                c->sol_gbps = x->nv;
                snprintf(c->sol_basis, sizeof(c->sol_basis), "%s", x->nv_of->basis);
            }
        } else {
            /* across hosts: the slowest host the row's members are on */
            double best = INFINITY;
            for (size_t r = 0; r < job->nranks && !c->sol_reason[0]; r++) {
                if (!in[i * nr + r])
                    continue;
                int seen = 0;
                for (size_t q = 0; q < r && !seen; q++)
                    seen = in[i * nr + q] && !strcmp(caps[q].host, caps[r].host);
                if (seen)
                    continue;
                char basis[160];
                double g = host_nic(job, caps[r].host, c->sol_reason, sizeof(c->sol_reason), basis,
                                    sizeof(basis));
                if (isfinite(g) && g < best) {
                    best = g;
                    snprintf(c->sol_basis, sizeof(c->sol_basis), "%s", basis);
                }
            }
            if (!c->sol_reason[0])
                c->sol_gbps = best;
        }
        if (isfinite(c->sol_gbps)) {
            double pct = 100 * c->busbw / c->sol_gbps;
            /* busbw is measured from the p50 duration, which includes the
             * wait for peers: it can only err low; past the bound by more
             * than the timers' few percent, the bound is what is wrong */
            if (pct > 105) {
                snprintf(c->sol_reason, sizeof(c->sol_reason),
                         "bus bandwidth %.3g GB/s above the %.3g GB/s recorded (%.150s): the link "
                         "reading or table is wrong for this job",
                         c->busbw, c->sol_gbps, c->sol_basis);
                c->sol_gbps = NAN;
                c->sol_basis[0] = 0;
            } else {
                c->sol_pct = fmin(pct, 100);
            }
        }
    }
    free(caps);
    free(acc);
    free(in);
    return 0;
}
