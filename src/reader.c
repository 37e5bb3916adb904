/*
 * Frame-by-frame reading. The window buffer grows only as far as the largest
 * frame (bounded by CT_MAX_CHUNK_BYTES), so a multi-gigabyte trace decodes in
 * constant memory. Every length read from the file is checked before use.
 */
#include "src/reader.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h> /* ZSTD_getErrorCode: tells a cut frame from a corrupt one */

#define CT_READ_STEP     (1u << 20)
#define CT_READ_FIRST    (64u << 10)
#define CT_MAX_FRAME     (CT_MAX_CHUNK_BYTES + (CT_MAX_CHUNK_BYTES >> 7) + 4096)
#define CT_MAX_STRING_ID (1u << 24)

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static void build_salvage(struct ct_reader *r);

/* Makes at least `want` unread bytes available if the file has them.
 * Returns the number available (may be less at EOF) or a negative errno. */
static long long ensure(struct ct_reader *r, size_t want)
{
    for (;;) {
        size_t avail = r->buf_len - r->buf_pos;
        if (avail >= want || r->eof)
            return (long long)avail;
        if (r->buf_pos > 0) { /* slide the window */
            memmove(r->buf, r->buf + r->buf_pos, avail);
            r->buf_off += r->buf_pos;
            r->buf_len = avail;
            r->buf_pos = 0;
        }
        size_t need = want > CT_READ_STEP ? want : CT_READ_STEP;
        if (r->buf_cap < need + CT_READ_STEP) {
            size_t cap = need + CT_READ_STEP;
            uint8_t *nb = realloc(r->buf, cap);
            if (!nb)
                return -ENOMEM;
            r->buf = nb;
            r->buf_cap = cap;
        }
        /* Reads start small and double: a reader that stops after a few
         * frames (a trace's identity, run_identity.c) touched 2 MiB of fresh
         * buffer for its first read, 512 page faults, most of its time. */
        size_t room = r->buf_cap - r->buf_len, short_of = want - avail;
        if (r->read_next < CT_READ_FIRST)
            r->read_next = CT_READ_FIRST;
        if (room > r->read_next)
            room = r->read_next > short_of ? r->read_next : short_of;
        if (r->read_next < 2 * CT_READ_STEP)
            r->read_next *= 2;
        ssize_t got;
        if (r->salv || r->lmap) {
            /* the file's valid bytes, then the salvage's */
            uint64_t done = r->buf_off + r->buf_len;
            if (done >= r->src_limit && !r->salv)
                build_salvage(r);
            if (done >= r->src_limit && !r->salv) {
                got = 0; /* no salvage after all: the file ends at its valid bytes */
            } else if (done < r->src_limit) {
                uint64_t left = r->src_limit - done;
                got = pread(r->fd, r->buf + r->buf_len, left < room ? (size_t)left : room,
                            (off_t)done);
                if (got < 0) {
                    if (errno == EINTR)
                        continue;
                    int e = errno;
                    snprintf(r->err, sizeof(r->err), "%s: read error at offset %llu: %s", r->name,
                             (unsigned long long)done, strerror(e));
                    return -e;
                }
            } else {
                uint64_t t = done - r->src_limit;
                size_t left = t < r->salv->tail.len ? r->salv->tail.len - (size_t)t : 0;
                got = (ssize_t)(left < room ? left : room);
                memcpy(r->buf + r->buf_len, r->salv->tail.p + t, (size_t)got);
            }
        } else if (r->mem) {
            uint64_t done = r->buf_off + r->buf_len;
            size_t left = done < r->mem_len ? r->mem_len - (size_t)done : 0;
            got = (ssize_t)(left < room ? left : room);
            memcpy(r->buf + r->buf_len, r->mem + done, (size_t)got);
        } else {
            got = read(r->fd, r->buf + r->buf_len, room);
            if (got < 0) {
                if (errno == EINTR)
                    continue;
                int e = errno;
                snprintf(r->err, sizeof(r->err), "%s: read error at offset %llu: %s", r->name,
                         (unsigned long long)(r->buf_off + r->buf_len), strerror(e));
                return -e;
            }
        }
        if (got == 0)
            r->eof = 1;
        r->buf_len += (size_t)got;
    }
}

