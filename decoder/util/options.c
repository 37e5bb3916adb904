/* Every command's options in one table, the shared ones parsed once
 * (decoder/util/options.h); and the values options take. */
#include "decoder/util/options.h"
#include "decoder/util/comm_kernels.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMD(x) (1u << CT_CMD_##x)
#define ALL    ((1u << CT_NCMDS) - 1)

/* Every command's options, once: the shared ones first. Codes may repeat
 * across commands that never take both (diff's --seed and the others'
 * --step are 's'; summarize's -j is not --json). */
static const struct {
    const char *name;
    int has_arg, code;
    unsigned cmds;
    int shared; /* parsed by ct_shared_opt */
} defs[] = {
    {"json", no_argument, 'j',
     CMD(DUMP) | CMD(REPORT) | CMD(DIFF) | CMD(DIAGNOSE) | CMD(GOODPUT) | CMD(CRITICAL_PATH) |
         CMD(FLEET),
     1},
    {"output", required_argument, 'o',
     CMD(REPORT) | CMD(EXPORT) | CMD(DIFF) | CMD(DIAGNOSE) | CMD(SUMMARIZE) | CMD(GOODPUT) |
         CMD(CRITICAL_PATH) | CMD(RUN) | CMD(CONTROL) | CMD(FLEET),
     1},
    {"rows", required_argument, 'R', CMD(REPORT) | CMD(DIFF) | CMD(DIAGNOSE) | CMD(FLEET), 1},
    {"skip", required_argument, 'k', CMD(REPORT) | CMD(DIFF) | CMD(DIAGNOSE) | CMD(CRITICAL_PATH),
     1},
    {"step", required_argument, 's',
     CMD(REPORT) | CMD(EXPORT) | CMD(SUMMARIZE) | CMD(GOODPUT) | CMD(CRITICAL_PATH), 1},
    {"run", required_argument, 'U',
     CMD(REPORT) | CMD(EXPORT) | CMD(DIAGNOSE) | CMD(GOODPUT) | CMD(CRITICAL_PATH), 1},
    {"job", required_argument, 'J', CMD(GOODPUT), 1},
    {"comm-kernels", required_argument, 'K',
     CMD(REPORT) | CMD(EXPORT) | CMD(DIFF) | CMD(DIAGNOSE) | CMD(SUMMARIZE) | CMD(GOODPUT) |
         CMD(CRITICAL_PATH),
     1},
    {"help", no_argument, 'h', ALL, 0},
    /* report */
    {"steps", required_argument, 'S', CMD(REPORT), 0},
    {"hta", no_argument, 'H', CMD(REPORT), 0},
    {"no-hta", no_argument, 'N', CMD(REPORT), 0},
    {"html", no_argument, 'T', CMD(REPORT) | CMD(FLEET), 0},
    {"rank-iterations", no_argument, 'I', CMD(REPORT), 0},
    {"no-critical-path", no_argument, 'P', CMD(REPORT), 0},
    /* diff, fleet */
    {"by", required_argument, 'b', CMD(DIFF) | CMD(FLEET), 0},
    {"min-effect", required_argument, 'm', CMD(DIFF) | CMD(FLEET), 0},
    {"seed", required_argument, 's', CMD(DIFF) | CMD(FLEET), 0},
    {"reps", required_argument, 'r', CMD(DIFF), 0},
    {"alpha", required_argument, 'a', CMD(DIFF) | CMD(FLEET), 0},
    {"primary", required_argument, 'P', CMD(DIFF), 0},
    /* diagnose */
    {"min-saving", required_argument, 'm', CMD(DIAGNOSE), 0},
    /* critical-path, whatif, export */
    {"top", required_argument, 't', CMD(CRITICAL_PATH), 0},
    {"scale", required_argument, 'x', CMD(CRITICAL_PATH), 0},
    {"iterations", required_argument, 'i', CMD(CRITICAL_PATH) | CMD(EXPORT), 0},
    {"format", required_argument, 'f', CMD(EXPORT), 0},
    {"ranks", required_argument, 'r', CMD(EXPORT), 0},
    {"window", required_argument, 'w', CMD(EXPORT), 0},
    {"critical-path", no_argument, 'c', CMD(EXPORT), 0},
    {"max-size", required_argument, 'M', CMD(EXPORT), 0},
    {"nccl-proxy", no_argument, 'p', CMD(EXPORT), 0},
    /* run */
    {"buffer-kb", required_argument, 'b', CMD(RUN), 0},
    {"flush-ms", required_argument, 'f', CMD(RUN), 0},
    {"zstd-level", required_argument, 'z', CMD(RUN), 0},
    {"gpu-timing", required_argument, 'g', CMD(RUN), 0},
    {"tag", required_argument, 't', CMD(RUN), 0},
    /* fleet */
    {"db", required_argument, 'D', CMD(FLEET) | CMD(FLEET_ADD), 0},
    {"since", required_argument, 'S', CMD(FLEET), 0},
    {"until", required_argument, 'U', CMD(FLEET), 0},
    {"workload", required_argument, 'W', CMD(FLEET), 0},
    {"min-jobs", required_argument, 'n', CMD(FLEET), 0},
    {"quiet", no_argument, 'q', CMD(FLEET_ADD), 0},
};
#define NDEFS (sizeof(defs) / sizeof(defs[0]))

