/* Text and JSON renderings of critical paths and what-if predictions
 * (decoder/analysis/critical_path.h); schema in docs/critical-path.md. */
#ifndef CT_CRITICAL_PATH_OUT_H
#define CT_CRITICAL_PATH_OUT_H

#include <stdio.h>

#include "decoder/analysis/critical_path.h"

/* The critical-path object (no newline); t0: the job's time origin. top:
 * segments listed (text), 0 all (JSON always lists all). */
void ct_cp_json(FILE *f, const struct ct_cp_result *r, int64_t t0);
void ct_cp_text(FILE *f, const struct ct_cp_result *r, size_t top);

/* `cutrace whatif`: measured (the report's median step, ns), the
 * unscaled replay's and the scaled replay's results, the selectors;
 * models (NULL: none) the transfer models net= and link= scaled by
 * (decoder/analysis/xfer_model.h). */
struct ct_xfer_model;
struct ct_whatif_out {
    double measured;
    const struct ct_cp_result *base, *pred;
    char **specs;
    size_t nspecs;
    const struct ct_xfer_model *models;
    size_t nmodels;
    const struct ct_cp_comm_factor *links; /* link= selectors' communicators */
    size_t nlinks;
};
void ct_whatif_json(FILE *f, const struct ct_whatif_out *w, int64_t t0);
void ct_whatif_text(FILE *f, const struct ct_whatif_out *w);

#endif
