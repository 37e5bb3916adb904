/*
 * The health-counter checks of `cutrace diagnose` (format v2 traces):
 * throttled_gpu and host_contention, and the straggler findings they
 * explain (docs/diff.md).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/compare/diagnose_int.h"
#include "decoder/analysis/health.h"
#include "decoder/util/stats.h"

/* throttled_gpu and host_contention (docs/diff.md): iterations that ran
 * slow, and what the rank's counters said over exactly those iterations
 * compared with its other iterations. Traces without counters leave both
 * kinds insufficient. */

#define THR_SHARE    0.5  /* throttled: a slowing reason over >= 50 % of the slow iterations */
#define THR_CONTRAST 0.25 /* ... and >= 25 points more than over the other iterations */
#define HOST_PSI     20.0 /* host contention: CPU pressure (some avg10) >= 20 % ... */
#define HOST_RUNQ    1.0  /* ... or >= 1 other runnable task per CPU, over the slow iterations */

struct hwin {
    double slow_ns, other_ns;   /* covered time */
    double thr_slow, thr_other; /* throttled time */
    double sm_slow, sm_other;   /* SM clock x time */
    double reason[CT_THROTTLE_NREASONS];
    double host_slow, host_other; /* host pressure x time (in the unit of `psi`) */
    double hcov_slow, hcov_other;
};

/* Accumulates one iteration's counter summary into w. */
static void hwin_add(struct hwin *w, const struct ct_health_sum *s, int64_t len, int slow)
{
    double cov = s->covered_ns;
    if (cov > 0 && isfinite(s->throttled_share)) {
        *(slow ? &w->slow_ns : &w->other_ns) += cov;
        *(slow ? &w->thr_slow : &w->thr_other) += s->throttled_share * cov;
        if (isfinite(s->sm_clock))
            *(slow ? &w->sm_slow : &w->sm_other) += s->sm_clock * cov;
        for (int b = 0; slow && b < CT_THROTTLE_NREASONS; b++)
            w->reason[b] += s->reason_share[b] * cov;
    }
    double host = isfinite(s->cpu_pressure_pct) ? s->cpu_pressure_pct
                  : isfinite(s->run_queue)      ? s->run_queue
                                                : NAN;
    if (isfinite(host)) {
        *(slow ? &w->host_slow : &w->host_other) += host * (double)len;
        *(slow ? &w->hcov_slow : &w->hcov_other) += (double)len;
    }
}

static double ratio_or_nan(double a, double b)
{
    return b > 0 ? a / b : NAN;
}

