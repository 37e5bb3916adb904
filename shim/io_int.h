/*
 * Internal interface of the file-I/O layer, shared by its files only:
 * shim/io.c (real functions, op names, CUTRACE_IO_MIN_NS, the record path,
 * lifecycle), shim/io_fd.c (descriptor table), shim/io_calls.c (open, close,
 * read, write, sync, stdio) and shim/io_waits.c (sockets and waits). The rest
 * of the shim uses shim/io.h.
 *
 * Nothing declared here may take a lock, allocate, use stdio or leave errno
 * changed on the record path, or be called through a NULL real function.
 *
 * Every io*.c file starts with
 *     #undef _FILE_OFFSET_BITS
 *     #undef _FORTIFY_SOURCE
 * before any include: the wrappers define open and open64, pread and
 * pread64... under their own names (the build's -D_FILE_OFFSET_BITS=64 would
 * rename open to open64), and define the functions, not glibc's inline
 * checking wrappers.
 */
#ifndef CT_SHIM_IO_INT_H
#define CT_SHIM_IO_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "shim/dlsym_real.h" /* ct_fn, ct_dlsym_real */
#include "shim/shim.h"

/* ---- the real functions (io.c) ------------------------------------------ */

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
    X(epoll_wait)                                                                                  \
    X(close_range)                                                                                 \
    X(closefrom)                                                                                   \
    X(dup2)                                                                                        \
    X(dup3)

enum io_fn {
#define IO_ENUM(n) IO_##n,
    IO_FNS(IO_ENUM)
#undef IO_ENUM
        IO_COUNT
};

/* The real functions, filled by ct_io_resolve. */
extern void *_Atomic ct_io_real[IO_COUNT];

/* Set while this thread is inside dlsym for one of our names: whatever that
 * lookup calls of ours (a malloc that reads a file, say) must not look up
 * again; it goes to the kernel directly instead. */
extern __thread int ct_io_tls_resolving __attribute__((tls_model("initial-exec")));

/*
 * Resolves a real function (the next definition after ours: libc's). Runs
 * once per name, normally from our constructor; dlsym may allocate, so it
 * runs under the guard and never recursively.
 */
CT_NO_SANITIZE void *ct_io_resolve(enum io_fn f);

CT_NO_SANITIZE static inline void *io_real_get(enum io_fn f)
{
    void *p = atomic_load_explicit(&ct_io_real[f], memory_order_acquire);
    return __builtin_expect(p != NULL, 1) ? p : ct_io_resolve(f);
}

#define IO_REAL(type, f) ((type)ct_fn(io_real_get(f)))

/* No real function: either we are inside its own lookup (use the kernel
 * directly, see ct_io_tls_resolving) or libc lacks it (ENOSYS). */
static inline int io_nested(void)
{
    return ct_io_tls_resolving;
}

static inline long io_nosys(void)
{
    errno = ENOSYS;
    return -1;
}

/* ---- descriptor table (io_fd.c) ------------------------------------------- */

struct io_desc {
    int fd;
    unsigned type;
    uint32_t path;
};

/* Type of an open fd from fstat; 0 (and type unknown) if fd is not open. */
int ct_io_fd_stat_type(int fd, unsigned *type);
/* Type and path of fd for a record (never changes errno). */
void ct_io_desc_of(struct io_desc *d, int fd);
/* A descriptor was just opened: its entry describes the new file. */
void ct_io_fd_remember(int fd, unsigned type, uint32_t path);
/* A descriptor was opened while not recording: whatever the entry said
 * before is stale; the next record probes it. */
void ct_io_fd_forget(int fd);
/* Entry of fd before a close, to clear after it (0 when out of range). */
uint64_t ct_io_fd_entry(int fd);
/* After close: clear the entry unless another thread already reused the fd. */
void ct_io_fd_closed(int fd, uint64_t before);
/* Invalidates every entry at once (the string table was replaced). */
void ct_io_fd_forget_all(void);

/* ---- records (io.c) -------------------------------------------------------- */

/* Counts a span under CUTRACE_IO_MIN_NS (see io_short). */
int ct_io_short_slow(uint64_t t0, uint64_t t1);

/* 1 when the span [t0, t1] is under CUTRACE_IO_MIN_NS (then it is counted). */
static inline int io_short(uint64_t t0, uint64_t t1)
{
    if (__builtin_expect(ct_cfg.io_min_ns == 0, 1))
        return 0;
    return ct_io_short_slow(t0, t1);
}

void ct_io_emit(uint64_t t0, uint64_t t1, enum io_fn f, const struct io_desc *d, uint64_t bytes,
                int64_t result, int64_t offset);

/*
 * The common end of a wrapper on a descriptor: t1, errno as the real call
 * left it, the descriptor looked up, one record; errno restored. ret < 0
 * means the call failed (result -errno).
 */
void ct_io_record(const struct ct_span *sp, uint64_t t1, enum io_fn f, int fd, uint64_t bytes,
                  int64_t ret, int64_t offset);

static inline void io_done(const struct ct_span *sp, enum io_fn f, int fd, uint64_t bytes,
                           int64_t ret, int64_t offset)
{
    ct_io_record(sp, ct_clock_now(), f, fd, bytes, ret, offset);
}

/* Same, with type and path looked up before the call (close, fclose). */
void ct_io_record_desc(const struct ct_span *sp, enum io_fn f, const struct io_desc *d,
                       int64_t ret);

/* Bytes an iovec array asks for; read after the call, and not at all when
 * the kernel found the array unreadable (EFAULT) or its count invalid. */
uint64_t ct_io_iov_total(const struct iovec *iov, int cnt, ssize_t r);

#endif
