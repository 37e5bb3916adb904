/*
 * NCCL's tables of the SQLite export (docs/export.md): its calls
 * (NCCL_OPS), and its own account of them from the profiler plugin
 * (NCCL_INFO, NCCL_PROXY_OPS, NCCL_CHANNELS, NCCL_NET, the raw steps of
 * CUTRACE_NCCL_STEPS in NCCL_PROXY_STEPS, and profiler ABI v7's
 * NCCL_KERNEL_PHASES and NCCL_TAGS), each joined to NCCL_OPS by
 * (rank, correlationId).
 */
#include <inttypes.h>
#include <stdio.h>

#include "decoder/export/sqlite_int.h"
#include "decoder/read/nccl_steps.h"
#include "decoder/util/names.h"

static void nccl_row(struct sqlite_writer *w, const struct ct_record *r)
{
    const uint64_t *f = r->f;
    enum stmt k = ST_NCCL;
    char hex[24];
    b_i(w, k, 1, T(w, f[CT_NCCL_START]));
    b_i(w, k, 2, T(w, f[CT_NCCL_END]));
    uint64_t gs, ge;
    unsigned src = ct_trace_nccl_gpu(w->t, r, &gs, &ge);
    if (src) {
        b_i(w, k, 3, T(w, gs));
        b_i(w, k, 4, T(w, ge));
        b_t(w, k, 5, ct_name_gpu_source(src));
    }
    b_i(w, k, 6, w->gpid | r->tid);
    b_i(w, k, 7, w->src->rank);
    b_t(w, k, 8, f[CT_NCCL_OP] == CT_NCCL_OP_COUNT ? "other" : ct_name_nccl_op(f[CT_NCCL_OP]));
    snprintf(hex, sizeof(hex), "%016" PRIx64, f[CT_NCCL_COMM]);
    b_t(w, k, 9, hex);
    b_i(w, k, 10, (int64_t)f[CT_NCCL_SEQ]);
    b_i(w, k, 11, (int64_t)f[CT_NCCL_COUNT]);
    b_t(w, k, 12, ct_name_comm_dtype(f[CT_NCCL_DTYPE]));
    b_i(w, k, 13, (int64_t)f[CT_NCCL_BYTES]);
    b_t(w, k, 14, ct_name_comm_redop(f[CT_NCCL_DTYPE], f[CT_NCCL_REDOP]));
    if ((int64_t)f[CT_NCCL_ROOT] >= 0)
        b_i(w, k, 15, (int64_t)f[CT_NCCL_ROOT]);
    if ((int64_t)f[CT_NCCL_PEER] >= 0)
        b_i(w, k, 16, (int64_t)f[CT_NCCL_PEER]);
    b_i(w, k, 17, (int64_t)f[CT_NCCL_STREAM]);
    b_i(w, k, 18, (int64_t)f[CT_NCCL_GROUP]);
    b_i(w, k, 19, (int64_t)f[CT_NCCL_CORR]);
    b_i(w, k, 20, (int64_t)f[CT_NCCL_RANK]);
    b_i(w, k, 21, (int64_t)f[CT_NCCL_NRANKS]);
    b_t(w, k, 22, ct_name_comm_lib(f[CT_NCCL_DTYPE]));
    step(w, k);
}

/* What NCCL's profiler plugin said of an op (NCCL_INFO) and its proxy
 * operations (NCCL_PROXY_OPS), joined to NCCL_OPS by (rank, correlationId):
 * unknown channels and warps (0 in the trace) are NULL, an empty algorithm
 * or protocol (NCCL gave none) NULL. */
static void nccl_info_row(struct sqlite_writer *w, const struct ct_record *r)
{
    const uint64_t *f = r->f;
    enum stmt k = ST_NCCL_INFO;
    b_i(w, k, 1, T(w, f[CT_NINFO_TIME]));
    b_i(w, k, 2, w->gpid);
    b_i(w, k, 3, w->src->rank);
    b_i(w, k, 4, (int64_t)f[CT_NINFO_CORR]);
    const char *algo = ct_trace_str(w->t, f[CT_NINFO_ALGO]);
    const char *proto = ct_trace_str(w->t, f[CT_NINFO_PROTO]);
    if (algo && *algo)
        b_t(w, k, 5, algo);
    if (proto && *proto)
        b_t(w, k, 6, proto);
    if (f[CT_NINFO_CHANNELS])
        b_i(w, k, 7, (int64_t)f[CT_NINFO_CHANNELS]);
    if (f[CT_NINFO_WARPS])
        b_i(w, k, 8, (int64_t)f[CT_NINFO_WARPS]);
    b_i(w, k, 9, !!(f[CT_NINFO_FLAGS] & CT_NINFO_F_P2P));
    b_i(w, k, 10, !!(f[CT_NINFO_FLAGS] & CT_NINFO_F_CE));
    step(w, k);
}