static uint64_t cur_off(const struct ct_reader *r)
{
    return r->buf_off + r->buf_pos;
}

static int parse_header(struct ct_reader *r)
{
    long long n = ensure(r, 8 + CT_HEADER_MIN_SIZE);
    if (n < 0)
        return (int)n;
    const uint8_t *p = r->buf + r->buf_pos;
    if (n < 8 || le32(p) != CT_SKIP_MAGIC_HEADER) {
        snprintf(r->err, sizeof(r->err),
                 "%s: not a cutrace trace: offset 0: expected the header frame magic 0x%08X",
                 r->name, CT_SKIP_MAGIC_HEADER);
        return -EPROTO;
    }
    uint32_t size = le32(p + 4);
    if (n < 16 || memcmp(p + 8, CT_FILE_MAGIC, 8) != 0) {
        snprintf(r->err, sizeof(r->err),
                 "%s: not a cutrace trace: offset 8: expected the magic \"CUTRACE\\0\"", r->name);
        return -EPROTO;
    }
    if ((unsigned long long)n < 8ull + CT_HEADER_MIN_SIZE) {
        snprintf(r->err, sizeof(r->err), "%s: truncated at offset 0: the file header is cut",
                 r->name);
        return -EPROTO;
    }
    uint32_t version = (uint32_t)p[16] | (uint32_t)p[17] << 8;
    if (version > CT_FORMAT_VERSION) {
        snprintf(r->err, sizeof(r->err),
                 "%s: trace format version %u is newer than this cutrace supports (%u); "
                 "use a newer cutrace to read it",
                 r->name, version, CT_FORMAT_VERSION);
        return -EPROTONOSUPPORT;
    }
    /* v1 and v2 differ only by the counter kind v2 added: both read here */
    if (version < CT_FORMAT_VERSION_MIN || size < CT_HEADER_MIN_SIZE || size > (1u << 20)) {
        snprintf(r->err, sizeof(r->err),
                 "%s: corrupt header: offset 4: expected a header size of at least %u bytes "
                 "and version >= 1, found size %u version %u",
                 r->name, CT_HEADER_MIN_SIZE, size, version);
        return -EPROTO;
    }
    r->hdr.version = version;
    r->hdr.features = le64(p + 24);
    r->hdr.clock_source = le32(p + 32);
    r->hdr.tsc_hz = le64(p + 40);
    r->hdr.start_mono_ns = le64(p + 48);
    r->hdr.start_real_ns = le64(p + 56);
    r->hdr.pid = le32(p + 64);
    r->hdr.gen = le32(p + 68);
    n = ensure(r, 8 + (size_t)size);
    if (n < 0)
        return (int)n;
    if ((unsigned long long)n < 8ull + size) {
        snprintf(r->err, sizeof(r->err), "%s: truncated at offset 0: the file header is cut",
                 r->name);
        return -EPROTO;
    }
    r->buf_pos += 8 + size;
    return 0;
}

static int open_common(struct ct_reader *r)
{
    r->dctx = ZSTD_createDCtx();
    if (!r->dctx) {
        snprintf(r->err, sizeof(r->err), "%s: out of memory", r->name);
        ct_reader_close(r);
        return -ENOMEM;
    }
    int rc = parse_header(r);
    if (rc)
        ct_reader_close(r);
    return rc;
}

static int fd_has_footer(int fd, uint64_t size)
{
    uint8_t b[8 + CT_FOOTER_SIZE];
    if (size < sizeof(b) ||
        pread(fd, b, sizeof(b), (off_t)(size - sizeof(b))) != (ssize_t)sizeof(b))
        return 0;
    return le32(b) == CT_SKIP_MAGIC_FOOTER && le32(b + 4) == CT_FOOTER_SIZE &&
           memcmp(b + 8, CT_FOOTER_MAGIC, 8) == 0;
}

