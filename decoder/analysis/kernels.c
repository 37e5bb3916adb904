/*
 * Per-kernel-name statistics (compute kernels, names demangled) over all
 * ranks, and each rank's compute slowness: the median over kernel names run
 * by at least two ranks of (the rank's median duration of that kernel /
 * the median of the ranks' medians).
 *
 * Two steps, so that no rank's samples outlive its open (a spilled job,
 * decoder/read/spill.h): ct_kernels_collect reduces an open rank to one
 * entry per (rank, mangled name) (count, total, its own median) and adds
 * its durations to each name's sorted list of (duration, count);
 * ct_kernels_table then takes each name's exact median from those counts.
 * A list grows with the distinct durations of its name (a kernel's
 * durations spread over a range of some thousand ns), not with ranks or
 * records: at 1024 ranks of 500 k kernels each the samples alone were 4 GB.
 * A rank's durations of a name are sorted and merged into the list in one
 * sequential pass (a hash table of (name, duration) missed the cache on
 * every kernel: a sixth of a 1 M-record report).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/analysis.h"
#include "decoder/util/demangle.h"
#include "decoder/util/keys.h"
#include "decoder/util/stats.h"

/* A duration's key in a name's list (struct ct_kv key; val: its count):
 * the duration itself below 2^40 ns (18 minutes), else the duration with
 * SIGN flipped (also a negative one, of a damaged trace): keys sort the
 * list, those after every duration below 2^40. */
#define DUR_BITS 40
#define SIGN     (1ULL << 63)

struct kname {
    char *name; /* demangled, owned */
    uint64_t count;
    int64_t total;
    struct ct_kv *durs; /* (key, count) by key */
    size_t ndurs;
};

struct kentry { /* one (rank, mangled name) */
    uint32_t gid, rank;
    double med;
};

struct ct_kernels_acc {
    struct kname *names; /* by gid */
    size_t nnames, ncap;
    uint64_t *nslot; /* gid + 1 by string hash (0: empty); cap nhash */
    size_t nhash;
    struct kentry *ent;
    size_t nent, ecap;
};

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static int grow_names(struct ct_kernels_acc *a)
{
    size_t cap = a->nhash ? a->nhash * 2 : 256;
    uint64_t *s = calloc(cap, sizeof(*s));
    if (!s)
        return -ENOMEM;
    for (size_t g = 0; g < a->nnames; g++) {
        size_t i = str_hash(a->names[g].name) & (cap - 1);
        while (s[i])
            i = (i + 1) & (cap - 1);
        s[i] = g + 1;
    }
    free(a->nslot);
    a->nslot = s;
    a->nhash = cap;
    return 0;
}

/* The gid of a demangled name, added when new; -ENOMEM. */
static long name_id(struct ct_kernels_acc *a, const char *name)
{
    if (2 * (a->nnames + 1) > a->nhash && grow_names(a))
        return -ENOMEM;
    size_t i = str_hash(name) & (a->nhash - 1);
    for (; a->nslot[i]; i = (i + 1) & (a->nhash - 1))
        if (!strcmp(a->names[a->nslot[i] - 1].name, name))
            return (long)(a->nslot[i] - 1);
    if (a->nnames == a->ncap) {
        size_t cap = a->ncap ? a->ncap * 2 : 64;
        struct kname *q = realloc(a->names, cap * sizeof(*q));
        if (!q)
            return -ENOMEM;
        a->names = q;
        a->ncap = cap;
    }
    struct kname *k = &a->names[a->nnames];
    memset(k, 0, sizeof(*k));
    if (!(k->name = strdup(name)))
        return -ENOMEM;
    a->nslot[i] = ++a->nnames;
    return (long)(a->nnames - 1);
}

static uint64_t dur_key(int64_t d)
{
    return (uint64_t)d >> DUR_BITS ? (uint64_t)d ^ SIGN : (uint64_t)d;
}

/* Merges a rank's durations of name kn, keys[0, n) sorted, into its list. */
static int add_durations(struct kname *kn, const uint64_t *keys, size_t n)
{
    size_t runs = 0;
    for (size_t i = 0; i < n; i++)
        runs += !i || keys[i] != keys[i - 1];
    struct ct_kv *m = malloc((kn->ndurs + runs + 1) * sizeof(*m));
    if (!m)
        return -ENOMEM;
    size_t a = 0, b = 0, w = 0;
    while (a < kn->ndurs || b < n) {
        uint64_t k =
            b < n && (a == kn->ndurs || keys[b] < kn->durs[a].key) ? keys[b] : kn->durs[a].key;
        uint64_t c = 0;
        if (a < kn->ndurs && kn->durs[a].key == k)
            c += kn->durs[a++].val;
        for (; b < n && keys[b] == k; b++)
            c++;
        m[w++] = (struct ct_kv){k, c};
    }
    free(kn->durs);
    kn->durs = m;
    kn->ndurs = w;
    return 0;
}

