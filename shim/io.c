/*
 * File I/O and host waits: the libc calls a process opens, reads, writes,
 * syncs and closes descriptors with, and the calls it blocks in while waiting
 * for data (recv*, poll, select, epoll_wait), each become one io record: op
 * (the name as called), descriptor, its type and path, bytes requested,
 * result (-errno on failure) and explicit offset. Every descriptor counts:
 * files, pipes, FIFOs, sockets, devices. A DataLoader's time goes into pipe
 * reads and poll waits as much as into file reads.
 *
 * Descriptor type and path come from a fixed table indexed by fd, filled at
 * open/creat/fopen (the path as given) or, for descriptors we did not see
 * opened (pipes, sockets, inherited ones), once on first use from fstat and
 * /proc/self/fd/N (pipe:[ino], socket:[ino]); close forgets the entry.
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
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "shim/cuda_table.h" /* ct_fn, ct_dlsym_real */
#include "shim/shim.h"

/*
 * Drop reason for spans shorter than CUTRACE_IO_MIN_NS. format.h has no name
 * for it yet (CT_DROP_IO_BELOW_MIN = 7, "io_below_min", is proposed); the
 * value is fixed here so traces written now decode the same later.
 */
#define IO_DROP_BELOW_MIN 7u

/* ---- the real functions ------------------------------------------------ */

/* Every wrapped name. The 64 twins are separate exports in glibc and what
 * programs built with _FILE_OFFSET_BITS=64 (Python among them) call. */
#define IO_FNS(X)                                                                                  \
    X(open)                                                                                        \
    X(open64)                                                                                      \
    X(openat)                                                                                      \
    X(openat64)                                                                                    \
    X(creat)                                                                                       \
    X(creat64)                                                                                     \
    X(close)                                                                                       \
    X(read)                                                                                        \
    X(pread)                                                                                       \
    X(pread64)                                                                                     \
    X(readv)                                                                                       \
    X(preadv)                                                                                      \
    X(preadv64)                                                                                    \
    X(preadv2)                                                                                     \
    X(preadv64v2)                                                                                  \
    X(write)                                                                                       \
    X(pwrite)                                                                                      \
    X(pwrite64)                                                                                    \
    X(writev)                                                                                      \
    X(pwritev)                                                                                     \
    X(pwritev64)                                                                                   \
    X(pwritev2)                                                                                    \
    X(pwritev64v2)                                                                                 \
    X(fsync)                                                                                       \
    X(fdatasync)                                                                                   \
    X(fread)                                                                                       \
    X(fwrite)                                                                                      \
    X(fopen)                                                                                       \
    X(fopen64)                                                                                     \
    X(fclose)                                                                                      \
    X(recv)                                                                                        \
    X(recvfrom)                                                                                    \
    X(recvmsg)                                                                                     \
    X(poll)                                                                                        \
    X(ppoll)                                                                                       \
    X(select)                                                                                      \
    X(pselect)                                                                                     \
    X(epoll_wait)

enum io_fn {
#define IO_ENUM(n) IO_##n,
    IO_FNS(IO_ENUM)
#undef IO_ENUM
        IO_COUNT
};

static const char *const io_names[IO_COUNT] = {
#define IO_NAME(n) #n,
    IO_FNS(IO_NAME)
#undef IO_NAME
};

static void *_Atomic io_real[IO_COUNT];
static atomic_uchar io_missing[IO_COUNT];

/* Set while this thread is inside dlsym for one of our names: whatever that
 * lookup calls of ours (a malloc that reads a file, say) must not look up
 * again; it goes to the kernel directly instead. */
static __thread int io_tls_resolving __attribute__((tls_model("initial-exec")));

/*
 * Resolves a real function (the next definition after ours: libc's). Runs
 * once per name, normally from our constructor; dlsym may allocate, so it
 * runs under the guard and never recursively.
 */
CT_NO_SANITIZE static void *io_resolve(enum io_fn f)
{
    if (io_tls_resolving || atomic_load_explicit(&io_missing[f], memory_order_relaxed))
        return NULL;
    int saved = errno;
    int guard = ct_tls_guard;
    io_tls_resolving = 1;
    ct_tls_guard = 1;
    void *p = ct_dlsym_real(RTLD_NEXT, io_names[f]);
    ct_tls_guard = guard;
    io_tls_resolving = 0;
    errno = saved;
    if (p)
        atomic_store_explicit(&io_real[f], p, memory_order_release);
    else
        atomic_store_explicit(&io_missing[f], 1, memory_order_relaxed);
    return p;
}

CT_NO_SANITIZE static inline void *io_real_get(enum io_fn f)
{
    void *p = atomic_load_explicit(&io_real[f], memory_order_acquire);
    return __builtin_expect(p != NULL, 1) ? p : io_resolve(f);
}

#define IO_REAL(type, f) ((type)ct_fn(io_real_get(f)))

/* No real function: either we are inside its own lookup (use the kernel
 * directly, see io_tls_resolving) or libc lacks it (ENOSYS). */
