/*
 * Suites of `cutrace fleet` (docs/fleet.md), each test in its own process:
 *   fleet-store     the SQLite store: a job added once (its run identity),
 *                   schema versions and the migration from version 1, a
 *                   newer store refused, passwords refused on the command
 *                   line and never repeated in a message
 *   fleet-workload  the command signature and fingerprint
 *   fleet-pin       the factor model on hand-built workloads, with the
 *                   values worked out by hand beside each assertion
 * `unit_fleet SUITE` runs one suite.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decoder/compare/fleet.h"
#include "decoder/compare/fleet_pin.h"
#include "decoder/compare/fleet_store.h"
#include "decoder/compare/stats_test.h"

/* ------------------------------------------------------------ helpers */

static char g_dir[256]; /* made by main, removed after the suites */

static const char *tmp_path(const char *name)
{
    static char p[512];
    snprintf(p, sizeof(p), "%s/%s", g_dir, name);
    return p;
}

/* The rows of a job of `ranks` ranks and `iters` iterations of `step`
 * µs each (compute 800, exposed 100, idle 100 per step), as report --rows
 * writes them. */
static char *job_rows(const char *run_id, const char *host, int ranks, int iters, double step)
{
    size_t cap = 1 << 16, o = 0;
    char *b = malloc(cap);
    const char *common = "\"schema\":\"cutrace.rows\",\"version\":2,\"run\":\"/r\","
                         "\"side\":null,\"job\":\"j\",\"run_start_utc\":"
                         "\"2024-05-01T10:00:00.000000Z\",\"gpu\":\"H100\",\"driver\":\"13000\","
                         "\"cuda_version\":\"13.0\",\"nccl_version\":\"2.27.3\","
                         "\"labels\":{\"tag.team\":\"a\\\"b\"}";
    o += (size_t)snprintf(b + o, cap - o,
                          "{%s,\"row\":\"job\",\"rank\":null,\"host\":null,\"iteration\":null,"
                          "\"ranks\":%d,\"iterations\":%d,\"step_p50_us\":%.3f,"
                          "\"goodput_pct\":90,\"downtime_us\":0,\"attempts\":1,"
                          "\"run_id\":\"%s\",\"cutrace_version\":\"0.1.0\","
                          "\"cmdline\":\"python3 train.py --seed 1\"}\n",
                          common, ranks, iters, step, run_id);
    o += (size_t)snprintf(b + o, cap - o,
                          "{%s,\"row\":\"attempt\",\"rank\":null,\"host\":null,"
                          "\"iteration\":null,\"attempt\":0,\"ranks\":%d,\"startup_us\":1000,"
                          "\"productive_us\":%.3f,\"checkpoint_us\":0,\"restore_us\":0,"
                          "\"lost_us\":0,\"hang_us\":0,\"data_stall_us\":0,\"idle_us\":0,"
                          "\"shutdown_us\":0,\"unclassified_us\":0}\n",
                          common, ranks, iters * step);
    for (int r = 0; r < ranks; r++) {
        for (int i = 0; i < iters; i++)
            o += (size_t)snprintf(b + o, cap - o,
                                  "{%s,\"row\":\"iteration\",\"rank\":%d,\"host\":\"%s\","
                                  "\"iteration\":%d,\"start_us\":%.3f,\"duration_us\":%.3f,"
                                  "\"compute_us\":%.3f,\"comm_us\":100,\"memory_us\":0,"
                                  "\"idle_us\":100,\"exposed_comm_us\":100,\"bubble_us\":0}\n",
                                  common, r, host, i, i * step, step, step - 200);
        o += (size_t)snprintf(b + o, cap - o,
                              "{%s,\"row\":\"rank\",\"rank\":%d,\"host\":\"%s\","
                              "\"iteration\":null,\"iterations\":%d,\"compute_us\":%.3f,"
                              "\"data_stall_us\":0,\"checkpoint_stall_us\":0}\n",
                              common, r, host, iters, iters * (step - 200));
    }
    o += (size_t)snprintf(b + o, cap - o,
                          "{%s,\"row\":\"kernel\",\"rank\":null,\"host\":null,"
                          "\"iteration\":null,\"name\":\"gemm\",\"count\":10,\"total_us\":5,"
                          "\"p50_us\":0.5}\n",
                          common);
    ck_assert_uint_lt(o, cap);
    return b;
}

