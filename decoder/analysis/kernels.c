/*
 * Per-kernel-name statistics (compute kernels, names demangled) over all
 * ranks, and each rank's compute slowness: the median over kernel names run
 * by at least two ranks of (the rank's median duration of that kernel /
 * the median of the ranks' medians).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/analysis.h"
#include "decoder/util/demangle.h"
#include "decoder/util/stats.h"

struct entry {
    char *name; /* demangled, owned */
    uint32_t rank;
    double *dur;
    size_t n;
    int64_t total;
};

static int cmp_entry(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->rank > y->rank) - (x->rank < y->rank);
}

int ct_kernels_table(struct ct_report *rep)
{
    struct ct_job *job = rep->job;
    size_t cap = 0, ne = 0;
    struct entry *e = NULL;
    int rc = 0;
    for (size_t r = 0; r < job->nranks && !rc; r++) {
        struct ct_rank *R = &job->ranks[r];
        if ((rc = ct_rank_open(R)))
            break;
        size_t *cnt = calloc(R->nnames ? R->nnames : 1, sizeof(*cnt));
        if (!cnt) {
            ct_rank_close(R);
            rc = -ENOMEM;
            break;
        }
        for (size_t i = 0; i < R->nops; i++)
            if (R->ops[i].cls == CT_CL_COMPUTE)
                cnt[R->ops[i].name]++;
        size_t base = ne;
        size_t *slot = malloc((R->nnames ? R->nnames : 1) * sizeof(*slot));
        if (!slot) {
            free(cnt);
            ct_rank_close(R);
            rc = -ENOMEM;
            break;
        }
        for (size_t k = 0; k < R->nnames && !rc; k++) {
            slot[k] = SIZE_MAX;
            if (!cnt[k])
                continue;
            if (ne == cap) {
                cap = cap ? cap * 2 : 64;
                struct entry *q = realloc(e, cap * sizeof(*q));
                if (!q) {
                    rc = -ENOMEM;
                    break;
                }
                e = q;
            }
            char buf[512];
            struct entry *x = &e[ne];
            memset(x, 0, sizeof(*x));
            x->name = strdup(ct_demangle(R->names[k], buf, sizeof(buf)));
            x->rank = (uint32_t)r;
            x->dur = malloc(cnt[k] * sizeof(double));
            if (!x->name || !x->dur) {
                free(x->name);
                free(x->dur);
                rc = -ENOMEM;
                break;
            }
            slot[k] = ne++;
        }
        for (size_t i = 0; i < R->nops && !rc; i++) {
            const struct ct_gop *g = &R->ops[i];
            if (g->cls != CT_CL_COMPUTE)
                continue;
            struct entry *x = &e[slot[g->name]];
            x->dur[x->n++] = (double)(g->e - g->s);
            x->total += g->e - g->s;
        }
        (void)base;
        free(slot);
        free(cnt);
        ct_rank_close(R);
    }
    if (rc)
        goto out;
    if (ne)
        qsort(e, ne, sizeof(*e), cmp_entry);
    /* entries of one demangled name on one rank (several mangled names can
     * demangle alike) are merged by the table below */
    rep->kern = calloc(ne ? ne : 1, sizeof(*rep->kern));
    double **ratio = calloc(job->nranks ? job->nranks : 1, sizeof(*ratio));
    size_t *nratio = calloc(job->nranks ? job->nranks : 1, sizeof(*nratio));
    /* one median per entry of a name: a rank has several when mangled
     * names demangle alike */
    double *meds = malloc((ne ? ne : 1) * sizeof(*meds));
    if (!rep->kern || !ratio || !nratio || !meds) {
        free(ratio);
        free(nratio);
        free(meds);
        rc = -ENOMEM;
        goto out;
    }
    for (size_t r = 0; r < job->nranks && !rc; r++)
        if (!(ratio[r] = malloc((ne ? ne : 1) * sizeof(double))))
            rc = -ENOMEM;
    for (size_t i = 0; i < ne && !rc;) {
        size_t j = i, total_n = 0;
        int64_t total = 0;
        while (j < ne && !strcmp(e[j].name, e[i].name)) {
            total_n += e[j].n;
            total += e[j].total;
            j++;
        }
        struct ct_kernel_row *row = &rep->kern[rep->nkern++];
        row->name = e[i].name;
        e[i].name = NULL;
        row->count = total_n;
        row->total = total;
        if (j - i == 1) { /* one rank ran it: its own durations, no copy */
            row->p50 = ct_median_select(e[i].dur, e[i].n);
            i = j;
            continue;
        }
        double *all = malloc(total_n * sizeof(double));
        if (!all) {
            rc = -ENOMEM;
            break;
        }
        size_t k = 0;
        for (size_t x = i; x < j; x++) {
            memcpy(all + k, e[x].dur, e[x].n * sizeof(double));
            k += e[x].n;
        }
        row->p50 = ct_median_select(all, total_n);
        free(all);
        /* slowness: per-rank medians against their median */
        size_t nr = 0;
        for (size_t x = i; x < j; x++)
            meds[nr++] = ct_median_select(e[x].dur, e[x].n);
        if (nr >= 2) {
            double *tmp = malloc(nr * sizeof(double));
            if (!tmp) {
                rc = -ENOMEM;
                break;
            }
            memcpy(tmp, meds, nr * sizeof(double));
            double m = ct_median_select(tmp, nr);
            free(tmp);
            for (size_t x = i; x < j && m > 0; x++)
                ratio[e[x].rank][nratio[e[x].rank]++] = meds[x - i] / m;
        }
        i = j;
    }
    for (size_t r = 0; r < rep->nr && !rc; r++)
        rep->rr[r].slowness = nratio[r] ? ct_median_select(ratio[r], nratio[r]) : 1.0;
    for (size_t r = 0; r < job->nranks; r++)
        free(ratio[r]);
    free(ratio);
    free(nratio);
    free(meds);
out:
    for (size_t i = 0; i < ne; i++) {
        free(e[i].name);
        free(e[i].dur);
    }
    free(e);
    return rc;
}
