/* /proc parsers of the health sampler (contracts in health_proc.h). */
#include "shim/health_proc.h"

#include <errno.h>
#include <string.h>

/* Reads a decimal integer at *p, moving *p past it. 0, or -EINVAL. */
static int read_u64(const char **p, uint64_t *out)
{
    const char *s = *p;
    if (*s < '0' || *s > '9')
        return -EINVAL;
    uint64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (v > (UINT64_MAX - 9) / 10)
            return -EINVAL;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *p = s;
    *out = v;
    return 0;
}

int ct_proc_parse_stat(const char *buf, uint64_t *utime, uint64_t *stime, uint64_t *majflt)
{
    const char *p = strrchr(buf, ')');
    if (!p)
        return -EINVAL;
    p++;
    /* after the name: field 3 (state) is the first; we want 12, 14, 15 */
    uint64_t v[16] = {0};
    for (int field = 3; field <= 15; field++) {
        while (*p == ' ')
            p++;
        if (!*p)
            return -EINVAL;
        if (field == 3) { /* the state letter */
            while (*p && *p != ' ')
                p++;
            continue;
        }
        if (*p == '-') /* tty_nr and friends may be negative: skip the sign */
            p++;
        if (read_u64(&p, &v[field]) != 0)
            return -EINVAL;
    }
    *majflt = v[12];
    *utime = v[14];
    *stime = v[15];
    return 0;
}

int ct_proc_parse_psi_some_avg10(const char *buf, int64_t *centi_pct)
{
    const char *line = buf;
    while (line && strncmp(line, "some ", 5) != 0) {
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    if (!line)
        return -EINVAL;
    const char *eol = strchr(line, '\n');
    const char *p = strstr(line, "avg10=");
    if (!p || (eol && p > eol))
        return -EINVAL;
    p += 6;
    uint64_t whole, frac = 0;
    if (read_u64(&p, &whole) != 0)
        return -EINVAL;
    if (*p == '.') {
        p++;
        const char *f0 = p;
        uint64_t raw;
        if (read_u64(&p, &raw) != 0)
            return -EINVAL;
        /* two decimals as the kernel prints them; tolerate one or more */
        size_t nd = (size_t)(p - f0);
        if (nd == 1)
            frac = raw * 10;
        else {
            frac = raw;
            for (size_t i = 2; i < nd; i++)
                frac /= 10;
        }
    }
    if (whole > 100)
        return -EINVAL;
    *centi_pct = (int64_t)(whole * 100 + frac);
    return 0;
}

int ct_proc_parse_loadavg_running(const char *buf, int64_t *running)
{
    const char *p = buf;
    for (int field = 1; field <= 3; field++) {
        while (*p == ' ')
            p++;
        while (*p && *p != ' ')
            p++;
    }
    while (*p == ' ')
        p++;
    uint64_t r, total;
    if (read_u64(&p, &r) != 0 || *p != '/')
        return -EINVAL;
    p++;
    if (read_u64(&p, &total) != 0 || r > total)
        return -EINVAL;
    *running = (int64_t)r;
    return 0;
}