static int add_text(struct ct_fdb *db, const char *text, struct ct_fleet_add_stats *st)
{
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    ck_assert_ptr_nonnull(f);
    char err[512] = "";
    int rc = ct_fleet_add_rows(db, f, "rows", "test", st, err, sizeof(err));
    fclose(f);
    if (rc)
        fprintf(stderr, "add: %s\n", err);
    return rc;
}

static long count(struct ct_fdb *db, const char *sql)
{
    struct ct_fdb_stmt *st;
    char err[256];
    ck_assert_int_eq(ct_fdb_prepare(db, sql, &st, err, sizeof(err)), 0);
    ck_assert_int_eq(ct_fdb_step(st), 1);
    long n = (long)ct_fdb_col_i64(st, 0);
    ct_fdb_finalize(st);
    return n;
}

/* ------------------------------------------------------------ store */

/* The same job added twice (and its run identities given in another
 * order: the identity of a job of two attempts is their sorted set)
 * changes nothing: 1 job, its 2 x 3 iteration rows, once. */
START_TEST(adding_a_job_twice_changes_nothing)
{
    const char *p = tmp_path("twice.db");
    unlink(p);
    struct ct_fdb *db;
    char err[512];
    ck_assert_int_eq(ct_fdb_open(p, CT_FDB_CREATE, &db, err, sizeof(err)), 0);
    char *a = job_rows("runB+runA", "h1", 2, 3, 1000);
    char *b = job_rows("runA+runB", "h1", 2, 3, 1000);
    struct ct_fleet_add_stats st = {0};
    ck_assert_int_eq(add_text(db, a, &st), 0);
    ck_assert_uint_eq(st.added, 1);
    ck_assert_int_eq(add_text(db, b, &st), 0);
    ck_assert_uint_eq(st.added, 1);
    ck_assert_uint_eq(st.present, 1);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM jobs"), 1);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM iterations"), 6);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM ranks"), 2);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM jobs WHERE run_id = 'runA+runB'"), 1);
    /* the label's escaped quote came through: a"b */
    ck_assert_int_eq(count(db, "SELECT count(*) FROM labels WHERE key = 'tag.team' AND value = "
                               "'a\"b'"),
                     1);
    free(a);
    free(b);
    ct_fdb_close(db);
}
END_TEST

/* One op and size run by two libraries (NCCL's AllReduce and NVSHMEM's
 * host collective of the same size) stays two collectives: NVSHMEM's is
 * stored as "nvshmem:AllReduce", as the report and diff name it, and a
 * row without a library (rows before it) is NCCL's as it was. */
START_TEST(a_collective_of_another_library_is_its_own_row)
{
    const char *p = tmp_path("libs.db");
    unlink(p);
    struct ct_fdb *db;
    char err[512];
    ck_assert_int_eq(ct_fdb_open(p, CT_FDB_CREATE, &db, err, sizeof(err)), 0);
    char *a = job_rows("rl", "h1", 2, 3, 1000);
    const char *common = "\"schema\":\"cutrace.rows\",\"version\":2,\"run\":\"/r\","
                         "\"side\":null,\"job\":\"j\",\"rank\":null,\"host\":null,"
                         "\"iteration\":null,\"bytes\":1048576,\"nranks\":2,\"count\":6";
    size_t n = strlen(a), cap = n + 1024;
    a = realloc(a, cap);
    snprintf(a + n, cap - n,
             "{%s,\"row\":\"collective\",\"op\":\"AllReduce\",\"lib\":\"nccl\",\"p50_us\":10}\n"
             "{%s,\"row\":\"collective\",\"op\":\"AllReduce\",\"lib\":\"nvshmem\",\"p50_us\":20}\n"
             "{%s,\"row\":\"collective\",\"op\":\"AllGather\",\"p50_us\":30}\n",
             common, common, common);
    struct ct_fleet_add_stats st = {0};
    ck_assert_int_eq(add_text(db, a, &st), 0);
    free(a);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM collectives WHERE op = 'AllReduce' AND "
                               "p50_us = 10"),
                     1);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM collectives WHERE op = "
                               "'nvshmem:AllReduce' AND p50_us = 20"),
                     1);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM collectives WHERE op = 'AllGather'"), 1);
    ct_fdb_close(db);
}
END_TEST

