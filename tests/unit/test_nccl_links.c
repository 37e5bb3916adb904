/* Suite "nccl_links": per-link bandwidth and slow-link localisation
 * (decoder/analysis/nccl_links.c, docs/nccl.md) on hand-built proxy
 * observations with exact values. Times in ns, bytes per ns = GB/s. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cutrace/format.h"
#include "decoder/analysis/analysis.h"
#include "decoder/analysis/nccl_choices.h"
#include "decoder/analysis/nccl_links.h"
#include "decoder/read/job.h"
#include "decoder/read/nccl_acct.h"
#include "tests/unit/timeline_builder.h"

/* One channel of op k (0, 1) on link src -> src+1 of a 4-rank ring of
 * communicator 1: 1000 bytes in `busy` ns; the op lasts 500 ns, 450 of
 * them after its last member arrived. */
static struct ct_nlink_obs ob(uint64_t comm, int src, int n, int k, uint64_t busy)
{
    return (struct ct_nlink_obs){.comm = comm,
                                 .op_key = (uint64_t)(src * 10 + k),
                                 .seq = (uint64_t)k,
                                 .src = src,
                                 .dst = (src + 1) % n,
                                 .src_rank = src,
                                 .dst_rank = (src + 1) % n,
                                 .op = CT_NCCL_OP_ALLREDUCE,
                                 .op_bytes = 4096,
                                 .op_ns = 500,
                                 .op_transfer_ns = 450,
                                 .bytes = 1000,
                                 .busy = busy,
                                 .gpu_wait = 7,
                                 .peer_wait = 3};
}

/* Links 0->1 and 2->3 carry 2000 bytes per op in 100 ns (their longer
 * channel: 20 GB/s), 1->2 in 400 ns (5 GB/s), 3->0 in 100 then 125 ns
 * (20 and 16 GB/s, 4000 / 225 over each pair of ops), over nops ops (the
 * two ops repeated). */
static size_t ring(struct ct_nlink_obs *o, int nops)
{
    size_t n = 0;
    const uint64_t busy[4][2][2] = {{{100, 80}, {100, 90}},
                                    {{400, 300}, {400, 400}},
                                    {{100, 100}, {50, 100}},
                                    {{100, 60}, {125, 10}}};
    for (int s = 0; s < 4; s++)
        for (int k = 0; k < nops; k++)
            for (int ch = 0; ch < 2; ch++)
                o[n++] = ob(1, s, 4, k, busy[s][k % 2][ch]);
    return n;
}

START_TEST(link_bandwidth_is_bytes_over_the_longest_channel_per_op)
{
    struct ct_nlink_obs o[16];
    size_t n = ring(o, 2);
    struct ct_nlinks L = {0};
    ck_assert_int_eq(ct_nlinks_from_obs(o, n, &L), 0);
    ck_assert_uint_eq(L.nl, 4);
    const double want[4] = {20, 5, 20, 4000.0 / 225};
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(L.l[i].src, i);
        ck_assert_int_eq(L.l[i].dst_rank, (i + 1) % 4);
        ck_assert_uint_eq(L.l[i].ops, 2);
        ck_assert_uint_eq(L.l[i].bytes, 4000);
        ck_assert_double_eq_tol(L.l[i].gbps, want[i], 1e-12);
        ck_assert_double_eq_tol(L.l[i].gpu_wait_ns, 28, 1e-12);
        ck_assert_double_eq_tol(L.l[i].peer_wait_ns, 12, 1e-12);
    }
    /* per-op bandwidths 20 and 16: p50 18, p10 16.4, p90 19.6 (linear) */
    ck_assert_double_eq_tol(L.l[3].p50, 18, 1e-12);
    ck_assert_double_eq_tol(L.l[3].p10, 16.4, 1e-12);
    ck_assert_double_eq_tol(L.l[3].p90, 19.6, 1e-12);
    ct_nlinks_free(&L);
}
END_TEST

