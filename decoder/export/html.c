/*
 * `cutrace report --html`: one self-contained HTML file (inline CSS, JS and
 * SVG; nothing is fetched). Its header names the job (command line, start,
 * hosts, GPUs, run and job ids, the cutrace version); then `cutrace
 * diagnose`'s findings as diagnose itself makes them (the command passes
 * its --json document in: struct ct_html_in), other per-rank observations
 * under their own heading, the summary, the step-time line over the run,
 * heat maps of step time, compute and waiting per rank and iteration, a
 * zoomable timeline per rank (decoder/export/html_timeline.c), the
 * breakdown, overlap and attribution charts, per-stream utilisation, each
 * kernel's share of compute time, per-iteration charts, health counters,
 * the critical path (decoder/export/html_critical_path.c), the
 * collective and kernel tables, and NCCL's per-link bandwidth matrix and
 * per-collective choices (decoder/export/html_nccl.c).
 *
 * The C side writes the figures as one JSON object inside
 * <script type="application/json"> (strings escaped so that no "<" can
 * close the element) and the page's script draws everything from it. The
 * script marks its own success on <body data-selfcheck="ok|error"> (an
 * error is also shown to the reader) and keeps what it drew in
 * window.ctDrawn, which is what the headless-browser test reads
 * (tests/export/check_html.py).
 *
 * The timeline never leaves part of the run out: a rank with more than
 * the per-rank limit of intervals (CT_HTML_RAW_TOTAL over the ranks drawn,
 * at least CT_HTML_RAW_MIN each) is written as bins with their exact busy
 * time, and its slowest step again in detail for the zoom. Times are ns
 * since the job's time zero, as in the JSON report.
 *
 * Beyond CT_HTML_DETAIL_RANKS ranks the page aggregates: every rank keeps
 * its figures (one bar each would be a 20000-pixel chart; they feed the
 * summary), but timelines, per-iteration charts and per-rank bars are drawn
 * for the detail ranks only (the CT_HTML_DETAIL_TOP highest straggler
 * scores and the lowest rank, a reference), observations are one line per
 * kind with their ranks compacted, and the rank x iteration heat maps show
 * every rank in at most CT_HTML_HEAT_COLS columns (each the mean over a run
 * of steps). A 1024-rank, 300-step job's page measured 124 MB before (a
 * timeline per rank); docs/export.md gives the size now.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "decoder/util/demangle.h"
#include "decoder/export/export.h"
#include "decoder/export/html_int.h"
#include "decoder/analysis/health.h"
#include "decoder/read/job.h"
#include "decoder/util/json.h"
#include "decoder/util/names.h"
#include "decoder/util/stats.h"

/* raw timeline intervals over the ranks drawn (about 30 bytes each in the
 * file: 6 MB), and at least this many per rank */
#define CT_HTML_RAW_TOTAL    200000
#define CT_HTML_RAW_MIN      5000
#define CT_HTML_MAX_PTS      2000 /* points per health series (every k-th sample) */
#define CT_HTML_DETAIL_RANKS 32   /* up to this many ranks, all in detail */
#define CT_HTML_DETAIL_TOP   8    /* beyond, the top stragglers in detail */
#define CT_HTML_HEAT_COLS    200
#define CT_HTML_STEP_COLS    1000 /* points of the step-time line (runs of steps beyond) */

/* A JSON string that is also safe inside <script>: <, >, & as \u escapes;
 * bytes outside ASCII become '?' (names are ASCII in practice). */
void ct_html_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&')
            fprintf(f, "\\u%04x", *p);
        else if (*p >= 0x80)
            fputc('?', f);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* The page's data are read by its own script, which draws numbers only:
 * there (and only there; decoder/util/json.h has the rule for every JSON
 * output) a non-finite value is drawn as 0. */
static double fin(double v)
{
    return isfinite(v) ? v : 0;
}

/* "KEY":[t, v, ...] of one series, t in ns since time zero, v x scale
 * rounded; at most CT_HTML_MAX_PTS points (every k-th sample, the last
 * always). */
