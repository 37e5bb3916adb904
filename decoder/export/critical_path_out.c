/*
 * `cutrace critical-path` and `cutrace whatif` output: text for a reader,
 * JSON (docs/critical-path.md) through the one JSON writer. Prints only;
 * every figure comes computed in struct ct_cp_result.
 */
#include "decoder/export/critical_path_out.h"

#include <math.h>

#include "decoder/analysis/xfer_model.h"
#include "decoder/util/demangle.h"
#include "decoder/util/json.h"
#include "decoder/util/names.h"

static double us(int64_t ns)
{
    return (double)ns / 1000.0;
}

static const char *seg_name(const struct ct_cp_seg *s, char *buf, size_t n)
{
    return s->name ? ct_demangle(s->name, buf, n) : NULL;
}

void ct_cp_json(FILE *f, const struct ct_cp_result *r, int64_t t0)
{
    char buf[512];
    fprintf(f,
            "{\"schema\":\"cutrace.critical_path\",\"version\":1,\"cutrace_version\":\"%s\","
            "\"steps\":%zu,",
            CT_VERSION, r->nsteps);
    ct_json_member(f, "path_us", us(r->total), 3);
    fputs(",\"step_p50_us\":", f);
    ct_json_num(f, r->step_p50 / 1000.0, 3);
    fprintf(f,
            ",\"unordered_points\":%zu,\"graph_chunks\":%zu,\"cuda_graph_ops\":%zu,"
            "\"cuda_graph_ops_with_edges\":%zu,\"categories\":{",
            r->unordered, r->chunks, r->graph_ops, r->graph_ops_edges);
    for (int c = 0; c < CT_CP_NCAT; c++) {
        fprintf(f, "%s", c ? "," : "");
        ct_json_member(f, ct_cp_cat_name(c), us(r->cat[c]), 3);
    }
    fputs("},\"ranks\":[", f);
    for (size_t i = 0, k = 0; i < r->nranks; i++) {
        if (!r->rank_time[i])
            continue;
        fprintf(f, "%s{\"rank\":%d,", k++ ? "," : "", r->rank_num[i]);
        ct_json_member(f, "path_us", us(r->rank_time[i]), 3);
        fputc(',', f);
        ct_json_member(f, "share", r->total ? (double)r->rank_time[i] / (double)r->total : NAN, 4);
        fputc('}', f);
    }
    fputs("],\"iterations\":[", f);
    for (size_t i = 0; i < r->nsteps; i++) {
        const struct ct_cp_step *s = &r->steps[i];
        fprintf(f, "%s{\"index\":%lld,\"end_rank\":%d,", i ? "," : "", (long long)s->index,
                s->end_rank);
        ct_json_member(f, "start_us", us(s->start - t0), 3);
        fputc(',', f);
        ct_json_member(f, "length_us", us(s->end - s->start), 3);
        fputs(",\"categories\":{", f);
        for (int c = 0; c < CT_CP_NCAT; c++) {
            fprintf(f, "%s", c ? "," : "");
            ct_json_member(f, ct_cp_cat_name(c), us(s->cat[c]), 3);
        }
        fputs("}}", f);
    }
    fputs("],\"segments\":[", f);
    for (size_t i = 0; i < r->nsegs; i++) {
        const struct ct_cp_seg *s = &r->segs[i];
        fprintf(f, "%s{\"rank\":%d,\"category\":", i ? "," : "", s->rank);
        ct_json_str(f, ct_cp_cat_name(s->cat));
        fputs(",\"name\":", f);
        const char *nm = seg_name(s, buf, sizeof(buf));
        if (nm)
            ct_json_str(f, nm);
        else
            fputs("null", f);
        fputs(",\"stream\":", f);
        if (ct_cp_cat_gpu(s->cat))
            fprintf(f, "%u", s->stream);
        else
            fputs("null", f);
        fprintf(f, ",\"count\":%llu,", (unsigned long long)s->count);
        ct_json_member(f, "duration_us", us(s->dur), 3);
        fputc(',', f);
        ct_json_member(f, "share", r->total ? (double)s->dur / (double)r->total : NAN, 4);
        fputc('}', f);
    }
    fputs("]}", f);
}

