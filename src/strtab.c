/*
 * Interning: open addressing over ids, entries published with release
 * stores. An insert allocates its id and bytes first and only then claims a
 * hash slot with CAS, so every id a slot holds is already readable.
 */
#include "src/strtab.h"

#include "src/strlog.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

static void *map_zeroed(size_t n)
{
    void *p =
        mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

int ct_strtab_init(struct ct_strtab *t, uint32_t max_ids, size_t arena_bytes)
{
    memset(t, 0, sizeof(*t));
    size_t nslots = 16;
    while (nslots < (size_t)max_ids * 2)
        nslots <<= 1;
    t->nslots = nslots;
    t->max_ids = max_ids;
    t->arena_size = arena_bytes;
    t->slots = map_zeroed(nslots * sizeof(*t->slots));
    t->entries = map_zeroed(((size_t)max_ids + 1) * sizeof(*t->entries));
    t->arena = map_zeroed(arena_bytes);
    if (!t->slots || !t->entries || !t->arena) {
        ct_strtab_destroy(t);
        return -ENOMEM;
    }
    atomic_store(&t->next_id, 1);
    /* id 0 is the empty string, always ready */
    atomic_store(&t->entries[0].ready, 1);
    return 0;
}

void ct_strtab_destroy(struct ct_strtab *t)
{
    if (t->slots)
        munmap(t->slots, t->nslots * sizeof(*t->slots));
    if (t->entries)
        munmap(t->entries, ((size_t)t->max_ids + 1) * sizeof(*t->entries));
    if (t->arena)
        munmap(t->arena, t->arena_size);
    memset(t, 0, sizeof(*t));
}

static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}

static int entry_equals(struct ct_strtab *t, uint32_t id, const char *s, size_t len)
{
    struct ct_str_entry *e = &t->entries[id];
    if (!atomic_load_explicit(&e->ready, memory_order_acquire))
        return 0;
    return e->len == len && memcmp(t->arena + e->off, s, len) == 0;
}

/* Allocates an id and copies the bytes; 0 when out of room. */
static uint32_t define_string(struct ct_strtab *t, const char *s, size_t len)
{
    uint32_t id = atomic_fetch_add_explicit(&t->next_id, 1, memory_order_relaxed);
    if (id > t->max_ids) {
        /* Keep next_id from running away so limit() stays meaningful. */
        atomic_fetch_sub_explicit(&t->next_id, 1, memory_order_relaxed);
        return 0;
    }
    struct ct_str_entry *e = &t->entries[id];
    uint64_t off = atomic_fetch_add_explicit(&t->arena_used, len, memory_order_relaxed);
    if (off + len > t->arena_size) {
        /* The id is already visible to the writer: publish it as "" so the
         * writer never waits on it, and report failure to the caller. */
        e->off = 0;
        e->len = 0;
        atomic_store_explicit(&e->ready, 1, memory_order_release);
        return 0;
    }
    memcpy(t->arena + off, s, len);
    e->off = off;
    e->len = (uint32_t)len;
    /* logged before anyone can have the id: a record that names it is
     * always made after its definition is in the log */
    ct_strlog_append(atomic_load_explicit(&t->log, memory_order_acquire), id, s, len);
    atomic_store_explicit(&e->ready, 1, memory_order_release);
    return id;
}

uint32_t ct_strtab_intern(struct ct_strtab *t, const char *s, size_t len)
{
    if (!t->slots || !s || len == 0)
        return 0;
    if (len > UINT32_MAX / 2)
        len = UINT32_MAX / 2;
    size_t mask = t->nslots - 1;
    size_t i = (size_t)hash_bytes(s, len) & mask;
    uint32_t mine = 0;
    for (size_t probes = 0; probes < t->nslots; probes++, i = (i + 1) & mask) {
        uint32_t v = atomic_load_explicit(&t->slots[i], memory_order_acquire);
        if (v != 0) {
            if (entry_equals(t, v, s, len))
                return v;
            continue;
        }
        if (!mine) {
            mine = define_string(t, s, len);
            if (!mine)
                break;
        }
        uint32_t expected = 0;
        if (atomic_compare_exchange_strong_explicit(&t->slots[i], &expected, mine,
                                                    memory_order_acq_rel, memory_order_acquire))
            return mine;
        if (entry_equals(t, expected, s, len))
            return expected; /* lost the race to the same string */
    }
    if (mine)
        return mine; /* valid, just not findable: the hash is full */
    atomic_fetch_add_explicit(&t->failures, 1, memory_order_relaxed);
    return 0;
}

uint32_t ct_strtab_intern_cstr(struct ct_strtab *t, const char *s)
{
    return s ? ct_strtab_intern(t, s, strlen(s)) : 0;
}

uint32_t ct_strtab_limit(struct ct_strtab *t)
{
    uint32_t n = atomic_load_explicit(&t->next_id, memory_order_acquire);
    return n > t->max_ids + 1 ? t->max_ids + 1 : n;
}

int ct_strtab_get(struct ct_strtab *t, uint32_t id, const char **s, uint32_t *len)
{
    if (id >= ct_strtab_limit(t))
        return -EINVAL;
    struct ct_str_entry *e = &t->entries[id];
    if (!atomic_load_explicit(&e->ready, memory_order_acquire))
        return -EAGAIN;
    *s = t->arena + e->off;
    *len = e->len;
    return 0;
}
