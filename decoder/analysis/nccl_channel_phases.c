/*
 * An NCCL kernel's phases from its channels' GPU times
 * (decoder/analysis/nccl_channel_phases.h; docs/nccl.md, "Kernel
 * channels", states the rules): each op instance reduced to its setup,
 * start spread, longest run and stop spread, then medians per collective.
 */
#include "decoder/analysis/nccl_channel_phases.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/nccl_links.h"
#include "decoder/read/job.h"
#include "decoder/read/nccl_acct.h"
#include "decoder/read/timeline.h"
#include "decoder/util/stats.h"

const char *ct_nchan_why_text(int why)
{
    switch (why) {
    case CT_NCHAN_WHY_NO_CHANNELS:
        return "no per-channel records: they need NCCL's profiler plugin at ABI v4 or newer (GPU "
               "timers; ABI v3's channel events are the proxy thread's observations) under "
               "`cutrace run`, and a format v5 trace (or a summary of version 10 of one)";
    case CT_NCHAN_WHY_CE: return "a copy-engine collective: no kernel, so no channels";
    case CT_NCHAN_WHY_NO_KERNEL:
        return "no kernel record of the op's kernel on its stream (CUPTI's activity records off or "
               "lost)";
    case CT_NCHAN_WHY_CLOCKS:
        return "the first channel's start precedes its kernel's recorded start by more than the "
               "clocks' 2 us agreement";
    case CT_NCHAN_WHY_NO_BUSIEST:
        return "no channel was the busiest in more than half of the instances";
    default: return "";
    }
}

void ct_nchan_row_init(struct ct_nchan_row *r)
{
    memset(r, 0, sizeof(*r));
    r->setup_p50_ns = r->start_spread_p50_ns = r->stop_spread_p50_ns = r->run_p50_ns = NAN;
    r->busiest_pct = NAN;
    r->busiest = -1;
    r->why = r->setup_why = r->busiest_why = CT_NCHAN_WHY_NO_CHANNELS;
}

void ct_nchan_obs_of(const int64_t *s, const int64_t *e, const uint32_t *id, size_t n,
                     int64_t kernel_s, struct ct_nchan_obs *o)
{
    int64_t s0 = s[0], s1 = s[0], e0 = e[0], e1 = e[0], run = -1, second = -1;
    int32_t busiest = -1;
    for (size_t i = 0; i < n; i++) {
        int64_t r = e[i] > s[i] ? e[i] - s[i] : 0;
        s0 = s[i] < s0 ? s[i] : s0, s1 = s[i] > s1 ? s[i] : s1;
        e0 = e[i] < e0 ? e[i] : e0, e1 = e[i] > e1 ? e[i] : e1;
        if (r > run) {
            second = run;
            run = r;
            busiest = (int32_t)id[i];
        } else if (r > second) {
            second = r;
        }
    }
    o->nch = (uint32_t)n;
    o->start_spread = s1 - s0;
    o->stop_spread = e1 - e0;
    o->run = run;
    /* one channel is no imbalance; a tie names none */
    o->busiest = n > 1 && run - second > CT_NCHAN_TIE_NS ? busiest : -1;
    o->setup = -1;
    o->setup_why = CT_NCHAN_WHY_NONE;
    if (kernel_s == INT64_MIN)
        o->setup_why = CT_NCHAN_WHY_NO_KERNEL;
    else if (s0 < kernel_s - CT_NCHAN_CLOCK_TOL_NS)
        o->setup_why = CT_NCHAN_WHY_CLOCKS;
    else
        o->setup = s0 > kernel_s ? s0 - kernel_s : 0;
}

static int cmp_obs_row(const void *a, const void *b)
{
    size_t x = ((const struct ct_nchan_obs *)a)->row, y = ((const struct ct_nchan_obs *)b)->row;
    return (x > y) - (x < y);
}

