/*
 * Where a rank's figures come from, and which ones its trace cannot
 * support (docs/report.md, "Where each figure comes from"): the GPU-timing
 * source, how much of the run the capture covered, and the figures given
 * as null with their reason. The report, `diagnose` and the rows read
 * these, so a figure is withheld in one place for all of them.
 */
#include "decoder/analysis/analysis.h"
#include "decoder/analysis/efficiency.h"
#include "decoder/read/hta.h"

#include <stdio.h>
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
    const char *fig[6], *why[6];
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
    if (r->gcut.n) {
        /* a SIGKILLed process's GPU ops whose time died in CUPTI's buffers
         * ran after its GPU record ends: that time is not covered */
        fig[n] = "gpu_after_salvage_cut";
        why[n++] = "the process was killed with GPU times still in CUPTI's buffers (salvaged "
                   "trace): its GPU record ends before its last ops ran, so every GPU figure "
                   "of the rank stops there (coverage.material undelivered_ops); the time after "
                   "is not covered, not idle, and its steps are not iterations";
    }
    if (r->cover && !x->at.ckpt_steps && !x->at.ckpt_idle) {
        /* a checkpoint every few hundred steps mostly falls between windows:
         * 0 would say the job has no checkpoint stall, which nothing shows */
        fig[n] = "checkpoint_stall_us";
        why[n++] = "checkpoints between capture windows are not recorded, and no window held "
                   "one";
    }
    if (x->comm_kernels) {
        /* kernels the communication table names, or NCCL kernels whose call
         * was not recorded: communication time, but no call arguments */
        fig[n] = "comm_kernels.bytes";
        why[n++] = "communication kernels without an NCCL call (comm_kernels: a library's own "
                   "all-reduce, NVSHMEM, DeepEP, or an NCCL kernel whose call was not recorded): "
                   "their bytes are unknown, the kernels' arguments are not recorded, so they "
                   "have no collectives row, algbw or busbw (docs/nccl.md)";
    }
    if (x->eff && x->eff->why) {
        /* GPU efficiency figures (efficiency.c): null, with why */
        fig[n] = "efficiency";
        why[n++] = x->eff->why;
    }
    if (i >= n) /* then the HTA-compatible figures of Kineto input */
        return r->nprocs && ct_hta_unavailable(r->procs[0]->hta, i - n, figure, reason);
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

double ct_untimed_share(const struct ct_coverage *v)
{
    double timed = (double)(v->gpu_cupti + v->gpu_events + v->gpu_plugin + v->gpu_nccl_record);
    return v->untimed ? (double)v->untimed / ((double)v->untimed + timed) : 0;
}

double ct_rank_untimed_share(const struct ct_rank *r)
{
    struct ct_coverage v = r->cov;
    v.untimed -= r->undelivered < v.untimed ? r->undelivered : v.untimed;
    return ct_untimed_share(&v);
}

double ct_damaged_share(const struct ct_coverage *c)
{
    return c->damaged && c->bytes ? (double)c->damaged / (double)c->bytes : 0;
}

/* Whether process k of r is the first of r with its file (a process that
 * drives several devices is one per device, each with its file). */
static int first_with_path(const struct ct_rank *r, size_t k)
{
    for (size_t j = 0; j < k; j++)
        if (!strcmp(r->procs[j]->path ? r->procs[j]->path : "",
                    r->procs[k]->path ? r->procs[k]->path : ""))
            return 0;
    return 1;
}

int ct_coverage_fact(const struct ct_rank *r, size_t i, struct ct_cov_fact *f)
{
    memset(f, 0, sizeof(*f));
    const struct ct_coverage *v = &r->cov;
    uint64_t ops = v->untimed + v->gpu_cupti + v->gpu_events + v->gpu_plugin + v->gpu_nccl_record;
    if (r->undelivered && r->gcut.n) { /* always material: the figures end there */
        if (i == 0) {
            f->kind = CT_COVF_UNDELIVERED;
            f->count = r->undelivered;
            f->of = ops;
            f->host_from = r->hcut.n ? r->hcut.v[0].s : r->gcut.v[0].s;
            f->gpu_from = r->gcut.v[0].s;
            return 1;
        }
        i--;
    }
    if (ct_rank_untimed_share(r) > CT_UNTIMED_MATERIAL) {
        if (i == 0) {
            f->kind = CT_COVF_UNTIMED;
            f->count = v->untimed - (r->undelivered < v->untimed ? r->undelivered : v->untimed);
            f->of = ops;
            return 1;
        }
        i--;
    }
    for (size_t k = 0; k < r->nprocs; k++) {
        const struct ct_proc *p = r->procs[k];
        if ((!p->cov.damaged && !p->cov.truncated) || !first_with_path(r, k))
            continue;
        if (i--)
            continue;
        f->kind = p->cov.damaged ? CT_COVF_DAMAGED : CT_COVF_TRUNCATED;
        f->count = p->cov.damaged;
        f->of = p->cov.bytes;
        f->truncated = p->cov.truncated != 0;
        f->offset = p->trunc_at;
        f->path = p->path ? p->path : "";
        return 1;
    }
    return 0;
}

double ct_coverage_factor(const struct ct_rank *r, int on_ops, char *why, size_t n)
{
    double k = 1, d = ct_damaged_share(&r->cov), u = ct_rank_untimed_share(r);
    size_t at = 0;
    if (n)
        why[0] = 0;
    if (r->cov.damaged) {
        k *= 1 - d;
        if (at < n)
            at += (size_t)snprintf(why + at, n - at,
                                   "%.2f%% of the trace bytes damaged (%llu bytes skipped: "
                                   "their records are lost)",
                                   100 * d, (unsigned long long)r->cov.damaged);
    }
    if (on_ops && u > CT_UNTIMED_MATERIAL) {
        k *= 1 - u;
        if (at < n)
            snprintf(why + at, n - at,
                     "%s%.1f%% of the GPU ops untimed (%llu: their GPU time "
                     "is missing)",
                     at ? "; " : "", 100 * u,
                     (unsigned long long)(r->cov.untimed - (r->undelivered < r->cov.untimed
                                                                ? r->undelivered
                                                                : r->cov.untimed)));
    }
    return k;
}
