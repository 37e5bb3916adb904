/*
 * The file-I/O wrappers (see shim/io.c): open, openat, creat and their 64
 * twins, close, read, write, pread/pwrite, readv/writev and the preadv/
 * pwritev families, fsync, fdatasync, and stdio's fopen, fclose, fread and
 * fwrite. Each becomes one io record through the record path of shim/io.c;
 * opens fill the descriptor table (shim/io_fd.c) and closes clear it.
 *
 * What this file must never do: take a lock, allocate, use stdio or leave
 * errno changed on the record path; call through a NULL real function;
 * record a call made under ct_tls_guard (the recorder's own I/O, a signal
 * handler that interrupted one of these wrappers).
 */

/* Define open and open64, pread and pread64... under their own names (the
 * build's -D_FILE_OFFSET_BITS=64 would rename open to open64), and define the
 * functions, not glibc's inline checking wrappers. */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "shim/io_int.h"
#include "src/ownfd.h"

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
        ct_io_fd_stat_type(fd, &d.type);
        ct_io_fd_remember(fd, d.type, d.path);
    }
    if (!io_short(sp->t0, t1))
        ct_io_emit(sp->t0, t1, f, &d, 0, fd < 0 ? -(int64_t)e : fd, -1);
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
        ct_io_fd_forget(fd);
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
        ct_io_fd_forget(fd);
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
        ct_io_fd_forget(fd);
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
    /* one of cutrace's own descriptors: left open, success reported (the
     * number stays taken, so no file of the job's can land on it) */
    ct_own_settle();
    if (__builtin_expect(ct_own_find(fd) >= 0, 0) && ct_own_is(fd))
        return 0;
    close_fn real = IO_REAL(close_fn, IO_close);
    if (__builtin_expect(!real, 0))
        return io_nested() ? (int)syscall(SYS_close, fd) : (int)io_nosys();
    uint64_t before = ct_io_fd_entry(fd);
    /* a close never starts a trace: a launcher's pre-exec child that closes
     * every descriptor and execs does nothing of ours */
    if (!ct_shim_live() || !ct_shim_recording()) {
        int r = real(fd);
        ct_io_fd_closed(fd, before);
        return r;
    }
    struct ct_span sp;
    ct_span_enter(&sp);
    /* Described before it goes away; the clock restarts after our lookup. */
    struct io_desc d;
    ct_io_desc_of(&d, fd);
    before = ct_io_fd_entry(fd);
    sp.t0 = ct_clock_now();
    int r = real(fd);
    ct_io_record_desc(&sp, IO_close, &d, r);
    ct_io_fd_closed(fd, before);
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
    ct_io_record(&sp, t1, f, fd, ct_io_iov_total(iov, cnt, r), r, -1);
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
    ct_io_record(&sp, t1, f, fd, ct_io_iov_total(iov, cnt, r), r, off);
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
    ct_io_record(&sp, t1, f, fd, ct_io_iov_total(iov, cnt, r), r, off < 0 ? -1 : off);
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
        ct_io_fd_forget(io_fileno(fp));
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
        ct_io_fd_stat_type(d.fd, &d.type);
        ct_io_fd_remember(d.fd, d.type, d.path);
    }
    if (!io_short(sp.t0, t1))
        ct_io_emit(sp.t0, t1, f, &d, 0, fp ? d.fd : -(int64_t)e, -1);
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
    uint64_t before = ct_io_fd_entry(fd);
    if (!ct_shim_live() || !ct_shim_recording()) { /* never starts a trace (see close) */
        int r = real(fp);
        ct_io_fd_closed(fd, before);
        return r;
    }
    struct ct_span sp;
    ct_span_enter(&sp);
    struct io_desc d;
    ct_io_desc_of(&d, fd);
    before = ct_io_fd_entry(fd);
    sp.t0 = ct_clock_now();
    int r = real(fp);
    ct_io_record_desc(&sp, IO_fclose, &d, r == EOF ? -1 : r);
    ct_io_fd_closed(fd, before);
    ct_span_leave(&sp);
    return r;
}

static uint64_t io_mul(size_t a, size_t b)
{
    uint64_t r;
    return __builtin_mul_overflow((uint64_t)a, (uint64_t)b, &r) ? UINT64_MAX : r;
}

/* fread and fwrite differ only in the pointer's const: one body for both. */
typedef size_t (*stdio_rw_fn)(void *, size_t, size_t, FILE *);

static size_t stdio_rw(enum io_fn f, stdio_rw_fn real, void *ptr, size_t size, size_t n, FILE *fp)
{
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
    io_done(&sp, f, fd, io_mul(size, n), (int64_t)r, -1);
    ct_span_leave(&sp);
    return r;
}

CT_EXPORT size_t fread(void *ptr, size_t size, size_t n, FILE *fp)
{
    return stdio_rw(IO_fread, (stdio_rw_fn)IO_REAL(fread_fn, IO_fread), ptr, size, n, fp);
}

CT_EXPORT size_t fwrite(const void *ptr, size_t size, size_t n, FILE *fp)
{
    /* fwrite never writes through ptr; the cast only shares the body */
    return stdio_rw(IO_fwrite, (stdio_rw_fn)IO_REAL(fwrite_fn, IO_fwrite), (void *)ptr, size, n,
                    fp);
}
