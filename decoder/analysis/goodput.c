/*
 * Goodput over a job's whole life (goodput.h; definitions in
 * docs/goodput.md). Every figure is a length of time on the job clock that
 * a record of the traces bounds; what no record bounds (a SIGKILLed rank's
 * last unflushed moments, a rank's time after its trace ends) is
 * "unclassified", never spread over the other parts. What no record
 * covers at all (between capture windows, outside a Kineto trace's GPU
 * window) is in no part (coverage, gap_c).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/analysis.h"
#include "decoder/analysis/goodput.h"
#include "decoder/util/intervals.h"
#include "decoder/util/keys.h"
#include "decoder/read/job.h"
#include "src/config.h" /* CT_FLUSH_MS_DEFAULT: how much a SIGKILL can take from a trace */

const char *ct_gp_part_name(int part)
{
    static const char *const n[CT_GP_NPARTS] = {"startup",  "productive",  "checkpoint", "restore",
                                                "lost",     "hang",        "data_stall", "idle",
                                                "shutdown", "unclassified"};
    return part >= 0 && part < CT_GP_NPARTS ? n[part] : "?";
}

const char *ct_ended_name(int ended)
{
    static const char *const n[] = {"exit", "signal", "truncated", "hang", "killed"};
    return ended >= 0 && ended <= CT_END_KILLED ? n[ended] : "?";
}

const char *ct_lost_rule_name(int rule)
{
    static const char *const n[] = {"none", "steps run again by the next attempt",
                                    "steps after the last checkpoint save",
                                    "no checkpoint save: every step"};
    return rule >= 0 && rule <= CT_LOST_ALL ? n[rule] : "?";
}

static void see(int64_t *lo, int64_t *hi, int64_t s, int64_t e)
{
    if (s < *lo)
        *lo = s;
    if (e > *hi)
        *hi = e;
}

static void see_set(int64_t *lo, int64_t *hi, const struct ct_ivset *a)
{
    if (a->n)
        see(lo, hi, a->v[0].s, a->v[a->n - 1].e);
}

/* A process's life on the job clock: its recorded start (else its first
 * record) to its last record. 0 when it holds no timed record at all. */
static int proc_span(const struct ct_proc *p, int64_t *s, int64_t *e)
{
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    /* its ops' settled bounds (ct_proc_settle): a rank of one process took
     * the ops themselves, and its nops is 0 since */
    if (p->gpu_lo <= p->gpu_hi)
        see(&lo, &hi, p->gpu_lo, p->gpu_hi);
    for (size_t i = 0; i < p->nnccl; i++) {
        see(&lo, &hi, p->nccl[i].host_s, p->nccl[i].host_e);
        if (p->nccl[i].e)
            see(&lo, &hi, p->nccl[i].s, p->nccl[i].e);
    }
    if (p->nlaunches)
        see(&lo, &hi, p->launch_lo, p->launch_hi);
    for (size_t i = 0; i < p->nsteps; i++)
        see(&lo, &hi, p->steps[i].s, p->steps[i].e);
    see_set(&lo, &hi, &p->sync);
    see_set(&lo, &hi, &p->data_wait);
    see_set(&lo, &hi, &p->ckpt);
    if (p->last_ns != INT64_MIN && p->last_ns > hi) /* an end only: metadata of a
                                                     * flight window is from its writing */
        hi = p->last_ns;
    if (p->life.signal_ns != INT64_MIN)
        see(&lo, &hi, p->life.signal_ns, p->life.signal_ns);
    if (p->life.hang_ns != INT64_MIN)
        see(&lo, &hi, p->life.hang_ns, p->life.hang_ns);
    if (p->life.start_ns != INT64_MIN && (hi == INT64_MIN || p->life.start_ns <= hi))
        see(&lo, &hi, p->life.start_ns, p->life.start_ns), lo = p->life.start_ns;
    /* an end alone (a trace cut before its first timed record keeps only
     * its metadata's time) is no life */
    if (hi == INT64_MIN || lo == INT64_MAX || lo > hi)
        return 0;
    *s = lo;
    *e = hi;
    return 1;
}

/* A rank's process, with the attempt it belongs to. */
struct wp {
    struct ct_proc *p;
    size_t rank; /* index into job->ranks */
    int64_t s, e;
    int64_t key; /* restart count, -1 */
    size_t life; /* index of its (host, pid): exec'd images are one life */
    size_t att;
};

static int cmp_wp(const void *a, const void *b)
{
    const struct wp *x = a, *y = b;
    if (x->key != y->key)
        return (x->key > y->key) - (x->key < y->key);
    return (x->s > y->s) - (x->s < y->s);
}

/* By host, pid, restart count: the images of one life side by side. */
static int cmp_life(const void *a, const void *b)
{
    const struct wp *x = a, *y = b;
    int h = strcmp(x->p->host, y->p->host);
    if (h)
        return h;
    if (x->p->pid != y->p->pid)
        return (x->p->pid > y->p->pid) - (x->p->pid < y->p->pid);
    return (x->key > y->key) - (x->key < y->key);
}

static int cmp_start(const void *a, const void *b)
{
    const struct wp *x = a, *y = b;
    return (x->s > y->s) - (x->s < y->s);
}

/* Groups w (sorted by key, start) into attempts: a new one at each change
 * of restart count, and within one count where a life starts after every
 * earlier life ended. The images of one pid (exec) count as one life. */