static void nccl_proxy_row(struct sqlite_writer *w, const struct ct_record *r)
{
    const uint64_t *f = r->f;
    enum stmt k = ST_NCCL_PROXY;
    b_i(w, k, 1, T(w, f[CT_NPROXY_START]));
    b_i(w, k, 2, T(w, f[CT_NPROXY_END]));
    b_i(w, k, 3, w->gpid | r->tid);
    b_i(w, k, 4, w->src->rank);
    b_i(w, k, 5, (int64_t)f[CT_NPROXY_CORR]);
    b_i(w, k, 6, (int64_t)f[CT_NPROXY_CHANNEL]);
    b_i(w, k, 7, (int64_t)f[CT_NPROXY_PEER]);
    b_t(w, k, 8, f[CT_NPROXY_SEND] ? "send" : "recv");
    static const int col[] = {CT_NPROXY_STEPS,     CT_NPROXY_BYTES,  CT_NPROXY_GPU_WAIT,
                              CT_NPROXY_PEER_WAIT, CT_NPROXY_NET,    CT_NPROXY_FLUSH,
                              CT_NPROXY_NET_BUSY,  CT_NPROXY_NSTEPS, CT_NPROXY_CHUNK};
    for (int i = 0; i < (int)(sizeof(col) / sizeof(col[0])); i++)
        b_i(w, k, 9 + i, (int64_t)f[col[i]]);
    step(w, k);
}

/* One kernel channel of an op (format v5 nccl_channel): NCCL_CHANNELS. */
static void nccl_channel_row(struct sqlite_writer *w, const struct ct_record *r)
{
    const uint64_t *f = r->f;
    enum stmt k = ST_NCCL_CHANNEL;
    b_i(w, k, 1, T(w, f[CT_NCHAN_START]));
    b_i(w, k, 2, T(w, f[CT_NCHAN_END]));
    b_i(w, k, 3, w->gpid);
    b_i(w, k, 4, w->src->rank);
    b_i(w, k, 5, (int64_t)f[CT_NCHAN_CORR]);
    b_i(w, k, 6, (int64_t)f[CT_NCHAN_CHANNEL]);
    step(w, k);
}

/* A ProxyOp's network work on one queue pair or socket (format v5
 * nccl_net): NCCL_NET; the device NULL for a socket. */
static void nccl_net_row(struct sqlite_writer *w, const struct ct_record *r)
{
    const uint64_t *f = r->f;
    enum stmt k = ST_NCCL_NET;
    b_i(w, k, 1, T(w, f[CT_NNET_START]));
    b_i(w, k, 2, T(w, f[CT_NNET_END]));
    b_i(w, k, 3, w->gpid | r->tid);
    b_i(w, k, 4, w->src->rank);
    b_i(w, k, 5, (int64_t)f[CT_NNET_CORR]);
    b_i(w, k, 6, (int64_t)f[CT_NNET_CHANNEL]);
    b_i(w, k, 7, (int64_t)f[CT_NNET_PEER]);
    b_t(w, k, 8, f[CT_NNET_SEND] ? "send" : "recv");
    b_t(w, k, 9, ct_name_nccl_net_transport(f[CT_NNET_TRANSPORT]));
    if ((int64_t)f[CT_NNET_DEVICE] >= 0)
        b_i(w, k, 10, (int64_t)f[CT_NNET_DEVICE]);
    static const int col[] = {CT_NNET_QP,   CT_NNET_WRS,       CT_NNET_BYTES,
                              CT_NNET_BUSY, CT_NNET_OTHER_WRS, CT_NNET_OTHER_BYTES};
    for (int i = 0; i < (int)(sizeof(col) / sizeof(col[0])); i++)
        b_i(w, k, 11 + i, (int64_t)f[col[i]]);
    step(w, k);
}

/* One barrier phase of one kernel channel (format v5 nccl_phase, profiler
 * ABI v7): NCCL_KERNEL_PHASES, its times as the trace has them (not
 * clamped into the channel's: the Perfetto export nests them, this table
 * keeps what was measured); the phase's name as `dump` gives it
 * ("unknown" for an id past the three NCCL defines). */
