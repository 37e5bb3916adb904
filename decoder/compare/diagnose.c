/*
 * `cutrace diagnose`'s checks (rules and thresholds in docs/diff.md). Each
 * check reads the report (and, for copies, the traces' copy facts), and
 * either adds a finding with the evidence it used, records why the
 * evidence was insufficient, or adds nothing (checked, not found). Savings
 * are µs per iteration; a finding needs saving >= min_saving x step time.
 * Never prints.
 */
#include "decoder/compare/diagnose_int.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/hang.h"
#include "decoder/analysis/health.h"
#include "decoder/read/facts.h"
#include "decoder/util/intervals.h"
#include "decoder/util/names.h"
#include "decoder/util/stats.h"
#include "decoder/read/job.h"

#define HOST_NORMAL  1.02 /* host straggler: kernels within 2 % of peers */
#define SI_FLAG      1.10 /* stage imbalance: slowest stage >= 10 % above the mean */
#define BUBBLE_PTS   10.0 /* excess bubble: >= 10 % of the step (noise: docs/diff.md) */
#define BW_FRACTION  0.5  /* slow collective: < 50 % of the reference bandwidth */
#define PAGEABLE_R   0.8  /* an Async copy whose host call lasted >= 80 % of its transfer */
#define PAGEABLE_MIN 5000 /* ... of at least 5 us (ns) */

static int check_exposed(struct ctx *c)
{
    const struct ct_report *rep = c->rep;
    double *v = calloc(rep->nr ? rep->nr : 1, sizeof(double));
    if (!v)
        return -ENOMEM;
    int64_t *et = calloc(rep->nr ? rep->nr : 1, sizeof(*et)); /* each rank's, once */
    if (!et) {
        free(v);
        return -ENOMEM;
    }
    double measured = 0, comm = 0;
    size_t n = 0;
    for (size_t r = 0; r < rep->nr; r++) {
        const struct ct_rank_result *x = &rep->rr[r];
        if (ct_exposed_transfer(x->rank, &et[r])) {
            free(v);
            free(et);
            return -ENOMEM;
        }
        if (!x->niters)
            continue;
        v[n++] = ct_dg_per_iter(x, et[r]);
        measured += ct_dg_per_iter(x, x->exposed_comm - x->cls_exposed[CT_CL_PP]);
        comm += ct_dg_per_iter(x, x->comm - x->cls_len[CT_CL_PP]);
    }
    double saving = n ? ct_median(v, n) : 0;
    struct ct_finding *f = ct_dg_add(c, CT_FK_EXPOSED_COMM, saving, 1);
    if (f) {
        for (size_t r = 0; r < rep->nr; r++)
            if (ct_dg_per_iter(&rep->rr[r], et[r]) >= c->o->min_saving * c->step)
                ct_dg_rank_add(f, rep->rr[r].rank->rank);
        ct_dg_ev(f, "exposed_comm_us_per_iteration", measured / (double)n / 1e3);
        ct_dg_ev(f, "exposed_transfer_us_per_iteration", saving / 1e3);
        ct_dg_ev(f, "comm_us_per_iteration", comm / (double)n / 1e3);
        ct_dg_ev(f, "share_of_step", saving / c->step);
        /* hidden entirely: no collective's transfer left on the path */
        unsigned seen = 0;
        size_t used = 0;
        for (size_t i = 0; i < rep->ncoll && used < sizeof(f->whatif) - 32; i++) {
            int op = rep->coll[i].op;
            if (op == CT_NCCL_OP_SEND || op == CT_NCCL_OP_RECV || op >= 32 || (seen >> op & 1))
                continue;
            seen |= 1u << op;
            used += (size_t)snprintf(f->whatif + used, sizeof(f->whatif) - used, "%sop=%s=0",
                                     used ? " " : "", ct_name_nccl_op((uint64_t)op));
        }
        snprintf(f->summary, sizeof(f->summary),
                 "%.1f us per iteration of communication transfer is not hidden under compute "
                 "(%.1f%% of the step), even with every peer on time",
                 saving / 1e3, 100 * saving / c->step);
    }
    free(v);
    free(et);
    return 0;
}

/* ------------------------------------------------ slow collective */