void ct_cp_text(FILE *f, const struct ct_cp_result *r, size_t top)
{
    char buf[512];
    double tot = r->total ? (double)r->total : NAN;
    fprintf(f, "critical path over %zu steps: %.3f ms (median step %.3f ms)\n", r->nsteps,
            us(r->total) / 1000.0, r->step_p50 / 1e6);
    fprintf(f, "  by category:");
    for (int c = 0; c < CT_CP_NCAT; c++)
        if (r->cat[c])
            fprintf(f, " %s %.1f%%", ct_cp_cat_name(c), 100.0 * (double)r->cat[c] / tot);
    fprintf(f, "\n  by rank:    ");
    for (size_t i = 0; i < r->nranks; i++)
        if (r->rank_time[i])
            fprintf(f, " %d: %.1f%%", r->rank_num[i], 100.0 * (double)r->rank_time[i] / tot);
    fprintf(f, "\n  top segments:\n    %5s  %-10s  %6s  %10s  %6s  %s\n", "rank", "category",
            "stream", "ms", "share", "name");
    for (size_t i = 0; i < r->nsegs && (!top || i < top); i++) {
        const struct ct_cp_seg *s = &r->segs[i];
        const char *nm = seg_name(s, buf, sizeof(buf));
        int gpu = ct_cp_cat_gpu(s->cat);
        char st[16] = "-";
        if (gpu)
            snprintf(st, sizeof(st), "%u", s->stream);
        fprintf(f, "    %5d  %-10s  %6s  %10.3f  %5.1f%%  %s\n", s->rank, ct_cp_cat_name(s->cat),
                st, us(s->dur) / 1000.0, 100.0 * (double)s->dur / tot, nm ? nm : "");
    }
    if (r->unordered)
        fprintf(f, "  note: %zu points in a dependency cycle kept at their measured times\n",
                r->unordered);
    if (r->graph_ops > r->graph_ops_edges)
        fprintf(f,
                "  note: %zu of %zu GPU ops of CUDA graph replays follow their stream's order, "
                "not their graph's edges (not in the trace: docs/critical-path.md, CUDA graphs)\n",
                r->graph_ops - r->graph_ops_edges, r->graph_ops);
    else if (r->graph_ops)
        fprintf(f, "  CUDA graphs: all %zu GPU ops of graph replays follow their graph's edges\n",
                r->graph_ops);
    if (r->chunks > 1)
        fprintf(f,
                "  note: the run's graph would pass the memory limit: computed in %zu chunks of "
                "up to %zu steps, each with the step before it as context\n",
                r->chunks, r->chunk_steps);
}

static double mean_us(const struct ct_cp_result *r)
{
    return r->nsteps ? ct_cp_mean_step(r) / 1000.0 : NAN;
}

static void specs_json(FILE *f, char **specs, size_t n)
{
    fputs("\"scales\":[", f);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? "," : "", f);
        ct_json_str(f, specs[i]);
    }
    fputc(']', f);
}

/* Why a model has no latency, or NULL when it has one. */
static const char *model_reason(const struct ct_xfer_model *m)
{
    switch (m->status) {
    case CT_XFER_FITTED: return NULL;
    case CT_XFER_ONE_SIZE:
        return "sizes too few or too close (the largest under twice the smallest): latency "
               "not separable, the whole transfer scaled (the most a faster network could give)";
    case CT_XFER_NO_SLOPE:
        return "the transfer does not grow with size (latency-bound): left unchanged";
    default:
        return "no instance matched across ranks, so no transfer measured: the whole op "
               "scaled (the most a faster network could give)";
    }
}

static void models_json(FILE *f, const struct ct_whatif_out *w)
{
    fputs(",\"transfer_models\":[", f);
    for (size_t i = 0; i < w->nmodels; i++) {
        const struct ct_xfer_model *m = &w->models[i];
        fprintf(f, "%s{\"op\":", i ? "," : "");
        ct_json_str(f, ct_name_nccl_op((uint64_t)m->op));
        fprintf(f, ",\"ranks\":%d,\"status\":", m->nranks);
        ct_json_str(f, ct_xfer_status_name(m->status));
        fprintf(f, ",\"sizes\":%zu,\"min_bytes\":%llu,\"max_bytes\":%llu,\"matched\":%llu,",
                m->sizes, (unsigned long long)m->min_bytes, (unsigned long long)m->max_bytes,
                (unsigned long long)m->matched);
        ct_json_member(f, "latency_us", m->lat_ns / 1000.0, 3);
        fputc(',', f);
        /* bytes per ns are GB/s */
        ct_json_member(f, "bandwidth_gbps", 1 / m->ns_per_byte, 4);
        fputc(',', f);
        ct_json_member(f, "fit_error_pct", m->fit_err_pct, 2);
        fputs(",\"reason\":", f);
        if (model_reason(m))
            ct_json_str(f, model_reason(m));
        else
            fputs("null", f);
        fputc('}', f);
    }
    fputs("],\"link_factors\":[", f);
    for (size_t i = 0; i < w->nlinks; i++) {
        const struct ct_cp_comm_factor *c = &w->links[i];
        fprintf(f, "%s{\"comm_hash\":\"0x%016llx\",", i ? "," : "", (unsigned long long)c->comm);
        ct_json_member(f, "factor", c->f, 4);
        fprintf(f, ",\"slowest_before\":\"%d -> %d\",", c->before_src, c->before_dst);
        ct_json_member(f, "slowest_before_gbps", c->before_gbps, 4);
        fprintf(f, ",\"slowest_after\":\"%d -> %d\",", c->after_src, c->after_dst);
        ct_json_member(f, "slowest_after_gbps", c->after_gbps, 4);
        fputc('}', f);
    }
    fputc(']', f);
}

