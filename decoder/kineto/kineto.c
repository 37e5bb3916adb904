/*
 * Kineto trace parsing: one pass over the JSON (kineto_json.c), keeping for
 * each 'X' event with a cat and a dur only what the model and HTA's rules
 * need (struct ct_krow). Plain CPU ops without a stream or correlation are
 * not stored: HTA's last-step filter needs only their extent. Never prints;
 * damage stops the parse and leaves a warning naming the byte offset.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "decoder/kineto/kineto_int.h"
#include "decoder/kineto/kineto_json.h"
#include "decoder/read/life.h"

/* ---- names ---- */

/* Eight bytes a step (kernel names run to hundreds of bytes, and every
 * stored row hashes its name), each step a multiply and a fold. */
static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    for (; n >= 8; s += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

int ct_kineto_intern(struct ct_kineto *k, const char *s, size_t n, uint32_t *out)
{
    if (k->nnames * 2 >= k->hcap) {
        size_t cap = k->hcap ? k->hcap * 2 : 1024;
        uint32_t *h = calloc(cap, sizeof(*h));
        if (!h)
            return -ENOMEM;
        for (size_t i = 0; i < k->nnames; i++) {
            size_t j = hash_bytes(k->names[i], strlen(k->names[i])) & (cap - 1);
            while (h[j])
                j = (j + 1) & (cap - 1);
            h[j] = (uint32_t)i + 1;
        }
        free(k->hash);
        k->hash = h;
        k->hcap = cap;
    }
    size_t j = hash_bytes(s, n) & (k->hcap - 1);
    while (k->hash[j]) {
        const char *t = k->names[k->hash[j] - 1];
        /* lengths first: a name may hold a NUL byte, and strncmp
         * would stop there and call a shorter stored name equal */
        if (strnlen(t, n + 1) == n && !memcmp(t, s, n)) {
            *out = k->hash[j] - 1;
            return 0;
        }
        j = (j + 1) & (k->hcap - 1);
    }
    if (k->nnames == k->ncap) {
        size_t cap = k->ncap ? k->ncap * 2 : 256;
        char **nn = realloc(k->names, cap * sizeof(*nn));
        if (!nn)
            return -ENOMEM;
        k->names = nn;
        k->ncap = cap;
    }
    char *c = malloc(n + 1);
    if (!c)
        return -ENOMEM;
    memcpy(c, s, n);
    c[n] = 0;
    k->names[k->nnames] = c;
    k->hash[j] = (uint32_t)++k->nnames;
    *out = k->hash[j] - 1;
    return 0;
}

/* ---- input ---- */

struct src {
    int fd;
    gzFile gz;
    const char *mem; /* ct_kineto_load_mem */
    size_t mlen, mpos;
};

static ssize_t src_read(void *ctx, char *dst, size_t n)
{
    struct src *s = ctx;
    if (s->mem) {
        size_t k = s->mlen - s->mpos < n ? s->mlen - s->mpos : n;
        memcpy(dst, s->mem + s->mpos, k);
        s->mpos += k;
        return (ssize_t)k;
    }
    if (n > (1u << 30))
        n = 1u << 30;
    if (s->gz) {
        int got = gzread(s->gz, dst, (unsigned)n);
        if (got < 0)
            return -EIO;
        return got;
    }
    for (;;) {
        ssize_t got = read(s->fd, dst, n);
        if (got < 0 && errno == EINTR)
            continue;
        return got < 0 ? -errno : got;
    }
}

/* ---- parsing ---- */

struct parse {
    struct ct_jlex lx;
    struct ct_kineto *k;
    struct ct_proc *p;
    char *name; /* current event's name (copied: tokens do not survive) */
    size_t name_n, name_cap;
};

static int kcat(const char *s, size_t n)
{
#define KC(lit, c)                                                                                 \
    {                                                                                              \
        lit, sizeof(lit) - 1, c                                                                    \
    }
    static const struct {
        const char *s;
        size_t n;
        int c;
    } t[] = {
        KC("kernel", CT_KC_KERNEL),
        KC("gpu_memcpy", CT_KC_MEMCPY),
        KC("gpu_memset", CT_KC_MEMSET),
        KC("cuda_runtime", CT_KC_RUNTIME),
        KC("cuda_driver", CT_KC_DRIVER),
        KC("cpu_op", CT_KC_CPU_OP),
        KC("user_annotation", CT_KC_USER_ANN),
        KC("gpu_user_annotation", CT_KC_GPU_USER_ANN),
        KC("cuda_sync", CT_KC_SYNC),
        KC("Trace", CT_KC_TRACE),
        KC("Kernel", CT_KC_LEGACY_KERNEL),
        KC("Memcpy", CT_KC_LEGACY_MEMCPY),
        KC("Memset", CT_KC_LEGACY_MEMSET),
        KC("mtia_ccp_events", CT_KC_MTIA_CCP),
        KC("mtia_runtime", CT_KC_MTIA_RUNTIME),
        KC("Runtime", CT_KC_RUNTIME),
    };
#undef KC
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (t[i].n == n && !memcmp(t[i].s, s, n))
            return t[i].c;
    return CT_KC_OTHER;
}

static int is_step_name(const char *s, size_t n)
{
    return n > 13 && !memcmp(s, "ProfilerStep#", 13) && s[13] >= '0' && s[13] <= '9';
}

/* pd.to_numeric(errors="coerce") on a stream string: decimal or -1. */
static int64_t stream_from_string(const char *s, size_t n)
{
    size_t i = s[0] == '-' ? 1 : 0;
    if (i >= n)
        return -1;
    for (size_t j = i; j < n; j++)
        if (s[j] < '0' || s[j] > '9')
            return -1;
    return ct_jnum_i64(s, n);
}

static uint64_t dtype_size(const char *s, size_t n)
{
    static const struct {
        const char *s;
        uint64_t b;
    } t[] = {{"Float", 4}, {"Double", 8}, {"Half", 2},  {"BFloat16", 2}, {"Int", 4},
             {"Long", 8},  {"Short", 2},  {"Byte", 1},  {"Char", 1},     {"Bool", 1},
             {"float", 4}, {"double", 8}, {"half", 2},  {"bfloat16", 2}, {"int", 4},
             {"long", 8},  {"int8", 1},   {"uint8", 1}, {"int64", 8},    {"int32", 4}};
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (strlen(t[i].s) == n && !memcmp(t[i].s, s, n))
            return t[i].b;
    if (n >= 6 && !memcmp(s, "Float8", 6))
        return 1;
    return 1;
}

static uint8_t coll_op(const char *s, size_t n)
{
    static const struct {
        const char *s;
        uint8_t op;
    } t[] = {
        {"reduce_scatter", CT_NCCL_OP_REDUCESCATTER},
        {"reducescatter", CT_NCCL_OP_REDUCESCATTER},
        {"allreduce", CT_NCCL_OP_ALLREDUCE},
        {"all_reduce", CT_NCCL_OP_ALLREDUCE},
        {"allgather", CT_NCCL_OP_ALLGATHER},
        {"all_gather", CT_NCCL_OP_ALLGATHER},
        {"alltoall", CT_NCCL_OP_ALLTOALL},
        {"all_to_all", CT_NCCL_OP_ALLTOALL},
        {"broadcast", CT_NCCL_OP_BROADCAST},
        {"gather", CT_NCCL_OP_GATHER},
        {"scatter", CT_NCCL_OP_SCATTER},
        {"reduce", CT_NCCL_OP_REDUCE},
        {"send", CT_NCCL_OP_SEND},
        {"recv", CT_NCCL_OP_RECV},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (memmem(s, n, t[i].s, strlen(t[i].s)))
            return t[i].op;
    return CT_NCCL_OP_COUNT;
}

struct ev {
    int has_ts, has_dur, ts_int;
    int cat;
    char ph;
    double tsd, durd;
    int64_t ts_ns, dur_ns, stream, corr;
    int has_coll;
    struct ct_kcoll coll;
    int stream_wait;               /* cuda_sync_kind "Stream Wait Event" */
    int64_t wait_stream, rec_corr; /* wait_on_stream, ..._record_corr_id; -1 */
};

#define KEY(lit) (n == sizeof(lit) - 1 && !memcmp(key, lit, sizeof(lit) - 1))

static int expect(struct parse *P, int want, const char *what)
{
    int t = ct_jlex_next_fast(&P->lx);
    if (t == want)
        return 0;
    if (t != CT_JT_ERR)
        snprintf(P->lx.err, sizeof(P->lx.err), "%s", what);
    return -1;
}

/* After a member's value: ',' (returns 1: more) or the closing bracket (0). */
static int next_member(struct parse *P, int close)
{
    int t = ct_jlex_next_fast(&P->lx);
    if (t == CT_JT_COMMA)
        return 1;
    if (t == close)
        return 0;
    if (t != CT_JT_ERR)
        snprintf(P->lx.err, sizeof(P->lx.err), "expected ',' or '%c'",
                 close == CT_JT_OBJ_END ? '}' : ']');
    return -1;
}

/* Reads `"key":` of an object member into key (copied to kbuf). Returns 1
 * with the key, 0 at '}' (only when first), -1 on error. */
static int member_key(struct parse *P, char *kbuf, size_t kcap, size_t *kn, int first)
{
    int t = ct_jlex_next_fast(&P->lx);
    if (first && t == CT_JT_OBJ_END)
        return 0;
    if (t != CT_JT_STR) {
        if (t != CT_JT_ERR)
            snprintf(P->lx.err, sizeof(P->lx.err), "expected a member name");
        return -1;
    }
    size_t n = P->lx.n < kcap - 1 ? P->lx.n : kcap - 1;
    memcpy(kbuf, P->lx.s, n);
    kbuf[n] = 0;
    *kn = P->lx.n < kcap - 1 ? n : kcap; /* an over-long key matches nothing */
    return expect(P, CT_JT_COLON, "expected ':'") ? -1 : 1;
}

static int skip_value(struct parse *P, int t)
{
    return ct_jlex_skip(&P->lx, t) ? -1 : 0;
}

static int parse_args(struct parse *P, struct ev *e)
{
    char key[64];
    size_t n;
    for (int first = 1;; first = 0) {
        int r = member_key(P, key, sizeof(key), &n, first);
        if (r <= 0)
            return r;
        int t = ct_jlex_next_fast(&P->lx);
        const char *s = P->lx.s;
        size_t sn = P->lx.n;
        if (KEY("stream")) {
            if (t == CT_JT_NUM)
                e->stream = ct_jnum_i64(s, sn);
            else if (t == CT_JT_STR)
                e->stream = stream_from_string(s, sn);
            else if (skip_value(P, t))
                return -1;
        } else if (KEY("correlation") && t == CT_JT_NUM) {
            e->corr = ct_jnum_i64(s, sn);
        } else if (KEY("Collective name") && t == CT_JT_STR) {
            e->has_coll = 1;
            e->coll.op = coll_op(s, sn);
        } else if (KEY("In msg nelems") && t == CT_JT_NUM) {
            e->coll.in_nelems = (uint64_t)ct_jnum_i64(s, sn);
        } else if (KEY("Out msg nelems") && t == CT_JT_NUM) {
            e->coll.out_nelems = (uint64_t)ct_jnum_i64(s, sn);
        } else if (KEY("Group size") && t == CT_JT_NUM) {
            e->coll.group = (int32_t)ct_jnum_i64(s, sn);
        } else if (KEY("dtype") && t == CT_JT_STR) {
            e->coll.elem_size = dtype_size(s, sn);
        } else if (KEY("Process Group Name") && t == CT_JT_STR) {
            e->coll.pg = hash_bytes(s, sn) | 1;
        } else if (KEY("cuda_sync_kind") && t == CT_JT_STR) {
            e->stream_wait = sn == 17 && !memcmp(s, "Stream Wait Event", 17);
        } else if (KEY("wait_on_stream") && t == CT_JT_NUM) {
            e->wait_stream = ct_jnum_i64(s, sn);
        } else if (KEY("wait_on_cuda_event_record_corr_id") && t == CT_JT_NUM) {
            e->rec_corr = ct_jnum_i64(s, sn);
        } else if (skip_value(P, t)) {
            return -1;
        }
        if ((r = next_member(P, CT_JT_OBJ_END)) <= 0)
            return r;
    }
}

static int store(struct parse *P, const struct ev *e)
{
    struct ct_kineto *k = P->k;
    int step = (e->cat == CT_KC_USER_ANN || e->cat == CT_KC_GPU_USER_ANN ||
                e->cat == CT_KC_CPU_OP || e->cat == CT_KC_OTHER) &&
               is_step_name(P->name, P->name_n);
    int sync_name = (P->name_n == 10 && !memcmp(P->name, "Event Sync", 10)) ||
                    (P->name_n == 12 && !memcmp(P->name, "Context Sync", 12));
    if (e->stream == -1 && e->corr < 0 && !step && !sync_name) {
        /* a plain CPU row: HTA's filter needs only its extent */
        double end = floor(e->tsd + e->durd);
        if (!k->cpu_unstored++ || e->tsd < k->cpu_min_tsd) {
            k->cpu_min_tsd = e->tsd;
            k->cpu_min_ns = e->ts_ns;
        }
        if (k->cpu_unstored == 1 || end > k->cpu_max_endd)
            k->cpu_max_endd = end;
        if (k->cpu_unstored == 1 || e->ts_ns + e->dur_ns > k->cpu_max_end_ns)
            k->cpu_max_end_ns = e->ts_ns + e->dur_ns;
        return 0;
    }
    if (k->nrows == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 4096;
        struct ct_krow *r = realloc(k->rows, cap * sizeof(*r));
        if (!r)
            return -ENOMEM;
        k->rows = r;
        k->cap = cap;
    }
    struct ct_krow *r = &k->rows[k->nrows];
    r->tsd = e->tsd;
    r->durd = e->durd;
    r->ts_ns = e->ts_ns;
    r->dur_ns = e->dur_ns;
    r->stream = e->stream;
    r->corr = e->corr;
    r->cat = (uint8_t)e->cat;
    r->flags = step ? CT_KF_STEP : 0;
    r->coll = -1;
    if (ct_kineto_intern(k, P->name, P->name_n, &r->name))
        return -ENOMEM;
    if (e->has_coll) {
        if (k->ncolls == k->ccap) {
            size_t cap = k->ccap ? k->ccap * 2 : 256;
            struct ct_kcoll *c = realloc(k->colls, cap * sizeof(*c));
            if (!c)
                return -ENOMEM;
            k->colls = c;
            k->ccap = cap;
        }
        r->coll = (int32_t)k->ncolls;
        k->colls[k->ncolls++] = e->coll;
    }
    k->nrows++;
    return 0;
}

/* A stream wait whose record and both streams are named (a wait on an
 * event recorded before the trace began names no record: -1). */
static int store_wait(struct ct_kineto *k, const struct ev *e)
{
    if (e->cat != CT_KC_SYNC || !e->stream_wait || e->rec_corr < 0 || e->wait_stream < 0 ||
        e->stream < 0)
        return 0;
    if (k->nwaits == k->wcap) {
        size_t cap = k->wcap ? k->wcap * 2 : 64;
        struct ct_kwait *w = realloc(k->waits, cap * sizeof(*w));
        if (!w)
            return -ENOMEM;
        k->waits = w;
        k->wcap = cap;
    }
    k->waits[k->nwaits++] =
        (struct ct_kwait){e->tsd, e->ts_ns, e->rec_corr, e->wait_stream, e->stream};
    return 0;
}

static int set_name(struct parse *P, const char *s, size_t n)
{
    if (n + 1 > P->name_cap) {
        size_t cap = n + 64;
        char *b = realloc(P->name, cap);
        if (!b)
            return -ENOMEM;
        P->name = b;
        P->name_cap = cap;
    }
    memcpy(P->name, s, n);
    P->name[n] = 0;
    P->name_n = n;
    return 0;
}

static int parse_event(struct parse *P)
{
    struct ev e = {0};
    e.stream = -1;
    e.corr = -1;
    e.coll.elem_size = 1;
    e.wait_stream = -1;
    e.rec_corr = -1;
    P->name_n = 0;
    if (P->name)
        P->name[0] = 0;
    char key[64];
    size_t n;
    for (int first = 1;; first = 0) {
        int r = member_key(P, key, sizeof(key), &n, first);
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        int t = ct_jlex_next_fast(&P->lx);
        const char *s = P->lx.s;
        size_t sn = P->lx.n;
        if (KEY("ph") && t == CT_JT_STR) {
            e.ph = sn ? s[0] : 0;
        } else if (KEY("cat") && t == CT_JT_STR) {
            e.cat = kcat(s, sn);
        } else if (KEY("name") && t == CT_JT_STR) {
            if (set_name(P, s, sn))
                return snprintf(P->lx.err, sizeof(P->lx.err), "out of memory"), -1;
        } else if (KEY("ts") && t == CT_JT_NUM) {
            e.has_ts = !ct_jnum_parse(s, sn, &e.ts_ns, &e.tsd, &e.ts_int);
        } else if (KEY("dur") && t == CT_JT_NUM) {
            int di;
            e.has_dur = !ct_jnum_parse(s, sn, &e.dur_ns, &e.durd, &di);
        } else if (KEY("args") && t == CT_JT_OBJ) {
            if (parse_args(P, &e) < 0)
                return -1;
        } else if (skip_value(P, t)) {
            return -1;
        }
        if ((r = next_member(P, CT_JT_OBJ_END)) < 0)
            return -1;
        if (r == 0)
            break;
    }
    P->k->events++;
    if (!e.has_ts || !e.ts_int)
        P->k->ts_float = 1;
    /* HTA drops rows without dur or cat, and cat "Trace" */
    if (!e.has_ts || !e.has_dur || e.cat == CT_KC_NONE || e.cat == CT_KC_TRACE)
        return 0;
    if (store(P, &e) || store_wait(P->k, &e))
        return snprintf(P->lx.err, sizeof(P->lx.err), "out of memory"), -1;
    return 0;
}

static int parse_events(struct parse *P)
{
    int t = ct_jlex_next_fast(&P->lx);
    if (t != CT_JT_ARR) {
        if (t != CT_JT_ERR)
            snprintf(P->lx.err, sizeof(P->lx.err), "traceEvents is not an array");
        return -1;
    }
    for (int first = 1;; first = 0) {
        t = ct_jlex_next_fast(&P->lx);
        if (first && t == CT_JT_ARR_END)
            return 0;
        if (t == CT_JT_OBJ) {
            if (parse_event(P))
                return -1;
        } else if (t == CT_JT_ERR || t == CT_JT_EOF || skip_value(P, t)) {
            if (t == CT_JT_EOF)
                snprintf(P->lx.err, sizeof(P->lx.err), "input ends inside traceEvents");
            return -1;
        }
        int r = next_member(P, CT_JT_ARR_END);
        if (r <= 0)
            return r;
    }
}

static int parse_dist(struct parse *P)
{
    if (expect(P, CT_JT_OBJ, "distributedInfo is not an object"))
        return -1;
    char key[64];
    size_t n;
    for (int first = 1;; first = 0) {
        int r = member_key(P, key, sizeof(key), &n, first);
        if (r <= 0)
            return r;
        int t = ct_jlex_next_fast(&P->lx);
        if (KEY("rank") && t == CT_JT_NUM)
            P->p->rank = ct_jnum_i64(P->lx.s, P->lx.n);
        else if (KEY("world_size") && t == CT_JT_NUM)
            P->k->world_size = ct_jnum_i64(P->lx.s, P->lx.n);
        else if (skip_value(P, t))
            return -1;
        if ((r = next_member(P, CT_JT_OBJ_END)) <= 0)
            return r;
    }
}

static int parse_top(struct parse *P, int *saw_events)
{
    int t = ct_jlex_next_fast(&P->lx);
    if (t != CT_JT_OBJ) {
        if (t != CT_JT_ERR)
            snprintf(P->lx.err, sizeof(P->lx.err), "not a Kineto trace: expected '{'");
        return -1;
    }
    char key[64];
    size_t n;
    for (int first = 1;; first = 0) {
        int r = member_key(P, key, sizeof(key), &n, first);
        if (r <= 0)
            return r;
        if (KEY("traceEvents")) {
            *saw_events = 1;
            if (parse_events(P))
                return -1;
        } else if (KEY("distributedInfo")) {
            if (parse_dist(P))
                return -1;
        } else {
            t = ct_jlex_next_fast(&P->lx);
            if (KEY("displayTimeUnit") && t == CT_JT_STR)
                P->k->display_ns = P->lx.n == 2 && !memcmp(P->lx.s, "ns", 2);
            else if (KEY("baseTimeNanoseconds") && t == CT_JT_NUM)
                P->k->base_ns = ct_jnum_i64(P->lx.s, P->lx.n);
            else if (skip_value(P, t))
                return -1;
        }
        if ((r = next_member(P, CT_JT_OBJ_END)) <= 0)
            return r;
    }
}

static int load(const char *path, struct src *S, int gz, struct ct_proc *p, char *err,
                size_t errlen);

static void free_state(void *k)
{
    ct_kineto_free(k);
}

static int proc_init(const char *path, struct ct_proc *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof(*p));
    ct_life_init(&p->life);
    p->last_ns = INT64_MIN; /* no record of the trace's own (timeline.h) */
    p->rank = -1;
    p->ppid = UINT32_MAX; /* no parent: a Kineto file is a rank of its own */
    p->path = strdup(path);
    p->host = strdup("");
    p->source = CT_SOURCE_KINETO;
    p->reader_data = calloc(1, sizeof(struct ct_kineto));
    p->reader_free = free_state;
    if (!p->path || !p->host || !p->reader_data) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -ENOMEM;
    }
    p->cov.processes = 1;
    return 0;
}

