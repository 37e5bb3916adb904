/*
 * Streaming JSON tokenizer (kineto_json.h). The window is refilled only at
 * token boundaries: a token that runs past the bytes in hand is re-lexed
 * after a refill, so the inner loops scan plain memory. Grammar is strict
 * RFC 8259 except that any top-level sequence of values is accepted (the
 * reader checks the structure it needs).
 */
#include "decoder/kineto/kineto_json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW_MIN (1u << 20)
#define WINDOW_MAX ((size_t)1 << 30) /* one token may not exceed 1 GiB */

int ct_jlex_init(struct ct_jlex *lx, ct_jread_fn rd, void *ctx)
{
    memset(lx, 0, sizeof(*lx));
    lx->rd = rd;
    lx->ctx = ctx;
    lx->buf = malloc(WINDOW_MIN + 1);
    if (!lx->buf)
        return -ENOMEM;
    lx->cap = WINDOW_MIN;
    return 0;
}

int ct_jlex_init_mem(struct ct_jlex *lx, const char *data, size_t n)
{
    memset(lx, 0, sizeof(*lx));
    /* the cast: a borrowed window is only ever read (lex_string checks) */
    lx->buf = (char *)(uintptr_t)data;
    lx->cap = lx->end = n;
    lx->eof = 1;
    lx->borrowed = 1;
    return 0;
}

void ct_jlex_free(struct ct_jlex *lx)
{
    if (!lx->borrowed)
        free(lx->buf);
    free(lx->sc);
    memset(lx, 0, sizeof(*lx));
}

static int fail(struct ct_jlex *lx, uint64_t off, const char *what)
{
    if (!lx->err[0]) {
        lx->off = off;
        snprintf(lx->err, sizeof(lx->err), "%s", what);
    }
    return CT_JT_ERR;
}

/* Keeps buf[from..end), reads more. Returns 0, or -1 with the error set. */
static int refill(struct ct_jlex *lx, size_t from)
{
    if (lx->eof)
        return 0;
    memmove(lx->buf, lx->buf + from, lx->end - from);
    lx->base += from;
    lx->end -= from;
    lx->pos -= from;
    if (lx->end == lx->cap) {
        if (lx->cap >= WINDOW_MAX)
            return fail(lx, lx->base, "token longer than 1 GiB"), -1;
        char *nb = realloc(lx->buf, lx->cap * 2 + 1);
        if (!nb)
            return fail(lx, lx->base, "out of memory"), -1;
        lx->buf = nb;
        lx->cap *= 2;
    }
    while (lx->end < lx->cap) {
        ssize_t got = lx->rd(lx->ctx, lx->buf + lx->end, lx->cap - lx->end);
        if (got < 0) {
            lx->io_err = (int)-got;
            return fail(lx, lx->base + lx->end, "read error"), -1;
        }
        if (got == 0) {
            lx->eof = 1;
            break;
        }
        lx->end += (size_t)got;
        if (lx->end - lx->pos >= 4096)
            break;
    }
    return 0;
}

