/*
 * libFuzzer target for the per-rank summary reader (decoder/read/
 * summary.c): any bytes must decode or fail with a message, never crash,
 * hang, leak or allocate beyond what the input can describe. Replayed over
 * tests/fuzz/summary_seeds and tests/fuzz/summary_regressions in every
 * normal test run.
 */
#include <stddef.h>
#include <stdint.h>

#include "decoder/read/summary.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ct_proc p;
    char err[256];
    err[0] = 0;
    if (ct_summary_read_mem(data, size, "fuzz.ctsum", NULL, &p, err, sizeof(err)) != 0 && !err[0])
        __builtin_trap(); /* a failure must say why */
    ct_proc_free(&p);
    return 0;
}
