/*
 * NVTX workload for tests/nvtx, built against the toolkit's NVTX3 headers
 * (which dlopen NVTX_INJECTION64_PATH). Each mode states what it did on
 * stdout: "RET ..." lines with NVTX's return values and "TID label tid"
 * lines, which the suite compares with the trace.
 *
 *   w_nvtx ranges     nested push/pop (ASCII, Ex, wide), marks, a start/end
 *                     range ended on another thread, domains, registered strings
 *   w_nvtx threads    threads named by pthread_setname_np, prctl, NVTX and by
 *                     another thread, each pushing two nested ranges
 *   w_nvtx anomalies  pops without a push, pushes deeper than the stack, an
 *                     end of an id never started
 *   w_nvtx twice      a second client library, and a second
 *                     InitializeInjectionNvtx2 call on our own table
 */
#include <nvtx3/nvToolsExt.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

void w_client_work(void);

#define NTHREADS 8

static void pause_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

static nvtxEventAttributes_t attr(void)
{
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof(a));
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    return a;
}

static nvtxEventAttributes_t attr_ascii(const char *s)
{
    nvtxEventAttributes_t a = attr();
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = s;
    return a;
}

static nvtxEventAttributes_t attr_registered(nvtxStringHandle_t h)
{
    nvtxEventAttributes_t a = attr();
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = h;
    return a;
}

static void *ender(void *arg)
{
    pause_us(2000);
    nvtxRangeEnd(*(nvtxRangeId_t *)arg);
    printf("TID ender %d\n", (int)gettid());
    return NULL;
}

static int ranges(void)
{
    printf("TID main %d\n", (int)gettid());
    int r0 = nvtxRangePushA("outer");
    pause_us(1000);
    nvtxEventAttributes_t a = attr_ascii("middle");
    int r1 = nvtxRangePushEx(&a);
    pause_us(1000);
    int r2 = nvtxRangePushW(L"inner-\u00e9\u2192\U0001F600");
    pause_us(1000);
    nvtxMarkA("mark-ascii");
    pause_us(1000);
    int p2 = nvtxRangePop();
    pause_us(1000);
    int p1 = nvtxRangePop();
    pause_us(1000);
    int p0 = nvtxRangePop();
    printf("RET push %d %d %d pop %d %d %d\n", r0, r1, r2, p2, p1, p0);

    a = attr();
    a.messageType = NVTX_MESSAGE_TYPE_UNICODE;
    a.message.unicode = L"ex-wide-\u00fc";
    nvtxRangePushEx(&a);
    nvtxRangePop();
    nvtxMarkW(L"mark-wide-\u00df");
    a = attr_ascii("mark-ex");
    nvtxMarkEx(&a);

    nvtxRangeId_t id = nvtxRangeStartA("cross-thread");
    pthread_t t;
    pthread_create(&t, NULL, ender, &id);
    pthread_join(t, NULL);
    nvtxRangeId_t id2 = nvtxRangeStartW(L"start-wide");
    pause_us(500);
    nvtxRangeEnd(id2);
    printf("RET start %d %d\n", id != 0, id2 != id && id2 != 0);

    nvtxDomainHandle_t d = nvtxDomainCreateA("my-domain");
    nvtxStringHandle_t s = nvtxDomainRegisterStringA(d, "registered-msg");
    nvtxStringHandle_t sw = nvtxDomainRegisterStringW(d, L"registered-wide-\u00e5");
    a = attr_registered(s);
    int d0 = nvtxDomainRangePushEx(d, &a);
    pause_us(500);
    int x0 = nvtxRangePushA("default-in-between"); /* levels are per domain */
    pause_us(500);
    a = attr_registered(sw);
    int d1 = nvtxDomainRangePushEx(d, &a);
    pause_us(500);
    int xp = nvtxRangePop(); /* ends default-in-between, not the domain's range */
    pause_us(500);
    int dp1 = nvtxDomainRangePop(d);
    int dp0 = nvtxDomainRangePop(d);
    printf("RET domain %d %d %d pop %d %d %d\n", d0, x0, d1, xp, dp1, dp0);
    a = attr_registered(s);
    nvtxDomainMarkEx(d, &a);
    a = attr_ascii("domain-start");
    nvtxRangeId_t did = nvtxDomainRangeStartEx(d, &a);
    pause_us(500);
    nvtxDomainRangeEnd(d, did);
    nvtxDomainHandle_t dw = nvtxDomainCreateW(L"wide-domain");
    a = attr_ascii("wide-domain-mark");
    nvtxDomainMarkEx(dw, &a);
    printf("RET same_domain %d\n", nvtxDomainCreateA("my-domain") == d);
    return 0;
}

