/*
 * The process lifecycle of the shim (shim/process.c): fork, exec, _exit
 * and fatal signals; the trace is finished before the process goes.
 */
#ifndef CT_SHIM_PROCESS_H
#define CT_SHIM_PROCESS_H

/* Installs the fatal-signal handlers once recording is on. */
void ct_process_started(void);

#endif
