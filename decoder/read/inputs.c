/* Operand expansion: files pass through, directories contribute *.cutrace. */
#include "decoder/read/inputs.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int ct_inputs_add(struct ct_inputs *in, const char *p)
{
    if (in->n == in->cap) {
        size_t cap = in->cap ? in->cap * 2 : 16;
        char **np = realloc(in->paths, cap * sizeof(*np));
        if (!np)
            return -ENOMEM;
        in->paths = np;
        in->cap = cap;
    }
    in->paths[in->n] = strdup(p);
    if (!in->paths[in->n])
        return -ENOMEM;
    in->n++;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void ct_inputs_sort(struct ct_inputs *in, size_t first)
{
    if (in->n - first > 1)
        qsort(in->paths + first, in->n - first, sizeof(char *), cmp_str);
}

int ct_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int walk(const char *dir, int depth, ct_walk_fn fn, void *ctx, char *err, size_t errlen)
{
    if (depth > 16)
        return 0; /* symlink loops or absurd nesting */
    DIR *d = opendir(dir);
    if (!d) {
        int e = errno;
        snprintf(err, errlen, "%s: cannot read directory: %s", dir, strerror(e));
        return -e;
    }
    struct dirent *de;
    int rc = 0;
    while (!rc && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        size_t len = strlen(dir) + strlen(de->d_name) + 2;
        char *p = malloc(len);
        if (!p) {
            rc = -ENOMEM;
            break;
        }
        snprintf(p, len, "%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(p, &st) == 0) {
            if (S_ISDIR(st.st_mode))
                rc = walk(p, depth + 1, fn, ctx, err, errlen);
            else if (S_ISREG(st.st_mode))
                rc = fn(ctx, p, de->d_name);
        }
        free(p);
    }
    closedir(d);
    return rc;
}

int ct_inputs_walk(const char *dir, ct_walk_fn fn, void *ctx, char *err, size_t errlen)
{
    return walk(dir, 0, fn, ctx, err, errlen);
}

/* Traces, and the per-rank summaries `cutrace summarize` makes of them
 * (decoder/read/summary.h): either stands for a trace. */
static int add_trace(void *ctx, const char *path, const char *name)
{
    return ct_ends_with(name, ".cutrace") || ct_ends_with(name, ".ctsum") ? ct_inputs_add(ctx, path)
                                                                          : 0;
}

int ct_inputs_expand(struct ct_inputs *in, char *const *args, int nargs, char *err, size_t errlen)
{
    for (int i = 0; i < nargs; i++) {
        struct stat st;
        if (stat(args[i], &st) != 0) {
            int e = errno;
            snprintf(err, errlen, "%s: %s", args[i], strerror(e));
            return -e;
        }
        int rc;
        if (S_ISDIR(st.st_mode)) {
            size_t before = in->n;
            rc = ct_inputs_walk(args[i], add_trace, in, err, errlen);
            ct_inputs_sort(in, before);
            if (!rc && in->n == before) {
                snprintf(err, errlen, "%s: directory holds no *.cutrace files", args[i]);
                rc = -ENOENT;
            }
        } else {
            rc = ct_inputs_add(in, args[i]);
        }
        if (rc) {
            if (rc == -ENOMEM)
                snprintf(err, errlen, "out of memory");
            return rc;
        }
    }
    return 0;
}

void ct_inputs_free(struct ct_inputs *in)
{
    for (size_t i = 0; i < in->n; i++)
        free(in->paths[i]);
    free(in->paths);
    memset(in, 0, sizeof(*in));
}
