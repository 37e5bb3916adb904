/*
 * `cutrace dump`: one line per record, in time order per file. `--json`
 * prints the stable JSON-lines view documented in docs/cutrace-dump.md:
 * field names and value types there are a contract.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/cmd/cli.h"
#include "decoder/util/options.h"
#include "decoder/load/load.h"
#include "decoder/util/json.h"
#include "decoder/util/names.h"
#include "decoder/read/nccl_steps.h"
#include "decoder/read/symbols.h"
#include "decoder/read/tracefile.h"

struct out {
    FILE *f;
    int json;
    int first; /* no field written yet on this line */
};

/* Field writers: JSON `"k":v` pairs, or text `k=v`. */
static void key(struct out *o, const char *k)
{
    if (o->json) {
        if (!o->first)
            fputc(',', o->f);
        ct_json_str(o->f, k);
        fputc(':', o->f);
    } else
        fprintf(o->f, "%s%s=", o->first ? "" : " ", k);
    o->first = 0;
}

static void f_u(struct out *o, const char *k, uint64_t v)
{
    key(o, k);
    fprintf(o->f, "%" PRIu64, v);
}

static void f_i(struct out *o, const char *k, int64_t v)
{
    key(o, k);
    fprintf(o->f, "%" PRId64, v);
}

static void f_s(struct out *o, const char *k, const char *v)
{
    key(o, k);
    if (o->json)
        ct_json_str(o->f, v);
    else
        fputs(*v ? v : "\"\"", o->f);
}

static void f_hex(struct out *o, const char *k, uint64_t v)
{
    char buf[24];
    snprintf(buf, sizeof(buf), "%016" PRIx64, v);
    f_s(o, k, buf);
}

static void f_dim3(struct out *o, const char *k, uint64_t x, uint64_t y, uint64_t z)
{
    key(o, k);
    if (o->json)
        fprintf(o->f, "[%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]", x, y, z);
    else
        fprintf(o->f, "%" PRIu64 "x%" PRIu64 "x%" PRIu64, x, y, z);
}

static void f_null_or_i(struct out *o, const char *k, int64_t v)
{
    key(o, k);
    if (v < 0)
        fputs(o->json ? "null" : "-", o->f);
    else
        fprintf(o->f, "%" PRId64, v);
}

static void span(struct out *o, const uint64_t *f)
{
    f_u(o, "start_ns", f[0]);
    f_u(o, "end_ns", f[1]);
}

/* The symbolised call stack recorded for a call, if any. */
static void stack_field(struct out *o, struct ct_trace *t, const char *frames)
{
    if (!frames)
        return;
    key(o, "stack");
    fputs(o->json ? "[" : "", o->f);
    int first = 1;
    for (const char *p = frames; *p;) {
        unsigned long long ip = strtoull(p, NULL, 16);
        char name[512];
        ct_symbolize(t, ip, name, sizeof(name));
        if (o->json) {
            if (!first)
                fputc(',', o->f);
            ct_json_str(o->f, name);
        } else {
            fprintf(o->f, "%s%s", first ? "" : "<-", name);
        }
        first = 0;
        const char *semi = strchr(p, ';');
        if (!semi)
            break;
        p = semi + 1;
    }
    fputs(o->json ? "]" : "", o->f);
}