/* Over 8 ops. The same ring over its first 2 ops has the same bandwidths
 * but too few instances to name a link: even 2 of 2 slow is a 1 in 4
 * chance, past CT_SLOW_LINK_CHANCE. */
START_TEST(the_slow_link_is_named_with_its_peers_and_saving)
{
    struct ct_nlink_obs o[64];
    struct ct_nlinks L = {0};
    ck_assert_int_eq(ct_nlinks_from_obs(o, ring(o, 2), &L), 0);
    ck_assert_double_eq_tol(L.l[1].gbps, 5, 1e-12);
    ck_assert_uint_eq(L.nslow, 0);
    ck_assert_uint_eq(L.undecided, 1);
    ct_nlinks_free(&L);
    size_t n = ring(o, 8);
    ck_assert_int_eq(ct_nlinks_from_obs(o, n, &L), 0);
    ck_assert_uint_eq(L.nslow, 1);
    ck_assert_uint_eq(L.undecided, 0);
    const struct ct_nslow *s = &L.slow[0];
    ck_assert_uint_eq(s->link, 1);
    ck_assert_double_eq_tol(s->peers_lo, 4000.0 / 225, 1e-12);
    ck_assert_double_eq_tol(s->peers_hi, 20, 1e-12);
    ck_assert_double_eq_tol(s->peers_med, 20, 1e-12);
    /* at 20 GB/s each op's 400 ns on the link takes 100: 300 saved per
     * op, 2400 of the eight ops' 4000 ns */
    ck_assert_double_eq_tol(L.l[1].saving_ns, 2400, 1e-9);
    ck_assert_double_eq_tol(s->share_pct, 60, 1e-9);
    /* the transfer (8 x 450) scaled to what remains: 1 - 2400 / 3600 */
    ck_assert_str_eq(s->whatif, "op=AllReduce:4096=0.333333");
    ct_nlinks_free(&L);
}
END_TEST

/* The rule's boundary: slow below 80 % of the peers' median (16 GB/s of
 * 20), not at 16.5; and never with fewer than two peers. 8 ops each
 * (slow in 8 of 8: a chance of 1 in 256 at the toss of a coin). */
START_TEST(a_link_within_the_tolerance_or_without_two_peers_is_not_slow)
{
    struct ct_nlink_obs o[48];
    for (int k = 0; k < 8; k++)
        for (int s = 0; s < 4; s++) /* 1000 bytes in 50 ns: 20 GB/s; link 1 16.39: within */
            o[4 * k + s] = ob(2, s, 4, k, s == 1 ? 61 : 50);
    struct ct_nlinks L = {0};
    ck_assert_int_eq(ct_nlinks_from_obs(o, 32, &L), 0);
    ck_assert_uint_eq(L.nslow, 0);
    ct_nlinks_free(&L);
    for (int k = 0; k < 8; k++)
        o[4 * k + 1].busy = 63; /* 15.87 GB/s: slow */
    ck_assert_int_eq(ct_nlinks_from_obs(o, 32, &L), 0);
    ck_assert_uint_eq(L.nslow, 1);
    ck_assert_uint_eq(L.slow[0].link, 1);
    ct_nlinks_free(&L);
    /* two links only (a 2-rank ring): one is 4x slower, but has a single
     * peer to be slow against */
    for (int k = 0; k < 8; k++) {
        o[32 + 2 * k] = ob(3, 0, 2, k, 50);
        o[33 + 2 * k] = ob(3, 1, 2, k, 200);
    }
    ck_assert_int_eq(ct_nlinks_from_obs(o + 32, 16, &L), 0);
    ck_assert_uint_eq(L.nl, 2);
    ck_assert_uint_eq(L.nslow, 0);
    ct_nlinks_free(&L);
}
END_TEST

