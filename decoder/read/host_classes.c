/* What a host record counts as (decoder/read/host_classes.h). */
#include "decoder/read/host_classes.h"

#include <string.h>

unsigned ct_io_op_class(const char *op)
{
    static const char *const reads[] = {
        "read",    "pread",    "pread64",    "readv",       "preadv", "preadv2",
        "recv",    "recvfrom", "recvmsg",    "poll",        "ppoll",  "select",
        "pselect", "pselect6", "epoll_wait", "epoll_pwait", "fread"};
    static const char *const writes[] = {"write",    "pwrite", "pwrite64", "writev",   "pwritev",
                                         "pwritev2", "fwrite", "fsync",    "fdatasync"};
    unsigned c = 0;
    for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]) && !c; i++)
        c = strcmp(op, reads[i]) ? 0 : CT_IO_OP_READ;
    if (!strncmp(op, "poll", 4) || !strncmp(op, "ppoll", 5) || strstr(op, "select") ||
        strstr(op, "epoll"))
        c |= CT_IO_OP_WAIT;
    for (size_t i = 0; i < sizeof(writes) / sizeof(writes[0]); i++)
        if (!strcmp(op, writes[i]))
            c |= CT_IO_OP_WRITE;
    if (!strcmp(op, "fsync") || !strcmp(op, "fdatasync"))
        c |= CT_IO_OP_SYNC;
    return c;
}

int ct_is_data_wait(const char *op, uint64_t fd_type)
{
    return ct_io_is_data_wait(ct_io_op_class(op), fd_type);
}

int ct_is_ckpt_io(const char *op, uint64_t fd_type)
{
    return ct_io_is_ckpt(ct_io_op_class(op), fd_type);
}
