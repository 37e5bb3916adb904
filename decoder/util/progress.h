/*
 * Progress of long commands on stderr, and the monotonic clock they time
 * themselves with (decoder/util/progress.c).
 */
#ifndef CT_DECODER_PROGRESS_H
#define CT_DECODER_PROGRESS_H

#include <stddef.h>

/* Seconds on CLOCK_MONOTONIC. */
double ct_now_s(void);

/* Progress on stderr for long runs: nothing during the first second, then
 * one self-overwriting line at most once a second, ended by a newline. */
struct ct_progress {
    const char *cmd;
    double t0, last;
    int shown;
    int tty;          /* stderr is a terminal: one line redrawn with \r; else a full
                       * line every 10 s, so logs get lines, not concatenated redraws */
    const char *what; /* the phase's, for its last line */
    size_t n;
};

void ct_progress_start(struct ct_progress *p, const char *cmd);
/* "CMD: WHAT i/n (pct%)"; pct of the current unit, < 0 for none. */
void ct_progress_update(struct ct_progress *p, const char *what, size_t i, size_t n, double pct);
/* The end of one phase: "CMD: WHAT n/n in T s" when a line was shown. */
void ct_progress_end(struct ct_progress *p);
/* "CMD: WHAT ..." as the next phase starts, once the command has shown
 * progress (a long run), so that no phase is silent. */
void ct_progress_phase(const char *cmd, const char *what);
/* "CMD: done in T s" (since its first progress) at the command's end, once
 * it has shown progress: "done" only when it is. */
void ct_progress_finish(const char *cmd);

#endif
