/*
 * Salvage: the trace of a process that died without finishing it (SIGKILL,
 * the OOM killer, a scheduler's time limit), completed from its live
 * mapping (src/live.h). What the process wrote whole stays as it is; the
 * records still in its rings, the string definitions its file lacks and the
 * frame it was writing are recovered; the end is marked (the salvage frame,
 * cutrace/format.h) and a footer added.
 *
 * Rules every caller keeps:
 *   - the mapping of a process that lives is never touched (pid and start
 *     time from /proc/PID/stat, and the writer's heartbeat in the mapping);
 *   - a mapping is opened with O_NOFOLLOW, must be a regular file with one
 *     link, owned by the trace's owner (and by the caller to be written);
 *   - the mapping may be damaged anywhere (a cut file, another program's
 *     bytes): every size and offset in it is checked, and decoding stops at
 *     the first record that is not one (fuzzed: tests/fuzz/fuzz_salvage.c);
 *   - a record being written at the instant of death is dropped by its
 *     ring's commit marker (the head), never decoded;
 *   - the completed trace replaces the original atomically (a temporary file
 *     beside it, renamed), and only then is the mapping removed.
 */
#ifndef CT_SALVAGE_H
#define CT_SALVAGE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "src/chunk.h"

/* What a salvage found: the salvage frame's fields (cutrace/format.h). */
struct ct_salvage_info {
    uint64_t at;            /* offset of the first recovered chunk */
    uint64_t records;       /* recovered from the mapping */
    uint64_t half_written;  /* being written at death: dropped */
    uint64_t strings_lost;  /* definitions the log could not hold */
    uint64_t ring_drops;    /* counted dropped in the rings, not yet reported */
    uint64_t last_ns;       /* the last recovered record's time */
    uint64_t real_ns;       /* CLOCK_REALTIME of the salvage */
    int32_t signal;         /* what ended the process, 0 unknown */
    uint32_t flags;         /* CT_SALVAGE_* */
    uint64_t damaged_rings; /* rings whose records stopped at damage */
};

/* A live mapping, open for reading. */
struct ct_live_map {
    const uint8_t *p;
    size_t len;
    int fd;     /* -1 for memory */
    int mapped; /* p is an mmap of fd */
    uint32_t uid;
    uint64_t dev, ino; /* of the file opened (a descriptor taken over is told by them) */
    char path[4200];
};

/* Whether the process that made a mapping lives. */
enum ct_live_owner {
    CT_OWNER_GONE = 0,      /* dead (or its pid is another process now): salvage */
    CT_OWNER_ALIVE = 1,     /* never touched */
    CT_OWNER_ELSEWHERE = 2, /* made on another boot or machine: cannot be told, not touched */
};

/*
 * Opens the mapping at path read-only (O_NOFOLLOW): a regular file with one
 * link whose owner is `owner` (any owner when owner is (uid_t)-1) and the
 * uid its header names. 0; -ENOENT when there is none; -EPERM when it is a
 * link, not a regular file or someone else's (ignored, err says why);
 * -EPROTO when it is not a mapping (err says where).
 */
int ct_live_map_open(struct ct_live_map *m, const char *path, uid_t owner, char *err, size_t n);
/* A mapping's bytes from memory (tests, the fuzzer). 0 or -EPROTO. */
int ct_live_map_mem(struct ct_live_map *m, const uint8_t *p, size_t n);
void ct_live_map_close(struct ct_live_map *m);

/* The mapping of the trace at trace_path, owned by owner: beside it, or
 * in /dev/shm. 0 (m open), -ENOENT, or ct_live_map_open's codes. */
int ct_live_map_find(struct ct_live_map *m, const char *trace_path, uid_t owner, char *err,
                     size_t n);

/* enum ct_live_owner for an open mapping; *pid set to its process. */
int ct_live_map_owner(const struct ct_live_map *m, uint32_t *pid);

/* The trace's file name the mapping's header names (no folder), in name
 * (n bytes), or NULL when it is not a plain name. */
