/*
 * What a host record counts as, decided once while a trace is extracted
 * (decoder/read/extract.c) and read by the analyses as the host interval
 * sets of struct ct_proc (data_wait, ckpt, file_read, sync, cuda_call,
 * htod):
 *   - a data wait: the host blocked in read/recv/poll... on a file, pipe
 *     or socket (a loader's wait for its next batch);
 *   - checkpoint I/O: write/fsync... on a file, or a device-to-host copy
 *     of at least CT_CKPT_COPY_BYTES;
 *   - a host sync: a call the host blocks in until the GPU is done (a
 *     synchronize, a synchronous copy; not cuStreamWaitEvent, which makes
 *     a stream wait and returns at once);
 *   - a blocking CUDA call: one that is not a wait for the GPU and lasted
 *     at least CT_BLOCKING_CALL_NS (a launch only as its kernel's first);
 *   - a host-to-device copy (htod: the call and its GPU interval), what
 *     follows a checkpoint's reading in a restore.
 * The stalls analysis (decoder/analysis/stalls.c) splits GPU-idle time by
 * these sets; docs/report.md states the rules for users. Pure functions:
 * no state, thread-safe.
 */
#ifndef CT_HOST_CLASSES_H
#define CT_HOST_CLASSES_H

#include <stdint.h>

#include "cutrace/format.h"

/* A device-to-host copy this large is a checkpoint's (a model's or an
 * optimizer's state); smaller ones are a step's own (a loss, a metric). */
#define CT_CKPT_COPY_BYTES (16ull << 20)

/* A CUDA call this long (ns) blocked the host: see ct_is_blocking_call. */
#define CT_BLOCKING_CALL_NS 100000

/* What an I/O op's name says (bits), worked out once per name: a read or
 * receive of the data-wait list, a wait for any descriptor (poll, select,
 * epoll), a write of the checkpoint list, a sync (fsync, fdatasync). */
#define CT_IO_OP_READ  1u
#define CT_IO_OP_WAIT  2u
#define CT_IO_OP_WRITE 4u
#define CT_IO_OP_SYNC  8u
unsigned ct_io_op_class(const char *op);

/* 1 when an op of class cls (ct_io_op_class) on a descriptor of fd_type
 * (enum ct_fd_type) is a data wait: a wait, or a read on a file, pipe or
 * socket. */
static inline int ct_io_is_data_wait(unsigned cls, uint64_t fd_type)
{
    return (cls & CT_IO_OP_READ) && ((cls & CT_IO_OP_WAIT) || fd_type == CT_FD_FILE ||
                                     fd_type == CT_FD_PIPE || fd_type == CT_FD_SOCKET);
}
/* 1 when an op of class cls on a descriptor of fd_type is checkpoint I/O:
 * a write on a file, or a sync of any descriptor. */
static inline int ct_io_is_ckpt(unsigned cls, uint64_t fd_type)
{
    return (cls & CT_IO_OP_WRITE) && (fd_type == CT_FD_FILE || (cls & CT_IO_OP_SYNC));
}
/* The same from the op's name. */
int ct_is_data_wait(const char *op, uint64_t fd_type);
int ct_is_ckpt_io(const char *op, uint64_t fd_type);
/* 1 when a copy (enum ct_copy_kind) of that many bytes is a checkpoint's. */
static inline int ct_is_ckpt_copy(uint64_t copy_kind, uint64_t bytes)
{
    return copy_kind == CT_COPY_DTOH && bytes >= CT_CKPT_COPY_BYTES;
}

/* 1 when the call (API family and flags) is a host sync. */
static inline int ct_is_host_sync(uint64_t fam, uint64_t flags)
{
    return (fam == CT_FAM_SYNC || fam == CT_FAM_MEMCPY) && !(flags & CT_APIF_ASYNC);
}

/*
 * 1 when the call (API family and flags) of dur ns blocked the host: not a
 * wait for the GPU (a synchronize: CT_FAM_SYNC without CT_APIF_ASYNC) and
 * at least CT_BLOCKING_CALL_NS (an allocation, a module load, a pageable or
 * synchronous copy, a memset that synchronises, a launch that loaded its
 * module). Why 100 us: an enqueue (launch, async copy or memset) costs the
 * host 2-10 us on current drivers, a few tens with CUPTI recording; a call
 * ten times that long waited on something (the device, staging pageable
 * memory through pinned buffers, an allocator, a module load, a lock).
 * Shorter calls are the host issuing work: the GPU's wait in them is launch
 * overhead. A synchronize is a wait for the GPU: while it lasts the GPU is
 * busy, and when it is idle then the wait is for work elsewhere, which the
 * trace does not explain. A launch (or graph launch) that long counts only
 * as the first of its kernel (ct_calls_note's key, extract_int.h): that one
 * loads the kernel's module (lazy loading); a later one was held by the
 * host itself (a thread preempted on a busy machine), which the GPU-idle
 * split calls launch overhead, not a call that blocked. Inline: every API
 * record of a trace passes here.
 */
static inline int ct_is_blocking_call(uint64_t fam, uint64_t flags, int64_t dur)
{
    return dur >= CT_BLOCKING_CALL_NS && !(fam == CT_FAM_SYNC && !(flags & CT_APIF_ASYNC));
}

#endif
