/*
 * The format dispatch (decoder/load/load.h). Inputs are decoded on several
 * threads, one file each, by their reader straight into their compact
 * timelines (a cutrace trace by ct_proc_extract_file: no record is kept),
 * so memory is about the compact timelines plus, per thread, one file's
 * join keys.
 */
#include "decoder/load/load.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decoder/kineto/kineto.h"
#include "decoder/load/run_identity.h"
#include "decoder/read/extract.h"
#include "decoder/read/spill.h"
#include "decoder/read/summary.h"
#include "decoder/util/progress.h"
#include "decoder/read/devices.h"
#include "decoder/read/extract.h"
#include "decoder/read/job.h"

int ct_load_format(const char *operand)
{
    if (ct_kineto_operand(operand))
        return CT_SOURCE_KINETO;
    return ct_ends_with(operand, CT_SUMMARY_SUFFIX) ? CT_SOURCE_SUMMARY : CT_SOURCE_TRACE;
}

/* Each operand into in: Kineto operands (files, folders of them) by the
 * Kineto reader's rules, the others as cutrace traces and summaries. */
static int expand(struct ct_inputs *in, char *const *operands, int n, char *err, size_t errlen)
{
    int rc = 0, kineto = -1;
    for (int i = 0; i < n && !rc; i++) {
        if ((rc = ct_operand_check(operands[i], err, errlen)) != 0)
            break;
        /* kineto: Kineto operands (files, folders of them) go to its expansion */
        int k = ct_kineto_operand(operands[i]);
        if (kineto >= 0 && k != kineto) {
            snprintf(err, errlen,
                     "%s is a %s, %s a %s: the two kinds are never one job; give one kind",
                     operands[i], k ? "PyTorch profiler trace" : "cutrace trace", operands[i - 1],
                     k ? "cutrace trace" : "PyTorch profiler trace");
            return -EMEDIUMTYPE;
        }
        kineto = k;
        rc = k ? ct_kineto_expand(in, operands[i], err, errlen)
               : ct_inputs_expand(in, operands + i, 1, err, errlen);
    }
    return rc;
}

int ct_load_operands(const struct ct_load_opts *o, struct ct_inputs *in, char *const *operands,
                     int n, char *err, size_t errlen)
{
    int rc = o->no_kineto ? ct_inputs_expand(in, operands, n, err, errlen)
                          : expand(in, operands, n, err, errlen);
    if (rc || o->keep_all)
        return rc;
    if (in->ndup)
        fprintf(stderr, "%s: note: %s: counted once%s\n", o->cmd, in->dup_note,
                in->ndup > 1 ? " (and other inputs given twice)" : "");
    return ct_inputs_pick_run(in, o->run, o->job, o->cmd, err, errlen);
}

int ct_load_usage_error(int rc)
{
    return rc == -ENOTUNIQ || rc == -ESRCH || rc == -EINVAL || rc == -EMEDIUMTYPE;
}

struct loader {
    const struct ct_inputs *in;
    struct ct_proc *procs;
    /* spilling (decoder/read/spill.h): input i's processes, split by
     * device and spilled, are parts[i] (nparts[i] of them) */
    int spill;
    struct ct_proc **parts;
    size_t *nparts;
    const struct ct_load_opts *o;
    atomic_size_t next, done;
    atomic_int failed;
    char err[512];
    pthread_mutex_t lock;
};

int ct_load_input(const struct ct_load_opts *o, const char *path, struct ct_proc *p, char *err,
                  size_t errlen)
{
    /* kineto: a PyTorch profiler trace goes to its own reader */
    if (!o->no_kineto && ct_kineto_is_path(path))
        return ct_kineto_load(path, p, err, errlen);
    /* a per-rank summary stands for its trace (decoder/read/summary.h) */
    if (ct_ends_with(path, CT_SUMMARY_SUFFIX))
        return ct_summary_read(path, o->step, p, err, errlen);
    return ct_proc_extract_file(path, o->step, p, err, errlen);
}

/* Input i's process split by device (as ct_job_build would) and each part
 * spilled, while this thread has it: what is left of it is small. */
static int spill_one(struct loader *L, size_t i, char *err, size_t errlen)
{
    struct ct_proc *v = malloc(sizeof(*v));
    size_t n = 1;
    int rc = v ? 0 : -ENOMEM;
    if (v) {
        *v = L->procs[i];
        memset(&L->procs[i], 0, sizeof(L->procs[i]));
        rc = ct_split_devices(&v, &n);
    }
    for (size_t k = 0; k < n && !rc; k++)
        rc = ct_proc_spill(&v[k]);
    if (rc) {
        for (size_t k = 0; v && k < n; k++)
            ct_proc_free(&v[k]);
        free(v);
        snprintf(err, errlen, "%s: out of memory", L->in->paths[i]);
        return rc;
    }
    L->parts[i] = v;
    L->nparts[i] = n;
    return 0;
}

