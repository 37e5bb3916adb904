/*
 * A library whose constructor does I/O: linked into w_ctor, it may run
 * before the shim's own constructor, so its calls reach the wrappers before
 * they resolved anything and start the recorder from inside a constructor.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int w_ctor_lib_result = -100;

__attribute__((constructor)) static void lib_early_io(void)
{
    const char *dir = getenv("CT_IO_CTOR_DIR");
    if (!dir)
        return;
    char path[512];
    snprintf(path, sizeof(path), "%s/ctor-lib", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    char b[4] = "lib";
    if (fd < 0 || write(fd, b, 4) != 4 || pread(fd, b, 4, 0) != 4) {
        w_ctor_lib_result = -1;
        return;
    }
    w_ctor_lib_result = close(fd);
}
