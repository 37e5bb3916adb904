/*
 * NVTX ranges and marks, the cutrace user API (include/cutrace/cutrace.h)
 * and thread names.
 *
 * NVTX3 is header-only: every library that uses it dlopens
 * NVTX_INJECTION64_PATH at its first NVTX call and calls our
 * InitializeInjectionNvtx2 with its own export table, where we store our
 * handlers (slots we leave alone become no-ops). Several libraries each call
 * it; all of them share the state below, so range ids and string handles
 * are process-wide.
 *
 * Push/pop ranges live on a per-thread stack, scoped per domain as NVTX
 * specifies (nvtxDomainRangePop(d) ends the innermost open range of d). A
 * range's trace depth is its NVTX level + 1: the outermost push/pop range of
 * a domain has depth 1, and depth 0 means a start/end range, which has no
 * nesting. Start/end ranges may end on another thread, so they live in a
 * process-wide lock-free table keyed by their id.
 *
 * Thread names come from NVTX (nvtxNameOsThread) and from the interposed
 * pthread_setname_np and prctl(PR_SET_NAME). Naming a thread is not an
 * event: it never starts the recorder (processes that only name threads get
 * no trace file); names set before the recorder starts are parked and
 * written once it runs. Names are metadata, so they are also written outside
 * capture windows; ranges and marks are not.
 *
 * Never, on a record path: take a lock, allocate, or make a syscall of our
 * own (the first recorded call's one-time atexit() aside); intern strings
 * while the recorder is not on (the table may not exist yet); call NVTX.
 * What does not fit the fixed tables is counted (recorder metadata at exit),
 * never overflowed.
 */
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include "cutrace/cutrace.h"
#include "shim/cuda_table.h"
#include "shim/nvtx.h"
#include "shim/shim.h"

#define NVTX_STACK     64           /* push/pop ranges open per thread */
#define NVTX_OPEN      4096         /* start/end ranges open at once in the process (power of 2) */
#define NVTX_PROBE     16           /* slots tried for one start/end range */
#define NVTX_DOMAINS   256          /* domains, default and "cutrace" included */
#define NVTX_EARLY     1024         /* strings registered before the recorder started */
#define NVTX_TEXT      256          /* bytes kept of a domain name or early string */
#define NVTX_WIDE      1024         /* bytes of UTF-8 kept of a wide message */
#define NVTX_PARKED    256          /* thread names set before the recorder started */
#define NVTX_NAME      64           /* bytes kept of a parked thread name */
#define ID_UNTRACKED   (1ull << 63) /* range id whose start was not recorded */
#define SLOT_BUSY      UINT64_MAX
#define DOMAIN_DEFAULT 0u
#define DOMAIN_CUTRACE 1u

/* ---- what could not be recorded: counted, written at exit ---- */

enum anomaly {
    AN_PUSH_OVERFLOW,   /* pushed deeper than NVTX_STACK: the range is not recorded */
    AN_POP_UNMATCHED,   /* pop with no open range of its domain on the thread */
    AN_START_UNTRACKED, /* start/end table full around the id: the range is not recorded */
    AN_END_UNMATCHED,   /* end of an id that is not open */
    AN_STRINGS_LOST,    /* registered before recording with the early table full: "" */
    AN_DOMAINS_LOST,    /* domain table full: the default domain is used */
    AN_NAMES_LOST,      /* thread named before recording with the parking table full */
    AN_COUNT
};
static const char *const an_key[AN_COUNT] = {
    "nvtx_push_overflow", "nvtx_pop_unmatched", "nvtx_start_untracked", "nvtx_end_unmatched",
    "nvtx_strings_lost",  "nvtx_domains_lost",  "thread_names_lost",
};
static const char *const an_what[AN_COUNT] = {
    "nvtx: ranges nested deeper than 64 on a thread are not recorded (counted)",
    "nvtx: range pop without an open range of its domain (counted)",
    "nvtx: too many start/end ranges open at once; some are not recorded (counted)",
    "nvtx: range end for an id that is not open (counted)",
    "nvtx: too many strings registered before recording started; some are empty (counted)",
    "nvtx: too many domains; later ones are recorded in the default domain (counted)",
    "cutrace: too many threads named before recording started; some names are lost (counted)",
};
static atomic_ullong g_anomalies[AN_COUNT];
static atomic_int g_exit_hook, g_finished;

