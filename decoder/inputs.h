/* Expands command-line operands (files and directories) into trace paths. */
#ifndef CT_INPUTS_H
#define CT_INPUTS_H

#include <stddef.h>

struct ct_inputs {
    char **paths;
    size_t n, cap;
};

/*
 * Adds each operand: a file as is, a directory as every *.cutrace under it
 * (recursively, sorted). Returns 0, or a negative errno with err naming the
 * operand that does not exist or cannot be read.
 */
int ct_inputs_expand(struct ct_inputs *in, char *const *args, int nargs, char *err, size_t errlen);
void ct_inputs_free(struct ct_inputs *in);

#endif