static inline int io_nested(void)
{
    return io_tls_resolving;
}

static long io_nosys(void)
{
    errno = ENOSYS;
    return -1;
}

/* ---- descriptor table --------------------------------------------------- */

/*
 * One word per fd below IO_FD_MAX (512 KiB of .bss, touched pages only):
 * path string id << 32 | epoch << 8 | IO_FD_VALID | type. 0 means unknown.
 * The epoch invalidates every entry at once when the string table is
 * replaced (ct_io_forget_strings). Descriptors above the bound are recorded
 * with type unknown and no path rather than probed on every call.
 */
#define IO_FD_MAX   65536
#define IO_FD_VALID 0x80u

static _Atomic uint64_t io_fds[IO_FD_MAX];
static atomic_uint io_epoch = 1;

struct io_desc {
    int fd;
    unsigned type;
    uint32_t path;
};

static inline uint64_t fd_pack(unsigned type, uint32_t path)
{
    uint64_t ep = atomic_load_explicit(&io_epoch, memory_order_relaxed) & 0xffffffu;
    return (uint64_t)path << 32 | ep << 8 | IO_FD_VALID | (type & 0x7fu);
}

static inline int fd_unpack(uint64_t e, struct io_desc *d)
{
    uint64_t ep = atomic_load_explicit(&io_epoch, memory_order_relaxed) & 0xffffffu;
    if (!(e & IO_FD_VALID) || ((e >> 8) & 0xffffffu) != ep)
        return 0;
    d->type = (unsigned)(e & 0x7fu);
    d->path = (uint32_t)(e >> 32);
    return 1;
}

static unsigned fd_type_of(mode_t m)
{
    if (S_ISREG(m))
        return CT_FD_FILE;
    if (S_ISFIFO(m))
        return CT_FD_PIPE;
    if (S_ISSOCK(m))
        return CT_FD_SOCKET;
    if (S_ISCHR(m))
        return CT_FD_CHAR;
    if (S_ISDIR(m))
        return CT_FD_DIR;
    return CT_FD_OTHER; /* block devices, anonymous inodes (epoll, eventfd) */
}

/* Type of an open fd from fstat; 0 (and type unknown) if fd is not open. */
static int fd_stat_type(int fd, unsigned *type)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        *type = CT_FD_UNKNOWN;
        return 0;
    }
    *type = fd_type_of(st.st_mode);
    return 1;
}

/* The slow path, once per descriptor we did not see opened: type from
 * fstat, path from the /proc link (pipe:[ino], socket:[ino], a file's
 * absolute path). Returns 0 when fd is not open. errno is the caller's. */
static int fd_probe(int fd, struct io_desc *d)
{
    if (!fd_stat_type(fd, &d->type))
        return 0;
    char link[32] = "/proc/self/fd/";
    char digits[12];
    size_t nd = 0, at = strlen(link);
    for (unsigned v = (unsigned)fd; nd == 0 || v; v /= 10)
        digits[nd++] = (char)('0' + v % 10);
    while (nd)
        link[at++] = digits[--nd];
    link[at] = 0;
    /* Long paths are cut: this stack buffer stays small for signal stacks. */
    char buf[1024];
    ssize_t n = readlink(link, buf, sizeof(buf));
    d->path = n > 0 ? ct_strtab_intern(&ct_strings, buf, (size_t)n) : 0;
    return 1;
}

/* Type and path of fd for a record (never changes errno). */
static void io_desc_of(struct io_desc *d, int fd)
{
    d->fd = fd;
    d->type = CT_FD_UNKNOWN;
    d->path = 0;
    if (fd < 0 || fd >= IO_FD_MAX)
        return;
    uint64_t e = atomic_load_explicit(&io_fds[fd], memory_order_acquire);
    if (__builtin_expect(fd_unpack(e, d), 1))
        return;
    int saved = errno;
    if (fd_probe(fd, d)) {
        /* Only if nobody opened or closed it meanwhile. */
        atomic_compare_exchange_strong(&io_fds[fd], &e, fd_pack(d->type, d->path));
    }
    errno = saved;
}

/* A descriptor was just opened: its entry describes the new file. */
static inline void fd_remember(int fd, unsigned type, uint32_t path)
{
    if (fd >= 0 && fd < IO_FD_MAX)
        atomic_store_explicit(&io_fds[fd], fd_pack(type, path), memory_order_release);
}

/* A descriptor was opened while not recording: whatever the entry said
 * before is stale; the next record probes it. */
static inline void fd_forget(int fd)
{
    if (fd >= 0 && fd < IO_FD_MAX)
        atomic_store_explicit(&io_fds[fd], 0, memory_order_release);
}

/* Entry of fd before a close, to clear after it (0 when out of range). */
static inline uint64_t fd_entry(int fd)
{
    return fd >= 0 && fd < IO_FD_MAX ? atomic_load_explicit(&io_fds[fd], memory_order_acquire) : 0;
}

