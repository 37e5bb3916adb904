/* GPM counter series by hand (gpm_series.h). */
#include "tests/unit/gpm_series.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/read/counters.h"
#include "tests/unit/timeline_builder.h"

struct ct_hproc *tb_hp_new(void)
{
    struct ct_hproc *h = calloc(1, sizeof(*h));
    ck_assert_ptr_nonnull(h);
    h->power_limit = -1;
    return h;
}

void tb_hp_add(struct ct_hproc *h, int dev, const char *name, const char *unit, int64_t t_ns,
               int64_t v)
{
    struct ct_hseries *s = NULL;
    for (size_t i = 0; i < h->ns; i++)
        if (h->s[i].dev == dev && !strcmp(h->s[i].name, name))
            s = &h->s[i];
    if (!s) {
        h->s = realloc(h->s, (h->ns + 1) * sizeof(*h->s));
        ck_assert_ptr_nonnull(h->s);
        s = &h->s[h->ns++];
        memset(s, 0, sizeof(*s));
        s->dev = dev;
        strcpy(s->name, name);
        strcpy(s->unit, unit);
    }
    s->t = realloc(s->t, (s->n + 1) * sizeof(*s->t));
    s->v = realloc(s->v, (s->n + 1) * sizeof(*s->v));
    ck_assert(s->t && s->v);
    s->t[s->n] = t_ns;
    s->v[s->n] = v;
    s->n++;
}

static void sample(struct ct_hproc *h, const char *iv, int64_t s, int64_t len, double sm, double tc,
                   double dram)
{
    tb_hp_add(h, 0, iv, "ns", TB_US(s), TB_US(len));
    tb_hp_add(h, 0, "gpm_sm_util", "0.01%", TB_US(s), (int64_t)llround(sm * 100));
    tb_hp_add(h, 0, "gpm_tensor_util", "0.01%", TB_US(s), (int64_t)llround(tc * 100));
    tb_hp_add(h, 0, "gpm_dram_bw_util", "0.01%", TB_US(s), (int64_t)llround(dram * 100));
}

void tb_gpm_interval(struct ct_hproc *h, int64_t s, int64_t len, double sm, double tc, double dram)
{
    sample(h, "gpm_interval", s, len, sm, tc, dram);
}

void tb_pm_sample(struct ct_hproc *h, int64_t s, int64_t len, double sm, double tc, double dram)
{
    sample(h, "pm_interval", s, len, sm, tc, dram);
}

void tb_hp_sort(struct ct_hproc *h)
{
    for (size_t i = 0; i < h->ns; i++) { /* insertion sort: a few samples */
        struct ct_hseries *x = &h->s[i];
        for (size_t j = 1; j < x->n; j++)
            for (size_t k = j; k > 0 && x->t[k - 1] > x->t[k]; k--) {
                int64_t t = x->t[k], v = x->v[k];
                x->t[k] = x->t[k - 1], x->v[k] = x->v[k - 1];
                x->t[k - 1] = t, x->v[k - 1] = v;
            }
    }
}
