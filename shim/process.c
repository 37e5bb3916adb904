/*
 * Process lifecycle: the moments a process image ends or copies itself.
 * exec* and _exit finish the trace (flush, footer) before the image goes;
 * a signal whose default action ends the process finishes it too, in its
 * handler, and then the process dies by that signal as without us; a
 * fault the job handles itself drains what is buffered and goes on to the
 * job's handler. A forked child gets its own trace at its first event
 * (init.c, recorder.c); an exec'ed one learns whether an ancestor made a
 * CUDA or NCCL call from its environment (CT_GPU_ANCESTOR_VAR). Nothing
 * here may fail the job's call: when our part fails, the real call still
 * runs.
 */
#include "shim/process.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim/dlsym_real.h"
#include "shim/shim.h"

#define CT_MAX_EXEC_ARGS 65536
#define CT_MAX_ENV                                                                                 \
    4096 /* a larger environment is passed on as it is (its copy is on the stack)                  \
          */

extern char **environ;

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
typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef void (*sighandler_fn)(int);
typedef sighandler_fn (*signal_fn)(int, sighandler_fn);
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                        const posix_spawnattr_t *, char *const[], char *const[]);

REAL(execve_fn, execve)
REAL(execv_fn, execvp)
REAL(execve_fn, execvpe)
REAL(fexecve_fn, fexecve)
REAL(exit_fn, _exit)
REAL(exit_fn, _Exit)
REAL(sigaction_fn, sigaction)
REAL(signal_fn, signal)
REAL(spawn_fn, posix_spawn)
REAL(spawn_fn, posix_spawnp)

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

/* ---- the lineage an exec'ed image inherits ---- */

/* Writes v in decimal at p (room for 12), NUL-terminated. No stdio: this
 * runs in vfork children. */
static void put_decimal(char *p, unsigned v)
{
    char tmp[12];
    int n = 0;
    do
        tmp[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    while (n)
        *p++ = tmp[--n];
    *p = 0;
}

/*
 * Whether the image envp starts must learn its lineage: this process or an
 * ancestor made a CUDA or NCCL call, envp preloads something (the new image
 * may load the shim; an image that does not never sees the variable) and
 * names no ancestor already. Returns the size of the environment array to
 * build (entries + the variable + NULL), or 0 to pass envp on as it is.
 */
static size_t lineage_slots(char *const *envp, pid_t *who)
{
    if (!envp || !(*who = ct_shim_gpu_lineage()))
        return 0;
    static const char var[] = CT_GPU_ANCESTOR_VAR "=";
    size_t n = 0;
    int preload = 0;
    for (; envp[n]; n++) {
        if (n >= CT_MAX_ENV || !strncmp(envp[n], var, sizeof(var) - 1))
            return 0;
        preload |= !strncmp(envp[n], "LD_PRELOAD=", 11);
    }
    return preload ? n + 2 : 0;
}

/* envp with CT_GPU_ANCESTOR_VAR=who added, built in out (slots entries)
 * and kv; envp itself when slots is 0. Allocates nothing. */
static char *const *lineage_env(char *const *envp, size_t slots, pid_t who, char **out, char *kv)
{
    if (!slots)
        return envp;
    static const char var[] = CT_GPU_ANCESTOR_VAR "=";
    memcpy(out, envp, (slots - 2) * sizeof(*out));
    memcpy(kv, var, sizeof(var) - 1);
    put_decimal(kv + sizeof(var) - 1, (unsigned)who);
    out[slots - 2] = kv;
    out[slots - 1] = NULL;
    return out;
}

/* Declares `name`: envp, or a copy on the stack with the lineage added
 * (after before_exec, whose last drain may be the one that sees the first
 * CUDA call). */
#define LINEAGE_ENV(envp, name)                                                                    \
    pid_t name##_who_ = 0;                                                                         \
    size_t name##_n_ = lineage_slots((envp), &name##_who_);                                        \
    char *name##_v_[name##_n_ ? name##_n_ : 1];                                                    \
    char name##_kv_[sizeof(CT_GPU_ANCESTOR_VAR) + 16];                                             \
    char *const *name = lineage_env((envp), name##_n_, name##_who_, name##_v_, name##_kv_)

static int exec_done(int rc)
{
    CT_ERRNO_SAVE;
    after_failed_exec();
    CT_ERRNO_RESTORE;
    return rc;
}

static int no_function(void)
{
    errno = ENOSYS;
    return -1;
}

CT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    execve_fn f = real_execve();
    before_exec();
    LINEAGE_ENV(envp, env);
    return exec_done(f ? f(path, argv, env) : no_function());
}

/* execv and execvp are execve and execvpe with the process's environment
 * (as in glibc): the lineage can then be added to it. */
CT_EXPORT int execv(const char *path, char *const argv[])
{
    execve_fn f = real_execve();
    before_exec();
    LINEAGE_ENV(environ, env);
    return exec_done(f ? f(path, argv, env) : no_function());
}

CT_EXPORT int execvp(const char *file, char *const argv[])
{
    execve_fn fe = real_execvpe();
    before_exec();
    LINEAGE_ENV(environ, env);
    if (fe)
        return exec_done(fe(file, argv, env));
    execv_fn f = real_execvp();
    return exec_done(f ? f(file, argv) : no_function());
}

CT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    execve_fn f = real_execvpe();
    before_exec();
    LINEAGE_ENV(envp, env);
    return exec_done(f ? f(file, argv, env) : no_function());
}

