/*
 * Cross-stream dependencies for the shim's event tests: on stream A a
 * kernel, then an event recorded; stream B waits for it, then runs a
 * kernel. Each round reaches the record and the wait by another path:
 *   linked     the exported names this program is linked against
 *   dlsym      dlopen("libcuda.so.1") + dlsym of the exported name
 *   procaddr   cuGetProcAddress_v2(base, ABI version, flags)
 *   procaddr4  the 4-argument cuGetProcAddress (ABI 11030)
 * and through the legacy, per-thread (_ptsz), WithFlags and WithFlags
 * _ptsz entry points, each round with an event of its own. Before each call
 * it prints the record the trace must hold,
 *   EXPECT name event_id stream_id
 * (an event's id is its handle's value, cutrace/format.h CT_APIF_EVENT),
 * (the one cuEventSynchronize too, with stream 0), and before each sync
 * "SYNC name stream_id" (0: it waits for every stream, 4294967295: for
 * every blocking stream); then
 * "CALLS records=N waits=M launches=L" with the totals it made.
 * Exits non-zero if any call fails.
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

CUresult cuEventRecord_ptsz(CUevent, CUstream);
CUresult cuEventRecordWithFlags_ptsz(CUevent, CUstream, unsigned int);
CUresult cuStreamWaitEvent_ptsz(CUstream, CUevent, unsigned int);

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        CUresult r_ = (x);                                                                         \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            fprintf(stderr, "%s failed: %d\n", #x, (int)r_);                                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

enum path { LINKED, DLSYM, PROCADDR, PROCADDR4, NPATHS };
static const char *const path_names[NPATHS] = {"linked", "dlsym", "procaddr", "procaddr4"};
static void *g_lib;

/* The entry points one round calls, found by one path. */
struct calls {
    PFN_cuEventRecord_v2000 record;
    PFN_cuEventRecord_v7000_ptsz record_pt;
    PFN_cuEventRecordWithFlags_v11010 record_f;
    PFN_cuEventRecordWithFlags_v11010_ptsz record_f_pt;
    PFN_cuStreamWaitEvent_v3020 wait;
    PFN_cuStreamWaitEvent_v7000_ptsz wait_pt;
};

static void *lookup(enum path p, const char *exported, const char *base, int version, int pt)
{
    void *fp = NULL;
    if (p == DLSYM) {
        fp = dlsym(g_lib, exported);
    } else if (p == PROCADDR) {
        PFN_cuGetProcAddress_v12000 gpa;
        *(void **)&gpa = dlsym(g_lib, "cuGetProcAddress_v2");
        CUdriverProcAddressQueryResult st;
        if (!gpa || gpa(base, &fp, version, pt ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0,
                        &st) != CUDA_SUCCESS)
            fp = NULL;
    } else {
        PFN_cuGetProcAddress_v11030 gpa;
        *(void **)&gpa = dlsym(g_lib, "cuGetProcAddress");
        if (!gpa || gpa(base, &fp, version,
                        pt ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0) != CUDA_SUCCESS)
            fp = NULL;
    }
    if (!fp) {
        fprintf(stderr, "%s: cannot resolve %s\n", path_names[p], exported);
        exit(2);
    }
    return fp;
}

static void resolve(enum path p, struct calls *c)
{
    if (p == LINKED) {
        c->record = cuEventRecord;
        c->record_pt = cuEventRecord_ptsz;
        c->record_f = cuEventRecordWithFlags;
        c->record_f_pt = cuEventRecordWithFlags_ptsz;
        c->wait = cuStreamWaitEvent;
        c->wait_pt = cuStreamWaitEvent_ptsz;
        return;
    }
    *(void **)&c->record = lookup(p, "cuEventRecord", "cuEventRecord", 2000, 0);
    *(void **)&c->record_pt = lookup(p, "cuEventRecord_ptsz", "cuEventRecord", 7000, 1);
    *(void **)&c->record_f =
        lookup(p, "cuEventRecordWithFlags", "cuEventRecordWithFlags", 11010, 0);
    *(void **)&c->record_f_pt =
        lookup(p, "cuEventRecordWithFlags_ptsz", "cuEventRecordWithFlags", 11010, 1);
    *(void **)&c->wait = lookup(p, "cuStreamWaitEvent", "cuStreamWaitEvent", 3020, 0);
    *(void **)&c->wait_pt = lookup(p, "cuStreamWaitEvent_ptsz", "cuStreamWaitEvent", 7000, 1);
}

