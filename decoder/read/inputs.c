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
    struct stat st;
    if (stat(p, &st) != 0)
        return -errno;
    for (size_t i = 0; i < in->n; i++) {
        if (in->keys[i].dev != st.st_dev || in->keys[i].ino != st.st_ino)
            continue;
        if (!in->ndup++)
            snprintf(in->dup_note, sizeof(in->dup_note), "%.240s is the same file as %.240s", p,
                     in->paths[i]);
        return 0;
    }
    if (in->n == in->cap) {
        size_t cap = in->cap ? in->cap * 2 : 16;
        char **np = realloc(in->paths, cap * sizeof(*np));
        if (!np)
            return -ENOMEM;
        in->paths = np;
        struct ct_input_key *nk = realloc(in->keys, cap * sizeof(*nk));
        if (!nk)
            return -ENOMEM;
        in->keys = nk;
        in->cap = cap;
    }
    in->paths[in->n] = strdup(p);
    if (!in->paths[in->n])
        return -ENOMEM;
    in->keys[in->n] = (struct ct_input_key){st.st_dev, st.st_ino};
    in->n++;
    return 0;
}

void ct_inputs_keep(struct ct_inputs *in, const unsigned char *keep)
{
    size_t w = 0;
    for (size_t i = 0; i < in->n; i++) {
        if (!keep[i]) {
            free(in->paths[i]);
            continue;
        }
        in->paths[w] = in->paths[i];
        in->keys[w++] = in->keys[i];
    }
    in->n = w;
}

int ct_operand_check(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))
        return 0;
    snprintf(err, errlen, "%s: is a %s, not a trace file or a folder of traces", path,
             S_ISFIFO(st.st_mode)   ? "FIFO"
             : S_ISCHR(st.st_mode)  ? "character device"
             : S_ISBLK(st.st_mode)  ? "block device"
             : S_ISSOCK(st.st_mode) ? "socket"
                                    : "special file");
    return -EINVAL;
}

struct by_name {
    char *path;
    struct ct_input_key key;
};

static int cmp_name(const void *a, const void *b)
{
    return strcmp(((const struct by_name *)a)->path, ((const struct by_name *)b)->path);
}

void ct_inputs_sort(struct ct_inputs *in, size_t first)
{
    size_t n = in->n - first;
    if (n < 2)
        return;
    struct by_name *v = malloc(n * sizeof(*v));
    if (!v) { /* the paths alone, in place: the keys are then only for duplicates */
        return;
    }
    for (size_t i = 0; i < n; i++)
        v[i] = (struct by_name){in->paths[first + i], in->keys[first + i]};
    qsort(v, n, sizeof(*v), cmp_name);
    for (size_t i = 0; i < n; i++) {
        in->paths[first + i] = v[i].path;
        in->keys[first + i] = v[i].key;
    }
    free(v);
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
        int rc = ct_operand_check(args[i], err, errlen);
        if (rc)
            return rc;
        if (stat(args[i], &st) != 0) {
            int e = errno;
            snprintf(err, errlen, "%s: %s", args[i], strerror(e));
            return -e;
        }
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
            else if (!S_ISDIR(st.st_mode))
                snprintf(err, errlen, "%s: %s", args[i], strerror(-rc));
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
    free(in->keys);
    memset(in, 0, sizeof(*in));
}
