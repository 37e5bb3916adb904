/*
 * Itanium name demangling, the subset kernel names use: nested names,
 * std:: abbreviations, constructors/destructors, operator names, local
 * names and lambdas. Template arguments are skipped by a balanced scan
 * (source names are skipped by their length, so an 'E' inside an
 * identifier never closes a bracket). Unknown input is copied verbatim.
 */
#include "decoder/util/demangle.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

struct dm {
    const char *p;
    char *out;
    size_t len, cap;
    int bad;
    char last[128]; /* last source name: constructors repeat it */
};

static void emit(struct dm *d, const char *s, size_t n)
{
    for (size_t i = 0; i < n && d->len + 1 < d->cap; i++)
        d->out[d->len++] = s[i];
    d->out[d->len] = 0;
}

static void emits(struct dm *d, const char *s)
{
    emit(d, s, strlen(s));
}

static long number(struct dm *d)
{
    long n = 0;
    if (!isdigit((unsigned char)*d->p)) {
        d->bad = 1;
        return 0;
    }
    while (isdigit((unsigned char)*d->p))
        n = n * 10 + (*d->p++ - '0');
    return n;
}

/* Skips one balanced template-argument list starting after its 'I'. */
static void skip_args(struct dm *d)
{
    int depth = 1;
    while (*d->p && depth > 0) {
        char c = *d->p;
        if (isdigit((unsigned char)c)) {
            long n = number(d);
            if ((long)strlen(d->p) < n) {
                d->bad = 1;
                return;
            }
            d->p += n;
            continue;
        }
        d->p++;
        if (c == 'L' && *d->p != '_' && *d->p != 'Z') {
            /* literal: L <type> <value> E, the value's digits are no length */
            while (*d->p && *d->p != 'E')
                d->p++;
            if (*d->p)
                d->p++;
        } else if (c == 'U' && *d->p == 'l') {
            d->p++; /* lambda closure type: Ul <params> E */
            depth++;
        } else if (c == 'I' || c == 'N' || c == 'L' || c == 'X' || c == 'J' || c == 'F' || c == 'Z')
            depth++;
        else if (c == 'E')
            depth--;
        else if (c == 'S' || c == 'T' || c == 'A') {
            if (c == 'S' && *d->p && strchr("tabsiod", *d->p)) {
                d->p++;
                continue;
            }
            while (isdigit((unsigned char)*d->p) || isupper((unsigned char)*d->p))
                d->p++;
            if (*d->p == '_')
                d->p++;
        } else if (c == 'D' && *d->p) {
            d->p++; /* Dn, Dp, Dv, ...: two-letter builtins */
        }
    }
    if (depth)
        d->bad = 1;
}

static const struct {
    const char *code, *name;
} ops[] = {
    {"cl", "operator()"},      {"ix", "operator[]"}, {"pl", "operator+"},  {"mi", "operator-"},
    {"ml", "operator*"},       {"dv", "operator/"},  {"eq", "operator=="}, {"ne", "operator!="},
    {"lt", "operator<"},       {"gt", "operator>"},  {"aS", "operator="},  {"nw", "operator new"},
    {"dl", "operator delete"},
};

static int encoding(struct dm *d, int top);

