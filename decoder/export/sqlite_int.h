/*
 * The SQLite export's own pieces shared by its files (decoder/export/
 * sqlite.c: the schema, the writer, every table but NCCL's;
 * sqlite_nccl.c: NCCL's tables). Not an interface: nothing outside them
 * includes it.
 */
#ifndef CT_EXPORT_SQLITE_INT_H
#define CT_EXPORT_SQLITE_INT_H

#include <errno.h>
#include <sqlite3.h>
#include <stdint.h>

#include "decoder/export/export.h"
#include "decoder/read/tracefile.h"

enum stmt {
    ST_STR,
    ST_ENV,
    ST_GPU_INFO,
    ST_KERNEL,
    ST_MEMCPY,
    ST_MEMSET,
    ST_SYNC,
    ST_RUNTIME,
    ST_NVTX,
    ST_NCCL,
    ST_NCCL_INFO,
    ST_NCCL_PROXY,
    ST_NCCL_CHANNEL,
    ST_NCCL_NET,
    ST_NCCL_PHASE,
    ST_NCCL_TAG,
    ST_NCCL_STEP,
    ST_IO,
    ST_RANK,
    ST_ITER,
    ST_ITER_M,
    ST_COUNT
};

/* StringIds: every distinct string once (open addressing, FNV-1a). */
struct strtab {
    char **s;
    int64_t *id;
    size_t cap, n;
};

struct sqlite_writer {
    sqlite3 *db;
    sqlite3_stmt *st[ST_COUNT];
    struct strtab strs;
    struct ct_trace *t;
    const struct ct_export_src *src;
    int64_t shift, gpid;
    int64_t *raw_ids; /* per trace: trace string id -> StringIds id (0: not yet) */
    int64_t *dem_ids, *short_ids;
    uint64_t *gnode; /* per record of t: its graph node id (graph_nodes), or NULL */
    int rc;          /* first SQLite error */
};

/* A prepared row inserted (its bindings cleared for the next); the first
 * SQLite error is kept in w->rc and fails the export. */
static inline int step(struct sqlite_writer *w, enum stmt k)
{
    sqlite3_stmt *s = w->st[k];
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    if (rc != SQLITE_DONE && !w->rc)
        w->rc = rc;
    return rc == SQLITE_DONE ? 0 : -EIO;
}

static inline void b_i(struct sqlite_writer *w, enum stmt k, int col, int64_t v)
{
    sqlite3_bind_int64(w->st[k], col, v);
}

static inline void b_t(struct sqlite_writer *w, enum stmt k, int col, const char *v)
{
    sqlite3_bind_text(w->st[k], col, v, -1, SQLITE_TRANSIENT);
}

/* A trace time in the export's ns (from its time zero: none negative). */
static inline int64_t T(struct sqlite_writer *w, uint64_t trace_ns)
{
    return (int64_t)trace_ns + w->shift;
}

/* The row of an NCCL record (NCCL_OPS, NCCL_INFO, NCCL_PROXY_OPS,
 * NCCL_CHANNELS, NCCL_NET, NCCL_KERNEL_PHASES, NCCL_TAGS) of w's trace: sqlite_nccl.c. */
void ct_sqlite_nccl_row(struct sqlite_writer *w, const struct ct_record *r);

#endif
