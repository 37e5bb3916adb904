/*
 * libFuzzer target for the Kineto reader (decoder/kineto/kineto.c): any bytes must
 * parse, stop at the damage with a warning, or fail with a message naming
 * the byte offset -- never crash, hang or leak. Both modes (HTA-compatible
 * and normal) then build the model. Replayed over tests/fuzz/kineto_seeds
 * and tests/fuzz/kineto_regressions in every normal test run.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "decoder/kineto/kineto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int hta = 0; hta < 2; hta++) {
        struct ct_proc p;
        char err[256];
        err[0] = 0;
        if (ct_kineto_load_mem(data, size, "fuzz.json", &p, err, sizeof(err)) == 0) {
            (void)ct_kineto_finish(&p, 1, hta);
            (void)ct_kineto_warning(&p);
        } else if (!err[0]) {
            __builtin_trap(); /* a failure must say why */
        }
        ct_proc_free(&p);
    }
    return 0;
}
