/*
 * fn_shm.c - the rendezvous of the fake NCCL's ranks: one POSIX shared
 * memory segment per communicator, "/fgnccl-<32 hex digits of the key>",
 * shared by every rank (processes, or threads of one process).
 *
 * Layout (all integers native-endian; the segment is only ever shared on
 * one host):
 *
 *   offset 0     header (struct fn_shm)
 *     magic      u64  FN_SHM_MAGIC, stored last (release) by the creator;
 *                     a segment without it is being created (or its
 *                     creator died: stale after FN_SHM_CREATE_GRACE_NS)
 *     nranks     i32  ranks of the communicator; every rank passes the same
 *     joined     i32  ranks attached so far (atomic)
 *     left       i32  ranks detached so far (atomic)
 *     coll_ring  u32  FN_COLL_RING, p2p_ring u32 FN_P2P_RING
 *   then nranks  struct fn_shm_rank: state (0 free, 1 joined, 2 left),
 *                pid, device, gbps (FAKEGPU_NET_GBPS of that rank),
 *                split slots (seq+1, color, key; ring of FN_SPLIT_RING)
 *   then nranks x FN_COLL_RING collective slots {seq+1, start_ns}:
 *                rank r's k-th collective started (GPU) at start_ns
 *   then nranks x nranks x FN_P2P_RING pair slots {send seq+1, send start,
 *                recv seq+1, recv start}: slot [src][dst][k % ring] holds
 *                the k-th Send of src to dst and the k-th Recv on dst from
 *                src.
 *
 * Validity: a slot is valid for sequence k when its tag equals k + 1
 * (stored with release after the value).  Rings bound how far one rank may
 * run ahead of a peer that has not yet resolved the same operation.
 *
 * Lifetime: the last rank to attach unlinks the name (the mappings stay),
 * so a crashed job leaves a segment behind only if it died during
 * initialisation.  A segment found under a name whose claimed slots all
 * belong to dead processes, or whose creator never finished it, is stale:
 * it is unlinked and replaced.
 */
#include "fn_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FN_SHM_MAGIC           0x31304d48534e4746ull /* "FGNSHM01" */
#define FN_COLL_RING           1024
#define FN_P2P_RING            256
#define FN_SPLIT_RING          4
#define FN_SHM_CREATE_GRACE_NS 2000000000ll

struct fn_shm {
    uint64_t magic;
    int32_t nranks, joined, left;
    uint32_t coll_ring, p2p_ring;
    uint32_t unlinked; /* set by the rank that unlinks the name */
};

struct fn_shm_rank {
    int32_t state, pid, device, pad;
    double gbps;
    struct {
        uint64_t tag;
        int32_t color, key;
    } split[FN_SPLIT_RING];
};

struct fn_coll_slot {
    uint64_t tag;
    int64_t start;
};

struct fn_p2p_slot {
    uint64_t send_tag;
    int64_t send_start;
    uint64_t recv_tag;
    int64_t recv_start;
};

#define FN_ALIGN(x) (((x) + 63) & ~(size_t)63)

static size_t fn_off_ranks(void)
{
    return FN_ALIGN(sizeof(struct fn_shm));
}

static size_t fn_off_coll(int n)
{
    return FN_ALIGN(fn_off_ranks() + (size_t)n * sizeof(struct fn_shm_rank));
}

static size_t fn_off_p2p(int n)
{
    return FN_ALIGN(fn_off_coll(n) + (size_t)n * FN_COLL_RING * sizeof(struct fn_coll_slot));
}

static size_t fn_shm_bytes(int n)
{
    return fn_off_p2p(n) + (size_t)n * (size_t)n * FN_P2P_RING * sizeof(struct fn_p2p_slot);
}

static struct fn_shm_rank *fn_rank(const struct fn_shm *s, int r)
{
    return (struct fn_shm_rank *)((char *)s + fn_off_ranks()) + r;
}