/* After close: clear the entry unless another thread already reused the fd. */
static inline void fd_closed(int fd, uint64_t before)
{
    if (fd >= 0 && fd < IO_FD_MAX)
        atomic_compare_exchange_strong(&io_fds[fd], &before, 0);
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

/* 1 when the span [t0, t1] is under CUTRACE_IO_MIN_NS (then it is counted). */
static inline int io_short(uint64_t t0, uint64_t t1)
{
    if (__builtin_expect(ct_cfg.io_min_ns == 0, 1))
        return 0;
    if (t1 - t0 >= io_min_ticks(t1))
        return 0;
    io_skip(t1);
    return 1;
}

static void io_emit(uint64_t t0, uint64_t t1, enum io_fn f, const struct io_desc *d, uint64_t bytes,
                    int64_t result, int64_t offset)
{
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
static void io_finish(const struct ct_span *sp, uint64_t t1, enum io_fn f, int fd, uint64_t bytes,
                      int64_t ret, int64_t offset)
{
    int e = errno;
    if (!io_short(sp->t0, t1)) {
        struct io_desc d;
        io_desc_of(&d, fd);
        io_emit(sp->t0, t1, f, &d, bytes, ret < 0 ? -(int64_t)e : ret, offset);
    }
    errno = e;
}

static inline void io_done(const struct ct_span *sp, enum io_fn f, int fd, uint64_t bytes,
                           int64_t ret, int64_t offset)
{
    io_finish(sp, ct_clock_now(), f, fd, bytes, ret, offset);
}

/* Same, with type and path looked up before the call (close, fclose). */
static void io_finish_desc(const struct ct_span *sp, enum io_fn f, const struct io_desc *d,
                           int64_t ret)
{
    uint64_t t1 = ct_clock_now();
    int e = errno;
    if (!io_short(sp->t0, t1))
        io_emit(sp->t0, t1, f, d, 0, ret < 0 ? -(int64_t)e : ret, -1);
    errno = e;
}

/* Bytes an iovec array asks for; read after the call, and not at all when
 * the kernel found the array unreadable (EFAULT) or its count invalid. */
static uint64_t iov_total(const struct iovec *iov, int cnt, ssize_t r)
{
    if (cnt <= 0 || cnt > IOV_MAX || !iov || (r < 0 && (errno == EFAULT || errno == EINVAL)))
        return 0;
    uint64_t n = 0;
    for (int i = 0; i < cnt; i++)
        n += iov[i].iov_len;
    return n;
}

/* After a successful open of any flavour: remember fd as path, record. */
static void io_finish_open(const struct ct_span *sp, enum io_fn f, const char *path, int fd)
{
    uint64_t t1 = ct_clock_now();
    int e = errno;
    struct io_desc d = {fd < 0 ? -1 : fd, CT_FD_UNKNOWN, 0};
    /* A path the kernel could not read is not ours to read either. */
    if (!(fd < 0 && e == EFAULT))
        d.path = ct_intern(path);
    if (fd >= 0) {
        fd_stat_type(fd, &d.type);
        fd_remember(fd, d.type, d.path);
    }
    if (!io_short(sp->t0, t1))
        io_emit(sp->t0, t1, f, &d, 0, fd < 0 ? -(int64_t)e : fd, -1);
    errno = e;
}

/* ---- open, creat, close --------------------------------------------------- */

/* Whether open's variadic mode argument is present (glibc's rule). */
#define IO_NEEDS_MODE(flags) (((flags)&O_CREAT) != 0 || ((flags)&O_TMPFILE) == O_TMPFILE)

#define IO_MODE_ARG(flags, mode)                                                                   \
    do {                                                                                           \
        if (IO_NEEDS_MODE(flags)) {                                                                \
            va_list ap_;                                                                           \
            va_start(ap_, flags);                                                                  \
            mode = (mode_t)va_arg(ap_, int);                                                       \
            va_end(ap_);                                                                           \
        }                                                                                          \
    } while (0)

typedef int (*openat_fn)(int, const char *, int, ...);
typedef int (*open_fn)(const char *, int, ...);
typedef int (*creat_fn)(const char *, mode_t);

static int io_open(enum io_fn f, const char *path, int flags, mode_t mode)
{
    open_fn real = IO_REAL(open_fn, f);
    if (__builtin_expect(!real, 0))
        return io_nested() ? (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode)
                           : (int)io_nosys();
    if (!ct_shim_recording()) {
        int fd = real(path, flags, mode);
        fd_forget(fd);
        return fd;
    }
    struct ct_span sp;
    ct_span_enter(&sp);
    int fd = real(path, flags, mode);
    io_finish_open(&sp, f, path, fd);
    ct_span_leave(&sp);
    return fd;
}

static int io_openat(enum io_fn f, int dirfd, const char *path, int flags, mode_t mode)
{
    openat_fn real = IO_REAL(openat_fn, f);
    if (__builtin_expect(!real, 0))
        return io_nested() ? (int)syscall(SYS_openat, dirfd, path, flags, mode) : (int)io_nosys();
    if (!ct_shim_recording()) {
        int fd = real(dirfd, path, flags, mode);
        fd_forget(fd);
        return fd;
    }
    struct ct_span sp;
    ct_span_enter(&sp);
    int fd = real(dirfd, path, flags, mode);
    io_finish_open(&sp, f, path, fd);
    ct_span_leave(&sp);
    return fd;
}

static int io_creat(enum io_fn f, const char *path, mode_t mode)
{
    creat_fn real = IO_REAL(creat_fn, f);
    if (__builtin_expect(!real, 0))
        return io_nested()
                   ? (int)syscall(SYS_openat, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode)
                   : (int)io_nosys();
    if (!ct_shim_recording()) {
        int fd = real(path, mode);
        fd_forget(fd);
        return fd;
    }
    struct ct_span sp;
    ct_span_enter(&sp);
    int fd = real(path, mode);
    io_finish_open(&sp, f, path, fd);
    ct_span_leave(&sp);
    return fd;
}

CT_EXPORT int open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    IO_MODE_ARG(flags, mode);
    return io_open(IO_open, path, flags, mode);
}

CT_EXPORT int open64(const char *path, int flags, ...)
{
    mode_t mode = 0;
    IO_MODE_ARG(flags, mode);
    return io_open(IO_open64, path, flags, mode);
}

CT_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
    mode_t mode = 0;
    IO_MODE_ARG(flags, mode);
    return io_openat(IO_openat, dirfd, path, flags, mode);
}

