/*
 * From a parsed Kineto trace (kineto.c) to struct ct_proc, and HTA's
 * numbers. HTA-compatible mode copies HTA 0.6.1's preprocessing
 * (shared notes hta.md §1-§3): ts = ceil(ts), end = floor(ts + dur) in µs
 * when any ts is fractional; GPU rows are (stream >= 0 and correlation >= 0)
 * or Event/Context Sync, every other row is CPU; with >= 2 ProfilerStep
 * names in the job, CPU rows starting at or after the last step's start go,
 * else CPU rows starting after the last step's end go; GPU rows stay only
 * when a kept CPU row has their correlation; G = kept rows with stream != -1.
 * Normal mode keeps exact ns, every step, and only real GPU activity.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/kineto/kineto_int.h"
#include "decoder/read/host_classes.h"
#include "decoder/util/array.h"
#include "decoder/util/stats.h"

/* ---- HTA's kernel types (hta/common/types.py, re.match anchored) ---- */

static int starts(const char *s, const char *p)
{
    return !strncmp(s, p, strlen(p));
}

int ct_hta_kernel_type(const char *n)
{
    if (starts(n, "nccl") || starts(n, "hip") || starts(n, "hccl") || strstr(n, "ncclKernel"))
        return CT_HTA_COMM;
    if (starts(n, "Memcpy") || starts(n, "hipMemcpy") || starts(n, "Memset") ||
        starts(n, "hipMemset") || starts(n, "dma"))
        return CT_HTA_MEM;
    static const char *const pre[] = {"Stream Wait Event",
                                      "runFunction",
                                      "job_exe",
                                      "packet",
                                      "pe_exe",
                                      "cpum_exe_subgraph",
                                      "collective_subgraph_execution"};
    for (size_t i = 0; i < sizeof(pre) / sizeof(pre[0]); i++)
        if (starts(n, pre[i]))
            return CT_HTA_OTHER;
    if (strstr(n, "Memcpy") || strstr(n, "Memset") || strstr(n, "dma") || strstr(n, "Sync"))
        return CT_HTA_OTHER;
    /* (cuda.*LaunchKernel) with re.match: starts with cuda, then LaunchKernel */
    if (starts(n, "cuda") && strstr(n + 4, "LaunchKernel"))
        return CT_HTA_OTHER;
    return CT_HTA_COMP;
}

/* ---- interval helpers (HTA's merge: touching intervals join) ---- */

struct iv {
    int64_t s, e;
};

/* qsort, after one pass that finds most inputs already in order (rows come
 * in time order, correlation ids mostly rising): a sort costs more than
 * the rest of the model on those. */
static void sort_rows(void *v, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    const char *p = v;
    for (size_t i = 1; i < n; i++)
        if (cmp(p + (i - 1) * size, p + i * size) > 0) {
            qsort(v, n, size, cmp);
            return;
        }
}

static int cmp_iv(const void *a, const void *b)
{
    const struct iv *x = a, *y = b;
    if (x->s != y->s)
        return x->s < y->s ? -1 : 1;
    return (x->e > y->e) - (x->e < y->e);
}

/* Merges v in place (sorted by start); returns the merged count and adds
 * HTA's total (sum over groups of max end - first start) to *len. */
static size_t merge(struct iv *v, size_t n, int64_t *len)
{
    sort_rows(v, n, sizeof(*v), cmp_iv);
    size_t m = 0;
    *len = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && v[i].s <= v[m - 1].e) {
            if (v[i].e > v[m - 1].e)
                v[m - 1].e = v[i].e;
        } else {
            v[m++] = v[i];
        }
    }
    for (size_t i = 0; i < m; i++)
        *len += v[i].e - v[i].s;
    return m;
}

static int64_t intersect_len(const struct iv *a, size_t na, const struct iv *b, size_t nb)
{
    int64_t t = 0;
    size_t i = 0, j = 0;
    while (i < na && j < nb) {
        int64_t s = a[i].s > b[j].s ? a[i].s : b[j].s;
        int64_t e = a[i].e < b[j].e ? a[i].e : b[j].e;
        if (e > s)
            t += e - s;
        if (a[i].e < b[j].e)
            i++;
        else
            j++;
    }
    return t;
}

/* ---- correlation -> launching CPU row ---- */

struct corr_ix {
    int64_t corr;
    size_t row;
};