static void api_fields(struct out *o, struct ct_trace *t, const uint64_t *f)
{
    span(o, f);
    f_s(o, "name", ct_trace_str(t, f[CT_API_NAME]));
    f_u(o, "correlation_id", f[CT_API_CORR]);
    f_u(o, "stream", f[CT_API_STREAM]);
    f_s(o, "family", ct_name_family(f[CT_API_FAMILY]));
    f_i(o, "result", (int64_t)f[CT_API_RESULT]);
    f_i(o, "device", (int64_t)f[CT_API_DEVICE]);
    f_u(o, "flags", f[CT_API_FLAGS]);
    switch (f[CT_API_FAMILY]) {
    case CT_FAM_LAUNCH:
        f_s(o, "kernel", ct_trace_str(t, f[CT_API_KERNEL]));
        f_dim3(o, "grid", f[CT_API_GRID_X], f[CT_API_GRID_Y], f[CT_API_GRID_Z]);
        f_dim3(o, "block", f[CT_API_BLOCK_X], f[CT_API_BLOCK_Y], f[CT_API_BLOCK_Z]);
        f_u(o, "shmem", f[CT_API_SHMEM]);
        break;
    case CT_FAM_MEMCPY:
        f_u(o, "bytes", f[CT_API_BYTES]);
        f_s(o, "copy_kind", ct_name_copy_kind(f[CT_API_COPY_KIND]));
        /* a batch's copies and the copy a failed one stopped at (format v5) */
        if (f[CT_API_GRID_X])
            f_u(o, "count", f[CT_API_GRID_X]);
        if (f[CT_API_GRID_Y])
            f_u(o, "fail_index", f[CT_API_GRID_Y] - 1);
        break;
    case CT_FAM_MEMSET:
    case CT_FAM_ALLOC: f_u(o, "bytes", f[CT_API_BYTES]); break;
    default: break;
    }
    uint64_t ev;
    if (ct_api_event(f, &ev))
        f_u(o, "event", ev);
    stack_field(o, t, ct_trace_stack(t, f[CT_API_CORR]));
}

static void gpu_fields(struct out *o, struct ct_trace *t, const uint64_t *f)
{
    span(o, f);
    f_u(o, "gpu_start_ns", f[CT_GPU_START]);
    f_u(o, "gpu_end_ns", f[CT_GPU_END]);
    f_i(o, "device", (int64_t)f[CT_GPU_DEVICE]);
    f_u(o, "stream", f[CT_GPU_STREAM]);
    f_u(o, "correlation_id", f[CT_GPU_CORR]);
    f_s(o, "type", ct_name_gpu_type(f[CT_GPU_TYPE]));
    f_s(o, "name", ct_trace_str(t, f[CT_GPU_NAME]));
    f_u(o, "bytes", f[CT_GPU_BYTES]);
    if (f[CT_GPU_TYPE] == CT_GPU_MEMCPY)
        f_s(o, "copy_kind", ct_name_copy_kind(f[CT_GPU_COPY_KIND]));
    f_s(o, "source", ct_name_gpu_source(f[CT_GPU_SOURCE]));
    /* joined to the call that put the work on the stream */
    const struct ct_record *call = ct_trace_call(t, f[CT_GPU_CORR]);
    if (call && call->kind == CT_REC_API) {
        f_s(o, "api", ct_trace_str(t, call->f[CT_API_NAME]));
        f_u(o, "api_start_ns", call->f[CT_API_START]);
        f_u(o, "api_end_ns", call->f[CT_API_END]);
        f_u(o, "api_tid", call->tid);
    } else if (call) {
        f_s(o, "api", ct_name_nccl_op(call->f[CT_NCCL_OP]));
        f_u(o, "api_start_ns", call->f[CT_NCCL_START]);
        f_u(o, "api_end_ns", call->f[CT_NCCL_END]);
        f_u(o, "api_tid", call->tid);
    }
}