static void hseries(FILE *f, const char *k, const struct ct_hseries *x, int64_t shift, double scale)
{
    fprintf(f, ",\"%s\":[", k);
    size_t step = x && x->n > CT_HTML_MAX_PTS ? (x->n + CT_HTML_MAX_PTS - 1) / CT_HTML_MAX_PTS : 1;
    for (size_t i = 0; x && i < x->n; i += step) {
        if (i + step >= x->n)
            i = x->n - 1;
        fprintf(f, "%s%" PRId64 ",%.1f", i ? "," : "", x->t[i] + shift, (double)x->v[i] * scale);
    }
    fputc(']', f);
}

/* "health":{dev, sm [t, MHz...], power [t, W...], throttled_pct, reasons
 * {name: pct}} over the rank's window, or null without device counters. */
static void health_json(FILE *f, const struct ct_report *rep, size_t r)
{
    const struct ct_rank_result *x = &rep->rr[r];
    const struct ct_hproc *h = x->rank->nprocs ? x->rank->procs[0]->health : NULL;
    struct ct_health_sum sum;
    int64_t shift = ct_health_shift(rep, r);
    ct_health_summarise(h, shift, x->ws, x->we, &sum);
    if (!h || sum.device < 0) {
        fputs(",\"health\":null", f);
        return;
    }
    shift -= rep->job->t0;
    fprintf(f, ",\"health\":{\"dev\":%d", sum.device);
    hseries(f, "sm", ct_hproc_find(h, sum.device, "sm_clock"), shift, 1);
    hseries(f, "power", ct_hproc_find(h, sum.device, "power"), shift, 1e-3);
    fprintf(f, ",\"throttled_pct\":%.2f,\"reasons\":{", 100 * fin(sum.throttled_share));
    int n = 0;
    for (int b = 0; b < CT_THROTTLE_NREASONS; b++)
        if ((CT_THROTTLE_SLOWING >> b & 1) && fin(sum.reason_share[b]) > 0)
            fprintf(f, "%s\"%s\":%.2f", n++ ? "," : "", ct_throttle_reason_name(b),
                    100 * sum.reason_share[b]);
    fputs("}}", f);
}

/* One rank's figures; for a detail rank also its iterations, timeline rows
 * (limit: raw intervals at most; [zlo, zhi] the slowest step) and health. */