CT_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
    mode_t mode = 0;
    IO_MODE_ARG(flags, mode);
    return io_openat(IO_openat64, dirfd, path, flags, mode);
}

CT_EXPORT int creat(const char *path, mode_t mode)
{
    return io_creat(IO_creat, path, mode);
}

CT_EXPORT int creat64(const char *path, mode_t mode)
{
    return io_creat(IO_creat64, path, mode);
}

typedef int (*close_fn)(int);

CT_EXPORT int close(int fd)
{
    close_fn real = IO_REAL(close_fn, IO_close);
    if (__builtin_expect(!real, 0))
        return io_nested() ? (int)syscall(SYS_close, fd) : (int)io_nosys();
    uint64_t before = fd_entry(fd);
    if (!ct_shim_recording()) {
        int r = real(fd);
        fd_closed(fd, before);
        return r;
    }
    struct ct_span sp;
    ct_span_enter(&sp);
    /* Described before it goes away; the clock restarts after our lookup. */
    struct io_desc d;
    io_desc_of(&d, fd);
    before = fd_entry(fd);
    sp.t0 = ct_clock_now();
    int r = real(fd);
    io_finish_desc(&sp, IO_close, &d, r);
    fd_closed(fd, before);
    ct_span_leave(&sp);
    return r;
}

/* ---- read and write -------------------------------------------------------- */

typedef ssize_t (*read_fn)(int, void *, size_t);
typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*pread_fn)(int, void *, size_t, off_t);
typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef ssize_t (*readv_fn)(int, const struct iovec *, int);
typedef ssize_t (*preadv_fn)(int, const struct iovec *, int, off_t);
typedef ssize_t (*preadv2_fn)(int, const struct iovec *, int, off_t, int);

/* The kernel's split offset argument of preadv and friends. */
#define IO_LO_HI(off) (long)(off), (long)((uint64_t)(off) >> 32)

CT_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
    read_fn real = IO_REAL(read_fn, IO_read);
    if (__builtin_expect(!real, 0))
        return io_nested() ? syscall(SYS_read, fd, buf, n) : io_nosys();
    if (!ct_shim_recording())
        return real(fd, buf, n);
    struct ct_span sp;
    ct_span_enter(&sp);
    ssize_t r = real(fd, buf, n);
    io_done(&sp, IO_read, fd, n, r, -1);
    ct_span_leave(&sp);
    return r;
}

CT_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
    write_fn real = IO_REAL(write_fn, IO_write);
    if (__builtin_expect(!real, 0))
        return io_nested() ? syscall(SYS_write, fd, buf, n) : io_nosys();
    if (!ct_shim_recording())
        return real(fd, buf, n);
    struct ct_span sp;
    ct_span_enter(&sp);
    ssize_t r = real(fd, buf, n);
    io_done(&sp, IO_write, fd, n, r, -1);
    ct_span_leave(&sp);
    return r;
}

static ssize_t io_pread(enum io_fn f, int fd, void *buf, size_t n, off_t off)
{
    pread_fn real = IO_REAL(pread_fn, f);
    if (__builtin_expect(!real, 0))
        return io_nested() ? syscall(SYS_pread64, fd, buf, n, off) : io_nosys();
    if (!ct_shim_recording())
        return real(fd, buf, n, off);
    struct ct_span sp;
    ct_span_enter(&sp);
    ssize_t r = real(fd, buf, n, off);
    io_done(&sp, f, fd, n, r, off);
    ct_span_leave(&sp);
    return r;
}

