/*
 * Runs among the inputs (decoder/load/run_identity.h): each trace's
 * identity from its first metadata frame, without decoding the rest, so
 * that a folder of two runs is refused (or the run asked for is picked)
 * before the long part of loading starts.
 */
#include "decoder/load/run_identity.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "decoder/kineto/kineto.h"
#include "decoder/read/summary.h"
#include "decoder/read/timeline.h"
#include "src/config.h"
#include "src/reader.h"

/* What one input says of itself. */
struct ident {
    char *run, *job, *host, *cmdline;
    int64_t restart, start_real_ns;
    int kineto;
};

static void ident_free(struct ident *d)
{
    free(d->run);
    free(d->job);
    free(d->host);
    free(d->cmdline);
    memset(d, 0, sizeof(*d));
}

struct meta_scan {
    struct ct_reader *rd;
    struct ident *d;
    int seen; /* a process metadata record was delivered */
    int oom;
};

static int keep(char **slot, const char *v, struct meta_scan *m)
{
    if (*slot)
        return 0; /* the first value, as the extractor keeps it */
    if (!(*slot = strdup(v)))
        m->oom = 1;
    return m->oom ? -ENOMEM : 0;
}

static int on_meta(void *ctx, const struct ct_record *r)
{
    struct meta_scan *m = ctx;
    if (r->kind != CT_REC_META || r->f[CT_META_SCOPE] != CT_SCOPE_PROCESS)
        return 0;
    m->seen = 1;
    const char *k = ct_reader_string(m->rd, r->f[CT_META_KEY]);
    const char *v = ct_reader_string(m->rd, r->f[CT_META_VALUE]);
    if (!strcmp(k, "run_id"))
        return keep(&m->d->run, v, m);
    if (!strcmp(k, "job"))
        return strcmp(v, "job") ? keep(&m->d->job, v, m) : 0; /* "job": the shim's default */
    if (!strcmp(k, "host"))
        return keep(&m->d->host, v, m);
    if (!strcmp(k, "cmdline"))
        return keep(&m->d->cmdline, v, m);
    long long n;
    if (!strcmp(k, "restart_count") && m->d->restart < 0 && ct_parse_int(v, 0, INT32_MAX, &n) == 0)
        m->d->restart = n;
    return 0;
}

/* The process metadata is the first frame the shim writes; a few frames
 * are read in case another thread's chunk came first. */
#define META_FRAMES 4

static int trace_ident(const char *path, struct ident *d)
{
    struct ct_reader rd;
    if (ct_reader_open(&rd, path) != 0)
        return 0; /* unreadable: the load says why */
    d->start_real_ns = (int64_t)rd.hdr.start_real_ns;
    struct meta_scan m = {&rd, d, 0, 0};
    struct ct_chunk_sink sink = {.ctx = &m, .on_record = on_meta};
    for (int i = 0; i < META_FRAMES && !m.seen && !m.oom; i++)
        if (ct_reader_next(&rd, &sink) <= 0)
            break;
    ct_reader_close(&rd);
    return m.oom ? -ENOMEM : 0;
}

static int summary_ident(const char *path, struct ident *d)
{
    struct ct_life life;
    char *host = NULL, err[64];
    int rc = ct_summary_life(path, &life, &host, err, sizeof(err));
    if (rc)
        return rc == -ENOMEM ? rc : 0;
    d->run = life.run;
    d->job = life.job && strcmp(life.job, "job") ? life.job : NULL;
    if (!d->job)
        free(life.job);
    d->restart = life.restart;
    d->host = host;
    return 0;
}

static int same(const char *a, const char *b)
{
    return a && b && !strcmp(a, b);
}

/* Runs a and b are attempts of one job: the launcher's job id is the same
 * and their restart counts do not overlap (a job requeued under a new
 * `cutrace run`); runs without restart counts stay apart. */
static int attempts_of_one_job(const struct ct_run_info *a, const struct ct_run_info *b)
{
    return same(a->job, b->job) && a->restart_lo >= 0 && b->restart_lo >= 0 &&
           (a->restart_hi < b->restart_lo || b->restart_hi < a->restart_lo);
}

static int append_id(char **ids, const char *id)
{
    size_t n = *ids ? strlen(*ids) : 0;
    char *p = realloc(*ids, n + strlen(id) + 2);
    if (!p)
        return -ENOMEM;
    snprintf(p + n, strlen(id) + 2, "%s%s", n ? " " : "", id);
    *ids = p;
    return 0;
}

static void info_free(struct ct_run_info *r)
{
    free(r->id);
    free(r->ids);
    free(r->job);
    free(r->host);
    free(r->cmdline);
}

