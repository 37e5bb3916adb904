/* Collectives in flight in a possibly hung job (decoder/analysis/hang.c). */
#ifndef CT_HANG_H
#define CT_HANG_H

#include <stdio.h>

struct ct_report;

/* 1 when the inputs hold a flight-recorder window and some rank has NCCL
 * ops pending (no GPU completion) after its last completed one. */
int ct_hang_present(const struct ct_report *rep);
/* The text section (nothing when not present). */
void ct_hang_text(FILE *f, const struct ct_report *rep);
/* `"in_flight":null` or the object (no comma around it). */
void ct_hang_json(FILE *f, const struct ct_report *rep);

#endif