/* A trace its process did not finish, and that process's live mapping
 * beside it: read with what the mapping recovers, when the process is gone
 * (src/salvage.h). Anything wrong with the mapping leaves the trace as
 * it is, with a note. The salvage itself is built when the reader reaches
 * the end of the file's valid bytes. */
static void attach_salvage(struct ct_reader *r, const struct stat *st)
{
    if (fd_has_footer(r->fd, r->size))
        return;
    struct ct_live_map *m = calloc(1, sizeof(*m));
    char err[256];
    int rc = m ? ct_live_map_find(m, r->name, st->st_uid, err, sizeof(err)) : -ENOMEM;
    if (rc == -ENOENT || rc == -ENOMEM) {
        free(m);
        return;
    }
    if (rc) {
        r->live_left = 3;
        snprintf(r->live_note, sizeof(r->live_note), "%s", err);
        free(m);
        return;
    }
    uint32_t pid = 0;
    int owner = ct_live_map_owner(m, &pid);
    int in_file = 0;
    uint64_t len = 0;
    if (owner == CT_OWNER_GONE)
        rc = ct_salvage_prefix(m, (int64_t)r->size, &in_file, &len, err, sizeof(err));
    if (owner != CT_OWNER_GONE) {
        r->live_left = owner == CT_OWNER_ALIVE ? 1 : 2;
        snprintf(r->live_note, sizeof(r->live_note),
                 owner == CT_OWNER_ALIVE ? "process %u is alive and still recording"
                                         : "process %u recorded on another machine or boot",
                 pid);
    } else if (rc && rc != -EALREADY) {
        r->live_left = 3;
        snprintf(r->live_note, sizeof(r->live_note), "its live mapping: %s", err);
    }
    if (owner != CT_OWNER_GONE || rc) {
        ct_live_map_close(m);
        free(m);
        return;
    }
    r->lmap = m;
    r->src_limit = in_file ? len : 0;
    r->salvage_in_memory = 1;
}

/* The salvage of the mapping attach_salvage kept, now that the reader
 * needs it; the mapping is let go either way. */
static void build_salvage(struct ct_reader *r)
{
    struct ct_live_map *m = r->lmap;
    r->lmap = NULL;
    struct ct_salvage *s = calloc(1, sizeof(*s));
    char err[256];
    int rc = s ? ct_salvage_build(m, (int64_t)r->size, 0, s, err, sizeof(err)) : -ENOMEM;
    ct_live_map_close(m);
    free(m);
    if (rc) {
        free(s);
        r->salvage_in_memory = 0;
        r->live_left = 3;
        snprintf(r->live_note, sizeof(r->live_note), "its live mapping: %s",
                 rc == -ENOMEM ? "out of memory" : err);
        return;
    }
    r->salv = s;
    r->size = r->src_limit + s->tail.len;
}

int ct_reader_open(struct ct_reader *r, const char *path)
{
    memset(r, 0, sizeof(*r));
    r->name = path;
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0) {
        int e = errno;
        snprintf(r->err, sizeof(r->err), "%s: cannot open: %s", path, strerror(e));
        return -e;
    }
    struct stat st;
    if (fstat(r->fd, &st) == 0 && st.st_size > 0)
        r->size = (uint64_t)st.st_size;
    if (fstat(r->fd, &st) == 0 && S_ISREG(st.st_mode))
        attach_salvage(r, &st);
    return open_common(r);
}

int ct_reader_open_mem(struct ct_reader *r, const uint8_t *p, size_t n)
{
    memset(r, 0, sizeof(*r));
    r->name = "<memory>";
    r->fd = -1;
    r->mem = p;
    r->mem_len = n;
    r->size = n;
    return open_common(r);
}

