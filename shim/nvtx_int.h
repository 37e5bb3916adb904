/*
 * Internal interface of the NVTX layer, shared by its files only:
 * shim/nvtx.c (injection, ranges and marks, what could not be recorded,
 * lifecycle hooks), shim/nvtx_strings.c (text, domains, registered strings,
 * messages), shim/nvtx_thread_name.c (thread names and their parking) and
 * shim/nvtx_user_api.c (include/cutrace/cutrace.h). The rest of the shim uses
 * shim/nvtx.h.
 *
 * Nothing declared here may, on a record path, take a lock, allocate, or make
 * a syscall of its own (the first recorded call's one-time atexit() aside);
 * intern strings while the recorder is not on; call NVTX.
 */
#ifndef CT_SHIM_NVTX_INT_H
#define CT_SHIM_NVTX_INT_H

#ifndef NVTX_NO_IMPL
#define NVTX_NO_IMPL
#endif
#include <nvtx3/nvToolsExt.h>

#include <stddef.h>
#include <stdint.h>
#include <wchar.h>

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

/* ---- what could not be recorded: counted, written at exit (nvtx.c) ---- */

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

/* Counts k; the first one of its kind is also reported as an error record
 * when recording. */
void ct_nvtx_anomaly(enum anomaly k);
/* Counts k only (no record: for callers that must not write). */
void ct_nvtx_count(enum anomaly k);

/* ---- entering and leaving a recorded NVTX call (nvtx.c) ---- */

/* Takes the guard on a thread about to write to the open trace; the first
 * time, registers the exit hook and writes the parked thread names. */
void ct_nvtx_live_begin(void);

/* 1 (guard taken) when this call is recorded. */
static inline int rec_begin(void)
{
    if (!ct_shim_recording())
        return 0;
    ct_nvtx_live_begin();
    return 1;
}

static inline void rec_end(void)
{
    ct_tls_guard = 0;
}

/* ---- text, domains, strings, messages (nvtx_strings.c) ---- */

/* Copies at most cap-1 bytes of s (len bytes), cut at a UTF-8 character
 * boundary, NUL-terminated. Returns the bytes copied. */
size_t ct_nvtx_copy_text(char *dst, size_t cap, const char *s, size_t len);

/* wchar_t (UTF-32 on Linux) to UTF-8, at most cap bytes, whole characters
 * only; invalid code points become U+FFFD. Returns the bytes written. */
size_t ct_nvtx_utf8_from_wide(char *out, size_t cap, const wchar_t *w);

/* Index in the domain table of a handle (DOMAIN_DEFAULT for NULL or not ours). */
uint32_t ct_nvtx_domain_index(nvtxDomainHandle_t h);
/* Interned name of domain d (0 for the default domain). Recording only. */
uint32_t ct_nvtx_domain_sid(uint32_t d);

/* NVTX handlers: domain creation and string registration. */
nvtxDomainHandle_t ct_nvtx_domain_create_a(const char *name);
nvtxDomainHandle_t ct_nvtx_domain_create_w(const wchar_t *name);
nvtxStringHandle_t ct_nvtx_register_a(nvtxDomainHandle_t d, const char *s);
nvtxStringHandle_t ct_nvtx_register_w(nvtxDomainHandle_t d, const wchar_t *s);

struct msg {
    int type; /* nvtxMessageType_t */
    nvtxMessageValue_t v;
};

static inline struct msg msg_attr(const nvtxEventAttributes_t *a)
{
    struct msg m = {NVTX_MESSAGE_UNKNOWN, {NULL}};
    if (a && a->size >= offsetof(nvtxEventAttributes_t, message) + sizeof(a->message)) {
        m.type = a->messageType;
        m.v = a->message;
    }
    return m;
}

static inline struct msg msg_ascii(const char *s)
{
    struct msg m = {NVTX_MESSAGE_TYPE_ASCII, {NULL}};
    m.v.ascii = s;
    return m;
}

static inline struct msg msg_wide(const wchar_t *s)
{
    struct msg m = {NVTX_MESSAGE_TYPE_UNICODE, {NULL}};
    m.v.unicode = s;
    return m;
}

/* Recording only: the message's string id (0 = ""). */
uint32_t ct_nvtx_msg_sid(struct msg m);

/* ---- ranges and marks (nvtx.c) ---- */

/* A mark in domain d (an index in the domain table). */
void ct_nvtx_mark(uint32_t d, struct msg m);
/* Returns the new range's 0-based level in its domain. */
int ct_nvtx_range_push(uint32_t d, struct msg m);
/* Returns the ended range's level, or -1 when d has no open range here. */
int ct_nvtx_range_pop(uint32_t d);

/* ---- thread names (nvtx_thread_name.c) ---- */

/*
 * A thread was named. is_event: an NVTX call, which starts the recorder like
 * any event; the libc wrappers only record when it already runs.
 */
void ct_thread_named(uint64_t scope_id, const char *key, const char *name, size_t len,
                     int is_event);
/* 1 while names set before recording wait to be written. */
int ct_thread_names_waiting(void);
/* Writes the parked names. Guard held, recording. */
void ct_thread_names_flush(void);

#endif
