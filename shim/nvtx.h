/*
 * NVTX injection, the cutrace user API and thread names (shim/nvtx.c,
 * shim/nvtx_strings.c, shim/nvtx_user_api.c, shim/nvtx_thread_name.c; their
 * shared internals are shim/nvtx_int.h): the two hooks the shim's lifecycle
 * calls. Neither may block or allocate.
 */
#ifndef CT_SHIM_NVTX_H
#define CT_SHIM_NVTX_H

/*
 * Called once recording is on (init.c, after the recorder started): writes
 * the thread names set before the recorder existed. Idempotent; any thread.
 */
void ct_nvtx_started(void);

/*
 * Called while recording is still on, before the trace closes (exit, _exit,
 * exec): writes the NVTX counters (ranges not recorded and why) as recorder
 * metadata. Idempotent: only the first call writes.
 */
void ct_nvtx_finish(void);

#endif
