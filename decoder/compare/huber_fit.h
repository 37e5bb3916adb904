/*
 * Huber's M-estimate of y on the columns of X, robust to a few rows slowed
 * by what no column records (decoder/compare/huber_fit.c).
 */
#ifndef CT_HUBER_FIT_H
#define CT_HUBER_FIT_H

#include <stddef.h>

/* columns of one model: the intercept and what entered */
#define CT_HUBER_MAXP 24

struct ct_huber_fit {
    int ok, aliased;
    size_t n, p;
    double beta[CT_HUBER_MAXP], se[CT_HUBER_MAXP];
    double df, scale;
    /* per 0/1 column: the jobs with it and without it whose residual the
     * fit did not clip (what its estimate rests on) */
    double eff1[CT_HUBER_MAXP], eff0[CT_HUBER_MAXP];
};

/* The fit of y on the columns X[0..p) over the rows with use[i] > 0 (X[0]
 * is the intercept); scratch holds 4n doubles. f->aliased when a column is
 * a combination of the others over those rows; f->ok when it holds. */
void ct_huber_fit(const double *y, const double *const *X, size_t p, size_t n, const double *use,
                  double *scratch, struct ct_huber_fit *f);

#endif
