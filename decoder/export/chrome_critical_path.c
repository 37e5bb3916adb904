/*
 * `cutrace export --format chrome --critical-path`: each step's critical
 * path (decoder/analysis/critical_path.h, ct_cp_path_edges) drawn into the
 * Chrome trace-event file, after every trace's own events.
 *
 *   X    one slice per path edge on a "critical path" track of its rank
 *        (tid CT_CP_TID + lane; a slice of the next step that overlaps one
 *        of the previous step on the same rank goes to the next lane),
 *        name "CATEGORY: NAME" (or the category alone), cat "critical_path",
 *        args {step, category, name, stream, order}: the track shows host
 *        gaps and waits too, which no recorded slice covers;
 *   flow the step's slices chained in time order across ranks by flow
 *        events of the "v2" form on the slices themselves (bind_id,
 *        flow_out on all but the last, flow_in on all but the first), which
 *        Perfetto's JSON importer reads (flow_in and flow_out: a step): a flow
 *        bound to its own slice cannot attach to a neighbour that shares
 *        its timestamp, as a separate "s"/"f" event could.
 * The selection (--ranks, --window, --iterations) keeps the slices of the
 * selected ranks that overlap the window; the chain joins the kept slices
 * of a step in order. It writes only: the path comes computed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "decoder/export/chrome_int.h"
#include "decoder/util/demangle.h"
#include "decoder/util/json.h"

/* Below the GPU tracks' ids (CT_GPU_TID), above any Linux thread id. */
#define CT_CP_TID 0x3f000000u
/* Flow ids of the path: (1 << 52) + step, apart from the launch flows'
 * (trace index + 1) << 40 and exact as a JavaScript number. */
#define CT_CP_FLOW_BASE ((uint64_t)1 << 52)

/* The rank's position in the job (ranks are sorted), or -1. */
static long rank_pos(const struct ct_job *job, int rank)
{
    size_t lo = 0, hi = job->nranks;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (job->ranks[mid].rank < rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < job->nranks && job->ranks[lo].rank == rank ? (long)lo : -1;
}

static int kept(const struct ct_export_job *x, const struct ct_cp_pedge *p)
{
    int64_t t0 = x->origin;
    if (p->index < x->cp_first || (x->cp_last >= 0 && p->index > x->cp_last))
        return 0;
    return ct_export_rank_on(&x->sel, p->rank) && ct_export_in(&x->sel, p->s - t0, p->e - t0);
}

/* Between events: the first of the file has nothing before it. */
static void sep(FILE *f, int *first)
{
    fputs(*first ? "" : ",\n", f);
    *first = 0;
}

static void lane_meta(FILE *f, int *first, int rank, int lane)
{
    char name[64];
    snprintf(name, sizeof(name), lane ? "critical path (overlapping, lane %d)" : "critical path",
             lane);
    sep(f, first);
    fprintf(f,
            "{\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"ts\":0,\"name\":\"thread_name\","
            "\"args\":{\"name\":\"%s\"}}",
            rank, CT_CP_TID + (unsigned)lane, name);
    /* above the rank's GPU streams and host threads (chrome://tracing) */
    fprintf(f,
            ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"ts\":0,\"name\":\"thread_sort_index\","
            "\"args\":{\"sort_index\":%d}}",
            rank, CT_CP_TID + (unsigned)lane, -100 + lane);
}

/* One slice; pos: its place among the step's kept slices, of nkept. */
static void slice(FILE *f, int *first, const struct ct_export_job *x, const struct ct_cp_pedge *p,
                  int lane, size_t pos, size_t nkept, size_t order)
{
    char dm[512], name[600];
    const char *cat = ct_cp_cat_name(p->cat);
    const char *nm = p->name ? ct_demangle(p->name, dm, sizeof(dm)) : NULL;
    if (nm)
        snprintf(name, sizeof(name), "%s: %s", cat, nm);
    else
        snprintf(name, sizeof(name), "%s", cat);
    sep(f, first);
    fprintf(f, "{\"ph\":\"X\",\"pid\":%d,\"tid\":%u,\"ts\":", p->rank, CT_CP_TID + (unsigned)lane);
    ct_chrome_ts(f, p->s - x->origin);
    fputs(",\"dur\":", f);
    ct_chrome_ts(f, p->e - p->s);
    fputs(",\"name\":", f);
    ct_json_str(f, name);
    fputs(",\"cat\":\"critical_path\"", f);
    if (nkept > 1) {
        fprintf(f, ",\"bind_id\":%" PRIu64, CT_CP_FLOW_BASE + p->step);
        if (pos)
            fputs(",\"flow_in\":true", f);
        if (pos + 1 < nkept)
            fputs(",\"flow_out\":true", f);
    }
    fprintf(f, ",\"args\":{\"step\":%" PRId64 ",\"category\":\"%s\",\"name\":", p->index, cat);
    if (nm)
        ct_json_str(f, nm);
    else
        fputs("null", f);
    fputs(",\"stream\":", f);
    if (ct_cp_cat_gpu(p->cat))
        fprintf(f, "%" PRIu32, p->stream);
    else
        fputs("null", f);
    fprintf(f, ",\"order\":%zu}}", order);
}

int ct_chrome_critical_path(FILE *f, const struct ct_export_job *x, int *first)
{
    const struct ct_cp_path *cp = x->cp;
    size_t nr = x->job.nranks ? x->job.nranks : 1;
    int64_t *lane_end = malloc(nr * CT_LANES * sizeof(*lane_end));
    unsigned char *named = calloc(nr, 1); /* lanes with their metadata written */
    if (!lane_end || !named) {
        free(lane_end);
        free(named);
        return -ENOMEM;
    }
    for (size_t i = 0; i < nr * CT_LANES; i++)
        lane_end[i] = INT64_MIN;
    for (size_t i = 0; i < cp->n;) {
        size_t j = i, nkept = 0;
        while (j < cp->n && cp->v[j].step == cp->v[i].step)
            nkept += kept(x, &cp->v[j++]);
        for (size_t k = i, pos = 0; k < j; k++) {
            const struct ct_cp_pedge *p = &cp->v[k];
            long r = rank_pos(&x->job, p->rank);
            if (r < 0 || !kept(x, p))
                continue;
            int64_t *le = &lane_end[(size_t)r * CT_LANES];
            int lane = 0;
            while (lane < CT_LANES - 1 && le[lane] > p->s)
                lane++;
            le[lane] = p->e;
            for (; named[r] <= lane; named[r]++)
                lane_meta(f, first, p->rank, named[r]);
            slice(f, first, x, p, lane, pos++, nkept, k - i);
        }
        i = j;
    }
    free(lane_end);
    free(named);
    return ferror(f) ? -EIO : 0;
}
