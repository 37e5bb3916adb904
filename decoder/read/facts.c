/* What a trace says about itself besides its timeline (decoder/read/facts.h). */
#include "decoder/read/facts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cutrace/format.h"
#include "decoder/read/summary.h"
#include "decoder/util/array.h"

const char *ct_facts_value(const struct ct_trace_facts *f, const char *key)
{
    for (size_t i = 0; f && i < f->nmeta; i++)
        if (!strcmp(f->meta[i].key, key))
            return f->meta[i].value;
    return NULL;
}

int ct_facts_collect_init(struct ct_facts_collect *c)
{
    memset(c, 0, sizeof(*c));
    c->f = calloc(1, sizeof(*c->f));
    if (!c->f)
        return -ENOMEM;
    c->f->rank = -1;
    return 0;
}

int ct_facts_meta(struct ct_facts_collect *c, uint64_t scope, const char *key, const char *value)
{
    struct ct_trace_facts *f = c->f;
    char full[256];
    if (scope == CT_SCOPE_DEVICE)
        snprintf(full, sizeof(full), "device.%s", key);
    else if (scope == CT_SCOPE_PROCESS)
        snprintf(full, sizeof(full), "%s", key);
    else
        return 0;
    if (!strcmp(full, "rank"))
        f->rank = strtoll(value, NULL, 10);
    for (size_t i = 0; i < f->nmeta; i++)
        if (!strcmp(f->meta[i].key, full))
            return 0;
    if (ct_grow((void **)&f->meta, &c->meta_cap, f->nmeta, sizeof(*f->meta)))
        return -ENOMEM;
    struct ct_fact_kv *kv = &f->meta[f->nmeta];
    kv->key = strdup(full);
    kv->value = strdup(value);
    if (!kv->key || !kv->value) {
        free(kv->key);
        free(kv->value);
        return -ENOMEM;
    }
    f->nmeta++;
    return 0;
}

int ct_facts_copy_call(struct ct_facts_collect *c, uint64_t corr, const struct ct_copy_fact *call)
{
    if (ct_grow((void **)&c->calls, &c->calls_cap, c->ncalls, sizeof(*c->calls)))
        return -ENOMEM;
    uint64_t *q = realloc(c->call_corr, c->calls_cap * sizeof(*q));
    if (!q)
        return -ENOMEM;
    c->call_corr = q;
    c->call_corr[c->ncalls] = corr;
    c->calls[c->ncalls++] = *call;
    return 0;
}

int ct_facts_gpu_copy(struct ct_facts_collect *c, uint64_t corr, int64_t s, int64_t e)
{
    if (ct_grow((void **)&c->gpu, &c->gpu_cap, c->ngpu, sizeof(*c->gpu)))
        return -ENOMEM;
    c->gpu[c->ngpu++] = (struct ct_facts_gpu_copy){corr, s, e};
    return 0;
}

static int cmp_gpu(const void *a, const void *b)
{
    uint64_t x = ((const struct ct_facts_gpu_copy *)a)->corr;
    uint64_t y = ((const struct ct_facts_gpu_copy *)b)->corr;
    return (x > y) - (x < y);
}

static int cmp_copy(const void *a, const void *b)
{
    int64_t x = ((const struct ct_copy_fact *)a)->host_s;
    int64_t y = ((const struct ct_copy_fact *)b)->host_s;
    return (x > y) - (x < y);
}

struct ct_trace_facts *ct_facts_collect_finish(struct ct_facts_collect *c)
{
    if (c->ngpu > 1)
        qsort(c->gpu, c->ngpu, sizeof(*c->gpu), cmp_gpu);
    size_t k = 0;
    for (size_t i = 0; i < c->ncalls; i++) { /* the calls with a GPU transfer */
        size_t lo = 0, hi = c->ngpu;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (c->gpu[mid].corr < c->call_corr[i])
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < c->ngpu && c->gpu[lo].corr == c->call_corr[i]) {
            struct ct_copy_fact x = c->calls[i];
            x.gpu_s = c->gpu[lo].s;
            x.gpu_e = c->gpu[lo].e;
            c->calls[k++] = x;
        }
    }
    if (k > 1)
        qsort(c->calls, k, sizeof(*c->calls), cmp_copy);
    struct ct_trace_facts *f = c->f;
    f->copies = c->calls;
    f->ncopies = k;
    c->calls = NULL;
    c->f = NULL;
    ct_facts_collect_free(c);
    return f;
}

