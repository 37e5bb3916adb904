/* Suite "codec": varints, zigzag and the chunk encoder/decoder. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "src/chunk.h"
#include "src/varint.h"

/* Records of the round trip below: five of each kind (a new kind adds five). */
#define MAX_RECS (5 * CT_REC_KIND_COUNT)

static const uint64_t edge_u[] = {0,
                                  1,
                                  127,
                                  128,
                                  16383,
                                  16384,
                                  (1ull << 32) - 1,
                                  1ull << 32,
                                  (1ull << 63) - 1,
                                  1ull << 63,
                                  UINT64_MAX - 1,
                                  UINT64_MAX};

START_TEST(varint_round_trips_edge_values)
{
    for (size_t i = 0; i < sizeof(edge_u) / sizeof(edge_u[0]); i++) {
        uint8_t buf[CT_VARINT_MAX];
        size_t n = ct_varint_put(buf, edge_u[i]);
        ck_assert_uint_le(n, CT_VARINT_MAX);
        const uint8_t *p = buf;
        uint64_t v;
        ck_assert_int_eq(ct_varint_get(&p, buf + n, &v), 0);
        ck_assert_uint_eq(v, edge_u[i]);
        ck_assert_ptr_eq(p, buf + n);
        /* every proper prefix is an error, never a wrong value */
        for (size_t cut = 0; cut < n; cut++) {
            p = buf;
            ck_assert_int_eq(ct_varint_get(&p, buf + cut, &v), -1);
        }
    }
}
END_TEST

START_TEST(varint_rejects_more_than_64_bits)
{
    uint8_t buf[11];
    memset(buf, 0xff, sizeof(buf));
    buf[10] = 0x01;
    const uint8_t *p = buf;
    uint64_t v;
    ck_assert_int_eq(ct_varint_get(&p, buf + 11, &v), -1);
    /* tenth byte carrying more than the 64th bit */
    memset(buf, 0x80, 9);
    buf[9] = 0x02;
    p = buf;
    ck_assert_int_eq(ct_varint_get(&p, buf + 10, &v), -1);
}
END_TEST

START_TEST(zigzag_round_trips_signed_extremes)
{
    const int64_t vals[] = {0, 1, -1, 63, -64, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN};
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
        ck_assert_int_eq(ct_unzigzag(ct_zigzag(vals[i])), vals[i]);
    ck_assert_uint_eq(ct_zigzag(-1), 1);
    ck_assert_uint_eq(ct_zigzag(1), 2);
}
END_TEST

struct collected {
    struct ct_record recs[MAX_RECS];
    size_t n;
    char strs[8][32];
    uint32_t ids[8];
    size_t nstr;
};

static int col_string(void *ctx, uint32_t id, const char *s, uint32_t len)
{
    struct collected *c = ctx;
    ck_assert_uint_lt(c->nstr, 8);
    ck_assert_uint_lt(len, 32);
    memcpy(c->strs[c->nstr], s, len);
    c->strs[c->nstr][len] = 0;
    c->ids[c->nstr++] = id;
    return 0;
}

static int col_record(void *ctx, const struct ct_record *r)
{
    struct collected *c = ctx;
    ck_assert_uint_lt(c->n, MAX_RECS);
    c->recs[c->n++] = *r;
    return 0;
}

/* Fills every field of a kind with a value that stresses its codec. */
static void extreme_fields(unsigned kind, unsigned variant, uint64_t *f)
{
    const struct ct_kind_desc *d = &ct_kind_table[kind];
    for (unsigned i = 0; i < d->nfields; i++) {
        uint64_t v = edge_u[(i + variant) % (sizeof(edge_u) / sizeof(edge_u[0]))];
        if (d->codec[i] == CT_CODEC_STR)
            v &= 0xffffffffu; /* string ids are 32-bit */
        f[i] = v;
    }
}

