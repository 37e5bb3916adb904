/*
 * The sizes where NCCL's choice costs bandwidth. Under one algorithm and
 * protocol a collective's bus bandwidth grows with its size: the latency
 * part (the protocol's steps, the kernel's start) is a smaller share of a
 * larger op. So a size whose bus bandwidth falls below the next smaller
 * size's, under another choice, ran slower than the smaller one did: its
 * choice is the cause (a tuning threshold, an NCCL_PROTO or NCCL_ALGO
 * forcing one, a tuner plugin's pick). The margin CT_CHOICE_TOL is far
 * above the noise of a median over instances (a few percent) and below
 * what a wrong protocol costs (LL moves half the bytes a step SIMPLE does;
 * a tree against a ring on a few nodes, tens of percent).
 *
 * The choice of a (op, bytes, ranks) row is what NCCL's descriptors said
 * of most of its instances (rep->nlinks->split, per communicator).
 *
 * Rows under algorithms of different kinds compare as they are: NVLS and
 * CollNet reduce in the switch and their bus bandwidth can pass a link's
 * rate (no speed of light for them, speed_of_light.c), but the bus factor
 * (2(n-1)/n for AllReduce) depends on the op and its ranks only, which the
 * compared rows share, so comparing bus bandwidths is comparing how fast
 * the job's bytes moved. A switch from RING to NVLS above a size is no dip
 * (NVLS is faster); NVLS below and a ring above, slower by more than the
 * margin, is one: the larger size lost what NVLS gave the smaller
 * (tests/nccl/check_nvls.py).
 */
#include "decoder/analysis/nccl_choices.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/analysis.h"
#include "decoder/analysis/nccl_links.h"

/* "ALGO/PROTO" of row c, "" when no descriptor said. */
static void choice_of(const struct ct_nlinks *L, const struct ct_coll_row *c, char *buf, size_t n)
{
    uint64_t best = 0;
    buf[0] = 0;
    for (size_t i = 0; L && i < L->nsplit; i++) {
        const struct ct_nsplit *s = &L->split[i];
        if (s->op != c->op || s->bytes != c->bytes || s->nranks != c->nranks ||
            (!s->algo[0] && !s->proto[0]) || s->count <= best)
            continue;
        best = s->count;
        snprintf(buf, n, "%s/%s", s->algo[0] ? s->algo : "?", s->proto[0] ? s->proto : "?");
    }
}

static const struct ct_report *g_rep; /* cmp_rows' (qsort has no context) */

static int cmp_rows(const void *a, const void *b)
{
    const struct ct_coll_row *x = &g_rep->coll[*(const size_t *)a],
                             *y = &g_rep->coll[*(const size_t *)b];
    if (x->op != y->op)
        return x->op - y->op;
    if (x->nranks != y->nranks)
        return x->nranks - y->nranks;
    return (x->bytes > y->bytes) - (x->bytes < y->bytes);
}

int ct_nccl_choice_dips(const struct ct_report *rep, struct ct_nchoice_dip **out, size_t *n,
                        int *known)
{
    *out = NULL;
    *n = 0;
    *known = 0;
    if (!rep->ncoll)
        return 0;
    char(*ch)[40] = calloc(rep->ncoll, sizeof(*ch));
    size_t *ix = malloc(rep->ncoll * sizeof(*ix));
    if (!ch || !ix) {
        free(ch);
        free(ix);
        return -ENOMEM;
    }
    size_t m = 0;
    for (size_t i = 0; i < rep->ncoll; i++) {
        choice_of(rep->nlinks, &rep->coll[i], ch[i], sizeof(ch[i]));
        *known |= ch[i][0] != 0;
        if (ch[i][0] && rep->coll[i].busbw > 0 && isfinite(rep->coll[i].busbw))
            ix[m++] = i;
    }
    g_rep = rep;
    qsort(ix, m, sizeof(*ix), cmp_rows);
    int rc = 0;
    for (size_t k = 1; k < m && !rc; k++) {
        const struct ct_coll_row *p = &rep->coll[ix[k - 1]], *c = &rep->coll[ix[k]];
        if (p->op != c->op || p->nranks != c->nranks || !strcmp(ch[ix[k]], ch[ix[k - 1]]) ||
            !(c->busbw < (1 - CT_CHOICE_TOL) * p->busbw))
            continue;
        struct ct_nchoice_dip *d = realloc(*out, (*n + 1) * sizeof(*d));
        if (!d) {
            rc = -ENOMEM;
            break;
        }
        *out = d;
        d = &d[(*n)++];
        memset(d, 0, sizeof(*d));
        d->row = ix[k];
        d->prev = ix[k - 1];
        snprintf(d->choice, sizeof(d->choice), "%s", ch[ix[k]]);
        snprintf(d->prev_choice, sizeof(d->prev_choice), "%s", ch[ix[k - 1]]);
        /* at the neighbour's bus bandwidth each instance takes busbw /
         * busbw_prev of its median time; count is over every member */
        double per_member = c->nranks > 0 ? (double)c->count / c->nranks : 0;
        d->saving_ns = per_member * c->p50 * (1 - c->busbw / p->busbw);
    }
    free(ch);
    free(ix);
    if (rc) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}