/* ---- entering and leaving a recorded NVTX call ---- */

static void nvtx_atexit(void)
{
    ct_nvtx_finish();
}

static void parked_flush(void);
static int parked_waiting(void);

/* Takes the guard on a thread about to write to the open trace; the first
 * time, registers the exit hook and writes the parked thread names. */
static void live_begin(void)
{
    ct_tls_guard = 1;
    /* Registered after the shim's own atexit (it ran before recording went
     * on), so it runs first, while the trace is still open. */
    if (__builtin_expect(!atomic_load_explicit(&g_exit_hook, memory_order_relaxed), 0) &&
        !atomic_exchange(&g_exit_hook, 1))
        atexit(nvtx_atexit);
    if (__builtin_expect(parked_waiting(), 0))
        parked_flush();
}

/* 1 (guard taken) when this call is recorded. */
static int rec_begin(void)
{
    if (!ct_shim_recording())
        return 0;
    live_begin();
    return 1;
}

static void rec_end(void)
{
    ct_tls_guard = 0;
}

static void anomaly(enum anomaly k)
{
    if (atomic_fetch_add_explicit(&g_anomalies[k], 1, memory_order_relaxed) == 0 && rec_begin()) {
        ct_emit_error(an_what[k], (int64_t)k);
        rec_end();
    }
}

/* ---- text ---- */

/* Copies at most cap-1 bytes of s (len bytes), cut at a UTF-8 character
 * boundary, NUL-terminated. Returns the bytes copied. */
static size_t copy_text(char *dst, size_t cap, const char *s, size_t len)
{
    if (len > cap - 1) {
        len = cap - 1;
        while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80)
            len--;
    }
    memcpy(dst, s, len);
    dst[len] = 0;
    return len;
}

/* wchar_t (UTF-32 on Linux) to UTF-8, at most cap bytes, whole characters
 * only; invalid code points become U+FFFD. Returns the bytes written. */
static size_t utf8_from_wide(char *out, size_t cap, const wchar_t *w)
{
    size_t n = 0;
    for (; w && *w; w++) {
        uint32_t c = (uint32_t)*w;
        unsigned char b[4];
        size_t k;
        if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
            c = 0xFFFD;
        if (c < 0x80) {
            b[0] = (unsigned char)c;
            k = 1;
        } else if (c < 0x800) {
            b[0] = (unsigned char)(0xC0 | c >> 6);
            b[1] = (unsigned char)(0x80 | (c & 0x3F));
            k = 2;
        } else if (c < 0x10000) {
            b[0] = (unsigned char)(0xE0 | c >> 12);
            b[1] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
            b[2] = (unsigned char)(0x80 | (c & 0x3F));
            k = 3;
        } else {
            b[0] = (unsigned char)(0xF0 | c >> 18);
            b[1] = (unsigned char)(0x80 | (c >> 12 & 0x3F));
            b[2] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
            b[3] = (unsigned char)(0x80 | (c & 0x3F));
            k = 4;
        }
        if (n + k > cap)
            break;
        memcpy(out + n, b, k);
        n += k;
    }
    return n;
}

/* ---- domains: handles point into a fixed table, names interned lazily ---- */

struct domain {
    atomic_uint ready;
    atomic_uint sid; /* interned name, 0 until first recorded use */
    char name[NVTX_TEXT];
};
static struct domain g_domains[NVTX_DOMAINS] = {[DOMAIN_CUTRACE] = {1, 0, "cutrace"}};
static atomic_uint g_ndomains = 2;

static uint32_t domain_index(nvtxDomainHandle_t h)
{
    uintptr_t p = (uintptr_t)(void *)h, base = (uintptr_t)g_domains;
    if (p < base || p >= base + sizeof(g_domains) || (p - base) % sizeof(struct domain))
        return DOMAIN_DEFAULT; /* NULL, or not ours: NVTX's default domain */
    return (uint32_t)((p - base) / sizeof(struct domain));
}