static void rank_json(FILE *f, const struct ct_report *rep, const struct ct_rank_result *x,
                      int detail, size_t limit, int64_t zlo, int64_t zhi)
{
    struct ct_rank *R = x->rank;
    const int64_t t0 = rep->job->t0;
    fprintf(f, "{\"rank\":%d,\"host\":", R->rank);
    ct_html_str(f, R->host);
    fprintf(f,
            ",\"window\":%" PRId64 ",\"compute\":%" PRId64 ",\"comm\":%" PRId64
            ",\"memory\":%" PRId64 ",\"idle\":%" PRId64 ",\"exposed\":%" PRId64
            ",\"overlap\":%" PRId64 ",\"ws\":%" PRId64 ",\"we\":%" PRId64 ",\"windowed\":%d",
            x->covered, x->compute, x->comm, x->memory, x->idle, x->exposed_comm, x->overlap,
            x->ws - t0, x->we - t0, R->cover != NULL);
    fputs(",\"kinds\":{", f);
    for (int c = CT_CL_DP; c < CT_CL_COUNT; c++)
        fprintf(f, "%s\"%s\":[%" PRId64 ",%" PRId64 ",%" PRId64 "]", c > CT_CL_DP ? "," : "",
                ct_class_name(c), x->cls_len[c], x->cls_exposed[c], x->cls_overlap[c]);
    const struct ct_attribution *a = &x->at;
    fprintf(f,
            "},\"attr\":{\"bubble_idle\":%" PRId64 ",\"data\":%" PRId64 ",\"ckpt\":%" PRId64
            ",\"cuda_call\":%" PRId64 ",\"sync\":%" PRId64 ",\"launch\":%" PRId64
            ",\"unexplained\":%" PRId64 "}",
            a->bubble_idle, a->data_stall, a->ckpt_idle, a->cuda_call, a->sync_drain,
            a->launch_overhead, a->unexplained);
    /* figures the rank has none of (no pipeline: bubble < 0) are null, as
     * in every JSON output, not 0 */
    fputc(',', f);
    ct_json_member(f, "bubble_pct", x->bubble_pct >= 0 ? x->bubble_pct : NAN, 3);
    fputc(',', f);
    ct_json_member(f, "expected_bubble_pct",
                   x->expected_bubble_pct >= 0 ? x->expected_bubble_pct : NAN, 3);
    fprintf(f, ",\"flagged\":%d,", x->flagged);
    ct_json_member(f, "score", x->score, 3);
    fprintf(f, ",\"lateness\":%" PRId64 ",", x->lateness);
    ct_json_member(f, "slowness", x->slowness, 4);
    fprintf(f, ",\"detail\":%d", detail);
    if (!detail) { /* figures only: no timeline, iterations or health series */
        fputs(",\"iters\":[],\"names\":[],\"rows\":[],\"zoom\":null}", f);
        return;
    }
    fputs(",\"iters\":[", f);
    for (size_t i = 0; i < x->niters; i++) {
        const struct ct_iter *it = &x->iters[i];
        const struct ct_iter_metrics *m = &x->im[i];
        fprintf(f,
                "%s[%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
                ",%" PRId64 ",%" PRId64 ",%" PRId64 "]",
                i ? "," : "", it->index, it->s - t0, it->e - t0, m->compute, m->comm, m->memory,
                m->idle, m->exposed_comm, m->bubble);
    }
    /* the kernel names the timeline's intervals index */
    fputs("],\"names\":[", f);
    for (size_t i = 0; i < R->nnames; i++) {
        char buf[512];
        fputs(i ? "," : "", f);
        ct_html_str(f, ct_demangle(R->names[i] ? R->names[i] : "", buf, sizeof(buf)));
    }
    fputs("],", f);
    ct_html_timeline(f, rep, (size_t)(x - rep->rr), limit, zlo, zhi);
    health_json(f, rep, (size_t)(x - rep->rr));
    ct_html_eff_rank_json(f, rep, (size_t)(x - rep->rr)); /* html_efficiency.c */
    fputc('}', f);
}

/* The page's other observations (diagnose's findings are its own
 * section), per rank: a flagged straggler score, a pipeline bubble, and
 * each stall or exposed communication of 2 % of the window or more. */
enum {
    F_STRAGGLER,
    F_BUBBLE,
    F_DATA,
    F_CKPT,
    F_CUDA_CALL,
    F_SYNC,
    F_LAUNCH,
    F_UNEXPLAINED,
    F_EXPOSED,
    F_N
};
static const char *const finding_name[F_N] = {
    "straggler",        "pipeline bubble",      "data-loading stall",
    "checkpoint stall", "blocking CUDA call",   "sync drain",
    "launch overhead",  "unexplained GPU idle", "exposed communication"};

/* 1 when rank x has finding k; *v its figure (score, bubble %, ns). */
static int finding(const struct ct_rank_result *x, int k, double *v)
{
    double w = (double)x->covered;
    if (w <= 0)
        return 0;
    const int64_t st[] = {x->at.data_stall, x->at.checkpoint_stall, x->at.cuda_call,
                          x->at.sync_drain, x->at.launch_overhead,  x->at.unexplained,
                          x->exposed_comm};
    if (k == F_STRAGGLER)
        return (*v = x->score, x->flagged);
    if (k == F_BUBBLE)
        return (*v = x->bubble_pct) >= 0;
    *v = (double)st[k - F_DATA];
    return *v >= 0.02 * w;
}