void ct_reader_release_io(struct ct_reader *r)
{
    if (r->fd >= 0 && !r->mem)
        close(r->fd);
    r->fd = -1;
    free(r->buf);
    r->buf = NULL;
    r->buf_len = r->buf_cap = r->buf_pos = 0;
    ZSTD_freeDCtx(r->dctx);
    r->dctx = NULL;
    ct_buf_free(&r->out);
    if (r->salv) {
        ct_salvage_free(r->salv);
        free(r->salv);
        r->salv = NULL;
    }
    if (r->lmap) {
        ct_live_map_close(r->lmap);
        free(r->lmap);
        r->lmap = NULL;
    }
}

/* String bytes are carved from 64 KiB blocks rather than malloc'ed one by
 * one: a long job's trace defines a string per step (hundreds of
 * thousands), and the decoding threads of a report share one malloc arena.
 * A redefined id keeps its old bytes until close. */
struct ct_str_block {
    struct ct_str_block *next;
    size_t size;
    char data[];
};

enum { STR_BLOCK = 64 << 10 };

static char *pool_alloc(struct ct_reader *r, size_t n)
{
    if (n > r->pool_left) {
        size_t size = n > STR_BLOCK ? n : STR_BLOCK;
        struct ct_str_block *b = malloc(sizeof(*b) + size);
        if (!b)
            return NULL;
        b->next = r->pool;
        b->size = size;
        r->pool = b;
        r->pool_left = size;
    }
    char *p = r->pool->data + (r->pool->size - r->pool_left);
    r->pool_left -= n;
    return p;
}

void ct_reader_close(struct ct_reader *r)
{
    ct_reader_release_io(r);
    while (r->pool) {
        struct ct_str_block *next = r->pool->next;
        free(r->pool);
        r->pool = next;
    }
    r->pool_left = 0;
    free(r->strs);
    free(r->str_lens);
    r->strs = NULL;
    r->str_lens = NULL;
    r->nstrs = 0;
}

const char *ct_reader_string(const struct ct_reader *r, uint64_t id)
{
    if (id < r->nstrs && r->strs[id])
        return r->strs[id];
    return "";
}

static void note_damage(struct ct_reader *r, uint64_t off, const char *fmt, const char *detail)
{
    r->damage_total++;
    if (r->ndamage >= CT_READER_MAX_DAMAGE)
        return;
    struct ct_damage *d = &r->damage[r->ndamage++];
    d->offset = off;
    d->skipped = 0;
    snprintf(d->what, sizeof(d->what), fmt, detail);
}

static int is_frame_magic(const uint8_t *p)
{
    uint32_t m = le32(p);
    return m == CT_ZSTD_MAGIC || (m >= CT_SKIP_MAGIC_MIN && m <= CT_SKIP_MAGIC_MAX);
}

/* n bytes from off, the place of the latest damage, were skipped: counted
 * in the total, and in that place's entry when it has one. */
static void skipped(struct ct_reader *r, uint64_t off, uint64_t n)
{
    r->damage_bytes += n;
    if (r->ndamage > 0 && r->damage[r->ndamage - 1].offset == off)
        r->damage[r->ndamage - 1].skipped = n;
}

/* After damage at the current position: skip to the next plausible frame
 * start. Returns 0 (positioned, or at EOF) or a negative errno. */
static int resync(struct ct_reader *r, uint64_t bad_off)
{
    r->buf_pos++;
    for (;;) {
        long long n = ensure(r, 4);
        if (n < 0)
            return (int)n;
        if (n < 4) {
            r->buf_pos = r->buf_len;
            break;
        }
        if (is_frame_magic(r->buf + r->buf_pos))
            break;
        r->buf_pos++;
    }
    skipped(r, bad_off, cur_off(r) - bad_off);
    return 0;
}