/* Adds input i (identity d, which names a run) to its run, a new one if
 * needed; the run takes d's strings. */
static int add_to_run(struct ct_run_list *l, size_t i, struct ident *d)
{
    const char *id = d->kineto ? "kineto" : d->run;
    size_t k = 0;
    while (k < l->n && !(l->runs[k].kineto == d->kineto && !strcmp(l->runs[k].id, id)))
        k++;
    if (k == l->n) {
        struct ct_run_info *v = realloc(l->runs, (l->n + 1) * sizeof(*v));
        if (!v)
            return -ENOMEM;
        l->runs = v;
        struct ct_run_info *r = &v[l->n];
        memset(r, 0, sizeof(*r));
        r->id = strdup(id);
        r->ids = strdup(id);
        r->restart_lo = r->restart_hi = -1;
        r->kineto = d->kineto;
        if (!r->id || !r->ids) {
            info_free(r);
            return -ENOMEM;
        }
        l->n++;
    }
    struct ct_run_info *r = &l->runs[k];
    r->ntraces++;
    if (d->start_real_ns > 0 && (!r->start_real_ns || d->start_real_ns < r->start_real_ns))
        r->start_real_ns = d->start_real_ns;
    char **mine[] = {&r->job, &r->host, &r->cmdline};
    char **theirs[] = {&d->job, &d->host, &d->cmdline};
    for (size_t j = 0; j < 3; j++)
        if (!*mine[j]) {
            *mine[j] = *theirs[j];
            *theirs[j] = NULL;
        }
    if (d->restart >= 0) {
        if (r->restart_lo < 0 || d->restart < r->restart_lo)
            r->restart_lo = d->restart;
        if (d->restart > r->restart_hi)
            r->restart_hi = d->restart;
    }
    l->of[i] = k;
    return 0;
}

/* Folds runs that are attempts of one job into the first of them. */
static int fold_attempts(struct ct_run_list *l)
{
    for (size_t a = 0; a < l->n; a++)
        for (size_t b = a + 1; b < l->n;) {
            struct ct_run_info *x = &l->runs[a], *y = &l->runs[b];
            if (x->kineto || y->kineto || !attempts_of_one_job(x, y)) {
                b++;
                continue;
            }
            if (append_id(&x->ids, y->ids))
                return -ENOMEM;
            x->ntraces += y->ntraces;
            if (y->start_real_ns && (!x->start_real_ns || y->start_real_ns < x->start_real_ns))
                x->start_real_ns = y->start_real_ns;
            if (y->restart_lo < x->restart_lo)
                x->restart_lo = y->restart_lo;
            if (y->restart_hi > x->restart_hi)
                x->restart_hi = y->restart_hi;
            info_free(y);
            memmove(y, y + 1, (l->n - b - 1) * sizeof(*y));
            l->n--;
            for (size_t i = 0; i < l->ninputs; i++)
                if (l->of[i] == b)
                    l->of[i] = a;
                else if (l->of[i] != SIZE_MAX && l->of[i] > b)
                    l->of[i]--;
        }
    return 0;
}

int ct_run_list_read(const struct ct_inputs *in, struct ct_run_list *l, const char *job)
{
    memset(l, 0, sizeof(*l));
    l->of = malloc((in->n ? in->n : 1) * sizeof(*l->of));
    if (!l->of)
        return -ENOMEM;
    l->ninputs = in->n;
    int rc = 0;
    for (size_t i = 0; i < in->n && !rc; i++) {
        struct ident d = {.restart = -1};
        l->of[i] = SIZE_MAX;
        if (ct_kineto_is_path(in->paths[i]))
            d.kineto = 1;
        else if (ct_ends_with(in->paths[i], CT_SUMMARY_SUFFIX))
            rc = summary_ident(in->paths[i], &d);
        else
            rc = trace_ident(in->paths[i], &d);
        int other_job = job && !d.kineto && (!d.job || strcmp(d.job, job) != 0);
        if (!rc && (d.run || d.kineto) && !other_job)
            rc = add_to_run(l, i, &d);
        ident_free(&d);
    }
    if (!rc)
        rc = fold_attempts(l);
    if (rc)
        ct_run_list_free(l);
    return rc;
}

void ct_run_list_free(struct ct_run_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        info_free(&l->runs[i]);
    free(l->runs);
    free(l->of);
    memset(l, 0, sizeof(*l));
}

