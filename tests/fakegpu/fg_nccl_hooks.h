/*
 * fg_nccl_hooks.h - the internal interface between the simulated driver
 * (libcuda.so.1) and the fake NCCL (libnccl.so.2).
 *
 * The fake NCCL launches every collective as a kernel named ncclDevKernel_*
 * through cuLaunchKernelEx, like real NCCL.  Such a launch is an ordinary
 * 5 us kernel unless (a) a fake NCCL has attached with fakegpu_nccl_attach()
 * and (b) kernelParams[0] points to a struct fg_nccl_launch with the right
 * magic: then the driver enqueues it as a resolver op (FG_OP_EXTERNAL) whose
 * end the fake NCCL decides, by calling hooks->resolve(token, start, &end)
 * from the scheduler's progress passes until it returns true.
 *
 * Rules for the hook: it runs WITH the driver's lock held, on whatever
 * thread advances the scheduler (API callers, the driver's worker).  It may
 * take the fake NCCL's own lock but must never block, call the CUDA API or
 * call a profiler plugin.  Lock order: driver lock -> NCCL state lock; the
 * fake NCCL therefore never calls the driver while holding its own lock.
 *
 * Plain C types only: neither cuda.h nor nccl.h is included.
 */
#ifndef FG_NCCL_HOOKS_H
#define FG_NCCL_HOOKS_H

#include <stdbool.h>
#include <stdint.h>

#define FG_NCCL_ABI           1
#define FG_NCCL_LAUNCH_MAGIC  0x314b4c43434e4746ull /* "FGNCCLK1" little-endian */
#define FG_NCCL_KERNEL_PREFIX "ncclDevKernel_"

/* What kernelParams[0] of an ncclDevKernel_* launch points to. */
struct fg_nccl_launch {
    uint64_t magic; /* FG_NCCL_LAUNCH_MAGIC */
    uint64_t token; /* the fake NCCL's name for this launch; never 0 */
};

struct fg_nccl_hooks {
    uint32_t abi; /* FG_NCCL_ABI */
    /* start_ns: the kernel's start in virtual time (CLOCK_MONOTONIC ns),
     * the same on every call for one token.  Returns true and sets *end_ns
     * (>= start_ns) once the end is known; false to be asked again.  An
     * unknown token must return true (end = start). */
    bool (*resolve)(uint64_t token, int64_t start_ns, int64_t *end_ns);
};

/* Exported by libcuda.so.1 with default visibility.  hooks non-NULL
 * attaches (replacing an earlier table), NULL detaches.  Returns
 * FG_NCCL_ABI, or 0 if hooks->abi is not FG_NCCL_ABI. */
typedef uint32_t (*fg_nccl_attach_fn)(const struct fg_nccl_hooks *hooks);

/* Exported by libcuda.so.1 (default visibility): a copy-engine collective.
 * The calling thread's next device-to-device copy that is not captured
 * (cuMemcpyDtoDAsync and its kin; its device ends need not lie inside
 * their allocations, since no byte moves) becomes a resolver op
 * decided by hooks->resolve(token, ...) like a launch carrying that token:
 * no bytes move, and an attached CUPTI is told of a device-to-device
 * memcpy with the resolved times.  The arming is consumed by that copy;
 * fakegpu_nccl_ce_arm(0) disarms. */
typedef void (*fg_nccl_ce_arm_fn)(uint64_t token);

#endif
