/*
 * Lazy, safe initialisation of the shim. Our constructor may run after other
 * libraries have already called wrapped functions, so nothing depends on it:
 * the first wrapped call that should be recorded runs ct_shim_init(). A bad
 * CUTRACE_* value or a failure to create the trace prints one stderr line and
 * turns recording off; the job itself is never touched.
 */
#include "shim/shim.h"
#include "shim/capture.h"
#include "shim/meta.h"
#include "shim/process.h"

#include <limits.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shim/gpu.h"
#include "shim/health.h"
#include "shim/nccl_steps.h"
#include "shim/pm_sampling.h"
#include "shim/io.h"
#include "shim/nvtx.h"
#include "src/config.h"
#include "src/live.h"
#include "src/ownfd.h"
#include "src/salvage.h"

atomic_int ct_shim_state;
int ct_gpu_mode;
int ct_launch_fast;

/* Whether launches may take their fast path (shim/cuda_launch.c): GPU
 * timing off, no stack per launch, the cycle counter as the clock. Set
 * wherever the GPU timing mode is. */
static void launch_path_update(void)
{
    ct_launch_fast = ct_gpu_mode == CT_GPU_OFF && ct_cfg.stacks != 2 && ct_clock_tsc;
}
struct ct_config ct_cfg;
__thread uint64_t ct_tls_corr __attribute__((tls_model("initial-exec")));
static atomic_uint g_thread_index;
pid_t ct_shim_pid;
int64_t ct_shim_start_mono_ns;

/*
 * Every process has a page of its own, mapped shared: at load for an
 * image, at fork for a child (before the child can fork again), so a
 * process's descendants see its page, and its ancestors' pages, at the same
 * addresses, live. A page says whether its process made a CUDA or NCCL call
 * (set at the call), which decides whether a descendant that made none is
 * worth a trace (writer_file.c). The image's first process's page also
 * counts its forked descendants that ended without a trace of their own
 * (their records never made them worth one, CUTRACE_HOST_TRACE_KB), so the
 * image says so in its trace. An exec ends the pages: the new image learns
 * from CUTRACE_GPU_ANCESTOR, which the exec wrappers put in its environment
 * (process.c). A page that could not be mapped is NULL (nothing is set or
 * counted there; the chain above it is cut).
 */
struct family_page {
    pid_t pid;                          /* whose page it is */
    struct family_page *up;             /* the page of the process this one was forked from */
    _Atomic int gpu;                    /* that process made a CUDA or NCCL call (ct_corr_slow) */
    _Atomic uint64_t children, records; /* the image's first process only */
};
static struct family_page *g_self;  /* this process's */
static struct family_page *g_up;    /* its parent's, when it was forked */
static struct family_page *g_image; /* the image's first process's */
static pid_t g_env_ancestor;        /* CUTRACE_GPU_ANCESTOR at load, 0 when none */

static void shim_atfork_child(void);
static void stderr_take(void);