START_TEST(chunk_round_trips_every_kind_with_extreme_values)
{
    struct ct_chunk_enc e = {0};
    struct ct_buf out = {0};
    uint64_t in[MAX_RECS][CT_MAX_FIELDS];
    unsigned kinds[MAX_RECS];
    size_t n = 0;
    ct_chunk_begin(&e, 4242, 7, UINT64_MAX - 5);
    ck_assert_int_eq(ct_chunk_add_string(&e, 1, "cuLaunchKernel", 14), 0);
    ck_assert_int_eq(ct_chunk_add_string(&e, 99, "", 0), 0);
    for (unsigned variant = 0; variant < 5; variant++) {
        for (unsigned kind = 1; kind < CT_REC_KIND_COUNT; kind++) {
            extreme_fields(kind, variant, in[n]);
            kinds[n] = kind;
            ck_assert_int_eq(ct_chunk_add_record(&e, kind, in[n], ct_kind_table[kind].nfields), 0);
            n++;
        }
    }
    ck_assert_int_eq(ct_chunk_finish(&e, &out), 0);
    struct collected c = {0};
    struct ct_chunk_sink sink = {&c, col_string, col_record, NULL, NULL};
    struct ct_chunk_info info;
    size_t pos;
    const char *what;
    ck_assert_int_eq(ct_chunk_decode(out.p, out.len, &sink, &info, &pos, &what), 0);
    ck_assert_uint_eq(info.tid, 4242);
    ck_assert_uint_eq(info.seq, 7);
    ck_assert_uint_eq(c.nstr, 2);
    ck_assert_str_eq(c.strs[0], "cuLaunchKernel");
    ck_assert_uint_eq(c.ids[1], 99);
    ck_assert_uint_eq(c.n, n);
    for (size_t i = 0; i < n; i++) {
        ck_assert_uint_eq(c.recs[i].kind, kinds[i]);
        ck_assert_uint_eq(c.recs[i].tid, 4242);
        for (unsigned k = 0; k < ct_kind_table[kinds[i]].nfields; k++) {
            unsigned codec = ct_kind_table[kinds[i]].codec[k];
            /* an absent optional time stays absent; every other value exact */
            ck_assert_uint_eq(c.recs[i].f[k], in[i][k]);
            (void)codec;
        }
    }
    ct_chunk_enc_free(&e);
    ct_buf_free(&out);
}
END_TEST

/* Rows as a sink sees them, from either interface. */
struct rows {
    struct ct_record r[1200];
    size_t n;
};

static int rows_record(void *ctx, const struct ct_record *r)
{
    struct rows *w = ctx;
    ck_assert_uint_lt(w->n, 1200);
    w->r[w->n++] = *r;
    return 0;
}

static int rows_block(void *ctx, const struct ct_block *b)
{
    struct rows *w = ctx;
    size_t pos[CT_REC_KIND_COUNT] = {0};
    ck_assert_uint_le(b->n, 1200 - w->n);
    for (size_t t = 0; t < b->n; t++) {
        unsigned k = b->kinds[t];
        struct ct_record *r = &w->r[w->n++];
        memset(r, 0, sizeof(*r));
        r->kind = (uint16_t)k;
        r->tid = b->tid;
        r->nfields = ct_kind_table[k].nfields;
        ck_assert_uint_lt(pos[k], b->cnt[k]);
        for (unsigned i = 0; i < r->nfields; i++)
            r->f[i] = b->col[k][i * b->cnt[k] + pos[k]];
        pos[k]++;
    }
    return 0;
}

/* Blocks (on_block) carry exactly the rows, kinds, thread and field values
 * that records (on_record) do, over several blocks of mixed kinds, with
 * and without a field mask (unread fields 0 in both), and both stop at the
 * same row before a string id of 2^32 or more with -EBADMSG. */
START_TEST(chunk_blocks_carry_the_same_rows_as_records)
{
    srand(21);
    for (int bad = 0; bad < 2; bad++) {
        struct ct_chunk_enc e = {0};
        struct ct_buf out = {0};
        ct_chunk_begin(&e, 77, 1, 1000);
        uint64_t t = 1000;
        for (int i = 0; i < 1100; i++) {
            unsigned kind = 1 + (unsigned)rand() % (CT_REC_KIND_COUNT - 1);
            uint64_t f[CT_MAX_FIELDS];
            const struct ct_kind_desc *d = &ct_kind_table[kind];
            for (unsigned j = 0; j < d->nfields; j++)
                f[j] = d->codec[j] == CT_CODEC_STR ? (uint64_t)rand() : (uint64_t)rand() * 977;
            f[0] = t += (uint64_t)(rand() % 1000);
            if (bad && i == 700)
                for (unsigned j = 0; j < d->nfields; j++)
                    if (d->codec[j] == CT_CODEC_STR)
                        f[j] = UINT64_C(1) << 33;
            ck_assert_int_eq(ct_chunk_add_record(&e, kind, f, d->nfields), 0);
        }
        ck_assert_int_eq(ct_chunk_finish(&e, &out), 0);
        uint32_t mask[CT_REC_KIND_COUNT];
        for (unsigned k = 0; k < CT_REC_KIND_COUNT; k++)
            mask[k] = k % 2 ? 0x15u : UINT32_MAX;
        for (int masked = 0; masked < 2; masked++) {
            static struct rows a, b;
            a.n = b.n = 0;
            struct ct_chunk_sink rs = {&a, NULL, rows_record, masked ? mask : NULL, NULL};
            struct ct_chunk_sink bs = {&b, NULL, NULL, masked ? mask : NULL, rows_block};
            size_t pos;
            const char *what;
            int ra = ct_chunk_decode(out.p, out.len, &rs, NULL, &pos, &what);
            int rb = ct_chunk_decode(out.p, out.len, &bs, NULL, &pos, &what);
            ck_assert_int_eq(ra, bad ? -EBADMSG : 0);
            ck_assert_int_eq(rb, ra);
            ck_assert_uint_eq(a.n, bad ? 700 : 1100);
            ck_assert_uint_eq(b.n, a.n);
            for (size_t i = 0; i < a.n; i++)
                ck_assert_msg(!memcmp(&a.r[i], &b.r[i], sizeof(a.r[i])), "row %zu differs", i);
        }
        ct_chunk_enc_free(&e);
        ct_buf_free(&out);
    }
}
END_TEST