/* Recording only. */
static uint32_t domain_sid(uint32_t d)
{
    if (d == DOMAIN_DEFAULT)
        return 0;
    struct domain *e = &g_domains[d];
    uint32_t sid = atomic_load_explicit(&e->sid, memory_order_relaxed);
    if (!sid) {
        sid = ct_intern(e->name);
        atomic_store_explicit(&e->sid, sid, memory_order_relaxed);
    }
    return sid;
}

/* Domain of that name (NUL-terminated, at most NVTX_TEXT-1 bytes). A name
 * created twice gets the same handle; racing creators may get two. */
static nvtxDomainHandle_t domain_create(const char *name)
{
    uint32_t n = atomic_load(&g_ndomains);
    for (uint32_t i = DOMAIN_CUTRACE + 1; i < n && i < NVTX_DOMAINS; i++)
        if (atomic_load_explicit(&g_domains[i].ready, memory_order_acquire) &&
            !strcmp(g_domains[i].name, name))
            return (nvtxDomainHandle_t)(void *)&g_domains[i];
    uint32_t i = atomic_fetch_add(&g_ndomains, 1);
    if (i >= NVTX_DOMAINS) {
        anomaly(AN_DOMAINS_LOST);
        return NULL;
    }
    copy_text(g_domains[i].name, NVTX_TEXT, name, strlen(name));
    atomic_store_explicit(&g_domains[i].ready, 1, memory_order_release);
    return (nvtxDomainHandle_t)(void *)&g_domains[i];
}

static nvtxDomainHandle_t h_domain_create_a(const char *name)
{
    CT_ERRNO_SAVE;
    char buf[NVTX_TEXT];
    copy_text(buf, sizeof(buf), name ? name : "", name ? strlen(name) : 0);
    nvtxDomainHandle_t h = domain_create(buf);
    CT_ERRNO_RESTORE;
    return h;
}

static nvtxDomainHandle_t h_domain_create_w(const wchar_t *name)
{
    CT_ERRNO_SAVE;
    char buf[NVTX_TEXT];
    buf[utf8_from_wide(buf, sizeof(buf) - 1, name)] = 0;
    nvtxDomainHandle_t h = domain_create(buf);
    CT_ERRNO_RESTORE;
    return h;
}

/*
 * Registered strings. Once recording, the handle is the interned id, tagged:
 * (id << 1) | 1, which no pointer of ours is. Before that (the string table
 * may not exist yet) the text is kept in the early table and the handle
 * points there; its id is interned at first recorded use.
 */
struct early_string {
    atomic_uint ready;
    atomic_uint sid;
    char text[NVTX_TEXT];
};
static struct early_string g_early[NVTX_EARLY];
static atomic_uint g_nearly;

static nvtxStringHandle_t string_register(const char *s, size_t len)
{
    if (rec_begin()) {
        uint32_t sid = ct_strtab_intern(&ct_strings, s, len);
        rec_end();
        return (nvtxStringHandle_t)(void *)(((uintptr_t)sid << 1) | 1);
    }
    uint32_t i = atomic_fetch_add(&g_nearly, 1);
    if (i >= NVTX_EARLY) {
        anomaly(AN_STRINGS_LOST);
        return (nvtxStringHandle_t)(void *)(uintptr_t)1; /* "" */
    }
    copy_text(g_early[i].text, NVTX_TEXT, s, len);
    atomic_store_explicit(&g_early[i].ready, 1, memory_order_release);
    return (nvtxStringHandle_t)(void *)&g_early[i];
}

/* Recording only. */
static uint32_t string_sid(nvtxStringHandle_t h)
{
    uintptr_t p = (uintptr_t)(void *)h, base = (uintptr_t)g_early;
    if (p & 1)
        return (uint32_t)(p >> 1);
    if (p < base || p >= base + sizeof(g_early) || (p - base) % sizeof(struct early_string))
        return 0;
    struct early_string *e = &g_early[(p - base) / sizeof(struct early_string)];
    if (!atomic_load_explicit(&e->ready, memory_order_acquire))
        return 0;
    uint32_t sid = atomic_load_explicit(&e->sid, memory_order_relaxed);
    if (!sid) {
        sid = ct_intern(e->text);
        atomic_store_explicit(&e->sid, sid, memory_order_relaxed);
    }
    return sid;
}

