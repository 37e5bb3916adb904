/*
 * I/O before main: in a library constructor (libw_ctor) and in this
 * program's own constructor. main reports what they got.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern int w_ctor_lib_result;
static int exe_result = -100;

__attribute__((constructor)) static void exe_early_io(void)
{
    const char *dir = getenv("CT_IO_CTOR_DIR");
    if (!dir)
        return;
    char path[512];
    snprintf(path, sizeof(path), "%s/ctor-exe", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    char b[4] = "exe";
    if (fd < 0 || write(fd, b, 4) != 4 || pread(fd, b, 4, 0) != 4 || strcmp(b, "exe")) {
        exe_result = -1;
        return;
    }
    exe_result = close(fd);
}

int main(void)
{
    printf("CTOR lib=%d exe=%d\n", w_ctor_lib_result, exe_result);
    return 0;
}
