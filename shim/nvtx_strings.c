/*
 * NVTX text, domains, registered strings and messages (see shim/nvtx.c):
 * UTF-8 conversion, the fixed domain table (handles point into it, names
 * interned lazily), strings registered before and after the recorder
 * started, and the string id of a message.
 *
 * Never, on a record path: take a lock, allocate, or make a syscall of our
 * own; intern strings while the recorder is not on (the string table may not
 * exist yet: text registered earlier is kept in fixed tables and interned at
 * first recorded use); call NVTX. What does not fit the fixed tables is
 * counted (recorder metadata at exit), never overflowed.
 */
#include "shim/nvtx_int.h"

#include <string.h>

/* ---- text ---- */

/* Copies at most cap-1 bytes of s (len bytes), cut at a UTF-8 character
 * boundary, NUL-terminated. Returns the bytes copied. */
size_t ct_nvtx_copy_text(char *dst, size_t cap, const char *s, size_t len)
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
size_t ct_nvtx_utf8_from_wide(char *out, size_t cap, const wchar_t *w)
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

uint32_t ct_nvtx_domain_index(nvtxDomainHandle_t h)
{
    uintptr_t p = (uintptr_t)(void *)h, base = (uintptr_t)g_domains;
    if (p < base || p >= base + sizeof(g_domains) || (p - base) % sizeof(struct domain))
        return DOMAIN_DEFAULT; /* NULL, or not ours: NVTX's default domain */
    return (uint32_t)((p - base) / sizeof(struct domain));
}

/* Recording only. */
uint32_t ct_nvtx_domain_sid(uint32_t d)
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
        ct_nvtx_anomaly(AN_DOMAINS_LOST);
        return NULL;
    }
    ct_nvtx_copy_text(g_domains[i].name, NVTX_TEXT, name, strlen(name));
    atomic_store_explicit(&g_domains[i].ready, 1, memory_order_release);
    return (nvtxDomainHandle_t)(void *)&g_domains[i];
}

nvtxDomainHandle_t ct_nvtx_domain_create_a(const char *name)
{
    CT_ERRNO_SAVE;
    char buf[NVTX_TEXT];
    ct_nvtx_copy_text(buf, sizeof(buf), name ? name : "", name ? strlen(name) : 0);
    nvtxDomainHandle_t h = domain_create(buf);
    CT_ERRNO_RESTORE;
    return h;
}

nvtxDomainHandle_t ct_nvtx_domain_create_w(const wchar_t *name)
{
    CT_ERRNO_SAVE;
    char buf[NVTX_TEXT];
    buf[ct_nvtx_utf8_from_wide(buf, sizeof(buf) - 1, name)] = 0;
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
        ct_nvtx_anomaly(AN_STRINGS_LOST);
        return (nvtxStringHandle_t)(void *)(uintptr_t)1; /* "" */
    }
    ct_nvtx_copy_text(g_early[i].text, NVTX_TEXT, s, len);
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

nvtxStringHandle_t ct_nvtx_register_a(nvtxDomainHandle_t d, const char *s)
{
    (void)d; /* ids are process-wide; the domain does not scope them here */
    CT_ERRNO_SAVE;
    nvtxStringHandle_t h = string_register(s ? s : "", s ? strlen(s) : 0);
    CT_ERRNO_RESTORE;
    return h;
}

nvtxStringHandle_t ct_nvtx_register_w(nvtxDomainHandle_t d, const wchar_t *s)
{
    (void)d;
    CT_ERRNO_SAVE;
    char buf[NVTX_WIDE];
    nvtxStringHandle_t h = string_register(buf, ct_nvtx_utf8_from_wide(buf, sizeof(buf), s));
    CT_ERRNO_RESTORE;
    return h;
}

/* Recording only: the message's string id (0 = ""). */
uint32_t ct_nvtx_msg_sid(struct msg m)
{
    switch (m.type) {
    case NVTX_MESSAGE_TYPE_ASCII: return ct_intern(m.v.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE: {
        char buf[NVTX_WIDE];
        return ct_strtab_intern(&ct_strings, buf,
                                ct_nvtx_utf8_from_wide(buf, sizeof(buf), m.v.unicode));
    }
    case NVTX_MESSAGE_TYPE_REGISTERED: return string_sid(m.v.registered);
    default: return 0;
    }
}
