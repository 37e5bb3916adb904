/*
 * Loading a job (decoder/read/load.h). Traces are decoded on several
 * threads, one file each, straight into their compact timelines
 * (ct_proc_extract_file: no record is kept), so memory is about the
 * compact timelines plus, per thread, one file's join keys.
 */
#include "decoder/read/load.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decoder/kineto/kineto.h"
#include "decoder/read/summary.h"
#include "decoder/util/progress.h"

int ct_load_expand(struct ct_inputs *in, char *const *operands, int n, char *err, size_t errlen)
{
    int rc = 0;
    /* kineto: Kineto operands (files, folders of them) go to its expansion */
    for (int i = 0; i < n && !rc; i++)
        rc = ct_kineto_operand(operands[i]) ? ct_kineto_expand(in, operands[i], err, errlen)
                                            : ct_inputs_expand(in, operands + i, 1, err, errlen);
    return rc;
}

struct loader {
    const struct ct_inputs *in;
    struct ct_proc *procs;
    const char *step;
    atomic_size_t next, done;
    atomic_int failed;
    char err[512];
    pthread_mutex_t lock;
};

static void *load_worker(void *arg)
{
    struct loader *L = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&L->next, 1);
        if (i >= L->in->n || atomic_load(&L->failed))
            return NULL;
        char err[512];
        int rc;
        /* kineto: a PyTorch profiler trace goes to its own reader */
        if (ct_kineto_is_path(L->in->paths[i])) {
            rc = ct_kineto_load(L->in->paths[i], &L->procs[i], err, sizeof(err));
        } else if (ct_ends_with(L->in->paths[i], CT_SUMMARY_SUFFIX)) {
            /* a per-rank summary stands for its trace (decoder/read/summary.h) */
            rc = ct_summary_read(L->in->paths[i], L->step, &L->procs[i], err, sizeof(err));
        } else {
            rc = ct_proc_extract_file(L->in->paths[i], L->step, &L->procs[i], err, sizeof(err));
        }
        if (rc) {
            pthread_mutex_lock(&L->lock);
            if (!atomic_load(&L->failed))
                snprintf(L->err, sizeof(L->err), "%s", err);
            atomic_store(&L->failed, 1);
            pthread_mutex_unlock(&L->lock);
            return NULL;
        }
        atomic_fetch_add(&L->done, 1);
    }
}

/* Every input decoded into *out (in input order). */
static int load_all(const struct ct_load_opts *o, const struct ct_inputs *in, struct ct_proc **out,
                    char *err, size_t errlen)
{
    struct loader L = {.in = in, .step = o->step};
    pthread_mutex_init(&L.lock, NULL);
    L.procs = calloc(in->n ? in->n : 1, sizeof(*L.procs));
    if (!L.procs)
        return -ENOMEM;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    size_t nt = ncpu > 0 ? (size_t)ncpu : 1;
    if (nt > in->n)
        nt = in->n;
    if (nt > 64)
        nt = 64;
    pthread_t th[64];
    size_t started = 0;
    for (size_t i = 0; i < nt; i++)
        if (pthread_create(&th[i], NULL, load_worker, &L) == 0)
            started++;
    if (!started)
        load_worker(&L);
    struct ct_progress pr;
    ct_progress_start(&pr, o->cmd);
    while (atomic_load(&L.done) < in->n && !atomic_load(&L.failed) && started) {
        usleep(20000);
        if (o->progress)
            ct_progress_update(&pr, "decoded traces", atomic_load(&L.done), in->n, -1);
        if (atomic_load(&L.next) >= in->n + started) /* every worker has quit */
            break;
    }
    for (size_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    ct_progress_end(&pr);
    pthread_mutex_destroy(&L.lock);
    if (atomic_load(&L.failed)) {
        snprintf(err, errlen, "%s", L.err);
        for (size_t i = 0; i < in->n; i++)
            ct_proc_free(&L.procs[i]);
        free(L.procs);
        return -EIO;
    }
    *out = L.procs;
    return 0;
}

int ct_load_job(const struct ct_load_opts *o, const struct ct_inputs *in, struct ct_job *job,
                char *err, size_t errlen)
{
    memset(job, 0, sizeof(*job));
    struct ct_proc *procs = NULL;
    int rc = load_all(o, in, &procs, err, errlen);
    if (rc)
        return rc;
    size_t n = in->n;
    if (o->job) { /* one job of several: the others' processes go now */
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            if (procs[i].life.job && !strcmp(procs[i].life.job, o->job))
                procs[k++] = procs[i];
            else
                ct_proc_free(&procs[i]);
        }
        n = k;
    }
    /* kineto: complete Kineto processes (HTA's filter spans all ranks) */
    if (ct_kineto_finish(procs, n, o->hta)) {
        for (size_t i = 0; i < n; i++)
            ct_proc_free(&procs[i]);
        free(procs);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        if (ct_kineto_warning(&procs[i]))
            fprintf(stderr, "%s: %s\n", o->cmd, ct_kineto_warning(&procs[i]));
    rc = ct_job_build(job, procs, n); /* owns procs from here, also on failure */
    if (rc)
        ct_job_free(job);
    return rc;
}
