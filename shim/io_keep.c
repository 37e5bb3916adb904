/*
 * Keeps cutrace's own descriptors (src/ownfd.h) open through the calls a
 * job uses to close or replace descriptors wholesale: close_range and
 * closefrom (the close loop of daemons, launchers and spawn helpers such as
 * Python's subprocess), dup2 and dup3 (a shell's `exec 3>file`). close
 * itself is in shim/io_calls.c. None of these is recorded.
 *
 * close_range/closefrom: the range is closed around our descriptors (in
 * ascending pieces), and the job is told it succeeded. dup2/dup3 onto one
 * of ours: ours first steps aside to another number, then the job's call
 * runs as asked, so the job's descriptor is what it wanted it to be.
 * fcntl(F_DUPFD) needs nothing: it takes the lowest free number at or
 * above its argument and so can never land on an open descriptor of ours.
 *
 * What this file must never do: close or replace a descriptor of ours;
 * change what the job's call does to any other descriptor; allocate, lock
 * or record. These wrappers may run in a vfork child (Python's subprocess)
 * and between fork and exec: they touch no state of the recorder but the
 * descriptor table, and only the calling process's view of it.
 */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim/io_int.h"
#include "src/ownfd.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

typedef int (*close_range_fn)(unsigned, unsigned, int);
typedef void (*closefrom_fn)(int);
typedef int (*dup2_fn)(int, int);
typedef int (*dup3_fn)(int, int, int);

static int close_range_real(unsigned lo, unsigned hi, int flags)
{
    close_range_fn real = IO_REAL(close_range_fn, IO_close_range);
    if (real)
        return real(lo, hi, flags);
#ifdef SYS_close_range
    return (int)syscall(SYS_close_range, lo, hi, flags);
#else
    errno = ENOSYS;
    return -1;
#endif
}

/*
 * Our descriptors in [lo, hi] that still are ours, ascending, into out.
 * Returns how many (at most CT_OWN_SLOTS).
 */
static int own_in_range(unsigned lo, unsigned hi, int *out)
{
    int n = 0;
    for (int i = 0; i < CT_OWN_SLOTS; i++) {
        int fd = atomic_load(&ct_own_slots[i].fd);
        if (fd < 0 || (unsigned)fd < lo || (unsigned)fd > hi || !ct_own_is(fd))
            continue;
        int k = n++;
        while (k > 0 && out[k - 1] > fd) {
            out[k] = out[k - 1];
            k--;
        }
        out[k] = fd;
    }
    return n;
}

/*
 * Calls close_one(lo, hi) on each piece of [first, last] between our
 * descriptors. Returns the first failure's result (errno set), else 0.
 */
static int around_ours(unsigned first, unsigned last, int flags,
                       int (*close_one)(unsigned, unsigned, int))
{
    int own[CT_OWN_SLOTS];
    int n = own_in_range(first, last, own);
    unsigned lo = first;
    for (int i = 0; i < n; i++) {
        unsigned k = (unsigned)own[i];
        if (k > lo && close_one(lo, k - 1, flags) != 0)
            return -1;
        lo = k + 1; /* k < last <= UINT_MAX here, or the loop ends */
        if (k == last)
            return 0;
    }
    return close_one(lo, last, flags);
}

CT_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
    ct_own_settle();
    /* marking close-on-exec takes nothing away: ours already are */
    if (first > last || (flags & CLOSE_RANGE_CLOEXEC) || !atomic_load(&ct_own_count))
        return close_range_real(first, last, flags);
    return around_ours(first, last, flags, close_range_real);
}

/* A piece below the last of ours: close_range, or one close at a time on a
 * kernel without it (the pieces below ours are a few hundred numbers). */
static int closefrom_piece(unsigned lo, unsigned hi, int flags)
{
    (void)flags;
    if (close_range_real(lo, hi, 0) == 0 || errno != ENOSYS)
        return 0;
    for (unsigned fd = lo; fd <= hi && fd <= INT_MAX; fd++)
        syscall(SYS_close, (int)fd);
    return 0;
}

/* The last piece: glibc's closefrom, with its own fallback (/proc). */
static int closefrom_tail(unsigned lo, unsigned hi, int flags)
{
    (void)flags;
    if (hi != UINT_MAX || lo > INT_MAX)
        return closefrom_piece(lo, hi, 0);
    closefrom_fn real = IO_REAL(closefrom_fn, IO_closefrom);
    if (real)
        real((int)lo);
    else
        closefrom_piece(lo, hi, 0);
    return 0;
}

CT_EXPORT void closefrom(int lowfd)
{
    int saved = errno;
    ct_own_settle();
    unsigned lo = lowfd < 0 ? 0 : (unsigned)lowfd;
    int own[CT_OWN_SLOTS];
    int n = atomic_load(&ct_own_count) ? own_in_range(lo, UINT_MAX, own) : 0;
    for (int i = 0; i < n; i++) {
        if ((unsigned)own[i] > lo)
            closefrom_piece(lo, (unsigned)own[i] - 1, 0);
        lo = (unsigned)own[i] + 1;
    }
    closefrom_tail(lo, UINT_MAX, 0);
    errno = saved; /* closefrom reports nothing */
}

/* Before the job's dup2/dup3 onto newfd: ours out of the way. Returns the
 * old number still to give back if the job's call fails, and its slot. */
static int make_room(int oldfd, int newfd, int *slot)
{
    ct_own_settle();
    *slot = oldfd == newfd ? -1 : ct_own_find(newfd);
    if (*slot < 0 || !ct_own_is(newfd))
        return -1;
    return ct_own_step_aside(*slot);
}

static void after_dup(int r, int moved, int slot)
{
    if (r < 0 && moved >= 0) {
        int e = errno;
        ct_own_release(moved, slot); /* nothing replaced it: our duplicate goes */
        errno = e;
    }
}

CT_EXPORT int dup2(int oldfd, int newfd)
{
    dup2_fn real = IO_REAL(dup2_fn, IO_dup2);
    int slot, moved = make_room(oldfd, newfd, &slot);
    int r;
    if (real)
        r = real(oldfd, newfd);
    else if (oldfd == newfd)
        r = fcntl(oldfd, F_GETFD) < 0 ? -1 : newfd;
    else
        r = (int)syscall(SYS_dup3, oldfd, newfd, 0);
    after_dup(r, moved, slot);
    if (r >= 0)
        ct_io_fd_forget(newfd); /* what the descriptor table knew of newfd is stale */
    return r;
}

CT_EXPORT int dup3(int oldfd, int newfd, int flags)
{
    dup3_fn real = IO_REAL(dup3_fn, IO_dup3);
    int slot, moved = make_room(oldfd, newfd, &slot);
    int r = real ? real(oldfd, newfd, flags) : (int)syscall(SYS_dup3, oldfd, newfd, flags);
    after_dup(r, moved, slot);
    if (r >= 0)
        ct_io_fd_forget(newfd);
    return r;
}
