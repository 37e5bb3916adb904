/*
 * The live mapping: a file (in /dev/shm or beside the trace) that holds,
 * while a process records, everything a SIGKILL would otherwise take with
 * it: the per-thread rings, the string definitions the file does not have
 * yet, the deferred file's first bytes, the writer's clock conversion and
 * the frame it is writing. Its pages outlive the process (they are the
 * file's page cache), so whoever sees the death completes the trace from
 * it (src/salvage.h). The layout is part of the format (cutrace/format.h,
 * "Live mapping"); this header is its C form, shared by the recorder
 * (live.c) and the salvage (salvage.c).
 *
 * The hot path does not change: a ring in the mapping is written exactly
 * as a private one (ring.h); the mapping is made at start and a thread's
 * ring is carved from it at the thread's first record, which is where a
 * private ring was mapped before. Every byte a producer may touch is
 * allocated (fallocate) before it is mapped, so a full /dev/shm or folder
 * shows as a failed start (the recorder then uses private memory, as
 * before, and says so once), never as a SIGBUS in the job.
 */
#ifndef CT_LIVE_H
#define CT_LIVE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "src/clock.h"
#include "src/ring.h"

#define CT_LIVE_MAGIC        "CTLIVE1" /* 8 bytes with its NUL */
#define CT_LIVE_VERSION      1u
#define CT_LIVE_HDR_BYTES    65536u /* header page and slot table; the string log follows */
#define CT_LIVE_SLOTS_OFF    4096u
#define CT_LIVE_MAX_SLOTS    4096u /* == CT_MAX_RINGS */
#define CT_LIVE_RING_CTL     4096u /* a ring's control block, before its data */
#define CT_LIVE_STRLOG_BYTES (1u << 20)
#define CT_LIVE_PEND_BYTES   (4u << 20) /* == the deferred file's in-memory bound */

/* Where the buffers live (CUTRACE_BUFFERS). */
enum ct_live_where {
    CT_LIVE_SHM = 0,     /* a file in /dev/shm (the default) */
    CT_LIVE_DIR = 1,     /* a file beside the trace */
    CT_LIVE_PRIVATE = 2, /* process memory: a SIGKILL loses what the writer had not written */
};

/* The slot table: one word per ring slot. */
enum ct_live_slot_state {
    CT_SLOT_FREE = 0,
    CT_SLOT_SETUP = 1, /* claimed, being mapped: not read by a salvage */
    CT_SLOT_USED = 2,  /* a ring is there (active, or exited and not yet drained) */
};

enum ct_live_state {
    CT_LIVE_RECORDING = 1,
    CT_LIVE_FINISHED = 2, /* the footer is written: nothing to salvage (the file goes next) */
};

/* Ticks -> trace ns as the writer last converted them (ct_clock_conv). */
struct ct_live_conv {
    uint64_t ticks, mono_ns;
    double ns_per_tick;
    uint64_t reserved;
};

/*
 * The header, at offset 0. Written by the recorder at start (magic last),
 * then only by the writer thread (fields marked W) and by threads claiming
 * ring slots (slots_hwm, private_rings). Offsets are fixed: see the
 * static assertions in live.c and cutrace/format.h.
 */
struct ct_live_hdr {
    char magic[8];                  /* 0   CT_LIVE_MAGIC */
    uint32_t version;               /* 8   CT_LIVE_VERSION */
    uint32_t hdr_bytes;             /* 12  CT_LIVE_HDR_BYTES */
    uint32_t pid, gen;              /* 16  the recording process and its exec generation */
    uint64_t start_ticks;           /* 24  its start time: field 22 of /proc/PID/stat */
    char boot_id[40];               /* 32  /proc/sys/kernel/random/boot_id */
    uint32_t uid;                   /* 72  its effective uid */
    uint32_t tsc;                   /* 76  ring times are TSC ticks (else monotonic ns) */
    uint64_t ring_bytes;            /* 80  data bytes of every ring (a power of two) */
    uint64_t slot_bytes;            /* 88  CT_LIVE_RING_CTL + ring_bytes */
    uint64_t rings_off;             /* 96  offset of ring slot 0 */
    uint32_t max_slots;             /* 104 */
    _Atomic uint32_t slots_hwm;     /* 108 slots [0, hwm) may be in use */
    uint64_t strlog_off;            /* 112 the string log (src/strlog.h) */
    uint64_t strlog_bytes;          /* 120 */
    uint64_t pend_off, pend_cap;    /* 128 the deferred file's bytes (W, by pwrite) */
    _Atomic uint64_t pend_len;      /* 144 W: bytes of them written there */
    _Atomic uint32_t file_created;  /* 152 W: the trace file exists and holds them */
    _Atomic uint32_t state;         /* 156 W: enum ct_live_state */
    uint64_t dir_dev, dir_ino;      /* 160 the trace's folder */
    char trace_name[256];           /* 176 the trace's file name (no folder) */
    _Atomic uint32_t conv_cur;      /* 432 W: which of conv[] is current */
    uint32_t reserved0;             /* 436 */
    struct ct_live_conv conv[2];    /* 440 W */
    _Atomic uint64_t jr_seq;        /* 504 W: odd while the frame below is being written */
    uint64_t jr_slot;               /* 512 W: the ring slot whose records the frame holds */
    uint64_t jr_tail;               /* 520 W: that ring's tail once the frame is written */
    uint64_t jr_end;                /* 528 W: the trace's length once it is written */
    _Atomic uint64_t file_len;      /* 536 W: trace bytes written whole (header included) */
    _Atomic uint64_t next_seq;      /* 544 W: the next chunk's sequence number */
    _Atomic uint64_t private_rings; /* 552 threads whose ring could not be in the mapping */
    _Atomic uint64_t chunks;        /* 560 W: the footer's counts so far */
    _Atomic uint64_t records;       /* 568 W */
    _Atomic uint64_t dropped;       /* 576 W */
    _Atomic uint32_t gpu_mode;      /* 584 0 none, 1 CUPTI, 2 events (what GPU times wait in) */
    _Atomic uint32_t str_limit;     /* 588 W: string ids below were handed out */
    uint64_t pidns;                 /* 592 inode of its pid namespace (/proc/self/ns/pid) */
    _Atomic uint64_t beat_ns;       /* 600 W: CLOCK_MONOTONIC of the writer's latest pass */
};

