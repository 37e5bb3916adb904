/*
 * The HTML report's "Critical path" section: its figures as "cp":{...} in
 * the page's data (decoder/export/html_page.html draws them). Bounded
 * whatever the job: the composition over the run, per step in at most
 * CT_HTML_CP_COLS columns (each the sum over a run of steps), the
 * CT_HTML_CP_TOP longest segment rows, and the path of the median step
 * (the step of median length, the lower one of an even count) with at most
 * CT_HTML_CP_EDGES edges, the longest, the rest counted and summed. When
 * the graph was not built, "cp" carries the reason and nothing else: the
 * page never draws a figure it does not have.
 *
 *   "cp":{"built":1,"steps":N,"total":NS,"cats":[name...],"cat":[NS...],
 *         "cols":[[first_index,last_index,NS per category...]...],
 *         "top":[[rank,cat,name|null,stream|null,NS,count]...],
 *         "median":{"index":I,"start":NS,"end":NS,"left_out":K,
 *                   "left_out_ns":NS,"edges":[[rank,cat,s,e,name|null]...]}}
 *   "cp":{"built":0,"why":"..."}
 * Times are ns since the job's time zero, as the rest of the page.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/export/html_int.h"
#include "decoder/util/demangle.h"

#define CT_HTML_CP_COLS  200
#define CT_HTML_CP_TOP   20
#define CT_HTML_CP_EDGES 400

static void name_or_null(FILE *f, const char *name)
{
    char dm[512];
    if (name)
        ct_html_str(f, ct_demangle(name, dm, sizeof(dm)));
    else
        fputs("null", f);
}

static int cmp_len(const void *a, const void *b, void *arg)
{
    const struct ct_cp_step *st = arg;
    const struct ct_cp_step *x = &st[*(const size_t *)a], *y = &st[*(const size_t *)b];
    int64_t p = x->end - x->start, q = y->end - y->start;
    if (p != q)
        return p < q ? -1 : 1;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

static int cmp_dur_desc(const void *a, const void *b)
{
    const struct ct_cp_pedge *x = *(const struct ct_cp_pedge *const *)a,
                             *y = *(const struct ct_cp_pedge *const *)b;
    int64_t p = x->e - x->s, q = y->e - y->s;
    if (p != q)
        return p > q ? -1 : 1;
    return x < y ? -1 : 1;
}

static int cmp_ptr(const void *a, const void *b)
{
    const struct ct_cp_pedge *x = *(const struct ct_cp_pedge *const *)a,
                             *y = *(const struct ct_cp_pedge *const *)b;
    return x < y ? -1 : x > y;
}

/* The median step (by length) among r's steps, or SIZE_MAX when none or
 * out of memory. */
static size_t median_step(const struct ct_cp_result *r)
{
    size_t *o = malloc((r->nsteps ? r->nsteps : 1) * sizeof(*o));
    if (!o || !r->nsteps) {
        free(o);
        return SIZE_MAX;
    }
    for (size_t i = 0; i < r->nsteps; i++)
        o[i] = i;
    qsort_r(o, r->nsteps, sizeof(*o), cmp_len, r->steps);
    size_t m = o[(r->nsteps - 1) / 2];
    free(o);
    return m;
}

/* "median":{...}: the median step's edges, the longest CT_HTML_CP_EDGES
 * in time order. */