static int cmp_corr(const void *a, const void *b)
{
    const struct corr_ix *x = a, *y = b;
    if (x->corr != y->corr)
        return x->corr < y->corr ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

/* The first entry of v (sorted by corr) with id c, or NULL. Lookups come
 * in row order, whose ids mostly rise: the search gallops out from the
 * previous answer (*hint) and then bisects, a few steps instead of log n
 * probes across the whole array. */
static const struct corr_ix *corr_find(const struct corr_ix *v, size_t n, int64_t c, size_t *hint)
{
    if (!n)
        return NULL;
    size_t h = *hint < n ? *hint : n - 1, lo, hi, step = 1;
    if (v[h].corr < c) { /* the answer is right of h */
        lo = h + 1;
        while (lo + step - 1 < n && v[lo + step - 1].corr < c) {
            lo += step;
            step *= 2;
        }
        hi = lo + step - 1 < n ? lo + step - 1 : n;
    } else { /* at h or left of it */
        hi = h;
        while (hi >= step && v[hi - step].corr >= c) {
            hi -= step;
            step *= 2;
        }
        lo = hi >= step ? hi - step + 1 : 0;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].corr < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    *hint = lo;
    return lo < n && v[lo].corr == c ? &v[lo] : NULL;
}

static int is_gpu_cat(int c)
{
    return c == CT_KC_KERNEL || c == CT_KC_MEMCPY || c == CT_KC_MEMSET ||
           c == CT_KC_LEGACY_KERNEL || c == CT_KC_LEGACY_MEMCPY || c == CT_KC_LEGACY_MEMSET ||
           c == CT_KC_MTIA_CCP;
}

static int is_mem_cat(int c)
{
    return c == CT_KC_MEMCPY || c == CT_KC_MEMSET || c == CT_KC_LEGACY_MEMCPY ||
           c == CT_KC_LEGACY_MEMSET;
}

static int is_launch(const char *n)
{
    static const char *const t[] = {"cudaLaunchKernel",
                                    "cuLaunchKernel",
                                    "cudaMemcpyAsync",
                                    "cudaMemsetAsync",
                                    "cudaGraphLaunch",
                                    "cuGraphLaunch",
                                    "cudaLaunchCooperativeKernel",
                                    "hipLaunchKernel",
                                    "hipExtModuleLaunchKernel",
                                    "hipMemcpyAsync",
                                    "hipMemsetAsync",
                                    "hipMemcpyWithStream",
                                    "hipGraphLaunch"};
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (starts(n, t[i]))
            return 1;
    return 0;
}

/* A launch of a kernel or a graph (not a copy or memset): a long one is
 * blocking only as the first of its kernel (first_launches). */
static int is_kernel_launch(const char *n)
{
    return is_launch(n) && !strstr(n, "Memcpy") && !strstr(n, "Memset");
}

/* For each kernel-launch row that launched a GPU row in the model, the key
 * of what it launched + 1 in lk[row] (a kernel's name; one key for every
 * graph, as ct_calls_launch has), and in first[key] the earliest such
 * launch: a long launch blocked the host as the first of its kernel (its
 * module loads then, host_classes.h) and not otherwise (the host itself
 * was held, or a full launch queue waited for the GPU). */
static void first_launches(const struct ct_kineto *k, const unsigned char *keep,
                           const unsigned char *inG, const struct corr_ix *cx, size_t ncx,
                           const int64_t *ts, uint32_t *lk, int64_t *first)
{
    size_t hint = 0, graph = k->nnames;
    for (size_t key = 0; key <= graph; key++)
        first[key] = INT64_MAX;
    for (size_t i = 0; i < k->nrows; i++) {
        const struct ct_krow *r = &k->rows[i];
        if (!keep[i] || !inG[i] || r->corr < 0)
            continue;
        const struct corr_ix *c = corr_find(cx, ncx, r->corr, &hint);
        const char *ln = c ? k->names[k->rows[c->row].name] : NULL;
        if (!ln || !is_kernel_launch(ln))
            continue;
        size_t key = strstr(ln, "GraphLaunch") ? graph : r->name;
        lk[c->row] = (uint32_t)key + 1;
        if (ts[c->row] < first[key])
            first[key] = ts[c->row];
    }
}

static int is_sync_call(const char *n)
{
    static const char *const t[] = {"cudaDeviceSynchronize",
                                    "cudaStreamSynchronize",
                                    "cudaEventSynchronize",
                                    "cudaMemcpy",
                                    "cudaMemcpy2D",
                                    "cudaMemset",
                                    "cuCtxSynchronize",
                                    "cuStreamSynchronize",
                                    "cuEventSynchronize",
                                    "cuMemcpyDtoH_v2",
                                    "cuMemcpyHtoD_v2",
                                    "hipDeviceSynchronize",
                                    "hipStreamSynchronize",
                                    "hipEventSynchronize",
                                    "hipMemcpy"};
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (!strcmp(n, t[i]))
            return 1;
    return 0;
}

struct seqc {
    uint64_t comm, n;
};

/* ---- HTA's per-rank numbers ---- */

struct sidx {
    int64_t stream, ts;
    size_t row;
};

static int cmp_sidx(const void *a, const void *b)
{
    const struct sidx *x = a, *y = b;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

/* ct_hta_kernel_type of name id `name`, computed once per name (kt[] starts
 * at -1): its substring searches cost more than all the rest of a row. */
static int kernel_type(const struct ct_kineto *k, signed char *kt, size_t name)
{
    if (kt[name] < 0)
        kt[name] = (signed char)ct_hta_kernel_type(k->names[name]);
    return kt[name];
}

/* Marks figure `bit` of h null, with its reason. */
static void hta_bad(struct ct_hta *h, unsigned bit, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void hta_bad(struct ct_hta *h, unsigned bit, const char *fmt, ...)
{
    int i = 0;
    while ((1u << i) != bit)
        i++;
    h->bad |= bit;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->why[i], sizeof(h->why[i]), fmt, ap);
    va_end(ap);
}

/*
 * The figures HTA's numbers cannot give: HTA's own assertions on the
 * temporal breakdown (idle <= kernel_time, compute <= kernel_time,
 * non_compute >= 0: HTA raises instead of printing), and any negative time
 * or share outside [0, 100] %. Both come from HTA's µs rounding: a sub-µs
 * row (ts 10.3, dur 0.5) gets ceil(ts) = 11 > floor(end) = 10, a negative
 * length, which lowers a union wherever it lies outside every other row.
 */
static void hta_check(struct ct_hta *h, size_t ncomm)
{
    char neg[128] = "";
    if (h->negative_rows)
        snprintf(neg, sizeof(neg),
                 ": HTA's µs rounding (ceil start, floor end) left %lld sub-µs GPU rows ending "
                 "before they start",
                 (long long)h->negative_rows);
    if (h->kernel_time < 0) {
        hta_bad(h, CT_HB_KERNEL_TIME, "negative (%.0f µs)%s", (double)h->kernel_time / 1e3, neg);
        h->bad |= CT_HB_IDLE | CT_HB_COMPUTE | CT_HB_NON_COMPUTE;
        snprintf(h->why[1], sizeof(h->why[1]), "no kernel time (negative)%s", neg);
        snprintf(h->why[2], sizeof(h->why[2]), "no kernel time (negative)%s", neg);
        snprintf(h->why[3], sizeof(h->why[3]), "no kernel time (negative)%s", neg);
    }
    if (!(h->bad & CT_HB_IDLE) && (h->idle > h->kernel_time || h->idle < 0))
        hta_bad(h, CT_HB_IDLE,
                "would be %.0f µs of a %.0f µs kernel time%s; HTA fails its "
                "assertion idle_time <= kernel_time",
                (double)h->idle / 1e3, (double)h->kernel_time / 1e3, neg);
    if (!(h->bad & CT_HB_COMPUTE) && (h->compute > h->kernel_time || h->compute < 0))
        hta_bad(h, CT_HB_COMPUTE, "would be %.0f µs of a %.0f µs kernel time%s%s",
                (double)h->compute / 1e3, (double)h->kernel_time / 1e3, neg,
                h->compute > h->kernel_time ? "; HTA fails its assertion compute_time <= "
                                              "kernel_time"
                                            : "");
    if (!(h->bad & CT_HB_NON_COMPUTE) && h->non_compute < 0)
        hta_bad(h, CT_HB_NON_COMPUTE,
                "would be %.0f µs%s, outside every other row, so the union of all rows is "
                "shorter than compute; HTA fails its assertion non_compute_time >= 0",
                (double)h->non_compute / 1e3, neg);
    if (h->union_all < 0)
        hta_bad(h, CT_HB_UNION_ALL, "negative (%.0f µs)%s", (double)h->union_all / 1e3, neg);
    if (h->union_comm < 0)
        hta_bad(h, CT_HB_COMM, "negative (%.0f µs)%s", (double)h->union_comm / 1e3, neg);
    if (h->union_mem < 0)
        hta_bad(h, CT_HB_MEMORY, "negative (%.0f µs)%s", (double)h->union_mem / 1e3, neg);
    if (!ncomm)
        hta_bad(h, CT_HB_OVERLAP,
                "no communication kernel: HTA's overlap is a share of "
                "communication time (HTA gives NaN)");
    else if (h->union_comm <= 0 || h->comp_comm > h->union_comm)
        hta_bad(h, CT_HB_OVERLAP, "%.0f µs of compute under %.0f µs of communication%s",
                (double)h->comp_comm / 1e3, (double)h->union_comm / 1e3, neg);
    for (size_t i = 0; i < h->nstreams; i++)
        if (h->streams[i].negative && !(h->bad & CT_HB_IDLE_BREAKDOWN))
            hta_bad(h, CT_HB_IDLE_BREAKDOWN,
                    "stream %lld: events overlap on it, and HTA sums their negative gaps "
                    "(%s): those categories and the stream's ratios are null",
                    (long long)h->streams[i].stream,
                    h->streams[i].wait[1] < 0 ? "kernel_wait" : "a category");
}

static int hta_numbers(struct ct_kineto *k, const int64_t *ts, const int64_t *en,
                       const unsigned char *inG, const struct corr_ix *cx, size_t ncx,
                       signed char *kt)
{
    struct ct_hta *h = &k->hta;
    size_t n = k->nrows, ng = 0;
    for (size_t i = 0; i < n; i++)
        ng += inG[i];
    h->gpu_events = (int64_t)ng;
    if (!ng)
        return 0;
    struct iv *all = malloc(ng * sizeof(*all) * 3);
    struct sidx *sx = malloc(ng * sizeof(*sx));
    if (!all || !sx) {
        free(all);
        free(sx);
        return -ENOMEM;
    }
    struct iv *comp = all + ng, *comm = all + 2 * ng, *mem = comm; /* mem reuses comm later */
    size_t na = 0, nc = 0, nm = 0, ns = 0;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        if (!inG[i])
            continue;
        h->negative_rows += en[i] < ts[i];
        if (ts[i] < lo)
            lo = ts[i];
        if (en[i] > hi)
            hi = en[i];
        all[na++] = (struct iv){ts[i], en[i]};
        int t = kernel_type(k, kt, k->rows[i].name);
        if (t == CT_HTA_COMP)
            comp[nc++] = (struct iv){ts[i], en[i]};
        else if (t == CT_HTA_COMM)
            comm[nm++] = (struct iv){ts[i], en[i]};
        int c = k->rows[i].cat;
        if (is_gpu_cat(c))
            sx[ns++] = (struct sidx){k->rows[i].stream, ts[i], i};
    }
    h->valid = 1;
    h->kernel_time = hi - lo;
    merge(all, na, &h->union_all);
    size_t mc = merge(comp, nc, &h->compute);
    size_t ncomm = nm, mm = merge(comm, nm, &h->union_comm);
    h->comp_comm = intersect_len(comp, mc, comm, mm);
    /* memory union (reported for reference): rebuild over comm's space */
    nm = 0;
    for (size_t i = 0; i < n; i++)
        if (inG[i] && kernel_type(k, kt, k->rows[i].name) == CT_HTA_MEM)
            mem[nm++] = (struct iv){ts[i], en[i]};
    merge(mem, nm, &h->union_mem);
    h->idle = h->kernel_time - h->union_all;
    h->non_compute = h->kernel_time - h->compute - h->idle;

    /* idle breakdown per stream, previous event in ts order */
    sort_rows(sx, ns, sizeof(*sx), cmp_sidx);
    int rc = 0;
    size_t cap = 0, hint = 0;
    for (size_t a = 0; a < ns && !rc;) {
        size_t b = a;
        while (b < ns && sx[b].stream == sx[a].stream)
            b++;
        if ((rc = ct_grow((void **)&h->streams, &cap, h->nstreams, sizeof(*h->streams))))
            break;
        struct ct_hta_stream *st = &h->streams[h->nstreams++];
        memset(st, 0, sizeof(*st));
        st->stream = sx[a].stream;
        st->present[2] = 1; /* the first event: NaN gap, category other */
        for (size_t i = a + 1; i < b; i++) {
            size_t r = sx[i].row, pr = sx[i - 1].row;
            int64_t prev_end = ts[pr] + (en[pr] - ts[pr]);
            int64_t gap = ts[r] - prev_end;
            /* correlation -1 links nothing (HTA's index_correlation) */
            const struct corr_ix *c =
                k->rows[r].corr >= 0 ? corr_find(cx, ncx, k->rows[r].corr, &hint) : NULL;
            int cat;
            if (c && ts[c->row] > prev_end)
                cat = 0;
            else if (gap < 30 * 1000) /* consecutive_kernel_delay = 30 trace units (µs) */
                cat = 1;
            else
                cat = 2;
            st->wait[cat] += gap;
            st->present[cat] = 1;
        }
        for (int c = 0; c < 3; c++)
            st->negative |= st->wait[c] < 0;
        a = b;
    }
    if (!rc)
        hta_check(h, ncomm);
    free(all);
    free(sx);
    return rc;
}

/* ---- the model ---- */

/* k->note: how many GPU rows each rule dropped (nothing when none did). */
static void drop_note(struct ct_kineto *k, const char *path, int rnd)
{
    const struct ct_hta *h = &k->hta;
    int64_t filt = h->drop_last_step + h->drop_no_launch;
    size_t n = sizeof(k->note), u = 0;
    k->note[0] = 0;
    if (!filt && !k->drop_empty)
        return;
    u += (size_t)snprintf(k->note, n, "%s: kineto:", path);
    if (filt && u < n) {
        u += (size_t)snprintf(k->note + u, n - u,
                              " HTA's last-step rule dropped %lld of %lld GPU rows (",
                              (long long)filt, (long long)h->gpu_rows);
        if (h->drop_last_step && u < n)
            u += (size_t)snprintf(k->note + u, n - u,
                                  "%lld launched at or after the start of the last step, "
                                  "ProfilerStep#%lld%s",
                                  (long long)h->drop_last_step, (long long)h->step_last,
                                  h->drop_no_launch ? "; " : "");
        if (h->drop_no_launch && u < n)
            u += (size_t)snprintf(k->note + u, n - u,
                                  "%lld whose launch is not in the trace: before the capture",
                                  (long long)h->drop_no_launch);
        if (u < n)
            u += (size_t)snprintf(k->note + u, n - u, ")%s", k->drop_empty ? ";" : "");
    }
    if (k->drop_empty && u < n)
        snprintf(k->note + u, n - u, " %lld of %lld GPU rows last no time%s: not in the timeline%s",
                 (long long)k->drop_empty, (long long)k->model_rows,
                 rnd ? " after HTA's µs rounding" : "",
                 k->hta_mode ? " (HTA's figures count them)" : "");
}

static int cmp_edge(const void *a, const void *b)
{
    const struct ct_evedge *x = a, *y = b;
    if (x->wait != y->wait)
        return x->wait < y->wait ? -1 : 1;
    return (x->rec > y->rec) - (x->rec < y->rec);
}

/* The trace's stream waits as the process's event edges (timeline.h,
 * struct ct_evedge), by wait time: recorded at the start of the
 * cudaEventRecord the wait names (Kineto does not say which stream that
 * call recorded on, the wait does: wait_on_stream), waited at the wait
 * row's start (inside cudaStreamWaitEvent, so before any later launch on
 * the waiting stream). A wait whose record is not in the kept rows has
 * nothing in the trace to wait for and gets no edge. 0 or -ENOMEM. */
static int stream_wait_edges(struct ct_proc *p, const struct ct_kineto *k, const int64_t *ts,
                             const struct corr_ix *cx, size_t ncx, int rnd)
{
    size_t hint = 0;
    if (!k->nwaits)
        return 0;
    p->edges = malloc(k->nwaits * sizeof(*p->edges));
    if (!p->edges)
        return -ENOMEM;
    for (size_t i = 0; i < k->nwaits; i++) {
        const struct ct_kwait *w = &k->waits[i];
        const struct corr_ix *c = corr_find(cx, ncx, w->rec_corr, &hint);
        if (!c)
            continue;
        int64_t wait = rnd ? (int64_t)ceil(w->tsd) * 1000 : w->ts_ns;
        p->edges[p->nedges++] =
            (struct ct_evedge){ts[c->row], wait, (uint32_t)w->from, (uint32_t)w->to};
    }
    if (p->nedges > 1)
        qsort(p->edges, p->nedges, sizeof(*p->edges), cmp_edge);
    return 0;
}

int ct_kineto_build(struct ct_proc *p, int hta, int filter_last)
{
    struct ct_kineto *k = ct_kin(p);
    size_t n = k->nrows, hint = 0; /* corr_find's */
    int rnd = hta && k->ts_float;
    k->hta_mode = hta;
    k->hta.rounded = rnd;
    k->hta.step_last = -1;
    int64_t *ts = malloc((n ? n : 1) * sizeof(*ts));
    int64_t *en = malloc((n ? n : 1) * sizeof(*en));
    unsigned char *keep = calloc(n ? n : 1, 1);
    unsigned char *inG = calloc(n ? n : 1, 1);
    struct corr_ix *cx = malloc((n ? n : 1) * sizeof(*cx));
    signed char *kt = malloc(k->nnames ? k->nnames : 1);
    uint32_t *lk = NULL; /* first_launches' */
    int64_t *first = NULL;
    int rc = 0;
    if (kt)
        memset(kt, -1, k->nnames ? k->nnames : 1);
    if (!ts || !en || !keep || !inG || !cx || !kt) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const struct ct_krow *r = &k->rows[i];
        if (rnd) {
            ts[i] = (int64_t)ceil(r->tsd) * 1000;
            en[i] = (int64_t)floor(r->tsd + r->durd) * 1000;
        } else {
            ts[i] = r->ts_ns;
            en[i] = r->ts_ns + r->dur_ns;
        }
    }
    int64_t ucpu_min = rnd ? (int64_t)ceil(k->cpu_min_tsd) * 1000 : k->cpu_min_ns;

    /* CPU/GPU split and HTA's filter */
    size_t ncx = 0;
    if (hta) {
        int any_cpu = k->cpu_unstored > 0, any_step = 0;
        int64_t step_start = INT64_MIN;
        int64_t cmin = k->cpu_unstored ? ucpu_min : INT64_MAX;
        for (size_t i = 0; i < n; i++) {
            const struct ct_krow *r = &k->rows[i];
            const char *nm = k->names[r->name];
            int gpu = (r->stream >= 0 && r->corr >= 0) || !strcmp(nm, "Event Sync") ||
                      !strcmp(nm, "Context Sync");
            keep[i] = gpu ? 2 : 0; /* 2: GPU row, decided below */
            k->hta.gpu_rows += gpu;
            if (gpu)
                continue;
            any_cpu = 1;
            if (ts[i] < cmin)
                cmin = ts[i];
            if (r->flags & CT_KF_STEP) {
                any_step = 1;
                if (ts[i] > step_start) {
                    step_start = ts[i];
                    k->hta.step_last = strtoll(nm + 13, NULL, 10);
                }
            }
        }
        k->hta.filtered = filter_last && any_cpu;
        if (!k->hta.filtered) {
            /* HTA filters nothing with fewer than 2 step names (or no CPU
             * row): every row stays, a kernel whose launch precedes the
             * capture too */
            for (size_t i = 0; i < n; i++) {
                if (keep[i] != 2 && k->rows[i].corr >= 0)
                    cx[ncx++] = (struct corr_ix){k->rows[i].corr, i};
                keep[i] = 1;
            }
            sort_rows(cx, ncx, sizeof(*cx), cmp_corr);
        } else {
            int64_t bound = any_step ? step_start : cmin;
            int neg_kept = k->cpu_unstored && ucpu_min < bound;
            /* every CPU row's correlation first: a dropped GPU row was
             * launched in the last step, or its launch is not in the trace */
            for (size_t i = 0; i < n; i++)
                if (keep[i] != 2 && k->rows[i].corr >= 0)
                    cx[ncx++] = (struct corr_ix){k->rows[i].corr, i};
            sort_rows(cx, ncx, sizeof(*cx), cmp_corr);
            for (size_t i = 0; i < n; i++)
                if (keep[i] == 2 && k->rows[i].corr >= 0 &&
                    corr_find(cx, ncx, k->rows[i].corr, &hint) != NULL)
                    keep[i] = 3; /* its launch is in the trace */
            ncx = 0;
            for (size_t i = 0; i < n; i++) {
                if (keep[i] >= 2)
                    continue;
                keep[i] = ts[i] < bound;
                if (keep[i])
                    cx[ncx++] = (struct corr_ix){k->rows[i].corr, i};
            }
            sort_rows(cx, ncx, sizeof(*cx), cmp_corr);
            hint = 0;
            for (size_t i = 0; i < n; i++)
                if (keep[i] >= 2) {
                    int64_t c = k->rows[i].corr;
                    int launched = keep[i] == 3;
                    keep[i] = corr_find(cx, ncx, c, &hint) != NULL || (c == -1 && neg_kept);
                    if (!keep[i])
                        k->hta.drop_last_step += launched, k->hta.drop_no_launch += !launched;
                }
        }
        for (size_t i = 0; i < n; i++)
            inG[i] = keep[i] && k->rows[i].stream != -1;
        if ((rc = hta_numbers(k, ts, en, inG, cx, ncx, kt)))
            goto out;
    } else {
        for (size_t i = 0; i < n; i++) {
            keep[i] = 1;
            const struct ct_krow *r = &k->rows[i];
            inG[i] = is_gpu_cat(r->cat) && r->stream >= 0;
            if (!inG[i] && r->corr >= 0)
                cx[ncx++] = (struct corr_ix){r->corr, i};
        }
        sort_rows(cx, ncx, sizeof(*cx), cmp_corr);
    }

    lk = calloc(n ? n : 1, sizeof(*lk));
    first = malloc((k->nnames + 1) * sizeof(*first));
    if (!lk || !first) {
        rc = -ENOMEM;
        goto out;
    }
    first_launches(k, keep, inG, cx, ncx, ts, lk, first);

    /* GPU intervals, NCCL ops, host spans, steps */
    size_t cap_ops = 0, cap_nccl = 0, cap_l = 0, cap_s = 0, cap_q = 0;
    struct seqc *seqs = NULL;
    size_t nseq = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        const struct ct_krow *r = &k->rows[i];
        const char *nm = k->names[r->name];
        if (!keep[i])
            continue;
        if (inG[i]) {
            int type = hta ? kernel_type(k, kt, r->name) : -1;
            if (type == CT_HTA_OTHER)
                continue; /* sync rows: HTA's numbers count them, the model cannot */
            k->model_rows++;
            if (en[i] <= ts[i]) { /* no length: nothing the timeline can hold */
                k->drop_empty++;
                continue;
            }
            if ((rc = ct_grow((void **)&p->ops, &cap_ops, p->nops, sizeof(*p->ops))))
                break;
            struct ct_gpu_op *g = &p->ops[p->nops];
            memset(g, 0, sizeof(*g));
            g->s = ts[i];
            g->e = en[i];
            g->stream = (uint32_t)r->stream;
            g->name = r->name;
            g->nccl = -1;
            g->type = is_mem_cat(r->cat) ? (strstr(nm, "emset") ? CT_GPU_MEMSET : CT_GPU_MEMCPY)
                                         : CT_GPU_KERNEL;
            const struct corr_ix *c = r->corr >= 0 ? corr_find(cx, ncx, r->corr, &hint) : NULL;
            g->launch = c ? ts[c->row] : INT64_MIN;
            g->graph = c && strstr(k->names[k->rows[c->row].name], "GraphLaunch") != NULL;
            int op = ct_nccl_op_from_kernel(nm);
            if (hta ? type == CT_HTA_MEM : is_mem_cat(r->cat))
                g->cls = CT_CL_MEMORY;
            else if (hta ? type == CT_HTA_COMM : op != 0)
                g->cls = CT_CL_OTHER, g->op = (uint8_t)op;
            else
                g->cls = CT_CL_COMPUTE;
            if (r->coll >= 0 && g->cls == CT_CL_OTHER) {
                const struct ct_kcoll *kc = &k->colls[r->coll];
                if ((rc = ct_grow((void **)&p->nccl, &cap_nccl, p->nnccl, sizeof(*p->nccl))))
                    break;
                struct ct_nccl_call *o = &p->nccl[p->nnccl];
                memset(o, 0, sizeof(*o));
                o->host_s = c ? ts[c->row] : ts[i];
                o->host_e = c ? en[c->row] : ts[i];
                o->s = ts[i];
                o->e = en[i];
                o->comm = kc->pg ? kc->pg : 1;
                size_t q;
                for (q = 0; q < nseq && seqs[q].comm != o->comm; q++)
                    ;
                if (q == nseq) {
                    if ((rc = ct_grow((void **)&seqs, &cap_q, nseq, sizeof(*seqs))))
                        break;
                    seqs[nseq++] = (struct seqc){o->comm, 0};
                }
                o->seq = seqs[q].n++;
                o->bytes = kc->in_nelems * kc->elem_size;
                o->corr = (uint64_t)r->corr;
                o->comm_rank = (int32_t)p->rank;
                o->peer = -1;
                o->nranks = kc->group;
                o->op = kc->op;
                o->cls = CT_CL_OTHER;
                g->op = kc->op;
                g->nccl = (int32_t)p->nnccl++;
            }
            p->cov.gpu_cupti++;
            p->nops++;
            continue;
        }
        if (r->cat == CT_KC_RUNTIME || r->cat == CT_KC_DRIVER) {
            /* a runtime call that blocked (cudaMalloc, a pageable or
             * synchronous cudaMemcpy, a module load): not a synchronize,
             * which waits for the GPU (ct_is_blocking_call's rule; Kineto
             * rows keep no thread, so every thread's calls count) */
            int blocked = en[i] - ts[i] >= CT_BLOCKING_CALL_NS && !strstr(nm, "Synchronize");
            if (blocked && lk[i] && ts[i] != first[lk[i] - 1])
                blocked = 0; /* a kernel's later launch (first_launches) */
            if (blocked && (rc = ct_ivset_add(&p->cuda_call, ts[i], en[i])))
                break;
            if (is_launch(nm)) {
                if ((rc = ct_grow((void **)&p->launches, &cap_l, p->nlaunches, sizeof(int64_t))))
                    break;
                p->launches[p->nlaunches++] = ts[i];
            } else if (is_sync_call(nm)) {
                /* at the trace's own ns in either mode: HTA's numbers do not
                 * use syncs, and µs rounding would drop every sync shorter
                 * than a µs (a stream with nothing left to wait for) that
                 * ends a step (repeats.c step_start) */
                rc = ct_ivset_add(&p->sync, r->ts_ns, r->ts_ns + r->dur_ns);
            }
        } else if ((r->flags & CT_KF_STEP) && r->cat != CT_KC_GPU_USER_ANN) {
            if ((rc = ct_grow((void **)&p->steps, &cap_s, p->nsteps, sizeof(*p->steps))))
                break;
            struct ct_range *s = &p->steps[p->nsteps];
            s->s = ts[i];
            s->e = en[i];
            s->num = ct_step_number(nm);
            p->nsteps++;
        }
    }
    free(seqs);
    if (rc)
        goto out;
    if (p->nlaunches) /* launches may be NULL then */
        sort_rows(p->launches, p->nlaunches, sizeof(int64_t), ct_cmp_i64);
    ct_ivset_normalize(&p->sync);
    ct_ivset_normalize(&p->cuda_call);
    if ((rc = stream_wait_edges(p, k, ts, cx, ncx, rnd)))
        goto out;
    /* a capture of whole steps; HTA's mode drops its last (iterations.c) */
    p->at_step = hta ? 2 : 1;
    /* its first host event: of the CPU rows, in either mode (HTA's counts a
     * GPU row without a correlation id as CPU; the first step would begin
     * at its GPU time) */
    p->first_host = k->cpu_unstored ? ucpu_min : INT64_MAX;
    for (size_t i = 0; i < n; i++)
        if (keep[i] && !inG[i] && !is_gpu_cat(k->rows[i].cat) && ts[i] < p->first_host)
            p->first_host = ts[i];
    /* the names move to the process (ops index them) */
    p->names = k->names;
    p->nnames = k->nnames;
    k->names = NULL;
    k->nnames = 0;
    drop_note(k, p->path, rnd);
    if (!p->nops && !k->warn[0])
        snprintf(k->warn, sizeof(k->warn),
                 "%s: no GPU activity (kernels, copies, memsets) in this trace: "
                 "GPU analyses are empty for its rank",
                 p->path);
