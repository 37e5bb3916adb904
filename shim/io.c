/*
 * File I/O and host waits: the libc calls a process opens, reads, writes,
 * syncs and closes descriptors with, and the calls it blocks in while waiting
 * for data (recv*, poll, select, epoll_wait), each become one io record: op
 * (the name as called), descriptor, its type and path, bytes requested,
 * result (-errno on failure) and explicit offset. Every descriptor counts:
 * files, pipes, FIFOs, sockets, devices. A DataLoader's time goes into pipe
 * reads and poll waits as much as into file reads.
 *
 * This file holds what the wrappers share: the real functions and their
 * lookup, op names, CUTRACE_IO_MIN_NS (short spans counted into drop
 * records), the record path every wrapper ends in, and the lifecycle hooks
 * of shim/io.h. The descriptor table is shim/io_fd.c; the wrappers are
 * shim/io_calls.c (open, close, read, write, sync, stdio) and
 * shim/io_waits.c (sockets, poll, select, epoll_wait).
 *
 * What this file must never do: take a lock, allocate, use stdio or leave
 * errno changed on the record path; call through a NULL real function;
 * record a call made under ct_tls_guard. The guard is what keeps the
 * recorder's own I/O (the writer thread writing the trace, our init reading
 * /proc) out of the trace, and what makes a call from a signal handler that
 * interrupted one of these wrappers pass straight through.
 */

/* Define open and open64, pread and pread64... under their own names (the
 * build's -D_FILE_OFFSET_BITS=64 would rename open to open64), and define the
 * functions, not glibc's inline checking wrappers. */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE

#include "shim/io.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/uio.h>

#include "shim/io_int.h"
#include "shim/stacks.h"

/*
 * Drop reason for spans shorter than CUTRACE_IO_MIN_NS. format.h has no name
 * for it yet (CT_DROP_IO_BELOW_MIN = 7, "io_below_min", is proposed); the
 * value is fixed here so traces written now decode the same later.
 */
#define IO_DROP_BELOW_MIN 7u

/* ---- the real functions ------------------------------------------------ */

static const char *const io_names[IO_COUNT] = {
#define IO_NAME(n) #n,
    IO_FNS(IO_NAME)
#undef IO_NAME
};

void *_Atomic ct_io_real[IO_COUNT];
static atomic_uchar io_missing[IO_COUNT];

__thread int ct_io_tls_resolving __attribute__((tls_model("initial-exec")));

CT_NO_SANITIZE void *ct_io_resolve(enum io_fn f)
{
    if (ct_io_tls_resolving || atomic_load_explicit(&io_missing[f], memory_order_relaxed))
        return NULL;
    int saved = errno;
    int guard = ct_tls_guard;
    ct_io_tls_resolving = 1;
    ct_tls_guard = 1;
    void *p = ct_dlsym_real(RTLD_NEXT, io_names[f]);
    ct_tls_guard = guard;
    ct_io_tls_resolving = 0;
    errno = saved;
    if (p)
        atomic_store_explicit(&ct_io_real[f], p, memory_order_release);
    else
        atomic_store_explicit(&io_missing[f], 1, memory_order_relaxed);
    return p;
}

/* ---- op names ------------------------------------------------------------ */

static _Atomic uint32_t io_op_str[IO_COUNT];

static inline uint32_t op_str(enum io_fn f)
{
    uint32_t id = atomic_load_explicit(&io_op_str[f], memory_order_relaxed);
    if (__builtin_expect(id == 0, 0)) {
        id = ct_intern(io_names[f]);
        atomic_store_explicit(&io_op_str[f], id, memory_order_relaxed);
    }
    return id;
}

/* ---- CUTRACE_IO_MIN_NS ---------------------------------------------------- */

static _Atomic uint64_t io_skipped;   /* short spans not yet in a drop record */
static _Atomic uint64_t io_skip_last; /* ticks of the last drop record, 0 before the first skip */
static _Atomic uint64_t io_min_ticks_cal, io_sec_ticks_cal; /* 0 until calibrated */
static _Atomic uint64_t io_load_ticks, io_load_ns;          /* taken by our constructor */
static atomic_int io_atexit_armed;

