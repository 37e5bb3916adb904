/*
 * Ends its life in the way named on the command line after N launches on
 * the simulated device, so tests can check what the trace kept:
 *   segv   dereferences NULL          term  raises SIGTERM (default action)
 *   exit   _exit(3)                   exec  execs itself as "child"
 *   child  5 launches, normal exit    fork  forks a child that synchronises
 *   sleep  sleeps until killed        normal  returns from main
 *   loop   one launch per millisecond for N tenths of a second, then exits
 *   hold   one launch, 100 ms, N launches, then sleeps until killed
 *   stack  synchronises a stream from the function sync_from_here(), then
 *          reads a pipe from read_slowly_here() (the data arrives after
 *          30 ms) and from read_quickly_here() (the data is there)
 *   handler  checks that it sees SIG_DFL for SIGTERM and SIGINT (through
 *          sigaction and signal), installs handlers of its own, raises both,
 *          checks they ran and that it sees them installed; prints HANDLED
 *          and returns from main
 *   redefault  installs a SIGTERM handler of its own, puts SIG_DFL back
 *          and raises SIGTERM (dies by it)
 * W_LIFE_FSIZE=BYTES first limits the size of any file the process writes
 * (RLIMIT_FSIZE), as a disk that fills up would: the trace's later frames
 * fail with EFBIG.
 * W_LIFE_FILL_FDS=1 first uses up every file descriptor it may open (the
 * trace cannot be created), then closes one for its own use of /dev/null.
 * usage: w_life MODE [N]
 */
#include <cuda.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void launches(int n)
{
    CUdevice d;
    CUcontext c;
    CUmodule m;
    CUfunction f;
    if (cuInit(0) || cuDeviceGet(&d, 0) || cuDevicePrimaryCtxRetain(&c, d) || cuCtxSetCurrent(c) ||
        cuModuleLoadData(&m, "x") || cuModuleGetFunction(&f, m, "life__1us"))
        exit(2);
    for (int i = 0; i < n; i++)
        cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
}

/* noinline and not static: the test looks for this name in the recorded stack */
__attribute__((noinline)) void sync_from_here(CUstream s);
__attribute__((noinline)) void sync_from_here(CUstream s)
{
    cuStreamSynchronize(s);
    __asm__ volatile("" ::: "memory"); /* keep the call from becoming a tail jump */
}

__attribute__((noinline)) ssize_t read_slowly_here(int fd, char *buf, size_t n);
__attribute__((noinline)) ssize_t read_slowly_here(int fd, char *buf, size_t n)
{
    ssize_t r = read(fd, buf, n);
    __asm__ volatile("" ::: "memory");
    return r;
}

__attribute__((noinline)) ssize_t read_quickly_here(int fd, char *buf, size_t n);
__attribute__((noinline)) ssize_t read_quickly_here(int fd, char *buf, size_t n)
{
    ssize_t r = read(fd, buf, n);
    __asm__ volatile("" ::: "memory");
    return r;
}

static void *late_writer(void *arg)
{
    int fd = *(int *)arg;
    struct timespec t = {0, 30000000L};
    nanosleep(&t, NULL);
    ssize_t w = write(fd, "x", 1);
    (void)w;
    return NULL;
}

static void pipe_reads(void)
{
    int p[2];
    char c;
    pthread_t th;
    if (pipe(p) != 0 || pthread_create(&th, NULL, late_writer, &p[1]) != 0)
        exit(2);
    if (read_slowly_here(p[0], &c, 1) != 1)
        exit(2);
    pthread_join(th, NULL);
    if (write(p[1], "y", 1) != 1 || read_quickly_here(p[0], &c, 1) != 1)
        exit(2);
    close(p[0]);
    close(p[1]);
}

static volatile sig_atomic_t g_handled;

static void on_signal(int sig)
{
    (void)sig;
    g_handled++;
}

/* The job's view of its own dispositions, with the shim's handlers in
 * place: exit status 10 + the first check that failed, 0 when all hold. */
