/*
 * fn_links.c - the fake NCCL's network: per-peer links with their own
 * bandwidth and latency, and the ring schedule that turns an op's size
 * into its transfer time and its proxy steps (README.md, "Links and the
 * ring", is the contract; the tests compare against it).
 *
 * A link is directed (rank A sends to rank B). Its bandwidth defaults to
 * the smaller FAKEGPU_NET_GBPS of its two ends and its latency to
 * FAKEGPU_NCCL_LINK_LAT_US; FAKEGPU_NCCL_LINKS="A-B=GBPS[/LAT_US],..."
 * overrides single links (communicator ranks, every communicator).
 * AllReduce, AllGather and ReduceScatter run as a ring over ranks
 * 0 -> 1 -> ... -> n-1 -> 0 in lock step: a step lasts as long as its
 * slowest link takes to carry one chunk (latency + chunk / bandwidth), so
 * one slow link paces every rank. Other ops keep the bus-bandwidth rule
 * over the smallest FAKEGPU_NET_GBPS (Send/Recv: over their link, with its
 * latency). Every op adds FAKEGPU_NCCL_LAT_US.
 *
 * Nothing here locks or calls the driver: plans are made on the calling
 * thread from the communicator's published figures.
 */
#include "fn_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FN_MAX_LINKS 256

static struct {
    int src, dst;
    double gbps, lat_ns;
} fn_links[FN_MAX_LINKS];
static int fn_nlinks;
static int fn_links_state; /* 0 not read, 1 good, -1 malformed */
static pthread_mutex_t fn_links_lock = PTHREAD_MUTEX_INITIALIZER;

static bool fn_links_parse(const char *v)
{
    char *copy = strdup(v), *save = NULL;
    if (!copy)
        return false;
    bool ok = true;
    for (char *tok = strtok_r(copy, ",", &save); tok && ok; tok = strtok_r(NULL, ",", &save)) {
        int src, dst, used = 0;
        double gbps, lat_us = -1;
        int n = sscanf(tok, "%d-%d=%lf%n", &src, &dst, &gbps, &used);
        if (n == 3 && tok[used] == '/') {
            int more = 0;
            if (sscanf(tok + used + 1, "%lf%n", &lat_us, &more) != 1)
                ok = false;
            used += 1 + more;
        }
        ok = ok && n == 3 && !tok[used] && src >= 0 && dst >= 0 && src < FN_MAX_RANKS &&
             dst < FN_MAX_RANKS && src != dst && gbps > 0 && gbps <= 1e9 &&
             (lat_us == -1 || (lat_us >= 0 && lat_us <= 1e9)) && fn_nlinks < FN_MAX_LINKS;
        if (!ok) {
            fn_set_error("fake NCCL: FAKEGPU_NCCL_LINKS: bad entry '%s' (want "
                         "SRC-DST=GBPS[/LAT_US], ranks 0..%d, at most %d entries)",
                         tok, FN_MAX_RANKS - 1, FN_MAX_LINKS);
            break;
        }
        fn_links[fn_nlinks].src = src;
        fn_links[fn_nlinks].dst = dst;
        fn_links[fn_nlinks].gbps = gbps;
        fn_links[fn_nlinks].lat_ns = lat_us < 0 ? -1 : lat_us * 1e3;
        fn_nlinks++;
    }
    free(copy);
    return ok;
}

/* A choice by op size from the environment: "NAME:MAXBYTES,...,NAME" (the
 * first entry whose MAXBYTES the op's bytes do not pass; the last has
 * none), each NAME one of names[]. */
#define FN_MAX_BY_SIZE 8
struct fn_by_size {
    const char *env;
    const char *const *names;
    int nnames;
    int state; /* 0 not read, 1 good or unset, -1 malformed */
    int n, pick[FN_MAX_BY_SIZE];
    double max[FN_MAX_BY_SIZE];
};
static const char *const fn_proto_names[] = {"LL", "LL128", "SIMPLE"};
static const double fn_proto_eff[] = {0.5, 15.0 / 16, 1};
/* TREE here; NVLS and CollNet in fn_algos.c */
static const char *const fn_algo_names[] = {"RING", "TREE", "NVLS", "COLLNET_DIRECT",
                                            "COLLNET_CHAIN"};
