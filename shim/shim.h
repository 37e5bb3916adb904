/*
 * Internal interface of libcutrace.so: the shim's state and the shape of
 * every wrapper (init.c). Everything here is hidden; the only exported
 * names are the interposed entry points (CT_EXPORT). The other parts have
 * their own headers: capture.h (windows), meta.h (a process's metadata and
 * run identity), process.h (fatal signals), and one per API family.
 *
 * Every wrapper follows one shape: if recording is off or this thread is
 * already inside cutrace (ct_tls_guard), call the real function and return;
 * otherwise enter (guard, errno saved, clock), call the real function, read
 * the clock, append one record, leave (errno restored). Nothing on that path
 * locks, allocates or makes a syscall of ours.
 */
#ifndef CT_SHIM_H
#define CT_SHIM_H

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "src/config.h"
#include "src/recorder.h"

/* The validated CUTRACE_* settings (filled by ct_shim_init). */
extern struct ct_config ct_cfg;

#define CT_EXPORT __attribute__((visibility("default")))

/*
 * For code on the dlsym path: sanitizer runtimes call dlsym while they
 * initialise, before their shadow memory exists, so that path must not be
 * instrumented in sanitizer builds (it is plain in normal builds).
 */
#define CT_NO_SANITIZE __attribute__((no_sanitize("address", "undefined", "thread")))

enum ct_shim_state {
    CT_SHIM_UNINIT = 0,
    CT_SHIM_INITING = 1,
    CT_SHIM_ON = 2,
    CT_SHIM_OFF = 3,    /* bad configuration, no file, or stopped: the job runs untouched */
    CT_SHIM_FORKED = 4, /* a forked child that has not recorded yet: its own trace at first use */
    CT_SHIM_PAUSED = 5, /* recorder running, outside a capture window: calls pass through */
};

extern atomic_int ct_shim_state;
/* ON or PAUSED: a trace is open. */
static inline int ct_shim_live(void)
{
    int s = atomic_load(&ct_shim_state);
    return s == CT_SHIM_ON || s == CT_SHIM_PAUSED;
}

/* The process that started recording (getpid at start, and in a forked
 * child at fork): a wrapper running in a vfork child, which shares our
 * memory, sees another pid and must leave the recorder alone. */
extern pid_t ct_shim_pid;
/* CLOCK_MONOTONIC ns when this image was loaded or forked (0 unknown) */
extern int64_t ct_shim_start_mono_ns;
static inline int ct_shim_in_vfork_child(void)
{
    return ct_shim_pid && (pid_t)syscall(SYS_getpid) != ct_shim_pid;
}

/* Slow path of ct_shim_recording(): the first event of the process. */
int ct_shim_init(void);

/* 1 when this call should be recorded. Starts the recorder at the first event. */
static inline int ct_shim_recording(void)
{
    if (__builtin_expect(ct_tls_guard, 0))
        return 0;
    int s = atomic_load_explicit(&ct_shim_state, memory_order_acquire);
    if (__builtin_expect(s == CT_SHIM_ON, 1))
        return 1;
    if (s == CT_SHIM_UNINIT || s == CT_SHIM_FORKED)
        return ct_shim_init();
    return 0;
}

/* Stops recording for good in this image: GPU timing collected, footer
 * written (exit, _exit, exec). Idempotent. */
void ct_shim_finish(void);

/*
 * The environment variable an exec'ed image learns its lineage from: the
 * pid of its nearest ancestor that made a CUDA or NCCL call. The exec and
 * posix_spawn wrappers add it to a new image's environment (when it holds
 * LD_PRELOAD and not the variable already); the shim reads it at load.
 */
#define CT_GPU_ANCESTOR_VAR "CUTRACE_GPU_ANCESTOR"

/* init.c: the pid of this process when it made a CUDA or NCCL call, else
 * of its nearest ancestor that did, else 0. Reads shared memory only:
 * callable in a vfork child. */
pid_t ct_shim_gpu_lineage(void);

/*
 * 1 when a call must simply go through (inside cutrace, paused, off) -- the
 * wrappers' first test, kept free of calls so that path is a tail call.
 * 0 when it may have to be recorded: ct_shim_recording() then decides
 * (and starts recording at the process's first event).
 */
static inline int ct_shim_passthrough(void)
{
    if (ct_tls_guard)
        return 1;
    int s = atomic_load_explicit(&ct_shim_state, memory_order_acquire);
    return s == CT_SHIM_PAUSED || s == CT_SHIM_OFF || s == CT_SHIM_INITING;
}

/*
 * A span being recorded by the calling thread. errno is not saved here: the
 * steady-state path touches nothing that sets it, and every slow path that
 * can (first use of a thread, stream or kernel; symbol resolution) saves and
 * restores it itself (CT_ERRNO_SAVE/RESTORE), so the job sees the errno the
 * real call left.
 */
struct ct_span {
    uint64_t t0;
};

static inline void ct_span_enter(struct ct_span *sp)
{
    ct_tls_guard = 1;
    sp->t0 = ct_clock_now();
}

static inline void ct_span_leave(struct ct_span *sp)
{
    (void)sp;
    ct_tls_guard = 0;
}

#define CT_ERRNO_SAVE    int ct_saved_errno_ = errno
#define CT_ERRNO_RESTORE (errno = ct_saved_errno_)

/* Correlation ids: unique in the process without a shared counter. */
extern __thread uint64_t ct_tls_corr __attribute__((tls_model("initial-exec")));
uint64_t ct_corr_slow(void);
static inline __attribute__((always_inline)) uint64_t ct_next_corr(void)
{
    uint64_t c = ct_tls_corr;
    if (__builtin_expect(c == 0, 0))
        c = ct_corr_slow();
    ct_tls_corr = c + 1;
    return c;
}

#endif