int ct_nchan_rows(const struct ct_nchan_obs *obs, size_t n, struct ct_nchan_row *rows, size_t nrows)
{
    struct ct_nchan_obs *o = malloc((n ? n : 1) * sizeof(*o));
    double *v = malloc((n ? n : 1) * 4 * sizeof(*v));
    int32_t *ids = malloc((n ? n : 1) * sizeof(*ids));
    if (!o || !v || !ids) {
        free(o);
        free(v);
        free(ids);
        return -ENOMEM;
    }
    if (n)
        memcpy(o, obs, n * sizeof(*o));
    qsort(o, n, sizeof(*o), cmp_obs_row);
    for (size_t i = 0; i < n;) {
        size_t j = i, m = 0, ns = 0, nb = 0;
        while (j < n && o[j].row == o[i].row)
            j++;
        if (o[i].row >= nrows) {
            i = j;
            continue;
        }
        struct ct_nchan_row *R = &rows[o[i].row];
        double *setup = v, *ss = v + n, *es = v + 2 * n, *run = v + 3 * n;
        uint8_t setup_why = CT_NCHAN_WHY_NONE;
        for (size_t k = i; k < j; k++, m++) {
            if (o[k].setup >= 0)
                setup[ns++] = (double)o[k].setup;
            else if (!setup_why || o[k].setup_why == CT_NCHAN_WHY_CLOCKS)
                setup_why = o[k].setup_why;
            ss[m] = (double)o[k].start_spread;
            es[m] = (double)o[k].stop_spread;
            run[m] = (double)o[k].run;
            if (o[k].busiest >= 0)
                ids[nb++] = o[k].busiest;
        }
        R->instances = m;
        R->why = CT_NCHAN_WHY_NONE;
        R->start_spread_p50_ns = ct_median(ss, m);
        R->stop_spread_p50_ns = ct_median(es, m);
        R->run_p50_ns = ct_median(run, m);
        /* the setup's median over the instances that have one, if most do:
         * a median of a few would stand for the many it lacks */
        if (ns * 2 > m) {
            R->setup_p50_ns = ct_median(setup, ns);
            R->setup_why = CT_NCHAN_WHY_NONE;
        } else {
            R->setup_why = setup_why ? setup_why : CT_NCHAN_WHY_NO_KERNEL;
        }
        /* the mode of the busiest channels, if it is the busiest in more
         * than half of all instances (ties count against it) */
        int32_t best = -1;
        size_t best_n = 0;
        for (size_t a = 0; a < nb; a++) {
            size_t c = 0;
            for (size_t b = 0; b < nb; b++)
                c += ids[b] == ids[a];
            if (c > best_n || (c == best_n && ids[a] < best))
                best = ids[a], best_n = c;
        }
        if (best_n * 2 > m) {
            R->busiest = best;
            R->busiest_pct = 100.0 * (double)best_n / (double)m;
            R->busiest_why = CT_NCHAN_WHY_NONE;
        } else {
            R->busiest_why = CT_NCHAN_WHY_NO_BUSIEST;
        }
        i = j;
    }
    free(o);
    free(v);
    free(ids);
    return 0;
}

/* The start of the NCCL kernel the op's first channel ran in: the latest
 * kernel on the op's stream that starts at or before the channel (within
 * the clocks' tolerance) and is linked to an NCCL op, if it has not ended
 * before the channel started; INT64_MIN when there is none. R's ops are
 * sorted by start. */
static int64_t kernel_start(const struct ct_rank *R, uint32_t stream, int64_t first)
{
    size_t lo = 0, hi = R->nops;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (R->ops[mid].s <= first + CT_NCHAN_CLOCK_TOL_NS)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* a stream runs one kernel at a time: the first kernel of the stream
     * found going back is the candidate (bounded: other streams' work
     * between them is passed over up to this many) */
    for (size_t k = lo, seen = 0; k-- > 0 && seen < 65536; seen++) {
        const struct ct_gpu_op *o = &R->ops[k];
        if (o->stream != stream || o->type != CT_GPU_KERNEL)
            continue;
        return o->nccl >= 0 && o->e >= first - CT_NCHAN_CLOCK_TOL_NS ? o->s : INT64_MIN;
    }
    return INT64_MIN;
}

/* The collective row of c; *last (the previous call's) is tried first: a
 * job's calls repeat a few collectives, so the scan is rare. */
