/* Operand expansion: files pass through, directories contribute *.cutrace. */
#include "decoder/inputs.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int add_path(struct ct_inputs *in, const char *p)
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

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int add_dir(struct ct_inputs *in, const char *dir, int depth, char *err, size_t errlen)
{
    if (depth > 16)
        return 0; /* symlink loops or absurd nesting */
    DIR *d = opendir(dir);
    if (!d) {
        int e = errno;
        snprintf(err, errlen, "%s: cannot read directory: %s", dir, strerror(e));
        return -e;
    }
    size_t first = in->n;
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
                rc = add_dir(in, p, depth + 1, err, errlen);
            else if (S_ISREG(st.st_mode) && ends_with(de->d_name, ".cutrace"))
                rc = add_path(in, p);
        }
        free(p);
    }
    closedir(d);
    if (!rc && in->n - first > 1)
        qsort(in->paths + first, in->n - first, sizeof(char *), cmp_str);
    return rc;
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
            rc = add_dir(in, args[i], 0, err, errlen);
            if (!rc && in->n == before) {
                snprintf(err, errlen, "%s: directory holds no *.cutrace files", args[i]);
                rc = -ENOENT;
            }
        } else {
            rc = add_path(in, args[i]);
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
