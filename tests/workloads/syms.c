/*
 * The wrap table's rows with the addresses this program links against, kept
 * in a file without cuda.h so that its renaming macros cannot bend the names
 * (same technique as shim/cuda_table.c).
 */
#include "tests/workloads/syms.h"

#include <string.h>

#define CT_SYM(exported, base, ver, pt) extern void exported(void);
#include "shim/cuda_syms.h"
#undef CT_SYM

const struct w_sym w_syms[] = {
#define CT_SYM(exported, base, ver, pt) {#exported, #base, ver, pt, exported},
#include "shim/cuda_syms.h"
#undef CT_SYM
    {NULL, NULL, 0, 0, NULL},
};

const struct w_sym *w_sym_find(const char *exported)
{
    for (const struct w_sym *s = w_syms; s->exported; s++)
        if (strcmp(s->exported, exported) == 0)
            return s;
    return NULL;
}
