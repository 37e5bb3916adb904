/*
 * `cutrace diagnose`'s savings from the what-if replay (docs/diff.md,
 * docs/critical-path.md). A check states its fix as whatif selectors where
 * the fix is a scaling of recorded work (a straggler's kernels at its
 * peers' speed, an instant loader, the exposed transfer hidden); the job's
 * graph, replayed with them, says what the fix buys across ranks, after
 * slack absorbs what is off the critical path. The saving is the drop of
 * the run's mean step (ct_cp_mean_step), per iteration as the formulas
 * are: a stall in a third of the steps moves the mean, not the median.
 * Never prints.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/critical_path.h"
#include "decoder/compare/diagnose_int.h"

#define MAX_SEL 16

/* Parses f->whatif's selectors into sc (they point into buf). The count,
 * or -EINVAL: a check wrote a selector the parser refuses (a bug, which
 * the finding's formula then covers). */
static int selectors(const struct ct_finding *f, char *buf, size_t n, struct ct_cp_scale *sc)
{
    snprintf(buf, n, "%s", f->whatif);
    int k = 0;
    char *save = NULL, err[300];
    for (char *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        if (k == MAX_SEL || ct_cp_scale_parse(t, &sc[k], err, sizeof(err)))
            return -EINVAL;
        k++;
    }
    return k;
}

int ct_dg_replay_savings(struct ctx *c)
{
    struct ct_diagnosis *d = c->d;
    int want = 0;
    for (size_t i = 0; i < d->nf; i++)
        want |= d->f[i].whatif[0] != 0;
    if (!want) {
        snprintf(d->replay_note, sizeof(d->replay_note),
                 "no finding's fix is a scaling of recorded work");
        return 0;
    }
    /* every finding's selectors, replayed over one run of the graph */
    struct ct_cp_scale(*sc)[MAX_SEL] = calloc(d->nf ? d->nf : 1, sizeof(*sc));
    char(*buf)[sizeof(d->f[0].whatif)] = calloc(d->nf ? d->nf : 1, sizeof(*buf));
    struct ct_cp_set *sets = calloc(d->nf ? d->nf : 1, sizeof(*sets));
    struct ct_cp_result *pred = calloc(d->nf ? d->nf : 1, sizeof(*pred));
    size_t *of = calloc(d->nf ? d->nf : 1, sizeof(*of)); /* sets[k] is finding of[k]'s */
    struct ct_cp_result base = {0};
    size_t nsets = 0;
    int rc = sc && buf && sets && pred && of ? 0 : -ENOMEM;
    for (size_t i = 0; i < d->nf && !rc; i++) {
        int n = d->f[i].whatif[0] ? selectors(&d->f[i], buf[i], sizeof(buf[i]), sc[i]) : -EINVAL;
        if (n > 0)
            of[nsets] = i, sets[nsets++] = (struct ct_cp_set){sc[i], (size_t)n};
    }
    size_t limit = c->o->graph_bytes ? c->o->graph_bytes : CT_CP_SIDE_BYTES;
    if (!rc)
        rc = ct_cp_run_sets(c->rep, limit, CT_CP_SIDE_CHUNKS, sets, nsets, &base, pred, NULL);
    if (rc == -E2BIG) {
        snprintf(d->replay_note, sizeof(d->replay_note),
                 "the job's dependency graph would pass %.0f MiB in more than %d chunks of "
                 "steps: savings from each check's formula",
                 (double)limit / (1 << 20), CT_CP_SIDE_CHUNKS);
        goto out;
    }
    if (rc) { /* the replay is extra: without memory for it the formulas stand */
        snprintf(d->replay_note, sizeof(d->replay_note),
                 "out of memory for the job's dependency graph: savings from each check's "
                 "formula");
        goto out;
    }
    if (!base.nsteps) {
        snprintf(d->replay_note, sizeof(d->replay_note),
                 "the job's graph has no step (no rank has iterations in it): savings from "
                 "each check's formula");
        goto out;
    }
    if (base.unordered) {
        snprintf(d->replay_note, sizeof(d->replay_note),
                 "%zu points of the job's graph are in a dependency cycle: savings from each "
                 "check's formula",
                 base.unordered);
        goto out;
    }
    d->replayed = 1;
    d->replay_chunks = base.chunks;
    for (size_t k = 0; k < nsets; k++) {
        struct ct_finding *f = &d->f[of[k]];
        double saving = ct_cp_mean_step(&base) - ct_cp_mean_step(&pred[k]);
        f->formula_saving_us = f->saving_us;
        f->saving_us = (saving > 0 ? saving : 0) / 1e3;
        f->from_replay = 1;
    }
    /* what the job would not gain enough from is no finding: its check's
     * formula counted time that slack absorbs */
    size_t k = 0;
    for (size_t i = 0; i < d->nf; i++) {
        struct ct_finding *f = &d->f[i];
        if (f->from_replay && f->saving_us * 1e3 < c->o->min_saving * c->step) {
            struct ct_dismissed *x = &d->dis[d->ndis++];
            *x = (struct ct_dismissed){f->kind, f->formula_saving_us, f->saving_us, ""};
            memcpy(x->whatif, f->whatif, sizeof(x->whatif));
            free(f->ranks);
            continue;
        }
        d->f[k++] = *f;
    }
    d->nf = k;
out:
    ct_cp_result_free(&base);
    for (size_t j = 0; pred && j < nsets; j++)
        ct_cp_result_free(&pred[j]);
    free(sc);
    free(buf);
    free(sets);
    free(pred);
    free(of);
    return 0;
}
