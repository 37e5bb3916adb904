/*
 * The recording core: one per process. Threads append records to their own
 * ring (found through a thread-local pointer); a background writer thread
 * drains the rings, converts times, encodes chunks and writes one zstd frame
 * per chunk. Nothing on the append path locks, allocates or makes syscalls
 * except a thread's very first record, which maps its ring once.
 *
 * Lifecycle: ct_recorder_start() once (it creates the file and the writer),
 * ct_recorder_stop() at exit. Both are called from the shim's init/exit
 * paths, never from the hot path.
 */
#ifndef CT_RECORDER_H
#define CT_RECORDER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "src/clock.h"
#include "src/ring.h"
#include "src/strtab.h"

#define CT_MAX_RINGS 4096

struct ct_recorder_config {
    const char *path;         /* trace file to create (O_EXCL) */
    size_t ring_bytes;        /* per-thread ring, CUTRACE_BUFFER_KB */
    int zstd_level;           /* CUTRACE_ZSTD_LEVEL */
    unsigned flush_ms;        /* CUTRACE_FLUSH_MS: partial chunks at least this often */
    uint64_t features;        /* CT_FEAT_* for the header */
    uint32_t pid, gen;        /* for the header */
    uint32_t max_strings;     /* 0 = default */
    size_t string_bytes;      /* 0 = default */
    enum ct_clock_pref clock; /* CUTRACE_CLOCK */
    uint64_t max_bytes;       /* CUTRACE_MAX_MB in bytes, 0 = unbounded */
    int max_stop;             /* CUTRACE_MAX_POLICY=stop (default: drop the oldest frames) */
    uint64_t flight_ns;       /* CUTRACE_FLIGHT: keep this much in memory, write on request */
    uint64_t flight_bytes;    /* CUTRACE_FLIGHT_MB: memory bound of the flight recorder */
    uint64_t hang_ns;         /* CUTRACE_HANG_S: no NCCL completion for this long is a hang */
    /* CUTRACE_HOST_TRACE_KB in bytes: 0 creates the file at start; else it is
     * created at the first CUDA, NCCL or NVTX record, or once data I/O (not
     * the program's code, writer_file.c) moved this much (or the kept bytes
     * pass 4 MiB), and a process that ends before leaves none
     * (ct_recorder_stats: file_created 0); see ct_recorder_lineage */
    uint64_t defer_bytes;
    /* CUTRACE_BUFFERS (enum ct_live_where in src/live.h): where the rings
     * live; 0, the default, is a live mapping in /dev/shm, so that a SIGKILL
     * loses no record a thread finished (a salvage completes the trace) */
    int buffers;
};

/* Why a flight-recorder window is written (ct_recorder_flight_request). */
enum ct_flight_reason {
    CT_FLIGHT_SIGUSR2 = 1,
    CT_FLIGHT_DUMP_NOW = 2,
    CT_FLIGHT_HANG = 3,
    CT_FLIGHT_FATAL = 4,
};
/* Asks the writer to write the flight recorder's window out (no-op when
 * the flight recorder is off). Async-signal-safe. */
void ct_recorder_flight_request(int reason);

/*
 * Called from the writer thread when the flight recorder wrote a window
 * (path) for a suspected hang (what says why). NULL: nobody is told.
 */
extern void (*ct_writer_hang)(const char *what, const char *path);

/*
 * Called when this recorder's trace file is created (at start, or on the
 * writer thread once a deferred process is worth a trace). NULL: nobody
 * is told.
 */
extern void (*ct_on_file_created)(void);

/*
 * Called once, from the writer thread, when writing the trace failed (the
 * negative errno): the file was cut back to its last complete frame and
 * later records are counted as dropped. NULL: nobody is told.
 */
extern void (*ct_writer_failed)(int err);

/* One metadata key/value written in the first chunk, before any event. */
struct ct_meta_kv {
    unsigned scope; /* enum ct_meta_scope */
    uint64_t scope_id;
    const char *key;
    const char *value;
};

/*
 * Creates the file (0600, O_EXCL|O_NOFOLLOW|O_CLOEXEC; with defer_bytes only
 * once the process is worth a trace, see cfg), writes the header and a
 * metadata chunk from `meta`, and starts the writer. The file's descriptor
 * is one of src/ownfd.h's. Returns 0, or a negative errno (the file exists,
 * cannot be created, thread creation failed...). On failure nothing is left running and recording
 * stays off. Not thread-safe: the caller serialises (the shim's init does).
 */
int ct_recorder_start(const struct ct_recorder_config *cfg, const struct ct_meta_kv *meta,
                      size_t nmeta);

/*
 * Drains everything, writes the final clock pair and the footer, closes the
 * file. Waits at most timeout_ms for the writer. Idempotent. Returns 0 or
 * a negative errno of the first write failure seen during the run.
 */
int ct_recorder_stop(unsigned timeout_ms);

/* Asks the writer for a full pass (partial chunks included) and waits up
 * to timeout_ms for it. Returns 0, -ETIMEDOUT, or -ENODEV when not running. */
int ct_recorder_flush(unsigned timeout_ms);

/*
 * Async-signal-safe flush for fatal-signal and _exit paths: asks the writer
 * for a full pass and sleeps (nanosleep) up to timeout_ms for it, taking no
 * lock. Returns 0, -ETIMEDOUT, or -ENODEV when not running or called on the
 * writer thread itself. Writes no footer: the process may go on.
 */