int ct_kineto_load_mem(const void *data, size_t n, const char *name, struct ct_proc *p, char *err,
                       size_t errlen)
{
    int rc = proc_init(name, p, err, errlen);
    if (rc)
        return rc;
    struct src S = {.fd = -1, .mem = data, .mlen = n};
    return load(name, &S, 0, p, err, errlen);
}

int ct_kineto_load(const char *path, struct ct_proc *p, char *err, size_t errlen)
{
    int rc = proc_init(path, p, err, errlen);
    if (rc)
        return rc;
    struct src S = {.fd = -1};
    int gz = ct_ends_with(path, ".gz");
    S.fd = open(path, O_RDONLY | O_CLOEXEC);
    if (S.fd < 0) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    if (gz) {
        S.gz = gzdopen(S.fd, "rb");
        if (!S.gz) {
            close(S.fd);
            snprintf(err, errlen, "%s: out of memory", path);
            return -ENOMEM;
        }
        gzbuffer(S.gz, 1u << 18);
    }
    /* A plain file is lexed in place from a read-only mapping: no copy
     * into a window (reading it costs a tenth of the decoding time) */
    struct stat st;
    void *map = MAP_FAILED;
    if (!gz && fstat(S.fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
        (uint64_t)st.st_size <= SIZE_MAX) {
        map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, S.fd, 0);
        if (map != MAP_FAILED) {
            madvise(map, (size_t)st.st_size, MADV_SEQUENTIAL);
            S.mem = map;
            S.mlen = (size_t)st.st_size;
        }
    }
    rc = load(path, &S, gz, p, err, errlen);
    if (map != MAP_FAILED)
        munmap(map, S.mlen);
    if (S.gz)
        gzclose(S.gz);
    else
        close(S.fd);
    return rc;
}