static void nccl_phase_row(struct sqlite_writer *w, const struct ct_record *r)
{
    const uint64_t *f = r->f;
    enum stmt k = ST_NCCL_PHASE;
    b_i(w, k, 1, T(w, f[CT_NPHASE_START]));
    b_i(w, k, 2, T(w, f[CT_NPHASE_END]));
    b_i(w, k, 3, w->gpid);
    b_i(w, k, 4, w->src->rank);
    b_i(w, k, 5, (int64_t)f[CT_NPHASE_CORR]);
    b_i(w, k, 6, (int64_t)f[CT_NPHASE_CHANNEL]);
    b_t(w, k, 7, ct_name_nccl_phase(f[CT_NPHASE_PHASE]));
    step(w, k);
}

/* An op's user tag (format v5 nccl_tag, profiler ABI v7): NCCL_TAGS, a
 * table of its own as the trace has a record of its own, written only for
 * a tagged op (NCCL_INFO has a row per described op, almost all
 * untagged). The tag is NCCL's uint64_t in SQLite's signed 64-bit
 * INTEGER: one above 2^63 - 1 reads as its two's complement. */
static void nccl_tag_row(struct sqlite_writer *w, const struct ct_record *r)
{
    const uint64_t *f = r->f;
    enum stmt k = ST_NCCL_TAG;
    b_i(w, k, 1, T(w, f[CT_NTAG_TIME]));
    b_i(w, k, 2, w->gpid);
    b_i(w, k, 3, w->src->rank);
    b_i(w, k, 4, (int64_t)f[CT_NTAG_CORR]);
    b_i(w, k, 5, (int64_t)f[CT_NTAG_TAG]);
    step(w, k);
}

/* One raw proxy step (format v6 nccl_step, CUTRACE_NCCL_STEPS):
 * NCCL_PROXY_STEPS, joined to its ProxyOp's NCCL_PROXY_OPS row by (rank,
 * correlationId, channel, peer, direction); each state's start NULL when
 * the step never entered it, its time (ns) then 0. */
static void nccl_step_row(struct sqlite_writer *w, const struct ct_record *r)
{
    const uint64_t *f = r->f;
    enum stmt k = ST_NCCL_STEP;
    b_i(w, k, 1, T(w, f[CT_NSTEP_START]));
    b_i(w, k, 2, T(w, f[CT_NSTEP_END]));
    b_i(w, k, 3, w->gpid | r->tid);
    b_i(w, k, 4, w->src->rank);
    b_i(w, k, 5, (int64_t)f[CT_NSTEP_CORR]);
    b_i(w, k, 6, (int64_t)f[CT_NSTEP_CHANNEL]);
    b_i(w, k, 7, (int64_t)f[CT_NSTEP_PEER]);
    b_t(w, k, 8, f[CT_NSTEP_SEND] ? "send" : "recv");
    b_i(w, k, 9, (int64_t)f[CT_NSTEP_STEP]);
    b_i(w, k, 10, (int64_t)f[CT_NSTEP_BYTES]);
    uint64_t at[CT_NSS_COUNT], dur[CT_NSS_COUNT];
    int order[3];
    ct_nstep_states(f, at, dur, order);
    for (int s = 0; s < CT_NSS_COUNT; s++) { /* gpuWait, peerWait, net, flush */
        if (at[s])
            b_i(w, k, 11 + 2 * s, T(w, at[s]));
        b_i(w, k, 12 + 2 * s, (int64_t)dur[s]);
    }
    step(w, k);
}

void ct_sqlite_nccl_row(struct sqlite_writer *w, const struct ct_record *r)
{
    switch (r->kind) {
    case CT_REC_NCCL: nccl_row(w, r); break;
    case CT_REC_NCCL_INFO: nccl_info_row(w, r); break;
    case CT_REC_NCCL_PROXY: nccl_proxy_row(w, r); break;
    case CT_REC_NCCL_CHANNEL: nccl_channel_row(w, r); break;
    case CT_REC_NCCL_NET: nccl_net_row(w, r); break;
    case CT_REC_NCCL_PHASE: nccl_phase_row(w, r); break;
    case CT_REC_NCCL_TAG: nccl_tag_row(w, r); break;
    case CT_REC_NCCL_STEP: nccl_step_row(w, r); break;
    default: break;
    }
}
