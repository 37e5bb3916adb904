/*
 * One row of the rows' JSON lines (docs/diff.md "Rows") parsed for `cutrace
 * fleet add` (fleet_add.c): a flat object whose one nested object (labels)
 * is flattened, its strings unescaped into a scratch buffer reused row to
 * row (decoder/compare/fleet_row.h).
 */
#include "decoder/compare/fleet_row.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++;
    return p;
}

static void put_utf8(char **o, unsigned c)
{
    char *q = *o;
    if (c < 0x80) {
        *q++ = (char)c;
    } else if (c < 0x800) {
        *q++ = (char)(0xC0 | (c >> 6));
        *q++ = (char)(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        *q++ = (char)(0xE0 | (c >> 12));
        *q++ = (char)(0x80 | ((c >> 6) & 0x3F));
        *q++ = (char)(0x80 | (c & 0x3F));
    } else {
        *q++ = (char)(0xF0 | (c >> 18));
        *q++ = (char)(0x80 | ((c >> 12) & 0x3F));
        *q++ = (char)(0x80 | ((c >> 6) & 0x3F));
        *q++ = (char)(0x80 | (c & 0x3F));
    }
    *o = q;
}

static int hex4(const char *p, const char *e, unsigned *c)
{
    if (e - p < 4)
        return -1;
    *c = 0;
    for (int i = 0; i < 4; i++) {
        char h = p[i];
        unsigned d = h >= '0' && h <= '9'   ? (unsigned)(h - '0')
                     : h >= 'a' && h <= 'f' ? (unsigned)(h - 'a' + 10)
                     : h >= 'A' && h <= 'F' ? (unsigned)(h - 'A' + 10)
                                            : 16;
        if (d > 15)
            return -1;
        *c = *c * 16 + d;
    }
    return 0;
}

/* A string at p (after its opening quote) into the scratch: the end of
 * the string in the input, or NULL. */
static const char *str(struct ct_jrow *r, const char *p, const char *e, const char **out,
                       const char *prefix)
{
    char *o = r->scratch + r->slen, *start = o;
    if (prefix) {
        size_t k = strlen(prefix);
        memcpy(o, prefix, k);
        o += k;
    }
    while (p < e && *p != '"') {
        if (*p != '\\') {
            *o++ = *p++;
            continue;
        }
        if (++p >= e)
            return NULL;
        char c = *p++;
        switch (c) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned u, lo;
            if (hex4(p, e, &u))
                return NULL;
            p += 4;
            if (u >= 0xD800 && u < 0xDC00 && e - p >= 6 && p[0] == '\\' && p[1] == 'u' &&
                !hex4(p + 2, e, &lo) && lo >= 0xDC00 && lo < 0xE000) {
                u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
                p += 6;
            }
            put_utf8(&o, u ? u : 0xFFFD); /* a NUL would cut the string: U+FFFD */
            break;
        }
        default: return NULL;
        }
    }
    if (p >= e)
        return NULL;
    *o++ = 0;
    r->slen = (size_t)(o - r->scratch);
    *out = start;
    return p + 1;
}

static int add(struct ct_jrow *r, const char *key, const char *s, double num, int type)
{
    if (r->n == r->cap) {
        size_t c = r->cap ? r->cap * 2 : 64;
        struct ct_jv *v = realloc(r->v, c * sizeof(*v));
        if (!v)
            return -ENOMEM;
        r->v = v;
        r->cap = c;
    }
    r->v[r->n++] = (struct ct_jv){key, s, num, type};
    return 0;
}

/* A scalar value at p; for an object nested one level (labels), its
 * members. The end of the value, or NULL. */
