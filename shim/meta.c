/*
 * Process metadata for the first chunk: who ran, where, as which rank, with
 * which NCCL/CUDA/Torch settings. The command line, the variables and the
 * tags are scrubbed of secrets first (src/redact.h). Runs once, at init,
 * under the guard.
 */
#include "shim/meta.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shim/shim.h"
#include "src/ownfd.h"
#include "src/redact.h"

extern char **environ;

static long env_long(const char *const *names)
{
    for (; *names; names++) {
        const char *v = getenv(*names);
        char *end;
        if (v && *v) {
            long n = strtol(v, &end, 10);
            if (!*end && n >= 0)
                return n;
        }
    }
    return -1;
}

/* Keeps [A-Za-z0-9._] so the value is safe in a file name. */
static void sanitize(char *s)
{
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '.' && *s != '_')
            *s = '_';
}

void ct_launcher_detect(struct ct_launcher *l)
{
    static const char *const rank[] = {"RANK",     "OMPI_COMM_WORLD_RANK", "PMIX_RANK",
                                       "PMI_RANK", "SLURM_PROCID",         NULL};
    static const char *const local[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                        "MPI_LOCALRANKID", "SLURM_LOCALID", NULL};
    static const char *const world[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                        "SLURM_NTASKS", NULL};
    static const char *const job[] = {"CUTRACE_JOB",
                                      "SLURM_JOB_ID",
                                      "TORCHELASTIC_RUN_ID",
                                      "PMIX_NAMESPACE",
                                      "OMPI_MCA_orte_ess_jobid",
                                      NULL};
    l->rank = env_long(rank);
    l->local_rank = env_long(local);
    l->world_size = env_long(world);
    snprintf(l->job, sizeof(l->job), "job");
    for (const char *const *n = job; *n; n++) {
        const char *v = getenv(*n);
        if (v && *v) {
            snprintf(l->job, sizeof(l->job), "%s", v);
            break;
        }
    }
    if (gethostname(l->host, sizeof(l->host)) != 0)
        snprintf(l->host, sizeof(l->host), "host");
    l->host[sizeof(l->host) - 1] = 0;
    char *dot = strchr(l->host, '.');
    if (dot)
        *dot = 0;
    sanitize(l->job);
    sanitize(l->host);
}

/* Keeps [A-Za-z0-9._-] of a launcher's value, in a run identity. */
static void run_chars(char *s)
{
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '.' && *s != '_' && *s != '-')
            *s = '_';
}

/* Rule 2 of ct_run_identity: 1 when this process is a rank of a launch
 * that names itself. */
static int launch_identity(char *out, size_t n, const char **source)
{
    const char *job = getenv("SLURM_JOB_ID"), *step = getenv("SLURM_STEP_ID");
    const char *ns = getenv("PMIX_NAMESPACE"), *ompi = getenv("OMPI_MCA_orte_ess_jobid");
    if (job && *job && step && *step) {
        snprintf(out, n, "slurm-%.30s.%.20s", job, step);
        *source = "slurm";
    } else if (ns && *ns) {
        snprintf(out, n, "pmix-%.60s", ns);
        *source = "pmix";
    } else if (ompi && *ompi) {
        snprintf(out, n, "ompi-%.60s", ompi);
        *source = "ompi";
    } else {
        return 0;
    }
    run_chars(out);
    return 1;
}

static int is_auto(const char *id)
{
    return !strncmp(id, "auto-", 5);
}

void ct_run_identity(char *out, size_t n, const char **source)
{
    if (n > CT_RUN_ID_MAX)
        n = CT_RUN_ID_MAX;
    const char *env = getenv("CUTRACE_RUN_ID");
    int valid = env && ct_run_id_check(env) == 0;
    if (valid && !is_auto(env)) {
        snprintf(out, n, "%s", env);
        *source = "cutrace";
    } else if (launch_identity(out, n, source)) {
        /* set */
    } else if (valid) {
        snprintf(out, n, "%s", env);
        *source = "inherited";
    } else {
        /* ct_run_id_export could not set it (no memory for the variable) */
        snprintf(out, n, "auto-p%d-%lld", (int)getpid(), (long long)ct_shim_start_mono_ns);
        *source = "auto";
    }
}

void ct_run_id_export(void)
{
    const char *env = getenv("CUTRACE_RUN_ID");
    char id[CT_RUN_ID_MAX];
    const char *source;
    if ((env && ct_run_id_check(env) == 0) || launch_identity(id, sizeof(id), &source))
        return;
    /* the moment and the process that started the run: unique per host,
     * and readable in a listing of runs */
    struct timespec now;
    struct tm tm;
    char when[32] = "0";
    if (clock_gettime(CLOCK_REALTIME, &now) == 0 && gmtime_r(&now.tv_sec, &tm))
        strftime(when, sizeof(when), "%Y%m%dT%H%M%SZ", &tm);
    char host[64] = "host";
    if (gethostname(host, sizeof(host)) != 0)
        snprintf(host, sizeof(host), "host");
    host[sizeof(host) - 1] = 0;
    char *dot = strchr(host, '.');
    if (dot)
        *dot = 0;
    snprintf(id, sizeof(id), "auto-%s-%.24s-p%d", when, host, (int)getpid());
    run_chars(id);
    setenv("CUTRACE_RUN_ID", id, 0);
}

