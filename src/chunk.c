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
    if (e->strings.len) /* a chunk without new strings may have no buffer: no memcpy from NULL */
        memcpy(out->p + out->len, e->strings.p, e->strings.len);
    out->len += e->strings.len;
    put_varint(out, e->nrecords);
    if (e->kinds.len)
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

static int all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

/* Records are decoded a block at a time, column by column: each field's
 * byte planes are gathered and its codec applied in one tight loop over the
 * block's rows of that kind, then the block's records are handed out in file
 * order. The block bounds the scratch memory whatever the record count. */
enum { BLOCK = 256 };

struct col_state {
    const uint64_t *count;
    const uint8_t *(*col)[CT_MAX_FIELDS];
    uint8_t (*width)[CT_MAX_FIELDS];
    uint64_t index[CT_REC_KIND_COUNT]; /* next row of each kind */
    uint64_t prev[CT_REC_KIND_COUNT];  /* the time chain of each kind */
    uint64_t seq_prev[CT_REC_KIND_COUNT][CT_MAX_FIELDS];
    uint64_t bad[CT_REC_KIND_COUNT]; /* first row with a string id >= 2^32 */
    const uint32_t *fields;          /* the sink's, or NULL */
};

static int is_time(unsigned codec)
{
    return codec == CT_CODEC_TIME || codec == CT_CODEC_OTIME || codec == CT_CODEC_END ||
           codec == CT_CODEC_OEND;
}

/* Values of rows [j0, j0 + m) of one column: its byte planes or-ed together
 * (unzigzagged when zz). One loop per width, each row's planes combined in
 * registers and stored once (the plane-by-plane loop read and wrote every
 * value w times). The rows go in groups of GATHER_ROWS, a constant trip
 * count, then the rest one by one: gcc's default cost model at -O2
 * vectorises a loop only when no scalar remainder is needed, and the gather
 * was a sixth of a report's decoding when it ran a row at a time. The
 * unzigzag is done here, in the same vector loop, rather than in a pass of
 * its own over the values. */
enum { GATHER_ROWS = 16 };
#define PLANE(i) ((uint64_t)b[(size_t)(i)*stride + r] << (8 * (i)))
#define ROWS(expr)                                                                                 \
    for (t = 0; t + GATHER_ROWS <= m; t += GATHER_ROWS)                                            \
        for (size_t r = t; r < t + GATHER_ROWS; r++)                                               \
            dst[r] = (expr);                                                                       \
    for (size_t r = t; r < m; r++)                                                                 \
    dst[r] = (expr)
#define GATHER(expr)                                                                               \
    if (zz) {                                                                                      \
        ROWS((uint64_t)ct_unzigzag(expr));                                                         \
    } else {                                                                                       \
        ROWS(expr);                                                                                \
    }                                                                                              \
    break
static void gather(uint64_t *restrict dst, const uint8_t *restrict col, unsigned w, uint64_t stride,
                   uint64_t j0, size_t m, int zz)
{
    const uint8_t *restrict b = col + j0;
    size_t t;
    switch (w) {
    case 0: memset(dst, 0, m * sizeof(*dst)); break; /* unzigzagged, 0 is 0 */
    case 1: GATHER(PLANE(0));
    case 2: GATHER(PLANE(0) | PLANE(1));
    case 3: GATHER(PLANE(0) | PLANE(1) | PLANE(2));
    case 4: GATHER(PLANE(0) | PLANE(1) | PLANE(2) | PLANE(3));
    case 5: GATHER(PLANE(0) | PLANE(1) | PLANE(2) | PLANE(3) | PLANE(4));
    case 6: GATHER(PLANE(0) | PLANE(1) | PLANE(2) | PLANE(3) | PLANE(4) | PLANE(5));
    case 7: GATHER(PLANE(0) | PLANE(1) | PLANE(2) | PLANE(3) | PLANE(4) | PLANE(5) | PLANE(6));
    default:
        GATHER(PLANE(0) | PLANE(1) | PLANE(2) | PLANE(3) | PLANE(4) | PLANE(5) | PLANE(6) |
               PLANE(7));
    }
}
#undef GATHER
#undef ROWS
#undef PLANE

