/*
 * Trace reader: streams a file frame by frame with bounded memory. A file
 * cut anywhere decodes up to its last complete frame ("truncated at offset
 * N"); corrupt bytes are reported with their offset and what was expected,
 * and reading resumes at the next frame that decodes. Used by the decoder
 * and fuzzed (ct_reader_open_mem).
 *
 * A trace without footer whose process left its live mapping and is gone
 * (SIGKILL) reads as its salvage would write it (src/salvage.h): the bytes
 * the process wrote whole, then the records recovered from the mapping, the
 * salvage frame and a footer. Nothing is written: `cutrace salvage` does
 * that. The mapping of a process that lives is left alone.
 */
#ifndef CT_READER_H
#define CT_READER_H

#include <stddef.h>
#include <stdint.h>

#include "src/chunk.h"
#include "src/salvage.h"

struct ct_trace_header {
    uint32_t version;
    uint64_t features;
    uint32_t clock_source;
    uint64_t tsc_hz;
    uint64_t start_mono_ns, start_real_ns;
    uint32_t pid, gen;
};

struct ct_trace_footer {
    uint64_t chunks, records, dropped, end_mono_ns;
};

#define CT_READER_MAX_DAMAGE 16

struct ct_damage {
    uint64_t offset;  /* first bad byte */
    uint64_t skipped; /* bytes skipped before the next good frame (0 at EOF) */
    char what[160];
};

struct ct_str_block;

struct ct_reader {
    const char *name; /* for messages: the path, or "<memory>" */
    int fd;
    const uint8_t *mem;
    size_t mem_len;
    uint8_t *buf;                     /* window of the file: [buf_off, buf_off + buf_len) */
    size_t buf_len, buf_cap, buf_pos; /* buf_pos: next unread byte in buf */
    size_t read_next;                 /* bytes the next read asks for (ensure) */
    uint64_t buf_off;
    int eof;
    void *dctx; /* ZSTD_DCtx */
    struct ct_buf out;

    struct ct_trace_header hdr;
    int has_footer;
    struct ct_trace_footer footer;
    int truncated;
    uint64_t truncated_at;
    uint64_t frames;        /* chunk frames decoded */
    uint64_t dropped_bytes; /* oldest frames dropped in place by CUTRACE_MAX_MB */
    uint64_t records;       /* records delivered */
    unsigned ndamage;
    uint64_t damage_total; /* places of damage (damage[] keeps the first 16) */
    uint64_t damage_bytes; /* bytes skipped at all of them */
    uint64_t size;         /* the file's length when opened */
    struct ct_damage damage[CT_READER_MAX_DAMAGE];

    /* a salvage frame was read: the trace was completed from a live mapping
     * (in the file, or just now in memory: salvage_in_memory) */
    int salvaged, salvage_in_memory;
    struct ct_salvage_info salvage;
    struct ct_salvage *salv; /* the salvage read after the file's first src_limit bytes */
    uint64_t src_limit;
    struct ct_live_map *lmap; /* its mapping, until the salvage is built (when the reader
                               * reaches src_limit: a reader of the first frames alone
                               * never builds it) */
    /* a live mapping beside the trace that was left alone: its process
     * lives (1) or was on another machine or boot (2); or could not be read
     * (3); live_note says which and why */
    int live_left;
    char live_note[300];

    char **strs; /* by id; the bytes live in pool blocks */
    uint32_t *str_lens;
    size_t nstrs;
    struct ct_str_block *pool; /* blocks of string bytes, newest first */
    size_t pool_left;          /* free bytes at the end of the newest block */
    char err[256];             /* message of the last fatal error */
};

/*
 * Opens a trace and reads its header. Returns 0, or a negative errno with
 * r->err set: -ENOENT and friends from open, -EPROTO "not a cutrace trace"
 * (with the offset and what was expected), -EPROTONOSUPPORT for a newer
 * format version. On failure the reader is closed.
 */
int ct_reader_open(struct ct_reader *r, const char *path);
int ct_reader_open_mem(struct ct_reader *r, const uint8_t *p, size_t n);
void ct_reader_close(struct ct_reader *r);
/* Closes the file and frees the read buffers but keeps strings and status,
 * for callers that hold many decoded traces at once. */
void ct_reader_release_io(struct ct_reader *r);

/*
 * Delivers the next chunk's strings and records to sink. Returns 1 when a
 * chunk was delivered, 0 at the end of the trace (see truncated/has_footer),
 * or a negative errno for a read error (r->err says which) or a sink's own
 * negative code. Damage is recorded in r->damage and skipped.
 */
int ct_reader_next(struct ct_reader *r, const struct ct_chunk_sink *sink);

/* 1 when the file at path ends in a trace footer (the process shut its
 * trace down), 0 when it does not, a negative errno when it cannot be
 * read: a look at its last bytes, not a decode. */
int ct_trace_has_footer(const char *path);

/* The string for id ("" for 0 or unknown ids). */
const char *ct_reader_string(const struct ct_reader *r, uint64_t id);

#endif
