/*
 * On-demand capture windows (shim/capture.c): CUTRACE_START,
 * CUTRACE_DURATION, `cutrace start|stop PID` and light mode's duty cycle.
 */
#ifndef CT_SHIM_CAPTURE_H
#define CT_SHIM_CAPTURE_H

#include <stdint.h>

/* The state recording starts in (ON/PAUSED). */
int ct_capture_initial_state(void);
/* Called after recording started (after fork too); polls the control file
 * from the writer thread. */
void ct_capture_started(int after_fork);
/* 1 when a GPU timestamp lies in a capture window (CUPTI delivers activity
 * of the whole process; records outside the windows are dropped). */
int ct_capture_contains(uint64_t ns);
/* 1 when recording goes by windows (a paused start or CUTRACE_DURATION). */
int ct_capture_windowed(void);

#endif