/* GPU time of the job above, by docs/fleet.md: 2 ranks x (startup 1000 +
 * productive 3000) = 8000 GPU-µs; productive 6000 split: exposed comm
 * 2 x 3 x 100 = 600, in-step idle 600 (nothing moved out of the steps),
 * useful 6000 - 600 - 600 = 4800; start-up 2000. */
START_TEST(gpu_time_is_split_as_documented)
{
    const char *p = tmp_path("split.db");
    unlink(p);
    struct ct_fdb *db;
    char err[512];
    ck_assert_int_eq(ct_fdb_open(p, CT_FDB_CREATE, &db, err, sizeof(err)), 0);
    char *a = job_rows("r1", "h1", 2, 3, 1000);
    struct ct_fleet_add_stats st = {0};
    ck_assert_int_eq(add_text(db, a, &st), 0);
    free(a);
    struct ct_fleet_filter flt = {INT64_MIN, INT64_MAX, NULL};
    struct ct_fleet_jobs js;
    ck_assert_int_eq(ct_fleet_jobs_load(db, &flt, &js, err, sizeof(err)), 0);
    ck_assert_uint_eq(js.n, 1);
    const struct ct_fleet_job *j = &js.j[0];
    ck_assert_double_eq_tol(j->gpu_us, 8000, 1e-9);
    ck_assert_double_eq_tol(j->part[CT_FP_STARTUP], 2000, 1e-9);
    ck_assert_double_eq_tol(j->part[CT_FP_COMM], 600, 1e-9);
    ck_assert_double_eq_tol(j->part[CT_FP_IDLE], 600, 1e-9);
    ck_assert_double_eq_tol(j->part[CT_FP_USEFUL], 4800, 1e-9);
    ck_assert_double_eq_tol(j->part[CT_FP_THROTTLE], 0, 1e-9);
    ck_assert_int_eq(j->throttle_known, 0); /* no health rows */
    /* per-step figures: means over (rank, iteration) */
    ck_assert_double_eq_tol(j->step_mean, 1000, 1e-9);
    ck_assert_double_eq_tol(j->compute_step, 800, 1e-9);
    ck_assert_str_eq(j->layout, "2x2");
    ct_fleet_jobs_free(&js);
    ct_fdb_close(db);
}
END_TEST

/* A version-1 store (made with version 1's DDL) is migrated on open: its
 * job stays, the health table and the version-2 columns appear (NULL for
 * the old job), the version reads 2. */
START_TEST(a_version_1_store_is_migrated)
{
    const char *p = tmp_path("v1.db");
    unlink(p);
    struct ct_fdb *db;
    char err[512];
    ck_assert_int_eq(ct_fdb_open(p, CT_FDB_CREATE | CT_FDB_RAW, &db, err, sizeof(err)), 0);
    ck_assert_int_eq(ct_fdb_schema_version(db, err, sizeof(err)), 0);
    ck_assert_int_eq(ct_fdb_create_schema(db, 1, err, sizeof(err)), 0);
    ck_assert_int_eq(ct_fdb_schema_version(db, err, sizeof(err)), 1);
    ck_assert_int_eq(ct_fdb_exec(db,
                                 "INSERT INTO jobs (run_id, workload, step_p50_us) VALUES "
                                 "('old', 'w-1', 1000)",
                                 err, sizeof(err)),
                     0);
    /* version 1 has no health table */
    ck_assert_int_ne(ct_fdb_exec(db, "SELECT count(*) FROM health", err, sizeof(err)), 0);
    ct_fdb_close(db);
    ck_assert_int_eq(ct_fdb_open(p, 0, &db, err, sizeof(err)), 0);
    ck_assert_int_eq(ct_fdb_schema_version(db, err, sizeof(err)), CT_FLEET_SCHEMA_VERSION);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM health"), 0);
    ck_assert_int_eq(count(db, "SELECT count(*) FROM jobs WHERE run_id = 'old' AND "
                               "wait_step_us IS NULL"),
                     1);
    ct_fdb_close(db);
}
END_TEST