static unsigned long long sid(CUstream s)
{
    unsigned long long id;
    CHECK(cuStreamGetId(s, &id));
    return id;
}

static void expect(const char *name, CUevent e, unsigned long long stream)
{
    printf("EXPECT %s %llu %llu\n", name, (unsigned long long)(uintptr_t)e, stream);
}

int main(void)
{
    g_lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!g_lib) {
        fprintf(stderr, "dlopen libcuda.so.1: %s\n", dlerror());
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction ka, kb;
    CUstream a, b;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoadData(&mod, "image"));
    CHECK(cuModuleGetFunction(&ka, mod, "produce__20us"));
    CHECK(cuModuleGetFunction(&kb, mod, "consume__10us"));
    CHECK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    unsigned long long sa = sid(a), sb = sid(b), spt = sid(CU_STREAM_PER_THREAD);
    printf("STREAMS a=%llu b=%llu pt=%llu\n", sa, sb, spt);
    int records = 0, waits = 0, launches = 0;
    for (int p = 0; p < NPATHS; p++) {
        struct calls c;
        resolve((enum path)p, &c);
        /* four variants of the record, each with its own event, and each
         * waited for from B (legacy and per-thread waits in turn) */
        CUevent e[4];
        for (int v = 0; v < 4; v++) {
            CHECK(cuEventCreate(&e[v], CU_EVENT_DISABLE_TIMING));
            CHECK(cuLaunchKernel(ka, 1, 1, 1, 32, 1, 1, 0, a, NULL, NULL));
            launches++;
            switch (v) {
            case 0:
                expect("cuEventRecord", e[v], sa);
                CHECK(c.record(e[v], a));
                break;
            case 1:
                expect("cuEventRecord_ptsz", e[v], sa);
                CHECK(c.record_pt(e[v], a));
                break;
            case 2:
                expect("cuEventRecordWithFlags", e[v], sa);
                CHECK(c.record_f(e[v], a, 0));
                break;
            default:
                expect("cuEventRecordWithFlags_ptsz", e[v], sa);
                CHECK(c.record_f_pt(e[v], a, 0));
                break;
            }
            records++;
            if (v % 2 == 0) {
                expect("cuStreamWaitEvent", e[v], sb);
                CHECK(c.wait(b, e[v], 0));
            } else {
                expect("cuStreamWaitEvent_ptsz", e[v], sb);
                CHECK(c.wait_pt(b, e[v], 0));
            }
            waits++;
            CHECK(cuLaunchKernel(kb, 1, 1, 1, 32, 1, 1, 0, b, NULL, NULL));
            launches++;
        }
        printf("SYNC cuStreamSynchronize %llu\n", sb);
        CHECK(cuStreamSynchronize(b));
        for (int v = 0; v < 4; v++)
            CHECK(cuEventDestroy(e[v]));
    }
    /* handle 0 in a _ptsz call is the per-thread stream: the record is on
     * it, and the wait names B */
    CUevent pe;
    CHECK(cuEventCreate(&pe, CU_EVENT_DISABLE_TIMING));
    expect("cuEventRecord_ptsz", pe, spt);
    CHECK(cuEventRecord_ptsz(pe, NULL));
    records++;
    expect("cuStreamWaitEvent", pe, sb);
    CHECK(cuStreamWaitEvent(b, pe, 0));
    waits++;
    /* the syncs and what each waits for ("SYNC name stream", 0: every
     * stream, 2^32 - 1: every blocking one): B; the per-thread stream,
     * where pe was recorded; the legacy stream, whose sync waits for every
     * blocking stream (A and B are not); the context */
    printf("SYNC cuStreamSynchronize %llu\n", sb);
    CHECK(cuStreamSynchronize(b));
    expect("cuEventSynchronize", pe, 0);
    printf("SYNC cuEventSynchronize %llu\n", spt);
    CHECK(cuEventSynchronize(pe));
    printf("SYNC cuStreamSynchronize 4294967295\n"); /* every blocking stream */
    CHECK(cuStreamSynchronize(NULL));
    printf("SYNC cuCtxSynchronize 0\n");
    CHECK(cuCtxSynchronize());
    CHECK(cuEventDestroy(pe));
    printf("CALLS records=%d waits=%d launches=%d\n", records, waits, launches);
    return 0;
}
