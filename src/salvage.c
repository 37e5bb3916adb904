/*
 * Salvage (salvage.h): a live mapping read, checked and turned into the
 * frames that complete its trace; the completed trace written in place of
 * the original. Nothing here trusts the mapping: it may be cut, stale or
 * another program's bytes.
 */
#include "src/salvage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "cutrace/format.h"
#include "src/live.h"
#include "src/ownfd.h"
#include "src/ring.h"
#include "src/ringrec.h"
#include "src/strlog.h"

#define CT_SALVAGE_CHUNK_RECORDS 65536u /* as the writer's chunks */
/* a mapping's writer that passed this recently is alive, whatever /proc says
 * (another pid namespace); its passes come every few ms */
#define CT_BEAT_ALIVE_NS (10ull * 1000000000ull)

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
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

/* The header's fields a salvage uses, read (not through the struct's
 * atomics: the bytes may be anyone's) and checked. */
struct hdr {
    uint32_t pid, uid, tsc;
    uint64_t start_ticks, pidns, beat_ns;
    char boot_id[40];
    uint64_t ring_bytes, slot_bytes, rings_off;
    uint32_t max_slots, slots_hwm;
    uint64_t strlog_off, strlog_bytes, pend_off, pend_cap, pend_len;
    uint32_t file_created, state, gpu_mode, str_limit;
    uint64_t dir_dev, dir_ino;
    char trace_name[256];
    struct ct_clock_conv conv;
    uint64_t jr_seq, jr_slot, jr_tail, jr_end;
    uint64_t file_len, next_seq, chunks, records, dropped;
};

#define OFF(f) offsetof(struct ct_live_hdr, f)

static int read_hdr(const uint8_t *p, size_t len, struct hdr *h, char *err, size_t n)
{
    if (len < CT_LIVE_HDR_BYTES || memcmp(p, CT_LIVE_MAGIC, 8) != 0) {
        snprintf(err, n, "not a cutrace live mapping (offset 0: expected the magic \"CTLIVE1\")");
        return -EPROTO;
    }
    if (rd32(p + OFF(version)) != CT_LIVE_VERSION ||
        rd32(p + OFF(hdr_bytes)) != CT_LIVE_HDR_BYTES) {
        snprintf(err, n, "live mapping of version %u (this cutrace reads version %u)",
                 rd32(p + OFF(version)), CT_LIVE_VERSION);
        return -EPROTO;
    }
    memset(h, 0, sizeof(*h));
    h->pid = rd32(p + OFF(pid));
    h->uid = rd32(p + OFF(uid));
    h->tsc = rd32(p + OFF(tsc));
    h->start_ticks = rd64(p + OFF(start_ticks));
    h->pidns = rd64(p + OFF(pidns));
    h->beat_ns = rd64(p + OFF(beat_ns));
    memcpy(h->boot_id, p + OFF(boot_id), sizeof(h->boot_id));
    h->boot_id[sizeof(h->boot_id) - 1] = 0;
    h->ring_bytes = rd64(p + OFF(ring_bytes));
    h->slot_bytes = rd64(p + OFF(slot_bytes));
    h->rings_off = rd64(p + OFF(rings_off));
    h->max_slots = rd32(p + OFF(max_slots));
    h->slots_hwm = rd32(p + OFF(slots_hwm));
    h->strlog_off = rd64(p + OFF(strlog_off));
    h->strlog_bytes = rd64(p + OFF(strlog_bytes));
    h->pend_off = rd64(p + OFF(pend_off));
    h->pend_cap = rd64(p + OFF(pend_cap));
    h->pend_len = rd64(p + OFF(pend_len));
    h->file_created = rd32(p + OFF(file_created));
    h->state = rd32(p + OFF(state));
    h->gpu_mode = rd32(p + OFF(gpu_mode));
    h->str_limit = rd32(p + OFF(str_limit));
    h->dir_dev = rd64(p + OFF(dir_dev));
    h->dir_ino = rd64(p + OFF(dir_ino));
    memcpy(h->trace_name, p + OFF(trace_name), sizeof(h->trace_name));
    h->trace_name[sizeof(h->trace_name) - 1] = 0;
    uint32_t cur = rd32(p + OFF(conv_cur)) & 1u;
    const uint8_t *c = p + OFF(conv) + cur * sizeof(struct ct_live_conv);
    h->conv.anchor.ticks = rd64(c);
    h->conv.anchor.mono_ns = rd64(c + 8);
    memcpy(&h->conv.ns_per_tick, c + 16, sizeof(double));
    h->jr_seq = rd64(p + OFF(jr_seq));
    h->jr_slot = rd64(p + OFF(jr_slot));
    h->jr_tail = rd64(p + OFF(jr_tail));
    h->jr_end = rd64(p + OFF(jr_end));
    h->file_len = rd64(p + OFF(file_len));
    h->next_seq = rd64(p + OFF(next_seq));
    h->chunks = rd64(p + OFF(chunks));
    h->records = rd64(p + OFF(records));
    h->dropped = rd64(p + OFF(dropped));
    /* a conversion that is not a number would make every time garbage:
     * the writer's own rate is within (0, 1e3) ns per tick */
    if (h->tsc && !(h->conv.ns_per_tick > 0.0 && h->conv.ns_per_tick < 1e3))
        h->conv.ns_per_tick = 1.0;
    int ok = h->ring_bytes >= 4096 && h->ring_bytes <= (1ull << 40) &&
             !(h->ring_bytes & (h->ring_bytes - 1)) &&
             h->slot_bytes == CT_LIVE_RING_CTL + h->ring_bytes &&
             h->max_slots <= CT_LIVE_MAX_SLOTS && h->strlog_off == CT_LIVE_HDR_BYTES &&
             h->strlog_bytes <= (1ull << 32) && h->pend_off >= h->strlog_off + h->strlog_bytes &&
             h->pend_cap <= (1ull << 32) && h->rings_off >= h->pend_off + h->pend_cap &&
             h->rings_off <= (1ull << 40);
    if (!ok) {
        snprintf(err, n, "live mapping with an impossible layout (ring size %llu, rings at %llu)",
                 (unsigned long long)h->ring_bytes, (unsigned long long)h->rings_off);
        return -EPROTO;
    }
    if (h->slots_hwm > h->max_slots)
        h->slots_hwm = h->max_slots;
    return 0;
}