static int own_handlers(void)
{
    struct sigaction cur, sa;
    if (sigaction(SIGTERM, NULL, &cur) != 0 || cur.sa_handler != SIG_DFL)
        return 10;
    if (signal(SIGINT, on_signal) != SIG_DFL)
        return 11;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGTERM, &sa, NULL) != 0)
        return 12;
    raise(SIGTERM);
    raise(SIGINT);
    if (g_handled != 2)
        return 13;
    if (sigaction(SIGTERM, NULL, &cur) != 0 || cur.sa_handler != on_signal)
        return 14;
    if (sigaction(SIGINT, NULL, &cur) != 0 || cur.sa_handler != on_signal)
        return 15;
    printf("HANDLED\n");
    return 0;
}

int main(int argc, char **argv)
{
    /* the tests end it by SIGSEGV, SIGABRT and SIGQUIT too: no core files */
    struct rlimit nocore = {0, 0};
    setrlimit(RLIMIT_CORE, &nocore);
    const char *fsize = getenv("W_LIFE_FSIZE");
    if (fsize) {
        struct rlimit rl = {(rlim_t)atol(fsize), (rlim_t)atol(fsize)};
        signal(SIGXFSZ, SIG_IGN); /* the job's own choice; cutrace must not need it */
        setrlimit(RLIMIT_FSIZE, &rl);
    }
    if (getenv("W_LIFE_FILL_FDS")) {
        struct rlimit rl = {64, 64};
        setrlimit(RLIMIT_NOFILE, &rl);
        while (dup(1) >= 0)
            ;
    }
    const char *mode = argc > 1 ? argv[1] : "normal";
    int n = argc > 2 ? atoi(argv[2]) : 50;
    if (!strcmp(mode, "child")) {
        launches(5);
        return 0;
    }
    if (!strcmp(mode, "hold")) {
        /* one launch, then 100 ms in which the writer's first pass over the
         * thread's ring takes what it holds, then N launches and READY: under
         * a long CUTRACE_FLUSH_MS those N are in the ring alone (the next
         * drain is a flush period away) until the process is killed */
        launches(1);
        struct timespec t = {0, 100 * 1000000L};
        nanosleep(&t, NULL);
        launches(n);
        printf("READY\n");
        fflush(stdout);
        for (;;)
            pause();
    }
    if (!strcmp(mode, "loop")) {
        CUdevice d;
        CUcontext c;
        CUmodule m;
        CUfunction f;
        if (cuInit(0) || cuDeviceGet(&d, 0) || cuDevicePrimaryCtxRetain(&c, d) ||
            cuCtxSetCurrent(c) || cuModuleLoadData(&m, "x") ||
            cuModuleGetFunction(&f, m, "tick__1us"))
            return 2;
        printf("READY\n");
        fflush(stdout);
        struct timespec ms = {0, 1000000L};
        for (int i = 0; i < n * 100; i++) {
            cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
            nanosleep(&ms, NULL);
        }
        return 0;
    }
    launches(n);
    fflush(stdout);
    if (!strcmp(mode, "stack")) {
        CUstream s;
        cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
        sync_from_here(s);
        pipe_reads();
        return 0;
    }
    if (!strcmp(mode, "segv")) {
        volatile int *p = NULL;
        *p = 1;
    } else if (!strcmp(mode, "term")) {
        raise(SIGTERM);
    } else if (!strcmp(mode, "handler")) {
        return own_handlers();
    } else if (!strcmp(mode, "redefault")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        signal(SIGTERM, SIG_DFL);
        raise(SIGTERM);
        return 4;
    } else if (!strcmp(mode, "exit")) {
        _exit(3);
    } else if (!strcmp(mode, "exec")) {
        execl(argv[0], argv[0], "child", (char *)NULL);
        return 4;
    } else if (!strcmp(mode, "fork")) {
        pid_t pid = fork();
        if (pid == 0) {
            cuCtxSynchronize(); /* an event of the child's own */
            _exit(0);
        }
        int st;
        waitpid(pid, &st, 0);
        printf("CHILD %d\n", (int)pid);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    } else if (!strcmp(mode, "sleep")) {
        printf("READY\n");
        fflush(stdout);
        for (;;)
            pause();
    }
    return 0;
}