static struct fn_coll_slot *fn_coll(const struct fn_shm *s, int r, uint64_t seq)
{
    return (struct fn_coll_slot *)((char *)s + fn_off_coll(s->nranks)) + (size_t)r * FN_COLL_RING +
           seq % FN_COLL_RING;
}

static struct fn_p2p_slot *fn_p2p(const struct fn_shm *s, int src, int dst, uint64_t seq)
{
    size_t n = (size_t)s->nranks;
    return (struct fn_p2p_slot *)((char *)s + fn_off_p2p(s->nranks)) +
           ((size_t)src * n + (size_t)dst) * FN_P2P_RING + seq % FN_P2P_RING;
}

static void fn_shm_name(const unsigned char *key, char *buf, size_t n)
{
    int off = snprintf(buf, n, "/fgnccl-");
    for (int i = 0; i < FN_KEY_BYTES && off > 0 && (size_t)off + 3 <= n; i++)
        off += snprintf(buf + off, n - (size_t)off, "%02x", key[i]);
}

static void fn_sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)ms * 1000000};
    nanosleep(&ts, NULL);
}

static int64_t fn_timeout_ns(void)
{
    return (int64_t)(fn_env_double("FAKEGPU_NCCL_TIMEOUT_S", 60, 0.001, 1e6) * 1e9);
}

static bool fn_pid_dead(int32_t pid)
{
    return pid <= 0 || (kill(pid, 0) == -1 && errno == ESRCH);
}

/* True when no live process has a claim on the segment. */
static bool fn_shm_stale(const struct fn_shm *s)
{
    for (int r = 0; r < s->nranks; r++) {
        const struct fn_shm_rank *rk = fn_rank(s, r);
        if (__atomic_load_n(&rk->state, __ATOMIC_ACQUIRE) != 0 && !fn_pid_dead(rk->pid))
            return false;
    }
    return true;
}

/* Unlink name if it still names the file fd refers to. */
static void fn_shm_replace(const char *name, int fd)
{
    struct stat mine, now;
    int fd2 = shm_open(name, O_RDWR, 0600);
    if (fd2 < 0)
        return;
    if (fstat(fd, &mine) == 0 && fstat(fd2, &now) == 0 && mine.st_ino == now.st_ino)
        shm_unlink(name);
    close(fd2);
}

/* Map an existing segment once its creator has sized and stamped it.
 * Returns NULL with *stale set when it never became valid. */
static struct fn_shm *fn_shm_map_existing(int fd, size_t *size, bool *stale)
{
    int64_t deadline = fn_now() + FN_SHM_CREATE_GRACE_NS;
    *stale = false;
    for (;;) {
        struct stat st;
        if (fstat(fd, &st) != 0)
            return NULL;
        if ((size_t)st.st_size >= sizeof(struct fn_shm)) {
            void *p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (p == MAP_FAILED)
                return NULL;
            struct fn_shm *s = p;
            if (__atomic_load_n(&s->magic, __ATOMIC_ACQUIRE) == FN_SHM_MAGIC &&
                (size_t)st.st_size == fn_shm_bytes(s->nranks)) {
                *size = (size_t)st.st_size;
                return s;
            }
            munmap(p, (size_t)st.st_size);
        }
        if (fn_now() > deadline) {
            *stale = true;
            return NULL;
        }
        fn_sleep_ms(1);
    }
}