/*
 * Slow in itself, or slow in a few ops. A 4-rank ring, 10 all-reduces, every
 * link 1000 bytes in 100 ns an op (10 GB/s). Link 1 -> 2 taking 1000 ns in
 * ops 3 and 7 only (a late proxy, a hiccup): 10 000 bytes in 2 800 ns,
 * 3.6 GB/s over the job, below 80 % of its peers, but slow in 2 of the 10
 * ops it shares with them (CT_SLOW_LINK_MOST asks 3 in 4): not slow. The
 * same link at 160 ns in every op (6.25 GB/s): slow in 10 of 10, named.
 * At 160 ns in 7 ops and 100 in 3: 7 of 10, under 3 in 4: not slow.
 */
START_TEST(a_link_slow_in_a_few_ops_is_not_a_slow_link)
{
    struct ct_nlink_obs o[40];
    size_t n = 0;
    for (int k = 0; k < 10; k++)
        for (int s = 0; s < 4; s++)
            o[n++] = ob(5, s, 4, k, s == 1 && (k == 3 || k == 7) ? 1000 : 100);
    struct ct_nlinks L = {0};
    ck_assert_int_eq(ct_nlinks_from_obs(o, n, &L), 0);
    ck_assert_uint_eq(L.nl, 4);
    ck_assert_double_eq_tol(L.l[1].gbps, 10000.0 / 2800, 1e-9);
    ck_assert_uint_eq(L.nslow, 0);
    ct_nlinks_free(&L);
    for (size_t i = 0; i < n; i++)
        if (o[i].src == 1)
            o[i].busy = 160;
    ck_assert_int_eq(ct_nlinks_from_obs(o, n, &L), 0);
    ck_assert_uint_eq(L.nslow, 1);
    ck_assert_uint_eq(L.slow[0].link, 1);
    ct_nlinks_free(&L);
    for (size_t i = 0, k = 0; i < n; i++)
        if (o[i].src == 1 && k++ < 3)
            o[i].busy = 100;
    ck_assert_int_eq(ct_nlinks_from_obs(o, n, &L), 0);
    ck_assert_uint_eq(L.nslow, 0);
    ct_nlinks_free(&L);
}
END_TEST

/*
 * Two slow links through one rank (its NIC): a 4-rank ring whose links
 * 1 -> 2 and 2 -> 3 carry each op's 1000 bytes in 400 and `b23` ns, the
 * others in 100 (10 GB/s), 4 ops of 450 ns of transfer. The ring waits for
 * its slowest link, so fixing one alone saves only what separates it from
 * the other: with both at 400 nothing; with 2 -> 3 at 200 (5 GB/s, 100
 * at the peers' 10), fixing 1 -> 2 alone saves 400 - 200 per op and fixing
 * 2 -> 3 alone nothing; fixed together each op takes the healthy links'
 * 100: 300 saved per op, 1200 of the ops' 2000 ns, the transfer 1 - 1200 /
 * 1800 of itself. One group, both links through rank 2.
 */
