/*
 * The table of cutrace's own descriptors (see src/ownfd.h for why and for
 * the rules). Closes go to the kernel directly (SYS_close): the shim's own
 * close wrapper would refuse to close a registered number, and a number
 * being unregistered is ours to close.
 *
 * What this file must never do: close or write through a number whose
 * device and inode are not the ones we opened; allocate; lock; block the
 * job for longer than the bound ct_own_step_aside states.
 */
#include "src/ownfd.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FREE_SLOT                                                                                  \
    {                                                                                              \
        .fd = -1, .busy = -1                                                                       \
    }
struct ct_own_slot ct_own_slots[CT_OWN_SLOTS] = {FREE_SLOT, FREE_SLOT, FREE_SLOT, FREE_SLOT,
                                                 FREE_SLOT, FREE_SLOT, FREE_SLOT, FREE_SLOT};
_Static_assert(CT_OWN_SLOTS == 8, "one FREE_SLOT per slot above");
_Atomic int ct_own_count;
_Atomic int ct_own_moving;

void ct_own_settle_slow(void)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (atomic_load(&ct_own_moving)) {
        sched_yield();
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) > 10000000L)
            break;
    }
}

static void raw_close(int fd)
{
    syscall(SYS_close, fd);
}

static int same_file(int fd, uint64_t dev, uint64_t ino)
{
    struct stat st;
    return fstat(fd, &st) == 0 && (uint64_t)st.st_dev == dev && (uint64_t)st.st_ino == ino;
}

void ct_own_forget(int slot)
{
    if (slot < 0 || slot >= CT_OWN_SLOTS)
        return;
    if (atomic_exchange(&ct_own_slots[slot].fd, -1) >= 0)
        atomic_fetch_sub(&ct_own_count, 1);
}

int ct_own_is(int fd)
{
    int slot = ct_own_find(fd);
    if (slot < 0)
        return 0;
    if (!atomic_load(&ct_own_slots[slot].ready))
        return 1; /* being opened: ours, its identity is being taken */
    int saved = errno;
    int ok = same_file(fd, ct_own_slots[slot].dev, ct_own_slots[slot].ino);
    errno = saved;
    if (!ok) {
        /* taken over behind our back: the number is the job's now */
        int expected = fd;
        if (atomic_compare_exchange_strong(&ct_own_slots[slot].fd, &expected, -1))
            atomic_fetch_sub(&ct_own_count, 1);
    }
    return ok;
}

int ct_own_high_base(void)
{
    /* Jobs reuse the lowest free numbers first; shells keep 10..255 for
     * their own saves and scripts. Three quarters of the soft limit, at most
     * 768 (the quarter above stays free for the job at a limit of 1024). */
    struct rlimit rl;
    long lim = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        lim = (long)rl.rlim_cur;
    if (lim > 1024)
        lim = 1024;
    long base = lim * 3 / 4;
    return base < 3 ? 3 : (int)base;
}

/* A duplicate of fd at a high number (close-on-exec), or -1. */
static int dup_high(int fd)
{
    int base = ct_own_high_base();
    int nfd = fcntl(fd, F_DUPFD_CLOEXEC, base);
    if (nfd < 0 && base > 3)
        nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3); /* fewer free numbers up there than hoped */
    return nfd;
}

/* A free slot, claimed with a number no job can hold; -1 when none. */
static int claim_slot(void)
{
    for (int i = 0; i < CT_OWN_SLOTS; i++) {
        int expected = -1;
        if (atomic_compare_exchange_strong(&ct_own_slots[i].fd, &expected, -2)) {
            atomic_store(&ct_own_slots[i].ready, 0);
            atomic_store(&ct_own_slots[i].busy, -1);
            atomic_fetch_add(&ct_own_count, 1);
            return i;
        }
    }
    return -1;
}

/*
 * Opens path into the claimed slot. The number is published at once, so a
 * close loop of the job's that runs meanwhile leaves it alone; its identity
 * is then checked against the path's (a close_range that got in before the
 * publication, and an open of the job's that took the number, would show
 * another file): such a number is given up (never closed by us) and the
 * path opened once more, without creating it. 0 or -errno.
 */
static int open_into(struct ct_own_slot *s, const char *path, int flags, mode_t mode)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = open(path, flags, mode);
        if (fd < 0)
            return -errno;
        atomic_store(&s->fd, fd);
        struct stat st, sp;
        int have = fstat(fd, &st) == 0;
        if (have && (stat(path, &sp) != 0 || (sp.st_dev == st.st_dev && sp.st_ino == st.st_ino))) {
            atomic_store(&s->dev, (uint64_t)st.st_dev);
            atomic_store(&s->ino, (uint64_t)st.st_ino);
            atomic_store(&s->ready, 1);
            return 0;
        }
        atomic_store(&s->fd, -2); /* not ours any more: the job's number */
        flags &= ~(O_CREAT | O_EXCL | O_TRUNC);
    }
    return -EBADF;
}

