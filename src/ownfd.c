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

static void raw_close(int fd)
{
    syscall(SYS_close, fd);
}

static int same_file(int fd, dev_t dev, ino_t ino)
{
    struct stat st;
    return fstat(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
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

int ct_own_open(const char *path, int flags, mode_t mode, unsigned own_flags)
{
    int saved = errno;
    int fd = open(path, flags, mode);
    if (fd < 0) {
        int e = -errno;
        errno = saved;
        return e;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = -errno;
        raw_close(fd);
        errno = saved;
        return e;
    }
    if (own_flags & CT_OWN_HIGH) {
        int nfd = dup_high(fd);
        if (nfd >= 0) {
            raw_close(fd);
            fd = nfd;
        }
    }
    for (int i = 0; i < CT_OWN_SLOTS; i++) {
        struct ct_own_slot *s = &ct_own_slots[i];
        int expected = -1;
        /* claim with a number no job can hold, then fill, then publish */
        if (!atomic_compare_exchange_strong(&s->fd, &expected, -2))
            continue;
        s->dev = st.st_dev;
        s->ino = st.st_ino;
        s->high = (own_flags & CT_OWN_HIGH) != 0;
        atomic_store(&s->busy, -1);
        atomic_fetch_add(&ct_own_count, 1);
        atomic_store(&s->fd, fd);
        errno = saved;
        return i;
    }
    raw_close(fd);
    errno = saved;
    return -ENOSPC;
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
    int nfd = s->high ? dup_high(old) : -1;
    if (nfd < 0) {
        /* nowhere to go (or a short-lived one): the job's call wins; the
         * writer's identity check sees the number is no longer its file */
        ct_own_forget(slot);
        errno = saved;
        return -1;
    }
    atomic_store(&s->fd, nfd);
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
