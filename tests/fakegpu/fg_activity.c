/*
 * fg_activity.c - the simulated driver's side of GPM (fg_gpm.h): the
 * activity profile of each kernel, from FAKEGPU_GPM_PROFILE or the naming
 * rule (README.md, "Fake NVML: GPM"), and the cumulative integrals of
 * every device's activity that the fake NVML snapshots as GPM samples.
 *
 * Every kernel, once its start and end are known, adds its profile over
 * [start, end) to its device; every copy with a host end adds its bytes
 * over its transfer. Intervals wait in a list until they end
 * FG_GPM_FOLD_LAG_NS before a query's time, then fold into the device's
 * running totals, so memory is bounded by the work of that lag; a query
 * may ask for any time after the fold (the fake CUPTI's PM sampling asks
 * for its samples' past boundaries after the fake NVML asked for now).
 * Concurrent kernels add up (the simulated device has no contention); the
 * fake NVML caps each rate at 100 %.
 *
 * NVLink (FAKEGPU_GPM_NVLINK=1): a collective's kernel (ncclDevKernel_*)
 * sends and receives FAKEGPU_NET_GBPS GB/s over its time less
 * FAKEGPU_NCCL_LAT_US, the fake NCCL's own figures (README.md, "Links and
 * the ring"): a ring collective's K steps each carry one chunk per link
 * direction in chunk / GBPS, so it moves K x chunk bytes each way in
 * K x chunk / GBPS: its bytes over its time, exactly, when its ranks start
 * it together (a rank's wait for a late peer would count as transfer).
 */
#include "fg_gpm.h"
#include "fg_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct act_iv {
    int64_t s, e;
    float p[FG_GPM_NFIELDS]; /* kernel profile, 0 for copies */
    double tx, rx;           /* copy bytes */
    double ntx, nrx;         /* NVLink bytes (collectives) */
};

struct act_dev {
    struct act_iv *v;
    size_t n, cap;
    int64_t folded_to; /* totals hold every interval ending by then */
    double acc[FG_GPM_NFIELDS], tx, rx, ntx, nrx;
};

#define MAX_RULES 32
struct act_rule {
    char pat[64];
    float p[FG_GPM_NFIELDS];
};

static struct {
    struct act_dev dev[FG_MAX_DEVICES];
    struct act_rule rule[MAX_RULES];
    int nrules, parsed;
    int nvlink;              /* FAKEGPU_GPM_NVLINK=1 */
    double net_gbps, lat_ns; /* the fake NCCL's FAKEGPU_NET_GBPS, FAKEGPU_NCCL_LAT_US */
} act;

static const char *const field_key[FG_GPM_NFIELDS] = {"sm",   "occ",  "tc",  "dram",
                                                      "fp64", "fp32", "fp16"};

/* The naming rule's classes, for kernels no table entry matches. */
static const float prof_gemm[FG_GPM_NFIELDS] = {90, 35, 70, 25, 0, 5, 0};
static const float prof_mem[FG_GPM_NFIELDS] = {60, 70, 0, 85, 0, 20, 0};
static const float prof_nccl[FG_GPM_NFIELDS] = {15, 5, 0, 20, 0, 0, 0};
static const float prof_other[FG_GPM_NFIELDS] = {50, 30, 0, 10, 0, 30, 0};

/* FAKEGPU_GPM_PROFILE=PATTERN=key:value,...;PATTERN=...: a kernel whose
 * name contains PATTERN (first that matches) has those shares; keys not
 * given are 0. Malformed entries are skipped. */
/* A variable as the fake NCCL reads it (fn_env_double): its default when
 * unset or malformed, clamped to [lo, hi]. */
static double env_double(const char *name, double def, double lo, double hi)
{
    const char *v = getenv(name);
    char *end;
    double x = v && *v ? strtod(v, &end) : def;
    if (v && *v && *end)
        x = def;
    return x < lo ? lo : x > hi ? hi : x;
}

static void parse_rules(void)
{
    act.parsed = 1;
    act.nvlink = fg_gpm_nvlink();
    act.net_gbps = env_double("FAKEGPU_NET_GBPS", 100, 1e-6, 1e9);
    act.lat_ns = env_double("FAKEGPU_NCCL_LAT_US", 0, 0, 1e9) * 1e3;
    const char *v = getenv("FAKEGPU_GPM_PROFILE");
    while (v && *v && act.nrules < MAX_RULES) {
        const char *end = strchr(v, ';');
        size_t len = end ? (size_t)(end - v) : strlen(v);
        const char *eq = memchr(v, '=', len);
        if (eq && eq > v && (size_t)(eq - v) < sizeof(act.rule[0].pat)) {
            struct act_rule *r = &act.rule[act.nrules];
            memset(r, 0, sizeof(*r));
            memcpy(r->pat, v, (size_t)(eq - v));
            const char *q = eq + 1;
            while (q < v + len) {
                for (int f = 0; f < FG_GPM_NFIELDS; f++) {
                    size_t kl = strlen(field_key[f]);
                    if (!strncmp(q, field_key[f], kl) && q[kl] == ':') {
                        float x = strtof(q + kl + 1, NULL);
                        r->p[f] = x < 0 ? 0 : x > 100 ? 100 : x;
                    }
                }
                const char *c = memchr(q, ',', (size_t)(v + len - q));
                q = c ? c + 1 : v + len;
            }
            act.nrules++;
        }
        v = end ? end + 1 : NULL;
    }
}