static void check_slow_collective(struct ctx *c)
{
    const struct ct_report *rep = c->rep;
    int any_ref = 0;
    for (size_t i = 0; i < rep->ncoll; i++) {
        const struct ct_coll_row *a = &rep->coll[i];
        if (a->op == CT_NCCL_OP_SEND || a->op == CT_NCCL_OP_RECV || a->p50 <= 0)
            continue;
        double tr = a->matched && a->transfer_p50 > 0 ? a->transfer_p50 : a->p50;
        double bw = a->busbw * a->p50 / tr; /* bus bandwidth of the transfer part */
        /* reference: the best transfer bandwidth of the same op at a size
         * no larger (bandwidth grows with message size) */
        double ref = 0;
        uint64_t ref_bytes = 0;
        for (size_t j = 0; j < rep->ncoll; j++) {
            const struct ct_coll_row *b = &rep->coll[j];
            if (j == i || b->op != a->op || b->lib != a->lib || b->bytes > a->bytes ||
                b->p50 <= 0 || b->nranks != a->nranks)
                continue;
            any_ref = 1;
            double tb = b->matched && b->transfer_p50 > 0 ? b->transfer_p50 : b->p50;
            double bb = b->busbw * b->p50 / tb;
            if (bb > ref) {
                ref = bb;
                ref_bytes = b->bytes;
            }
        }
        if (ref <= 0 || bw >= BW_FRACTION * ref)
            continue;
        double per_it = rep->iterations && a->nranks
                            ? (double)a->count / (double)rep->nr / (double)rep->iterations
                            : 0;
        double saving = per_it * tr * (1 - bw / ref);
        struct ct_finding *f = ct_dg_add(c, CT_FK_SLOW_COLLECTIVE, saving, 0.8);
        if (!f)
            continue;
        for (size_t r = 0; r < rep->nr; r++)
            ct_dg_rank_add(f, rep->rr[r].rank->rank);
        const char *op = ct_name_nccl_op((uint64_t)a->op);
        ct_dg_evs(f, "collective", "%s%s %llu bytes over %d ranks",
                  a->lib == CT_LIB_NVSHMEM ? "nvshmem:" : "", op, (unsigned long long)a->bytes,
                  a->nranks);
        ct_dg_ev(f, "transfer_p50_us", tr / 1e3);
        ct_dg_ev(f, "busbw_gbps", bw);
        ct_dg_ev(f, "reference_busbw_gbps", ref);
        ct_dg_ev(f, "reference_bytes", (double)ref_bytes);
        ct_dg_ev(f, "per_iteration", per_it);
        snprintf(f->whatif, sizeof(f->whatif), "op=%s:%llu=%.6g", op, (unsigned long long)a->bytes,
                 bw / ref);
        snprintf(f->summary, sizeof(f->summary),
                 "%s of %llu bytes moves at %.2f GB/s bus bandwidth, %.0f%% of the %.2f GB/s the "
                 "same op reached at %llu bytes",
                 op, (unsigned long long)a->bytes, bw, 100 * bw / ref, ref,
                 (unsigned long long)ref_bytes);
    }
    int colls = 0;
    for (size_t i = 0; i < rep->ncoll; i++)
        colls |= rep->coll[i].op != CT_NCCL_OP_SEND && rep->coll[i].op != CT_NCCL_OP_RECV;
    if (colls && !any_ref)
        ct_dg_insufficient(c, CT_FK_SLOW_COLLECTIVE,
                           "every collective op runs at one message size: no bandwidth to compare "
                           "with (a faster smaller message of the same op)");
}

/* ------------------------------------------------ stragglers */

