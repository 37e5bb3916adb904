/* Secrets kept out of traces (rules in src/redact.h). */
#include "src/redact.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

/* needle (lower case) in hay[0..len), ignoring case */
static int has_word(const char *hay, size_t len, const char *needle, size_t nlen)
{
    if (!nlen || nlen > len)
        return 0;
    for (size_t i = 0; i + nlen <= len; i++) {
        size_t k = 0;
        while (k < nlen && tolower((unsigned char)hay[i + k]) == tolower((unsigned char)needle[k]))
            k++;
        if (k == nlen)
            return 1;
    }
    return 0;
}

int ct_redact_name(const char *name, size_t len, const char *extra)
{
    static const char *const words[] = {"token",  "key",        "secret", "password",
                                        "passwd", "credential", "auth"};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (has_word(name, len, words[i], strlen(words[i])))
            return 1;
    for (const char *p = extra; p && *p;) {
        const char *end = strchr(p, ',');
        size_t plen = end ? (size_t)(end - p) : strlen(p);
        if (has_word(name, len, p, plen))
            return 1;
        p = end ? end + 1 : p + plen;
    }
    return 0;
}

/* Output with a bound: what does not fit is cut (always terminated). */
struct out {
    char *p;
    size_t n, used;
};

static void put(struct out *o, const char *s, size_t len)
{
    for (size_t i = 0; i < len && o->used + 1 < o->n; i++)
        o->p[o->used++] = s[i];
    if (o->n)
        o->p[o->used] = 0;
}

static void puts_(struct out *o, const char *s)
{
    put(o, s, strlen(s));
}

static int tok_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '+' || c == '=';
}

/* 1 when the run s[0..len) of token characters (dots allowed for JWTs)
 * looks like a credential. */
static int token_like(const char *s, size_t len)
{
    static const char *const prefix[] = {"ghp_",        "gho_",   "ghu_",  "ghs_",  "ghr_",
                                         "github_pat_", "glpat-", "xoxb-", "xoxp-", "xoxa-",
                                         "xoxs-",       "hf_",    "sk-",   "AKIA",  "ASIA"};
    if (len >= 20 && !strncmp(s, "eyJ", 3)) { /* a JWT: header.payload.signature */
        int dots = 0;
        for (size_t i = 0; i < len; i++)
            dots += s[i] == '.';
        if (dots >= 2)
            return 1;
    }
    if (memchr(s, '.', len))
        return 0;
    for (size_t i = 0; i < sizeof(prefix) / sizeof(prefix[0]); i++) {
        size_t pl = strlen(prefix[i]);
        if (len >= pl + 16 && !strncmp(s, prefix[i], pl))
            return 1;
    }
    if (len < 32)
        return 0;
    int up = 0, low = 0, dig = 0;
    for (size_t i = 0; i < len; i++) {
        up |= isupper((unsigned char)s[i]) != 0;
        low |= islower((unsigned char)s[i]) != 0;
        dig |= isdigit((unsigned char)s[i]) != 0;
    }
    return up && low && dig;
}

/* The end of a URL's authority that starts at s (after "://"). */
static size_t authority_len(const char *s)
{
    size_t i = 0;
    while (s[i] && s[i] != '/' && s[i] != '?' && s[i] != '#' && !isspace((unsigned char)s[i]))
        i++;
    return i;
}

static void value_into(const char *s, struct out *o)
{
    size_t i = 0;
    while (s[i]) {
        if (!strncmp(s + i, "://", 3)) {
            put(o, "://", 3);
            i += 3;
            size_t a = authority_len(s + i), at = a;
            while (at > 0 && s[i + at - 1] != '@')
                at--;
            const char *colon = at ? memchr(s + i, ':', at - 1) : NULL;
            if (colon) { /* user:password@ */
                put(o, s + i, (size_t)(colon - (s + i)) + 1);
                puts_(o, CT_REDACTED);
                i += at - 1; /* from the '@' */
            }
            continue;
        }
        if (!strncasecmp(s + i, "bearer ", 7)) {
            put(o, s + i, 7);
            i += 7;
            size_t k = i;
            while (s[k] && !isspace((unsigned char)s[k]))
                k++;
            if (k > i)
                puts_(o, CT_REDACTED);
            i = k;
            continue;
        }
        /* a run starts at a letter or digit after none (an option's dashes
         * and a name's '=' are not part of the token after them) */
        if (isalnum((unsigned char)s[i]) &&
            (i == 0 || !(isalnum((unsigned char)s[i - 1]) || s[i - 1] == '_'))) {
            size_t k = i;
            while (s[k] && (tok_char(s[k]) || s[k] == '.'))
                k++;
            while (k > i && s[k - 1] == '.') /* a sentence's full stop */
                k--;
            if (token_like(s + i, k - i)) {
                puts_(o, CT_REDACTED);
                i = k;
                continue;
            }
        }
        put(o, s + i, 1);
        i++;
    }
}

void ct_redact_value(const char *s, char *out, size_t n)
{
    struct out o = {out, n, 0};
    if (n)
        out[0] = 0;
    value_into(s, &o);
}

void ct_redact_cmdline(const char *args, size_t len, const char *extra, char *out, size_t n)
{
    struct out o = {out, n, 0};
    if (n)
        out[0] = 0;
    int hide_next = 0, first = 1;
    for (size_t at = 0; at < len;) {
        const char *a = args + at;
        size_t alen = strnlen(a, len - at);
        at += alen + 1;
        char arg[4096]; /* one argument, terminated */
        size_t cut = alen < sizeof(arg) - 1 ? alen : sizeof(arg) - 1;
        memcpy(arg, a, cut);
        arg[cut] = 0;
        if (!first)
            put(&o, " ", 1);
        first = 0;
        if (hide_next) { /* the value of `--password VALUE` */
            hide_next = 0;
            puts_(&o, CT_REDACTED);
            continue;
        }
        const char *name = arg;
        while (*name == '-')
            name++;
        const char *eq = strchr(name, '=');
        if (eq && eq > name && ct_redact_name(name, (size_t)(eq - name), extra)) {
            put(&o, arg, (size_t)(eq - arg) + 1);
            puts_(&o, CT_REDACTED);
            continue;
        }
        if (!eq && name > arg && *name && ct_redact_name(name, strlen(name), extra))
            hide_next = 1;     /* the option is kept, its value goes */
        if (eq && eq > name) { /* the name as it is, the value scrubbed */
            put(&o, arg, (size_t)(eq - arg) + 1);
            value_into(eq + 1, &o);
        } else {
            value_into(arg, &o);
        }
    }
}
