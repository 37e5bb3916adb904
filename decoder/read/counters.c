/*
 * Health counter series of a trace (decoder/read/counters.h): gathered
 * record by record during another pass over the file (the extraction), so
 * the file is read once.
 */
#include "decoder/read/counters.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/reader.h"

static struct ct_hseries *series_get(struct ct_hcollect *l, int dev, const char *name,
                                     const char *unit)
{
    struct ct_hproc *h = &l->h;
    for (size_t i = 0; i < h->ns; i++)
        if (h->s[i].dev == dev && !strcmp(h->s[i].name, name))
            return &h->s[i];
    if (h->ns == l->cap) {
        size_t c = l->cap ? l->cap * 2 : 16;
        void *q = realloc(h->s, c * sizeof(*h->s));
        if (!q)
            return NULL;
        h->s = q;
        l->cap = c;
    }
    struct ct_hseries *s = &h->s[h->ns++];
    memset(s, 0, sizeof(*s));
    s->dev = dev;
    snprintf(s->name, sizeof(s->name), "%s", name);
    snprintf(s->unit, sizeof(s->unit), "%s", unit);
    return s;
}

void ct_hcollect_init(struct ct_hcollect *c)
{
    memset(c, 0, sizeof(*c));
    c->h.power_limit = -1;
}

int ct_hcollect_record(struct ct_hcollect *l, struct ct_reader *rd, const struct ct_record *r)
{
    const uint64_t *f = r->f;
    if (r->kind == CT_REC_META && f[CT_META_SCOPE] == CT_SCOPE_RECORDER &&
        !strcmp(ct_reader_string(rd, f[CT_META_KEY]), "health")) {
        const char *v = ct_reader_string(rd, f[CT_META_VALUE]);
        /* the first "unavailable" wins over a later "nvml" of another device */
        if (!l->h.status[0] || strncmp(l->h.status, "unavailable", 11) != 0)
            snprintf(l->h.status, sizeof(l->h.status), "%s", v);
        return 0;
    }
    if (r->kind != CT_REC_COUNTER)
        return 0;
    struct ct_hseries *s =
        series_get(l, (int)(int64_t)f[CT_COUNTER_DEVICE], ct_reader_string(rd, f[CT_COUNTER_NAME]),
                   ct_reader_string(rd, f[CT_COUNTER_UNIT]));
    if (!s)
        return -ENOMEM;
    if (s->n == s->cap) {
        size_t c = s->cap ? s->cap * 2 : 64;
        int64_t *t = realloc(s->t, c * sizeof(*t));
        if (!t)
            return -ENOMEM;
        s->t = t;
        int64_t *v = realloc(s->v, c * sizeof(*v));
        if (!v)
            return -ENOMEM;
        s->v = v;
        s->cap = c;
    }
    s->t[s->n] = (int64_t)f[CT_COUNTER_TIME];
    s->v[s->n] = (int64_t)f[CT_COUNTER_VALUE];
    s->n++;
    return 0;
}

/* Samples of one series arrive in time order from one thread (the writer);
 * sort anyway, cheaply, for traces merged or written otherwise. */
static void series_sort(struct ct_hseries *s)
{
    for (size_t i = 1; i < s->n; i++) {
        int64_t t = s->t[i], v = s->v[i];
        size_t j = i;
        for (; j > 0 && s->t[j - 1] > t; j--) {
            s->t[j] = s->t[j - 1];
            s->v[j] = s->v[j - 1];
        }
        s->t[j] = t;
        s->v[j] = v;
    }
}

static void hproc_clear(struct ct_hproc *h)
{
    for (size_t i = 0; i < h->ns; i++) {
        free(h->s[i].t);
        free(h->s[i].v);
    }
    free(h->s);
    memset(h, 0, sizeof(*h));
}

struct ct_hproc *ct_hcollect_finish(struct ct_hcollect *c)
{
    struct ct_hproc *h = malloc(sizeof(*h));
    if (!h) {
        ct_hcollect_free(c);
        return NULL;
    }
    for (size_t i = 0; i < c->h.ns; i++)
        series_sort(&c->h.s[i]);
    *h = c->h;
    memset(c, 0, sizeof(*c)); /* h owns the series now */
    return h;
}

void ct_hcollect_free(struct ct_hcollect *c)
{
    hproc_clear(&c->h);
    c->cap = 0;
}

const struct ct_hseries *ct_hproc_find(const struct ct_hproc *h, int dev, const char *name)
{
    for (size_t i = 0; h && i < h->ns; i++)
        if (h->s[i].dev == dev && !strcmp(h->s[i].name, name))
            return &h->s[i];
    return NULL;
}

struct ct_hproc *ct_hproc_copy(const struct ct_hproc *h, int *oom)
{
    if (!h)
        return NULL;
    struct ct_hproc *q = malloc(sizeof(*q));
    if (!q) {
        *oom = 1;
        return NULL;
    }
    *q = *h;
    q->s = calloc(h->ns ? h->ns : 1, sizeof(*q->s));
    q->ns = 0;
    for (size_t i = 0; q->s && i < h->ns; i++) {
        const struct ct_hseries *x = &h->s[i];
        struct ct_hseries *y = &q->s[q->ns];
        *y = *x;
        y->cap = x->n;
        y->t = malloc((x->n ? x->n : 1) * sizeof(*y->t));
        y->v = malloc((x->n ? x->n : 1) * sizeof(*y->v));
        if (!y->t || !y->v) {
            free(y->t);
            free(y->v);
            break;
        }
        memcpy(y->t, x->t, x->n * sizeof(*y->t));
        memcpy(y->v, x->v, x->n * sizeof(*y->v));
        q->ns++;
    }
    if (!q->s || q->ns < h->ns) {
        ct_hproc_free(q);
        *oom = 1;
        return NULL;
    }
    return q;
}

void ct_hproc_free(struct ct_hproc *h)
{
    if (!h)
        return;
    hproc_clear(h);
    free(h);
}
