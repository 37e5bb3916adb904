/*
 * The job model's own rules (decoder/read/timeline.h): class names, the
 * NCCL op a kernel's name says, what names an iteration. Never prints.
 */
#include "decoder/read/timeline.h"
#include "decoder/util/comm_kernels.h"

#include <stdlib.h>
#include <string.h>

const char *ct_class_name(int cls)
{
    static const char *const n[CT_CL_COUNT] = {"compute", "memory", "dp", "tp", "pp", "other"};
    return cls >= 0 && cls < CT_CL_COUNT ? n[cls] : "?";
}

const char *ct_comm_lib_name(int lib)
{
    return lib == CT_LIB_NVSHMEM ? "nvshmem" : "nccl";
}

int ct_nccl_op_from_kernel(const char *name)
{
    static const struct {
        const char *s;
        int op;
    } t[] = {
        {"AllReduce", CT_NCCL_OP_ALLREDUCE}, {"ReduceScatter", CT_NCCL_OP_REDUCESCATTER},
        {"AllGather", CT_NCCL_OP_ALLGATHER}, {"AlltoAll", CT_NCCL_OP_ALLTOALL},
        {"Broadcast", CT_NCCL_OP_BROADCAST}, {"SendRecv", CT_NCCL_OP_SEND},
        {"Send", CT_NCCL_OP_SEND},           {"Recv", CT_NCCL_OP_RECV},
        {"Reduce", CT_NCCL_OP_REDUCE},       {"Gather", CT_NCCL_OP_GATHER},
        {"Scatter", CT_NCCL_OP_SCATTER},
    };
    const char *p = NULL;
    if (!name)
        return 0;
    if (!strncmp(name, "ncclDevKernel_", 14))
        p = name + 14;
    else if (!strncmp(name, "ncclKernel_", 11))
        p = name + 11;
    else if ((p = ct_comm_kernel_op(name)) != NULL)
        ; /* communication outside NCCL's host API: the table's op name ("Other": none below) */
    else if (!strncmp(name, "nccl", 4))
        p = name + 4;
    if (!p)
        return 0;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (!strncmp(p, t[i].s, strlen(t[i].s)))
            return t[i].op;
    return CT_NCCL_OP_COUNT; /* an NCCL kernel of unknown op: "other" */
}

int ct_step_matches(const char *msg, const char *step)
{
    size_t n = strlen(step);
    return !strncmp(msg, step, n) && (msg[n] == 0 || msg[n] == '#');
}

int64_t ct_step_number(const char *msg)
{
    const char *h = strrchr(msg, '#');
    if (!h || !h[1])
        return CT_STEP_NONE;
    /* plain digits, too few to overflow (the common "ProfilerStep#12"):
     * read here, strtoll's value without its call (a long job has a step
     * message per step); anything else as strtoll reads it */
    int64_t n = 0;
    size_t i = 1;
    for (; i <= 18 && h[i] >= '0' && h[i] <= '9'; i++)
        n = n * 10 + (h[i] - '0');
    if (!h[i])
        return n;
    char *end;
    long long v = strtoll(h + 1, &end, 10);
    return *end ? CT_STEP_NONE : v;
}
