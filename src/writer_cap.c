/*
 * CUTRACE_MAX_MB: a bound on the disk space one process's trace takes.
 *
 * Policy "oldest" (default): when the frames written since the metadata
 * chunk approach the bound, the oldest of them are dropped in place. Their
 * bytes are overwritten by skippable frames of magic CT_SKIP_MAGIC_DROPPED
 * (each at most CT_DROPPED_FRAME_MAX long, so any reader skips them as zstd
 * prescribes) whose interiors are punched out of the file
 * (fallocate PUNCH_HOLE): the file keeps its length but no longer its
 * blocks. Strings are defined once per file, so after a drop the next chunk
 * defines every string again; the chunk also carries an error record saying
 * how much was dropped. Metadata written after the start (devices, streams,
 * communicators, module maps, stacks) goes with the frames that held it.
 * A file system that cannot punch holes falls back to "stop".
 *
 * Policy "stop": the first frame that would pass the bound is not written;
 * an error record says recording stopped there, and everything after is
 * counted as dropped (the footer still closes the file).
 *
 * Runs on the writer thread only.
 */
#include "src/recorder_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CT_DROPPED_FRAME_MAX (32u << 20)
#define CT_BLOCK             4096u

static uint64_t live_bytes(void)
{
    return atomic_load(&ct_rec.bytes_written) - ct_rec.cap_dropped_bytes;
}

void ct_cap_init(uint64_t max_bytes, int stop_policy)
{
    ct_rec.cap_max = max_bytes;
    ct_rec.cap_stop = stop_policy;
    ct_rec.cap_stopped = 0;
    ct_rec.cap_dropped_bytes = 0;
    ct_rec.cap_nframes = ct_rec.cap_first = 0;
    ct_rec.cap_data_start = 0;
}

void ct_cap_free(void)
{
    free(ct_rec.cap_frames);
    ct_rec.cap_frames = NULL;
    ct_rec.cap_frames_len = 0;
}

/* Remembers a data frame written at [off, off + len). */
void ct_cap_wrote(uint64_t off, uint64_t len)
{
    if (!ct_rec.cap_max || ct_rec.cap_stop)
        return;
    if (ct_rec.cap_nframes == ct_rec.cap_frames_len) {
        /* compact what was dropped, then grow */
        size_t live = ct_rec.cap_nframes - ct_rec.cap_first;
        if (live && ct_rec.cap_first)
            memmove(ct_rec.cap_frames, ct_rec.cap_frames + ct_rec.cap_first,
                    live * sizeof(*ct_rec.cap_frames));
        ct_rec.cap_nframes = live;
        ct_rec.cap_first = 0;
        if (live == ct_rec.cap_frames_len) {
            size_t n = ct_rec.cap_frames_len ? ct_rec.cap_frames_len * 2 : 1024;
            void *p = realloc(ct_rec.cap_frames, n * sizeof(*ct_rec.cap_frames));
            if (!p) {
                ct_rec.cap_stop = 1; /* cannot track frames: bound by stopping */
                return;
            }
            ct_rec.cap_frames = p;
            ct_rec.cap_frames_len = n;
        }
    }
    ct_rec.cap_frames[ct_rec.cap_nframes++] = (struct ct_cap_frame){off, len};
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Turns [a, b) into skippable frames and gives their interiors back to the
 * file system. 0, or a negative errno (nothing is changed on EOPNOTSUPP). */
static int drop_range(uint64_t a, uint64_t b)
{
    for (uint64_t p = a; p < b;) {
        uint64_t len = b - p > CT_DROPPED_FRAME_MAX ? CT_DROPPED_FRAME_MAX : b - p;
        if (b - (p + len) < 8 && p + len < b)
            len -= 8; /* never leave a tail too short for a frame header */
        uint8_t h[8];
        put_le32(h, CT_SKIP_MAGIC_DROPPED);
        put_le32(h + 4, (uint32_t)(len - 8));
        int fd = ct_file_use();
        if (fd < 0)
            return -EBADF;
        if (pwrite(fd, h, 8, (off_t)p) != 8) {
            int e = errno;
            ct_file_done();
            return -e;
        }
        uint64_t lo = (p + 8 + CT_BLOCK - 1) / CT_BLOCK * CT_BLOCK;
        uint64_t hi = (p + len) / CT_BLOCK * CT_BLOCK;
        if (hi > lo && fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)lo,
                                 (off_t)(hi - lo)) != 0) {
            int e = errno;
            ct_file_done();
            /* the bytes are already a skippable frame: harmless, just not freed */
            return -e;
        }
        ct_file_done();
        p += len;
    }
    return 0;
}

/* Drops the oldest frames until the live bytes are at most target. */
static void drop_oldest(uint64_t target)
{
    if (ct_rec.cap_first >= ct_rec.cap_nframes)
        return;
    uint64_t a = ct_rec.cap_frames[ct_rec.cap_first].off, b = a, freed = 0;
    size_t i = ct_rec.cap_first;
    while (i < ct_rec.cap_nframes && live_bytes() - freed > target) {
        b = ct_rec.cap_frames[i].off + ct_rec.cap_frames[i].len;
        freed = b - a;
        i++;
    }
    if (b - a < 16)
        return;
    int rc = drop_range(a, b);
    if (rc == -EOPNOTSUPP || rc == -ENOSYS) {
        /* a file system without holes: only stopping can bound the file */
        ct_rec.cap_stop = 1;
        return;
    }
    ct_rec.cap_first = i;
    ct_rec.cap_dropped_bytes += b - a;
    ct_rec.cap_dropped_frames += i - ct_rec.cap_first;
    /* every string is defined again in the next chunk: its definitions may
     * have been in the dropped frames */
    memset(ct_rec.str_emitted, 0, (ct_strtab_limit(&ct_strings) + 7) / 8);
    ct_rec.str_emitted[0] = 1;
    ct_rec.str_scan_from = 1;
    ct_rec.cap_note = b - a;
}

void ct_cap_before_chunk(void)
{
    if (!ct_rec.cap_max || ct_rec.cap_stop || ct_rec.cap_max < 4 * CT_BLOCK)
        return;
    if (live_bytes() > ct_rec.cap_max - ct_rec.cap_max / 4)
        drop_oldest(ct_rec.cap_max / 2);
}

int ct_cap_admit(uint64_t frame_len)
{
    if (!ct_rec.cap_max)
        return 1;
    if (ct_rec.cap_stopped)
        return 0;
    if (live_bytes() + frame_len <= ct_rec.cap_max)
        return 1;
    if (!ct_rec.cap_stop) {
        drop_oldest(ct_rec.cap_max > frame_len ? ct_rec.cap_max - frame_len : 0);
        if (!ct_rec.cap_stop && live_bytes() + frame_len <= ct_rec.cap_max)
            return 1;
        if (!ct_rec.cap_stop)
            return 0; /* one frame larger than the bound: that frame is lost */
    }
    ct_rec.cap_stopped = 1;
    return 0;
}