START_TEST(two_slow_links_of_one_ring_are_fixed_together)
{
    const uint64_t b23[2] = {400, 200};
    const double alone12[2] = {0, 800}, sel12[2] = {1, 1 - 800.0 / 1800};
    for (int c = 0; c < 2; c++) {
        struct ct_nlink_obs o[32];
        size_t n = 0;
        for (int k = 0; k < 4; k++)
            for (int s = 0; s < 4; s++)
                o[n++] = ob(7, s, 4, k, s == 1 ? 400 : s == 2 ? b23[c] : 100);
        struct ct_nlinks L = {0};
        ck_assert_int_eq(ct_nlinks_from_obs(o, n, &L), 0);
        ck_assert_uint_eq(L.nslow, 2);
        for (size_t k = 0; k < 2; k++) {
            const struct ct_nslow *s = &L.slow[k];
            ck_assert_uint_eq(s->group, 0);
            ck_assert_uint_eq(s->ngroup, 2);
            ck_assert_int_eq(s->common, 2);
            ck_assert_int_eq(s->common_rank, 2);
            ck_assert_double_eq_tol(s->peers_med, 10, 1e-12);
            ck_assert_double_eq_tol(s->group_saving_ns, 1200, 1e-9);
            ck_assert_double_eq_tol(s->group_share_pct, 60, 1e-9);
            ck_assert_str_eq(s->group_whatif, "op=AllReduce:4096=0.333333");
        }
        ck_assert_uint_eq(L.slow[0].link, 1);
        ck_assert_double_eq_tol(L.l[1].saving_ns, alone12[c], 1e-9);
        ck_assert_double_eq_tol(L.l[2].saving_ns, 0, 1e-9);
        char want[32], ev[320];
        snprintf(want, sizeof(want), "op=AllReduce:4096=%.6f", sel12[c]);
        ck_assert_str_eq(L.slow[0].whatif, want);
        ck_assert_str_eq(L.slow[1].whatif, "op=AllReduce:4096=1.000000");
        ct_nlinks_group_evidence(ev, sizeof(ev), &L, 0);
        ck_assert_msg(strstr(ev, "links rank 1 -> rank 2 (2.5 GB/s), rank 2 -> rank 3 (") &&
                          strstr(ev, "peers 10-10 GB/s: every one through rank 2; together "
                                     "60.0 % of their ops' time"),
                      "%s", ev);
        ct_nlinks_evidence(ev, sizeof(ev), &L, 1);
        ck_assert_msg(strstr(ev, "0.0 % of its ops' time alone, 60.0 % with the 1 other slow "
                                 "link of its communicator (all through rank 2)"),
                      "%s", ev);
        ct_nlinks_free(&L);
    }
}
END_TEST

/* A link whose network time passes its ops' own time (4000 ns of network
 * time in a 500 ns op: proxy observations late) saves more than the ops
 * last: its share is none (NaN, null), never above 100 %, and the evidence
 * says so rather than a number. */
START_TEST(a_saving_past_the_ops_time_has_no_share)
{
    struct ct_nlink_obs o[32];
    size_t n = 0;
    for (int k = 0; k < 4; k++)
        for (int s = 0; s < 4; s++)
            o[n++] = ob(8, s, 4, k, s == 1 ? 4000 : 100);
    struct ct_nlinks L = {0};
    ck_assert_int_eq(ct_nlinks_from_obs(o, n, &L), 0);
    ck_assert_uint_eq(L.nslow, 1);
    ck_assert(isnan(L.slow[0].share_pct) && isnan(L.slow[0].group_share_pct));
    char ev[320];
    ct_nlinks_evidence(ev, sizeof(ev), &L, 0);
    ck_assert_msg(strstr(ev, "an unknown share of its ops' time"), "%s", ev);
    ct_nlinks_free(&L);
}
END_TEST

/*
 * The least evidence (docs/nccl.md, "Consistency"): a 4-rank ring, link
 * 1 -> 2 at a quarter of its peers' bandwidth in `slow` of its n ops and
 * at theirs in the rest. Named when a coin would be so consistent with a
 * chance of 1 in 16 or less: 4 of 4 (1/16) yes, 3 of 3 (1/8) too few
 * (undecided), 6 of 8 (37/256) no, 7 of 8 (9/256) yes, 6 of 7 (8/128) yes.
 */
static size_t ring_slow_in(struct ct_nlink_obs *o, int n, int slow)
{
    size_t m = 0;
    for (int k = 0; k < n; k++)
        for (int s = 0; s < 4; s++)
            o[m++] = ob(6, s, 4, k, s == 1 && k < slow ? 400 : 100);
    return m;
}

START_TEST(a_link_is_named_on_enough_consistent_instances)
{
    const struct {
        int n, slow, named, undecided;
    } c[] = {{4, 4, 1, 0}, {3, 3, 0, 1}, {8, 6, 0, 0}, {8, 7, 1, 0}, {7, 6, 1, 0}};
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        struct ct_nlink_obs o[40];
        struct ct_nlinks L = {0};
        ck_assert_int_eq(ct_nlinks_from_obs(o, ring_slow_in(o, c[i].n, c[i].slow), &L), 0);
        ck_assert_msg(L.nslow == (size_t)c[i].named && L.undecided == (size_t)c[i].undecided,
                      "%d of %d: %zu named, %zu undecided", c[i].slow, c[i].n, L.nslow,
                      L.undecided);
        ct_nlinks_free(&L);
    }
}
END_TEST