void ct_run_list_print(FILE *f, const struct ct_run_list *l, const char *indent, size_t max)
{
    for (size_t i = 0; i < l->n && i < max; i++) {
        const struct ct_run_info *r = &l->runs[i];
        char when[32] = "-";
        time_t secs = (time_t)(r->start_real_ns / 1000000000);
        struct tm tm;
        if (r->start_real_ns > 0 && gmtime_r(&secs, &tm))
            strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
        fprintf(f, "%s%s  %zu %s", indent, r->kineto ? "(PyTorch profiler traces)" : r->ids,
                r->ntraces, r->ntraces == 1 ? "trace" : "traces");
        if (!r->kineto)
            fprintf(f, ", started %s, host %s, %.80s", when, r->host ? r->host : "-",
                    r->cmdline ? r->cmdline : "-");
        if (r->restart_hi > r->restart_lo)
            fprintf(f, " (attempts %lld-%lld of job %s)", (long long)r->restart_lo,
                    (long long)r->restart_hi, r->job ? r->job : "-");
        fputc('\n', f);
    }
    if (l->n > max)
        fprintf(f, "%s... and %zu more\n", indent, l->n - max);
}

/* The run sel names: its index, SIZE_MAX when none, SIZE_MAX - 1 when a
 * prefix of several. An exact identity wins over a prefix. */
static size_t find_run(const struct ct_run_list *l, const char *sel)
{
    size_t hit = SIZE_MAX, len = strlen(sel);
    for (size_t i = 0; i < l->n; i++) {
        if (l->runs[i].kineto)
            continue;
        for (const char *p = l->runs[i].ids; p && *p;) {
            size_t n = strcspn(p, " ");
            if (n == len && !strncmp(p, sel, n))
                return i;
            if (n > len && !strncmp(p, sel, len))
                hit = hit == SIZE_MAX || hit == i ? i : SIZE_MAX - 1;
            p += n + (p[n] == ' ');
        }
    }
    return hit;
}

int ct_inputs_pick_run(struct ct_inputs *in, const char *sel, const char *job, const char *cmd,
                       char *err, size_t errlen)
{
    struct ct_run_list l;
    int rc = ct_run_list_read(in, &l, job);
    if (rc) {
        snprintf(err, errlen, "out of memory");
        return rc;
    }
    size_t nkin = 0;
    for (size_t i = 0; i < l.n; i++)
        nkin += l.runs[i].kineto;
    size_t pick = SIZE_MAX;
    if (nkin && nkin < l.n) {
        snprintf(err, errlen,
                 "the operands mix PyTorch profiler traces and cutrace traces: they are never "
                 "one job; give one kind");
        rc = -EMEDIUMTYPE;
    } else if (sel) {
        pick = find_run(&l, sel);
        if (pick >= SIZE_MAX - 1) {
            rc = pick == SIZE_MAX ? -ESRCH : -EINVAL;
            fprintf(stderr, "%s: --run %s: %s of the %zu run%s in the operands:\n", cmd, sel,
                    pick == SIZE_MAX ? "names none" : "is the start of more than one", l.n,
                    l.n == 1 ? "" : "s");
            ct_run_list_print(stderr, &l, "  ", 20);
            snprintf(err, errlen, "give one of them to --run (a unique start of it will do)");
        }
    } else if (l.n > 1) {
        fprintf(stderr,
                "%s: the operands hold %zu separate runs, which are never merged into one "
                "job:\n",
                cmd, l.n);
        ct_run_list_print(stderr, &l, "  ", 20);
        snprintf(err, errlen, "pick one with --run ID (or give its traces alone)");
        rc = -ENOTUNIQ;
    }
    unsigned char *keep = !rc && pick != SIZE_MAX ? malloc(in->n ? in->n : 1) : NULL;
    if (!rc && pick != SIZE_MAX && !keep) {
        snprintf(err, errlen, "out of memory");
        rc = -ENOMEM;
    }
    if (keep) {
        for (size_t i = 0; i < in->n; i++)
            keep[i] = l.of[i] == SIZE_MAX || l.of[i] == pick;
        /* with a job, the traces of other jobs stay for the loader's filter */
        ct_inputs_keep(in, keep);
        free(keep);
    }
    ct_run_list_free(&l);
    return rc;
}

long ct_newest_run_dir(char *out, size_t n)
{
    long best = 0;
    DIR *d = opendir(".");
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char *end;
        if (strncmp(de->d_name, "cutrace-run", 11) != 0)
            continue;
        long k = strtol(de->d_name + 11, &end, 10);
        struct stat st;
        if (end == de->d_name + 11 || *end || k <= best || stat(de->d_name, &st) != 0 ||
            !S_ISDIR(st.st_mode))
            continue;
        best = k;
    }
    closedir(d);
    if (best)
        snprintf(out, n, "cutrace-run%ld", best);
    return best;
}
