/*
 * Flight recorder (CUTRACE_FLIGHT=SECONDS): the writer keeps its compressed
 * frames in memory instead of writing them, dropping those older than the
 * window (and the oldest beyond CUTRACE_FLIGHT_MB), and writes the window
 * out as a trace file of its own when asked: SIGUSR2, a fatal signal,
 * `cutrace dump-now PID`, or a suspected hang (hang detection itself lives
 * here too, and also works without the flight recorder).
 *
 * A dump is an ordinary trace: the header and metadata chunk kept from the
 * start, then one or more chunks defining every string and repeating every
 * metadata record seen so far (their first definitions may have been in
 * frames that left the window), an error record saying why it was written,
 * the frames of the window, and a footer. It is named after the trace the
 * process would have written: <name>-flight<N>.cutrace.
 *
 * Runs on the writer thread, except the request functions (async-signal-
 * safe: one atomic store).
 */
#include "src/recorder_int.h"

#include "src/ownfd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

struct ct_flight_frame {
    uint8_t *p;
    size_t len;
    uint64_t at_ns; /* when it was made */
};

#define CT_FLIGHT_ISSUES 64

struct ct_flight {
    uint64_t window_ns, max_bytes, hang_ns;
    char base[4096]; /* trace path without ".cutrace" */
    struct ct_buf head;
    int head_done;
    struct ct_flight_frame *q;
    size_t first, n, cap; /* live frames are q[first .. n) */
    uint64_t bytes;
    unsigned dumps;
    uint64_t *meta; /* archived metadata records, CT_META_NFIELDS each */
    size_t nmeta, meta_cap;
    /* hang detection: latest NCCL issue and completion on the trace clock,
     * and the latest issues (a ring), to know how long the oldest op issued
     * after the last completion has waited */
    uint64_t last_issue, last_complete;
    uint64_t issues[CT_FLIGHT_ISSUES];
    unsigned nissues;
    int completions_seen, hang_fired;
};

static struct ct_flight g_fl;
static _Atomic int g_request; /* enum ct_flight_reason, 0 none */

int ct_flight_on(void)
{
    return g_fl.window_ns != 0;
}

void ct_flight_init(const struct ct_recorder_config *cfg)
{
    ct_flight_free();
    g_fl.window_ns = cfg->flight_ns;
    g_fl.max_bytes = cfg->flight_bytes ? cfg->flight_bytes : (uint64_t)256 << 20;
    g_fl.hang_ns = cfg->hang_ns;
    snprintf(g_fl.base, sizeof(g_fl.base), "%s", cfg->path ? cfg->path : "trace");
    size_t len = strlen(g_fl.base);
    if (len > 8 && strcmp(g_fl.base + len - 8, ".cutrace") == 0)
        g_fl.base[len - 8] = 0;
    atomic_store(&g_request, 0);
}

void ct_flight_free(void)
{
    for (size_t i = g_fl.first; i < g_fl.n; i++)
        free(g_fl.q[i].p);
    free(g_fl.q);
    free(g_fl.meta);
    ct_buf_free(&g_fl.head);
    uint64_t hang = g_fl.hang_ns;
    memset(&g_fl, 0, sizeof(g_fl));
    g_fl.hang_ns = hang;
}

void ct_flight_head_done(void)
{
    g_fl.head_done = 1;
}

static void evict_oldest(void)
{
    free(g_fl.q[g_fl.first].p);
    g_fl.bytes -= g_fl.q[g_fl.first].len;
    g_fl.first++;
}

int ct_flight_keep(const uint8_t *p, size_t len, uint64_t now_ns)
{
    if (!g_fl.head_done) {
        if (ct_buf_reserve(&g_fl.head, g_fl.head.len + len))
            return -ENOMEM;
        memcpy(g_fl.head.p + g_fl.head.len, p, len);
        g_fl.head.len += len;
        return 0;
    }
    while (g_fl.first < g_fl.n && (g_fl.bytes + len > g_fl.max_bytes ||
                                   now_ns - g_fl.q[g_fl.first].at_ns > g_fl.window_ns))
        evict_oldest();
    if (g_fl.n == g_fl.cap) {
        size_t live = g_fl.n - g_fl.first;
        if (live && g_fl.first)
            memmove(g_fl.q, g_fl.q + g_fl.first, live * sizeof(*g_fl.q));
        g_fl.n = live;
        g_fl.first = 0;
        if (live == g_fl.cap) {
            size_t c = g_fl.cap ? g_fl.cap * 2 : 256;
            void *q = realloc(g_fl.q, c * sizeof(*g_fl.q));
            if (!q)
                return -ENOMEM;
            g_fl.q = q;
            g_fl.cap = c;
        }
    }
    uint8_t *copy = malloc(len);
    if (!copy)
        return -ENOMEM;
    memcpy(copy, p, len);
    g_fl.q[g_fl.n++] = (struct ct_flight_frame){copy, len, now_ns};
    g_fl.bytes += len;
    return 0;
}

