/*
 * fg_nccl_driver.c - the driver's side of the fake NCCL interface
 * (fg_nccl_hooks.h): fakegpu_nccl_attach, and the conversion of an
 * ncclDevKernel_* launch that carries a token into a resolver op.
 * Never calls the fake NCCL except through hooks->resolve, under the lock.
 */
#include "fg_internal.h"
#include "fg_nccl_hooks.h"

#include <string.h>

static const struct fg_nccl_hooks *fg_nccl_hooks_p;

__attribute__((visibility("default"))) uint32_t
fakegpu_nccl_attach(const struct fg_nccl_hooks *hooks)
{
    if (hooks && (hooks->abi != FG_NCCL_ABI || !hooks->resolve))
        return 0;
    __atomic_store_n(&fg_nccl_hooks_p, hooks, __ATOMIC_RELEASE);
    return FG_NCCL_ABI;
}

static bool fg_nccl_resolve(int64_t start_ns, int64_t *end_ns, void *arg)
{
    const struct fg_nccl_hooks *h = __atomic_load_n(&fg_nccl_hooks_p, __ATOMIC_ACQUIRE);
    if (!h) { /* detached: the collective can no longer be decided */
        *end_ns = start_ns;
        return true;
    }
    return h->resolve((uint64_t)(uintptr_t)arg, start_ns, end_ns);
}

void fg_nccl_launch_desc(fg_desc *d, void **params)
{
    if (!__atomic_load_n(&fg_nccl_hooks_p, __ATOMIC_ACQUIRE) || !params || !params[0] ||
        strncmp(d->name, FG_NCCL_KERNEL_PREFIX, sizeof FG_NCCL_KERNEL_PREFIX - 1) != 0)
        return;
    struct fg_nccl_launch l;
    memcpy(&l, params[0], sizeof l);
    if (l.magic != FG_NCCL_LAUNCH_MAGIC || l.token == 0 || l.token > UINTPTR_MAX)
        return;
    d->kind = FG_OP_EXTERNAL;
    d->duration_ns = 0;
    d->resolve = fg_nccl_resolve;
    d->resolve_arg = (void *)(uintptr_t)l.token;
}