/* What a sink was given: strings and rows counted; refuse: its strings
 * refused with -EBADMSG (as the reader's are past its string id limit). */
struct seen {
    size_t strings, rows;
    int refuse;
};

static int seen_string(void *ctx, uint32_t id, const char *s, uint32_t len)
{
    struct seen *w = ctx;
    (void)id, (void)s, (void)len;
    w->strings++;
    return w->refuse ? -EBADMSG : 0;
}

static int seen_block(void *ctx, const struct ct_block *b)
{
    struct seen *w = ctx;
    w->rows += b->n;
    return 0;
}

/* ct_chunk_decode_whole delivers a sound chunk as ct_chunk_decode does, and
 * nothing of a damaged one (a string id of 2^32 in row 700, or the chunk
 * cut short), naming the damage; where ct_chunk_decode gives the strings
 * and the rows before the bad id. A sink's own -EBADMSG is not damage:
 * err_what stays unset. */
START_TEST(chunk_decode_whole_delivers_nothing_of_a_damaged_chunk)
{
    srand(33);
    for (int bad = 0; bad < 2; bad++) {
        struct ct_chunk_enc e = {0};
        struct ct_buf out = {0};
        ct_chunk_begin(&e, 9, 1, 1000);
        ck_assert_int_eq(ct_chunk_add_string(&e, 1, "cuLaunchKernel", 14), 0);
        ck_assert_int_eq(ct_chunk_add_string(&e, 2, "gemm", 4), 0);
        uint64_t t = 1000;
        for (int i = 0; i < 1100; i++) {
            /* row 700 a call: a kind with a string column */
            unsigned kind = i == 700 ? CT_REC_API : 1 + (unsigned)rand() % (CT_REC_KIND_COUNT - 1);
            uint64_t f[CT_MAX_FIELDS];
            const struct ct_kind_desc *d = &ct_kind_table[kind];
            for (unsigned j = 0; j < d->nfields; j++)
                f[j] =
                    d->codec[j] == CT_CODEC_STR ? 1 + (uint64_t)rand() % 2 : (uint64_t)rand() * 977;
            f[0] = t += (uint64_t)(rand() % 1000);
            if (bad && i == 700)
                for (unsigned j = 0; j < d->nfields; j++)
                    if (d->codec[j] == CT_CODEC_STR)
                        f[j] = UINT64_C(1) << 32;
            ck_assert_int_eq(ct_chunk_add_record(&e, kind, f, d->nfields), 0);
        }
        ck_assert_int_eq(ct_chunk_finish(&e, &out), 0);
        size_t pos = 0;
        const char *what = NULL;
        struct seen part = {0}, all = {0};
        struct ct_chunk_sink ps = {&part, seen_string, NULL, NULL, seen_block};
        struct ct_chunk_sink as = {&all, seen_string, NULL, NULL, seen_block};
        ck_assert_int_eq(ct_chunk_decode(out.p, out.len, &ps, NULL, &pos, &what),
                         bad ? -EBADMSG : 0);
        ck_assert_uint_eq(part.strings, 2);
        ck_assert_uint_eq(part.rows, (bad ? 700 : 1100));
        what = NULL;
        int rc = ct_chunk_decode_whole(out.p, out.len, &as, NULL, &pos, &what);
        ck_assert_int_eq(rc, (bad ? -EBADMSG : 0));
        ck_assert_uint_eq(all.strings, (bad ? 0 : 2));
        ck_assert_uint_eq(all.rows, (bad ? 0 : 1100));
        /* a sink of strings alone: they too wait for the whole check */
        struct seen strs = {0};
        struct ct_chunk_sink ss = {&strs, seen_string, NULL, NULL, NULL};
        ck_assert_int_eq(ct_chunk_decode_whole(out.p, out.len, &ss, NULL, &pos, &what),
                         (bad ? -EBADMSG : 0));
        ck_assert_uint_eq(strs.strings, (bad ? 0 : 2));
        if (bad) {
            ck_assert_str_eq(what, "string id below 2^32");
            ck_assert_uint_eq(pos, out.len);
        } else {
            /* the same rows, field by field */
            static struct rows a, b;
            a.n = b.n = 0;
            struct ct_chunk_sink rs = {&a, NULL, NULL, NULL, rows_block};
            struct ct_chunk_sink ws = {&b, NULL, NULL, NULL, rows_block};
            ck_assert_int_eq(ct_chunk_decode(out.p, out.len, &rs, NULL, &pos, &what), 0);
            ck_assert_int_eq(ct_chunk_decode_whole(out.p, out.len, &ws, NULL, &pos, &what), 0);
            ck_assert_uint_eq(b.n, a.n);
            for (size_t i = 0; i < a.n; i++)
                ck_assert_msg(!memcmp(&a.r[i], &b.r[i], sizeof(a.r[i])), "row %zu differs", i);
            /* cut short: damage, nothing delivered */
            struct seen cut = {0};
            struct ct_chunk_sink cs = {&cut, seen_string, NULL, NULL, seen_block};
            what = NULL;
            ck_assert_int_eq(ct_chunk_decode_whole(out.p, out.len / 2, &cs, NULL, &pos, &what),
                             -EBADMSG);
            ck_assert_ptr_nonnull(what);
            ck_assert_uint_eq(cut.strings + cut.rows, 0);
            /* the sink's own refusal: no damage named, no rows */
            struct seen refused = {.refuse = 1};
            struct ct_chunk_sink fs = {&refused, seen_string, NULL, NULL, seen_block};
            what = NULL;
            ck_assert_int_eq(ct_chunk_decode_whole(out.p, out.len, &fs, NULL, &pos, &what),
                             -EBADMSG);
            ck_assert_ptr_null(what);
            ck_assert_uint_eq(refused.strings, 1);
            ck_assert_uint_eq(refused.rows, 0);
        }
        ct_chunk_enc_free(&e);
        ct_buf_free(&out);
    }
}
END_TEST