static int check_stragglers(struct ctx *c)
{
    const struct ct_report *rep = c->rep;
    if (rep->nr < 3) {
        if (rep->nr == 2)
            for (int k = CT_FK_COMPUTE_STRAGGLER; k <= CT_FK_HOST_STRAGGLER; k++)
                ct_dg_insufficient(c, k,
                                   "2 ranks: a slow rank cannot be told from its peer "
                                   "(3 or more needed)");
        return 0;
    }
    double *sl = malloc(rep->nr * sizeof(double)), *cp = malloc(rep->nr * sizeof(double));
    if (!sl || !cp) {
        free(sl);
        free(cp);
        return -ENOMEM;
    }
    for (size_t r = 0; r < rep->nr; r++) {
        sl[r] = rep->rr[r].slowness;
        cp[r] = ct_dg_per_iter(&rep->rr[r], rep->rr[r].compute);
    }
    double msl = ct_median(sl, rep->nr), mcp = ct_median(cp, rep->nr);
    for (size_t r = 0; r < rep->nr; r++) {
        const struct ct_rank_result *x = &rep->rr[r];
        double comp = ct_dg_per_iter(x, x->compute);
        if (x->slowness >= SLOW_FACTOR * msl && x->flagged && comp > mcp) {
            struct ct_finding *f = ct_dg_add(c, CT_FK_COMPUTE_STRAGGLER, comp - mcp, 1);
            if (!f)
                continue;
            ct_dg_rank_add(f, x->rank->rank);
            ct_dg_ev(f, "slowness", x->slowness);
            ct_dg_ev(f, "peers_slowness", msl);
            ct_dg_ev(f, "compute_us_per_iteration", comp / 1e3);
            ct_dg_ev(f, "peers_compute_us_per_iteration", mcp / 1e3);
            ct_dg_ev(f, "score", x->score);
            snprintf(f->whatif, sizeof(f->whatif), "rank=%d=%.6g", x->rank->rank,
                     msl / x->slowness);
            snprintf(f->summary, sizeof(f->summary),
                     "rank %d runs the same kernels x%.3f slower than its peers: %.1f us more "
                     "compute per iteration, which the others wait for",
                     x->rank->rank, x->slowness / (msl > 0 ? msl : 1), (comp - mcp) / 1e3);
        } else if (x->flagged && x->slowness < HOST_NORMAL * msl && x->lateness > 0) {
            struct ct_finding *f = ct_dg_add(c, CT_FK_HOST_STRAGGLER, (double)x->lateness, 0.9);
            if (!f)
                continue;
            ct_dg_rank_add(f, x->rank->rank);
            ct_dg_ev(f, "lateness_us", (double)x->lateness / 1e3);
            ct_dg_ev(f, "persistence", x->persistence);
            ct_dg_ev(f, "slowness", x->slowness);
            ct_dg_ev(f, "score", x->score);
            ct_dg_ev(f, "unexplained_idle_us_per_iteration",
                     ct_dg_per_iter(x, x->at.unexplained) / 1e3);
            snprintf(f->summary, sizeof(f->summary),
                     "rank %d reaches its collectives %.1f us after its peers (on %.0f%% of them) "
                     "while its kernels run at normal speed: its host is late",
                     x->rank->rank, (double)x->lateness / 1e3, 100 * x->persistence);
        }
    }
    free(sl);
    free(cp);
    return 0;
}

/* ------------------------------------------------ pipeline */

/*
 * Excess bubble. The report's per-iteration bubble of a stage is measured in
 * its host iteration window, so it also holds the time before the pipeline
 * starts (the first stage's host waking up and launching) and after it ends
 * (waiting for the last stage and for the host to wake): host boundary
 * noise, milliseconds on a loaded machine, that no schedule change removes.
 * So the check measures each iteration on the pipeline's span: from the
 * first compute start of that iteration on any stage to the last compute
 * end on any stage (stages matched by iteration index). In the span a stage
 * waits for everything that is not its own work (compute, memory, non-
 * pipeline communication): pipeline waits, and GPU idle while its host is
 * held up by a peer or by itself. A plain GPipe/1F1B stage waits (p-1)/m of
 * its compute, E/(100-E) with E the expected share; what the slowest
 * stage's extra compute explains (max - its own compute per iteration: in
 * steady state every faster stage waits that long for the slowest) is stage
 * imbalance, which its own check reports. The rest is the excess. Per stage
 * the least excess over the iterations counts (the first left out when
 * there are 3 or more: one-off costs): a schedule problem is in every
 * iteration, a host preempted for a while (an overloaded machine) holds up
 * only some.
 */