static int load(const char *path, struct src *S, int gz, struct ct_proc *p, char *err,
                size_t errlen)
{
    struct parse P = {.k = ct_kin(p), .p = p};
    int rc = S->mem ? ct_jlex_init_mem(&P.lx, S->mem, S->mlen) : ct_jlex_init(&P.lx, src_read, S);
    int saw = 0;
    if (!rc && parse_top(&P, &saw) == 0 && !saw) {
        snprintf(P.lx.err, sizeof(P.lx.err), "not a Kineto trace: no traceEvents");
        P.lx.off = 0;
        rc = -EINVAL;
    }
    if (!rc && !P.lx.err[0]) {
        /* trailing bytes after the object */
        int t = ct_jlex_next(&P.lx);
        if (t != CT_JT_EOF && t != CT_JT_ERR)
            snprintf(P.lx.err, sizeof(P.lx.err), "data after the end of the trace");
    }
    if (!rc && P.lx.err[0]) {
        const char *gzerr = NULL;
        int zerr = 0;
        if (S->gz)
            gzerr = gzerror(S->gz, &zerr);
        const char *what = P.lx.io_err && gzerr && zerr ? gzerr : P.lx.err;
        if (!saw || (P.k->events == 0 && P.k->nrows == 0 && !P.k->cpu_unstored)) {
            snprintf(err, errlen, "%s: byte %llu%s: %s", path, (unsigned long long)P.lx.off,
                     gz ? " of the decompressed JSON" : "", what);
            rc = -EINVAL;
        } else {
            snprintf(P.k->warn, sizeof(P.k->warn),
                     "%s: damaged at byte %llu%s: %s; decoded the %llu events before it", path,
                     (unsigned long long)P.lx.off, gz ? " of the decompressed JSON" : "", what,
                     (unsigned long long)P.k->events);
            p->cov.truncated = 1;
        }
    } else if (rc == -EINVAL) {
        snprintf(err, errlen, "%s: %s", path, P.lx.err);
    } else if (rc) {
        snprintf(err, errlen, "%s: out of memory", path);
    }
    ct_jlex_free(&P.lx);
    free(P.name);
    return rc;
}

const char *ct_kineto_warning(const struct ct_proc *p)
{
    const struct ct_kineto *k = ct_kin(p);
    return k && k->warn[0] ? k->warn : NULL;
}

const char *ct_kineto_note(const struct ct_proc *p)
{
    const struct ct_kineto *k = ct_kin(p);
    return k && k->note[0] ? k->note : NULL;
}

void ct_kineto_free(struct ct_kineto *k)
{
    if (!k)
        return;
    free(k->rows);
    free(k->colls);
    free(k->waits);
    for (size_t i = 0; i < k->nnames; i++)
        free(k->names[i]);
    free(k->names);
    free(k->hash);
    free(k->hta.streams);
    free(k);
}
