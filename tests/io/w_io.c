/*
 * Workloads of the io suite, run under the shim by test_io.c. Each mode
 * makes known I/O calls and, for the modes checked call by call, prints one
 * line per call it expects in its trace:
 *
 *   EXPECT op fd fd_type path bytes result offset      (path "-" when empty)
 *
 * It must not make wrapped calls it does not announce in those modes (stdio
 * output goes through glibc's internal write, which is not interposed).
 */
/* Call open, pread, fopen... by their own names, not their 64 twins. */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void expect(const char *op, int fd, const char *type, const char *path,
                   unsigned long long bytes, long long result, long long offset)
{
    printf("EXPECT %s %d %s %s %llu %lld %lld\n", op, fd, type, path && *path ? path : "-", bytes,
           result, offset);
}

static void die(const char *what)
{
    fprintf(stderr, "w_io: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* pipe:[ino] or socket:[ino], as the kernel names an unnamed descriptor. */
static const char *anon_name(int fd, const char *kind, char *buf, size_t n)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        die("fstat");
    snprintf(buf, n, "%s:[%lu]", kind, (unsigned long)st.st_ino);
    return buf;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Every file call, each open flavour, failures. */
static int mode_files(const char *dir)
{
    char p1[512], p2[512], p3[512], missing[512];
    snprintf(p1, sizeof(p1), "%s/f1", dir);
    snprintf(p2, sizeof(p2), "%s/f2", dir);
    snprintf(p3, sizeof(p3), "%s/f3", dir);
    snprintf(missing, sizeof(missing), "%s/no/such/file", dir);
    static char buf[8192];
    memset(buf, 'x', sizeof(buf));
    struct iovec iov[3] = {{buf, 10}, {buf + 100, 20}, {buf + 200, 30}};

    int fd = open(p1, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    expect("open", fd, "file", p1, 0, fd, -1);
    ssize_t r = write(fd, buf, 100);
    expect("write", fd, "file", p1, 100, r, -1);
    r = pwrite(fd, buf, 50, 1000);
    expect("pwrite", fd, "file", p1, 50, r, 1000);
    r = pwrite64(fd, buf, 10, 2000);
    expect("pwrite64", fd, "file", p1, 10, r, 2000);
    r = writev(fd, iov, 3);
    expect("writev", fd, "file", p1, 60, r, -1);
    r = pwritev(fd, iov, 2, 3000);
    expect("pwritev", fd, "file", p1, 30, r, 3000);
    r = pwritev64(fd, iov, 2, 3100);
    expect("pwritev64", fd, "file", p1, 30, r, 3100);
    r = pwritev2(fd, iov, 3, 3200, 0);
    expect("pwritev2", fd, "file", p1, 60, r, 3200);
    r = pwritev64v2(fd, iov, 1, -1, 0); /* -1: at the file position */
    expect("pwritev64v2", fd, "file", p1, 10, r, -1);
    int rc = fsync(fd);
    expect("fsync", fd, "file", p1, 0, rc, -1);
    rc = fdatasync(fd);
    expect("fdatasync", fd, "file", p1, 0, rc, -1);
    rc = close(fd);
    expect("close", fd, "file", p1, 0, rc, -1);

    fd = open64(p1, O_RDONLY);
    expect("open64", fd, "file", p1, 0, fd, -1);
    r = read(fd, buf, 100);
    expect("read", fd, "file", p1, 100, r, -1);
    r = pread(fd, buf, 50, 1000);
    expect("pread", fd, "file", p1, 50, r, 1000);
    r = pread64(fd, buf, 10, 2000);
    expect("pread64", fd, "file", p1, 10, r, 2000);
    r = readv(fd, iov, 3);
    expect("readv", fd, "file", p1, 60, r, -1);
    r = preadv(fd, iov, 2, 3000);
    expect("preadv", fd, "file", p1, 30, r, 3000);
    r = preadv64(fd, iov, 2, 3100);
    expect("preadv64", fd, "file", p1, 30, r, 3100);
    r = preadv2(fd, iov, 3, 3200, 0);
    expect("preadv2", fd, "file", p1, 60, r, 3200);
    r = preadv64v2(fd, iov, 1, -1, 0);
    expect("preadv64v2", fd, "file", p1, 10, r, -1);
    rc = close(fd);
    expect("close", fd, "file", p1, 0, rc, -1);

    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    expect("open", dfd, "dir", dir, 0, dfd, -1);
    fd = openat(dfd, "f1", O_RDONLY);
    expect("openat", fd, "file", "f1", 0, fd, -1);
    r = read(fd, buf, 7);
    expect("read", fd, "file", "f1", 7, r, -1);
    rc = close(fd);
    expect("close", fd, "file", "f1", 0, rc, -1);
    fd = openat64(AT_FDCWD, p1, O_RDONLY);
    expect("openat64", fd, "file", p1, 0, fd, -1);
    rc = close(fd);
    expect("close", fd, "file", p1, 0, rc, -1);
    rc = close(dfd);
    expect("close", dfd, "dir", dir, 0, rc, -1);

    fd = creat(p2, 0600);
    expect("creat", fd, "file", p2, 0, fd, -1);
    r = write(fd, buf, 5);
    expect("write", fd, "file", p2, 5, r, -1);
    rc = close(fd);
    expect("close", fd, "file", p2, 0, rc, -1);
    fd = creat64(p3, 0600);
    expect("creat64", fd, "file", p3, 0, fd, -1);
    rc = close(fd);
    expect("close", fd, "file", p3, 0, rc, -1);

    FILE *fp = fopen(p1, "r");
    if (!fp)
        die("fopen");
    fd = fileno(fp);
    expect("fopen", fd, "file", p1, 0, fd, -1);
    size_t n = fread(buf, 10, 5, fp);
    expect("fread", fd, "file", p1, 50, (long long)n, -1);
    rc = fclose(fp);
    expect("fclose", fd, "file", p1, 0, rc, -1);
    fp = fopen64(p2, "w");
    if (!fp)
        die("fopen64");
    fd = fileno(fp);
    expect("fopen64", fd, "file", p2, 0, fd, -1);
    n = fwrite(buf, 1, 7, fp);
    expect("fwrite", fd, "file", p2, 7, (long long)n, -1);
    rc = fclose(fp);
    expect("fclose", fd, "file", p2, 0, rc, -1);

    fd = open("/dev/null", O_WRONLY);
    expect("open", fd, "char", "/dev/null", 0, fd, -1);
    /* A successful call leaves errno as it was. */
    errno = 4321;
    r = write(fd, buf, 3);
    printf("ERRNO write_ok=%d\n", errno);
    expect("write", fd, "char", "/dev/null", 3, r, -1);
    rc = close(fd);
    expect("close", fd, "char", "/dev/null", 0, rc, -1);

    /* Failures: -errno in the record, errno as libc set it. */
    fd = open(missing, O_RDONLY);
    expect("open", -1, "unknown", missing, 0, -ENOENT, -1);
    errno = 0;
    r = read(999, buf, 10);
    int e = errno;
    printf("ERRNO read_badfd=%d\n", e);
    expect("read", 999, "unknown", NULL, 10, -EBADF, -1);
    return 0;
}

/* Pipes, sockets and every kind of wait. */
static int mode_ipc(void)
{
    char pn[64], s0n[64], s1n[64];
    char buf[256];
    int p[2], s[2];
    if (pipe(p) != 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, s) != 0)
        die("pipe");
    anon_name(p[0], "pipe", pn, sizeof(pn));
    anon_name(s[0], "socket", s0n, sizeof(s0n));
    anon_name(s[1], "socket", s1n, sizeof(s1n));

    ssize_t r = write(p[1], "abc", 3);
    expect("write", p[1], "pipe", pn, 3, r, -1);
    struct pollfd pf = {p[0], POLLIN, 0};
    int rc = poll(&pf, 1, 1000);
    expect("poll", p[0], "pipe", pn, 0, rc, -1);
    r = read(p[0], buf, 100);
    expect("read", p[0], "pipe", pn, 100, r, -1);
    rc = poll(&pf, 1, 20); /* times out */
    expect("poll", p[0], "pipe", pn, 0, rc, -1);
    struct pollfd two[2] = {{p[0], POLLIN, 0}, {p[1], POLLOUT, 0}};
    rc = poll(two, 2, 0); /* two descriptors: none named */
    expect("poll", -1, "unknown", NULL, 0, rc, -1);
    struct timespec t20 = {0, 20000000L};
    rc = ppoll(&pf, 1, &t20, NULL);
    expect("ppoll", p[0], "pipe", pn, 0, rc, -1);
    fd_set rs;
    FD_ZERO(&rs);
    FD_SET(p[0], &rs);
    struct timeval tv = {0, 20000};
    rc = select(p[0] + 1, &rs, NULL, NULL, &tv);
    expect("select", p[0], "pipe", pn, 0, rc, -1);
    FD_ZERO(&rs);
    FD_SET(p[0], &rs);
    rc = pselect(p[0] + 1, &rs, NULL, NULL, &t20, NULL);
    expect("pselect", p[0], "pipe", pn, 0, rc, -1);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = p[0]}, evs[4];
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) != 0)
        die("epoll");
    rc = epoll_wait(ep, evs, 4, 20);
    expect("epoll_wait", ep, "other", "anon_inode:[eventpoll]", 0, rc, -1);
    r = write(p[1], "z", 1);
    expect("write", p[1], "pipe", pn, 1, r, -1);
    rc = epoll_wait(ep, evs, 4, 1000);
    expect("epoll_wait", ep, "other", "anon_inode:[eventpoll]", 0, rc, -1);
    r = read(p[0], buf, 1);
    expect("read", p[0], "pipe", pn, 1, r, -1);
    rc = close(ep);
    expect("close", ep, "other", "anon_inode:[eventpoll]", 0, rc, -1);

    r = write(s[0], "hello", 5);
    expect("write", s[0], "socket", s0n, 5, r, -1);
    r = recv(s[1], buf, 2, 0);
    expect("recv", s[1], "socket", s1n, 2, r, -1);
    r = recvfrom(s[1], buf, 100, 0, NULL, NULL);
    expect("recvfrom", s[1], "socket", s1n, 100, r, -1);
    r = write(s[0], "abcdef", 6);
    expect("write", s[0], "socket", s0n, 6, r, -1);
    struct iovec iov[2] = {{buf, 4}, {buf + 4, 10}};
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2};
    r = recvmsg(s[1], &msg, 0);
    expect("recvmsg", s[1], "socket", s1n, 14, r, -1);

    for (int i = 0; i < 2; i++) {
        rc = close(p[i]);
        expect("close", p[i], "pipe", pn, 0, rc, -1);
    }
    rc = close(s[0]);
    expect("close", s[0], "socket", s0n, 0, rc, -1);
    rc = close(s[1]);
    expect("close", s[1], "socket", s1n, 0, rc, -1);
    return 0;
}

