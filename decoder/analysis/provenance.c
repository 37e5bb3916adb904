/*
 * Where a rank's figures come from, and which ones its trace cannot
 * support (docs/report.md, "Where each figure comes from"): the GPU-timing
 * source, how much of the run the capture covered, and the figures given
 * as null with their reason. The report, `diagnose` and the rows read
 * these, so a figure is withheld in one place for all of them.
 */
#include "decoder/analysis/analysis.h"

#include <string.h>

const char *ct_gpu_timing_name(const struct ct_coverage *c)
{
    const struct {
        uint64_t n;
        const char *name;
    } src[] = {{c->gpu_cupti, "cupti"},
               {c->gpu_events, "events"},
               {c->gpu_plugin, "nccl_plugin"},
               {c->gpu_nccl_record, "nccl_record"}};
    const char *one = NULL;
    int kinds = 0;
    for (size_t i = 0; i < sizeof(src) / sizeof(src[0]); i++)
        if (src[i].n) {
            kinds++;
            one = src[i].name;
        }
    /* NCCL ops timed by the plugin or their own record beside kernels from
     * CUPTI or event pairs: the kernels' source names the rank */
    if (kinds > 1 && (c->gpu_cupti != 0) + (c->gpu_events != 0) == 1)
        return c->gpu_cupti ? "cupti" : "events";
    return kinds == 0 ? "none" : kinds == 1 ? one : "mixed";
}

int ct_unavailable(const struct ct_rank_result *x, size_t i, const char **figure,
                   const char **reason)
{
    const char *fig[4], *why[4];
    size_t n = 0;
    const struct ct_rank *r = x->rank;
    if (x->iter_src == CT_ITER_NONE) {
        fig[n] = "iterations";
        why[n++] = r->cover && x->covered > 0
                       ? "no whole iteration inside a capture window: a step cut by a pause is "
                         "not a step (make each window several steps long)"
                   : x->iter_why & CT_ITER_WHY_PARTS
                       ? "the work repeats, but its cycles are parts of one step (layers): the "
                         "job's synchronisation structure does not repeat with them"
                       : "no step ranges or marks, and no repeating work that agrees across "
                         "cycles";
    }
    if (r->cover && !x->at.ckpt_steps && !x->at.ckpt_idle) {
        /* a checkpoint every few hundred steps mostly falls between windows:
         * 0 would say the job has no checkpoint stall, which nothing shows */
        fig[n] = "checkpoint_stall_us";
        why[n++] = "checkpoints between capture windows are not recorded, and no window held "
                   "one";
    }
    if (i >= n)
        return 0;
    *figure = fig[i];
    *reason = why[i];
    return 1;
}

int ct_figure_unavailable(const struct ct_rank_result *x, const char *figure)
{
    const char *f, *why;
    for (size_t i = 0; ct_unavailable(x, i, &f, &why); i++)
        if (!strcmp(f, figure))
            return 1;
    return 0;
}
