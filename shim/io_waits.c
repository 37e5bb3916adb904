/*
 * The host-wait wrappers (see shim/io.c): the calls a process blocks in
 * while waiting for data -- recv, recvfrom, recvmsg, poll, ppoll, select,
 * pselect, epoll_wait. Each becomes one io record through the record path of
 * shim/io.c; a wait names a descriptor only when it waits on exactly one.
 *
 * What this file must never do: take a lock, allocate, use stdio or leave
 * errno changed on the record path; call through a NULL real function;
 * record a call made under ct_tls_guard (the recorder's own I/O, a signal
 * handler that interrupted one of these wrappers).
 */

/* Same build settings as every io*.c file (see shim/io_int.h): the
 * functions, not glibc's inline checking wrappers. */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim/io_int.h"

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
        bytes = ct_io_iov_total(msg->msg_iov, (int)msg->msg_iovlen, r);
    ct_io_record(&sp, t1, IO_recvmsg, fd, bytes, r, -1);
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
    ct_io_record(&sp, t1, IO_poll, poll_single_fd(fds, n, r), 0, r, -1);
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
    ct_io_record(&sp, t1, IO_ppoll, poll_single_fd(fds, n, r), 0, r, -1);
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
