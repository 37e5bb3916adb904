/*
 * Fuzz target: the CUTRACE_* environment parser and the run-tag checker.
 * The input is "NAME=VALUE" lines; the parser sees them through a getenv
 * of its own. Whatever the bytes, parsing returns 0 or -EINVAL with a
 * NUL-terminated message, and a parsed configuration stays in range.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/config.h"

#define MAX_VARS 64

static char *g_names[MAX_VARS], *g_values[MAX_VARS];
static int g_n;

static const char *fake_getenv(const char *name)
{
    const char *found = NULL;
    for (int i = 0; i < g_n; i++)
        if (strcmp(g_names[i], name) == 0)
            found = g_values[i]; /* the last one wins, as with setenv */
    return found;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    g_n = 0;
    for (char *line = text, *next; line && g_n < MAX_VARS; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        char *eq = strchr(line, '=');
        if (!eq)
            continue;
        *eq = 0;
        g_names[g_n] = line;
        g_values[g_n++] = eq + 1;
    }
    struct ct_config c;
    char err[512];
    ct_config_defaults(&c);
    memset(err, 'x', sizeof(err));
    int rc = ct_config_from_env(&c, fake_getenv, err, sizeof(err));
    if (rc != 0 && (rc != -EINVAL || memchr(err, 0, sizeof(err)) == NULL))
        abort();
    if (rc == 0 &&
        (c.buffer_kb < 64 || c.zstd_level < -7 || c.zstd_level > 19 || c.flush_ms < 1 ||
         c.flush_ms > 60000 || c.stacks < 0 || c.stacks > 2 || c.output[sizeof(c.output) - 1] != 0))
        abort();
    /* the tag checker and the integer parser on the raw text */
    char why[256];
    memset(why, 'x', sizeof(why));
    if (ct_tags_check(text, why, sizeof(why)) != 0 && memchr(why, 0, sizeof(why)) == NULL)
        abort();
    long long v;
    if (ct_parse_int(text, -1000, 1000, &v) == 0 && (v < -1000 || v > 1000))
        abort();
    free(text);
    return 0;
}
