/*
 * The reader of cutrace traces: one trace file into the struct ct_proc of
 * its process (decoder/read/timeline.h), in one streaming pass
 * (decoder/read/extract.c, extract_join.c). The format dispatch
 * (decoder/load/) calls it; nothing else above decoder/read/ should.
 */
#ifndef CT_EXTRACT_H
#define CT_EXTRACT_H

#include <stddef.h>

#include "decoder/read/timeline.h"

/*
 * Extracts the trace file at path into p without keeping records: memory
 * is about the result plus 16 bytes per API and GPU record while it runs.
 * step_name: the NVTX range or mark message that names iterations
 * ("ProfilerStep" matches "ProfilerStep#N"); NULL for the default. Returns
 * 0 (the file may be truncated or damaged: p->cov says so), or a negative
 * errno with err holding one message naming the file (the reader's
 * message, or "PATH: out of memory"); p is then empty. Safe to call
 * concurrently on different files.
 */
int ct_proc_extract_file(const char *path, const char *step_name, struct ct_proc *p, char *err,
                         size_t errlen);

#endif
