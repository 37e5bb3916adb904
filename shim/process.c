/*
 * Process lifecycle: the moments a process image ends or copies itself.
 * exec* and _exit finish the trace (flush, footer) before the image goes;
 * fatal signals drain what is buffered to disk and then behave exactly as
 * without us (chained handler, or default action re-raised). A forked child
 * gets its own trace at its first event (init.c, recorder.c). Nothing here
 * may fail the job's call: when our part fails, the real call still runs.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim/dlsym_real.h"
#include "shim/shim.h"

#define CT_MAX_EXEC_ARGS 65536

/* The next definition of a libc function (resolved on use, cached). */
#define REAL(type, name)                                                                           \
    static void *_Atomic real_##name##_p;                                                          \
    static type real_##name(void)                                                                  \
    {                                                                                              \
        return (type)ct_fn(ct_next_sym(&real_##name##_p, #name));                                  \
    }

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef void (*exit_fn)(int);

REAL(execve_fn, execve)
REAL(execv_fn, execv)
REAL(execv_fn, execvp)
REAL(execve_fn, execvpe)
REAL(fexecve_fn, fexecve)
REAL(exit_fn, _exit)
REAL(exit_fn, _Exit)

/* Before the image is replaced: finish this trace. If exec fails the process
 * goes on, and its next event starts a new file (the next generation). */
static void before_exec(void)
{
    if (!ct_shim_live() || ct_tls_guard || ct_shim_in_vfork_child())
        return;
    CT_ERRNO_SAVE;
    ct_shim_finish();
    CT_ERRNO_RESTORE;
}

static void after_failed_exec(void)
{
    if (ct_shim_in_vfork_child())
        return; /* the parent's state, in memory we share */
    int expected = CT_SHIM_OFF;
    atomic_compare_exchange_strong(&ct_shim_state, &expected, CT_SHIM_UNINIT);
}

#define EXEC_WRAPPER(call)                                                                         \
    do {                                                                                           \
        before_exec();                                                                             \
        int rc_ = (call);                                                                          \
        CT_ERRNO_SAVE;                                                                             \
        after_failed_exec();                                                                       \
        CT_ERRNO_RESTORE;                                                                          \
        return rc_;                                                                                \
    } while (0)

static int no_function(void)
{
    errno = ENOSYS;
    return -1;
}

CT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    execve_fn f = real_execve();
    EXEC_WRAPPER(f ? f(path, argv, envp) : no_function());
}

CT_EXPORT int execv(const char *path, char *const argv[])
{
    execv_fn f = real_execv();
    EXEC_WRAPPER(f ? f(path, argv) : no_function());
}

CT_EXPORT int execvp(const char *file, char *const argv[])
{
    execv_fn f = real_execvp();
    EXEC_WRAPPER(f ? f(file, argv) : no_function());
}

CT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    execve_fn f = real_execvpe();
    EXEC_WRAPPER(f ? f(file, argv, envp) : no_function());
}

CT_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    fexecve_fn f = real_fexecve();
    EXEC_WRAPPER(f ? f(fd, argv, envp) : no_function());
}

/* execl, execlp, execle: collected into an argv, then the v forms above (the
 * libc l forms call execve internally, where no wrapper would see them). */
static int count_args(va_list ap)
{
    int n = 1;
    while (va_arg(ap, const char *) != NULL && n < CT_MAX_EXEC_ARGS)
        n++;
    return n;
}

#define COLLECT_ARGS(first, last_named, argv, n)                                                   \
    va_list ap_;                                                                                   \
    va_start(ap_, last_named);                                                                     \
    int n = count_args(ap_);                                                                       \
    va_end(ap_);                                                                                   \
    if (n >= CT_MAX_EXEC_ARGS) {                                                                   \
        errno = E2BIG;                                                                             \
        return -1;                                                                                 \
    }                                                                                              \
    char *argv[n + 1];                                                                             \
    argv[0] = (char *)(first);                                                                     \
    va_start(ap_, last_named);                                                                     \
    for (int i_ = 1; i_ < n; i_++)                                                                 \
        argv[i_] = va_arg(ap_, char *);                                                            \
    argv[n] = NULL