static ssize_t io_pwrite(enum io_fn f, int fd, const void *buf, size_t n, off_t off)
{
    pwrite_fn real = IO_REAL(pwrite_fn, f);
    if (__builtin_expect(!real, 0))
        return io_nested() ? syscall(SYS_pwrite64, fd, buf, n, off) : io_nosys();
    if (!ct_shim_recording())
        return real(fd, buf, n, off);
    struct ct_span sp;
    ct_span_enter(&sp);
    ssize_t r = real(fd, buf, n, off);
    io_done(&sp, f, fd, n, r, off);
    ct_span_leave(&sp);
    return r;
}

CT_EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    return io_pread(IO_pread, fd, buf, n, off);
}

CT_EXPORT ssize_t pread64(int fd, void *buf, size_t n, off64_t off)
{
    return io_pread(IO_pread64, fd, buf, n, off);
}

CT_EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    return io_pwrite(IO_pwrite, fd, buf, n, off);
}

CT_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
    return io_pwrite(IO_pwrite64, fd, buf, n, off);
}

/* readv, writev (write = 1 picks the kernel call of the fallback). */
static ssize_t io_rwv(enum io_fn f, int wr, int fd, const struct iovec *iov, int cnt)
{
    readv_fn real = IO_REAL(readv_fn, f);
    if (__builtin_expect(!real, 0))
        return io_nested() ? syscall(wr ? SYS_writev : SYS_readv, fd, iov, cnt) : io_nosys();
    if (!ct_shim_recording())
        return real(fd, iov, cnt);
    struct ct_span sp;
    ct_span_enter(&sp);
    ssize_t r = real(fd, iov, cnt);
    uint64_t t1 = ct_clock_now();
    io_finish(&sp, t1, f, fd, iov_total(iov, cnt, r), r, -1);
    ct_span_leave(&sp);
    return r;
}

/* preadv, pwritev and their 64 twins. */
static ssize_t io_prwv(enum io_fn f, int wr, int fd, const struct iovec *iov, int cnt, off_t off)
{
    preadv_fn real = IO_REAL(preadv_fn, f);
    if (__builtin_expect(!real, 0))
        return io_nested() ? syscall(wr ? SYS_pwritev : SYS_preadv, fd, iov, cnt, IO_LO_HI(off))
                           : io_nosys();
    if (!ct_shim_recording())
        return real(fd, iov, cnt, off);
    struct ct_span sp;
    ct_span_enter(&sp);
    ssize_t r = real(fd, iov, cnt, off);
    uint64_t t1 = ct_clock_now();
    io_finish(&sp, t1, f, fd, iov_total(iov, cnt, r), r, off);
    ct_span_leave(&sp);
    return r;
}

/* preadv2, pwritev2 and their 64 twins; offset -1 means the file position. */
static ssize_t io_prwv2(enum io_fn f, int wr, int fd, const struct iovec *iov, int cnt, off_t off,
                        int flags)
{
    preadv2_fn real = IO_REAL(preadv2_fn, f);
    if (__builtin_expect(!real, 0))
        return io_nested()
                   ? syscall(wr ? SYS_pwritev2 : SYS_preadv2, fd, iov, cnt, IO_LO_HI(off), flags)
                   : io_nosys();
    if (!ct_shim_recording())
        return real(fd, iov, cnt, off, flags);
    struct ct_span sp;
    ct_span_enter(&sp);
    ssize_t r = real(fd, iov, cnt, off, flags);
    uint64_t t1 = ct_clock_now();
    io_finish(&sp, t1, f, fd, iov_total(iov, cnt, r), r, off < 0 ? -1 : off);
    ct_span_leave(&sp);
    return r;
}

CT_EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
    return io_rwv(IO_readv, 0, fd, iov, cnt);
}

CT_EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    return io_rwv(IO_writev, 1, fd, iov, cnt);
}

CT_EXPORT ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
    return io_prwv(IO_preadv, 0, fd, iov, cnt, off);
}

CT_EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
    return io_prwv(IO_preadv64, 0, fd, iov, cnt, off);
}

CT_EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    return io_prwv(IO_pwritev, 1, fd, iov, cnt, off);
}

CT_EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
    return io_prwv(IO_pwritev64, 1, fd, iov, cnt, off);
}

CT_EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    return io_prwv2(IO_preadv2, 0, fd, iov, cnt, off, flags);
}

CT_EXPORT ssize_t preadv64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
    return io_prwv2(IO_preadv64v2, 0, fd, iov, cnt, off, flags);
}

CT_EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    return io_prwv2(IO_pwritev2, 1, fd, iov, cnt, off, flags);
}

CT_EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
    return io_prwv2(IO_pwritev64v2, 1, fd, iov, cnt, off, flags);
}

/* ---- sync ------------------------------------------------------------------ */

typedef int (*sync_fn)(int);

static int io_sync(enum io_fn f, long nr, int fd)
{
    sync_fn real = IO_REAL(sync_fn, f);
    if (__builtin_expect(!real, 0))
        return io_nested() ? (int)syscall(nr, fd) : (int)io_nosys();
    if (!ct_shim_recording())
        return real(fd);
    struct ct_span sp;
    ct_span_enter(&sp);
    int r = real(fd);
    io_done(&sp, f, fd, 0, r, -1);
    ct_span_leave(&sp);
    return r;
}