/* Metadata seen so far, to repeat in a dump (stacks excepted: there is one
 * per blocking call, and those of the window are in its frames). */
static void archive_meta(const uint64_t *f)
{
    if (f[CT_META_SCOPE] == CT_SCOPE_STACK)
        return;
    if (g_fl.nmeta == g_fl.meta_cap) {
        size_t c = g_fl.meta_cap ? g_fl.meta_cap * 2 : 256;
        uint64_t *m = realloc(g_fl.meta, c * CT_META_NFIELDS * sizeof(*m));
        if (!m)
            return;
        g_fl.meta = m;
        g_fl.meta_cap = c;
    }
    memcpy(g_fl.meta + g_fl.nmeta++ * CT_META_NFIELDS, f, CT_META_NFIELDS * sizeof(*f));
}

static int is_nccl_kernel(uint64_t name)
{
    const char *s;
    uint32_t len;
    if (!name || ct_strtab_get(&ct_strings, (uint32_t)name, &s, &len) != 0)
        return 0;
    return (len >= 13 && memcmp(s, "ncclDevKernel", 13) == 0) ||
           (len >= 10 && memcmp(s, "ncclKernel", 10) == 0);
}

void ct_flight_saw(unsigned kind, const uint64_t *f)
{
    if (kind == CT_REC_META && g_fl.window_ns) {
        archive_meta(f);
    } else if (kind == CT_REC_NCCL && g_fl.hang_ns) {
        if (f[CT_NCCL_START] > g_fl.last_issue)
            g_fl.last_issue = f[CT_NCCL_START];
        g_fl.issues[g_fl.nissues++ % CT_FLIGHT_ISSUES] = f[CT_NCCL_START];
    } else if (kind == CT_REC_GPU && g_fl.hang_ns &&
               (f[CT_GPU_TYPE] == CT_GPU_NCCL ||
                (f[CT_GPU_TYPE] == CT_GPU_KERNEL && is_nccl_kernel(f[CT_GPU_NAME])))) {
        if (f[CT_GPU_END] > g_fl.last_complete) {
            g_fl.last_complete = f[CT_GPU_END];
            g_fl.hang_fired = 0;
        }
        g_fl.completions_seen = 1;
    }
}

void ct_flight_request(int reason)
{
    int expected = 0;
    atomic_compare_exchange_strong(&g_request, &expected, reason);
}

int ct_flight_hang_check(uint64_t now_ns, char *what, size_t n)
{
    /* A hang: an NCCL op issued after the latest completion has waited
     * CUTRACE_HANG_S with nothing completing. Counted from that op's issue,
     * not from the completion: a rank that idles, then issues an op, is not
     * hung while the op runs. Only once GPU times of NCCL ops have been seen
     * at all (without them nothing ever "completes"). */
    if (!g_fl.hang_ns || !g_fl.completions_seen || g_fl.hang_fired ||
        g_fl.last_issue <= g_fl.last_complete)
        return 0;
    uint64_t since = g_fl.last_issue; /* the oldest issue still in the ring */
    unsigned k = g_fl.nissues < CT_FLIGHT_ISSUES ? g_fl.nissues : CT_FLIGHT_ISSUES;
    for (unsigned i = 0; i < k; i++)
        if (g_fl.issues[i] > g_fl.last_complete && g_fl.issues[i] < since)
            since = g_fl.issues[i];
    if (now_ns <= since || now_ns - since < g_fl.hang_ns)
        return 0;
    g_fl.hang_fired = 1;
    snprintf(what, n,
             "hang: no NCCL op completed for %.1f s while ops were pending (last completion at "
             "%llu ns, last op issued at %llu ns)",
             (double)(now_ns - g_fl.last_complete) / 1e9, (unsigned long long)g_fl.last_complete,
             (unsigned long long)g_fl.last_issue);
    return 1;
}

