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
 * that collective for them. A culprit with nothing pending wrote no window
 * (the hang detector fires on pending ops), so it is missing from the
 * inputs: the communicator's size says which comm ranks never showed up,
 * and on a world communicator (every member's comm rank is its global
 * rank) which ranks those are.
 */
#include <errno.h>
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

/* Whether rank r is a member of comm (any op on it), its comm rank there,
 * and whether it issued the collective (comm, seq). */
static void has_op(const struct ct_rank *r, uint64_t comm, uint64_t seq, int *member, int *issued,
                   int32_t *comm_rank)
{
    *member = *issued = 0;
    *comm_rank = -1;
    for (size_t i = 0; i < r->nnccl; i++) {
        const struct ct_nccl_call *o = &r->nccl[i];
        if (o->comm != comm)
            continue;
        *member = 1;
        *comm_rank = o->comm_rank;
        if (is_coll(o->op) && o->seq == seq)
            *issued = 1;
    }
}

/* The latest time the windows show: when they were written (their own
 * records), else their latest op. */
static int64_t latest(const struct ct_report *rep)
{
    int64_t t = INT64_MIN;
    for (size_t k = 0; k < rep->nr; k++) {
        const struct ct_rank *r = rep->rr[k].rank;
        for (size_t i = 0; i < r->nprocs; i++)
            if (r->procs[i]->last_ns > t)
                t = r->procs[i]->last_ns;
        if (r->nnccl && r->nccl[r->nnccl - 1].host_e > t)
            t = r->nccl[r->nnccl - 1].host_e;
        for (size_t i = 0; i < r->nprocs; i++) /* the latest op end (ct_proc_settle) */
            if (r->procs[i]->gpu_hi > t)
                t = r->procs[i]->gpu_hi;
    }
    return t;
}

int ct_hang_waits(const struct ct_report *rep, void (*fn)(void *ctx, const struct ct_hang_wait *w),
                  void *ctx)
{
    size_t cap = rep->nr ? rep->nr : 1;
    int *waiting = malloc(cap * sizeof(*waiting)), *missing = malloc(2 * cap * sizeof(*missing));
    int *absent = NULL;
    unsigned char *seen = NULL;
    if (!waiting || !missing) {
        free(waiting);
        free(missing);
        return -ENOMEM;
    }
    int rc = 0;
    int64_t until = latest(rep);
    for (size_t k = 0; k < rep->nr && !rc; k++) {
        const struct ct_rank *r = rep->rr[k].rank;
        size_t fp;
        last_done(r, &fp);
        for (size_t i = fp; i < r->nnccl && !rc; i++) {
            const struct ct_nccl_call *o = &r->nccl[i];
            if (o->e != 0 || !is_coll(o->op))
                continue;
            /* each (comm, seq) once: at its first rank that issued it */
            int first = 1;
            for (size_t j = 0; j < k && first; j++) {
                int member, issued;
                int32_t cr;
                has_op(rep->rr[j].rank, o->comm, o->seq, &member, &issued, &cr);
                first = !(member && issued);
            }
            if (!first)
                continue;
            int32_t size = o->nranks > 0 ? o->nranks : 0;
            unsigned char *s2 = realloc(seen, size ? (size_t)size : 1);
            int *a2 = realloc(absent, (size ? (size_t)size : 1) * sizeof(*absent));
            if (!s2 || !a2) {
                seen = s2 ? s2 : seen;
                absent = a2 ? a2 : absent;
                rc = -ENOMEM;
                break;
            }
            seen = s2, absent = a2;
            memset(seen, 0, size ? (size_t)size : 1);
            struct ct_hang_wait w = {.op = o,
                                     .waiting = waiting,
                                     .missing = missing,
                                     .absent_comm = absent,
                                     .since = INT64_MAX,
                                     .until = until};
            int world = 1; /* every member present has its global rank as comm rank */
            for (size_t j = 0; j < rep->nr; j++) {
                const struct ct_rank *q = rep->rr[j].rank;
                int member, issued;
                int32_t cr;
                has_op(q, o->comm, o->seq, &member, &issued, &cr);
                if (!member)
                    continue;
                if (cr >= 0 && cr < size)
                    seen[cr] = 1;
                world &= cr == q->rank;
                if (!issued) {
                    missing[w.nmissing++] = q->rank;
                    continue;
                }
                waiting[w.nwaiting++] = q->rank;
                for (size_t m = 0; m < q->nnccl; m++)
                    if (q->nccl[m].comm == o->comm && q->nccl[m].seq == o->seq &&
                        is_coll(q->nccl[m].op) && q->nccl[m].host_s < w.since)
                        w.since = q->nccl[m].host_s;
            }
            for (int32_t c = 0; c < size; c++)
                if (!seen[c])
                    absent[w.nabsent++] = c;
            for (size_t m = 0; m < w.nabsent && w.nmissing < 2 * cap; m++)
                missing[w.nmissing++] = world ? absent[m] : -1;
            if (w.nmissing)
                fn(ctx, &w);
        }
    }
    free(waiting);
    free(missing);
    free(absent);
    free(seen);
    return rc;
}

