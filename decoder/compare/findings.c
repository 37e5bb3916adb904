/*
 * Findings of `cutrace diagnose` (decoder/compare/diagnose_int.h): their
 * names, how one is added with its saving, confidence, evidence and ranks,
 * and how a check records that its evidence was insufficient. The checks
 * themselves are decoder/compare/diagnose.c (and diagnose_health.c).
 */
#include "decoder/compare/diagnose_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[CT_FK_COUNT] = {
    "exposed_communication",
    "slow_collective",
    "compute_straggler",
    "host_straggler",
    "stage_imbalance",
    "excess_bubble",
    "data_loading_stall",
    "checkpoint_stall",
    "launch_bound",
    "sync_drain",
    "pageable_memcpy",
    "throttled_gpu",
    "host_contention",
    "hang",
    "low_tensor_activity",
    "memory_bound_phase",
    "slow_link",
    "nvlink_saturated",
    "nccl_choice",
};

const char *ct_finding_kind_name(int kind)
{
    return kind >= 0 && kind < CT_FK_COUNT ? kind_names[kind] : "?";
}

double ct_dg_per_iter(const struct ct_rank_result *x, int64_t total)
{
    if (!x->niters)
        return 0;
    if (!ct_rank_gcover(x->rank) || x->covered <= 0)
        return (double)total / (double)x->niters;
    /* Capture windows hold the iterations and, at each window's ends, the
     * parts of steps a pause cut: the window total is per covered ns, and
     * an iteration lasts its mean duration. */
    double it = 0;
    for (size_t k = 0; k < x->niters; k++)
        it += (double)(x->iters[k].e - x->iters[k].s);
    return (double)total / (double)x->covered * it / (double)x->niters;
}

/* Confidence: how far the saving clears the threshold, scaled by how
 * direct the evidence is (1: measured, < 1: inferred). */
static double confidence(const struct ctx *c, double saving_ns, double quality)
{
    double t = c->o->min_saving * c->step, v = 0.5;
    if (t > 0)
        v = 0.5 + 0.45 * (1 - t / saving_ns);
    if (v > 0.95)
        v = 0.95;
    return v * quality;
}

struct ct_finding *ct_dg_add(struct ctx *c, int kind, double saving_ns, double quality)
{
    if (saving_ns < c->o->min_saving * c->step || c->d->nf >= sizeof(c->d->f) / sizeof(c->d->f[0]))
        return NULL;
    struct ct_finding *f = &c->d->f[c->d->nf++];
    memset(f, 0, sizeof(*f));
    f->kind = kind;
    /* no fix saves more than the whole step (a hang's "saving" is the time
     * lost so far, not a share of a step): a formula past it rests on
     * something the trace does not hold (work outside the iterations, a
     * run cut short), so the saving is the step at most, said, and its
     * confidence halved */
    int capped = kind != CT_FK_HANG && c->step > 0 && saving_ns > c->step;
    double estimate = saving_ns;
    if (capped)
        saving_ns = c->step;
    f->saving_us = saving_ns / 1e3;
    f->confidence = confidence(c, saving_ns, quality) * (capped ? 0.5 : 1);
    if (capped)
        ct_dg_ev(f, "formula_estimate_beyond_the_step_us", estimate / 1e3);
    return f;
}

struct ct_finding *ct_dg_add_unquantified(struct ctx *c, int kind, double confidence)
{
    if (c->d->nf >= sizeof(c->d->f) / sizeof(c->d->f[0]))
        return NULL;
    struct ct_finding *f = &c->d->f[c->d->nf++];
    memset(f, 0, sizeof(*f));
    f->kind = kind;
    f->saving_us = NAN;
    f->formula_saving_us = NAN;
    f->confidence = confidence;
    return f;
}

void ct_dg_ev(struct ct_finding *f, const char *key, double v)
{
    if (f->nev < CT_EV_MAX)
        f->ev[f->nev++] = (struct ct_evidence){.key = key, .num = v};
}

void ct_dg_evs(struct ct_finding *f, const char *key, const char *fmt, ...)
{
    if (f->nev >= CT_EV_MAX)
        return;
    struct ct_evidence *e = &f->ev[f->nev++];
    memset(e, 0, sizeof(*e));
    e->key = key;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->str, sizeof(e->str), fmt, ap);
    va_end(ap);
}

void ct_dg_rank_add(struct ct_finding *f, int r)
{
    if (f->nranks == f->capranks) {
        size_t cap = f->capranks ? 2 * f->capranks : 16;
        int *v = realloc(f->ranks, cap * sizeof(*v));
        if (!v)
            return; /* out of memory: the list stops short, the finding stands */
        f->ranks = v;
        f->capranks = cap;
    }
    f->ranks[f->nranks++] = r;
}

void ct_diagnosis_free(struct ct_diagnosis *d)
{
    for (size_t i = 0; i < d->nf; i++) {
        free(d->f[i].ranks);
        d->f[i].ranks = NULL;
        d->f[i].nranks = d->f[i].capranks = 0;
    }
}

void ct_dg_insufficient(struct ctx *c, int kind, const char *fmt, ...)
{
    struct ct_insufficient *i = &c->d->ins[c->d->nins++];
    i->kind = kind;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(i->reason, sizeof(i->reason), fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------ coverage */

void ct_dg_coverage(struct ctx *c)
{
    const struct ct_report *rep = c->rep;
    for (size_t i = 0; i < c->d->nf; i++) {
        struct ct_finding *f = &c->d->f[i];
        /* health counters and a hang's collectives rest on their own
         * records, not on the ops' GPU times */
        int on_ops = f->kind != CT_FK_HOST_CONTENTION && f->kind != CT_FK_HANG;
        double worst = 1;
        char why[200] = "";
        int who = -1;
        for (size_t r = 0; r < rep->nr; r++) {
            const struct ct_rank_result *x = &rep->rr[r];
            int named = !f->nranks;
            for (size_t k = 0; k < f->nranks && !named; k++)
                named = f->ranks[k] == x->rank->rank;
            if (!named || (!f->nranks && !x->niters))
                continue;
            char w[200];
            double k = ct_coverage_factor(x->rank, on_ops, w, sizeof(w));
            if (k < worst) {
                worst = k;
                who = x->rank->rank;
                snprintf(why, sizeof(why), "%s", w);
            }
        }
        if (worst >= 1)
            continue;
        snprintf(f->confidence_note, sizeof(f->confidence_note), "lowered from %.2f: rank %d: %s",
                 f->confidence, who, why);
        f->confidence *= worst;
    }
}

/* ------------------------------------------------ exposed communication */

/* |[s, s + transfer) \ compute| over the rank's non-pipeline communication:
 * what stays exposed if every peer arrived on time (the wait part follows
 * stragglers, which their own checks own). */
