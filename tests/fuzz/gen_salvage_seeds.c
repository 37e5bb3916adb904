/*
 * Writes the seeds of the salvage fuzz target (fuzz_salvage.c) into a
 * folder: real live mappings of a recorder in this process, taken with its
 * writer paused (records in the rings alone, as at a SIGKILL), in the
 * target's compact form. Built with the tests, run by hand when the
 * mapping's layout changes: gen_salvage_seeds tests/fuzz/salvage_seeds
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/live.h"
#include "src/recorder.h"
#include "src/strlog.h"

#define HEAD_IN  1024u
#define SLOTS_IN 64u
#define LOG_OUT  (CT_STRLOG_HDR + 4096u)

static uint64_t get64(const uint8_t *p, size_t off)
{
    uint64_t v;
    memcpy(&v, p + off, 8);
    return v;
}

static void set64(uint8_t *p, size_t off, uint64_t v)
{
    memcpy(p + off, &v, 8);
}

static uint8_t *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc((size_t)len);
    if (p && fread(p, 1, (size_t)len, f) != (size_t)len) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *n = (size_t)len;
    return p;
}

static struct ct_strlog *g_log;

static int relog(void *ctx, uint32_t id, const char *s, uint32_t len)
{
    (void)ctx;
    ct_strlog_append(g_log, id, s, len);
    return 0;
}

/* The mapping now, compacted, into dir/name; deferred: keep the deferred
 * bytes (else the file is the target's 72-byte header). */
static void write_seed(const char *dir, const char *name, int deferred)
{
    size_t n;
    uint8_t *map = slurp(ct_live_where_path(), &n);
    if (!map) {
        fprintf(stderr, "gen_salvage_seeds: cannot read the mapping\n");
        exit(1);
    }
    uint64_t pend_len = deferred ? get64(map, offsetof(struct ct_live_hdr, pend_len)) : 0;
    uint64_t pend_cap = (pend_len + 7) & ~7ull;
    uint32_t hwm;
    memcpy(&hwm, map + offsetof(struct ct_live_hdr, slots_hwm), 4);
    uint64_t slot = get64(map, offsetof(struct ct_live_hdr, slot_bytes));
    uint64_t rings = get64(map, offsetof(struct ct_live_hdr, rings_off));
    size_t out_len = HEAD_IN + SLOTS_IN + LOG_OUT + pend_cap + hwm * slot;
    uint8_t *out = calloc(1, out_len);
    memcpy(out, map, HEAD_IN);
    memcpy(out + HEAD_IN, map + CT_LIVE_SLOTS_OFF, SLOTS_IN);
    uint8_t *region = out + HEAD_IN + SLOTS_IN;
    g_log = ct_strlog_init(region, LOG_OUT);
    ct_strlog_walk(map + CT_LIVE_HDR_BYTES, CT_LIVE_STRLOG_BYTES, relog, NULL);
    memcpy(region + LOG_OUT, map + get64(map, offsetof(struct ct_live_hdr, pend_off)), pend_len);
    memcpy(region + LOG_OUT + pend_cap, map + rings, hwm * slot);
    set64(out, offsetof(struct ct_live_hdr, strlog_bytes), LOG_OUT);
    set64(out, offsetof(struct ct_live_hdr, pend_off), CT_LIVE_HDR_BYTES + LOG_OUT);
    set64(out, offsetof(struct ct_live_hdr, pend_cap), pend_cap);
    set64(out, offsetof(struct ct_live_hdr, rings_off), CT_LIVE_HDR_BYTES + LOG_OUT + pend_cap);
    if (!deferred)
        set64(out, offsetof(struct ct_live_hdr, file_len), 72);
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(out, 1, out_len, f) != out_len) {
        fprintf(stderr, "gen_salvage_seeds: cannot write %s\n", path);
        exit(1);
    }
    fclose(f);
    free(out);
    free(map);
}

static void steps(int from, int to)
{
    for (int i = from; i < to; i++) {
        char msg[32];
        snprintf(msg, sizeof(msg), "ProfilerStep#%d", i);
        uint64_t f[CT_MARK_NFIELDS] = {ct_clock_now(), ct_intern("seed"), ct_intern(msg)};
        ct_emit(CT_REC_NVTX_MARK, 0, f, CT_MARK_NFIELDS);
        uint64_t api[CT_API_NFIELDS] = {0};
        api[CT_API_START] = ct_clock_now();
        api[CT_API_END] = ct_clock_now();
        api[CT_API_NAME] = ct_intern("cuLaunchKernel");
        api[CT_API_KERNEL] = ct_intern("gemm");
        api[CT_API_CORR] = (uint64_t)i + 1;
        api[CT_API_FAMILY] = CT_FAM_LAUNCH;
        ct_emit(CT_REC_API, 0, api, CT_API_NFIELDS);
    }
}

static void *thread_steps(void *arg)
{
    int base = (int)(intptr_t)arg;
    steps(base, base + 20);
    return NULL;
}

static int start(const char *path, uint64_t defer)
{
    struct ct_recorder_config cfg = {.path = path,
                                     .ring_bytes = 4096,
                                     .zstd_level = 1,
                                     .flush_ms = 60000,
                                     .pid = (uint32_t)getpid(),
                                     .max_strings = 4096,
                                     .string_bytes = 1 << 20,
                                     .defer_bytes = defer,
                                     .buffers = CT_LIVE_DIR};
    struct ct_meta_kv meta[] = {{CT_SCOPE_PROCESS, 0, "host", "seedhost"}};
    return ct_recorder_start(&cfg, meta, 1);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_salvage_seeds DIR\n");
        return 2;
    }
    char tmp[] = "/tmp/gen-salvage-XXXXXX", path[256];
    if (!mkdtemp(tmp))
        return 1;
    snprintf(path, sizeof(path), "%s/a.cutrace", tmp);
    if (start(path, 0))
        return 1;
    ct_recorder_flush(5000);
    ct_recorder_pause_writer(1);
    steps(0, 12);
    write_seed(argv[1], "marks", 0);
    struct ct_ring *r = ct_thread_ring();
    uint64_t *w = ct_ring_begin(r, CT_REC_NVTX_MARK, CT_MARK_NFIELDS, 0);
    if (w)
        w[0] = ct_clock_now();
    write_seed(argv[1], "half-written", 0);
    ct_ring_commit(r);
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, thread_steps, (void *)(intptr_t)(100 * (i + 1)));
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    write_seed(argv[1], "threads", 0);
    steps(12, 40); /* around the end of the 4 KiB ring: a pad, then a lap */
    write_seed(argv[1], "lap", 0);
    ct_recorder_pause_writer(0);
    ct_recorder_stop(5000);
    snprintf(path, sizeof(path), "%s/b.cutrace", tmp);
    if (start(path, 1ull << 30))
        return 1;
    ct_recorder_flush(5000);
    ct_recorder_pause_writer(1);
    /* on a thread of its own: this thread's ring is still the first
     * recorder's (a ring is a thread's for its life) */
    pthread_t t;
    pthread_create(&t, NULL, thread_steps, (void *)(intptr_t)0);
    pthread_join(t, NULL);
    write_seed(argv[1], "deferred", 1);
    ct_recorder_pause_writer(0);
    ct_recorder_stop(5000);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
    return system(cmd) == 0 ? 0 : 1;
}