static nvtxStringHandle_t h_register_a(nvtxDomainHandle_t d, const char *s)
{
    (void)d; /* ids are process-wide; the domain does not scope them here */
    CT_ERRNO_SAVE;
    nvtxStringHandle_t h = string_register(s ? s : "", s ? strlen(s) : 0);
    CT_ERRNO_RESTORE;
    return h;
}

static nvtxStringHandle_t h_register_w(nvtxDomainHandle_t d, const wchar_t *s)
{
    (void)d;
    CT_ERRNO_SAVE;
    char buf[NVTX_WIDE];
    nvtxStringHandle_t h = string_register(buf, utf8_from_wide(buf, sizeof(buf), s));
    CT_ERRNO_RESTORE;
    return h;
}

/* ---- messages ---- */

struct msg {
    int type; /* nvtxMessageType_t */
    nvtxMessageValue_t v;
};

static struct msg msg_attr(const nvtxEventAttributes_t *a)
{
    struct msg m = {NVTX_MESSAGE_UNKNOWN, {NULL}};
    if (a && a->size >= offsetof(nvtxEventAttributes_t, message) + sizeof(a->message)) {
        m.type = a->messageType;
        m.v = a->message;
    }
    return m;
}

static struct msg msg_ascii(const char *s)
{
    struct msg m = {NVTX_MESSAGE_TYPE_ASCII, {NULL}};
    m.v.ascii = s;
    return m;
}

static struct msg msg_wide(const wchar_t *s)
{
    struct msg m = {NVTX_MESSAGE_TYPE_UNICODE, {NULL}};
    m.v.unicode = s;
    return m;
}