/* N threads each read their own file in 4 KiB reads. */
struct reader_arg {
    char path[512];
    long bytes;
};

static void *reader(void *p)
{
    struct reader_arg *a = p;
    char buf[4096];
    int fd = open(a->path, O_RDONLY);
    if (fd < 0)
        die("open");
    ssize_t r;
    while ((r = read(fd, buf, sizeof(buf))) > 0)
        a->bytes += r;
    close(fd);
    return NULL;
}

static int mode_threads(const char *dir, int nthreads, int chunks)
{
    static struct reader_arg args[64];
    pthread_t th[64];
    char buf[4096];
    memset(buf, 'r', sizeof(buf));
    if (nthreads > 64)
        nthreads = 64;
    for (int i = 0; i < nthreads; i++) {
        snprintf(args[i].path, sizeof(args[i].path), "%s/t%d", dir, i);
        int fd = open(args[i].path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        for (int c = 0; c < chunks; c++)
            if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
                die("write");
        close(fd);
    }
    for (int i = 0; i < nthreads; i++)
        pthread_create(&th[i], NULL, reader, &args[i]);
    long total = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(th[i], NULL);
        total += args[i].bytes;
    }
    printf("THREADS %d %d total=%ld\n", nthreads, chunks, total);
    return 0;
}

