/* Small helpers shared by the unit suites: temp files and reading traces back. */
#ifndef CT_TEST_HELPERS_H
#define CT_TEST_HELPERS_H

#include <stddef.h>
#include <stdint.h>

#include "src/chunk.h"
#include "src/reader.h"
#include "src/recorder.h"

/* A fresh directory under $TMPDIR (or /tmp); returns a static path. */
const char *th_tmpdir(void);
/* dir/name into buf. */
const char *th_path(char *buf, size_t n, const char *dir, const char *name);

/* Reads a whole file; caller frees. */
uint8_t *th_read_file(const char *path, size_t *len);
int th_write_file(const char *path, const uint8_t *p, size_t len);

/* All records of a trace in memory, in file order, plus the reader's status. */
struct th_trace {
    struct ct_record *recs;
    size_t n, cap;
    struct ct_reader rd;
    int open_rc;
};
void th_trace_read_mem(struct th_trace *t, const uint8_t *p, size_t len);
void th_trace_read_file(struct th_trace *t, const char *path);
void th_trace_free(struct th_trace *t);
size_t th_count_kind(const struct th_trace *t, unsigned kind);
/* The value of process metadata `key` (the last one; *when its time, when
 * when is not NULL), or NULL. */
const char *th_proc_meta(const struct th_trace *t, const char *key, uint64_t *when);

/* Emits n NVTX marks (domain "d", message "m") on the calling thread;
 * returns how many the recorder accepted. */
int th_emit_marks(int n);

/* Under user-mode emulation (CT_EMULATED names the emulator: the aarch64
 * suites under qemu, tests/cross/aarch64.sh) a few checks cannot mean what
 * they mean on a machine: real-time bounds (everything runs 10-50x slower,
 * unevenly) and programs of this machine's own (sh, python3, mpirun are
 * x86-64 here, and the aarch64 shim cannot be preloaded into them). Returns
 * 1, after saying on stderr which check is left out and why, when the
 * caller should return; 0 otherwise. */
int th_emulated_skip(const char *why);

/* Starts the recorder on path with small defaults suitable for tests. */
int th_start(const char *path, size_t ring_bytes, unsigned flush_ms);

#endif