static void check_health_rank(struct ctx *c, size_t r, double ref_compute, int *any_dev,
                              int *any_host)
{
    const struct ct_report *rep = c->rep;
    const struct ct_rank_result *x = &rep->rr[r];
    const struct ct_hproc *h = x->rank->nprocs ? x->rank->procs[0]->health : NULL;
    if (!h || !h->ns || !x->niters)
        return;
    int64_t shift = ct_health_shift(rep, r);
    double *dur = malloc(x->niters * sizeof(double));
    if (!dur)
        return;
    for (size_t k = 0; k < x->niters; k++)
        dur[k] = (double)(x->iters[k].e - x->iters[k].s);
    double med_dur = ct_median(dur, x->niters);
    free(dur);
    /* GPU: iterations whose compute ran >= SLOW_FACTOR over the reference */
    struct hwin g, hw;
    memset(&g, 0, sizeof(g));
    memset(&hw, 0, sizeof(hw));
    size_t nslow = 0, nhslow = 0;
    double excess = 0, hexcess = 0;
    int dev = -1;
    for (size_t k = 0; k < x->niters; k++) {
        struct ct_health_sum s;
        ct_health_summarise(h, shift, x->iters[k].s, x->iters[k].e, &s);
        dev = s.device;
        double comp = (double)x->im[k].compute;
        int slow = ref_compute > 0 && comp > SLOW_FACTOR * ref_compute;
        nslow += slow;
        if (slow)
            excess += comp - ref_compute;
        hwin_add(&g, &s, x->iters[k].e - x->iters[k].s, slow);
        /* host: iterations that took longer while their kernels did not */
        double d = (double)(x->iters[k].e - x->iters[k].s);
        int hslow = !slow && d > SLOW_FACTOR * med_dur;
        nhslow += hslow;
        if (hslow)
            hexcess += d - med_dur;
        hwin_add(&hw, &s, x->iters[k].e - x->iters[k].s, hslow);
    }
    if (dev >= 0)
        *any_dev = 1;
    if (hw.hcov_slow + hw.hcov_other > 0)
        *any_host = 1;
    double thr_slow = ratio_or_nan(g.thr_slow, g.slow_ns);
    double thr_other = ratio_or_nan(g.thr_other, g.other_ns);
    if (nslow && thr_slow >= THR_SHARE && !(thr_other > thr_slow - THR_CONTRAST)) {
        struct ct_finding *f = ct_dg_add(c, CT_FK_THROTTLED_GPU, excess / (double)x->niters, 1);
        if (f) {
            ct_dg_rank_add(f, x->rank->rank);
            char why[160] = "";
            size_t used = 0;
            for (int b = 0; b < CT_THROTTLE_NREASONS && used < sizeof(why) - 40; b++)
                if ((CT_THROTTLE_SLOWING >> b & 1) && g.reason[b] / g.slow_ns >= 0.05)
                    used += (size_t)snprintf(why + used, sizeof(why) - used, "%s%s %.0f%%",
                                             used ? ", " : "", ct_throttle_reason_name(b),
                                             100 * g.reason[b] / g.slow_ns);
            ct_dg_ev(f, "device", dev);
            ct_dg_ev(f, "slow_iterations", (double)nslow);
            ct_dg_ev(f, "throttled_pct_slow_iterations", 100 * thr_slow);
            ct_dg_ev(f, "throttled_pct_other_iterations",
                     isfinite(thr_other) ? 100 * thr_other : 0);
            ct_dg_ev(f, "sm_clock_mhz_slow_iterations", ratio_or_nan(g.sm_slow, g.slow_ns));
            ct_dg_ev(f, "sm_clock_mhz_other_iterations",
                     isfinite(ratio_or_nan(g.sm_other, g.other_ns)) ? g.sm_other / g.other_ns : 0);
            ct_dg_evs(f, "reasons", "%s", used ? why : "-");
            ct_dg_ev(f, "compute_us_per_slow_iteration",
                     (ref_compute + excess / (double)nslow) / 1e3);
            ct_dg_ev(f, "reference_compute_us_per_iteration", ref_compute / 1e3);
            snprintf(
                f->summary, sizeof(f->summary),
                "rank %d's GPU %d was throttled (%s) during %zu of %zu iterations: SM clock "
                "%.0f MHz against %.0f MHz otherwise, and those iterations' kernels ran %.0f%% "
                "longer",
                x->rank->rank, dev, used ? why : "-", nslow, x->niters,
                ratio_or_nan(g.sm_slow, g.slow_ns),
                g.other_ns > 0 ? g.sm_other / g.other_ns : ratio_or_nan(g.sm_slow, g.slow_ns),
                100 * excess / (double)nslow / ref_compute);
        }
    }
    double h_slow = ratio_or_nan(hw.host_slow, hw.hcov_slow);
    double h_other = ratio_or_nan(hw.host_other, hw.hcov_other);
    int psi = ct_hproc_find(h, -1, "cpu_pressure") != NULL;
    double limit = psi ? HOST_PSI : HOST_RUNQ;
    if (nhslow && h_slow >= limit && !(h_other > h_slow / 2)) {
        struct ct_finding *f =
            ct_dg_add(c, CT_FK_HOST_CONTENTION, hexcess / (double)x->niters, 0.7);
        if (f) {
            ct_dg_rank_add(f, x->rank->rank);
            ct_dg_ev(f, "slow_iterations", (double)nhslow);
            ct_dg_ev(f,
                     psi ? "cpu_pressure_pct_slow_iterations" : "run_queue_per_cpu_slow_iterations",
                     h_slow);
            ct_dg_ev(
                f, psi ? "cpu_pressure_pct_other_iterations" : "run_queue_per_cpu_other_iterations",
                isfinite(h_other) ? h_other : 0);
            ct_dg_ev(f, "median_iteration_us", med_dur / 1e3);
            snprintf(
                f->summary, sizeof(f->summary),
                "rank %d's host was short of CPU during %zu slow iterations (%s %.1f%s against "
                "%.1f otherwise) while its kernels ran at normal speed",
                x->rank->rank, nhslow, psi ? "CPU pressure" : "run queue", h_slow,
                psi ? "%" : " per CPU", isfinite(h_other) ? h_other : 0.0);
        }
    }
}