const struct option *ct_options_of(enum ct_cmd_id cmd)
{
    static struct option tab[CT_NCMDS][NDEFS + 1];
    static int built[CT_NCMDS];
    if (!built[cmd]) {
        size_t n = 0;
        for (size_t i = 0; i < NDEFS; i++)
            if (defs[i].cmds & (1u << cmd))
                tab[cmd][n++] = (struct option){defs[i].name, defs[i].has_arg, NULL, defs[i].code};
        tab[cmd][n] = (struct option){NULL, 0, NULL, 0};
        built[cmd] = 1;
    }
    return tab[cmd];
}

void ct_bad_option(enum ct_cmd_id cmd, const char *name, const char *arg)
{
    fprintf(stderr, "%s: unknown or incomplete option '%s'; allowed:", name, arg);
    const char *sep = " ";
    for (size_t i = 0; i < NDEFS; i++)
        if (((defs[i].cmds >> cmd) & 1) && strcmp(defs[i].name, "help") != 0) {
            fprintf(stderr, "%s--%s%s", sep, defs[i].name,
                    defs[i].has_arg == required_argument ? " VALUE" : "");
            sep = ", ";
        }
    fprintf(stderr, "%s(see '%s --help')\n", *sep == ',' ? " " : " none ", name);
}

/* Whether command cmd takes the shared option of code c. */
static int takes(enum ct_cmd_id cmd, int c)
{
    for (size_t i = 0; i < NDEFS; i++)
        if (defs[i].shared && defs[i].code == c && ((defs[i].cmds >> cmd) & 1))
            return 1;
    return 0;
}

int ct_shared_opt(enum ct_cmd_id cmd, const char *name, int c, const char *arg,
                  struct ct_shared_opts *o)
{
    if (!takes(cmd, c))
        return 0; /* the command's own option (--help too) */
    char *end;
    switch (c) {
    case 'j': o->json = 1; return 1;
    case 'o': o->out = arg; return 1;
    case 'R': o->rows = arg; return 1;
    case 'U': o->run = arg; return 1;
    case 'J': o->job = arg; return 1;
    case 'K': {
        char err[512] = "";
        int rc = ct_comm_kernels_load(arg, err, sizeof(err));
        if (rc) {
            fprintf(stderr, "%s: --comm-kernels %s\n", name, rc == -ENOMEM ? "out of memory" : err);
            return -1;
        }
        o->comm_kernels = arg;
        return 1;
    }
    case 's':
        if (!*arg) {
            fprintf(stderr, "%s: --step: expected a range or mark name, e.g. --step ProfilerStep\n",
                    name);
            return -1;
        }
        o->step = arg;
        return 1;
    case 'k':
        o->skip = strtol(arg, &end, 10);
        if (*end || !*arg || o->skip < 0) {
            fprintf(stderr, "%s: --skip '%s': expected an integer >= 0\n", name, arg);
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

int ct_parse_index_range(const char *s, int64_t *first, int64_t *last)
{
    const char *dash = strchr(s, '-');
    if (!dash || strchr(dash + 1, '-'))
        return -1;
    char *end;
    int64_t a = 0, b = -1;
    if (dash != s) {
        a = strtoll(s, &end, 10);
        if (end != dash || a < 0)
            return -1;
    }
    if (dash[1]) {
        b = strtoll(dash + 1, &end, 10);
        if (*end || b < a)
            return -1;
    }
    *first = a;
    *last = b;
    return 0;
}

int ct_parse_window_us(const char *s, double *start, double *end)
{
    char *p, *q;
    double a = strtod(s, &p);
    if (p == s || *p != '-' || !isfinite(a))
        return -1;
    double b = strtod(p + 1, &q);
    if (q == p + 1 || *q || !isfinite(b) || b <= a)
        return -1;
    *start = a;
    *end = b;
    return 0;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int ct_parse_rank_list(const char *s, int **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    size_t cap = 0, k = 0;
    int *v = NULL;
    const char *p = s;
    if (!*p)
        return -1;
    while (*p) {
        char *e;
        long a = strtol(p, &e, 10), b;
        if (e == p || a < 0 || a > 1 << 30)
            goto bad;
        b = a;
        if (*e == '-') {
            const char *q = e + 1;
            b = strtol(q, &e, 10);
            if (e == q || b < a || b > 1 << 30)
                goto bad;
        }
        if (*e && *e != ',')
            goto bad;
        for (long r = a; r <= b; r++) {
            if (k == cap) {
                size_t nc = cap ? cap * 2 : 16;
                int *g = realloc(v, nc * sizeof(*g));
                if (!g) {
                    free(v);
                    return -ENOMEM;
                }
                v = g;
                cap = nc;
            }
            v[k++] = (int)r;
        }
        p = *e ? e + 1 : e;
        if (*e == ',' && !*p)
            goto bad;
    }
    qsort(v, k, sizeof(*v), cmp_int);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (!u || v[u - 1] != v[i])
            v[u++] = v[i];
    *out = v;
    *n = u;
    return 0;
bad:
    free(v);
    return -1;
}