void ct_facts_collect_free(struct ct_facts_collect *c)
{
    ct_facts_free(c->f);
    free(c->calls);
    free(c->call_corr);
    free(c->gpu);
    memset(c, 0, sizeof(*c));
}

struct ct_trace_facts *ct_facts_copy(const struct ct_trace_facts *f, int *oom)
{
    if (!f)
        return NULL;
    struct ct_trace_facts *q = calloc(1, sizeof(*q));
    if (!q) {
        *oom = 1;
        return NULL;
    }
    q->rank = f->rank;
    q->meta = calloc(f->nmeta ? f->nmeta : 1, sizeof(*q->meta));
    q->copies = malloc((f->ncopies ? f->ncopies : 1) * sizeof(*q->copies));
    int bad = !q->meta || !q->copies;
    for (size_t i = 0; !bad && i < f->nmeta; i++, q->nmeta++) {
        q->meta[i].key = strdup(f->meta[i].key);
        q->meta[i].value = strdup(f->meta[i].value);
        bad = !q->meta[i].key || !q->meta[i].value;
    }
    if (bad) {
        if (q->meta && q->nmeta < f->nmeta) /* the pair that failed half */
            q->nmeta++;
        ct_facts_free(q);
        *oom = 1;
        return NULL;
    }
    memcpy(q->copies, f->copies, f->ncopies * sizeof(*q->copies));
    q->ncopies = f->ncopies;
    return q;
}

void ct_facts_free(struct ct_trace_facts *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->nmeta; i++) {
        free(f->meta[i].key);
        free(f->meta[i].value);
    }
    free(f->meta);
    free(f->copies);
    free(f);
}

void ct_facts_encode(const struct ct_trace_facts *f, struct ct_sum_wbuf *b)
{
    ct_sum_put_u64(b, (uint64_t)f->rank);
    ct_sum_put_u64(b, f->nmeta);
    for (size_t i = 0; i < f->nmeta; i++) {
        ct_sum_put_str(b, f->meta[i].key);
        ct_sum_put_str(b, f->meta[i].value);
    }
    ct_sum_put_u64(b, f->ncopies);
    for (size_t i = 0; i < f->ncopies; i++) {
        const struct ct_copy_fact *c = &f->copies[i];
        ct_sum_put_u64(b, (uint64_t)c->host_s);
        ct_sum_put_u64(b, (uint64_t)c->host_e);
        ct_sum_put_u64(b, (uint64_t)c->gpu_s);
        ct_sum_put_u64(b, (uint64_t)c->gpu_e);
        ct_sum_put_u64(b, c->bytes);
        ct_sum_put_u8(b, c->kind);
        ct_sum_put_u8(b, c->async);
    }
}

int ct_facts_decode(const unsigned char *p, size_t n, struct ct_trace_facts **out)
{
    *out = NULL;
    struct ct_trace_facts *f = calloc(1, sizeof(*f));
    if (!f)
        return -ENOMEM;
    struct ct_sum_rbuf r = {p, n, 0, 0};
    int oom = 0;
    f->rank = (int64_t)ct_sum_get_u64(&r);
    f->meta = ct_sum_get_array(&r, &f->nmeta, 8, sizeof(*f->meta), &oom);
    for (size_t i = 0; i < f->nmeta && !r.bad; i++) {
        f->meta[i].key = ct_sum_get_str(&r, &oom);
        f->meta[i].value = ct_sum_get_str(&r, &oom);
        if (!f->meta[i].key || !f->meta[i].value)
            r.bad = 1;
    }
    f->copies = ct_sum_get_array(&r, &f->ncopies, 42, sizeof(*f->copies), &oom);
    for (size_t i = 0; i < f->ncopies; i++) {
        struct ct_copy_fact *c = &f->copies[i];
        c->host_s = (int64_t)ct_sum_get_u64(&r);
        c->host_e = (int64_t)ct_sum_get_u64(&r);
        c->gpu_s = (int64_t)ct_sum_get_u64(&r);
        c->gpu_e = (int64_t)ct_sum_get_u64(&r);
        c->bytes = ct_sum_get_u64(&r);
        c->kind = ct_sum_get_u8(&r);
        c->async = ct_sum_get_u8(&r);
    }
    if (oom || r.bad || r.at != r.n) {
        ct_facts_free(f);
        return oom ? -ENOMEM : -EIO;
    }
    *out = f;
    return 0;
}