CT_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    fexecve_fn f = real_fexecve();
    before_exec();
    LINEAGE_ENV(envp, env);
    return exec_done(f ? f(fd, argv, env) : no_function());
}

/* posix_spawn starts a new image without an exec of ours to see: the
 * lineage goes into its environment here. (glibc's system() and popen()
 * spawn through an internal entry point no wrapper sees.) */
CT_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                          const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    spawn_fn f = real_posix_spawn();
    if (!f)
        return ENOSYS;
    LINEAGE_ENV(envp, env);
    return f(pid, path, fa, attr, argv, env);
}

CT_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                           const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    spawn_fn f = real_posix_spawnp();
    if (!f)
        return ENOSYS;
    LINEAGE_ENV(envp, env);
    return f(pid, file, fa, attr, argv, env);
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

/* ---- signals that end the process ---- */

/*
 * Faults: our handler goes over whatever the job had (but SIG_IGN) and
 * chains to it. Terminations (what `cutrace run` forwards, what a
 * scheduler sends): ours only where the action is the default, so a job's
 * own handler (Python's KeyboardInterrupt, a launcher's clean-up) runs as
 * without us and its exit path finishes the trace.
 *
 * From the moment ours is installed, the job sees its own dispositions
 * through sigaction() and signal() (wrapped below): Python, for one,
 * installs its SIGINT handler only where it finds SIG_DFL. A handler the
 * job installs takes over for real (ours is gone); SIG_DFL set by the job
 * puts ours back, with the default action behind it (Python sets SIG_DFL
 * and raises SIGINT again to die by it after a KeyboardInterrupt).
 */
