/* Suite "speed_of_light": each collective's bus bandwidth against what its
 * links can carry (decoder/analysis/speed_of_light.c; docs/nccl.md, "Speed
 * of light"), on hand-built two-rank jobs whose metadata says what the
 * recorder read of the hardware. Exact values, worked out below. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/analysis.h"
#include "decoder/read/facts.h"
#include "decoder/read/job.h"
#include "decoder/read/timeline.h"
#include "tests/unit/timeline_builder.h"

/* Metadata KEY=VALUE pairs (device keys as "device.KEY"), NULL-ended. */
static void facts(struct ct_proc *p, const char *const *kv)
{
    struct ct_facts_collect c;
    ck_assert_int_eq(ct_facts_collect_init(&c), 0);
    for (size_t i = 0; kv && kv[i]; i += 2) {
        int dev = !strncmp(kv[i], "device.", 7);
        ck_assert_int_eq(ct_facts_meta(&c, dev ? CT_SCOPE_DEVICE : CT_SCOPE_PROCESS,
                                       kv[i] + (dev ? 7 : 0), kv[i + 1]),
                         0);
    }
    p->facts = ct_facts_collect_finish(&c);
    ck_assert_ptr_nonnull(p->facts);
}

/*
 * Two ranks on hosts h0 and h1, 4 iterations of 1000 us; in each an
 * AllReduce of `bytes` between them from a+100 to a+300 on both: p50 200
 * us, algbw bytes / 200 us, busbw the same (2 ranks: 2(n-1)/n = 1).
 * 1 MB: 5 GB/s.
 */
static void job_in(struct ct_job *job, struct ct_report *rep, const char *h0, const char *h1,
                   uint64_t bytes, const char *const *kv0, const char *const *kv1, int members)
{
    struct tb_job b;
    tb_init(&b);
    for (int r = 0; r < 2; r++) {
        struct ct_proc *p = tb_proc(&b, r);
        free(p->host);
        p->host = strdup(r ? h1 : h0);
        facts(p, r ? kv1 : kv0);
        for (int k = 0; k < 4; k++) {
            int64_t a = 1000 + 1000 * k;
            tb_range(p, a, a + 1000, k);
            tb_nccl(p, (struct tb_coll){.op = CT_NCCL_OP_ALLREDUCE,
                                        .comm = 1,
                                        .seq = (uint64_t)k,
                                        .comm_rank = r,
                                        .nranks = members,
                                        /* past 2 members, two sizes: two rows */
                                        .bytes = members == 2 || k % 2 ? bytes : 2 * bytes,
                                        .stream = 1,
                                        .s = a + 100,
                                        .e = a + 300,
                                        .launch = a + 50});
        }
    }
    tb_build(&b, job);
    tb_analyze(job, NULL, rep);
    ck_assert_uint_eq(rep->ncoll, members == 2 ? 1 : 2);
    if (members == 2)
        ck_assert_double_eq_tol(rep->coll[0].busbw, (double)bytes / 200e3, 1e-9);
}

static void job_of(struct ct_job *job, struct ct_report *rep, const char *h0, const char *h1,
                   uint64_t bytes, const char *const *kv0, const char *const *kv1)
{
    job_in(job, rep, h0, h1, bytes, kv0, kv1, 2);
}

static void done(struct ct_job *job, struct ct_report *rep)
{
    ct_report_free(rep);
    ct_job_free(job);
}

static const char *const hopper18[] = {"device.nvlink_links", "18", "device.compute_capability",
                                       "9.0", NULL};

/* One host, 18 active links of sm 9.0 (25 GB/s each way): 450 GB/s; 5 GB/s
 * is 1.1 % of it. The platform table where NVML gave nothing: an H100 SXM,
 * 900 GB/s both ways, 450 one way. */
