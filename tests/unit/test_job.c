/* Suite "job": ct_job_build and the cross-rank analyses on hand-built
 * processes, where the truth is known exactly. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/analysis/analysis.h"
#include "decoder/read/spill.h"
#include "decoder/read/timeline.h"
#include "tests/unit/timeline_builder.h"
#include "decoder/read/job.h"

/* A process of rank `rank` running `n` steps of a kernel then an
 * all-reduce (communicator 7, sequence k), its clock `shift` ns off;
 * `dups` extra all-reduces repeat sequence 1 (not written by NCCL, but a
 * trace can hold anything). */
static void make_proc(struct ct_proc *p, int rank, int n, int64_t shift, int dups)
{
    memset(p, 0, sizeof(*p));
    p->path = strdup("mem");
    p->host = strdup("h");
    p->rank = rank;
    p->pid = 100 + (uint32_t)rank;
    p->cov.processes = 1;
    p->names = malloc(sizeof(*p->names));
    p->names[0] = strdup("gemm");
    p->nnames = 1;
    size_t nn = (size_t)(n + dups);
    p->ops = calloc((size_t)n * 2 + (size_t)dups, sizeof(*p->ops));
    p->nccl = calloc(nn, sizeof(*p->nccl));
    for (int k = 0; k < n + dups; k++) {
        int step = k < n ? k : 1;
        int64_t t0 = 1000000 + (int64_t)step * 100000 + shift + (k >= n ? 10 * (k - n + 1) : 0);
        struct ct_nccl_call *o = &p->nccl[p->nnccl];
        o->host_s = t0 + 40000;
        o->host_e = t0 + 41000;
        o->s = t0 + 50000;
        o->e = t0 + 60000;
        o->comm = 7;
        o->seq = (uint64_t)step;
        o->bytes = 1 << 20;
        o->nranks = 2;
        o->comm_rank = rank;
        o->op = CT_NCCL_OP_ALLREDUCE;
        if (k < n)
            p->ops[p->nops++] = (struct ct_gpu_op){.s = t0,
                                                   .e = t0 + 45000,
                                                   .launch = t0 - 100,
                                                   .stream = 1,
                                                   .nccl = -1,
                                                   .cls = CT_CL_COMPUTE,
                                                   .type = CT_GPU_KERNEL};
        p->ops[p->nops++] = (struct ct_gpu_op){.s = o->s,
                                               .e = o->e,
                                               .launch = o->host_s,
                                               .stream = 2,
                                               .nccl = (int32_t)p->nnccl,
                                               .cls = CT_CL_OTHER,
                                               .type = CT_GPU_KERNEL,
                                               .op = CT_NCCL_OP_ALLREDUCE};
        p->nnccl++;
    }
    /* ops in start order, as extraction leaves them */
    for (size_t i = 1; i < p->nops; i++)
        for (size_t j = i; j > 0 && p->ops[j - 1].s > p->ops[j].s; j--) {
            struct ct_gpu_op t = p->ops[j];
            p->ops[j] = p->ops[j - 1];
            p->ops[j - 1] = t;
        }
}

static void analyze(int n0dups, int64_t shift, struct ct_job *job, struct ct_report *rep)
{
    struct ct_proc *ps = calloc(2, sizeof(*ps));
    make_proc(&ps[0], 0, 40, 0, n0dups);
    make_proc(&ps[1], 1, 40, shift, 0);
    ck_assert_int_eq(ct_job_build(job, ps, 2), 0);
    struct ct_iter_opts io = {0, 0, -1, 0};
    ck_assert_int_eq(ct_report_analyze(job, &io, rep), 0);
}

/* One rank's clock off by 3 ms: the collective ends align it, and the
 * estimated skew between the two is that offset (each moves half way to
 * the per-op median); the residual is 0. */