int ct_flight_take_request(void)
{
    return atomic_exchange(&g_request, 0);
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int compress_chunk(int fd)
{
    if (ct_chunk_finish(&ct_rec.enc, &ct_rec.payload) ||
        ct_buf_reserve(&ct_rec.frame, ZSTD_compressBound(ct_rec.payload.len)))
        return -1;
    size_t z = ZSTD_compress2(ct_rec.cctx, ct_rec.frame.p, ct_rec.frame.cap, ct_rec.payload.p,
                              ct_rec.payload.len);
    return ZSTD_isError(z) ? -1 : write_all(fd, ct_rec.frame.p, z);
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

const char *ct_flight_dump(const char *why, uint64_t now_ns, char *path, size_t pathlen)
{
    snprintf(path, pathlen, "%s-flight%u.cutrace", g_fl.base, g_fl.dumps++);
    int slot = ct_own_open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600, 0);
    if (slot < 0)
        return strerror(-slot);
    int fd = atomic_load(&ct_own_slots[slot].fd);
    int bad = write_all(fd, g_fl.head.p, g_fl.head.len);
    /* every string, then the metadata, in chunks of bounded size */
    uint32_t limit = ct_strtab_limit(&ct_strings);
    uint64_t tid = (uint64_t)ct_rec.writer_tid;
    ct_chunk_begin(&ct_rec.enc, tid, ct_rec.next_seq++, now_ns);
    for (uint32_t id = 1; id < limit && !bad; id++) {
        const char *s;
        uint32_t len;
        if (ct_strtab_get(&ct_strings, id, &s, &len) != 0)
            continue;
        if (ct_chunk_add_string(&ct_rec.enc, id, s, len)) {
            bad = 1;
            break;
        }
        if (ct_rec.enc.strings.len > (8u << 20)) {
            bad = compress_chunk(fd);
            ct_chunk_begin(&ct_rec.enc, tid, ct_rec.next_seq++, now_ns);
        }
    }
    for (size_t i = 0; i < g_fl.nmeta && !bad; i++) {
        if (ct_chunk_add_record(&ct_rec.enc, CT_REC_META, g_fl.meta + i * CT_META_NFIELDS,
                                CT_META_NFIELDS)) {
            bad = 1;
            break;
        }
        if (ct_rec.enc.nrecords >= 32768) {
            bad = compress_chunk(fd);
            ct_chunk_begin(&ct_rec.enc, tid, ct_rec.next_seq++, now_ns);
        }
    }
    if (!bad) {
        char what[512];
        snprintf(what, sizeof(what),
                 "flight recorder: written on %s; it holds the last %.1f s (CUTRACE_FLIGHT)", why,
                 (double)g_fl.window_ns / 1e9);
        uint32_t id = ct_intern(what);
        uint64_t f[CT_ERROR_NFIELDS] = {now_ns, id, 0};
        bad = (id && ct_chunk_add_string(&ct_rec.enc, id, what, (uint32_t)strlen(what))) ||
              ct_chunk_add_record(&ct_rec.enc, CT_REC_ERROR, f, CT_ERROR_NFIELDS) ||
              compress_chunk(fd);
    }
    uint64_t frames = 0;
    for (size_t i = g_fl.first; i < g_fl.n && !bad; i++, frames++)
        bad = write_all(fd, g_fl.q[i].p, g_fl.q[i].len);
    if (!bad) {
        uint8_t ft[8 + CT_FOOTER_SIZE];
        put_le32(ft, CT_SKIP_MAGIC_FOOTER);
        put_le32(ft + 4, CT_FOOTER_SIZE);
        memcpy(ft + 8, CT_FOOTER_MAGIC, 8);
        put_le64(ft + 16, frames);
        put_le64(ft + 24, 0); /* records: not counted per window */
        put_le64(ft + 32, atomic_load(&ct_rec.dropped));
        put_le64(ft + 40, now_ns);
        bad = write_all(fd, ft, sizeof(ft));
    }
    ct_own_close(slot);
    return bad ? "write failed" : NULL;
}
