/*
 * NVTX ranges and marks: the NVTX injection entry point and the range and
 * mark records, for NVTX and for the cutrace user API
 * (shim/nvtx_user_api.c). Domains and registered strings are
 * shim/nvtx_strings.c; thread names are shim/nvtx_thread_name.c.
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
 * process-wide lock-free table keyed by their id. Names are metadata, so
 * they are also written outside capture windows; ranges and marks are not.
 *
 * Never, on a record path: take a lock, allocate, or make a syscall of our
 * own (the first recorded call's one-time atexit() aside); intern strings
 * while the recorder is not on (the table may not exist yet); call NVTX.
 * What does not fit the fixed tables is counted (recorder metadata at exit),
 * never overflowed.
 */
#include "shim/nvtx_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim/nvtx.h"

/* ---- what could not be recorded: counted, written at exit ---- */

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

/* Takes the guard on a thread about to write to the open trace; the first
 * time, registers the exit hook and writes the parked thread names. */
void ct_nvtx_live_begin(void)
{
    ct_tls_guard = 1;
    /* Registered after the shim's own atexit (it ran before recording went
     * on), so it runs first, while the trace is still open. */
    if (__builtin_expect(!atomic_load_explicit(&g_exit_hook, memory_order_relaxed), 0) &&
        !atomic_exchange(&g_exit_hook, 1))
        atexit(nvtx_atexit);
    if (__builtin_expect(ct_thread_names_waiting(), 0))
        ct_thread_names_flush();
}

void ct_nvtx_anomaly(enum anomaly k)
{
    if (atomic_fetch_add_explicit(&g_anomalies[k], 1, memory_order_relaxed) == 0 && rec_begin()) {
        ct_emit_error(an_what[k], (int64_t)k);
        rec_end();
    }
}

void ct_nvtx_count(enum anomaly k)
{
    atomic_fetch_add_explicit(&g_anomalies[k], 1, memory_order_relaxed);
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

void ct_nvtx_mark(uint32_t d, struct msg m)
{
    CT_ERRNO_SAVE;
    if (rec_begin()) {
        uint64_t f[CT_MARK_NFIELDS];
        f[CT_MARK_TIME] = ct_clock_now();
        f[CT_MARK_DOMAIN] = ct_nvtx_domain_sid(d);
        f[CT_MARK_MESSAGE] = ct_nvtx_msg_sid(m);
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
int ct_nvtx_range_push(uint32_t d, struct msg m)
{
    CT_ERRNO_SAVE;
    struct stack *s = &tls_stack;
    int32_t level = next_level(s, d);
    if (s->n == NVTX_STACK) {
        level += (int32_t)s->overflow++;
        ct_nvtx_anomaly(AN_PUSH_OVERFLOW);
    } else {
        struct frame *f = &s->f[s->n++];
        f->domain = d;
        f->level = level;
        f->recorded = 0;
        if (rec_begin()) {
            f->msg = ct_nvtx_msg_sid(m);
            f->recorded = 1;
            f->t0 = ct_clock_now(); /* last: our own work is outside the range */
            rec_end();
        }
    }
    CT_ERRNO_RESTORE;
    return level;
}

/* Returns the ended range's level, or -1 when d has no open range here. */
int ct_nvtx_range_pop(uint32_t d)
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
            ct_nvtx_anomaly(AN_POP_UNMATCHED);
        } else {
            struct frame f = s->f[i - 1];
            /* Ranges of other domains opened since stay open, in order. */
            memmove(&s->f[i - 1], &s->f[i], (s->n - i) * sizeof(f));
            s->n--;
            level = f.level;
            if (f.recorded && rec_begin()) {
                emit_range(f.t0, t1, ct_nvtx_domain_sid(f.domain), f.msg, (uint64_t)f.level + 1);
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
    uint32_t dom = ct_nvtx_domain_sid(d), msg = ct_nvtx_msg_sid(m);
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
    ct_nvtx_anomaly(AN_START_UNTRACKED);
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
    ct_nvtx_anomaly(AN_END_UNMATCHED);
    CT_ERRNO_RESTORE;
}

/* ---- NVTX handlers ---- */

static void h_mark_ex(const nvtxEventAttributes_t *a)
{
    ct_nvtx_mark(DOMAIN_DEFAULT, msg_attr(a));
}
static void h_mark_a(const char *s)
{
    ct_nvtx_mark(DOMAIN_DEFAULT, msg_ascii(s));
}
static void h_mark_w(const wchar_t *s)
{
    ct_nvtx_mark(DOMAIN_DEFAULT, msg_wide(s));
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
    return ct_nvtx_range_push(DOMAIN_DEFAULT, msg_attr(a));
}
static int h_push_a(const char *s)
{
    return ct_nvtx_range_push(DOMAIN_DEFAULT, msg_ascii(s));
}
static int h_push_w(const wchar_t *s)
{
    return ct_nvtx_range_push(DOMAIN_DEFAULT, msg_wide(s));
}
static int h_pop(void)
{
    return ct_nvtx_range_pop(DOMAIN_DEFAULT);
}

static void h_name_thread_a(uint32_t tid, const char *name)
{
    CT_ERRNO_SAVE;
    if (name)
        ct_thread_named(tid, "name", name, strlen(name), 1);
    CT_ERRNO_RESTORE;
}

static void h_name_thread_w(uint32_t tid, const wchar_t *name)
{
    CT_ERRNO_SAVE;
    char buf[NVTX_WIDE];
    if (name)
        ct_thread_named(tid, "name", buf, ct_nvtx_utf8_from_wide(buf, sizeof(buf), name), 1);
    CT_ERRNO_RESTORE;
}

static void h_dmark(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    ct_nvtx_mark(ct_nvtx_domain_index(d), msg_attr(a));
}
static nvtxRangeId_t h_dstart(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    return range_start(ct_nvtx_domain_index(d), msg_attr(a));
}
static void h_dend(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
    (void)d; /* ids are unique in the process */
    range_end(id);
}
static int h_dpush(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    return ct_nvtx_range_push(ct_nvtx_domain_index(d), msg_attr(a));
}
static int h_dpop(nvtxDomainHandle_t d)
{
    return ct_nvtx_range_pop(ct_nvtx_domain_index(d));
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
    {NVTX_CBID_CORE2_DomainRegisterStringA, FN(ct_nvtx_register_a)},
    {NVTX_CBID_CORE2_DomainRegisterStringW, FN(ct_nvtx_register_w)},
    {NVTX_CBID_CORE2_DomainCreateA, FN(ct_nvtx_domain_create_a)},
    {NVTX_CBID_CORE2_DomainCreateW, FN(ct_nvtx_domain_create_w)},
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

/* ---- lifecycle hooks (shim/nvtx.h) ---- */

void ct_nvtx_started(void)
{
    if (!ct_shim_live())
        return;
    int guard = ct_tls_guard;
    ct_nvtx_live_begin();
    ct_tls_guard = guard;
}

void ct_nvtx_finish(void)
{
    if (!ct_shim_live() || atomic_exchange(&g_finished, 1))
        return;
    int guard = ct_tls_guard;
    ct_tls_guard = 1;
    ct_thread_names_flush();
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