START_TEST(a_newer_store_is_refused)
{
    const char *p = tmp_path("v99.db");
    unlink(p);
    struct ct_fdb *db;
    char err[512];
    ck_assert_int_eq(ct_fdb_open(p, CT_FDB_CREATE, &db, err, sizeof(err)), 0);
    ck_assert_int_eq(ct_fdb_exec(db,
                                 "UPDATE fleet_meta SET value = '99' WHERE key = "
                                 "'schema_version'",
                                 err, sizeof(err)),
                     0);
    ct_fdb_close(db);
    ck_assert_int_eq(ct_fdb_open(p, 0, &db, err, sizeof(err)), -EPROTO);
    ck_assert_ptr_nonnull(strstr(err, "schema version 99"));
    ck_assert_ptr_nonnull(strstr(err, "newer"));
}
END_TEST

START_TEST(a_missing_store_is_not_made_by_report)
{
    struct ct_fdb *db;
    char err[512];
    const char *p = tmp_path("none.db");
    unlink(p);
    ck_assert_int_eq(ct_fdb_open(p, 0, &db, err, sizeof(err)), -ENOENT);
    ck_assert_int_ne(access(p, F_OK), 0);
}
END_TEST

/* A password on the command line is refused, whatever form it takes,
 * and the message says how to give it instead without repeating it. */
START_TEST(a_password_on_the_command_line_is_refused)
{
    static const char *const bad[] = {
        "postgresql://fleet:s3cr3t-pw@db.example/fleet",
        "postgres://fleet:s3cr3t-pw@/fleet?host=/tmp/sock",
        "postgresql://fleet@db.example/fleet?password=s3cr3t-pw",
        "postgresql://db.example/fleet?sslmode=require&password=s3cr3t-pw",
    };
    char err[1024];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_int_eq(ct_fdb_check_credentials(bad[i], "--db", err, sizeof(err)), -EACCES);
        ck_assert_ptr_null(strstr(err, "s3cr3t"));
        ck_assert_ptr_nonnull(strstr(err, "PGPASSFILE"));
        ck_assert_ptr_nonnull(strstr(err, "PGSERVICE"));
        struct ct_fdb *db;
        ck_assert_int_eq(ct_fdb_open(bad[i], 0, &db, err, sizeof(err)), -EACCES);
        ck_assert_ptr_null(strstr(err, "s3cr3t"));
    }
    ck_assert_int_eq(ct_fdb_check_credentials("postgresql://fleet@db.example:5432/fleet", "--db",
                                              err, sizeof(err)),
                     0);
    ck_assert_int_eq(ct_fdb_check_credentials("postgresql:///fleet?host=/tmp/x&user=fleet", "--db",
                                              err, sizeof(err)),
                     0);
}
END_TEST

/* ------------------------------------------------------------ workload */