ncclResult_t fn_shm_attach(const unsigned char *key, int nranks, int rank, int device, double gbps,
                           struct fn_shm **out, size_t *size)
{
    char name[64];
    fn_shm_name(key, name, sizeof name);
    size_t bytes = fn_shm_bytes(nranks);
    for (int attempt = 0; attempt < 100; attempt++) {
        struct fn_shm *s = NULL;
        int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd >= 0) {
            if (ftruncate(fd, (off_t)bytes) != 0) {
                close(fd);
                shm_unlink(name);
                fn_set_error("fake NCCL: ftruncate %s: %s", name, strerror(errno));
                return ncclSystemError;
            }
            void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (p == MAP_FAILED) {
                close(fd);
                shm_unlink(name);
                fn_set_error("fake NCCL: mmap %s: %s", name, strerror(errno));
                return ncclSystemError;
            }
            s = p;
            s->nranks = nranks;
            s->coll_ring = FN_COLL_RING;
            s->p2p_ring = FN_P2P_RING;
            __atomic_store_n(&s->magic, FN_SHM_MAGIC, __ATOMIC_RELEASE);
            *size = bytes;
        } else if (errno == EEXIST) {
            fd = shm_open(name, O_RDWR, 0600);
            if (fd < 0)
                continue; /* unlinked meanwhile: create it */
            bool stale;
            s = fn_shm_map_existing(fd, size, &stale);
            if (!s && stale) {
                fn_shm_replace(name, fd);
                close(fd);
                continue;
            }
            if (!s) {
                close(fd);
                fn_set_error("fake NCCL: cannot map %s", name);
                return ncclSystemError;
            }
            struct fn_shm_rank *mine = rank < s->nranks ? fn_rank(s, rank) : NULL;
            bool taken = mine && __atomic_load_n(&mine->state, __ATOMIC_ACQUIRE) != 0;
            if ((s->nranks != nranks || taken) && fn_shm_stale(s)) {
                munmap(s, *size);
                fn_shm_replace(name, fd);
                close(fd);
                continue;
            }
            if (s->nranks != nranks || taken) {
                munmap(s, *size);
                close(fd);
                fn_set_error("fake NCCL: rank %d of %d does not fit communicator %s (%d ranks%s)",
                             rank, nranks, name, s->nranks, taken ? ", rank taken" : "");
                return s->nranks != nranks ? ncclInvalidArgument : ncclInvalidUsage;
            }
        } else {
            fn_set_error("fake NCCL: shm_open %s: %s", name, strerror(errno));
            return ncclSystemError;
        }
        close(fd);
        struct fn_shm_rank *me = fn_rank(s, rank);
        int32_t expected = 0;
        me->pid = (int32_t)getpid();
        me->device = device;
        me->gbps = gbps;
        if (!__atomic_compare_exchange_n(&me->state, &expected, 1, false, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE)) {
            munmap(s, *size);
            fn_set_error("fake NCCL: rank %d of %s claimed twice", rank, name);
            return ncclInvalidUsage;
        }
        __atomic_add_fetch(&s->joined, 1, __ATOMIC_ACQ_REL);
        *out = s;
        return ncclSuccess;
    }
    fn_set_error("fake NCCL: could not create %s", name);
    return ncclSystemError;
}

