/* Growable arrays (decoder/util/array.h). */
#include "decoder/util/array.h"

#include <errno.h>
#include <stdlib.h>

int ct_grow(void **p, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 256;
    void *q = realloc(*p, c * elem);
    if (!q)
        return -ENOMEM;
    *p = q;
    *cap = c;
    return 0;
}
