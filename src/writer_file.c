/*
 * The trace file itself, as the writer thread sees it: when it is created,
 * and that every byte goes to it and nowhere else.
 *
 * Created late (cfg->defer_bytes): until the process does something worth a
 * trace -- a CUDA, NCCL or NVTX record, or data I/O that moved defer_bytes
 * (any byte, for a descendant of a process that made a CUDA or NCCL call:
 * see ct_recorder_lineage) -- the file's bytes are kept in memory (at most
 * CT_DEFER_MAX, past which the file is created anyway). A process that ends
 * before that (a shell wrapper, a version probe, a launcher's pre-exec
 * child, an interpreter that only imported its modules) leaves no file; its
 * caller learns so from ct_recorder_stats (file_created 0).
 *
 * Data I/O is I/O on anything but the program's own code. Loading code is
 * start-up, whenever it happens: Python reads its modules' .py/.pyc files
 * with read() at start and at every later (lazy) import, more than 1 MiB
 * for `python3 -c 'print(1)'` with a few .pth files, and so did every
 * launcher, probe and helper written in Python. Code is told by the file's
 * name (code_path), so no time after which I/O counts has to be guessed: a
 * job reads its data from its first second, and imports until its last.
 *
 * Written only through its own descriptor: the file is opened through
 * src/ownfd.h (above the numbers jobs reuse first, protected from the
 * shim's close/dup2 wrappers) and its device and inode are checked before
 * every write. A number taken over behind our back is never written to:
 * the file is reopened by its path (same device and inode, at the offset
 * written so far), or, when that fails, writing stops and whoever asked is
 * told once (ct_writer_failed with -EBADF).
 *
 * Runs on the writer thread only (and in ct_recorder_start, before it).
 */
#include "src/recorder_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/live.h"
#include "src/ownfd.h"

#define CT_DEFER_MAX ((size_t)4 << 20) /* a process this busy gets its trace anyway */

static const int k_create = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;

void (*ct_on_file_created)(void);

static int create_now(void)
{
    int slot = ct_own_open(ct_rec.path, k_create, 0600, CT_OWN_HIGH);
    if (slot < 0)
        return slot;
    ct_rec.file_slot = slot;
    ct_rec.file_dev = atomic_load(&ct_own_slots[slot].dev);
    ct_rec.file_ino = atomic_load(&ct_own_slots[slot].ino);
    ct_rec.file_created = 1;
    if (ct_on_file_created)
        ct_on_file_created();
    return 0;
}

int ct_file_open(const struct ct_recorder_config *cfg)
{
    ct_rec.file_slot = -1;
    ct_rec.file_created = 0;
    ct_rec.deferred = 0;
    ct_rec.promote = 0;
    ct_rec.defer_io = 0;
    ct_rec.reopened = 0;
    ct_rec.pending.len = 0;
    ct_rec.file_len = 0;
    snprintf(ct_rec.path, sizeof(ct_rec.path), "%s", cfg->path ? cfg->path : "");
    if (ct_flight_on())
        return 0; /* the flight recorder writes files only on request */
    ct_rec.defer_bytes = cfg->defer_bytes;
    if (!cfg->defer_bytes)
        return create_now();
    /* The name must be free now, as O_EXCL would have said: the caller
     * picks the next generation's name on -EEXIST. */
    struct stat st;
    if (lstat(ct_rec.path, &st) == 0)
        return -EEXIST;
    ct_rec.deferred = 1;
    return 0;
}

/* An ancestor of this process made a CUDA or NCCL call (a forked or
 * exec'ed descendant: a data-loader worker, spawned or forked). */
static int ancestor_gpu(void)
{
    return ct_rec.ancestor_gpu && ct_rec.ancestor_gpu();
}