static const char *value(struct ct_jrow *r, const char *key, const char *p, const char *e,
                         int depth)
{
    p = ws(p, e);
    if (p >= e)
        return NULL;
    if (*p == '"') {
        const char *s;
        if (!(p = str(r, p + 1, e, &s, NULL)) || add(r, key, s, 0, CT_JSTR))
            return NULL;
        return p;
    }
    if (*p == '{' && depth == 0) {
        p = ws(p + 1, e);
        if (p < e && *p == '}')
            return p + 1;
        for (;;) {
            p = ws(p, e);
            if (p >= e || *p != '"')
                return NULL;
            char prefix[64];
            snprintf(prefix, sizeof(prefix), "%s:", key);
            const char *k;
            if (!(p = str(r, p + 1, e, &k, prefix)))
                return NULL;
            p = ws(p, e);
            if (p >= e || *p != ':')
                return NULL;
            if (!(p = value(r, k, p + 1, e, 1)))
                return NULL;
            p = ws(p, e);
            if (p < e && *p == ',') {
                p++;
                continue;
            }
            return p < e && *p == '}' ? p + 1 : NULL;
        }
    }
    if (!strncmp(p, "null", 4) && e - p >= 4)
        return add(r, key, NULL, NAN, CT_JNULL) ? NULL : p + 4;
    if (!strncmp(p, "true", 4) && e - p >= 4)
        return add(r, key, "true", 1, CT_JBOOL) ? NULL : p + 4;
    if (!strncmp(p, "false", 5) && e - p >= 5)
        return add(r, key, "false", 0, CT_JBOOL) ? NULL : p + 5;
    /* a number: its text kept as the store's value */
    const char *q = p;
    while (q < e && strchr("+-0123456789.eE", *q))
        q++;
    if (q == p)
        return NULL;
    char *o = r->scratch + r->slen;
    memcpy(o, p, (size_t)(q - p));
    o[q - p] = 0;
    r->slen += (size_t)(q - p) + 1;
    char *end;
    double d = strtod(o, &end);
    if (*end)
        return NULL;
    return add(r, key, o, d, CT_JNUM) ? NULL : q;
}

int ct_jrow_parse(struct ct_jrow *r, const char *line, size_t n)
{
    r->n = 0;
    r->slen = 0;
    size_t need = 2 * n + 64;
    if (need > r->scap) {
        char *s = realloc(r->scratch, need);
        if (!s)
            return -ENOMEM;
        r->scratch = s;
        r->scap = need;
    }
    const char *p = ws(line, line + n), *e = line + n;
    if (p >= e || *p != '{')
        return -EINVAL;
    p = ws(p + 1, e);
    if (p < e && *p == '}')
        return 0;
    for (;;) {
        p = ws(p, e);
        if (p >= e || *p != '"')
            return -EINVAL;
        const char *k;
        if (!(p = str(r, p + 1, e, &k, NULL)))
            return -EINVAL;
        p = ws(p, e);
        if (p >= e || *p != ':')
            return -EINVAL;
        if (!(p = value(r, k, p + 1, e, 0)))
            return r->n == r->cap ? -ENOMEM : -EINVAL;
        p = ws(p, e);
        if (p < e && *p == ',') {
            p++;
            continue;
        }
        if (p < e && *p == '}')
            break;
        return -EINVAL;
    }
    p = ws(p + 1, e);
    return p == e ? 0 : -EINVAL;
}

const struct ct_jv *ct_jrow_get(const struct ct_jrow *r, const char *key)
{
    for (size_t i = 0; i < r->n; i++)
        if (!strcmp(r->v[i].key, key))
            return &r->v[i];
    return NULL;
}

const char *ct_jrow_str(const struct ct_jrow *r, const char *key)
{
    const struct ct_jv *v = ct_jrow_get(r, key);
    return v && (v->type == CT_JSTR || v->type == CT_JNUM) ? v->s : NULL;
}

double ct_jrow_num(const struct ct_jrow *r, const char *key)
{
    const struct ct_jv *v = ct_jrow_get(r, key);
    return v && v->type == CT_JNUM ? v->num : NAN;
}