/* One component of a (nested) name; returns 0 at 'E' or end. */
static int component(struct dm *d, int first)
{
    char c = *d->p;
    if (!c || c == 'E')
        return 0;
    if (isdigit((unsigned char)c)) {
        long n = number(d);
        if (d->bad || (long)strlen(d->p) < n)
            return d->bad = 1, 0;
        if (!first)
            emits(d, "::");
        if (n > 10 && !strncmp(d->p, "_GLOBAL__N", 10))
            emits(d, "(anonymous namespace)");
        else
            emit(d, d->p, (size_t)n);
        size_t k = (size_t)n < sizeof(d->last) - 1 ? (size_t)n : sizeof(d->last) - 1;
        memcpy(d->last, d->p, k);
        d->last[k] = 0;
        d->p += n;
        return 1;
    }
    if (c == 'I') {
        d->p++;
        skip_args(d);
        emits(d, "<...>");
        return !d->bad;
    }
    if (c == 'S' && d->p[1] == 't') {
        d->p += 2;
        emits(d, first ? "std" : "::std");
        return 1;
    }
    if (c == 'S') {
        d->p++;
        while (isdigit((unsigned char)*d->p) || isupper((unsigned char)*d->p))
            d->p++;
        if (*d->p == '_')
            d->p++;
        else if (*d->p)
            d->p++; /* Sa, Sb, Ss, ... */
        emits(d, first ? "{sub}" : "::{sub}");
        return 1;
    }
    if (c == 'C' || c == 'D') {
        if (c == 'D' && !isdigit((unsigned char)d->p[1]))
            return d->bad = 1, 0;
        d->p += 2;
        if (*d->p == 'I') /* inheriting constructor forms are rare; no args here */
            return 1;
        emits(d, "::");
        if (c == 'D')
            emits(d, "~");
        emits(d, d->last);
        return 1;
    }
    if (c == 'U' && d->p[1] == 'l') { /* lambda: Ul <params> E [n] _ */
        d->p += 2;
        skip_args(d);
        while (isdigit((unsigned char)*d->p))
            d->p++;
        if (*d->p == '_')
            d->p++;
        emits(d, first ? "{lambda}" : "::{lambda}");
        return !d->bad;
    }
    if (c == 'U' && d->p[1] == 't') {
        d->p += 2;
        while (isdigit((unsigned char)*d->p))
            d->p++;
        if (*d->p == '_')
            d->p++;
        emits(d, first ? "{unnamed}" : "::{unnamed}");
        return 1;
    }
    if (c == 'L') { /* internal linkage prefix */
        d->p++;
        return component(d, first);
    }
    if (islower((unsigned char)c)) {
        for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
            if (!strncmp(d->p, ops[i].code, 2)) {
                if (!first)
                    emits(d, "::");
                emits(d, ops[i].name);
                d->p += 2;
                return 1;
            }
    }
    d->bad = 1;
    return 0;
}

static int name(struct dm *d)
{
    if (*d->p == 'N') {
        d->p++;
        while (*d->p == 'r' || *d->p == 'V' || *d->p == 'K' || *d->p == 'R' || *d->p == 'O')
            d->p++;
        int first = 1;
        while (component(d, first))
            first = 0;
        if (d->bad || *d->p != 'E')
            return d->bad = 1, 0;
        d->p++;
        return 1;
    }
    if (*d->p == 'Z') { /* local name: Z encoding E entity */
        d->p++;
        encoding(d, 0);
        if (d->bad || *d->p != 'E')
            return d->bad = 1, 0;
        d->p++;
        if (*d->p == 's') {
            d->p++;
            emits(d, "::{string}");
            return 1;
        }
        if (!component(d, 0))
            return d->bad = 1, 0;
        if (*d->p == 'I')
            component(d, 0);
        return !d->bad;
    }
    if (!component(d, 1))
        return d->bad = 1, 0;
    if (*d->p == 'I')
        component(d, 0);
    return !d->bad;
}

/* A name followed by its parameter types; inside a local name the types are
 * skipped up to the 'E' that closes it. */
static int encoding(struct dm *d, int top)
{
    if (!name(d))
        return 0;
    if (top)
        return 1; /* parameters are not shown */
    int depth = 0;
    while (*d->p && !(depth == 0 && *d->p == 'E')) {
        if (isdigit((unsigned char)*d->p)) {
            long n = number(d);
            if ((long)strlen(d->p) < n)
                return d->bad = 1, 0;
            d->p += n;
            continue;
        }
        char c = *d->p++;
        if (c == 'I' || c == 'N' || c == 'L' || c == 'X' || c == 'J' || c == 'F' || c == 'Z')
            depth++;
        else if (c == 'E')
            depth--;
        else if (c == 'S' || c == 'T') {
            if (c == 'S' && *d->p && strchr("tabsiod", *d->p)) {
                d->p++;
                continue;
            }
            while (isdigit((unsigned char)*d->p) || isupper((unsigned char)*d->p))
                d->p++;
            if (*d->p == '_')
                d->p++;
        }
    }
    return !d->bad;
}

char *ct_demangle(const char *mangled, char *out, size_t outlen)
{
    if (!outlen)
        return out;
    out[0] = 0;
    if (!mangled)
        return out;
    if (strncmp(mangled, "_Z", 2) != 0) {
        snprintf(out, outlen, "%s", mangled);
        return out;
    }
    struct dm d = {mangled + 2, out, 0, outlen, 0, {0}};
    encoding(&d, 1);
    if (d.bad || d.len == 0)
        snprintf(out, outlen, "%s", mangled);
    return out;
}