/*
 * The choice per size (decoder/analysis/nccl_choices.h): AllReduce over 2
 * ranks at 1, 2, 4 and 8 MB with bus bandwidths 10, 12, 5 and 14 GB/s,
 * NCCL's choices RING/SIMPLE but RING/LL at 4 MB: 4 MB is below 80 % of
 * 2 MB's 12 under another choice: a dip, its 10 instances a member (20
 * over both) of 800 us saving 800 x (1 - 5/12) each. 8 MB above 4 MB: no
 * dip (the smaller is the slow one). The same bandwidths under one choice,
 * or 4 MB at 10 (83 % of 12): none. No choices recorded: none, not known.
 */
START_TEST(a_size_slower_than_the_smaller_under_another_choice_is_a_dip)
{
    struct ct_coll_row c[4];
    const double bw[4] = {10, 12, 5, 14};
    for (int i = 0; i < 4; i++)
        c[i] = (struct ct_coll_row){.op = CT_NCCL_OP_ALLREDUCE,
                                    .bytes = (uint64_t)1000000 << i,
                                    .nranks = 2,
                                    .count = 20,
                                    .p50 = 800e3,
                                    .busbw = bw[i]};
    struct ct_nsplit sp[4];
    for (int i = 0; i < 4; i++) {
        sp[i] = (struct ct_nsplit){
            .comm = 1, .bytes = c[i].bytes, .op = CT_NCCL_OP_ALLREDUCE, .nranks = 2, .count = 20};
        snprintf(sp[i].algo, sizeof(sp[i].algo), "RING");
        snprintf(sp[i].proto, sizeof(sp[i].proto), "%s", i == 2 ? "LL" : "SIMPLE");
    }
    struct ct_nlinks L = {.split = sp, .nsplit = 4};
    struct ct_report rep = {.coll = c, .ncoll = 4, .nlinks = &L};
    struct ct_nchoice_dip *d;
    size_t n;
    int known;
    ck_assert_int_eq(ct_nccl_choice_dips(&rep, &d, &n, &known), 0);
    ck_assert(known);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(d[0].row, 2);
    ck_assert_uint_eq(d[0].prev, 1);
    ck_assert_str_eq(d[0].choice, "RING/LL");
    ck_assert_str_eq(d[0].prev_choice, "RING/SIMPLE");
    ck_assert_double_eq_tol(d[0].saving_ns, 10 * 800e3 * (1 - 5.0 / 12), 1e-6);
    free(d);
    snprintf(sp[2].proto, sizeof(sp[2].proto), "SIMPLE"); /* one choice */
    ck_assert_int_eq(ct_nccl_choice_dips(&rep, &d, &n, &known), 0);
    ck_assert_uint_eq(n, 0);
    snprintf(sp[2].proto, sizeof(sp[2].proto), "LL");
    c[2].busbw = 10; /* 83 % of 12: within the margin */
    ck_assert_int_eq(ct_nccl_choice_dips(&rep, &d, &n, &known), 0);
    ck_assert_uint_eq(n, 0);
    L.nsplit = 0;
    ck_assert_int_eq(ct_nccl_choice_dips(&rep, &d, &n, &known), 0);
    ck_assert(!known && n == 0);
}
END_TEST

/* A link whose steps spent no time on the network has no bandwidth (NAN,
 * null in the report), not an infinite one, and is nobody's peer. */