struct kvbuf {
    struct ct_meta_kv *kv;
    size_t n, max;
    char *s;
    size_t used, cap;
};

static const char *keep(struct kvbuf *b, const char *s)
{
    size_t len = strlen(s) + 1;
    if (b->used + len > b->cap)
        return NULL;
    char *p = b->s + b->used;
    memcpy(p, s, len);
    b->used += len;
    return p;
}

static void add(struct kvbuf *b, const char *key, const char *value)
{
    if (b->n >= b->max || !value)
        return;
    const char *k = keep(b, key), *v = keep(b, value);
    if (!k || !v)
        return;
    b->kv[b->n++] = (struct ct_meta_kv){CT_SCOPE_PROCESS, 0, k, v};
}

static void add_long(struct kvbuf *b, const char *key, long v)
{
    char buf[32];
    if (v < 0)
        return;
    snprintf(buf, sizeof(buf), "%ld", v);
    add(b, key, buf);
}

/* /proc/self/cmdline (NUL-separated arguments), scrubbed, as one line. */
static void read_cmdline(char *out, size_t n, const char *extra)
{
    char raw[4096];
    out[0] = 0;
    long r = ct_own_read_small("/proc/self/cmdline", raw, sizeof(raw) - 1);
    if (r <= 0)
        return;
    raw[r] = 0;
    ct_redact_cmdline(raw, (size_t)r, extra, out, n);
}

size_t ct_meta_process(struct ct_meta_kv *kv, size_t max, char *strbuf, size_t strbuf_len)
{
    struct kvbuf b = {kv, 0, max, strbuf, 0, strbuf_len};
    struct ct_launcher l;
    ct_launcher_detect(&l);
    char buf[4096];
    add(&b, "host", l.host);
    add(&b, "job", l.job);
    char run[CT_RUN_ID_MAX];
    const char *run_source;
    ct_run_identity(run, sizeof(run), &run_source);
    add(&b, "run_id", run);
    add(&b, "run_id_source", run_source);
    add_long(&b, "rank", l.rank);
    add_long(&b, "local_rank", l.local_rank);
    add_long(&b, "world_size", l.world_size);
    add_long(&b, "pid", (long)getpid());
    add_long(&b, "ppid", (long)getppid());
    /* when this image started, and which attempt of the job it belongs to
     * (a launcher restart: torchrun, Slurm requeue): `cutrace goodput` */
    add_long(&b, "start_mono_ns", (long)ct_shim_start_mono_ns);
    static const char *const restart[] = {"CUTRACE_RESTART_COUNT", "TORCHELASTIC_RESTART_COUNT",
                                          "SLURM_RESTART_COUNT", NULL};
    for (const char *const *r = restart; *r; r++) {
        const char *const one[] = {*r, NULL};
        long v = env_long(one);
        if (v >= 0) {
            add_long(&b, "restart_count", v);
            add(&b, "restart_source", *r);
            break;
        }
    }
    const char *extra = getenv("CUTRACE_REDACT");
    read_cmdline(buf, sizeof(buf), extra);
    add(&b, "cmdline", buf);
    ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    if (n > 0) {
        buf[n] = 0;
        add(&b, "exe", buf);
    }
    add(&b, "cutrace_version", CT_VERSION);
    if (ct_cfg.light) {
        /* the decoder reads the windows from the capture marks; these say
         * what schedule made them */
        add(&b, "mode", "light");
        add_long(&b, "light_window_ms", (long)ct_cfg.light_window_ms);
        add_long(&b, "light_period_ms", (long)ct_cfg.light_period_ms);
    } else {
        add(&b, "mode", "full");
    }
    /* run tags (validated with the rest of the configuration) as tag.KEY */
    const char *tags = getenv("CUTRACE_TAGS");
    for (const char *p = tags; p && *p;) {
        const char *eq = strchr(p, '='), *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        if (!eq || eq > end)
            break;
        char key[80], value[260];
        snprintf(key, sizeof(key), "tag.%.*s", (int)(eq - p), p);
        snprintf(value, sizeof(value), "%.*s", (int)(end - eq - 1), eq + 1);
        char clean[260];
        ct_redact_value(value, clean, sizeof(clean));
        add(&b, key, ct_redact_name(p, (size_t)(eq - p), extra) ? CT_REDACTED : clean);
        p = *end ? end + 1 : end;
    }
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq)
            continue;
        size_t len = (size_t)(eq - *e);
        if (strncmp(*e, "NCCL_", 5) && strncmp(*e, "CUDA_", 5) && strncmp(*e, "TORCH_", 6) &&
            strncmp(*e, "CUTRACE_", 8))
            continue;
        if (len == 12 && !strncmp(*e, "CUTRACE_TAGS", 12))
            continue; /* kept as its parsed, scrubbed tags (tag.KEY) */
        char key[300], clean[1024];
        snprintf(key, sizeof(key), "env.%.*s", (int)len, *e);
        ct_redact_value(eq + 1, clean, sizeof(clean));
        add(&b, key, ct_redact_name(*e, len, extra) ? CT_REDACTED : clean);
    }
    return b.n;
}
