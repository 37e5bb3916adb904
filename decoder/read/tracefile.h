/*
 * One decoded trace file in memory: header, strings, status and records
 * sorted by time (stable, so records of the same instant keep file order).
 * The analyses and the dump work on this.
 */
#ifndef CT_TRACEFILE_H
#define CT_TRACEFILE_H

#include <stddef.h>
#include <stdint.h>

#include "src/reader.h"

struct ct_module {
    uint64_t start, end, offset;
    const char *path;
};

struct ct_stack_ref {
    uint64_t corr; /* 0: an I/O span's stack, found by (tid, time) */
    uint64_t time;
    uint32_t tid;
    const char *frames;
};

struct ct_trace {
    char *path;
    struct ct_reader rd; /* strings, header, footer, damage; I/O released */
    struct ct_record *recs;
    size_t n, cap;
    struct ct_record *meta; /* every META record, always kept */
    size_t nmeta, meta_cap;
    int64_t rank; /* -1 when the process metadata has none */
    uint64_t count[CT_REC_KIND_COUNT];
    uint64_t first_ns, last_ns;
    uint64_t dropped;    /* sum of DROP records */
    size_t *api_by_corr; /* indexes of API/NCCL records sorted by correlation id */
    size_t napi;
    size_t *gpu_by_corr; /* indexes of GPU records sorted by correlation id */
    size_t ngpu;
    size_t *nccl_by_group; /* indexes of grouped NCCL records sorted by group id */
    size_t ngrouped;
    /* built on first use by symbols.c: executable mappings sorted by start,
     * recorded call stacks sorted by correlation id */
    struct ct_module *mods;
    size_t nmods;
    struct ct_stack_ref *stacks;
    size_t nstacks;
    int sym_indexed;
};

/*
 * Reads the whole file. Returns 0 (possibly truncated or damaged: see
 * t->rd), or a negative errno with err holding one message naming the file.
 * keep_records = 0 only counts, keeps the metadata records and the time span
 * (for `info`), without decoding the other fields.
 */
int ct_trace_load(struct ct_trace *t, const char *path, int keep_records, char *err, size_t errlen);
void ct_trace_free(struct ct_trace *t);

/* The API (or NCCL) record with this correlation id, or NULL: how a GPU
 * interval is joined to the call that launched it. */
const struct ct_record *ct_trace_call(struct ct_trace *t, uint64_t corr);

/* The GPU records with this correlation id: *n of them from the returned
 * index array (into t->recs), NULL when none. */
const size_t *ct_trace_gpu(struct ct_trace *t, uint64_t corr, size_t *n);

/*
 * How far a GPU interval's source (enum ct_gpu_source) is trusted when two
 * sources time one op (an event pair and NCCL's profiler plugin around the
 * same collective): the plugin's (NCCL's own timer on the kernel) over
 * CUPTI's over an event pair's (which starts when the stream reaches the
 * event, so it holds the op's queueing). Higher wins; docs/report.md
 * "One interval per op".
 */
int ct_gpu_source_rank(uint64_t source);

/* 1 when GPU record r of t is superseded: a GPU record of the same
 * correlation id and type comes from a better source (ct_gpu_source_rank),
 * or r is a group's interval (an event pair around its ncclGroupEnd) and a
 * member of the group has its own from a better source. Each op is then
 * drawn and exported once, from that source. */
int ct_trace_gpu_superseded(struct ct_trace *t, const struct ct_record *r);

/*
 * When an NCCL op (record `op` of t) ran on the GPU, from the best source:
 * the profiler plugin's interval for the op, an event pair around the op
 * (or around the outermost ncclGroupEnd of its group), else the GPU record
 * of the ncclDevKernel_* launch NCCL made inside the op's call (or its
 * group's ncclGroupEnd) on the same thread. Returns the source
 * (enum ct_gpu_source) with start and end set, or 0 when the op is untimed.
 */
unsigned ct_trace_nccl_gpu(struct ct_trace *t, const struct ct_record *op, uint64_t *start,
                           uint64_t *end);

/*
 * The event id of an API record's fields f (cutrace/format.h,
 * CT_APIF_EVENT): 1 with *id set for the calls that carry one, an event's
 * records (cuEventRecord*) and the waits on it (cuStreamWaitEvent*), where
 * the same event has the same id; 0 for every other call, and for the
 * waits of traces recorded before the recorder carried events.
 */
static inline int ct_api_event(const uint64_t *f, uint64_t *id)
{
    if (!(f[CT_API_FLAGS] & CT_APIF_EVENT))
        return 0;
    *id = f[CT_API_BYTES];
    return 1;
}

/* The value of process metadata `key`, or NULL. */
const char *ct_trace_meta(const struct ct_trace *t, const char *key);

/* The text of string id `id` of t's string table (ct_reader_string). */
static inline const char *ct_trace_str(const struct ct_trace *t, uint64_t id)
{
    return ct_reader_string(&t->rd, id);
}

/*
 * A trace salvaged from a dead process whose GPU times were queued in it
 * (CUPTI's buffers, event pairs: CT_SALVAGE_GPU_PENDING): the GPU ops
 * (launches, copies, memsets not under capture) launched on a stream after
 * the last one of that stream whose GPU interval reached the trace (on a
 * stream none of whose ops has one: after the last of any stream), that
 * have none. Their GPU time
 * was never delivered: they are not idle time. *n of them, the first
 * launched at *from (trace clock; INT64_MAX when none). Needs the records
 * (keep_records). 0, or -ENOMEM.
 */
int ct_trace_undelivered(struct ct_trace *t, uint64_t *n, int64_t *from);

#endif
