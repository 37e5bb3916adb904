/* Suite "xfer_model": each collective kind's transfer as latency plus size
 * over bandwidth (decoder/analysis/xfer_model.c) and the replay's net= and
 * link= selectors that scale its bandwidth term (replay.c;
 * docs/critical-path.md, "The network in physical units"). Exact values,
 * worked out below. */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/critical_path.h"
#include "decoder/analysis/critical_path_int.h"
#include "decoder/analysis/nccl_links.h"
#include "decoder/analysis/xfer_model.h"
#include "decoder/read/job.h"
#include "tests/unit/timeline_builder.h"

static struct ct_coll_row row(int op, int nranks, uint64_t bytes, double transfer_ns,
                              uint64_t matched)
{
    return (struct ct_coll_row){.op = op,
                                .bytes = bytes,
                                .nranks = nranks,
                                .count = matched ? matched : 4,
                                .transfer_p50 = matched ? transfer_ns : NAN,
                                .matched = matched};
}

/*
 * AllReduce over 2 ranks at 500 us + 1 ns a byte (1 GB/s) at 1, 2 and 4 MB:
 * fitted exactly. Over 8 ranks, (1 MB, 0.5 ms) and (2 MB, 1.6 ms): the line
 * through them crosses at -0.6 ms, so the fit goes through the origin,
 * b = sum(xy) / sum(x^2) = 3.7e12 / 5e12 = 0.74 ns a byte. Send at one size,
 * AllGather at two sizes 1.5x apart: latency not separable. ReduceScatter
 * taking less time for more bytes: latency-bound. Broadcast never
 * matched: unmatched.
 */
START_TEST(a_kind_is_fitted_as_latency_plus_size_over_bandwidth)
{
    struct ct_coll_row c[] = {
        row(CT_NCCL_OP_ALLREDUCE, 2, 1000000, 1.5e6, 10),
        row(CT_NCCL_OP_ALLREDUCE, 2, 2000000, 2.5e6, 3),
        row(CT_NCCL_OP_ALLREDUCE, 2, 4000000, 4.5e6, 7),
        row(CT_NCCL_OP_SEND, 2, 4096, 20e3, 5),
        row(CT_NCCL_OP_ALLGATHER, 4, 1000, 30e3, 5),
        row(CT_NCCL_OP_ALLGATHER, 4, 1500, 31e3, 5),
        row(CT_NCCL_OP_REDUCESCATTER, 4, 1000, 30e3, 5),
        row(CT_NCCL_OP_REDUCESCATTER, 4, 8000, 29e3, 5),
        row(CT_NCCL_OP_BROADCAST, 4, 8000, 0, 0),
        row(CT_NCCL_OP_ALLREDUCE, 8, 1000000, 0.5e6, 2),
        row(CT_NCCL_OP_ALLREDUCE, 8, 2000000, 1.6e6, 2),
    };
    struct ct_report rep = {.coll = c, .ncoll = sizeof(c) / sizeof(c[0])};
    struct ct_xfer_model *m;
    size_t n;
    ck_assert_int_eq(ct_xfer_models(&rep, &m, &n), 0);
    ck_assert_uint_eq(n, 6);
    const struct ct_xfer_model *ar = ct_xfer_model_of(m, n, CT_NCCL_OP_ALLREDUCE, 2);
    ck_assert_int_eq(ar->status, CT_XFER_FITTED);
    ck_assert_double_eq_tol(ar->lat_ns, 500e3, 1e-6);
    ck_assert_double_eq_tol(ar->ns_per_byte, 1, 1e-12);
    ck_assert_double_eq_tol(ar->fit_err_pct, 0, 1e-9);
    ck_assert_uint_eq(ar->sizes, 3);
    ck_assert_uint_eq(ar->matched, 20);
    ck_assert_uint_eq(ar->min_bytes, 1000000);
    ck_assert_uint_eq(ar->max_bytes, 4000000);
    const struct ct_xfer_model *a8 = ct_xfer_model_of(m, n, CT_NCCL_OP_ALLREDUCE, 8);
    ck_assert_int_eq(a8->status, CT_XFER_FITTED);
    ck_assert(a8->lat_ns == 0);
    ck_assert_double_eq_tol(a8->ns_per_byte, 0.74, 1e-12);
    ck_assert(isnan(a8->fit_err_pct)); /* two sizes: a line through both */
    ck_assert_int_eq(ct_xfer_model_of(m, n, CT_NCCL_OP_SEND, 2)->status, CT_XFER_ONE_SIZE);
    ck_assert_int_eq(ct_xfer_model_of(m, n, CT_NCCL_OP_ALLGATHER, 4)->status, CT_XFER_ONE_SIZE);
    ck_assert(isnan(ct_xfer_model_of(m, n, CT_NCCL_OP_ALLGATHER, 4)->lat_ns));
    ck_assert_int_eq(ct_xfer_model_of(m, n, CT_NCCL_OP_REDUCESCATTER, 4)->status, CT_XFER_NO_SLOPE);
    ck_assert_int_eq(ct_xfer_model_of(m, n, CT_NCCL_OP_BROADCAST, 4)->status, CT_XFER_UNMATCHED);
    ck_assert_ptr_null(ct_xfer_model_of(m, n, CT_NCCL_OP_ALLREDUCE, 4));

    /* 1.5 ms at 0.25: the 0.5 ms latency kept, the 1 ms a quarter */
    ck_assert_int_eq(ct_xfer_scaled(ar, 1500000, 0.25), 750000);
    /* shorter than the latency: nothing to scale */
    ck_assert_int_eq(ct_xfer_scaled(ar, 400000, 0.25), 400000);
    /* no latency known: the whole transfer (the most a network could give) */
    ck_assert_int_eq(ct_xfer_scaled(ct_xfer_model_of(m, n, CT_NCCL_OP_SEND, 2), 20000, 0.25), 5000);
    ck_assert_int_eq(ct_xfer_scaled(NULL, 20000, 0.5), 10000);
    /* latency-bound: unchanged */
    ck_assert_int_eq(
        ct_xfer_scaled(ct_xfer_model_of(m, n, CT_NCCL_OP_REDUCESCATTER, 4), 30000, 0.25), 30000);
    free(m);
}
END_TEST

