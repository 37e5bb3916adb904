/*
 * Internal interface of libcutrace.so. Everything here is hidden; the only
 * exported names are the interposed entry points (CT_EXPORT).
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

/* process.c: installs the fatal-signal handlers once recording is on. */
void ct_process_started(void);

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

/* capture.c: on-demand capture windows (CUTRACE_START, CUTRACE_DURATION,
 * `cutrace start|stop PID`). The state recording starts in (ON/PAUSED). */
int ct_capture_initial_state(void);
/* Called after recording started (after fork too); polls the control file
 * from the writer thread. */
void ct_capture_started(int after_fork);
/* 1 when a GPU timestamp lies in a capture window (CUPTI delivers activity
 * of the whole process; records outside the windows are dropped). */
int ct_capture_contains(uint64_t ns);
/* 1 when recording goes by windows (a paused start or CUTRACE_DURATION). */
int ct_capture_windowed(void);

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

/* meta.c: the process metadata written first in every trace. */
struct ct_meta_kv;
size_t ct_meta_process(struct ct_meta_kv *kv, size_t max, char *strbuf, size_t strbuf_len);
/* Launcher identity for the file name. */
struct ct_launcher {
    char job[64];
    char host[64];
    long rank, local_rank, world_size; /* -1 when unknown */
};
void ct_launcher_detect(struct ct_launcher *l);

/*
 * The run this process belongs to (metadata run_id and run_id_source;
 * README "Runs"), first that applies:
 *   1. CUTRACE_RUN_ID as `cutrace run` or the user set it ("cutrace");
 *   2. the launch's own identity, shared by every rank of one launch and
 *      new for the next: Slurm's job and step ("slurm-JOB.STEP"), PMIx's
 *      namespace (Open MPI 5, "pmix-NS"), Open MPI 4's job ("ompi-ID");
 *   3. the "auto-..." identity a traced ancestor exported ("inherited");
 *   4. a new one ("auto"), which ct_run_id_export puts in the environment
 *      so that the processes this one starts (torchrun's ranks, a
 *      launcher's children) share it.
 * Writes at most CT_RUN_ID_MAX bytes to out.
 */
void ct_run_identity(char *out, size_t n, const char **source);
/* At load (our constructor, before main): exports a new "auto-..."
 * CUTRACE_RUN_ID when rule 4 applies. */
void ct_run_id_export(void);

#endif
