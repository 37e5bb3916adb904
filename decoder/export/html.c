/*
 * `cutrace report --html`: one self-contained HTML file (inline CSS, JS and
 * SVG; nothing is fetched) with the report's summary and findings, a
 * zoomable timeline per rank (GPU streams and host waits as rows, coloured
 * by class), the breakdown, overlap and attribution charts, per-iteration
 * charts, health counter charts (SM clock and power over time, throttled
 * share per rank), the critical path (decoder/export/html_critical_path.c)
 * and the collective and kernel tables.
 *
 * The C side writes the figures as one JSON object inside
 * <script type="application/json"> (strings escaped so that no "<" can
 * close the element) and the page's script draws everything from it. The
 * script marks its own success: #selfcheck gets "ok ..." once the timeline
 * and every chart drew without an exception, "error: ..." otherwise, which
 * is what the headless-browser test reads.
 *
 * Timelines carry at most CT_HTML_MAX_OPS GPU intervals per rank (the
 * earliest; the page says how many were left out): the file stays small
 * enough for a browser whatever the trace size. Times are ns since the
 * job's time zero, as in the JSON report.
 *
 * Beyond CT_HTML_DETAIL_RANKS ranks the page aggregates: every rank keeps
 * its figures (one bar each would be a 20000-pixel chart; they feed the
 * summary), but timelines, per-iteration charts and per-rank bars are drawn
 * for the detail ranks only (the CT_HTML_DETAIL_TOP highest straggler
 * scores and the lowest rank, a reference), findings are one line per kind
 * with their ranks compacted, and a rank x iteration heat map of step time
 * and idle share shows every rank in at most CT_HTML_HEAT_COLS columns (each
 * the mean over a run of steps). A 1024-rank, 300-step job's page measured
 * 124 MB before (a timeline per rank); docs/export.md gives the size now.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/util/demangle.h"
#include "decoder/export/export.h"
#include "decoder/export/html_int.h"
#include "decoder/analysis/health.h"
#include "decoder/read/job.h"
#include "decoder/util/json.h"
#include "decoder/util/names.h"
#include "decoder/util/stats.h"

#define CT_HTML_MAX_OPS      60000
#define CT_HTML_MAX_HOST     20000
#define CT_HTML_MAX_PTS      2000 /* points per health series (every k-th sample) */
#define CT_HTML_DETAIL_RANKS 32   /* up to this many ranks, all in detail */
#define CT_HTML_DETAIL_TOP   8    /* beyond, the top stragglers in detail */
#define CT_HTML_HEAT_COLS    200

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

