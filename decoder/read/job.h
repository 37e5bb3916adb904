/*
 * Building the job (decoder/read/job.c): processes folded into ranks
 * (loader workers join the rank they serve), communication classes, the
 * interval sets, clock alignment (decoder/read/clock.c); and the opening
 * of a spilled rank (decoder/read/spill.h) around what reads it.
 */
#ifndef CT_JOB_H
#define CT_JOB_H

#include <stddef.h>

#include "decoder/read/timeline.h"

/*
 * Takes ownership of procs (an array from malloc) and builds the job:
 * ranks, classes, interval sets, clock alignment. Returns 0 or -ENOMEM.
 */
int ct_job_build(struct ct_job *job, struct ct_proc *procs, size_t nprocs);
void ct_job_free(struct ct_job *job);

/*
 * A spilled rank's GPU ops, launches and interval sets, rebuilt from its
 * processes' spills exactly as ct_job_build made them (classes, clock
 * refinement); ct_rank_close frees them again. Every reader of those
 * fields of a rank holds it open; on a rank that is not spilled both do
 * nothing. Opens nest (a count is kept). ct_rank_open returns 0, -ENOMEM
 * or -EIO (a spill that does not decode: memory corrupted).
 */
int ct_rank_open(struct ct_rank *r);
void ct_rank_close(struct ct_rank *r);

#endif
