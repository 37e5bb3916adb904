/*
 * libFuzzer target for the trace reader: any bytes must decode to records,
 * damage reports or a clear open error, never a crash, hang or leak. The same
 * entry point is replayed over tests/fuzz/regressions in every normal test
 * run (replay.c), so each crash the fuzzer finds becomes a regression test.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "src/reader.h"

static int on_record(void *ctx, const struct ct_record *r)
{
    struct ct_reader *rd = ctx;
    /* touch every string a record names, as the dump does */
    for (unsigned i = 0; i < r->nfields; i++)
        if (ct_kind_table[r->kind].codec[i] == CT_CODEC_STR)
            (void)strlen(ct_reader_string(rd, r->f[i]));
    return 0;
}

/* The block interface (the report's extraction): every row of every
 * column a block claims is read, and its string ids looked up. */
static int on_block(void *ctx, const struct ct_block *b)
{
    struct ct_reader *rd = ctx;
    size_t pos[CT_REC_KIND_COUNT] = {0};
    for (size_t t = 0; t < b->n; t++) {
        unsigned k = b->kinds[t];
        for (unsigned i = 0; i < ct_kind_table[k].nfields; i++)
            if (ct_kind_table[k].codec[i] == CT_CODEC_STR)
                (void)strlen(ct_reader_string(rd, b->col[k][i * b->cnt[k] + pos[k]]));
        pos[k]++;
    }
    return 0;
}

static void read_all(const uint8_t *data, size_t size, int blocks)
{
    struct ct_reader r;
    if (ct_reader_open_mem(&r, data, size) != 0)
        return;
    struct ct_chunk_sink sink = {&r, NULL, blocks ? NULL : on_record, NULL,
                                 blocks ? on_block : NULL};
    int guard = 0;
    while (ct_reader_next(&r, &sink) > 0 && guard++ < 100000)
        ;
    ct_reader_close(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    read_all(data, size, 0);
    read_all(data, size, 1);
    return 0;
}