static int check_excess_bubble(struct ctx *c, double max)
{
    const struct ct_report *rep = c->rep;
    size_t nr = rep->nr, unknown = 0, np = 0;
    struct ct_iter_extent **it = calloc(nr ? nr : 1, sizeof(*it));
    double *res = calloc(nr ? nr : 1, sizeof(double)), *spn = calloc(nr ? nr : 1, sizeof(double));
    double *srt = calloc(nr ? nr : 1, sizeof(double)), *v = NULL;
    int *rid = calloc(nr ? nr : 1, sizeof(int));
    size_t vmax = 0;
    int rc = it && res && spn && srt && rid ? 0 : -ENOMEM;
    for (size_t r = 0; r < nr && !rc; r++) {
        const struct ct_rank_result *x = &rep->rr[r];
        if (x->bubble_pct < 0 || !x->niters)
            continue;
        if (x->expected_bubble_pct < 0 || x->expected_bubble_pct >= 100) {
            unknown++;
            continue;
        }
        if ((rc = ct_rank_open(x->rank)))
            break;
        if (!(it[r] = ct_compute_extents(x)))
            rc = -ENOMEM;
        ct_rank_close(x->rank);
        vmax = x->niters > vmax ? x->niters : vmax;
    }
    if (!rc && !(v = malloc((vmax ? vmax : 1) * sizeof(double))))
        rc = -ENOMEM;
    double bsum = 0, esum = 0, isum = 0, worst_idle = -1;
    int worst_rank = -1;
    for (size_t r = 0; r < nr && !rc && !unknown; r++) {
        const struct ct_rank_result *x = &rep->rr[r];
        if (!it[r])
            continue;
        struct ct_ivset own = {0};
        if ((rc = ct_rank_open(x->rank)))
            break;
        if ((rc = ct_own_work(x->rank, &own))) {
            ct_rank_close(x->rank);
            break;
        }
        double q = x->expected_bubble_pct / (100 - x->expected_bubble_pct);
        double explained = max - ct_dg_per_iter(x, x->compute), spans = 0;
        size_t n = 0;
        for (size_t k = x->niters >= 3 ? 1 : 0; k < x->niters; k++) {
            int64_t ss = INT64_MAX, se = INT64_MIN;
            for (size_t o = 0; o < nr; o++) {
                const struct ct_iter_extent *w =
                    it[o] ? ct_iter_extent_find(it[o], rep->rr[o].niters, it[r][k].index) : NULL;
                if (w && w->cs < w->ce) {
                    ss = w->cs < ss ? w->cs : ss;
                    se = w->ce > se ? w->ce : se;
                }
            }
            if (ss >= se)
                continue;
            double wait = (double)(se - ss) - (double)ct_ivset_len_in(&own, ss, se);
            double comp = (double)ct_ivset_len_in(&x->rank->cls[CT_CL_COMPUTE], ss, se);
            v[n++] = wait - q * comp - explained;
            spans += (double)(se - ss);
        }
        ct_ivset_free(&own);
        ct_rank_close(x->rank);
        if (!n)
            continue;
        double least = v[0];
        for (size_t k = 1; k < n; k++)
            least = v[k] < least ? v[k] : least;
        res[np] = least;
        spn[np] = spans / (double)n;
        rid[np] = x->rank->rank;
        np++;
        bsum += x->bubble_pct;
        esum += x->expected_bubble_pct;
        isum += explained;
        /* the stage whose GPU idles most outside pipeline waits: where a
         * host stall between micro-batches sits */
        double other = ct_dg_per_iter(x, x->idle - x->at.bubble_idle);
        if (other > worst_idle) {
            worst_idle = other;
            worst_rank = x->rank->rank;
        }
    }
    if (!rc && unknown) {
        ct_dg_insufficient(c, CT_FK_EXCESS_BUBBLE,
                           "pipeline schedule not recognised (not a plain GPipe/1F1B chain): no "
                           "expected bubble to compare with");
    } else if (!rc && np) {
        memcpy(srt, res, np * sizeof(double)); /* ct_median may reorder */
        double saving = ct_median(srt, np), span = ct_median(spn, np);
        double flag = BUBBLE_PTS / 100 * c->step;
        struct ct_finding *f =
            saving >= flag ? ct_dg_add(c, CT_FK_EXCESS_BUBBLE, saving, 0.9) : NULL;
        if (f) {
            for (size_t k = 0; k < np; k++)
                if (res[k] >= flag)
                    ct_dg_rank_add(f, rid[k]);
            ct_dg_ev(f, "bubble_pct", bsum / (double)np);
            ct_dg_ev(f, "expected_bubble_pct", esum / (double)np);
            ct_dg_ev(f, "excess_us_per_iteration", saving / 1e3);
            ct_dg_ev(f, "excess_pct_of_step", 100 * saving / c->step);
            ct_dg_ev(f, "threshold_pct_of_step", BUBBLE_PTS);
            ct_dg_ev(f, "pipeline_span_us", span / 1e3);
            ct_dg_ev(f, "explained_by_stage_imbalance_us", isum / (double)np / 1e3);
            ct_dg_ev(f, "most_idle_outside_bubble_rank", worst_rank);
            ct_dg_ev(f, "most_idle_outside_bubble_us_per_iteration", worst_idle / 1e3);
            snprintf(f->summary, sizeof(f->summary),
                     "pipeline stages wait %.1f us per iteration (%.1f%% of the step) beyond the "
                     "schedule's share of %.1f%% and beyond what stage imbalance explains; rank "
                     "%d idles most outside pipeline waits (%.1f us per iteration)",
                     saving / 1e3, 100 * saving / c->step, esum / (double)np, worst_rank,
                     worst_idle / 1e3);
        }
    }
    for (size_t r = 0; it && r < nr; r++)
        free(it[r]);
    free(it);
    free(res);
    free(spn);
    free(srt);
    free(rid);
    free(v);
    return rc;
}

