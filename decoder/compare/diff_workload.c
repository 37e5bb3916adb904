/*
 * Whether the two sides of `cutrace diff` run the same workload (docs/
 * diff.md, "Not the same workload"): the ranks per run, the compute kernels
 * by name, and the command lines. Each difference is one warning line; the
 * comparison still runs (a changed configuration may rename some kernels or
 * change an argument on purpose). Never prints.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/compare/diff.h"

/* A growing list of distinct strings (borrowed, not copied). */
struct strs {
    const char **v;
    size_t n, cap;
};

static int has(const struct strs *s, const char *x, size_t len)
{
    for (size_t i = 0; i < s->n; i++)
        if (strlen(s->v[i]) == len && !memcmp(s->v[i], x, len))
            return 1;
    return 0;
}

static int add(struct strs *s, const char *x)
{
    if (has(s, x, strlen(x)))
        return 0;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        const char **q = realloc(s->v, cap * sizeof(*q));
        if (!q)
            return -ENOMEM;
        s->v = q;
        s->cap = cap;
    }
    s->v[s->n++] = x;
    return 0;
}

static int warn(char ***w, size_t *nw, const char *line)
{
    char *c = strdup(line);
    char **q = c ? realloc(*w, (*nw + 1) * sizeof(*q)) : NULL;
    if (!q) {
        free(c);
        return -ENOMEM;
    }
    *w = q;
    q[(*nw)++] = c;
    return 0;
}

/* The distinct rank counts of a side, ascending, as "2" or "2 or 4" ("" when
 * no run has a rank). */
static void rank_counts(const struct ct_workload *r, size_t n, char *buf, size_t len)
{
    size_t at = 0, last = 0;
    buf[0] = 0;
    for (;;) {
        /* the next larger count: a side is a handful of runs */
        size_t next = 0;
        for (size_t i = 0; i < n; i++)
            if (r[i].nranks > last && (!next || r[i].nranks < next))
                next = r[i].nranks;
        if (!next)
            break;
        int k = snprintf(buf + at, len - at, "%s%zu", at ? " or " : "", next);
        if (k < 0 || (size_t)k >= len - at)
            break;
        at += (size_t)k;
        last = next;
    }
}

static int check_ranks(const struct ct_workload *a, size_t na, const struct ct_workload *b,
                       size_t nb, char ***w, size_t *nw)
{
    char sa[128], sb[128], line[320];
    rank_counts(a, na, sa, sizeof(sa));
    rank_counts(b, nb, sb, sizeof(sb));
    if (!strcmp(sa, sb) || !sa[0] || !sb[0])
        return 0;
    snprintf(line, sizeof(line),
             "not the same workload? rank count: A's runs have %s ranks, B's %s", sa, sb);
    return warn(w, nw, line);
}

/* The kernel names of a side's runs (their kernel:NAME metrics), pointing
 * past the prefix. */
static int kernel_names(const struct ct_workload *r, size_t n, struct strs *out)
{
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++)
        for (size_t k = 0; r[i].summary && k < r[i].summary->n && !rc; k++)
            if (!strncmp(r[i].summary->m[k].name, "kernel:", 7))
                rc = add(out, r[i].summary->m[k].name + 7);
    return rc;
}

double ct_kernel_jaccard(const char *const *a, size_t na, const char *const *b, size_t nb,
                         size_t *shared)
{
    struct strs sb = {(const char **)b, nb, nb};
    *shared = 0;
    for (size_t i = 0; i < na; i++)
        *shared += has(&sb, a[i], strlen(a[i]));
    size_t all = na + nb - *shared;
    return all ? (double)*shared / (double)all : 1;
}

static int check_kernels(const struct ct_workload *a, size_t na, const struct ct_workload *b,
                         size_t nb, char ***w, size_t *nw)
{
    struct strs ka = {0}, kb = {0};
    int rc = kernel_names(a, na, &ka);
    if (!rc)
        rc = kernel_names(b, nb, &kb);
    if (!rc && (ka.n || kb.n)) {
        size_t shared;
        double j = ct_kernel_jaccard(ka.v, ka.n, kb.v, kb.n, &shared);
        if (j < CT_KERNEL_JACCARD_MIN) {
            /* an example of each side's own names helps tell which is which */
            const char *ea = NULL, *eb = NULL;
            for (size_t i = 0; i < ka.n && !ea; i++)
                if (!has(&kb, ka.v[i], strlen(ka.v[i])))
                    ea = ka.v[i];
            for (size_t i = 0; i < kb.n && !eb; i++)
                if (!has(&ka, kb.v[i], strlen(kb.v[i])))
                    eb = kb.v[i];
            char line[512], xa[96] = "", xb[96] = "";
            if (ea)
                snprintf(xa, sizeof(xa), " (e.g. %.60s)", ea);
            if (eb)
                snprintf(xb, sizeof(xb), " (e.g. %.60s)", eb);
            snprintf(line, sizeof(line),
                     "not the same workload? kernels: %zu of %zu names shared (Jaccard %.2f < "
                     "%.2f); %zu only in A%s, %zu only in B%s",
                     shared, ka.n + kb.n - shared, j, CT_KERNEL_JACCARD_MIN, ka.n - shared, xa,
                     kb.n - shared, xb);
            rc = warn(w, nw, line);
        }
    }
    free(ka.v);
    free(kb.v);
    return rc;
}

