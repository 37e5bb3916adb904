/* Collectives in flight in a possibly hung job (decoder/analysis/hang.c). */
#ifndef CT_HANG_H
#define CT_HANG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct ct_report;
struct ct_nccl_call;

/* One pending collective (communicator, sequence) that some members have
 * not issued: who waits in it since when, and who it waits for. */
struct ct_hang_wait {
    const struct ct_nccl_call *op; /* as the first waiting rank issued it */
    const int *waiting;            /* global ranks that issued it, pending */
    size_t nwaiting;
    /* members it waits for: ranks in the traces that never issued it, and
     * (comm size known, their comm ranks never seen) the ranks that left
     * no trace, by global rank when every member present has its global
     * rank as its comm rank (a world communicator), else -1 */
    const int *missing;
    size_t nmissing;
    const int *absent_comm; /* comm ranks of members with no trace */
    size_t nabsent;
    int64_t since; /* earliest issue of it among the waiting ranks (job clock) */
    int64_t until; /* the latest time the windows show */
};

/* Calls fn once per such collective. 0 or -ENOMEM. */
int ct_hang_waits(const struct ct_report *rep, void (*fn)(void *ctx, const struct ct_hang_wait *w),
                  void *ctx);

/* 1 when the inputs hold a flight-recorder window and some rank has NCCL
 * ops pending (no GPU completion) after its last completed one. */
int ct_hang_present(const struct ct_report *rep);
/* The text section (nothing when not present). */
void ct_hang_text(FILE *f, const struct ct_report *rep);
/* `"in_flight":null` or the object (no comma around it). */
void ct_hang_json(FILE *f, const struct ct_report *rep);

#endif