static double us_of(const struct ct_report *rep, int64_t t)
{
    return (double)(t - rep->job->t0) / 1000.0;
}

static void ranks_text(FILE *f, const int *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] >= 0)
            fprintf(f, "%s%d", i ? "," : "", v[i]);
}

static void wait_text(void *ctx, const struct ct_hang_wait *w)
{
    FILE *f = ((void **)ctx)[0];
    const struct ct_report *rep = ((void **)ctx)[1];
    fprintf(f, "  %s comm %016" PRIx64 " seq %" PRIu64 ": rank(s) ",
            ct_name_nccl_op((uint64_t)w->op->op), w->op->comm, w->op->seq);
    ranks_text(f, w->waiting, w->nwaiting);
    fprintf(f, " wait since %.1f us (%.1f ms) for rank(s) ", us_of(rep, w->since),
            (double)(w->until - w->since) / 1e6);
    size_t known = 0;
    for (size_t i = 0; i < w->nmissing; i++)
        known += w->missing[i] >= 0;
    ranks_text(f, w->missing, w->nmissing);
    if (known < w->nmissing)
        fprintf(f, "%s%zu member(s) not mapped to a rank", known ? ", " : "", w->nmissing - known);
    fprintf(f, ", which never issued it");
    if (w->nabsent) {
        fprintf(f, " (comm rank(s) ");
        ranks_text(f, w->absent_comm, w->nabsent);
        fprintf(f, " left no trace: no window, so nothing pending there)");
    }
    fprintf(f, "\n");
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
    void *ctx[2] = {f, (void *)rep};
    ct_hang_waits(rep, wait_text, ctx);
}

static void op_json(FILE *f, const struct ct_report *rep, const struct ct_nccl_call *o, int done)
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
    const struct ct_report *rep;
    int first;
};

static void wait_json(void *ctx, const struct ct_hang_wait *w)
{
    struct wait_json *j = ctx;
    FILE *f = j->f;
    fprintf(f,
            "%s{\"op\":\"%s\",\"comm_hash\":\"%016" PRIx64 "\",\"seq\":%" PRIu64
            ",\"missing_ranks\":[",
            j->first ? "" : ",", ct_name_nccl_op((uint64_t)w->op->op), w->op->comm, w->op->seq);
    int any = 0;
    for (size_t i = 0; i < w->nmissing; i++)
        if (w->missing[i] >= 0)
            fprintf(f, "%s%d", any++ ? "," : "", w->missing[i]);
    fprintf(f, "],\"absent_comm_ranks\":[");
    for (size_t i = 0; i < w->nabsent; i++)
        fprintf(f, "%s%d", i ? "," : "", w->absent_comm[i]);
    fprintf(f, "],\"waiting_ranks\":[");
    for (size_t i = 0; i < w->nwaiting; i++)
        fprintf(f, "%s%d", i ? "," : "", w->waiting[i]);
    fprintf(f, "],\"since_us\":%.3f,\"waited_us\":%.3f}", us_of(j->rep, w->since),
            (double)(w->until - w->since) / 1e3);
    j->first = 0;
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
    struct wait_json w = {f, rep, 1};
    ct_hang_waits(rep, wait_json, &w);
    fprintf(f, "]}");
}