/* The slot table of a mapped header. */
static inline _Atomic uint32_t *ct_live_slots(struct ct_live_hdr *h)
{
    return (_Atomic uint32_t *)(void *)((char *)h + CT_LIVE_SLOTS_OFF);
}

/* ---- recorder side (live.c): the writer thread, except where said ---- */

struct ct_live_cfg {
    const char *trace_path; /* the trace the mapping belongs to */
    int where;              /* enum ct_live_where */
    size_t ring_bytes;      /* as ct_ring_create rounds it */
    uint32_t pid, gen;
};

/*
 * The mapping's path for a trace (where: CT_LIVE_SHM or CT_LIVE_DIR), as
 * the recorder makes it and a salvage looks for it: beside the trace,
 * "<trace without .cutrace>.cutrace-live"; in /dev/shm,
 * "cutrace-<uid>-<folder dev>-<folder inode>-<hash of the name>.live"
 * (uid: the process's, the trace's owner). 0, or a negative errno (the
 * folder cannot be looked at, the name is too long).
 */
int ct_live_path(const char *trace_path, int where, uint32_t uid, char *out, size_t n);

/* The folder a CT_LIVE_SHM mapping goes to ("/dev/shm"; tests may set
 * CUTRACE_TEST_SHM_DIR). */
const char *ct_live_shm_dir(void);

/*
 * Makes the mapping (0600, O_EXCL|O_NOFOLLOW|O_CLOEXEC; its descriptor is
 * one of src/ownfd.h's): header, slot table and string log allocated and
 * mapped, the string table's new definitions logged there from now on.
 * Called by the writer's open, once the trace's name is taken. 0, or a
 * negative errno with why set (one line): the recorder then keeps its
 * buffers in private memory. CT_LIVE_PRIVATE returns -ENOENT, why "".
 */
int ct_live_open(const struct ct_live_cfg *cfg, char *why, size_t n);

/* 1 while a mapping is open in this process. */
int ct_live_on(void);
/* Its path ("" when none). */
const char *ct_live_where_path(void);

/*
 * A ring of ct_ring_create's size carved from the mapping, for the calling
 * thread's first record: a free slot claimed, allocated (fallocate),
 * mapped. NULL when there is no mapping or no room (the caller maps a
 * private ring; private_rings counts it). Any thread; makes syscalls
 * (a thread's first record may).
 */
struct ct_ring *ct_live_ring_new(size_t bytes, uint32_t tid);
/* A drained ring's slot back to the mapping (its memory freed). Writer. */
void ct_live_ring_free(struct ct_ring *r);
/* In a forked child: the parent's ring, unmapped here and left as it is. */
void ct_live_ring_forget(struct ct_ring *r);

/* The writer's conversion of ring times, published for a salvage. */
void ct_live_conv_set(const struct ct_clock_conv *c);

/*
 * Around the write of a frame that holds records of ring slot `slot` up
 * to `tail`: the trace will be `end` bytes long once it is written. A
 * salvage that finds a frame in flight reads the trace's length to know
 * whether it made it (then the ring's records up to tail are in it).
 */
void ct_live_frame_begin(int32_t slot, uint64_t tail, uint64_t end);
void ct_live_frame_end(void);
/* After any write: the trace's length and the footer's counts. */
void ct_live_progress(uint64_t file_len, uint64_t next_seq, uint64_t chunks, uint64_t records,
                      uint64_t dropped);
/* Every writer pass: the writer is alive (a salvage leaves a mapping whose
 * writer passed in the last seconds alone), and the string ids handed out. */
void ct_live_beat(uint64_t now_ns, uint32_t str_limit);

/* The deferred file's bytes [off, off + n), kept in the mapping as well
 * (pwrite). 0 or a negative errno. */
int ct_live_pend_write(uint64_t off, const void *p, size_t n);
/* The trace file now exists and holds every byte kept. */
void ct_live_file_created(void);

/* What GPU times of this process wait in (1 CUPTI, 2 events): a salvage
 * says their ops' GPU time was never delivered. Any thread. */
void ct_live_gpu_mode(unsigned mode);

/*
 * The trace is finished (footer written) or abandoned: the mapping's file
 * is removed and its descriptor closed. Its memory stays mapped (a late
 * record of a thread still finds its ring) until the process ends.
 */
void ct_live_close(void);

/* In a forked child (atfork): the parent's mapping is not ours; new
 * string definitions are no longer logged in it. Async-signal-safe. */
void ct_live_drop_inherited(void);

/* Threads whose ring is in private memory since the last call (the
 * writer says so once in the trace). */
uint64_t ct_live_private_rings(void);

#endif