ncclResult_t fn_shm_wait_all(struct fn_shm *s, const unsigned char *key)
{
    int64_t deadline = fn_now() + fn_timeout_ns();
    while (__atomic_load_n(&s->joined, __ATOMIC_ACQUIRE) < s->nranks) {
        if (fn_now() > deadline) {
            fn_set_error("fake NCCL: timed out waiting for %d ranks (FAKEGPU_NCCL_TIMEOUT_S)",
                         s->nranks - __atomic_load_n(&s->joined, __ATOMIC_ACQUIRE));
            return ncclSystemError;
        }
        fn_sleep_ms(1);
    }
    /* Everyone has its mapping: the name is no longer needed.  All ranks
     * try; only the first unlink succeeds, and a new segment of the same
     * key cannot exist before this one's ranks have all joined. */
    char name[64];
    fn_shm_name(key, name, sizeof name);
    uint32_t done = 0;
    if (__atomic_compare_exchange_n(&s->unlinked, &done, 1, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
        shm_unlink(name);
    return ncclSuccess;
}

void fn_shm_detach(struct fn_shm *s, size_t size, const unsigned char *key, int rank)
{
    if (!s)
        return;
    __atomic_store_n(&fn_rank(s, rank)->state, 2, __ATOMIC_RELEASE);
    int32_t left = __atomic_add_fetch(&s->left, 1, __ATOMIC_ACQ_REL);
    if (__atomic_load_n(&s->joined, __ATOMIC_ACQUIRE) == left &&
        __atomic_load_n(&s->joined, __ATOMIC_ACQUIRE) < s->nranks) {
        /* Never completed and everyone who came has left (a timeout):
         * remove the name; a latecomer then waits on a fresh segment. */
        char name[64];
        fn_shm_name(key, name, sizeof name);
        uint32_t done = 0;
        if (__atomic_compare_exchange_n(&s->unlinked, &done, 1, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            shm_unlink(name);
    }
    munmap(s, size);
}

double fn_shm_gbps(const struct fn_shm *s, int rank)
{
    return fn_rank(s, rank)->gbps;
}

void fn_shm_coll_publish(struct fn_shm *s, int rank, uint64_t seq, int64_t start_ns)
{
    struct fn_coll_slot *sl = fn_coll(s, rank, seq);
    __atomic_store_n(&sl->start, start_ns, __ATOMIC_RELAXED);
    __atomic_store_n(&sl->tag, seq + 1, __ATOMIC_RELEASE);
}

bool fn_shm_coll_start(const struct fn_shm *s, int rank, uint64_t seq, int64_t *start_ns)
{
    const struct fn_coll_slot *sl = fn_coll(s, rank, seq);
    if (__atomic_load_n(&sl->tag, __ATOMIC_ACQUIRE) != seq + 1)
        return false;
    *start_ns = __atomic_load_n(&sl->start, __ATOMIC_RELAXED);
    return true;
}

void fn_shm_p2p_publish(struct fn_shm *s, int src, int dst, bool send, uint64_t seq,
                        int64_t start_ns)
{
    struct fn_p2p_slot *sl = fn_p2p(s, src, dst, seq);
    __atomic_store_n(send ? &sl->send_start : &sl->recv_start, start_ns, __ATOMIC_RELAXED);
    __atomic_store_n(send ? &sl->send_tag : &sl->recv_tag, seq + 1, __ATOMIC_RELEASE);
}

bool fn_shm_p2p_start(const struct fn_shm *s, int src, int dst, bool send, uint64_t seq,
                      int64_t *start_ns)
{
    const struct fn_p2p_slot *sl = fn_p2p(s, src, dst, seq);
    if (__atomic_load_n(send ? &sl->send_tag : &sl->recv_tag, __ATOMIC_ACQUIRE) != seq + 1)
        return false;
    *start_ns = __atomic_load_n(send ? &sl->send_start : &sl->recv_start, __ATOMIC_RELAXED);
    return true;
}

ncclResult_t fn_shm_split_exchange(struct fn_shm *s, int rank, uint64_t seq, int color, int key,
                                   int *colors, int *keys)
{
    unsigned i = (unsigned)(seq % FN_SPLIT_RING);
    struct fn_shm_rank *me = fn_rank(s, rank);
    me->split[i].color = color;
    me->split[i].key = key;
    __atomic_store_n(&me->split[i].tag, seq + 1, __ATOMIC_RELEASE);
    int64_t deadline = fn_now() + fn_timeout_ns();
    for (int r = 0; r < s->nranks; r++) {
        struct fn_shm_rank *rk = fn_rank(s, r);
        while (__atomic_load_n(&rk->split[i].tag, __ATOMIC_ACQUIRE) != seq + 1) {
            if (fn_now() > deadline) {
                fn_set_error("fake NCCL: ncclCommSplit timed out waiting for rank %d", r);
                return ncclSystemError;
            }
            fn_sleep_ms(1);
        }
        colors[r] = rk->split[i].color;
        keys[r] = rk->split[i].key;
    }
    return ncclSuccess;
}
