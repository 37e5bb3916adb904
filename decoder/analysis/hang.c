/*
 * Collectives in flight: what a possibly hung job was waiting in. Shown
 * when the inputs include a flight-recorder window (CUTRACE_FLIGHT: written
 * on a suspected hang, SIGUSR2, `cutrace dump-now` or a fatal signal) and
 * some rank has NCCL ops without a GPU completion after its last completed
 * one.
 *
 * Per rank: the last completed op (the latest with a GPU interval) and the
 * pending ones (issued after it, no GPU interval). Across ranks: for each
 * pending collective (communicator, sequence), the member ranks that have
 * not issued it — usually the culprit of a hang: everyone else waits in
 * that collective for them.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/analysis.h"
#include "decoder/analysis/hang.h"
#include "decoder/util/names.h"

static int is_flight(const struct ct_rank *r)
{
    for (size_t i = 0; i < r->nprocs; i++)
        if (r->procs[i]->path && strstr(r->procs[i]->path, "-flight"))
            return 1;
    return 0;
}

/* Index of the last completed op of rank r (-1 none); *first_pending the
 * index from which ops are pending (nnccl when none). */
static long last_done(const struct ct_rank *r, size_t *first_pending)
{
    long last = -1;
    for (size_t i = 0; i < r->nnccl; i++)
        if (r->nccl[i].e > 0)
            last = (long)i;
    *first_pending = r->nnccl;
    if (last < 0)
        return -1; /* no GPU times at all: nothing can be said to be pending */
    for (size_t i = (size_t)last + 1; i < r->nnccl; i++)
        if (r->nccl[i].e == 0) {
            *first_pending = i;
            break;
        }
    return last;
}

int ct_hang_present(const struct ct_report *rep)
{
    int flight = 0, pending = 0;
    for (size_t k = 0; k < rep->nr; k++) {
        const struct ct_rank *r = rep->rr[k].rank;
        flight |= is_flight(r);
        size_t fp;
        last_done(r, &fp);
        pending |= fp < r->nnccl;
    }
    return flight && pending;
}

static int is_coll(int op)
{
    return op != CT_NCCL_OP_SEND && op != CT_NCCL_OP_RECV;
}

/* Whether rank r has a collective (comm, seq) at all, and is a member of
 * comm (any op on it). */
static void has_op(const struct ct_rank *r, uint64_t comm, uint64_t seq, int *member, int *issued)
{
    *member = *issued = 0;
    for (size_t i = 0; i < r->nnccl; i++) {
        const struct ct_nop *o = &r->nccl[i];
        if (o->comm != comm)
            continue;
        *member = 1;
        if (is_coll(o->op) && o->seq == seq)
            *issued = 1;
    }
}

/* Calls fn once per pending collective (communicator, sequence) that some
 * member ranks have not issued, with those ranks. */
typedef void (*wait_fn)(void *ctx, const struct ct_nop *o, const int *missing, size_t nmissing);

static void for_each_wait(const struct ct_report *rep, wait_fn fn, void *ctx)
{
    int *missing = malloc((rep->nr ? rep->nr : 1) * sizeof(*missing));
    if (!missing)
        return;
    for (size_t k = 0; k < rep->nr; k++) {
        const struct ct_rank *r = rep->rr[k].rank;
        size_t fp;
        last_done(r, &fp);
        for (size_t i = fp; i < r->nnccl; i++) {
            const struct ct_nop *o = &r->nccl[i];
            if (o->e != 0 || !is_coll(o->op))
                continue;
            /* each (comm, seq) once: at its first rank that issued it */
            int first = 1;
            for (size_t j = 0; j < k && first; j++) {
                int member, issued;
                has_op(rep->rr[j].rank, o->comm, o->seq, &member, &issued);
                first = !(member && issued);
            }
            if (!first)
                continue;
            size_t n = 0;
            for (size_t j = 0; j < rep->nr; j++) {
                int member, issued;
                has_op(rep->rr[j].rank, o->comm, o->seq, &member, &issued);
                if (member && !issued)
                    missing[n++] = rep->rr[j].rank->rank;
            }
            if (n)
                fn(ctx, o, missing, n);
        }
    }
    free(missing);
}

static double us_of(const struct ct_report *rep, int64_t t)
{
    return (double)(t - rep->job->t0) / 1000.0;
}