/* Decodes rows [j0, j0 + m) of kind k into v (field i at v[i * m + t]). */
static void decode_kind(struct col_state *st, unsigned k, uint64_t *v, size_t m)
{
    const struct ct_kind_desc *d = &ct_kind_table[k];
    uint64_t j0 = st->index[k];
    unsigned times[CT_MAX_FIELDS], nt = 0;
    uint32_t want = st->fields ? st->fields[k] : UINT32_MAX;
    for (unsigned i = 0; i < d->nfields; i++)
        if (is_time(d->codec[i]))
            times[nt++] = i;
    /* the common TIME, END pair: both deltas plain zigzag, undone in the
     * gather (OTIME and OEND hold 0 for "none", decoded below) */
    int pair = nt == 2 && d->codec[times[0]] == CT_CODEC_TIME && d->codec[times[1]] == CT_CODEC_END;
    for (unsigned i = 0; i < d->nfields; i++) {
        uint64_t *c = v + (size_t)i * m;
        /* not read: not decoded, nor checked (the reader's whole-chunk check
         * validates strings), nor copied into the records (decode_rows) */
        if (!is_time(d->codec[i]) && !((want >> i) & 1)) {
            memset(c, 0, m * sizeof(*c)); /* reads as 0 in a block too */
            continue;
        }
        int zz = d->codec[i] == CT_CODEC_SEQ || d->codec[i] == CT_CODEC_I ||
                 (pair && is_time(d->codec[i]));
        gather(c, st->col[k][i], st->width[k][i], st->count[k], j0, m, zz);
        switch (d->codec[i]) {
        case CT_CODEC_SEQ: {
            uint64_t acc = st->seq_prev[k][i];
            for (size_t t = 0; t < m; t++)
                c[t] = acc += c[t];
            st->seq_prev[k][i] = acc;
            break;
        }
        case CT_CODEC_STR:
            /* four planes or fewer: every id is below 2^32 */
            for (size_t t = 0; st->width[k][i] > 4 && t < m; t++)
                if (c[t] > UINT32_MAX) {
                    if (j0 + t < st->bad[k])
                        st->bad[k] = j0 + t;
                    break;
                }
            break;
        default: break;
        }
    }
    /* The time chain runs across the fields of a row and on to the next row:
     * one pass over the rows, the common TIME, END pair unrolled. */
    uint64_t prev = st->prev[k];
    if (pair) {
        uint64_t *a = v + (size_t)times[0] * m, *b = v + (size_t)times[1] * m;
        for (size_t t = 0; t < m; t++) {
            a[t] += prev;
            b[t] = prev = a[t] + b[t];
        }
    } else if (nt) {
        for (size_t t = 0; t < m; t++) {
            uint64_t last_time = prev;
            for (unsigned x = 0; x < nt; x++) {
                uint64_t *c = v + (size_t)times[x] * m + t, e = *c;
                switch (d->codec[times[x]]) {
                case CT_CODEC_TIME: *c = prev = last_time = prev + (uint64_t)ct_unzigzag(e); break;
                case CT_CODEC_OTIME:
                    if (e)
                        *c = prev = last_time = prev + (uint64_t)ct_unzigzag(e - 1);
                    break;
                case CT_CODEC_END: *c = prev = last_time + (uint64_t)ct_unzigzag(e); break;
                default: /* OEND */
                    if (e)
                        *c = prev = last_time + (uint64_t)ct_unzigzag(e - 1);
                    break;
                }
            }
        }
    }
    st->prev[k] = prev;
}

/* The decoded block to the sink's on_block: rows up to the first with a
 * string id >= 2^32 (then -EBADMSG, as for single records). */
