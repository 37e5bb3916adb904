/*
 * Per-rank summaries (`cutrace summarize`; format in docs/summary.md): one
 * trace's compact timeline (struct ct_proc, what ct_proc_extract_file makes
 * of it) written to a small versioned file, so that the expensive part of
 * loading a job (decompressing and extracting every record) can run where
 * the traces are, in parallel, and `report`, `diagnose`, `diff` and
 * `export` read the summaries in place of the traces with byte-identical
 * output: everything after extraction is the same code on the same data.
 */
#ifndef CT_DECODER_SUMMARY_H
#define CT_DECODER_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

#include "decoder/read/timeline.h"

#define CT_SUMMARY_SUFFIX  ".ctsum"
#define CT_SUMMARY_VERSION 12
/* the oldest read: version 9 is version 10 without the NCCL kernel
 * channels, 10 is 11 without the network devices, 11 is 12 without the
 * raw proxy steps' count and whose NCCL ops are all NCCL's (12: an op's
 * class byte carries its library in its high nibble, so an older reader
 * refuses NVSHMEM's ops; docs/summary.md) */
#define CT_SUMMARY_VERSION_MIN 9

/* The summary's own encoding (little-endian, fixed width), for the
 * sections another stage fills: the facts that diagnose and diff read
 * beside the timeline (decoder/compare/runs.c). A short read or no memory
 * sets bad (oom) and every later get returns 0. */
struct ct_sum_wbuf {
    unsigned char *p;
    size_t n, cap;
    int oom;
};
void ct_sum_put(struct ct_sum_wbuf *b, const void *v, size_t len);
void ct_sum_put_u64(struct ct_sum_wbuf *b, uint64_t v);
void ct_sum_put_u32(struct ct_sum_wbuf *b, uint32_t v);
void ct_sum_put_u8(struct ct_sum_wbuf *b, uint8_t v);
void ct_sum_put_str(struct ct_sum_wbuf *b, const char *s);
struct ct_sum_rbuf {
    const unsigned char *p;
    size_t n, at;
    int bad;
};
/* 1 when len more bytes are left, else 0 with r->bad set (and kept). */
int ct_sum_need(struct ct_sum_rbuf *r, size_t len);
uint64_t ct_sum_get_u64(struct ct_sum_rbuf *r);
uint32_t ct_sum_get_u32(struct ct_sum_rbuf *r);
uint8_t ct_sum_get_u8(struct ct_sum_rbuf *r);
char *ct_sum_get_str(struct ct_sum_rbuf *r, int *oom);
/* Room for a count (read first) of elements of at least min bytes each in
 * what is left, elem bytes each in memory; NULL with *n 0 when none. */
void *ct_sum_get_array(struct ct_sum_rbuf *r, size_t *n, size_t min, size_t elem, int *oom);

/* GPU ops and launch times in the summary's encoding (times as
 * differences), shared with the spill of a large job's ranks
 * (decoder/read/spill.c). A get returns NULL with *n 0 when there are none;
 * bad ops (a class out of range) set r->bad. */
void ct_sum_put_ops(struct ct_sum_wbuf *b, const struct ct_gpu_op *ops, size_t n);
void ct_sum_put_launches(struct ct_sum_wbuf *b, const int64_t *v, size_t n);
struct ct_gpu_op *ct_sum_get_ops(struct ct_sum_rbuf *r, size_t *n, int *oom);
int64_t *ct_sum_get_launches(struct ct_sum_rbuf *r, size_t *n, int *oom);
/* The same encodings in pieces, for a caller that streams them (the spill,
 * decoder/read/spill.c): CT_SUM_OP_BYTES an op, 8 a time, *prev the
 * running time from one piece to the next (0 before the first). A
 * decode of ops returns 0, or -1 when an op's class or NCCL index is out
 * of range. */
#define CT_SUM_OP_BYTES 48
void ct_sum_enc_ops(unsigned char *w, const struct ct_gpu_op *ops, size_t n, uint64_t *prev);
int ct_sum_dec_ops(const unsigned char *q, struct ct_gpu_op *ops, size_t n, uint64_t *prev);
void ct_sum_enc_times(unsigned char *w, const int64_t *v, size_t n, uint64_t *prev);
void ct_sum_dec_times(const unsigned char *q, int64_t *v, size_t n, uint64_t *prev);

/*
 * Writes p (as extracted with step name `step`, NULL for the default) with
 * its health counters and facts (decoder/read/counters.h, facts.h) to
 * path, zstd-compressed. Returns 0, or a negative errno with err naming
 * path and the reason (-EINVAL: p is a PyTorch profiler trace's, which
 * has no summary form).
 */
int ct_summary_write(const char *path, const struct ct_proc *p, const char *step, char *err,
                     size_t errlen);

/*
 * Reads a summary into p, its health counters and facts included. `step`
 * is the step name the caller would extract with (NULL: the default): a
 * summary made with another one is refused, as its iterations were found
 * by that name. Returns 0, or a negative errno
 * with err naming the file and what is wrong with it (not a summary, a
 * version this build does not read, truncated or corrupt at byte N); p is
 * then empty.
 */
int ct_summary_read(const char *path, const char *step, struct ct_proc *p, char *err,
                    size_t errlen);

/* The process life (run identity, job, restart count) and host a summary
 * states, whatever step it was made with (decoder/load/run_identity.c):
 * 0, or a negative errno with err. The caller frees life (ct_life_free)
 * and *host. */
int ct_summary_life(const char *path, struct ct_life *life, char **host, char *err, size_t errlen);

/* The same from memory (the fuzzer's entry). */
int ct_summary_read_mem(const void *buf, size_t len, const char *what, const char *step,
                        struct ct_proc *p, char *err, size_t errlen);

#endif
