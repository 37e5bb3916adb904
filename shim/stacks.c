/*
 * Host call stacks for the calls where "who called this?" is the question:
 * synchronisations, blocking copies and allocations (CUTRACE_STACKS=sync,
 * the default), or every recorded call (all). libunwind is dlopen'ed with
 * RTLD_LOCAL on first use and never linked (its _Unwind_* symbols must not
 * take over the job's C++ exception unwinding). A stack is stored once: its
 * frames string is interned, and each call's stack is a small metadata
 * record naming its correlation id. The executable mappings are recorded so
 * the decoder symbolises offline; a frame outside every known mapping (a
 * library loaded later) makes us read /proc/self/maps again. Only these
 * calls pay: a few microseconds each, measured in scripts/bench.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim/dlsym_real.h"
#include "shim/shim.h"
#include "shim/stacks.h"

#define CT_STACK_DEPTH 32
#define CT_MAX_MODULES 2048

typedef int (*backtrace_fn)(void **, int);

static backtrace_fn _Atomic g_bt;
static atomic_int g_state; /* 0 untried, 1 ready, 2 unavailable */
static struct {
    uint64_t start, end;
} g_mods[CT_MAX_MODULES];
static atomic_uint g_nmods;
static atomic_int g_scanning;
static uint64_t g_self_start, g_self_end; /* our own code: frames to skip */

static void emit_meta_at(uint64_t time, unsigned scope, uint64_t id, const char *key,
                         const char *value)
{
    uint64_t f[CT_META_NFIELDS] = {time, scope, id, ct_intern(key), ct_intern(value)};
    ct_emit(CT_REC_META, 0, f, CT_META_NFIELDS);
}

static void emit_meta(unsigned scope, uint64_t id, const char *key, const char *value)
{
    emit_meta_at(ct_clock_now(), scope, id, key, value);
}

/* Records every executable file mapping not recorded yet. Slow path. */
static void scan_maps(void)
{
    if (atomic_exchange(&g_scanning, 1))
        return; /* another thread is at it */
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        static char buf[1 << 16]; /* under g_scanning */
        char line[1024];
        size_t ll = 0;
        ssize_t n;
        while ((n = read(fd, buf, sizeof(buf))) > 0) {
            for (ssize_t i = 0; i < n; i++) {
                if (buf[i] != '\n') {
                    if (ll < sizeof(line) - 1)
                        line[ll++] = buf[i];
                    continue;
                }
                line[ll] = 0;
                ll = 0;
                unsigned long long a, b, off;
                char perms[8], path[900];
                path[0] = 0;
                if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %899s", &a, &b, perms, &off, path) < 4)
                    continue;
                if (perms[2] != 'x' || path[0] != '/')
                    continue;
                unsigned k = atomic_load(&g_nmods);
                int known = 0;
                for (unsigned j = 0; j < k && !known; j++)
                    known = g_mods[j].start == a;
                if (known || k >= CT_MAX_MODULES)
                    continue;
                g_mods[k].start = a;
                g_mods[k].end = b;
                uint64_t self = (uint64_t)(uintptr_t)ct_fn_addr((ct_voidfn)ct_stack_capture);
                if (self >= a && self < b) {
                    g_self_start = a;
                    g_self_end = b;
                }
                atomic_store(&g_nmods, k + 1);
                char value[64];
                snprintf(value, sizeof(value), "%llx %llx %llx", a, b, off);
                emit_meta(CT_SCOPE_MODULE, a, path, value);
            }
        }
        close(fd);
    }
    atomic_store(&g_scanning, 0);
}

static int known_ip(uint64_t ip)
{
    unsigned k = atomic_load(&g_nmods);
    for (unsigned j = 0; j < k; j++)
        if (ip >= g_mods[j].start && ip < g_mods[j].end)
            return 1;
    return 0;
}

static backtrace_fn unwinder(void)
{
    int st = atomic_load(&g_state);
    if (st == 1)
        return atomic_load(&g_bt);
    if (st == 2)
        return NULL;
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    backtrace_fn f = h ? (backtrace_fn)ct_fn(dlsym(h, "unw_backtrace")) : NULL;
    if (!f) {
        atomic_store(&g_state, 2);
        ct_emit_error("host call stacks unavailable: libunwind.so.8 not found", 0);
        return NULL;
    }
    atomic_store(&g_bt, f);
    atomic_store(&g_state, 1);
    scan_maps();
    return f;
}

void ct_stack_capture(uint64_t corr)
{
    ct_stack_capture_at(corr, ct_clock_now());
}

void ct_stack_capture_at(uint64_t corr, uint64_t time)
{
    CT_ERRNO_SAVE;
    backtrace_fn bt = unwinder();
    if (bt) {
        void *ips[CT_STACK_DEPTH + 3];
        int n = bt(ips, CT_STACK_DEPTH + 3);
        /* drop our own frames: this function and the wrapper */
        int skip = 0;
        while (skip < n && (uint64_t)(uintptr_t)ips[skip] >= g_self_start &&
               (uint64_t)(uintptr_t)ips[skip] < g_self_end)
            skip++;
        char frames[CT_STACK_DEPTH * 20];
        size_t len = 0;
        int unknown = 0;
        for (int i = skip; i < n && i < skip + CT_STACK_DEPTH; i++) {
            uint64_t ip = (uint64_t)(uintptr_t)ips[i];
            unknown |= !known_ip(ip);
            len += (size_t)snprintf(frames + len, sizeof(frames) - len, "%s0x%llx", len ? ";" : "",
                                    (unsigned long long)ip);
            if (len >= sizeof(frames))
                break;
        }
        if (unknown)
            scan_maps();
        emit_meta_at(time, CT_SCOPE_STACK, corr, "frames", frames);
    }
    CT_ERRNO_RESTORE;
}
