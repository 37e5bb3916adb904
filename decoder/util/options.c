/* The options report, diff and diagnose share (decoder/util/options.h). */
#include "decoder/util/options.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ct_shared_opt(const char *cmd, int c, const char *arg, struct ct_shared_opts *o)
{
    char *end;
    switch (c) {
    case 'j': o->json = 1; return 1;
    case 'o': o->out = arg; return 1;
    case 'R': o->rows = arg; return 1;
    case 'k':
        o->skip = strtol(arg, &end, 10);
        if (*end || !*arg || o->skip < 0) {
            fprintf(stderr, "%s: --skip '%s': expected an integer >= 0\n", cmd, arg);
            return -1;
        }
        return 1;
    default: return 0;
    }
}

int ct_parse_pct(const char *s, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || (*end && strcmp(end, "%")) || !isfinite(v) || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int ct_parse_index_range(const char *s, int64_t *first, int64_t *last)
{
    const char *dash = strchr(s, '-');
    if (!dash || strchr(dash + 1, '-'))
        return -1;
    char *end;
    int64_t a = 0, b = -1;
    if (dash != s) {
        a = strtoll(s, &end, 10);
        if (end != dash || a < 0)
            return -1;
    }
    if (dash[1]) {
        b = strtoll(dash + 1, &end, 10);
        if (*end || b < a)
            return -1;
    }
    *first = a;
    *last = b;
    return 0;
}

int ct_parse_window_us(const char *s, double *start, double *end)
{
    char *p, *q;
    double a = strtod(s, &p);
    if (p == s || *p != '-' || !isfinite(a))
        return -1;
    double b = strtod(p + 1, &q);
    if (q == p + 1 || *q || !isfinite(b) || b <= a)
        return -1;
    *start = a;
    *end = b;
    return 0;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int ct_parse_rank_list(const char *s, int **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    size_t cap = 0, k = 0;
    int *v = NULL;
    const char *p = s;
    if (!*p)
        return -1;
    while (*p) {
        char *e;
        long a = strtol(p, &e, 10), b;
        if (e == p || a < 0 || a > 1 << 30)
            goto bad;
        b = a;
        if (*e == '-') {
            const char *q = e + 1;
            b = strtol(q, &e, 10);
            if (e == q || b < a || b > 1 << 30)
                goto bad;
        }
        if (*e && *e != ',')
            goto bad;
        for (long r = a; r <= b; r++) {
            if (k == cap) {
                size_t nc = cap ? cap * 2 : 16;
                int *g = realloc(v, nc * sizeof(*g));
                if (!g) {
                    free(v);
                    return -ENOMEM;
                }
                v = g;
                cap = nc;
            }
            v[k++] = (int)r;
        }
        p = *e ? e + 1 : e;
        if (*e == ',' && !*p)
            goto bad;
    }
    qsort(v, k, sizeof(*v), cmp_int);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (!u || v[u - 1] != v[i])
            v[u++] = v[i];
    *out = v;
    *n = u;
    return 0;
bad:
    free(v);
    return -1;
}
