/*
 * What the rest of the shim may ask of the file-I/O layer (shim/io.c, with
 * shim/io_fd.c, shim/io_calls.c and shim/io_waits.c; their shared internals
 * are shim/io_int.h): two hooks for the lifecycle code. Nothing here records
 * anything by itself.
 */
#ifndef CT_SHIM_IO_H
#define CT_SHIM_IO_H

/*
 * Writes the count of I/O spans skipped for being shorter than
 * CUTRACE_IO_MIN_NS as one drop record. Call it while the recorder still
 * runs, before the final stop (exit, _exit, exec). Idempotent: a second call
 * with nothing new counted writes nothing. io.c also arranges to call it at
 * exit by itself, so a lifecycle that never calls it loses nothing on a
 * normal exit.
 */
void ct_io_finish(void);

/*
 * Forgets every string id the I/O layer cached (op names, descriptor
 * paths). Call it whenever the recorder starts over with a new string table
 * in the same process: cached ids would otherwise name strings of the old
 * table. Not needed after fork (the child keeps the table).
 */
void ct_io_forget_strings(void);

#endif
