/*
 * A job that takes every descriptor back, the ways real jobs do, between
 * two batches of launches on the simulated device, then writes its own
 * file; the test checks that file holds exactly what the job wrote and
 * that the trace decodes with every launch:
 *   closeloop   close(fd) for every fd from 3 to the descriptor limit
 *   close_range close_range(3, ~0U, 0)
 *   closefrom   closefrom(3)
 *   dup2        dup2(its file, fd) over every other open fd from 3 up
 *   spawn       fork; the child opens /dev/null onto stdin and a pipe onto
 *               stdout (dup2), closes every other descriptor (a close
 *               loop, or close_range every other time) and execs /bin/true,
 *               as a launcher's pre-exec child does; three times
 *   helpers     before any CUDA call, forks three children that each read
 *               a small file and exit (version probes, helpers)
 *   stderr      before anything else, closes descriptor 2 and opens its file,
 *               which takes the number; then makes its launches, pausing
 *               300 ms after the first 100 (the shim's writer speaks then,
 *               when the test makes it fail)
 * usage: w_fds MODE FILE [N]   (N launches after the take-back, default 20000)
 * It prints "OK" when its own file checks out.
 */
#include <cuda.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static CUfunction g_fn;

static void setup(void)
{
    CUdevice d;
    CUcontext c;
    CUmodule m;
    if (cuInit(0) || cuDeviceGet(&d, 0) || cuDevicePrimaryCtxRetain(&c, d) || cuCtxSetCurrent(c) ||
        cuModuleLoadData(&m, "x") || cuModuleGetFunction(&g_fn, m, "fds__1us"))
        exit(2);
}

static void launches(int n)
{
    for (int i = 0; i < n; i++)
        if (cuLaunchKernel(g_fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL))
            exit(2);
}

static int fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 65536)
        return 65536;
    return (int)rl.rlim_cur;
}

static void spawn_true(int with_close_range)
{
    int p[2];
    if (pipe(p) != 0)
        exit(2);
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDONLY);
        if (null < 0 || dup2(null, 0) < 0 || dup2(p[1], 1) < 0)
            _exit(5);
        if (with_close_range)
            close_range(3, ~0U, 0);
        else
            for (int fd = 3; fd < fd_limit(); fd++)
                close(fd);
        execl("/bin/true", "true", (char *)NULL);
        _exit(6);
    }
    close(p[1]);
    char c;
    while (read(p[0], &c, 1) > 0)
        ;
    close(p[0]);
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        exit(3);
}

static void helpers(void)
{
    for (int i = 0; i < 3; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            char buf[256];
            int fd = open("/etc/hostname", O_RDONLY);
            if (fd < 0 || read(fd, buf, sizeof(buf)) < 0)
                _exit(5);
            close(fd);
            _exit(0);
        }
        int st;
        if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            exit(3);
    }
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    const char *mode = argv[1], *file = argv[2];
    int n = argc > 3 ? atoi(argv[3]) : 20000;
    int job = -1;
    if (!strcmp(mode, "helpers"))
        helpers();
    if (!strcmp(mode, "stderr")) {
        close(2);
        job = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (job != 2)
            return 4;
    }
    setup();
    launches(100);
    if (!strcmp(mode, "closeloop")) {
        for (int fd = 3; fd < fd_limit(); fd++)
            close(fd);
    } else if (!strcmp(mode, "close_range")) {
        if (close_range(3, ~0U, 0) != 0)
            return 4;
    } else if (!strcmp(mode, "closefrom")) {
        closefrom(3);
    } else if (!strcmp(mode, "dup2")) {
        job = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (job < 0)
            return 4;
        for (int fd = 3; fd < fd_limit(); fd++)
            if (fd != job && fcntl(fd, F_GETFD) >= 0 && dup2(job, fd) != fd)
                return 4;
    } else if (!strcmp(mode, "spawn")) {
        for (int i = 0; i < 3; i++)
            spawn_true(i % 2);
    } else if (!strcmp(mode, "stderr")) {
        struct timespec ts = {0, 300 * 1000000L};
        nanosleep(&ts, NULL);
    } else if (strcmp(mode, "helpers") != 0) {
        return 2;
    }
    /* the descriptors are the job's to reuse now: a file lands on the lowest */
    if (job < 0)
        job = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (job < 0)
        return 4;
    launches(n);
    if (write(job, "user data", 9) != 9 || close(job) != 0)
        return 4;
    /* read back: exactly what we wrote */
    char buf[64];
    int r = open(file, O_RDONLY);
    ssize_t got = r >= 0 ? read(r, buf, sizeof(buf)) : -1;
    if (r >= 0)
        close(r);
    if (got != 9 || memcmp(buf, "user data", 9) != 0) {
        fprintf(stderr, "w_fds: %s holds %zd bytes, not the 9 written\n", file, got);
        return 5;
    }
    printf("OK\n");
    return 0;
}
