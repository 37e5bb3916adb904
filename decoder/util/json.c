/* The one JSON writer (json.h): strings escaped with UTF-8 validation (U+FFFD
 * for bad sequences), numbers as printf writes them, null for non-finite. */
#include "decoder/util/json.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* Length of a valid UTF-8 sequence at s, or 0 if invalid. */
static int utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    int n;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return 0;
    return n;
}

void ct_json_str(FILE *f, const char *str)
{
    const unsigned char *s = (const unsigned char *)(str ? str : "");
    fputc_unlocked('"', f);
    while (*s) {
        unsigned c = *s;
        if (c == '"' || c == '\\') {
            fputc_unlocked('\\', f);
            fputc_unlocked((int)c, f);
            s++;
        } else if (c < 0x20) {
            fprintf(f, "\\u%04x", c);
            s++;
        } else if (c < 0x80) {
            fputc_unlocked((int)c, f);
            s++;
        } else {
            int n = utf8_len(s);
            if (n == 0) {
                fputs_unlocked("\\ufffd", f);
                s++;
            } else {
                fwrite_unlocked(s, 1, (size_t)n, f);
                s += n;
            }
        }
    }
    fputc_unlocked('"', f);
}

/* The two digits of each number below 100: numbers are written two
 * digits at a time (half the divisions of one at a time). */
static const char pair[] = "00010203040506070809101112131415161718192021222324252627282930313233"
                           "34353637383940414243444546474849505152535455565758596061626364656667"
                           "6869707172737475767778798081828384858687888990919293949596979899";

size_t ct_json_u64_fmt(char *p, uint64_t a)
{
    char d[20];
    size_t i = sizeof(d);
    while (a >= 100) {
        unsigned r = (unsigned)(a % 100);
        a /= 100;
        d[--i] = pair[2 * r + 1];
        d[--i] = pair[2 * r];
    }
    if (a >= 10) {
        d[--i] = pair[2 * a + 1];
        d[--i] = pair[2 * a];
    } else {
        d[--i] = (char)('0' + a);
    }
    memcpy(p, d + i, sizeof(d) - i);
    return sizeof(d) - i;
}

size_t ct_json_us_fmt(char *b, const char *k, size_t kl, int64_t ns, int comma)
{
    /* below 2^50 ns the double nearest ns / 1000 lies within a quarter of
     * the last printed digit of that exact 3-decimal value: printf would
     * write these digits */
    if (!(ns > -(INT64_C(1) << 50) && ns < INT64_C(1) << 50))
        return 0;
    size_t n = 0;
    uint64_t a = ns < 0 ? (uint64_t)-ns : (uint64_t)ns;
    b[n++] = '"';
    memcpy(b + n, k, kl);
    n += kl;
    b[n++] = '"';
    b[n++] = ':';
    if (ns < 0)
        b[n++] = '-';
    n += ct_json_u64_fmt(b + n, a / 1000);
    unsigned m = (unsigned)(a % 1000);
    b[n++] = '.';
    b[n++] = (char)('0' + m / 100);
    b[n++] = (char)('0' + m / 10 % 10);
    b[n++] = (char)('0' + m % 10);
    if (comma)
        b[n++] = ',';
    return n;
}

/*
 * "%.*f" of v, the way printf writes it, without printf where the answer
 * is an integer m of units of 10^-decimals: x = v * 10^decimals is then
 * within 0.25 of m and below 10^15 in size, where the product's rounding
 * error is at most 1/16, so the exact v * 10^decimals is within 5/16 of m
 * and printf's correctly rounded result is m as well. Most figures are
 * times in whole ns written as µs with 3 decimals: their digits are
 * written directly (a long report spends a fifth of its time in printf).
 * A negative value that rounds to 0 ("-0.000") goes to printf.
 */
/* The digits of fixed_fast's m into the end of [buf, e): their start, or
 * NULL when v is not such a count (see above). */
static char *fixed_digits(double v, int decimals, char *buf, char *e)
{
    static const double scale[] = {1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6};
    static const unsigned long long iscale[] = {1, 10, 100, 1000, 10000, 100000, 1000000};
    if (decimals < 0 || decimals > 6)
        return NULL;
    double x = v * scale[decimals];
    if (!(fabs(x) < 1e15))
        return NULL;
    double r = nearbyint(x);
    if (!(fabs(x - r) < 0.25) || (r == 0 && signbit(v)))
        return NULL;
    unsigned long long m = (unsigned long long)fabs(r), ip = m / iscale[decimals];
    unsigned long long fp = m % iscale[decimals];
    char *p = e;
    int d = decimals;
    for (; d >= 2; d -= 2, fp /= 100) { /* exactly `decimals` digits, two at a time */
        unsigned t = (unsigned)(fp % 100);
        *--p = pair[2 * t + 1];
        *--p = pair[2 * t];
    }
    if (d)
        *--p = (char)('0' + fp % 10);
    if (decimals)
        *--p = '.';
    for (; ip >= 100; ip /= 100) {
        unsigned t = (unsigned)(ip % 100);
        *--p = pair[2 * t + 1];
        *--p = pair[2 * t];
    }
    if (ip >= 10) {
        *--p = pair[2 * ip + 1];
        *--p = pair[2 * ip];
    } else {
        *--p = (char)('0' + ip);
    }
    if (r < 0)
        *--p = '-';
    return p > buf ? p : NULL;
}

static int fixed_fast(FILE *f, double v, int decimals)
{
    char buf[48], *e = buf + sizeof(buf), *p = fixed_digits(v, decimals, buf, e);
    if (p)
        fwrite_unlocked(p, 1, (size_t)(e - p), f);
    return p != NULL;
}

void ct_json_num(FILE *f, double v, int decimals)
{
    if (!isfinite(v))
        fputs_unlocked("null", f);
    else if (!fixed_fast(f, v, decimals))
        fprintf(f, "%.*f", decimals, v);
}

void ct_json_num_g(FILE *f, double v)
{
    /* a count or a size is exact (16777216 bytes, not 1.67772e+07): six
     * digits are a measurement's, not an integer's */
    if (isfinite(v) && v == floor(v) && fabs(v) < 9007199254740992.0)
        fprintf(f, "%.0f", v);
    else if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

void ct_json_member(FILE *f, const char *key, double v, int decimals)
{
    /* "key":digits in one write where it fits (members are most of a
     * long report, and each stdio call costs a hundred instructions) */
    char buf[160], *e = buf + sizeof(buf),
                   *p = isfinite(v) ? fixed_digits(v, decimals, buf, e) : NULL;
    size_t k = strlen(key);
    if (p && (size_t)(p - buf) >= k + 3) {
        *--p = ':';
        *--p = '"';
        p -= k;
        memcpy(p, key, k);
        *--p = '"';
        fwrite_unlocked(p, 1, (size_t)(e - p), f);
        return;
    }
    fputc_unlocked('"', f);
    fputs_unlocked(key, f);
    fputs_unlocked("\":", f);
    ct_json_num(f, v, decimals);
}
