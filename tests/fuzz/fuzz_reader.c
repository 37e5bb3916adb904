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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ct_reader r;
    if (ct_reader_open_mem(&r, data, size) != 0)
        return 0;
    struct ct_chunk_sink sink = {&r, NULL, on_record, NULL, NULL};
    int guard = 0;
    while (ct_reader_next(&r, &sink) > 0 && guard++ < 100000)
        ;
    ct_reader_close(&r);
    return 0;
}