static int put_utf8(char *d, uint32_t c)
{
    if (c < 0x80) {
        d[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        d[0] = (char)(0xC0 | (c >> 6));
        d[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        d[0] = (char)(0xE0 | (c >> 12));
        d[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        d[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    d[0] = (char)(0xF0 | (c >> 18));
    d[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    d[2] = (char)(0x80 | ((c >> 6) & 0x3F));
    d[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

static int hex4(const char *p, uint32_t *v)
{
    uint32_t x = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        x <<= 4;
        if (c >= '0' && c <= '9')
            x |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            x |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            x |= (uint32_t)(c - 'A' + 10);
        else
            return -1;
    }
    *v = x;
    return 0;
}

/* Decodes the escaped string body [p, q) into the scratch buffer. */
static int decode(struct ct_jlex *lx, const char *p, const char *q)
{
    size_t need = (size_t)(q - p) + 1;
    if (need > lx->scap) {
        char *s = realloc(lx->sc, need);
        if (!s)
            return fail(lx, lx->base + lx->pos, "out of memory");
        lx->sc = s;
        lx->scap = need;
    }
    char *d = lx->sc;
    while (p < q) {
        if (*p != '\\') {
            *d++ = *p++;
            continue;
        }
        uint64_t at = lx->base + (uint64_t)(p - lx->buf);
        char c = p[1];
        p += 2;
        switch (c) {
        case '"': *d++ = '"'; break;
        case '\\': *d++ = '\\'; break;
        case '/': *d++ = '/'; break;
        case 'b': *d++ = '\b'; break;
        case 'f': *d++ = '\f'; break;
        case 'n': *d++ = '\n'; break;
        case 'r': *d++ = '\r'; break;
        case 't': *d++ = '\t'; break;
        case 'u': {
            uint32_t u, lo;
            if (q - p < 4 || hex4(p, &u))
                return fail(lx, at, "bad \\u escape in string");
            p += 4;
            if (u >= 0xD800 && u < 0xDC00 && q - p >= 6 && p[0] == '\\' && p[1] == 'u' &&
                !hex4(p + 2, &lo) && lo >= 0xDC00 && lo < 0xE000) {
                u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
                p += 6;
            }
            /* 6 escaped bytes give at most 4 UTF-8 bytes: fits in place */
            d += put_utf8(d, u);
            break;
        }
        default: return fail(lx, at, "bad escape in string");
        }
    }
    *d = 0;
    lx->s = lx->sc;
    lx->n = (size_t)(d - lx->sc);
    return CT_JT_STR;
}

/* The first '"' or '\\' in [p, e) within 32 bytes of p: its address, or
 * where the search stopped (e, or 32 bytes on) when there is none. */
static const char *scan_short(const char *p, const char *e)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    const char *lim = e - p > 32 ? p + 32 : e;
    while (lim - p >= 8) {
        uint64_t x, q, b;
        memcpy(&x, p, 8);
        q = x ^ 0x2222222222222222ull; /* zero bytes where x has '"' */
        b = x ^ 0x5c5c5c5c5c5c5c5cull; /* and where it has '\\' */
        uint64_t m = (((q - ones) & ~q) | ((b - ones) & ~b)) & high;
        if (m) /* the lowest flagged byte is exact (borrows only go up) */
            return p + (__builtin_ctzll(m) >> 3);
        p += 8;
    }
    for (; p < lim; p++)
        if (*p == '"' || *p == '\\')
            return p;
    return p;
#else
    const char *lim = e - p > 32 ? p + 32 : e;
    for (; p < lim; p++)
        if (*p == '"' || *p == '\\')
            return p;
    return p;
#endif
}

static int lex_string(struct ct_jlex *lx)
{
    for (;;) {
        const char *b = lx->buf + lx->pos + 1, *e = lx->buf + lx->end, *p = b;
        int esc = 0;
        for (;;) {
            /* Most strings are short member names and values: eight bytes
             * at a time without a call first (scan_short), then memchr,
             * which is vectorised: the quote, then a backslash before it.
             * Raw control bytes inside strings are accepted (as Python's
             * json with strict=False): checking them costs a byte loop. */
            if (p < e) {
                const char *x = scan_short(p, e);
                if (x < e && (*x == '"' || *x == '\\')) {
                    p = x;
                    if (*p == '"')
                        break;
                    esc = 1;
                    p += 2;
                    continue;
                }
                p = x;
            }
            const char *q = p < e ? memchr(p, '"', (size_t)(e - p)) : NULL;
            const char *stop = q ? q : e;
            const char *bs = p < stop ? memchr(p, '\\', (size_t)(stop - p)) : NULL;
            p = bs ? bs : stop;
            if (p >= e)
                break;
            if (*p == '"')
                break;
            esc = 1;
            p += 2; /* the escaped byte can never end the string */
        }
        if (p < e) {
            size_t close = (size_t)(p - lx->buf);
            int t;
            if (esc) {
                t = decode(lx, b, p);
            } else {
                if (!lx->borrowed) /* the quote is consumed: terminate in place */
                    lx->buf[close] = 0;
                lx->s = b;
                lx->n = (size_t)(p - b);
                t = CT_JT_STR;
            }
            lx->pos = close + 1;
            return t;
        }
        if (lx->eof)
            return fail(lx, lx->base + lx->pos, "string not terminated (input ends)");
        if (refill(lx, lx->pos))
            return CT_JT_ERR;
    }
}

/* Length of a JSON number at p (strict grammar), 0 if malformed, or -1
 * when the bytes end before the number provably does. */
static long number_len(const char *p, const char *e, int eof)
{
    const char *q = p;
#define MORE()  (q < e ? 1 : (eof ? 0 : -1))
#define DIGIT() (q < e && *q >= '0' && *q <= '9')
    if (q < e && *q == '-')
        q++;
    if (!MORE())
        return 0;
    if (MORE() < 0)
        return -1;
    if (*q == '0') {
        q++;
    } else if (DIGIT()) {
        while (DIGIT())
            q++;
    } else {
        return 0;
    }
    if (q == e && !eof)
        return -1;
    if (q < e && *q == '.') {
        q++;
        if (q == e)
            return eof ? 0 : -1;
        if (!DIGIT())
            return 0;
        while (DIGIT())
            q++;
        if (q == e && !eof)
            return -1;
    }
    if (q < e && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < e && (*q == '+' || *q == '-'))
            q++;
        if (q == e)
            return eof ? 0 : -1;
        if (!DIGIT())
            return 0;
        while (DIGIT())
            q++;
        if (q == e && !eof)
            return -1;
    }
#undef MORE
#undef DIGIT
    return q - p;
}

static int lex_word(struct ct_jlex *lx, const char *w, size_t n, int tok)
{
    while (lx->end - lx->pos < n && !lx->eof)
        if (refill(lx, lx->pos))
            return CT_JT_ERR;
    if (lx->end - lx->pos < n || memcmp(lx->buf + lx->pos, w, n))
        return fail(lx, lx->base + lx->pos, "unexpected character");
    lx->pos += n;
    return tok;
}

int ct_jlex_next(struct ct_jlex *lx)
{
    if (lx->err[0])
        return CT_JT_ERR;
    for (;;) {
        /* every byte above ' ' ends the white space: one test per byte for
         * the common case (a token right after the last one, or one blank) */
        while (lx->pos < lx->end) {
            unsigned char c = (unsigned char)lx->buf[lx->pos];
            if (c > ' ' || (c != ' ' && c != '\n' && c != '\r' && c != '\t'))
                break;
            lx->pos++;
        }
        if (lx->pos < lx->end)
            break;
        if (lx->eof)
            return lx->off = lx->base + lx->pos, CT_JT_EOF;
        if (refill(lx, lx->pos))
            return CT_JT_ERR;
    }
    lx->off = lx->base + lx->pos;
    char c = lx->buf[lx->pos];
    switch (c) {
    case '{': lx->pos++; return CT_JT_OBJ;
    case '}': lx->pos++; return CT_JT_OBJ_END;
    case '[': lx->pos++; return CT_JT_ARR;
    case ']': lx->pos++; return CT_JT_ARR_END;
    case ':': lx->pos++; return CT_JT_COLON;
    case ',': lx->pos++; return CT_JT_COMMA;
    case '"': return lex_string(lx);
    case 't': return lex_word(lx, "true", 4, CT_JT_TRUE);
    case 'f': return lex_word(lx, "false", 5, CT_JT_FALSE);
    case 'n': return lex_word(lx, "null", 4, CT_JT_NULL);
    default: break;
    }
    if (c != '-' && (c < '0' || c > '9'))
        return fail(lx, lx->off, "unexpected character");
    for (;;) {
        long len = number_len(lx->buf + lx->pos, lx->buf + lx->end, lx->eof);
        if (len > 0) {
            lx->s = lx->buf + lx->pos;
            lx->n = (size_t)len;
            lx->pos += (size_t)len;
            return CT_JT_NUM;
        }
        if (len == 0)
            return fail(lx, lx->base + lx->pos, "malformed number");
        if (refill(lx, lx->pos))
            return CT_JT_ERR;
    }
}

int ct_jlex_skip(struct ct_jlex *lx, int tok)
{
    if (tok != CT_JT_OBJ && tok != CT_JT_ARR)
        return tok > CT_JT_COMMA ? 0 : fail(lx, lx->off, "expected a value");
    /* a stack of open brackets, one bit per level: 1 = object */
    uint64_t stack[64];
    size_t depth = 0;
    stack[0] = tok == CT_JT_OBJ;
    depth = 1;
    while (depth) {
        int t = ct_jlex_next_fast(lx);
        if (t == CT_JT_ERR || t == CT_JT_EOF)
            return t == CT_JT_EOF ? fail(lx, lx->off, "input ends inside a value") : t;
        if (t == CT_JT_OBJ || t == CT_JT_ARR) {
            if (depth >= 64 * 64)
                return fail(lx, lx->off, "nesting deeper than 4096");
            if (t == CT_JT_OBJ)
                stack[depth / 64] |= 1ull << (depth % 64);
            else
                stack[depth / 64] &= ~(1ull << (depth % 64));
            depth++;
        } else if (t == CT_JT_OBJ_END || t == CT_JT_ARR_END) {
            depth--;
            int is_obj = (int)((stack[depth / 64] >> (depth % 64)) & 1);
            if (is_obj != (t == CT_JT_OBJ_END))
                return fail(lx, lx->off, "mismatched bracket");
        }
    }
    return 0;
}

double ct_jnum_double(const char *s, size_t n)
{
    char tmp[64];
    if (n >= sizeof(tmp)) {
        char *d = strndup(s, n);
        if (!d)
            return NAN;
        double v = strtod(d, NULL);
        free(d);
        return v;
    }
    memcpy(tmp, s, n);
    tmp[n] = 0;
    return strtod(tmp, NULL);
}

int ct_jnum_is_int(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] == '.' || s[i] == 'e' || s[i] == 'E')
            return 0;
    return 1;
}

int64_t ct_jnum_i64(const char *s, size_t n)
{
    size_t i = 0;
    int neg = 0;
    if (i < n && s[i] == '-')
        neg = 1, i++;
    uint64_t v = 0;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
        if (v > (uint64_t)INT64_MAX / 10) {
            v = (uint64_t)INT64_MAX;
            break;
        }
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > (uint64_t)INT64_MAX)
        v = (uint64_t)INT64_MAX;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        double d = ct_jnum_double(s, n);
        if (!(d > -9.2e18 && d < 9.2e18))
            return d < 0 ? INT64_MIN : INT64_MAX;
        return (int64_t)d;
    }
    return neg ? -(int64_t)v : (int64_t)v;
}

int ct_jnum_ns(const char *s, size_t n, int64_t *ns)
{
    if (!ct_jnum_is_int(s, n)) {
        /* exponent forms are rare: go through double */
        for (size_t i = 0; i < n; i++)
            if (s[i] == 'e' || s[i] == 'E') {
                double d = ct_jnum_double(s, n) * 1000.0;
                if (!(d > -9.2e18 && d < 9.2e18))
                    return -1;
                *ns = (int64_t)llround(d);
                return 0;
            }
    }
    size_t i = 0;
    int neg = 0;
    if (i < n && s[i] == '-')
        neg = 1, i++;
    uint64_t v = 0;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
        if (v > (uint64_t)INT64_MAX / 10000)
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    v *= 1000;
    if (i < n && s[i] == '.') {
        i++;
        uint64_t scale = 100;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
            if (scale) {
                v += (uint64_t)(s[i] - '0') * scale;
                scale /= 10;
            } else {
                if (s[i] >= '5')
                    v++;
                break;
            }
        }
    }
    *ns = neg ? -(int64_t)v : (int64_t)v;
    return 0;
}

