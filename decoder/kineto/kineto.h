/*
 * PyTorch profiler (Kineto) traces as `cutrace report` input: one JSON file
 * (.json or .json.gz) per rank, or a directory of them. The documentation
 * for users is docs/kineto.md (what is read, HTA-compatible mode, every
 * difference from HTA).
 *
 * Loading has two steps: ct_kineto_load() parses one file into a struct
 * ct_proc whose reader_data holds the file's compact rows (may run on
 * several threads, one file each); ct_kineto_finish() then sees every
 * loaded process at once (HTA's last-step filter depends on the step names
 * of all ranks) and fills each Kineto process's GPU intervals, NCCL ops,
 * host spans and steps, plus the HTA-compatible results (p->hta,
 * decoder/read/hta.h). The format dispatch (decoder/load/) is the only
 * caller in the decoder.
 */
#ifndef CT_KINETO_H
#define CT_KINETO_H

#include <stddef.h>
#include <stdio.h>

#include "decoder/read/inputs.h"
#include "decoder/read/timeline.h"

/* 1 when path names a Kineto trace file (*.json, *.json.gz). */
int ct_kineto_is_path(const char *path);

/* 1 when operand should go to the Kineto reader: a Kineto file, or a
 * directory that holds Kineto files and no *.cutrace file. */
int ct_kineto_operand(const char *operand);

/* Adds operand (a file, or every Kineto file under a directory, sorted).
 * Returns 0, or a negative errno with err set. */
int ct_kineto_expand(struct ct_inputs *in, const char *operand, char *err, size_t errlen);

/*
 * Parses one trace into p (p->reader_data holds its rows until
 * ct_kineto_finish). A truncated or corrupt file decodes up to the damage: the return is 0,
 * p->cov.truncated is 1 and ct_kineto_warning(p) says where. Returns 0, or a
 * negative errno with err naming the file (and the byte offset) when nothing
 * usable could be read. Safe to call concurrently on different procs.
 */
int ct_kineto_load(const char *path, struct ct_proc *p, char *err, size_t errlen);

/* The same from memory (tests, fuzzing); name stands for the path. */
int ct_kineto_load_mem(const void *data, size_t n, const char *name, struct ct_proc *p, char *err,
                       size_t errlen);

/*
 * Completes every process of procs that came from ct_kineto_load (others
 * are left alone): hta != 0 applies HTA's preprocessing (µs rounding, last
 * ProfilerStep filter, HTA's GPU-event and kernel-type rules) to the model
 * and computes the HTA-compatible results; hta == 0 keeps exact ns times
 * and cutrace's own rules. Two files claiming one rank: the later one gets
 * a new rank number (warning). Returns 0 or -ENOMEM.
 */
int ct_kineto_finish(struct ct_proc *procs, size_t n, int hta);

/* The load or finish warning of a Kineto process (damage, no GPU data,
 * renumbered rank), or NULL. */
const char *ct_kineto_warning(const struct ct_proc *p);

/* After ct_kineto_finish: one line saying how many GPU rows each rule
 * dropped (HTA's last-step filter; rows of no length the timeline cannot
 * hold), or NULL when none did. */
const char *ct_kineto_note(const struct ct_proc *p);

/* Frees the reader's data of a process (its reader_free). */
struct ct_kineto;
void ct_kineto_free(struct ct_kineto *k);

#endif