static void nccl_fields(struct out *o, struct ct_trace *t, const struct ct_record *r)
{
    const uint64_t *f = r->f;
    span(o, f);
    f_s(o, "op", f[CT_NCCL_OP] == CT_NCCL_OP_COUNT ? "other" : ct_name_nccl_op(f[CT_NCCL_OP]));
    if (f[CT_NCCL_DTYPE] & CT_NCCL_DTYPE_NVSHMEM) /* format v7: not NCCL's */
        f_s(o, "lib", ct_name_comm_lib(f[CT_NCCL_DTYPE]));
    f_hex(o, "comm_hash", f[CT_NCCL_COMM]);
    f_u(o, "seq", f[CT_NCCL_SEQ]);
    f_u(o, "count", f[CT_NCCL_COUNT]);
    f_s(o, "dtype", ct_name_comm_dtype(f[CT_NCCL_DTYPE]));
    f_u(o, "bytes", f[CT_NCCL_BYTES]);
    f_s(o, "redop", ct_name_comm_redop(f[CT_NCCL_DTYPE], f[CT_NCCL_REDOP]));
    f_null_or_i(o, "root", (int64_t)f[CT_NCCL_ROOT]);
    f_null_or_i(o, "peer", (int64_t)f[CT_NCCL_PEER]);
    f_u(o, "stream", f[CT_NCCL_STREAM]);
    f_u(o, "group", f[CT_NCCL_GROUP]);
    f_u(o, "correlation_id", f[CT_NCCL_CORR]);
    f_i(o, "comm_rank", (int64_t)f[CT_NCCL_RANK]);
    f_u(o, "nranks", f[CT_NCCL_NRANKS]);
    uint64_t gs, ge;
    unsigned src = ct_trace_nccl_gpu(t, r, &gs, &ge);
    if (src) {
        f_u(o, "gpu_start_ns", gs);
        f_u(o, "gpu_end_ns", ge);
        f_s(o, "gpu_source", ct_name_gpu_source(src));
    }
    stack_field(o, t, ct_trace_stack(t, f[CT_NCCL_CORR]));
}

static void io_fields(struct out *o, struct ct_trace *t, const struct ct_record *r)
{
    const uint64_t *f = r->f;
    span(o, f);
    f_s(o, "op", ct_trace_str(t, f[CT_IO_OP]));
    f_i(o, "fd", (int64_t)f[CT_IO_FD]);
    f_s(o, "fd_type", ct_name_fd_type(f[CT_IO_FD_TYPE]));
    f_s(o, "path", ct_trace_str(t, f[CT_IO_PATH]));
    f_u(o, "bytes", f[CT_IO_BYTES]);
    f_i(o, "result", (int64_t)f[CT_IO_RESULT]);
    f_i(o, "offset", (int64_t)f[CT_IO_OFFSET]);
    stack_field(o, t, ct_trace_io_stack(t, r->tid, f[CT_IO_START]));
}

/* Prints records [i, j) where j > i groups consecutive META records of one
 * (time, scope, scope_id) into one object. Returns j. */
