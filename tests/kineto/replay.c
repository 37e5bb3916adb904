/* Replays fuzz inputs (files named on the command line) through the Kineto
 * fuzz target without libFuzzer: each crash found becomes a regression. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            fprintf(stderr, "%s: cannot open\n", argv[i]);
            return 1;
        }
        size_t cap = 1 << 16, n = 0;
        uint8_t *b = malloc(cap);
        size_t got;
        while (b && (got = fread(b + n, 1, cap - n, f)) > 0) {
            n += got;
            if (n == cap) {
                uint8_t *nb = realloc(b, cap *= 2);
                if (!nb) {
                    free(b);
                    b = NULL;
                }
                b = nb;
            }
        }
        fclose(f);
        if (!b)
            return 1;
        LLVMFuzzerTestOneInput(b, n);
        free(b);
    }
    printf("replayed %d input(s)\n", argc - 1);
    return 0;
}