static int hand_block(const struct col_state *st, const struct ct_chunk_sink *sink, uint32_t tid,
                      const uint8_t *kb, size_t m, const uint64_t *v, const size_t *off,
                      const size_t *cnt)
{
    struct ct_block b = {.tid = tid, .n = m, .kinds = kb};
    int bad = 0;
    for (unsigned k = 1; k < CT_REC_KIND_COUNT; k++) {
        b.col[k] = v + off[k];
        b.cnt[k] = cnt[k];
        bad |= st->bad[k] < st->index[k] + cnt[k];
    }
    if (bad) {
        size_t pos[CT_REC_KIND_COUNT] = {0};
        for (b.n = 0; b.n < m && st->index[kb[b.n]] + pos[kb[b.n]] != st->bad[kb[b.n]]; b.n++)
            pos[kb[b.n]]++;
    }
    int rc = b.n ? sink->on_block(sink->ctx, &b) : 0;
    return rc ? rc : b.n < m ? -EBADMSG : 0;
}

/* Hands out nrec records in file order: 0, a sink's code, or -EBADMSG at the
 * first record holding a string id >= 2^32 (the records before it are
 * delivered, as a record-at-a-time decoder would). */
static int decode_rows(struct col_state *st, const uint8_t *kinds, uint64_t nrec, uint32_t tid,
                       const struct ct_chunk_sink *sink)
{
    uint64_t *v = malloc((size_t)BLOCK * CT_MAX_FIELDS * sizeof(*v));
    if (!v)
        return -ENOMEM;
    int rc = 0;
    /* one record per kind, so fields the sink does not read stay 0 and
     * only the others are copied for each row */
    struct ct_record rk[CT_REC_KIND_COUNT];
    uint8_t copy[CT_REC_KIND_COUNT][CT_MAX_FIELDS], ncopy[CT_REC_KIND_COUNT];
    for (unsigned k = 1; k < CT_REC_KIND_COUNT; k++) {
        const struct ct_kind_desc *d = &ct_kind_table[k];
        uint32_t want = st->fields ? st->fields[k] : UINT32_MAX;
        memset(&rk[k], 0, sizeof(rk[k]));
        rk[k].tid = tid;
        rk[k].kind = (uint16_t)k;
        rk[k].nfields = d->nfields;
        ncopy[k] = 0;
        for (unsigned i = 0; i < d->nfields; i++)
            if (is_time(d->codec[i]) || ((want >> i) & 1))
                copy[k][ncopy[k]++] = (uint8_t)i;
    }
    for (uint64_t n0 = 0; n0 < nrec && !rc; n0 += BLOCK) {
        size_t m = nrec - n0 < BLOCK ? (size_t)(nrec - n0) : BLOCK;
        const uint8_t *kb = kinds + n0;
        size_t cnt[CT_REC_KIND_COUNT] = {0}, off[CT_REC_KIND_COUNT], pos[CT_REC_KIND_COUNT];
        for (size_t t = 0; t < m; t++)
            cnt[kb[t]]++;
        size_t o = 0;
        for (unsigned k = 1; k < CT_REC_KIND_COUNT; k++) {
            off[k] = o;
            pos[k] = 0;
            if (!cnt[k])
                continue;
            decode_kind(st, k, v + o, cnt[k]);
            o += cnt[k] * ct_kind_table[k].nfields;
        }
        if (sink->on_block) {
            rc = hand_block(st, sink, tid, kb, m, v, off, cnt);
            for (unsigned k = 1; k < CT_REC_KIND_COUNT; k++)
                st->index[k] += cnt[k];
            continue;
        }
        for (size_t t = 0; t < m; t++) {
            unsigned k = kb[t];
            size_t x = pos[k]++, c = cnt[k];
            if (st->index[k] + x == st->bad[k]) {
                rc = -EBADMSG;
                break;
            }
            const uint64_t *src = v + off[k] + x;
            struct ct_record *r = &rk[k];
            for (unsigned j = 0; j < ncopy[k]; j++) {
                unsigned i = copy[k][j];
                r->f[i] = src[i * c];
            }
            if ((rc = sink->on_record(sink->ctx, r)))
                break;
        }
        for (unsigned k = 1; k < CT_REC_KIND_COUNT; k++)
            st->index[k] += cnt[k];
    }
    free(v);
    return rc;
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

/* ct_chunk_decode, or with `whole` ct_chunk_decode_whole. */
static int decode(const uint8_t *p, size_t n, const struct ct_chunk_sink *sink, int whole,
                  struct ct_chunk_info *info, size_t *err_pos, const char **err_what)
{
    const uint8_t *q = p, *end = p + n;
    uint64_t magic;
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
    const uint8_t *strings = q;
    int deliver = sink && (sink->on_record || sink->on_block);
    whole = whole && sink;
    for (uint64_t i = 0; i < ci.nstrings; i++) {
        uint64_t id, len;
        GET(id, "string id");
        GET(len, "string length");
        if (id == 0 || id > UINT32_MAX)
            FAIL("string id in 1..2^32-1");
        if (len > (uint64_t)(end - q))
            FAIL("string bytes within the chunk");
        if (sink && sink->on_string && !whole) {
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
    /* every byte value counted, the unknown kinds looked for only when
     * some are there: one load and one increment per record */
    uint64_t count[256] = {0};
    for (uint64_t k = 0; k < ci.nrecords; k++)
        count[q[k]]++;
    uint64_t unknown = count[0];
    for (unsigned k = CT_REC_KIND_COUNT; k < 256; k++)
        unknown |= count[k];
    for (; unknown && *q && *q < CT_REC_KIND_COUNT; q++)
        ;
    if (unknown)
        FAIL("a known record kind (1..10)"); /* at the first unknown one */
    q = kinds + ci.nrecords;
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
    if (!deliver || whole) {
        /* Validation: the one value check left is string ids below 2^32,
         * i.e. no set byte in planes 4 and up of a string column. */
        for (unsigned k = 1; k < CT_REC_KIND_COUNT; k++)
            for (unsigned i = 0; count[k] && i < ct_kind_table[k].nfields; i++)
                if (ct_kind_table[k].codec[i] == CT_CODEC_STR && width[k][i] > 4 &&
                    !all_zero(col[k][i] + 4 * count[k], (width[k][i] - 4) * count[k]))
                    FAIL("string id below 2^32");
    }
    /* the checked chunk's strings, read again: each was checked above */
    for (uint64_t i = 0; whole && sink->on_string && i < ci.nstrings; i++) {
        uint64_t id = 0, len = 0;
        ct_varint_get(&strings, end, &id);
        ct_varint_get(&strings, end, &len);
        int rc = sink->on_string(sink->ctx, (uint32_t)id, (const char *)strings, (uint32_t)len);
        if (rc)
            return rc;
        strings += len;
    }
    if (deliver) {
        struct col_state st = {.count = count, .col = col, .width = width, .fields = sink->fields};
        for (unsigned k = 0; k < CT_REC_KIND_COUNT; k++) {
            st.prev[k] = ci.base_time;
            st.bad[k] = UINT64_MAX;
        }
        int rc = decode_rows(&st, kinds, ci.nrecords, (uint32_t)ci.tid, sink);
        if (rc == -EBADMSG)
            FAIL("string id below 2^32");
        if (rc)
            return rc;
    }
    if (info)
        *info = ci;
    return 0;
}

int ct_chunk_decode(const uint8_t *p, size_t n, const struct ct_chunk_sink *sink,
                    struct ct_chunk_info *info, size_t *err_pos, const char **err_what)
{
    return decode(p, n, sink, 0, info, err_pos, err_what);
}

int ct_chunk_decode_whole(const uint8_t *p, size_t n, const struct ct_chunk_sink *sink,
                          struct ct_chunk_info *info, size_t *err_pos, const char **err_what)
{
    return decode(p, n, sink, 1, info, err_pos, err_what);
}
