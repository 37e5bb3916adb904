/* Progress lines of long commands (decoder/util/progress.h). */
#include "decoder/util/progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

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
    p->tty = isatty(2);
}

void ct_progress_update(struct ct_progress *p, const char *what, size_t i, size_t n, double pct)
{
    double t = ct_now_s(), every = p->tty ? 1.0 : 10.0;
    if (t - p->t0 < every || t - p->last < every)
        return;
    p->last = t;
    p->shown = 1;
    const char *pre = p->tty ? "\r" : "", *post = p->tty ? "   " : "\n";
    if (pct >= 0)
        fprintf(stderr, "%s%s: %s %zu/%zu (%3.0f%%)%s", pre, p->cmd, what, i, n, pct, post);
    else
        fprintf(stderr, "%s%s: %s %zu/%zu%s", pre, p->cmd, what, i, n, post);
}

void ct_progress_end(struct ct_progress *p)
{
    if (p->shown && p->tty)
        fprintf(stderr, "\r%s: done in %.1f s%30s\n", p->cmd, ct_now_s() - p->t0, "");
    else if (p->shown)
        fprintf(stderr, "%s: done in %.1f s\n", p->cmd, ct_now_s() - p->t0);
    p->shown = 0;
}
