/*
 * The states of a raw NCCL proxy step (decoder/read/nccl_steps.h): the
 * record's three slots (format.h, CT_REC_NCCL_STEP) named by direction.
 */
#include "decoder/read/nccl_steps.h"

#include "cutrace/format.h"

const char *const ct_nstep_state_name[CT_NSS_COUNT] = {"gpu_wait", "peer_wait", "net", "flush"};

int ct_nstep_states(const uint64_t *f, uint64_t at[CT_NSS_COUNT], uint64_t dur[CT_NSS_COUNT],
                    int order[3])
{
    static const int send_slot[3] = {CT_NSS_GPU_WAIT, CT_NSS_PEER_WAIT, CT_NSS_NET};
    static const int recv_slot[3] = {CT_NSS_PEER_WAIT, CT_NSS_FLUSH, CT_NSS_GPU_WAIT};
    const int *slot = f[CT_NSTEP_SEND] ? send_slot : recv_slot;
    int n = 0;
    for (int s = 0; s < CT_NSS_COUNT; s++)
        at[s] = dur[s] = 0;
    for (int i = 0; i < 3; i++) {
        uint64_t b = f[CT_NSTEP_STATE0 + i];
        if (!b)
            continue;
        uint64_t next = f[CT_NSTEP_END];
        for (int j = i + 1; j < 3; j++)
            if (f[CT_NSTEP_STATE0 + j]) {
                next = f[CT_NSTEP_STATE0 + j];
                break;
            }
        at[slot[i]] = b;
        dur[slot[i]] = next > b ? next - b : 0;
        order[n++] = slot[i];
    }
    return n;
}