void ct_whatif_json(FILE *f, const struct ct_whatif_out *w, int64_t t0)
{
    const struct ct_cp_result *base = w->base, *pred = w->pred;
    fprintf(f, "{\"schema\":\"cutrace.whatif\",\"version\":1,\"cutrace_version\":\"%s\",",
            CT_VERSION);
    specs_json(f, w->specs, w->nspecs);
    fputc(',', f);
    ct_json_member(f, "measured_step_us", w->measured / 1000.0, 3);
    fputc(',', f);
    ct_json_member(f, "replayed_step_us", base->step_p50 / 1000.0, 3);
    fputc(',', f);
    ct_json_member(f, "predicted_step_us", pred->step_p50 / 1000.0, 3);
    fputc(',', f);
    ct_json_member(f, "speedup", base->step_p50 / pred->step_p50, 4);
    /* the run's mean step (first start to last end, over the steps): what
     * a change to a minority of steps (a late batch every third step)
     * moves, which the median does not */
    fputc(',', f);
    ct_json_member(f, "measured_mean_step_us", mean_us(base), 3);
    fputc(',', f);
    ct_json_member(f, "predicted_mean_step_us", mean_us(pred), 3);
    if (w->models)
        models_json(f, w);
    fputs(",\"critical_path\":", f);
    ct_cp_json(f, pred, t0);
    fputc('}', f);
}

void ct_whatif_text(FILE *f, const struct ct_whatif_out *w)
{
    const struct ct_cp_result *base = w->base, *pred = w->pred;
    fprintf(f, "what if");
    for (size_t i = 0; i < w->nspecs; i++)
        fprintf(f, " %s", w->specs[i]);
    fprintf(f,
            ":\n  measured step %.3f ms (replayed %.3f ms)\n  predicted step %.3f ms "
            "(%.3fx)\n  mean step %.3f ms, predicted %.3f ms\n",
            w->measured / 1e6, base->step_p50 / 1e6, pred->step_p50 / 1e6,
            base->step_p50 / pred->step_p50, mean_us(base) / 1000.0, mean_us(pred) / 1000.0);
    if (w->models) {
        fputs("\ntransfers as latency + size / bandwidth (the bandwidth term scaled):\n", f);
        for (size_t i = 0; i < w->nmodels; i++) {
            const struct ct_xfer_model *m = &w->models[i];
            fprintf(f, "  %s over %d ranks: ", ct_name_nccl_op((uint64_t)m->op), m->nranks);
            if (m->status == CT_XFER_FITTED) {
                fprintf(f, "%.1f us + size / %.3g GB/s (%zu sizes %llu-%llu B", m->lat_ns / 1e3,
                        1 / m->ns_per_byte, m->sizes, (unsigned long long)m->min_bytes,
                        (unsigned long long)m->max_bytes);
                if (isfinite(m->fit_err_pct))
                    fprintf(f, ", fit error %.1f %%", m->fit_err_pct);
                fputs(")\n", f);
            } else {
                fprintf(f, "%s\n", model_reason(m));
            }
        }
        for (size_t i = 0; i < w->nlinks; i++) {
            const struct ct_cp_comm_factor *c = &w->links[i];
            fprintf(f,
                    "  communicator 0x%016llx: bandwidth term x%.3f (its ring's slowest link "
                    "%d -> %d at %.3g GB/s, then %d -> %d at %.3g GB/s)\n",
                    (unsigned long long)c->comm, c->f, c->before_src, c->before_dst, c->before_gbps,
                    c->after_src, c->after_dst, c->after_gbps);
        }
    }
    fputs("\nnew ", f);
    ct_cp_text(f, pred, 10);
}