START_TEST(a_link_without_network_time_has_no_bandwidth)
{
    struct ct_nlink_obs o[4];
    for (int s = 0; s < 4; s++)
        o[s] = ob(4, s, 4, 0, 50);
    o[2].busy = 0;
    struct ct_nlinks L = {0};
    ck_assert_int_eq(ct_nlinks_from_obs(o, 4, &L), 0);
    ck_assert_uint_eq(L.nl, 4);
    ck_assert(isnan(L.l[2].gbps));
    ck_assert(isnan(L.l[2].p50));
    ck_assert_uint_eq(L.l[2].ops, 1);
    ck_assert_uint_eq(L.nslow, 0);
    ct_nlinks_free(&L);
}
END_TEST

/* NCCL's account of process p: one send ProxyOp to peer 1 of every call's
 * correlation id (the builder's calls all have id 0), 1000 bytes, 400 ns
 * of network time. */
static void proxy_account(struct ct_proc *p)
{
    struct ct_nacct *a = calloc(1, sizeof(*a));
    struct ct_nproxy *x = calloc(1, sizeof(*x));
    ck_assert(a && x);
    *x = (struct ct_nproxy){.corr = 0,
                            .s = 0,
                            .e = 500,
                            .channel = 0,
                            .steps = 4,
                            .peer = 1,
                            .send = 1,
                            .bytes = 1000,
                            .net = 400,
                            .busy = 400};
    a->px = x;
    a->npx = 1;
    p->nacct = a;
}

/*
 * A rank of two processes that both carry NCCL's account (a flight
 * recorder's two windows, a restart): each process's account is read
 * against its own calls only (correlation ids are per process; reading it
 * against every call of the rank overflowed the per-collective split: a
 * heap overflow on `cutrace goodput` of a hung job's windows). Three
 * all-reduces of 1 MB in each process, 1 us each: one row of six, its
 * transfer the 400 ns of network time, its wait the rest.
 */
START_TEST(a_rank_of_two_accounted_processes_is_read_whole)
{
    struct tb_job b;
    struct ct_job job;
    tb_init(&b);
    struct ct_proc *p0 = tb_proc(&b, 0);
    struct ct_proc *p1 = tb_child(&b, p0);
    for (int i = 0; i < 3; i++) {
        struct tb_coll o = {.op = CT_NCCL_OP_ALLREDUCE,
                            .comm = 7,
                            .seq = (uint64_t)i,
                            .bytes = 1 << 20,
                            .comm_rank = 0,
                            .peer = -1,
                            .nranks = 2,
                            .stream = 3,
                            .s = 1000 * (i + 1),
                            .e = 1000 * (i + 1) + 1,
                            .launch = 1000 * (i + 1)};
        tb_nccl(p0, o);
        o.seq += 10, o.s += 5000, o.e += 5000, o.launch += 5000;
        tb_nccl(p1, o);
    }
    proxy_account(p0);
    proxy_account(p1);
    tb_build(&b, &job);
    struct ct_nlinks L;
    ck_assert_int_eq(ct_nccl_links(&job, &L), 0);
    ck_assert_uint_eq(L.proxy_records, 2);
    ck_assert_uint_eq(L.nsplit, 1);
    ck_assert_uint_eq(L.split[0].count, 6);
    ck_assert_double_eq_tol(L.split[0].transfer_p50_ns, 400, 1e-9);
    ck_assert_double_eq_tol(L.split[0].wait_p50_ns, 1000 - 400, 1e-9);
    ct_nlinks_free(&L);
    ct_job_free(&job);
}
END_TEST

/* The process's one call (correlation id 0) described by NCCL as algo. */
static void info_account(struct ct_proc *p, const char *algo)
{
    struct ct_nacct *a = p->nacct ? p->nacct : calloc(1, sizeof(*a));
    struct ct_ninfo *i = calloc(1, sizeof(*i));
    ck_assert(a && i);
    *i = (struct ct_ninfo){.corr = 0, .channels = 2, .warps = 16};
    snprintf(i->algo, sizeof(i->algo), "%s", algo);
    snprintf(i->proto, sizeof(i->proto), "SIMPLE");
    a->info = i;
    a->ninfo = 1;
    p->nacct = a;
}