static void wait_text(void *ctx, const struct ct_nop *o, const int *missing, size_t n)
{
    FILE *f = ctx;
    fprintf(f, "  %s comm %016" PRIx64 " seq %" PRIu64 " waits for rank(s):",
            ct_name_nccl_op((uint64_t)o->op), o->comm, o->seq);
    for (size_t i = 0; i < n; i++)
        fprintf(f, " %d", missing[i]);
    fprintf(f, " (not issued there)\n");
}

void ct_hang_text(FILE *f, const struct ct_report *rep)
{
    if (!ct_hang_present(rep))
        return;
    fprintf(f, "\nCollectives in flight (flight-recorder window; the job may be hung):\n");
    for (size_t k = 0; k < rep->nr; k++) {
        const struct ct_rank *r = rep->rr[k].rank;
        size_t fp;
        long ld = last_done(r, &fp);
        fprintf(f, "  rank %-4d last completed: ", r->rank);
        if (ld < 0)
            fprintf(f, "none");
        else
            fprintf(f, "%s comm %016" PRIx64 " seq %" PRIu64 " (ended at %.1f us)",
                    ct_name_nccl_op((uint64_t)r->nccl[ld].op), r->nccl[ld].comm, r->nccl[ld].seq,
                    us_of(rep, r->nccl[ld].e));
        fprintf(f, "\n");
        for (size_t i = fp; i < r->nnccl; i++)
            if (r->nccl[i].e == 0)
                fprintf(f,
                        "            pending: %s comm %016" PRIx64 " seq %" PRIu64
                        " (issued at %.1f us)\n",
                        ct_name_nccl_op((uint64_t)r->nccl[i].op), r->nccl[i].comm, r->nccl[i].seq,
                        us_of(rep, r->nccl[i].host_s));
    }
    for_each_wait(rep, wait_text, f);
}

static void op_json(FILE *f, const struct ct_report *rep, const struct ct_nop *o, int done)
{
    fprintf(f, "{\"op\":\"%s\",\"comm_hash\":\"%016" PRIx64 "\",\"seq\":%" PRIu64 ",",
            ct_name_nccl_op((uint64_t)o->op), o->comm, o->seq);
    if (done)
        fprintf(f, "\"end_us\":%.3f}", us_of(rep, o->e));
    else
        fprintf(f, "\"issued_us\":%.3f}", us_of(rep, o->host_s));
}

struct wait_json {
    FILE *f;
    int first;
};

static void wait_json(void *ctx, const struct ct_nop *o, const int *missing, size_t n)
{
    struct wait_json *w = ctx;
    fprintf(w->f,
            "%s{\"op\":\"%s\",\"comm_hash\":\"%016" PRIx64 "\",\"seq\":%" PRIu64
            ",\"missing_ranks\":[",
            w->first ? "" : ",", ct_name_nccl_op((uint64_t)o->op), o->comm, o->seq);
    for (size_t i = 0; i < n; i++)
        fprintf(w->f, "%s%d", i ? "," : "", missing[i]);
    fprintf(w->f, "]}");
    w->first = 0;
}

void ct_hang_json(FILE *f, const struct ct_report *rep)
{
    if (!ct_hang_present(rep)) {
        fprintf(f, "\"in_flight\":null");
        return;
    }
    fprintf(f, "\"in_flight\":{\"ranks\":[");
    for (size_t k = 0; k < rep->nr; k++) {
        const struct ct_rank *r = rep->rr[k].rank;
        size_t fp;
        long ld = last_done(r, &fp);
        fprintf(f, "%s{\"rank\":%d,\"last_completed\":", k ? "," : "", r->rank);
        if (ld < 0)
            fprintf(f, "null");
        else
            op_json(f, rep, &r->nccl[ld], 1);
        fprintf(f, ",\"pending\":[");
        int first = 1;
        for (size_t i = fp; i < r->nnccl; i++)
            if (r->nccl[i].e == 0) {
                fprintf(f, "%s", first ? "" : ",");
                op_json(f, rep, &r->nccl[i], 0);
                first = 0;
            }
        fprintf(f, "]}");
    }
    fprintf(f, "],\"waiting_for\":[");
    struct wait_json w = {f, 1};
    for_each_wait(rep, wait_json, &w);
    fprintf(f, "]}");
}
