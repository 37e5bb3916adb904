/*
 * The GPU time of NCCL ops that no GPU record of their own times, and the
 * work NCCL did inside an op's call (the end of the extraction,
 * decoder/read/extract_join.c, calls these): the fallbacks of
 * ct_trace_nccl_gpu (tracefile.h), a copy-engine collective's copies
 * (docs/nccl.md), and the kernels, copies and group intervals linked to an
 * op for their class only.
 */
#include <errno.h>
#include <stdlib.h>

#include "decoder/read/extract_int.h"

/* The GPU interval standing for NCCL op i when no GPU record carries its
 * own correlation id (the rules of ct_trace_nccl_gpu in tracefile.h): a
 * record of its group's id (an event pair around the outermost
 * ncclGroupEnd; the one on the op's stream if there are several), else the
 * ncclDevKernel launch (or a kernel the table of communication kernels
 * names) made inside the op's call, or inside its group's ncclGroupEnd, on
 * the same thread; for an NVSHMEM op the hull of those on its stream.
 * Returns an op index or NONE. */
uint64_t ct_nccl_fallback(struct ct_extraction *x, size_t i)
{
    const struct ct_nccl_call *n = (const struct ct_nccl_call *)x->nccl.p + i;
    const struct nccl_fb *fb = (const struct nccl_fb *)x->nfb.p + i;
    const struct ct_kv *gc = x->gcorr.p;
    struct ct_gpu_op *ops = x->ops.p;
    struct span sp = {n->host_s, n->host_e, fb->tid};
    if (fb->group) {
        uint64_t pick = NONE;
        for (long k = ct_kv_find(&x->gcorr, fb->group);
             k >= 0 && (size_t)k < x->gcorr.n && gc[k].key == fb->group; k++) {
            if (gc[k].val == NONE || ops[gc[k].val].type != CT_GPU_NCCL)
                continue;
            if (pick == NONE || ops[gc[k].val].stream == fb->stream)
                pick = gc[k].val;
        }
        if (pick != NONE)
            return pick;
        long gi = ct_kv_find(&x->gend, fb->group);
        if (gi < 0)
            return NONE;
        sp = ((const struct span *)x->gendv.p)[((const struct ct_kv *)x->gend.p)[gi].val];
    }
    /* NVSHMEM may enqueue several kernels in one call, all on the op's
     * stream: their hull is the op's, the first kernel's interval grown to
     * it, the others dropped (at the end of join), as a copy-engine
     * collective's copies; NCCL's op is its one kernel */
    int hull = n->lib == CT_LIB_NVSHMEM;
    uint64_t first = NONE;
    int64_t s = INT64_MAX, e = INT64_MIN;
    const struct nccl_launch *kl = x->nkl.p;
    for (size_t k = 0; k < x->nkl.n; k++) {
        if (kl[k].copy || kl[k].sp.tid != sp.tid || kl[k].sp.s < sp.s || kl[k].sp.e > sp.e ||
            (hull && kl[k].stream != fb->stream))
            continue;
        long g = ct_kv_find(&x->gcorr, kl[k].corr);
        for (; g >= 0 && (size_t)g < x->gcorr.n && gc[g].key == kl[k].corr; g++) {
            uint64_t o = gc[g].val;
            if (o == NONE || ops[o].type != CT_GPU_KERNEL)
                continue;
            if (!hull)
                return o;
            s = ops[o].s < s ? ops[o].s : s;
            e = ops[o].e > e ? ops[o].e : e;
            if (first == NONE)
                first = o;
            else if (o != first)
                ops[o].name = SYNTHETIC - 1;
        }
    }
    if (first != NONE) {
        ops[first].s = s;
        ops[first].e = e;
    }
    return first;
}