static struct family_page *page_new(struct family_page *up)
{
    void *m = mmap(NULL, sizeof(struct family_page), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    struct family_page *p = m;
    p->pid = (pid_t)syscall(SYS_getpid);
    p->up = up;
    return p;
}

/* CLOCK_MONOTONIC now: when this image started (metadata start_mono_ns,
 * what `cutrace goodput` counts start-up from). The constructor runs before
 * main and before the job's own libraries' constructors have done much. */
static int64_t mono_now(void)
{
    struct timespec t;
    if (clock_gettime(CLOCK_MONOTONIC, &t) != 0)
        return 0;
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* At load, before the image can fork: its page, our pid (what tells a
 * vfork child, which runs no fork handlers, from us), the fork handler, and
 * what standard error is (say()). */
__attribute__((constructor)) static void family_page(void)
{
    ct_shim_pid = (pid_t)syscall(SYS_getpid);
    ct_shim_start_mono_ns = mono_now();
    ct_run_id_export(); /* before main: the job's own processes inherit it */
    stderr_take();
    pthread_atfork(ct_recorder_fork_prepare, ct_recorder_fork_done, shim_atfork_child);
    long long v;
    const char *a = getenv(CT_GPU_ANCESTOR_VAR);
    if (a && ct_parse_int(a, 1, INT32_MAX, &v) == 0)
        g_env_ancestor = (pid_t)v;
    g_self = g_image = page_new(NULL);
}

/* 1 when this process forked off the image's first process. */
static int family_member(void)
{
    return g_image && g_image->pid != (pid_t)syscall(SYS_getpid);
}

pid_t ct_shim_gpu_lineage(void)
{
    if (g_self && atomic_load(&g_self->gpu))
        return g_self->pid;
    int depth = 0;
    for (const struct family_page *p = g_up; p && depth < 4096; p = p->up, depth++)
        if (atomic_load(&p->gpu))
            return p->pid;
    return g_env_ancestor;
}

/* For the writer: an ancestor (not this process) made a CUDA or NCCL call. */
static int ancestor_gpu(void)
{
    int depth = 0;
    for (const struct family_page *p = g_up; p && depth < 4096; p = p->up, depth++)
        if (atomic_load(&p->gpu))
            return 1;
    return g_env_ancestor != 0;
}

uint64_t ct_corr_slow(void)
{
    /* a thread's first CUDA or NCCL call (only their wrappers take
     * correlation ids): what this process's descendants learn from */
    if (g_self && !atomic_load_explicit(&g_self->gpu, memory_order_relaxed))
        atomic_store(&g_self->gpu, 1);
    /* 24 bits of thread index, 40 bits of per-thread sequence. */
    uint64_t idx = atomic_fetch_add(&g_thread_index, 1) + 1;
    return (idx & 0xffffff) << 40 | 1;
}

static const char *env_get(const char *name)
{
    return getenv(name);
}

static void recorder_meta_str(const char *key, const char *value)
{
    uint64_t f[CT_META_NFIELDS] = {ct_clock_now(), CT_SCOPE_RECORDER, 0, ct_intern(key),
                                   ct_intern(value)};
    ct_emit(CT_REC_META, 0, f, CT_META_NFIELDS);
}

static void recorder_meta(const char *key, uint64_t v)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
    recorder_meta_str(key, buf);
}

/*
 * GPU timing as configured, falling back from CUPTI to events when CUPTI is
 * missing or held by another profiler. The outcome and any reason are in the
 * trace (recorder metadata and an error record), which `cutrace info` shows.
 */
static void start_gpu_timing(int pref)
{
    char why[256] = "";
    int mode = CT_GPU_OFF;
    if (pref == 1) {
        if (ct_cupti_start(why, sizeof(why)) == 0) {
            mode = CT_GPU_CUPTI;
        } else {
            recorder_meta_str("gpu_timing_fallback", why);
            ct_pm_cupti_refused(why); /* PM sampling is not taken either: says why */
            ct_emit_error(why, 0);
            pref = 2;
        }
    }
    if (pref == 2) {
        char why2[256] = "";
        if (ct_events_start(why2, sizeof(why2)) == 0) {
            mode = CT_GPU_EVENTS;
        } else {
            ct_emit_error(why2, 0);
        }
    }
    static const char *const names[] = {"off", "cupti", "events"};
    recorder_meta_str("gpu_timing", names[mode]);
    ct_gpu_mode = mode;
    ct_live_gpu_mode((unsigned)mode); /* a salvage: GPU times still queued there died too */
    launch_path_update();
}

void ct_shim_finish(void)
{
    if (!ct_shim_live())
        return;
    ct_tls_guard = 1;
    ct_nvtx_finish();   /* NVTX counters, while the trace is open (also on _exit/exec) */
    ct_io_finish();     /* I/O spans skipped under CUTRACE_IO_MIN_NS (also on _exit/exec) */
    ct_health_finish(); /* the health sampler's cost */
    ct_nsteps_finish(); /* raw NCCL proxy steps recorded and not (CUTRACE_NCCL_STEPS) */
    uint64_t lookups, wrapped;
    ct_procaddr_stats(&lookups, &wrapped);
    recorder_meta("cuGetProcAddress_lookups", lookups);
    recorder_meta("cuGetProcAddress_wrapped", wrapped);
    recorder_meta("driver_symbol_lookups", ct_driver_sym_lookups());
    if (g_image && !family_member() && atomic_load(&g_image->children)) {
        recorder_meta("forked_children_untraced", atomic_load(&g_image->children));
        recorder_meta("forked_records_untraced", atomic_load(&g_image->records));
    }
    /* GPU intervals still in flight are collected before the file closes. */
    if (ct_gpu_mode == CT_GPU_CUPTI) {
        ct_cupti_stop();
        if (ct_capture_windowed()) /* what CUPTI delivered while paused: ~0 */
            recorder_meta("cupti_outside_windows", ct_cupti_outside());
    } else if (ct_gpu_mode == CT_GPU_EVENTS)
        ct_events_stop(2000);
    ct_gpu_mode = CT_GPU_OFF;
    atomic_store(&ct_shim_state, CT_SHIM_OFF);
    ct_recorder_stop(5000);
    struct ct_recorder_stats st;
    ct_recorder_stats(&st);
    if (!st.file_created && family_member()) {
        atomic_fetch_add(&g_image->children, 1);
        atomic_fetch_add(&g_image->records, st.records);
    }
}

static void shim_atexit(void)
{
    ct_shim_finish();
}

/* A forked child has no writer thread and must not write the parent's file:
 * it gets its own trace at its first event (ct_shim_recording). */
static void shim_atfork_child(void)
{
    ct_shim_pid = (pid_t)syscall(SYS_getpid); /* a fork, not a vfork: the child is itself */
    g_up = g_self;
    g_self = page_new(g_up);
    ct_shim_start_mono_ns = mono_now();
    ct_recorder_fork_done();
    ct_own_after_fork(); /* no thread of ours is opening or moving a descriptor here */
    if (ct_shim_live()) {
        atomic_store(&ct_shim_state, CT_SHIM_FORKED);
        /* the parent's trace descriptor goes now, so nothing the child does
         * before it records (close loops, dup2, exec) meets it */
        ct_recorder_drop_inherited();
    }
}

/*
 * Standard error as it was when the image was loaded (device and inode),
 * or, when the first recorded call came before our constructor, at that
 * call. A job may close descriptor 2 and open a file of its own that takes
 * the number (daemons, launchers, jobs that log to a file do): from then on
 * our lines go nowhere, rather than into the job's file.
 */
static struct {
    int taken, open; /* looked at; descriptor 2 was open then */
    uint64_t dev, ino;
} g_stderr;

static void stderr_take(void)
{
    if (g_stderr.taken)
        return;
    int saved = errno;
    struct stat st;
    g_stderr.open = fstat(2, &st) == 0;
    if (g_stderr.open) {
        g_stderr.dev = (uint64_t)st.st_dev;
        g_stderr.ino = (uint64_t)st.st_ino;
    }
    g_stderr.taken = 1;
    errno = saved;
}

/* Descriptor 2 is still the standard error the image started with. */
static int stderr_same(void)
{
    struct stat st;
    return g_stderr.open && fstat(2, &st) == 0 && (uint64_t)st.st_dev == g_stderr.dev &&
           (uint64_t)st.st_ino == g_stderr.ino;
}

static void say(const char *fmt, const char *a, const char *b)
{
    /* One line, straight to fd 2 (no stdio buffers of the job's), and only
     * while fd 2 is the standard error we started with. A job swapping its
     * descriptor 2 between our check and our write (microseconds) is not
     * guarded against. */
    int saved = errno;
    stderr_take();
    if (!stderr_same()) {
        errno = saved;
        return;
    }
    char line[768];
    int n = snprintf(line, sizeof(line), fmt, a, b);
    if (n > 0) {
        size_t len = (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
        ssize_t w = write(2, line, len);
        (void)w;
    }
    errno = saved;
}

static char g_trace_path[PATH_MAX + 256];

/*
 * The writer could not write the trace (disk full, file size limit, I/O
 * error): say so once, and stop recording so the job pays nothing more.
 * What was written is cut back to its last whole frame and decodes.
 */
static void writer_failed(int err)
{
    struct ct_recorder_stats st;
    ct_recorder_stats(&st);
    if (!st.file_created) /* deferred creation failed: nothing was written */
        say("cutrace: cannot record to %s: %s; recording is off\n", g_trace_path, strerror(-err));
    else if (err == -EBADF)
        say("cutrace: the job closed or replaced the descriptor of %s and the file cannot be "
            "reopened%s; recording stopped, the trace up to here decodes\n",
            g_trace_path, "");
    else
        say("cutrace: writing %s failed (%s); recording stopped, the trace up to here decodes\n",
            g_trace_path, strerror(-err));
    atomic_store(&ct_shim_state, CT_SHIM_OFF);
}

/* A suspected NCCL hang (CUTRACE_HANG_S): one line, with the flight
 * recorder's file when there is one. */
static void writer_hang(const char *what, const char *path)
{
    say("cutrace: %s%s\n", what,
        path && *path ? "; the flight recorder wrote its window" : "; see the trace");
}

/*
 * The job's earlier processes that died without finishing their traces
 * (a SIGKILLed attempt's ranks, before this restarted one): completed from
 * their live mappings, on a thread of their own so that the job never
 * waits (src/salvage.h: a live process's mapping is never touched, every
 * descriptor is one of src/ownfd.h's). A process that ends first leaves the
 * rest to whoever comes next (`cutrace run`, any cutrace command, the next
 * image).
 */
static void *salvage_earlier(void *arg)
{
    (void)arg;
    ct_tls_guard = 1; /* our I/O is not the job's */
    ct_salvage_dir(ct_cfg.output, NULL, NULL, NULL);
    return NULL;
}

/* Once this image has a trace (a process worth one: a shell wrapper or a
 * version probe never scans the folder). Any thread. */
static void start_salvage(void)
{
    static atomic_int started;
    if (ct_cfg.buffers == CT_LIVE_PRIVATE || ct_shim_in_vfork_child() ||
        atomic_exchange(&started, 1))
        return;
    sigset_t all, old;
    sigfillset(&all);
    pthread_attr_t a;
    if (pthread_attr_init(&a) != 0)
        return;
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    pthread_sigmask(SIG_BLOCK, &all, &old); /* the job's signals are for the job's threads */
    if (pthread_create(&t, &a, salvage_earlier, NULL) != 0) {
        /* nothing to do: a later image or `cutrace` salvages them */
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&a);
}

/*
 * Creates this process's trace and starts its writer. after_fork: we are a
 * forked child of a recording process; its recorder state is reused
 * (strings) and reset (threads, file), and CUDA is not usable here.
 */
static int start_recording(int after_fork)
{
    if (!after_fork) {
        struct ct_config cfg;
        char err[512];
        ct_config_defaults(&cfg);
        if (ct_config_from_env(&cfg, env_get, err, sizeof(err)) != 0) {
            say("cutrace: %s; recording is off%s\n", err, "");
            return -1;
        }
        ct_cfg = cfg;
        ct_clock_test_offset_ns = cfg.test_clock_offset_ns;
    }
    struct ct_launcher l;
    ct_launcher_detect(&l);
    char rank[32];
    if (l.rank >= 0)
        snprintf(rank, sizeof(rank), "%ld", l.rank);
    else
        snprintf(rank, sizeof(rank), "NA");
    static struct ct_meta_kv meta[256];
    static char strbuf[64 * 1024];
    size_t nmeta = ct_meta_process(meta, 256, strbuf, sizeof(strbuf));
    struct ct_recorder_config rc = {
        .ring_bytes = ct_cfg.buffer_kb * 1024,
        .zstd_level = ct_cfg.zstd_level,
        .flush_ms = ct_cfg.flush_ms,
        .features = CT_FEAT_CUDA | CT_FEAT_NCCL | CT_FEAT_IO | CT_FEAT_NVTX,
        .pid = (uint32_t)getpid(),
        .clock = ct_cfg.clock,
        .max_bytes = (uint64_t)ct_cfg.max_mb << 20,
        .max_stop = ct_cfg.max_stop,
        .flight_ns = (uint64_t)ct_cfg.flight_s * 1000000000u,
        .flight_bytes = (uint64_t)ct_cfg.flight_mb << 20,
        .hang_ns = (uint64_t)ct_cfg.hang_s * 1000000000u,
        .defer_bytes = (uint64_t)ct_cfg.host_trace_kb << 10,
        .buffers = ct_cfg.buffers,
    };
    ct_recorder_lineage(ancestor_gpu);
    char *path = g_trace_path;
    int r = -1;
    ct_writer_failed = writer_failed; /* a deferred file is created on the writer thread */
    ct_writer_hang = writer_hang;
    /* an exec'ed image (not a forked child: the image's first process
     * scans for the family) salvages its dead predecessors once it has a
     * trace */
    ct_on_file_created = after_fork ? NULL : start_salvage;
    /* gen counts images of this pid (exec keeps the pid): the first name not
     * taken yet is ours. O_EXCL makes that race-free. */
    for (unsigned gen = 0; gen < 64; gen++) {
        snprintf(path, sizeof(g_trace_path), "%s/%s-%s-r%s-p%d-%u.cutrace", ct_cfg.output, l.job,
                 l.host, rank, (int)getpid(), gen);
        rc.path = path;
        rc.gen = gen;
        r = after_fork ? ct_recorder_restart_after_fork(&rc, meta, nmeta)
                       : ct_recorder_start(&rc, meta, nmeta);
        if (r != -EEXIST)
            break;
    }
    if (r != 0) {
        say("cutrace: cannot record to %s: %s; recording is off\n", path, strerror(-r));
        return -1;
    }
    ct_nsteps_start(ct_cfg.nccl_steps_err, ct_cfg.nccl_steps_err[0] ? 0 : ct_cfg.nccl_steps);
    if (ct_health_start(after_fork) != 0) /* counters on the writer thread (CUTRACE_HEALTH_MS) */
        ct_emit_error("cutrace: no writer slot for the health sampler; no counters", -ENOSPC);
    if (after_fork) {
        /* CUDA cannot be used in a child forked after cuInit: host spans only */
        ct_gpu_mode = CT_GPU_OFF;
        launch_path_update();
        return 0;
    }
    if (ct_cuda_record_init() != 0)
        ct_emit_error("cutrace: no memory for the CUDA caches; names and streams resolve slowly",
                      -ENOMEM);
    start_gpu_timing(ct_cfg.gpu_timing);
    ct_process_started();
    atexit(shim_atexit);
    return 0;
}

int ct_shim_init(void)
{
    int expected = atomic_load(&ct_shim_state);
    if ((expected != CT_SHIM_UNINIT && expected != CT_SHIM_FORKED) ||
        !atomic_compare_exchange_strong(&ct_shim_state, &expected, CT_SHIM_INITING)) {
        /* Another thread is initialising: this call goes unrecorded rather
         * than waiting (the shim never blocks the job). */
        return atomic_load(&ct_shim_state) == CT_SHIM_ON;
    }
    if (ct_shim_in_vfork_child()) {
        /* a vfork child shares our memory and runs on a borrowed stack
         * until it execs: nothing of ours may start there */
        atomic_store(&ct_shim_state, expected);
        return 0;
    }
    int after_fork = expected == CT_SHIM_FORKED;
    int saved = errno;
    stderr_take(); /* a call before our constructor: standard error is still the image's */
    int guard = ct_tls_guard;
    ct_tls_guard = 1; /* our own calls during init go straight through */
    int ok = start_recording(after_fork) == 0;
    int next = ok ? ct_capture_initial_state() : CT_SHIM_OFF;
    if (next == CT_SHIM_PAUSED && ct_gpu_mode == CT_GPU_CUPTI)
        ct_cupti_activities(0); /* until a window opens */
    atomic_store_explicit(&ct_shim_state, next, memory_order_release);
    if (ok) {
        ct_capture_started(after_fork);
        ct_nvtx_started(); /* thread names set before recording started */
    }
    ct_tls_guard = guard;
    errno = saved;
    return next == CT_SHIM_ON;
}

/*
 * CUDA_INJECTION64_PATH entry point: the driver calls it during cuInit. We
 * start recording there (the same lazy init as the first wrapped call);
 * returning nonzero tells the driver the injection succeeded.
 */
CT_EXPORT int InitializeInjection(void)
{
    if (atomic_load(&ct_shim_state) == CT_SHIM_UNINIT)
        ct_shim_init();
    return 1;
}