void ct_kernels_acc_free(struct ct_kernels_acc *a)
{
    if (!a)
        return;
    for (size_t g = 0; g < a->nnames; g++) {
        free(a->names[g].name);
        free(a->names[g].durs);
    }
    free(a->names);
    free(a->nslot);
    free(a->ent);
    free(a);
}

/* One name's durations of a rank, keys[0, n) sorted (durations as
 * dur_key gives them; d: the same as doubles when some key is not a plain
 * duration, else NULL), into the accumulator and an entry of (name, rank). */
static int collect_group(struct ct_kernels_acc *a, size_t r, const char *mangled, uint64_t *keys,
                         double *d, size_t n)
{
    char buf[512];
    long gid = name_id(a, ct_demangle(mangled, buf, sizeof(buf)));
    if (gid < 0)
        return (int)gid;
    struct kname *kn = &a->names[gid];
    kn->count += n;
    for (size_t i = 0; i < n; i++)
        kn->total += keys[i] >> DUR_BITS ? (int64_t)(keys[i] ^ SIGN) : (int64_t)keys[i];
    int rc = add_durations(kn, keys, n);
    /* the median from the sorted keys when they are the durations
     * themselves (all from 0 to 2^40 ns), as ct_median_select gives it */
    double med;
    if (keys[n - 1] >> DUR_BITS) {
        med = ct_median_select(d, n);
    } else {
        double pos = 0.5 * (double)(n - 1);
        size_t i = (size_t)pos;
        double lo = (double)keys[i];
        med = i + 1 >= n ? lo : lo + ((double)keys[i + 1] - lo) * (pos - (double)i);
    }
    if (!rc && a->nent == a->ecap) {
        size_t cap = a->ecap ? a->ecap * 2 : 256;
        struct kentry *q = realloc(a->ent, cap * sizeof(*q));
        if (!q)
            return -ENOMEM;
        a->ent = q;
        a->ecap = cap;
    }
    if (!rc)
        a->ent[a->nent++] = (struct kentry){(uint32_t)gid, (uint32_t)r, med};
    return rc;
}

int ct_kernels_collect(struct ct_report *rep, size_t r)
{
    if (!rep->kacc && !(rep->kacc = calloc(1, sizeof(*rep->kacc))))
        return -ENOMEM;
    struct ct_kernels_acc *a = rep->kacc;
    struct ct_rank *R = rep->rr[r].rank;
    const struct ct_gpu_op *ops = R->ops;
    const size_t nops = R->nops, nn = R->nnames ? R->nnames : 1;
    /* the rank's durations grouped by name (off[k] moves to the end of
     * group k while filling, then back by the group's count), each group
     * sorted by its keys (a kernel's durations often come in order, or are
     * few distinct values: the sort then only checks); the groups' sizes
     * give the compute ops' count, and each duration's key is made as it
     * is placed: two walks of the ops */
    size_t *off = calloc(nn + 1, sizeof(*off));
    if (!off)
        return -ENOMEM;
    for (size_t i = 0; i < nops; i++)
        if (ops[i].cls == CT_CL_COMPUTE)
            off[ops[i].name + 1]++;
    for (size_t k = 0; k < nn; k++)
        off[k + 1] += off[k];
    size_t nc = off[nn];
    uint64_t *keys = malloc((nc ? nc : 1) * sizeof(*keys));
    double *d = malloc((nc ? nc : 1) * sizeof(*d));
    if (!keys || !d) {
        free(off);
        free(d);
        free(keys);
        return -ENOMEM;
    }
    for (size_t i = 0; i < nops; i++) {
        const struct ct_gpu_op *g = &ops[i];
        if (g->cls != CT_CL_COMPUTE)
            continue;
        size_t at = off[g->name]++;
        d[at] = (double)(g->e - g->s);
        keys[at] = dur_key((int64_t)d[at]);
    }
    int rc = 0;
    for (size_t k = 0, s = 0; k < R->nnames && !rc; s = off[k], k++) {
        size_t n = off[k] - s;
        if (!n)
            continue;
        rc = ct_u64_sort(keys + s, n);
        if (!rc)
            rc = collect_group(a, r, R->names[k], keys + s, d + s, n);
    }
    free(d);
    free(keys);
    free(off);
    return rc;
}