static int check_pipeline(struct ctx *c)
{
    const struct ct_report *rep = c->rep;
    size_t np = 0, imax = 0;
    double sum = 0, max = -1;
    for (size_t r = 0; r < rep->nr; r++) {
        const struct ct_rank_result *x = &rep->rr[r];
        if (x->bubble_pct < 0 || !x->niters)
            continue;
        double comp = ct_dg_per_iter(x, x->compute);
        sum += comp;
        np++;
        if (comp > max) {
            max = comp;
            imax = r;
        }
    }
    if (np < 2)
        return 0;
    double mean = sum / (double)np, si = mean > 0 ? max / mean : 1;
    if (si >= SI_FLAG) {
        struct ct_finding *f = ct_dg_add(c, CT_FK_STAGE_IMBALANCE, c->step * (1 - mean / max), 1);
        if (f) {
            ct_dg_rank_add(f, rep->rr[imax].rank->rank);
            ct_dg_ev(f, "stage_imbalance", si);
            ct_dg_ev(f, "slowest_stage_compute_us_per_iteration", max / 1e3);
            ct_dg_ev(f, "mean_stage_compute_us_per_iteration", mean / 1e3);
            ct_dg_ev(f, "stages", (double)np);
            snprintf(f->summary, sizeof(f->summary),
                     "pipeline stage on rank %d computes %.1f%% more than the mean stage: every "
                     "other stage waits for it",
                     rep->rr[imax].rank->rank, 100 * (si - 1));
        }
    }
    return check_excess_bubble(c, max);
}

/* ------------------------------------------------ idle attribution */

static int64_t idle_class(const struct ct_attribution *a, int kind)
{
    switch (kind) {
    case CT_FK_DATA_STALL: return a->data_stall;
    case CT_FK_CKPT_STALL: return a->checkpoint_stall;
    case CT_FK_LAUNCH_BOUND: return a->launch_overhead;
    default: return a->sync_drain;
    }
}

/* The share of a rank's launches, copies and memsets that have no GPU
 * interval (event pairs capped, records lost): above 5 % its GPU-idle time
 * and its split are not known, and no finding rests on them (from 1 % to
 * 5 % they lower its findings' confidence: ct_dg_coverage). */
static double untimed_share(const struct ct_rank *r)
{
    return ct_rank_untimed_share(r);
}