static struct fn_by_size fn_protos = {"FAKEGPU_NCCL_PROTOS", fn_proto_names, 3, 0, 0, {0}, {0}};
static struct fn_by_size fn_algos = {"FAKEGPU_NCCL_ALGOS", fn_algo_names, 5, 0, 0, {0}, {0}};
static void fn_by_size_load(struct fn_by_size *t);

bool fn_links_load(void)
{
    pthread_mutex_lock(&fn_links_lock);
    if (!fn_links_state) {
        const char *v = getenv("FAKEGPU_NCCL_LINKS");
        fn_links_state = !v || !*v || fn_links_parse(v) ? 1 : -1;
    } else if (fn_links_state < 0) {
        fn_set_error("fake NCCL: FAKEGPU_NCCL_LINKS is malformed");
    }
    bool ok = fn_links_state > 0;
    pthread_mutex_unlock(&fn_links_lock);
    /* the by-size choices are read with the links: malformed, no communicator */
    fn_by_size_load(&fn_protos);
    fn_by_size_load(&fn_algos);
    return ok && fn_protos.state > 0 && fn_algos.state > 0 && fn_kphases_load();
}

static void fn_by_size_load(struct fn_by_size *t)
{
    pthread_mutex_lock(&fn_links_lock);
    if (t->state) {
        pthread_mutex_unlock(&fn_links_lock);
        return;
    }
    const char *v = getenv(t->env);
    int ok = 1;
    char *copy = v && *v ? strdup(v) : NULL, *save = NULL;
    for (char *tok = copy ? strtok_r(copy, ",", &save) : NULL; tok && ok;
         tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        double max = INFINITY;
        if (colon) {
            *colon = 0;
            char *end;
            max = strtod(colon + 1, &end);
            ok = *end == 0 && max > 0;
        }
        int k = -1;
        for (int i = 0; i < t->nnames; i++)
            if (!strcmp(tok, t->names[i]))
                k = i;
        ok = ok && k >= 0 && t->n < FN_MAX_BY_SIZE && (t->n == 0 || t->max[t->n - 1] < INFINITY);
        if (ok) {
            t->pick[t->n] = k;
            t->max[t->n++] = max;
        } else {
            char names[128] = "";
            for (int i = 0; i < t->nnames; i++)
                snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
                         i ? ", " : "", t->names[i]);
            fn_set_error("fake NCCL: %s: bad entry '%s' (want NAME:MAXBYTES or a last NAME, NAME "
                         "one of %s)",
                         t->env, tok, names);
        }
    }
    free(copy);
    t->state = ok ? 1 : -1;
    pthread_mutex_unlock(&fn_links_lock);
}

/* The index into t's names for an op of `bytes`, or -1 (unset, malformed). */
static int fn_by_size_pick(struct fn_by_size *t, double bytes)
{
    fn_by_size_load(t);
    if (t->state < 0)
        return -1;
    for (int i = 0; i < t->n; i++)
        if (bytes <= t->max[i] || i == t->n - 1)
            return t->pick[i];
    return -1;
}

/* FAKEGPU_NCCL_PROTOS: the protocol of a ring or tree op by its size, each
 * carrying a share of the link's bandwidth as NCCL's do: LL 1/2 (a flag in
 * every 8 bytes), LL128 15/16 (one in every 128), SIMPLE all of it. Unset:
 * every op LL at the whole bandwidth (as before the knob). */
static const char *fn_proto_of(double bytes, double *eff)
{
    int k = fn_by_size_pick(&fn_protos, bytes);
    *eff = k >= 0 ? fn_proto_eff[k] : 1;
    return k >= 0 ? fn_proto_names[k] : "LL";
}

/* FAKEGPU_NCCL_ALGOS: the algorithm of an AllReduce of `bytes`, or -1
 * (unset: every op a ring). A TREE goes up a binary tree and back down:
 * 2 ceil(log2 n) link latencies and twice the size over the slowest link
 * (a ring moves 2(n-1)/n of it), so it wins on small ops and loses on
 * large ones; it has no proxy events. NVLS and CollNet: fn_algos.c. */
static int fn_algo_for(double bytes)
{
    return fn_by_size_pick(&fn_algos, bytes);
}