static size_t row_of(const struct ct_nlinks *L, const struct ct_nccl_call *c, size_t *last)
{
    size_t k = *last;
    if (k < L->nsplit && L->split[k].comm == c->comm && L->split[k].op == c->op &&
        L->split[k].bytes == c->bytes)
        return k;
    for (size_t i = 0; i < L->nsplit; i++)
        if (L->split[i].comm == c->comm && L->split[i].op == c->op && L->split[i].bytes == c->bytes)
            return *last = i;
    return SIZE_MAX;
}

int ct_nccl_channel_phases(struct ct_job *job, struct ct_nlinks *L)
{
    size_t nch = 0;
    for (size_t i = 0; i < L->nsplit; i++)
        ct_nchan_row_init(&L->split[i].ch);
    for (size_t r = 0; r < job->nranks; r++)
        for (size_t p = 0; p < job->ranks[r].nprocs; p++)
            if (job->ranks[r].procs[p]->nacct)
                nch += job->ranks[r].procs[p]->nacct->nch;
    if (!nch || !L->nsplit) {
        for (size_t i = 0; i < L->nsplit; i++)
            if (L->split[i].ce)
                L->split[i].ch.why = CT_NCHAN_WHY_CE;
        return 0;
    }
    struct ct_nchan_obs *obs = malloc(nch * sizeof(*obs));
    int64_t *s = malloc(nch * sizeof(*s)), *e = malloc(nch * sizeof(*e));
    uint32_t *id = malloc(nch * sizeof(*id));
    int rc = obs && s && e && id ? 0 : -ENOMEM;
    size_t nobs = 0, last = SIZE_MAX;
    for (size_t r = 0; r < job->nranks && !rc; r++) {
        struct ct_rank *R = &job->ranks[r];
        if ((rc = ct_rank_open(R)))
            break;
        /* a process's account against its own calls (correlation ids are
         * per process), as ct_nccl_links reads them */
        for (size_t p = 0, off = 0; p < R->nprocs; off += R->procs[p++]->nnccl) {
            const struct ct_nacct *a = R->procs[p]->nacct;
            if (!a || !a->nch)
                continue;
            /* the account keeps the trace's own clock: the rank's is offset */
            int64_t shift = R->procs[p]->clock_offset + R->skew_ns;
            size_t end = off + R->procs[p]->nnccl < R->nnccl ? off + R->procs[p]->nnccl : R->nnccl;
            for (size_t i = off; i < end && nobs < nch; i++) {
                const struct ct_nccl_call *c = &R->nccl[i];
                size_t k = ct_nacct_chan_first(a, c->corr), n = 0;
                for (; k < a->nch && a->ch[k].corr == c->corr && n < nch; k++, n++) {
                    s[n] = a->ch[k].s + shift;
                    e[n] = a->ch[k].e + shift;
                    id[n] = a->ch[k].channel;
                }
                size_t row = n ? row_of(L, c, &last) : SIZE_MAX;
                if (row == SIZE_MAX)
                    continue;
                int64_t first = s[0];
                for (size_t q = 1; q < n; q++)
                    first = s[q] < first ? s[q] : first;
                ct_nchan_obs_of(s, e, id, n, kernel_start(R, c->stream, first), &obs[nobs]);
                obs[nobs++].row = row;
            }
        }
        ct_rank_close(R);
    }
    struct ct_nchan_row *rows = rc ? NULL : malloc(L->nsplit * sizeof(*rows));
    if (!rc && !rows)
        rc = -ENOMEM;
    if (!rc) {
        for (size_t i = 0; i < L->nsplit; i++)
            ct_nchan_row_init(&rows[i]);
        rc = ct_nchan_rows(obs, nobs, rows, L->nsplit);
    }
    for (size_t i = 0; !rc && i < L->nsplit; i++) {
        L->split[i].ch = rows[i];
        if (!rows[i].instances && L->split[i].ce)
            L->split[i].ch.why = CT_NCHAN_WHY_CE;
    }
    free(rows);
    free(obs);
    free(s);
    free(e);
    free(id);
    return rc;
}