START_TEST(clock_offset_between_ranks_is_estimated)
{
    struct ct_job job;
    struct ct_report rep;
    analyze(0, 3000000, &job, &rep);
    ck_assert_uint_eq(job.nranks, 2);
    ck_assert_int_eq(job.ranks[0].skew_ns - job.ranks[1].skew_ns, 3000000);
    ck_assert_int_eq(job.ranks[0].residual_ns, 0);
    ck_assert_int_eq(job.ranks[1].residual_ns, 0);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* More ops of one (communicator, sequence) than ranks (a rank repeating a
 * sequence number): the median of a group and the stragglers' lateness
 * take them all without writing past their arrays (caught under ASan),
 * and the clock estimate stays right. */
START_TEST(duplicate_collective_sequence_numbers_are_safe)
{
    struct ct_job job;
    struct ct_report rep;
    analyze(5, 2000000, &job, &rep);
    ck_assert_uint_eq(job.ranks[0].nnccl, 45);
    ck_assert_int_eq(job.ranks[0].skew_ns - job.ranks[1].skew_ns, 2000000);
    ct_report_free(&rep);
    ct_job_free(&job);
}
END_TEST

/* A step's number is what follows its message's last '#', when all of it
 * is a decimal integer; otherwise none (the iteration takes its index). */
START_TEST(step_number_is_the_integer_after_the_last_hash)
{
    ck_assert_int_eq(ct_step_number("ProfilerStep#12"), 12);
    ck_assert_int_eq(ct_step_number("a#b#7"), 7);
    ck_assert_int_eq(ct_step_number("step#-3"), -3);
    ck_assert_int_eq(ct_step_number("ProfilerStep"), CT_STEP_NONE);
    ck_assert_int_eq(ct_step_number("ProfilerStep#"), CT_STEP_NONE);
    ck_assert_int_eq(ct_step_number("ProfilerStep#1x"), CT_STEP_NONE);
    ck_assert_int_eq(ct_step_number(""), CT_STEP_NONE);
    /* 18 digits and more (read by strtoll from 19: its clamp on overflow) */
    ck_assert_int_eq(ct_step_number("s#123456789012345678"), INT64_C(123456789012345678));
    ck_assert_int_eq(ct_step_number("s#1234567890123456789"), INT64_C(1234567890123456789));
    ck_assert_int_eq(ct_step_number("s#99999999999999999999"), INT64_MAX);
    ck_assert_int_eq(ct_step_number("s#00000000000000000000012"), 12);
}
END_TEST

/* Processes without a rank take their parent's (through a grandparent
 * too), matched by pid on the same host only; one with no ranked parent
 * is a rank of its own, numbered after the others; each rank lists its
 * processes in input order. */
START_TEST(processes_without_a_rank_join_their_parents)
{
    struct tb_job b;
    tb_init(&b);
    struct ct_proc *r1 = tb_proc(&b, 1), *r0 = tb_proc(&b, 0);
    struct ct_proc *child = tb_child(&b, r1);
    struct ct_proc *grandchild = tb_child(&b, child);
    struct ct_proc *orphan = tb_proc(&b, -1);
    struct ct_proc *elsewhere = tb_child(&b, r1); /* the same ppid on another host */
    free(elsewhere->host);
    elsewhere->host = strdup("other");
    struct ct_proc *all[] = {r1, r0, child, grandchild, orphan, elsewhere};
    for (size_t i = 0; i < 6; i++)
        tb_kernel(all[i], "k", 1, 10 + 10 * (int64_t)i, 15 + 10 * (int64_t)i, 5);
    uint32_t pid_r1 = r1->pid, pid_child = child->pid, pid_grand = grandchild->pid;
    uint32_t pid_orphan = orphan->pid, pid_else = elsewhere->pid;
    struct ct_job job;
    tb_build(&b, &job);
    ck_assert_uint_eq(job.nranks, 4);
    ck_assert_int_eq(job.ranks[0].rank, 0);
    ck_assert_uint_eq(job.ranks[0].nprocs, 1);
    ck_assert_int_eq(job.ranks[1].rank, 1);
    ck_assert_uint_eq(job.ranks[1].nprocs, 3);
    ck_assert_uint_eq(job.ranks[1].procs[0]->pid, pid_r1);
    ck_assert_uint_eq(job.ranks[1].procs[1]->pid, pid_child);
    ck_assert_uint_eq(job.ranks[1].procs[2]->pid, pid_grand);
    ck_assert_int_eq(job.ranks[2].rank, 2);
    ck_assert_uint_eq(job.ranks[2].procs[0]->pid, pid_orphan);
    ck_assert_int_eq(job.ranks[3].rank, 3);
    ck_assert_uint_eq(job.ranks[3].procs[0]->pid, pid_else);
    ct_job_free(&job);
}
END_TEST

/* A spill streams its ops and launches through pieces of 256 (spill.c):
 * counts on either side of a piece's edge come back exactly, and a spill
 * cut short or with a byte after its frame does not decode. */
START_TEST(a_spill_gives_back_every_op_and_launch)
{
    static const size_t counts[] = {0, 1, 255, 256, 257, 1000};
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        size_t n = counts[c];
        struct ct_proc p;
        memset(&p, 0, sizeof(p));
        struct ct_gpu_op *want = calloc(n ? n : 1, sizeof(*want));
        int64_t *wl = calloc(n ? n : 1, sizeof(*wl));
        p.ops = calloc(n ? n : 1, sizeof(*p.ops));
        p.launches = calloc(n ? n : 1, sizeof(*p.launches));
        for (size_t i = 0; i < n; i++) {
            /* times that go back as well as forth: differences wrap */
            int64_t s = (int64_t)(i * 1000003 % 7919) * 1000 - 5000;
            want[i] = (struct ct_gpu_op){.s = s,
                                         .e = s + (int64_t)i,
                                         .launch = i % 5 ? s - 40 : INT64_MIN,
                                         .stream = (uint32_t)(i % 3),
                                         .name = (uint32_t)i,
                                         .nccl = -1,
                                         .cls = (uint8_t)(i % CT_CL_COUNT),
                                         .type = (uint8_t)(i % 4),
                                         .graph = i % 2,
                                         .gnode = i % 2 ? 0x700000001ull + i : 0};
            wl[i] = s - 40;
        }
        memcpy(p.ops, want, n * sizeof(*want));
        memcpy(p.launches, wl, n * sizeof(*wl));
        p.nops = p.nlaunches = n;
        ck_assert_int_eq(ct_proc_spill(&p), 0);
        ck_assert_ptr_null(p.ops);
        struct ct_gpu_op *ops;
        int64_t *l;
        size_t no, nl;
        ck_assert_int_eq(ct_proc_unspill(&p, &ops, &no, &l, &nl), 0);
        ck_assert_uint_eq(no, n);
        ck_assert_uint_eq(nl, n);
        for (size_t i = 0; i < n; i++) {
            ck_assert_int_eq(ops[i].s, want[i].s);
            ck_assert_int_eq(ops[i].e, want[i].e);
            ck_assert_int_eq(ops[i].launch, want[i].launch);
            ck_assert_uint_eq(ops[i].stream, want[i].stream);
            ck_assert_uint_eq(ops[i].name, want[i].name);
            ck_assert_int_eq(ops[i].nccl, want[i].nccl);
            ck_assert_uint_eq(ops[i].cls, want[i].cls);
            ck_assert_uint_eq(ops[i].type, want[i].type);
            ck_assert_uint_eq(ops[i].graph, want[i].graph);
            ck_assert_uint_eq(ops[i].gnode, want[i].gnode);
            ck_assert_int_eq(l[i], wl[i]);
        }
        free(ops);
        free(l);
        /* cut short, and one byte too many */
        size_t full = p.nspill;
        p.nspill = full - 1;
        ck_assert_int_eq(ct_proc_unspill(&p, &ops, &no, &l, &nl), -EIO);
        ck_assert_ptr_null(ops);
        ck_assert_uint_eq(no, 0);
        unsigned char *longer = malloc(full + 1);
        memcpy(longer, p.spill, full);
        longer[full] = 0;
        free(p.spill);
        p.spill = longer;
        p.nspill = full + 1;
        ck_assert_int_eq(ct_proc_unspill(&p, &ops, &no, &l, &nl), -EIO);
        free(p.spill);
        free(want);
        free(wl);
    }
}
END_TEST

Suite *job_suite(void)
{
    Suite *s = suite_create("job");
    TCase *tc = tcase_create("job");
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, clock_offset_between_ranks_is_estimated);
    tcase_add_test(tc, duplicate_collective_sequence_numbers_are_safe);
    tcase_add_test(tc, step_number_is_the_integer_after_the_last_hash);
    tcase_add_test(tc, processes_without_a_rank_join_their_parents);
    tcase_add_test(tc, a_spill_gives_back_every_op_and_launch);
    suite_add_tcase(s, tc);
    return s;
}
