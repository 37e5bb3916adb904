/*
 * The critical path and a what-if replay of a run whose dependency graph
 * would not fit in memory at once (docs/critical-path.md, "Runs too large
 * for one graph"): the steps in chunks of consecutive steps, one graph per
 * chunk, the results summed.
 *
 * A step's walk stops at its own start, so it visits only the points of
 * its step; what it needs from earlier is the sources of its first ops (a
 * kernel waiting for the previous step's last one on its stream, the host
 * event before its start). Each chunk's graph therefore also holds the step
 * before its first (its context: built, replayed, not walked), and the step
 * after its last, whose start in the same replay ends the chunk's span (so
 * the spans add up to the run's for the mean step). An unscaled chunked
 * run gives the whole run's figures, step for step, unless a dependency
 * reaches back more than one step (test
 * `a_run_too_large_for_one_graph_is_cut_into_chunks`). A replay is exact
 * within a chunk; each chunk starts from the measured times of its
 * context, so a scaled run's steps keep their lengths but not the drift of
 * their starts that one chunk would hand the next.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/critical_path.h"
#include "decoder/analysis/critical_path_int.h"
#include "decoder/util/stats.h"

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The job's step indexes, sorted, each once. NULL on -ENOMEM. */
static int64_t *step_indexes(const struct ct_report *rep, size_t *n)
{
    size_t k = 0;
    for (size_t r = 0; r < rep->nr; r++)
        k += rep->rr[r].niters;
    int64_t *v = malloc((k ? k : 1) * sizeof(*v));
    if (!v)
        return NULL;
    k = 0;
    for (size_t r = 0; r < rep->nr; r++)
        for (size_t i = 0; i < rep->rr[r].niters; i++)
            v[k++] = rep->rr[r].iters[i].index;
    if (k)
        qsort(v, k, sizeof(*v), cmp_i64);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (!u || v[i] != v[u - 1])
            v[u++] = v[i];
    *n = u;
    return v;
}

/* rep with each rank's iterations narrowed to indexes lo..hi (the rest of
 * the report borrowed). 0 or -ENOMEM. */
static int view_of(const struct ct_report *rep, int64_t lo, int64_t hi, struct ct_report *v)
{
    *v = *rep;
    v->rr = calloc(rep->nr ? rep->nr : 1, sizeof(*v->rr));
    if (!v->rr)
        return -ENOMEM;
    for (size_t r = 0; r < rep->nr; r++) {
        const struct ct_rank_result *x = &rep->rr[r];
        v->rr[r] = *x;
        v->rr[r].all_iters = NULL; /* the report's (goodput's), not the view's */
        v->rr[r].nall_iters = 0;
        v->rr[r].iters = malloc((x->niters ? x->niters : 1) * sizeof(*x->iters));
        if (!v->rr[r].iters) {
            for (size_t q = 0; q < r; q++)
                free(v->rr[q].iters);
            free(v->rr);
            return -ENOMEM;
        }
        size_t k = 0;
        for (size_t i = 0; i < x->niters; i++)
            if (x->iters[i].index >= lo && x->iters[i].index <= hi)
                v->rr[r].iters[k++] = x->iters[i];
        v->rr[r].niters = k;
    }
    return 0;
}

static void view_free(struct ct_report *v)
{
    for (size_t r = 0; r < v->nr; r++)
        free(v->rr[r].iters);
    free(v->rr);
}

/* The earliest start over the ranks of step `index` in g's last replay
 * (INT64_MIN when no rank has it). */
static int64_t step_start(const struct ct_cp_graph *g, int64_t index)
{
    int64_t t = INT64_MIN;
    for (size_t r = 0; r < g->rep->nr; r++)
        for (size_t i = 0; i < g->rep->rr[r].niters; i++)
            if (g->rep->rr[r].iters[i].index == index) {
                int64_t v = g->pt[g->itp[r][2 * i]].v;
                t = t == INT64_MIN || v < t ? v : t;
            }
    return t;
}

/* One graph, walking steps first..last: out[0] its unscaled paths (and
 * their edges in pp, when not NULL), out[1 + k] the paths replayed with
 * sets[k]; next (when not INT64_MAX) is the step after last, in the graph
 * as context, whose start in each of those replays nstart[] gets. */