START_TEST(chunk_rejects_wrong_kind_or_field_count)
{
    struct ct_chunk_enc e = {0};
    uint64_t f[CT_MAX_FIELDS] = {0};
    ct_chunk_begin(&e, 1, 0, 0);
    ck_assert_int_eq(ct_chunk_add_record(&e, 0, f, 3), -EINVAL);
    ck_assert_int_eq(ct_chunk_add_record(&e, CT_REC_KIND_COUNT, f, 3), -EINVAL);
    ck_assert_int_eq(ct_chunk_add_record(&e, CT_REC_DROP, f, 2), -EINVAL);
    ct_chunk_enc_free(&e);
}
END_TEST

START_TEST(chunk_decode_reports_position_of_damage_at_every_cut)
{
    struct ct_chunk_enc e = {0};
    struct ct_buf out = {0};
    ct_chunk_begin(&e, 1, 0, 1000);
    ct_chunk_add_string(&e, 1, "abc", 3);
    uint64_t f[CT_API_NFIELDS] = {1000, 2000, 1, 5};
    for (int i = 0; i < 10; i++) {
        f[0] += 100;
        f[1] += 100;
        ct_chunk_add_record(&e, CT_REC_API, f, CT_API_NFIELDS);
    }
    ct_chunk_finish(&e, &out);
    for (size_t cut = 0; cut < out.len; cut++) {
        size_t pos = SIZE_MAX;
        const char *what = NULL;
        int rc = ct_chunk_decode(out.p, cut, NULL, NULL, &pos, &what);
        ck_assert_int_eq(rc, -EBADMSG);
        ck_assert_uint_le(pos, cut);
        ck_assert_ptr_nonnull(what);
    }
    /* trailing garbage is damage too */
    uint8_t *longer = malloc(out.len + 1);
    memcpy(longer, out.p, out.len);
    longer[out.len] = 0;
    size_t pos;
    const char *what;
    ck_assert_int_eq(ct_chunk_decode(longer, out.len + 1, NULL, NULL, &pos, &what), -EBADMSG);
    ck_assert_uint_eq(pos, out.len);
    free(longer);
    ct_chunk_enc_free(&e);
    ct_buf_free(&out);
}
END_TEST

