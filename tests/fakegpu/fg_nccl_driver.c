/*
 * fg_nccl_driver.c - the driver's side of the fake NCCL interface
 * (fg_nccl_hooks.h): fakegpu_nccl_attach, and the conversion of an
 * ncclDevKernel_* launch that carries a token into a resolver op, and of a
 * device-to-device copy made while a copy-engine token is armed into one
 * (a copy-engine collective).
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

/* The token the calling thread armed for its next device-to-device copy. */
static __thread uint64_t fg_nccl_ce_token;

__attribute__((visibility("default"))) void fakegpu_nccl_ce_arm(uint64_t token)
{
    fg_nccl_ce_token = token;
}

bool fg_nccl_ce_pending(void)
{
    return fg_nccl_ce_token != 0 && __atomic_load_n(&fg_nccl_hooks_p, __ATOMIC_ACQUIRE);
}

void fg_nccl_copy_desc(fg_desc *d)
{
    uint64_t token = fg_nccl_ce_token;
    if (!token || !__atomic_load_n(&fg_nccl_hooks_p, __ATOMIC_ACQUIRE) || token > UINTPTR_MAX ||
        d->u.copy.src_mem != FG_CUPTI_MEM_DEVICE || d->u.copy.dst_mem != FG_CUPTI_MEM_DEVICE)
        return;
    fg_nccl_ce_token = 0; /* one copy per arming */
    d->kind = FG_OP_EXTERNAL;
    d->ext_copy = true;
    d->duration_ns = 0;
    d->resolve = fg_nccl_resolve;
    d->resolve_arg = (void *)(uintptr_t)token;
}