static void check_idle(struct ctx *c)
{
    const struct ct_report *rep = c->rep;
    for (int kind = CT_FK_DATA_STALL; kind <= CT_FK_SYNC_DRAIN; kind++) {
        /* the median rank: a stall on one rank alone makes it late for its
         * peers, which the host-straggler check reports */
        double *v = malloc(2 * (rep->nr ? rep->nr : 1) * sizeof(*v)), *w = v + rep->nr;
        if (!v)
            return; /* out of memory: these checks do not run */
        size_t n = 0;
        size_t withheld = 0, untimed = 0;
        double worst = 0;
        for (size_t r = 0; r < rep->nr; r++) {
            const struct ct_rank_result *x = &rep->rr[r];
            if (!x->niters)
                continue;
            double u = untimed_share(x->rank);
            if (u > 0.05) {
                untimed++;
                worst = u > worst ? u : worst;
                continue;
            }
            if (kind == CT_FK_CKPT_STALL && ct_figure_unavailable(x, "checkpoint_stall_us")) {
                withheld++; /* capture windows that held no checkpoint */
                continue;
            }
            v[n] = ct_dg_per_iter(x, idle_class(&x->at, kind));
            w[n++] = ct_dg_per_iter(x, x->idle);
        }
        double best = n ? ct_median(v, n) : 0, idle = n ? ct_median(w, n) : 0;
        free(v);
        if (!n && withheld)
            ct_dg_insufficient(c, kind,
                               "checkpoints between capture windows are not recorded, and no "
                               "window held one");
        else if (!n && untimed)
            ct_dg_insufficient(
                c, kind,
                "%.0f%% of the GPU ops have no GPU time (coverage untimed_ops: event "
                "pairs capped at 512 in flight per stream, or records lost): the "
                "GPU-idle time and its split are not known",
                100 * worst);
        if (!n)
            continue;
        if (kind == CT_FK_LAUNCH_BOUND && best < 0.5 * idle)
            continue; /* launch gaps are not what the GPU mostly waits for */
        struct ct_finding *f = ct_dg_add(c, kind, best, 0.9);
        if (!f)
            continue;
        for (size_t r = 0; r < rep->nr; r++) {
            const struct ct_attribution *a = &rep->rr[r].at;
            int64_t own = kind == CT_FK_DATA_STALL     ? a->data_stall
                          : kind == CT_FK_CKPT_STALL   ? a->checkpoint_stall
                          : kind == CT_FK_LAUNCH_BOUND ? a->launch_overhead
                                                       : a->sync_drain;
            if (ct_dg_per_iter(&rep->rr[r], own) >= c->o->min_saving * c->step)
                ct_dg_rank_add(f, rep->rr[r].rank->rank);
        }
        ct_dg_ev(f, "us_per_iteration", best / 1e3);
        ct_dg_ev(f, "share_of_step", best / c->step);
        ct_dg_ev(f, "gpu_idle_us_per_iteration", idle / 1e3);
        if (kind == CT_FK_DATA_STALL || kind == CT_FK_CKPT_STALL) /* an instant loader, writer */
            snprintf(f->whatif, sizeof(f->whatif), "%s=0",
                     kind == CT_FK_DATA_STALL ? "data" : "ckpt");
        const char *what = "";
        switch (kind) {
        case CT_FK_DATA_STALL:
            what = "the GPU idles while the training process is blocked reading input "
                   "(file, pipe or socket: the data loader)";
            break;
        case CT_FK_CKPT_STALL: {
            int steps = 0;
            for (size_t r = 0; r < rep->nr; r++)
                if (rep->rr[r].at.ckpt_steps > steps)
                    steps = rep->rr[r].at.ckpt_steps;
            ct_dg_ev(f, "checkpoint_steps", steps);
            what = "steps that write a checkpoint run longer than their neighbours";
            break;
        }
        case CT_FK_LAUNCH_BOUND:
            what = "the GPU waits for the host to launch the next kernel (launch-bound: fuse "
                   "kernels or capture a CUDA graph)";
            break;
        default:
            what = "after a blocking synchronisation the GPU idles until the host launches "
                   "again (sync drain)";
        }
        snprintf(f->summary, sizeof(f->summary), "%.1f us per iteration (%.1f%% of the step): %s",
                 best / 1e3, 100 * best / c->step, what);
    }
}

/* ------------------------------------------------ pageable copies */