static void median_json(FILE *f, const struct ct_cp_result *r, const struct ct_cp_path *p,
                        int64_t t0)
{
    size_t m = median_step(r);
    if (m == SIZE_MAX) {
        fputs("\"median\":null", f);
        return;
    }
    size_t a = 0;
    while (a < p->n && p->v[a].step < m)
        a++;
    size_t b = a;
    while (b < p->n && p->v[b].step == m)
        b++;
    size_t n = b - a, keep = n < CT_HTML_CP_EDGES ? n : CT_HTML_CP_EDGES;
    const struct ct_cp_pedge **e = malloc((n ? n : 1) * sizeof(*e));
    if (!e)
        keep = 0;
    int64_t left_ns = 0;
    for (size_t i = 0; e && i < n; i++)
        e[i] = &p->v[a + i];
    if (e && keep < n) { /* the longest, back in time order */
        qsort(e, n, sizeof(*e), cmp_dur_desc);
        for (size_t i = keep; i < n; i++)
            left_ns += e[i]->e - e[i]->s;
        qsort(e, keep, sizeof(*e), cmp_ptr);
    }
    const struct ct_cp_step *st = &r->steps[m];
    fprintf(f,
            "\"median\":{\"index\":%" PRId64 ",\"start\":%" PRId64 ",\"end\":%" PRId64
            ",\"left_out\":%zu,\"left_out_ns\":%" PRId64 ",\"edges\":[",
            st->index, st->start - t0, st->end - t0, n - keep, left_ns);
    for (size_t i = 0; i < keep; i++) {
        fprintf(f, "%s[%d,%d,%" PRId64 ",%" PRId64 ",", i ? "," : "", e[i]->rank, e[i]->cat,
                e[i]->s - t0, e[i]->e - t0);
        name_or_null(f, e[i]->name);
        fputc(']', f);
    }
    fputs("]}", f);
    free(e);
}

void ct_html_cp_json(FILE *f, const struct ct_report *rep, const struct ct_html_cp *cp)
{
    if (!cp || !cp->res || !cp->path) {
        fputs("\"cp\":{\"built\":0,\"why\":", f);
        ct_html_str(f, cp && cp->why ? cp->why : "the critical path was not computed");
        fputc('}', f);
        return;
    }
    const struct ct_cp_result *r = cp->res;
    const int64_t t0 = rep->job->t0;
    fprintf(f, "\"cp\":{\"built\":1,\"steps\":%zu,\"total\":%" PRId64 ",\"cats\":[", r->nsteps,
            r->total);
    for (int c = 0; c < CT_CP_NCAT; c++)
        fprintf(f, "%s\"%s\"", c ? "," : "", ct_cp_cat_name(c));
    fputs("],\"cat\":[", f);
    for (int c = 0; c < CT_CP_NCAT; c++)
        fprintf(f, "%s%" PRId64, c ? "," : "", r->cat[c]);
    fputs("],\"cols\":[", f);
    size_t ns = r->nsteps, nc = ns < CT_HTML_CP_COLS ? ns : CT_HTML_CP_COLS;
    for (size_t c = 0; c < nc; c++) {
        size_t lo = c * ns / nc, hi = (c + 1) * ns / nc;
        int64_t sum[CT_CP_NCAT] = {0};
        for (size_t i = lo; i < hi; i++)
            for (int k = 0; k < CT_CP_NCAT; k++)
                sum[k] += r->steps[i].cat[k];
        fprintf(f, "%s[%" PRId64 ",%" PRId64, c ? "," : "", r->steps[lo].index,
                r->steps[hi - 1].index);
        for (int k = 0; k < CT_CP_NCAT; k++)
            fprintf(f, ",%" PRId64, sum[k]);
        fputc(']', f);
    }
    fputs("],\"top\":[", f);
    for (size_t i = 0; i < r->nsegs && i < CT_HTML_CP_TOP; i++) {
        const struct ct_cp_seg *s = &r->segs[i];
        fprintf(f, "%s[%d,%d,", i ? "," : "", s->rank, s->cat);
        name_or_null(f, s->name);
        if (ct_cp_cat_gpu(s->cat))
            fprintf(f, ",%" PRIu32, s->stream);
        else
            fputs(",null", f);
        fprintf(f, ",%" PRId64 ",%" PRIu64 "]", s->dur, s->count);
    }
    fputs("],", f);
    median_json(f, r, cp->path, t0);
    fputc('}', f);
}
