/*
 * Streams and devices of a process (decoder/read/devices.c): which device
 * each stream ran on, which streams were created non-blocking, and the
 * split of a process that drives several devices into one process per
 * device (the rules are in devices.c).
 */
#ifndef CT_DEVICES_H
#define CT_DEVICES_H

#include <stddef.h>
#include <stdint.h>

#include "decoder/read/timeline.h"

/* Notes that stream id `stream` belongs to device dev (dev < 0:
 * nothing to note), 0 or -ENOMEM; the device of a stream, -1 unknown; and
 * the split of every process that drives several devices into one process
 * per device (procs reallocated, *nprocs grown; rules in devices.c), 0 or
 * -ENOMEM. */
int ct_sdev_note(struct ct_proc *p, uint32_t stream, int32_t dev);
/* Notes that `stream` is non-blocking (kept sorted, once). 0 or -ENOMEM. */
int ct_nonblocking_note(struct ct_proc *p, uint32_t stream);
/* 1 when `stream` of p was created non-blocking. */
int ct_is_nonblocking(const struct ct_proc *p, uint32_t stream);
/* The same, inline for the common case (every GPU record passes here): the
 * stream last noted, with the same device. */
static inline int ct_sdev_seen(struct ct_proc *p, uint32_t stream, int32_t dev)
{
    if (dev < 0 ||
        (p->nsdev && p->sdev[p->nsdev - 1].stream == stream && p->sdev[p->nsdev - 1].dev == dev))
        return 0;
    return ct_sdev_note(p, stream, dev);
}
int32_t ct_sdev_of(const struct ct_proc *p, uint32_t stream);
int ct_split_devices(struct ct_proc **procs, size_t *nprocs);

#endif
