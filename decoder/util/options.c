/* The options report, diff and diagnose share (decoder/util/options.h). */
#include "decoder/util/options.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ct_shared_opt(const char *cmd, int c, const char *arg, struct ct_shared_opts *o)
{
    char *end;
    switch (c) {
    case 'j': o->json = 1; return 1;
    case 'o': o->out = arg; return 1;
    case 'R': o->rows = arg; return 1;
    case 'k':
        o->skip = strtol(arg, &end, 10);
        if (*end || !*arg || o->skip < 0) {
            fprintf(stderr, "%s: --skip '%s': expected an integer >= 0\n", cmd, arg);
            return -1;
        }
        return 1;
    default: return 0;
    }
}

int ct_parse_pct(const char *s, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || (*end && strcmp(end, "%")) || !isfinite(v) || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}