int ct_recorder_flush_async(unsigned timeout_ms);
/* The same from a fatal signal's handler: the writer also records, as
 * process metadata "signal" (the number) at the time of this call, that
 * the process is being ended by sig (what `cutrace goodput` reads). */
int ct_recorder_flush_fatal(int sig, unsigned timeout_ms);

/*
 * From the handler of a signal whose default action is about to end the
 * process: records sig as ct_recorder_flush_fatal does, then has the
 * writer drain every ring, write the final clock pair and the footer, and
 * close the file (what ct_recorder_stop does, without its lock), and
 * sleeps up to timeout_ms for that. Records taken afterwards are lost.
 * Async-signal-safe, takes no lock; called again (another thread, another
 * signal) it waits for the same finish. Returns 0, -ETIMEDOUT, or -ENODEV
 * (no writer of this process's, or called on the writer thread).
 */
int ct_recorder_finish_signal(int sig, unsigned timeout_ms);

/*
 * In a forked child (only the forking thread survives): drops the parent's
 * rings and writer state, keeps the string table (its strings are redefined
 * in the new file), and starts recording to a new file with a new writer.
 * Returns 0 or a negative errno (recording then stays off in the child).
 */
int ct_recorder_restart_after_fork(const struct ct_recorder_config *cfg,
                                   const struct ct_meta_kv *meta, size_t nmeta);

/*
 * Where this process stands in its process tree, for a deferred file
 * (defer_bytes): ancestor_gpu() (called on the writer thread) says whether
 * an ancestor made a CUDA or NCCL call. Such a descendant (a data-loader
 * worker, forked or spawned) gets its file at its first byte of data I/O,
 * or when it stops if the ancestor's call came after its last record.
 * NULL: no ancestor did. Call before ct_recorder_start or
 * ..._restart_after_fork.
 */
void ct_recorder_lineage(int (*ancestor_gpu)(void));

/*
 * In a forked child, at fork (pthread_atfork child handler): closes the
 * child's copy of the parent's trace descriptor, when it still is that file.
 * Async-signal-safe.
 */
void ct_recorder_drop_inherited(void);

/* Periodic jobs of the writer thread: each registered function is called on
 * every pass (about every few ms), in registration order, with the
 * monotonic time: controls polled from outside (on-demand capture), health
 * sampling. Adding a function already registered does nothing. May be
 * called from any thread, before or after start (a slot is published
 * atomically). Returns 0, or -ENOSPC when CT_WRITER_TICKS are taken. */
#define CT_WRITER_TICKS 4
int ct_writer_tick_add(void (*fn)(uint64_t now_ns));

/* 1 while records are being taken. */
int ct_recorder_running(void);

/* Fork handlers (before fork; after it, in parent and child). In builds
 * with AddressSanitizer the forking thread waits, at most 100 ms, for the
 * writer to be past its start and between passes: GCC 12's ASan keeps no lock of its allocator
 * across fork (glibc's malloc does), and a child forked while the writer was
 * in malloc deadlocks at its first allocation of that size. No-ops in
 * other builds. */
void ct_recorder_fork_prepare(void);
void ct_recorder_fork_done(void);

/* Test hook: a paused writer drains nothing, so rings fill and drop. */
void ct_recorder_pause_writer(int paused);

/* Totals so far (writer's view). */
struct ct_recorder_stats {
    uint64_t chunks, records, dropped, bytes_written;
    int write_error;  /* first negative errno from writing, 0 if none */
    int file_created; /* 0: creation was deferred and never happened (no file) */
};
void ct_recorder_stats(struct ct_recorder_stats *s);

/* The process-wide string table (valid once started). */
extern struct ct_strtab ct_strings;
static inline uint32_t ct_intern(const char *s)
{
    return ct_strtab_intern_cstr(&ct_strings, s);
}

/*
 * Set on threads that belong to the recorder (the writer) and by the shim
 * around its own work: wrappers seeing it pass straight through.
 */
extern __thread int ct_tls_guard __attribute__((tls_model("initial-exec")));

extern __thread struct ct_ring *ct_tls_ring __attribute__((tls_model("initial-exec")));
struct ct_ring *ct_thread_ring_slow(void);

/* The calling thread's ring, or NULL (the loss is counted) when recording is
 * off or no ring could be had. */
static inline struct ct_ring *ct_thread_ring(void)
{
    struct ct_ring *r = ct_tls_ring;
    if (__builtin_expect((uintptr_t)r > 1, 1))
        return r;
    return ct_thread_ring_slow();
}

/* Appends one record of `kind` with n fields. 0 or -1 (dropped, counted). */
static inline int ct_emit(unsigned kind, unsigned flags, const uint64_t *f, unsigned n)
{
    struct ct_ring *r = ct_thread_ring();
    if (!r)
        return -1;
    uint64_t *w = ct_ring_begin(r, kind, n, flags);
    if (!w)
        return -1;
    memcpy(w, f, (size_t)n * 8u);
    ct_ring_commit(r);
    return 0;
}

/* Records an error of the recorder's own (kind CT_REC_ERROR). */
void ct_emit_error(const char *what, int64_t code);

#endif
