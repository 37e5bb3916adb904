/*
 * Chunk encoding and decoding (the payload of one zstd frame; layout in
 * cutrace/format.h). Pure functions over memory: the writer, the golden-file
 * generator and the reader all use them, and the decoder is fuzzed.
 */
#ifndef CT_CHUNK_H
#define CT_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#include "cutrace/format.h"

struct ct_buf {
    uint8_t *p;
    size_t len, cap;
};
int ct_buf_grow(struct ct_buf *b, size_t extra); /* 0 or -ENOMEM */
/* Room for `extra` more bytes: 0 or -ENOMEM. */
static inline int ct_buf_reserve(struct ct_buf *b, size_t extra)
{
    return b->cap - b->len >= extra ? 0 : ct_buf_grow(b, extra);
}
void ct_buf_free(struct ct_buf *b);

struct ct_chunk_enc {
    struct ct_buf strings;                            /* encoded string definitions */
    struct ct_buf kinds;                              /* one byte per record */
    uint64_t *cols[CT_REC_KIND_COUNT][CT_MAX_FIELDS]; /* coded values, one column per field */
    uint32_t count[CT_REC_KIND_COUNT];                /* records of each kind in this chunk */
    uint32_t cap[CT_REC_KIND_COUNT];                  /* values every column of the kind holds */
    uint32_t nstrings;
    uint32_t nrecords;
    uint64_t tid, seq, base_time;
    uint64_t prev_time[CT_REC_KIND_COUNT];
    uint64_t seq_prev[CT_REC_KIND_COUNT][CT_MAX_FIELDS];
};

/* Starts a chunk. Buffers are kept across chunks (call ct_chunk_enc_free at
 * the end). base_time should be the first record's time. */
void ct_chunk_begin(struct ct_chunk_enc *e, uint64_t tid, uint64_t seq, uint64_t base_time);
/* 0 or -ENOMEM. */
int ct_chunk_add_string(struct ct_chunk_enc *e, uint32_t id, const char *s, uint32_t len);
/* 0, -EINVAL for an unknown kind or wrong field count, -ENOMEM. */
int ct_chunk_add_record(struct ct_chunk_enc *e, unsigned kind, const uint64_t *fields,
                        unsigned nfields);
/* Writes the complete chunk payload to out (replacing its contents). */
int ct_chunk_finish(struct ct_chunk_enc *e, struct ct_buf *out);
void ct_chunk_enc_free(struct ct_chunk_enc *e);

/* Decoded record handed to the reader's callback. */
struct ct_record {
    uint16_t kind;
    uint16_t nfields;
    uint32_t tid;
    uint64_t f[CT_MAX_FIELDS];
};

/*
 * A block of decoded rows (up to a few hundred), as the decoder holds them:
 * column by column. Row t, in file order, is of kind kinds[t]; the x-th
 * row of kind k in the block has field i at col[k][i * cnt[k] + x]. For
 * sinks that read a few fields of millions of records (the report's
 * extraction), without a record copied and a call made per row.
 */
struct ct_block {
    uint32_t tid;
    size_t n;
    const uint8_t *kinds;
    const uint64_t *col[CT_REC_KIND_COUNT];
    size_t cnt[CT_REC_KIND_COUNT];
};

struct ct_chunk_sink {
    void *ctx;
    /* return 0 to continue, negative to stop with that code */
    int (*on_string)(void *ctx, uint32_t id, const char *s, uint32_t len);
    int (*on_record)(void *ctx, const struct ct_record *r);
    /* Per kind, the fields the sink reads (bit i: field i); the others
     * are not decoded and come as 0 (times always are: they chain). NULL:
     * every field. */
    const uint32_t *fields;
    /* When set, records come in blocks here instead of on_record. */
    int (*on_block)(void *ctx, const struct ct_block *b);
};

struct ct_chunk_info {
    uint64_t tid, seq, base_time;
    uint64_t nstrings, nrecords;
};

/*
 * Decodes one chunk payload. Returns 0, a sink's negative code, or -EBADMSG
 * with *err_pos set to the byte position inside the payload where it went
 * wrong and *err_what to a static description.
 */
int ct_chunk_decode(const uint8_t *p, size_t n, const struct ct_chunk_sink *sink,
                    struct ct_chunk_info *info, size_t *err_pos, const char **err_what);

/*
 * The same, but the whole chunk is checked before anything (strings
 * included) goes to the sink, in the one parse: a damaged chunk delivers
 * nothing. -EBADMSG with *err_what set is its damage; a sink's own
 * -EBADMSG leaves *err_what as it was. (ct_chunk_decode delivers the
 * strings and the records before the first string id >= 2^32.)
 */
int ct_chunk_decode_whole(const uint8_t *p, size_t n, const struct ct_chunk_sink *sink,
                          struct ct_chunk_info *info, size_t *err_pos, const char **err_what);

#endif
