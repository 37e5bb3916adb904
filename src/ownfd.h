/*
 * cutrace's own file descriptors, kept apart from the job's.
 *
 * A job may close every descriptor above 2 (a loop of close(), close_range,
 * closefrom: daemons, launchers, spawn helpers do it) or dup2 onto any
 * number, and then open files that take the freed numbers. A recorder that
 * kept writing through its old number would write into the job's file. So
 * every descriptor of ours is registered here, with the device and inode it
 * was opened on:
 *   - the shim's close, close_range, closefrom, dup2 and dup3 wrappers
 *     (shim/io_keep.c) leave a registered descriptor open and tell the job
 *     the call succeeded; a dup2 onto a long-lived one first moves ours to
 *     another number (ct_own_step_aside), then the job gets what it asked;
 *   - long-lived ones (the trace file) are moved above the numbers jobs
 *     reuse first (ct_own_open with CT_OWN_HIGH);
 *   - the writer checks device and inode before each write (ct_own_use), so
 *     a descriptor taken over behind our back (a raw close_range syscall, Go's
 *     runtime) is never written to.
 *
 * A registered number whose device and inode no longer match is not ours
 * any more: every check drops it from the table, so the job's calls on its
 * own file at that number go through untouched.
 *
 * Thread rules: every function may be called from any thread, concurrently;
 * none allocates or takes a lock; ct_own_is is async-signal-safe. Functions
 * that make syscalls say so. errno is preserved by all of them except where
 * a return value says otherwise.
 */
#ifndef CT_OWNFD_H
#define CT_OWNFD_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#define CT_OWN_SLOTS 8

/* ct_own_open flags */
#define CT_OWN_HIGH 1 /* move above the numbers a job reuses first; may be stepped aside */

struct ct_own_slot {
    _Atomic int fd;    /* -1: free */
    _Atomic int ready; /* dev and ino are set (until then the number is ours unchecked) */
    _Atomic int busy;  /* the number a write through ct_own_use is using, or -1 */
    int high;          /* CT_OWN_HIGH: relocatable (users read fd from the slot each time) */
    /* the file it was opened on; atomic: the checks read it on any thread */
    _Atomic uint64_t dev, ino;
};

extern struct ct_own_slot ct_own_slots[CT_OWN_SLOTS];
extern _Atomic int ct_own_count;  /* slots in use: 0 makes every check one load */
extern _Atomic int ct_own_moving; /* descriptors of ours being opened or moved right now */

/*
 * Waits (yielding, at most 10 ms) while a descriptor of ours is being
 * opened or moved: between the kernel handing out its number and the table
 * publishing it, a close of the job's would take it. The shim's close,
 * close_range, closefrom, dup2 and dup3 wrappers call it first; it costs
 * one load when nothing moves (nearly always).
 */
void ct_own_settle_slow(void);
static inline void ct_own_settle(void)
{
    if (__builtin_expect(atomic_load_explicit(&ct_own_moving, memory_order_acquire) != 0, 0))
        ct_own_settle_slow();
}

/* The slot holding fd, or -1. No syscall, async-signal-safe. */
static inline int ct_own_find(int fd)
{
    if (fd < 0 || !atomic_load_explicit(&ct_own_count, memory_order_acquire))
        return -1;
    for (int i = 0; i < CT_OWN_SLOTS; i++)
        if (atomic_load_explicit(&ct_own_slots[i].fd, memory_order_acquire) == fd)
            return i;
    return -1;
}

/*
 * Whether fd is one of ours right now: registered, and (one fstat) still on
 * the device and inode it was opened on. A registered number that fails the
 * check is dropped from the table and 0 returned.
 */
int ct_own_is(int fd);

/*
 * Opens path (open(2) flags and mode) and registers the result; with
 * CT_OWN_HIGH it is first moved above the numbers jobs reuse first.
 * Returns the slot (>= 0; its descriptor in ct_own_slots[slot].fd), or
 * -errno (-ENOSPC: no free slot, nothing left open).
 */
int ct_own_open(const char *path, int flags, mode_t mode, unsigned own_flags);

/* Unregisters and closes the slot's descriptor, when it still is ours
 * (a number taken over is left to the job). */
void ct_own_close(int slot);

/* Unregisters the slot without closing anything. */
void ct_own_forget(int slot);

/*
 * For a write through a long-lived slot: returns its descriptor, verified
 * (device and inode), and marks it busy until ct_own_done; -1 when the
 * slot is free or its number was taken over (the slot is then forgotten:
 * the caller reopens its file or stops). One fstat.
 */
int ct_own_use(int slot);
void ct_own_done(int slot);

/*
 * The job is about to make fd (registered in slot) refer to something else
 * (dup2/dup3 onto it). A CT_OWN_HIGH slot moves to another high number and
 * waits (bounded, 100 ms) for a write still using the old number to enter
 * the kernel; other slots are forgotten. Either way the job's call may then
 * go ahead. Returns the old number still to close when the job's call fails
 * (ct_own_release), or -1.
 */
int ct_own_step_aside(int slot);

/* Closes the number ct_own_step_aside left open, after the job's dup2
 * failed (nothing replaced it), when it still is the slot's file. */
void ct_own_release(int oldfd, int slot);

/*
 * Reads up to n-1 bytes of a small file (/proc, a control file) through a
 * registered descriptor, NUL-terminated. Bytes read, or -1 (errno is the
 * caller's either way).
 */
long ct_own_read_small(const char *path, char *buf, unsigned long n);

/*
 * The same for a file of the output folder the shim obeys (a control
 * file, which another user could plant in a shared folder): read only when
 * it is a regular file, not a link (O_NOFOLLOW), owned by this process's
 * effective user and not writable by group or others; a FIFO or device is
 * never waited on (O_NONBLOCK). Bytes read; -1 when there is no such file;
 * -2 when there is one that fails the rule (*why says how: "a link", "a
 * FIFO", "owned by uid N", "writable by others").
 */
long ct_own_read_trusted(const char *path, char *buf, unsigned long n, const char **why);

/* In a forked child (pthread_atfork child handler): the thread that was
 * opening, moving or writing through a descriptor of ours is not there, so
 * nothing is in progress any more. Async-signal-safe. */
void ct_own_after_fork(void);

/* The lowest number CT_OWN_HIGH descriptors go to (from RLIMIT_NOFILE). */
int ct_own_high_base(void);

#endif
