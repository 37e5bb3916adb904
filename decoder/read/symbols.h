/*
 * Offline symbolisation of recorded host call stacks: a frame's address is
 * placed in the executable mapping recorded beside it (meta scope "module"),
 * turned into an address of that ELF file through its program headers, and
 * looked up in the file's .symtab (or .dynsym). Files are read on the
 * machine that decodes; a missing or changed file gives "0x<ip> (path)".
 */
#ifndef CT_SYMBOLS_H
#define CT_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "decoder/read/tracefile.h"

/* "function+0xoff (module basename)" for ip in trace t, into out. */
void ct_symbolize(struct ct_trace *t, uint64_t ip, char *out, size_t n);

/* The frames string of the call with correlation id corr, or NULL. */
const char *ct_trace_stack(struct ct_trace *t, uint64_t corr);

/* The frames string of the I/O span of thread tid starting at start_ns. */
const char *ct_trace_io_stack(struct ct_trace *t, uint32_t tid, uint64_t start_ns);

#endif