/*
 * A copy-engine collective (NCCL 2.28's CE collectives, docs/nccl.md): no
 * kernel, but device-to-device or peer copies (and the stream memory
 * operations that wait for the peers between them) that NCCL enqueued
 * inside the op's call, or its group's ncclGroupEnd, on the same thread
 * (and, in a group, on the op's stream). The op's GPU time is their hull,
 * from the first copy's start to the last one's end: the stream is the
 * collective's for all of it. The first copy's interval becomes the hull,
 * of type nccl (communication, not memory traffic); the others are
 * dropped (at the end of join). A second op of the same group and stream
 * finds the same copies and shares the hull, as members share a fused
 * kernel. Returns the hull's op index, or NONE when there are no copies.
 */
uint64_t ct_nccl_copies(struct ct_extraction *x, size_t i)
{
    const struct ct_nccl_call *n = (const struct ct_nccl_call *)x->nccl.p + i;
    const struct nccl_fb *fb = (const struct nccl_fb *)x->nfb.p + i;
    const struct ct_kv *gc = x->gcorr.p;
    struct ct_gpu_op *ops = x->ops.p;
    struct span sp = {n->host_s, n->host_e, fb->tid};
    if (fb->group) {
        long gi = ct_kv_find(&x->gend, fb->group);
        if (gi < 0)
            return NONE;
        sp = ((const struct span *)x->gendv.p)[((const struct ct_kv *)x->gend.p)[gi].val];
    }
    const struct nccl_launch *kl = x->nkl.p;
    uint64_t hull = NONE;
    int64_t s = INT64_MAX, e = INT64_MIN;
    for (size_t k = 0; k < x->nkl.n; k++) {
        if (!kl[k].copy || kl[k].sp.tid != sp.tid || kl[k].sp.s < sp.s || kl[k].sp.e > sp.e ||
            (fb->group && kl[k].stream != fb->stream))
            continue;
        for (long g = ct_kv_find(&x->gcorr, kl[k].corr);
             g >= 0 && (size_t)g < x->gcorr.n && gc[g].key == kl[k].corr; g++) {
            uint64_t o = gc[g].val;
            if (o == NONE || (ops[o].type != CT_GPU_MEMCPY && ops[o].type != CT_GPU_NCCL))
                continue;
            s = ops[o].s < s ? ops[o].s : s;
            e = ops[o].e > e ? ops[o].e : e;
            if (hull == NONE)
                hull = o;
            else if (o != hull)
                ops[o].name = SYNTHETIC - 1; /* within the hull: dropped at the end of join */
        }
    }
    if (hull != NONE) {
        ops[hull].s = s;
        ops[hull].e = e;
        ops[hull].type = CT_GPU_NCCL;
        ops[hull].cls = CT_CL_OTHER;
        ops[hull].op = n->op;
        ops[hull].launch = n->host_s;
    }
    return hull;
}

/* Links NCCL op i to GPU interval o; an interval already linked to another
 * op of the same group is copied (a fused kernel, or a group's event pair,
 * is each member's GPU time). */
int ct_nccl_link(struct ct_extraction *x, uint64_t o, size_t i)
{
    struct ct_gpu_op *ops = x->ops.p;
    if (ops[o].nccl < 0) {
        ops[o].nccl = (int32_t)i;
        return 0;
    }
    if (ct_vec_room(&x->ops, sizeof(struct ct_gpu_op)))
        return -ENOMEM;
    ops = x->ops.p;
    ops[x->ops.n] = ops[o];
    ops[x->ops.n++].nccl = (int32_t)i;
    return 0;
}

/*
 * The kernels NCCL launched inside an op's call (or its group's
 * ncclGroupEnd) that are not the op's GPU time — the plugin or an event
 * pair timed the op — still belong to it: they are linked for their class
 * (nested), so one op's work is not data-parallel as a kernel and "other"
 * as an op. So are the copies a copy-engine collective enqueued there:
 * communication, not memory traffic.
 */
