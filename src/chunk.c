/*
 * Chunk codec. The encoder never fails on valid input except for memory; the
 * decoder checks every length and value against the payload bounds, because
 * it reads files from crashed processes and from strangers.
 */
#include "src/chunk.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "src/varint.h"

int ct_buf_grow(struct ct_buf *b, size_t extra)
{
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < extra) {
        if (cap > SIZE_MAX / 2)
            return -ENOMEM;
        cap *= 2;
    }
    uint8_t *p = realloc(b->p, cap);
    if (!p)
        return -ENOMEM;
    b->p = p;
    b->cap = cap;
    return 0;
}

void ct_buf_free(struct ct_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

static void put_varint(struct ct_buf *b, uint64_t v)
{
    b->len += ct_varint_put(b->p + b->len, v);
}

void ct_chunk_begin(struct ct_chunk_enc *e, uint64_t tid, uint64_t seq, uint64_t base_time)
{
    e->strings.len = 0;
    e->kinds.len = 0;
    memset(e->count, 0, sizeof(e->count));
    e->nstrings = 0;
    e->nrecords = 0;
    e->tid = tid;
    e->seq = seq;
    e->base_time = base_time;
    for (unsigned k = 0; k < CT_REC_KIND_COUNT; k++)
        e->prev_time[k] = base_time;
    memset(e->seq_prev, 0, sizeof(e->seq_prev));
}

int ct_chunk_add_string(struct ct_chunk_enc *e, uint32_t id, const char *s, uint32_t len)
{
    int rc = ct_buf_reserve(&e->strings, 2 * CT_VARINT_MAX + len);
    if (rc)
        return rc;
    put_varint(&e->strings, id);
    put_varint(&e->strings, len);
    memcpy(e->strings.p + e->strings.len, s, len);
    e->strings.len += len;
    e->nstrings++;
    return 0;
}

/* Room for one more record of `kind` in each of its columns. */
static int grow_columns(struct ct_chunk_enc *e, unsigned kind)
{
    uint32_t cap = e->cap[kind] ? e->cap[kind] * 2 : 1024;
    for (unsigned i = 0; i < ct_kind_table[kind].nfields; i++) {
        uint64_t *p = realloc(e->cols[kind][i], (size_t)cap * sizeof(uint64_t));
        if (!p)
            return -ENOMEM; /* columns grown so far keep their larger size */
        e->cols[kind][i] = p;
    }
    e->cap[kind] = cap;
    return 0;
}

int ct_chunk_add_record(struct ct_chunk_enc *e, unsigned kind, const uint64_t *f, unsigned nfields)
{
    if (kind == 0 || kind >= CT_REC_KIND_COUNT)
        return -EINVAL;
    const struct ct_kind_desc *d = &ct_kind_table[kind];
    if (nfields != d->nfields)
        return -EINVAL;
    int rc = ct_buf_reserve(&e->kinds, 1);
    if (!rc && e->count[kind] == e->cap[kind])
        rc = grow_columns(e, kind);
    if (rc)
        return rc;
    e->kinds.p[e->kinds.len++] = (uint8_t)kind;
    uint32_t row = e->count[kind]++;
    uint64_t *prev = &e->prev_time[kind];
    uint64_t last_time = *prev;
    for (unsigned i = 0; i < nfields; i++) {
        uint64_t v = f[i], out;
        switch (d->codec[i]) {
        case CT_CODEC_TIME:
            out = ct_zigzag((int64_t)(v - *prev));
            *prev = last_time = v;
            break;
        case CT_CODEC_OTIME:
            if (v == 0) {
                out = 0;
            } else {
                out = 1 + ct_zigzag((int64_t)(v - *prev));
                *prev = last_time = v;
            }
            break;
        case CT_CODEC_END:
            out = ct_zigzag((int64_t)(v - last_time));
            *prev = v;
            break;
        case CT_CODEC_OEND:
            out = v == 0 ? 0 : 1 + ct_zigzag((int64_t)(v - last_time));
            if (v)
                *prev = v;
            break;
        case CT_CODEC_SEQ:
            out = ct_zigzag((int64_t)(v - e->seq_prev[kind][i]));
            e->seq_prev[kind][i] = v;
            break;
        case CT_CODEC_I: out = ct_zigzag((int64_t)v); break;
        default: /* U, STR */ out = v; break;
        }
        e->cols[kind][i][row] = out;
    }
    e->nrecords++;
    return 0;
}

int ct_chunk_finish(struct ct_chunk_enc *e, struct ct_buf *out)
{
    out->len = 0;
    size_t total = 7 * CT_VARINT_MAX + e->strings.len + e->kinds.len;
    for (unsigned k = 1; k < CT_REC_KIND_COUNT; k++)
        total += (size_t)ct_kind_table[k].nfields * (1 + 8 * (size_t)e->count[k]);
    int rc = ct_buf_reserve(out, total);
    if (rc)
        return rc;
    put_varint(out, CT_CHUNK_MAGIC);
    put_varint(out, e->tid);
    put_varint(out, e->seq);
    put_varint(out, e->base_time);
    put_varint(out, e->nstrings);
    memcpy(out->p + out->len, e->strings.p, e->strings.len);
    out->len += e->strings.len;
    put_varint(out, e->nrecords);
    memcpy(out->p + out->len, e->kinds.p, e->kinds.len);
    out->len += e->kinds.len;
    for (unsigned k = 1; k < CT_REC_KIND_COUNT; k++) {
        if (!e->count[k])
            continue;
        for (unsigned i = 0; i < ct_kind_table[k].nfields; i++) {
            /* Byte planes: the width byte, then every value's byte 0, then
             * every byte 1, ... Random low bytes and near-constant high
             * bytes land in separate runs, which zstd codes far better than
             * interleaved varints. */
            const uint64_t *c = e->cols[k][i];
            size_t n = e->count[k];
            uint64_t all = 0;
            for (size_t j = 0; j < n; j++)
                all |= c[j];
            unsigned w = 0;
            while (w < 8 && (all >> (8 * w)) != 0)
                w++;
            out->p[out->len++] = (uint8_t)w;
            for (unsigned plane = 0; plane < w; plane++) {
                uint8_t *dst = out->p + out->len;
                for (size_t j = 0; j < n; j++)
                    dst[j] = (uint8_t)(c[j] >> (8 * plane));
                out->len += n;
            }
        }
    }
    return 0;
}

void ct_chunk_enc_free(struct ct_chunk_enc *e)
{
    ct_buf_free(&e->strings);
    ct_buf_free(&e->kinds);
    for (unsigned k = 0; k < CT_REC_KIND_COUNT; k++) {
        for (unsigned i = 0; i < CT_MAX_FIELDS; i++) {
            free(e->cols[k][i]);
            e->cols[k][i] = NULL;
        }
        e->cap[k] = 0;
    }
}

#define FAIL(what)                                                                                 \
    do {                                                                                           \
        *err_pos = (size_t)(q - p);                                                                \
        *err_what = (what);                                                                        \
        return -EBADMSG;                                                                           \
    } while (0)

#define GET(v, what)                                                                               \
    do {                                                                                           \
        if (ct_varint_get(&q, end, &(v)))                                                          \
            FAIL(what);                                                                            \
    } while (0)

int ct_chunk_decode(const uint8_t *p, size_t n, const struct ct_chunk_sink *sink,
                    struct ct_chunk_info *info, size_t *err_pos, const char **err_what)
{
    const uint8_t *q = p, *end = p + n;
    uint64_t magic, v;
    struct ct_chunk_info ci;
    GET(magic, "chunk magic");
    if (magic != CT_CHUNK_MAGIC)
        FAIL("chunk magic (0x4354)");
    GET(ci.tid, "thread id");
    GET(ci.seq, "chunk sequence number");
    GET(ci.base_time, "base time");
    GET(ci.nstrings, "string count");
    if (ci.nstrings > n)
        FAIL("string count within the chunk size");
    for (uint64_t i = 0; i < ci.nstrings; i++) {
        uint64_t id, len;
        GET(id, "string id");
        GET(len, "string length");
        if (id == 0 || id > UINT32_MAX)
            FAIL("string id in 1..2^32-1");
        if (len > (uint64_t)(end - q))
            FAIL("string bytes within the chunk");
        if (sink && sink->on_string) {
            int rc = sink->on_string(sink->ctx, (uint32_t)id, (const char *)q, (uint32_t)len);
            if (rc)
                return rc;
        }
        q += len;
    }
    GET(ci.nrecords, "record count");
    if (ci.nrecords > (uint64_t)(end - q))
        FAIL("one kind byte per record within the chunk");
    const uint8_t *kinds = q;
    uint64_t count[CT_REC_KIND_COUNT] = {0};
    for (uint64_t k = 0; k < ci.nrecords; k++, q++) {
        if (*q == 0 || *q >= CT_REC_KIND_COUNT)
            FAIL("a known record kind (1..10)");
        count[*q]++;
    }
    /* Column planes: width byte, then `width` planes of count[k] bytes. */
    const uint8_t *col[CT_REC_KIND_COUNT][CT_MAX_FIELDS];
    uint8_t width[CT_REC_KIND_COUNT][CT_MAX_FIELDS];
    for (unsigned k = 1; k < CT_REC_KIND_COUNT; k++) {
        if (!count[k])
            continue;
        for (unsigned i = 0; i < ct_kind_table[k].nfields; i++) {
            if (q >= end)
                FAIL("a column width byte");
            if (*q > 8)
                FAIL("a column width of 0 to 8 bytes");
            width[k][i] = *q++;
            if ((uint64_t)width[k][i] * count[k] > (uint64_t)(end - q))
                FAIL("column planes within the chunk");
            col[k][i] = q;
            q += (size_t)width[k][i] * count[k];
        }
    }
    if (q != end)
        FAIL("end of chunk after the last column");
    struct ct_record r;
    uint64_t prev_times[CT_REC_KIND_COUNT];
    for (unsigned k = 0; k < CT_REC_KIND_COUNT; k++)
        prev_times[k] = ci.base_time;
    uint64_t seq_prev[CT_REC_KIND_COUNT][CT_MAX_FIELDS];
    memset(seq_prev, 0, sizeof(seq_prev));
    uint64_t index[CT_REC_KIND_COUNT] = {0}; /* position within the kind's columns */
    for (uint64_t n = 0; n < ci.nrecords; n++) {
        unsigned kind = kinds[n];
        const struct ct_kind_desc *d = &ct_kind_table[kind];
        r.kind = (uint16_t)kind;
        r.nfields = d->nfields;
        r.tid = (uint32_t)ci.tid;
        uint64_t *prev = &prev_times[kind];
        uint64_t last_time = *prev;
        uint64_t j = index[kind]++;
        for (unsigned i = 0; i < d->nfields; i++) {
            v = 0;
            for (unsigned plane = 0; plane < width[kind][i]; plane++)
                v |= (uint64_t)col[kind][i][plane * count[kind] + j] << (8 * plane);
            switch (d->codec[i]) {
            case CT_CODEC_TIME:
                *prev = last_time = *prev + (uint64_t)ct_unzigzag(v);
                r.f[i] = *prev;
                break;
            case CT_CODEC_OTIME:
                if (v == 0) {
                    r.f[i] = 0;
                } else {
                    *prev = last_time = *prev + (uint64_t)ct_unzigzag(v - 1);
                    r.f[i] = *prev;
                }
                break;
            case CT_CODEC_END: r.f[i] = *prev = last_time + (uint64_t)ct_unzigzag(v); break;
            case CT_CODEC_OEND:
                r.f[i] = v == 0 ? 0 : last_time + (uint64_t)ct_unzigzag(v - 1);
                if (v)
                    *prev = r.f[i];
                break;
            case CT_CODEC_SEQ:
                seq_prev[kind][i] += (uint64_t)ct_unzigzag(v);
                r.f[i] = seq_prev[kind][i];
                break;
            case CT_CODEC_I: r.f[i] = (uint64_t)ct_unzigzag(v); break;
            case CT_CODEC_STR:
                if (v > UINT32_MAX)
                    FAIL("string id below 2^32");
                r.f[i] = v;
                break;
            default: r.f[i] = v; break;
            }
        }
        if (sink && sink->on_record) {
            int rc = sink->on_record(sink->ctx, &r);
            if (rc)
                return rc;
        }
    }
    if (info)
        *info = ci;
    return 0;
}