/* Recording only: the message's string id (0 = ""). */
static uint32_t msg_sid(struct msg m)
{
    switch (m.type) {
    case NVTX_MESSAGE_TYPE_ASCII: return ct_intern(m.v.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE: {
        char buf[NVTX_WIDE];
        return ct_strtab_intern(&ct_strings, buf, utf8_from_wide(buf, sizeof(buf), m.v.unicode));
    }
    case NVTX_MESSAGE_TYPE_REGISTERED: return string_sid(m.v.registered);
    default: return 0;
    }
}

/* ---- records ---- */

static void emit_range(uint64_t t0, uint64_t t1, uint32_t dom, uint32_t msg, uint64_t depth)
{
    uint64_t f[CT_NVTX_NFIELDS];
    f[CT_NVTX_START] = t0;
    f[CT_NVTX_END] = t1;
    f[CT_NVTX_DOMAIN] = dom;
    f[CT_NVTX_MESSAGE] = msg;
    f[CT_NVTX_DEPTH] = depth;
    ct_emit(CT_REC_NVTX_RANGE, 0, f, CT_NVTX_NFIELDS);
}

static void mark(uint32_t d, struct msg m)
{
    CT_ERRNO_SAVE;
    if (rec_begin()) {
        uint64_t f[CT_MARK_NFIELDS];
        f[CT_MARK_TIME] = ct_clock_now();
        f[CT_MARK_DOMAIN] = domain_sid(d);
        f[CT_MARK_MESSAGE] = msg_sid(m);
        ct_emit(CT_REC_NVTX_MARK, 0, f, CT_MARK_NFIELDS);
        rec_end();
    }
    CT_ERRNO_RESTORE;
}

/* ---- push/pop: per-thread stack ---- */

struct frame {
    uint64_t t0;
    uint32_t domain;  /* index in g_domains */
    uint32_t msg;     /* string id */
    int32_t level;    /* NVTX level in its domain, 0-based */
    int32_t recorded; /* pushed while recording: pop emits it */
};
struct stack {
    uint32_t n;
    uint32_t overflow; /* pushes beyond NVTX_STACK still open */
    struct frame f[NVTX_STACK];
};
static __thread struct stack tls_stack;

/* Level a new push of domain d gets (open ranges of d on the stack). */
static int32_t next_level(const struct stack *s, uint32_t d)
{
    for (uint32_t i = s->n; i-- > 0;)
        if (s->f[i].domain == d)
            return s->f[i].level + 1;
    return 0;
}

/*
 * Returns the new range's 0-based level in its domain. Beyond the stack the
 * range is counted, not recorded, and its level assumes the overflowing
 * ranges are all of this domain.
 */
static int range_push(uint32_t d, struct msg m)
{
    CT_ERRNO_SAVE;
    struct stack *s = &tls_stack;
    int32_t level = next_level(s, d);
    if (s->n == NVTX_STACK) {
        level += (int32_t)s->overflow++;
        anomaly(AN_PUSH_OVERFLOW);
    } else {
        struct frame *f = &s->f[s->n++];
        f->domain = d;
        f->level = level;
        f->recorded = 0;
        if (rec_begin()) {
            f->msg = msg_sid(m);
            f->recorded = 1;
            f->t0 = ct_clock_now(); /* last: our own work is outside the range */
            rec_end();
        }
    }
    CT_ERRNO_RESTORE;
    return level;
}

/* Returns the ended range's level, or -1 when d has no open range here. */
static int range_pop(uint32_t d)
{
    uint64_t t1 = ct_clock_now();
    CT_ERRNO_SAVE;
    struct stack *s = &tls_stack;
    int level = -1;
    if (s->overflow) {
        s->overflow--;
        level = next_level(s, d) + (int32_t)s->overflow;
    } else {
        uint32_t i = s->n;
        while (i > 0 && s->f[i - 1].domain != d)
            i--;
        if (i == 0) {
            anomaly(AN_POP_UNMATCHED);
        } else {
            struct frame f = s->f[i - 1];
            /* Ranges of other domains opened since stay open, in order. */
            memmove(&s->f[i - 1], &s->f[i], (s->n - i) * sizeof(f));
            s->n--;
            level = f.level;
            if (f.recorded && rec_begin()) {
                emit_range(f.t0, t1, domain_sid(f.domain), f.msg, (uint64_t)f.level + 1);
                rec_end();
            }
        }
    }
    CT_ERRNO_RESTORE;
    return level;
}

/* ---- start/end: process-wide table, slot found from the id ---- */

struct open_range {
    _Atomic uint64_t id; /* 0 free, SLOT_BUSY being filled, else the open range's id */
    uint64_t t0;
    uint32_t domain; /* string ids */
    uint32_t msg;
};
static struct open_range g_open[NVTX_OPEN];
static _Atomic uint64_t g_next_id = 1;

static nvtxRangeId_t range_start(uint32_t d, struct msg m)
{
    CT_ERRNO_SAVE;
    uint64_t id = atomic_fetch_add_explicit(&g_next_id, 1, memory_order_relaxed) & ~ID_UNTRACKED;
    if (!rec_begin()) {
        CT_ERRNO_RESTORE;
        return id | ID_UNTRACKED;
    }
    uint32_t dom = domain_sid(d), msg = msg_sid(m);
    for (unsigned k = 0; k < NVTX_PROBE; k++) {
        struct open_range *o = &g_open[(id + k) & (NVTX_OPEN - 1)];
        uint64_t free_id = 0;
        if (atomic_compare_exchange_strong_explicit(&o->id, &free_id, SLOT_BUSY,
                                                    memory_order_acquire, memory_order_relaxed)) {
            o->domain = dom;
            o->msg = msg;
            o->t0 = ct_clock_now();
            atomic_store_explicit(&o->id, id, memory_order_release);
            rec_end();
            CT_ERRNO_RESTORE;
            return id;
        }
    }
    rec_end();
    anomaly(AN_START_UNTRACKED);
    CT_ERRNO_RESTORE;
    return id | ID_UNTRACKED;
}

static void range_end(nvtxRangeId_t id)
{
    uint64_t t1 = ct_clock_now();
    CT_ERRNO_SAVE;
    if (id & ID_UNTRACKED) { /* started while not recording, or counted at start */
        CT_ERRNO_RESTORE;
        return;
    }
    for (unsigned k = 0; id && k < NVTX_PROBE; k++) {
        struct open_range *o = &g_open[(id + k) & (NVTX_OPEN - 1)];
        uint64_t cur = id;
        if (atomic_load_explicit(&o->id, memory_order_acquire) != id)
            continue;
        uint64_t t0 = o->t0;
        uint32_t dom = o->domain, msg = o->msg;
        /* Only one of two racing ends of the same id wins the slot. */
        if (!atomic_compare_exchange_strong_explicit(&o->id, &cur, 0, memory_order_release,
                                                     memory_order_relaxed))
            break;
        if (rec_begin()) {
            emit_range(t0, t1, dom, msg, 0);
            rec_end();
        }
        CT_ERRNO_RESTORE;
        return;
    }
    anomaly(AN_END_UNMATCHED);
    CT_ERRNO_RESTORE;
}

/* ---- thread names ---- */

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
 * the next recorded call of this file or by ct_nvtx_started(). */
struct parked {
    atomic_uint state; /* 0 free, 1 being written, 2 ready, 3 written */
    uint32_t len;
    uint64_t scope_id;
    const char *key;
    char name[NVTX_NAME];
};
static struct parked g_parked[NVTX_PARKED];
static atomic_uint g_nparked, g_nparked_done;

static int parked_waiting(void)
{
    uint32_t n = atomic_load_explicit(&g_nparked, memory_order_relaxed);
    if (n > NVTX_PARKED)
        n = NVTX_PARKED;
    return atomic_load_explicit(&g_nparked_done, memory_order_relaxed) < n;
}

/* Guard held, recording. */
static void parked_flush(void)
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
        atomic_fetch_add_explicit(&g_anomalies[AN_NAMES_LOST], 1, memory_order_relaxed);
        return;
    }
    struct parked *p = &g_parked[i];
    atomic_store(&p->state, 1);
    p->scope_id = scope_id;
    p->key = key;
    p->len = (uint32_t)copy_text(p->name, NVTX_NAME, name, len);
    atomic_store_explicit(&p->state, 2, memory_order_release);
}