int ct_jnum_parse(const char *s, size_t n, int64_t *ns, double *d, int *is_int)
{
    size_t i = 0;
    int neg = 0;
    if (i < n && s[i] == '-')
        neg = 1, i++;
    uint64_t ip = 0, frac = 0;
    size_t fd = 0, id = 0;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, id++)
        ip = ip * 10 + (uint64_t)(s[i] - '0');
    int dot = i < n && s[i] == '.';
    if (dot)
        for (i++; i < n && s[i] >= '0' && s[i] <= '9' && fd < 4; i++, fd++)
            frac = frac * 10 + (uint64_t)(s[i] - '0');
    if (i < n || id > 16) {
        /* more than 3 decimals, an exponent or a huge value: the slow path */
        *is_int = ct_jnum_is_int(s, n);
        *d = ct_jnum_double(s, n);
        return ct_jnum_ns(s, n, ns);
    }
    *is_int = !dot; /* digits only, all of them read */
    static const uint64_t p10[] = {1, 10, 100, 1000, 10000};
    uint64_t mant = ip * p10[fd] + frac;
    /* mant and 10^fd are exact doubles (mant < 2^53): IEEE division rounds
     * the exact decimal value correctly, as strtod (and Python) do */
    if (mant < (1ull << 53) && fd < 4) {
        *d = (double)mant / (double)p10[fd];
        if (neg)
            *d = -*d;
        uint64_t v = ip * 1000 + frac * p10[3 - fd];
        *ns = neg ? -(int64_t)v : (int64_t)v;
        return 0;
    }
    *d = ct_jnum_double(s, n);
    return ct_jnum_ns(s, n, ns);
}