static void *load_worker(void *arg)
{
    struct loader *L = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&L->next, 1);
        if (i >= L->in->n || atomic_load(&L->failed))
            return NULL;
        char err[512];
        int rc = ct_load_input(L->o, L->in->paths[i], &L->procs[i], err, sizeof(err));
        if (!rc && L->spill)
            rc = spill_one(L, i, err, sizeof(err));
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
                    size_t *nout, char *err, size_t errlen)
{
    struct loader L = {.in = in, .o = o};
    /* a PyTorch profiler trace is completed across all ranks after loading
     * (ct_kineto_finish): a job with one is not spilled */
    L.spill = o->spill ? ct_spill_wanted(in->n, err, errlen) : 0;
    if (L.spill < 0)
        return L.spill;
    for (size_t i = 0; i < in->n && L.spill && !o->no_kineto; i++)
        L.spill = !ct_kineto_is_path(in->paths[i]);
    pthread_mutex_init(&L.lock, NULL);
    L.procs = calloc(in->n ? in->n : 1, sizeof(*L.procs));
    L.parts = calloc(in->n ? in->n : 1, sizeof(*L.parts));
    L.nparts = calloc(in->n ? in->n : 1, sizeof(*L.nparts));
    if (!L.procs || !L.parts || !L.nparts) {
        free(L.procs);
        free(L.parts);
        free(L.nparts);
        return -ENOMEM;
    }
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
    if (o->progress)
        ct_progress_phase(o->cmd, "building the job (clocks, ranks)");
    pthread_mutex_destroy(&L.lock);
    int rc = atomic_load(&L.failed) ? -EIO : 0;
    size_t total = 0;
    for (size_t i = 0; i < in->n; i++)
        total += L.parts[i] ? L.nparts[i] : 1;
    struct ct_proc *v = L.spill && !rc ? calloc(total ? total : 1, sizeof(*v)) : NULL;
    if (L.spill && !rc && !v) {
        rc = -ENOMEM;
        snprintf(L.err, sizeof(L.err), "out of memory");
    }
    for (size_t i = 0, w = 0; v && i < in->n; i++) /* the parts in input order */
        for (size_t k = 0; k < (L.parts[i] ? L.nparts[i] : 1); k++)
            v[w++] = L.parts[i] ? L.parts[i][k] : L.procs[i];
    if (rc) {
        snprintf(err, errlen, "%s", L.err);
        for (size_t i = 0; i < in->n; i++) {
            ct_proc_free(&L.procs[i]);
            for (size_t k = 0; L.parts[i] && k < L.nparts[i]; k++)
                ct_proc_free(&L.parts[i][k]);
        }
    }
    for (size_t i = 0; i < in->n; i++)
        free(L.parts[i]);
    free(L.parts);
    free(L.nparts);
    if (v) {
        free(L.procs);
        L.procs = v;
    }
    if (rc) {
        free(L.procs);
        return rc;
    }
    *out = L.procs;
    *nout = L.spill ? total : in->n;
    return 0;
}

int ct_load_job(const struct ct_load_opts *o, const struct ct_inputs *in, struct ct_job *job,
                char *err, size_t errlen)
{
    memset(job, 0, sizeof(*job));
    struct ct_proc *procs = NULL;
    size_t n = 0;
    int rc = load_all(o, in, &procs, &n, err, errlen);
    if (rc)
        return rc;
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
    for (size_t i = 0; i < n; i++) {
        if (ct_kineto_warning(&procs[i]))
            fprintf(stderr, "%s: %s\n", o->cmd, ct_kineto_warning(&procs[i]));
        if (ct_kineto_note(&procs[i])) /* rows a rule dropped, said once per file */
            fprintf(stderr, "%s: %s\n", o->cmd, ct_kineto_note(&procs[i]));
        /* the readers are done with their processes */
        if (procs[i].reader_free)
            procs[i].reader_free(procs[i].reader_data);
        procs[i].reader_data = NULL;
        procs[i].reader_free = NULL;
    }
    /* --step NAME that names nothing would fall back to the detector's
     * iterations, as if the user had not asked: refused instead (PyTorch
     * profiler traces name their steps themselves) */
    size_t named = 0, cutrace = 0;
    for (size_t i = 0; i < n; i++) {
        named += procs[i].nsteps;
        cutrace += procs[i].source != CT_SOURCE_KINETO;
    }
    if (o->step && cutrace && !named) {
        snprintf(err, errlen,
                 "--step %s: no NVTX range or mark of that name (or NAME#N) in the traces; "
                 "without --step, iterations come from ProfilerStep or the work that repeats",
                 o->step);
        for (size_t i = 0; i < n; i++)
            ct_proc_free(&procs[i]);
        free(procs);
        return -ESRCH;
    }
    rc = ct_job_build(job, procs, n); /* owns procs from here, also on failure */
    if (rc)
        ct_job_free(job);
    return rc;
}