CT_EXPORT int execl(const char *path, const char *arg, ...)
{
    COLLECT_ARGS(arg, arg, argv, n);
    va_end(ap_);
    return execv(path, argv);
}

CT_EXPORT int execlp(const char *file, const char *arg, ...)
{
    COLLECT_ARGS(arg, arg, argv, n);
    va_end(ap_);
    return execvp(file, argv);
}

CT_EXPORT int execle(const char *path, const char *arg, ...)
{
    COLLECT_ARGS(arg, arg, argv, n);
    char *const *envp = va_arg(ap_, char *const *); /* after the NULL */
    va_end(ap_);
    return execve(path, argv, envp);
}

/* _exit skips atexit: finish the trace here. */
CT_EXPORT void _exit(int status)
{
    if (!ct_tls_guard && !ct_shim_in_vfork_child())
        ct_shim_finish();
    exit_fn f = real__exit();
    if (f)
        f(status);
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

CT_EXPORT void _Exit(int status)
{
    if (!ct_tls_guard && !ct_shim_in_vfork_child())
        ct_shim_finish();
    exit_fn f = real__Exit();
    if (f)
        f(status);
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

/* ---- fatal signals ---- */

static const int g_fatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM};
static struct sigaction g_prev[NSIG];
static atomic_int g_flushing;

static void on_fatal(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    /* Drain what is buffered (the writer does it; we only wait, without
     * locks). One at a time: a second fault during the wait goes on. */
    if (!atomic_exchange(&g_flushing, 1)) {
        ct_recorder_flush_fatal(sig, 1000);
        atomic_store(&g_flushing, 0);
    }
    const struct sigaction *prev = &g_prev[sig];
    if ((prev->sa_flags & SA_SIGINFO) && prev->sa_sigaction) {
        errno = saved;
        prev->sa_sigaction(sig, si, uc);
        return;
    }
    if (!(prev->sa_flags & SA_SIGINFO) && prev->sa_handler == SIG_IGN) {
        errno = saved;
        return;
    }
    if (!(prev->sa_flags & SA_SIGINFO) && prev->sa_handler != SIG_DFL) {
        errno = saved;
        prev->sa_handler(sig);
        return;
    }
    /* The default action, as without us: a fault re-executed after return
     * faults again under SIG_DFL; a sent signal is raised again. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    errno = saved;
    if (si && si->si_code > 0 && sig != SIGABRT && sig != SIGTERM)
        return;
    raise(sig);
}

/* SIGUSR2 writes the flight recorder's window (CUTRACE_FLIGHT), then the
 * job's own handler runs, if it had one. */
static struct sigaction g_prev_usr2;

static void on_usr2(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    ct_recorder_flight_request(CT_FLIGHT_SIGUSR2);
    errno = saved;
    if ((g_prev_usr2.sa_flags & SA_SIGINFO) && g_prev_usr2.sa_sigaction)
        g_prev_usr2.sa_sigaction(sig, si, uc);
    else if (!(g_prev_usr2.sa_flags & SA_SIGINFO) && g_prev_usr2.sa_handler != SIG_DFL &&
             g_prev_usr2.sa_handler != SIG_IGN)
        g_prev_usr2.sa_handler(sig);
}

void ct_process_started(void)
{
    if (ct_cfg.flight_s) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = on_usr2;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGUSR2, NULL, &g_prev_usr2) == 0)
            sigaction(SIGUSR2, &sa, NULL);
    }
    for (size_t i = 0; i < sizeof(g_fatal) / sizeof(g_fatal[0]); i++) {
        int sig = g_fatal[i];
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = on_fatal;
        sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        if (sigaction(sig, NULL, &g_prev[sig]) != 0)
            continue;
        if (!(g_prev[sig].sa_flags & SA_SIGINFO) && g_prev[sig].sa_handler == SIG_IGN)
            continue; /* the job ignores it: so do we */
        sigaction(sig, &sa, NULL);
    }
}
