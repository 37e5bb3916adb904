/*
 * The file-I/O layer's descriptor table (see shim/io.c): type and path of
 * each fd, for the io records. Filled at open/creat/fopen (the path as
 * given) by shim/io_calls.c or, for descriptors we did not see opened
 * (pipes, sockets, inherited ones), lazily on first use from fstat and
 * /proc/self/fd/N (pipe:[ino], socket:[ino]); close forgets the entry.
 *
 * What this file must never do: take a lock, allocate, use stdio or leave
 * errno changed (the lookup runs on the record path, under ct_tls_guard);
 * probe a descriptor more than once while its entry stays valid.
 */

/* Same build settings as every io*.c file (see shim/io_int.h). */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim/io_int.h"

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

int ct_io_fd_stat_type(int fd, unsigned *type)
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
    if (!ct_io_fd_stat_type(fd, &d->type))
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

void ct_io_desc_of(struct io_desc *d, int fd)
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

void ct_io_fd_remember(int fd, unsigned type, uint32_t path)
{
    if (fd >= 0 && fd < IO_FD_MAX)
        atomic_store_explicit(&io_fds[fd], fd_pack(type, path), memory_order_release);
}

void ct_io_fd_forget(int fd)
{
    if (fd >= 0 && fd < IO_FD_MAX)
        atomic_store_explicit(&io_fds[fd], 0, memory_order_release);
}

uint64_t ct_io_fd_entry(int fd)
{
    return fd >= 0 && fd < IO_FD_MAX ? atomic_load_explicit(&io_fds[fd], memory_order_acquire) : 0;
}

void ct_io_fd_closed(int fd, uint64_t before)
{
    if (fd >= 0 && fd < IO_FD_MAX)
        atomic_compare_exchange_strong(&io_fds[fd], &before, 0);
}

void ct_io_fd_forget_all(void)
{
    atomic_fetch_add(&io_epoch, 1);
}