static void facts_json(FILE *f, const struct ct_report *rep)
{
    fputs("\"facts\":[", f);
    int n = 0;
    char buf[400];
#define FIND(...)                                                                                  \
    do {                                                                                           \
        snprintf(buf, sizeof(buf), __VA_ARGS__);                                                   \
        fputs(n++ ? "," : "", f);                                                                  \
        ct_html_str(f, buf);                                                                       \
    } while (0)
    if (rep->nr > CT_HTML_DETAIL_RANKS) {
        /* one line per kind: how many ranks, which, the median and the worst */
        int *rk = malloc(rep->nr * sizeof(*rk));
        double *val = malloc(rep->nr * sizeof(*val)), *tmp = malloc(rep->nr * sizeof(*tmp));
        for (int k = 0; k < F_N && rk && val && tmp; k++) {
            size_t m = 0, worst = 0;
            for (size_t r = 0; r < rep->nr; r++) {
                double v;
                const struct ct_rank_result *x = &rep->rr[r];
                if (!finding(x, k, &v))
                    continue;
                if (k > F_BUBBLE)
                    v = 100 * v / (double)x->covered;
                if (!m || v > val[worst])
                    worst = m;
                rk[m] = x->rank->rank;
                val[m++] = v;
            }
            if (!m)
                continue;
            memcpy(tmp, val, m * sizeof(*tmp));
            double med = ct_median(tmp, m);
            char *list = NULL;
            size_t len = 0;
            FILE *lf = open_memstream(&list, &len);
            if (lf) {
                ct_ranks_text(lf, rk, m);
                fclose(lf);
            }
            const char *unit = k == F_STRAGGLER ? " (score)" : "% of the window";
            FIND("%s on %zu of %zu ranks (ranks%.200s%s): median %.1f%s, worst %.1f%s on rank %d",
                 finding_name[k], m, rep->nr, list ? list : "", list && len > 200 ? "..." : "", med,
                 unit, val[worst], unit, rk[worst]);
            free(list);
        }
        free(rk);
        free(val);
        free(tmp);
        fputs("]", f);
        return;
    }
    for (size_t r = 0; r < rep->nr; r++) {
        const struct ct_rank_result *x = &rep->rr[r];
        int rk = x->rank->rank;
        double v, w = (double)x->covered;
        if (finding(x, F_STRAGGLER, &v))
            FIND("rank %d is a straggler: score %.1f, lateness %.1f us, kernel slowness x%.3f", rk,
                 x->score, (double)x->lateness / 1e3, x->slowness);
        if (finding(x, F_BUBBLE, &v))
            FIND("rank %d: pipeline bubble %.1f%% of the iteration (schedule expects %.1f%%)", rk,
                 x->bubble_pct, x->expected_bubble_pct >= 0 ? x->expected_bubble_pct : 0.0);
        for (int k = F_DATA; k < F_N; k++)
            if (finding(x, k, &v))
                FIND("rank %d: %s %.3f ms (%.1f%% of the window)", rk, finding_name[k], v / 1e6,
                     100.0 * v / w);
    }
#undef FIND
    fputs("]", f);
}

static const char *op_name(int op)
{
    return op == CT_NCCL_OP_COUNT ? "other" : ct_name_nccl_op((uint64_t)op);
}