CT_EXPORT int fsync(int fd)
{
    return io_sync(IO_fsync, SYS_fsync, fd);
}

CT_EXPORT int fdatasync(int fd)
{
    return io_sync(IO_fdatasync, SYS_fdatasync, fd);
}

/* ---- stdio ----------------------------------------------------------------- */

/*
 * glibc's stdio reaches the kernel through its internal __read/__write/
 * __open/__close, never through our exports, so an fread is one record, not
 * an fread plus the reads that filled its buffer. fileno is libc's (not
 * wrapped); it sets errno for streams without a descriptor (fmemopen), which
 * are recorded with fd -1.
 */
typedef FILE *(*fopen_fn)(const char *, const char *);
typedef int (*fclose_fn)(FILE *);
typedef size_t (*fread_fn)(void *, size_t, size_t, FILE *);
typedef size_t (*fwrite_fn)(const void *, size_t, size_t, FILE *);

static int io_fileno(FILE *fp)
{
    if (!fp)
        return -1;
    int saved = errno;
    int fd = fileno(fp);
    errno = saved;
    return fd;
}

static FILE *io_fopen(enum io_fn f, const char *path, const char *mode)
{
    fopen_fn real = IO_REAL(fopen_fn, f);
    if (__builtin_expect(!real, 0)) {
        errno = ENOSYS; /* no kernel call stands in for a FILE */
        return NULL;
    }
    if (!ct_shim_recording()) {
        FILE *fp = real(path, mode);
        fd_forget(io_fileno(fp));
        return fp;
    }
    struct ct_span sp;
    ct_span_enter(&sp);
    FILE *fp = real(path, mode);
    uint64_t t1 = ct_clock_now();
    int e = errno;
    /* The stream's descriptor is looked up after the clock: not part of the call. */
    struct io_desc d = {io_fileno(fp), CT_FD_UNKNOWN, 0};
    if (path && (fp || e != EFAULT))
        d.path = ct_intern(path);
    if (d.fd >= 0) {
        fd_stat_type(d.fd, &d.type);
        fd_remember(d.fd, d.type, d.path);
    }
    if (!io_short(sp.t0, t1))
        io_emit(sp.t0, t1, f, &d, 0, fp ? d.fd : -(int64_t)e, -1);
    errno = e;
    ct_span_leave(&sp);
    return fp;
}

CT_EXPORT FILE *fopen(const char *path, const char *mode)
{
    return io_fopen(IO_fopen, path, mode);
}

CT_EXPORT FILE *fopen64(const char *path, const char *mode)
{
    return io_fopen(IO_fopen64, path, mode);
}

CT_EXPORT int fclose(FILE *fp)
{
    fclose_fn real = IO_REAL(fclose_fn, IO_fclose);
    if (__builtin_expect(!real, 0)) {
        errno = ENOSYS;
        return EOF;
    }
    int fd = io_fileno(fp);
    uint64_t before = fd_entry(fd);
    if (!ct_shim_recording()) {
        int r = real(fp);
        fd_closed(fd, before);
        return r;
    }
    struct ct_span sp;
    ct_span_enter(&sp);
    struct io_desc d;
    io_desc_of(&d, fd);
    before = fd_entry(fd);
    sp.t0 = ct_clock_now();
    int r = real(fp);
    io_finish_desc(&sp, IO_fclose, &d, r == EOF ? -1 : r);
    fd_closed(fd, before);
    ct_span_leave(&sp);
    return r;
}

static uint64_t io_mul(size_t a, size_t b)
{
    uint64_t r;
    return __builtin_mul_overflow((uint64_t)a, (uint64_t)b, &r) ? UINT64_MAX : r;
}

CT_EXPORT size_t fread(void *ptr, size_t size, size_t n, FILE *fp)
{
    fread_fn real = IO_REAL(fread_fn, IO_fread);
    if (__builtin_expect(!real, 0)) {
        errno = ENOSYS;
        return 0;
    }
    if (!ct_shim_recording())
        return real(ptr, size, n, fp);
    struct ct_span sp;
    ct_span_enter(&sp);
    int fd = io_fileno(fp);
    sp.t0 = ct_clock_now();
    size_t r = real(ptr, size, n, fp);
    io_done(&sp, IO_fread, fd, io_mul(size, n), (int64_t)r, -1);
    ct_span_leave(&sp);
    return r;
}

CT_EXPORT size_t fwrite(const void *ptr, size_t size, size_t n, FILE *fp)
{
    fwrite_fn real = IO_REAL(fwrite_fn, IO_fwrite);
    if (__builtin_expect(!real, 0)) {
        errno = ENOSYS;
        return 0;
    }
    if (!ct_shim_recording())
        return real(ptr, size, n, fp);
    struct ct_span sp;
    ct_span_enter(&sp);
    int fd = io_fileno(fp);
    sp.t0 = ct_clock_now();
    size_t r = real(ptr, size, n, fp);
    io_done(&sp, IO_fwrite, fd, io_mul(size, n), (int64_t)r, -1);
    ct_span_leave(&sp);
    return r;
}

