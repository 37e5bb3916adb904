/* What a host record counts as (decoder/read/host_classes.h). */
#include "decoder/read/host_classes.h"

#include <string.h>

int ct_is_data_wait(const char *op, uint64_t fd_type)
{
    static const char *const ops[] = {"read",        "pread",  "pread64",  "readv",    "preadv",
                                      "preadv2",     "recv",   "recvfrom", "recvmsg",  "poll",
                                      "ppoll",       "select", "pselect",  "pselect6", "epoll_wait",
                                      "epoll_pwait", "fread"};
    int waits = !strncmp(op, "poll", 4) || !strncmp(op, "ppoll", 5) || strstr(op, "select") ||
                strstr(op, "epoll");
    if (!waits && fd_type != CT_FD_FILE && fd_type != CT_FD_PIPE && fd_type != CT_FD_SOCKET)
        return 0;
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        if (!strcmp(op, ops[i]))
            return 1;
    return 0;
}

int ct_is_ckpt_io(const char *op, uint64_t fd_type)
{
    static const char *const ops[] = {"write",    "pwrite", "pwrite64", "writev",   "pwritev",
                                      "pwritev2", "fwrite", "fsync",    "fdatasync"};
    if (fd_type != CT_FD_FILE && strcmp(op, "fsync") && strcmp(op, "fdatasync"))
        return 0;
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        if (!strcmp(op, ops[i]))
            return 1;
    return 0;
}