static int on_string(void *ctx, uint32_t id, const char *s, uint32_t len)
{
    struct ct_reader *r = ctx;
    if (id >= CT_MAX_STRING_ID)
        return -EBADMSG;
    if (id >= r->nstrs) {
        size_t n = r->nstrs ? r->nstrs : 256;
        while (n <= id)
            n *= 2;
        char **ns = realloc(r->strs, n * sizeof(*ns));
        if (!ns)
            return -ENOMEM;
        r->strs = ns;
        uint32_t *nl = realloc(r->str_lens, n * sizeof(*nl));
        if (!nl)
            return -ENOMEM;
        r->str_lens = nl;
        memset(r->strs + r->nstrs, 0, (n - r->nstrs) * sizeof(*ns));
        memset(r->str_lens + r->nstrs, 0, (n - r->nstrs) * sizeof(*nl));
        r->nstrs = n;
    }
    char *copy = pool_alloc(r, (size_t)len + 1);
    if (!copy)
        return -ENOMEM;
    memcpy(copy, s, len);
    copy[len] = 0;
    r->strs[id] = copy;
    r->str_lens[id] = len;
    return 0;
}

struct pass_ctx {
    struct ct_reader *r;
    const struct ct_chunk_sink *user;
};

static int pass_string(void *ctx, uint32_t id, const char *s, uint32_t len)
{
    struct pass_ctx *pc = ctx;
    return on_string(pc->r, id, s, len);
}

static int pass_record(void *ctx, const struct ct_record *rec)
{
    struct pass_ctx *pc = ctx;
    pc->r->records++;
    if (pc->user && pc->user->on_record)
        return pc->user->on_record(pc->user->ctx, rec);
    return 0;
}

static int pass_block(void *ctx, const struct ct_block *b)
{
    struct pass_ctx *pc = ctx;
    pc->r->records += b->n;
    return pc->user->on_block(pc->user->ctx, b);
}

/* Decodes one zstd frame at the current position. 1 delivered, 0 truncated
 * (EOF inside the frame), 2 damaged (recorded, resynced), <0 fatal. */
static int read_zstd_frame(struct ct_reader *r, const struct ct_chunk_sink *sink)
{
    uint64_t off = cur_off(r);
    size_t want = 64;
    size_t fsize;
    for (;;) {
        long long n = ensure(r, want);
        if (n < 0)
            return (int)n;
        fsize = ZSTD_findFrameCompressedSize(r->buf + r->buf_pos, (size_t)n);
        if (!ZSTD_isError(fsize))
            break;
        if (ZSTD_getErrorCode(fsize) != ZSTD_error_srcSize_wrong) {
            note_damage(r, off, "corrupt zstd frame: %s", ZSTD_getErrorName(fsize));
            return resync(r, off) ? -EIO : 2;
        }
        if (r->eof && (size_t)n < want)
            return 0; /* the frame runs past the end of the file */
        if (want >= CT_MAX_FRAME) {
            note_damage(r, off, "%s", "corrupt zstd frame: larger than any chunk cutrace writes");
            return resync(r, off) ? -EIO : 2;
        }
        want = (size_t)n * 2 > CT_MAX_FRAME ? CT_MAX_FRAME : (size_t)n * 2;
    }
    const uint8_t *src = r->buf + r->buf_pos;
    unsigned long long csize = ZSTD_getFrameContentSize(src, fsize);
    if (csize == ZSTD_CONTENTSIZE_UNKNOWN || csize == ZSTD_CONTENTSIZE_ERROR ||
        csize > CT_MAX_CHUNK_BYTES) {
        note_damage(r, off, "%s",
                    "corrupt zstd frame: expected a content size up to 64 MiB in its header");
        return resync(r, off) ? -EIO : 2;
    }
    r->out.len = 0;
    if (ct_buf_reserve(&r->out, (size_t)csize + 1))
        return -ENOMEM;
    size_t got = ZSTD_decompressDCtx(r->dctx, r->out.p, (size_t)csize + 1, src, fsize);
    if (ZSTD_isError(got) || got != csize) {
        note_damage(r, off, "corrupt zstd frame: %s",
                    ZSTD_isError(got) ? ZSTD_getErrorName(got) : "content size mismatch");
        return resync(r, off) ? -EIO : 2;
    }
    /* The whole chunk is validated before any of it is delivered, so a
     * damaged chunk never yields half its records: in one parse, where a
     * checking decode used to come first. */
    size_t epos = 0;
    const char *ewhat = NULL;
    struct pass_ctx pc = {r, sink};
    struct ct_chunk_sink wrap = {&pc, pass_string, pass_record, sink ? sink->fields : NULL,
                                 sink && sink->on_block ? pass_block : NULL};
    int rc = ct_chunk_decode_whole(r->out.p, got, &wrap, NULL, &epos, &ewhat);
    if (rc == -EBADMSG && ewhat) {
        char detail[128];
        snprintf(detail, sizeof(detail), "byte %zu of the chunk: expected %s", epos, ewhat);
        note_damage(r, off, "corrupt chunk: %s", detail);
        r->buf_pos += fsize;
        skipped(r, off, fsize);
        return 2;
    }
    r->buf_pos += fsize;
    if (rc == -EBADMSG) { /* a string id beyond our limit */
        note_damage(r, off, "corrupt chunk: %s", "string id below 2^24");
        return 2;
    }
    if (rc)
        return rc;
    r->frames++;
    return 1;
}

