/*
 * What `fleet explain` found (fleet_pin.c), for its writers (fleet_out.c).
 * Effects are on the log scale of the metric (step time) inside the model;
 * the *_pct figures are exp(.) - 1 in percent. Intervals are at the
 * false-coverage-rate level of the explanation (level), corrected for the
 * number of candidate factors tried (docs/fleet.md "Statistics").
 */
#ifndef CT_FLEET_PIN_H
#define CT_FLEET_PIN_H

#include <stddef.h>
#include <stdint.h>

#include "decoder/compare/fleet.h"

/* A part of the step a factor's effect is carried by: the same model on
 * that figure (µs per step, or busbw on the log scale). */
enum {
    CT_FX_STEP_MEAN = 0, /* the mean step (µs), about the sum of the parts below */
    CT_FX_COMPUTE,
    CT_FX_EXPOSED, /* exposed communication, waits for a late rank left out */
    CT_FX_WAIT,    /* waiting in collectives for the last rank (stragglers) */
    CT_FX_DATA,
    CT_FX_CKPT,
    CT_FX_IDLE, /* GPU idle that is neither */
    CT_FX_NPARTS
};
const char *ct_fx_part_name(int k); /* "step_mean", "compute", ... */

/* the fewest jobs on each side of a candidate value or a change point */
#define CT_FX_MIN_SIDE 3

struct ct_fx_part {
    int ok;              /* fitted (enough jobs with the figure) */
    double beta, lo, hi; /* µs per step */
    double share;        /* beta / the mean step's beta, NAN when that is ~0 */
};

struct ct_fx_finding {
    size_t w;             /* workload index */
    char *factor, *value; /* "nccl_version", "2.27.3" */
    char *baseline;       /* the value compared against; NULL: jobs without this value */
    char **aliases;       /* "factor=value" always seen together with it (confounded) */
    size_t nalias;
    size_t n_with, n_without;          /* jobs */
    double beta, se, df, p, q, lo, hi; /* log step, interval at the explanation's level */
    double effect_pct, lo_pct, hi_pct;
    int change; /* +2 pinned slower, +1 slower possibly below min effect, -1, -2 faster */
    struct ct_fx_part part[CT_FX_NPARTS];
    int carrier; /* the part that carries most of it, -1 none */
    char *coll;  /* the workload's main collective ("AllReduce:BYTES"), NULL none */
    int busbw_ok;
    double busbw_pct, busbw_lo, busbw_hi;
};

/* A change point of a workload's step time over its run starts. */
struct ct_fx_change {
    size_t w;
    size_t at;     /* the first job after it (index in the workload's jobs) */
    int64_t at_us; /* its run start */
    double effect_pct, lo_pct, hi_pct, p;
    char **changed; /* "driver: 550 -> 560": factors whose value changed there */
    size_t nchanged;
};

struct ct_fx_workload {
    const char *name;
    size_t *jobs; /* indexes into the jobs, run-start order, those with a step time */
    size_t n;
    size_t ncand; /* candidate columns tested (confounded ones counted once) */
    size_t nselected;
    const char *skipped; /* why the workload was not modelled, NULL when it was */
    double median_step;  /* µs */
    double sigma;        /* the model's residual scale (log step) */
};

struct ct_fleet_explain {
    struct ct_fleet_explain_opts o;
    const struct ct_fleet_jobs *js;
    struct ct_fx_workload *w;
    size_t nw;
    size_t m;                /* candidates tried over every workload */
    double level;            /* the intervals' coverage: 1 - R * alpha / m */
    struct ct_fx_finding *f; /* discoveries, by factor then workload */
    size_t nf;
    struct ct_fx_change *c;
    size_t nc;
    size_t cp_tested; /* workloads tested for change points */
};

/* The change points of workload w from its log step times y in run-start
 * order, added to x->c; ntested: the candidates tried, which sets the
 * threshold (fleet_change_points.c). 0 or -ENOMEM. */
int ct_fx_change_points(struct ct_fleet_explain *x, size_t w, const double *y, size_t ntested);

#endif
