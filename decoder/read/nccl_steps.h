/*
 * The states of a raw NCCL proxy step (format v6 CT_REC_NCCL_STEP,
 * docs/nccl.md "Raw proxy steps"), named as the ProxyOp's aggregate names
 * them: the record keeps three state slots whose meaning depends on the
 * direction; this gives each named state its begin and its time. Used by
 * dump and the exports. Pure functions.
 */
#ifndef CT_READ_NCCL_STEPS_H
#define CT_READ_NCCL_STEPS_H

#include <stdint.h>

enum ct_nstep_state {
    CT_NSS_GPU_WAIT,  /* send: SendGPUWait; receive: RecvGPUWait */
    CT_NSS_PEER_WAIT, /* send: SendPeerWait; receive: RecvWait */
    CT_NSS_NET,       /* send: SendWait; receive: none */
    CT_NSS_FLUSH,     /* receive: RecvFlushWait; send: none */
    CT_NSS_COUNT
};

/* "gpu_wait", "peer_wait", "net", "flush": the nccl_proxy record's names */
extern const char *const ct_nstep_state_name[CT_NSS_COUNT];

/* A step record's fields f (CT_NSTEP_*): at[s] when state s began (0: the
 * step never entered it), dur[s] its ns (a state lasts until the next one
 * entered, or the stop; 0 when never entered). order[0..n) the states the
 * step entered, in the order it entered them; returns n (0..3). */
int ct_nstep_states(const uint64_t *f, uint64_t at[CT_NSS_COUNT], uint64_t dur[CT_NSS_COUNT],
                    int order[3]);

#endif
