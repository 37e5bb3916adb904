/*
 * `cutrace diagnose`'s slow_link check (docs/nccl.md): a network link whose
 * achieved bandwidth, from NCCL's proxy steps, is below its communicator's
 * other links' (decoder/analysis/nccl_links.h states the rule). The fix is
 * the link at its peers' bandwidth: each (op, size) it carried has its
 * transfer scaled by what that leaves of it, which the replay turns into
 * the step's drop; the formula is the link's saved op time per iteration.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "decoder/analysis/nccl_choices.h"
#include "decoder/analysis/nccl_links.h"
#include "decoder/compare/diagnose_int.h"
#include "decoder/util/names.h"

/* A rank of a group's links, once (two links through one rank name it
 * twice). */
static void rank_once(struct ct_finding *f, int r)
{
    for (size_t i = 0; i < f->nranks; i++)
        if (f->ranks[i] == r)
            return;
    ct_dg_rank_add(f, r);
}

void ct_dg_check_links(struct ctx *c)
{
    const struct ct_report *rep = c->rep;
    const struct ct_nlinks *L = rep->nlinks;
    if (!L || !L->nl) {
        int coll = 0;
        for (size_t i = 0; i < rep->ncoll; i++)
            coll |= rep->coll[i].op != CT_NCCL_OP_SEND && rep->coll[i].op != CT_NCCL_OP_RECV;
        if (coll)
            ct_dg_insufficient(c, CT_FK_SLOW_LINK,
                               "no NCCL proxy-step records (NCCL >= 2.25 under `cutrace run`, "
                               "network transports)");
        return;
    }
    if (L->undecided && !L->nslow)
        ct_dg_insufficient(c, CT_FK_SLOW_LINK,
                           "%zu link(s) below their peers over the job, but in fewer than 4 "
                           "collective instances shared with them: too few to tell a slow link "
                           "from proxy timing noise",
                           L->undecided);
    /* one finding per communicator's slow links: a ring is paced by its
     * slowest, so they are fixed together (nccl_links.h) */
    for (size_t k = 0; k < L->nslow; k++) {
        const struct ct_nslow *s = &L->slow[k];
        if (s->group != k)
            continue;
        double per_it = rep->iterations ? s->group_saving_ns / (double)rep->iterations : 0;
        struct ct_finding *f = ct_dg_add(c, CT_FK_SLOW_LINK, per_it, 0.9);
        if (!f)
            continue;
        char ev[320], names[160] = "";
        size_t used = 0;
        double ops = 0;
        for (size_t j = k; j < k + s->ngroup; j++) {
            const struct ct_nlink *l = &L->l[L->slow[j].link];
            if (l->src_rank >= 0)
                rank_once(f, l->src_rank);
            if (l->dst_rank >= 0)
                rank_once(f, l->dst_rank);
            int w = snprintf(names + used, sizeof(names) - used, "%s%d -> %d", j > k ? ", " : "",
                             l->src_rank, l->dst_rank);
            used = w > 0 && used + (size_t)w < sizeof(names) ? used + (size_t)w : used;
            ops = fmax(ops, (double)l->ops);
        }
        const struct ct_nlink *l = &L->l[s->link];
        ct_nlinks_group_evidence(ev, sizeof(ev), L, k);
        ct_dg_evs(f, "link", "%s", names);
        ct_dg_ev(f, "gbps", l->gbps);
        ct_dg_ev(f, "peers_lo_gbps", s->peers_lo);
        ct_dg_ev(f, "peers_hi_gbps", s->peers_hi);
        ct_dg_ev(f, "peers_median_gbps", s->peers_med);
        ct_dg_ev(f, "share_pct", s->group_share_pct); /* NaN: none (null, "-") */
        ct_dg_ev(f, "ops", ops);
        if (s->ngroup > 1) {
            ct_dg_ev(f, "slow_links", (double)s->ngroup);
            if (s->common_rank >= 0)
                ct_dg_ev(f, "common_rank", (double)s->common_rank);
        }
        snprintf(f->whatif, sizeof(f->whatif), "%s", s->group_whatif);
        snprintf(f->summary, sizeof(f->summary), "%s", ev);
    }
}

/* The sizes where NCCL's choice of algorithm or protocol cost bandwidth
 * (decoder/analysis/nccl_choices.h states the rule). The fix is the size
 * at its smaller neighbour's bus bandwidth: its transfer scaled by the
 * ratio, replayed; the formula is its instances' time saved. */
void ct_dg_check_choices(struct ctx *c)
{
    const struct ct_report *rep = c->rep;
    struct ct_nchoice_dip *d;
    size_t n;
    int known;
    if (ct_nccl_choice_dips(rep, &d, &n, &known))
        return;
    if (!known) {
        int coll = 0;
        for (size_t i = 0; i < rep->ncoll; i++)
            coll |= rep->coll[i].op != CT_NCCL_OP_SEND && rep->coll[i].op != CT_NCCL_OP_RECV;
        if (coll)
            ct_dg_insufficient(c, CT_FK_NCCL_CHOICE,
                               "no NCCL profiler descriptors (NCCL >= 2.23 under `cutrace "
                               "run`): the algorithm and protocol per size are not known");
    }
    for (size_t k = 0; k < n; k++) {
        const struct ct_coll_row *r = &rep->coll[d[k].row], *p = &rep->coll[d[k].prev];
        double per_it = rep->iterations ? d[k].saving_ns / (double)rep->iterations : 0;
        /* the dip and its cause are measured together, the cause inferred
         * from the choice changing where the bandwidth fell */
        struct ct_finding *f = ct_dg_add(c, CT_FK_NCCL_CHOICE, per_it, 0.8);
        if (!f)
            continue;
        for (size_t q = 0; q < rep->nr; q++) /* every member runs it */
            ct_dg_rank_add(f, rep->rr[q].rank->rank);
        const char *op = ct_name_nccl_op((uint64_t)r->op);
        ct_dg_ev(f, "bytes", (double)r->bytes);
        ct_dg_evs(f, "choice", "%s", d[k].choice);
        ct_dg_ev(f, "busbw_gbps", r->busbw);
        ct_dg_ev(f, "smaller_bytes", (double)p->bytes);
        ct_dg_evs(f, "smaller_choice", "%s", d[k].prev_choice);
        ct_dg_ev(f, "smaller_busbw_gbps", p->busbw);
        snprintf(f->whatif, sizeof(f->whatif), "op=%s:%llu=%.6f", op, (unsigned long long)r->bytes,
                 r->busbw / p->busbw);
        snprintf(f->summary, sizeof(f->summary),
                 "%s of %llu B ran %s at %.3g GB/s bus bandwidth, below the %.3g GB/s of the "
                 "smaller %llu B under %s: NCCL's choice for this size (NCCL_PROTO, NCCL_ALGO "
                 "or a tuner)",
                 op, (unsigned long long)r->bytes, d[k].choice, r->busbw, p->busbw,
                 (unsigned long long)p->bytes, d[k].prev_choice);
    }
    free(d);
}
