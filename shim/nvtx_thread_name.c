/*
 * Thread names: from NVTX (nvtxNameOsThread, via shim/nvtx.c) and from the
 * interposed pthread_setname_np and prctl(PR_SET_NAME), written as thread
 * metadata records.
 *
 * Naming a thread is not an event: it never starts the recorder (processes
 * that only name threads get no trace file); names set before the recorder
 * starts are parked and written once it runs. Names are metadata, so they
 * are also written outside capture windows.
 *
 * Never, on a record path: take a lock, allocate, or make a syscall of our
 * own; intern strings while the recorder is not on (the table may not exist
 * yet); record a name cutrace gives its own threads (ct_tls_guard). Names
 * that do not fit the parking table are counted, never overflowed.
 */
#include "shim/nvtx_int.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "shim/dlsym_real.h"

static void emit_thread_name(uint64_t scope_id, const char *key, const char *name, size_t len)
{
    uint64_t f[CT_META_NFIELDS];
    f[CT_META_TIME] = ct_clock_now();
    f[CT_META_SCOPE] = CT_SCOPE_THREAD;
    f[CT_META_SCOPE_ID] = scope_id;
    f[CT_META_KEY] = ct_intern(key);
    f[CT_META_VALUE] = ct_strtab_intern(&ct_strings, name, len);
    ct_emit(CT_REC_META, 0, f, CT_META_NFIELDS);
}

/* Names set before recording: written (with the time they are written) at
 * the next recorded NVTX call or by ct_nvtx_started(). */
struct parked {
    atomic_uint state; /* 0 free, 1 being written, 2 ready, 3 written */
    uint32_t len;
    uint64_t scope_id;
    const char *key;
    char name[NVTX_NAME];
};
static struct parked g_parked[NVTX_PARKED];
static atomic_uint g_nparked, g_nparked_done;

int ct_thread_names_waiting(void)
{
    uint32_t n = atomic_load_explicit(&g_nparked, memory_order_relaxed);
    if (n > NVTX_PARKED)
        n = NVTX_PARKED;
    return atomic_load_explicit(&g_nparked_done, memory_order_relaxed) < n;
}

void ct_thread_names_flush(void)
{
    uint32_t n = atomic_load_explicit(&g_nparked, memory_order_acquire);
    for (uint32_t i = 0; i < n && i < NVTX_PARKED; i++) {
        struct parked *p = &g_parked[i];
        unsigned ready = 2;
        if (!atomic_compare_exchange_strong(&p->state, &ready, 3))
            continue; /* written already, or still being parked: next time */
        emit_thread_name(p->scope_id, p->key, p->name, p->len);
        atomic_fetch_add(&g_nparked_done, 1);
    }
}

static void park(uint64_t scope_id, const char *key, const char *name, size_t len)
{
    uint32_t i = atomic_fetch_add(&g_nparked, 1);
    if (i >= NVTX_PARKED) {
        ct_nvtx_count(AN_NAMES_LOST);
        return;
    }
    struct parked *p = &g_parked[i];
    atomic_store(&p->state, 1);
    p->scope_id = scope_id;
    p->key = key;
    p->len = (uint32_t)ct_nvtx_copy_text(p->name, NVTX_NAME, name, len);
    atomic_store_explicit(&p->state, 2, memory_order_release);
}

void ct_thread_named(uint64_t scope_id, const char *key, const char *name, size_t len, int is_event)
{
    if (ct_tls_guard)
        return; /* cutrace naming its own threads */
    if (is_event)
        (void)ct_shim_recording();
    /* Names are metadata: written outside capture windows (PAUSED) too. */
    if (ct_shim_live()) {
        ct_nvtx_live_begin();
        emit_thread_name(scope_id, key, name, len);
        rec_end();
    } else if (atomic_load(&ct_shim_state) != CT_SHIM_OFF) {
        park(scope_id, key, name, len);
    }
}

/* Linux thread id of another thread without a syscall: the CPU-time clock
 * id of a thread encodes it (kernel ABI, CPUCLOCK_PID: ~tid << 3 | 6), and
 * glibc and musl both build it from the tid they keep. 0 if unknown. */
static uint32_t tid_of(pthread_t th)
{
    clockid_t c;
    if (pthread_getcpuclockid(th, &c) != 0 || ((unsigned)c & 7u) != 6u)
        return 0;
    return ~((uint32_t)c >> 3) & 0x1FFFFFFFu; /* pid_max is at most 2^22 */
}

typedef int (*setname_fn)(pthread_t, const char *);
typedef int (*prctl_fn)(int, unsigned long, unsigned long, unsigned long, unsigned long);
static void *_Atomic g_real_setname, *_Atomic g_real_prctl;

CT_EXPORT int pthread_setname_np(pthread_t th, const char *name)
{
    setname_fn real = (setname_fn)ct_fn(ct_next_sym(&g_real_setname, "pthread_setname_np"));
    if (!real)
        return ENOSYS;
    int r = real(th, name);
    if (r == 0 && !ct_tls_guard) {
        CT_ERRNO_SAVE;
        size_t len = strnlen(name, 15); /* the kernel keeps 15 bytes; longer fails */
        uint32_t tid = pthread_equal(th, pthread_self()) ? (uint32_t)gettid() : tid_of(th);
        if (tid)
            ct_thread_named(tid, "name", name, len, 0);
        else /* not resolvable: the pthread_t as a hint (docs/recording.md, NVTX) */
            ct_thread_named((uint64_t)th, "pthread_name", name, len, 0);
        CT_ERRNO_RESTORE;
    }
    return r;
}

/* glibc's prctl is variadic and always passes four more arguments on. */
CT_EXPORT int prctl(int option, ...)
{
    va_list ap;
    va_start(ap, option);
    unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
    unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
    va_end(ap);
    prctl_fn real = (prctl_fn)ct_fn(ct_next_sym(&g_real_prctl, "prctl"));
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    int r = real(option, a2, a3, a4, a5);
    if (option == PR_SET_NAME && r == 0 && a2 && !ct_tls_guard) {
        CT_ERRNO_SAVE;
        const char *name = (const char *)a2;
        ct_thread_named((uint32_t)gettid(), "name", name, strnlen(name, 15), 0);
        CT_ERRNO_RESTORE;
    }
    return r;
}
