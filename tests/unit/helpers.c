#include "tests/unit/helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

/* The directories th_tmpdir made in this process, removed when it exits
 * (each check test runs in a process of its own) unless CT_KEEP_TMP is set:
 * a full test run made hundreds of them. */
static char made[16][256];
static int nmade;

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    remove(path); /* best effort: go on */
    return 0;
}

static void remove_made(void)
{
    for (int i = 0; i < nmade; i++)
        nftw(made[i], remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

const char *th_tmpdir(void)
{
    static char dir[256];
    static int shm_set;
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%s/cutrace-test-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(dir))
        abort();
    if (nmade < (int)(sizeof(made) / sizeof(made[0])) && !getenv("CT_KEEP_TMP")) {
        if (nmade == 0)
            atexit(remove_made);
        snprintf(made[nmade++], sizeof(made[0]), "%s", dir);
    }
    if (!shm_set++ && !getenv("CUTRACE_TEST_SHM_DIR")) {
        /* The live mappings (src/live.h) of what this test records, its own
         * recorders and the programs it starts, go to a folder of the
         * test's (and are removed with it) instead of /dev/shm: a process a
         * test kills leaves its mapping there. Readers in this process and
         * the cutrace commands it runs look there too. */
        char shm[300];
        snprintf(shm, sizeof(shm), "%s/shm", dir);
        if (mkdir(shm, 0700) == 0)
            setenv("CUTRACE_TEST_SHM_DIR", shm, 1);
    }
    return dir;
}

const char *th_path(char *buf, size_t n, const char *dir, const char *name)
{
    snprintf(buf, n, "%s/%s", dir, name);
    return buf;
}

uint8_t *th_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc(n > 0 ? (size_t)n : 1);
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return p;
}

int th_write_file(const char *path, const uint8_t *p, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -errno;
    size_t w = fwrite(p, 1, len, f);
    fclose(f);
    return w == len ? 0 : -EIO;
}

static int on_rec(void *ctx, const struct ct_record *r)
{
    struct th_trace *t = ctx;
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 256;
        t->recs = realloc(t->recs, t->cap * sizeof(*t->recs));
    }
    t->recs[t->n++] = *r;
    return 0;
}

static void read_all(struct th_trace *t)
{
    if (t->open_rc)
        return;
    struct ct_chunk_sink sink = {t, NULL, on_rec, NULL, NULL};
    while (ct_reader_next(&t->rd, &sink) > 0)
        ;
}

void th_trace_read_mem(struct th_trace *t, const uint8_t *p, size_t len)
{
    memset(t, 0, sizeof(*t));
    t->open_rc = ct_reader_open_mem(&t->rd, p, len);
    read_all(t);
}

void th_trace_read_file(struct th_trace *t, const char *path)
{
    memset(t, 0, sizeof(*t));
    t->open_rc = ct_reader_open(&t->rd, path);
    read_all(t);
}

void th_trace_free(struct th_trace *t)
{
    if (!t->open_rc)
        ct_reader_close(&t->rd);
    free(t->recs);
    memset(t, 0, sizeof(*t));
}

int th_emulated_skip(const char *why)
{
    const char *emu = getenv("CT_EMULATED");
    if (!emu || !*emu)
        return 0;
    fprintf(stderr, "skipped under %s: %s\n", emu, why);
    return 1;
}

const char *th_proc_meta(const struct th_trace *t, const char *key, uint64_t *when)
{
    const char *v = NULL;
    for (size_t i = 0; i < t->n; i++) {
        const struct ct_record *r = &t->recs[i];
        if (r->kind == CT_REC_META && r->f[CT_META_SCOPE] == CT_SCOPE_PROCESS &&
            !strcmp(ct_reader_string(&t->rd, r->f[CT_META_KEY]), key)) {
            v = ct_reader_string(&t->rd, r->f[CT_META_VALUE]);
            if (when)
                *when = r->f[CT_META_TIME];
        }
    }
    return v;
}

size_t th_count_kind(const struct th_trace *t, unsigned kind)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += t->recs[i].kind == kind;
    return n;
}

int th_start(const char *path, size_t ring_bytes, unsigned flush_ms)
{
    struct ct_recorder_config cfg = {
        .path = path,
        .ring_bytes = ring_bytes,
        .zstd_level = 3,
        .flush_ms = flush_ms,
        .pid = (uint32_t)getpid(),
        .max_strings = 4096,
        .string_bytes = 1 << 20,
    };
    struct ct_meta_kv meta[] = {
        {CT_SCOPE_PROCESS, 0, "host", "testhost"},
        {CT_SCOPE_PROCESS, 0, "rank", "3"},
    };
    return ct_recorder_start(&cfg, meta, 2);
}

int th_emit_marks(int n)
{
    int ok = 0;
    for (int i = 0; i < n; i++) {
        uint64_t mark[CT_MARK_NFIELDS] = {ct_clock_now(), ct_intern("d"), ct_intern("m")};
        ok += ct_emit(CT_REC_NVTX_MARK, 0, mark, CT_MARK_NFIELDS) == 0;
    }
    return ok;
}