static int group(struct wp *w, size_t n, size_t *natt_out)
{
    /* life ids are indexes below n: the end of each life, and the attempt
     * its last image went to */
    int64_t *lend = malloc(n * sizeof(*lend));
    size_t *latt = malloc(n * sizeof(*latt));
    if (!lend || !latt) {
        free(lend);
        free(latt);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        lend[i] = INT64_MIN, latt[i] = SIZE_MAX;
    for (size_t i = 0; i < n; i++)
        if (w[i].e > lend[w[i].life])
            lend[w[i].life] = w[i].e;
    size_t natt = 0;
    int64_t end = INT64_MIN, key = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        int cont = natt && latt[w[i].life] == natt - 1; /* a later image of a life in it */
        if (!natt || w[i].key != key || (w[i].s > end && !cont)) {
            natt++;
            end = INT64_MIN;
            key = w[i].key;
        }
        w[i].att = natt - 1;
        latt[w[i].life] = natt - 1;
        if (lend[w[i].life] > end)
            end = lend[w[i].life];
    }
    free(lend);
    free(latt);
    *natt_out = natt;
    return 0;
}

/* By attempt, then rank, then start: an attempt's processes are one run of
 * w, and in it each rank's. */
static int cmp_att_rank(const void *a, const void *b)
{
    const struct wp *x = a, *y = b;
    if (x->att != y->att)
        return (x->att > y->att) - (x->att < y->att);
    if (x->rank != y->rank)
        return (x->rank > y->rank) - (x->rank < y->rank);
    return (x->s > y->s) - (x->s < y->s);
}

/* The end of the run of w[i..n) with w[i]'s rank. */
static size_t rank_run(const struct wp *w, size_t n, size_t i)
{
    size_t j = i;
    while (j < n && w[j].rank == w[i].rank)
        j++;
    return j;
}

/* The onset of a hang in attempt a: on each rank whose shim detected it,
 * the first NCCL op issued after its last completed one that never
 * completed (the shim's own rule, src/flight.c); the earliest of those. */
static int64_t hang_onset(const struct ct_job *job, const struct wp *w, size_t n, size_t a,
                          int64_t as, int64_t ae)
{
    int64_t onset = INT64_MAX;
    for (size_t i = 0; i < n; i++) {
        if (w[i].att != a || w[i].p->life.hang_ns == INT64_MIN)
            continue;
        const struct ct_rank *R = &job->ranks[w[i].rank];
        int64_t done = INT64_MIN, first = INT64_MAX;
        for (size_t k = 0; k < R->nnccl; k++)
            if (R->nccl[k].host_s >= as && R->nccl[k].host_s < ae && R->nccl[k].e)
                done = R->nccl[k].host_s > done ? R->nccl[k].host_s : done;
        for (size_t k = 0; k < R->nnccl; k++)
            if (R->nccl[k].host_s >= as && R->nccl[k].host_s < ae && !R->nccl[k].e &&
                R->nccl[k].host_s > done && R->nccl[k].host_s < first)
                first = R->nccl[k].host_s;
        if (first == INT64_MAX)
            first = w[i].p->life.hang_ns; /* nothing pending seen: the detection itself */
        if (first < onset)
            onset = first;
    }
    return onset == INT64_MAX ? INT64_MIN : onset;
}

/* What one rank of one attempt is made of. The main process (the one
 * driving the GPU) is the one whose waits stall training: a loader worker's
 * reads or a forked writer's saves run beside it. */
struct rank_part {
    struct ct_ivset ckpt;      /* checkpoint I/O of any of its processes */
    struct ct_ivset ckpt_main; /* ... of the main process */
    struct ct_ivset data;      /* the main process's data waits */
    struct ct_ivset fread;     /* reads of regular files, any process */
    struct ct_ivset htod;      /* host-to-device copies, any process */
    int64_t end;               /* its last record */
    int clean;                 /* every process of it finished its trace, no fatal signal */
    int64_t last_launch;       /* the latest host start of a launch/copy/NCCL call */
    const struct ct_iter *it;  /* its iterations in the attempt */
    size_t nit;
    struct ct_iter *own; /* ... when found for the attempt alone (freed with it) */
    const struct ct_proc *main;
    int64_t main_s;      /* its main process's first moment (start, else first record) */
    struct ct_ivset cov; /* the time its records cover in [as, ae) (coverage) */
    int64_t edges;       /* of cov: window edges no part takes (gap_c) */
    size_t data_at;      /* where the last gap's search of data ended (ct_ivset_len_in_at) */
};

static int set_union_into(struct ct_ivset *acc, const struct ct_ivset *add)
{
    struct ct_ivset t = {0};
    int rc = ct_ivset_union(acc, add, &t);
    if (rc) {
        ct_ivset_free(&t);
        return rc;
    }
    ct_ivset_free(acc);
    *acc = t;
    return 0;
}

