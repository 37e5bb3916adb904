/*
 * test_fakegpu_nccl_algos.c - the fake NCCL's in-switch algorithms
 * (README.md, "In-switch algorithms"; fn_algos.c): NVLS's and CollNet's
 * schedules, exactly, on four in-process ranks, their descriptors, and
 * CollNet's ProxyOps to the collective network (peer = the communicator's
 * size) through the test plugin. Part of the test_fakegpu_nccl suite.
 */
#include "test_fakegpu_nccl.h"

#include <check.h>
#include <cuda.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { N = 4 };

/* Four ranks (ncclCommInitAll), each starting one AllReduce of MB floats
 * (4 MB) r ms after rank 0; returns each rank's op time in ms (from its
 * own start). Rank 3 starts last, so its time is the op's transfer. */
static void four_rank_allreduce(double ms[N])
{
    setenv("FAKEGPU_DEVICES", "4", 1);
    CUstream s[N];
    for (int r = 0; r < N; r++)
        ck_assert_ptr_nonnull(s[r] = tn_setup_device(r));
    ncclComm_t c[N];
    NC_OK(ncclCommInitAll(c, N, NULL));
    static char buf[16];
    CUevent e0[N], e1[N];
    for (int r = 0; r < N; r++) {
        ck_assert_int_eq(tn_launch("blocker__50000us", s[r]), 0);
        char late[32];
        snprintf(late, sizeof late, "late__%dus", 1000 * r);
        ck_assert_int_eq(tn_launch(late, s[r]), 0);
        e0[r] = tn_record(s[r]);
        NC_OK(ncclAllReduce(buf, buf, MB, ncclFloat32, ncclSum, c[r], s[r]));
        e1[r] = tn_record(s[r]);
    }
    for (int r = 0; r < N; r++)
        ms[r] = tn_elapsed(e0[r], e1[r]);
    /* every rank ends together: the latest start plus the transfer */
    for (int r = 0; r < N; r++)
        ck_assert_double_eq_tol(ms[r], tn_wait_for_latest(e0, N, r) + ms[3], EXACT_MS);
    for (int r = 0; r < N; r++)
        NC_OK(ncclCommDestroy(c[r]));
}

/* Until n_coll Coll events have stopped (the proxy thread stops them after
 * the op ends; up to 10 s on a busy 2-CPU machine). */