static int cmp_score(const void *a, const void *b, void *arg)
{
    const struct ct_report *rep = arg;
    double x = rep->rr[*(const size_t *)a].score, y = rep->rr[*(const size_t *)b].score;
    if (!(x == y))
        return x > y || isnan(y) ? -1 : 1; /* highest first, NaN last */
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/* Which ranks are drawn in detail (NULL: all, or out of memory): beyond
 * CT_HTML_DETAIL_RANKS, the lowest rank and the CT_HTML_DETAIL_TOP
 * highest straggler scores. */
static char *detail_ranks(const struct ct_report *rep)
{
    if (rep->nr <= CT_HTML_DETAIL_RANKS)
        return NULL;
    char *d = calloc(rep->nr, 1);
    size_t *o = malloc(rep->nr * sizeof(*o));
    if (!d || !o) {
        free(d);
        free(o);
        return NULL;
    }
    for (size_t r = 0; r < rep->nr; r++)
        o[r] = r;
    qsort_r(o, rep->nr, sizeof(*o), cmp_score, (void *)rep);
    d[0] = 1;
    for (size_t i = 0; i < CT_HTML_DETAIL_TOP && i < rep->nr; i++)
        d[o[i]] = 1;
    free(o);
    return d;
}

/* "heat":{"cols":[[first,last]...],"ranks":[...],"step":[[...]...],
 * "compute":[[...]...],"wait":[[...]...]}: per rank and column (a run of
 * the job's steps), the mean over its iterations there of the step's
 * duration, its GPU compute time and its GPU waiting time (idle or
 * exposed communication), in us, null where it has none. */
static void heat_json(FILE *f, const struct ct_report *rep)
{
    static const char *const key[3] = {"step", "compute", "wait"};
    size_t ns = rep->nsteps, nc = ns < CT_HTML_HEAT_COLS ? ns : CT_HTML_HEAT_COLS;
    fputs("\"heat\":{\"cols\":[", f);
    for (size_t c = 0; c < nc; c++)
        fprintf(f, "%s[%" PRId64 ",%" PRId64 "]", c ? "," : "", rep->steps[c * ns / nc].index,
                rep->steps[(c + 1) * ns / nc - 1].index);
    fputs("],\"ranks\":[", f);
    for (size_t r = 0; r < rep->nr; r++)
        fprintf(f, "%s%d", r ? "," : "", rep->rr[r].rank->rank);
    double *sum = calloc(nc ? nc : 1, sizeof(*sum));
    size_t *cnt = calloc(nc ? nc : 1, sizeof(*cnt));
    for (int what = 0; what < 3; what++) {
        fprintf(f, "],\"%s\":[", key[what]);
        for (size_t r = 0; r < rep->nr; r++) {
            const struct ct_rank_result *x = &rep->rr[r];
            if (sum && cnt) {
                memset(sum, 0, nc * sizeof(*sum));
                memset(cnt, 0, nc * sizeof(*cnt));
                for (size_t i = 0; x->im && i < x->niters; i++) {
                    /* the column of the step with this index (steps are sorted) */
                    size_t lo = 0, hi = ns;
                    while (lo < hi) {
                        size_t mid = (lo + hi) / 2;
                        if (rep->steps[mid].index < x->iters[i].index)
                            lo = mid + 1;
                        else
                            hi = mid;
                    }
                    if (lo >= ns || rep->steps[lo].index != x->iters[i].index)
                        continue;
                    size_t c = lo * nc / ns;
                    const struct ct_iter_metrics *m = &x->im[i];
                    sum[c] += what == 0   ? (double)(x->iters[i].e - x->iters[i].s)
                              : what == 1 ? (double)m->compute
                                          : (double)(m->idle + m->exposed_comm);
                    cnt[c]++;
                }
            }
            fputs(r ? ",[" : "[", f);
            for (size_t c = 0; c < nc; c++) {
                fputs(c ? "," : "", f);
                if (!sum || !cnt || !cnt[c])
                    fputs("null", f);
                else /* to 0.1 us below 100 us, else 1 us: at most 0.5 % of a
                      * cell of 10 us or more, under a fourth of the scale's
                      * step (2 % of the job's step) */
                    fprintf(f, sum[c] / (double)cnt[c] < 1e5 ? "%.1f" : "%.0f",
                            sum[c] / (double)cnt[c] / 1e3);
            }
            fputc(']', f);
        }
    }
    fputs("]}", f);
    free(sum);
    free(cnt);
}

/* The slowest step of the job (longest duration on any rank; the first of
 * equals), or SIZE_MAX without steps. */
static size_t slowest_step(const struct ct_report *rep)
{
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < rep->nsteps; i++)
        if (best == SIZE_MAX || rep->steps[i].dur_max > rep->steps[best].dur_max)
            best = i;
    return best;
}

/* "steps":{"cols":[[first,last,p50,max,slowest_rank]...],"slowest":{...}|null}:
 * the step time over the run, in at most CT_HTML_STEP_COLS points (each a
 * run of steps: the mean of their medians over ranks, the longest of them
 * and its rank), and the slowest step (index, window, duration), the
 * timeline's zoom. ns. */
