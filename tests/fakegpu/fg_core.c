/*
 * fg_core.c - process-wide state of the simulated driver: cuInit and the
 * environment it reads, cuDriverGetVersion, the handle registry that lets
 * every entry point reject unknown handles without dereferencing them, and
 * small allocation helpers.
 */
#include "fg_internal.h"

#include <dlfcn.h>

#include <stdlib.h>
#include <string.h>

struct fg_global fg = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

/* ------------------------------------------------------- handle registry */

/* Open addressing keyed by pointer value; tombstones keep probe chains
 * intact after deletes.  Handles are few (streams, events, functions), so a
 * simple table beats anything clever. */
typedef struct fg_hslot {
    const void *key; /* NULL: empty; FG_TOMB: deleted */
    fg_htype type;
} fg_hslot;

/* The first table is static: cuInit fills it (one slot per device), and a
 * heap table made there would leak whenever the driver is unloaded again
 * (the toolkit's libcudart dlopens libcuda.so.1, fails on the fake and
 * dlcloses it: LeakSanitizer saw the orphaned 4 KiB). Only jobs with more
 * than 128 live handles reach the heap. */
#define FG_HCAP0 256
static fg_hslot fg_htab0[FG_HCAP0];
static fg_hslot *fg_htab;
static size_t fg_hcap, fg_hused; /* used counts live entries and tombstones */
static char fg_tomb_tag;
#define FG_TOMB ((const void *)&fg_tomb_tag)

static size_t fg_hash(const void *p, size_t cap)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x & (cap - 1);
}

static void fg_hrehash(size_t ncap)
{
    fg_hslot *old = fg_htab;
    size_t ocap = fg_hcap;
    fg_hslot *tab = ncap == FG_HCAP0 && !old ? fg_htab0 : calloc(ncap, sizeof *tab);
    if (!tab)
        abort(); /* a test double out of memory has nothing sensible left to do */
    fg_htab = tab;
    fg_hcap = ncap;
    fg_hused = 0;
    for (size_t i = 0; i < ocap; i++) {
        if (old[i].key && old[i].key != FG_TOMB) {
            size_t j = fg_hash(old[i].key, ncap);
            while (tab[j].key)
                j = (j + 1) & (ncap - 1);
            tab[j] = old[i];
            fg_hused++;
        }
    }
    if (old != fg_htab0)
        free(old);
}

void fg_handle_add(const void *h, fg_htype t)
{
    if ((fg_hused + 1) * 2 > fg_hcap)
        fg_hrehash(fg_hcap ? fg_hcap * 2 : FG_HCAP0);
    size_t j = fg_hash(h, fg_hcap);
    while (fg_htab[j].key && fg_htab[j].key != FG_TOMB && fg_htab[j].key != h)
        j = (j + 1) & (fg_hcap - 1);
    if (!fg_htab[j].key)
        fg_hused++;
    fg_htab[j].key = h;
    fg_htab[j].type = t;
}

static fg_hslot *fg_hfind(const void *h)
{
    if (!h || !fg_hcap)
        return NULL;
    size_t j = fg_hash(h, fg_hcap);
    while (fg_htab[j].key) {
        if (fg_htab[j].key == h)
            return &fg_htab[j];
        j = (j + 1) & (fg_hcap - 1);
    }
    return NULL;
}

void fg_handle_del(const void *h)
{
    fg_hslot *s = fg_hfind(h);
    if (s) {
        s->key = FG_TOMB;
        s->type = FG_H_NONE;
    }
}

fg_htype fg_handle_type(const void *h)
{
    fg_hslot *s = fg_hfind(h);
    return s ? s->type : FG_H_NONE;
}

/* ----------------------------------------------------------------- misc */

unsigned long long fg_next_id(void)
{
    return ++fg.next_id;
}

