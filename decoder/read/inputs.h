/* Expands command-line operands (files and directories) into trace paths. */
#ifndef CT_INPUTS_H
#define CT_INPUTS_H

#include <stddef.h>

#include <sys/types.h>

/* The file behind a path: the same trace reached twice (given twice, or a
 * folder and a file in it, or through a link) is one input. */
struct ct_input_key {
    dev_t dev;
    ino_t ino;
};

struct ct_inputs {
    char **paths;
    struct ct_input_key *keys; /* one per path */
    size_t n, cap;
    /* inputs left out as the same file as an earlier one: how many, and
     * the first such pair (for the command's note) */
    size_t ndup;
    char dup_note[512];
};

/*
 * Adds each operand: a regular file as is, a directory as every *.cutrace
 * and *.ctsum (summary) under it (recursively, sorted). Returns 0, or a
 * negative errno with err naming the operand that does not exist or cannot
 * be read; -EINVAL for an operand that is neither a regular file nor a
 * directory (a FIFO or a device would be read forever, or consumed).
 */
int ct_inputs_expand(struct ct_inputs *in, char *const *args, int nargs, char *err, size_t errlen);
void ct_inputs_free(struct ct_inputs *in);

/* Appends a copy of path, unless it is the same file as an input already
 * there (counted in ndup instead). 0, -ENOMEM, or the negative errno of a
 * path that cannot be looked at. */
int ct_inputs_add(struct ct_inputs *in, const char *path);
/* Keeps input i when keep[i] is nonzero, in order. */
void ct_inputs_keep(struct ct_inputs *in, const unsigned char *keep);
/* Checks that an operand is a regular file or a directory: 0, or a
 * negative errno with err saying what it is. */
int ct_operand_check(const char *path, char *err, size_t errlen);
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
