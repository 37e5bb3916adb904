/*
 * The heap of the commands that analyse traces (decoder/util/heap.c): huge
 * pages and one malloc arena with a high mmap threshold, set once at start.
 */
#ifndef CT_DECODER_HEAP_H
#define CT_DECODER_HEAP_H

/* Re-executes the command once with glibc's huge-page tunable set when the
 * kernel gives huge pages only on request; returns when that is not wanted
 * (CUTRACE_HUGEPAGES=0), not possible, or when the operands (argv[2] on)
 * name spill_traces traces or more (0: no such limit): a job that large is
 * spilled (decoder/read/spill.h), and huge pages cost it memory. */
void ct_hugepages(char **argv, size_t spill_traces);

/* Heap settings for commands that hold a rank's records. */
void ct_heap_tune(void);

#endif