static size_t print_record(struct out *o, struct ct_trace *t, size_t i)
{
    const struct ct_record *r = &t->recs[i];
    const uint64_t *f = r->f;
    size_t next = i + 1;
    o->first = 1;
    if (o->json)
        fputc('{', o->f);
    f_s(o, "kind", r->kind == CT_REC_NVTX_MARK ? "nvtx" : ct_kind_table[r->kind].name);
    f_u(o, "pid", t->rd.hdr.pid);
    f_u(o, "tid", r->tid);
    f_null_or_i(o, "rank", t->rank);
    switch (r->kind) {
    case CT_REC_META:
        f_s(o, "scope", ct_name_scope(f[CT_META_SCOPE]));
        if (f[CT_META_SCOPE] == CT_SCOPE_DEVICE)
            f_u(o, "device", f[CT_META_SCOPE_ID]);
        else if (f[CT_META_SCOPE] == CT_SCOPE_COMM)
            f_hex(o, "comm_hash", f[CT_META_SCOPE_ID]);
        else if (f[CT_META_SCOPE] == CT_SCOPE_THREAD)
            f_u(o, "thread", f[CT_META_SCOPE_ID]);
        else if (f[CT_META_SCOPE] == CT_SCOPE_STREAM)
            f_u(o, "stream", f[CT_META_SCOPE_ID]);
        else if (f[CT_META_SCOPE] == CT_SCOPE_STACK)
            f_u(o, "correlation_id", f[CT_META_SCOPE_ID]);
        else if (f[CT_META_SCOPE] == CT_SCOPE_MODULE)
            f_hex(o, "address", f[CT_META_SCOPE_ID]);
        else if (f[CT_META_SCOPE] == CT_SCOPE_GRAPH_NODE)
            f_hex(o, "graph_node_id", f[CT_META_SCOPE_ID]);
        f_u(o, "time_ns", f[CT_META_TIME]);
        for (next = i; next < t->n; next++) {
            const struct ct_record *m = &t->recs[next];
            if (m->kind != CT_REC_META || m->tid != r->tid || m->f[0] != f[0] ||
                m->f[CT_META_SCOPE] != f[CT_META_SCOPE] ||
                m->f[CT_META_SCOPE_ID] != f[CT_META_SCOPE_ID])
                break;
            const char *k = ct_trace_str(t, m->f[CT_META_KEY]);
            if (!*k || !strcmp(k, "kind") || !strcmp(k, "pid") || !strcmp(k, "tid") ||
                !strcmp(k, "rank") || !strcmp(k, "scope") || !strcmp(k, "time_ns")) {
                /* Reserved names keep their record meaning; the metadata
                 * value of the same name is prefixed. */
                char buf[80];
                snprintf(buf, sizeof(buf), "meta_%s", k);
                f_s(o, buf, ct_trace_str(t, m->f[CT_META_VALUE]));
            } else {
                f_s(o, k, ct_trace_str(t, m->f[CT_META_VALUE]));
            }
        }
        if (next == i)
            next = i + 1;
        break;
    case CT_REC_CLOCK:
        f_u(o, "mono_ns", f[CT_CLOCK_MONO]);
        f_u(o, "real_ns", f[CT_CLOCK_REAL]);
        f_u(o, "tsc", f[CT_CLOCK_TSC_TICKS]);
        if ((int64_t)f[CT_CLOCK_DEVICE] >= 0) {
            f_u(o, "gpu_ns", f[CT_CLOCK_GPU]);
            f_i(o, "device", (int64_t)f[CT_CLOCK_DEVICE]);
        }
        break;
    case CT_REC_API: api_fields(o, t, f); break;
    case CT_REC_GPU: gpu_fields(o, t, f); break;
    case CT_REC_NCCL: nccl_fields(o, t, r); break;
    case CT_REC_IO: io_fields(o, t, r); break;
    case CT_REC_NVTX_RANGE:
        f_s(o, "type", "range");
        span(o, f);
        f_s(o, "domain", ct_trace_str(t, f[CT_NVTX_DOMAIN]));
        f_s(o, "message", ct_trace_str(t, f[CT_NVTX_MESSAGE]));
        f_u(o, "depth", f[CT_NVTX_DEPTH]);
        break;
    case CT_REC_NVTX_MARK:
        f_s(o, "type", "mark");
        f_u(o, "time_ns", f[CT_MARK_TIME]);
        f_s(o, "domain", ct_trace_str(t, f[CT_MARK_DOMAIN]));
        f_s(o, "message", ct_trace_str(t, f[CT_MARK_MESSAGE]));
        break;
    case CT_REC_DROP:
        f_u(o, "time_ns", f[CT_DROP_TIME]);
        f_u(o, "count", f[CT_DROP_COUNT]);
        f_s(o, "reason", ct_name_drop_reason(f[CT_DROP_REASON]));
        break;
    case CT_REC_ERROR:
        f_u(o, "time_ns", f[CT_ERROR_TIME]);
        f_s(o, "what", ct_trace_str(t, f[CT_ERROR_WHAT]));
        f_i(o, "code", (int64_t)f[CT_ERROR_CODE]);
        break;
    case CT_REC_COUNTER: /* format v2: a sample, instantaneous like a mark */
        f_u(o, "start_ns", f[CT_COUNTER_TIME]);
        f_i(o, "device", (int64_t)f[CT_COUNTER_DEVICE]);
        f_s(o, "name", ct_trace_str(t, f[CT_COUNTER_NAME]));
        f_i(o, "value", (int64_t)f[CT_COUNTER_VALUE]);
        f_s(o, "unit", ct_trace_str(t, f[CT_COUNTER_UNIT]));
        break;
    case CT_REC_NCCL_INFO: /* format v4 (docs/nccl.md) */
        f_u(o, "time_ns", f[CT_NINFO_TIME]);
        f_u(o, "correlation_id", f[CT_NINFO_CORR]);
        f_s(o, "algo", ct_trace_str(t, f[CT_NINFO_ALGO]));
        f_s(o, "proto", ct_trace_str(t, f[CT_NINFO_PROTO]));
        f_u(o, "channels", f[CT_NINFO_CHANNELS]);
        f_u(o, "warps", f[CT_NINFO_WARPS]);
        f_u(o, "flags", f[CT_NINFO_FLAGS]);
        break;
    case CT_REC_NCCL_PROXY: /* format v4 (docs/nccl.md) */
        span(o, f);
        f_u(o, "correlation_id", f[CT_NPROXY_CORR]);
        f_u(o, "channel", f[CT_NPROXY_CHANNEL]);
        f_i(o, "peer", (int64_t)f[CT_NPROXY_PEER]);
        f_s(o, "direction", f[CT_NPROXY_SEND] ? "send" : "recv");
        f_u(o, "steps", f[CT_NPROXY_STEPS]);
        f_u(o, "bytes", f[CT_NPROXY_BYTES]);
        f_u(o, "gpu_wait_ns", f[CT_NPROXY_GPU_WAIT]);
        f_u(o, "peer_wait_ns", f[CT_NPROXY_PEER_WAIT]);
        f_u(o, "net_ns", f[CT_NPROXY_NET]);
        f_u(o, "flush_ns", f[CT_NPROXY_FLUSH]);
        f_u(o, "net_busy_ns", f[CT_NPROXY_NET_BUSY]);
        f_u(o, "nsteps", f[CT_NPROXY_NSTEPS]);
        f_u(o, "chunk_size", f[CT_NPROXY_CHUNK]);
        break;
    case CT_REC_NCCL_CHANNEL: /* format v5 (docs/nccl.md) */
        span(o, f);
        f_u(o, "correlation_id", f[CT_NCHAN_CORR]);
        f_u(o, "channel", f[CT_NCHAN_CHANNEL]);
        break;
    case CT_REC_NCCL_PHASE: /* format v5 (docs/nccl.md) */
        span(o, f);
        f_u(o, "correlation_id", f[CT_NPHASE_CORR]);
        f_u(o, "channel", f[CT_NPHASE_CHANNEL]);
        f_s(o, "phase", ct_name_nccl_phase(f[CT_NPHASE_PHASE]));
        break;
    case CT_REC_NCCL_TAG: /* format v5 (docs/nccl.md) */
        f_u(o, "time_ns", f[CT_NTAG_TIME]);
        f_u(o, "correlation_id", f[CT_NTAG_CORR]);
        f_u(o, "tag", f[CT_NTAG_TAG]);
        break;
    case CT_REC_NCCL_STEP: { /* format v6 (docs/nccl.md, "Raw proxy steps") */
        f_u(o, "start_ns", f[CT_NSTEP_START]);
        f_u(o, "end_ns", f[CT_NSTEP_END]);
        f_u(o, "correlation_id", f[CT_NSTEP_CORR]);
        f_u(o, "channel", f[CT_NSTEP_CHANNEL]);
        f_i(o, "peer", (int64_t)f[CT_NSTEP_PEER]);
        f_s(o, "direction", f[CT_NSTEP_SEND] ? "send" : "recv");
        f_u(o, "step", f[CT_NSTEP_STEP]);
        f_u(o, "bytes", f[CT_NSTEP_BYTES]);
        uint64_t at[CT_NSS_COUNT], dur[CT_NSS_COUNT];
        int order[3];
        ct_nstep_states(f, at, dur, order);
        for (int st = 0; st < CT_NSS_COUNT; st++) {
            char k[32];
            snprintf(k, sizeof(k), "%s_at_ns", ct_nstep_state_name[st]);
            f_null_or_i(o, k, at[st] ? (int64_t)at[st] : -1); /* null: never entered */
            snprintf(k, sizeof(k), "%s_ns", ct_nstep_state_name[st]);
            f_u(o, k, dur[st]);
        }
        break;
    }
    case CT_REC_NCCL_NET: /* format v5 (docs/nccl.md) */
        span(o, f);
        f_u(o, "correlation_id", f[CT_NNET_CORR]);
        f_u(o, "channel", f[CT_NNET_CHANNEL]);
        f_i(o, "peer", (int64_t)f[CT_NNET_PEER]);
        f_s(o, "direction", f[CT_NNET_SEND] ? "send" : "recv");
        f_s(o, "transport", ct_name_nccl_net_transport(f[CT_NNET_TRANSPORT]));
        f_i(o, "device", (int64_t)f[CT_NNET_DEVICE]);
        f_u(o, "qp", f[CT_NNET_QP]);
        f_u(o, "wrs", f[CT_NNET_WRS]);
        f_u(o, "bytes", f[CT_NNET_BYTES]);
        f_u(o, "busy_ns", f[CT_NNET_BUSY]);
        f_u(o, "other_wrs", f[CT_NNET_OTHER_WRS]);
        f_u(o, "other_bytes", f[CT_NNET_OTHER_BYTES]);
        break;
    default: break;
    }
    fputs(o->json ? "}\n" : "\n", o->f);
    return next;
}