static void ivset(FILE *f, const char *k, const struct ct_ivset *v, int64_t t0)
{
    fprintf(f, "\"%s\":[", k);
    size_t n = v->n < CT_HTML_MAX_HOST ? v->n : CT_HTML_MAX_HOST;
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%" PRId64 ",%" PRId64, i ? "," : "", v->v[i].s - t0, v->v[i].e - t0);
    fputs("]", f);
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

static void rank_json(FILE *f, const struct ct_report *rep, const struct ct_rank_result *x,
                      int detail)
{
    struct ct_rank *R = x->rank;
    const int64_t t0 = rep->job->t0;
    fprintf(f, "{\"rank\":%d,\"host\":", R->rank);
    ct_html_str(f, R->host);
    fprintf(f,
            ",\"window\":%" PRId64 ",\"compute\":%" PRId64 ",\"comm\":%" PRId64
            ",\"memory\":%" PRId64 ",\"idle\":%" PRId64 ",\"exposed\":%" PRId64
            ",\"overlap\":%" PRId64 ",\"ws\":%" PRId64 ",\"we\":%" PRId64,
            x->covered, x->compute, x->comm, x->memory, x->idle, x->exposed_comm, x->overlap,
            x->ws - t0, x->we - t0);
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
        fputs(",\"iters\":[],\"nops\":0,\"names\":[],\"ops\":[],\"nccl\":[],"
              "\"waits\":{\"sync\":[],\"data\":[],\"ckpt\":[]}}",
              f);
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
    /* timeline: names used, then ops [s, e, stream, class, name] */
    size_t nops = R->nops < CT_HTML_MAX_OPS ? R->nops : CT_HTML_MAX_OPS;
    fprintf(f, "],\"nops\":%zu,\"names\":[", R->nops);
    for (size_t i = 0; i < R->nnames; i++) {
        char buf[512];
        fputs(i ? "," : "", f);
        ct_html_str(f, ct_demangle(R->names[i] ? R->names[i] : "", buf, sizeof(buf)));
    }
    fputs("],\"ops\":[", f);
    int opened = !ct_rank_open(R);
    if (!opened) /* out of memory: the timeline is left empty */
        nops = 0;
    for (size_t i = 0; i < nops; i++) {
        const struct ct_gpu_op *g = &R->ops[i];
        fprintf(f, "%s%" PRId64 ",%" PRId64 ",%" PRIu32 ",%u,%" PRIu32, i ? "," : "", g->s - t0,
                g->e - t0, g->stream, (unsigned)g->cls, g->name);
    }
    if (opened)
        ct_rank_close(R);
    fputs("],\"nccl\":[", f);
    size_t nn = R->nnccl < CT_HTML_MAX_HOST ? R->nnccl : CT_HTML_MAX_HOST;
    for (size_t i = 0; i < nn; i++)
        fprintf(f, "%s%" PRId64 ",%" PRId64 ",%u", i ? "," : "", R->nccl[i].host_s - t0,
                R->nccl[i].host_e - t0, (unsigned)R->nccl[i].op);
    fputs("],\"waits\":{", f);
    /* host waits of the main (GPU-driving) process */
    const struct ct_proc *p = R->nprocs ? R->procs[0] : NULL;
    static const struct ct_ivset empty;
    ivset(f, "sync", p ? &p->sync : &empty, t0);
    fputc(',', f);
    ivset(f, "data", p ? &p->data_wait : &empty, t0);
    fputc(',', f);
    ivset(f, "ckpt", p ? &p->ckpt : &empty, t0);
    fputc('}', f);
    health_json(f, rep, (size_t)(x - rep->rr));
    fputc('}', f);
}

/* The page's findings, per rank: a straggler, a pipeline bubble, and each
 * stall or exposed communication of 2 % of the window or more. */
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

static void findings_json(FILE *f, const struct ct_report *rep)
{
    fputs("\"findings\":[", f);
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
 * "idle":[[...]...]}: per rank and column (a run of the job's steps), the
 * mean duration (µs) and idle share (per mille) of its iterations there,
 * null where it has none. */
static void heat_json(FILE *f, const struct ct_report *rep)
{
    size_t ns = rep->nsteps, nc = ns < CT_HTML_HEAT_COLS ? ns : CT_HTML_HEAT_COLS;
    fputs("\"heat\":{\"cols\":[", f);
    for (size_t c = 0; c < nc; c++)
        fprintf(f, "%s[%" PRId64 ",%" PRId64 "]", c ? "," : "", rep->steps[c * ns / nc].index,
                rep->steps[(c + 1) * ns / nc - 1].index);
    fputs("],\"ranks\":[", f);
    for (size_t r = 0; r < rep->nr; r++)
        fprintf(f, "%s%d", r ? "," : "", rep->rr[r].rank->rank);
    double *sum = calloc(2 * (nc ? nc : 1), sizeof(*sum));
    size_t *cnt = calloc(nc ? nc : 1, sizeof(*cnt));
    for (int what = 0; what < 2; what++) {
        fprintf(f, "],\"%s\":[", what ? "idle" : "step");
        for (size_t r = 0; r < rep->nr; r++) {
            const struct ct_rank_result *x = &rep->rr[r];
            if (sum && cnt) {
                memset(sum, 0, 2 * nc * sizeof(*sum));
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
                    if (lo >= ns)
                        continue;
                    size_t c = lo * nc / ns;
                    double dur = (double)(x->iters[i].e - x->iters[i].s);
                    sum[c] += what ? (dur > 0 ? (double)x->im[i].idle / dur : 0) : dur;
                    cnt[c]++;
                }
            }
            fputs(r ? ",[" : "[", f);
            for (size_t c = 0; c < nc; c++) {
                fputs(c ? "," : "", f);
                if (!sum || !cnt || !cnt[c])
                    fputs("null", f);
                else if (what)
                    fprintf(f, "%.0f", 1000 * sum[c] / (double)cnt[c]);
                else
                    fprintf(f, "%.0f", sum[c] / (double)cnt[c] / 1e3);
            }
            fputc(']', f);
        }
    }
    fputs("]}", f);
    free(sum);
    free(cnt);
}

static void data_json(FILE *f, const struct ct_report *rep, const struct ct_html_cp *cp)
{
    /* no iteration on any rank: no step time (null, as in the JSON report) */
    fprintf(f, "{\"nranks\":%zu,\"iterations\":%zu,\"step_p50\":", rep->nr, rep->iterations);
    if (rep->step_p50 > 0)
        fprintf(f, "%.1f", rep->step_p50);
    else
        fprintf(f, "null");
    fprintf(f, ",\"max_ops\":%d,", CT_HTML_MAX_OPS);
    fputs("\"classes\":[", f);
    for (int c = 0; c < CT_CL_COUNT; c++)
        fprintf(f, "%s\"%s\"", c ? "," : "", ct_class_name(c));
    fputs("],\"ops_names\":[\"\"", f);
    for (int o = 1; o <= CT_NCCL_OP_COUNT; o++)
        fprintf(f, ",\"%s\"", op_name(o));
    fputs("],", f);
    findings_json(f, rep);
    fputs(",\"coll\":[", f);
    for (size_t i = 0; i < rep->ncoll; i++) {
        const struct ct_coll_row *c = &rep->coll[i];
        fprintf(f, "%s[\"%s\",%" PRIu64 ",%d,%" PRIu64 ",%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.3f,%.3f]",
                i ? "," : "", op_name(c->op), c->bytes, c->nranks, c->count, fin(c->p50),
                fin(c->p90), fin(c->max), fin(c->skew_p50), fin(c->wait_p50), fin(c->transfer_p50),
                fin(c->algbw), fin(c->busbw));
    }
    fputs("],\"kern\":[", f);
    /* the 50 kernels with the most total time */
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
    fprintf(f, "],\"aggregated\":%d,", rep->nr > CT_HTML_DETAIL_RANKS);
    heat_json(f, rep);
    fputs(",\"ranks\":[", f);
    for (size_t r = 0; r < rep->nr; r++) {
        fputs(r ? ",\n" : "", f);
        rank_json(f, rep, &rep->rr[r], !detail || detail[r]);
    }
    free(detail);
    fputs("],", f);
    ct_html_cp_json(f, rep, cp);
    fputs("}", f);
}

/* The page (decoder/export/html_page.html, one string per line); the line
 * "@DATA@" stands for the figures. */
static const char *const page[] = {
#include "decoder/html_page.inc" /* generated from export/html_page.html */
};

int ct_report_html(FILE *f, const struct ct_report *rep, const struct ct_html_cp *cp)
{
    for (size_t i = 0; i < sizeof(page) / sizeof(page[0]); i++) {
        if (!strcmp(page[i], "@DATA@\n"))
            data_json(f, rep, cp);
        else
            fputs(page[i], f);
    }
    return ferror(f) ? -EIO : 0;
}