/* A kind byte outside 1..CT_REC_KIND_COUNT-1 is damage at that byte: the
 * first one of the chunk is named, whichever kinds follow it (the kinds are
 * counted in one pass and searched only when an unknown one is there). */
START_TEST(chunk_decode_names_the_first_unknown_kind_byte)
{
    struct ct_chunk_enc e = {0};
    struct ct_buf out = {0};
    ct_chunk_begin(&e, 3, 0, 500);
    uint64_t f[CT_API_NFIELDS] = {600, 700, 1, 5};
    for (int i = 0; i < 40; i++)
        ck_assert_int_eq(ct_chunk_add_record(&e, CT_REC_API, f, CT_API_NFIELDS), 0);
    ck_assert_int_eq(ct_chunk_finish(&e, &out), 0);
    /* the kind bytes follow the header's varints: magic, thread, sequence,
     * base time, string count (0), record count */
    uint8_t hdr[6 * CT_VARINT_MAX];
    size_t at = 0;
    const uint64_t h[] = {CT_CHUNK_MAGIC, 3, 0, 500, 0, 40};
    for (size_t i = 0; i < 6; i++)
        at += ct_varint_put(hdr + at, h[i]);
    ck_assert_mem_eq(out.p, hdr, at);
    for (size_t k = 0; k < 40; k++)
        ck_assert_uint_eq(out.p[at + k], CT_REC_API);
    const size_t bad_at[] = {0, 17, 39};
    const uint8_t bad[] = {0, CT_REC_KIND_COUNT, 255};
    uint8_t *buf = malloc(out.len);
    ck_assert_ptr_nonnull(buf);
    for (size_t i = 0; i < 3; i++)
        for (size_t j = 0; j < 3; j++) {
            memcpy(buf, out.p, out.len);
            buf[at + bad_at[i]] = bad[j];
            if (bad_at[i] + 1 < 40)
                buf[at + 39] = bad[(j + 1) % 3]; /* a later one is not the one named */
            size_t pos = SIZE_MAX;
            const char *what = NULL;
            ck_assert_int_eq(ct_chunk_decode(buf, out.len, NULL, NULL, &pos, &what), -EBADMSG);
            ck_assert_uint_eq(pos, at + bad_at[i]);
            ck_assert_str_eq(what, "a known record kind (1..10)");
        }
    free(buf);
    ct_chunk_enc_free(&e);
    ct_buf_free(&out);
}
END_TEST

START_TEST(chunk_decode_survives_random_bytes)
{
    srand(12345);
    uint8_t buf[512];
    for (int iter = 0; iter < 20000; iter++) {
        size_t n = (size_t)(rand() % (int)sizeof(buf));
        for (size_t i = 0; i < n; i++)
            buf[i] = (uint8_t)rand();
        if (n > 2 && iter % 2) { /* make most inputs get past the magic */
            buf[0] = 0xd4;
            buf[1] = 0x86;
            buf[2] = 0x01;
        }
        size_t pos;
        const char *what;
        int rc = ct_chunk_decode(buf, n, NULL, NULL, &pos, &what);
        ck_assert(rc == 0 || rc == -EBADMSG);
        if (rc)
            ck_assert_uint_le(pos, n);
    }
}
END_TEST

Suite *codec_suite(void)
{
    Suite *s = suite_create("codec");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, varint_round_trips_edge_values);
    tcase_add_test(tc, varint_rejects_more_than_64_bits);
    tcase_add_test(tc, zigzag_round_trips_signed_extremes);
    tcase_add_test(tc, chunk_round_trips_every_kind_with_extreme_values);
    tcase_add_test(tc, chunk_blocks_carry_the_same_rows_as_records);
    tcase_add_test(tc, chunk_decode_whole_delivers_nothing_of_a_damaged_chunk);
    tcase_add_test(tc, chunk_rejects_wrong_kind_or_field_count);
    tcase_add_test(tc, chunk_decode_reports_position_of_damage_at_every_cut);
    tcase_add_test(tc, chunk_decode_names_the_first_unknown_kind_byte);
    tcase_add_test(tc, chunk_decode_survives_random_bytes);
    suite_add_tcase(s, tc);
    return s;
}
