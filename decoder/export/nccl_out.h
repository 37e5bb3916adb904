/*
 * The report's "nccl" section (JSON) and its text: NCCL's links, slow
 * links and per-collective split (decoder/analysis/nccl_links.h,
 * docs/nccl.md).
 */
#ifndef CT_NCCL_OUT_H
#define CT_NCCL_OUT_H

#include <stdio.h>

struct ct_report;
/* Writes `"nccl":{...}` (no comma around it). */
void ct_nccl_json(FILE *f, const struct ct_report *rep);
/* The text section; nothing when the job has no NCCL op. */
void ct_nccl_text(FILE *f, const struct ct_report *rep);

#endif
