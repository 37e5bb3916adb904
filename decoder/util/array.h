/* Growable arrays: the one helper every decoder stage grows its arrays with. */
#ifndef CT_DECODER_ARRAY_H
#define CT_DECODER_ARRAY_H

#include <stddef.h>

/*
 * Makes room for element n of the array *p of *cap elements of elem bytes:
 * when n >= *cap, doubles the capacity (256 the first time) by realloc.
 * Returns 0, or -ENOMEM with *p and *cap unchanged.
 */
int ct_grow(void **p, size_t *cap, size_t n, size_t elem);

#endif