static void steps_json(FILE *f, const struct ct_report *rep)
{
    size_t ns = rep->nsteps, nc = ns < CT_HTML_STEP_COLS ? ns : CT_HTML_STEP_COLS;
    const int64_t t0 = rep->job->t0;
    fputs("\"steps\":{\"cols\":[", f);
    for (size_t c = 0; c < nc; c++) {
        size_t lo = c * ns / nc, hi = (c + 1) * ns / nc, worst = lo;
        double p50 = 0;
        for (size_t i = lo; i < hi; i++) {
            p50 += rep->steps[i].dur_p50;
            if (rep->steps[i].dur_max > rep->steps[worst].dur_max)
                worst = i;
        }
        fprintf(f, "%s[%" PRId64 ",%" PRId64 ",%.0f,%.0f,%d]", c ? "," : "", rep->steps[lo].index,
                rep->steps[hi - 1].index, fin(p50 / (double)(hi - lo)),
                fin(rep->steps[worst].dur_max), rep->steps[worst].slowest);
    }
    size_t m = slowest_step(rep);
    if (m == SIZE_MAX) {
        fputs("],\"slowest\":null}", f);
        return;
    }
    const struct ct_job_step *st = &rep->steps[m];
    fprintf(f,
            "],\"slowest\":{\"index\":%" PRId64 ",\"start\":%" PRId64 ",\"end\":%" PRId64
            ",\"dur\":%.0f,\"rank\":%d}}",
            st->index, st->start - t0, st->end - t0, fin(st->dur_max), st->slowest);
}

/* The distinct values seen so far, in order of first sight. */
struct distinct {
    const char **v;
    size_t n, cap;
};

/* Adds s (borrowed) unless empty or already there. 0 or -ENOMEM. */
static int distinct_add(struct distinct *d, const char *s)
{
    if (!s || !*s || !strcmp(s, "(none)"))
        return 0;
    for (size_t i = 0; i < d->n; i++)
        if (!strcmp(d->v[i], s))
            return 0;
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 16;
        const char **v = realloc(d->v, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        d->v = v;
        d->cap = cap;
    }
    d->v[d->n++] = s;
    return 0;
}

/* ,"name":["value",...],"name_count":N: the first eight distinct values
 * and how many there are; then empties d. */
static void values_json(FILE *f, const char *name, struct distinct *d)
{
    fprintf(f, ",\"%s\":[", name);
    for (size_t i = 0; i < d->n && i < 8; i++) {
        fputs(i ? "," : "", f);
        ct_html_str(f, d->v[i]);
    }
    fprintf(f, "],\"%s_count\":%zu", name, d->n);
    d->n = 0;
}

/* "ident":{...}: what the header and the title say of the job. Hosts,
 * run and job ids from the loaded job; the start is its time zero (the
 * first GPU start, on the realtime clock: decoder/read/clock.c); command
 * lines, GPUs and the recorder's version from the traces' metadata. */
static void ident_json(FILE *f, const struct ct_report *rep, const struct ct_html_in *in)
{
    const struct ct_job *job = rep->job;
    struct distinct d = {0};
    char when[64] = "";
    time_t sec = (time_t)(job->t0 / 1000000000);
    struct tm tm;
    if (job->t0 > 0 && gmtime_r(&sec, &tm))
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
    fprintf(f, "\"ident\":{\"version\":\"%s\",\"start\":", CT_VERSION);
    if (when[0])
        ct_html_str(f, when);
    else
        fputs("null", f);
    /* out of memory: the values found so far (a shorter list, never a
     * wrong one) */
    for (size_t r = 0; r < job->nranks; r++)
        distinct_add(&d, job->ranks[r].host);
    values_json(f, "hosts", &d);
    for (int k = 0; k < 2; k++) {
        for (size_t p = 0; p < job->nprocs; p++)
            distinct_add(&d, k ? job->procs[p].life.job : job->procs[p].life.run);
        values_json(f, k ? "jobs" : "runs", &d);
    }
    static const char *const name[3] = {"cmdlines", "gpus", "recorded_with"};
    const char *src[3] = {in ? in->cmdlines : NULL, in ? in->gpus : NULL, in ? in->recorder : NULL};
    for (int k = 0; k < 3; k++) {
        char *copy = src[k] ? strdup(src[k]) : NULL;
        for (char *p = copy, *q; p && *p; p = q) {
            q = p + strcspn(p, k ? "+" : "\n");
            if (*q)
                *q++ = 0;
            distinct_add(&d, p);
        }
        values_json(f, name[k], &d);
        free(copy);
    }
    free(d.v);
    fputc('}', f);
}

