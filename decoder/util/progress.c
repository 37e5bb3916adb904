/* Progress lines of long commands (decoder/util/progress.h). */
#include "decoder/util/progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* The command's first progress and whether any line was shown: a command
 * of several phases says "done" once, at its end (ct_progress_finish). */
static double g_t0 = -1;
static int g_shown, g_open; /* g_open: a tty line without its newline */

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
    p->what = NULL;
    p->n = 0;
    if (g_t0 < 0)
        g_t0 = p->t0;
}

void ct_progress_update(struct ct_progress *p, const char *what, size_t i, size_t n, double pct)
{
    p->what = what;
    p->n = n;
    double t = ct_now_s(), every = p->tty ? 1.0 : 10.0;
    if (t - p->t0 < every || t - p->last < every)
        return;
    p->last = t;
    p->shown = g_shown = 1;
    g_open = p->tty;
    const char *pre = p->tty ? "\r" : "", *post = p->tty ? "   " : "\n";
    if (pct >= 0)
        fprintf(stderr, "%s%s: %s %zu/%zu (%3.0f%%)%s", pre, p->cmd, what, i, n, pct, post);
    else
        fprintf(stderr, "%s%s: %s %zu/%zu%s", pre, p->cmd, what, i, n, post);
}

void ct_progress_end(struct ct_progress *p)
{
    if (p->shown)
        fprintf(stderr, "%s%s: %s %zu/%zu in %.1f s%s\n", p->tty ? "\r" : "", p->cmd,
                p->what ? p->what : "done", p->n, p->n, ct_now_s() - p->t0,
                p->tty ? "            " : "");
    g_open = 0;
    p->shown = 0;
}

void ct_progress_phase(const char *cmd, const char *what)
{
    if (!g_shown)
        return;
    int tty = isatty(2);
    fprintf(stderr, "%s%s: %s ...%s", tty ? "\r" : "", cmd, what, tty ? "            " : "\n");
    g_open = tty;
}

void ct_progress_finish(const char *cmd)
{
    if (!g_shown)
        return;
    int tty = isatty(2);
    fprintf(stderr, "%s%s: done in %.1f s%s\n", tty && g_open ? "\r" : "", cmd, ct_now_s() - g_t0,
            tty ? "                              " : "");
    g_shown = g_open = 0;
}