/* Lots of data: the program's output must be right and its trace whole. */
static int mode_big(const char *dir, int mib)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/big", dir);
    static char buf[65536];
    memset(buf, 'b', sizeof(buf));
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        die("open");
    for (int i = 0; i < mib * 16; i++)
        if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
            die("write");
    close(fd);
    int dn = open("/dev/null", O_WRONLY);
    for (int i = 0; i < 20000; i++)
        if (write(dn, buf, 1) != 1)
            die("write /dev/null");
    close(dn);
    struct stat st;
    if (stat(path, &st) != 0)
        die("stat");
    printf("BIG ok %lld\n", (long long)st.st_size);
    return 0;
}

/* Many short calls and a few long waits, for CUTRACE_IO_MIN_NS. */
static int mode_minns(void)
{
    char c = 'm';
    long calls = 0;
    int p[2];
    if (pipe(p) != 0)
        die("pipe");
    int dn = open("/dev/null", O_WRONLY);
    calls++;
    for (int i = 0; i < 500; i++, calls++)
        if (write(dn, &c, 1) != 1)
            die("write");
    struct pollfd pf = {p[0], POLLIN, 0};
    for (int i = 0; i < 3; i++, calls++)
        if (poll(&pf, 1, 30) != 0)
            die("poll");
    sleep_ms(1100); /* past the once-a-second drop record */
    for (int i = 0; i < 500; i++, calls++)
        if (write(dn, &c, 1) != 1)
            die("write");
    close(dn);
    close(p[0]);
    close(p[1]);
    calls += 3;
    printf("CALLS %ld\n", calls);
    return 0;
}