/*
 * Threads 0-5 name themselves before anything starts the recorder (the shim
 * parks those names); main's mark then starts it, main names thread 7 from
 * outside, thread 6 names itself through NVTX, and every thread pushes two
 * nested ranges. The barriers keep the recorder's start out of the pushes:
 * a call racing with its start goes unrecorded by design (init.c).
 */
struct worker {
    int index;
    pthread_barrier_t *named, *go;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    char name[32], msg[32];
    unsigned i = (unsigned)w->index % NTHREADS;
    if (i < 3) {
        snprintf(name, sizeof(name), "w-set-%u", i);
        pthread_setname_np(pthread_self(), name);
    } else if (i < 6) {
        snprintf(name, sizeof(name), "w-prctl-%u", i);
        prctl(PR_SET_NAME, name, 0, 0, 0);
    }
    pthread_barrier_wait(w->named);
    pthread_barrier_wait(w->go);
    if (i == 6)
        nvtxNameOsThreadA((uint32_t)gettid(), "w-nvtx-6");
    printf("TID %u %d\n", i, (int)gettid());
    snprintf(msg, sizeof(msg), "work-%u", i);
    nvtxRangePushA(msg);
    pause_us(300);
    snprintf(msg, sizeof(msg), "inner-%u", i);
    nvtxRangePushA(msg);
    pause_us(300);
    nvtxRangePop();
    pause_us(300);
    nvtxRangePop();
    return NULL;
}

static int threads(void)
{
    pthread_t t[NTHREADS];
    struct worker w[NTHREADS];
    pthread_barrier_t named, go;
    pthread_barrier_init(&named, NULL, NTHREADS + 1);
    pthread_barrier_init(&go, NULL, NTHREADS + 1);
    for (int i = 0; i < NTHREADS; i++) {
        w[i] = (struct worker){i, &named, &go};
        pthread_create(&t[i], NULL, work, &w[i]);
    }
    pthread_barrier_wait(&named);
    nvtxMarkA("go"); /* the process's first event: the recorder starts here */
    /* named from outside: the shim has to find the thread's tid */
    int r = pthread_setname_np(t[NTHREADS - 1], "w-by-main-7");
    pthread_barrier_wait(&go);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
    printf("RET setname_other %d\n", r);
    return 0;
}

static int anomalies(void)
{
    int e0 = nvtxRangePop(); /* nothing open */
    int ok = 1;
    for (int i = 0; i < 70; i++)
        ok &= nvtxRangePushA("deep") == i;
    for (int i = 69; i >= 0; i--)
        ok &= nvtxRangePop() == i;
    nvtxRangeEnd((nvtxRangeId_t)987654321); /* never started */
    nvtxDomainHandle_t d = nvtxDomainCreateA("empty-domain");
    int e1 = nvtxDomainRangePop(d);
    printf("RET pop_empty %d deep_ok %d domain_pop_empty %d\n", e0, ok, e1);
    return 0;
}

static int twice(void)
{
    nvtxRangePushA("main-before");
    nvtxRangePop();
    w_client_work(); /* the second library's NVTX initialises: a second call */
    typedef int (*init_fn)(NvtxGetExportTableFunc_t);
    void *p = dlsym(RTLD_DEFAULT, "InitializeInjectionNvtx2");
    init_fn init;
    memcpy(&init, &p, sizeof(init));
    int again = init ? init(NVTX_VERSIONED_IDENTIFIER(nvtxGetExportTable)) : -1;
    int l0 = nvtxRangePushA("main-after");
    int l1 = nvtxRangePushA("main-after-inner");
    nvtxRangePop();
    nvtxRangePop();
    w_client_work();
    printf("RET again %d levels %d %d\n", again, l0, l1);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(mode, "ranges"))
        return ranges();
    if (!strcmp(mode, "threads"))
        return threads();
    if (!strcmp(mode, "anomalies"))
        return anomalies();
    if (!strcmp(mode, "twice"))
        return twice();
    fprintf(stderr, "usage: w_nvtx ranges|threads|anomalies|twice\n");
    return 2;
}
