/*
 * Bounded memory for large jobs (docs/report.md, "Memory"). A job's memory
 * is mostly its ranks' GPU ops, launch times and the interval sets built
 * from them, and every analysis that reads them goes rank by rank. So a
 * large job's loader spills each process's ops and launches, compressed in
 * the summary's encoding (decoder/read/summary.h), as soon as it is
 * extracted, and a rank's are rebuilt only while an analysis holds it open
 * (ct_rank_open, decoder/read/timeline.h): peak memory is what stays
 * resident for every rank (NCCL ops, steps, host interval sets, the
 * spills, the per-rank results) plus one open rank per reader, and the
 * figures are the same bytes as without spilling.
 */
#ifndef CT_DECODER_SPILL_H
#define CT_DECODER_SPILL_H

#include <stddef.h>

#include "decoder/read/timeline.h"

/* Whether a load of n traces spills (1) or not (0): CUTRACE_SPILL=1
 * always, =0 never, unset from CT_SPILL_MIN_TRACES traces on (below, the
 * whole job is small and spilling costs time for nothing); -EINVAL with
 * err naming the variable and its values when it is set to anything else. */
#define CT_SPILL_MIN_TRACES 64
int ct_spill_wanted(size_t n, char *err, size_t errlen);

/* What ct_job_build does to each process before ranks are merged, and a
 * spill does before it compresses: an NCCL op's GPU interval becomes that
 * of its GPU record (the latest in start, then end, order when several),
 * and the bounds in struct ct_proc are set. */
void ct_proc_settle(struct ct_proc *p);

/* Settles p and moves its ops and launches into p->spill (freed; counts
 * kept). 0 or -ENOMEM (p unchanged). */
int ct_proc_spill(struct ct_proc *p);

/* p's spilled ops and launches into new arrays (NULL with a count of 0
 * when there are none). 0, -ENOMEM, or -EIO when the spill does not
 * decode. */
int ct_proc_unspill(const struct ct_proc *p, struct ct_gpu_op **ops, size_t *nops,
                    int64_t **launches, size_t *nlaunches);

#endif
