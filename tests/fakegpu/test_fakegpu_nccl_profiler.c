/*
 * test_fakegpu_nccl_profiler.c - the fake NCCL's profiler plugin interface
 * (README.md, "Fake NCCL"): v6 by path, v5, v4 and v3 capped, STATIC_PLUGIN,
 * the activation mask and p2p events, copy-engine collectives (v6 CeColl
 * events, FAKEGPU_NCCL_CE), through the test plugin libfgtestprof.so. Part
 * of the test_fakegpu_nccl suite.
 */
#include "test_fakegpu_nccl.h"

#include <check.h>
#include <cuda.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const struct fgtp_rec *find(const struct fgtp_rec *r, size_t n, enum fgtp_call call,
                                   uint64_t type, uint64_t id, size_t nth)
{
    for (size_t i = 0; i < n; i++)
        if (r[i].call == call && (!type || r[i].type == type) && (!id || r[i].id == id) &&
            nth-- == 0)
            return &r[i];
    return NULL;
}

static size_t index_of(const struct fgtp_rec *base, const struct fgtp_rec *r)
{
    return r ? (size_t)(r - base) : (size_t)-1;
}

/* Wait (up to 2 s) until n_group Group events have stopped. */
static const struct fgtp_rec *records_settled(size_t *n, size_t n_group)
{
    /* up to 10 s: the proxy thread stops events after the ops end, later
     * when the 2-CPU test machine is busy */
    for (int i = 0; i < 10000; i++) {
        const struct fgtp_rec *r = fgtp_records(n);
        size_t stops = 0;
        for (size_t k = 0; k < *n; k++)
            if (r[k].call == FGTP_STOP)
                for (size_t j = 0; j < *n; j++)
                    if (r[j].call == FGTP_START && r[j].type == fnProfileGroup &&
                        r[j].id == r[k].id)
                        stops++;
        if (stops >= n_group)
            return r;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return fgtp_records(n);
}

/* One AllReduce on two in-process ranks, its events checked for the
 * plugin version in use. */
static void check_plugin(int version)
{
    setenv("FAKEGPU_NET_GBPS", "1", 1);
    CUstream s[2];
    ncclComm_t c[2];
    tn_two_ranks(s, c);
    static char sb[16], rb[16];
    CUevent e0[2], e1[2];
    for (int r = 0; r < 2; r++) {
        ck_assert_int_eq(tn_launch("blocker__30000us", s[r]), 0);
        e0[r] = tn_record(s[r]);
        NC_OK(ncclAllReduce(sb, rb, MB, ncclFloat32, ncclSum, c[r], s[r]));
        e1[r] = tn_record(s[r]);
    }
    ck_assert_double_eq_tol(tn_elapsed(e0[0], e1[0]), tn_wait_for_latest(e0, 2, 0) + 4, EXACT_MS);
    ck_assert_double_eq_tol(tn_elapsed(e0[1], e1[1]), tn_wait_for_latest(e0, 2, 1) + 4, EXACT_MS);
    size_t n;
    const struct fgtp_rec *rec = records_settled(&n, 2);
    const struct fgtp_rec *init = find(rec, n, FGTP_INIT, 0, 0, 0);
    ck_assert_ptr_nonnull(init);
    ck_assert_int_eq(init->version, version);
    if (version >= 4) {
        ck_assert_int_eq(init->nranks, 2);
        ck_assert_int_eq(init->rank, 0);
        ck_assert_uint_ne(init->hash, 0);
        ck_assert_uint_eq(find(rec, n, FGTP_INIT, 0, 0, 1)->hash, init->hash);
    }
    for (int r = 0; r < 2; r++) {
        double ms = tn_elapsed(e0[r], e1[r]);
        const struct fgtp_rec *g = find(rec, n, FGTP_START, fnProfileGroup, 0, (size_t)r);
        const struct fgtp_rec *co = find(rec, n, FGTP_START, fnProfileColl, 0, (size_t)r);
        ck_assert_ptr_nonnull(g);
        ck_assert_ptr_nonnull(co);
        ck_assert_int_eq(co->rank, r);
        ck_assert_uint_eq(co->seq, 0);
        ck_assert_str_eq(co->func, "AllReduce");
        ck_assert_str_eq(co->dtype, "ncclFloat32");
        ck_assert_str_eq(co->algo, "RING");
        ck_assert_str_eq(co->proto, "LL");
        ck_assert_ptr_eq(co->sendbuff, sb);
        ck_assert_ptr_eq(co->recvbuff, rb);
        ck_assert_uint_eq(co->count, MB);
        ck_assert_uint_eq(co->nchannels, 2);
        if (version >= 5) { /* v6 is v5 but for copy-engine collectives */
            const struct fgtp_rec *api = find(rec, n, FGTP_START, fnProfileCollApi, 0, (size_t)r);
            ck_assert_ptr_nonnull(api);
            ck_assert_uint_eq(co->parent, api->id);
            ck_assert_uint_eq(co->pgroup, g->id);
            const struct fgtp_rec *gapi = find(rec, n, FGTP_START, fnProfileGroupApi, 0, (size_t)r);
            ck_assert_ptr_nonnull(gapi);
            ck_assert_uint_eq(g->parent, gapi->id);
            ck_assert_uint_eq(api->parent, gapi->id);
            ck_assert_ptr_nonnull(find(rec, n, FGTP_START, fnProfileKernelLaunch, 0, (size_t)r));
        } else {
            ck_assert_uint_eq(co->parent, g->id);
            ck_assert_ptr_null(find(rec, n, FGTP_START, fnProfileCollApi, 0, 0));
        }
        if (version == 3)
            ck_assert_uint_ne(co->hash, 0);
        ck_assert_uint_lt(index_of(rec, g), index_of(rec, co));
        /* Two channels, children of the Coll event, stopped before it. */
        size_t co_stop = index_of(rec, find(rec, n, FGTP_STOP, 0, co->id, 0));
        size_t g_stop = index_of(rec, find(rec, n, FGTP_STOP, 0, g->id, 0));
        ck_assert_uint_lt(co_stop, g_stop);
        ck_assert_uint_lt(g_stop, n);
        int nch = 0;
        for (size_t i = 0; i < n; i++) {
            const struct fgtp_rec *k = &rec[i];
            if (k->call != FGTP_START || k->type != fnProfileKernelCh || k->parent != co->id)
                continue;
            nch++;
            size_t k_stop = index_of(rec, find(rec, n, FGTP_STOP, 0, k->id, 0));
            ck_assert_uint_lt(k_stop, co_stop);
            const struct fgtp_rec *st = find(rec, n, FGTP_STATE, 0, k->id, 0);
            if (version >= 4) {
                ck_assert_ptr_nonnull(st);
                ck_assert_int_eq(st->state, fnProfilerKernelChStop);
                /* GPU timers: the kernel's exact virtual interval. */
                ck_assert_double_eq_tol((double)(st->ptimer - k->ptimer) / 1e6, ms, EXACT_MS);
                int64_t start_mono = (int64_t)k->ptimer - k->offset_ns;
                int64_t now_mono = rec[k_stop].host_ns;
                ck_assert_int_le(start_mono + (int64_t)(ms * 1e6), now_mono + 100000);
            } else {
                ck_assert_ptr_null(st);
                /* v3: callbacks at the virtual start and end (host
                 * clock). The start's callback runs when the proxy thread
                 * gets the CPU, which on a loaded machine is milliseconds
                 * late, so the span between the two callbacks may be short
                 * by that much; the stop's cannot run before the virtual
                 * end, which is at least ms after the Coll event began (the
                 * kernel starts after its enqueue, on the same clock). */
                ck_assert_int_ge(k->host_ns, co->host_ns);
                ck_assert_int_ge(rec[k_stop].host_ns - co->host_ns, (int64_t)(ms * 1e6));
            }
        }
        ck_assert_int_eq(nch, 2);
    }
    for (int r = 0; r < 2; r++)
        NC_OK(ncclCommDestroy(c[r]));
    rec = fgtp_records(&n);
    ck_assert_ptr_nonnull(find(rec, n, FGTP_FINALIZE, 0, 0, 1));
}

START_TEST(plugin_v6_by_path)
{
    setenv("NCCL_PROFILER_PLUGIN", FGTESTPROF_PATH, 1);
    check_plugin(6);
}
END_TEST

START_TEST(plugin_v5_when_capped)
{
    setenv("NCCL_PROFILER_PLUGIN", FGTESTPROF_PATH, 1);
    setenv("FAKEGPU_NCCL_PROFILER_VERSION", "5", 1);
    check_plugin(5);
}
END_TEST

START_TEST(plugin_v4_when_capped)
{
    setenv("NCCL_PROFILER_PLUGIN", FGTESTPROF_PATH, 1);
    setenv("FAKEGPU_NCCL_PROFILER_VERSION", "4", 1);
    check_plugin(4);
}
END_TEST

START_TEST(plugin_v3_when_capped)
{
    setenv("NCCL_PROFILER_PLUGIN", FGTESTPROF_PATH, 1);
    setenv("FAKEGPU_NCCL_PROFILER_VERSION", "3", 1);
    check_plugin(3);
}
END_TEST

START_TEST(plugin_static_from_global_scope)
{
    setenv("NCCL_PROFILER_PLUGIN", "STATIC_PLUGIN", 1);
    check_plugin(6);
}
END_TEST

/*
 * FAKEGPU_NCCL_CE: an AllReduce on copy engines ends by the kernel's rule
 * (the latest start plus 4 ms: 4 MB at 1 GB/s over two ranks), then an
 * AllGather of 2 MB per rank (one ring step of 2 MB: 2 ms, both ranks
 * starting together), and a v6 plugin hears a CeColl event per op and rank
 * (parent: the call's CollApi event),
 * started and stopped on the calling thread inside the call, before the
 * op's GPU end; no Group, Coll, KernelCh or proxy event. A v5 plugin
 * hears nothing of the op but its API events. A bad value is refused.
 */
static void check_ce(int version)
{
    setenv("FAKEGPU_NET_GBPS", "1", 1);
    setenv("FAKEGPU_NCCL_CE", "AllReduce,AllGather", 1);
    CUstream s[2];
    ncclComm_t c[2];
    tn_two_ranks(s, c);
    static char sb[16], rb[16];
    CUevent e0[2], e1[2], e2[2];
    int64_t call[2][2];
    for (int r = 0; r < 2; r++) {
        ck_assert_int_eq(tn_launch(r ? "blocker__20000us" : "blocker__30000us", s[r]), 0);
        e0[r] = tn_record(s[r]);
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        NC_OK(ncclAllReduce(sb, rb, MB, ncclFloat32, ncclSum, c[r], s[r]));
        clock_gettime(CLOCK_MONOTONIC, &b);
        call[r][0] = (int64_t)a.tv_sec * 1000000000 + a.tv_nsec;
        call[r][1] = (int64_t)b.tv_sec * 1000000000 + b.tv_nsec;
        e1[r] = tn_record(s[r]);
        NC_OK(ncclAllGather(sb, rb, MB / 2, ncclFloat32, c[r], s[r]));
        e2[r] = tn_record(s[r]);
    }
    for (int r = 0; r < 2; r++) {
        ck_assert_double_eq_tol(tn_elapsed(e0[r], e1[r]), tn_wait_for_latest(e0, 2, r) + 4,
                                EXACT_MS);
        ck_assert_double_eq_tol(tn_elapsed(e1[r], e2[r]), 2, EXACT_MS);
    }
    size_t n;
    const struct fgtp_rec *rec = fgtp_records(&n);
    for (int r = 0; r < 2; r++) {
        /* each rank's calls in turn: its AllReduce's events, then its AllGather's */
        const struct fgtp_rec *ce = find(rec, n, FGTP_START, fnProfileCeColl, 0, (size_t)(2 * r));
        const struct fgtp_rec *api = find(rec, n, FGTP_START, fnProfileCollApi, 0, (size_t)(2 * r));
        ck_assert_ptr_nonnull(api);
        if (version < 6) {
            ck_assert_ptr_null(ce);
            continue;
        }
        ck_assert_ptr_nonnull(ce);
        ck_assert_uint_eq(ce->parent, api->id);
        ck_assert_int_eq(ce->rank, r);
        ck_assert_str_eq(ce->func, "AllReduce");
        ck_assert_str_eq(ce->dtype, "ncclFloat32");
        ck_assert_str_eq(ce->algo, "memop");
        ck_assert_uint_eq(ce->count, MB);
        ck_assert_ptr_eq(ce->sendbuff, sb);
        ck_assert_ptr_eq(ce->recvbuff, rb);
        ck_assert_ptr_eq(ce->stream, (void *)s[r]);
        ck_assert_uint_eq(ce->seq, 0);
        ck_assert_int_eq(ce->depth, 0); /* the communicator's first CE op */
        const struct fgtp_rec *stop = find(rec, n, FGTP_STOP, 0, ce->id, 0);
        ck_assert_ptr_nonnull(stop);
        ck_assert_int_ge(ce->host_ns, call[r][0]);
        ck_assert_int_le(stop->host_ns, call[r][1]);
        const struct fgtp_rec *ag =
            find(rec, n, FGTP_START, fnProfileCeColl, 0, (size_t)(2 * r + 1));
        ck_assert_ptr_nonnull(ag);
        ck_assert_str_eq(ag->func, "AllGather");
        ck_assert_uint_eq(ag->count, MB / 2);
        ck_assert_uint_eq(ag->seq, 1);
        ck_assert_int_eq(ag->depth, 1);
    }
    ck_assert_ptr_null(find(rec, n, FGTP_START, fnProfileGroup, 0, 0));
    ck_assert_ptr_null(find(rec, n, FGTP_START, fnProfileColl, 0, 0));
    ck_assert_ptr_null(find(rec, n, FGTP_START, fnProfileKernelCh, 0, 0));
    ck_assert_ptr_null(find(rec, n, FGTP_START, fnProfileProxyOp, 0, 0));
    for (int r = 0; r < 2; r++)
        NC_OK(ncclCommDestroy(c[r]));
}

START_TEST(plugin_v6_copy_engine_collective)
{
    setenv("NCCL_PROFILER_PLUGIN", FGTESTPROF_PATH, 1);
    check_ce(6);
}
END_TEST

START_TEST(plugin_v5_hears_no_copy_engine_collective)
{
    setenv("NCCL_PROFILER_PLUGIN", FGTESTPROF_PATH, 1);
    setenv("FAKEGPU_NCCL_PROFILER_VERSION", "5", 1);
    check_ce(5);
}
END_TEST

START_TEST(copy_engine_knob_refuses_a_bad_value)
{
    setenv("FAKEGPU_NCCL_CE", "AllReduce,Bcast", 1);
    CUstream s[2];
    ncclComm_t c[2];
    tn_two_ranks(s, c);
    static char sb[16], rb[16];
    ck_assert_int_eq(ncclAllReduce(sb, rb, MB, ncclFloat32, ncclSum, c[0], s[0]),
                     ncclInvalidArgument);
    ck_assert_ptr_nonnull(strstr(ncclGetLastError(c[0]), "FAKEGPU_NCCL_CE: 'Bcast'"));
    for (int r = 0; r < 2; r++)
        NC_OK(ncclCommDestroy(c[r]));
}
END_TEST

/* The mask is honoured, and p2p ops give P2p events. */
START_TEST(plugin_mask_and_p2p_events)
{
    setenv("NCCL_PROFILER_PLUGIN", "STATIC_PLUGIN", 1);
    char mask[16];
    snprintf(mask, sizeof mask, "%d", fnProfileP2p | fnProfileGroup);
    setenv("FGTP_MASK", mask, 1);
    CUstream s[2];
    ncclComm_t c[2];
    tn_two_ranks(s, c);
    static char buf[16];
    NC_OK(ncclGroupStart());
    NC_OK(ncclSend(buf, 100, ncclInt8, 1, c[0], s[0]));
    NC_OK(ncclRecv(buf, 100, ncclInt8, 0, c[1], s[1]));
    NC_OK(ncclGroupEnd());
    CU_OK(cuStreamSynchronize(s[0]));
    CU_OK(cuStreamSynchronize(s[1]));
    size_t n;
    const struct fgtp_rec *rec = records_settled(&n, 2);
    const struct fgtp_rec *p0 = find(rec, n, FGTP_START, fnProfileP2p, 0, 0);
    const struct fgtp_rec *p1 = find(rec, n, FGTP_START, fnProfileP2p, 0, 1);
    ck_assert_ptr_nonnull(p0);
    ck_assert_ptr_nonnull(p1);
    ck_assert_str_eq(p0->func, "Send");
    ck_assert_int_eq(p0->peer, 1);
    ck_assert_str_eq(p1->func, "Recv");
    ck_assert_int_eq(p1->peer, 0);
    ck_assert_str_eq(p1->dtype, "ncclInt8");
    ck_assert_uint_eq(p1->count, 100);
    ck_assert_ptr_null(find(rec, n, FGTP_START, fnProfileKernelCh, 0, 0));
    ck_assert_ptr_null(find(rec, n, FGTP_START, fnProfileColl, 0, 0));
    ck_assert_ptr_null(find(rec, n, FGTP_START, fnProfileGroupApi, 0, 0));
    for (int r = 0; r < 2; r++)
        NC_OK(ncclCommDestroy(c[r]));
}
END_TEST

TCase *tn_plugin_tcase(void)
{
    TCase *plugin = tcase_create("plugin");
    tcase_set_timeout(plugin, 30);
    tcase_add_test(plugin, plugin_v6_by_path);
    tcase_add_test(plugin, plugin_v5_when_capped);
    tcase_add_test(plugin, plugin_v6_copy_engine_collective);
    tcase_add_test(plugin, plugin_v5_hears_no_copy_engine_collective);
    tcase_add_test(plugin, copy_engine_knob_refuses_a_bad_value);
    tcase_add_test(plugin, plugin_v4_when_capped);
    tcase_add_test(plugin, plugin_v3_when_capped);
    tcase_add_test(plugin, plugin_static_from_global_scope);
    tcase_add_test(plugin, plugin_mask_and_p2p_events);
    return plugin;
}
