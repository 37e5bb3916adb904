/*
 * libFuzzer target for the salvage reader (src/salvage.c): a live mapping
 * cut or damaged anywhere must give a salvage that decodes (up to the
 * damage) or a clear refusal, never a crash, hang or leak. Replayed over
 * tests/fuzz/salvage_seeds and salvage_regressions in every normal test
 * run (replay.c).
 *
 * A mapping is 65 KiB of header and slot table before its first region, so
 * the input is a compact form of one (gen_salvage_seeds.c writes them):
 *   [0, 1024)     the header page's first 1024 bytes
 *   [1024, 1088)  the slot table's first 16 words
 *   [1088, ...)   the mapping from offset 65536 on (string log, deferred
 *                 bytes, rings), as its header's offsets place them
 * The trace file the salvage completes is a bare 72-byte trace header.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/live.h"
#include "src/reader.h"
#include "src/salvage.h"

#define HEAD_IN  1024u
#define SLOTS_IN 64u

static const uint8_t k_file[72] = {
    0x50, 0x2A, 0x4D, 0x18, 64, 0, 0, 0, 'C', 'U', 'T', 'R', 'A', 'C', 'E', 0, 3, 0, 64, 0,
};

static int on_record(void *ctx, const struct ct_record *r)
{
    struct ct_reader *rd = ctx;
    for (unsigned i = 0; i < r->nfields; i++)
        if (ct_kind_table[r->kind].codec[i] == CT_CODEC_STR)
            (void)strlen(ct_reader_string(rd, r->f[i]));
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < HEAD_IN + SLOTS_IN || size > (64u << 20))
        return 0;
    size_t len = CT_LIVE_HDR_BYTES + (size - HEAD_IN - SLOTS_IN);
    uint8_t *map = calloc(1, len);
    if (!map)
        return 0;
    memcpy(map, data, HEAD_IN);
    memcpy(map + CT_LIVE_SLOTS_OFF, data + HEAD_IN, SLOTS_IN);
    memcpy(map + CT_LIVE_HDR_BYTES, data + HEAD_IN + SLOTS_IN, size - HEAD_IN - SLOTS_IN);
    struct ct_live_map m;
    struct ct_salvage s;
    char err[256];
    if (ct_live_map_mem(&m, map, len) == 0 &&
        ct_salvage_build(&m, (int64_t)sizeof(k_file), data[size - 1] % 16, &s, err, sizeof(err)) ==
            0) {
        size_t pre = s.prefix_in_file ? (size_t)s.prefix_len : 0;
        if (pre > sizeof(k_file))
            pre = sizeof(k_file); /* never more than the file has */
        uint8_t *all = malloc(pre + s.tail.len + 1);
        if (all) {
            memcpy(all, k_file, pre);
            memcpy(all + pre, s.tail.p, s.tail.len);
            struct ct_reader r;
            if (ct_reader_open_mem(&r, all, pre + s.tail.len) == 0) {
                struct ct_chunk_sink sink = {&r, NULL, on_record, NULL, NULL};
                int guard = 0;
                while (ct_reader_next(&r, &sink) > 0 && guard++ < 100000)
                    ;
                ct_reader_close(&r);
            }
            free(all);
        }
        ct_salvage_free(&s);
    }
    free(map);
    return 0;
}