START_TEST(command_signature_leaves_out_what_changes_between_runs)
{
    char cmd[512];
    ct_fleet_command_signature("/opt/venv/bin/python3 -u /home/a/src/train.py --model 7b "
                               "--seed 3 --output=/runs/2024-05-01 --master_port 29500 "
                               "--data=/mnt/ds/shards --lr 3e-4",
                               cmd, sizeof(cmd));
    ck_assert_str_eq(cmd, "python3 -u train.py --model 7b --data=shards --lr 3e-4");
    char other[512];
    ct_fleet_command_signature("python3 train.py --model 7b --seed 9 --node_rank 2 "
                               "--master_addr 10.0.0.1",
                               other, sizeof(other));
    ck_assert_str_eq(other, "python3 train.py --model 7b");
    char fa[32], fb[32], fc[32], fd[32];
    ct_fleet_fingerprint(other, "16x8", fa, sizeof(fa));
    ct_fleet_fingerprint(other, "16x8", fb, sizeof(fb));
    ct_fleet_fingerprint(other, "32x8", fc, sizeof(fc));
    ct_fleet_fingerprint("python3 train.py --model 13b", "16x8", fd, sizeof(fd));
    ck_assert_str_eq(fa, fb);
    ck_assert_str_ne(fa, fc); /* another rank layout */
    ck_assert_str_ne(fa, fd); /* another model */
    ck_assert_int_eq((int)strlen(fa), 12);
    ck_assert_int_eq(strncmp(fa, "w-", 2), 0);
}
END_TEST

/* Jobs of one fingerprint: one that shares 3 of 5 kernel names with the
 * first (Jaccard 0.6 >= 0.5: a renamed GEMM) stays its workload, one that
 * shares none is another ("/k2"), and a job of another fingerprint keeps
 * its own. */
START_TEST(kernel_mix_splits_a_fingerprint)
{
    static const char *const mix[4][4] = {
        {"a", "b", "c", "d"}, {"a", "b", "c", "e"}, {"x", "y", "z", NULL}, {"x", "y", "z", NULL}};
    struct ct_fleet_jobs js = {0};
    js.j = calloc(4, sizeof(*js.j));
    js.n = 4;
    for (int i = 0; i < 4; i++) {
        struct ct_fleet_job *j = &js.j[i];
        j->run_id = strdup("r");
        j->workload = strdup(i < 3 ? "w-1" : "w-2");
        j->kernels = calloc(4, sizeof(char *));
        for (int k = 0; k < 4 && mix[i][k]; k++)
            j->kernels[j->nkernels++] = strdup(mix[i][k]);
    }
    ck_assert_int_eq(ct_fleet_workloads_split(&js), 0);
    ck_assert_str_eq(js.j[0].workload, "w-1");
    ck_assert_str_eq(js.j[1].workload, "w-1");
    ck_assert_str_eq(js.j[2].workload, "w-1/k2");
    ck_assert_str_eq(js.j[3].workload, "w-2");
    ct_fleet_jobs_free(&js);
}
END_TEST

/* ------------------------------------------------------------ pin */

/* A job of workload w with step `step` µs and factor values k=v... */
static void job(struct ct_fleet_jobs *js, const char *w, double step, int64_t t, int nfv, ...)
{
    js->j = realloc(js->j, (js->n + 1) * sizeof(*js->j));
    struct ct_fleet_job *j = &js->j[js->n];
    memset(j, 0, sizeof(*j));
    char id[32];
    snprintf(id, sizeof(id), "run%03zu", js->n);
    js->n++;
    j->run_id = strdup(id);
    j->workload = strdup(w);
    j->step_p50 = j->step_mean = step;
    j->compute_step = step * 0.8;
    j->exposed_step = step * 0.1;
    j->idle_step = step * 0.1;
    j->wait_step = 0;
    j->data_step = j->ckpt_step = 0;
    j->start_us = t;
    j->gpu_us = NAN;
    j->fv = calloc((size_t)nfv, sizeof(*j->fv));
    j->host_ranks = calloc((size_t)nfv, sizeof(*j->host_ranks));
    va_list ap;
    va_start(ap, nfv);
    for (int i = 0; i < nfv; i++) {
        const char *k = va_arg(ap, const char *), *v = va_arg(ap, const char *);
        j->fv[j->nfv++] = (struct ct_fleet_kv){strdup(k), strdup(v)};
    }
    va_end(ap);
}