int ct_cmd_dump(int argc, char **argv)
{
    const struct option *opts = ct_options_of(CT_CMD_DUMP);
    struct out o = {stdout, 0, 1};
    int c;
    optind = 1;
    opterr = 0; /* our message, not getopt's "dump: unrecognized option" */
    while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
        if (c == 'j') {
            o.json = 1;
        } else if (c == 'h') {
            printf("usage: cutrace dump [--json] TRACE|DIR...\n"
                   "  every record, one line each, each file's in time order\n"
                   "  --json   the stable JSON-lines view, one object per record (default:\n"
                   "           key=value text, for reading)\n");
            ct_help_tail(stdout, "dump");
            return 0;
        } else {
            ct_bad_option(CT_CMD_DUMP, "cutrace dump", argv[optind - 1]);
            return CT_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "cutrace dump: expected at least one trace file or directory\n");
        return CT_EXIT_USAGE;
    }
    struct ct_inputs in = {0};
    char err[512];
    const struct ct_load_opts all = {.no_kineto = 1, .keep_all = 1};
    int erc = ct_load_operands(&all, &in, argv + optind, argc - optind, err, sizeof(err));
    if (erc) {
        fprintf(stderr, "cutrace dump: %s\n", err);
        ct_inputs_free(&in);
        /* -EINVAL: an operand that is not a file or folder (a FIFO, a device) */
        return erc == -EINVAL ? CT_EXIT_USAGE : CT_EXIT_BAD_INPUT;
    }
    int status = 0;
    for (size_t i = 0; i < in.n; i++) {
        struct ct_trace t;
        if (ct_trace_load(&t, in.paths[i], 1, err, sizeof(err))) {
            fprintf(stderr, "cutrace dump: %s\n", err);
            status = CT_EXIT_BAD_INPUT;
            continue;
        }
        for (size_t k = 0; k < t.n;)
            k = print_record(&o, &t, k);
        if (!t.rd.has_footer)
            fprintf(stderr, "cutrace dump: %s: truncated at offset %llu (no footer)\n", t.path,
                    (unsigned long long)t.rd.truncated_at);
        for (unsigned d = 0; d < t.rd.ndamage; d++)
            fprintf(stderr, "cutrace dump: %s: damaged at offset %llu: %s\n", t.path,
                    (unsigned long long)t.rd.damage[d].offset, t.rd.damage[d].what);
        if (t.rd.damage_total)
            status = CT_EXIT_BAD_INPUT;
        ct_trace_free(&t);
    }
    ct_inputs_free(&in);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "cutrace dump: error writing output\n");
        return CT_EXIT_BAD_INPUT;
    }
    return status;
}