/*
 * A thread was named. is_event: an NVTX call, which starts the recorder like
 * any event; the libc wrappers only record when it already runs.
 */
static void thread_named(uint64_t scope_id, const char *key, const char *name, size_t len,
                         int is_event)
{
    if (ct_tls_guard)
        return; /* cutrace naming its own threads */
    if (is_event)
        (void)ct_shim_recording();
    /* Names are metadata: written outside capture windows (PAUSED) too. */
    if (ct_shim_live()) {
        live_begin();
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

static void *real_sym(void *_Atomic *slot, const char *name)
{
    void *p = atomic_load_explicit(slot, memory_order_acquire);
    if (!p) {
        p = ct_dlsym_real(RTLD_NEXT, name);
        atomic_store_explicit(slot, p, memory_order_release);
    }
    return p;
}

CT_EXPORT int pthread_setname_np(pthread_t th, const char *name)
{
    setname_fn real = (setname_fn)ct_fn(real_sym(&g_real_setname, "pthread_setname_np"));
    if (!real)
        return ENOSYS;
    int r = real(th, name);
    if (r == 0 && !ct_tls_guard) {
        CT_ERRNO_SAVE;
        size_t len = strnlen(name, 15); /* the kernel keeps 15 bytes; longer fails */
        uint32_t tid = pthread_equal(th, pthread_self()) ? (uint32_t)gettid() : tid_of(th);
        if (tid)
            thread_named(tid, "name", name, len, 0);
        else /* not resolvable: the pthread_t as a hint (README) */
            thread_named((uint64_t)th, "pthread_name", name, len, 0);
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
    prctl_fn real = (prctl_fn)ct_fn(real_sym(&g_real_prctl, "prctl"));
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    int r = real(option, a2, a3, a4, a5);
    if (option == PR_SET_NAME && r == 0 && a2 && !ct_tls_guard) {
        CT_ERRNO_SAVE;
        const char *name = (const char *)a2;
        thread_named((uint32_t)gettid(), "name", name, strnlen(name, 15), 0);
        CT_ERRNO_RESTORE;
    }
    return r;
}

/* ---- NVTX handlers ---- */

static void h_mark_ex(const nvtxEventAttributes_t *a)
{
    mark(DOMAIN_DEFAULT, msg_attr(a));
}
static void h_mark_a(const char *s)
{
    mark(DOMAIN_DEFAULT, msg_ascii(s));
}
static void h_mark_w(const wchar_t *s)
{
    mark(DOMAIN_DEFAULT, msg_wide(s));
}
static nvtxRangeId_t h_start_ex(const nvtxEventAttributes_t *a)
{
    return range_start(DOMAIN_DEFAULT, msg_attr(a));
}
static nvtxRangeId_t h_start_a(const char *s)
{
    return range_start(DOMAIN_DEFAULT, msg_ascii(s));
}
static nvtxRangeId_t h_start_w(const wchar_t *s)
{
    return range_start(DOMAIN_DEFAULT, msg_wide(s));
}
static void h_end(nvtxRangeId_t id)
{
    range_end(id);
}
static int h_push_ex(const nvtxEventAttributes_t *a)
{
    return range_push(DOMAIN_DEFAULT, msg_attr(a));
}
static int h_push_a(const char *s)
{
    return range_push(DOMAIN_DEFAULT, msg_ascii(s));
}
static int h_push_w(const wchar_t *s)
{
    return range_push(DOMAIN_DEFAULT, msg_wide(s));
}
static int h_pop(void)
{
    return range_pop(DOMAIN_DEFAULT);
}

static void h_name_thread_a(uint32_t tid, const char *name)
{
    CT_ERRNO_SAVE;
    if (name)
        thread_named(tid, "name", name, strlen(name), 1);
    CT_ERRNO_RESTORE;
}

static void h_name_thread_w(uint32_t tid, const wchar_t *name)
{
    CT_ERRNO_SAVE;
    char buf[NVTX_WIDE];
    if (name)
        thread_named(tid, "name", buf, utf8_from_wide(buf, sizeof(buf), name), 1);
    CT_ERRNO_RESTORE;
}

static void h_dmark(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    mark(domain_index(d), msg_attr(a));
}
static nvtxRangeId_t h_dstart(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    return range_start(domain_index(d), msg_attr(a));
}
static void h_dend(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
    (void)d; /* ids are unique in the process */
    range_end(id);
}
static int h_dpush(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    return range_push(domain_index(d), msg_attr(a));
}
static int h_dpop(nvtxDomainHandle_t d)
{
    return range_pop(domain_index(d));
}

struct slot {
    unsigned id;
    NvtxFunctionPointer fn;
};
#define FN(f) ((NvtxFunctionPointer)(f))

/* Slots not listed (categories, resources, domain destroy, nvtxInitialize)
 * stay NULL, which NVTX turns into no-ops returning its defaults. */
static const struct slot core_slots[] = {
    {NVTX_CBID_CORE_MarkEx, FN(h_mark_ex)},
    {NVTX_CBID_CORE_MarkA, FN(h_mark_a)},
    {NVTX_CBID_CORE_MarkW, FN(h_mark_w)},
    {NVTX_CBID_CORE_RangeStartEx, FN(h_start_ex)},
    {NVTX_CBID_CORE_RangeStartA, FN(h_start_a)},
    {NVTX_CBID_CORE_RangeStartW, FN(h_start_w)},
    {NVTX_CBID_CORE_RangeEnd, FN(h_end)},
    {NVTX_CBID_CORE_RangePushEx, FN(h_push_ex)},
    {NVTX_CBID_CORE_RangePushA, FN(h_push_a)},
    {NVTX_CBID_CORE_RangePushW, FN(h_push_w)},
    {NVTX_CBID_CORE_RangePop, FN(h_pop)},
    {NVTX_CBID_CORE_NameOsThreadA, FN(h_name_thread_a)},
    {NVTX_CBID_CORE_NameOsThreadW, FN(h_name_thread_w)},
};
static const struct slot core2_slots[] = {
    {NVTX_CBID_CORE2_DomainMarkEx, FN(h_dmark)},
    {NVTX_CBID_CORE2_DomainRangeStartEx, FN(h_dstart)},
    {NVTX_CBID_CORE2_DomainRangeEnd, FN(h_dend)},
    {NVTX_CBID_CORE2_DomainRangePushEx, FN(h_dpush)},
    {NVTX_CBID_CORE2_DomainRangePop, FN(h_dpop)},
    {NVTX_CBID_CORE2_DomainRegisterStringA, FN(h_register_a)},
    {NVTX_CBID_CORE2_DomainRegisterStringW, FN(h_register_w)},
    {NVTX_CBID_CORE2_DomainCreateA, FN(h_domain_create_a)},
    {NVTX_CBID_CORE2_DomainCreateW, FN(h_domain_create_w)},
};

/* 1 when the module's table exists; our handlers are stored in it. */
static int install(const NvtxExportTableCallbacks *cb, NvtxCallbackModule module,
                   const struct slot *slots, size_t n)
{
    NvtxFunctionTable table = NULL;
    unsigned size = 0;
    if (!cb->GetModuleFunctionTable(module, &table, &size) || !table)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (slots[i].id < size && table[slots[i].id])
            *table[slots[i].id] = slots[i].fn;
    return 1;
}

/*
 * NVTX_INJECTION64_PATH entry point, called once by each library's copy of
 * NVTX at its first NVTX call. Installing is idempotent (the same pointers
 * stored again) and libraries have separate tables, so concurrent calls are
 * safe. Returns 1 (NVTX then uses our handlers) or 0 (this library's NVTX
 * calls become no-ops: recording is off for good, or the table is unusable).
 */
CT_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table)
{
    CT_ERRNO_SAVE;
    int ok = 0;
    const NvtxExportTableCallbacks *cb =
        get_export_table ? (const NvtxExportTableCallbacks *)get_export_table(NVTX_ETID_CALLBACKS)
                         : NULL;
    if (cb && cb->struct_size >= sizeof(*cb) && cb->GetModuleFunctionTable &&
        atomic_load(&ct_shim_state) != CT_SHIM_OFF) {
        ok = install(cb, NVTX_CB_MODULE_CORE, core_slots, sizeof(core_slots) / sizeof(*core_slots));
        ok |= install(cb, NVTX_CB_MODULE_CORE2, core2_slots,
                      sizeof(core2_slots) / sizeof(*core2_slots));
        const NvtxExportTableVersionInfo *vi =
            (const NvtxExportTableVersionInfo *)get_export_table(NVTX_ETID_VERSIONINFO);
        if (ok && vi && vi->struct_size >= sizeof(*vi) && vi->SetInjectionNvtxVersion)
            vi->SetInjectionNvtxVersion(NVTX_VERSION);
    }
    CT_ERRNO_RESTORE;
    return ok;
}

/* ---- the user API (include/cutrace/cutrace.h), domain "cutrace" ---- */

static void api_mark(const char *name)
{
    mark(DOMAIN_CUTRACE, msg_ascii(name));
}
static int api_push(const char *name)
{
    return range_push(DOMAIN_CUTRACE, msg_ascii(name));
}
static int api_pop(void)
{
    return range_pop(DOMAIN_CUTRACE);
}

static int api_flush(unsigned timeout_ms)
{
    CT_ERRNO_SAVE;
    int r = -ENODEV;
    if (rec_begin()) {
        r = ct_recorder_flush(timeout_ms);
        rec_end();
    }
    CT_ERRNO_RESTORE;
    return r;
}

static int api_recording(void)
{
    CT_ERRNO_SAVE;
    int r = ct_shim_recording();
    CT_ERRNO_RESTORE;
    return r;
}

CT_EXPORT const struct cutrace_api_v1 cutrace_api_v1 = {
    sizeof(struct cutrace_api_v1), api_mark, api_push, api_pop, api_flush, api_recording,
};

/* ---- lifecycle hooks (shim/nvtx.h) ---- */

void ct_nvtx_started(void)
{
    if (!ct_shim_live())
        return;
    int guard = ct_tls_guard;
    live_begin();
    ct_tls_guard = guard;
}

void ct_nvtx_finish(void)
{
    if (!ct_shim_live() || atomic_exchange(&g_finished, 1))
        return;
    int guard = ct_tls_guard;
    ct_tls_guard = 1;
    parked_flush();
    for (int k = 0; k < AN_COUNT; k++) {
        unsigned long long n = atomic_load(&g_anomalies[k]);
        if (!n)
            continue;
        char v[24];
        snprintf(v, sizeof(v), "%llu", n);
        uint64_t f[CT_META_NFIELDS] = {ct_clock_now(), CT_SCOPE_RECORDER, 0, ct_intern(an_key[k]),
                                       ct_intern(v)};
        ct_emit(CT_REC_META, 0, f, CT_META_NFIELDS);
    }
    ct_tls_guard = guard;
}
