/* Progress lines of long commands (decoder/util/progress.h). */
#include "decoder/util/progress.h"

#include <stdio.h>
#include <time.h>

double ct_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void ct_progress_start(struct ct_progress *p, const char *cmd)
{
    p->cmd = cmd;
    p->t0 = p->last = ct_now_s();
    p->shown = 0;
}

void ct_progress_update(struct ct_progress *p, const char *what, size_t i, size_t n, double pct)
{
    double t = ct_now_s();
    if (t - p->t0 < 1.0 || t - p->last < 1.0)
        return;
    p->last = t;
    p->shown = 1;
    if (pct >= 0)
        fprintf(stderr, "\r%s: %s %zu/%zu (%3.0f%%)   ", p->cmd, what, i, n, pct);
    else
        fprintf(stderr, "\r%s: %s %zu/%zu   ", p->cmd, what, i, n);
}

void ct_progress_end(struct ct_progress *p)
{
    if (p->shown)
        fprintf(stderr, "\r%s: done in %.1f s%30s\n", p->cmd, ct_now_s() - p->t0, "");
    p->shown = 0;
}
