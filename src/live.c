/*
 * The live mapping, recorder side (live.h): made at start, rings carved from
 * it at each thread's first record, the writer's progress published in its
 * header, removed when the footer is written.
 *
 * Never a SIGBUS in the job: every range a producer touches is allocated
 * (fallocate) before it is mapped; what the writer alone keeps there (the
 * deferred file's bytes) is written with pwrite, whose failure is an error
 * code. Never a descriptor that is no longer ours: the mapping's is one of
 * src/ownfd.h's, checked before every use.
 */
#include "src/live.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/ownfd.h"
#include "src/recorder.h"
#include "src/strlog.h"

_Static_assert(offsetof(struct ct_live_hdr, start_ticks) == 24, "live header layout");
_Static_assert(offsetof(struct ct_live_hdr, uid) == 72, "live header layout");
_Static_assert(offsetof(struct ct_live_hdr, ring_bytes) == 80, "live header layout");
_Static_assert(offsetof(struct ct_live_hdr, pend_len) == 144, "live header layout");
_Static_assert(offsetof(struct ct_live_hdr, dir_dev) == 160, "live header layout");
_Static_assert(offsetof(struct ct_live_hdr, trace_name) == 176, "live header layout");
_Static_assert(offsetof(struct ct_live_hdr, conv) == 440, "live header layout");
_Static_assert(offsetof(struct ct_live_hdr, jr_seq) == 504, "live header layout");
_Static_assert(offsetof(struct ct_live_hdr, file_len) == 536, "live header layout");
_Static_assert(offsetof(struct ct_live_hdr, gpu_mode) == 584, "live header layout");
_Static_assert(offsetof(struct ct_live_hdr, beat_ns) == 600, "live header layout");
_Static_assert(sizeof(struct ct_live_hdr) <= CT_LIVE_SLOTS_OFF, "live header fits its page");
_Static_assert(CT_LIVE_SLOTS_OFF + CT_LIVE_MAX_SLOTS * 4 <= CT_LIVE_HDR_BYTES, "slot table fits");
_Static_assert(CT_LIVE_MAX_SLOTS == CT_MAX_RINGS, "a slot per ring");
_Static_assert(offsetof(struct ct_ring, head) == 0, "ring control layout");
_Static_assert(offsetof(struct ct_ring, pending) == 16, "ring control layout");
_Static_assert(offsetof(struct ct_ring, dropped) == 24, "ring control layout");
_Static_assert(offsetof(struct ct_ring, tail) == 64, "ring control layout");
_Static_assert(offsetof(struct ct_ring, dropped_reported) == 72, "ring control layout");
_Static_assert(offsetof(struct ct_ring, size) == 136, "ring control layout");
_Static_assert(offsetof(struct ct_ring, tid) == 152, "ring control layout");
_Static_assert(offsetof(struct ct_ring, state) == 156, "ring control layout");
_Static_assert(offsetof(struct ct_ring, slot) == 160, "ring control layout");
_Static_assert(sizeof(struct ct_ring) <= CT_LIVE_RING_CTL, "ring control fits its page");

static struct {
    struct ct_live_hdr *_Atomic hdr; /* NULL: no mapping */
    size_t map_len;
    int fd_slot;
    char path[4200];
    _Atomic uint64_t private_seen;
    uint32_t gen; /* counts the mappings this process made */
} g_live = {.fd_slot = -1};

const char *ct_live_shm_dir(void)
{
    const char *t = getenv("CUTRACE_TEST_SHM_DIR");
    return t && *t ? t : "/dev/shm";
}

