/* State shared by recorder.c (threads and rings) and writer.c (the writer). */
#ifndef CT_RECORDER_INT_H
#define CT_RECORDER_INT_H

#include <pthread.h>
#include <sys/types.h>
#include <stdatomic.h>

#include "src/chunk.h"
#include "src/recorder.h"

struct ct_rec_state {
    atomic_int running; /* records are being taken */
    size_t ring_bytes;
    struct ct_ring *_Atomic rings[CT_MAX_RINGS];
    atomic_uint nrings_hwm; /* slots [0, hwm) may be in use */
    _Atomic uint64_t no_buffer_drops;
    pthread_key_t exit_key;

    /* writer */
    pthread_t thread;
    pthread_mutex_t mu;     /* only the writer and control calls take it */
    pthread_cond_t cv;      /* wakes the writer */
    pthread_cond_t done_cv; /* flush completion */
    int stop_req;
    uint64_t flush_req, flush_done;
    atomic_int paused;
    /* the file (writer_file.c) */
    char path[4096];
    int file_slot;               /* its descriptor's slot in src/ownfd.h, -1 before it exists */
    int file_created;            /* the file exists (not deferred, or promoted) */
    uint64_t file_dev, file_ino; /* the file's identity, for a reopen's check */
    unsigned reopened;           /* times the descriptor was found taken over and reopened */
    int deferred;                /* creation waits for something worth a trace */
    int promote;                 /* ... which was seen: create at the next write */
    uint64_t defer_bytes;        /* I/O bytes that make a process worth a trace */
    uint64_t defer_io;           /* I/O bytes seen so far */
    struct ct_buf pending;       /* the file's bytes while deferred */
    uint64_t file_len;         /* bytes in the file itself (bytes_written counts the pending too) */
    int (*ancestor_gpu)(void); /* ct_recorder_lineage */
    unsigned flush_ms;
    int zstd_level;
    void *cctx; /* ZSTD_CCtx */
    struct ct_clock_conv conv;
    struct ct_chunk_enc enc;
    struct ct_buf payload, frame;
    uint8_t *str_emitted;   /* bitmap: id already defined in the file */
    uint32_t str_scan_from; /* every id below is defined */
    uint64_t next_seq;
    uint64_t last_sync_ns;
    uint64_t no_buffer_reported;
    _Atomic uint64_t chunks, records, dropped, bytes_written;
    atomic_int write_error;
    _Atomic uint64_t async_req, async_done; /* flushes asked from signal handlers */
    /* the fatal signal a flush was asked for and when (raw clock): the
     * writer records it (a handler may not append to a ring it interrupted) */
    _Atomic int fatal_sig;
    _Atomic uint64_t fatal_ticks;
    /* a handler asked the writer to finish the trace (ct_recorder_finish_signal) */
    _Atomic int finish_req;
    _Atomic int writer_done; /* the writer wrote its last byte and closed the file */
    pid_t writer_tid;
    pid_t
        writer_pid; /* the process whose writer it is (a forked child has none until it records) */
    char live_why[600]; /* why there is no live mapping (src/live.h), "" when there is */
    int private_said;   /* the trace says some thread's ring is in private memory */
    /* CUTRACE_MAX_MB (writer_cap.c) */
    uint64_t cap_max; /* bytes, 0 = unbounded */
    int cap_stop;     /* policy: stop at the bound instead of dropping the oldest */
    int cap_stopped;  /* the bound was reached under "stop" */
    int cap_said;     /* ... and the trace says so */
    uint64_t cap_dropped_bytes, cap_dropped_frames;
    uint64_t cap_note; /* bytes just dropped, for the next chunk's error record */
    uint64_t cap_data_start;
    struct ct_cap_frame {
        uint64_t off, len;
    } * cap_frames; /* data frames written since the metadata chunk */
    size_t cap_first, cap_nframes, cap_frames_len;
};

extern struct ct_rec_state ct_rec;

/* recorder.c */
/* The calling thread's ring, created even while stopping (for the writer's
 * own records). */
struct ct_ring *ct_thread_ring_register(void);
void ct_rings_reset(void);

/* writer_cap.c */
void ct_cap_init(uint64_t max_bytes, int stop_policy);
void ct_cap_free(void);
void ct_cap_before_chunk(void);
int ct_cap_admit(uint64_t frame_len); /* 1: write the frame */
void ct_cap_wrote(uint64_t off, uint64_t len);

/* flight.c */
int ct_flight_on(void);
void ct_flight_init(const struct ct_recorder_config *cfg);
void ct_flight_free(void);
void ct_flight_head_done(void);
int ct_flight_keep(const uint8_t *p, size_t len, uint64_t now_ns);
void ct_flight_saw(unsigned kind, const uint64_t *f);
void ct_flight_request(int reason);
int ct_flight_take_request(void);
int ct_flight_hang_check(uint64_t now_ns, char *what, size_t n);
/* Writes the window; NULL on success (path set), else what failed. */
const char *ct_flight_dump(const char *why, uint64_t now_ns, char *path, size_t pathlen);

/* writer_file.c */
int ct_file_open(const struct ct_recorder_config *cfg); /* 0, -EEXIST, or the open's -errno */
void ct_file_saw(unsigned kind, const uint64_t *f);     /* each record: may decide to create */
int ct_file_write(const uint8_t *p, size_t n);          /* the next bytes: 0 or -errno */
void ct_file_cut(uint64_t len);                         /* back to len bytes after a failure */
int ct_file_promote_now(void);                          /* create a deferred file now */
int ct_file_use(void); /* verified descriptor for pwrite & co, or -1; then ct_file_done */
void ct_file_done(void);
void ct_file_close(void);
void ct_file_drop_inherited(void);

/* writer.c */
/* Starts the writer thread (ct_rec.thread): 0 or a pthread_create error. */
int ct_writer_spawn(void);
int ct_writer_open(const struct ct_recorder_config *cfg, const struct ct_meta_kv *meta,
                   size_t nmeta);
void ct_writer_close(void);

#endif