const char *ct_live_map_trace_name(const struct ct_live_map *m, char *name, size_t n);

/* 1 when the mapping's header says the trace's folder is the one at dir. */
int ct_live_map_in_dir(const struct ct_live_map *m, const char *dir);

/* 1 when the mapping's writer finished its trace (footer written). */
int ct_live_map_finished(const struct ct_live_map *m);

/* A salvage built in memory. */
struct ct_salvage {
    int prefix_in_file;  /* the trace begins with the file's first prefix_len bytes... */
    uint64_t prefix_len; /* ...else with tail's (the deferred file's bytes kept in the mapping) */
    struct ct_buf tail;  /* then: recovered chunks, the salvage frame, the footer */
    struct ct_salvage_info info;
};

/*
 * Builds the salvage of mapping m. file_size: the trace file's length, -1
 * when there is none; sig: the signal that ended the process when the
 * caller knows it (a process's parent), else 0. Returns 0; -EALREADY when
 * the writer finished the trace (nothing to salvage); -ENOENT when the
 * mapping says the file exists and it does not; -ENODATA when the mapping
 * holds no trace header (the process died at its start) or the trace was
 * never created and nothing recovered makes the process worth one (no
 * CUDA, NCCL, NVTX record or data I/O: as at a clean end, it leaves none);
 * -ENOMEM, -EPROTO
 * (err says what). Reads only.
 */
int ct_salvage_build(const struct ct_live_map *m, int64_t file_size, int sig, struct ct_salvage *s,
                     char *err, size_t n);
void ct_salvage_free(struct ct_salvage *s);

/* ct_salvage_build's first part alone, cheap (the header read): whether
 * the completed trace begins with the file's bytes (*in_file) and how many
 * (*len; else the mapping's). Its codes but -ENODATA. */
int ct_salvage_prefix(const struct ct_live_map *m, int64_t file_size, int *in_file, uint64_t *len,
                      char *err, size_t n);

/*
 * Completes the trace of the mapping at map_path, whose trace is in folder
 * dir (the name its header gives), and removes the mapping (sig_for, when
 * not NULL, names the signal that ended process pid, or 0): the trace's
 * valid bytes and the salvage written to a temporary file beside it
 * (0600, O_EXCL), synced and renamed over the trace; a trace that was never
 * created is created. The mapping must be the caller's (uid); an existing
 * trace must be a regular file with one link of the same owner. trace_out
 * receives the trace's path. Returns 0; -EBUSY (the process lives, or
 * another salvage holds it: nothing touched); -EALREADY (the trace has its
 * footer: the stale mapping is removed); -EPERM (someone else's, a link);
 * -ESTALE (the mapping is of another folder); or a negative errno with err.
 */
int ct_salvage_commit(const char *dir, const char *map_path,
                      int (*sig_for)(void *ctx, uint32_t pid), void *ctx,
                      struct ct_salvage_info *info, char *trace_out, size_t tn, char *err,
                      size_t n);

/*
 * The mappings of folder dir (beside its traces, and in /dev/shm for its
 * dev and inode): fn(ctx, path) for each, in no order. 0 or a negative
 * errno (dir cannot be read).
 */
int ct_live_maps_of_dir(const char *dir, int (*fn)(void *ctx, const char *map_path), void *ctx);

/* One mapping's outcome in ct_salvage_dir. */
struct ct_salvage_result {
    const char *map_path;
    const char *trace; /* the trace's path ("" when its header names none) */
    int rc;            /* ct_salvage_commit's */
    const char *err;   /* its message when rc != 0 */
    struct ct_salvage_info info;
};

/*
 * Salvages every mapping of folder dir whose process is gone
 * (ct_salvage_commit each), calling report for each mapping seen. Returns
 * how many traces were completed, or a negative errno (dir unreadable).
 */
int ct_salvage_dir(const char *dir, int (*sig_for)(void *ctx, uint32_t pid),
                   void (*report)(void *ctx, const struct ct_salvage_result *r), void *ctx);

#endif