int ct_live_map_mem(struct ct_live_map *m, const uint8_t *p, size_t n)
{
    memset(m, 0, sizeof(*m));
    m->fd = -1;
    m->p = p;
    m->len = n;
    struct hdr h;
    char err[160];
    if (read_hdr(p, n, &h, err, sizeof(err)))
        return -EPROTO;
    m->uid = h.uid;
    return 0;
}

int ct_live_map_open(struct ct_live_map *m, const char *path, uid_t owner, char *err, size_t n)
{
    memset(m, 0, sizeof(*m));
    m->fd = -1;
    snprintf(m->path, sizeof(m->path), "%s", path);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        if (e == ELOOP) {
            snprintf(err, n, "%s: a symbolic link, not a mapping: ignored", path);
            return -EPERM;
        }
        snprintf(err, n, "%s: %s", path, strerror(e));
        return -e;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
        snprintf(err, n, "%s: not a regular file with one link: ignored", path);
        close(fd);
        return -EPERM;
    }
    if (owner != (uid_t)-1 && st.st_uid != owner) {
        snprintf(err, n, "%s: owned by uid %u, not by the trace's owner (uid %u): ignored", path,
                 (unsigned)st.st_uid, (unsigned)owner);
        close(fd);
        return -EPERM;
    }
    if (st.st_size < (off_t)CT_LIVE_HDR_BYTES) {
        snprintf(err, n, "%s: not a cutrace live mapping (%lld bytes)", path,
                 (long long)st.st_size);
        close(fd);
        return -EPROTO;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        snprintf(err, n, "%s: cannot map: %s", path, strerror(e));
        close(fd);
        return -e;
    }
    m->p = p;
    m->len = (size_t)st.st_size;
    m->fd = fd;
    m->mapped = 1;
    m->dev = (uint64_t)st.st_dev;
    m->ino = (uint64_t)st.st_ino;
    struct hdr h;
    char why[160];
    if (read_hdr(m->p, m->len, &h, why, sizeof(why))) {
        snprintf(err, n, "%s: %s", path, why);
        ct_live_map_close(m);
        return -EPROTO;
    }
    if (h.uid != (uint32_t)st.st_uid) {
        snprintf(err, n, "%s: its header names uid %u, its owner is uid %u: ignored", path, h.uid,
                 (unsigned)st.st_uid);
        ct_live_map_close(m);
        return -EPERM;
    }
    m->uid = h.uid;
    return 0;
}

void ct_live_map_close(struct ct_live_map *m)
{
    if (m->mapped)
        munmap((void *)m->p, m->len);
    if (m->fd >= 0)
        close(m->fd);
    m->p = NULL;
    m->len = 0;
    m->fd = -1;
    m->mapped = 0;
}

int ct_live_map_find(struct ct_live_map *m, const char *trace_path, uid_t owner, char *err,
                     size_t n)
{
    static const int where[] = {CT_LIVE_DIR, CT_LIVE_SHM};
    int rc = -ENOENT;
    for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
        char path[4200];
        if (ct_live_path(trace_path, where[i], (uint32_t)owner, path, sizeof(path)) != 0)
            continue;
        rc = ct_live_map_open(m, path, owner, err, n);
        if (rc != -ENOENT)
            return rc;
    }
    return rc;
}

static int same_boot(const char *boot_id)
{
    char b[64] = "";
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t r = read(fd, b, sizeof(b) - 1);
        b[r > 0 ? r : 0] = 0;
        close(fd);
    }
    b[strcspn(b, "\n")] = 0;
    return b[0] && !strcmp(b, boot_id);
}

/* 1 alive, 0 gone, per /proc: the pid exists with the same start time and
 * is not a zombie. */