/* A straggler finding on a rank that also has a health finding says so:
 * the counters explain it. A throttled GPU explains either straggler kind
 * (part-time throttling leaves the median kernel at normal speed, so the
 * rank can look host-late); CPU contention explains a host straggler. */
static void link_health(struct ctx *c)
{
    struct ct_diagnosis *d = c->d;
    static const int order[] = {CT_FK_THROTTLED_GPU, CT_FK_HOST_CONTENTION};
    for (size_t i = 0; i < d->nf; i++) {
        struct ct_finding *s = &d->f[i];
        if ((s->kind != CT_FK_COMPUTE_STRAGGLER && s->kind != CT_FK_HOST_STRAGGLER) || !s->nranks)
            continue;
        int found = 0;
        for (size_t o = 0; o < 2 && !found; o++) {
            if (order[o] == CT_FK_HOST_CONTENTION && s->kind != CT_FK_HOST_STRAGGLER)
                continue;
            for (size_t j = 0; j < d->nf && !found; j++) {
                if (d->f[j].kind != order[o] || !d->f[j].nranks || d->f[j].ranks[0] != s->ranks[0])
                    continue;
                found = 1;
                ct_dg_evs(s, "explained_by", "%s", ct_finding_kind_name(order[o]));
                size_t n = strlen(s->summary);
                snprintf(s->summary + n, sizeof(s->summary) - n, "; explained by %s",
                         ct_finding_kind_name(order[o]));
            }
        }
    }
}

int ct_dg_check_health(struct ctx *c)
{
    const struct ct_report *rep = c->rep;
    /* reference compute per iteration: the median over ranks of each
     * rank's median (a single rank: its own 20th percentile) */
    double *med = malloc((rep->nr ? rep->nr : 1) * sizeof(double));
    if (!med)
        return -ENOMEM;
    size_t nm = 0;
    for (size_t r = 0; r < rep->nr; r++) {
        const struct ct_rank_result *x = &rep->rr[r];
        if (!x->niters)
            continue;
        double *v = malloc(x->niters * sizeof(double));
        if (!v) {
            free(med);
            return -ENOMEM;
        }
        for (size_t k = 0; k < x->niters; k++)
            v[k] = (double)x->im[k].compute;
        if (rep->nr == 1) {
            med[nm++] = ct_percentile(v, x->niters, 20);
        } else {
            med[nm++] = ct_median(v, x->niters);
        }
        free(v);
    }
    double ref = nm ? ct_median(med, nm) : 0;
    free(med);
    int any_dev = 0, any_host = 0;
    /* a copy: the health cache may move when later ranks are loaded */
    char why[256] = "";
    for (size_t r = 0; r < rep->nr; r++) {
        check_health_rank(c, r, ref, &any_dev, &any_host);
        const struct ct_rank *R = rep->rr[r].rank;
        const struct ct_hproc *h = R->nprocs ? R->procs[0]->health : NULL;
        if (h && !strncmp(h->status, "unavailable: ", 13) && !why[0])
            snprintf(why, sizeof(why), "%s", h->status + 13);
    }
    if (!any_dev)
        ct_dg_insufficient(c, CT_FK_THROTTLED_GPU, "no GPU health counters in the traces (%s)",
                           why[0] ? why : "recorded with CUTRACE_HEALTH_MS=0, or format v1");
    if (!any_host)
        ct_dg_insufficient(c, CT_FK_HOST_CONTENTION,
                           "no host counters in the traces (recorded with CUTRACE_HEALTH_MS=0, or "
                           "format v1)");
    link_health(c);
    return 0;
}