static int rank_sets(const struct wp *w, size_t n, size_t a, size_t rank, struct rank_part *rp)
{
    memset(rp, 0, sizeof(*rp));
    rp->end = INT64_MIN;
    rp->clean = 1;
    rp->last_launch = INT64_MIN;
    const struct ct_proc *main = NULL;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        if (w[i].att != a || w[i].rank != rank)
            continue;
        const struct ct_proc *p = w[i].p;
        if (!main || p->nops + p->nlaunches > main->nops + main->nlaunches) {
            main = p;
            rp->main_s = w[i].s;
        }
        rc = set_union_into(&rp->ckpt, &p->ckpt);
        if (!rc)
            rc = set_union_into(&rp->fread, &p->file_read);
        if (!rc)
            rc = set_union_into(&rp->htod, &p->htod);
        if (w[i].e > rp->end)
            rp->end = w[i].e;
        if (p->cov.truncated || p->life.signal || p->life.salvaged)
            rp->clean = 0;
        if (p->nlaunches && p->launch_hi > rp->last_launch)
            rp->last_launch = p->launch_hi;
    }
    rp->main = main;
    if (!rc && main)
        rc = set_union_into(&rp->ckpt_main, &main->ckpt);
    if (!rc && main)
        rc = set_union_into(&rp->data, &main->data_wait);
    return rc;
}

static void rank_parts_free(struct rank_part *rp)
{
    ct_ivset_free(&rp->ckpt);
    ct_ivset_free(&rp->ckpt_main);
    ct_ivset_free(&rp->data);
    ct_ivset_free(&rp->fread);
    ct_ivset_free(&rp->htod);
    ct_ivset_free(&rp->cov);
    free(rp->own);
}

/*
 * What the rank's records cover of its attempt [as, ae): all of it for a
 * trace recorded throughout; for one recorded in capture windows (paused
 * start with `cutrace start`/`stop`, CUTRACE_DURATION, light mode) its main
 * process's windows, and the time before the first one when that one was
 * open from the process's start; for a PyTorch profiler trace its GPU
 * window (first kernel start to last kernel end: the host side reaches
 * back to whatever the profiler held, 30 s before the first kernel in one
 * sample). Time outside is no part of the goodput: nothing says what the
 * job did then. 0 or -ENOMEM.
 */
static int coverage(struct rank_part *rp, int64_t as, int64_t ae)
{
    const struct ct_proc *m = rp->main;
    if (!m || (m->source != CT_SOURCE_KINETO && !m->windowed))
        return ct_ivset_add(&rp->cov, as, ae);
    if (m->source ==
        CT_SOURCE_KINETO) /* gpu_lo, gpu_hi: INT64_MAX, INT64_MIN without ops (an empty add) */
        return m->gpu_lo < m->gpu_hi ? ct_ivset_add(&rp->cov, m->gpu_lo > as ? m->gpu_lo : as,
                                                    m->gpu_hi < ae ? m->gpu_hi : ae)
                                     : 0;
    int rc = ct_ivset_clip(&m->capture, as, ae, &rp->cov);
    int64_t start = m->life.start_ns != INT64_MIN ? m->life.start_ns : rp->main_s;
    if (!rc && rp->cov.n && m->capture.v[0].s <= start) {
        rc = ct_ivset_add(&rp->cov, as, rp->cov.v[0].s);
        ct_ivset_normalize(&rp->cov);
    }
    return rc;
}

/* |cov ∩ [a, b)| */
static int64_t span_in(const struct rank_part *rp, int64_t a, int64_t b)
{
    return b > a ? ct_ivset_len_in(&rp->cov, a, b) : 0;
}

/* The rank's iterations, each cut to the covered interval holding its
 * start or the first one after it (the repeat detector may place a step's
 * start before the span it searched; a Kineto trace's first step starts on
 * the host before its GPU window): every step lies in covered time.
 * 0 or -ENOMEM. */
