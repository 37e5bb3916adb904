/*
 * LEB128 varints and zigzag, shared by the chunk encoder and the reader.
 * Decoding is bounds-checked: corrupt input must never read past the buffer.
 */
#ifndef CT_VARINT_H
#define CT_VARINT_H

#include <stddef.h>
#include <stdint.h>

#define CT_VARINT_MAX 10

static inline uint64_t ct_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t ct_unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Writes v at p (room for CT_VARINT_MAX bytes needed); returns bytes written. */
static inline size_t ct_varint_put(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

/*
 * Reads a varint from [*p, end). Returns 0 and advances *p, or -1 when the
 * input ends inside the varint or it is longer than 64 bits allow.
 */
static inline int ct_varint_get(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    const uint8_t *q = *p;
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (q >= end)
            return -1;
        uint8_t b = *q++;
        if (shift == 63 && (b & 0x7e))
            return -1; /* would overflow 64 bits */
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *p = q;
            *out = v;
            return 0;
        }
    }
    return -1;
}

#endif