/* The diagnose document as a JSON value inside <script>: "<", ">" and "&"
 * only occur in its strings, where \u escapes mean the same. */
static void diagnose_json(FILE *f, const struct ct_html_in *in)
{
    fputs("\"diagnose\":", f);
    if (!in || !in->diagnose) {
        fputs("null,\"diagnose_why\":", f);
        ct_html_str(f, in && in->diagnose_why ? in->diagnose_why : "diagnose was not run");
        return;
    }
    for (const char *p = in->diagnose; *p; p++) {
        if (*p == '<' || *p == '>' || *p == '&')
            fprintf(f, "\\u%04x", (unsigned)*p);
        else if (*p != '\n')
            fputc(*p, f);
    }
    fputs(",\"diagnose_why\":null", f);
}

static void data_json(FILE *f, const struct ct_report *rep, const struct ct_html_in *in)
{
    /* no iteration on any rank: no step time (null, as in the JSON report) */
    fprintf(f, "{\"nranks\":%zu,\"iterations\":%zu,\"step_p50\":", rep->nr, rep->iterations);
    if (rep->step_p50 > 0)
        fprintf(f, "%.1f", rep->step_p50);
    else
        fprintf(f, "null");
    fputs(",", f);
    ident_json(f, rep, in);
    fputs(",\"classes\":[", f);
    for (int c = 0; c < CT_CL_COUNT; c++)
        fprintf(f, "%s\"%s\"", c ? "," : "", ct_class_name(c));
    fputs("],\"ops_names\":[\"\"", f);
    for (int o = 1; o <= CT_NCCL_OP_COUNT; o++)
        fprintf(f, ",\"%s\"", op_name(o));
    fputs("],", f);
    diagnose_json(f, in);
    fputc(',', f);
    facts_json(f, rep);
    fputs(",\"coll\":[", f);
    for (size_t i = 0; i < rep->ncoll; i++) {
        const struct ct_coll_row *c = &rep->coll[i];
        /* the op named with its library where it is not NCCL's (the
         * report's text does the same); a figure the report has null is
         * null here too, drawn as a dash, never a 0 */
        fprintf(f, "%s[\"%s%s\",%" PRIu64 ",%d,%" PRIu64, i ? "," : "",
                c->lib == CT_LIB_NVSHMEM ? "nvshmem:" : "", op_name(c->op), c->bytes, c->nranks,
                c->count);
        const double ns[] = {c->p50, c->p90, c->max, c->skew_p50, c->wait_p50, c->transfer_p50};
        for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
            fputc(',', f);
            ct_json_num(f, ns[k], 1);
        }
        fputc(',', f);
        ct_json_num(f, c->algbw, 3);
        fputc(',', f);
        ct_json_num(f, c->busbw, 3);
        fputc(',', f);
        /* the speed of light: its share (null when absent) and what it rests
         * on, or why there is none */
        ct_json_num(f, c->sol_pct, 1);
        fputc(',', f);
        ct_json_str(f, c->sol_basis[0] ? c->sol_basis : c->sol_reason);
        fputc(']', f);
    }
    /* every kernel's total, for the shares; then the 50 with the most */
    int64_t ktotal = 0;
    for (size_t i = 0; i < rep->nkern; i++)
        ktotal += rep->kern[i].total;
    fprintf(f, "],\"kern_total\":%" PRId64 ",\"nkern\":%zu,\"kern\":[", ktotal, rep->nkern);
    char *done = calloc(rep->nkern ? rep->nkern : 1, 1);
    for (int k = 0; k < 50 && done; k++) {
        size_t best = SIZE_MAX;
        for (size_t i = 0; i < rep->nkern; i++)
            if (!done[i] && (best == SIZE_MAX || rep->kern[i].total > rep->kern[best].total))
                best = i;
        if (best == SIZE_MAX)
            break;
        done[best] = 1;
        fprintf(f, "%s[", k ? "," : "");
        ct_html_str(f, rep->kern[best].name);
        fprintf(f, ",%" PRIu64 ",%" PRId64 ",%.1f]", rep->kern[best].count, rep->kern[best].total,
                fin(rep->kern[best].p50));
    }
    free(done);
    char *detail = detail_ranks(rep);
    size_t ndetail = 0;
    for (size_t r = 0; r < rep->nr; r++)
        ndetail += !detail || detail[r];
    size_t limit = CT_HTML_RAW_TOTAL / (ndetail ? ndetail : 1);
    if (limit < CT_HTML_RAW_MIN)
        limit = CT_HTML_RAW_MIN;
    size_t m = slowest_step(rep);
    int64_t zlo = 1, zhi = 0; /* none */
    if (m != SIZE_MAX) {
        zlo = rep->steps[m].start - rep->job->t0;
        zhi = rep->steps[m].end - rep->job->t0;
    }
    fprintf(f, "],\"aggregated\":%d,\"raw_limit\":%zu,", rep->nr > CT_HTML_DETAIL_RANKS, limit);
    heat_json(f, rep);
    fputc(',', f);
    steps_json(f, rep);
    fputs(",\"ranks\":[", f);
    for (size_t r = 0; r < rep->nr; r++) {
        fputs(r ? ",\n" : "", f);
        rank_json(f, rep, &rep->rr[r], !detail || detail[r], limit, zlo, zhi);
    }
    free(detail);
    fputs("],", f);
    ct_html_cp_json(f, rep, in ? in->cp : NULL);
    fputc(',', f);
    ct_html_eff_json(f, rep);
    fputc(',', f);
    ct_html_nccl_json(f, rep); /* html_nccl.c */
    fputs("}", f);
}