bool fg_grow(void **arr, size_t *cap, size_t need, size_t elsize)
{
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap * 2 : 8;
    while (n < need)
        n *= 2;
    void *p = realloc(*arr, n * elsize);
    if (!p)
        return false;
    *arr = p;
    *cap = n;
    return true;
}

/* Unloaded modules and libraries stay allocated (graphs may still point at
 * their function names); keeping them listed here keeps them reachable, so
 * leak checkers do not report them. */
static void **fg_retired;
static size_t fg_nretired, fg_capretired;

void fg_retire(void *p)
{
    if (fg_grow((void **)&fg_retired, &fg_capretired, fg_nretired + 1, sizeof *fg_retired))
        fg_retired[fg_nretired++] = p;
}

static double fg_env_double(const char *name, double def, double min)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end;
    double d = strtod(v, &end);
    if (end == v || d < min)
        return def;
    return d;
}

/* The forked child of a process that used the fake has no worker thread
 * and possibly a lock held by a thread that no longer exists. */
static void fg_atfork_child(void)
{
    pthread_mutex_init(&fg.lock, NULL);
    fg_sched_atfork_child();
}

/*
 * CUDA_INJECTION64_PATH, as the real driver honours it: during the first
 * cuInit, dlopen the library and call its InitializeInjection(), outside
 * the driver lock (the injected tool may call back into the driver).
 */
static void fg_run_injection(void)
{
    const char *path = getenv("CUDA_INJECTION64_PATH");
    if (!path || !*path)
        return;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return;
    union {
        void *p;
        int (*fn)(void);
    } u = {dlsym(h, "InitializeInjection")};
    if (u.p)
        u.fn();
}

CUresult CUDAAPI cuInit(unsigned int Flags)
{
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    int first = 0;
    FG_LOCK();
    if (!fg.initialized) {
        first = 1;
        double n = fg_env_double("FAKEGPU_DEVICES", 1, 0);
        fg.ndevices = n > FG_MAX_DEVICES ? FG_MAX_DEVICES : (int)n;
        if (fg.ndevices == 0) {
            /* FAKEGPU_DEVICES=0 simulates a machine without a usable GPU. */
            FG_UNLOCK();
            return CUDA_ERROR_NO_DEVICE;
        }
        fg.kernel_scale = fg_env_double("FAKEGPU_KERNEL_SCALE", 1.0, 0.0);
        fg.pcie_gbps = fg_env_double("FAKEGPU_PCIE_GBPS", 25.0, 1e-9);
        fg.hbm_gbps = fg_env_double("FAKEGPU_HBM_GBPS", 2000.0, 1e-9);
        fg_throttle_init_locked();
        for (int i = 0; i < fg.ndevices; i++) {
            memset(&fg.devices[i], 0, sizeof fg.devices[i]);
            fg.devices[i].ordinal = i;
            fg_handle_add(&fg.devices[i].pool_tag, FG_H_POOL);
        }
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&fg.progress_cond, &ca);
        pthread_cond_init(&fg.worker_cond, &ca);
        pthread_condattr_destroy(&ca);
        pthread_atfork(NULL, NULL, fg_atfork_child);
        __atomic_store_n(&fg.initialized, 1, __ATOMIC_RELEASE);
    }
    FG_UNLOCK();
    if (first)
        fg_run_injection();
    return CUDA_SUCCESS;
}

int fg_driver_version(void)
{
    static int v; /* read once: the first caller's answer for the process */
    int got = __atomic_load_n(&v, __ATOMIC_RELAXED);
    if (got)
        return got;
    const char *s = getenv("FAKEGPU_DRIVER_VERSION");
    long n = s && *s ? strtol(s, NULL, 10) : 0;
    got = n >= 2000 && n <= FG_DRIVER_VERSION ? (int)n : FG_DRIVER_VERSION;
    __atomic_store_n(&v, got, __ATOMIC_RELAXED);
    return got;
}

CUresult CUDAAPI cuDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = fg_driver_version();
    return CUDA_SUCCESS;
}
