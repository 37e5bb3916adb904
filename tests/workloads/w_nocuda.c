/* A program that never touches CUDA: with the shim preloaded it must behave
 * exactly as without it; its trace holds its file I/O only. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
    char path[] = "/tmp/cutrace-nocuda-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, "data", 4) != 4)
        return 1;
    close(fd);
    unlink(path);
    printf("hello\n");
    return 0;
}