/*
 * Two ranks, 4 iterations k of 1000 us; on each rank a gemm [a+20, a+320)
 * then an AllReduce (communicator 1, sequence k) of 1 MiB (k even) or
 * 2 MiB (k odd), both ranks arriving at a+320 and ending 200 or 300 us
 * later: 100 us + 100 us a MiB. The replay's transfer edges (from the
 * rendezvous to each rank's end) with the bandwidth term scaled must be
 * 100 + 100 f or 100 + 200 f.
 */
static void two_sizes(struct ct_job *job, struct ct_report *rep)
{
    struct tb_job b;
    tb_init(&b);
    for (int r = 0; r < 2; r++) {
        struct ct_proc *p = tb_proc(&b, r);
        for (int k = 0; k < 4; k++) {
            int64_t a = 1000 + 1000 * k, t = k % 2 ? 300 : 200;
            tb_range(p, a, a + 1000, k);
            tb_kernel(p, "gemm", 1, a + 20, a + 320, a + 10);
            tb_nccl(p, (struct tb_coll){.op = CT_NCCL_OP_ALLREDUCE,
                                        .comm = 1,
                                        .seq = (uint64_t)k,
                                        .comm_rank = r,
                                        .nranks = 2,
                                        .bytes = (uint64_t)(k % 2 ? 2 : 1) << 20,
                                        .stream = 1,
                                        .s = a + 320,
                                        .e = a + 320 + t,
                                        .launch = a + 15});
            tb_sync(p, a + 16, a + 700);
        }
    }
    tb_build(&b, job);
    tb_analyze(job, NULL, rep);
}

/* Each transfer edge of the last replay against 100 + (w - 100) x f (us);
 * the number of them. */
static size_t transfers_scaled_by(const struct ct_cp_graph *g, double f)
{
    size_t n = 0;
    for (size_t i = 0; i < g->ned; i++) {
        const struct cp_edge *e = &g->ed[i];
        if (!e->xfer || e->kind != CP_DUR)
            continue;
        int64_t want = TB_US(100) + (int64_t)llround((double)(e->w - TB_US(100)) * f);
        ck_assert_msg(e->wr == want, "transfer %lld scaled to %lld, want %lld", (long long)e->w,
                      (long long)e->wr, (long long)want);
        n++;
    }
    return n;
}