int ct_trace_has_footer(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    uint8_t b[8 + CT_FOOTER_SIZE];
    off_t end = lseek(fd, 0, SEEK_END);
    ssize_t n = end >= (off_t)sizeof(b) ? pread(fd, b, sizeof(b), end - (off_t)sizeof(b)) : 0;
    close(fd);
    return n == (ssize_t)sizeof(b) && le32(b) == CT_SKIP_MAGIC_FOOTER &&
           le32(b + 4) == CT_FOOTER_SIZE && memcmp(b + 8, CT_FOOTER_MAGIC, 8) == 0;
}

/* Whether a complete, valid frame starts at p (n bytes to EOF). */
static int valid_frame_at(struct ct_reader *r, const uint8_t *p, size_t n)
{
    if (n < 8)
        return 0;
    uint32_t m = le32(p);
    if (m == CT_SKIP_MAGIC_FOOTER)
        return le32(p + 4) == CT_FOOTER_SIZE && n == 8 + CT_FOOTER_SIZE &&
               memcmp(p + 8, CT_FOOTER_MAGIC, 8) == 0;
    if (m != CT_ZSTD_MAGIC)
        return 0;
    size_t fsize = ZSTD_findFrameCompressedSize(p, n);
    if (ZSTD_isError(fsize))
        return 0;
    unsigned long long csize = ZSTD_getFrameContentSize(p, fsize);
    if (csize == ZSTD_CONTENTSIZE_UNKNOWN || csize == ZSTD_CONTENTSIZE_ERROR ||
        csize > CT_MAX_CHUNK_BYTES)
        return 0;
    r->out.len = 0;
    if (ct_buf_reserve(&r->out, (size_t)csize + 1))
        return 0;
    size_t got = ZSTD_decompressDCtx(r->dctx, r->out.p, (size_t)csize + 1, p, fsize);
    return !ZSTD_isError(got) && got == csize;
}

/*
 * EOF came inside the frame at the current position. That is a cut file,
 * unless the frame's sizes were damaged and made it look longer than it is:
 * then a valid frame follows. Returns the offset of that frame in the
 * buffer, or 0 when this really is the end.
 */
static size_t valid_frame_after(struct ct_reader *r)
{
    for (size_t i = r->buf_pos + 1; i + 8 <= r->buf_len; i++)
        if (is_frame_magic(r->buf + i) && valid_frame_at(r, r->buf + i, r->buf_len - i))
            return i;
    return 0;
}