static int one(const struct ct_report *rep, size_t max_bytes, size_t give_up, int64_t first,
               int64_t last, int64_t next, const struct ct_cp_set *sets, size_t nsets,
               struct ct_cp_result *out, struct ct_cp_path *pp, int64_t *nstart, size_t *need)
{
    struct ct_cp_graph *g = NULL;
    int rc = ct_cp_build_from(rep, max_bytes, give_up, first, last, need, &g);
    for (size_t k = 0; k <= nsets && !rc; k++) {
        if (k && (rc = ct_cp_replay(g, sets[k - 1].sc, sets[k - 1].n)))
            break;
        if (!(rc = ct_cp_paths(g, &out[k])))
            nstart[k] = next != INT64_MAX ? step_start(g, next) : INT64_MIN;
        if (!rc && !k && pp)
            rc = ct_cp_path_edges(g, pp);
    }
    ct_cp_free(g);
    for (size_t k = 0; k <= nsets && rc; k++)
        ct_cp_result_free(&out[k]);
    if (rc && pp)
        ct_cp_path_free(pp);
    return rc;
}

static int append(void **dst, size_t *n, const void *src, size_t m, size_t size)
{
    if (!m)
        return 0;
    void *p = realloc(*dst, (*n + m) * size);
    if (!p)
        return -ENOMEM;
    memcpy((char *)p + *n * size, src, m * size);
    *dst = p;
    *n += m;
    return 0;
}

/* Adds chunk s (its steps, path, durations) to d, its span up to the next
 * chunk's first start (nstart, in the same replay), or to its last end.
 * 0 or -ENOMEM. */
static int merge(struct ct_cp_result *d, const struct ct_cp_result *s, int64_t nstart)
{
    if (!d->rank_time) {
        d->nranks = s->nranks;
        d->rank_time = calloc(s->nranks ? s->nranks : 1, sizeof(*d->rank_time));
        d->rank_num = malloc((s->nranks ? s->nranks : 1) * sizeof(*d->rank_num));
        if (!d->rank_time || !d->rank_num)
            return -ENOMEM;
        memcpy(d->rank_num, s->rank_num, s->nranks * sizeof(*d->rank_num));
    }
    size_t nsteps = d->nsteps, nsegs = d->nsegs;
    if (append((void **)&d->steps, &nsteps, s->steps, s->nsteps, sizeof(*s->steps)) ||
        append((void **)&d->segs, &nsegs, s->segs, s->nsegs, sizeof(*s->segs)) ||
        append((void **)&d->durs, &d->ndurs, s->durs, s->ndurs, sizeof(*s->durs)))
        return -ENOMEM;
    d->nsteps = nsteps, d->nsegs = nsegs;
    for (size_t r = 0; r < s->nranks && r < d->nranks; r++)
        d->rank_time[r] += s->rank_time[r];
    for (int c = 0; c < CT_CP_NCAT; c++)
        d->cat[c] += s->cat[c];
    d->total += s->total;
    d->unordered += s->unordered;
    d->graph_ops += s->graph_ops;
    d->graph_ops_edges += s->graph_ops_edges;
    if (s->nsteps) {
        int64_t lo = s->steps[0].start, hi = s->steps[0].end;
        for (size_t i = 1; i < s->nsteps; i++) {
            lo = s->steps[i].start < lo ? s->steps[i].start : lo;
            hi = s->steps[i].end > hi ? s->steps[i].end : hi;
        }
        d->span += (nstart != INT64_MIN ? nstart : hi) - lo;
    }
    d->chunks++;
    if (s->nsteps > d->chunk_steps)
        d->chunk_steps = s->nsteps;
    return 0;
}

/* Adds chunk s's path edges to d, whose steps so far (before s's are
 * merged) number `before`: an edge's step is its position among them. */
static int merge_path(struct ct_cp_path *d, struct ct_cp_path *s, size_t before)
{
    for (size_t i = 0; i < s->n; i++)
        s->v[i].step += before;
    if (append((void **)&d->v, &d->n, s->v, s->n, sizeof(*s->v)))
        return -ENOMEM;
    d->nsteps += s->nsteps;
    return 0;
}

static int finish(struct ct_cp_result *d)
{
    ct_cp_segs_fold(d);
    d->step_p50 = d->ndurs ? ct_median(d->durs, d->ndurs) : NAN;
    return 0;
}

