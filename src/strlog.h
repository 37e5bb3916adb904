/*
 * The string log: the string definitions a trace file does not have yet,
 * kept in the live mapping (src/live.h) so that a salvage can name what the
 * recovered records refer to. Any thread appends (lock-free: one CAS on
 * the head reserves an entry, a release store of its id commits it); the
 * writer trims what its file now defines; a salvage reads the committed
 * entries between tail and head. An entry that does not fit (the writer far
 * behind) is counted in `lost`, never waited for: the string table itself
 * (strtab.h) still has it, so only a salvage could miss it.
 *
 * Layout (in the mapping; format.h, "Live mapping"): this 64-byte header,
 * then `size` bytes of entries. An entry is 8-byte aligned: u32 id (0 while
 * it is being written, CT_STRLOG_PAD for the filler at the end of a lap),
 * u32 len, then len bytes, padded to 8. Entries never wrap.
 */
#ifndef CT_STRLOG_H
#define CT_STRLOG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define CT_STRLOG_PAD 0xFFFFFFFFu
#define CT_STRLOG_HDR 64u

struct ct_strlog {
    _Atomic uint64_t head; /* bytes ever reserved */
    _Atomic uint64_t tail; /* bytes the writer let go (their strings are in the file) */
    _Atomic uint64_t lost; /* definitions that did not fit */
    uint64_t size;         /* bytes of entries after this header: a power of two */
    uint64_t reserved[4];
};

/* Sets up a log over `bytes` of zeroed memory (header included; the entry
 * area is rounded down to a power of two). NULL when too small. */
struct ct_strlog *ct_strlog_init(void *mem, size_t bytes);

/* Logs id's definition. Lock-free, any thread; counts it lost when it
 * does not fit. */
void ct_strlog_append(struct ct_strlog *l, uint32_t id, const char *s, size_t len);

/* Writer: lets go of the entries from the tail on whose ids defined()
 * says are in the file, up to the first that is not (or not committed). */
void ct_strlog_trim(struct ct_strlog *l, int (*defined)(void *ctx, uint32_t id), void *ctx);

/*
 * Salvage: calls fn for every committed entry from tail to head, reading a
 * log of `bytes` at mem that may be damaged anywhere (every length and
 * offset is checked; a bad entry ends the walk). Returns the entries
 * delivered, or a fn's negative code.
 */
long ct_strlog_walk(const void *mem, size_t bytes,
                    int (*fn)(void *ctx, uint32_t id, const char *s, uint32_t len), void *ctx);

#endif