/*
 * CollNet's ProxyOps go to the collective network, whose peer NCCL gives
 * as the communicator's size (connect.cc): a ProxyOp to peer 2 of a
 * 2-rank communicator makes no link (counted in collnet_ops), while its
 * network time is still the op's transfer (400 of its 1000 ns). An NVLS
 * op of another process (no proxy steps in a job that has some) has no
 * split, with the NVLS reason; a job without proxy records, the other.
 */
START_TEST(a_proxy_op_to_the_collective_network_is_no_link)
{
    struct tb_job b;
    struct ct_job job;
    tb_init(&b);
    struct ct_proc *p0 = tb_proc(&b, 0);
    struct ct_proc *p1 = tb_child(&b, p0);
    struct tb_coll o = {.op = CT_NCCL_OP_ALLREDUCE,
                        .comm = 7,
                        .bytes = 1 << 20,
                        .comm_rank = 0,
                        .peer = -1,
                        .nranks = 2,
                        .stream = 3,
                        .s = 1000,
                        .e = 1001,
                        .launch = 1000};
    tb_nccl(p0, o);
    o.seq = 1, o.bytes = 2 << 20, o.s += 5000, o.e += 5000, o.launch += 5000;
    tb_nccl(p1, o);
    proxy_account(p0);
    p0->nacct->px[0].peer = 2; /* the communicator's size */
    info_account(p0, "COLLNET_DIRECT");
    info_account(p1, "NVLS");
    tb_build(&b, &job);
    struct ct_nlinks L;
    ck_assert_int_eq(ct_nccl_links(&job, &L), 0);
    ck_assert_uint_eq(L.nl, 0);
    ck_assert_uint_eq(L.collnet_ops, 1);
    ck_assert_uint_eq(L.nsplit, 2);
    const struct ct_nsplit *cn = L.split[0].bytes == 1 << 20 ? &L.split[0] : &L.split[1];
    const struct ct_nsplit *nv = cn == &L.split[0] ? &L.split[1] : &L.split[0];
    ck_assert_str_eq(cn->algo, "COLLNET_DIRECT");
    ck_assert_double_eq_tol(cn->transfer_p50_ns, 400, 1e-9);
    ck_assert_ptr_null(ct_nsplit_why(&L, cn));
    ck_assert_str_eq(nv->algo, "NVLS");
    ck_assert(isnan(nv->transfer_p50_ns) && isnan(nv->wait_p50_ns));
    ck_assert_str_eq(ct_nsplit_why(&L, nv), CT_NSPLIT_NVLS);
    L.proxy_records = 0;
    ck_assert_str_eq(ct_nsplit_why(&L, nv), CT_NSPLIT_NO_PROXY);
    ct_nlinks_free(&L);
    ct_job_free(&job);
}
END_TEST

Suite *nccl_links_suite(void)
{
    Suite *s = suite_create("nccl_links");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, link_bandwidth_is_bytes_over_the_longest_channel_per_op);
    tcase_add_test(tc, the_slow_link_is_named_with_its_peers_and_saving);
    tcase_add_test(tc, a_link_within_the_tolerance_or_without_two_peers_is_not_slow);
    tcase_add_test(tc, a_link_without_network_time_has_no_bandwidth);
    tcase_add_test(tc, a_link_slow_in_a_few_ops_is_not_a_slow_link);
    tcase_add_test(tc, a_link_is_named_on_enough_consistent_instances);
    tcase_add_test(tc, two_slow_links_of_one_ring_are_fixed_together);
    tcase_add_test(tc, a_saving_past_the_ops_time_has_no_share);
    tcase_add_test(tc, a_size_slower_than_the_smaller_under_another_choice_is_a_dip);
    tcase_add_test(tc, a_rank_of_two_accounted_processes_is_read_whole);
    tcase_add_test(tc, a_proxy_op_to_the_collective_network_is_no_link);
    suite_add_tcase(s, tc);
    return s;
}