/*
 * CUTRACE_IO_MIN_NS in clock ticks. With the TSC, the tick rate comes from
 * the TSC and CLOCK_MONOTONIC read at load and now; once that baseline is
 * 10 ms long the result is kept. 0 (record everything) while no baseline
 * exists yet: a span is never dropped on a guess.
 */
static uint64_t io_min_ticks(uint64_t now)
{
    if (!ct_clock_tsc)
        return ct_cfg.io_min_ns;
    uint64_t m = atomic_load_explicit(&io_min_ticks_cal, memory_order_relaxed);
    if (__builtin_expect(m != 0, 1))
        return m;
    uint64_t t0 = atomic_load(&io_load_ticks), n0 = atomic_load(&io_load_ns);
    uint64_t n = ct_clock_mono_ns();
    if (!t0 || n <= n0 || now <= t0)
        return 0;
    double ticks_per_ns = (double)(now - t0) / (double)(n - n0);
    double mt = (double)ct_cfg.io_min_ns * ticks_per_ns + 1.0;
    uint64_t r = mt >= 1.8e19 ? UINT64_MAX : (uint64_t)mt;
    if (n - n0 >= 10000000u) {
        atomic_store_explicit(&io_sec_ticks_cal, (uint64_t)(1e9 * ticks_per_ns),
                              memory_order_relaxed);
        atomic_store_explicit(&io_min_ticks_cal, r, memory_order_relaxed);
    }
    return r;
}

/* Writes the skipped count as one drop record (the caller holds the guard). */
static void io_emit_skipped(uint64_t now)
{
    uint64_t n = atomic_exchange_explicit(&io_skipped, 0, memory_order_relaxed);
    if (!n)
        return;
    uint64_t f[CT_DROP_NFIELDS];
    f[CT_DROP_TIME] = now;
    f[CT_DROP_COUNT] = n;
    f[CT_DROP_REASON] = IO_DROP_BELOW_MIN;
    if (ct_emit(CT_REC_DROP, 0, f, CT_DROP_NFIELDS) != 0)
        atomic_fetch_add_explicit(&io_skipped, n, memory_order_relaxed); /* next time */
}

void ct_io_finish(void)
{
    if (!ct_shim_live()) /* a paused trace is still open and takes the count */
        return;
    int saved = errno;
    int guard = ct_tls_guard;
    ct_tls_guard = 1;
    io_emit_skipped(ct_clock_now());
    ct_tls_guard = guard;
    errno = saved;
}

static void io_atexit(void)
{
    ct_io_finish();
}

/*
 * Counts a span too short to record; about once a second the count goes
 * out as a drop record, and at exit the rest. The exit hook is registered
 * here, at the first skip, so that it runs before the shim's own exit
 * handler (registered earlier, at init) stops the recorder; only processes
 * that set CUTRACE_IO_MIN_NS ever get here.
 */
static void io_skip(uint64_t now)
{
    atomic_fetch_add_explicit(&io_skipped, 1, memory_order_relaxed);
    if (__builtin_expect(!atomic_load_explicit(&io_atexit_armed, memory_order_relaxed), 0) &&
        !atomic_exchange(&io_atexit_armed, 1))
        atexit(io_atexit);
    uint64_t last = atomic_load_explicit(&io_skip_last, memory_order_relaxed);
    if (last == 0) {
        atomic_compare_exchange_strong(&io_skip_last, &last, now);
        return;
    }
    uint64_t sec =
        ct_clock_tsc ? atomic_load_explicit(&io_sec_ticks_cal, memory_order_relaxed) : 1000000000u;
    if (sec && (int64_t)(now - last) >= (int64_t)sec &&
        atomic_compare_exchange_strong(&io_skip_last, &last, now))
        io_emit_skipped(now);
}

/* ---- records ------------------------------------------------------------- */

int ct_io_short_slow(uint64_t t0, uint64_t t1)
{
    if (t1 - t0 >= io_min_ticks(t1))
        return 0;
    io_skip(t1);
    return 1;
}

/*
 * Whether an I/O span gets the caller's stack: every span with
 * CUTRACE_STACKS=all, spans of CUTRACE_IO_STACK_NS or more with sync.
 * With the TSC the threshold waits for the tick rate io_min_ticks()
 * calibrates (the first 10 ms of the process get none).
 */
