/* Enum value -> name tables (unknown values print as "unknown", never
 * crash), and rank lists as text reports print them. */
#include "decoder/util/names.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cutrace/format.h"
#include "cutrace/shmem_types.h"

#define LOOKUP(table, v) ((v) < sizeof(table) / sizeof(table[0]) && table[v] ? table[v] : "unknown")

const char *ct_name_copy_kind(uint64_t v)
{
    static const char *const t[] = {"none", "HtoD", "DtoH", "DtoD", "HtoH", "peer"};
    return LOOKUP(t, v);
}

const char *ct_name_gpu_type(uint64_t v)
{
    static const char *const t[] = {NULL, "kernel", "memcpy", "memset", "nccl", "sync", "graph"};
    return LOOKUP(t, v);
}

const char *ct_name_gpu_source(uint64_t v)
{
    static const char *const t[] = {NULL, "cupti", "events", "nccl_plugin", "events_blocking"};
    return LOOKUP(t, v);
}

const char *ct_name_nccl_net_transport(uint64_t v)
{
    static const char *const t[] = {NULL, "ib", "socket"};
    return LOOKUP(t, v);
}

const char *ct_name_nccl_phase(uint64_t v)
{
    static const char *const t[] = {"initial_sync", "compute", "final_sync"};
    return LOOKUP(t, v);
}

const char *ct_name_family(uint64_t v)
{
    static const char *const t[] = {"other", "launch", "memcpy", "memset",
                                    "sync",  "alloc",  "graph",  "module"};
    return LOOKUP(t, v);
}

const char *ct_name_nccl_op(uint64_t v)
{
    static const char *const t[] = {NULL,        "AllReduce",     "Broadcast", "Reduce",
                                    "AllGather", "ReduceScatter", "AlltoAll",  "Gather",
                                    "Scatter",   "Send",          "Recv",      "Bcast"};
    return LOOKUP(t, v);
}

/* ncclDataType_t values (nccl.h 2.28). */
const char *ct_name_nccl_dtype(uint64_t v)
{
    static const char *const t[] = {"int8",    "uint8",    "int32",   "uint32",
                                    "int64",   "uint64",   "float16", "float32",
                                    "float64", "bfloat16", "fp8e4m3", "fp8e5m2"};
    return LOOKUP(t, v);
}

/* ncclRedOp_t values (nccl.h 2.28). */
const char *ct_name_nccl_redop(uint64_t v)
{
    static const char *const t[] = {"sum", "prod", "max", "min", "avg"};
    return LOOKUP(t, v);
}

/* A CT_REC_NCCL record's library, type and operator (format v7: NVSHMEM's
 * collectives carry CT_NCCL_DTYPE_NVSHMEM and their own tables). */
const char *ct_name_comm_lib(uint64_t dtype)
{
    return dtype & CT_NCCL_DTYPE_NVSHMEM ? "nvshmem" : "nccl";
}

const char *ct_name_shmem_type(uint64_t v)
{
    static const char *const t[] = {
#define TYPE_NAME(name, size, kind) #name,
        CT_SHMEM_TYPES(TYPE_NAME)
#undef TYPE_NAME
    };
    return LOOKUP(t, v);
}

const char *ct_name_comm_dtype(uint64_t dtype)
{
    if (dtype & CT_NCCL_DTYPE_NVSHMEM)
        return ct_name_shmem_type(dtype & 0xff);
    return ct_name_nccl_dtype(dtype);
}

const char *ct_name_comm_redop(uint64_t dtype, uint64_t redop)
{
    static const char *const t[] = {
#define OP_NAME(op) #op,
        CT_SHMEM_REDOPS(OP_NAME)
#undef OP_NAME
    };
    if (dtype & CT_NCCL_DTYPE_NVSHMEM)
        return LOOKUP(t, redop);
    return ct_name_nccl_redop(redop);
}

const char *ct_name_comm_call(uint64_t dtype, uint64_t op, char *buf, size_t n)
{
    const char *o = op == CT_NCCL_OP_COUNT ? "other" : ct_name_nccl_op(op);
    if (dtype & CT_NCCL_DTYPE_NVSHMEM)
        snprintf(buf, n, "nvshmem:%s", o);
    else
        snprintf(buf, n, "nccl%s", o);
    return buf;
}

const char *ct_name_signal(long v, char *buf, size_t n)
{
    /* Linux's numbers, the same on x86-64 and aarch64 (asm-generic) */
    static const char *const t[] = {
        NULL,        "SIGHUP",  "SIGINT",    "SIGQUIT", "SIGILL",   "SIGTRAP", "SIGABRT", "SIGBUS",
        "SIGFPE",    "SIGKILL", "SIGUSR1",   "SIGSEGV", "SIGUSR2",  "SIGPIPE", "SIGALRM", "SIGTERM",
        "SIGSTKFLT", "SIGCHLD", "SIGCONT",   "SIGSTOP", "SIGTSTP",  "SIGTTIN", "SIGTTOU", "SIGURG",
        "SIGXCPU",   "SIGXFSZ", "SIGVTALRM", "SIGPROF", "SIGWINCH", "SIGIO",   "SIGPWR",  "SIGSYS"};
    if (v > 0 && (size_t)v < sizeof(t) / sizeof(t[0]))
        snprintf(buf, n, "%s", t[v]);
    else
        snprintf(buf, n, "signal %ld", v);
    return buf;
}

const char *ct_name_fd_type(uint64_t v)
{
    static const char *const t[] = {"unknown", "file", "pipe", "socket", "char", "dir", "other"};
    return LOOKUP(t, v);
}

const char *ct_name_scope(uint64_t v)
{
    static const char *const t[] = {"process", "device", "comm",   "thread",     "recorder",
                                    "stream",  "stack",  "module", "graph_node", "graph"};
    return LOOKUP(t, v);
}

const char *ct_name_drop_reason(uint64_t v)
{
    static const char *const t[] = {NULL,           "ring_full",    "no_buffer",
                                    "write_failed", "strings_full", "gpu_untimed",
                                    "cupti",        "io_below_min", "nccl_pool_full"};
    return LOOKUP(t, v);
}

const char *ct_name_clock_source(uint64_t v)
{
    static const char *const t[] = {"monotonic", "tsc"};
    return LOOKUP(t, v);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* " 3,100-103,517": sorted, runs of consecutive ranks as A-B (a finding on
 * a thousand ranks stays one line); the JSON lists them all. */
void ct_ranks_text(FILE *f, const int *ranks, size_t n)
{
    int *v = malloc((n ? n : 1) * sizeof(*v));
    if (!v) {
        fprintf(f, " (%zu)", n);
        return;
    }
    memcpy(v, ranks, n * sizeof(*v));
    qsort(v, n, sizeof(*v), cmp_int);
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && v[j] <= v[j - 1] + 1;)
            j++;
        if (v[j - 1] > v[i])
            fprintf(f, "%s%d-%d", i ? "," : " ", v[i], v[j - 1]);
        else
            fprintf(f, "%s%d", i ? "," : " ", v[i]);
    }
    free(v);
}