/* Bandwidth (GB/s = bytes per ns) and latency (ns) of link src -> dst. */
static void fn_link(const struct ncclComm *c, int src, int dst, double *gbps, double *lat_ns)
{
    *gbps = fmin(fn_shm_gbps(c->shm, src), fn_shm_gbps(c->shm, dst));
    *lat_ns = fn_env_double("FAKEGPU_NCCL_LINK_LAT_US", 0, 0, 1e9) * 1e3;
    for (int i = fn_links_state > 0 ? 0 : fn_nlinks; i < fn_nlinks; i++) {
        if (fn_links[i].src == src && fn_links[i].dst == dst) {
            *gbps = fn_links[i].gbps;
            if (fn_links[i].lat_ns >= 0)
                *lat_ns = fn_links[i].lat_ns;
        }
    }
}

static void fn_plan_schedule(struct fn_op *op)
{
    const struct ncclComm *c = op->comm;
    double n = c->nranks, bytes = (double)op->count * fn_dtype_bytes(op->dtype);
    double op_lat = fn_env_double("FAKEGPU_NCCL_LAT_US", 0, 0, 1e9) * 1e3;
    struct fn_plan *p = &op->plan;
    memset(p, 0, sizeof *p);
    p->lat_ns = op_lat;
    double chunk = 0; /* bytes per ring step over all channels */
    switch (op->func) {
    case FN_ALLREDUCE:
        p->ksteps = 2 * (c->nranks - 1);
        chunk = bytes / n;
        break;
    case FN_ALLGATHER:
    case FN_REDUCESCATTER:
        p->ksteps = c->nranks - 1;
        chunk = bytes; /* count is per rank */
        break;
    default: break;
    }
    p->proto = "LL";
    p->algo = NULL;
    int algo = op->func == FN_ALLREDUCE && c->nranks > 1 ? fn_algo_for(bytes) : -1;
    if (algo >= 2 && fn_algo_plan(op, fn_algo_names[algo], bytes, op_lat))
        return;
    if (algo == 1) {
        /* up the tree and back down, each level a link latency, the whole
         * size twice over the slowest link (README, "Links and the ring") */
        double eff, gmin = INFINITY, lmax = 0;
        p->proto = fn_proto_of(bytes, &eff);
        p->algo = "TREE";
        for (int r = 0; r < c->nranks; r++) {
            double g, l;
            fn_link(c, r, (r + 1) % c->nranks, &g, &l);
            gmin = fmin(gmin, g);
            lmax = fmax(lmax, l);
        }
        double depth = ceil(log2(n));
        p->ksteps = 0;
        op->xfer_ns = llround(op_lat + 2 * depth * lmax + 2 * bytes / (gmin * eff));
        return;
    }
    if (p->ksteps > 0) {
        double eff;
        p->proto = fn_proto_of(bytes, &eff);
        p->next = (c->rank + 1) % c->nranks;
        p->prev = (c->rank + c->nranks - 1) % c->nranks;
        for (int r = 0; r < c->nranks; r++) {
            double g, l;
            fn_link(c, r, (r + 1) % c->nranks, &g, &l);
            double x = l + chunk / (g * eff);
            if (x > p->step_ns)
                p->step_ns = x;
            if (r == c->rank)
                p->send_ns = x;
        }
        p->chunk = (uint64_t)llround(chunk / fn_prof_channels);
        op->xfer_ns = llround(op_lat + p->ksteps * p->step_ns);
        return;
    }
    /* nccl-tests' size S and bus factor F over one bandwidth */
    double s = bytes, f = 1, g = c->gbps_all, l = 0;
    switch (op->func) {
    case FN_ALLTOALL:
    case FN_GATHER:
    case FN_SCATTER:
        s = bytes * n;
        f = (n - 1) / n;
        break;
    case FN_ALLREDUCE:
    case FN_ALLGATHER:
    case FN_REDUCESCATTER: f = 0; break; /* one rank: nothing to move */
    case FN_SEND: fn_link(c, c->rank, op->peer, &g, &l); break;
    case FN_RECV: fn_link(c, op->peer, c->rank, &g, &l); break;
    default: break; /* Broadcast, Reduce: S = count x size, F = 1 */
    }
    op->xfer_ns = llround(op_lat + l + s * f / g);
}

void fn_plan_op(struct fn_op *op)
{
    fn_plan_schedule(op);
    fn_kphases_plan(op); /* the kernel's channels (fn_kphases.c) */
}