static int io_stack_due(uint64_t t0, uint64_t t1)
{
    if (!ct_stack_wanted(1))
        return 0;
    if (ct_cfg.stacks == 2 || ct_cfg.io_stack_ns == 0)
        return 1;
    if (!ct_clock_tsc)
        return t1 - t0 >= ct_cfg.io_stack_ns;
    io_min_ticks(t1);
    uint64_t sec = atomic_load_explicit(&io_sec_ticks_cal, memory_order_relaxed);
    return sec && (double)(t1 - t0) * 1e9 >= (double)ct_cfg.io_stack_ns * (double)sec;
}

void ct_io_emit(uint64_t t0, uint64_t t1, enum io_fn f, const struct io_desc *d, uint64_t bytes,
                int64_t result, int64_t offset)
{
    if (io_stack_due(t0, t1))
        ct_stack_capture_at(0, t0);
    uint64_t w[CT_IO_NFIELDS];
    w[CT_IO_START] = t0;
    w[CT_IO_END] = t1;
    w[CT_IO_OP] = op_str(f);
    w[CT_IO_FD] = (uint64_t)(int64_t)d->fd;
    w[CT_IO_FD_TYPE] = d->type;
    w[CT_IO_PATH] = d->path;
    w[CT_IO_BYTES] = bytes;
    w[CT_IO_RESULT] = (uint64_t)result;
    w[CT_IO_OFFSET] = (uint64_t)offset;
    ct_emit(CT_REC_IO, 0, w, CT_IO_NFIELDS);
}

/*
 * The common end of a wrapper on a descriptor: t1, errno as the real call
 * left it, the descriptor looked up, one record; errno restored. ret < 0
 * means the call failed (result -errno).
 */
void ct_io_record(const struct ct_span *sp, uint64_t t1, enum io_fn f, int fd, uint64_t bytes,
                  int64_t ret, int64_t offset)
{
    int e = errno;
    if (!io_short(sp->t0, t1)) {
        struct io_desc d;
        ct_io_desc_of(&d, fd);
        ct_io_emit(sp->t0, t1, f, &d, bytes, ret < 0 ? -(int64_t)e : ret, offset);
    }
    errno = e;
}

/* Same, with type and path looked up before the call (close, fclose). */
void ct_io_record_desc(const struct ct_span *sp, enum io_fn f, const struct io_desc *d, int64_t ret)
{
    uint64_t t1 = ct_clock_now();
    int e = errno;
    if (!io_short(sp->t0, t1))
        ct_io_emit(sp->t0, t1, f, d, 0, ret < 0 ? -(int64_t)e : ret, -1);
    errno = e;
}

/* Bytes an iovec array asks for; read after the call, and not at all when
 * the kernel found the array unreadable (EFAULT) or its count invalid. */
uint64_t ct_io_iov_total(const struct iovec *iov, int cnt, ssize_t r)
{
    if (cnt <= 0 || cnt > IOV_MAX || !iov || (r < 0 && (errno == EFAULT || errno == EINVAL)))
        return 0;
    uint64_t n = 0;
    for (int i = 0; i < cnt; i++)
        n += iov[i].iov_len;
    return n;
}

/* ---- lifecycle --------------------------------------------------------------- */

void ct_io_forget_strings(void)
{
    ct_io_fd_forget_all();
    for (int f = 0; f < IO_COUNT; f++)
        atomic_store(&io_op_str[f], 0);
}

/* A forked child starts its own trace: the parent's pending count is the
 * parent's to report. */
static void io_atfork_child(void)
{
    atomic_store(&io_skipped, 0);
    atomic_store(&io_skip_last, 0);
}

/*
 * Resolves every real function now, at load, so that later calls (from a
 * signal handler, say) never enter dlsym; and takes the clock pair the tick
 * rate for CUTRACE_IO_MIN_NS is measured from. Wrappers called before this
 * runs (other libraries' constructors) resolve lazily and work the same.
 */
__attribute__((constructor)) static void io_load(void)
{
    int saved = errno;
    atomic_store(&io_load_ns, ct_clock_mono_ns());
    atomic_store(&io_load_ticks, ct_arch_ticks());
    int guard = ct_tls_guard;
    ct_tls_guard = 1;
    for (int f = 0; f < IO_COUNT; f++)
        io_real_get((enum io_fn)f);
    pthread_atfork(NULL, NULL, io_atfork_child);
    ct_tls_guard = guard;
    errno = saved;
}