static void check_pageable(struct ctx *c)
{
    const struct ct_report *rep = c->rep;
    if (!rep->iterations)
        return;
    /* per rank: host time spent in Async host<->device copies that blocked,
     * the part of it inside the rank's iterations (copies before the first
     * step, a model loaded at start, cost no step) over its iterations */
    struct ct_finding tmp = {0};
    double total = 0, gpu = 0, bytes = 0, per_iter = 0;
    size_t count = 0, async_copies = 0;
    for (size_t r = 0; r < rep->nr; r++) {
        const struct ct_rank_result *x = &rep->rr[r];
        const struct ct_rank *R = x->rank;
        if (!x->niters)
            continue;
        int64_t w0 = x->iters[0].s, w1 = x->iters[x->niters - 1].e;
        double blocked = 0;
        for (size_t p = 0; p < R->nprocs; p++) {
            const struct ct_trace_facts *t = R->procs[p]->facts;
            if (!t) /* a later part of a process split by device, or Kineto input */
                continue;
            /* facts keep the trace's own clock: the rank's times are offset */
            int64_t off = R->procs[p]->clock_offset + R->skew_ns;
            for (size_t k = 0; k < t->ncopies; k++) {
                const struct ct_copy_fact *cp = &t->copies[k];
                if (!cp->async || (cp->kind != CT_COPY_HTOD && cp->kind != CT_COPY_DTOH))
                    continue;
                async_copies++;
                int64_t h = cp->host_e - cp->host_s, g = cp->gpu_e - cp->gpu_s;
                int64_t s = cp->host_s + off, e = cp->host_e + off;
                s = s > w0 ? s : w0;
                e = e < w1 ? e : w1;
                if (g < PAGEABLE_MIN || (double)h < PAGEABLE_R * (double)g || e <= s)
                    continue;
                blocked += (double)(e - s);
                gpu += (double)g;
                bytes += (double)cp->bytes;
                count++;
            }
        }
        if (blocked > 0) {
            total += blocked;
            per_iter += blocked / (double)x->niters;
            ct_dg_rank_add(&tmp, R->rank);
        }
    }
    if (!count)
        return;
    double saving = per_iter / (double)(tmp.nranks ? tmp.nranks : 1);
    struct ct_finding *f = ct_dg_add(c, CT_FK_PAGEABLE_MEMCPY, saving, 0.7);
    if (!f) {
        free(tmp.ranks);
        return;
    }
    f->ranks = tmp.ranks; /* the list moves to the finding */
    f->nranks = tmp.nranks;
    f->capranks = tmp.capranks;
    ct_dg_ev(f, "blocking_async_copies", (double)count);
    ct_dg_ev(f, "async_copies", (double)async_copies);
    ct_dg_ev(f, "host_blocked_us_per_iteration", saving / 1e3);
    ct_dg_ev(f, "gpu_transfer_us_total", gpu / 1e3);
    ct_dg_ev(f, "host_call_us_total", total / 1e3);
    ct_dg_ev(f, "bytes", bytes);
    ct_dg_evs(
        f, "inference",
        "the trace has no host memory kind: pageable inferred from Async host<->device copies "
        "whose host call lasted >= %.0f%% of their GPU transfer",
        100 * PAGEABLE_R);
    snprintf(f->summary, sizeof(f->summary),
             "%zu Async copies blocked the host for their whole transfer (%.1f us per iteration): "
             "their host buffers look pageable; pin them (cudaHostAlloc / pin_memory=True)",
             count, saving / 1e3);
}

/* ------------------------------------------------ hang */