/* ---- sockets ----------------------------------------------------------------- */

typedef ssize_t (*recv_fn)(int, void *, size_t, int);
typedef ssize_t (*recvfrom_fn)(int, void *, size_t, int, __SOCKADDR_ARG, socklen_t *);
typedef ssize_t (*recvmsg_fn)(int, struct msghdr *, int);

CT_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
    recv_fn real = IO_REAL(recv_fn, IO_recv);
    if (__builtin_expect(!real, 0))
        return io_nested() ? syscall(SYS_recvfrom, fd, buf, n, flags, NULL, NULL) : io_nosys();
    if (!ct_shim_recording())
        return real(fd, buf, n, flags);
    struct ct_span sp;
    ct_span_enter(&sp);
    ssize_t r = real(fd, buf, n, flags);
    io_done(&sp, IO_recv, fd, n, r, -1);
    ct_span_leave(&sp);
    return r;
}

CT_EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, __SOCKADDR_ARG addr,
                           socklen_t *addrlen)
{
    recvfrom_fn real = IO_REAL(recvfrom_fn, IO_recvfrom);
    if (__builtin_expect(!real, 0))
        return io_nested() ? syscall(SYS_recvfrom, fd, buf, n, flags, addr.__sockaddr__, addrlen)
                           : io_nosys();
    if (!ct_shim_recording())
        return real(fd, buf, n, flags, addr, addrlen);
    struct ct_span sp;
    ct_span_enter(&sp);
    ssize_t r = real(fd, buf, n, flags, addr, addrlen);
    io_done(&sp, IO_recvfrom, fd, n, r, -1);
    ct_span_leave(&sp);
    return r;
}

CT_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
    recvmsg_fn real = IO_REAL(recvmsg_fn, IO_recvmsg);
    if (__builtin_expect(!real, 0))
        return io_nested() ? syscall(SYS_recvmsg, fd, msg, flags) : io_nosys();
    if (!ct_shim_recording())
        return real(fd, msg, flags);
    struct ct_span sp;
    ct_span_enter(&sp);
    ssize_t r = real(fd, msg, flags);
    uint64_t t1 = ct_clock_now();
    uint64_t bytes = 0;
    if (msg && !(r < 0 && errno == EFAULT))
        bytes = iov_total(msg->msg_iov, (int)msg->msg_iovlen, r);
    io_finish(&sp, t1, IO_recvmsg, fd, bytes, r, -1);
    ct_span_leave(&sp);
    return r;
}

/* ---- waits --------------------------------------------------------------------- */

/*
 * A wait names a descriptor only when it waits on exactly one (then the
 * record has its type and path); otherwise fd is -1. Bytes are 0; a timeout
 * is result 0.
 */
static int poll_single_fd(const struct pollfd *fds, nfds_t n, int r)
{
    if (!fds || n == 0 || n > 4096 || (r < 0 && errno == EFAULT))
        return -1;
    int fd = -1;
    for (nfds_t i = 0; i < n; i++) {
        if (fds[i].fd < 0)
            continue; /* ignored by poll */
        if (fd >= 0 && fds[i].fd != fd)
            return -1;
        fd = fds[i].fd;
    }
    return fd;
}

/* Read before the call: select overwrites the sets with what is ready. */
static int select_single_fd(int nfds, const fd_set *r, const fd_set *w, const fd_set *x)
{
    if (nfds <= 0 || nfds > FD_SETSIZE)
        return -1;
    const fd_set *sets[3] = {r, w, x};
    int fd = -1;
    const size_t bits = 8 * sizeof(unsigned long);
    for (int s = 0; s < 3; s++) {
        if (!sets[s])
            continue;
        for (size_t wi = 0; wi * bits < (size_t)nfds; wi++) {
            unsigned long word;
            memcpy(&word, (const unsigned char *)sets[s] + wi * sizeof(word), sizeof(word));
            size_t lim = (size_t)nfds - wi * bits;
            if (lim < bits)
                word &= (1ul << lim) - 1;
            while (word) {
                int b = (int)(wi * bits) + __builtin_ctzl(word);
                word &= word - 1;
                if (fd >= 0 && b != fd)
                    return -1;
                fd = b;
            }
        }
    }
    return fd;
}

typedef int (*poll_fn)(struct pollfd *, nfds_t, int);
typedef int (*ppoll_fn)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
typedef int (*select_fn)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
typedef int (*pselect_fn)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
                          const sigset_t *);
typedef int (*epoll_wait_fn)(int, struct epoll_event *, int, int);

/* The kernel's ppoll and pselect6 (fallbacks only): the timeout is copied
 * because the kernel writes the time left into it. */
