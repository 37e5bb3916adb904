/*
 * The transfer model of each collective kind: t(S) = latency + S x
 * ns_per_byte, fitted by least squares over the kind's sizes, one point a
 * size (its matched instances' median transfer, rep->coll): a size run a
 * thousand times says no more about the line than one run ten times, and
 * a median per size keeps the fit off the noise of single ops. NCCL's own
 * cost model has this form per algorithm and protocol (a latency per
 * step and a bandwidth per link); a job whose sizes switch NCCL between
 * algorithms fits a line through both, and the fit error says how well.
 */
#include "decoder/analysis/xfer_model.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "decoder/analysis/analysis.h"

const char *ct_xfer_status_name(int status)
{
    switch (status) {
    case CT_XFER_FITTED: return "fitted";
    case CT_XFER_ONE_SIZE: return "one size";
    case CT_XFER_NO_SLOPE: return "latency-bound";
    default: return "unmatched";
    }
}

/* The fit of model m over the rows of its kind (op, nranks). */
static void fit(const struct ct_report *rep, struct ct_xfer_model *m)
{
    double sx = 0, sy = 0, k = 0;
    m->lat_ns = m->ns_per_byte = m->fit_err_pct = NAN;
    for (size_t i = 0; i < rep->ncoll; i++) {
        const struct ct_coll_row *c = &rep->coll[i];
        if (c->op != m->op || c->nranks != m->nranks || !c->matched || !isfinite(c->transfer_p50))
            continue;
        m->sizes++;
        m->matched += c->matched;
        m->min_bytes = !m->min_bytes || c->bytes < m->min_bytes ? c->bytes : m->min_bytes;
        m->max_bytes = c->bytes > m->max_bytes ? c->bytes : m->max_bytes;
        sx += (double)c->bytes;
        sy += c->transfer_p50;
        k++;
    }
    if (!m->sizes) {
        m->status = CT_XFER_UNMATCHED;
        return;
    }
    if (m->sizes < 2 || (double)m->max_bytes < CT_XFER_SIZE_SPREAD * (double)m->min_bytes) {
        m->status = CT_XFER_ONE_SIZE;
        return;
    }
    double mx = sx / k, my = sy / k, sxx = 0, sxy = 0, s0xx = 0, s0xy = 0;
    for (size_t i = 0; i < rep->ncoll; i++) {
        const struct ct_coll_row *c = &rep->coll[i];
        if (c->op != m->op || c->nranks != m->nranks || !c->matched || !isfinite(c->transfer_p50))
            continue;
        double x = (double)c->bytes, y = c->transfer_p50;
        sxx += (x - mx) * (x - mx);
        sxy += (x - mx) * (y - my);
        s0xx += x * x;
        s0xy += x * y;
    }
    double b = sxy / sxx, a = my - b * mx;
    if (a < 0) { /* the line through the origin: no latency is the least there is */
        a = 0;
        b = s0xy / s0xx;
    }
    if (!(b > 0)) {
        m->status = CT_XFER_NO_SLOPE;
        return;
    }
    m->status = CT_XFER_FITTED;
    m->lat_ns = a;
    m->ns_per_byte = b;
    if (m->sizes < 3)
        return; /* a line through two points: nothing left to check it */
    double r2 = 0;
    for (size_t i = 0; i < rep->ncoll; i++) {
        const struct ct_coll_row *c = &rep->coll[i];
        if (c->op != m->op || c->nranks != m->nranks || !c->matched || !isfinite(c->transfer_p50) ||
            !(c->transfer_p50 > 0))
            continue;
        double e = (c->transfer_p50 - (a + b * (double)c->bytes)) / c->transfer_p50;
        r2 += e * e;
    }
    m->fit_err_pct = 100 * sqrt(r2 / k);
}

int ct_xfer_models(const struct ct_report *rep, struct ct_xfer_model **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    struct ct_xfer_model *m = NULL;
    size_t nm = 0;
    for (size_t i = 0; i < rep->ncoll; i++) {
        const struct ct_coll_row *c = &rep->coll[i];
        if (ct_xfer_model_of(m, nm, c->op, c->nranks))
            continue;
        struct ct_xfer_model *g = realloc(m, (nm + 1) * sizeof(*m));
        if (!g) {
            free(m);
            return -ENOMEM;
        }
        m = g;
        m[nm] = (struct ct_xfer_model){.op = c->op, .nranks = c->nranks};
        fit(rep, &m[nm++]);
    }
    *out = m;
    *n = nm;
    return 0;
}

const struct ct_xfer_model *ct_xfer_model_of(const struct ct_xfer_model *m, size_t n, int op,
                                             int nranks)
{
    for (size_t i = 0; i < n; i++)
        if (m[i].op == op && m[i].nranks == nranks)
            return &m[i];
    return NULL;
}

int64_t ct_xfer_scaled(const struct ct_xfer_model *m, int64_t w, double f)
{
    if (w <= 0)
        return w;
    if (m && m->status == CT_XFER_NO_SLOPE)
        return w;
    double lat = m && m->status == CT_XFER_FITTED ? fmin(m->lat_ns, (double)w) : 0;
    return (int64_t)llround(lat + ((double)w - lat) * f);
}
