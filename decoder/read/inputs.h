/* Expands command-line operands (files and directories) into trace paths. */
#ifndef CT_INPUTS_H
#define CT_INPUTS_H

#include <stddef.h>

struct ct_inputs {
    char **paths;
    size_t n, cap;
};

/*
 * Adds each operand: a file as is, a directory as every *.cutrace and
 * *.ctsum (summary) under it (recursively, sorted). Returns 0, or a
 * negative errno with err naming the operand that does not exist or cannot
 * be read.
 */
int ct_inputs_expand(struct ct_inputs *in, char *const *args, int nargs, char *err, size_t errlen);
void ct_inputs_free(struct ct_inputs *in);

/* Appends a copy of path. 0 or -ENOMEM. */
int ct_inputs_add(struct ct_inputs *in, const char *path);
/* Sorts paths [first, n) by name. */
void ct_inputs_sort(struct ct_inputs *in, size_t first);
/* 1 when s ends with suffix. */
int ct_ends_with(const char *s, const char *suffix);

/*
 * Calls fn(ctx, path, name) for every regular file under dir (recursively,
 * 16 levels at most, names starting with '.' skipped); stops at fn's first
 * nonzero return and returns it. A directory that cannot be read gives its
 * negative errno, with err naming it.
 */
typedef int (*ct_walk_fn)(void *ctx, const char *path, const char *name);
int ct_inputs_walk(const char *dir, ct_walk_fn fn, void *ctx, char *err, size_t errlen);

#endif