START_TEST(one_host_is_bounded_by_nvlink)
{
    struct ct_job job;
    struct ct_report rep;
    job_of(&job, &rep, "n0", "n0", 1000000, hopper18, hopper18);
    const struct ct_coll_row *c = &rep.coll[0];
    ck_assert_double_eq_tol(c->sol_gbps, 450, 1e-9);
    ck_assert_double_eq_tol(c->sol_pct, 100 * 5.0 / 450, 1e-9);
    ck_assert_str_eq(c->sol_basis, "18 NVLink links x 25 GB/s (NVML, sm 9.0)");
    ck_assert_str_eq(c->sol_reason, "");
    done(&job, &rep);
    const char *const h100[] = {"device.name", "NVIDIA H100 80GB HBM3", NULL};
    job_of(&job, &rep, "n0", "n0", 1000000, h100, h100);
    c = &rep.coll[0];
    ck_assert_double_eq_tol(c->sol_gbps, 450, 1e-9);
    ck_assert_ptr_nonnull(strstr(c->sol_basis, "H100 SXM"));
    ck_assert_ptr_nonnull(strstr(c->sol_basis, "platform table"));
    done(&job, &rep);
    /* two traces of an 8-rank communicator (the other members not
     * recorded), at two sizes: its rows are 8-rank ones, their bound the
     * two members' (a row's members indexed by the job's ranks, not the
     * communicator's: valgrind and ASan saw the difference) */
    job_in(&job, &rep, "n0", "n0", 1000000, hopper18, hopper18, 8);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(rep.coll[i].nranks, 8);
        ck_assert_double_eq_tol(rep.coll[i].sol_gbps, 450, 1e-9);
    }
    done(&job, &rep);
    /* the slower member sets it: 12 links (300 GB/s) on rank 1 */
    const char *const twelve[] = {"device.nvlink_links", "12", "device.compute_capability", "9.0",
                                  NULL};
    job_of(&job, &rep, "n0", "n0", 1000000, hopper18, twelve);
    ck_assert_double_eq_tol(rep.coll[0].sol_gbps, 300, 1e-9);
    done(&job, &rep);
}
END_TEST

/* Without a reading or a table entry, or without active links, no bound:
 * NAN and the reason; never 0. */
START_TEST(an_unknown_bound_is_absent_with_its_reason)
{
    struct ct_job job;
    struct ct_report rep;
    const char *const pcie[] = {"device.name", "NVIDIA H100 PCIe", "device.nvlink_unavailable",
                                "no NVLink on this device (NVML 3)", NULL};
    job_of(&job, &rep, "n0", "n0", 1000000, pcie, pcie);
    const struct ct_coll_row *c = &rep.coll[0];
    ck_assert(isnan(c->sol_gbps) && isnan(c->sol_pct));
    ck_assert_ptr_nonnull(strstr(c->sol_reason, "no NVLink on this device"));
    ck_assert_ptr_nonnull(strstr(c->sol_reason, "not in the platform table"));
    done(&job, &rep);
    const char *const off[] = {"device.nvlink_links", "0", "device.compute_capability", "9.0",
                               NULL};
    job_of(&job, &rep, "n0", "n0", 1000000, off, off);
    ck_assert(isnan(rep.coll[0].sol_gbps));
    ck_assert_ptr_nonnull(strstr(rep.coll[0].sol_reason, "no active NVLink"));
    done(&job, &rep);
    /* a bus bandwidth past the bound by more than 5 %: the bound is wrong.
     * 1 GB in 200 us is 5000 GB/s against 450 */
    job_of(&job, &rep, "n0", "n0", 1000000000, hopper18, hopper18);
    ck_assert(isnan(rep.coll[0].sol_gbps) && isnan(rep.coll[0].sol_pct));
    ck_assert_ptr_nonnull(strstr(rep.coll[0].sol_reason, "above the"));
    done(&job, &rep);
}
END_TEST

/* Two hosts: the network. h0 has 3200 Gb/s of ports, h1 1600, one GPU of
 * the job each: 400 and 200 GB/s a GPU; the slower, 200, bounds it: 5 GB/s
 * is 2.5 %. A host without a reading: absent, its reason. */
START_TEST(two_hosts_are_bounded_by_the_slowest_hosts_nics)
{
    struct ct_job job;
    struct ct_report rep;
    const char *const a[] = {"nic_gbps", "3200", NULL}, *const b[] = {"nic_gbps", "1600", NULL};
    job_of(&job, &rep, "h0", "h1", 1000000, a, b);
    const struct ct_coll_row *c = &rep.coll[0];
    ck_assert_double_eq_tol(c->sol_gbps, 200, 1e-9);
    ck_assert_double_eq_tol(c->sol_pct, 2.5, 1e-9);
    ck_assert_str_eq(c->sol_basis, "1600 Gb/s of RDMA ports over 1 GPUs on h1 (sysfs)");
    done(&job, &rep);
    const char *const none[] = {"nic_unavailable",
                                "no /sys/class/infiniband (no RDMA NIC, or a "
                                "container without them)",
                                NULL};
    job_of(&job, &rep, "h0", "h1", 1000000, a, none);
    ck_assert(isnan(rep.coll[0].sol_gbps));
    ck_assert_ptr_nonnull(strstr(rep.coll[0].sol_reason, "host h1: no RDMA rate recorded"));
    done(&job, &rep);
}
END_TEST

Suite *speed_of_light_suite(void)
{
    Suite *s = suite_create("speed_of_light");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, one_host_is_bounded_by_nvlink);
    tcase_add_test(tc, an_unknown_bound_is_absent_with_its_reason);
    tcase_add_test(tc, two_hosts_are_bounded_by_the_slowest_hosts_nics);
    suite_add_tcase(s, tc);
    return s;
}