static const struct fgtp_rec *settled(size_t *n, size_t n_coll)
{
    for (int i = 0; i < 10000; i++) {
        const struct fgtp_rec *r = fgtp_records(n);
        size_t stops = 0;
        for (size_t k = 0; k < *n; k++)
            if (r[k].call == FGTP_STOP)
                for (size_t j = 0; j < *n; j++)
                    if (r[j].call == FGTP_START && r[j].type == fnProfileColl && r[j].id == r[k].id)
                        stops++;
        if (stops >= n_coll)
            return r;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return fgtp_records(n);
}

/* NVLS: each GPU's port carries S (n+1)/n each way: 4 MB x 5/4 at 2 GB/s
 * is 2.5 ms, plus FAKEGPU_NCCL_NVLS_LAT_US (0.5 ms); its bus bandwidth,
 * 4 MB x 2(n-1)/n / 3 ms = 2 GB/s, equals the port's at 4 ranks. */
START_TEST(nvls_moves_size_times_n_plus_one_over_n_through_the_switch_port)
{
    setenv("FAKEGPU_NET_GBPS", "1", 1);
    setenv("FAKEGPU_NCCL_ALGOS", "NVLS", 1);
    setenv("FAKEGPU_NCCL_NVLS_GBPS", "2", 1);
    setenv("FAKEGPU_NCCL_NVLS_LAT_US", "500", 1);
    double ms[N];
    four_rank_allreduce(ms);
    ck_assert_double_eq_tol(ms[3], 4.0 * MB * 5 / 4 / 2e9 * 1e3 + 0.5, EXACT_MS);
}
END_TEST

/* NVLS across nodes is disabled (NCCL needs CollNet for it): the ring,
 * 2(n-1)/n x 4 MB at 1 GB/s = 6 ms. */
START_TEST(nvls_across_nodes_runs_the_ring)
{
    setenv("FAKEGPU_NET_GBPS", "1", 1);
    setenv("FAKEGPU_NCCL_ALGOS", "NVLS", 1);
    setenv("FAKEGPU_NCCL_RANKS_PER_NODE", "2", 1);
    double ms[N];
    four_rank_allreduce(ms);
    ck_assert_double_eq_tol(ms[3], 4.0 * MB * 1.5 / 1e9 * 1e3, EXACT_MS);
}
END_TEST

/* CollNet Direct, 2 nodes of 2: each head sends its 2 MB to the switch in
 * 8 steps of 250 kB at 1 GB/s (+ 10 us a step): 8 x 0.26 = 2.08 ms; the
 * NVLink part (2 x 4 MB x 1/2 at 450 GB/s, 8.9 us) hides under it. */
START_TEST(collnet_direct_sends_a_node_share_per_head)
{
    setenv("FAKEGPU_NET_GBPS", "1", 1);
    setenv("FAKEGPU_NCCL_ALGOS", "COLLNET_DIRECT", 1);
    setenv("FAKEGPU_NCCL_RANKS_PER_NODE", "2", 1);
    setenv("FAKEGPU_NCCL_LINK_LAT_US", "10", 1);
    double ms[N];
    four_rank_allreduce(ms);
    ck_assert_double_eq_tol(ms[3], 8 * (0.01 + 4.0 * MB / 2 / 8 / 1e9 * 1e3), EXACT_MS);
}
END_TEST

/* CollNet Chain, 2 nodes of 2: the chain's root sends the whole 4 MB in
 * 8 steps at 1 GB/s (4 ms) and the chain adds 2 (P-1) hop latencies. */
START_TEST(collnet_chain_sends_the_whole_size_from_the_root)
{
    setenv("FAKEGPU_NET_GBPS", "1", 1);
    setenv("FAKEGPU_NCCL_ALGOS", "COLLNET_CHAIN", 1);
    setenv("FAKEGPU_NCCL_RANKS_PER_NODE", "2", 1);
    setenv("FAKEGPU_NCCL_LINK_LAT_US", "10", 1);
    double ms[N];
    four_rank_allreduce(ms);
    ck_assert_double_eq_tol(ms[3], 8 * (0.01 + 4.0 * MB / 8 / 1e9 * 1e3) + 2 * 0.01, EXACT_MS);
}
END_TEST

/* The descriptors name NCCL's algorithm (ncclAlgoToString) and SIMPLE;
 * each CollNet head's ProxyOps (a send and a receive per channel) have the
 * communicator's size as peer, 8 steps; NVLS and the chain's non-roots
 * have none. */
static void check_events(const char *algo, int chain_roots_only, int proxy)
{
    setenv("NCCL_PROFILER_PLUGIN", FGTESTPROF_PATH, 1);
    setenv("FAKEGPU_NET_GBPS", "1", 1);
    setenv("FAKEGPU_NCCL_ALGOS", algo, 1);
    if (proxy)
        setenv("FAKEGPU_NCCL_RANKS_PER_NODE", "2", 1);
    double ms[N];
    four_rank_allreduce(ms);
    size_t n;
    const struct fgtp_rec *rec = settled(&n, N);
    int colls = 0, pops[N][2] = {{0}};
    for (size_t i = 0; i < n; i++) {
        const struct fgtp_rec *r = &rec[i];
        if (r->call != FGTP_START)
            continue;
        if (r->type == fnProfileColl) {
            colls++;
            ck_assert_str_eq(r->algo, algo);
            ck_assert_str_eq(r->proto, "SIMPLE");
        } else if (r->type == fnProfileProxyOp) {
            ck_assert_int_eq(r->peer, N);
            ck_assert_uint_eq(r->count, 8);
            ck_assert(r->rank >= 0 && r->rank < N);
            pops[r->rank][r->root ? 0 : 1]++;
        }
    }
    ck_assert_int_eq(colls, N);
    for (int r = 0; r < N; r++) {
        int want = proxy && (!chain_roots_only || r % 2 == 0) ? 2 : 0; /* 2 channels */
        ck_assert_int_eq(pops[r][0], want);
        ck_assert_int_eq(pops[r][1], want);
    }
}

START_TEST(nvls_has_no_proxy_ops_and_names_its_algorithm)
{
    check_events("NVLS", 0, 0);
}
END_TEST

START_TEST(collnet_direct_proxy_ops_go_to_the_collective_network)
{
    check_events("COLLNET_DIRECT", 0, 1);
}
END_TEST

START_TEST(collnet_chain_proxy_ops_only_on_the_chain_roots)
{
    check_events("COLLNET_CHAIN", 1, 1);
}
END_TEST

/* A bad algorithm name is refused at init, naming the allowed ones. */
START_TEST(algos_knob_refuses_an_unknown_algorithm)
{
    setenv("FAKEGPU_DEVICES", "2", 1);
    setenv("FAKEGPU_NCCL_ALGOS", "NVLS:1000,SHARP", 1);
    ck_assert_ptr_nonnull(tn_setup_device(0));
    ncclComm_t c[2];
    ck_assert_int_eq(ncclCommInitAll(c, 2, NULL), ncclInvalidArgument);
    ck_assert_ptr_nonnull(strstr(ncclGetLastError(NULL), "COLLNET_CHAIN"));
}
END_TEST

TCase *tn_algos_tcase(void)
{
    TCase *t = tcase_create("in-switch algorithms");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, nvls_moves_size_times_n_plus_one_over_n_through_the_switch_port);
    tcase_add_test(t, nvls_across_nodes_runs_the_ring);
    tcase_add_test(t, collnet_direct_sends_a_node_share_per_head);
    tcase_add_test(t, collnet_chain_sends_the_whole_size_from_the_root);
    tcase_add_test(t, nvls_has_no_proxy_ops_and_names_its_algorithm);
    tcase_add_test(t, collnet_direct_proxy_ops_go_to_the_collective_network);
    tcase_add_test(t, collnet_chain_proxy_ops_only_on_the_chain_roots);
    tcase_add_test(t, algos_knob_refuses_an_unknown_algorithm);
    return t;
}