int ct_reader_next(struct ct_reader *r, const struct ct_chunk_sink *sink)
{
    for (;;) {
        if (r->has_footer || r->truncated)
            return 0;
        long long n = ensure(r, 8);
        if (n < 0)
            return (int)n;
        uint64_t off = cur_off(r);
        if (n == 0) { /* clean end of data without a footer */
            r->truncated = 1;
            r->truncated_at = off;
            return 0;
        }
        if (n < 8) {
            if (n >= 4 && !is_frame_magic(r->buf + r->buf_pos)) {
                note_damage(r, off, "%s", "expected a frame magic; found garbage at the end");
                skipped(r, off, (uint64_t)n);
                r->buf_pos = r->buf_len;
                continue;
            }
            r->truncated = 1;
            r->truncated_at = off;
            return 0;
        }
        const uint8_t *p = r->buf + r->buf_pos;
        uint32_t magic = le32(p);
        if (magic >= CT_SKIP_MAGIC_MIN && magic <= CT_SKIP_MAGIC_MAX) {
            uint32_t size = le32(p + 4);
            if (size > CT_MAX_FRAME) {
                note_damage(r, off, "%s", "corrupt skippable frame: implausible size");
                if (resync(r, off))
                    return -EIO;
                continue;
            }
            n = ensure(r, 8 + (size_t)size);
            if (n < 0)
                return (int)n;
            if ((unsigned long long)n < 8ull + size) {
                r->truncated = 1;
                r->truncated_at = off;
                return 0;
            }
            p = r->buf + r->buf_pos;
            if (magic == CT_SKIP_MAGIC_FOOTER && size >= CT_FOOTER_SIZE &&
                memcmp(p + 8, CT_FOOTER_MAGIC, 8) == 0) {
                r->footer.chunks = le64(p + 16);
                r->footer.records = le64(p + 24);
                r->footer.dropped = le64(p + 32);
                r->footer.end_mono_ns = le64(p + 40);
                r->has_footer = 1;
            } else if (magic == CT_SKIP_MAGIC_DROPPED) {
                r->dropped_bytes += 8 + (uint64_t)size;
            } else if (magic == CT_SKIP_MAGIC_SALVAGE && size >= CT_SALVAGE_SIZE &&
                       memcmp(p + 8, CT_SALVAGE_MAGIC, 8) == 0) {
                struct ct_salvage_info *si = &r->salvage;
                r->salvaged = 1;
                si->at = le64(p + 16);
                si->records = le64(p + 24);
                si->half_written = le64(p + 32);
                si->strings_lost = le64(p + 40);
                si->ring_drops = le64(p + 48);
                si->last_ns = le64(p + 56);
                si->signal = (int32_t)le32(p + 64);
                si->flags = le32(p + 68);
                si->real_ns = le64(p + 72);
            } else if (magic == CT_SKIP_MAGIC_HEADER) {
                note_damage(r, off, "%s", "unexpected second file header (files concatenated?)");
                skipped(r, off, 8 + (uint64_t)size);
            }
            r->buf_pos += 8 + size;
            continue;
        }
        if (magic != CT_ZSTD_MAGIC) {
            note_damage(r, off, "%s",
                        "expected a zstd frame (magic 0xFD2FB528) or a skippable frame");
            if (resync(r, off))
                return -EIO;
            continue;
        }
        int rc = read_zstd_frame(r, sink);
        if (rc == 0) {
            size_t next = valid_frame_after(r);
            if (next) {
                note_damage(r, off, "%s",
                            "corrupt zstd frame: its sizes run past the end of the file "
                            "although valid frames follow");
                skipped(r, off, next - r->buf_pos);
                r->buf_pos = next;
                continue;
            }
            r->truncated = 1;
            r->truncated_at = off;
            return 0;
        }
        if (rc == 2)
            continue;
        return rc;
    }
}
