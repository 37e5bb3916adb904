/*
 * `cutrace diagnose`: findings from one job's report, ranked by the time
 * they would save per iteration if fixed, each with the evidence it rests
 * on and a confidence; and the diagnoses that could not be checked for
 * lack of evidence. Kinds, rules and the JSON shape: docs/diff.md.
 */
#ifndef CT_DIAGNOSE_H
#define CT_DIAGNOSE_H

#include <stddef.h>
#include <stdio.h>

#include "decoder/analysis/analysis.h"
#include "decoder/compare/runs.h"

enum ct_finding_kind {
    CT_FK_EXPOSED_COMM = 0,
    CT_FK_SLOW_COLLECTIVE,
    CT_FK_COMPUTE_STRAGGLER,
    CT_FK_HOST_STRAGGLER,
    CT_FK_STAGE_IMBALANCE,
    CT_FK_EXCESS_BUBBLE,
    CT_FK_DATA_STALL,
    CT_FK_CKPT_STALL,
    CT_FK_LAUNCH_BOUND,
    CT_FK_SYNC_DRAIN,
    CT_FK_PAGEABLE_MEMCPY,
    CT_FK_THROTTLED_GPU,    /* health counters: slow kernels under clock throttling */
    CT_FK_HOST_CONTENTION,  /* health counters: slow iterations under CPU run-queue pressure */
    CT_FK_HANG,             /* flight-recorder windows: a collective some members never issued */
    CT_FK_LOW_TENSOR,       /* GPM: a GEMM family with its tensor pipes idle most of its time */
    CT_FK_MEMORY_PHASE,     /* GPM: a memory-bound family: a fusion candidate */
    CT_FK_SLOW_LINK,        /* NCCL proxy steps: a link slower than its communicator's others */
    CT_FK_NVLINK_SATURATED, /* GPM: NVLink near its peak during collectives, PCIe idle */
    CT_FK_NCCL_CHOICE,      /* a size slower than the next smaller under another algo/proto */
    CT_FK_COUNT
};

/* Frees what the findings of d hold (their rank lists). */
struct ct_diagnosis;
void ct_diagnosis_free(struct ct_diagnosis *d);

/* The fixed `kind` string of a finding ("exposed_communication", ...). */
const char *ct_finding_kind_name(int kind);

#define CT_EV_MAX 10

struct ct_evidence {
    const char *key; /* static */
    double num;      /* used when str is empty */
    char str[160];
};

struct ct_finding {
    int kind;
    int *ranks; /* every rank it concerns (malloc'ed; ct_diagnosis_free) */
    size_t nranks, capranks;
    double saving_us; /* per iteration; NaN: not quantified (ct_dg_add_unquantified) */
    double confidence;
    /* the fix as `cutrace whatif` selectors, space-separated ("" where a
     * fix is no scaling of recorded work); where the job's graph was
     * replayed with them, saving_us is the replay's and formula_saving_us
     * what the check's own formula gave */
    char whatif[160];
    int from_replay;
    double formula_saving_us;
    struct ct_evidence ev[CT_EV_MAX];
    size_t nev;
    char summary[320];
    /* why confidence is lower than the check's own (damaged or untimed
     * evidence: ct_dg_coverage), "" when it is not */
    char confidence_note[300];
};

struct ct_insufficient {
    int kind;
    char reason[256];
};

/* A finding its check made that the replay found not worth the threshold
 * (the fix buys less than min_saving of the step across the job). */
struct ct_dismissed {
    int kind;
    double formula_saving_us, saving_us;
    char whatif[160];
};

struct ct_diagnosis {
    struct ct_finding f[4 * CT_FK_COUNT];
    size_t nf;
    struct ct_dismissed dis[4 * CT_FK_COUNT];
    size_t ndis;
    struct ct_insufficient ins[CT_FK_COUNT];
    size_t nins;
    double step_us; /* median iteration over ranks */
    size_t iterations;
    /* the replay savings rest on: whether the graph was replayed, and if
     * not why (every saving is then its check's formula) */
    int replayed;
    size_t replay_chunks; /* the graphs it was replayed over: 1, or chunks of steps */
    char replay_note[200];
};

struct ct_diag_opts {
    double min_saving;  /* fraction of step time, 0.02 */
    size_t graph_bytes; /* the largest replay graph; 0: CT_CP_SIDE_BYTES */
};

/* Runs every check on rep (the pageable-copy check reads the copy facts of
 * its job's traces, decoder/read/facts.h). Findings are sorted by saving,
 * largest first. 0 or -ENOMEM. */
int ct_diagnose(const struct ct_report *rep, const struct ct_diag_opts *o, struct ct_diagnosis *d);

void ct_diagnosis_json(FILE *f, const struct ct_diagnosis *d, double min_saving);
void ct_diagnosis_text(FILE *f, const struct ct_diagnosis *d, double min_saving);

#endif
