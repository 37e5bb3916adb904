/*
 * What a cutrace trace says about itself besides its timeline: its
 * metadata (host, GPU model, driver, NCCL version, NCCL_* settings, `--tag`
 * values) and the per-copy facts the timeline does not keep (the host call
 * and the GPU transfer of each copy). Gathered during the extraction's one
 * pass over the file (decoder/read/extract.c) or read from a summary's
 * facts section, and kept on the process (struct ct_proc.facts); `diff
 * --by`, the rows and `diagnose`'s pageable-copy check read them there.
 * Functions return 0 or -ENOMEM; nothing here prints.
 */
#ifndef CT_FACTS_H
#define CT_FACTS_H

#include <stddef.h>
#include <stdint.h>

/* One metadata pair. */
struct ct_fact_kv {
    char *key, *value;
};

/* One memcpy call with its GPU transfer (trace clock, ns). */
struct ct_copy_fact {
    int64_t host_s, host_e, gpu_s, gpu_e;
    uint64_t bytes;
    uint8_t kind;  /* enum ct_copy_kind */
    uint8_t async; /* an *Async entry point */
};

/* Metadata keys: process keys as recorded ("host", "rank", "nccl_version",
 * "env.NCCL_ALGO", "tag.KEY", ...); device keys prefixed "device."
 * ("device.name", "device.driver_version"); the first value of a key
 * wins. */
struct ct_trace_facts {
    int64_t rank; /* -1 when the metadata has none */
    struct ct_fact_kv *meta;
    size_t nmeta;
    struct ct_copy_fact *copies; /* sorted by host start */
    size_t ncopies;
};

/* The value of metadata key, or NULL. */
const char *ct_facts_value(const struct ct_trace_facts *f, const char *key);

/*
 * Gathering during a pass over a trace (ct_facts_collect_init, then per
 * record the calls below, then ct_facts_collect_finish, which joins each
 * copy call to its GPU transfer and keeps the calls that have one).
 */
struct ct_facts_collect {
    struct ct_trace_facts *f;
    size_t meta_cap;
    struct ct_copy_fact *calls; /* copy calls, before the join */
    uint64_t *call_corr;
    size_t ncalls, calls_cap;
    struct ct_facts_gpu_copy {
        uint64_t corr;
        int64_t s, e;
    } * gpu;
    size_t ngpu, gpu_cap;
};
int ct_facts_collect_init(struct ct_facts_collect *c);
/* A metadata record of scope (enum ct_meta_scope): process and device
 * scopes are kept. */
int ct_facts_meta(struct ct_facts_collect *c, uint64_t scope, const char *key, const char *value);
/* A memcpy call (CT_FAM_MEMCPY API record) and a GPU copy (CT_GPU_MEMCPY). */
int ct_facts_copy_call(struct ct_facts_collect *c, uint64_t corr, const struct ct_copy_fact *call);
int ct_facts_gpu_copy(struct ct_facts_collect *c, uint64_t corr, int64_t s, int64_t e);
/* The facts gathered (the caller owns them: ct_facts_free), or NULL on
 * allocation failure; c is emptied either way. */
struct ct_trace_facts *ct_facts_collect_finish(struct ct_facts_collect *c);
void ct_facts_collect_free(struct ct_facts_collect *c);

/* A copy of f (NULL for NULL), or NULL with *oom set. */
struct ct_trace_facts *ct_facts_copy(const struct ct_trace_facts *f, int *oom);
/* Frees f and what it holds (NULL: nothing). */
void ct_facts_free(struct ct_trace_facts *f);

/* The facts as a summary's facts section (decoder/read/summary.c), and
 * back: ct_facts_decode returns 0, -ENOMEM, or -EIO for a section that does
 * not decode. */
struct ct_sum_wbuf;
void ct_facts_encode(const struct ct_trace_facts *f, struct ct_sum_wbuf *b);
int ct_facts_decode(const unsigned char *p, size_t n, struct ct_trace_facts **out);

#endif
