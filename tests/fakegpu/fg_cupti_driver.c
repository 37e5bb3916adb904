/*
 * fg_cupti_driver.c - the driver's side of the fake CUPTI interface
 * (fg_cupti_hooks.h): fakegpu_cupti_attach, the reporting helpers the
 * entry points call when a CUPTI is attached, and the poll/release
 * functions CUPTI uses to learn the final times of ops whose end was not
 * known when they were enqueued (ops behind host functions or resolver
 * ops of the seam).
 *
 * Correlation: an API call that enqueues one op gets its correlation id
 * lazily, when the op is reported (fg_submit); cuGraphLaunch and
 * cuMemcpyBatchAsync take one up front for all their ops (a thread-local
 * scope); synchronising
 * calls take one on entry.  Calls recorded into a capture get none.
 */
#include "fg_internal.h"

const struct fg_cupti_hooks *fg_cupti_hooks_p;

/* The graph launch in progress on this thread, if any. */
static __thread struct {
    uint32_t corr, graph_id;
    uint64_t node_id;
} fg_cupti_scope;

static void fg_cupti_poll(void **handles, size_t n, int64_t *start_ns, int64_t *end_ns)
{
    FG_LOCK();
    fg_progress();
    for (size_t i = 0; i < n; i++) {
        fg_op *op = handles[i];
        if (op && op->resolved) {
            start_ns[i] = op->start_ns;
            end_ns[i] = op->end_ns;
            fg_op_unref(op);
            handles[i] = NULL;
        }
    }
    FG_UNLOCK();
}

static void fg_cupti_release(void **handles, size_t n)
{
    FG_LOCK();
    for (size_t i = 0; i < n; i++)
        if (handles[i])
            fg_op_unref(handles[i]);
    FG_UNLOCK();
}

static const struct fg_cupti_driver fg_cupti_driver_table = {
    .abi = FG_CUPTI_ABI,
    .poll = fg_cupti_poll,
    .release = fg_cupti_release,
    .node_id = fg_graph_node_id,
    .graph_id = fg_graph_id,
    .exec_id = fg_graph_exec_id,
};

__attribute__((visibility("default"))) const struct fg_cupti_driver *
fakegpu_cupti_attach(const struct fg_cupti_hooks *hooks)
{
    if (hooks && hooks->abi != FG_CUPTI_ABI)
        return NULL;
    __atomic_store_n(&fg_cupti_hooks_p, hooks, __ATOMIC_RELEASE);
    return &fg_cupti_driver_table;
}

void fg_cupti_op_locked(const struct fg_cupti_hooks *h, fg_stream *s, fg_op *op)
{
    const fg_desc *d = &op->d;
    struct fg_cupti_op r = {0};
    fg_op_kind kind = d->ext_copy ? FG_OP_COPY : d->kind; /* a copy-engine collective's copy */
    switch (kind) {
    case FG_OP_KERNEL:
    case FG_OP_EXTERNAL: /* resolver ops (fake NCCL kernels) keep their geometry */
        r.kind = FG_CUPTI_OP_KERNEL;
        for (int i = 0; i < 3; i++) {
            r.grid[i] = d->u.launch.grid[i];
            r.block[i] = d->u.launch.block[i];
        }
        r.dynamic_smem = d->u.launch.shmem;
        r.cooperative = d->u.launch.coop;
        break;
    case FG_OP_COPY:
        r.kind = FG_CUPTI_OP_MEMCPY;
        r.bytes = (uint64_t)d->u.copy.width * d->u.copy.height * d->u.copy.depth;
        r.src_mem = d->u.copy.src_mem;
        r.dst_mem = d->u.copy.dst_mem;
        break;
    case FG_OP_MEMSET:
        r.kind = FG_CUPTI_OP_MEMSET;
        r.bytes = (uint64_t)d->u.memset.width * d->u.memset.elsize * d->u.memset.height;
        r.value = d->u.memset.value;
        break;
    default: return; /* markers, host functions, frees: no activity record */
    }
    r.name = d->name;
    r.correlation_id = fg_cupti_scope.corr ? fg_cupti_scope.corr : h->api_call();
    r.graph_id = fg_cupti_scope.graph_id;
    r.graph_node_id = fg_cupti_scope.node_id;
    r.device_id = (uint32_t)s->ctx->device;
    r.context_id = (uint32_t)s->ctx->id;
    r.stream_id = (uint32_t)s->id;
    if (op->resolved) {
        r.resolved = true;
        r.start_ns = op->start_ns;
        r.end_ns = op->end_ns;
    } else {
        fg_op_ref(op); /* handed to CUPTI if it keeps the record */
        r.handle = op;
    }
    if (!h->op(&r) && r.handle)
        fg_op_unref(op);
}

uint32_t fg_cupti_sync_begin_slow(const struct fg_cupti_hooks *h, int64_t *enter_ns)
{
    *enter_ns = fg_now();
    return h->api_call();
}

void fg_cupti_sync_end(uint32_t corr, int64_t enter_ns, fg_cupti_sync_type type, const fg_ctx *c,
                       uint32_t stream_id, uint32_t event_id)
{
    const struct fg_cupti_hooks *h = fg_cupti();
    if (!corr || !h)
        return;
    struct fg_cupti_sync r = {
        .type = type,
        .correlation_id = corr,
        .context_id = c ? (uint32_t)c->id : FG_CUPTI_NA,
        .stream_id = stream_id,
        .event_id = event_id,
        .enter_ns = enter_ns,
        .exit_ns = fg_now(),
    };
    h->sync(&r);
}

void fg_cupti_graph_begin(const struct fg_cupti_hooks *h, uint32_t graph_id)
{
    fg_cupti_scope.corr = h->api_call();
    fg_cupti_scope.graph_id = graph_id;
    fg_cupti_scope.node_id = 0;
}

void fg_cupti_graph_node(uint64_t node_id)
{
    fg_cupti_scope.node_id = node_id;
}

void fg_cupti_batch_begin(const struct fg_cupti_hooks *h)
{
    fg_cupti_graph_begin(h, 0); /* graph id 0: no graph */
}

void fg_cupti_batch_end(void)
{
    fg_cupti_graph_end();
}

void fg_cupti_graph_end(void)
{
    fg_cupti_scope.corr = 0;
    fg_cupti_scope.graph_id = 0;
    fg_cupti_scope.node_id = 0;
}