static int proc_alive(uint32_t pid, uint64_t start_ticks)
{
    char p[64], buf[1024];
    snprintf(p, sizeof(p), "/proc/%u/stat", pid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t r = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (r <= 0)
        return 0;
    buf[r] = 0;
    const char *q = strrchr(buf, ')');
    if (!q || q[1] != ' ')
        return 0;
    char state = q[2];
    if (state == 'Z' || state == 'X' || state == 'x')
        return 0;
    q++;
    for (int field = 2; field < 22 && *q; q++)
        if (*q == ' ')
            field++;
    return strtoull(q, NULL, 10) == start_ticks;
}

static uint64_t mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int ct_live_map_owner(const struct ct_live_map *m, uint32_t *pid)
{
    struct hdr h;
    char err[160];
    if (read_hdr(m->p, m->len, &h, err, sizeof(err)))
        return CT_OWNER_ELSEWHERE;
    *pid = h.pid;
    if (!m->mapped) /* bytes given in memory (tests): what they say */
        return CT_OWNER_GONE;
    if (!same_boot(h.boot_id))
        return CT_OWNER_ELSEWHERE;
    if (proc_alive(h.pid, h.start_ticks))
        return CT_OWNER_ALIVE;
    /* another pid namespace sees another process (or none) at that pid:
     * the writer's heartbeat says whether the recorder still runs */
    struct stat ns;
    int same_ns = stat("/proc/self/ns/pid", &ns) == 0 && (uint64_t)ns.st_ino == h.pidns;
    uint64_t now = mono_now();
    if (h.state == CT_LIVE_RECORDING && h.beat_ns <= now && now - h.beat_ns < CT_BEAT_ALIVE_NS &&
        !same_ns)
        return CT_OWNER_ALIVE;
    return CT_OWNER_GONE;
}

const char *ct_live_map_trace_name(const struct ct_live_map *m, char *name, size_t n)
{
    if (!m->p || m->len < CT_LIVE_HDR_BYTES || n < 2)
        return NULL;
    size_t max = n - 1 < 255 ? n - 1 : 255;
    memcpy(name, m->p + OFF(trace_name), max);
    name[max] = 0;
    if (!name[0] || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
        return NULL;
    return name;
}

int ct_live_map_in_dir(const struct ct_live_map *m, const char *dir)
{
    struct stat st;
    if (!m->p || m->len < CT_LIVE_HDR_BYTES || stat(dir, &st) != 0)
        return 0;
    return rd64(m->p + OFF(dir_dev)) == (uint64_t)st.st_dev &&
           rd64(m->p + OFF(dir_ino)) == (uint64_t)st.st_ino;
}

int ct_live_map_finished(const struct ct_live_map *m)
{
    return m->p && m->len >= CT_LIVE_HDR_BYTES && rd32(m->p + OFF(state)) == CT_LIVE_FINISHED;
}

/* ---- building the salvage ---- */

struct strs {
    uint32_t max_id;
    uint64_t n;
    struct ct_chunk_enc *enc; /* where to define them (NULL: only count) */
    int rc;
};

static int on_log_string(void *ctx, uint32_t id, const char *s, uint32_t len)
{
    struct strs *st = ctx;
    if (id >= (1u << 24))
        return 0; /* beyond any id a reader keeps: not ours */
    if (id > st->max_id)
        st->max_id = id;
    st->n++;
    if (st->enc && ct_chunk_add_string(st->enc, id, s, len) != 0)
        return -ENOMEM;
    return 0;
}

struct builder {
    struct ct_chunk_enc enc;
    struct ct_buf payload, frame;
    ZSTD_CCtx *cctx;
    struct ct_buf *out;
    uint64_t seq, chunks, records;
    int open;
};

static int frame_out(struct builder *b)
{
    if (!b->open)
        return 0;
    b->open = 0;
    if (b->enc.nrecords == 0 && b->enc.nstrings == 0)
        return 0;
    int rc = ct_chunk_finish(&b->enc, &b->payload);
    if (rc)
        return rc;
    size_t bound = ZSTD_compressBound(b->payload.len);
    if (ct_buf_reserve(&b->frame, bound))
        return -ENOMEM;
    size_t z = ZSTD_compress2(b->cctx, b->frame.p, bound, b->payload.p, b->payload.len);
    if (ZSTD_isError(z))
        return -EIO;
    if (ct_buf_reserve(b->out, z))
        return -ENOMEM;
    memcpy(b->out->p + b->out->len, b->frame.p, z);
    b->out->len += z;
    b->chunks++;
    b->records += b->enc.nrecords;
    return 0;
}

static void chunk_open(struct builder *b, uint64_t tid, uint64_t t0)
{
    ct_chunk_begin(&b->enc, tid, b->seq++, t0);
    b->open = 1;
}

/* One ring's control block and records, checked. */
struct ring_view {
    uint64_t head, tail, pending, dropped, dropped_reported, size;
    uint32_t tid;
    const uint8_t *data;
};

static int ring_view(const uint8_t *map, size_t len, const struct hdr *h, uint32_t i,
                     struct ring_view *v)
{
    uint64_t off = h->rings_off + (uint64_t)i * h->slot_bytes;
    if (off > len || len - off < h->slot_bytes)
        return -1; /* the mapping is cut before this ring's end */
    const uint8_t *c = map + off;
    v->head = rd64(c + 0);
    v->pending = rd64(c + 16);
    v->dropped = rd64(c + 24);
    v->tail = rd64(c + 64);
    v->dropped_reported = rd64(c + 72);
    v->size = rd64(c + 136);
    v->tid = rd32(c + 152);
    int32_t slot = (int32_t)rd32(c + 160);
    v->data = c + CT_LIVE_RING_CTL;
    if (v->size != h->ring_bytes || slot != (int32_t)i || v->tail > v->head ||
        v->head - v->tail > v->size)
        return -1;
    return 0;
}

static int ring_record(const struct ring_view *v, const struct hdr *h, uint64_t pos, uint64_t *need,
                       unsigned *kind, unsigned *nf, uint64_t *f);

/* The STR fields' largest id among a ring's records (new ids must not
 * collide with any a record names). */
static uint32_t ring_max_str(const struct ring_view *v, const struct hdr *h)
{
    uint32_t mx = 0;
    uint64_t f[CT_MAX_FIELDS], need;
    unsigned kind, nf;
    for (uint64_t pos = v->tail; pos < v->head; pos += need) {
        if (!ring_record(v, h, pos, &need, &kind, &nf, f))
            break;
        for (unsigned k = 0; k < nf; k++)
            if (ct_kind_table[kind].codec[k] == CT_CODEC_STR && f[k] < (1u << 24) && f[k] > mx)
                mx = (uint32_t)f[k];
    }
    return mx;
}

/* The first record of a ring at pos: its header and fields, or 0 (damage:
 * it runs past the ring or the commit marker, or is not a record). *need
 * is its size; kind 0 (a pad) returns 1 with nf 0. */
static int ring_record(const struct ring_view *v, const struct hdr *h, uint64_t pos, uint64_t *need,
                       unsigned *kind, unsigned *nf, uint64_t *f)
{
    uint64_t at = pos & (v->size - 1);
    if (v->size - at < 8)
        return 0;
    const uint8_t *rh = v->data + at;
    unsigned nw = rh[2], flags = rh[3];
    *kind = (unsigned)(rh[0] | rh[1] << 8);
    *need = 8u + (uint64_t)nw * 8u;
    if (*need > v->size - at || *need > v->head - pos)
        return 0;
    *nf = 0;
    if (*kind == 0)
        return 1;
    uint64_t w[255];
    memcpy(w, rh + 8, (size_t)nw * 8u);
    *nf = ct_ringrec_fields(*kind, flags, w, nw, &h->conv, (int)h->tsc, f);
    return *nf != 0;
}

/* The time of a ring's first record (0 when it has none readable). */
static uint64_t ring_first_time(const struct ring_view *v, const struct hdr *h)
{
    uint64_t f[CT_MAX_FIELDS], need;
    unsigned kind, nf;
    for (uint64_t pos = v->tail; pos < v->head; pos += need) {
        if (!ring_record(v, h, pos, &need, &kind, &nf, f))
            return 0;
        if (kind)
            return f[0];
    }
    return 0;
}

/* A record that makes a process worth a trace (src/writer_file.c's rule,
 * short of the process's ancestry, which the mapping does not hold: any
 * data I/O counts). */
static int worth_a_trace(unsigned kind, const uint64_t *f)
{
    switch (kind) {
    case CT_REC_API:
    case CT_REC_GPU:
    case CT_REC_NCCL:
    case CT_REC_NVTX_RANGE:
    case CT_REC_NVTX_MARK: return 1;
    case CT_REC_IO: return (int64_t)f[CT_IO_RESULT] > 0 && f[CT_IO_BYTES] > 0;
    default: return 0;
    }
}

/* Adds a ring's records [tail, head) to the builder; stops at damage.
 * *worth: one of them makes the process worth a trace. */
static int add_ring(struct builder *b, const struct ring_view *v, const struct hdr *h,
                    struct ct_salvage_info *info, int *damaged, int *worth)
{
    uint64_t f[CT_MAX_FIELDS], need;
    unsigned kind, nf;
    int first = 1;
    for (uint64_t pos = v->tail; pos < v->head; pos += need) {
        if (!ring_record(v, h, pos, &need, &kind, &nf, f)) {
            *damaged = 1; /* nothing after it is trusted */
            break;
        }
        if (kind == 0)
            continue; /* the pad at the end of a lap */
        int fresh = b->open && b->enc.nrecords == 0 && b->enc.tid == v->tid;
        if ((first && !fresh) || b->enc.nrecords >= CT_SALVAGE_CHUNK_RECORDS) {
            int rc = frame_out(b);
            if (rc)
                return rc;
            chunk_open(b, v->tid, f[0]);
        }
        first = 0;
        int rc = ct_chunk_add_record(&b->enc, kind, f, nf);
        if (rc)
            return rc;
        info->records++;
        *worth |= worth_a_trace(kind, f);
        const struct ct_kind_desc *d = &ct_kind_table[kind];
        uint64_t end = d->nfields > 1 && d->codec[1] == CT_CODEC_END ? f[1] : f[0];
        if (end > info->last_ns && end < (1ull << 62))
            info->last_ns = end;
    }
    return 0;
}

static int define_strings(struct builder *b, const uint8_t *map, size_t len, const struct hdr *h,
                          struct strs *st)
{
    if (h->strlog_off + h->strlog_bytes > len)
        return 0;
    st->enc = &b->enc;
    long rc = ct_strlog_walk(map + h->strlog_off, (size_t)h->strlog_bytes, on_log_string, st);
    st->enc = NULL;
    return rc < 0 ? (int)rc : 0;
}

static int add_string_now(struct builder *b, uint32_t id, const char *s)
{
    return ct_chunk_add_string(&b->enc, id, s, (uint32_t)strlen(s));
}

/* Where the completed trace's first part comes from, and how long it is:
 * what the process wrote whole, and whether the frame it was writing made
 * it (*frame_done: then its ring's records up to jr_tail are in it). */
static int plan(const struct hdr *h, size_t len, int64_t file_size, int *in_file, uint64_t *valid,
                int *frame_done, char *err, size_t n)
{
    int in_flight = (h->jr_seq & 1u) != 0;
    *frame_done = 0;
    if (h->file_created && file_size >= 0) {
        *valid = h->file_len < (uint64_t)file_size ? h->file_len : (uint64_t)file_size;
        if (in_flight && h->jr_end <= h->file_len && h->jr_end <= (uint64_t)file_size)
            *frame_done = 1; /* written and counted; only the announcement's end was missed */
        else if (in_flight && h->jr_end > h->file_len && (uint64_t)file_size >= h->jr_end) {
            *valid = h->jr_end; /* written whole, not yet counted */
            *frame_done = 1;
        }
        *in_file = 1;
        return 0;
    }
    if (h->file_created) {
        snprintf(err, n, "the mapping says its trace %s was created, and it is not there",
                 h->trace_name);
        return -ENOENT;
    }
    /* never created (deferred): its first bytes are in the mapping */
    *in_file = 0;
    uint64_t avail = h->pend_off < len ? len - h->pend_off : 0;
    *valid = h->pend_len;
    if (*valid > h->pend_cap)
        *valid = h->pend_cap;
    if (*valid > avail)
        *valid = avail;
    *frame_done = in_flight && h->jr_end <= *valid;
    return 0;
}

int ct_salvage_prefix(const struct ct_live_map *m, int64_t file_size, int *in_file, uint64_t *len,
                      char *err, size_t n)
{
    struct hdr h;
    int rc = read_hdr(m->p, m->len, &h, err, n);
    if (rc)
        return rc;
    if (h.state == CT_LIVE_FINISHED) {
        snprintf(err, n, "its trace was finished (footer written): nothing to salvage");
        return -EALREADY;
    }
    int done;
    return plan(&h, m->len, file_size, in_file, len, &done, err, n);
}

int ct_salvage_build(const struct ct_live_map *m, int64_t file_size, int sig, struct ct_salvage *s,
                     char *err, size_t n)
{
    memset(s, 0, sizeof(*s));
    struct hdr h;
    int rc = read_hdr(m->p, m->len, &h, err, n);
    if (rc)
        return rc;
    if (h.state == CT_LIVE_FINISHED) {
        snprintf(err, n, "its trace was finished (footer written): nothing to salvage");
        return -EALREADY;
    }
    const uint8_t *map = m->p;
    size_t len = m->len;
    int frame_done = 0;
    uint64_t valid;
    rc = plan(&h, m->len, file_size, &s->prefix_in_file, &valid, &frame_done, err, n);
    if (rc)
        return rc;
    if (!s->prefix_in_file) {
        /* never created (deferred): the bytes it would have begun with are
         * in the mapping */
        if (valid < 8 + CT_HEADER_MIN_SIZE || rd32(map + h.pend_off) != CT_SKIP_MAGIC_HEADER) {
            snprintf(err, n, "the mapping holds no trace header (the process died as it started)");
            return -ENODATA;
        }
        if (ct_buf_reserve(&s->tail, (size_t)valid))
            return -ENOMEM;
        memcpy(s->tail.p, map + h.pend_off, (size_t)valid);
        s->tail.len = (size_t)valid;
    }
    s->prefix_len = valid;
    struct ct_salvage_info *info = &s->info;
    info->at = valid;
    info->signal = sig > 0 && sig < 65 ? sig : 0;
    info->flags = h.gpu_mode ? CT_SALVAGE_GPU_PENDING : 0;
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    info->real_ns = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
    if (h.strlog_off + h.strlog_bytes <= len && h.strlog_bytes >= CT_STRLOG_HDR)
        info->strings_lost = rd64(map + h.strlog_off + 16);

    struct builder b;
    memset(&b, 0, sizeof(b));
    b.out = &s->tail;
    b.seq = h.next_seq;
    b.cctx = ZSTD_createCCtx();
    if (!b.cctx) {
        ct_salvage_free(s);
        return -ENOMEM;
    }
    ZSTD_CCtx_setParameter(b.cctx, ZSTD_c_compressionLevel, 1);
    ZSTD_CCtx_setParameter(b.cctx, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(b.cctx, ZSTD_c_contentSizeFlag, 1);

    /* ids the salvage may add for its own strings: above every id the
     * process handed out, logged, or a record names */
    struct strs st = {h.str_limit, 0, NULL, 0};
    if (h.strlog_off + h.strlog_bytes <= len)
        ct_strlog_walk(map + h.strlog_off, (size_t)h.strlog_bytes, on_log_string, &st);
    uint64_t drops = 0;
    for (uint32_t i = 0; i < h.slots_hwm; i++) {
        if (CT_LIVE_SLOTS_OFF + (uint64_t)(i + 1) * 4u > len ||
            rd32(map + CT_LIVE_SLOTS_OFF + i * 4u) != CT_SLOT_USED)
            continue;
        struct ring_view v;
        if (ring_view(map, len, &h, i, &v) != 0)
            continue;
        if (frame_done && h.jr_slot == i && h.jr_tail >= v.tail && h.jr_tail <= v.head)
            v.tail = h.jr_tail;
        uint32_t mx = ring_max_str(&v, &h);
        if (mx > st.max_id)
            st.max_id = mx;
    }
    uint32_t id_signal = st.max_id + 1, id_value = st.max_id + 2;

    /* one chunk (or more) per ring, the strings in the first */
    int strings_done = 0, worth = 0;
    for (uint32_t i = 0; i < h.slots_hwm && rc == 0; i++) {
        if (CT_LIVE_SLOTS_OFF + (uint64_t)(i + 1) * 4u > len ||
            rd32(map + CT_LIVE_SLOTS_OFF + i * 4u) != CT_SLOT_USED)
            continue;
        struct ring_view v;
        if (ring_view(map, len, &h, i, &v) != 0) {
            info->damaged_rings++;
            continue;
        }
        if (frame_done && h.jr_slot == i && h.jr_tail >= v.tail && h.jr_tail <= v.head)
            v.tail = h.jr_tail;
        if (v.pending > v.head && v.pending - v.head <= 8u + 255u * 8u)
            info->half_written++;
        if (v.dropped > v.dropped_reported && v.dropped - v.dropped_reported < (1ull << 40))
            drops += v.dropped - v.dropped_reported;
        if (v.head == v.tail)
            continue;
        int damaged = 0;
        if (!strings_done) {
            /* the first recovered chunk defines what the file lacks */
            chunk_open(&b, v.tid, ring_first_time(&v, &h));
            rc = define_strings(&b, map, len, &h, &st);
            strings_done = 1;
            if (rc)
                break;
        }
        rc = add_ring(&b, &v, &h, info, &damaged, &worth);
        if (damaged)
            info->damaged_rings++;
    }
    info->ring_drops = drops;
    /* how it ended, in the metadata every reader of the trace knows */
    if (!rc && (info->signal || drops)) {
        if (!b.open)
            chunk_open(&b, 0, info->last_ns);
        if (drops) {
            uint64_t f[CT_DROP_NFIELDS] = {info->last_ns, drops, CT_DROP_RING_FULL};
            rc = ct_chunk_add_record(&b.enc, CT_REC_DROP, f, CT_DROP_NFIELDS);
        }
        if (!rc && info->signal) {
            char v[16];
            snprintf(v, sizeof(v), "%d", info->signal);
            rc = add_string_now(&b, id_signal, "signal");
            if (!rc)
                rc = add_string_now(&b, id_value, v);
            uint64_t f[CT_META_NFIELDS] = {info->last_ns, CT_SCOPE_PROCESS, 0, id_signal, id_value};
            if (!rc)
                rc = ct_chunk_add_record(&b.enc, CT_REC_META, f, CT_META_NFIELDS);
        }
    }
    if (!rc)
        rc = frame_out(&b);
    if (!rc && !s->prefix_in_file && !worth) {
        /* never created, and nothing recovered would have made it worth a
         * file: as at a clean end, it leaves none */
        snprintf(err, n, "the process was not worth a trace (no CUDA, NCCL, NVTX or data I/O)");
        rc = -ENODATA;
    }
    ZSTD_freeCCtx(b.cctx);
    ct_chunk_enc_free(&b.enc);
    ct_buf_free(&b.payload);
    ct_buf_free(&b.frame);
    if (rc) {
        if (rc != -ENODATA)
            snprintf(err, n, "%s", rc == -ENOMEM ? "out of memory" : "cannot encode the salvage");
        ct_salvage_free(s);
        return rc;
    }
    /* the salvage frame, then the footer */
    uint8_t sf[8 + CT_SALVAGE_SIZE], ft[8 + CT_FOOTER_SIZE];
    memset(sf, 0, sizeof(sf));
    put_le32(sf, CT_SKIP_MAGIC_SALVAGE);
    put_le32(sf + 4, CT_SALVAGE_SIZE);
    memcpy(sf + 8, CT_SALVAGE_MAGIC, 8);
    put_le64(sf + 16, info->at);
    put_le64(sf + 24, info->records);
    put_le64(sf + 32, info->half_written);
    put_le64(sf + 40, info->strings_lost);
    put_le64(sf + 48, info->ring_drops);
    put_le64(sf + 56, info->last_ns);
    put_le32(sf + 64, (uint32_t)info->signal);
    put_le32(sf + 68, info->flags);
    put_le64(sf + 72, info->real_ns);
    put_le32(ft, CT_SKIP_MAGIC_FOOTER);
    put_le32(ft + 4, CT_FOOTER_SIZE);
    memcpy(ft + 8, CT_FOOTER_MAGIC, 8);
    put_le64(ft + 16, h.chunks + b.chunks);
    put_le64(ft + 24, h.records + b.records);
    put_le64(ft + 32, h.dropped + drops + info->half_written);
    put_le64(ft + 40, info->last_ns);
    if (ct_buf_reserve(&s->tail, sizeof(sf) + sizeof(ft))) {
        ct_salvage_free(s);
        return -ENOMEM;
    }
    memcpy(s->tail.p + s->tail.len, sf, sizeof(sf));
    s->tail.len += sizeof(sf);
    memcpy(s->tail.p + s->tail.len, ft, sizeof(ft));
    s->tail.len += sizeof(ft);
    return 0;
}

void ct_salvage_free(struct ct_salvage *s)
{
    ct_buf_free(&s->tail);
}

/* ---- writing the completed trace ----
 *
 * This may run inside a job's process (the shim of a later image of the
 * job salvages its dead predecessors), so the descriptors it reads and
 * writes are src/ownfd.h's: a job's close loop leaves them alone, and a
 * number taken over behind its back is never written to (each write checks
 * the file's device and inode first). The completed trace is written to a
 * new file beside it, renamed over the trace only when whole: a salvage
 * cut short leaves the trace as it was. */

/* Writes p to own slot `slot`, verified before each write. */
static int own_write(int slot, const uint8_t *p, size_t n)
{
    while (n > 0) {
        int fd = ct_own_use(slot);
        if (fd < 0)
            return -EBADF;
        ssize_t w = write(fd, p, n);
        int e = errno;
        ct_own_done(slot);
        if (w < 0 && e == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -e : -EIO;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The first len bytes of slot in to slot out (both at offset 0 now). */
static int copy_prefix(int in, int out, uint64_t len)
{
    uint64_t done = 0;
    int by_hand = 0;
    while (done < len && !by_hand) {
        int ifd = ct_own_use(in), ofd = ifd >= 0 ? ct_own_use(out) : -1;
        if (ifd < 0 || ofd < 0) {
            if (ifd >= 0)
                ct_own_done(in);
            return -EBADF;
        }
        size_t want = len - done > (1u << 26) ? (1u << 26) : (size_t)(len - done);
        ssize_t c = copy_file_range(ifd, NULL, ofd, NULL, want, 0);
        int e = errno;
        ct_own_done(out);
        ct_own_done(in);
        if (c > 0) {
            done += (uint64_t)c;
            continue;
        }
        if (c == 0)
            return -EIO; /* the file is shorter than its mapping said */
        if (e == EINTR)
            continue;
        if (e != EXDEV && e != ENOSYS && e != EOPNOTSUPP && e != EINVAL)
            return -e;
        by_hand = 1; /* no in-kernel copy between these */
    }
    uint8_t buf[1 << 16];
    while (done < len) {
        size_t want = len - done < sizeof(buf) ? (size_t)(len - done) : sizeof(buf);
        int ifd = ct_own_use(in);
        if (ifd < 0)
            return -EBADF;
        ssize_t r = pread(ifd, buf, want, (off_t)done);
        int e = errno;
        ct_own_done(in);
        if (r < 0 && e == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? -e : -EIO;
        int rc = own_write(out, buf, (size_t)r);
        if (rc)
            return rc;
        done += (uint64_t)r;
    }
    return 0;
}

static int has_footer_fd(int fd)
{
    uint8_t b[8 + CT_FOOTER_SIZE];
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(b))
        return 0;
    if (pread(fd, b, sizeof(b), st.st_size - (off_t)sizeof(b)) != (ssize_t)sizeof(b))
        return 0;
    return rd32(b) == CT_SKIP_MAGIC_FOOTER && rd32(b + 4) == CT_FOOTER_SIZE &&
           memcmp(b + 8, CT_FOOTER_MAGIC, 8) == 0;
}

/* A new file in dir for the completed trace, named after it with this
 * process's pid (".NAME.salvage-PID-..."; a salvage cut short by its
 * process's death leaves it, and a later ct_salvage_dir removes it). The
 * own slot, or a negative errno. */
static int temp_in(const char *dir, const char *name, char *tmp, size_t tn)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int slot = -EEXIST;
    for (unsigned i = 0; i < 64 && slot == -EEXIST; i++) {
        snprintf(tmp, tn, "%s/.%s.salvage-%d-%lx-%u", dir, name, (int)getpid(), (long)ts.tv_nsec,
                 i);
        slot = ct_own_open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600,
                           CT_OWN_HIGH);
    }
    return slot;
}

int ct_salvage_commit(const char *dir, const char *map_path,
                      int (*sig_for)(void *ctx, uint32_t pid), void *ctx,
                      struct ct_salvage_info *info, char *trace_out, size_t tn, char *err, size_t n)
{
    trace_out[0] = 0;
    struct ct_live_map m;
    int rc = ct_live_map_open(&m, map_path, geteuid(), err, n);
    if (rc)
        return rc;
    int tslot = -1, oslot = -1;
    char tmp[4400] = "";
    struct ct_salvage s;
    memset(&s, 0, sizeof(s));
    char name_buf[256];
    const char *name = ct_live_map_trace_name(&m, name_buf, sizeof(name_buf));
    if (!name) {
        snprintf(err, n, "%s: its header names no trace", map_path);
        rc = -EPROTO;
        goto done;
    }
    if ((size_t)snprintf(trace_out, tn, "%s/%s", dir, name) >= tn) {
        rc = -ENAMETOOLONG;
        snprintf(err, n, "%s/%s: name too long", dir, name);
        goto done;
    }
    if (!ct_live_map_in_dir(&m, dir)) {
        snprintf(err, n, "%s: a mapping of a trace in another folder than %s", map_path, dir);
        rc = -ESTALE;
        goto done;
    }
    uint32_t pid = 0;
    int owner = ct_live_map_owner(&m, &pid);
    if (owner != CT_OWNER_GONE) {
        snprintf(err, n,
                 owner == CT_OWNER_ALIVE
                     ? "%s: process %u is alive: its mapping is not touched"
                     : "%s: made by process %u on another boot or machine: not touched",
                 trace_out, pid);
        rc = -EBUSY;
        goto done;
    }
    /* one salvage at a time (cutrace run and a later image may race); the
     * descriptor checked first: in a job's process, a number taken over
     * behind our back is the job's file, never locked by us */
    struct stat mst;
    if (fstat(m.fd, &mst) != 0 || (uint64_t)mst.st_dev != m.dev || (uint64_t)mst.st_ino != m.ino ||
        flock(m.fd, LOCK_EX | LOCK_NB) != 0) {
        snprintf(err, n, "%s: another salvage is under way", trace_out);
        rc = -EBUSY;
        goto done;
    }
    int64_t fsize = -1;
    tslot = ct_own_open(trace_out, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0, CT_OWN_HIGH);
    if (tslot < 0 && tslot != -ENOENT) {
        rc = tslot == -ELOOP ? -EPERM : tslot;
        snprintf(err, n, "%s: %s", trace_out,
                 tslot == -ELOOP ? "a symbolic link, not a trace" : strerror(-tslot));
        goto done;
    }
    if (tslot >= 0) {
        struct stat st;
        int fd = ct_own_use(tslot);
        int bad = fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
                  st.st_uid != m.uid;
        int footer = !bad && has_footer_fd(fd);
        if (fd >= 0)
            ct_own_done(tslot);
        if (bad) {
            snprintf(err, n, "%s: not a regular file with one link of the mapping's owner",
                     trace_out);
            rc = -EPERM;
            goto done;
        }
        if (footer) {
            /* finished (or salvaged) already: the mapping is stale */
            unlink(map_path);
            rc = -EALREADY;
            snprintf(err, n, "%s: complete already; stale mapping removed", trace_out);
            goto done;
        }
        fsize = (int64_t)st.st_size;
    }
    rc = ct_salvage_build(&m, fsize, sig_for ? sig_for(ctx, pid) : 0, &s, err, n);
    if (rc == -EALREADY || rc == -ENODATA) {
        unlink(map_path); /* nothing in it to keep */
        goto done;
    }
    if (rc)
        goto done;
    oslot = temp_in(dir, name, tmp, sizeof(tmp));
    if (oslot < 0) {
        rc = oslot;
        snprintf(err, n, "%s: cannot create a file beside it: %s", trace_out, strerror(-rc));
        oslot = -1;
        tmp[0] = 0;
        goto done;
    }
    if (s.prefix_in_file && (rc = copy_prefix(tslot, oslot, s.prefix_len)) != 0) {
        snprintf(err, n, "%s: cannot copy: %s", trace_out, strerror(-rc));
        goto done;
    }
    if ((rc = own_write(oslot, s.tail.p, s.tail.len)) != 0) {
        snprintf(err, n, "%s: cannot write its completion: %s", trace_out, strerror(-rc));
        goto done;
    }
    int ofd = ct_own_use(oslot);
    rc = ofd < 0 ? -EBADF : fsync(ofd) != 0 ? -errno : 0;
    if (ofd >= 0)
        ct_own_done(oslot);
    if (rc) {
        snprintf(err, n, "%s: cannot write its completion: %s", trace_out, strerror(-rc));
        goto done;
    }
    if (rename(tmp, trace_out) != 0) {
        rc = -errno;
        snprintf(err, n, "%s: cannot rename into place: %s", trace_out, strerror(-rc));
        goto done;
    }
    tmp[0] = 0;
    unlink(map_path);
    if (info)
        *info = s.info;
done:
    if (oslot >= 0)
        ct_own_close(oslot);
    if (tmp[0])
        unlink(tmp);
    if (tslot >= 0)
        ct_own_close(tslot);
    ct_salvage_free(&s);
    ct_live_map_close(&m);
    return rc;
}

int ct_live_maps_of_dir(const char *dir, int (*fn)(void *ctx, const char *map_path), void *ctx)
{
    struct stat st;
    if (stat(dir, &st) != 0)
        return -errno;
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    struct dirent *de;
    int rc = 0;
    while (!rc && (de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (l <= 13 || strcmp(de->d_name + l - 13, ".cutrace-live") != 0)
            continue;
        char p[4400];
        if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, de->d_name) < sizeof(p))
            rc = fn(ctx, p);
    }
    closedir(d);
    if (rc)
        return rc;
    char prefix[128];
    int pl = snprintf(prefix, sizeof(prefix), "-%llx-%llx-", (unsigned long long)st.st_dev,
                      (unsigned long long)st.st_ino);
    const char *shm = ct_live_shm_dir();
    d = opendir(shm);
    if (!d)
        return 0;
    while (!rc && (de = readdir(d)) != NULL) {
        /* cutrace-<uid>-<dev>-<ino>-<hash>.live */
        if (strncmp(de->d_name, "cutrace-", 8) != 0)
            continue;
        const char *after_uid = strchr(de->d_name + 8, '-');
        if (!after_uid || strncmp(after_uid, prefix, (size_t)pl) != 0)
            continue;
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 5, ".live") != 0)
            continue;
        char p[4400];
        if ((size_t)snprintf(p, sizeof(p), "%s/%s", shm, de->d_name) < sizeof(p))
            rc = fn(ctx, p);
    }
    closedir(d);
    return rc;
}

struct dir_walk {
    const char *dir;
    int (*sig_for)(void *ctx, uint32_t pid);
    void (*report)(void *ctx, const struct ct_salvage_result *r);
    void *ctx;
    int done;
};

static int salvage_one(void *ctx, const char *map_path)
{
    struct dir_walk *w = ctx;
    char trace[4400], err[512] = "";
    struct ct_salvage_result r = {map_path, trace, 0, err, {0}};
    r.rc = ct_salvage_commit(w->dir, map_path, w->sig_for, w->ctx, &r.info, trace, sizeof(trace),
                             err, sizeof(err));
    if (r.rc == 0)
        w->done++;
    if (w->report)
        w->report(w->ctx, &r);
    return 0;
}

/* Removes the files of salvages cut short by their process's death
 * (".NAME.salvage-PID-..." of a pid that is gone, untouched for 10
 * minutes: the window pid reuse would need to mislead). */
static void remove_stale_temps(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    time_t now = time(NULL);
    while ((de = readdir(d)) != NULL) {
        const char *p = de->d_name[0] == '.' ? strstr(de->d_name, ".salvage-") : NULL;
        int pid = p ? atoi(p + 9) : 0;
        char path[4400];
        struct stat st;
        if (pid <= 0 ||
            (size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path) ||
            lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
            now - st.st_mtime < 600 || (kill(pid, 0) == 0 || errno != ESRCH))
            continue;
        unlink(path);
    }
    closedir(d);
}

int ct_salvage_dir(const char *dir, int (*sig_for)(void *ctx, uint32_t pid),
                   void (*report)(void *ctx, const struct ct_salvage_result *r), void *ctx)
{
    struct dir_walk w = {dir, sig_for, report, ctx, 0};
    int rc = ct_live_maps_of_dir(dir, salvage_one, &w);
    if (rc >= 0)
        remove_stale_temps(dir);
    return rc < 0 ? rc : w.done;
}