/* Text for HTML outside <script>: &, <, > and " as entities. */
static void html_text(FILE *f, const char *s, size_t max)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && n < max; p++, n++) {
        if (*p == '&')
            fputs("&amp;", f);
        else if (*p == '<')
            fputs("&lt;", f);
        else if (*p == '>')
            fputs("&gt;", f);
        else if (*p == '"')
            fputs("&quot;", f);
        else if (*p < 0x20 || *p >= 0x80)
            fputc(*p == '\n' ? ' ' : '?', f);
        else
            fputc(*p, f);
    }
    if (*s && strlen(s) > max)
        fputs("...", f);
}

/* <title>: the command (its first line, shortened), the ranks, the first
 * host and the start; the page's header has them in full. */
static void title(FILE *f, const struct ct_report *rep, const struct ct_html_in *in)
{
    const struct ct_job *job = rep->job;
    char cmd[80] = "", when[40] = "";
    if (in && in->cmdlines && *in->cmdlines) {
        snprintf(cmd, sizeof(cmd), "%s", in->cmdlines);
        cmd[strcspn(cmd, "\n")] = 0;
    }
    time_t sec = (time_t)(job->t0 / 1000000000);
    struct tm tm;
    if (job->t0 > 0 && gmtime_r(&sec, &tm))
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", &tm);
    fputs("<title>cutrace: ", f);
    html_text(f, cmd[0] ? cmd : "report", 60);
    fprintf(f, " - %zu rank%s", job->nranks, job->nranks == 1 ? "" : "s");
    if (job->nranks && job->ranks[0].host) {
        fputs(" on ", f);
        html_text(f, job->ranks[0].host, 40);
    }
    if (when[0])
        fprintf(f, ", %s", when);
    fputs("</title>\n", f);
}

/* The page (decoder/export/html_page.html, one string per line); the line
 * "@DATA@" stands for the figures, "@TITLE@" for the title. */
static const char *const page[] = {
#include "decoder/html_page.inc" /* generated from export/html_page.html */
};

int ct_report_html(FILE *f, const struct ct_report *rep, const struct ct_html_in *in)
{
    for (size_t i = 0; i < sizeof(page) / sizeof(page[0]); i++) {
        if (!strcmp(page[i], "@DATA@\n"))
            data_json(f, rep, in);
        else if (!strcmp(page[i], "@TITLE@\n"))
            title(f, rep, in);
        else if (!strcmp(page[i], "@EFFJS@\n"))
            ct_html_eff_script(f);
        else if (!strcmp(page[i], "@NCCLJS@\n"))
            ct_html_nccl_script(f);
        else
            fputs(page[i], f);
    }
    return ferror(f) ? -EIO : 0;
}
