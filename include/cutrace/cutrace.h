/*
 * cutrace user API: marks and nested ranges for code without NVTX.
 *
 * This header is self-contained: every function is static inline and finds
 * the recorder at its first call with dlsym(RTLD_DEFAULT, "cutrace_api_v1"),
 * a table that libcutrace.so exports. A program built with it needs no link
 * flag beyond -ldl (glibc older than 2.34 only) and runs unchanged without
 * cutrace: when libcutrace.so is not loaded, every call is a cheap no-op.
 *
 *     #include <cutrace/cutrace.h>
 *
 *     for (int step = 0; step < n; step++) {
 *         cutrace_range_push("step");
 *         cutrace_range_push("forward");
 *         ...
 *         cutrace_range_pop();
 *         cutrace_mark("checkpoint written");
 *         cutrace_range_pop();
 *     }
 *
 * What is recorded: the same NVTX range and mark records as NVTX annotations
 * (`cutrace dump` kind "nvtx"), in the domain "cutrace". Ranges pushed here
 * nest per thread, separately from NVTX's own ranges of other domains, and
 * their trace depth is the 1-based nesting level (the outermost range has
 * depth 1; see shim/nvtx.c).
 *
 * Rules shared by every function:
 * - Thread-safe. Ranges are per thread: pop ends the innermost range that
 *   the calling thread pushed.
 * - The lookup happens once per translation unit (racing first calls are
 *   harmless: they find the same table). A libcutrace.so that is dlopen'ed
 *   only after that first call is not seen by that translation unit.
 * - Strings are copied before the call returns; the caller keeps ownership.
 *   NULL is recorded as the empty string.
 * - No call changes errno, and none blocks except cutrace_flush(). The
 *   one-time lookup may allocate (dlsym); later calls do not.
 * - Like any recorded call, the first one in a process starts the recorder
 *   (and creates the trace file) when the recorder is not running yet.
 *
 * The interface between this header and libcutrace.so is struct
 * cutrace_api_v1. It only grows at its end (`size` says how much of it the
 * loaded library has); an incompatible change gets a new symbol name.
 */
#ifndef CUTRACE_CUTRACE_H
#define CUTRACE_CUTRACE_H

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The table libcutrace.so exports under the name "cutrace_api_v1". */
struct cutrace_api_v1 {
    size_t size; /* sizeof(struct cutrace_api_v1) as the library was built */
    void (*mark)(const char *name);
    int (*range_push)(const char *name);
    int (*range_pop)(void);
    int (*flush)(unsigned timeout_ms);
    int (*recording)(void);
};

#define CUTRACE_API_SYMBOL "cutrace_api_v1"

/* Internal: the loaded table, or NULL without libcutrace.so. Cached. */
static inline const struct cutrace_api_v1 *cutrace__api(void)
{
    /* 0: not looked up yet; 1: looked up, absent; else the table. */
    static const struct cutrace_api_v1 *cache;
    const struct cutrace_api_v1 *a = __atomic_load_n(&cache, __ATOMIC_ACQUIRE);
    if (__builtin_expect(a == NULL, 0)) {
        int saved_errno = errno;
#ifdef RTLD_DEFAULT
        void *p = dlsym(RTLD_DEFAULT, CUTRACE_API_SYMBOL);
#else
        void *p = dlsym((void *)0, CUTRACE_API_SYMBOL); /* RTLD_DEFAULT on glibc and musl */
#endif
        a = p ? (const struct cutrace_api_v1 *)p : (const struct cutrace_api_v1 *)(size_t)1;
        __atomic_store_n(&cache, a, __ATOMIC_RELEASE);
        errno = saved_errno;
    }
    return a == (const struct cutrace_api_v1 *)(size_t)1 ? (const struct cutrace_api_v1 *)0 : a;
}

#define CUTRACE__HAS(a, member)                                                                    \
    ((a) && (a)->size >= offsetof(struct cutrace_api_v1, member) + sizeof((a)->member) &&          \
     (a)->member)

/*
 * Records an instantaneous mark named `name` at the current time.
 * No-op without libcutrace.so.
 */
static inline void cutrace_mark(const char *name)
{
    const struct cutrace_api_v1 *a = cutrace__api();
    if (CUTRACE__HAS(a, mark))
        a->mark(name);
}

/*
 * Opens a range named `name` on the calling thread; it ends at the matching
 * cutrace_range_pop() on the same thread.
 * Returns the 0-based nesting level of the new range among the thread's open
 * cutrace ranges (NVTX's convention: the outermost range is 0), or -1 when
 * libcutrace.so is not loaded. Ranges nested deeper than the recorder's
 * per-thread stack (64) are counted in the trace, not recorded; the returned
 * level stays correct.
 */
static inline int cutrace_range_push(const char *name)
{
    const struct cutrace_api_v1 *a = cutrace__api();
    return CUTRACE__HAS(a, range_push) ? a->range_push(name) : -1;
}

/*
 * Ends the innermost open range of the calling thread and records it.
 * Returns the 0-based level of the range that ended, or -1 when the thread
 * has no open cutrace range (counted in the trace) or libcutrace.so is not
 * loaded.
 */
static inline int cutrace_range_pop(void)
{
    const struct cutrace_api_v1 *a = cutrace__api();
    return CUTRACE__HAS(a, range_pop) ? a->range_pop() : -1;
}

/*
 * Waits up to timeout_ms until everything recorded so far, by every thread,
 * is written to the trace file (for example before a planned kill, or
 * before reading the trace while the program runs).
 * Returns 0 when done, -ETIMEDOUT (as a negative number) when the writer did
 * not finish in time, -ENODEV when nothing is being recorded, and -ENOSYS
 * when libcutrace.so is not loaded. Blocks; do not call it from a signal
 * handler.
 */
static inline int cutrace_flush(unsigned timeout_ms)
{
    const struct cutrace_api_v1 *a = cutrace__api();
    return CUTRACE__HAS(a, flush) ? a->flush(timeout_ms) : -ENOSYS;
}

/*
 * Returns 1 when libcutrace.so is loaded and recording (starting the
 * recorder if this is the process's first recorded call), else 0.
 */
static inline int cutrace_recording(void)
{
    const struct cutrace_api_v1 *a = cutrace__api();
    return CUTRACE__HAS(a, recording) ? a->recording() : 0;
}

#undef CUTRACE__HAS

#ifdef __cplusplus
}
#endif

#endif /* CUTRACE_CUTRACE_H */