static const int g_faults[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
static const int g_terms[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

struct managed {
    int managed;          /* one of the above, since recording started */
    _Atomic int ours;     /* our handler is installed */
    struct sigaction job; /* while ours is: the job's disposition, what the job sees */
};
static struct managed g_sig[NSIG];
static atomic_int g_flushing;

/* How long a handler waits for the writer. A signal that ends the process
 * finishes the trace: a drain of every ring (at most CUTRACE_BUFFER_KB of
 * records per thread) and the footer, as long as the exit path may take
 * (ct_shim_finish); a fault the job handles only drains. Both are bounded:
 * a writer stuck (a full disk that blocks, a lock of malloc's held by the
 * interrupted thread) costs this much, once, and a process starved of CPU
 * dies by its signal without the footer (or without its deferred file)
 * rather than later. Schedulers give 30 s or so between SIGTERM and
 * SIGKILL. */
#define CT_FINISH_MS 5000
#define CT_DRAIN_MS  1000

static int is_fault(int sig)
{
    return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE;
}

static void on_fatal(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    const struct sigaction *job = &g_sig[sig].job;
    /* sa_handler and sa_sigaction share their storage: SIG_DFL either way */
    int dfl = job->sa_handler == SIG_DFL, ign = !dfl && job->sa_handler == SIG_IGN;
    if (ct_shim_in_vfork_child()) {
        /* the recorder is the parent's */
    } else if (dfl) {
        ct_recorder_finish_signal(sig, CT_FINISH_MS);
    } else if (!atomic_exchange(&g_flushing, 1)) {
        /* the job's handler may let the process go on: drain only. One at
         * a time: a second fault during the wait goes on. */
        ct_recorder_flush_fatal(sig, CT_DRAIN_MS);
        atomic_store(&g_flushing, 0);
    }
    if (ign) {
        errno = saved;
        return;
    }
    if (!dfl) {
        errno = saved;
        if (job->sa_flags & SA_SIGINFO)
            job->sa_sigaction(sig, si, uc);
        else
            job->sa_handler(sig);
        return;
    }
    /* The default action, as without us: a fault re-executed after return
     * faults again under SIG_DFL; any other signal is raised again, and
     * delivered when this handler returns. */
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction_fn real = real_sigaction();
    if (real)
        real(sig, &sa, NULL);
    atomic_store(&g_sig[sig].ours, 0);
    errno = saved;
    if (is_fault(sig) && si && si->si_code > 0)
        return;
    raise(sig);
}

/* Installs ours for sig, the job's disposition being job. 0 or -1. */
static int install_ours(int sig, const struct sigaction *job)
{
    sigaction_fn real = real_sigaction();
    if (!real)
        return -1;
    g_sig[sig].job = *job;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_fatal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (real(sig, &sa, NULL) != 0)
        return -1;
    atomic_store(&g_sig[sig].ours, 1);
    return 0;
}

static int is_ours(const struct sigaction *sa)
{
    return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == on_fatal;
}

CT_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    sigaction_fn real = real_sigaction();
    if (!real)
        return no_function();
    if (sig <= 0 || sig >= NSIG || !g_sig[sig].managed)
        return real(sig, act, old);
    struct managed *m = &g_sig[sig];
    struct sigaction view;
    if (ct_shim_in_vfork_child()) {
        /* its dispositions are its own, our bookkeeping is the parent's:
         * the call goes through, and the job still sees its own */
        view = m->job;
        int rc = real(sig, act, old);
        if (rc == 0 && old && is_ours(old))
            *old = view;
        return rc;
    }
    CT_ERRNO_SAVE;
    if (atomic_load(&m->ours))
        view = m->job;
    else if (real(sig, NULL, &view) != 0)
        return -1; /* as the real call would fail */
    if (act && act->sa_handler == SIG_DFL) {
        if (atomic_load(&m->ours))
            m->job = *act;
        else if (install_ours(sig, act) != 0)
            return real(sig, act, old); /* the job's call, at least */
    } else if (act) {
        int rc = real(sig, act, NULL);
        if (rc != 0)
            return rc;
        atomic_store(&m->ours, 0);
    }
    if (old)
        *old = view;
    CT_ERRNO_RESTORE;
    return 0;
}

/* glibc's signal() calls its sigaction internally, where no wrapper sees
 * it: the managed signals go through ours, with glibc's own flags (BSD
 * semantics: SA_RESTART, the signal blocked in its handler). */
CT_EXPORT sighandler_fn signal(int sig, sighandler_fn handler)
{
    if (sig <= 0 || sig >= NSIG || !g_sig[sig].managed || ct_shim_in_vfork_child()) {
        signal_fn f = real_signal();
        if (!f) {
            errno = ENOSYS;
            return SIG_ERR;
        }
        return f(sig, handler);
    }
    struct sigaction sa, old;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, sig);
    sa.sa_flags = SA_RESTART;
    if (sigaction(sig, &sa, &old) != 0)
        return SIG_ERR;
    return old.sa_handler;
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
        sigaction_fn real = real_sigaction();
        if (real && real(SIGUSR2, NULL, &g_prev_usr2) == 0)
            real(SIGUSR2, &sa, NULL);
    }
    /* resolved now: a handler may not be the first to look it up */
    sigaction_fn real = real_sigaction();
    if (!real)
        return;
    for (size_t i = 0; i < sizeof(g_faults) / sizeof(g_faults[0]); i++) {
        int sig = g_faults[i];
        struct sigaction cur;
        g_sig[sig].managed = 1;
        if (real(sig, NULL, &cur) != 0)
            continue;
        if (cur.sa_handler == SIG_IGN)
            continue; /* the job ignores it: so do we */
        install_ours(sig, &cur);
    }
    for (size_t i = 0; i < sizeof(g_terms) / sizeof(g_terms[0]); i++) {
        int sig = g_terms[i];
        struct sigaction cur;
        g_sig[sig].managed = 1;
        if (real(sig, NULL, &cur) != 0)
            continue;
        if (cur.sa_handler == SIG_DFL)
            install_ours(sig, &cur); /* a handler of the job's, or SIG_IGN: left alone */
    }
}