/*
 * A data loader: two forked workers; worker 1 reads a file, worker 2 reads
 * batches from a pipe that the parent's feeder thread fills every 60 ms;
 * both send results over pipes to the parent, which waits in poll().
 */
static int feed_fd;

static void *feeder(void *arg)
{
    (void)arg;
    char batch[64];
    memset(batch, 'f', sizeof(batch));
    for (int i = 0; i < 4; i++) {
        sleep_ms(60);
        if (write(feed_fd, batch, sizeof(batch)) != (ssize_t)sizeof(batch))
            die("feed");
    }
    close(feed_fd);
    return NULL;
}

static int mode_loader(const char *dir)
{
    char data[512];
    snprintf(data, sizeof(data), "%s/data", dir);
    static char buf[65536];
    memset(buf, 'd', sizeof(buf));
    int fd = open(data, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
        die("data");
    close(fd);
    int feed[2], res1[2], res2[2];
    if (pipe(feed) || pipe(res1) || pipe(res2))
        die("pipe");
    fflush(stdout);
    pid_t w1 = fork();
    if (w1 == 0) {
        close(feed[0]);
        close(feed[1]);
        close(res1[0]);
        close(res2[0]);
        close(res2[1]);
        int d = open(data, O_RDONLY);
        long total = 0;
        ssize_t r;
        char b[4096];
        while ((r = read(d, b, sizeof(b))) > 0)
            total += r;
        close(d);
        char msg[64];
        int n = snprintf(msg, sizeof(msg), "A %ld\n", total);
        if (write(res1[1], msg, (size_t)n) != n)
            die("result");
        _exit(0); /* as DataLoader workers end (os._exit): no atexit handlers */
    }
    pid_t w2 = fork();
    if (w2 == 0) {
        close(feed[1]);
        close(res1[0]);
        close(res1[1]);
        close(res2[0]);
        char b[64];
        ssize_t r;
        while ((r = read(feed[0], b, sizeof(b))) > 0) {
            char msg[64];
            int n = snprintf(msg, sizeof(msg), "B %zd\n", r);
            if (write(res2[1], msg, (size_t)n) != n)
                die("result");
        }
        _exit(0);
    }
    if (w1 < 0 || w2 < 0)
        die("fork");
    close(feed[0]);
    close(res1[1]);
    close(res2[1]);
    feed_fd = feed[1];
    pthread_t th;
    pthread_create(&th, NULL, feeder, NULL);
    struct pollfd pf[2] = {{res1[0], POLLIN, 0}, {res2[0], POLLIN, 0}};
    char got[1024] = "";
    size_t len = 0;
    int open_fds = 2;
    while (open_fds > 0) {
        int rc = poll(pf, 2, 5000);
        if (rc <= 0)
            die("poll");
        for (int i = 0; i < 2; i++) {
            if (pf[i].fd < 0 || !pf[i].revents)
                continue;
            ssize_t r = read(pf[i].fd, got + len, sizeof(got) - 1 - len);
            if (r <= 0) {
                close(pf[i].fd);
                pf[i].fd = -1; /* ignored by poll from now on */
                open_fds--;
            } else {
                len += (size_t)r;
            }
        }
    }
    got[len] = 0;
    pthread_join(th, NULL);
    int st1, st2;
    waitpid(w1, &st1, 0);
    waitpid(w2, &st2, 0);
    int a = strstr(got, "A 65536\n") != NULL, b = 0;
    for (const char *q = got; (q = strstr(q, "B 64\n")); q++)
        b++;
    printf("PARENT %d\nWORKER1 %d\nWORKER2 %d\n", (int)getpid(), (int)w1, (int)w2);
    printf("LOADER %s a=%d b=%d st=%d,%d\n", a && b == 4 && !st1 && !st2 ? "ok" : "bad", a, b, st1,
           st2);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    const char *m = argv[1];
    if (!strcmp(m, "files") && argc == 3)
        return mode_files(argv[2]);
    if (!strcmp(m, "ipc"))
        return mode_ipc();
    if (!strcmp(m, "threads") && argc == 5)
        return mode_threads(argv[2], atoi(argv[3]), atoi(argv[4]));
    if (!strcmp(m, "big") && argc == 4)
        return mode_big(argv[2], atoi(argv[3]));
    if (!strcmp(m, "minns"))
        return mode_minns();
    if (!strcmp(m, "loader") && argc == 3)
        return mode_loader(argv[2]);
    return 2;
}