START_TEST(net_scales_the_bandwidth_term_of_every_transfer)
{
    struct ct_job job;
    struct ct_report rep;
    two_sizes(&job, &rep);
    const struct ct_xfer_model *m = ct_xfer_model_of(rep.xfer, rep.nxfer, CT_NCCL_OP_ALLREDUCE, 2);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(m->status, CT_XFER_FITTED);
    ck_assert_double_eq_tol(m->lat_ns, TB_US(100), 1e-6);
    struct ct_cp_graph *g;
    ck_assert_int_eq(ct_cp_build(&rep, &g), 0);
    struct ct_cp_scale s;
    char err[300];
    ck_assert_int_eq(ct_cp_scale_parse("net=0.5", &s, err, sizeof(err)), 0);
    ck_assert_int_eq(ct_cp_scale_check(&rep, &s, "net=0.5", err, sizeof(err)), 0);
    ck_assert_int_eq(ct_cp_replay(g, &s, 1), 0);
    ck_assert_uint_eq(transfers_scaled_by(g, 0.5), 8); /* 4 ops, 2 ranks */
    /* with op= too: the bandwidth term first, then the whole edge */
    struct ct_cp_scale two[2] = {s, {.kind = CT_SEL_OP, .op = CT_NCCL_OP_ALLREDUCE, .factor = 2}};
    ck_assert_int_eq(ct_cp_replay(g, two, 2), 0);
    for (size_t i = 0; i < g->ned; i++)
        if (g->ed[i].xfer && g->ed[i].kind == CP_DUR)
            ck_assert_int_eq(g->ed[i].wr, 2 * (TB_US(100) + (g->ed[i].w - TB_US(100)) / 2));
    ct_cp_free(g);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/*
 * The ring of communicator 1: link 0 -> 1 at 1 GB/s (1 ns a byte), 1 -> 0
 * at 4 GB/s (0.25). The ring is paced by 0 -> 1. link=0-1=0.5: the slowest
 * is now 0.5, a factor 0.5; link=1-0=0.5: 0 -> 1 still paces, nothing
 * changes; link=0-1=0.1: 0 -> 1 at 0.1, and 1 -> 0 (0.25) paces: 0.25.
 * A link the run does not have is refused with the links it has.
 */
START_TEST(link_scales_its_rings_transfers_by_the_slowest_link)
{
    struct ct_job job;
    struct ct_report rep;
    two_sizes(&job, &rep);
    ct_nlinks_free(rep.nlinks);
    rep.nlinks->l = calloc(2, sizeof(*rep.nlinks->l));
    ck_assert_ptr_nonnull(rep.nlinks->l);
    rep.nlinks->nl = 2;
    rep.nlinks->l[0] =
        (struct ct_nlink){.comm = 1, .src = 0, .dst = 1, .src_rank = 0, .dst_rank = 1, .gbps = 1};
    rep.nlinks->l[1] =
        (struct ct_nlink){.comm = 1, .src = 1, .dst = 0, .src_rank = 1, .dst_rank = 0, .gbps = 4};
    struct ct_cp_graph *g;
    ck_assert_int_eq(ct_cp_build(&rep, &g), 0);
    const struct {
        const char *spec;
        double f;
    } c[] = {{"link=0-1=0.5", 0.5}, {"link=1-0=0.5", 1}, {"link=0-1=0.1", 0.25}};
    char err[300];
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        struct ct_cp_scale s;
        ck_assert_int_eq(ct_cp_scale_parse(c[i].spec, &s, err, sizeof(err)), 0);
        ck_assert_int_eq(ct_cp_scale_check(&rep, &s, c[i].spec, err, sizeof(err)), 0);
        ck_assert_int_eq(ct_cp_replay(g, &s, 1), 0);
        ck_assert_uint_eq(transfers_scaled_by(g, c[i].f), 8);
    }
    struct ct_cp_scale s;
    ck_assert_int_eq(ct_cp_scale_parse("link=0-5=0.5", &s, err, sizeof(err)), 0);
    ck_assert_int_eq(ct_cp_scale_check(&rep, &s, "link=0-5=0.5", err, sizeof(err)), -ESRCH);
    ck_assert_ptr_nonnull(strstr(err, "its links: 0-1, 1-0"));
    ct_cp_free(g);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

START_TEST(net_and_link_selectors_parse_and_bad_ones_say_why)
{
    struct ct_cp_scale s;
    char err[300];
    ck_assert_int_eq(ct_cp_scale_parse("net=0.25", &s, err, sizeof(err)), 0);
    ck_assert_int_eq(s.kind, CT_SEL_NET);
    ck_assert(s.factor == 0.25);
    ck_assert_int_eq(ct_cp_scale_parse("link=5-6=4", &s, err, sizeof(err)), 0);
    ck_assert_int_eq(s.kind, CT_SEL_LINK);
    ck_assert_int_eq(s.rank, 5);
    ck_assert_int_eq(s.dst, 6);
    ck_assert(s.factor == 4);
    const char *bad[] = {"link=5=0.5",  "link=5-5=0.5", "link=a-b=1", "link=5-6",
                         "link=-1-2=1", "link=5-6x=1",  "net=1=2",    "net=-1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(ct_cp_scale_parse(bad[i], &s, err, sizeof(err)) == -EINVAL, "%s", bad[i]);
    ck_assert_int_eq(ct_cp_scale_parse("link=5-5=0.5", &s, err, sizeof(err)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "the sender A and the receiver B"));
    /* a run without per-link records says where they come from */
    struct ct_report rep = {0};
    ck_assert_int_eq(ct_cp_scale_parse("link=0-1=0.5", &s, err, sizeof(err)), 0);
    ck_assert_int_eq(ct_cp_scale_check(&rep, &s, "link=0-1=0.5", err, sizeof(err)), -ESRCH);
    ck_assert_ptr_nonnull(strstr(err, "proxy steps"));
    ck_assert_int_eq(ct_cp_scale_parse("net=0.5", &s, err, sizeof(err)), 0);
    ck_assert_int_eq(ct_cp_scale_check(&rep, &s, "net=0.5", err, sizeof(err)), -ESRCH);
    ck_assert_ptr_nonnull(strstr(err, "no NCCL operations"));
}
END_TEST

Suite *xfer_model_suite(void)
{
    Suite *s = suite_create("xfer_model");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, a_kind_is_fitted_as_latency_plus_size_over_bandwidth);
    tcase_add_test(tc, net_scales_the_bandwidth_term_of_every_transfer);
    tcase_add_test(tc, link_scales_its_rings_transfers_by_the_slowest_link);
    tcase_add_test(tc, net_and_link_selectors_parse_and_bad_ones_say_why);
    suite_add_tcase(s, tc);
    return s;
}