/* The steps of a chunk that, with its context (2 steps), should take about half of
 * max_bytes, given that `steps` of them would need `need` bytes: a
 * graph's arrays double as they grow, so its capacity may pass its use by
 * up to 2x. At least 1, fewer than `steps`. */
static size_t chunk_size(size_t steps, size_t need, size_t max_bytes)
{
    double per = (double)need / (double)(steps ? steps : 1);
    double k = 0.5 * (double)max_bytes / (per > 1 ? per : 1) - 2;
    size_t n = k >= 1 ? (size_t)k : 1;
    return n < steps ? n : steps > 1 ? steps - 1 : 1;
}

int ct_cp_run(const struct ct_report *rep, size_t max_bytes, const struct ct_cp_scale *sc,
              size_t nsc, struct ct_cp_result *base, struct ct_cp_result *pred)
{
    struct ct_cp_set set = {sc, nsc};
    memset(pred, 0, sizeof(*pred));
    return ct_cp_run_sets(rep, max_bytes, 0, &set, nsc ? 1 : 0, base, pred, NULL);
}

int ct_cp_run_sets(const struct ct_report *rep, size_t max_bytes, size_t max_chunks,
                   const struct ct_cp_set *sets, size_t nsets, struct ct_cp_result *base,
                   struct ct_cp_result *preds, struct ct_cp_path *path)
{
    struct ct_cp_path ppart = {0};
    if (path)
        memset(path, 0, sizeof(*path));
    size_t m = nsets + 1, need = 0, ns = 0;
    /* acc: what is returned (base, then preds), part: one chunk's */
    struct ct_cp_result *acc = calloc(m, sizeof(*acc)), *part = calloc(m, sizeof(*part));
    int64_t *nst = malloc(m * sizeof(*nst));
    int64_t *idx = NULL;
    int rc = acc && part && nst ? 0 : -ENOMEM;
    if (!rc)
        rc = one(rep, max_bytes, max_chunks * max_bytes, INT64_MIN, INT64_MAX, INT64_MAX, sets,
                 nsets, acc, path, nst, &need);
    if (!rc)
        for (size_t q = 0; q < m; q++)
            acc[q].chunks = 1, acc[q].chunk_steps = acc[q].nsteps;
    if (rc == -E2BIG) {
        rc = (idx = step_indexes(rep, &ns)) ? 0 : -ENOMEM;
        size_t k = chunk_size(ns, need, max_bytes);
        if (!rc && (ns < 2 || (max_chunks && (ns + k - 1) / k > max_chunks)))
            rc = -E2BIG;
        for (size_t i = 0; i < ns && !rc;) {
            size_t j = i + k < ns ? i + k : ns;
            struct ct_report v;
            if ((rc = view_of(rep, idx[i ? i - 1 : 0], idx[j < ns ? j : j - 1], &v)))
                break;
            rc = one(&v, max_bytes, 0, i ? idx[i] : INT64_MIN, idx[j - 1],
                     j < ns ? idx[j] : INT64_MAX, sets, nsets, part, path ? &ppart : NULL, nst,
                     &need);
            view_free(&v);
            if (rc == -E2BIG && j - i > 1) { /* this part of the run is denser: smaller chunks */
                size_t nk = chunk_size(j - i + (i > 0) + (j < ns), need, max_bytes);
                k = nk < j - i ? nk : j - i - 1;
                rc = max_chunks && (ns - i + k - 1) / k > max_chunks ? -E2BIG : 0;
                continue;
            }
            if (path)
                rc = merge_path(path, &ppart, acc[0].nsteps);
            for (size_t q = 0; q < m && !rc; q++)
                rc = merge(&acc[q], &part[q], nst[q]);
            for (size_t q = 0; q < m; q++)
                ct_cp_result_free(&part[q]);
            ct_cp_path_free(&ppart);
            i = j;
        }
        for (size_t q = 0; q < m && !rc; q++)
            rc = finish(&acc[q]);
    }
    if (rc && acc)
        for (size_t q = 0; q < m; q++)
            ct_cp_result_free(&acc[q]);
    if (rc && path)
        ct_cp_path_free(path);
    if (acc) {
        *base = acc[0];
        for (size_t q = 0; q < nsets; q++)
            preds[q] = acc[q + 1];
    } else {
        memset(base, 0, sizeof(*base));
        memset(preds, 0, nsets * sizeof(*preds));
    }
    free(acc);
    free(part);
    free(nst);
    free(idx);
    return rc;
}