static struct ct_fleet_explain *explain(const struct ct_fleet_jobs *js)
{
    struct ct_fleet_explain_opts o = {
        .alpha = 0.05, .min_effect = 0.02, .seed = 1, .perms = 199, .min_jobs = 8};
    struct ct_fleet_explain *x;
    char err[256];
    ck_assert_int_eq(ct_fleet_explain_run(js, &o, &x, err, sizeof(err)), 0);
    return x;
}

/*
 * 20 jobs, 4 on host hX 10 % slower, 16 on hA; each group's log steps are
 * its mean +- 0.005, half each way, so least squares (and Huber's
 * estimate: every |residual| is the MAD, all inside 1.345 scales) give
 * exactly beta = log 1.1 = 0.0953102. Huber's standard error is then the
 * classic one, sigma * sqrt(1/4 + 1/16) with sigma^2 = 20 * 0.005^2 / 18:
 * 0.0029463. The sandwich with HC3 (each job's residual over 1 - its
 * leverage, 1/4 in the small group, 1/16 in the other) gives
 * 0.005 * sqrt(4 / 0.75^2 / 16 + 16 / (15/16)^2 / 256) = 0.0035901; the
 * larger is used. hX and hA are complements: one candidate (m = 1), hA
 * confounded ("never with"); R = 1, so the interval is Student's 95 %
 * with 18 df: 0.0953102 +- 2.100922 * 0.0035901.
 */
START_TEST(a_slow_host_is_pinned_with_its_interval)
{
    struct ct_fleet_jobs js = {0};
    for (int i = 0; i < 20; i++) {
        int slow = i % 5 == 0;
        double e = (i / 5) % 2 ? 0.005 : -0.005;
        if (!slow)
            e = i % 2 ? 0.005 : -0.005;
        job(&js, "w", 1000 * (slow ? 1.1 : 1.0) * exp(e), 1000 + i, 2, "host", slow ? "hX" : "hA",
            "config.clock_policy", slow ? "power_capped" : "default");
    }
    struct ct_fleet_explain *x = explain(&js);
    ck_assert_uint_eq(x->m, 1);
    ck_assert_uint_eq(x->nf, 1);
    const struct ct_fx_finding *f = &x->f[0];
    /* the host is named first; the policy it always had and the other
     * host are its confounders */
    ck_assert_str_eq(f->factor, "host");
    ck_assert_str_eq(f->value, "hX");
    ck_assert_ptr_null(f->baseline);
    ck_assert_uint_eq(f->nalias, 2);
    int policy = 0, other = 0;
    for (size_t a = 0; a < f->nalias; a++) {
        policy |= !strcmp(f->aliases[a], "=config.clock_policy=power_capped");
        other |= !strcmp(f->aliases[a], "!host=hA");
    }
    ck_assert(policy && other);
    ck_assert_uint_eq(f->n_with, 4);
    double classic = sqrt(20 * 0.005 * 0.005 / 18) * sqrt(1.0 / 4 + 1.0 / 16);
    ck_assert_double_eq_tol(classic, 0.0029463, 1e-7);
    double se = 0.005 * sqrt(4 / (0.75 * 0.75) / 16 + 16 / (15.0 / 16 * 15.0 / 16) / 256);
    ck_assert_double_eq_tol(se, 0.0035901, 1e-7);
    ck_assert_double_eq_tol(f->beta, log(1.1), 1e-9);
    ck_assert_double_eq_tol(f->se, se, 1e-9);
    ck_assert_double_eq_tol(f->df, 18, 1e-12);
    ck_assert_double_eq_tol(x->level, 0.95, 1e-12);
    double t = ct_t_q2(0.05, 18);
    ck_assert_double_eq_tol(t, 2.100922, 1e-6);
    ck_assert_double_eq_tol(f->lo_pct, 100 * (exp(log(1.1) - t * se) - 1), 1e-6);
    ck_assert_double_eq_tol(f->hi_pct, 100 * (exp(log(1.1) + t * se) - 1), 1e-6);
    ck_assert_double_eq_tol(f->effect_pct, 10, 1e-9);
    ck_assert_int_eq(f->change, 2);
    /* compute is 80 % of each job's step: it carries 80 % of the change */
    ck_assert_int_eq(f->carrier, CT_FX_COMPUTE);
    ck_assert_double_eq_tol(f->part[CT_FX_COMPUTE].share, 0.8, 1e-9);
    ct_fleet_explain_free(x);
    ct_fleet_jobs_free(&js);
}
END_TEST