static int ends_with(const char *s, size_t len, const char *suffix)
{
    size_t n = strlen(suffix);
    return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

/*
 * A file of the program's code, by its name: Python sources and bytecode
 * (.py, .pyc, .pyo), Python's path files (.pth, read by site at start-up),
 * and shared objects (.so, .so.N...; the dynamic loader maps them, but
 * some loaders read them).
 */
static int code_path(uint32_t id)
{
    const char *s;
    uint32_t len;
    if (id == 0 || ct_strtab_get(&ct_strings, id, &s, &len) != 0)
        return 0;
    if (ends_with(s, len, ".py") || ends_with(s, len, ".pyc") || ends_with(s, len, ".pyo") ||
        ends_with(s, len, ".pth") || ends_with(s, len, ".so"))
        return 1;
    /* libfoo.so.1.2: ".so", then a run of dots and digits that starts with a dot */
    uint32_t i = len;
    while (i > 0 && ((s[i - 1] >= '0' && s[i - 1] <= '9') || s[i - 1] == '.'))
        i--;
    return i < len && s[i] == '.' && i >= 3 && memcmp(s + i - 3, ".so", 3) == 0;
}

void ct_file_saw(unsigned kind, const uint64_t *f)
{
    if (!ct_rec.deferred || ct_rec.promote)
        return;
    switch (kind) {
    case CT_REC_API:
    case CT_REC_GPU:
    case CT_REC_NCCL:
    case CT_REC_NVTX_RANGE:
    case CT_REC_NVTX_MARK: ct_rec.promote = 1; break;
    case CT_REC_IO:
        /* data moved (not a poll count), not code loaded */
        if ((int64_t)f[CT_IO_RESULT] > 0 && f[CT_IO_BYTES] > 0 && !code_path(f[CT_IO_PATH]))
            ct_rec.defer_io += f[CT_IO_RESULT];
        /* a descendant of a GPU process (a data-loader worker) from its
         * first byte of data moved; opens and closes alone (a launcher's
         * pre-exec child) never make a trace */
        if (ct_rec.defer_io >= ct_rec.defer_bytes || (ct_rec.defer_io && ancestor_gpu()))
            ct_rec.promote = 1;
        break;
    default: break;
    }
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (w == 0)
            return -EIO;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The number was taken over: our file again, by its path, at the end of
 * what is in it (while the kept bytes of a deferred file are being written,
 * that is less than bytes_written). 0, or -EBADF (the path is gone or
 * another file). */
static int reopen(void)
{
    int slot = ct_own_open(ct_rec.path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0, CT_OWN_HIGH);
    if (slot < 0)
        return -EBADF;
    struct ct_own_slot *s = &ct_own_slots[slot];
    if (atomic_load(&s->dev) != ct_rec.file_dev || atomic_load(&s->ino) != ct_rec.file_ino ||
        lseek(atomic_load(&s->fd), (off_t)ct_rec.file_len, SEEK_SET) < 0) {
        ct_own_close(slot);
        return -EBADF;
    }
    ct_rec.file_slot = slot;
    ct_rec.reopened++;
    return 0;
}

static int promote(void);

int ct_file_use(void)
{
    /* what needs the file itself (CUTRACE_MAX_MB's pwrite and hole punching)
     * creates a deferred one first */
    if (ct_rec.deferred && ct_file_promote_now() != 0)
        return -1;
    if (!ct_rec.file_created)
        return -1;
    int fd = ct_own_use(ct_rec.file_slot);
    if (fd >= 0)
        return fd;
    ct_own_forget(ct_rec.file_slot); /* that number is the job's now: never closed by us */
    ct_rec.file_slot = -1;
    if (reopen() != 0)
        return -1;
    char what[160];
    snprintf(what, sizeof(what),
             "cutrace: the trace's descriptor was closed or replaced behind the shim's back; "
             "reopened the file (%u time%s)",
             ct_rec.reopened, ct_rec.reopened == 1 ? "" : "s");
    ct_emit_error(what, -EBADF);
    return ct_own_use(ct_rec.file_slot);
}

void ct_file_done(void)
{
    ct_own_done(ct_rec.file_slot);
}

/* Verified write of the file's next bytes. */
static int file_append(const uint8_t *p, size_t n)
{
    int fd = ct_file_use();
    if (fd < 0)
        return -EBADF;
    int rc = write_all(fd, p, n);
    ct_file_done();
    if (!rc)
        ct_rec.file_len += n;
    return rc;
}

/* Creates the file and writes what was kept for it. */
static int promote(void)
{
    ct_rec.deferred = 0;
    int rc = create_now();
    if (!rc && ct_rec.pending.len)
        rc = file_append(ct_rec.pending.p, ct_rec.pending.len);
    if (!rc)
        ct_live_file_created();
    ct_buf_free(&ct_rec.pending);
    return rc;
}

int ct_file_write(const uint8_t *p, size_t n)
{
    if (ct_rec.deferred) {
        if (!ct_rec.promote && ct_rec.pending.len + n <= CT_DEFER_MAX) {
            if (ct_buf_reserve(&ct_rec.pending, n))
                return -ENOMEM;
            memcpy(ct_rec.pending.p + ct_rec.pending.len, p, n);
            /* and in the live mapping, where a salvage finds them if the
             * process dies before it is worth a file; a failure there
             * costs only that */
            ct_live_pend_write(ct_rec.pending.len, p, n);
            ct_rec.pending.len += n;
            return 0;
        }
        int rc = promote();
        if (rc)
            return rc;
    }
    return file_append(p, n);
}

void ct_file_cut(uint64_t len)
{
    if (ct_rec.deferred) {
        if (len < ct_rec.pending.len)
            ct_rec.pending.len = (size_t)len;
        return;
    }
    int fd = ct_file_use();
    if (fd < 0)
        return;
    if (ftruncate(fd, (off_t)len) != 0) {
        /* the reader reports the torn frame at the end as a cut */
    }
    ct_rec.file_len = len;
    ct_file_done();
}

/* Creates a deferred file now. 0 or -errno. */
int ct_file_promote_now(void)
{
    if (!ct_rec.deferred)
        return 0;
    ct_rec.promote = 1;
    return promote();
}

void ct_file_close(void)
{
    /* a descendant whose ancestor made its first CUDA or NCCL call after
     * the descendant's last record: the descendant's file now, with
     * everything kept */
    if (ct_rec.deferred && ct_rec.defer_io && ancestor_gpu() && !atomic_load(&ct_rec.write_error))
        promote();
    /* never created: the process did nothing worth a trace */
    ct_rec.deferred = 0;
    ct_buf_free(&ct_rec.pending);
    if (ct_rec.file_slot >= 0)
        ct_own_close(ct_rec.file_slot);
    ct_rec.file_slot = -1;
}

void ct_file_drop_inherited(void)
{
    /* a forked child's copy of the parent's descriptor: closed, when it
     * still is that file (the child may have closed it and reused the
     * number); async-signal-safe */
    if (ct_rec.file_slot >= 0)
        ct_own_close(ct_rec.file_slot);
    ct_rec.file_slot = -1;
}