static uint64_t fnv64(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

int ct_live_path(const char *trace_path, int where, uint32_t uid, char *out, size_t n)
{
    const char *slash = strrchr(trace_path, '/');
    const char *name = slash ? slash + 1 : trace_path;
    if (where == CT_LIVE_DIR) {
        size_t len = strlen(trace_path);
        if (len > 8 && !strcmp(trace_path + len - 8, ".cutrace"))
            len -= 8;
        if ((size_t)snprintf(out, n, "%.*s.cutrace-live", (int)len, trace_path) >= n)
            return -ENAMETOOLONG;
        return 0;
    }
    char dir[4096];
    size_t dl = slash ? (size_t)(slash - trace_path) : 0;
    if (dl >= sizeof(dir))
        return -ENAMETOOLONG;
    if (slash) {
        memcpy(dir, trace_path, dl);
        dir[dl] = 0;
        if (!dl)
            strcpy(dir, "/");
    } else {
        strcpy(dir, ".");
    }
    struct stat st;
    if (stat(dir, &st) != 0)
        return -errno;
    if ((size_t)snprintf(out, n, "%s/cutrace-%u-%llx-%llx-%016llx.live", ct_live_shm_dir(), uid,
                         (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
                         (unsigned long long)fnv64(name)) >= n)
        return -ENAMETOOLONG;
    return 0;
}

/* Field 22 of /proc/self/stat (after the command's closing parenthesis). */
static uint64_t own_start_ticks(void)
{
    char buf[1024];
    if (ct_own_read_small("/proc/self/stat", buf, sizeof(buf)) <= 0)
        return 0;
    const char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    p++;
    for (int field = 2; field < 22 && *p; p++)
        if (*p == ' ')
            field++;
    return strtoull(p, NULL, 10);
}

static void set_why(char *why, size_t n, const char *path, const char *what, int err)
{
    snprintf(why, n, "%s: %s: %s", path, what, strerror(err));
}

/* The folder of trace_path's (dev, ino). */
static void folder_id(const char *trace_path, uint64_t *dev, uint64_t *ino)
{
    char dir[4096];
    const char *slash = strrchr(trace_path, '/');
    size_t dl = slash ? (size_t)(slash - trace_path) : 1;
    if (dl >= sizeof(dir))
        dl = sizeof(dir) - 1;
    memcpy(dir, slash ? trace_path : ".", dl);
    dir[dl] = 0;
    if (slash && dl == 0)
        strcpy(dir, "/");
    struct stat st;
    *dev = *ino = 0;
    if (stat(dir, &st) == 0) {
        *dev = (uint64_t)st.st_dev;
        *ino = (uint64_t)st.st_ino;
    }
}

static int try_open(const struct ct_live_cfg *cfg, int where, char *why, size_t n)
{
    uint32_t uid = (uint32_t)geteuid();
    int rc = ct_live_path(cfg->trace_path, where, uid, g_live.path, sizeof(g_live.path));
    if (rc) {
        set_why(why, n, cfg->trace_path, "no name for the mapping", -rc);
        return rc;
    }
    int slot = ct_own_open(g_live.path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600,
                           CT_OWN_HIGH);
    if (slot < 0) {
        set_why(why, n, g_live.path, "cannot create", -slot);
        return slot;
    }
    uint64_t ring = 4096;
    while (ring < cfg->ring_bytes && ring < (1ull << 40))
        ring <<= 1;
    size_t head = CT_LIVE_HDR_BYTES + CT_LIVE_STRLOG_BYTES;
    int fd = ct_own_use(slot);
    void *m = MAP_FAILED;
    rc = fd < 0 ? -EBADF : 0;
    if (!rc && fallocate(fd, 0, 0, (off_t)head) != 0) {
        rc = -errno;
        set_why(why, n, g_live.path, "cannot allocate", -rc);
    }
    if (!rc) {
        m = mmap(NULL, head, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
        if (m == MAP_FAILED) {
            rc = -errno;
            set_why(why, n, g_live.path, "cannot map", -rc);
        }
    }
    if (fd >= 0)
        ct_own_done(slot);
    if (rc) {
        if (rc == -EBADF)
            set_why(why, n, g_live.path, "descriptor lost", EBADF);
        unlink(g_live.path);
        ct_own_close(slot);
        return rc;
    }
    struct ct_live_hdr *h = m;
    h->version = CT_LIVE_VERSION;
    h->hdr_bytes = CT_LIVE_HDR_BYTES;
    h->pid = cfg->pid;
    h->gen = cfg->gen;
    h->start_ticks = own_start_ticks();
    char boot[64];
    if (ct_own_read_small("/proc/sys/kernel/random/boot_id", boot, sizeof(boot)) > 0) {
        boot[strcspn(boot, "\n")] = 0;
        boot[sizeof(h->boot_id) - 1] = 0; /* a uuid: 36 characters */
        memcpy(h->boot_id, boot, strlen(boot) + 1);
    }
    h->uid = uid;
    struct stat ns;
    if (stat("/proc/self/ns/pid", &ns) == 0)
        h->pidns = (uint64_t)ns.st_ino;
    atomic_store(&h->beat_ns, ct_clock_mono_ns());
    h->tsc = (uint32_t)ct_clock_tsc;
    h->ring_bytes = ring;
    h->slot_bytes = CT_LIVE_RING_CTL + ring;
    h->strlog_off = CT_LIVE_HDR_BYTES;
    h->strlog_bytes = CT_LIVE_STRLOG_BYTES;
    h->pend_off = head;
    h->pend_cap = CT_LIVE_PEND_BYTES;
    h->rings_off = head + CT_LIVE_PEND_BYTES;
    h->max_slots = CT_LIVE_MAX_SLOTS;
    folder_id(cfg->trace_path, &h->dir_dev, &h->dir_ino);
    const char *slash = strrchr(cfg->trace_path, '/');
    snprintf(h->trace_name, sizeof(h->trace_name), "%s", slash ? slash + 1 : cfg->trace_path);
    atomic_store(&h->state, CT_LIVE_RECORDING);
    struct ct_strlog *log = ct_strlog_init((char *)m + CT_LIVE_HDR_BYTES, CT_LIVE_STRLOG_BYTES);
    /* the magic last: a salvage reads a header only once it is whole */
    atomic_thread_fence(memory_order_release);
    memcpy(h->magic, CT_LIVE_MAGIC, 8);
    g_live.fd_slot = slot;
    g_live.map_len = head;
    g_live.gen++;
    atomic_store(&g_live.private_seen, 0);
    atomic_store(&g_live.hdr, h);
    atomic_store(&ct_strings.log, log);
    return 0;
}

int ct_live_open(const struct ct_live_cfg *cfg, char *why, size_t n)
{
    why[0] = 0;
    if (cfg->where == CT_LIVE_PRIVATE)
        return -ENOENT;
    int rc = try_open(cfg, cfg->where, why, n);
    if (rc && cfg->where == CT_LIVE_SHM && rc != -ENOSPC && rc != -EDQUOT) {
        /* no /dev/shm here (or not ours to write): beside the trace, where
         * any reader of the folder finds it too */
        char first[512];
        snprintf(first, sizeof(first), "%s", why);
        rc = try_open(cfg, CT_LIVE_DIR, why, n);
        if (rc) {
            char both[1024];
            snprintf(both, sizeof(both), "%s; %s", first, why);
            snprintf(why, n, "%s", both);
        }
    }
    return rc;
}

int ct_live_on(void)
{
    return atomic_load(&g_live.hdr) != NULL;
}

const char *ct_live_where_path(void)
{
    return ct_live_on() ? g_live.path : "";
}

struct ct_ring *ct_live_ring_new(size_t bytes, uint32_t tid)
{
    struct ct_live_hdr *h = atomic_load_explicit(&g_live.hdr, memory_order_acquire);
    if (!h)
        return NULL;
    uint64_t size = 4096;
    while (size < bytes && size < (1ull << 40))
        size <<= 1;
    if (size != h->ring_bytes)
        goto private;
    _Atomic uint32_t *slots = ct_live_slots(h);
    uint32_t i;
    for (i = 0; i < h->max_slots; i++) {
        uint32_t free_state = CT_SLOT_FREE;
        if (atomic_load_explicit(&slots[i], memory_order_relaxed) == CT_SLOT_FREE &&
            atomic_compare_exchange_strong(&slots[i], &free_state, CT_SLOT_SETUP))
            break;
    }
    if (i == h->max_slots)
        goto private;
    off_t off = (off_t)(h->rings_off + (uint64_t)i * h->slot_bytes);
    int fd = ct_own_use(g_live.fd_slot);
    if (fd < 0) {
        atomic_store(&slots[i], CT_SLOT_FREE);
        goto private;
    }
    void *m = MAP_FAILED;
    if (fallocate(fd, 0, off, (off_t)h->slot_bytes) == 0)
        m = mmap(NULL, h->slot_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, off);
    ct_own_done(g_live.fd_slot);
    if (m == MAP_FAILED) {
        atomic_store(&slots[i], CT_SLOT_FREE);
        goto private;
    }
    /* a slot used before was punched out (zeroed); the control block is
     * cleared anyway, so nothing of an earlier thread reads as records */
    memset(m, 0, CT_LIVE_RING_CTL);
    struct ct_ring *r = m;
    r->data = (uint8_t *)m + CT_LIVE_RING_CTL;
    r->size = size;
    r->mask = size - 1;
    r->tid = tid;
    r->slot = (int32_t)i;
    r->live_gen = g_live.gen;
    atomic_store(&r->state, CT_RING_ACTIVE);
    uint32_t hwm = atomic_load(&h->slots_hwm);
    while (hwm < i + 1 && !atomic_compare_exchange_weak(&h->slots_hwm, &hwm, i + 1))
        ;
    atomic_store_explicit(&slots[i], CT_SLOT_USED, memory_order_release);
    return r;

  private:
    atomic_fetch_add(&h->private_rings, 1);
    return NULL;
}

void ct_live_ring_free(struct ct_ring *r)
{
    struct ct_live_hdr *h = atomic_load(&g_live.hdr);
    uint32_t i = (uint32_t)r->slot;
    size_t len = CT_LIVE_RING_CTL + r->size;
    if (!h || r->live_gen != g_live.gen || i >= h->max_slots || len != h->slot_bytes) {
        /* the mapping is gone (closed), or an earlier recorder's of this
         * process: only our view of it goes */
        munmap(r, len);
        return;
    }
    /* nothing of it reads as records any more, then its memory goes back */
    atomic_store(&r->head, 0);
    atomic_store(&r->tail, 0);
    int fd = ct_own_use(g_live.fd_slot);
    if (fd >= 0) {
        fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                  (off_t)(h->rings_off + (uint64_t)i * h->slot_bytes), (off_t)h->slot_bytes);
        ct_own_done(g_live.fd_slot);
    }
    munmap(r, len);
    atomic_store_explicit(&ct_live_slots(h)[i], CT_SLOT_FREE, memory_order_release);
}

void ct_live_ring_forget(struct ct_ring *r)
{
    munmap(r, CT_LIVE_RING_CTL + r->size);
}

void ct_live_conv_set(const struct ct_clock_conv *c)
{
    struct ct_live_hdr *h = atomic_load_explicit(&g_live.hdr, memory_order_relaxed);
    if (!h)
        return;
    uint32_t next = atomic_load_explicit(&h->conv_cur, memory_order_relaxed) ^ 1u;
    h->conv[next].ticks = c->anchor.ticks;
    h->conv[next].mono_ns = c->anchor.mono_ns;
    h->conv[next].ns_per_tick = c->ns_per_tick;
    atomic_store_explicit(&h->conv_cur, next, memory_order_release);
}

void ct_live_frame_begin(int32_t slot, uint64_t tail, uint64_t end)
{
    struct ct_live_hdr *h = atomic_load_explicit(&g_live.hdr, memory_order_relaxed);
    if (!h)
        return;
    /* even -> odd with the fields in place: a salvage sees either no frame
     * in flight, or this one whole */
    uint64_t s = atomic_load_explicit(&h->jr_seq, memory_order_relaxed);
    h->jr_slot = (uint64_t)(int64_t)slot;
    h->jr_tail = tail;
    h->jr_end = end;
    atomic_store_explicit(&h->jr_seq, (s & 1u) ? s + 2 : s + 1, memory_order_release);
}

void ct_live_frame_end(void)
{
    struct ct_live_hdr *h = atomic_load_explicit(&g_live.hdr, memory_order_relaxed);
    if (!h)
        return;
    uint64_t s = atomic_load_explicit(&h->jr_seq, memory_order_relaxed);
    if (s & 1u)
        atomic_store_explicit(&h->jr_seq, s + 1, memory_order_release);
}

void ct_live_progress(uint64_t file_len, uint64_t next_seq, uint64_t chunks, uint64_t records,
                      uint64_t dropped)
{
    struct ct_live_hdr *h = atomic_load_explicit(&g_live.hdr, memory_order_relaxed);
    if (!h)
        return;
    atomic_store_explicit(&h->chunks, chunks, memory_order_relaxed);
    atomic_store_explicit(&h->records, records, memory_order_relaxed);
    atomic_store_explicit(&h->dropped, dropped, memory_order_relaxed);
    atomic_store_explicit(&h->next_seq, next_seq, memory_order_relaxed);
    atomic_store_explicit(&h->file_len, file_len, memory_order_release);
}

void ct_live_beat(uint64_t now_ns, uint32_t str_limit)
{
    struct ct_live_hdr *h = atomic_load_explicit(&g_live.hdr, memory_order_relaxed);
    if (!h)
        return;
    atomic_store_explicit(&h->str_limit, str_limit, memory_order_relaxed);
    atomic_store_explicit(&h->beat_ns, now_ns, memory_order_relaxed);
}

int ct_live_pend_write(uint64_t off, const void *p, size_t n)
{
    struct ct_live_hdr *h = atomic_load_explicit(&g_live.hdr, memory_order_relaxed);
    if (!h)
        return 0;
    if (off != atomic_load(&h->pend_len) || off + n > h->pend_cap)
        return -EFBIG; /* past the region, or after a failed write: kept in memory only */
    int fd = ct_own_use(g_live.fd_slot);
    if (fd < 0)
        return -EBADF;
    const uint8_t *b = p;
    size_t done = 0;
    int rc = 0;
    while (done < n) {
        ssize_t w = pwrite(fd, b + done, n - done, (off_t)(h->pend_off + off + done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            rc = w < 0 ? -errno : -EIO;
            break;
        }
        done += (size_t)w;
    }
    ct_own_done(g_live.fd_slot);
    if (!rc)
        atomic_store_explicit(&h->pend_len, off + n, memory_order_release);
    return rc;
}

void ct_live_file_created(void)
{
    struct ct_live_hdr *h = atomic_load(&g_live.hdr);
    if (h)
        atomic_store_explicit(&h->file_created, 1, memory_order_release);
}

void ct_live_gpu_mode(unsigned mode)
{
    struct ct_live_hdr *h = atomic_load(&g_live.hdr);
    if (h)
        atomic_store(&h->gpu_mode, mode);
}

void ct_live_close(void)
{
    struct ct_live_hdr *h = atomic_exchange(&g_live.hdr, NULL);
    if (!h)
        return;
    /* new definitions stop going to the log; a thread in the middle of one
     * finishes it in memory that stays mapped */
    atomic_store(&ct_strings.log, NULL);
    atomic_store(&h->state, CT_LIVE_FINISHED);
    unlink(g_live.path);
    if (g_live.fd_slot >= 0)
        ct_own_close(g_live.fd_slot);
    g_live.fd_slot = -1;
}

void ct_live_drop_inherited(void)
{
    atomic_store(&ct_strings.log, NULL);
    if (atomic_exchange(&g_live.hdr, NULL) && g_live.fd_slot >= 0)
        ct_own_close(g_live.fd_slot); /* the child's copy of the parent's descriptor */
    g_live.fd_slot = -1;
}

uint64_t ct_live_private_rings(void)
{
    struct ct_live_hdr *h = atomic_load(&g_live.hdr);
    if (!h)
        return 0;
    uint64_t now = atomic_load(&h->private_rings);
    uint64_t seen = atomic_exchange(&g_live.private_seen, now);
    return now - seen;
}
