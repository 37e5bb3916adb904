/*
 * Which operands are PyTorch profiler (Kineto) traces, and their expansion
 * into input paths: a *.json or *.json.gz file, or a folder holding such
 * files and no *.cutrace (decoder/kineto/kineto.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "decoder/kineto/kineto_int.h"

int ct_kineto_is_path(const char *path)
{
    return ct_ends_with(path, ".json") || ct_ends_with(path, ".json.gz");
}

/* Counts *.cutrace and Kineto files under a directory; adds the Kineto ones
 * to `in` when it is not NULL. */
struct census {
    struct ct_inputs *in;
    size_t ncut, nkin;
};

static int count_file(void *ctx, const char *path, const char *name)
{
    struct census *c = ctx;
    if (ct_ends_with(name, ".cutrace")) {
        c->ncut++;
    } else if (ct_kineto_is_path(name)) {
        c->nkin++;
        if (c->in)
            return ct_inputs_add(c->in, path);
    }
    return 0;
}

int ct_kineto_operand(const char *operand)
{
    struct stat st;
    if (stat(operand, &st) != 0)
        return 0;
    if (!S_ISDIR(st.st_mode))
        return ct_kineto_is_path(operand);
    struct census c = {NULL, 0, 0};
    char err[64];
    if (ct_inputs_walk(operand, count_file, &c, err, sizeof(err)))
        return 0;
    return c.ncut == 0 && c.nkin > 0;
}

int ct_kineto_expand(struct ct_inputs *in, const char *operand, char *err, size_t errlen)
{
    struct stat st;
    if (stat(operand, &st) != 0) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", operand, strerror(e));
        return -e;
    }
    if (!S_ISDIR(st.st_mode)) {
        int rc = ct_inputs_add(in, operand);
        if (rc)
            snprintf(err, errlen, "out of memory");
        return rc;
    }
    size_t first = in->n;
    struct census c = {in, 0, 0};
    int rc = ct_inputs_walk(operand, count_file, &c, err, errlen);
    if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    if (rc)
        return rc;
    ct_inputs_sort(in, first);
    return 0;
}
