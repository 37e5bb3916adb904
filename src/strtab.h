/*
 * Lock-free string interning for the recording side. Any thread may intern;
 * the writer reads definitions in id order and writes each one into the
 * first chunk that may reference it. No locks, no malloc after init (the
 * storage is mmap'ed once), safe to call from wrappers on any thread.
 */
#ifndef CT_STRTAB_H
#define CT_STRTAB_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct ct_strlog;

struct ct_str_entry {
    atomic_uint ready; /* 1 once off/len are valid; release-published */
    uint32_t len;
    uint64_t off;
};

struct ct_strtab {
    atomic_uint *slots;           /* hash slots holding ids, 0 = empty */
    struct ct_str_entry *entries; /* by id */
    char *arena;
    size_t nslots; /* power of two */
    uint32_t max_ids;
    size_t arena_size;
    atomic_uint next_id; /* ids handed out so far + 1 */
    _Atomic uint64_t arena_used;
    _Atomic uint64_t failures; /* interning that returned 0 for lack of room */
    /* where new definitions are logged as well (src/strlog.h: the live
     * mapping's, for a salvage), NULL when nowhere */
    struct ct_strlog *_Atomic log;
};

/*
 * Maps the storage. max_ids is rounded so that the hash stays at most half
 * full. Returns 0 or -ENOMEM. Not thread-safe; call once.
 */
int ct_strtab_init(struct ct_strtab *t, uint32_t max_ids, size_t arena_bytes);
void ct_strtab_destroy(struct ct_strtab *t);

/*
 * Returns the id of the string (len bytes, need not be NUL-terminated), or 0
 * for the empty string and when the table is full (counted in failures).
 * Thread-safe and lock-free. Two racing threads may get two ids for the same
 * string; both stay valid.
 */
uint32_t ct_strtab_intern(struct ct_strtab *t, const char *s, size_t len);
uint32_t ct_strtab_intern_cstr(struct ct_strtab *t, const char *s);

/* Ids below this have been handed out (some may not be ready yet). */
uint32_t ct_strtab_limit(struct ct_strtab *t);

/* 0 and the bytes when id is defined and ready, -EAGAIN when it is not ready
 * yet, -EINVAL when it was never handed out. */
int ct_strtab_get(struct ct_strtab *t, uint32_t id, const char **s, uint32_t *len);

#endif
