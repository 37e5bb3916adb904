/*
 * The store's jobs read back for `fleet report` and `fleet explain`: each
 * job's figures, its factor values (host, GPU model, driver, CUDA, NCCL and
 * cutrace versions, labels), its kernel mix and its main collective, in
 * run-start order, with workloads resolved (fleet_workload.c). Reads only
 * the jobs, labels, ranks, kernels and collectives tables: never a job's
 * iterations.
 */
#include "decoder/compare/fleet.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder/compare/fleet_store.h"

const char *ct_fleet_part_name(int part)
{
    static const char *const n[CT_FP_N] = {"useful",     "startup",    "restarts",
                                           "checkpoint", "data_stall", "exposed_comm",
                                           "stragglers", "throttling", "idle"};
    return part >= 0 && part < CT_FP_N ? n[part] : "?";
}

const char *ct_fleet_part_title(int part)
{
    static const char *const n[CT_FP_N] = {"useful work", "start-up",    "restarts and lost work",
                                           "checkpoint",  "data stalls", "exposed communication",
                                           "stragglers",  "throttling",  "idle"};
    return part >= 0 && part < CT_FP_N ? n[part] : "?";
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static void job_free(struct ct_fleet_job *j)
{
    free(j->run_id);
    free(j->job);
    free(j->workload);
    free(j->layout);
    free(j->cmd);
    free(j->start_utc);
    for (size_t i = 0; i < j->nfv; i++) {
        free(j->fv[i].key);
        free(j->fv[i].value);
    }
    free(j->fv);
    free(j->host_ranks);
    free(j->host_thr);
    free(j->coll);
    for (size_t i = 0; i < j->nkernels; i++)
        free(j->kernels[i]);
    free(j->kernels);
}

void ct_fleet_jobs_free(struct ct_fleet_jobs *js)
{
    for (size_t i = 0; i < js->n; i++)
        job_free(&js->j[i]);
    free(js->j);
    memset(js, 0, sizeof(*js));
}

static int add_fv(struct ct_fleet_job *j, const char *k, const char *v, int64_t ranks)
{
    for (size_t i = 0; i < j->nfv; i++)
        if (!strcmp(j->fv[i].key, k) && !strcmp(j->fv[i].value, v))
            return 0;
    struct ct_fleet_kv *x = realloc(j->fv, (j->nfv + 1) * sizeof(*x));
    if (!x)
        return -ENOMEM;
    j->fv = x;
    int64_t *hr = realloc(j->host_ranks, (j->nfv + 1) * sizeof(*hr));
    if (!hr)
        return -ENOMEM;
    j->host_ranks = hr;
    char *kk = strdup(k), *vv = strdup(v);
    if (!kk || !vv) {
        free(kk);
        free(vv);
        return -ENOMEM;
    }
    j->fv[j->nfv] = (struct ct_fleet_kv){kk, vv};
    j->host_ranks[j->nfv] = ranks;
    j->nfv++;
    return 0;
}

/* A metadata value that holds several ('+'-joined: traces that disagree)
 * as that many values of the factor. */
static int add_split(struct ct_fleet_job *j, const char *k, const char *v)
{
    if (!v)
        return 0;
    char *c = strdup(v);
    if (!c)
        return -ENOMEM;
    int rc = 0;
    for (char *save, *t = strtok_r(c, "+", &save); t && !rc; t = strtok_r(NULL, "+", &save))
        rc = add_fv(j, k, t, 0);
    free(c);
    return rc;
}

struct idx {
    const char *id;
    size_t i;
};

static int cmp_idx(const void *x, const void *y)
{
    return strcmp(((const struct idx *)x)->id, ((const struct idx *)y)->id);
}

static struct ct_fleet_job *find(struct idx *ix, size_t n, struct ct_fleet_jobs *js, const char *id)
{
    if (!id)
        return NULL;
    struct idx key = {id, 0};
    struct idx *h = bsearch(&key, ix, n, sizeof(*ix), cmp_idx);
    return h ? &js->j[h->i] : NULL;
}

static int query(struct ct_fdb *db, const char *sql, struct ct_fdb_stmt **st, char *err,
                 size_t errlen)
{
    return ct_fdb_prepare(db, sql, st, err, errlen);
}

static int step_err(struct ct_fdb *db, int rc, char *err, size_t errlen)
{
    if (rc < 0)
        snprintf(err, errlen, "%s", ct_fdb_errmsg(db));
    return rc < 0 ? rc : 0;
}

static int cmp_name(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/*
 * Throttling (docs/fleet.md "GPU time"): a rank whose clock a slowing
 * reason held (throttled_pct > 0) lost compute_us * (1 - mean clock /
 * unthrottled clock) of its compute, where the unthrottled clock is the
 * highest SM clock any rank of the same GPU model reached in the store
 * (a host capped for its whole life never shows its own). Scaled to the
 * steps kept, capped at the job's useful work, and taken out of it. Jobs
 * without health counters keep it in useful work (throttle_known 0).
 */
static int throttling(struct ct_fdb *db, struct idx *ix, struct ct_fleet_jobs *js, char *err,
                      size_t errlen)
{
    struct ct_fdb_stmt *st;
    char **gpu = NULL;
    double *nom = NULL, *lost = NULL;
    size_t ng = 0;
    int rc = query(db,
                   "SELECT j.gpu, max(h.sm_clock_max_mhz) FROM health h JOIN jobs j ON "
                   "j.run_id = h.run_id GROUP BY j.gpu",
                   &st, err, errlen);
    if (rc)
        return rc;
    while ((rc = ct_fdb_step(st)) == 1) {
        const char *g = ct_fdb_col_text(st, 0);
        char **x = realloc(gpu, (ng + 1) * sizeof(*x));
        double *y = realloc(nom, (ng + 1) * sizeof(*y));
        if (x)
            gpu = x;
        if (y)
            nom = y;
        if (!x || !y || !(gpu[ng] = strdup(g ? g : ""))) {
            rc = -ENOMEM;
            break;
        }
        nom[ng++] = ct_fdb_col_double(st, 1);
    }
    ct_fdb_finalize(st);
    if ((rc = step_err(db, rc, err, errlen)))
        goto out;
    if (!(lost = calloc(js->n ? js->n : 1, sizeof(*lost)))) {
        rc = -ENOMEM;
        goto out;
    }
    /* ordered by rank within a job: its sum is added in one order on
     * both back ends */
    if ((rc = query(db,
                    "SELECT h.run_id, h.sm_clock_mhz, h.throttled_pct, r.compute_us, j.gpu, h.host "
                    "FROM health h JOIN ranks r ON r.run_id = h.run_id AND r.rank = h.rank "
                    "JOIN jobs j ON j.run_id = h.run_id ORDER BY h.run_id, h.rank",
                    &st, err, errlen)))
        goto out;
    while ((rc = ct_fdb_step(st)) == 1) {
        struct ct_fleet_job *j = find(ix, js->n, js, ct_fdb_col_text(st, 0));
        if (!j)
            continue;
        j->throttle_known = 1;
        double m = ct_fdb_col_double(st, 1), thr = ct_fdb_col_double(st, 2);
        double c = ct_fdb_col_double(st, 3), f = NAN;
        const char *g = ct_fdb_col_text(st, 4);
        for (size_t k = 0; k < ng; k++)
            if (!strcmp(gpu[k], g ? g : ""))
                f = nom[k];
        if (!(thr > 0 && m > 0 && f > m && c > 0))
            continue;
        double share = 1 - m / f;
        share = share < thr / 100 ? share : thr / 100;
        lost[j - js->j] += c * share;
        /* the host it was lost on, for report --by host */
        const char *h = ct_fdb_col_text(st, 5);
        if (!j->host_thr && j->nfv && !(j->host_thr = calloc(j->nfv, sizeof(double)))) {
            rc = -ENOMEM;
            break;
        }
        for (size_t k = 0; h && k < j->nfv; k++)
            if (!strcmp(j->fv[k].key, "host") && !strcmp(j->fv[k].value, h))
                j->host_thr[k] += c * share;
    }
    ct_fdb_finalize(st);
    if ((rc = step_err(db, rc, err, errlen)))
        goto out;
    for (size_t i = 0; i < js->n; i++) {
        struct ct_fleet_job *j = &js->j[i];
        if (!isfinite(j->gpu_us) || !j->throttle_known)
            continue;
        double th = lost[i] * (isfinite(j->kept_share) ? j->kept_share : 1);
        double u = j->part[CT_FP_USEFUL];
        th = th < u ? th : u > 0 ? u : 0;
        j->part[CT_FP_THROTTLE] = th;
        j->part[CT_FP_USEFUL] = u - th;
        for (size_t k = 0; j->host_thr && k < j->nfv; k++)
            j->host_thr[k] = lost[i] > 0 ? j->host_thr[k] * th / lost[i] : 0;
    }
out:
    for (size_t k = 0; k < ng; k++)
        free(gpu[k]);
    free(gpu);
    free(nom);
    free(lost);
    return rc;
}

/* A job's factor values by (key, value), their host ranks alongside. */
static void sort_fv(struct ct_fleet_job *j)
{
    for (size_t i = 1; i < j->nfv; i++)
        for (size_t k = i; k > 0; k--) {
            struct ct_fleet_kv *a = &j->fv[k - 1], *b = &j->fv[k];
            int c = strcmp(a->key, b->key);
            if (c < 0 || (!c && strcmp(a->value, b->value) <= 0))
                break;
            struct ct_fleet_kv t = *a;
            *a = *b;
            *b = t;
            int64_t h = j->host_ranks[k - 1];
            j->host_ranks[k - 1] = j->host_ranks[k];
            j->host_ranks[k] = h;
            if (j->host_thr) {
                double d = j->host_thr[k - 1];
                j->host_thr[k - 1] = j->host_thr[k];
                j->host_thr[k] = d;
            }
        }
}

/* Run-start order (jobs without one last), then run identity. */
static int cmp_job(const void *x, const void *y)
{
    const struct ct_fleet_job *a = x, *b = y;
    int na = a->start_us == INT64_MIN, nb = b->start_us == INT64_MIN;
    if (na != nb)
        return na - nb;
    if (a->start_us != b->start_us)
        return a->start_us < b->start_us ? -1 : 1;
    return strcmp(a->run_id, b->run_id);
}

int ct_fleet_jobs_load(struct ct_fdb *db, const struct ct_fleet_filter *flt,
                       struct ct_fleet_jobs *js, char *err, size_t errlen)
{
    memset(js, 0, sizeof(*js));
    struct ct_fdb_stmt *st = NULL;
    struct idx *ix = NULL;
    int rc =
        query(db,
              "SELECT run_id, job, workload, layout, workload_cmd, run_start_utc, "
              "run_start_us, ranks, iterations, gpu, driver, cuda_version, nccl_version, "
              "cutrace_version, step_p50_us, step_mean_us, compute_step_us, "
              "exposed_comm_step_us, idle_step_us, data_stall_step_us, checkpoint_step_us, "
              "goodput_pct, gpu_us, useful_us, startup_us, restart_us, checkpoint_us, "
              "data_stall_us, comm_part_us, straggler_us, kept_share, idle_part_us, wait_step_us "
              "FROM jobs WHERE (run_start_us >= $1 OR $2 = 0) AND (run_start_us < $3 "
              "OR $4 = 0) ORDER BY run_start_us IS NULL, run_start_us, run_id",
              &st, err, errlen);
    if (rc)
        return rc;
    int has_since = flt && flt->since_us != INT64_MIN,
        has_until = flt && flt->until_us != INT64_MAX;
    ct_fdb_bind_i64(st, 1, has_since ? flt->since_us : 0);
    ct_fdb_bind_i64(st, 2, has_since);
    ct_fdb_bind_i64(st, 3, has_until ? flt->until_us : 0);
    ct_fdb_bind_i64(st, 4, has_until);
    size_t cap = 0;
    while ((rc = ct_fdb_step(st)) == 1) {
        if (js->n == cap) {
            cap = cap ? cap * 2 : 256;
            struct ct_fleet_job *x = realloc(js->j, cap * sizeof(*x));
            if (!x) {
                rc = -ENOMEM;
                break;
            }
            js->j = x;
        }
        struct ct_fleet_job *j = &js->j[js->n++];
        memset(j, 0, sizeof(*j));
        j->run_id = dup_or_null(ct_fdb_col_text(st, 0));
        j->job = dup_or_null(ct_fdb_col_text(st, 1));
        j->workload = dup_or_null(ct_fdb_col_text(st, 2));
        j->layout = dup_or_null(ct_fdb_col_text(st, 3));
        j->cmd = dup_or_null(ct_fdb_col_text(st, 4));
        j->start_utc = dup_or_null(ct_fdb_col_text(st, 5));
        j->start_us = ct_fdb_col_i64(st, 6);
        j->ranks = ct_fdb_col_i64(st, 7);
        j->iterations = ct_fdb_col_i64(st, 8);
        if (!j->run_id || !j->workload) {
            rc = j->run_id ? -EPROTO : -ENOMEM;
            snprintf(err, errlen, "a job without %s in the store",
                     j->run_id ? "a workload" : "memory");
            break;
        }
        static const char *const fk[] = {"gpu", "driver", "cuda_version", "nccl_version",
                                         "cutrace_version"};
        int e = 0;
        for (int k = 0; k < 5 && !e; k++)
            e = add_split(j, fk[k], ct_fdb_col_text(st, 9 + k));
        j->step_p50 = ct_fdb_col_double(st, 14);
        j->step_mean = ct_fdb_col_double(st, 15);
        j->compute_step = ct_fdb_col_double(st, 16);
        j->exposed_step = ct_fdb_col_double(st, 17);
        j->idle_step = ct_fdb_col_double(st, 18);
        j->data_step = ct_fdb_col_double(st, 19);
        j->ckpt_step = ct_fdb_col_double(st, 20);
        j->goodput_pct = ct_fdb_col_double(st, 21);
        j->gpu_us = ct_fdb_col_double(st, 22);
        static const int order[] = {CT_FP_USEFUL, CT_FP_STARTUP, CT_FP_RESTART,   CT_FP_CHECKPOINT,
                                    CT_FP_DATA,   CT_FP_COMM,    CT_FP_STRAGGLER, -1,
                                    CT_FP_IDLE};
        for (int k = 0; k < CT_FP_N; k++)
            if (order[k] >= 0)
                j->part[order[k]] = ct_fdb_col_double(st, 23 + k);
        j->kept_share = ct_fdb_col_double(st, 30);
        j->wait_step = ct_fdb_col_double(st, 32);
        j->part[CT_FP_THROTTLE] = isfinite(j->gpu_us) ? 0 : NAN;
        if (!isfinite(j->gpu_us))
            js->without_goodput++;
        if (e) {
            rc = e;
            break;
        }
    }
    ct_fdb_finalize(st);
    st = NULL;
    if ((rc = step_err(db, rc, err, errlen)))
        goto fail;
    /* the tables below are read whole and matched by run identity */
    ix = malloc((js->n ? js->n : 1) * sizeof(*ix));
    if (!ix) {
        rc = -ENOMEM;
        goto fail;
    }
    for (size_t i = 0; i < js->n; i++)
        ix[i] = (struct idx){js->j[i].run_id, i};
    qsort(ix, js->n, sizeof(*ix), cmp_idx);

    if ((rc = query(db,
                    "SELECT run_id, host, count(*) FROM ranks GROUP BY run_id, host "
                    "ORDER BY run_id, host",
                    &st, err, errlen)))
        goto fail;
    while ((rc = ct_fdb_step(st)) == 1) {
        struct ct_fleet_job *j = find(ix, js->n, js, ct_fdb_col_text(st, 0));
        const char *h = ct_fdb_col_text(st, 1);
        if (j && h && (rc = add_fv(j, "host", h, ct_fdb_col_i64(st, 2))))
            break;
    }
    ct_fdb_finalize(st);
    st = NULL;
    if ((rc = step_err(db, rc, err, errlen)))
        goto fail;

    if ((rc = query(db, "SELECT run_id, key, value FROM labels ORDER BY run_id, key, value", &st,
                    err, errlen)))
        goto fail;
    while ((rc = ct_fdb_step(st)) == 1) {
        struct ct_fleet_job *j = find(ix, js->n, js, ct_fdb_col_text(st, 0));
        const char *k = ct_fdb_col_text(st, 1), *v = ct_fdb_col_text(st, 2);
        if (j && k && v && (rc = add_fv(j, k, v, 0)))
            break;
    }
    ct_fdb_finalize(st);
    st = NULL;
    if ((rc = step_err(db, rc, err, errlen)))
        goto fail;

    if ((rc =
             query(db, "SELECT run_id, name FROM kernels ORDER BY run_id, name", &st, err, errlen)))
        goto fail;
    while ((rc = ct_fdb_step(st)) == 1) {
        struct ct_fleet_job *j = find(ix, js->n, js, ct_fdb_col_text(st, 0));
        const char *n = ct_fdb_col_text(st, 1);
        if (!j || !n || (j->nkernels && !strcmp(j->kernels[j->nkernels - 1], n)))
            continue;
        char **k = realloc(j->kernels, (j->nkernels + 1) * sizeof(*k));
        if (!k || !(k[j->nkernels] = strdup(n))) {
            if (k)
                j->kernels = k;
            rc = -ENOMEM;
            break;
        }
        j->kernels = k;
        j->nkernels++;
    }
    ct_fdb_finalize(st);
    st = NULL;
    if ((rc = step_err(db, rc, err, errlen)))
        goto fail;
    /* sorted in C: the servers' collations differ */
    for (size_t i = 0; i < js->n; i++)
        if (js->j[i].nkernels)
            qsort(js->j[i].kernels, js->j[i].nkernels, sizeof(char *), cmp_name);

    if ((rc = query(db,
                    "SELECT run_id, op, bytes, count, p50_us, busbw_gbps FROM collectives "
                    "ORDER BY run_id, op, bytes",
                    &st, err, errlen)))
        goto fail;
    {
        double *best = calloc(js->n ? js->n : 1, sizeof(*best));
        if (!best) {
            rc = -ENOMEM;
            goto fail;
        }
        while ((rc = ct_fdb_step(st)) == 1) {
            struct ct_fleet_job *j = find(ix, js->n, js, ct_fdb_col_text(st, 0));
            const char *op = ct_fdb_col_text(st, 1);
            double t = (double)ct_fdb_col_i64(st, 3) * ct_fdb_col_double(st, 4);
            char b[96];
            snprintf(b, sizeof(b), "%s:%" PRId64, op ? op : "?", ct_fdb_col_i64(st, 2));
            if (!j || !op || !(t > 0) || !(t >= best[j - js->j]) ||
                (t == best[j - js->j] && j->coll && strcmp(b, j->coll) >= 0))
                continue;
            best[j - js->j] = t;
            free(j->coll);
            j->coll = strdup(b);
            j->coll_busbw = ct_fdb_col_double(st, 5);
            if (!j->coll) {
                rc = -ENOMEM;
                break;
            }
        }
        free(best);
    }
    ct_fdb_finalize(st);
    st = NULL;
    if ((rc = step_err(db, rc, err, errlen)))
        goto fail;
    if ((rc = throttling(db, ix, js, err, errlen)))
        goto fail;
    free(ix);
    ix = NULL;
    /* orders made in C: the servers' collations differ, and the answers of
     * both back ends must be the same */
    for (size_t i = 0; i < js->n; i++)
        sort_fv(&js->j[i]);
    if (js->n)
        qsort(js->j, js->n, sizeof(*js->j), cmp_job);
    if ((rc = ct_fleet_workloads_split(js)))
        goto fail;
    if (flt && flt->workload) {
        /* the workload named, or the only one it begins */
        size_t len = strlen(flt->workload), exact = 0, pref = 0;
        const char *w = NULL;
        for (size_t i = 0; i < js->n; i++) {
            if (!strcmp(js->j[i].workload, flt->workload))
                exact = 1;
            else if (!strncmp(js->j[i].workload, flt->workload, len) &&
                     (!w || strcmp(w, js->j[i].workload)))
                pref += !w || strcmp(w, js->j[i].workload), w = js->j[i].workload;
        }
        if (!exact && pref != 1) {
            snprintf(err, errlen,
                     "--workload %s: %s (cutrace fleet report --by workload lists them)",
                     flt->workload,
                     pref ? "the start of several workloads" : "no workload of that name");
            rc = pref ? -EINVAL : -ENOENT;
            goto fail;
        }
        char *keep = strdup(exact ? flt->workload : w);
        if (!keep) {
            rc = -ENOMEM;
            goto fail;
        }
        size_t o = 0;
        js->without_goodput = 0;
        for (size_t i = 0; i < js->n; i++) {
            if (!strcmp(js->j[i].workload, keep)) {
                js->j[o++] = js->j[i];
                js->without_goodput += !isfinite(js->j[o - 1].gpu_us);
            } else {
                job_free(&js->j[i]);
            }
        }
        js->n = o;
        free(keep);
    }
    return 0;
fail:
    if (rc == -ENOMEM && !err[0])
        snprintf(err, errlen, "out of memory");
    ct_fdb_finalize(st);
    free(ix);
    ct_fleet_jobs_free(js);
    return rc;
}

const char *ct_fleet_key(const char *key, char *buf, size_t len)
{
    static const char *const alias[][2] = {
        {"gpu", "gpu"},
        {"gpu_model", "gpu"},
        {"device.name", "gpu"},
        {"driver", "driver"},
        {"driver_version", "driver"},
        {"cuda", "cuda_version"},
        {"cuda_version", "cuda_version"},
        {"nccl", "nccl_version"},
        {"nccl_version", "nccl_version"},
        {"cutrace", "cutrace_version"},
        {"cutrace_version", "cutrace_version"},
        {"host", "host"},
        {"workload", "workload"},
        {"clock_policy", "config.clock_policy"},
        {"power_limit", "config.power_limit"},
    };
    for (size_t i = 0; i < sizeof(alias) / sizeof(alias[0]); i++)
        if (!strcmp(key, alias[i][0]))
            return alias[i][1];
    if (!strncmp(key, "tag.", 4) || !strncmp(key, "env.", 4) || !strncmp(key, "config.", 7))
        return key;
    if (!strncmp(key, "NCCL_", 5) || !strncmp(key, "CUDA_", 5))
        snprintf(buf, len, "env.%s", key);
    else
        snprintf(buf, len, "tag.%s", key);
    return buf;
}

size_t ct_fleet_values(const struct ct_fleet_job *j, const char *key, const char **vals, size_t max)
{
    if (!strcmp(key, "workload")) {
        if (max)
            vals[0] = j->workload;
        return max ? 1 : 0;
    }
    size_t n = 0;
    for (size_t i = 0; i < j->nfv && n < max; i++)
        if (!strcmp(j->fv[i].key, key))
            vals[n++] = j->fv[i].value;
    return n;
}