static void hang_finding(void *ctx, const struct ct_hang_wait *w)
{
    struct ctx *c = ctx;
    struct ct_diagnosis *d = c->d;
    if (d->nf >= sizeof(d->f) / sizeof(d->f[0]))
        return;
    /* not a saving per step: the time the waiting ranks have lost so far */
    struct ct_finding *f = &d->f[d->nf++];
    memset(f, 0, sizeof(*f));
    f->kind = CT_FK_HANG;
    f->saving_us = (double)(w->until - w->since) / 1e3;
    f->confidence = w->nmissing == w->nabsent ? 0.9 : 0.95;
    char miss[128] = "", wait[128] = "";
    size_t m = 0, k = 0;
    for (size_t i = 0; i < w->nmissing; i++)
        if (w->missing[i] >= 0) {
            ct_dg_rank_add(f, w->missing[i]);
            m += (size_t)snprintf(miss + m, m < sizeof(miss) ? sizeof(miss) - m : 0, "%s%d",
                                  m ? "," : "", w->missing[i]);
        }
    for (size_t i = 0; i < w->nwaiting; i++)
        k += (size_t)snprintf(wait + k, k < sizeof(wait) ? sizeof(wait) - k : 0, "%s%d",
                              k ? "," : "", w->waiting[i]);
    ct_dg_evs(f, "op", "%s", ct_name_nccl_op((uint64_t)w->op->op));
    ct_dg_evs(f, "comm_hash", "%016" PRIx64, w->op->comm);
    ct_dg_ev(f, "seq", (double)w->op->seq);
    ct_dg_evs(f, "waiting_ranks", "%s", wait);
    ct_dg_evs(f, "missing_ranks", "%s", miss);
    ct_dg_ev(f, "absent_comm_ranks", (double)w->nabsent);
    ct_dg_ev(f, "waiting_since_us", (double)(w->since - c->rep->job->t0) / 1e3);
    ct_dg_ev(f, "waited_us", (double)(w->until - w->since) / 1e3);
    /* the rank lists are cut to fit the summary (the evidence and JSON
     * ranks have them whole) */
    int cut =
        snprintf(f->summary, sizeof(f->summary),
                 "hang: rank(s) %.60s have waited %.1f ms in %.20s seq %" PRIu64
                 " for rank(s) %.60s, which never issued it%s",
                 wait, (double)(w->until - w->since) / 1e6, ct_name_nccl_op((uint64_t)w->op->op),
                 w->op->seq, m ? miss : "(not mapped to ranks)",
                 w->nabsent ? " (they left no flight-recorder window: nothing was pending "
                              "there)"
                            : "");
    (void)cut;
}

static int check_hang(struct ctx *c)
{
    return ct_hang_present(c->rep) ? ct_hang_waits(c->rep, hang_finding, c) : 0;
}

static int cmp_finding(const void *a, const void *b)
{
    /* a hang comes first: nothing else matters until the job runs again */
    int hx = ((const struct ct_finding *)a)->kind == CT_FK_HANG;
    int hy = ((const struct ct_finding *)b)->kind == CT_FK_HANG;
    if (hx != hy)
        return hy - hx;
    double x = ((const struct ct_finding *)a)->saving_us;
    double y = ((const struct ct_finding *)b)->saving_us;
    /* unquantified findings after every quantified one, by confidence */
    if (isnan(x) != isnan(y))
        return isnan(x) - isnan(y);
    if (isnan(x)) {
        x = ((const struct ct_finding *)a)->confidence;
        y = ((const struct ct_finding *)b)->confidence;
    }
    return (x < y) - (x > y);
}

int ct_diagnose(const struct ct_report *rep, const struct ct_diag_opts *o, struct ct_diagnosis *d)
{
    memset(d, 0, sizeof(*d));
    struct ctx c = {rep, o, d, rep->step_p50};
    d->step_us = rep->step_p50 / 1e3;
    d->iterations = rep->iterations;
    int hrc = check_hang(&c); /* needs no iterations */
    if (!hrc)                 /* nor do the GPM checks: their savings are not quantified */
        hrc = ct_dg_check_efficiency(&c); /* diagnose_efficiency.c */
    if (hrc)
        return hrc;
    if (!rep->iterations || rep->step_p50 <= 0) {
        for (int k = 0; k < CT_FK_COUNT; k++)
            if (k != CT_FK_HANG && k != CT_FK_LOW_TENSOR && k != CT_FK_MEMORY_PHASE &&
                k != CT_FK_NVLINK_SATURATED)
                ct_dg_insufficient(&c, k,
                                   "no iterations found (no ProfilerStep ranges, marks or "
                                   "repeating kernel pattern): no step time to weigh savings by");
        qsort(d->f, d->nf, sizeof(d->f[0]), cmp_finding); /* a hang first */
        return 0;
    }
    int rc = check_exposed(&c);
    check_slow_collective(&c);
    if (!rc)
        rc = check_stragglers(&c);
    if (!rc)
        rc = check_pipeline(&c);
    check_idle(&c);
    check_pageable(&c);
    ct_dg_check_links(&c); /* diagnose_links.c */
    ct_dg_check_choices(&c);
    if (!rc)
        rc = ct_dg_check_health(&c); /* diagnose_health.c */
    if (!rc)
        rc = ct_dg_replay_savings(&c); /* diagnose_replay.c */
    ct_dg_coverage(&c);
    qsort(d->f, d->nf, sizeof(d->f[0]), cmp_finding);
    return rc;
}
