/*
 * fn_ce.c - copy-engine collectives of the fake NCCL (README.md, "Fake
 * NCCL", FAKEGPU_NCCL_CE).
 *
 * NCCL 2.28 can run some collectives on the GPU's copy engines instead of
 * a kernel: the host enqueues device-to-device copies (and stream memory
 * operations to synchronise with the peers) on the op's stream, and a
 * profiler plugin of ABI v6 hears a CeColl event started before and stopped
 * after that enqueueing, on the calling thread (NCCL's
 * ncclProfilerStart/StopCeCollEvent around ncclLaunchCeColl): the plugin
 * times the GPU work itself.  Here an op the variable names gets its own
 * launch with no kernel: one cuMemcpyDtoDAsync of its local part, which the
 * driver turns into a resolver op of the launch's token (fg_nccl_hooks.h,
 * fakegpu_nccl_ce_arm), so that it ends by the same rule as the kernel it
 * replaces (latest start among the participants plus latency and
 * transfer): a job's communication times are the same with or without the
 * knob, only carried by a copy instead of a kernel.  No KernelCh, Coll or
 * proxy events.
 */
#include "fn_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t fn_ce_once = PTHREAD_ONCE_INIT;
static unsigned fn_ce_mask; /* 1 << fn_func of the ops run on copy engines */
static char fn_ce_bad[128]; /* the malformed entry, "" when the variable is good */

static const struct {
    const char *name;
    fn_func func;
} fn_ce_ops[] = {
    {"AllReduce", FN_ALLREDUCE},
    {"AllGather", FN_ALLGATHER},
    {"ReduceScatter", FN_REDUCESCATTER},
    {"AlltoAll", FN_ALLTOALL},
};

/* FAKEGPU_NCCL_CE: unset, "" or "0": none; "1": AllReduce and AllGather;
 * else a comma-separated list of the names above. */
static void fn_ce_parse(void)
{
    const char *v = getenv("FAKEGPU_NCCL_CE");
    if (!v || !*v || !strcmp(v, "0"))
        return;
    if (!strcmp(v, "1")) {
        fn_ce_mask = 1u << FN_ALLREDUCE | 1u << FN_ALLGATHER;
        return;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "%s", v);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        size_t i = 0;
        while (i < sizeof fn_ce_ops / sizeof fn_ce_ops[0] && strcmp(fn_ce_ops[i].name, t))
            i++;
        if (i == sizeof fn_ce_ops / sizeof fn_ce_ops[0]) {
            snprintf(fn_ce_bad, sizeof fn_ce_bad, "%s", t);
            fn_ce_mask = 0;
            return;
        }
        fn_ce_mask |= 1u << fn_ce_ops[i].func;
    }
}

bool fn_ce_wanted(fn_func f, bool *bad)
{
    pthread_once(&fn_ce_once, fn_ce_parse);
    if (fn_ce_bad[0]) {
        fn_set_error("fake NCCL: FAKEGPU_NCCL_CE: '%s' is not 1, 0 or a list of AllReduce, "
                     "AllGather, ReduceScatter, AlltoAll",
                     fn_ce_bad);
        *bad = true;
        return false;
    }
    return (fn_ce_mask >> f) & 1;
}

/* The local part an op copies on its copy engine: its own contribution,
 * from the send buffer to its place in the receive buffer. */
static size_t fn_ce_part(const struct fn_op *op, CUdeviceptr *dst, CUdeviceptr *src)
{
    size_t part = op->count * fn_dtype_bytes(op->dtype);
    size_t at = (size_t)op->comm->rank * part;
    *dst = (CUdeviceptr)(uintptr_t)op->recvbuff;
    *src = (CUdeviceptr)(uintptr_t)op->sendbuff;
    if (op->func == FN_ALLGATHER || op->func == FN_ALLTOALL)
        *dst += at;
    if (op->func == FN_REDUCESCATTER || op->func == FN_ALLTOALL)
        *src += at;
    return part;
}

/* FAKEGPU_NCCL_CE_BATCH=1: the copy goes through cuMemcpyBatchAsync (a
 * batch of one, as NCCL 2.28 makes its copies with it on CUDA 12.8 and
 * later) where the driver has it, else cuMemcpyDtoDAsync. */
static bool fn_ce_batch(void)
{
    const char *v = getenv("FAKEGPU_NCCL_CE_BATCH");
    return v && !strcmp(v, "1") && fn_cu.memcpy_batch_async;
}

static CUresult fn_ce_copy_batch(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s)
{
    CUmemcpyAttributes attr;
    memset(&attr, 0, sizeof attr);
    attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    size_t idx = 0;
    return fn_cu.memcpy_batch_async(&dst, &src, &bytes, 1, &attr, &idx, 1, s);
}

ncclResult_t fn_ce_launch(struct fn_launch *l)
{
    struct fn_op *op = &l->ops[0];
    struct ncclComm *c = op->comm;
    CUresult cres = fn_cu.ctx_push(c->ctx);
    bool pushed = cres == CUDA_SUCCESS;
    CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
    if (cres == CUDA_SUCCESS && fn_cu.stream_is_capturing)
        cres = fn_cu.stream_is_capturing(op->stream, &cap);
    CUdeviceptr dst, src;
    size_t bytes = fn_ce_part(op, &dst, &src);
    uint64_t token = 0;
    pthread_mutex_lock(&fn_lock);
    c->inflight++;
    if (cres == CUDA_SUCCESS && cap == CU_STREAM_CAPTURE_STATUS_NONE && bytes)
        token = fn_token_register_locked(l);
    pthread_mutex_unlock(&fn_lock);
    struct fn_ev e = {
        .type = fnProfileCeColl, .parent = op->h_api, .op = op, .ce_seq = c->ce_seq++};
    void *h = fn_prof_start(c, &e);
    if (cres == CUDA_SUCCESS && bytes) {
        fn_cu.ce_arm(token); /* 0 under capture: a plain copy is recorded */
        if (fn_ce_batch())
            cres = fn_ce_copy_batch(dst, src, bytes, op->stream);
        else
            cres = fn_cu.memcpy_dtod_async(dst, src, bytes, op->stream);
        fn_cu.ce_arm(0);
    }
    fn_prof_stop(h);
    CUcontext dummy;
    if (pushed)
        fn_cu.ctx_pop(&dummy);
    if (cres == CUDA_SUCCESS && token)
        return ncclSuccess; /* from here on l belongs to the resolver */
    fn_launch_finish_now(l);
    if (cres != CUDA_SUCCESS) {
        fn_set_error("fake NCCL: copy-engine copy failed (CUresult %d)", (int)cres);
        return ncclUnhandledCudaError;
    }
    return ncclSuccess;
}
