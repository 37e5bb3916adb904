/*
 * fn_algos.c - the fake NCCL's in-switch algorithms for AllReduce: NVLS
 * (NVLink SHARP: the NVSwitch reduces, one node) and CollNet Direct and
 * Chain (the network switch reduces, SHARP, several nodes), chosen by
 * FAKEGPU_NCCL_ALGOS (fn_links.c). README.md, "In-switch algorithms", is
 * the contract; the tests compare against it.
 *
 * Nodes: FAKEGPU_NCCL_RANKS_PER_NODE=P puts communicator ranks [kP,
 * (k+1)P) on node k (unset: every rank on one node). Each GPU reaches the
 * NVSwitch through a port of FAKEGPU_NCCL_NVLS_GBPS one way (default 450:
 * an H100's 18 NVLink links x 25 GB/s), and the network through its NIC
 * at its FAKEGPU_NET_GBPS with FAKEGPU_NCCL_LINK_LAT_US (one NIC per GPU,
 * rail-optimised).
 *
 * NVLS (one node of n ranks): each GPU reduces its 1/n of the buffer with
 * a multimem load-reduce (the switch reads that share from every GPU:
 * the GPU's port sends S/n for each of the n shares, S in all, and
 * receives its S/n) and multicasts it with a multimem store (sends S/n,
 * receives every GPU's S/n: S). Each port direction carries S (n+1)/n,
 * against the ring's 2 (n-1)/n S, so the op lasts FAKEGPU_NCCL_LAT_US +
 * FAKEGPU_NCCL_NVLS_LAT_US + S (n+1)/n / NVLS_GBPS and its bus bandwidth
 * (S x 2(n-1)/n over that) is 2(n-1)/(n+1) of the port's rate: above it
 * from 4 ranks on, as NCCL's tuning has it (tuning.cc doubles NVLS's
 * all-reduce bandwidth: "AllReduce pipelines two operations"). No proxy:
 * NCCL's NVLS channel has no network peer (nvls.out -1), so no ProxyOp.
 *
 * CollNet Direct (N >= 2 nodes of P <= 8 ranks, every rank a head): the
 * node's ranks reduce-scatter over NVLink (each port 2 S (P-1)/P, both
 * ways, for the scatter and the final gather), each head sends its S/P to
 * the network switch and receives the S/P it reduced over the nodes.
 * CollNet Chain: the node's ranks form a chain to local rank 0, which
 * alone talks to the switch, S each way; the chain carries S over each
 * NVLink hop, 2 (P-1) hop latencies up and down. The network part is
 * COLLNET_STEPS steps; a step lasts as long as the slowest head's NIC takes
 * for its chunk (the switch reduces a chunk once every node's has
 * arrived): K x D, pipelined with the NVLink part, so the op takes
 * FAKEGPU_NCCL_LAT_US + max(K x D, NVLink part) (+ Chain's hops). The
 * heads' ProxyOps go to the collective network: NCCL's peer for them is
 * the communicator's size (connect.cc: collnetDirect.out and a chain
 * root's collnetChain.up are nRanks), not a rank. Ranks that are no head
 * (Chain, local rank > 0) reach their up peer over NVLink: no ProxyOp.
 *
 * NCCL runs these on the SIMPLE protocol only (tuning.cc skips the
 * others), so the descriptors say SIMPLE whatever FAKEGPU_NCCL_PROTOS
 * says. A choice the communicator's layout does not allow (NVLS across
 * nodes, CollNet on one node or Direct with more than 8 ranks a node)
 * runs as the ring, as NCCL disables such an algorithm (tuning.cc).
 */
#include "fn_internal.h"

#include <math.h>
#include <string.h>

/* The network part's steps (NCCL_STEPS, NCCL's slots a connection has in
 * flight): a fixed pipeline depth for the simulator's schedule. */
#define COLLNET_STEPS 8

int fn_ranks_per_node(const struct ncclComm *c)
{
    double p = fn_env_double("FAKEGPU_NCCL_RANKS_PER_NODE", 0, 1, FN_MAX_RANKS);
    return p >= 1 && p < c->nranks ? (int)p : c->nranks;
}

static double nvls_gbps(void)
{
    return fn_env_double("FAKEGPU_NCCL_NVLS_GBPS", 450, 1e-6, 1e9);
}

/* NVLS: see the file's comment. */
static void plan_nvls(struct fn_op *op, double bytes, double op_lat)
{
    double n = op->comm->nranks;
    double lat = fn_env_double("FAKEGPU_NCCL_NVLS_LAT_US", 0, 0, 1e9) * 1e3;
    op->xfer_ns = llround(op_lat + lat + bytes * (n + 1) / n / nvls_gbps());
}

/* CollNet: the heads' network steps and the NVLink part. */
static void plan_collnet(struct fn_op *op, bool chain, double bytes, double op_lat, int ppn)
{
    const struct ncclComm *c = op->comm;
    struct fn_plan *p = &op->plan;
    double link_lat = fn_env_double("FAKEGPU_NCCL_LINK_LAT_US", 0, 0, 1e9) * 1e3;
    double share = chain ? bytes : bytes / ppn; /* what a head sends and receives */
    double chunk = share / COLLNET_STEPS;
    double step = 0, own = 0;
    for (int r = 0; r < c->nranks; r++) {
        if (chain && r % ppn)
            continue; /* a chain's root alone talks to the switch */
        double x = link_lat + chunk / fn_shm_gbps(c->shm, r);
        step = fmax(step, x);
        if (r == c->rank)
            own = x;
    }
    double nvlink = chain ? bytes / nvls_gbps() : 2 * bytes * (ppn - 1) / ppn / nvls_gbps();
    double hops = chain ? 2.0 * (ppn - 1) * link_lat : 0;
    bool head = !chain || c->rank % ppn == 0;
    p->ksteps = head ? COLLNET_STEPS : 0;
    p->step_ns = step;
    p->send_ns = own;
    p->next = p->prev = c->nranks; /* the collective network's endpoint */
    p->chunk = (uint64_t)llround(chunk / fn_prof_channels);
    op->xfer_ns = llround(op_lat + hops + fmax(COLLNET_STEPS * step, nvlink));
}

bool fn_algo_plan(struct fn_op *op, const char *algo, double bytes, double op_lat)
{
    const struct ncclComm *c = op->comm;
    int ppn = fn_ranks_per_node(c);
    int nodes = (c->nranks + ppn - 1) / ppn;
    bool nvls = !strcmp(algo, "NVLS"), chain = !strcmp(algo, "COLLNET_CHAIN");
    if (c->nranks < 2 || (nvls && nodes > 1) || (!nvls && nodes < 2) ||
        (!nvls && !chain && ppn > 8))
        return false;
    struct fn_plan *p = &op->plan;
    p->algo = algo;
    p->proto = "SIMPLE";
    p->in_switch = true;
    p->ksteps = 0;
    if (nvls)
        plan_nvls(op, bytes, op_lat);
    else
        plan_collnet(op, chain, bytes, op_lat, ppn);
    return true;
}
