/*
 * A small streaming JSON tokenizer for the Kineto reader: it pulls bytes
 * from a read callback into one growing window and never builds a DOM, so
 * a multi-hundred-MB trace costs one window (the longest token, at least
 * 1 MiB) of memory. Strings come back decoded (escapes, \u with surrogate
 * pairs to UTF-8); numbers come back as their raw text, converted on demand.
 * It never prints and never exits; an error carries the byte offset of the
 * damage. Not thread-safe per lexer; lexers are independent.
 */
#ifndef CT_KINETO_JSON_H
#define CT_KINETO_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum ct_jtok {
    CT_JT_ERR = -1, /* lx->err says what, lx->off where */
    CT_JT_EOF = 0,
    CT_JT_OBJ,     /* { */
    CT_JT_OBJ_END, /* } */
    CT_JT_ARR,     /* [ */
    CT_JT_ARR_END, /* ] */
    CT_JT_COLON,
    CT_JT_COMMA,
    CT_JT_STR, /* s/n: decoded bytes, valid until the next call (NUL-terminated
                  only when read through a callback: use n) */
    CT_JT_NUM, /* s/n: the number's text, valid until the next call */
    CT_JT_TRUE,
    CT_JT_FALSE,
    CT_JT_NULL,
};

/* Reads up to n bytes into dst: returns the count, 0 at end of input, or a
 * negative errno (the lexer reports it as an error at the current offset). */
typedef ssize_t (*ct_jread_fn)(void *ctx, char *dst, size_t n);

struct ct_jlex {
    char *buf;
    size_t pos, end, cap;
    uint64_t base; /* input offset of buf[0] */
    int eof, io_err;
    ct_jread_fn rd;
    void *ctx;
    const char *s; /* current token's text */
    size_t n;
    uint64_t off; /* input offset of the current token (of the damage on error) */
    char *sc;     /* decode scratch for strings with escapes */
    size_t scap;
    int borrowed; /* buf is the caller's whole input (ct_jlex_init_mem): never written */
    char err[96];
};

/* Returns 0 or -ENOMEM. */
int ct_jlex_init(struct ct_jlex *lx, ct_jread_fn rd, void *ctx);
/* Lexes n bytes in memory in place: nothing is copied or written (a
 * read-only mapping of a file will do); they must outlive the lexer. */
int ct_jlex_init_mem(struct ct_jlex *lx, const char *data, size_t n);
void ct_jlex_free(struct ct_jlex *lx);

/* The next token (enum ct_jtok). After CT_JT_ERR every call returns it again. */
int ct_jlex_next(struct ct_jlex *lx);

/* ct_jlex_next with its most common tokens inline: a bracket, ':' or ','
 * (one byte, usually right after the last token or one blank) is taken
 * here without the call; anything else goes through ct_jlex_next. */
static inline int ct_jlex_next_fast(struct ct_jlex *lx)
{
    size_t p = lx->pos;
    while (p < lx->end && (lx->buf[p] == ' ' || lx->buf[p] == '\n'))
        p++;
    if (p < lx->end && !lx->err[0]) {
        int t;
        switch (lx->buf[p]) {
        case ':': t = CT_JT_COLON; break;
        case ',': t = CT_JT_COMMA; break;
        case '{': t = CT_JT_OBJ; break;
        case '}': t = CT_JT_OBJ_END; break;
        case '[': t = CT_JT_ARR; break;
        case ']': t = CT_JT_ARR_END; break;
        default: lx->pos = p; return ct_jlex_next(lx);
        }
        lx->off = lx->base + p;
        lx->pos = p + 1;
        return t;
    }
    return ct_jlex_next(lx);
}

/* Skips one whole value whose first token tok was just returned (nested
 * objects and arrays included). Returns 0, or CT_JT_ERR / CT_JT_EOF when the
 * input ends or breaks inside it. */
int ct_jlex_skip(struct ct_jlex *lx, int tok);

/* Number text helpers. ct_jnum_double: the value strtod gives (correctly
 * rounded, as Python's json). ct_jnum_is_int: no fraction or exponent (what
 * Python's json parses as int). ct_jnum_ns: text in µs -> exact ns, rounded
 * half away from zero below 1 ns; returns 0, or -1 when out of range. */
double ct_jnum_double(const char *s, size_t n);
int ct_jnum_is_int(const char *s, size_t n);
int ct_jnum_ns(const char *s, size_t n, int64_t *ns);
/* All three at once, without strtod for up to 3 decimals (the common
 * case): returns what ct_jnum_ns returns. */
int ct_jnum_parse(const char *s, size_t n, int64_t *ns, double *d, int *is_int);
/* Integer value of a number token (truncated toward zero; saturates). */
int64_t ct_jnum_i64(const char *s, size_t n);

#endif