int ct_own_open(const char *path, int flags, mode_t mode, unsigned own_flags)
{
    int saved = errno;
    int slot = claim_slot();
    if (slot < 0) {
        errno = saved;
        return -ENOSPC;
    }
    struct ct_own_slot *s = &ct_own_slots[slot];
    s->high = (own_flags & CT_OWN_HIGH) != 0;
    /* The job's closes wait (ct_own_settle) while the trace's descriptor is
     * opened and moved, which happens once or twice in a process's life; a
     * short-lived one (a /proc read every health period) is open for
     * microseconds and not worth making the job's closes wait on. */
    int moving = s->high;
    if (moving)
        atomic_fetch_add(&ct_own_moving, 1);
    int rc = open_into(s, path, flags, mode);
    if (rc) {
        atomic_store(&s->fd, -1);
        atomic_fetch_sub(&ct_own_count, 1);
        if (moving)
            atomic_fetch_sub(&ct_own_moving, 1);
        errno = saved;
        return rc;
    }
    if (s->high) {
        int fd = atomic_load(&s->fd);
        int nfd = dup_high(fd);
        if (nfd >= 0) {
            atomic_store(&s->fd, nfd); /* the high number first, then the low one goes */
            raw_close(fd);
        }
    }
    if (moving)
        atomic_fetch_sub(&ct_own_moving, 1);
    errno = saved;
    return slot;
}

void ct_own_close(int slot)
{
    if (slot < 0 || slot >= CT_OWN_SLOTS)
        return;
    struct ct_own_slot *s = &ct_own_slots[slot];
    int fd = atomic_exchange(&s->fd, -1);
    if (fd < 0)
        return;
    atomic_fetch_sub(&ct_own_count, 1);
    int saved = errno;
    if (same_file(fd, s->dev, s->ino))
        raw_close(fd);
    errno = saved;
}

int ct_own_use(int slot)
{
    if (slot < 0 || slot >= CT_OWN_SLOTS)
        return -1;
    struct ct_own_slot *s = &ct_own_slots[slot];
    for (;;) {
        int fd = atomic_load(&s->fd);
        if (fd < 0)
            return -1;
        /* busy before the re-check: a dup2 that moves the slot after this
         * sees busy and waits (ct_own_step_aside) */
        atomic_store(&s->busy, fd);
        if (atomic_load(&s->fd) != fd) {
            atomic_store(&s->busy, -1);
            continue;
        }
        int saved = errno;
        int ok = same_file(fd, s->dev, s->ino);
        errno = saved;
        if (ok)
            return fd;
        atomic_store(&s->busy, -1);
        int expected = fd;
        if (atomic_compare_exchange_strong(&s->fd, &expected, -1))
            atomic_fetch_sub(&ct_own_count, 1);
        return -1;
    }
}

void ct_own_done(int slot)
{
    if (slot >= 0 && slot < CT_OWN_SLOTS)
        atomic_store(&ct_own_slots[slot].busy, -1);
}

int ct_own_step_aside(int slot)
{
    if (slot < 0 || slot >= CT_OWN_SLOTS)
        return -1;
    struct ct_own_slot *s = &ct_own_slots[slot];
    int old = atomic_load(&s->fd);
    if (old < 0)
        return -1;
    int saved = errno;
    atomic_fetch_add(&ct_own_moving, 1);
    int nfd = s->high ? dup_high(old) : -1;
    if (nfd >= 0)
        atomic_store(&s->fd, nfd);
    atomic_fetch_sub(&ct_own_moving, 1);
    if (nfd < 0) {
        /* nowhere to go (or a short-lived one): the job's call wins; the
         * writer's identity check sees the number is no longer its file */
        ct_own_forget(slot);
        errno = saved;
        return -1;
    }
    /* A write that loaded the old number before the move has marked it
     * busy; once it is in the kernel, replacing the number no longer
     * redirects it. A write to a local file takes microseconds; 100 ms
     * bounds what a stalled disk could cost the job's call. */
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (atomic_load(&s->busy) == old) {
        sched_yield();
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) > 100000000L)
            break;
    }
    errno = saved;
    return old;
}

void ct_own_release(int oldfd, int slot)
{
    if (oldfd < 0 || slot < 0 || slot >= CT_OWN_SLOTS)
        return;
    int saved = errno;
    if (same_file(oldfd, ct_own_slots[slot].dev, ct_own_slots[slot].ino))
        raw_close(oldfd);
    errno = saved;
}

long ct_own_read_small(const char *path, char *buf, unsigned long n)
{
    int slot = ct_own_open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0, 0);
    if (slot < 0 || n == 0)
        return -1;
    int saved = errno;
    ssize_t r = read(atomic_load(&ct_own_slots[slot].fd), buf, n - 1);
    ct_own_close(slot);
    errno = saved;
    if (r < 0)
        return -1;
    buf[r] = 0;
    return (long)r;
}

long ct_own_read_trusted(const char *path, char *buf, unsigned long n, const char **why)
{
    *why = NULL;
    int saved = errno;
    int slot = ct_own_open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0, 0);
    if (slot < 0) {
        int e = errno;
        errno = saved;
        if (e == ELOOP) { /* O_NOFOLLOW met a link */
            *why = "a link";
            return -2;
        }
        return -1;
    }
    int fd = atomic_load(&ct_own_slots[slot].fd);
    struct stat st;
    long r = -2;
    if (n == 0 || fstat(fd, &st) != 0)
        r = -1;
    else if (!S_ISREG(st.st_mode))
        *why = S_ISFIFO(st.st_mode) ? "a FIFO" : "not a regular file";
    else if (st.st_uid != geteuid())
        *why = "owned by another user";
    else if (st.st_mode & (S_IWGRP | S_IWOTH))
        *why = "writable by group or others";
    else if ((r = read(fd, buf, n - 1)) >= 0)
        buf[r] = 0;
    else
        r = -1;
    ct_own_close(slot);
    errno = saved;
    return r;
}

void ct_own_after_fork(void)
{
    atomic_store(&ct_own_moving, 0);
    for (int i = 0; i < CT_OWN_SLOTS; i++)
        atomic_store(&ct_own_slots[i].busy, -1);
}