static int has(const char *name, const char *const *words)
{
    for (; *words; words++)
        if (strcasestr(name, *words))
            return 1;
    return 0;
}

/* The activity profile of a kernel called name. */
static const float *profile_of(const char *name)
{
    if (!act.parsed)
        parse_rules();
    if (!name)
        return prof_other;
    for (int i = 0; i < act.nrules; i++)
        if (strstr(name, act.rule[i].pat))
            return act.rule[i].p;
    static const char *const gemm[] = {"gemm", "mma", "matmul", "cutlass", "linear", "conv", NULL};
    static const char *const mem[] = {"elementwise", "vectorized", "reduce",  "softmax",
                                      "norm",        "copy",       "gelu",    "relu",
                                      "adam",        "optimizer",  "dropout", NULL};
    if (!strncmp(name, "ncclDevKernel_", 14) || !strncmp(name, "ncclKernel", 10))
        return prof_nccl;
    if (has(name, gemm))
        return prof_gemm;
    if (has(name, mem))
        return prof_mem;
    return prof_other;
}

static void fold(struct act_dev *d, int64_t upto)
{
    for (size_t i = 0; i < d->n;) {
        struct act_iv *x = &d->v[i];
        if (x->e > upto) {
            i++;
            continue;
        }
        double len = (double)(x->e - x->s);
        for (int f = 0; f < FG_GPM_NFIELDS; f++)
            d->acc[f] += x->p[f] * len;
        d->tx += x->tx;
        d->rx += x->rx;
        d->ntx += x->ntx;
        d->nrx += x->nrx;
        *x = d->v[--d->n];
    }
    if (upto > d->folded_to)
        d->folded_to = upto;
}

static void add(int dev, const struct act_iv *iv)
{
    if (dev < 0 || dev >= FG_MAX_DEVICES || iv->e <= iv->s)
        return;
    struct act_dev *d = &act.dev[dev];
    if (d->n == d->cap) {
        /* what ended by now can no longer change a query (queries ask for
         * now or later): fold it before growing */
        fold(d, fg_now() - FG_GPM_FOLD_LAG_NS);
        if (d->n == d->cap && !fg_grow((void **)&d->v, &d->cap, d->n + 1, sizeof(*d->v)))
            return;
    }
    d->v[d->n++] = *iv;
}

/* Locked. op's timing was just settled (fg_sched.c): its activity. */
void fg_activity_op_locked(const fg_op *op)
{
    struct act_iv iv;
    memset(&iv, 0, sizeof(iv));
    iv.s = op->start_ns;
    iv.e = op->end_ns;
    if (op->d.kind == FG_OP_KERNEL ||
        (op->d.kind == FG_OP_EXTERNAL && op->d.name && !op->d.ext_copy)) {
        memcpy(iv.p, profile_of(op->d.name), sizeof(iv.p)); /* parses the variables once */
        if (act.nvlink && op->d.name && !strncmp(op->d.name, "ncclDevKernel_", 14)) {
            double t = (double)(iv.e - iv.s) - act.lat_ns; /* GB/s = bytes per ns */
            iv.ntx = iv.nrx = t > 0 ? act.net_gbps * t : 0;
        }
    } else if (op->d.kind == FG_OP_COPY) {
        double bytes =
            (double)op->d.u.copy.width * (double)op->d.u.copy.height * (double)op->d.u.copy.depth;
        int src_host = op->d.u.copy.src_mem != FG_CUPTI_MEM_DEVICE;
        int dst_host = op->d.u.copy.dst_mem != FG_CUPTI_MEM_DEVICE;
        if (src_host == dst_host)
            return; /* device to device, or host to host: no PCIe */
        if (src_host)
            iv.rx = bytes;
        else
            iv.tx = bytes;
    } else {
        return;
    }
    add(op->device, &iv);
}

__attribute__((visibility("default"))) int fakegpu_gpm_integrals(int dev, int64_t now,
                                                                 struct fg_gpm_integrals *out)
{
    if (!__atomic_load_n(&fg.initialized, __ATOMIC_ACQUIRE) || dev < 0 || dev >= FG_MAX_DEVICES ||
        !out)
        return -1;
    FG_LOCK();
    fg_progress(); /* settle what can be */
    struct act_dev *d = &act.dev[dev];
    fold(d, now - FG_GPM_FOLD_LAG_NS);
    if (now < d->folded_to)
        now = d->folded_to; /* folded: asked too late for a time this old */
    memset(out, 0, sizeof(*out));
    out->t_ns = now;
    memcpy(out->share, d->acc, sizeof(out->share));
    out->pcie_tx_bytes = d->tx;
    out->pcie_rx_bytes = d->rx;
    out->nvlink_tx_bytes = d->ntx;
    out->nvlink_rx_bytes = d->nrx;
    for (size_t i = 0; i < d->n; i++) { /* the parts of intervals not folded, up to now */
        const struct act_iv *x = &d->v[i];
        if (x->s >= now)
            continue;
        double part = (double)((x->e < now ? x->e : now) - x->s), len = (double)(x->e - x->s);
        for (int f = 0; f < FG_GPM_NFIELDS; f++)
            out->share[f] += x->p[f] * part;
        out->pcie_tx_bytes += x->tx * part / len;
        out->pcie_rx_bytes += x->rx * part / len;
        out->nvlink_tx_bytes += x->ntx * part / len;
        out->nvlink_rx_bytes += x->nrx * part / len;
    }
    FG_UNLOCK();
    return 0;
}