static long raw_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo,
                      const sigset_t *mask)
{
    struct timespec t, *tp = NULL;
    if (tmo) {
        t = *tmo;
        tp = &t;
    }
    return syscall(SYS_ppoll, fds, n, tp, mask, (size_t)(_NSIG / 8));
}

static long raw_pselect(int nfds, fd_set *r, fd_set *w, fd_set *x, const struct timespec *tmo,
                        const sigset_t *mask)
{
    struct timespec t, *tp = NULL;
    if (tmo) {
        t = *tmo;
        tp = &t;
    }
    struct {
        const sigset_t *ss;
        size_t len;
    } data = {mask, (size_t)(_NSIG / 8)};
    return syscall(SYS_pselect6, nfds, r, w, x, tp, &data);
}

CT_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
    poll_fn real = IO_REAL(poll_fn, IO_poll);
    if (__builtin_expect(!real, 0)) {
        if (!io_nested())
            return (int)io_nosys();
        struct timespec t = {timeout / 1000, (long)(timeout % 1000) * 1000000L};
        return (int)raw_ppoll(fds, n, timeout < 0 ? NULL : &t, NULL);
    }
    if (!ct_shim_recording())
        return real(fds, n, timeout);
    struct ct_span sp;
    ct_span_enter(&sp);
    int r = real(fds, n, timeout);
    uint64_t t1 = ct_clock_now();
    io_finish(&sp, t1, IO_poll, poll_single_fd(fds, n, r), 0, r, -1);
    ct_span_leave(&sp);
    return r;
}

CT_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask)
{
    ppoll_fn real = IO_REAL(ppoll_fn, IO_ppoll);
    if (__builtin_expect(!real, 0))
        return io_nested() ? (int)raw_ppoll(fds, n, tmo, mask) : (int)io_nosys();
    if (!ct_shim_recording())
        return real(fds, n, tmo, mask);
    struct ct_span sp;
    ct_span_enter(&sp);
    int r = real(fds, n, tmo, mask);
    uint64_t t1 = ct_clock_now();
    io_finish(&sp, t1, IO_ppoll, poll_single_fd(fds, n, r), 0, r, -1);
    ct_span_leave(&sp);
    return r;
}

CT_EXPORT int select(int nfds, fd_set *rs, fd_set *ws, fd_set *xs, struct timeval *tmo)
{
    select_fn real = IO_REAL(select_fn, IO_select);
    if (__builtin_expect(!real, 0)) {
        if (!io_nested())
            return (int)io_nosys();
        struct timespec t, *tp = NULL;
        if (tmo) {
            t.tv_sec = tmo->tv_sec;
            t.tv_nsec = tmo->tv_usec * 1000;
            tp = &t;
        }
        return (int)raw_pselect(nfds, rs, ws, xs, tp, NULL);
    }
    if (!ct_shim_recording())
        return real(nfds, rs, ws, xs, tmo);
    struct ct_span sp;
    ct_span_enter(&sp);
    int fd = select_single_fd(nfds, rs, ws, xs);
    sp.t0 = ct_clock_now();
    int r = real(nfds, rs, ws, xs, tmo);
    io_done(&sp, IO_select, fd, 0, r, -1);
    ct_span_leave(&sp);
    return r;
}

CT_EXPORT int pselect(int nfds, fd_set *rs, fd_set *ws, fd_set *xs, const struct timespec *tmo,
                      const sigset_t *mask)
{
    pselect_fn real = IO_REAL(pselect_fn, IO_pselect);
    if (__builtin_expect(!real, 0))
        return io_nested() ? (int)raw_pselect(nfds, rs, ws, xs, tmo, mask) : (int)io_nosys();
    if (!ct_shim_recording())
        return real(nfds, rs, ws, xs, tmo, mask);
    struct ct_span sp;
    ct_span_enter(&sp);
    int fd = select_single_fd(nfds, rs, ws, xs);
    sp.t0 = ct_clock_now();
    int r = real(nfds, rs, ws, xs, tmo, mask);
    io_done(&sp, IO_pselect, fd, 0, r, -1);
    ct_span_leave(&sp);
    return r;
}

/* The epoll instance is what the caller waits on: fd is epfd (its path is
 * anon_inode:[eventpoll]); which descriptors it watches is not visible. */
CT_EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
    epoll_wait_fn real = IO_REAL(epoll_wait_fn, IO_epoll_wait);
    if (__builtin_expect(!real, 0))
        return io_nested() ? (int)syscall(SYS_epoll_pwait, epfd, ev, max, timeout, NULL,
                                          (size_t)(_NSIG / 8))
                           : (int)io_nosys();
    if (!ct_shim_recording())
        return real(epfd, ev, max, timeout);
    struct ct_span sp;
    ct_span_enter(&sp);
    int r = real(epfd, ev, max, timeout);
    io_done(&sp, IO_epoll_wait, epfd, 0, r, -1);
    ct_span_leave(&sp);
    return r;
}

/* ---- lifecycle --------------------------------------------------------------- */

void ct_io_forget_strings(void)
{
    atomic_fetch_add(&io_epoch, 1);
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
