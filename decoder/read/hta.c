/* HTA-compatible figures of Kineto input (decoder/read/hta.h). */
#include "decoder/read/hta.h"

#include <stdlib.h>

int ct_hta_unavailable(const struct ct_hta *h, size_t i, const char **figure, const char **reason)
{
    static const char *const fig[CT_HB_N] = {"hta.temporal.kernel_time_us",
                                             "hta.temporal.idle_us",
                                             "hta.temporal.compute_us",
                                             "hta.temporal.non_compute_us",
                                             "hta.union_all_us",
                                             "hta.comm_us",
                                             "hta.memory_us",
                                             "hta.overlap_pct",
                                             "hta.idle_breakdown"};
    if (!h)
        return 0;
    if (!h->valid) {
        if (i)
            return 0;
        *figure = "hta.temporal";
        *reason = "no GPU event after HTA's preprocessing (HTA raises IndexError)";
        return 1;
    }
    for (int b = 0; b < CT_HB_N; b++)
        if ((h->bad & (1u << b)) && i-- == 0) {
            *figure = fig[b];
            *reason = h->why[b];
            return 1;
        }
    return 0;
}

void ct_hta_free(struct ct_hta *h)
{
    if (!h)
        return;
    free(h->streams);
    free(h);
}