int ct_nccl_link_nested(struct ct_extraction *x)
{
    size_t nn = x->nccl.n, nl = x->nkl.n;
    if (!nn || !nl)
        return 0;
    const struct ct_nccl_call *nccl = x->nccl.p;
    const struct nccl_fb *fb = x->nfb.p;
    const struct nccl_launch *kl = x->nkl.p;
    struct span *sp = malloc(nn * sizeof(*sp));
    struct ct_kv *bys = malloc(nn * sizeof(*bys)), *byl = malloc(nl * sizeof(*byl));
    struct {
        uint32_t tid;
        size_t span;
    } last[64];
    size_t nlast = 0;
    int rc = sp && bys && byl ? 0 : -ENOMEM;
    for (size_t i = 0; i < nn && !rc; i++) {
        sp[i] = (struct span){nccl[i].host_s, nccl[i].host_e, fb[i].tid};
        long g = fb[i].group ? ct_kv_find(&x->gend, fb[i].group) : -1;
        if (g >= 0)
            sp[i] = ((const struct span *)x->gendv.p)[((const struct ct_kv *)x->gend.p)[g].val];
        bys[i] = (struct ct_kv){(uint64_t)sp[i].s, i};
    }
    for (size_t k = 0; k < nl && !rc; k++)
        byl[k] = (struct ct_kv){(uint64_t)kl[k].sp.s, k};
    if (!rc)
        rc = ct_kv_sort(bys, nn) ? -ENOMEM : ct_kv_sort(byl, nl) ? -ENOMEM : 0;
    const struct ct_kv *gc = x->gcorr.p;
    struct ct_gpu_op *ops = x->ops.p;
    for (size_t k = 0, s = 0; k < nl && !rc; k++) {
        const struct nccl_launch *l = &kl[byl[k].val];
        /* the latest span of each thread that starts at or before l */
        for (; s < nn && (int64_t)bys[s].key <= l->sp.s; s++) {
            uint32_t tid = sp[bys[s].val].tid;
            size_t j = 0;
            while (j < nlast && last[j].tid != tid)
                j++;
            if (j == nlast && nlast < sizeof(last) / sizeof(last[0]))
                last[nlast++].tid = tid;
            if (j < nlast)
                last[j].span = bys[s].val;
        }
        size_t j = 0;
        while (j < nlast && last[j].tid != l->sp.tid)
            j++;
        if (j == nlast || sp[last[j].span].e < l->sp.e)
            continue;
        for (long g = ct_kv_find(&x->gcorr, l->corr);
             g >= 0 && (size_t)g < x->gcorr.n && gc[g].key == l->corr; g++) {
            struct ct_gpu_op *o = gc[g].val == NONE ? NULL : &ops[gc[g].val];
            if (o && o->type == (l->copy ? CT_GPU_MEMCPY : CT_GPU_KERNEL) && o->nccl < 0 &&
                o->name != SYNTHETIC - 1) {
                o->nccl = (int32_t)last[j].span;
                o->nested = 1;
            }
        }
    }
    free(sp);
    free(bys);
    free(byl);
    return rc;
}

/*
 * A group's event pair (around its outermost ncclGroupEnd) that no member
 * took as its GPU time — every member had its own, from the NCCL profiler
 * plugin — is still the members' work: linked to the first of them for
 * its class (nested), so a pipeline's Send/Recv group is not "other"
 * communication beside the members' own pipeline time.
 */
void ct_nccl_link_groups(struct ct_extraction *x)
{
    const struct nccl_fb *fb = x->nfb.p;
    const struct ct_kv *gc = x->gcorr.p;
    struct ct_gpu_op *ops = x->ops.p;
    uint64_t last = 0;
    for (size_t i = 0; i < x->nccl.n; i++) {
        if (!fb[i].group || fb[i].group == last)
            continue; /* a group's members come together: its first one */
        last = fb[i].group;
        for (long k = ct_kv_find(&x->gcorr, fb[i].group);
             k >= 0 && (size_t)k < x->gcorr.n && gc[k].key == fb[i].group; k++) {
            struct ct_gpu_op *o = gc[k].val == NONE ? NULL : &ops[gc[k].val];
            if (o && o->type == CT_GPU_NCCL && o->nccl < 0) {
                o->nccl = (int32_t)i;
                o->nested = 1;
            }
        }
    }
}