out:
    free(ts);
    free(en);
    free(keep);
    free(inG);
    free(cx);
    free(kt);
    free(lk);
    free(first);
    /* HTA's figures are the process's (decoder/read/hta.h) */
    if (!rc && hta) {
        if ((p->hta = malloc(sizeof(*p->hta)))) {
            *p->hta = k->hta;
            k->hta.streams = NULL;
            k->hta.nstreams = 0;
        } else {
            rc = -ENOMEM;
        }
    }
    /* rows are no longer needed */
    free(k->rows);
    k->rows = NULL;
    k->nrows = k->cap = 0;
    free(k->colls);
    k->colls = NULL;
    free(k->waits);
    k->waits = NULL;
    k->nwaits = k->wcap = 0;
    free(k->hash);
    k->hash = NULL;
    return rc;
}

static int cmp_strp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int ct_kineto_finish(struct ct_proc *procs, size_t n, int hta)
{
    /* distinct ProfilerStep names in the job (HTA's global symbol table) */
    size_t cap = 0, ns = 0;
    const char **steps = NULL;
    for (size_t i = 0; i < n; i++) {
        struct ct_kineto *k = ct_kin(&procs[i]);
        if (!k)
            continue;
        for (size_t j = 0; j < k->nrows; j++)
            if (k->rows[j].flags & CT_KF_STEP) {
                if (ct_grow((void **)&steps, &cap, ns, sizeof(*steps))) {
                    free(steps);
                    return -ENOMEM;
                }
                steps[ns++] = k->names[k->rows[j].name];
            }
    }
    size_t distinct = 0;
    if (ns) {
        qsort(steps, ns, sizeof(*steps), cmp_strp);
        distinct = 1;
        for (size_t i = 1; i < ns; i++)
            distinct += strcmp(steps[i], steps[i - 1]) != 0;
    }
    free(steps);
    /* a rank claimed twice: the later file gets a fresh number */
    int64_t maxrank = -1;
    for (size_t i = 0; i < n; i++)
        if (procs[i].rank > maxrank)
            maxrank = procs[i].rank;
    for (size_t i = 0; i < n; i++) {
        struct ct_kineto *k = ct_kin(&procs[i]);
        if (!k || procs[i].rank < 0)
            continue;
        for (size_t j = 0; j < i; j++)
            if (procs[j].rank == procs[i].rank) {
                if (!k->warn[0])
                    snprintf(k->warn, sizeof(k->warn),
                             "%s: rank %lld already taken by %s: reported as rank %lld",
                             procs[i].path, (long long)procs[i].rank, procs[j].path,
                             (long long)(maxrank + 1));
                procs[i].rank = ++maxrank;
                break;
            }
    }
    for (size_t i = 0; i < n; i++) {
        if (!ct_kin(&procs[i]))
            continue;
        int rc = ct_kineto_build(&procs[i], hta, distinct >= 2);
        if (rc)
            return rc;
    }
    return 0;
}