static int clip_iters(struct rank_part *rp)
{
    struct ct_iter *v = malloc((rp->nit ? rp->nit : 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    size_t k = 0, w = 0;
    for (size_t i = 0; i < rp->nit; i++) {
        const struct ct_iter *x = &rp->it[i];
        while (w < rp->cov.n && rp->cov.v[w].e <= x->s)
            w++;
        if (w == rp->cov.n)
            break;
        int64_t s = x->s > rp->cov.v[w].s ? x->s : rp->cov.v[w].s;
        int64_t e = x->e < rp->cov.v[w].e ? x->e : rp->cov.v[w].e;
        if (e > s)
            v[k++] = (struct ct_iter){s, e, x->index, x->partial};
    }
    free(rp->own);
    rp->own = v;
    rp->it = v;
    rp->nit = k;
    return 0;
}

/* The iterations of result rr that start inside [as, ae). */
static void iters_in(const struct ct_rank_result *rr, int64_t as, int64_t ae,
                     const struct ct_iter **it, size_t *n)
{
    /* every step, those whose GPU work salvage could not give included:
     * the job's life is the host's (ct_iterations_cut) */
    const struct ct_iter *v = rr->all_iters ? rr->all_iters : rr->iters;
    size_t nv = rr->all_iters ? rr->nall_iters : rr->niters;
    size_t i = 0, k;
    while (i < nv && v[i].s < as)
        i++;
    for (k = i; k < nv && v[k].s < ae; k++)
        ;
    *it = v + i;
    *n = k - i;
}

static int64_t ivlen_in(const struct ct_ivset *a, int64_t lo, int64_t hi)
{
    return hi > lo ? ct_ivset_len_in(a, lo, hi) : 0;
}

/*
 * A restore in [as, fs) (the start-up of an attempt after the first): the
 * checkpoint's reading (regular files read) and the copies of that state to
 * the GPU that follow it (host-to-device copies after the first read: the
 * calls and the GPU intervals), before the first step. Their union's
 * length; 0 or -ENOMEM (*len then the reads alone).
 */
static int restore_len(const struct rank_part *rp, int64_t as, int64_t fs, int64_t *len)
{
    *len = ivlen_in(&rp->fread, as, fs);
    size_t i = 0;
    while (i < rp->fread.n && rp->fread.v[i].e <= as)
        i++;
    if (!*len || i == rp->fread.n || !rp->htod.n)
        return 0;
    int64_t r0 = rp->fread.v[i].s > as ? rp->fread.v[i].s : as; /* the reading's start */
    struct ct_ivset a = {0}, b = {0}, u = {0};
    int rc = ct_ivset_clip(&rp->fread, as, fs, &a);
    if (!rc)
        rc = ct_ivset_clip(&rp->htod, r0, fs, &b);
    if (!rc)
        rc = ct_ivset_union(&a, &b, &u);
    if (!rc)
        *len = ct_ivset_len(&u);
    ct_ivset_free(&a);
    ct_ivset_free(&b);
    ct_ivset_free(&u);
    return rc;
}

/* The end of the last checkpoint I/O that overlaps [lo, hi), clipped to
 * hi; lo when none does. */
static int64_t ckpt_end_in(const struct ct_ivset *ck, int64_t lo, int64_t hi)
{
    size_t a = 0, b = ck->n; /* the first interval ending after lo */
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (ck->v[mid].e <= lo)
            a = mid + 1;
        else
            b = mid;
    }
    int64_t end = lo;
    for (; a < ck->n && ck->v[a].s < hi; a++)
        end = ck->v[a].e < hi ? ck->v[a].e : hi;
    return end;
}

/*
 * A time between steps [g0, g1) (or after the last one): a checkpoint save
 * in it stalls training from the gap's start to the save's last I/O (the
 * save is more than its I/O: serialising, opening, closing); after that,
 * the main process's data waits, and the rest is `rest` (idle between
 * steps, shutdown after the last).
 */
static void gap(struct rank_part *rp, int64_t g0, int64_t g1, int rest, double *part)
{
    if (g1 <= g0)
        return;
    int64_t ck = ckpt_end_in(&rp->ckpt, g0, g1);
    /* gaps come in time order: each search goes on from the last */
    int64_t dw = g1 > ck ? ct_ivset_len_in_at(&rp->data, ck, g1, &rp->data_at) : 0;
    part[CT_GP_CHECKPOINT] += (double)(ck - g0);
    part[CT_GP_DATA] += (double)dw;
    part[rest] += (double)(g1 - ck - dw);
}

/*
 * The same for a gap of a rank recorded in windows: the gap's covered part
 * when one window holds all of it; a piece a pause cuts (a window opens
 * after the last step, or closes before the next) is part of a step the
 * window cut or of a pause, which nothing classifies: a window edge, left
 * out of every part and of the goodput's span (rp->edges). With
 * from_start, the piece that begins at g0 is taken whole too (start-up from
 * the process's start up to a window's close before its first step).
 */
static void gap_c(struct rank_part *rp, int64_t g0, int64_t g1, int rest, int from_start,
                  double *part)
{
    if (g1 <= g0)
        return;
    for (size_t i = 0; i < rp->cov.n && rp->cov.v[i].s < g1; i++) {
        int64_t a = rp->cov.v[i].s > g0 ? rp->cov.v[i].s : g0;
        int64_t b = rp->cov.v[i].e < g1 ? rp->cov.v[i].e : g1;
        if (b <= a)
            continue;
        if (a == g0 && (b == g1 || from_start))
            gap(rp, a, b, rest, part);
        else
            rp->edges += b - a;
    }
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/*
 * One rank's partition of [as, cut) (from cut on it is lost or hang: the
 * caller's): start-up (and restore) before its first step; its steps; the
 * gaps between steps; the tail after the last step, shutdown while its
 * records last (or after them, when its processes ended cleanly), else
 * unclassified. nkept: the iterations before the lost ones. Adds into part.
 *
 * A step during which the main process did checkpoint I/O (a save inside
 * the step, as PyTorch's ProfilerStep ranges hold one) stalled by its
 * excess over the median step without any (the save is more than its I/O:
 * serialising, opening, truncating), at least its I/O and at most the step
 * less its data waits; the main process's data waits inside steps are data
 * stalls; the rest of each step is productive.
 */
static int partition(struct rank_part *rp, size_t nkept, int64_t as, int64_t cut, int restore,
                     double *part)
{
    const struct ct_iter *it = rp->it;
    size_t nk = 0;
    while (nk < nkept && it[nk].s < cut)
        nk++;
    int64_t fs = nk ? it[0].s : cut;
    /* start-up: from the attempt's start, where the records reach back
     * that far (the window that holds `as`); a window that opens later
     * before the first step holds a step it cut or a pause: an edge */
    double su[CT_GP_NPARTS] = {0};
    gap_c(rp, as, fs, CT_GP_STARTUP, 1, su);
    int64_t sul = (int64_t)(su[CT_GP_STARTUP] + su[CT_GP_CHECKPOINT] + su[CT_GP_DATA]);
    int64_t r = 0;
    if (restore && sul && restore_len(rp, as, as + sul, &r))
        return -ENOMEM;
    part[CT_GP_RESTORE] += (double)r;
    part[CT_GP_STARTUP] += (double)(sul - r);
    if (!nk)
        return 0; /* no step began: all of it start-up */
    struct ct_ivset steps = {0}, ckin = {0}, dw0 = {0}, dwin = {0};
    int64_t *plain = malloc(nk * sizeof(*plain));
    int rc = plain ? 0 : -ENOMEM;
    for (size_t i = 0; i < nk && !rc; i++)
        rc = ct_ivset_add(&steps, it[i].s, it[i].e < cut ? it[i].e : cut);
    ct_ivset_normalize(&steps);
    if (!rc)
        rc = ct_ivset_intersect(&rp->ckpt_main, &steps, &ckin);
    if (!rc)
        rc = ct_ivset_intersect(&rp->data, &steps, &dw0);
    if (!rc)
        rc = ct_ivset_subtract(&dw0, &ckin, &dwin);
    if (!rc) {
        size_t np = 0, ck_at = 0, dw_at = 0; /* the steps are in time order */
        for (size_t i = 0; i < nk; i++) {
            int64_t e = it[i].e < cut ? it[i].e : cut;
            if (e <= it[i].s || !ct_ivset_len_in_at(&ckin, it[i].s, e, &ck_at))
                plain[np++] = e - it[i].s;
        }
        ck_at = 0;
        if (ct_i64_sort(plain, np)) /* ints: the radix sort */
            qsort(plain, np, sizeof(*plain), cmp_i64);
        int64_t med = np ? plain[np / 2] : -1;
        int64_t ckl = 0, dwl = ct_ivset_len(&dwin);
        for (size_t i = 0; i < nk; i++) {
            int64_t e = it[i].e < cut ? it[i].e : cut, d = e - it[i].s;
            int64_t io = e > it[i].s ? ct_ivset_len_in_at(&ckin, it[i].s, e, &ck_at) : 0;
            if (!io)
                continue;
            int64_t x = med >= 0 ? d - med : io,
                    hi = d - ct_ivset_len_in_at(&dwin, it[i].s, e, &dw_at);
            ckl += x < io ? io : x > hi ? (hi > io ? hi : io) : x;
        }
        part[CT_GP_PRODUCTIVE] += (double)(ct_ivset_len(&steps) - ckl - dwl);
        part[CT_GP_CHECKPOINT] += (double)ckl;
        part[CT_GP_DATA] += (double)dwl;
        for (size_t i = 0; i + 1 < steps.n; i++)
            gap_c(rp, steps.v[i].e, steps.v[i + 1].s, CT_GP_IDLE, 0, part);
        int64_t le = steps.v[steps.n - 1].e;
        int64_t end = rp->clean || rp->end >= cut ? cut : rp->end > le ? rp->end : le;
        gap_c(rp, le, end, CT_GP_SHUTDOWN, 0, part);
        part[CT_GP_UNCLASSIFIED] += (double)span_in(rp, end, cut);
    }
    free(plain);
    ct_ivset_free(&steps);
    ct_ivset_free(&ckin);
    ct_ivset_free(&dw0);
    ct_ivset_free(&dwin);
    return rc;
}

static int add_lost(struct ct_attempt *A, int64_t idx)
{
    for (size_t i = 0; i < A->nlost; i++)
        if (A->lost_steps[i] == idx)
            return 0;
    int64_t *v = realloc(A->lost_steps, (A->nlost + 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    A->lost_steps = v;
    v[A->nlost++] = idx;
    return 0;
}

/* The first step index any rank of attempt a runs, when its steps are
 * numbered by the job (ranges or marks); -1 otherwise. */
static int64_t first_index(const struct ct_report *rep, const struct wp *w, size_t n, size_t a,
                           int64_t as, int64_t ae)
{
    int64_t first = INT64_MAX;
    (void)a; /* w is attempt a's run */
    for (size_t i = 0; i < n; i = rank_run(w, n, i)) {
        const struct ct_rank_result *rr = &rep->rr[w[i].rank];
        if (rr->iter_src != CT_ITER_RANGES && rr->iter_src != CT_ITER_MARKS)
            return -1;
        const struct ct_iter *it;
        size_t k;
        iters_in(rr, as, ae, &it, &k);
        if (k && it[0].index < first)
            first = it[0].index;
    }
    return first == INT64_MAX ? -1 : first;
}

/* 1 when every step range or mark of the processes w[0..n) has a number in
 * its name ("ProfilerStep#12"), and there is one: their iterations'
 * indexes are then the job's own step numbers, the same in every attempt.
 * Names without numbers are numbered by their order, which starts again
 * with a restarted process: no step of one attempt is "run again" by
 * number in the next. */
static int names_numbered(const struct wp *w, size_t n)
{
    int any = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < w[i].p->nsteps; k++) {
            if (w[i].p->steps[k].num == CT_STEP_NONE)
                return 0;
            any = 1;
        }
    return any;
}

/* The parts of attempt a (spans in att[]; w: its processes, by rank; wn,
 * nn: the next attempt's). */
static int attempt_parts(const struct ct_report *rep, struct wp *w, size_t n, const struct wp *wn,
                         size_t nn, struct ct_attempt *att, size_t natt, size_t a)
{
    struct ct_attempt *A = &att[a];
    int64_t as = A->s, ae = A->e;
    /* lost work is work the next attempt does again: the last attempt,
     * however it ended, loses nothing (docs/goodput.md) */
    int failed = a + 1 < natt;
    int64_t n0 = a + 1 < natt ? first_index(rep, wn, nn, a + 1, att[a + 1].s, att[a + 1].e) : -1;
    int64_t onset = A->ended == CT_END_HANG ? hang_onset(rep->job, w, n, a, as, ae) : INT64_MIN;
    if (onset != INT64_MIN && onset < as)
        onset = as;
    A->hang_since = onset;
    int64_t hcut = onset != INT64_MIN && onset < ae ? onset : ae;
    int numbered = 1;
    for (size_t r = 0; r < rep->nr; r++)
        numbered &= rep->rr[r].iter_src == CT_ITER_RANGES || rep->rr[r].iter_src == CT_ITER_MARKS;
    /* steps run again are the numbers the next attempt repeats, when the
     * steps' names carry numbers in both */
    int by_name = numbered && names_numbered(w, n) && a + 1 < natt && names_numbered(wn, nn);
    int rc = 0;
    size_t ranks = 0;
    int64_t first_kept = INT64_MAX, last_kept = INT64_MIN;
    size_t steps0 = 0, steps_seen = 0;
    for (size_t i0 = 0, i1; i0 < n && !rc; i0 = i1) {
        i1 = rank_run(w, n, i0);
        size_t r = w[i0].rank;
        struct rank_part rp;
        if ((rc = rank_sets(w + i0, i1 - i0, a, r, &rp))) {
            rank_parts_free(&rp);
            break;
        }
        if (!(rc = coverage(&rp, as, ae)) && numbered) {
            iters_in(&rep->rr[r], as, hcut, &rp.it, &rp.nit);
        } else if (!rc) {
            /* iterations from the work that repeats: found in this attempt's
             * own ops (the report looks at the rank's attempts together, and
             * a cycle does not run across a restart), in each covered
             * interval on its own (a cycle does not run across a pause) */
            if (!(rc = ct_rank_open(rep->rr[r].rank))) {
                for (size_t c = 0; c < rp.cov.n && rp.cov.v[c].s < hcut && !rc; c++) {
                    struct ct_iter *v = NULL;
                    size_t k = 0;
                    double conf;
                    int64_t e = rp.cov.v[c].e < hcut ? rp.cov.v[c].e : hcut;
                    rc = ct_iterations_from_repeats(rep->rr[r].rank, rp.cov.v[c].s, e, 0, &v, &k,
                                                    &conf, NULL);
                    struct ct_iter *all = k ? realloc(rp.own, (rp.nit + k) * sizeof(*all)) : rp.own;
                    if (!rc && k && !all)
                        rc = -ENOMEM;
                    if (!rc && k) {
                        memcpy(all + rp.nit, v, k * sizeof(*v));
                        rp.own = all;
                        rp.nit += k;
                    }
                    free(v);
                }
                ct_rank_close(rep->rr[r].rank);
            }
            rp.it = rp.own;
        }
        if (!rc)
            rc = clip_iters(&rp);
        if (rc) {
            rank_parts_free(&rp);
            break;
        }
        steps_seen += rp.nit;
        size_t nkept = rp.nit;
        int64_t lost_from = INT64_MAX;
        if (failed && rp.nit) {
            int64_t last_ck = INT64_MIN; /* the end of its last checkpoint save */
            for (size_t i = rp.ckpt.n; i-- > 0;)
                if (rp.ckpt.v[i].e <= hcut && rp.ckpt.v[i].s >= rp.it[0].s) {
                    last_ck = rp.ckpt.v[i].e;
                    break;
                }
            int64_t maxidx = rp.it[rp.nit - 1].index;
            if (by_name && n0 >= 0 && n0 <= maxidx + 1) {
                A->lost_rule = CT_LOST_RESTEP;
                while (nkept && rp.it[nkept - 1].index >= n0)
                    nkept--;
            } else {
                A->lost_rule = last_ck != INT64_MIN ? CT_LOST_CHECKPOINT : CT_LOST_ALL;
                while (nkept && rp.it[nkept - 1].s >= last_ck)
                    nkept--;
            }
            for (size_t i = nkept; i < rp.nit && !rc; i++)
                rc = add_lost(A, rp.it[i].index);
            /* the step in progress: work launched after the last step ended
             * (and after a checkpoint save that followed it) */
            int64_t after = rp.it[rp.nit - 1].e > last_ck ? rp.it[rp.nit - 1].e : last_ck;
            int64_t next = (numbered ? maxidx : rp.it[rp.nit - 1].index) + 1;
            int progress = rp.last_launch > after && (A->lost_rule != CT_LOST_RESTEP || next >= n0);
            if (progress && !rc)
                rc = add_lost(A, next);
            if (nkept < rp.nit)
                lost_from = rp.it[nkept].s;
            else if (progress)
                lost_from = after;
        }
        double part[CT_GP_NPARTS] = {0};
        int64_t cut = lost_from < hcut ? lost_from : hcut;
        if (!rc)
            rc = partition(&rp, nkept, as, cut, a > 0, part);
        part[CT_GP_LOST] += (double)span_in(&rp, cut, hcut);
        part[CT_GP_HANG] += (double)span_in(&rp, hcut, ae);
        for (int k = 0; k < CT_GP_NPARTS; k++)
            A->part[k] += part[k];
        A->recorded += (double)span_in(&rp, as, ae);
        A->covered += (double)(span_in(&rp, as, ae) - rp.edges);
        size_t kept = 0;
        for (size_t i = 0; i < nkept; i++)
            if (rp.it[i].s < cut) {
                kept++;
                if (rp.it[i].index < first_kept)
                    first_kept = rp.it[i].index;
                if (rp.it[i].index > last_kept)
                    last_kept = rp.it[i].index;
            }
        if (!ranks)
            steps0 = kept;
        ranks++;
        rank_parts_free(&rp);
    }
    for (int k = 0; k < CT_GP_NPARTS && ranks; k++)
        A->part[k] /= (double)ranks;
    if (ranks) {
        A->covered /= (double)ranks;
        A->recorded /= (double)ranks;
    }
    A->steps_seen = steps_seen;
    A->ranks = ranks;
    A->steps = steps0;
    A->first_step = first_kept == INT64_MAX ? -1 : first_kept;
    A->last_step = last_kept == INT64_MIN ? -1 : last_kept;
    if (!failed)
        A->lost_rule = CT_LOST_NONE;
    if (A->nlost)
        qsort(A->lost_steps, A->nlost, sizeof(*A->lost_steps), cmp_i64);
    return rc;
}

/* How attempt a ended: a hang the shim detected, a fatal signal, a process
 * killed (SIGKILL: its trace completed from its live mapping), a trace cut
 * short (SIGKILL with buffers in private memory, a crash the handlers could
 * not see), else exit. Only a cut trace leaves its end uncertain. */
static void attempt_end(struct ct_attempt *A, const struct wp *w, size_t n, size_t a)
{
    int hang = 0, sig = 0, trunc = 0, killed = 0;
    uint32_t flush = 0;
    for (size_t i = 0; i < n; i++) {
        if (w[i].att != a)
            continue;
        const struct ct_life *l = &w[i].p->life;
        hang |= l->hang_ns != INT64_MIN;
        if (l->signal && !sig)
            sig = l->signal;
        killed |= l->salvaged && !l->signal;
        if (w[i].p->cov.truncated && !l->signal) {
            trunc = 1;
            uint32_t f = l->flush_ms ? l->flush_ms : CT_FLUSH_MS_DEFAULT;
            flush = f > flush ? f : flush;
        }
    }
    A->signal = sig;
    A->ended = hang     ? CT_END_HANG
               : sig    ? CT_END_SIGNAL
               : killed ? CT_END_KILLED
               : trunc  ? CT_END_TRUNCATED
                        : CT_END_EXIT;
    A->end_uncertainty = trunc ? (int64_t)flush * 1000000 : 0;
}

/* The parts that need steps to be told apart, unknown (NAN: null) */
static void no_steps(double *part)
{
    static const int need[] = {CT_GP_STARTUP, CT_GP_PRODUCTIVE, CT_GP_CHECKPOINT, CT_GP_RESTORE,
                               CT_GP_DATA,    CT_GP_IDLE,       CT_GP_SHUTDOWN};
    for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
        part[need[i]] = NAN;
}

int ct_goodput(const struct ct_report *rep, struct ct_goodput *g)
{
    memset(g, 0, sizeof(*g));
    g->goodput_pct = NAN;
    const struct ct_job *job = rep->job;
    size_t nw = 0;
    for (size_t r = 0; r < job->nranks; r++)
        nw += job->ranks[r].nprocs;
    struct wp *w = calloc(nw ? nw : 1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    g->s = INT64_MAX;
    g->e = INT64_MIN;
    size_t k = 0;
    for (size_t r = 0; r < job->nranks; r++)
        for (size_t i = 0; i < job->ranks[r].nprocs; i++) {
            struct ct_proc *p = job->ranks[r].procs[i];
            int64_t s, e;
            if (!proc_span(p, &s, &e))
                continue;
            g->no_start += p->life.start_ns == INT64_MIN;
            w[k] = (struct wp){p, r, s, e, p->life.restart, k, 0};
            if (!g->job && p->life.job)
                g->job = p->life.job;
            see(&g->s, &g->e, s, e);
            k++;
        }
    nw = k;
    for (size_t i = 0; i < job->nhosts; i++) {
        int64_t s, e;
        if (proc_span(job->hosts[i], &s, &e))
            see(&g->s, &g->e, s, e);
        if (!g->job && job->hosts[i]->life.job)
            g->job = job->hosts[i]->life.job;
    }
    if (!nw) {
        free(w);
        if (g->s == INT64_MAX)
            g->s = g->e = 0;
        g->unavailable = "no rank process with a timed record";
        return 0;
    }
    /* the images of one pid on one host with one restart count (exec) are
     * one life: its first image's index */
    qsort(w, nw, sizeof(*w), cmp_life);
    for (size_t i = 1; i < nw; i++)
        if (!cmp_life(&w[i - 1], &w[i]))
            w[i].life = w[i - 1].life;
    /* a process without a restart count joins the attempt whose counted
     * processes it lived among: that of the latest counted one that started
     * before it (-1 when none did) */
    qsort(w, nw, sizeof(*w), cmp_wp); /* the counted ones last, by start */
    size_t c0 = 0;
    while (c0 < nw && w[c0].key < 0)
        c0++;
    int64_t *ks = NULL, *ke = NULL; /* the counted ones by start: start, count */
    size_t nc = nw - c0;
    if (nc && c0) {
        ks = malloc(nc * sizeof(*ks));
        ke = malloc(nc * sizeof(*ke));
        struct wp *sorted = malloc(nc * sizeof(*sorted));
        if (!ks || !ke || !sorted) {
            free(ks), free(ke), free(sorted), free(w);
            return -ENOMEM;
        }
        memcpy(sorted, w + c0, nc * sizeof(*sorted));
        qsort(sorted, nc, sizeof(*sorted), cmp_start);
        for (size_t i = 0; i < nc; i++)
            ks[i] = sorted[i].s, ke[i] = sorted[i].key;
        free(sorted);
        for (size_t i = 0; i < c0; i++) {
            size_t lo = 0, hi = nc; /* the first counted start after w[i]'s */
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (ks[mid] <= w[i].s)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            w[i].key = lo ? ke[lo - 1] : -1;
        }
        free(ks);
        free(ke);
        qsort(w, nw, sizeof(*w), cmp_wp);
    }
    size_t natt;
    if (group(w, nw, &natt)) {
        free(w);
        return -ENOMEM;
    }
    qsort(w, nw, sizeof(*w), cmp_att_rank);
    size_t *lo = calloc(natt + 1, sizeof(*lo)); /* attempt a: w[lo[a] .. lo[a + 1]) */
    g->att = lo ? calloc(natt, sizeof(*g->att)) : NULL;
    if (!g->att) {
        free(lo);
        free(w);
        return -ENOMEM;
    }
    for (size_t i = 0; i < nw; i++)
        lo[w[i].att + 1] = i + 1;
    g->natt = natt;
    for (size_t a = 0; a < natt; a++) {
        g->att[a].s = INT64_MAX;
        g->att[a].e = INT64_MIN;
        g->att[a].hang_since = INT64_MIN;
    }
    int rc = 0;
    for (size_t i = 0; i < nw; i++) {
        struct ct_attempt *A = &g->att[w[i].att];
        see(&A->s, &A->e, w[i].s, w[i].e);
        A->restart = w[i].key;
        A->procs++;
    }
    for (size_t a = 0; a < natt && !rc; a++) {
        struct ct_attempt *A = &g->att[a];
        if (!(A->traces = calloc(A->procs, sizeof(*A->traces)))) {
            rc = -ENOMEM;
            break;
        }
        for (size_t i = lo[a]; i < lo[a + 1]; i++)
            A->traces[i - lo[a]] = w[i].p->path;
        attempt_end(A, w + lo[a], lo[a + 1] - lo[a], a);
    }
    /* attempts cover the job: the first from its first process (a
     * launcher's start-up is the first attempt's), the last to its end;
     * one that outlived the next's start ends there */
    g->att[0].s = g->s;
    g->att[natt - 1].e = g->e;
    /* PyTorch profiler traces hold no process lives: between two of them
     * nothing was recorded, which is no down time */
    int lives = 1;
    for (size_t i = 0; i < nw; i++)
        lives &= w[i].p->source != CT_SOURCE_KINETO;
    for (size_t a = 0; a + 1 < natt; a++) {
        if (g->att[a].e > g->att[a + 1].s)
            g->att[a].e = g->att[a + 1].s;
        if (lives)
            g->downtime += (double)(g->att[a + 1].s - g->att[a].e);
    }
    for (size_t a = 0; a < natt && !rc; a++) {
        size_t b = a + 1 < natt ? a + 1 : a;
        rc = attempt_parts(rep, w + lo[a], lo[a + 1] - lo[a], w + lo[b], lo[b + 1] - lo[b], g->att,
                           natt, a);
    }
    free(lo);
    size_t seen = 0;
    g->covered = g->downtime;
    for (size_t a = 0; a < natt; a++) {
        for (int p = 0; p < CT_GP_NPARTS; p++)
            g->part[p] += g->att[a].part[p];
        g->covered += g->att[a].covered;
        seen += g->att[a].steps_seen;
    }
    if (!seen) {
        /* no step anywhere: nothing tells productive time from start-up,
         * idle or shutdown (a trace without step annotations whose work
         * does not repeat, a PyTorch profiler window of no whole step), nor
         * a window's edges from the rest: all recorded time is covered */
        g->covered = g->downtime;
        for (size_t a = 0; a < natt; a++) {
            no_steps(g->att[a].part);
            g->att[a].covered = g->att[a].recorded;
            g->covered += g->att[a].recorded;
        }
        no_steps(g->part);
    }
    if (g->covered <= 0)
        g->unavailable = !lives ? "no GPU activity in the PyTorch profiler traces: their goodput "
                                  "is over their GPU window"
                                : "the traces' capture windows cover none of the job";
    else if (!seen)
        g->unavailable = "no step found in the recorded time (no ProfilerStep or --step range or "
                         "mark, and no work that repeats)";
    else
        g->goodput_pct = 100.0 * g->part[CT_GP_PRODUCTIVE] / g->covered;
    free(w);
    return rc;
}

void ct_goodput_free(struct ct_goodput *g)
{
    for (size_t a = 0; a < g->natt; a++) {
        free(g->att[a].lost_steps);
        free(g->att[a].traces);
    }
    free(g->att);
    memset(g, 0, sizeof(*g));
}