/*
 * A factor that only looks slow because it ran with a slow one: tag
 * team=t1 is on 4 of the 5 slow-host jobs and on 4 others. On its own it
 * would look 4 % slower (8 jobs: half of them on the slow host); in the
 * model with the host it has no effect and does not enter.
 */
START_TEST(a_factor_that_ran_with_the_slow_one_is_not_pinned)
{
    struct ct_fleet_jobs js = {0};
    for (int i = 0; i < 24; i++) {
        int slow = i < 5;
        int team = i < 4 || (i >= 10 && i < 14);
        double e = 0.004 * ((i * 7) % 5 - 2) / 2.0;
        job(&js, "w", 1000 * (slow ? 1.1 : 1.0) * exp(e), 1000 + i, 2, "host", slow ? "hX" : "hA",
            "tag.team", team ? "t1" : "t0");
    }
    struct ct_fleet_explain *x = explain(&js);
    ck_assert_uint_eq(x->nf, 1);
    ck_assert_str_eq(x->f[0].factor, "host");
    ct_fleet_explain_free(x);
    ct_fleet_jobs_free(&js);
}
END_TEST

/* A host that runs every job of a slow workload and none of a fast one is
 * never compared across them: within each workload it does not vary, so
 * nothing is pinned (across workloads it would look 2x slower). */
START_TEST(factors_are_compared_within_workloads_only)
{
    struct ct_fleet_jobs js = {0};
    for (int i = 0; i < 20; i++) {
        int big = i % 2;
        double e = 0.003 * ((i * 3) % 7 - 3) / 3.0;
        job(&js, big ? "w-big" : "w-small", (big ? 2000 : 1000) * exp(e), 1000 + i, 1, "host",
            big ? "hY" : "hZ");
    }
    struct ct_fleet_explain *x = explain(&js);
    ck_assert_uint_eq(x->m, 0);
    ck_assert_uint_eq(x->nf, 0);
    ct_fleet_explain_free(x);
    ct_fleet_jobs_free(&js);
}
END_TEST

/* 24 jobs in run-start order, the driver upgraded from the 13th on and
 * the step 6 % slower from there: a change point before job 13 (index
 * 12) naming the driver, and the driver pinned. */
START_TEST(a_change_point_names_the_factor_that_changed)
{
    struct ct_fleet_jobs js = {0};
    for (int i = 0; i < 24; i++) {
        double e = 0.004 * ((i * 5) % 9 - 4) / 4.0;
        job(&js, "w", 1000 * (i >= 12 ? 1.06 : 1.0) * exp(e), 1000000 * (int64_t)i, 1, "driver",
            i >= 12 ? "560" : "550");
    }
    struct ct_fleet_explain *x = explain(&js);
    ck_assert_uint_eq(x->nc, 1);
    ck_assert_uint_eq(x->c[0].at, 12);
    ck_assert_uint_eq(x->c[0].nchanged, 1);
    ck_assert_str_eq(x->c[0].changed[0], "driver: 550 -> 560");
    ck_assert_double_eq_tol(x->c[0].effect_pct, 6, 0.5);
    ck_assert_uint_eq(x->nf, 1);
    ck_assert_str_eq(x->f[0].factor, "driver");
    ck_assert_str_eq(x->f[0].baseline, "550");
    ct_fleet_explain_free(x);
    ct_fleet_jobs_free(&js);
}
END_TEST