static double dur_of(uint64_t key)
{
    return key >> DUR_BITS ? (double)(int64_t)(key ^ SIGN) : (double)key;
}

/* The median of n samples given as sorted (duration, count) pairs, as
 * ct_median_select would give it on the samples themselves. */
static double counted_median(const struct ct_kv *v, uint64_t n)
{
    double pos = 0.5 * (double)(n - 1);
    uint64_t i = (uint64_t)pos, seen = 0;
    size_t j = 0;
    while (seen + v[j].val <= i)
        seen += v[j++].val;
    double x = dur_of(v[j].key);
    if (i + 1 >= n)
        return x;
    double next = seen + v[j].val > i + 1 ? x : dur_of(v[j + 1].key);
    return x + (next - x) * (pos - (double)i);
}

static const struct ct_kernels_acc *sort_acc;

static int cmp_gid(const void *a, const void *b)
{
    return strcmp(sort_acc->names[*(const uint32_t *)a].name,
                  sort_acc->names[*(const uint32_t *)b].name);
}

static int cmp_ent(const void *a, const void *b)
{
    const struct kentry *x = a, *y = b;
    if (x->gid != y->gid)
        return (x->gid > y->gid) - (x->gid < y->gid);
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Each name's p50 into rep->kern (sorted by name), from the counts. */
static void medians(struct ct_report *rep, struct ct_kernels_acc *a, const uint32_t *order)
{
    for (size_t o = 0; o < a->nnames; o++) {
        struct kname *kn = &a->names[order[o]];
        struct ct_kernel_row *row = &rep->kern[rep->nkern++];
        row->name = kn->name;
        kn->name = NULL;
        row->count = kn->count;
        row->total = kn->total;
        row->p50 = counted_median(kn->durs, kn->count);
    }
}

int ct_kernels_table(struct ct_report *rep)
{
    struct ct_kernels_acc *a = rep->kacc;
    if (!a)
        return 0;
    size_t ng = a->nnames, nr = rep->nr;
    uint32_t *order = malloc((ng ? ng : 1) * sizeof(*order));
    size_t *per = calloc(nr + 1, sizeof(*per));
    rep->kern = calloc(ng ? ng : 1, sizeof(*rep->kern));
    double *ratio = malloc((a->nent ? a->nent : 1) * sizeof(*ratio));
    double *meds = malloc((a->nent ? a->nent : 1) * sizeof(*meds));
    int rc = -ENOMEM;
    if (!order || !per || !rep->kern || !ratio || !meds)
        goto out;
    for (size_t g = 0; g < ng; g++)
        order[g] = (uint32_t)g;
    sort_acc = a;
    qsort(order, ng, sizeof(*order), cmp_gid);
    if (a->nent)
        qsort(a->ent, a->nent, sizeof(*a->ent), cmp_ent);
    /* slowness: each entry's median against the median of its name's
     * entries, for names with at least two entries; ratios by rank */
    for (size_t i = 0; i < a->nent; i++)
        per[a->ent[i].rank + 1]++;
    for (size_t r = 0; r < nr; r++)
        per[r + 1] += per[r];
    size_t *fill = malloc((nr ? nr : 1) * sizeof(*fill));
    if (!fill)
        goto out;
    memcpy(fill, per, (nr ? nr : 1) * sizeof(*fill));
    for (size_t i = 0; i < a->nent;) {
        size_t j = i;
        while (j < a->nent && a->ent[j].gid == a->ent[i].gid)
            j++;
        if (j - i >= 2) {
            for (size_t x = i; x < j; x++)
                meds[x - i] = a->ent[x].med;
            double m = ct_median_select(meds, j - i);
            for (size_t x = i; x < j && m > 0; x++)
                ratio[fill[a->ent[x].rank]++] = a->ent[x].med / m;
        }
        i = j;
    }
    for (size_t r = 0; r < nr; r++) {
        size_t n = fill[r] - per[r];
        rep->rr[r].slowness = n ? ct_median_select(ratio + per[r], n) : 1.0;
    }
    free(fill);
    medians(rep, a, order);
    rc = 0;
out:
    free(order);
    free(per);
    free(ratio);
    free(meds);
    ct_kernels_acc_free(a);
    rep->kacc = NULL;
    return rc;
}