/* Splits every run's command lines into words (a copy per run, in place). */
static int run_words(const struct ct_workload *r, size_t n, char **copy, struct strs *words)
{
    for (size_t i = 0; i < n; i++) {
        if (!r[i].cmdline || !*r[i].cmdline)
            continue;
        if (!(copy[i] = strdup(r[i].cmdline)))
            return -ENOMEM;
        for (char *p = copy[i]; *p;) {
            while (*p && isspace((unsigned char)*p))
                *p++ = 0;
            if (!*p)
                break;
            char *word = p;
            while (*p && !isspace((unsigned char)*p))
                p++;
            if (*p)
                *p++ = 0;
            if (add(&words[i], word))
                return -ENOMEM;
        }
    }
    return 0;
}

/* The words in every run of side x (with a command line) and in no run of
 * side y, in the order of x's first such run, space-separated into buf. */
static size_t own_words(const struct strs *x, size_t nx, const struct strs *y, size_t ny, char *buf,
                        size_t len)
{
    size_t first = nx, count = 0, at = 0;
    buf[0] = 0;
    for (size_t i = 0; i < nx && first == nx; i++)
        if (x[i].n)
            first = i;
    for (size_t k = 0; first < nx && k < x[first].n; k++) {
        const char *v = x[first].v[k];
        size_t l = strlen(v);
        int own = 1;
        for (size_t i = 0; i < nx && own; i++)
            own = !x[i].n || has(&x[i], v, l);
        for (size_t i = 0; i < ny && own; i++)
            own = !has(&y[i], v, l);
        if (!own)
            continue;
        count++;
        int n = snprintf(buf + at, len - at, "%s%s", at ? " " : "", v);
        if (n < 0 || (size_t)n >= len - at) {
            /* cut at the buffer's end: say so */
            if (len > 4)
                memcpy(buf + len - 4, "...", 4);
            break;
        }
        at += (size_t)n;
    }
    return count;
}

static int check_command(const struct ct_workload *a, size_t na, const struct ct_workload *b,
                         size_t nb, char ***w, size_t *nw)
{
    char **ca = calloc(na ? na : 1, sizeof(*ca)), **cb = calloc(nb ? nb : 1, sizeof(*cb));
    struct strs *wa = calloc(na ? na : 1, sizeof(*wa)), *wb = calloc(nb ? nb : 1, sizeof(*wb));
    int rc = ca && cb && wa && wb ? 0 : -ENOMEM;
    if (!rc)
        rc = run_words(a, na, ca, wa);
    if (!rc)
        rc = run_words(b, nb, cb, wb);
    int any_a = 0, any_b = 0;
    for (size_t i = 0; !rc && i < na; i++)
        any_a |= wa[i].n > 0;
    for (size_t i = 0; !rc && i < nb; i++)
        any_b |= wb[i].n > 0;
    /* a side without any command line (older traces, summaries of Kineto
     * inputs) cannot be compared */
    if (!rc && any_a && any_b) {
        char oa[200], ob[200], line[512];
        size_t n = own_words(wa, na, wb, nb, oa, sizeof(oa));
        n += own_words(wb, nb, wa, na, ob, sizeof(ob));
        if (n) {
            snprintf(line, sizeof(line),
                     "not the same workload? command line: words in every run of A and none of "
                     "B: \"%s\"; of B and none of A: \"%s\"",
                     oa, ob);
            rc = warn(w, nw, line);
        }
    }
    for (size_t i = 0; ca && i < na; i++)
        free(ca[i]);
    for (size_t i = 0; cb && i < nb; i++)
        free(cb[i]);
    for (size_t i = 0; wa && i < na; i++)
        free(wa[i].v);
    for (size_t i = 0; wb && i < nb; i++)
        free(wb[i].v);
    free(ca);
    free(cb);
    free(wa);
    free(wb);
    return rc;
}

int ct_diff_workload(const struct ct_workload *a, size_t na, const struct ct_workload *b, size_t nb,
                     char ***w, size_t *nw)
{
    int rc = check_ranks(a, na, b, nb, w, nw);
    if (!rc)
        rc = check_kernels(a, na, b, nb, w, nw);
    if (!rc)
        rc = check_command(a, na, b, nb, w, nw);
    return rc;
}