/* No effect anywhere (seeded normal noise of 2 %, six factors of two or
 * three values): nothing is pinned and no change point is found. */
START_TEST(a_fleet_without_effects_pins_nothing)
{
    struct ct_fleet_jobs js = {0};
    uint64_t s = 42;
    static const char *const hosts[] = {"h0", "h1", "h2", "h3", "h4", "h5"};
    for (int i = 0; i < 60; i++) {
        double u1 = ((double)(ct_rng_next(&s) >> 11) + 0.5) / 9007199254740992.0;
        double u2 = ((double)(ct_rng_next(&s) >> 11) + 0.5) / 9007199254740992.0;
        double z = sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
        job(&js, "w", 1000 * exp(0.02 * z), 1000000 * (int64_t)i, 4, "host",
            hosts[ct_rng_next(&s) % 6], "nccl_version", ct_rng_next(&s) % 2 ? "2.27" : "2.26",
            "tag.team", ct_rng_next(&s) % 3 ? "a" : "b", "driver", i < 30 ? "550" : "560");
    }
    struct ct_fleet_explain *x = explain(&js);
    ck_assert_uint_ge(x->m, 8);
    ck_assert_uint_eq(x->nf, 0);
    ck_assert_uint_eq(x->nc, 0);
    ct_fleet_explain_free(x);
    ct_fleet_jobs_free(&js);
}
END_TEST

/* ------------------------------------------------------------ runner */

static Suite *store_suite(void)
{
    Suite *s = suite_create("fleet-store");
    TCase *t = tcase_create("store");
    tcase_set_timeout(t, 30);
    tcase_add_test(t, adding_a_job_twice_changes_nothing);
    tcase_add_test(t, a_collective_of_another_library_is_its_own_row);
    tcase_add_test(t, gpu_time_is_split_as_documented);
    tcase_add_test(t, a_version_1_store_is_migrated);
    tcase_add_test(t, a_newer_store_is_refused);
    tcase_add_test(t, a_missing_store_is_not_made_by_report);
    tcase_add_test(t, a_password_on_the_command_line_is_refused);
    suite_add_tcase(s, t);
    return s;
}

static Suite *workload_suite(void)
{
    Suite *s = suite_create("fleet-workload");
    TCase *t = tcase_create("workload");
    tcase_set_timeout(t, 10);
    tcase_add_test(t, command_signature_leaves_out_what_changes_between_runs);
    tcase_add_test(t, kernel_mix_splits_a_fingerprint);
    suite_add_tcase(s, t);
    return s;
}

static Suite *pin_suite(void)
{
    Suite *s = suite_create("fleet-pin");
    TCase *t = tcase_create("pin");
    tcase_set_timeout(t, 30);
    tcase_add_test(t, a_slow_host_is_pinned_with_its_interval);
    tcase_add_test(t, a_factor_that_ran_with_the_slow_one_is_not_pinned);
    tcase_add_test(t, factors_are_compared_within_workloads_only);
    tcase_add_test(t, a_change_point_names_the_factor_that_changed);
    tcase_add_test(t, a_fleet_without_effects_pins_nothing);
    suite_add_tcase(s, t);
    return s;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        Suite *(*make)(void);
    } all[] = {{"store", store_suite}, {"workload", workload_suite}, {"pin", pin_suite}};
    SRunner *sr = NULL;
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        if (argc > 1 && strcmp(argv[1], all[i].name))
            continue;
        if (!sr)
            sr = srunner_create(all[i].make());
        else
            srunner_add_suite(sr, all[i].make());
    }
    if (!sr) {
        fprintf(stderr, "unit_fleet: unknown suite '%s' (store, workload, pin)\n", argv[1]);
        return 2;
    }
    snprintf(g_dir, sizeof(g_dir), "/tmp/ct-fleet-test-XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("unit_fleet: mkdtemp");
        return 1;
    }
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "unit_fleet: could not remove %s\n", g_dir);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
